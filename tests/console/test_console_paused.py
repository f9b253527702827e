"""A PAUSED run says why once, and keeps saying it: the real runner pauses the real demo trainer on
a NaN (--fault nan@5); at 80x24 the status line names the reason before and after the alert is
acknowledged, the resume dialog says "PAUSED: divergence ..." (not "paused: paused"), and
``runs show`` gives the last loss as it was logged: nan."""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.dialogs import ConfirmScreen
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.status import StatusLine
from tests.console.test_console_live import REPO, reap, start_demo, wait_state
from tests.waiting import until_ui


def test_the_pause_reason_is_said_once_and_kept_after_the_ack():
    base = Path(tempfile.mkdtemp(prefix="mcpause-"))
    run = None
    try:
        run = start_demo(base, "--set", "args.fault=nan@5", "--set", "args.step_delay=0.02")
        wait_state(run, lambda s: s.get("status") == "paused", timeout=120)
        assert run.read_state()["pause_reason"].startswith("paused: divergence")

        async def go() -> tuple[str, str, str]:
            app = MoeConsole(base, run, gpu=False, interval=0.25)
            async with app.run_test(size=(80, 24)) as pilot:
                await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.snapshot is not None
                               and bool(app.screen.active_alerts))
                s = app.screen
                before = s.query_one(StatusLine).plain_lines[1]
                await pilot.press("a")
                await until_ui(pilot, lambda: not s.active_alerts and "CRIT" not in s.query_one(StatusLine).plain_lines[1])
                after = s.query_one(StatusLine).plain_lines[1]
                await pilot.press("r")
                await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                dialog = "\n".join(app.screen.confirmation.lines)
                await pilot.press("escape")
                return before, after, dialog

        before, after, dialog = asyncio.run(go())
        for line in (before, after):
            assert line.count("paused:") == 1 and "paused: paused" not in line, line
        # the status line at 80 columns: the reason survives the acknowledgement, first on its line
        assert after.startswith("paused: divergence"), after
        assert dialog.startswith("The run is PAUSED: divergence"), dialog
        assert "paused: paused" not in dialog and "PAUSED: paused" not in dialog

        env = {**os.environ, "PYTHONPATH": str(REPO)}
        shown = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "runs", "show", run.run_id, "--runs-dir", str(base)],
                               cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
        loss = next(l for l in shown.stdout.splitlines() if l.strip().startswith("loss"))
        assert loss.split()[:3] == ["loss", "last", "nan"], loss
    finally:
        reap(base, run)
        shutil.rmtree(base, ignore_errors=True)
