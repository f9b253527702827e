"""Help at 80x24 gives the description column the room: the notes wrap in a narrow column of
their own instead of squeezing what each key does to 17 characters."""
from __future__ import annotations

import asyncio

from moeconsole.console.screens.dialogs import HelpScreen
from tests.console.conftest import write_run
from tests.console.test_console_app import app_for, attached, telemetry
from tests.waiting import until_ui


def test_help_at_80x24_gives_the_description_the_room(base):
    run = write_run(base)

    async def go() -> list[int]:
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            await pilot.press("question_mark")
            await until_ui(pilot, lambda: isinstance(app.screen, HelpScreen))
            await pilot.pause()
            static = app.screen.query_one("#help-table")
            width = static.content_region.width
            table = static.content  # the rich Table the screen renders
            options = app.console.options.update_width(width)
            return table._calculate_column_widths(app.console, options)

    key, what, note = asyncio.run(go())
    assert what >= 36, (key, what, note)
    assert note <= 18 + 1, (key, what, note)  # its cell and the padding before it


def test_help_at_60_columns_puts_the_note_after_the_description(base):
    """At 60x20 the note column left the description 15 characters ("Open the / selected run: /
    charts, events, ..."): below 72 columns the note ends the description instead, and a pane
    resized across that width while the help is open lays it out again."""
    run = write_run(base)

    async def go() -> tuple[list[int], str, int]:
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(60, 20)) as pilot:
            await attached(pilot)
            await pilot.press("question_mark")
            await until_ui(pilot, lambda: isinstance(app.screen, HelpScreen))
            await pilot.pause()
            static = app.screen.query_one("#help-table")
            table = static.content
            widths = table._calculate_column_widths(app.console, app.console.options.update_width(
                static.content_region.width))
            kill_row = next(i for i, cell in enumerate(table.columns[0]._cells) if str(cell) == "k")
            kill_text = str(table.columns[1]._cells[kill_row])
            await pilot.resize_terminal(100, 30)
            await until_ui(pilot, lambda: len(app.screen.query_one("#help-table").content.columns) == 3,
                           what="the note column back at 100 columns")
            return widths, kill_text, len(app.screen.query_one("#help-table").content.columns)

    widths, kill_text, columns_wide = asyncio.run(go())
    assert len(widths) == 2 and widths[1] >= 30, widths
    assert kill_text.endswith("(asks to confirm; off with --readonly)"), kill_text
    assert columns_wide == 3
