"""The GPU view (``g``): the same GPU line as ``moeconsole gpus``, and a run screen under it
that draws nothing until it is back on top (then it shows the newest snapshot at once).

Real CLI processes load the fake NVML library (tests/fakes/fake_nvml.c) for ``moeconsole
gpus``; the console is a real Textual app driven by Pilot."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import jsonio
from tests.console.conftest import write_run
from tests.fakes.nvml import FakeGpu, FakeProc, fake_env, write_scenario
from tests.telemetry.telemetry_helpers import base_env
from tests.waiting import until_ui

REPO = Path(__file__).resolve().parents[2]


def _gpu_screen(app):
    return app.screen if type(app.screen).__name__ == "GpuScreen" else None


def _cli(env: dict, *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_gpus_and_the_gpu_view_draw_the_same_line_for_the_same_gpu(fake_libdir, tmp_path):
    """Two renderers of one GPU row (the CLI's and the view's table) said the same GPU two ways;
    one function draws it now, so the CLI's line for a GPU is a line of the view."""
    scenario = write_scenario(tmp_path / "nvml.txt", [
        FakeGpu(name="NVIDIA H200", util_pct=87, mem_base_used_mib=2048, temp_c=61, power_w=350.0),
        FakeGpu(name="NVIDIA H200", util_pct=3)], [FakeProc(0, os.getpid(), 4000, sm_pct=12)])
    env = fake_env(fake_libdir, scenario, {**base_env(), "PYTHONPATH": str(REPO)})
    text = _cli(env, "gpus")
    gpu = json.loads(_cli(env, "gpus", "--json").splitlines()[-1])["gpu"]
    cli_lines = [line for line in text.splitlines() if line.startswith(("  0  ", "  1  "))]
    assert len(cli_lines) == 2 and "NVIDIA H200" in cli_lines[0] and "87%" in cli_lines[0], text

    base = tmp_path / "runs"
    run = write_run(base, runner_pid=os.getpid(), started=False)

    async def go() -> str:
        app = MoeConsole(base, run, interval=0.2, telemetry=lambda state: (gpu, []), host=None)
        async with app.run_test(size=(160, 48)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            await pilot.press("g")
            view = await until_ui(pilot, lambda: _gpu_screen(app))
            await until_ui(pilot, lambda: "NVIDIA H200" in view.procs_text, what="the GPU lines in the view")
            shown = view.procs_text
            await pilot.press("escape")
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen))
            return shown
    shown = asyncio.run(go()).splitlines()
    for line in cli_lines:
        assert line in shown, (line, shown)
    under = shown[shown.index(cli_lines[0]) + 1]
    assert str(os.getpid()) in under and "other" in under and "12%" in under, "GPU 0's process right under it"


def test_the_run_screen_under_the_gpu_view_draws_nothing_and_is_current_when_back(tmp_path):
    """Textual kept rendering the covered run screen on every poll and repainted the GPU view whole
    each time; now the run screen only keeps the snapshot, and shows the newest one on return."""
    base = tmp_path / "runs"
    run = write_run(base, runner_pid=os.getpid(), started=False)
    gpu = {"available": True, "backend": "nvml", "reason": None, "driver": "550", "taken_at": 0.0, "gpus": [
        {"index": 0, "name": "H200", "util_pct": 90, "mem_used_mib": 1000, "mem_total_mib": 143_771,
         "processes": []}]}

    async def go() -> None:
        app = MoeConsole(base, run, interval=0.2, telemetry=lambda state: (gpu, []), host=None)
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot
                                    is not None and app.screen)
            status = screen.query_one(StatusLine)
            await until_ui(pilot, lambda: any("60/100" in line for line in status.plain_lines))
            await pilot.press("g")
            await until_ui(pilot, lambda: _gpu_screen(app))
            await pilot.pause()
            draws = status.draws
            state = json.loads(run.state.read_text())
            jsonio.atomic_write_json(run.state, {**state, "step": 61})
            await until_ui(pilot, lambda: screen.snapshot.run.get("step") == 61, what="the poll under the view")
            polls = screen.polls
            await until_ui(pilot, lambda: screen.polls >= polls + 3, what="three more polls under the view")
            assert status.draws == draws, "the covered run screen drew its status line"
            assert not any("61/100" in line for line in status.plain_lines)
            await pilot.press("escape")
            await until_ui(pilot, lambda: any("61/100" in line for line in status.plain_lines),
                           what="the newest step once the run screen is back")
    asyncio.run(go())


def test_the_gpu_view_at_80x24_shows_every_gpu_line_whole(fake_libdir, tmp_path):
    """At 80x24 the GPU view cut every GPU line at the screen's edge mid-number (the view's
    scrollbar leaves 78 columns to a 79-column line: "1980 / 320", the header's "SM/Mem MH").
    The lines fit the view now (``gpurows.fit``): every name and reading whole on screen."""
    from textual.geometry import Region
    from moeconsole.console.screens.gpu_view import GpuLines

    scenario = write_scenario(tmp_path / "nvml.txt", [  # 8 GPUs: the view scrolls (its scrollbar takes 2 columns)
        FakeGpu(name="NVIDIA H100 80GB HBM3", util_pct=87, mem_base_used_mib=61234, power_w=699.0)]
        + [FakeGpu(name="NVIDIA H200", util_pct=3, mem_base_used_mib=90000)] * 7, [FakeProc(1, os.getpid(), 4000)])
    env = fake_env(fake_libdir, scenario, {**base_env(), "PYTHONPATH": str(REPO)})
    gpu = json.loads(_cli(env, "gpus", "--json").splitlines()[-1])["gpu"]
    base = tmp_path / "runs"
    run = write_run(base, runner_pid=os.getpid(), started=False)

    async def go() -> tuple[list[str], list[str]]:
        app = MoeConsole(base, run, interval=0.2, telemetry=lambda state: (gpu, []), host=None)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            await pilot.press("g")
            view = await until_ui(pilot, lambda: _gpu_screen(app))
            await until_ui(pilot, lambda: "NVIDIA H200" in view.procs_text, what="the GPU lines in the view")
            await pilot.pause()
            widget = view.query_one(GpuLines)
            width, height = widget.size
            assert width < 80, "the scrollbar takes its columns"
            return ([strip.text.rstrip() for strip in widget.render_lines(Region(0, 0, width, height))],
                    view.procs_text.splitlines())
    shown, made = asyncio.run(go())
    rows = [line for line in shown if line.startswith(("GPU  ", "  0  ", "  1  "))]
    assert len(rows) == 3, shown
    for line in rows:
        assert line in made, (line, made)  # on screen as the view made it: nothing cut at the edge
    head, gpu0, gpu1 = rows
    assert head.endswith(("SM/Mem MHz", "Power W")), head
    assert "NVIDIA H100 80GB HBM3" in gpu0 and "87%" in gpu0 and "699 / 700" in gpu0, gpu0
    assert f"{gpu['gpus'][1]['mem_used_mib']:.0f} / 143771" in gpu1, gpu1


def test_a_gpu_line_that_cannot_fit_leaves_out_the_clocks_before_it_cuts_a_name():
    """The order ``gpurows.fit`` gives up columns in: the name column's spare room, then the
    clocks, then (only on a very narrow view) the names' ends."""
    from moeconsole.console import gpurows
    g = {"index": 0, "name": "NVIDIA GeForce RTX 4090", "util_pct": 5, "mem_used_mib": 1000,
         "mem_total_mib": 24564, "temp_c": 40, "power_w": 30, "power_limit_w": 450,
         "sm_clock_mhz": 210, "mem_clock_mhz": 405}
    assert gpurows.fit([g], 200) == (gpurows.NAME_W, True)
    assert len(gpurows.gpu_row(g)) == len(gpurows.GPU_HEADER)
    h200 = {**g, "name": "NVIDIA H200"}
    assert gpurows.fit([h200], 78) == (11, True)
    name_w, clocks = gpurows.fit([g], 78)
    assert (name_w, clocks) == (gpurows.NAME_W, False)
    row = gpurows.gpu_row(g, name_w, clocks)
    assert len(row) <= 78 and row.endswith("30 / 450") and "210 / 405" not in row
    name_w, clocks = gpurows.fit([g], 60)
    assert len(gpurows.gpu_row(g, name_w, clocks)) <= 60 and len(gpurows.header(name_w, clocks)) <= 60


def test_on_a_50_column_pane_why_there_are_no_gpus_is_wrapped_whole(tmp_path):
    """A 50x15 tmux pane cut "vm (this node): GPUs not available: NVIDIA driver" at its edge,
    no mark, the reason lost; the sentence is wrapped at word ends to the pane's width."""
    base = tmp_path / "runs"
    run = write_run(base, runner_pid=os.getpid(), started=False)
    reason = "NVIDIA driver library libnvidia-ml.so.1 not found (no NVIDIA driver installed)"
    gpu = {"available": False, "backend": "nvml", "reason": reason, "driver": None, "taken_at": 0.0, "gpus": []}

    async def go() -> None:
        app = MoeConsole(base, run, interval=0.2, telemetry=lambda state: (gpu, []), host=None)
        async with app.run_test(size=(50, 15)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            await pilot.press("g")
            screen = await until_ui(pilot, lambda: _gpu_screen(app))

            def shown() -> str | None:
                lines = [s.text.rstrip() for s in app.screen._compositor.render_strips()]
                text = " ".join(line.strip() for line in lines)
                return text if "installed)" in text else None
            text = await until_ui(pilot, shown, what="the whole reason on screen")
            assert "GPUs not available: " + reason in text, text
            assert screen is app.screen
    asyncio.run(go())
