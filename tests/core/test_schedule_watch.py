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


def test_a_long_run_holds_bounded_memory_and_still_sees_a_restart():
    """The runner keeps one watch for the whole run: its learning-rate history must not grow with
    every step (found by the campaign's day replay: the runner's RSS rose with the step count).
    200,000 steps over two attempts, fed in the runner's batches, hold under 2 MiB; the third
    attempt's restarted schedule is still caught against the rate reached before it."""
    import tracemalloc

    total = 250_000
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        w = ScheduleWatch()
        for att, (lo, hi) in enumerate(((1, 120_001), (110_001, 200_001)), start=1):
            for s in range(lo, hi, 1000):
                w.observe([{"step": k, "lr": lr_at(k, warm=1000, total=total)} for k in range(s, min(s + 1000, hi))],
                          att)
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert held < 2 * 1024 * 1024, f"{held / 2**20:.1f} MiB held after 200,000 steps"
    (a,) = w.observe([{"step": 180_001 + k, "lr": lr_at(k + 1, warm=1000, total=total)} for k in range(5)], 3)
    assert a["rule"] == "lr_schedule_restarted" and a["step"] == 180_001
    assert 179_000 <= a["values"]["step_before"] <= 180_001
    assert math.isclose(a["values"]["lr_before"], lr_at(a["values"]["step_before"], warm=1000, total=total))


def test_a_restart_of_a_schedule_without_warmup_is_seen_once_the_run_had_decayed():
    """ms-swift's default schedule has no warmup (cosine from the peak): a resume from a
    --save_only_model checkpoint starts the decay over at the peak (measured with 4.6.0: 0.005 at
    step 71, where the run had 0.004621). Before, only a warmup's starting rate again was seen."""
    def no_warmup(steps, attempt_no, schedule_from=0):
        return [{"step": s, "lr": lr_at(s - schedule_from, warm=0), "attempt": attempt_no} for s in steps]
    w = ScheduleWatch()
    assert w.observe(no_warmup(range(1, 41), 1)) == []
    (a,) = w.observe(no_warmup(range(31, 61), 2, schedule_from=30))
    assert (a["rule"], a["step"], a["values"]["warmup_steps"]) == ("lr_schedule_restarted", 31, None)
    assert "the first attempt's starting rate again" in a["message"] and "the decay starts over" in a["message"]
    assert "--save_only_model false" in a["message"]
    # the same schedule resumed with its state, and a constant rate resumed either way: silent
    w = ScheduleWatch()
    w.observe(no_warmup(range(1, 41), 1))
    assert w.observe(no_warmup(range(31, 61), 2)) == []
    w = ScheduleWatch()
    w.observe([{"step": s, "lr": 1e-4, "attempt": 1} for s in range(1, 41)])
    assert w.observe([{"step": s, "lr": 1e-4, "attempt": 2} for s in range(31, 61)]) == []
    # a resume right after the start, before the rate had moved, says nothing (nothing is lost yet)
    w = ScheduleWatch()
    w.observe(no_warmup(range(1, 4), 1))
    assert w.observe(no_warmup(range(2, 10), 2, schedule_from=1)) == []


def test_a_cyclic_schedule_resumed_at_a_cycle_start_is_silent():
    """Cosine with restarts (SGDR, transformers' cosine_with_restarts) without warmup: the run comes
    back to its starting rate at each cycle's start on its own, so a resume with its scheduler that
    lands on a cycle's start logs the starting rate again and restarts nothing (it had warned)."""
    def cyclic(steps, attempt_no):
        return [{"step": s, "lr": lr_at((s - 1) % 20 + 1, warm=0, total=20), "attempt": attempt_no} for s in steps]
    w = ScheduleWatch()
    assert w.observe(cyclic(range(1, 41), 1)) == []           # two cycles: back at the start at step 21
    assert w.observe(cyclic(range(41, 61), 2)) == []          # resumed from step 40: a cycle starts at 41
