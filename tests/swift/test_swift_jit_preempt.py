"""A SIGTERM from something other than the runner to ms-swift's trainer with ``--enable_jit_checkpoint true``
(a preemption: Kubernetes, Slurm's ``--signal=TERM@N``), for real on CPU.

Measured (ms-swift 4.6.0, transformers 5): transformers' JIT callback waits 3 s, saves ``checkpoint-S`` in the
middle of step S+1 (its ``on_step_begin``/``on_pre_optimizer_step``), the loop stops at that step's end and
the trainer and ms-swift's wrapper exit 0; the summary dict says ``S+1/400``. Its own lines are INFO, not
printed at ms-swift's level. Before: ``ENDED SHORT (step S+1 of 400)``, no restart. The save's
trainer_state.json (``should_training_stop`` at a step before the last) is the proof now: ``preempted``,
restarted from ``checkpoint-S`` (runner/core/ending.py ``stop_saved_mid_step``)."""
from __future__ import annotations

import json
import os
import signal

import pytest

from tests.swift.swift_helpers import cli, require_swift, start, trainer_pid



TRIES = 3   # runs, each with one SIGTERM: the timer fires in the optimizer step in a small share of them


def _preempt_once(swift_runs, tiny) -> bool:
    """One run, one SIGTERM from outside. False when the JIT timer fired during the optimizer step: its
    ``on_step_end`` saved at the last step, which proves nothing (ms-swift's ``--max_epochs`` saves and stops
    the same way), so the run ENDED SHORT as before and the rule was not exercised: the caller tries again."""
    run = start(swift_runs, tiny, "args.enable_jit_checkpoint=true", "args.max_steps=400", "args.save_steps=4")
    try:
        st = run.wait_while_moving(lambda s: (s.get("step") or 0) >= 5 and trainer_pid(run), "step 5")
        pid = trainer_pid(run)
        assert pid is not None, st
        os.kill(pid, signal.SIGTERM)     # from outside: not the runner's
        run.wait_while_moving(lambda s: s.get("attempt") == 2 or s.get("status") in ("succeeded", "failed", "paused"),
                              "attempt 1 judged")
        saves = [json.loads(f.read_text()) for f in sorted(run.path.glob("output/v0-*/checkpoint-*/trainer_state.json"))]
        stopped = [s["global_step"] for s in saves
                   if s.get("stateful_callbacks", {}).get("TrainerControl", {}).get("args", {}).get("should_training_stop")]
        (success,) = [e for e in run.events("success") if e["attempt"] == 1] or [None]
        (logged,) = run.path.glob("output/v0-*/logging.jsonl")
        last = [d for d in map(json.loads, logged.read_text().splitlines()) if "global_step/max_steps" in d][-1]
        end_step = int(str(last["global_step/max_steps"]).split("/")[0])    # the summary's: S+1 after checkpoint-S
        assert stopped, "the JIT save's trainer_state.json asks to stop"
        # the proof is a stop save before the last step; the step's own save_steps save at its end (S+1 a
        # multiple of save_steps) also carries the stop the JIT set, and proves nothing by itself (CI: read
        # as "the timer fired in the optimizer step" while the runner rightly read the mid-step save)
        mid = [s for s in stopped if s < end_step]
        if not mid:
            assert success is not None and success.get("short"), run.events()
            return False
        crashes = [c for c in run.events("crash") if c["attempt"] == 1]
        assert len(crashes) == 1, f"attempt 1 is no preemption: {run.state().get('pause_reason')!r}, success {success}"
        (crash,) = crashes
        assert (crash["class"], crash["decision"]) == ("preempted", "restart"), crash
        assert f"step {end_step} of 400" in crash["summary"], crash["summary"]
        report = json.loads((run.path / "crashes" / "attempt-1.json").read_text())
        assert any(f"checkpoint-{max(mid)} was saved in the middle of step" in e for e in report["evidence"])
        assert success is None
        (start2,) = [e for e in run.events("attempt_start") if e["attempt"] == 2]
        assert start2["resumed_from"].endswith(f"checkpoint-{max(s['global_step'] for s in saves)}")   # the newest
        return True
    finally:
        cli(swift_runs, "kill", run.id)


def test_a_jit_checkpoint_after_a_sigterm_is_a_preemption_resumed_from_its_save(swift_runs, tiny):
    """The rule is exercised in every pass: a run whose timer fired in the optimizer step (review R35: that
    branch passed on the code before too) is followed by another, up to ``TRIES``; never a silent pass."""
    require_swift()
    for _ in range(TRIES):
        if _preempt_once(swift_runs, tiny):
            return
    pytest.skip(f"the JIT timer fired in the optimizer step in all {TRIES} runs: the mid-step save was never made")


def test_a_jit_save_cut_by_the_kill_graces_sigkill_is_never_the_resume_point(swift_runs, tiny):
    """SIGTERM to the training's group with `--enable_jit_checkpoint true`: the `swift` wrapper dies at once,
    the runner ends the rest (its kill grace, 90 s here, then SIGKILL); the trainer's JIT callback meanwhile starts
    `checkpoint-S` with its sentinel `checkpoint-is-incomplete.txt` (trainer_jit_checkpoint.py l.51-70). A FIFO
    where the save writes `optimizer.pt` (made the moment the sentinel appears; a save of a big optimizer state
    on a slow disk) holds the save until the SIGKILL, so the sentinel is left. That save is `incomplete` and the
    automatic restart resumes from the newest whole save before it."""
    import time
    require_swift()
    # a grace long enough for the JIT save to begin: it waits 3 s, then saves at the next step boundary (a step
    # took 30 s on a loaded machine, where the recipe's 10 s SIGKILLed the trainer before it began)
    run = start(swift_runs, tiny, "args.enable_jit_checkpoint=true", "args.max_steps=400", "args.save_steps=4",
                "kill.grace_s=90")
    fifo = None
    try:
        st = run.wait_while_moving(lambda s: (s.get("step") or 0) >= 5 and trainer_pid(run), "step 5")
        leader = next(p for p in st["pids"] if p.get("role") == "leader")
        os.killpg(os.getpgid(leader["pid"]), signal.SIGTERM)
        deadline = time.monotonic() + 85
        jit = None
        while jit is None and time.monotonic() < deadline:   # the sentinel's moment: polled, not slept on
            jit = next((p.parent for p in run.path.glob("output/v0-*/checkpoint-*/checkpoint-is-incomplete.txt")), None)
        assert jit is not None, "no JIT save began"
        try:
            os.mkfifo(jit / "optimizer.pt")
            fifo = jit / "optimizer.pt"
        except FileExistsError:
            pytest.skip("the save reached optimizer.pt before the FIFO was made (the race this test holds was lost)")
        run.wait_while_moving(lambda s: s.get("attempt") == 2 or s.get("status") in ("failed", "paused", "killed"),
                              "attempt 1 ended")
        assert (jit / "checkpoint-is-incomplete.txt").exists()
        verdicts = [(e["verdict"], e.get("reason") or "") for e in run.events("checkpoint") if e["path"] == str(jit)]
        assert verdicts and verdicts[-1][0] == "incomplete" and "checkpoint-is-incomplete.txt" in verdicts[-1][1], verdicts
        (start2,) = [e for e in run.events("attempt_start") if e["attempt"] == 2]
        whole = {e["path"]: e["step"] for e in run.ok_checkpoints() if e["attempt"] == 1}
        assert start2["resumed_from"] == max(whole, key=whole.get) and start2["resumed_from"] != str(jit), (start2, whole)
        print("JIT cut", jit.name, "resumed from", start2["resumed_from"], [c["summary"] for c in run.events("crash")])
    finally:
        cli(swift_runs, "kill", run.id)
        if fifo is not None and fifo.exists():
            fifo.unlink()
