"""The LR-schedule restart watch: a resumed attempt whose learning rate starts over (ms-swift's
--adapters/--model resume builds a fresh scheduler) raises one warning with the warmup it re-runs;
a full-state resume that continues the schedule raises none."""
from __future__ import annotations

import math

from moeconsole.runner.core.schedule_watch import ScheduleWatch


def lr_at(step: int, warm: int = 10, total: int = 100, peak: float = 2e-5, floor: float = 2e-6) -> float:
    if step <= warm:
        return peak * step / warm
    r = (step - warm) / (total - warm)
    return floor + 0.5 * (math.cos(math.pi * r) + 1) * (peak - floor)


def attempt(steps, attempt_no, schedule_from=0):
    return [{"step": s, "lr": lr_at(s - schedule_from), "attempt": attempt_no} for s in steps]


def test_a_resume_that_restarts_the_schedule_is_one_warning_with_the_warmup_it_costs():
    w = ScheduleWatch()
    assert w.observe(attempt(range(1, 41), 1)) == []
    # resumed from step 30: the iteration continues (31...) but the scheduler starts at 0 again
    alerts = w.observe(attempt(range(31, 61), 2, schedule_from=30))
    (a,) = alerts
    assert (a["level"], a["rule"], a["step"]) == ("warning", "lr_schedule_restarted", 31)
    assert a["values"]["warmup_steps"] == 10 and a["values"]["step_before"] == 31
    assert "re-runs the 10-step warmup (steps 31-40" in a["message"]
    # one per attempt
    assert w.observe(attempt(range(61, 70), 2, schedule_from=30)) == []


def test_a_full_state_resume_that_continues_the_schedule_is_silent():
    w = ScheduleWatch()
    w.observe(attempt(range(1, 41), 1))
    assert w.observe(attempt(range(31, 61), 2)) == []


def test_records_without_a_learning_rate_are_ignored_and_the_first_attempt_never_alerts():
    w = ScheduleWatch()
    assert w.observe([{"step": 1, "loss": 2.0}, {"step": 2, "lr": "nan"}, {"step": 3, "lr": True}], 1) == []
    assert w.observe(attempt(range(1, 20), 1)) == []
