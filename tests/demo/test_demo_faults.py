"""Every fault kind, injected into a real demo process: the text it prints, the exit status or
signal a supervisor sees in Popen.returncode, and how far training got. Also attempt scoping and
the one-line refusal of bad flags."""
from __future__ import annotations

import json
import math
import os
import re
import signal
import socket

import psutil
import pytest

from tests.demo.demo_helpers import dict_lines, read_log, wait_for

OOM_TEXT = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
OOM_ADVICE = ("If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
              "to avoid fragmentation.  See documentation for Memory Management  "
              "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")

# fault, Popen.returncode, texts that must appear, steps logged before it struck
DEATHS = [
    ("oom@3", 1, [OOM_TEXT, OOM_ADVICE, "in chunk_gated_delta_rule_bwd", "in backward"], [1, 2]),
    ("cuda_fault@3", 1, ["torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
                         "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/"], [1, 2]),
    ("recompute@3", 1, ["torch.utils.checkpoint.CheckpointError: torch.utils.checkpoint: A different number "
                        "of tensors was saved during the original forward and recomputation."], [1, 2]),
    ("nccl@3", -signal.SIGABRT, [
        "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=",
        "To avoid data inconsistency, we are taking the entire process down.",
        "Process group watchdog thread terminated with exception:",
        "terminate called after throwing an instance of 'c10::DistBackendError'"], [1, 2]),
    ("segv@3", -signal.SIGSEGV, [], [1, 2]),
    ("bus@3", -signal.SIGBUS, [], [1, 2]),
    ("sigkill@3", -signal.SIGKILL, [], [1, 2]),
    ("gpu_busy", 1, [OOM_TEXT, OOM_ADVICE], []),
]


@pytest.mark.parametrize("fault,status,texts,logged", DEATHS, ids=[d[0] for d in DEATHS])
def test_fault_dies_the_way_a_supervisor_sees_it(demo, fault, status, texts, logged):
    run = demo.run("--max_steps", "5", "--save_steps", "2", "--fault", fault)
    assert run.returncode == status, run.log[-3000:]
    for text in texts:
        assert text in run.log
    assert run.step_numbers() == logged
    if status > 0:  # an uncaught Python exception: the traceback ends the log
        traceback = run.log.rsplit("Traceback (most recent call last):", 1)
        assert len(traceback) == 2
        assert any(line.startswith(texts[0]) for line in traceback[1].splitlines())
    if logged:  # ms-swift prints this from a cleanup block, so it appears after a crash too
        crashed_in_python = status > 0
        assert ("[INFO:swift] last_model_checkpoint: " in run.log) == crashed_in_python


def test_gpu_busy_names_foreign_processes(demo):
    run = demo.run("--max_steps", "5", "--fault", "gpu_busy@0")
    assert run.returncode == 1
    oom = run.last_line()
    assert oom.startswith(OOM_TEXT)
    assert len(re.findall(r"Process \d+ has \d+\.\d\d GiB memory in use\. ", oom)) == 2
    assert "Including non-PyTorch memory, this process has" in oom
    assert not run.steps and not list(run.output_dir.glob("checkpoint-*"))


def test_port_fault_is_a_real_rendezvous_bind_failure(demo):
    holder = socket.socket()
    holder.bind(("0.0.0.0", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        run = demo.run("--max_steps", "5", "--fault", "port", env={"MASTER_PORT": str(port)})
    finally:
        holder.close()
    assert run.returncode == 1
    assert run.last_line() == (
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
        f"address. port: {port}, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use")
    assert "in init_process_group" in run.log, "raised by torch's own rendezvous"
    assert not run.steps


def test_nan_loss_is_real_and_training_continues(demo):
    run = demo.run("--max_steps", "6", "--save_steps", "3", "--fault", "nan@4")
    assert run.returncode == 0
    steps = run.steps
    assert [(d["loss"], d["grad_norm"]) for d in steps[3:]] == [("nan", "nan")] * 3
    assert all(math.isfinite(float(d["loss"])) and math.isfinite(float(d["grad_norm"])) for d in steps[:3])
    records = [json.loads(ln) for ln in (run.output_dir / "logging.jsonl").read_text().splitlines()]
    assert math.isnan(records[3]["loss"])
    from safetensors.torch import load_file

    clean = load_file(str(run.output_dir / "checkpoint-3" / "adapter_model.safetensors"))
    poisoned = load_file(str(run.output_dir / "checkpoint-6" / "adapter_model.safetensors"))
    assert not any(t.isnan().any() for t in clean.values())
    assert all(t.isnan().any() for t in poisoned.values()), "the NaN spread through every update"


def test_spike_is_a_real_grad_norm_excursion_that_recovers(demo):
    run = demo.run("--max_steps", "8", "--fault", "spike@4")
    assert run.returncode == 0
    norms = [float(d["grad_norm"]) for d in run.steps]
    losses = [float(d["loss"]) for d in run.steps]
    assert 300 < norms[3] / norms[2] < 3000
    assert max(norms[5:]) < 10 * norms[2], "clipping kept the update bounded: the norm recovers"
    assert all(math.isfinite(x) for x in losses) and losses[-1] < losses[0]


def test_stub_checkpoint_is_empty_and_the_rest_is_written(demo):
    from safetensors import safe_open

    run = demo.run("--max_steps", "6", "--save_steps", "2", "--fault", "stub@4")
    assert run.returncode == 0
    stub = run.output_dir / "checkpoint-4"
    weights = stub / "adapter_model.safetensors"
    assert weights.stat().st_size == 39 * 1024
    with safe_open(str(weights), "pt") as f:
        assert list(f.keys()) == []
    for name in ("adapter_config.json", "args.json", "trainer_state.json", "optimizer.pt", "rng_state.pth"):
        assert (stub / name).is_file(), name
    for good in ("checkpoint-2", "checkpoint-6"):
        with safe_open(str(run.output_dir / good / "adapter_model.safetensors"), "pt") as f:
            assert len(list(f.keys())) > 0
    assert f"Saving model checkpoint to {stub}" in run.log, "the save looks normal in the log"


def test_hang_stops_output_and_progress_until_killed(demo):
    proc, log_path, _ = demo.start("--max_steps", "8", "--fault", "hang@3")
    assert wait_for(lambda: "'2/8'" in read_log(log_path)), read_log(log_path)[-2000:]
    size = log_path.stat().st_size
    # Unhung, the remaining 6 steps would take well under a second; watch for 2 s.
    assert not wait_for(lambda: log_path.stat().st_size != size or proc.poll() is not None, timeout=2.0)
    assert psutil.Process(proc.pid).status() == psutil.STATUS_SLEEPING
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    steps = [d for d in dict_lines(read_log(log_path)) if "global_step/max_steps" in d]
    assert [d["global_step/max_steps"] for d in steps] == ["1/8", "2/8"]


@pytest.mark.parametrize("fault,attempt,status", [
    ("oom@2", None, 1),      # default: attempt 1
    ("oom@2", "2", 0),       # the restarted attempt does not crash again
    ("oom@2#2", None, 0),    # aimed at attempt 2, attempt 1 runs clean
    ("oom@2#2", "2", 1),
])
def test_fault_fires_only_in_its_attempt(demo, fault, attempt, status):
    env = {"MOECONSOLE_ATTEMPT": attempt} if attempt else None
    run = demo.run("--max_steps", "3", "--fault", fault, env=env)
    assert run.returncode == status
    assert run.step_numbers() == ([1] if status else [1, 2, 3])


@pytest.mark.parametrize("args,env,message", [
    (["--fault", "boom@3"], None, "unknown kind 'boom'"),
    (["--fault", "oom"], None, "oom needs a step"),
    (["--fault", "oom@two"], None, "invalid --fault 'oom@two'"),
    (["--fault", "stub@3", "--save_steps", "5"], None, "no checkpoint is saved at step 3"),
    (["--max_steps", "0"], None, "--max_steps must be at least 1"),
    (["--max_steps", "ten"], None, "invalid int value: 'ten'"),
    (["--top_k", "9"], None, "--top_k 9 is more than --experts 8"),
    (["--learning_rate", "-1"], None, "--learning_rate must be positive"),
    (["--no_such_flag"], None, "unrecognized arguments: --no_such_flag"),
    ([], {"MOECONSOLE_ATTEMPT": "first"}, "MOECONSOLE_ATTEMPT must be a positive integer"),
    ([], {"WORLD_SIZE": "2", "RANK": "0"}, "--batch_size 15 does not split over WORLD_SIZE 2"),
])
def test_bad_flags_exit_2_with_one_line(demo, args, env, message):
    if env and "WORLD_SIZE" in env:
        args = args + ["--batch_size", "15"]
    run = demo.run(*(["--max_steps", "5"] + args), env=env)
    assert run.returncode == 2
    lines = run.log.splitlines()
    assert len(lines) == 1 and lines[0].startswith("moeconsole.runner.demo.train: error: "), run.log
    assert message in lines[0]


def test_output_dir_that_cannot_be_created_is_refused(demo):
    blocker = demo.workdir / "a-file"
    blocker.write_text("not a directory")
    run = demo.run("--max_steps", "3", output_dir=blocker / "out")
    assert run.returncode == 2
    assert run.log.splitlines() == [f"moeconsole.runner.demo.train: error: cannot create --output_dir {blocker / 'out'}: "
                                    "Not a directory"]


def test_missing_output_dir_is_a_usage_error(demo):
    import subprocess

    from tests.demo.demo_helpers import PYTHON

    proc = subprocess.run([PYTHON, "-m", "moeconsole.runner.demo.train", "--max_steps", "3"], env=demo.env(),
                          cwd=demo.workdir, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == ["moeconsole.runner.demo.train: error: the following arguments are required: --output_dir"]
