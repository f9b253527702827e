"""Newcomer round 4 (README only, tmux over SSH): what they looked for and did not find.

`runs ls` had no date filter: "last week's run" meant reading every STARTED cell. Now `runs ls
--since 2d` / `--since 2026-11-20` and the run browser's `/` with `since:2d` keep the runs started
since then, read by one owner (``runner/core/when.py``); a word it cannot read is one line naming
the forms it takes, exit 2 (the browser: a notification, the filter kept). Real processes for
the command line, Pilot for the browser."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from moeconsole.console.screens.browser import BrowserScreen
from moeconsole.console.screens.dialogs import PromptScreen
from moeconsole.runner.rundir import jsonio, rundir
from tests.console.test_console_app import app_for
from tests.waiting import until_ui

REPO = Path(__file__).resolve().parents[2]
OLD, NEW = "20240101-000000-old-0001", "20240102-000000-new-0002"


def _runs(base: Path, make_run) -> None:
    """Two ended runs: one started 10 days ago, one an hour ago."""
    now = time.time()
    for run_id, name, age in ((OLD, "old", 10 * 86400), (NEW, "new", 3600)):
        run = make_run(base, run_id, name=name, status="succeeded")
        state = jsonio.read_json(run.state)
        state.update(started_at=now - age, ended_at=now - age + 60)
        jsonio.atomic_write_json(run.state, state)


def _cli(base: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "moeconsole", *args, "--runs-dir", str(base)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO)


def test_runs_ls_since_keeps_the_runs_started_since_an_age_or_a_date(base, make_run):
    _runs(base, make_run)
    ids = lambda proc: [r["id"] for r in json.loads(proc.stdout)["runs"]]   # noqa: E731
    assert ids(_cli(base, "runs", "ls", "--json")) == [NEW, OLD]
    assert ids(_cli(base, "runs", "ls", "--since", "2d", "--json")) == [NEW]
    week_ago = time.strftime("%Y-%m-%d", time.localtime(time.time() - 7 * 86400))
    assert ids(_cli(base, "runs", "ls", "--since", week_ago, "--json")) == [NEW]
    assert ids(_cli(base, "runs", "ls", "--since", "2 weeks", "--json")) == [NEW, OLD]
    table = _cli(base, "runs", "ls", "--since", "1d")
    assert table.returncode == 0 and "new" in table.stdout and "old" not in table.stdout, table.stdout
    none = _cli(base, "runs", "ls", "--since", "10m")
    assert none.returncode == 0 and "started since" in none.stdout and "without --since" in none.stdout, none.stdout

    bad = _cli(base, "runs", "ls", "--since", "last tuesday")
    assert bad.returncode == 2 and bad.stdout == "", bad
    lines = bad.stderr.strip().splitlines()
    assert len(lines) == 1 and "2d" in lines[0] and "2026-11-20" in lines[0], bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_browser_filter_takes_since_and_refuses_a_word_it_cannot_read(base, make_run):
    _runs(base, make_run)

    async def go() -> tuple[list[str], list[str], str, str]:
        app = app_for(base, None)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and len(app.screen.rows) == 2)
            browser = app.screen
            await pilot.press("slash")
            await until_ui(pilot, lambda: isinstance(app.screen, PromptScreen))
            await pilot.press(*"since:2d", "enter")
            await until_ui(pilot, lambda: app.screen is browser and len(browser.rows) == 1)
            kept = [r["id"] for r in browser.rows]
            await pilot.press("slash")
            await until_ui(pilot, lambda: isinstance(app.screen, PromptScreen))
            await pilot.press("ctrl+u", *"since:soon", "enter")
            await until_ui(pilot, lambda: app.screen is browser and any(
                "since" in str(n.message) for n in app._notifications))
            said = next(str(n.message) for n in app._notifications if "since" in str(n.message))
            return kept, [r["id"] for r in browser.rows], browser.filter_text, said

    kept, after_bad, filter_text, said = asyncio.run(go())
    assert kept == [NEW]
    assert after_bad == [NEW] and filter_text == "since:2d"   # the filter as it was
    assert "cannot read 'soon'" in said and "2d" in said, said


LONG_NAME = "qwen3-moe-30b-a3b-lora-r64-alpha128-lr2e-4-seq8192-e128-topk8-v7"   # 64: the longest a name may be


def test_a_long_run_name_gives_up_its_end_so_the_status_line_keeps_the_step(base, make_run):
    """A 64-character name (an ablation's) filled the status line at 80 columns: `qwen3-...-v7
    RUNNING …`, the step and the ETA gone. The name is cut as the run list cuts it."""
    from moeconsole.console.widgets.status import StatusLine
    from tests.console.test_console_app import attached
    run = make_run(base, name=LONG_NAME, status="succeeded")

    async def go() -> list[str]:
        app = app_for(base, run)
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await attached(pilot)
            return list(screen.query_one(StatusLine).plain_lines)
    first = asyncio.run(go())[0]
    assert "SUCCEEDED" in first and "step 60/100 (60.0%)" in first, first
    assert first.startswith("qwen3-moe-30b") and "…" in first, first


def test_a_kill_question_left_open_while_the_run_ended_is_closed_saying_so(base, make_run, fake_runner):
    """`k` in a tmux whose client was then dropped (ssh gone): the run SUCCEEDED meanwhile, and on
    reattach the dialog still asked to kill its old PIDs ("The run ends as KILLED"); `y` answered
    "kill: no runner is listening on .../control.sock". The question is closed as soon as the run's
    status (or attempt) is not the one it was asked about, nothing sent, one notification saying why."""
    from moeconsole.console.screens.dialogs import ConfirmScreen
    from moeconsole.console.screens.run import RunScreen
    from tests.console.test_console_app import attached, live_run, telemetry
    run = live_run(base, make_run)
    runner = fake_runner(run)

    async def go() -> str:
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            await pilot.press("k")
            await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            state = jsonio.read_json(run.state)
            state.update(status="succeeded", ended_at=state["started_at"] + 100, pids=[])
            jsonio.atomic_write_json(run.state, state)
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen), what="the question closed")
            said = await until_ui(pilot, lambda: next((str(n.message) for n in app._notifications
                                                       if "nothing was sent" in str(n.message)), None))
            await pilot.press("y")   # the answer to a question no longer asked does nothing
            await pilot.pause()
            assert runner.requests == []
            return said
    said = asyncio.run(go())
    assert said.startswith("the run is SUCCEEDED now (it was RUNNING, attempt 2)"), said


def test_bare_moeconsole_on_the_newest_of_three_live_runs_says_the_others_are_there(base, make_run):
    """Three ablations started with `run --detach`, then `moeconsole`: it opened the newest with no
    word of the other two. It now says how many are live and the key that lists them."""
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.commands.attach import others_live_note
    from tests.console.test_console_app import attached
    for i in range(3):
        make_run(base, f"2024010{i + 1}-000000-abl-{i}00a", name=f"abl-{i}", runner_pid=os.getpid())
    newest = rundir.newest_live(base)
    note = others_live_note(base, newest)

    async def go() -> list[str]:
        app = MoeConsole(base, newest, gpu=False, interval=0.2, note=note)
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            return [str(n.message) for n in app._notifications]
    said = asyncio.run(go())
    assert "3 live runs: this is the newest; b lists them all, `moeconsole attach RUN` opens another" in said, said
    assert others_live_note(base, None) is None
