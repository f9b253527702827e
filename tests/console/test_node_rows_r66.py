"""The GPU rows of a few-node run read every agent value as the node's judgement does
(``finite_float``): an odd value shows as unknown and the run screen keeps drawing (R66's
finding 1: a two-node run's rows divided and truncated raw values, and an int too large for a
float or a number in a string stopped the console)."""
from __future__ import annotations

import asyncio
import os
import time

import pytest

from tests.console.conftest import write_run
from tests.waiting import until_ui

from moeconsole.console.gpurows import gpu_row
from moeconsole.console.widgets.gpu_panel import gpu_lines
from moeconsole.runner.core.units import NA
from moeconsole.runner.rundir import jsonio

ODD = [10 ** 400, float("nan"), True, "70.5", "x", [1], {"a": 1}, -5, 1e308, ""]


def _agent(run, host: str, gpu: dict, t: float) -> None:
    run.telemetry.mkdir(exist_ok=True)
    jsonio.atomic_write_json(run.telemetry / f"{host}.json", {
        "v": 1, "t": t, "host": {"hostname": host},
        "gpu": {"available": True, "gpus": [{"index": 0, "temp_c": 60, **gpu}]}, "ranks": [{"rank": 0}]})


@pytest.mark.parametrize("key", ["index", "util_pct", "mem_used_mib", "mem_total_mib", "temp_c", "power_w",
                                 "power_limit_w", "processes"])
def test_a_gpu_row_of_any_odd_value_is_drawn(key):
    for odd in ODD:
        g = {"index": 0, "util_pct": 50, "mem_used_mib": 1000, "mem_total_mib": 81920, "temp_c": 60,
             "power_w": 300, "power_limit_w": 700, "processes": [], key: odd}
        line = "".join(t for t, _ in gpu_lines([g], 160, lambda index: [50.0, 60.0])[0])
        assert line.strip() and "%" in line, (key, odd)   # a TypeError/ValueError/OverflowError before
        assert gpu_row(g)   # the GPU view's row (its index was formatted raw)
    g = {"index": 0, "util_pct": "70.5", "mem_used_mib": "990", "mem_total_mib": "1000", "temp_c": 10 ** 400}
    line = "".join(t for t, _ in gpu_lines([g], 160, lambda index: [])[0])
    assert " 70% " in line and "!" in line and f" {NA}C" in line   # a number in a string is one; 10**400 none


@pytest.mark.parametrize("odd", [
    {"mem_used_mib": 10 ** 400, "mem_total_mib": 81920, "util_pct": 50},
    {"mem_used_mib": "990", "mem_total_mib": "1000", "util_pct": "70"},
    {"mem_used_mib": 1000, "mem_total_mib": 81920, "util_pct": 10 ** 400},
], ids=["huge-mem", "strings", "huge-util"])
def test_the_run_screen_of_two_nodes_keeps_drawing_with_an_odd_agent_value(tmp_path, odd):
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.console.widgets.gpu_panel import GpuPanel
    run = write_run(tmp_path, runner_pid=os.getpid())
    now = time.time()
    _agent(run, "node-a", {"mem_used_mib": 1000, "mem_total_mib": 81920, "util_pct": 50}, now + 600)
    _agent(run, "node-b", odd, now + 600)

    async def go() -> list[str]:
        app = MoeConsole(tmp_path, run, interval=0.2, gpu=True, telemetry=lambda state: (None, []))
        async with app.run_test(size=(160, 48)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None,
                           timeout=120)
            _agent(run, "node-b", odd, now + 601)   # a second reading: kept for the sparkline, drawn again
            polls = app.screen.polls
            await until_ui(pilot, lambda: app.screen.polls > polls + 2, timeout=120)
            return list(app.screen.query_one(GpuPanel).plain_lines)
    lines = asyncio.run(go())
    assert any(line.startswith("node-b") for line in lines), lines
    assert sum(1 for line in lines if line.lstrip().startswith("0 [")) == 2, lines   # both nodes' GPU rows


def test_the_gpu_views_lines_of_an_agent_file_of_any_shape_are_drawn():
    # the GPU view reads every node's whole file: its GPUs and processes as another version may write them
    from moeconsole.console.screens.gpu_view import node_lines
    from moeconsole.runner.telemetry.gpuranks import annotate_from_ranks
    for odd in ODD:
        for gpu in ({"available": True, "gpus": odd},
                    {"available": True, "gpus": [{"index": 0, "util_pct": 50, "processes": odd}]},
                    {"available": True, "gpus": [{"index": 0, "processes": [
                        {"pid": 5, "used_mib": odd, "run": {"rank": odd}}, {"pid": 6, "used_mib": 10, "run": {"rank": 2}},
                        {"pid": odd, "used_mib": 20}, {"pid": 8, "used_mib": 30}]}]}):
            lines = node_lines(annotate_from_ranks(gpu, [{"pid": odd, "rank": odd}, {"pid": 8, "rank": 7}]), "node-b", 160)
            assert lines[0][0][0] == "node-b", (odd, gpu)   # a TypeError/AttributeError before
    lines = node_lines(annotate_from_ranks({"available": True, "gpus": [{"index": 0, "processes": [
        {"pid": 8, "used_mib": 30}]}]}, [{"pid": 8, "rank": 7}]), "node-b", 160)
    assert any("rank 7" in "".join(t for t, _ in line) for line in lines)
