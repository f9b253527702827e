"""The memory chart's title says which number it shows at every width: at 80x24 and 120x36 a
run-wide envelope (a trainer's memory column, the max over its GPUs) reads "peak ..." and
"headroom ...", never a bare "mem max 13.55G" that is in fact the headroom."""
from __future__ import annotations

import asyncio
import os

from moeconsole.console.widgets.chart import ChartView
from moeconsole.runner.core.memory import MemorySettings, MemoryWatch
from moeconsole.runner.rundir import jsonio
from tests.console.conftest import base, write_run  # noqa: F401  (base: the short runs directory fixture)
from tests.console.test_console_app import app_for, attached, telemetry
from tests.waiting import until_ui


def test_the_memory_title_names_peak_and_headroom_at_80_and_120_columns(base):
    w = MemoryWatch(MemorySettings(capacity_gib=80.0, warmup_steps=5))
    w.step_time_s = 1.0
    for step in range(1, 120):   # ms-swift's memory(GiB): 60 GiB growing 50 MiB a step
        w.observe_log_peaks([step], [60.0 + step * 0.05], None)
    mem = w.to_dict()
    g = mem["gpus"][0]
    assert g["gpu"] is None and g["effective_headroom_gib"] is not None
    run = write_run(base, runner_pid=os.getpid(), pids=[{"pid": 31337, "start_time": 1.0, "role": "leader"}])
    state = jsonio.read_json(run.state)
    state["memory"] = mem
    jsonio.atomic_write_json(run.state, state)

    async def title(size) -> str:
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=size) as pilot:
            screen = await attached(pilot)
            chart = screen.query_one("#chart-mem", ChartView)
            await until_ui(pilot, lambda: bool(chart.text_rows()) and "mem" in chart.text_rows()[0])
            return chart.text_rows()[0]

    for size in ((80, 24), (120, 36)):
        head = asyncio.run(title(size))
        assert "headroom" in head or "eff " in head, (size, head)
        assert "mem max" not in head, (size, head)
        assert f"{g['effective_headroom_gib']:.2f}G" in head, (size, head)
