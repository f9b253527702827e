"""A training held still (SIGSTOP, then SIGCONT) is not a slowdown: the step that spans the hold
and the trainer's own average s/it (the demo's, as ms-swift's ``train_speed(s/it)``: elapsed since
the trainer started over the steps since) carried the held seconds, and a `throughput_drop` WARN
followed every resume. A real slowdown after the resume still alerts. Real runner, real training,
real signals; what the user sees: the run's alerts (events.jsonl, `--json --once`)."""
from __future__ import annotations

import json
import os
import signal
import textwrap
import time

from tests.waiting import until

from tests.runner.test_runner_world12 import ONE_ATTEMPT

SPEED_RULES = ("throughput_drop",)


def _stop_until_held(run, pid: int) -> None:
    """SIGSTOP ``pid`` until the runner says the training is held (state.json's ``held``: found
    once the silence shows, ~15 s), then SIGCONT."""
    os.kill(pid, signal.SIGSTOP)
    try:
        run.wait(lambda s: s.get("held"), 120, what="state.json to say the training is held")
        log = run.path / "train.log"
        until(lambda: time.time() - log.stat().st_mtime > 25, 120, what="the training silent for 25 s")
    finally:
        os.kill(pid, signal.SIGCONT)
    run.wait(lambda s: s.get("held") is None, 60, what="state.json to forget the stop")


def _leader(st: dict) -> int:
    return next(int(p["pid"]) for p in st["pids"] if p.get("role") == "leader")


def _speed_alerts(run) -> list[dict]:
    return [a for a in run.events("alert") if a.get("rule") in SPEED_RULES]


def test_a_demo_training_stopped_and_continued_raises_no_throughput_drop(harness):
    # a drop of 3x: the hold (25 s and more) makes the demo's average after it ~4x its median (measured:
    # no WARN at 4x on main), while a loaded machine's noise (a step twice its median) stays under it
    cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
           "--max_steps", "70", "--save_steps", "1000", "--step_delay", "0.15"]
    run = harness.start(harness.recipe(command=cmd, heartbeat={"timeout_s": 600, "startup_s": 600},
                                       alerts={"throughput_drop_frac": 0.34}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 25, 240, what="step 25")
    _stop_until_held(run, _leader(st))
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "cooldown", "paused", timeout=300)
    assert st["status"] == "succeeded", st
    assert not _speed_alerts(run), _speed_alerts(run)
    shown = json.loads(harness.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)["run"]
    assert not [g for g in shown.get("alert_groups") or [] if g.get("rule") in SPEED_RULES], shown.get("alert_groups")


def _averaging(fast: int, slow: int) -> list[str]:
    """Steps of 0.2 CPU-second, then ``slow`` of 3 (a real slowdown, 15x), each printing the
    trainer's own average since it started (``step_time_s`` = elapsed / steps), as ms-swift does.
    The slowdown starts once the trainer sees it was held (a step of wall time far past its CPU time)."""
    return ["{python}", "-c", textwrap.dedent(f"""
        import json, time
        start, held, slow_left, step = time.time(), False, {slow}, 0
        while step < {fast} or (held and slow_left > 0):
            step += 1
            began, cpu = time.time(), time.process_time()
            work = 3.0 if held and step > {fast} else 0.2
            while time.process_time() - cpu < work:
                pass
            if time.time() - began > 10.0:
                held = True
            if step > {fast}:
                slow_left -= 1
            print(json.dumps({{"step": step, "loss": 1.0 / step, "step_time_s": (time.time() - start) / step}}), flush=True)
    """)]


def test_a_real_slowdown_after_the_resume_still_alerts(harness):
    run = harness.start(harness.recipe(command=_averaging(60, 4), alerts={"throughput_drop_frac": 0.15},
                                       heartbeat={"timeout_s": 600, "startup_s": 600}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 30, 240, what="step 30")
    _stop_until_held(run, _leader(st))
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "cooldown", "paused", timeout=300)
    assert st["status"] == "succeeded", st
    drops = [a for a in run.events("alert") if a.get("rule") == "throughput_drop"]
    assert [a["step"] for a in drops] and min(a["step"] for a in drops) > 60, drops
