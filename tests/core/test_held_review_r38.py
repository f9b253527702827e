"""R38: the held-time excuse decided "the step times are the trainer's average since its start"
at more than one record of a hold and never undid it. A Slurm suspension whose interval stayed
open past the first output (closed at the next squeue poll) had the next, normal record excused
and judged again; a hold shorter than a few logging windows (its interval opens at the last
output read, so it counts the training's normal work before the stop) was taken for an average.
Either way every later per-step / per-window time was differenced as an average: dozens of false
``throughput_drop`` / ``step_time_unstable`` WARNs. Now one decision per hold, and only a proven
one (the value cannot hold the held seconds over its own steps) reads the times as an average;
an unproven one reads them as printed. Pure: the read times and the intervals a live runner
passes, one record a read."""
from __future__ import annotations

import random

from moeconsole.runner.core.columns import records_to_columns
from moeconsole.runner.core.held import HeldSpans
from moeconsole.runner.core.monitors import Monitors

RULES = ("throughput_drop", "step_time_unstable")


def _observe(m: Monitors, spans: HeldSpans, at: float, rec: dict) -> list[int]:
    steps, values, present = records_to_columns([rec])
    return [a["step"] for _, a in m.observe_arrays(steps, values, present, held=spans, at=at) if a["rule"] in RULES]


def _slurm_suspend(close_after_read: float, step_s: float = 10.0, slow_from: int | None = None) -> list[int]:
    """Megatron's per-iteration time logged every step (log_interval 1), ±3%; `scontrol suspend`
    for 120 s after step 100; the interval opened at the last output read, closed
    ``close_after_read`` seconds after the first record after the resume was read (the follower's
    next squeue poll)."""
    rnd, clock, spans, m, last, out = random.Random(0), 100.0, HeldSpans(), Monitors(), 100.0, []
    for step in range(1, 301):
        dt = step_s * (1 + rnd.uniform(-0.03, 0.03)) * (3 if slow_from and step >= slow_from else 1)
        if step == 101:
            spans.begin(last)
            dt += 120.0
        clock += dt
        out += _observe(m, spans, clock, {"step": step, "step_time_s": round(dt, 3)})
        last = clock
        if step == 101:
            spans.end(clock + close_after_read)
    return out


def test_a_slurm_span_closed_after_the_first_record_excuses_only_that_record():
    for close in (0.0, 0.5, 5.0, 15.0):   # main: 66 WARNs from 0.5 s on (the next record judged again)
        assert _slurm_suspend(close) == [], close
    for step_s in (1.0, 10.0):
        got = _slurm_suspend(0.5 * step_s, step_s=step_s, slow_from=200)
        assert got and 200 <= got[0] <= 201, (step_s, got[:3])   # a real slowdown still alerts


def _megatron_window(hold_s: float, every: int = 10, hold_at: int = 503, slow_from: int | None = None,
                     average: bool = False) -> list[int]:
    """Step times over each logging window of ``every`` steps (Megatron's ``elapsed time per
    iteration`` with log_interval ``every``, 3 s/iter ±2%), or the trainer's average since its
    start (``average``, ms-swift's ``train_speed(s/it)``); held ``hold_s`` s mid-window at step
    ``hold_at``; the interval opened at the last output read, closed at the first read after."""
    rnd, clock, spans, m, out = random.Random(0), 100.0, HeldSpans(), Monitors(), []
    win, elapsed, last_read, held = 0.0, 0.0, clock, False
    for step in range(1, 1501):
        t = 3.0 * (1 + rnd.uniform(-0.02, 0.02)) * (3 if slow_from and step >= slow_from else 1)
        if step == hold_at:
            spans.begin(last_read)
            t += hold_s
            held = True
        clock += t
        win += t
        elapsed += t
        if step % every == 0:
            v = elapsed / step if average else win / every
            out += _observe(m, spans, clock, {"step": step, "step_time_s": round(v, 4)})
            last_read, win = clock, 0.0
            if held:
                spans.end(clock)
                held = False
    return out


def test_a_short_hold_does_not_make_a_per_window_time_an_average():
    for hold in (10.0, 20.0, 25.0, 40.0, 120.0, 600.0):   # main: 10-25 s gave false WARNs from step 730
        assert _megatron_window(hold) == [], hold
    got = _megatron_window(25.0, slow_from=1000)
    assert got and got[0] == 1010, got[:3]   # main: a false one at 730 before the real one


def test_a_long_hold_still_proves_an_average_and_a_short_one_reads_it_as_printed():
    for hold in (10.0, 25.0, 120.0, 600.0):   # unproven (short) or proven: no WARN either way
        assert _megatron_window(hold, average=True) == [], hold
    got = _megatron_window(600.0, average=True, slow_from=1000)
    assert got and got[0] <= 1010, got[:3]   # proven: the slowdown shows at once, not drifting in


def test_one_hold_is_spanned_once_per_field():
    spans = HeldSpans()
    spans.begin(10.0)
    assert spans.within(5.0, 40.0) == 30.0 and spans.began(40.0) == 10.0
    assert spans.within(40.0, 50.0, after=spans.began(40.0)) == 0.0   # its open tail: not again
    spans.end(45.0)
    spans.begin(60.0)
    assert spans.within(40.0, 70.0, after=10.0) == 10.0 and spans.began(70.0) == 60.0
