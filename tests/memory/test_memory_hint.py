"""One hint per crash, decided by its memory verdict: a CUDA OOM the memory watch calls a leak is
told to find what keeps memory, never the allocator setting for fragmentation, in every place a
user reads it (the alert's ``d`` view, ``runs show``, the receipt, ``--json``). The run is real: the
real runner supervises tests/fakes/memtrain.py leaking 60 MiB a step against 80 GiB."""
from __future__ import annotations

import asyncio
import json

import pytest

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.dialogs import DetailScreen
from moeconsole.console.screens.run import RunScreen
from moeconsole.runner.rundir import rundir
from tests.memory.test_memory_runner import recipe
from tests.runner.conftest import Harness
from tests.waiting import until_ui

LEAK_ADVICE = "find what keeps memory"
FRAGMENTATION_ADVICE = "expandable_segments"


@pytest.fixture
def harness(tmp_path, runs_dir):
    return Harness(tmp_path, runs_dir)


def test_a_leak_gets_the_leak_hint_everywhere(harness, runs_dir):
    env = {"FAKE_MEM_STEPS": "800", "FAKE_MEM_BASE_GIB": "60", "FAKE_MEM_CACHE_GIB": "1",
           "FAKE_MEM_LEAK_MIB": "60", "FAKE_MEM_CAPACITY_GIB": "80"}
    run = harness.start(harness.recipe(**recipe(env, restart={"max_restarts": 0})))
    st = run.wait_status("failed", timeout=180)
    report = run.crash(1)
    assert report["class"] == "cuda_oom" and report["memory"]["verdict"] == "leak", report.get("memory")
    # torch's message says "reserved but unallocated is large": the text classifier alone would
    # have advised the allocator setting
    assert "reserved by PyTorch but unallocated" in "\n".join(report["evidence"])
    assert LEAK_ADVICE in report["hint"] and FRAGMENTATION_ADVICE not in report["hint"]

    shown = harness.cli("runs", "show", run.id, check=True).stdout
    hints = [l for l in shown.splitlines() if l.strip().startswith("hint:")]
    assert hints and all(LEAK_ADVICE in h and FRAGMENTATION_ADVICE not in h for h in hints), shown

    receipt = harness.cli("runs", "receipt", run.id, "--out", str(harness.tmp / "rc"), check=True)
    md = (harness.tmp / "rc" / "receipt.md").read_text()
    hint_lines = [l for l in md.splitlines() if l.startswith("- hint for attempt")]
    assert hint_lines and all(LEAK_ADVICE in l and FRAGMENTATION_ADVICE not in l for l in hint_lines), md
    data = json.loads((harness.tmp / "rc" / "receipt.json").read_text())
    assert all(FRAGMENTATION_ADVICE not in (c.get("hint") or "") for c in data["crashes"]), receipt.stdout

    snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
    assert LEAK_ADVICE in snap["crashes"][0]["hint"]
    oom_group = next(g for g in snap["alert_groups"] if g["key"] == "crash:cuda_oom")
    assert LEAK_ADVICE in oom_group["hint"] and FRAGMENTATION_ADVICE not in oom_group["hint"]

    async def details() -> str:
        app = MoeConsole(runs_dir, rundir.resolve(runs_dir, run.id), gpu=False, interval=0.25)
        async with app.run_test(size=(120, 36)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                           and any(g.key == "crash:cuda_oom" for g in app.screen.active_alerts))
            screen = app.screen
            # the crash is the newest active cause: d opens it
            assert screen.active_alerts[0].key == "crash:cuda_oom", [g.key for g in screen.active_alerts]
            await pilot.press("d")
            await until_ui(pilot, lambda: isinstance(app.screen, DetailScreen))
            return "\n".join(app.screen.lines)

    body = asyncio.run(details())
    assert "memory verdict: leak" in body, body
    hint = next(l for l in body.splitlines() if l.startswith("hint: "))
    assert LEAK_ADVICE in hint and FRAGMENTATION_ADVICE not in hint, body  # (torch's own message, quoted as evidence, names it)
    assert st["status"] == "failed"
