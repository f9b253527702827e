"""SVG snapshots of the main screens at 80x24 (compact layout), 120x36 and 160x48, and the
NO_COLOR rendering. Regenerate after an intended change with MOECONSOLE_UPDATE_SNAPSHOTS=1 and
look at the SVGs before committing them.

Stable under load: the run is polled once, the wall clock of the screen is pinned, and a
screenshot is taken only when two in a row agree (a loaded machine may still be laying out)."""
from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path

import pytest

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.browser import BrowserScreen
from moeconsole.console.screens.compare import CompareScreen
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.status import StatusLine
from tests.console.conftest import T0
from tests.waiting import until_ui

SNAPSHOTS = Path(__file__).with_name("snapshots")
UPDATE = os.environ.get("MOECONSOLE_UPDATE_SNAPSHOTS") == "1"

GPU = {"available": True, "backend": "nvml", "reason": None, "driver": "550", "taken_at": 0.0, "gpus": [
    {"index": i, "name": "NVIDIA H200", "util_pct": 40 + 7 * i, "mem_used_mib": 110_000 + 3500 * i,
     "mem_total_mib": 143_771, "temp_c": 55 + 4 * i, "power_w": 350 + 20 * i, "power_limit_w": 700,
     # the run's rank on each GPU (as LiveTelemetry annotates it), and on GPU 3 someone else's server
     "processes": [{"pid": 31400 + i, "used_mib": 108_000 + 3500 * i, "sm_pct": 90 - i, "mem_pct": 40,
                    "run": {"rank": i, "local_rank": i, "role": "child"}}]
     + ([{"pid": 424242, "used_mib": 12_000, "sm_pct": 3, "mem_pct": 1, "run": None}] if i == 3 else [])}
    for i in range(8)]}
# this host as the host line shows it, pinned
HOST = {"cpu_pct": 37.0, "cpu_count": 96, "ram_used_gib": 1411.2, "ram_total_gib": 2015.6, "hostname": "gpu-node-017",
        "io": {"path": "/data/runs/qwen3-fp8/output", "device": "nvme0n1", "read_bps": 12.5 * 2 ** 20,
               "write_bps": 1.9 * 2 ** 30, "free_gib": 6144.0, "total_gib": 14000.0, "why": None}}
ZOMBIE = {"pid": 424242, "start_time": 1.0, "user": "bob", "cmdline": ["python", "-m", "vllm.entrypoints.api_server"],
          "age_s": 7200, "gpu_mem_mib": 12_000, "labels": ["foreign_gpu"], "blocker": True, "shown": True,
          "killable": True}


@pytest.fixture
def utc():
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old
        time.tzset()


def check_snapshot(name: str, svg: str, tmp_path: Path) -> None:
    svg = re.sub(r"/tmp/mcui-[A-Za-z0-9_]{8}", "/tmp/mcui-RUNSDIR_", svg)  # the runs dir is random
    svg = re.sub(r"terminal-\d+", "terminal-0", svg)  # an id hashed from the content above
    path = SNAPSHOTS / f"{name}.svg"
    if UPDATE or not path.exists():
        SNAPSHOTS.mkdir(exist_ok=True)
        path.write_text(svg)
        if not UPDATE:
            pytest.fail(f"snapshot {path.name} was missing and has been written; check it and run again")
        return
    if path.read_text() != svg:
        actual = tmp_path / f"{name}.actual.svg"
        actual.write_text(svg)
        pytest.fail(f"{name} differs from {path} (actual screen: {actual}); "
                    "MOECONSOLE_UPDATE_SNAPSHOTS=1 regenerates it after an intended change")


def _live(base, make_run):
    return make_run(base, runner_pid=os.getpid(), started=False, nan_at=50, crash={"class": "cuda_oom"},
                    pids=[{"pid": 31337, "start_time": 1.0, "role": "leader"}])


async def settled_screenshot(app, pilot, timeout: float = 20.0) -> str:
    """The screen once it stopped changing: two screenshots 0.2 s apart that agree, each taken
    once the app has handled every message waiting (on a busy machine 0.2 s can pass before a
    newly pushed screen's footer is composed; the 0.2 s is what "stopped changing" means here,
    not a wait for something to happen)."""
    deadline = time.monotonic() + timeout
    await pilot.pause()
    last = app.export_screenshot(title="moeconsole")
    while True:
        await pilot.pause(0.2)
        await pilot.pause()
        now = app.export_screenshot(title="moeconsole")
        if now == last:
            return now
        assert time.monotonic() < deadline, "the screen kept changing"
        last = now


async def _run_screen_svg(base, run, size) -> str:
    # interval: one poll only, so the GPU sparklines do not depend on timing; the clock is
    # pinned just after the run's last line, so the quiet time reads the same on every run
    os.utime(run.log, (T0 + 31, T0 + 31))
    app = MoeConsole(base, run, interval=3600, telemetry=lambda state: (GPU, [ZOMBIE]), clock=lambda: T0 + 50,
                     host=lambda state: HOST)
    async with app.run_test(size=size) as pilot:
        await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
        return await settled_screenshot(app, pilot)


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (160, 48)])
def test_run_screen_snapshot(base, make_run, utc, tmp_path, size):
    run = _live(base, make_run)
    svg = asyncio.run(_run_screen_svg(base, run, size))
    check_snapshot(f"run_{size[0]}x{size[1]}", svg, tmp_path)


def test_browser_snapshot_80x24(base, make_run, utc, tmp_path):
    make_run(base, "20240101-000000-bf16-aaaa", name="moe-bf16", status="succeeded", steps=80)
    make_run(base, "20240102-000000-fp8-bbbb", name="moe-fp8", status="failed", steps=60)
    make_run(base, "20240103-000000-nvfp4-cccc", name="moe-nvfp4", status="killed", steps=40)

    async def go():
        # the age column against a pinned clock: 2024-01-04 00:00 UTC
        app = MoeConsole(base, None, clock=lambda: 1704326400.0)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and len(app.screen.rows) == 3)
            return await settled_screenshot(app, pilot)
    check_snapshot("browser_80x24", asyncio.run(go()), tmp_path)


def _history(run) -> None:
    """gpu-history.json as the runner leaves it after two hours: utilisation dipping at a
    checkpoint save, memory creeping up on GPU 7."""
    from moeconsole.runner.rundir import gpuhistory
    h = gpuhistory.GpuHistory()
    for k in range(3600):
        t = T0 + 2 * k
        dip = 20 if k % 600 < 30 else 0
        h.feed({"available": True, "gpus": [{"index": i, "util_pct": 95 - dip - (i == 5) * 40,
                                              "mem_used_mib": 110_000 + 3500 * i + (i == 7) * 3 * k,
                                              "mem_total_mib": 143_771} for i in range(8)]},
               {"cpu_pct": 30 + (k % 7), "ram_used_gib": 1400 + k / 100, "ram_total_gib": 2015.6,
                "hostname": "gpu-node-017"}, t)
    gpuhistory.save_history(run, h)


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (160, 48)])
def test_gpu_view_snapshot(base, make_run, utc, tmp_path, size):
    run = _live(base, make_run)
    _history(run)

    async def go():
        app = MoeConsole(base, run, interval=3600, telemetry=lambda state: (GPU, [ZOMBIE]), clock=lambda: T0 + 50,
                         host=lambda state: HOST)
        async with app.run_test(size=size) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            await pilot.press("g")
            await until_ui(pilot, lambda: type(app.screen).__name__ == "GpuScreen" and app.screen.history is not None)
            return await settled_screenshot(app, pilot)
    check_snapshot(f"gpus_{size[0]}x{size[1]}", asyncio.run(go()), tmp_path)


@pytest.mark.parametrize("size", [(80, 24), (120, 36), (160, 48)])
def test_compare_snapshot(base, make_run, utc, tmp_path, size):
    """Three profiles of one recipe: BF16, FP8 and NVFP4."""
    common = ["swift", "sft", "--torch_dtype", "bfloat16"]
    a = make_run(base, "20240101-000000-bf16-aaaa", name="moe-bf16", status="succeeded", steps=80, restart_at=None,
                 recipe={"name": "moe", "command": common})
    b = make_run(base, "20240102-000000-fp8-bbbb", name="moe-fp8", status="succeeded", steps=80, restart_at=None,
                 loss_scale=1.08, mem_base=48.0, step_time=0.41,
                 recipe={"name": "moe", "command": common + ["--fp8_recipe", "blockwise", "--fp8_format", "e4m3"]})
    c = make_run(base, "20240103-000000-nvfp4-cccc", name="moe-nvfp4", status="failed", steps=50, restart_at=None,
                 loss_scale=1.15, mem_base=40.0, step_time=0.35, crash={"class": "cuda_oom"},
                 recipe={"name": "moe", "command": common + ["--fp4", "nvfp4"]})

    async def go():
        app = MoeConsole(base, None)
        async with app.run_test(size=size) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.rows)
            app.push_screen(CompareScreen([a.path, b.path, c.path], base=base))
            await until_ui(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.result is not None)
            return await settled_screenshot(app, pilot)
    check_snapshot(f"compare_{size[0]}x{size[1]}", asyncio.run(go()), tmp_path)


def test_chart_picker_snapshot_80x24(base, make_run, utc, tmp_path):
    run = _live(base, make_run)
    from moeconsole.runner.rundir import jsonio
    recs = jsonio.read_jsonl(run.metrics)
    run.metrics.write_text("")
    for r in recs:
        r["extra"] = {"token_acc": 0.5 + r["step"] / 200, "load_balancing_loss": 1.0 + 0.01 * (r["step"] % 4)}
        jsonio.append_jsonl(run.metrics, r)

    async def go():
        app = MoeConsole(base, run, interval=3600, telemetry=lambda state: (GPU, [ZOMBIE]), clock=lambda: T0 + 50,
                         host=lambda state: HOST)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            await pilot.press("c")
            await until_ui(pilot, lambda: type(app.screen).__name__ == "MetricPicker")
            return await settled_screenshot(app, pilot)
    check_snapshot("picker_80x24", asyncio.run(go()), tmp_path)


def test_no_color_renders_grey_only_and_keeps_the_words(base, make_run, monkeypatch):
    run = _live(base, make_run)
    monkeypatch.setenv("NO_COLOR", "1")

    async def go():
        app = MoeConsole(base, run, interval=3600, telemetry=lambda state: (GPU, [ZOMBIE]))
        assert app.no_color
        async with app.run_test(size=(100, 30)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            await until_ui(pilot, lambda: "RUNNING" in "".join(app.screen.query_one(StatusLine).plain_lines[:1]))
            return await settled_screenshot(app, pilot), app.screen.query_one(StatusLine).plain_lines
    svg, status = asyncio.run(go())
    window_chrome = {"ff5f57", "febc2e", "28c840", "c5c8c6"}  # the SVG frame's buttons and title
    colours = set(re.findall(r"#([0-9a-fA-F]{6})\b", svg)) - window_chrome
    assert colours
    coloured = [c for c in colours if len({c[0:2], c[2:4], c[4:6]}) > 1]
    assert not coloured, f"colours under NO_COLOR: {coloured[:5]}"
    assert "RUNNING" in status[0]
