"""The cost of repeated crashes of a run on CPU is never counted in GPU-hours: two processes started by
torchrun with ``--use_cpu true`` are no GPUs (runner/recipes/memory_estimate.py ``on_cpu``), through the
real runner and a real torchrun."""
from __future__ import annotations

import yaml

# Each rank logs steps 1-3 and fails the same way at step 3, every attempt: the second crash pauses
# the run, and the pause reason says what the two attempts cost.
CRASHER = r'''
import os, sys
for step in (1, 2, 3):
    print("{'loss': %r, 'global_step/max_steps': '%d/10'}" % (1.0 / step, step), flush=True)
if os.environ.get("RANK") == "0":
    raise RuntimeError("the same failure at step 3")
'''


def test_a_use_cpu_run_of_two_processes_costs_hours_on_cpu_not_gpu_hours(harness, tmp_path):
    script = tmp_path / "crash.py"
    script.write_text(CRASHER)
    run = harness.start(harness.recipe(
        command=["{python}", "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "0",
                 str(script), "--use_cpu", "true"],
        checkpoints={"dir": None}, resume={"arg": None}))
    st = run.wait_status("paused", "failed", "succeeded", timeout=240)
    assert st["status"] == "paused", st
    assert "h on CPU (no GPUs)" in st["pause_reason"], st["pause_reason"]
    assert "GPU-hours" not in st["pause_reason"] and "GPUs," not in st["pause_reason"]


# ms-swift's line (swift/model/register.py l.282) as a run without --use_cpu printed it on this GPU-less machine
# (measured, ms-swift 4.6.0): its default device map found no GPU.
SWIFT_FOUND_NO_GPU = "[INFO:swift] model_kwargs: {'device_map': 'cpu', 'dtype': torch.float32}"


def test_a_run_whose_log_says_it_found_no_gpu_costs_hours_on_cpu(harness, tmp_path):
    """Two torchrun processes without ``--use_cpu`` on a machine with no GPU: ms-swift says it loads on the CPU.
    Before: "GPU-hours (2 GPUs, ...)" (the process count)."""
    script = tmp_path / "crash.py"
    script.write_text(f"print({SWIFT_FOUND_NO_GPU!r}, flush=True)\n" + CRASHER)
    run = harness.start(harness.recipe(
        command=["{python}", "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "0", str(script)],
        checkpoints={"dir": None}, resume={"arg": None}))
    st = run.wait_status("paused", "failed", "succeeded", timeout=240)
    assert st["status"] == "paused", st
    assert "h on CPU (no GPUs)" in st["pause_reason"], st["pause_reason"]


def test_a_device_map_the_command_gives_is_no_proof_of_the_cpu(tmp_path):
    """``--device_map cpu`` is what the user asked for, not what torch found: the processes stay GPUs."""
    from moeconsole.runner.recipes.memory_estimate import gpus_of_command
    from moeconsole.runner.recipes.recipe import load as load_recipe
    recipe = tmp_path / "r.yaml"
    for argv, gpus in ((["--model", "m"], 0), (["--device_map", "cpu"], 2), (["--device_map=cpu"], 2)):
        recipe.write_text(yaml.safe_dump({"name": "r", "command": ["torchrun", "--nproc_per_node", "2", "train.py", *argv]}))
        assert gpus_of_command(load_recipe(recipe), log_found_no_gpu=True) == gpus, argv
    assert gpus_of_command(load_recipe(recipe)) == 2


def test_a_run_on_a_machine_without_any_gpu_driver_costs_hours_on_cpu(harness, tmp_path):
    """Newcomer round 13: the user's own `torchrun --nproc_per_node 2 train.py` (gloo, no `--use_cpu`, no
    ms-swift) on a machine whose screen said "GPUs: not available: ... (no NVIDIA driver installed)" paused
    on "The two attempts cost 0.02 GPU-hours (2 GPUs, 0.01 h)"."""
    import pytest
    from moeconsole.runner.telemetry.gpu import get_backend, no_gpu_here
    if not no_gpu_here(get_backend()):
        pytest.skip("this machine has a GPU driver")
    script = tmp_path / "crash.py"
    script.write_text(CRASHER)
    run = harness.start(harness.recipe(
        command=["{python}", "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", "0", str(script)],
        checkpoints={"dir": None}, resume={"arg": None}))
    st = run.wait_status("paused", "failed", "succeeded", timeout=240)
    assert st["status"] == "paused", st
    assert "h on CPU (no GPUs)" in st["pause_reason"] and "GPU-hours" not in st["pause_reason"], st["pause_reason"]


def test_no_gpu_here_only_where_no_driver_is_there(tmp_path):
    """Refusals: NVML refused (no permission, a version mismatch) or a GPU driver's device node present
    (AMD's /dev/kfd: ROCm torch trains there without NVML) is not a machine without GPUs."""
    from moeconsole.runner.telemetry.gpu import NoGpuBackend, no_gpu_here
    from moeconsole.runner.telemetry.nvml import NO_DRIVER_REASONS
    absent = (str(tmp_path / "nvidiactl"), str(tmp_path / "kfd"))
    for reason in sorted(NO_DRIVER_REASONS):
        assert no_gpu_here(NoGpuBackend(reason), absent)
    assert not no_gpu_here(NoGpuBackend("no permission to use NVML"), absent)
    (tmp_path / "kfd").write_text("")
    assert not no_gpu_here(NoGpuBackend(sorted(NO_DRIVER_REASONS)[0]), absent)
