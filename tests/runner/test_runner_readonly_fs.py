"""A run directory on a filesystem mounted read-only (a snapshot, an NFS export mounted ro on a
login node): `moeconsole restart RUN --force` says so in one line and exits 2. It had started a
runner with its output discarded ("cannot use runner.log (Read-only file system)") and then
reported "the runner ... did not start: no output". The read-only mount is real: a bind mount
remounted ro in a private mount namespace (``unshare -m``), skipped where that is not allowed."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.console.conftest import write_run

REPO = Path(__file__).resolve().parents[2]


def _can_mount() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _can_mount(), reason="no private mount namespace here (unshare -m needs CAP_SYS_ADMIN)")
def test_restart_of_a_run_on_a_read_only_filesystem_is_one_line_and_exit_2(tmp_path):
    base = tmp_path / "runs"
    base.mkdir(mode=0o700)
    run = write_run(base, "20240101-000000-demo-0001", status="killed", runner_pid=None, ended=True)
    before = sorted(p.name for p in run.path.iterdir())
    d = shlex.quote(str(run.path))
    cli = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "moeconsole.console.cli", "restart", run.run_id,
                                            "--force", "--runs-dir", str(base)])
    done = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                           f"mount --bind {d} {d} && mount -o remount,ro,bind {d} {d} && exec {cli}"],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr and "did not start" not in done.stderr, done.stderr
    assert f"{run.run_id}: {run.path} is on a read-only filesystem" in done.stderr, done.stderr
    assert "diagnostics are discarded" not in done.stderr, done.stderr
    assert sorted(p.name for p in run.path.iterdir()) == before   # nothing written (outside the mount too)
