"""The three gaps the review of batch 46's mends left, each losing or mislabelling a real run: a launcher's own status
line behind prose with a denial in it ("No restarts left: worker exited with code 137"), torch's raised OOM message
behind an enumerating label ("Type 1: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of
..."), and an Xid counted at none ("We saw Xid 79 events on node-3: 0"). Each also gets the lines that must still not
decide: advice, explainers, changelogs, hedges, monitors' fields."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify
from moeconsole.runner.core.oom import parse_oom_message

# --- 1. a program's own status line decides whatever prose stands before it --------------------------------------

_ELASTIC = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 (pid: 4321) of "
            "binary: /usr/bin/python3")


@pytest.mark.parametrize("line, cls", [
    # a supervisor's line: docker compose's "<container> exited with code N" behind its own label
    ("No restarts left: worker exited with code 137", "killed_oom"),
    ("no restarts left, giving up: worker-1 exited with code 137", "killed_oom"),
    ("[supervisor] attempt 3/3, no retries left: trainer exited with code 139", "segfault"),
    # Slurm's srun (src/srun/launch.c), kubectl describe's field, CPython's CalledProcessError (accelerate's launcher)
    ("No restarts left: srun: error: node-3: task 0: Exited with exit code 137", "killed_oom"),
    ("[watch] no restarts left   Exit Code:    137", "killed_oom"),
    ("no retries left: subprocess.CalledProcessError: Command '['bash', 'train.sh']' returned non-zero exit status "
     "137.", "killed_oom"),
    # DeepSpeed's launcher with a shell's status (a --no_python script): "exits with return code = 137"
    ("[2025-01-07 10:00:00,123] [ERROR] [launch.py:325:sigkill_handler] ['/bin/bash', 'run.sh'] exits with return "
     "code = 137", "killed_oom"),
    # a wrapper's Popen return code on its own line, behind the same denial
    ("No restarts left: worker exited with code -9", "killed_oom"),
    ("no retries left: ❌ Training failed with exit code -9", "killed_oom"),
])
def test_a_launchers_own_status_line_decides_behind_a_denial(line, cls):
    v = classify(1, [line], steps_seen=100)
    assert v.cls == cls, (line, v.summary)


def test_torchruns_own_lines_behind_a_denial_still_decide():
    for line in (f"no restarts left: {_ELASTIC}", "No restarts left.  exitcode  : 137 (pid: 4321)"):
        v = classify(1, [line], steps_seen=100)
        assert v.cls == "killed_oom", (line, v.summary)


@pytest.mark.parametrize("line", [
    # a person's hedged prose
    "it may exit with code 137",
    "If the job exited with code 137, raise the pod's memory limit.",
    # a program's line shown as what one may see, or quoted in advice
    "You may see: worker-1 exited with code 137",
    "If you get this: worker exited with code -9",
    "If you see `srun: error: n1: task 0: Exited with exit code 137`, raise --mem.",
    # a changelog's fix, a guide's title, an explanation after it
    "- Fix: worker exited with code 137",
    "- Fixed: trainer-1 exited with code -9",
    "How to fix: trainer exited with code 137",
    "srun: error: n1: task 0: Exited with exit code 137 means the kernel killed the task",
    # a start-up line's advice
    "[INFO] if training exits with code -9, add RAM",
])
def test_a_status_line_in_advice_or_explained_still_decides_nothing(line):
    v = classify(1, [line], steps_seen=100)
    assert v.cls not in ("killed_oom", "segfault"), (line, v.summary)


# --- 2. torch's raised OOM message behind an enumerating label ----------------------------------------------------

_NEW = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.20 GiB is "
        "free. Including non-PyTorch memory, this process has 77.93 GiB memory in use.")
_OLD = ("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 23.69 GiB total capacity; 22.10 GiB already "
        "allocated; 3.06 MiB free; 22.70 GiB reserved in total by PyTorch)")


@pytest.mark.parametrize("line", [
    f"Type 1: {_NEW}",
    f"Case 2: {_OLD}",
    f"Error type 1: torch.OutOfMemoryError: {_NEW}",
    # torch 2.1 and 2.2's "capacty"
    "Scenario C: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 3 has a total capacty of 23.65 GiB of which "
    "20.06 MiB is free.",
])
def test_torchs_raised_oom_message_behind_a_label_is_the_oom(line):
    v = classify(1, [line], steps_seen=100)
    assert v.cls == "cuda_oom", (line, v.summary)
    assert "tried to allocate" in v.summary, v.summary


def test_torch_2_1s_capacty_names_its_gpu_in_the_summary():
    # torch 2.1 and 2.2 spell "capacty": the message's GPU, total and free are read the same as later releases'
    line = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 3 has a total capacty of "
            "23.65 GiB of which 20.06 MiB is free.")
    v = classify(1, [line], steps_seen=100)
    assert v.cls == "cuda_oom" and "on GPU 3" in v.summary, v.summary
    msg = parse_oom_message(line)
    assert msg is not None and msg.gpu == 3 and msg.total_gib == pytest.approx(23.65)


@pytest.mark.parametrize("line", [
    "Type 1: CUDA out of memory",
    "Case 2: GPU VRAM exhaustion (CUDA out of memory)",
    "• Scenario C: GPU VRAM exhaustion (CUDA out of memory)",
    # torch's words with placeholders, not its numbers
    "Type 1: CUDA out of memory. Tried to allocate N GiB. GPU 0 has a total capacity of X GiB",
    "Type 2: CUDA out of memory. Tried to allocate X MiB -> reduce the batch size",
])
def test_an_explainers_labelled_oom_still_names_a_kind(line):
    v = classify(1, [line], steps_seen=100)
    assert v.cls != "cuda_oom", (line, v.summary)


# --- 3. an Xid counted at none --------------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "We saw Xid 79 events on node-3: 0",
    "We saw Xid 79 events on node-3: none",
    "We saw Xid 79 events on node-3: no",
    "We saw Xid 79 events on node-3: zero",
    "We saw Xid 79 errors on GPU 2 since boot: 0",
    "We saw Xid 79 events on node-3 (count: 0)",
    # monitors' report shapes
    "Xid 79: 0",
    "Xid 79 count=0",
    "xid_79_total 0",
    'DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-5a7c",Hostname="node-3"} 0',
])
def test_an_xid_counted_at_none_is_no_fault(line):
    v = classify(1, [line], steps_seen=100)
    assert v.cls != "cuda_fault", (line, v.summary)


def test_an_xid_counted_at_none_leaves_the_runs_own_oom():
    v = classify(1, ["We saw Xid 79 events on node-3: 0", f"torch.OutOfMemoryError: {_NEW}"], steps_seen=100)
    assert v.cls == "cuda_oom" and v.recovery == "restart", v.summary


@pytest.mark.parametrize("line", [
    "We saw Xid 79 events on node-3: 4",
    "We saw Xid 79 events on node-3: the job died",
    "We saw Xid 79 events on node-3: no GPU came back after it",
])
def test_an_xid_counted_above_none_or_told_still_needs_a_reset(line):
    v = classify(1, [line], steps_seen=100)
    assert v.cls == "cuda_fault" and "reset" in v.summary, (line, v.summary)
