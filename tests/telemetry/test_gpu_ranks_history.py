"""The run's own ranks on each GPU (nvitop's process view), the GPU history the runner records
for the whole run (gpu-history.json), and the host line (CPU, RAM, disk I/O of the output dir).

A real runner supervises a trainer double that shows itself to the fake NVML on two GPUs with
RANK=5 in its environment; ``moeconsole --json`` (the real CLI, loading the fake library) and
the GPU view (``g``, driven by Pilot) say which rank holds how much memory and its SM share."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen
from moeconsole.runner.rundir import rundir
from tests.runner.conftest import Harness
from tests.waiting import until, until_ui

REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests" / "fakes" / "memtrain.py"


@pytest.fixture
def harness(tmp_path, runs_dir):
    return Harness(tmp_path, runs_dir)


def _gpu_screen(app):
    return app.screen if type(app.screen).__name__ == "GpuScreen" else None


def test_ranks_are_read_from_the_tracked_processes_environment():
    """Only a PID the runner tracks is the run's; its RANK/LOCAL_RANK come from its environment."""
    from moeconsole.console.widgets.gpu_panel import procs_words
    from moeconsole.runner.telemetry.gpuranks import RankFinder, run_rows
    env = {**os.environ, "RANK": "11", "LOCAL_RANK": "3"}
    rank = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env=env)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        until(lambda: Path(f"/proc/{rank.pid}/environ").exists(), what="the rank's /proc entry")
        gpu = {"available": True, "gpus": [
            {"index": 0, "processes": [{"pid": other.pid, "used_mib": 9000.0, "sm_pct": 0.0},
                                       {"pid": rank.pid, "used_mib": 70000.0, "sm_pct": 91.0}]},
            {"index": 1, "processes": []}]}
        state = {"pids": [{"pid": rank.pid, "start_time": 1.0, "role": "leader"}]}
        annotated = RankFinder().annotate(gpu, state)
        rows = run_rows(annotated)
        assert [(r["pid"], r["own"], r["rank"], r["local_rank"]) for r in rows] == \
            [(rank.pid, True, 11, 3), (other.pid, False, None, None)], "the run's rank first, then the others"
        assert procs_words(annotated["gpus"][0]["processes"]) == "r11+1p"
        assert procs_words(annotated["gpus"][1]["processes"]) == "0p"
        assert procs_words(None) == "?p"
    finally:
        for p in (rank, other):
            p.kill()
            p.wait()


def test_disk_io_of_a_directory_from_its_block_device(tmp_path):
    from moeconsole.console.widgets.gpu_panel import host_words
    from moeconsole.runner.telemetry.host import DirIO, io_rates, parse_block_stat
    assert parse_block_stat("  10 0 2048 5 20 0 4096 9 0 10 14") == (2048 * 512, 4096 * 512)
    assert parse_block_stat("garbage") is None
    assert io_rates((0.0, 0, 0), (2.0, 1024, 4096)) == (512.0, 2048.0)
    assert io_rates((0.0, 10, 10), (1.0, 5, 5)) == (None, None), "a counter reset is no negative rate"
    io = DirIO(str(tmp_path))
    first = io.sample()
    assert first["free_gib"] > 0 and first["total_gib"] >= first["free_gib"]
    if first["device"] is None:
        assert "no block device" in first["why"]
        pytest.skip(f"{tmp_path} is on no block device here ({first['why']})")
    assert first["read_bps"] is None, "one sample has no rate yet"
    with open(tmp_path / "blob", "wb") as f:   # 16 MiB written through to the disk
        f.write(os.urandom(16 << 20))
        f.flush()
        os.fsync(f.fileno())
    second = until(lambda: (lambda s: s if (s["write_bps"] or 0) > 0 else None)(io.sample()),
                   timeout=30, what="a write rate")
    assert second["write_bps"] > 0 and second["device"] == first["device"]
    line = host_words({"cpu_pct": 12.0, "cpu_count": 2, "ram_used_gib": 3.0, "ram_total_gib": 8.0,
                       "hostname": "h", "io": second}, 200)
    assert line.startswith("host h · cpu 12% of 2 · ram 3.0/8G (38%) · out ") and "w " in line and "free" in line
    assert len(host_words({"cpu_pct": 12.0, "ram_used_gib": 3.0, "ram_total_gib": 8.0, "io": second}, 40)) <= 40


def _nvml_env(monkeypatch, fake_libdir, tmp_path) -> Path:
    from tests.fakes.nvml import FakeGpu, fake_env, write_scenario
    scenario = write_scenario(tmp_path / "nvml.txt", [FakeGpu(mem_total_mib=80 * 1024) for _ in range(2)])
    for k, v in fake_env(fake_libdir, scenario, {}).items():
        monkeypatch.setenv(k, v)
    return scenario


def test_the_runner_records_the_gpus_for_the_whole_run_and_json_names_the_rank(harness, fake_libdir, tmp_path,
                                                                              monkeypatch, runs_dir):
    _nvml_env(monkeypatch, fake_libdir, tmp_path)
    env = {"OMP_NUM_THREADS": "1", "FAKE_MEM_STEPS": "400", "FAKE_STEP_S": "0.03", "FAKE_MEM_NVML": "1",
           "FAKE_MEM_GPUS": "2", "FAKE_MEM_BASE_GIB": "30", "FAKE_MEM_UTIL": "87", "FAKE_MEM_SM_PCT": "77",
           "RANK": "5", "LOCAL_RANK": "5"}
    run = harness.start(harness.recipe(command=["{python}", str(FAKE)], env=env, checkpoints={"dir": None},
                                       resume={"arg": None}))
    st = run.wait(lambda s: s.get("status") == "running" and s.get("step"), timeout=120, what="steps")

    def snap() -> dict | None:
        proc = harness.cli("--json", run.id, "--once")
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout.splitlines()[-1])
        procs = (doc["gpu"] or {}).get("gpus", [{}])[0].get("processes") or []
        return doc if any((p.get("run") or {}).get("rank") == 5 for p in procs) else None
    doc = until(snap, timeout=60, what="the rank on GPU 0 in --json")
    proc0 = doc["gpu"]["gpus"][0]["processes"][0]
    assert proc0["run"] == {"rank": 5, "local_rank": 5, "role": "leader"} and proc0["sm_pct"] == 77
    assert proc0["used_mib"] > 30 * 1024
    host = doc["host"]
    assert host["ram_total_gib"] > 0 and host["io"]["path"] == str(run.path) and host["io"]["free_gib"] > 0
    st = run.wait_status("succeeded", "failed", "unsaved", timeout=240)
    assert st["status"] in ("succeeded", "unsaved"), st

    from moeconsole.runner.rundir import gpuhistory
    history = gpuhistory.load_history(rundir.RunDir(run.path))
    assert history is not None and history.samples >= 2   # every 2 s while the training runs
    assert set(history.gpus) == {"0", "1"}
    util = history.gpus["0"]["util"]
    assert util.n >= 2 and util.last() == 87.0
    assert history.gpus["1"]["mem_gib"].finite_max() > 30
    assert history.mem_total_gib["0"] == 80.0
    assert history.ram.n >= 2 and history.ram_total_gib > 0 and history.cpu.n >= 1
    assert history.span_s() >= 1
    assert oct(os.stat(run.path / "gpu-history.json").st_mode & 0o777) == "0o600"

    # the GPU view (g): the rank on each GPU, and the history of the whole run the runner recorded
    gpu = doc["gpu"]

    async def go():
        app = MoeConsole(runs_dir, rundir.RunDir(run.path), interval=0.2, telemetry=lambda state: (gpu, []),
                         host=lambda state: host)
        async with app.run_test(size=(120, 40)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            assert not app.screen.query_one("#hostline").display, "a finished run is not polled: no host line"
            await pilot.press("g")
            view = await until_ui(pilot, lambda: _gpu_screen(app) and app.screen.history is not None and app.screen)
            await until_ui(pilot, lambda: "history of the whole run" in view.history_text and view.procs_text,
                           what="the GPU view's history and process table")
            procs, history_text = view.procs_text, view.history_text
            await pilot.press("q")
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen))
            return procs, history_text
    # (a finished run is not polled: the telemetry above stands in for a live one)
    procs, history_text = asyncio.run(go())
    assert "history of the whole run" in history_text and "samples by the runner" in history_text
    assert "  0 util " in history_text and "  1 util " in history_text and "peak" in history_text
    # 87% of utilisation is a high bar on GPU 0's line (scaled to 100%: the seventh of eight
    # levels); the host lines below are scaled to their own peak and prove nothing about it
    util_line = next(line for line in history_text.splitlines() if line.startswith("  0 util "))
    bars = util_line[len("  0 util "):].split(" avg ")[0].strip()
    assert bars and bars[-1] in "▇█", util_line  # the newest cell (a sample taken before the
    # trainer set 87% may sit in the first ones)


def test_g_shows_the_run_ranks_first_and_other_processes_after(tmp_path):
    from tests.console.conftest import write_run
    base = tmp_path / "runs"
    run = write_run(base, runner_pid=os.getpid(), started=False)
    gpu = {"available": True, "backend": "nvml", "reason": None, "driver": "550", "taken_at": 0.0, "gpus": [
        {"index": i, "util_pct": 90, "mem_used_mib": 100_000, "mem_total_mib": 143_771, "temp_c": 60, "power_w": 500,
         "power_limit_w": 700,
         "processes": [{"pid": 4000 + i, "used_mib": 1000.0, "sm_pct": 0.0, "run": None},
                       {"pid": 3000 + i, "used_mib": 99_000.0, "sm_pct": 95.0,
                        "run": {"rank": 8 + i, "local_rank": i, "role": "child"}}]} for i in range(2)]}

    async def go():
        app = MoeConsole(base, run, interval=0.2, telemetry=lambda state: (gpu, []), host=None)
        async with app.run_test(size=(160, 48)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            panel = app.screen.query_one("#gpus")
            await until_ui(pilot, lambda: any("r8+1p" in line for line in panel.plain_lines))
            await pilot.press("g")
            view = await until_ui(pilot, lambda: _gpu_screen(app))
            await until_ui(pilot, lambda: "rank 8, local 0" in view.procs_text and "4000" in view.procs_text,
                           what="the run's ranks and the other process in the GPU view")
            text = view.procs_text
            await pilot.press("escape")
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen))
            return text
    text = asyncio.run(go())
    lines = [line for line in text.splitlines() if "rank" in line or "other" in line]
    assert "rank 8, local 0" in lines[0] and "3000" in lines[0] and "95%" in lines[0] and "96.7G" in lines[0]
    assert "other" in lines[1] and "4000" in lines[1]
    assert "rank 9, local 1" in lines[2]


def test_the_host_line_is_never_cut_without_its_mark():
    """A 50-column pane showed `cpu 100% of 2 · ram 2.3/24G (10%) · r 0B/s w 92.` (the rate cut
    mid-number, no mark): a narrow line drops the I/O first, and any cut ends in "…"."""
    from moeconsole.console.widgets.gpu_panel import host_words
    host = {"cpu_pct": 100.0, "cpu_count": 2, "ram_used_gib": 2.3, "ram_total_gib": 24.0, "hostname": "vm",
            "io": {"path": "/tmp/runs/r", "device": "vda", "read_bps": 0.0, "write_bps": 94617.6, "free_gib": 35.0}}
    for width in range(12, 120):
        line = host_words(host, width)
        assert len(line) <= width
        assert line.endswith("…") or "cpu 100% of 2 · ram 2.3/24G (10%)" in line, (width, line)
        if "w " in line and not line.endswith("…"):
            assert line.split("w ", 1)[1].split(",")[0].endswith("/s"), (width, line)   # a rate is whole
    assert host_words(host, 49) == "cpu 100% of 2 · ram 2.3/24G (10%)"
