"""The monitors excuse the time the training was held still (stopped, frozen, its batch job
suspended): the step that spans the hold and a trainer's average since its start that carries it
are not a slowdown; a real slowdown after the resume still alerts. Pure: the held intervals and
the read times are what a live runner passes (``IngestPipe.held_spans``)."""
from __future__ import annotations

from moeconsole.runner.core.columns import records_to_columns
from moeconsole.runner.core.held import HeldSpans
from moeconsole.runner.core.monitors import Monitors


def _live(records: list[tuple[float, dict]], held: HeldSpans | None) -> list[dict]:
    """Each record read on its own at its time (monotonic seconds), as the runner reads a live log."""
    m = Monitors()
    out: list[dict] = []
    for at, rec in records:
        steps, values, present = records_to_columns([rec])
        out += [a for _, a in m.observe_arrays(steps, values, present, held=held, at=at)]
    return out


def _drops(alerts: list[dict]) -> list[int]:
    return [a["step"] for a in alerts if a["rule"] in ("throughput_drop", "step_time_unstable")]


def _per_step(times: list[float], hold_after: int, hold_s: float, every: int = 1) -> tuple[list, HeldSpans]:
    """Step times per step (the step's own, as Megatron's per-interval average of one step), the
    training held ``hold_s`` seconds after step ``hold_after``; a record every ``every`` steps."""
    clock, out, spans = 100.0, [], HeldSpans()
    for step, t in enumerate(times, 1):
        clock += t
        if step == hold_after + 1:
            spans.begin(clock - t)
            spans.end(clock - t + hold_s)
            clock += hold_s
            t += hold_s
        if step % every == 0:
            out.append((clock, {"step": step, "step_time_s": t}))
    return out, spans


def _averaged(times: list[float], hold_after: int, hold_s: float, every: int = 1, start: int = 0) -> tuple[list, HeldSpans]:
    """The trainer's own average since it started at step ``start`` (ms-swift's
    ``train_speed(s/it)`` = elapsed / (global_step - start_step)), logged every ``every`` steps."""
    clock, elapsed, out, spans = 100.0, 0.0, [], HeldSpans()
    for i, t in enumerate(times, 1):
        step = start + i
        if i == hold_after + 1:
            spans.begin(clock)
            spans.end(clock + hold_s)
            clock += hold_s
            elapsed += hold_s
        clock += t
        elapsed += t
        if step % every == 0:
            out.append((clock, {"step": step, "step_time_s": elapsed / i}))
    return out, spans


def test_the_step_that_spans_a_hold_is_not_a_slowdown_and_a_real_one_after_it_alerts():
    records, spans = _per_step([1.0] * 60, hold_after=20, hold_s=100.0)
    assert _drops(_live(records, None))[:1] == [21], "before: the spanning step read as a slowdown"
    assert _drops(_live(records, spans)) == []
    slower, spans = _per_step([1.0] * 40 + [3.0] * 20, hold_after=20, hold_s=100.0)
    assert 41 in _drops(_live(slower, spans)), "a real slowdown after the resume still alerts"


def test_a_trainers_average_since_its_start_carries_the_hold_and_is_read_without_it():
    for every, start in ((1, 0), (5, 0), (5, 500)):
        records, spans = _averaged([1.0] * 120, hold_after=40, hold_s=200.0, every=every, start=start)
        assert _drops(_live(records, None)), "before: the average after the hold read as a slowdown"
        assert _drops(_live(records, spans)) == [], (every, start)
        # three times slower from step 60: read as the steps' own times, the slowdown shows at once
        slower, spans = _averaged([1.0] * 60 + [3.0] * 60, hold_after=40, hold_s=200.0, every=every, start=start)
        got = [s - start for s in _drops(_live(slower, spans))]
        assert got and 60 < got[0] <= 60 + every, (every, start, got)


def test_tokens_per_second_spanning_a_hold_is_excused_and_a_later_drop_alerts():
    clock, records, spans = 0.0, [], HeldSpans()
    for step in range(1, 61):
        clock += 1.0
        tps = 1000.0
        if step == 21:
            spans.begin(clock - 1.0)
            spans.end(clock + 99.0)
            clock += 100.0
            tps = 1000.0 / 101
        if step > 45:
            tps = 300.0
        records.append((clock, {"step": step, "tokens_per_s": tps}))
    assert _drops(_live(records, None))[0] == 21
    assert _drops(_live(records, spans)) == [46]


def test_an_open_hold_counts_up_to_the_read_and_spans_are_bounded():
    spans = HeldSpans()
    spans.begin(10.0)
    assert spans.open and spans.within(0.0, 25.0) == 15.0
    spans.begin(12.0)   # already held: one interval
    spans.end(30.0)
    assert not spans.open and spans.within(0.0, 100.0) == 20.0 and spans.within(20.0, 25.0) == 5.0
    for i in range(200):
        spans.begin(100.0 + 2 * i)
        spans.end(101.0 + 2 * i)
    assert len(spans.spans) <= 64 and spans.within(0.0, 1000.0) == 64.0
