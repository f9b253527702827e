"""Round 3: the gang scheduler's time slices, through the monitors. A job held 40 s, run 5 s, held again
(``PreemptMode=SUSPEND,GANG`` sharing its nodes), its state asked every 30 s (``slurm.poll_s``): squeue reads
SUSPENDED at holds that had output between them and no RUNNING read. The runner's rule (``reading_holds``, the
one ``IngestPipe.job_suspended`` applies) opens a held interval at each; the rule before (a change of Slurm's
word only) missed every hold after the first of such a run. Pure: the read times and readings a live runner
passes."""
from __future__ import annotations

from moeconsole.runner.core.columns import records_to_columns
from moeconsole.runner.core.held import HeldSpans, reading_holds
from moeconsole.runner.core.monitors import Monitors

RULES = ("throughput_drop", "step_time_unstable")


def _gang(by_change: bool, slow_from: int | None = None) -> tuple[list[int], int]:
    """(the steps alerted, the holds opened): 1 s steps logged each step; from step 50 the job runs 5 s
    slices between 40 s holds, for 12 slices; then runs alone (3x slower from ``slow_from``)."""
    events: list[tuple[float, str, int]] = []           # (time, "out" | "held" | "run", step)
    t, step, holds = 0.0, 0, []
    for step in range(1, 50):
        t += 1.0
        events.append((t, "out", step))
    for _ in range(12):
        holds.append((t, t + 40.0))
        t += 40.0
        for _ in range(5):
            step += 1
            t += 1.0
            events.append((t, "out", step))
    for _ in range(100):
        step += 1
        t += 3.0 if slow_from and step >= slow_from else 1.0
        events.append((t, "out", step))
    q = 0.5
    while q < t:   # squeue asked every 30 s; its answer read 0.2 s later
        events.append((q + 0.2, "held" if any(a <= q < b for a, b in holds) else "run", -1))
        q += 30.0
    spans, m, alerted, last, said, prev_t = HeldSpans(), Monitors(), [], 0.0, False, 0.0
    for at, kind, n in sorted(events):
        if kind == "out":
            spans.end(at)
            steps, values, present = records_to_columns([{"step": n, "step_time_s": round(at - prev_t, 3)}])
            alerted += [a["step"] for _, a in m.observe_arrays(steps, values, present, held=spans, at=at)
                        if a["rule"] in RULES]
            last, prev_t = at, at
            continue
        held = kind == "held"
        if by_change:                                   # before: a change of Slurm's word only
            if held != said:
                said = held
                spans.begin(last) if held else spans.end(at)
        elif reading_holds(held, at - 0.2, last):
            spans.begin(last)
    return alerted, len(spans.spans)


def test_every_gang_slice_read_suspended_is_excused_and_a_slowdown_after_still_alerts():
    before, opened_before = _gang(by_change=True)
    now, opened = _gang(by_change=False)
    # measured: before, 7 of the 12 holds opened and 6 WARNs (steps 60-100); now 12 and none
    assert opened > opened_before and before, (opened, opened_before, before)
    assert now == [], now
    slow, _ = _gang(by_change=False, slow_from=140)
    assert slow and 140 <= slow[0] <= 142, slow[:3]
