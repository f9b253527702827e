"""The memory panel and the alert bar, driven with Pilot against a run directory whose
``state.json`` memory block and events the memory watch itself produced."""
from __future__ import annotations

import asyncio
import os

from moeconsole.console import memory as memory_view
from moeconsole.console.widgets.chart import ChartView
from moeconsole.runner.core.memory import MemorySettings, MemoryWatch, Reading
from moeconsole.runner.rundir import jsonio
from moeconsole.runner.rundir.alertgroups import AlertBook, active
from tests.console.conftest import base, write_run  # noqa: F401  (base: the short runs directory fixture)
from tests.console.test_console_app import app_for, attached, telemetry
from tests.waiting import until_ui


def watch_with_a_tight_gpu() -> tuple[MemoryWatch, list[dict]]:
    """Eight H200s by NVML (143,771 MiB = 140.40 GiB each); GPU 3 grows 12.3 MiB/step to 139.9 GiB,
    the others sit at 130 GiB."""
    s = MemorySettings(capacity_gib=141.1, transients=(("fla_gdn_bwd", 266 / 1024),), warmup_steps=5)
    w = MemoryWatch(s)
    w.step_time_s = 18.0
    events: list[dict] = []
    for step in range(1, 200):
        for gpu in range(8):
            used = 130.0 if gpu != 3 else 137.5 + step * 0.012
            w.observe(Reading("nvml", step=step, gpu=gpu, used_gib=used, total_gib=143771 / 1024))
        events += w.alerts()
    return w, events


def test_the_memory_chart_names_the_tightest_gpu_its_headroom_and_forecast(base):
    w, events = watch_with_a_tight_gpu()
    mem = w.to_dict()
    run = write_run(base, runner_pid=os.getpid(), pids=[{"pid": 31337, "start_time": 1.0, "role": "leader"}])
    state = jsonio.read_json(run.state)
    state["memory"] = mem
    jsonio.atomic_write_json(run.state, state)
    for ev in events:
        jsonio.append_jsonl(run.events, {"v": 1, "t": 1_700_000_100.0 + ev["step"], "type": "alert", "attempt": 2, **ev})
    g = mem["gpus"][0]
    assert g["gpu"] == 3 and g["ok"] is False
    want = memory_view.heading(mem)
    assert want[0].startswith(f"memory GPU 3 {g['device_peak_gib']:.2f}/140.40 GiB · effective headroom "
                              f"{g['effective_headroom_gib']:.2f} GiB LOW (min 0.49) · +12.3 MiB/step, OOM in ~")

    async def go():
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(200, 48)) as pilot:
            screen = await attached(pilot)
            chart = screen.query_one("#chart-mem", ChartView)
            await until_ui(pilot, lambda: chart.text_rows() and "GPU 3" in chart.text_rows()[0])
            rows = chart.text_rows()
            # the widest heading that fits a third of 200 columns
            assert rows[0].startswith(f"GPU 3 {g['device_peak_gib']:.2f}/140.40G eff "
                                      f"{g['effective_headroom_gib']:.2f}G LOW · OOM ~{g['forecast']['oom_in_steps']} steps")
            assert any("╌" in r for r in rows), "a line at capacity"
            # the forecast and the headroom: one alert each in the bar, with the newest numbers
            groups = {g.key: g for g in screen.active_alerts if g.key.startswith("mem_")}
            assert sorted(groups) == ["mem_forecast", "mem_headroom"]
            newest = max((e for e in events if e["rule"] == "mem_forecast"), key=lambda e: e["update"])
            forecast = [e for e in events if e["rule"] == "mem_forecast"]
            news = [e for i, e in enumerate(forecast)   # opened, escalated or another level; not an update
                    if e["update"] == 0 or e.get("escalated") or e["level"] != forecast[i - 1]["level"]]
            assert groups["mem_forecast"].count == len(news), \
                "an update is not counted again"
            assert groups["mem_forecast"].members[-1]["update"] == newest["update"]
            # its line reads the numbers of now, as the chart's heading does, not those of its last event
            assert groups["mem_forecast"].title == mem["alerts"]["mem_forecast"]["message"].split(": ", 1)[0]
            assert groups["mem_forecast"].title.startswith(f"OOM in ~{g['forecast']['oom_in_steps']} steps")
    asyncio.run(go())


def _run_with_memory(base, mem: dict):
    """A live-looking run (this process its runner) whose state.json holds the memory block ``mem``."""
    run = write_run(base, runner_pid=os.getpid(), pids=[{"pid": 31337, "start_time": 1.0, "role": "leader"}],
                    mem_capacity_gib=None)
    state = jsonio.read_json(run.state)
    state["memory"] = mem
    jsonio.atomic_write_json(run.state, state)
    return run


async def _memory_heading(pilot, screen, word: str) -> str:
    """The memory chart's heading, once it holds ``word``."""
    chart = screen.query_one("#chart-mem", ChartView)
    await until_ui(pilot, lambda: chart.text_rows() and word in chart.text_rows()[0], what="the memory heading")
    return chart.text_rows()[0]


def test_without_a_known_capacity_the_memory_heading_is_the_peak_and_its_trend(base):
    """No NVML (no GPU on the host) and no ``gpus.memory_capacity_gib``: the memory block knows the
    log's peaks but no capacity, so there is no headroom. The heading used to read
    "mem max eff —G · stable"; it says the peak in GiB and the trend."""
    w = MemoryWatch(MemorySettings(warmup_steps=5))
    w.observe_log_peaks(list(range(1, 61)), [61.25] * 60, t=1_700_000_030.0)
    mem = w.to_dict()
    g = mem["gpus"][0]
    assert g["capacity_gib"] is None and g["effective_headroom_gib"] is None and g["trend"]["state"] == "stable"
    run = _run_with_memory(base, mem)

    async def go():
        # every width says it is memory (at 160-200 columns the title read "all GPUs (max) peak ...")
        for width, want in ((200, "mem all GPUs (max) peak 61.25G · stable"), (160, "mem all GPUs (max) peak 61.25G"),
                            (120, "mem all peak 61.25G · stable")):
            app = app_for(base, run, telemetry=telemetry())
            async with app.run_test(size=(width, 48)) as pilot:
                screen = await attached(pilot)
                heading = await _memory_heading(pilot, screen, "peak")
                assert heading.startswith(want), heading
                assert "eff" not in heading and "—" not in heading and "headroom" not in heading
    asyncio.run(go())


def test_one_alert_per_cause_updates_keep_the_ack_and_resolution_ends_it():
    base = {"type": "alert", "rule": "mem_forecast", "cause": "mem_forecast", "opened_step": 60, "attempt": 1}
    evs = [{**base, "t": 1.0, "level": "warning", "step": 60, "update": 0, "message": "OOM in ~900 steps"},
           {**base, "t": 2.0, "level": "warning", "step": 90, "update": 1, "message": "OOM in ~600 steps"},
           {"type": "alert", "t": 2.5, "level": "warning", "rule": "loss_spike", "step": 91, "message": "x"}]

    def on(events, acks=None):
        return active(AlertBook().feed_all(events).groups(acks or {}))

    first = on(evs)
    assert [(g.key, g.title, g.count) for g in first] == [("divergence", "x", 1),
                                                          ("mem_forecast", "OOM in ~600 steps", 1)]
    acks = {g.key: g.last_t for g in first}
    more = evs + [{**base, "t": 3.0, "level": "warning", "step": 120, "update": 2, "message": "OOM in ~400 steps"}]
    assert on(more, acks) == []                                     # an update of an acknowledged alert
    crit = more + [{**base, "t": 4.0, "level": "critical", "step": 150, "update": 3, "escalated": True,
                    "message": "OOM in ~40 steps"}]
    assert [(g.key, g.title) for g in on(crit, acks)] == [("mem_forecast", "OOM in ~40 steps")]
    done = crit + [{**base, "t": 5.0, "level": "info", "step": 300, "update": 4, "resolved": True,
                    "message": "memory stable again"}]
    assert [g.key for g in on(done)] == ["divergence"]
    again = done + [{**base, "t": 6.0, "level": "warning", "step": 400, "opened_step": 400, "update": 0,
                     "message": "OOM in ~800 steps"}]
    assert [(g.key, g.title) for g in on(again, {g.key: g.last_t for g in on(done)})] == \
        [("mem_forecast", "OOM in ~800 steps")], "a new episode after a resolution is news"


def test_on_a_machine_without_a_gpu_the_memory_heading_says_so_and_keeps_its_number_at_80_columns(base):
    """The demo on a CPU-only machine in an 80-column tmux pane: the heading read
    "mem log (no GPU) peak 0.2…", the number cut (at 60 columns "mem log (no GPU) p…"). The narrowest width still says memory, the
    peak whole, and that there is no GPU."""
    w = MemoryWatch(MemorySettings(warmup_steps=5))
    w.no_gpu = True
    w.observe_log_peaks(list(range(1, 61)), [0.28] * 60, t=1_700_000_030.0)
    mem = w.to_dict()
    run = _run_with_memory(base, mem)

    async def go():
        for width, height in ((60, 20), (80, 24), (120, 24), (160, 24)):
            app = app_for(base, run, telemetry=telemetry())
            async with app.run_test(size=(width, height)) as pilot:
                screen = await attached(pilot)
                heading = await _memory_heading(pilot, screen, "mem")
                assert "0.28G" in heading and "no GPU" in heading and heading.startswith("mem"), (width, heading)
                assert "all GPUs" not in heading and "mem all" not in heading, (width, heading)
    asyncio.run(go())
