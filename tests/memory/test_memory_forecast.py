"""The trend of the per-step peak and the OOM forecast, with one alert per cause: flat envelopes
with rare spikes raise nothing, a slow leak raises one alert with a correct step estimate that
updates its numbers instead of repeating, a step change after a restart is no leak."""
from __future__ import annotations

import math
import random

import pytest

from moeconsole.runner.core.memory import MemorySettings, MemoryWatch, Reading, mib_rate_text, trend

MIB = 1 / 1024


def drive(values, *, settings: MemorySettings | None = None, step_time_s: float | None = 18.0, start: int = 1,
          watch: MemoryWatch | None = None, source: str = "log", every: int = 1) -> tuple[MemoryWatch, list[dict]]:
    """Feed one per-step peak per step (as a trainer's log would), asking for alerts after every
    ``every`` steps (the runner asks once per batch of log lines)."""
    w = watch or MemoryWatch(settings or MemorySettings(capacity_gib=141.1))
    w.step_time_s = step_time_s
    events: list[dict] = []
    for i, v in enumerate(values):
        step = start + i
        if source == "nvml":
            w.observe(Reading("nvml", step=step, gpu=0, used_gib=v))
        else:
            w.observe(Reading("log", step=step, peak_gib=v))
        if i % every == every - 1 or i == len(values) - 1:
            events += w.alerts()
    return w, events


def opened(events, rule="mem_forecast"):
    return [e for e in events if e["rule"] == rule and e["update"] == 0]


def test_flat_envelope_with_rare_spikes_raises_nothing():
    """NVML per-step peaks: jitter of tens of MiB and a +3 GiB spike about once in 100 steps."""
    rnd = random.Random(7)
    for amp in (0.005, 0.03, 0.2):
        vals = [120.0 + rnd.uniform(-amp, amp) + (3.0 if rnd.random() < 0.01 else 0.0) for _ in range(3000)]
        w, events = drive(vals, source="nvml", every=7)
        assert [e for e in events if e["level"] != "info"] == [], (amp, events[:2])
        (e,) = w.envelopes()
        assert e.trend.state == "stable" and e.device_peak_gib == pytest.approx(120.0, abs=amp)


def test_a_running_peak_lifted_by_rare_spikes_is_no_leak():
    """ms-swift's memory(GiB) is torch's max_memory_reserved since start: each spike lifts it for
    good (a step change), rounded to 2 decimals."""
    rnd = random.Random(3)
    peak, vals = 0.0, []
    for _ in range(3000):
        peak = max(peak, round(132.6 + (0.26 if rnd.random() < 0.004 else 0.0) + rnd.uniform(0, 0.05), 2))
        vals.append(peak)
    w, events = drive(vals, every=5)
    assert events == []
    assert w.envelopes()[0].trend.state == "stable"


@pytest.mark.parametrize("rate_mib, base", [(2.0, 120.0), (12.0, 100.0), (0.5, 138.0)])
def test_a_slow_leak_raises_one_alert_with_the_right_step(rate_mib, base):
    """The leak grows rate MiB/step from base GiB (ms-swift's 2-decimal memory(GiB)); capacity
    141.1 GiB minus the declared 266 MiB transient is reached at step (141.1 - 0.26 - base) /
    rate. The alert opens once; later events are updates of the same alert."""
    transient = 266 * MIB
    s = MemorySettings(capacity_gib=141.1, transients=(("fla_gdn_bwd", transient),), horizon_steps=50_000)
    truth = (141.1 - transient - base) / (rate_mib * MIB)
    vals = [round(base + i * rate_mib * MIB, 2) for i in range(1, int(truth))]
    w, events = drive(vals, settings=s, every=3)
    first = opened(events)
    assert len(first) == 1, events
    est = first[0]["values"]["oom_at_step"]
    assert abs(est - truth) <= 0.25 * truth, (est, truth)        # early (the first steps after warm-up)
    assert first[0]["message"].startswith(f"OOM in ~{first[0]['values']['oom_in_steps']:,} steps (")
    assert f"memory growing {mib_rate_text(first[0]['values']['gib_per_step'])}" in first[0]["message"]
    updates = [e for e in events if e["rule"] == "mem_forecast" and e["update"] > 0]
    assert all(e["opened_step"] == first[0]["opened_step"] for e in updates)
    assert len(updates) <= 8, [(e["step"], e["values"]["oom_at_step"]) for e in updates]
    (e,) = w.envelopes()
    assert e.trend.state == "growing"
    assert e.trend.gib_per_step * 1024 == pytest.approx(rate_mib, rel=0.05)
    assert e.forecast.at_step == pytest.approx(truth, rel=0.02)     # late: within 2%
    # the time is the steps times the step time
    assert e.forecast.seconds == pytest.approx(e.forecast.steps * 18.0)


def test_the_forecast_turns_critical_once_and_says_so():
    s = MemorySettings(capacity_gib=80.0, critical_s=1800.0)
    vals = [60.0 + i * 20 * MIB for i in range(1, 1000)]       # OOM at step ~1024
    w, events = drive(vals, settings=s, step_time_s=18.0)
    crit = [e for e in events if e["rule"] == "mem_forecast" and e["level"] == "critical"]
    assert crit and crit[0].get("escalated") is True and crit[0]["update"] > 0
    assert crit[0]["values"]["oom_in_s"] <= 1800.0
    assert len([e for e in crit if e.get("escalated")]) == 1


def test_a_step_change_after_a_restart_is_no_leak():
    """Attempt 1 is flat at 60 GiB; attempt 2 resumes from step 100 and is flat at 64 GiB (other
    packing, a bigger buffer). The steps going back start the envelope afresh."""
    w, events = drive([60.0] * 200)
    w, more = drive([64.0] * 300, watch=w, start=100)
    assert events + more == []
    (e,) = w.envelopes()
    assert e.device_peak_gib == 64.0 and e.trend.state == "stable"
    # the runner's own restart (new_attempt) does the same without a step going back
    w.new_attempt()
    w, more = drive([61.0] * 100, watch=w, start=300)
    assert more == [] and w.envelopes()[0].device_peak_gib == 61.0


def test_a_step_change_inside_an_attempt_is_no_leak():
    _, events = drive([60.0] * 300 + [64.0] * 500 + [66.0] * 500)
    assert events == []


def test_a_leak_that_stops_is_resolved_as_stable():
    s = MemorySettings(capacity_gib=141.1, resolve_steps=32)
    vals = [100.0 + i * 10 * MIB for i in range(1, 300)]
    vals += [vals[-1]] * 500
    w, events = drive(vals, settings=s)
    kinds = [(e["update"] == 0, bool(e.get("resolved"))) for e in events if e["rule"] == "mem_forecast"]
    assert kinds[0] == (True, False) and kinds[-1] == (False, True)
    assert events[-1]["message"] == "memory stable again" and events[-1]["level"] == "info"
    assert w.envelopes()[0].trend.state == "stable"


def test_without_a_capacity_a_leak_is_told_without_a_forecast():
    vals = [round(50.0 + i * 30 * MIB, 2) for i in range(1, 300)]
    w, events = drive(vals, settings=MemorySettings())
    (first,) = opened(events)
    assert first["level"] == "warning" and "no capacity is known" in first["message"]
    assert first["values"]["oom_in_steps"] is None


def test_a_forecast_beyond_the_runs_last_step_is_no_alert():
    w = MemoryWatch(MemorySettings(capacity_gib=141.1))
    w.max_steps = 600
    w, events = drive([round(100.0 + i * 5 * MIB, 2) for i in range(1, 500)], watch=w)   # OOM at ~8,400
    assert opened(events) == []
    assert w.envelopes()[0].forecast.steps is not None    # the panel still shows it


def test_headroom_alert_opens_updates_and_resolves():
    s = MemorySettings(capacity_gib=80.0, min_headroom_gib=0.5, transients=(("t", 0.25),))
    vals = [79.0] * 40 + [79.4] * 40 + [79.9] * 40 + [78.0] * 80
    _, events = drive(vals, settings=s)
    head = [e for e in events if e["rule"] == "mem_headroom"]
    assert [(e["level"], e["update"]) for e in head] == [("warning", 0), ("critical", 1), ("info", 2)]
    assert head[0]["values"]["effective_headroom_gib"] == pytest.approx(80.0 - 79.4 - 0.25)
    assert head[0]["message"] == ("effective headroom 358 MiB on all GPUs (max), below the minimum 512 MiB: "
                                  "80.00 GiB capacity - steady peak 79.40 GiB - transients 256 MiB")
    assert head[1].get("escalated") and head[2]["resolved"]


@pytest.mark.parametrize("seed", range(5))
def test_trend_is_robust_to_the_order_of_noise(seed):
    rnd = random.Random(seed)
    xs = list(range(1, 400))
    flat = [100 + rnd.gauss(0, 0.05) for _ in xs]
    assert trend(xs, flat).state == "stable"
    leak = [100 + 0.01 * x + rnd.gauss(0, 0.05) for x in xs]
    t = trend(xs, leak)
    assert t.state == "growing" and t.gib_per_step == pytest.approx(0.01, rel=0.15)
    assert trend(xs[:10], leak[:10]).state == "unknown"
    assert math.isclose(trend(xs, [5.0] * len(xs)).level_gib, 5.0)
