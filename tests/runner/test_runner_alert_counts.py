"""Counts count events: one SIGKILL and the restart policy's decision on it are one alert seen once,
not ``(x2)``; two stub saves are one alert named by the newest, with the range of steps. The real
runner, the real demo trainer (its --fault stub and sigkill), read by ``runs show`` and the console
at 80x24."""
from __future__ import annotations

import asyncio

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.panes import AlertBar
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import rundir
from tests.waiting import until_ui


def test_a_crash_and_its_decision_are_one_event_and_bad_saves_name_the_newest(harness, runs_dir):
    recipe = harness.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
                                     "--max_steps", "12", "--save_steps", "4", "--step_delay", "0.0",
                                     "--fault", "stub@4", "--fault", "stub@8", "--fault", "sigkill@10"],
                            restart={"max_restarts": 0})
    run = harness.start(recipe)
    run.wait_status("failed", timeout=120)
    assert [e["rule"] for e in run.events("alert") if e["rule"] == "restart_policy"], "the decision is an alert"
    shown = harness.cli("runs", "show", run.id, check=True).stdout
    causes = shown.split("alerts by cause", 1)[1].split("checkpoints (", 1)[0].splitlines()[1:]
    crash = next(l for l in causes if "crash killed_oom" in l)
    assert "(x" not in crash, crash
    saves = next(l for l in causes if "empty_stub" in l)
    assert saves.strip() == "CRIT checkpoint checkpoint-8 is empty_stub (x2, steps 4-8)", saves

    async def screen() -> str:
        app = MoeConsole(runs_dir, rundir.resolve(runs_dir, run.id), gpu=False, interval=0.25)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                           and len(app.screen.active_alerts) == 2)
            s = app.screen
            return "\n".join(s.query_one(StatusLine).plain_lines + s.query_one(AlertBar).plain_lines)

    text = asyncio.run(screen())
    assert "killed_oom" in text and "checkpoint-8 is empty_stub (x2, steps 4-8)" in text, text
    assert "(x2, step 9)" not in text and "checkpoint-4 is" not in text, text
