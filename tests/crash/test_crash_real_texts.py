"""Crash texts met in real jobs that were once misclassified, written from the programs'
own formats; and the policy for the classes they need (gpu_unavailable, config_error)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from moeconsole.runner.core.crash import classify
from moeconsole.runner.process.proctree import live_pid_set, own_pid_set
from moeconsole.runner.core.policy import AttemptRecord, RestartSettings, decide

OOM_OWN = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
           "capacity of 79.19 GiB of which 120.00 MiB is free. Process 566680 has 79.00 GiB memory in "
           "use. Of the allocated memory 76.50 GiB is allocated by PyTorch, and 1.81 GiB is reserved "
           "by PyTorch but unallocated.")


def test_called_process_error_with_sigsegv_is_segfault():
    tail = ["Traceback (most recent call last):",
            '  File "/opt/launch.py", line 40, in <module>',
            "subprocess.CalledProcessError: Command '['/usr/bin/python', '-u', 'train.py', "
            "'--local_rank=0']' died with <Signals.SIGSEGV: 11>."]
    v = classify(1, tail, steps_seen=120)
    assert v.cls == "segfault" and v.retryable
    assert any("SIGSEGV" in e for e in v.evidence)


@pytest.mark.parametrize("line, cls", [
    ("[node-3:12345] *** Caught signal 7 (Bus error: nonexistent physical address)", "bus_error"),
    ("[2026-01-02 03:04:05,678] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', "
     "'train.py'] exits with return code = -9", "killed_oom"),
    ("Killed: 9", "killed_oom"),
    ("Caught signal 11 (Segmentation fault: address not mapped to object at address 0x0)", "segfault"),
])
def test_signal_texts_count_even_when_the_exit_status_is_1(line, cls):
    v = classify(1, ["step 10 loss 1.0", line], steps_seen=10)
    assert v.cls == cls
    assert line.strip().split("] ")[-1][:20] in " ".join(v.evidence)


def test_srun_labelled_exception_reaches_the_unknown_summary():
    tail = ["0: Traceback (most recent call last):",
            '0:   File "train.py", line 3, in <module>',
            "0: KeyError: 'input_ids'",
            "srun: error: node-1: task 0: Exited with exit code 1"]
    v = classify(1, tail, steps_seen=5)
    assert v.cls == "unknown" and "KeyError: 'input_ids'" in v.summary


def test_bare_exception_line_in_unknown_summary():
    v = classify(1, ["Traceback (most recent call last):", "Exception: dataset shard 7 is empty"], steps_seen=3)
    assert "Exception: dataset shard 7 is empty" in v.summary


# --- own PID across PID namespaces --------------------------------------------------------

def test_oom_naming_our_own_pid_is_not_gpu_busy():
    v = classify(1, [OOM_OWN], steps_seen=0, own_pids={566680, 31}, live_pids={1, 2, 3})
    assert v.cls == "cuda_oom"


def test_oom_naming_a_pid_we_cannot_see_cannot_be_proven_foreign():
    v = classify(1, [OOM_OWN], steps_seen=0, own_pids={31, 32}, live_pids={1, 31, 900})
    assert v.cls == "cuda_oom"


def test_oom_naming_a_live_pid_outside_the_tree_is_gpu_busy():
    v = classify(1, [OOM_OWN], steps_seen=0, own_pids={31, 32}, live_pids={1, 566680})
    assert v.cls == "gpu_busy_at_init" and "566680" in v.summary


def test_own_pid_set_reads_nspid_of_a_real_process(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        pids = own_pid_set([child.pid])
        assert child.pid in pids
        with open(f"/proc/{child.pid}/status") as f:
            nspid = next((ln.split()[1:] for ln in f if ln.startswith("NSpid:")), [])
        assert {int(x) for x in nspid} <= pids
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    # a process that is gone is skipped, its PID kept; it is not alive any more
    assert own_pid_set([child.pid]) == {child.pid}
    assert os.getpid() in live_pid_set() and child.pid not in live_pid_set()
    # a fake /proc: a process seen from the host with its container PID
    (tmp_path / "4242").mkdir()
    (tmp_path / "4242" / "status").write_text("Name:\tpython\nNSpid:\t4242\t17\nPPid:\t1\n")
    assert own_pid_set([4242], proc=str(tmp_path)) == {4242, 17}


# --- gpu_unavailable ----------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
    "torch.AcceleratorError: CUDA error: CUDA-capable device(s) is/are busy or unavailable",
    "RuntimeError: Found no NVIDIA driver on your system. no CUDA-capable device is detected",
    "RuntimeError: CUDA error: no CUDA-capable device is detected",
])
def test_gpu_unavailable_is_its_own_class(line):
    v = classify(1, ["Traceback (most recent call last):", line], steps_seen=0)
    assert v.cls == "gpu_unavailable" and v.recovery == "wait_gpu"
    assert "no usable GPU" in v.summary


def hist(classes: list[str]) -> list[AttemptRecord]:
    return [AttemptRecord(attempt=i + 1, started_at=1000.0 + i * 100, ended_at=1010.0 + i * 100,
                          resumed_step=None, last_step=None, crash_class=c) for i, c in enumerate(classes)]


def test_policy_waits_for_the_gpu_then_fails_with_the_reason():
    settings = RestartSettings(gpu_wait_s=60.0, gpu_wait_max_s=180.0)
    v = classify(1, ["RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable"])
    actions = [decide(v, hist(["gpu_unavailable"] * n), settings, 2000.0) for n in range(1, 5)]
    assert [d.action for d in actions] == ["restart", "restart", "restart", "fail"]
    assert all(d.delay_s == 60.0 for d in actions[:3])
    assert "busy or unavailable" in actions[-1].reason and "gpu_wait_max_s" in actions[-1].reason
    # waits are not restarts: a real crash after them still has its restarts and progress budget
    seg = classify(-11, [], steps_seen=0)
    d = decide(seg, hist(["gpu_unavailable"] * 3 + ["segfault"]),
               RestartSettings(max_restarts=1, no_progress_attempts=2), 2000.0)
    assert d.action == "restart"


def test_gpu_wait_settings_are_validated():
    from moeconsole.runner.core.errors import InputError
    with pytest.raises(InputError, match="restart.gpu_wait_s: must be a finite number of seconds >= 0"):
        RestartSettings.from_recipe({"gpu_wait_s": -1})
    assert RestartSettings.from_recipe({"gpu_wait_max_s": 30}).gpu_wait_max_s == 30.0


# --- config_error -------------------------------------------------------------------------

ARGPARSE = ["usage: train.py [-h] [--lr LR] [--epochs EPOCHS]",
            "train.py: error: unrecognized arguments: --learning-rate 3e-4"]
SWIFT = ["Traceback (most recent call last):",
         '  File "/opt/swift/cli/sft.py", line 5, in <module>',
         "ValueError: remaining_argv: ['--lora_rnak', '8']"]


@pytest.mark.parametrize("tail, code, own", [
    (ARGPARSE, 2, "train.py: error: unrecognized arguments: --learning-rate 3e-4"),
    (SWIFT, 1, "ValueError: remaining_argv: ['--lora_rnak', '8']"),
    (["ValueError: Some specified arguments are not used by the HfArgumentParser: ['--foo']"], 1,
     "not used by the HfArgumentParser"),
])
def test_usage_error_on_first_attempt_is_config_error_and_not_retried(tail, code, own):
    v = classify(code, tail, steps_seen=0, attempt=1)
    assert v.cls == "config_error" and not v.retryable
    assert own in v.summary
    d = decide(v, hist(["config_error"]), RestartSettings(), 2000.0)
    assert d.action == "fail" and own in d.reason


def test_usage_error_torchrun_child_exit_2():
    tail = ARGPARSE + ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
                       "Root Cause (first observed failure):", "[0]:",
                       "  rank      : 0 (local_rank: 0)", "  exitcode  : 2 (pid: 4100)",
                       "  error_file: <N/A>", "======"]
    v = classify(1, tail, steps_seen=0)
    assert v.cls == "config_error" and "(exit 2)" in v.summary


def test_usage_text_after_steps_or_on_a_later_attempt_is_not_config_error():
    assert classify(2, ARGPARSE, steps_seen=10).cls != "config_error"
    assert classify(2, ARGPARSE, steps_seen=0, attempt=3).cls != "config_error"
