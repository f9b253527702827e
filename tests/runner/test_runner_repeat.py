"""A crash that repeats at the same point on every attempt, with the real runner and the real demo
trainer: its ``enospc@N`` fault is a save that runs out of room (the save at step N leaves a stub and
raises ``OSError(ENOSPC, ...)``, as a full disk does), after progress, so the no-progress rule never
trips. Each attempt resumes from the same verified checkpoint, trains to the same step and fails the
same save: the second identical crash pauses the run instead of spending the restart cap (here 5),
and a crash at a later step after the checkpoint advanced still restarts."""
from __future__ import annotations

import os


def _demo(*faults: str, max_steps: int = 12) -> list[str]:
    cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
           "--max_steps", str(max_steps), "--save_steps", "4"]
    for f in faults:
        cmd += ["--fault", f]
    return cmd


def test_the_same_failed_save_twice_pauses_the_run_with_one_critical_alert(harness):
    # armed for five attempts: without the rule each would resume from checkpoint-4 and fail again
    run = harness.start(harness.recipe(command=_demo(*(f"enospc@8#{a}" for a in range(1, 6)))))
    st = run.wait_status("paused", "failed", "succeeded", timeout=180)
    assert st["status"] == "paused", st
    assert st["attempt"] == 2 and st.get("restarts") == 1
    reason = st["pause_reason"]
    assert reason.startswith("paused: the same crash twice at step 8 (attempt 2; attempt 1 at step 8), and the next "
                             "attempt would resume from checkpoint-4 again: disk_full: "), reason
    assert "No space left on device" in reason and "The two attempts cost " in reason
    assert f"What to do: {run.crash(2)['hint']}" in reason
    starts = run.events("attempt_start")
    assert [os.path.basename(s["resumed_from"] or "") for s in starts] == ["", "checkpoint-4"]
    crashes = run.events("crash")
    assert [(c["attempt"], c["step"], c["class"], c["decision"]) for c in crashes] == \
        [(1, 8, "disk_full", "restart"), (2, 8, "disk_full", "pause")]
    critical = [a for a in run.events("alert") if a["rule"] == "restart_policy" and a["level"] == "critical"]
    assert len(critical) == 1 and critical[0]["message"] == reason and critical[0]["attempt"] == 2
    # state.json's history carries what the rule read, through the model
    hist = st["history"]
    assert hist[0]["signature"] == hist[1]["signature"] and hist[1]["signature"].startswith(
        "disk_full: OSError: [Errno #] No space left on device")
    assert hist[1]["resumed_from"] == hist[1]["resume_next"] and hist[1]["resumed_from"].endswith("checkpoint-4")
    assert harness.cli("kill", run.id).returncode == 0


def test_a_crash_at_a_later_step_after_the_checkpoint_advanced_restarts_as_before(harness):
    run = harness.start(harness.recipe(command=_demo("enospc@8#1", "enospc@12#2", max_steps=16)))
    st = run.wait_status("succeeded", "failed", "paused", timeout=180)
    assert st["status"] == "succeeded", st.get("pause_reason")
    assert st["attempt"] == 3
    crashes = run.events("crash")
    assert [(c["attempt"], c["step"], c["decision"]) for c in crashes] == [(1, 8, "restart"), (2, 12, "restart")]
    assert [os.path.basename(s["resumed_from"] or "") for s in run.events("attempt_start")] == \
        ["", "checkpoint-4", "checkpoint-8"]
    assert not [a for a in run.events("alert") if a["rule"] == "restart_policy" and a["level"] == "critical"]


def test_a_crash_resumed_after_its_pause_counts_against_the_cap_as_shown(harness):
    """Review R22 #1: the pause's crash, resumed by the user (`r`, `moeconsole restart`), is a restart the
    policy counts against the cap; state.json's ``restarts`` (every screen's auto-restarts) said 1 on
    attempt 3 while the policy counted 2, so a run could fail at the cap with its screen at 1/2."""
    run = harness.start(harness.recipe(command=_demo(*(f"enospc@8#{a}" for a in range(1, 6))),
                                       restart={"max_restarts": 2}))
    st = run.wait_status("paused", "failed", "succeeded", timeout=180)
    assert st["status"] == "paused" and st["attempt"] == 2 and st["restarts"] == 1, st
    harness.cli("restart", run.id, check=True)
    st = run.wait(lambda s: s.get("attempt") == 3 and s.get("status") in ("paused", "failed", "succeeded"),
                  timeout=180, what="attempt 3 judged")
    assert st["status"] == "failed", st.get("pause_reason")
    crash = run.events("crash")[-1]
    assert crash["attempt"] == 3 and "restart cap reached (2/2 restarts used)" in crash["reason"], crash
    assert st["restarts"] == 2, st["restarts"]
    shown = harness.cli("runs", "show", run.id, check=True).stdout
    assert "auto-restarts 2/2" in shown, shown
