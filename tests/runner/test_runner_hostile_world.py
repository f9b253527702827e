"""The supervised run in a world that is not a clean test box: the log rotated under the runner,
a launcher that leaves its training running in the background. Each through the real CLI, the
real detached runner and a real training process; asserted on what the user sees (the run's
status, its steps, its events)."""
from __future__ import annotations

import os

from tests.waiting import until

# A command that saves nothing, judged without a checkpoint directory.
NO_SAVES = {"checkpoints": {"dir": None}, "resume": {"arg": None}}


def _ticker(steps: int, delay: float) -> list[str]:
    return ["{python}", "-c", (
        "import time\n"
        f"for i in range(1, {steps + 1}):\n"
        f"    print(\"{{'loss': '1.0', 'global_step/max_steps': '%d/{steps}'}}\" % i, flush=True)\n"
        f"    time.sleep({delay})\n")]


def test_logrotate_rename_and_create_is_no_hang_and_loses_no_step(harness):
    """logrotate (rename, then a new empty train.log) under a live training: the training's stdout
    keeps writing the renamed file. The runner used to switch to the new empty file, hear nothing,
    call the healthy training hung, kill it and restart it; it reads the file the training writes,
    so the run ends in its one attempt with every step."""
    run = harness.start(harness.recipe(command=_ticker(60, 0.15), heartbeat={"timeout_s": 4}, **NO_SAVES))
    run.wait(lambda s: (s.get("step") or 0) >= 5, what="step 5")
    log = run.path / "train.log"
    os.rename(log, run.path / "train.log.1")
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    assert st["attempt"] == 1 and not run.events("crash"), run.events("crash")
    assert not [e for e in run.events("alert") if e.get("rule") == "hang"]
    assert sorted({m["step"] for m in run.metrics()}) == list(range(1, 61))
