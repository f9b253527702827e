"""Newcomer round 14 left it: a recipe naming GPUs (the 8xH200 recipe, `gpus.devices: [0..7]`) on a machine with no
GPU driver waited the whole cooldown ceiling before every attempt, PRE-FLIGHT "no NVIDIA GPU on this machine for the
recipe's GPU 0,...,7", then launched anyway: no GPU memory can be released on GPUs there are none of. The attempt
now starts without that wait, and one warning (`no_gpu_here`) names the GPUs and the way out. A real runner on this
machine (skipped where a GPU driver is present)."""
from __future__ import annotations

import pytest

from moeconsole.runner.telemetry.gpu import get_backend, no_gpu_here

STEPS = "import time\nfor i in range(1, 4):\n    print('{\"step\": %d, \"loss\": 1.0}' % i, flush=True)\n"


@pytest.fixture(autouse=True)
def _no_gpu_machine():
    if not no_gpu_here(get_backend()):
        pytest.skip("this machine has a GPU driver")


def test_a_recipe_naming_gpus_on_a_machine_without_any_starts_at_once_and_says_why(harness):
    run = harness.start(harness.recipe(
        command=["{python}", "-c", STEPS], gpus={"devices": [0, 1, 2, 3, 4, 5, 6, 7]},
        cooldown={"floor_s": 0.0, "ceiling_s": 3600.0, "poll_s": 0.05},
        checkpoints={"dir": None}, resume={"arg": None}))
    st = run.wait_status("succeeded", "failed", "paused", timeout=300)   # the ceiling (an hour) was never waited
    assert st["status"] == "succeeded", st
    alerts = [e for e in run.events("alert") if e["rule"] == "no_gpu_here"]
    assert len(alerts) == 1 and "8 GPUs (0,1,2,3,4,5,6,7)" in alerts[0]["message"], alerts
    assert "gpus.devices to []" in alerts[0]["message"] and alerts[0]["level"] == "warning"
    assert not [e for e in run.events("alert") if "ceiling" in str(e.get("message", ""))]


def test_refusal_a_recipe_without_gpus_raises_no_such_warning(harness):
    run = harness.start(harness.recipe(command=["{python}", "-c", STEPS], checkpoints={"dir": None},
                                       resume={"arg": None}))
    st = run.wait_status("succeeded", "failed", "paused", timeout=300)
    assert st["status"] == "succeeded", st
    assert not [e for e in run.events("alert") if e["rule"] == "no_gpu_here"]
