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
