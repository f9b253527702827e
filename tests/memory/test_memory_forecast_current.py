"""A forecast alert is current: its numbers follow the run (one alert per cause, updated), it ends
with the attempt whose memory it forecast, the next attempt opens its own, and a from-scratch
restart is not called "memory stable again" before it has any data. The real runner supervises
tests/fakes/memtrain.py leaking 60 MiB a step from 61 GiB against 80 GiB: reserved passes the
capacity at step 325, in both attempts (no checkpoints: attempt 2 starts from scratch)."""
from __future__ import annotations

import asyncio
import json
import re

import pytest

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.panes import AlertBar
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import rundir
from tests.memory.test_memory_runner import recipe
from tests.runner.conftest import Harness
from tests.waiting import until_ui

OOM_STEP = 324  # the last logged step: (80 - 61) GiB / 60 MiB per step


@pytest.fixture
def harness(tmp_path, runs_dir):
    return Harness(tmp_path, runs_dir)


def test_forecast_numbers_move_end_with_the_attempt_and_restart_afresh(harness, runs_dir):
    env = {"FAKE_MEM_STEPS": "800", "FAKE_MEM_BASE_GIB": "60", "FAKE_MEM_CACHE_GIB": "1",
           "FAKE_MEM_LEAK_MIB": "60", "FAKE_MEM_CAPACITY_GIB": "80", "FAKE_STEP_S": "0.04"}
    run = harness.start(harness.recipe(**recipe(env, restart={"max_restarts": 1, "backoff_initial_s": 0.1,
                                                               "backoff_max_s": 0.2, "max_crashes_per_window": 60})))

    async def watch() -> tuple[str, int, str]:
        app = MoeConsole(runs_dir, rundir.resolve(runs_dir, run.id), gpu=False, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            s = app.screen

            def late_in_attempt_1() -> bool:
                snap = s.snapshot
                return (snap.run.get("attempt") == 1 and 150 <= (snap.run.get("step") or 0) < 290
                        and any(g.key == "mem_forecast" for g in s.active_alerts))
            await until_ui(pilot, late_in_attempt_1, timeout=120, what="the forecast, late in attempt 1")
            group = next(g for g in s.active_alerts if g.key == "mem_forecast")
            step = s.snapshot.run["step"]
            bar = "\n".join(s.query_one(StatusLine).plain_lines + s.query_one(AlertBar).plain_lines)
            # then the attempt ends in its OOM and the next one starts from scratch
            await until_ui(pilot, lambda: s.snapshot.run.get("status") in ("paused", "failed"), timeout=120,
                           what="the run to stop after attempt 2")
            after = "\n".join(s.query_one(StatusLine).plain_lines + s.query_one(AlertBar).plain_lines)
            assert "mem_forecast" not in [g.key for g in s.active_alerts], after
            return group.headline(), step, bar + "\n----\n" + after

    headline, step, text = asyncio.run(watch())
    # the alert's numbers are those of now (the step the screen showed), not of when it opened
    m = re.match(r"OOM in ~([\d,]+) steps", headline)
    assert m, headline
    left, truth = int(m.group(1).replace(",", "")), OOM_STEP - step
    assert abs(left - truth) <= 0.15 * truth + 15, (headline, step, truth)
    assert f"OOM in ~{m.group(1)} steps" in text.split("----")[0], text
    assert "OOM in ~" not in text.split("----")[1], text     # the OOM happened: no forecast of it

    events = run.events()
    fc = [e for e in events if e.get("type") == "alert" and e.get("cause") == "mem_forecast"]
    # the second attempt opens its own alert, with its own numbers; no "stable again" about it
    second = [e for e in fc if e["attempt"] == 2]
    assert second and second[0]["update"] == 0 and second[0]["opened_step"] < 200, second[:1]
    assert not [e for e in fc if "stable again" in e["message"]], [e["message"] for e in fc]

    # --json: the forecast ended with the attempt it was about (the run is over)
    snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
    group = next(g for g in snap["alert_groups"] if g["key"] == "mem_forecast")
    assert group["resolved"] and not group["active"], group
