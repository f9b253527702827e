"""The seventh newcomer round (README only, tmux over SSH, keyboard only): what misled them, as they
met it."""
from __future__ import annotations

import asyncio
import os

from rich.console import Console


def _help_lines(app) -> list[str]:
    """The whole help as the help screen lays it out at the app's width (every row, scrolled or not)."""
    from textual.widgets import Static
    table = app.screen.query_one("#help-table", Static).content
    console = Console(width=app.size.width, file=open(os.devnull, "w"), record=True, color_system=None)
    console.print(table)
    return console.export_text().splitlines()


def test_s_c_and_d_mean_one_thing_in_every_screen_of_the_help(base, make_run):
    """`s` was the browser's sort and the run screen's start runner, `c` the run screen's charts
    and the browser's compare, `d` the run screen's alert and the chart picker's defaults: a
    newcomer who learnt a key on one screen pressed it on another and got something else. The help
    (every screen's table) lists each of them with one meaning: `s` sorts, `c` chooses the charts
    (or the metric a comparison overlays), `d` opens the alert; compare is `x`, start runner `u`,
    the defaults `0`; and no key of any screen (the dialogs' y/n aside) has two meanings."""
    from tests.console.test_console_app import app_for, attached
    from tests.waiting import until_ui
    from moeconsole.console import keys
    from moeconsole.console.screens.dialogs import HelpScreen
    run = make_run(base, status="succeeded")

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=(120, 40)) as pilot:
            await attached(pilot)
            await pilot.press("question_mark")
            await until_ui(pilot, lambda: isinstance(app.screen, HelpScreen))
            return _help_lines(app)
    lines = asyncio.run(go())

    def rows(key: str) -> list[str]:
        return [line for line in lines if line.split(None, 1)[:1] == [key]]
    assert rows("s") and all("Sort by the next column" in r for r in rows("s")), rows("s")
    assert rows("c") and all("Choose the" in r for r in rows("c")), rows("c")
    assert rows("d") and all("newest active alert" in r for r in rows("d")), rows("d")
    assert any("Compare the marked runs" in r for r in rows("x")), rows("x")
    assert any("start a new runner" in r for r in rows("u")), rows("u")
    assert any("default charts" in r for r in rows("0")), rows("0")
    assert keys.more_than_one_meaning() == {}


def test_x_compares_the_marked_runs_in_the_browser_and_t_aligns_them_by_time(base, make_run):
    """The browser's compare is `x` (its footer and title say so), and in the comparison `t`
    switches step / wall time (`x` had been that there)."""
    from tests.console.test_console_app import app_for
    from tests.waiting import until_ui
    from moeconsole.console.screens.browser import BrowserScreen
    from moeconsole.console.screens.compare import CompareScreen
    for i, name in enumerate(("moe-a", "moe-b")):
        make_run(base, f"20240101-00000{i}-{name}-000{i}", name=name, status="succeeded")

    async def go():
        app = app_for(base, None)
        async with app.run_test(size=(120, 36)) as pilot:
            browser = await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and len(app.screen.rows) == 2
                                     and app.screen)
            title = str(browser.query_one("#browser-title").render())
            assert "space marks runs to compare (x)" in title, title
            await pilot.press("space", "down")
            await pilot.press("c")   # c is the charts' key: nothing here
            await pilot.pause()
            assert app.screen is browser
            await pilot.press("x")
            screen = await until_ui(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.result
                                    and app.screen)
            assert "c metric, t step/time" in str(screen.query_one("#compare-title").render())
            await pilot.press("t")
            await until_ui(pilot, lambda: screen.result["by_time"])
    asyncio.run(go())
