"""A refresh draws the rows it changed (console/lean.py ``updates_by_rows``): on the run screen
the status line at the top and the log tail at the bottom change every second, and the widgets
between them (the charts, the events) are not drawn again for it; what is written to the
terminal is what Textual's own partial update writes, for the same changed regions."""
from __future__ import annotations

import asyncio
import io

from rich.console import Console
from textual._compositor import Compositor
from textual.geometry import Region

from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.chart import ChartView
from moeconsole.console.widgets.panes import LogTail
from moeconsole.console.widgets.status import StatusLine
from tests.waiting import until_ui


def _attached(base, run, check) -> None:
    async def go() -> None:
        app = MoeConsole(base, run, gpu=False, interval=0.05)
        async with app.run_test(size=(160, 48)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.first_frame_at
                           and app.screen.polls > 2, what="the run screen drawn and polled")
            await check(app, pilot)
    asyncio.run(go())


def test_a_change_at_the_top_and_the_bottom_does_not_draw_the_charts_between(base, make_run, monkeypatch):
    run = make_run(base, status="running", steps=40)
    asked: list[str] = []
    whole = ChartView.render_lines

    def counted(self, crop):
        asked.append(str(self.id))
        return whole(self, crop)
    monkeypatch.setattr(ChartView, "render_lines", counted)

    async def check(app, pilot) -> None:
        screen = app.screen
        screen.source.interval = 3600.0   # no poll meanwhile: only the two refreshes below
        await pilot.pause()
        for _ in range(3):
            asked.clear()
            screen.query_one(StatusLine).refresh()
            screen.query_one(LogTail).refresh()
            await until_ui(pilot, lambda: not screen._compositor._dirty_regions and not screen._dirty_widgets,
                           what="the refresh drawn")
            await pilot.pause()
            assert asked == [], asked   # Textual's own: the four charts, every row of each
    _attached(base, run, check)


def _written(update) -> str:
    out = io.StringIO()
    Console(file=out, width=160, height=48, force_terminal=True, color_system="truecolor",
            legacy_windows=False).print(update, end="")
    return out.getvalue()


def test_what_a_partial_update_writes_is_textuals_own(base, make_run):
    """The same changed regions, drawn by Textual's ``render_partial_update`` and by the bands:
    the same bytes to the terminal (the rows at the top, in the middle across the charts, a
    piece of one row, rows that touch, the whole screen), on the run screen and on the help
    dialog over it."""
    run = make_run(base, status="running", steps=40)
    textual_update, textual_renders = Compositor.render_partial_update.textual_own

    async def check(app, pilot) -> None:
        await compare(app.screen._compositor)
        await pilot.press("question_mark")   # the help over the run screen, which shows through
        await until_ui(pilot, lambda: type(app.screen).__name__ == "HelpScreen", what="the help")
        await pilot.pause()
        await compare(app.screen._compositor)

    async def compare(compositor) -> None:
        cases = [
            {Region(0, 0, 160, 2), Region(0, 40, 160, 6)},
            {Region(0, 0, 160, 1), Region(20, 8, 30, 3), Region(100, 30, 50, 1)},
            {Region(5, 5, 10, 1)},
            {Region(0, 10, 160, 2), Region(0, 12, 80, 3), Region(70, 20, 20, 20)},
            {Region(0, 0, 160, 48)},
        ]
        for regions in cases:
            compositor._dirty_regions.clear()
            compositor._dirty_regions.update(regions)
            ours = _written(compositor.render_partial_update())
            compositor._dirty_regions.update(regions)
            theirs_update, theirs_renders = Compositor.render_partial_update, Compositor._get_renders
            Compositor.render_partial_update, Compositor._get_renders = textual_update, textual_renders
            try:
                theirs = _written(compositor.render_partial_update())
            finally:
                Compositor.render_partial_update, Compositor._get_renders = theirs_update, theirs_renders
            assert ours == theirs, regions
            assert len(ours) > 50   # something was written
    _attached(base, run, check)
