"""The help is longer than a 120x35 screen: its box says that more lies below and which keys reach
it (a newcomer saw a box cut at `e More smoothing`, with only "esc Close" in the footer)."""
from __future__ import annotations

import asyncio

from moeconsole.console.screens.dialogs import HelpScreen
from tests.console.conftest import write_run
from tests.console.test_console_app import app_for, attached, telemetry
from tests.waiting import until_ui


def test_the_help_box_says_where_more_lies_and_how_to_reach_it(base):
    run = write_run(base)

    async def go() -> list[str]:
        seen = []
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(120, 35)) as pilot:
            await attached(pilot)
            await pilot.press("question_mark")
            await until_ui(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help")
            box = app.screen.query_one("#help")

            def edge() -> str:
                return str(box.border_subtitle or "")
            await until_ui(pilot, lambda: "more below" in edge(), what="the help's mark of more below")
            seen.append(edge())
            await pilot.press("pagedown")
            await until_ui(pilot, lambda: "above and below" in edge(), what="the mark in the middle")
            seen.append(edge())
            await pilot.press("end")
            await until_ui(pilot, lambda: edge().startswith("more above:"), what="the mark at the end")
            seen.append(edge())
            await pilot.press("escape")
        async with app_for(base, run, telemetry=telemetry()).run_test(size=(160, 200)) as pilot:
            await attached(pilot)
            await pilot.press("question_mark")
            await until_ui(pilot, lambda: isinstance(pilot.app.screen, HelpScreen), what="the help")
            await pilot.pause()
            await pilot.pause()
            seen.append(str(pilot.app.screen.query_one("#help").border_subtitle or ""))
        return seen

    top, middle, end, tall = asyncio.run(go())
    assert top == "more below: ↓ PgDn End", top
    assert middle == "more above and below: ↑ ↓ PgUp PgDn", middle
    assert end == "more above: ↑ PgUp Home", end
    assert tall == "", tall   # all of it shown: no mark
