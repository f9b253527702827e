"""A crash the runner recovered from is history, not a live CRIT: once the restarted attempt has
trained past the step where the crash happened, the crash's alert group is resolved, saying so,
in every view (``--json``, ``runs ls``, ``runs show``, the console's status line, alert bar and
event log), without anyone pressing ``a``. Before, attempt 1's CRIT stayed in the alert bar and
the status line read ``CRIT · RUNNING`` while attempt 2 trained fine (newcomer round 4). Real
runner, the real demo trainer with an OOM injected once (attempt 1 only: docs/demo.md)."""
from __future__ import annotations

import asyncio
import json

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import rundir
from tests.runner.conftest import base_recipe
from tests.waiting import until_ui

CRASH_AT = 6


def test_a_crash_the_restart_trained_past_is_resolved_in_every_view(harness, runs_dir):
    command = [*base_recipe()["command"], "--max_steps", "40", "--fault", f"oom@{CRASH_AT}"]
    run = harness.start(harness.recipe(command=command))
    st = run.wait_status("succeeded", "unsaved", "failed", "paused", timeout=240)
    assert st["status"] == "succeeded" and st["attempt"] == 2, st
    crash = run.events("crash")[0]
    passed = run.events("past_crash")
    assert len(passed) == 1, passed
    why = f"attempt 2 trained past step {crash['step']}, where attempt 1 crashed"
    assert (passed[0]["attempt"], passed[0]["crashed_attempt"], passed[0]["crash_class"]) == (2, 1, "cuda_oom")
    assert passed[0]["step"] > crash["step"]

    snap = json.loads(harness.cli("--json", "--once", run.id, check=True).stdout.splitlines()[-1])
    group = next(g for g in snap["alert_groups"] if g["key"] == "crash:cuda_oom")
    assert (group["active"], group["resolved"], group["standing"]) == (False, True, f"resolved: {why}"), group
    assert snap["run"]["open_alerts"] == 0, snap["run"]
    ls = json.loads(harness.cli("runs", "ls", "--json", check=True).stdout)["runs"]
    row = next(r for r in ls if r["id"] == run.id)
    assert (row["open_alerts"], row["open_critical"]) == (0, 0), row
    show = harness.cli("runs", "show", run.id, check=True).stdout
    assert f"(resolved: {why})" in show, show

    async def console() -> tuple[str, list, str]:
        app = MoeConsole(runs_dir, rundir.resolve(runs_dir, run.id), gpu=False, interval=0.25)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None)
            screen = app.screen
            from moeconsole.console.timeline import sentence
            said = [sentence(ev)[0] for ev in screen.snapshot.events]
            return "\n".join(screen.query_one(StatusLine).plain_lines), list(screen.active_alerts), "\n".join(said)
    status, active, said = asyncio.run(console())
    assert "CRIT" not in status, status
    assert active == []
    assert f"RECOVERED: {why} (cuda_oom)" in said, said
