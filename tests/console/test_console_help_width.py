"""The help (`?`) at the sizes a newcomer's tmux has: 80x24 gives what each key does the room
(round 4: the run browser's help ran "Open the selected run: charts, / events, crashes,
checkpoints (live / runs attach)." over three lines of 36 characters: the screens' names sat in
the key column and a column of notes took the rest); at 60 columns the note ends the
description; at 120 it has a column of its own; a pane resized while the help is open lays it
out again. Read as the screen shows it (``_help_lines``)."""
from __future__ import annotations

import asyncio

from moeconsole.console.screens.browser import BrowserScreen
from moeconsole.console.screens.dialogs import HelpScreen
from tests.console.conftest import write_run
from tests.console.test_console_app import app_for, attached, telemetry
from tests.console.test_console_newcomer6 import _help_lines
from tests.waiting import until_ui


def _row(lines: list[str], key: str) -> str:
    return next(line for line in lines if line.split(None, 1)[:1] == [key])


def test_the_browser_and_run_screen_help_at_80x24_give_each_key_a_full_line(base, make_run):
    make_run(base, status="succeeded")

    async def go() -> list[str]:
        app = app_for(base, None)
        async with app.run_test(size=(80, 24)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.rows)
            await pilot.press("question_mark")
            await until_ui(pilot, lambda: isinstance(app.screen, HelpScreen))
            await pilot.pause()
            return _help_lines(app)
    lines = asyncio.run(go())
    assert "Open the selected run: charts, events, crashes" in _row(lines, "enter"), "\n".join(lines)
    assert lines[0].strip() == "Run browser", lines[:3]   # the screen's own keys first, under its name
    assert "Clean kill: SIGTERM to the whole training tree" in _row(lines, "k"), "\n".join(lines)
    assert "No restart. (asks to confirm; off with --readonly)" in " ".join(" ".join(lines).split())
    assert all(len(line.rstrip()) <= 80 for line in lines)


def test_help_at_60_columns_puts_the_note_after_the_description_and_120_gives_it_a_column(base):
    """At 60x20 a note column left the description 15 characters ("Open the / selected run: /
    charts, events, ..."): the note ends the description instead, and a pane resized to 120
    columns while the help is open puts the notes back in a column of their own."""
    run = write_run(base)

    async def go() -> tuple[list[str], list[str]]:
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(60, 20)) as pilot:
            await attached(pilot)
            await pilot.press("question_mark")
            await until_ui(pilot, lambda: isinstance(app.screen, HelpScreen))
            await pilot.pause()
            narrow = _help_lines(app)
            await pilot.resize_terminal(120, 40)
            await until_ui(pilot, lambda: "asks to confirm" in _row(_help_lines(app), "k"),
                           what="the note column back at 120 columns")
            return narrow, _help_lines(app)

    narrow, wide = asyncio.run(go())
    text = " ".join(" ".join(narrow).split())
    assert "No restart. (asks to confirm; off with --readonly)" in text, text
    k = _row(wide, "k")
    assert "Clean kill: SIGTERM to the whole training tree, wait the recipe's" in k, k
