"""Resume modes of the real ms-swift 4.6 in which the trainer counts from step 1 again, and what
the runner's restart policy makes of them."""
from __future__ import annotations

import os
import signal

from tests.swift.swift_helpers import cli, require_swift, start


def _terminate_training(state: dict) -> None:
    """SIGTERM to the training's process group (the `swift` wrapper and its trainer), as a
    scheduler's preemption sends it; the leader is the one state.json names."""
    leader = next(p for p in state["pids"] if p.get("role") == "leader")
    os.killpg(os.getpgid(leader["pid"]), signal.SIGTERM)


def test_resume_only_model_with_ignore_data_skip_counts_from_step_1_and_that_is_progress(swift_runs, tiny):
    """`--resume_only_model true --ignore_data_skip true`: ms-swift loads the checkpoint's weights and
    drops resume_from_checkpoint (swift/trainers/mixin.py l.149-152), so the resumed attempt logs
    steps 1, 2, ... An attempt cut early (below its checkpoint's step) has still trained: with
    restart.no_progress_attempts 1 the run restarts instead of failing for "no step progress", and
    the attempt's record says its count started at 0."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=400", "args.save_steps=4", "args.resume_only_model=true",
                "args.ignore_data_skip=true", "restart.no_progress_attempts=1")
    try:
        state = run.wait(lambda s: any(e["step"] >= 8 for e in run.ok_checkpoints()) and s.get("pids"),
                         "checkpoint-8 verified")
        _terminate_training(state)
        state = run.wait(lambda s: s.get("attempt") == 2 and s.get("pids") and run.metrics(2), "attempt 2's first step")
        _terminate_training(state)
        state = run.wait(lambda s: len(s.get("history") or []) >= 2, "attempt 2 judged")
        (rec,) = [h for h in state["history"] if h["attempt"] == 2]
        ckpt_step = int(rec["resumed_from"].rsplit("checkpoint-", 1)[1])
        steps = [m["step"] for m in run.metrics(2)]
        assert steps[0] == 1 and rec["last_step"] <= ckpt_step, (steps, rec)   # counted from 1, cut below the checkpoint
        (crash,) = [c for c in run.events("crash") if c["attempt"] == 2]
        assert crash["decision"] == "restart", (crash, state.get("pause_reason"))
        assert rec["resumed_step"] == 0, rec
    finally:
        cli(swift_runs, "kill", run.id)
