"""The cost of repeated crashes of a run on CPU is never counted in GPU-hours: two processes started by
torchrun with ``--use_cpu true`` are no GPUs (runner/recipes/memory_estimate.py ``on_cpu``), through the
real runner and a real torchrun."""
from __future__ import annotations

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
