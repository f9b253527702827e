"""Review R43 (of round 16): a refusal at the address-space limit read as a host OOM.

1. A real `ulimit -v` refusal milliseconds after one `mmap` grew the process by a whole shard: the runner's
   walks (half a second apart) saw only what it held before, and round 16 called it ``killed_oom`` (restarted to
   the crash cap, "host memory ran out"). The walks never bound a process's growth: it is the limit's.
2. A file mapping (ATen's "unable to mmap N bytes from file", MAP_SHARED as well as MAP_PRIVATE) bigger than the
   machine's overcommit ceiling, refused by the limit: a shared or read-only mapping costs the overcommit check
   nothing (mm/mmap.c ``accountable_mapping``), so the ceiling proves nothing for it: the limit's.

Each is run for real: a child under RLIMIT_AS, its stderr the log tail, classified with what the runner's walk
(``proctree.address_space_seen`` over ``identity.process_table``) saw and the machine's real ceiling."""
from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from moeconsole.runner.core.crash import classify
from moeconsole.runner.process import proctree
from moeconsole.runner.telemetry import host
from moeconsole.runner.telemetry.identity import process_table

GIB = 1 << 30
HEAD = ['{"step": 3}', "Traceback (most recent call last):", '  File "train.py", line 5, in <module>']
NP_3 = ("numpy._core._exceptions._ArrayMemoryError: Unable to allocate 3.00 GiB for an array with shape "
        "(3221225472,) and data type uint8")
NP_30 = NP_3.replace("3.00 GiB", "30.0 GiB").replace("3221225472", "32212254720")
MMAP_30 = "RuntimeError: unable to mmap 32212254720 bytes from file <big30.bin>: Cannot allocate memory (12)"


def _sparse(path: Path, size: int) -> Path:
    with open(path, "wb") as f:
        f.truncate(size)     # holes: no disk, no RAM
    return path


def _limited(limit: int | None):
    def pre() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return pre


def _run_seen(script: str, args: list[str], limit: int | None) -> tuple[int, list[str], int | None]:
    """The child under ``limit`` (RLIMIT_AS): it holds what it holds, says "ready" and waits; the walk's view of
    it is taken then (as the runner's last walk before its growth); then it goes on. Its exit code, its stderr's
    lines (the log tail) and the address space the walk saw."""
    child = subprocess.Popen([sys.executable, "-c", script, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, preexec_fn=_limited(limit),
                             env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
    assert child.stdout is not None and child.stdin is not None
    try:
        assert child.stdout.readline().strip() == b"ready"
        seen = proctree.address_space_seen(None, [process_table().get(child.pid)])
        _, err = child.communicate(b"go\n", timeout=600)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return child.returncode, err.decode(errors="replace").splitlines(), seen


GROW = textwrap.dedent("""
    import mmap, sys
    import numpy as np
    held = np.empty(1 << 30, dtype=np.uint8)           # the model's host copy (seen by the runner's walk)
    print("ready", flush=True); sys.stdin.readline()
    f = open(sys.argv[1], "rb")
    shard = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)   # one map of a weights shard: its whole size at once
    x = np.empty(3 << 30, dtype=np.uint8)              # then 3 GiB, milliseconds later
""")


def test_a_real_limit_refusal_right_after_a_shard_was_mapped_is_the_limits(tmp_path):
    """Under `ulimit -v` 16 GiB a process holding 1 GiB maps a 12.5 GiB shard and at once asks 3 GiB:
    numpy's "Unable to allocate 3.00 GiB". The walk saw ~1.5 GiB. It is the limit's (environment_error,
    not restarted, "raise ulimit -v"); round 16 said killed_oom, "host memory ran out". With no limit the
    same child runs to its end: the limit was the only cause."""
    shard = _sparse(tmp_path / "shard.bin", int(12.5 * GIB))
    rc, err, _ = _run_seen(GROW, [str(shard)], None)
    assert rc == 0, err[-5:]
    rc, err, seen = _run_seen(GROW, [str(shard)], 16 * GIB)
    assert rc != 0 and "Unable to allocate 3.00 GiB" in err[-1], err[-5:]
    assert seen is not None and seen < 4 * GIB, seen
    v = classify(rc, ['{"step": 3}', *err], address_limit=16 * GIB, alloc_ceiling=host.overcommit_ceiling(),
                 address_space_seen=seen, oom_kills=0)
    assert v.cls == "environment_error" and v.recovery == "fail", (v.cls, v.summary)
    assert "address-space limit (ulimit -v or -d) of 16.0 GB" in v.summary and "ulimit -v unlimited" in (v.hint or "")
    assert "host memory ran out" not in v.summary


@pytest.mark.parametrize("seen", [int(3.13 * GIB), 200 << 20, 12 * GIB, None])
def test_a_refusal_within_the_limit_is_its_whatever_the_walks_saw(seen):
    """The reviewer's numbers (3 GiB held, seen 3.13 GiB, 16 GiB limit, 3 GiB asked) and the walks' other
    views: the limit's each time; when nothing near it was seen, the words name the other place too (a
    command whose work runs in a container or on another machine)."""
    v = classify(1, [*HEAD, NP_3], address_limit=16 * GIB, alloc_ceiling=int(23.5 * GIB), address_space_seen=seen,
                 oom_kills=0)
    assert v.cls == "environment_error" and v.recovery == "fail" and "address-space limit" in v.summary, v.summary
    far = seen is not None and seen + 3 * GIB <= 16 * GIB
    assert ("in a container or on another machine" in v.summary) is far, v.summary
    assert ("docker run" in (v.hint or "")) is far, v.hint


@pytest.mark.parametrize("kw", [dict(oom_kills=1), dict(address_limit=None)])
def test_the_same_refusal_with_an_oom_kill_counted_or_no_limit_is_still_a_host_oom(kw):
    v = classify(1, [*HEAD, NP_3], **{**dict(address_limit=16 * GIB, alloc_ceiling=int(23.5 * GIB),
                                            address_space_seen=int(3.13 * GIB)), **kw})
    assert v.cls == "killed_oom" and "address-space limit" not in v.summary, (v.cls, v.summary)


SHARED = textwrap.dedent("""
    import mmap, sys
    import torch
    f = open(sys.argv[1], "rb")
    held = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)    # address space already held (14 GiB, no RAM)
    print("ready", flush=True); sys.stdin.readline()
    s = torch.UntypedStorage.from_file(sys.argv[2], True, 30 << 30)   # a shared 30 GiB mapping
""")


def test_a_shared_mapping_bigger_than_the_machine_refused_by_the_limit_is_the_limits(tmp_path):
    """`torch.UntypedStorage.from_file(path, shared=True, 30 GiB)` maps with no limit on any machine (a shared
    mapping is not charged); under `ulimit -v` 40 GiB with 14 GiB held it fails: "unable to mmap 32212254720
    bytes from file". Round 16 compared the 30 GiB with the machine's overcommit ceiling (MemTotal+SwapTotal
    in mode 0) and said killed_oom, "host memory ran out"."""
    held = _sparse(tmp_path / "held.bin", 14 * GIB)
    big = _sparse(tmp_path / "big30.bin", 30 * GIB)
    rc, err, _ = _run_seen(SHARED, [str(held), str(big)], None)
    assert rc == 0, err[-5:]
    rc, err, seen = _run_seen(SHARED, [str(held), str(big)], 40 * GIB)
    assert rc != 0 and "unable to mmap 32212254720 bytes from file" in "\n".join(err[-3:]), err[-5:]
    v = classify(rc, ['{"step": 3}', *err], address_limit=40 * GIB, alloc_ceiling=host.overcommit_ceiling(),
                 address_space_seen=seen, oom_kills=0)
    assert v.cls == "environment_error" and "address-space limit" in v.summary, (v.cls, v.summary)


@pytest.mark.parametrize("last,limit,cls", [
    (MMAP_30, 40 * GIB, "environment_error"),             # a mapping: the ceiling proves nothing (the reviewer's)
    (MMAP_30.replace("32212254720", str(200 * GIB)), 1 << 40, "environment_error"),
    (MMAP_30, 16 * GIB, "environment_error"),             # over the limit: the limit's
    (NP_30, 40 * GIB, "killed_oom"),                      # anonymous memory over the ceiling: still not the limit's
])
def test_only_anonymous_memory_is_compared_with_the_overcommit_ceiling(last, limit, cls):
    v = classify(1, [*HEAD, last], address_limit=limit, alloc_ceiling=int(23.5 * GIB), oom_kills=0)
    assert v.cls == cls, (last, v.cls, v.summary)
