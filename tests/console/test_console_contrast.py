"""Every text colour the console draws on its background reads: the theme's pairs are measured
where they are used, on the real screens rendered by Pilot (the run browser with each row selected,
run screens in each state with a selected crash event and the alert bar, the help screen, a
confirmation), and each has a WCAG contrast ratio of at least 4.5:1."""
from __future__ import annotations

import asyncio

from textual.widgets import DataTable

from moeconsole.console.screens.browser import BrowserScreen
from moeconsole.console.screens.run import RunScreen
from tests.console.conftest import write_run
from tests.console.test_console_app import app_for, attached, telemetry
from tests.console.test_console_alerts_live import contrast
from tests.waiting import until_ui

MIN_RATIO = 4.5
STATES = ("failed", "running", "paused", "killed", "succeeded", "unsaved", "cooldown")


def low_pairs(app, where: str, modal: bool = False) -> dict:
    """(fg, bg) -> (ratio, text, where) for every drawn text segment below the minimum.
    Scrollbar thumbs (a bar, not text) are left out; over a modal (help, a confirmation) only the
    modal's own box counts (the screen behind it is faded on purpose)."""
    out = {}
    box = app.screen.children[0].region if modal and app.screen.children else None
    for y, strip in enumerate(app.screen._compositor.render_strips()):
        x = 0
        for seg in strip:
            x0, x = x, x + seg.cell_length
            if box is not None and not (box.y <= y < box.bottom and box.x <= x0 < box.right):
                continue
            text = seg.text.strip()
            if not text or seg.style is None or set(text) <= set("▉▊▋▌▍▎▏█▁▂▃▄▅▆▇"):
                continue
            fg, bg = seg.style.color, seg.style.bgcolor
            if seg.style.reverse:
                fg, bg = bg, fg
            if fg is None or bg is None:
                continue
            ratio = contrast(fg, bg)
            if ratio < MIN_RATIO:
                out.setdefault((fg.name, bg.name), (round(ratio, 2), text[:30], where, y))
    return out


def test_every_text_and_background_pair_reads(base):
    for i, status in enumerate(STATES):
        write_run(base, f"20240101-00000{i}-r{i}-000{i}", name=f"run-{status}", status=status,
                  crash={"class": "cuda_oom"} if status in ("failed", "killed", "paused") else None)
    found: dict = {}

    async def go():
        app = app_for(base, None)
        async with app.run_test(size=(120, 36)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen)
                           and app.screen.query_one(DataTable).row_count == len(STATES))
            table = app.screen.query_one(DataTable)
            for row in range(len(STATES)):
                table.move_cursor(row=row)
                await pilot.pause()
                found.update(low_pairs(app, f"browser, row {row} selected"))
            await pilot.press("question_mark")
            await pilot.pause()
            found.update(low_pairs(app, "help", modal=True))
        for i, status in enumerate(STATES):
            run = base / f"20240101-00000{i}-r{i}-000{i}"
            from moeconsole.runner.rundir import rundir
            app = app_for(base, rundir.RunDir(run), telemetry=telemetry())
            async with app.run_test(size=(120, 36)) as pilot:
                screen = await attached(pilot)
                await pilot.pause()
                found.update(low_pairs(app, f"run screen, {status}"))
                events = screen.query_one("#events")
                events.focus()
                crit = [n for n, e in enumerate(events.entries) if e.kind in ("crash", "alert", "checkpoint")]
                for n in crit[:3]:
                    events.highlighted = n
                    await pilot.pause()
                    found.update(low_pairs(app, f"run screen, {status}, event {n} selected"))
                if status == "running":
                    await pilot.press("k")
                    await pilot.pause()
                    found.update(low_pairs(app, "a confirmation", modal=True))
    asyncio.run(go())
    assert not found, "\n".join(f"{fg} on {bg}: {r}:1 ('{t}', {w}, line {y})" for (fg, bg), (r, t, w, y) in found.items())
