"""Every screen's footer at 80 columns shows only whole keys: Textual's footer cut its row at
the edge, so the run screen with a zombie listed ended in ``c Chart`` (the next
key gone without a trace). The keys that do not fit are left out whole (they stay in the help and
keep working); at 160 columns every key is there."""
from __future__ import annotations

import asyncio

from moeconsole.console import keys
from tests.console.test_console_app import ZOMBIE, app_for, attached, judged, live_run, telemetry
from tests.waiting import until_ui


def _footer_line(app) -> str:
    return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()][-1]


def _whole(line: str) -> list[str]:
    """The run screen's footer labels ("k Kill") found whole in the line, in order."""
    labels = [f"{k.shown_key} {k.label}" for k in keys.RUN_KEYS if k.show]
    return sorted((label for label in labels if f" {label} " in f" {line} "), key=lambda lab: f" {line} ".index(f" {lab} "))


def _shown(base, run, size) -> tuple[str, list[str]]:
    async def go() -> tuple[str, list[str]]:
        app = app_for(base, run, telemetry=telemetry([judged(ZOMBIE)]))
        async with app.run_test(size=size) as pilot:
            screen = await attached(pilot)
            # the keys that apply: a zombie to end (no alert: `a` is not there)
            await until_ui(pilot, lambda: " z Zombie " in f" {_footer_line(app)} ",
                           what="z in the footer")
            await pilot.pause()
            line = _footer_line(app)
            return line, _whole(line)
    return asyncio.run(go())


def test_the_run_screen_footer_at_80_columns_shows_only_whole_keys(base, make_run):
    run = live_run(base, make_run, checkpoints=((20, True),))  # no alert
    line, whole = _shown(base, run, (80, 24))
    assert whole[:4] == ["k Kill", "r Restart", "v Verify", "z Zombie"], line
    # nothing but whole labels on the line: take them out and only spaces are left
    rest = f" {line} "
    for label in whole:
        rest = rest.replace(f" {label} ", "  ", 1)
    assert not rest.strip(), (rest, line)
    assert "q Detach" in whole, line  # the key to leave is never the one dropped

    line, whole = _shown(base, run, (160, 48))
    assert whole[-2:] == ["c Charts", "g GPUs"], line


def _blocker_title(base, run, size) -> str:
    async def go() -> str:
        app = app_for(base, run, telemetry=telemetry([judged(ZOMBIE)]))
        async with app.run_test(size=size) as pilot:
            await attached(pilot)

            def title() -> str:
                return next((line for line in [s.text.rstrip() for s in app.screen._compositor.render_strips()]
                             if "zombies / blockers: 1" in line), "")
            await until_ui(pilot, lambda: "(tab" in title(), what="the blockers title with its hint")
            await pilot.pause()
            return title()
    return asyncio.run(go())


def test_the_zombie_pane_title_says_how_to_end_one_whole_at_80_columns(base, make_run):
    """At 80 columns the zombie pane's title read "zombies / blockers: 1 (tab to select," (the pane
    is half the screen): the hint is said in the words that fit now."""
    run = live_run(base, make_run, checkpoints=((20, True),))
    narrow = _blocker_title(base, run, (80, 24))
    assert "zombies / blockers: 1 (tab, z ends)" in narrow, narrow
    wide = _blocker_title(base, run, (160, 48))
    assert "zombies / blockers: 1 (tab to select, z to end)" in wide, wide


def test_an_empty_browser_offers_only_the_keys_that_act(base, make_run):
    """No runs: the footer offers open-path, help, back and quit, not Mark, Compare, Filter or Sort (nothing to act on); once a run is there, they are offered. A filter that matched
    nothing keeps `/` to change it."""
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.browser import BrowserScreen
    from moeconsole.console.screens.dialogs import PromptScreen
    from moeconsole.runner.rundir import store

    import re
    dead = ("Mark", "Compare", "Filter", "Sort")

    async def go() -> None:
        app = MoeConsole(base, None, gpu=False, interval=0.2)
        async with app.run_test(size=(120, 30)) as pilot:
            browser = await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen,
                                     what="the browser")
            line = await until_ui(pilot, lambda: "no runs yet" in " ".join(
                s.text for s in app.screen._compositor.render_strips()) and "o Open path" in (f := _footer_line(app))
                and f, what="the empty browser")
            for label in dead:
                assert not re.search(rf"\b{label}\b", line), (label, line)
            assert "? Help" in line and "q Quit" in line, line
            make_run(base, status="succeeded")
            store.rebuild(base)      # the index learns of it (what `runs rebuild` does)
            await pilot.press("f5")   # reload: the run is listed, its keys come back
            line = await until_ui(pilot, lambda: browser.rows and "s Sort" in (f := _footer_line(app)) and f,
                                  what="the keys of a listed run")
            for label in dead:
                assert re.search(rf"\b{label}\b", line), (label, line)
            # a filter that matches nothing: / is still offered (to change it), the others are not
            await pilot.press("slash")
            await until_ui(pilot, lambda: isinstance(app.screen, PromptScreen), what="the filter prompt")
            await pilot.press(*"nothing-matches-this", "enter")
            line = await until_ui(pilot, lambda: app.screen is browser and not browser.rows
                                  and "s Sort" not in (f := _footer_line(app)) and f, what="the filtered-out list")
            assert "/ Filter" in line and " Mark " not in f" {line} ", line
    asyncio.run(go())


def test_a_60_column_pane_still_shows_how_to_leave_on_the_run_screen_and_in_the_browser(base, make_run):
    """A 60x20 pane (a split tmux window on someone else's cluster): the run screen's footer had
    "k Kill r Restart v Verify b Runs l Log ? Help g GPUs", the key to leave dropped for a later,
    shorter one. The way out and the help are kept first; the keys shown are still whole, in the
    tables' order. The run browser's footer (Textual's Footer) keeps ``q Quit`` too."""
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.browser import BrowserScreen

    run = live_run(base, make_run, checkpoints=((20, True),))
    line, whole = _shown(base, run, (60, 20))
    assert "q Detach" in whole and "? Help" in whole, line
    assert whole[:2] == ["k Kill", "r Restart"], line
    labels = [f"{k.shown_key} {k.label}" for k in keys.RUN_KEYS if k.show]
    assert whole == sorted(whole, key=labels.index), line   # in the table's order
    assert len(line) <= 60, line

    async def browser_footer() -> str:
        app = MoeConsole(base, None, gpu=False, interval=0.2)
        async with app.run_test(size=(40, 20)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.rows,
                           what="the browser with the run")
            await pilot.pause()
            return await until_ui(pilot, lambda: "Help" in (f := _footer_line(app)) and f, what="the browser footer")
    line = asyncio.run(browser_footer())
    assert "q Quit" in line and "? Help" in line, line


def test_escape_in_the_browser_says_back_only_where_there_is_a_screen_to_go_back_to(base, make_run):
    """The browser as the first screen (`moeconsole` with no live run) showed "esc Back", and Esc
    closed the console: there it is not offered as Back (q Quit is), and still closes the console.
    Opened from a run (`b`), "esc Back" is offered and goes back to the run."""
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.browser import BrowserScreen
    from moeconsole.console.screens.run import RunScreen

    run = make_run(base, status="succeeded")

    async def first() -> tuple[str, bool]:
        app = MoeConsole(base, None, gpu=False, interval=0.2)
        async with app.run_test(size=(120, 30)) as pilot:
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen) and app.screen.rows,
                           what="the browser with the run")
            line = await until_ui(pilot, lambda: "q Quit" in (f := _footer_line(app)) and f, what="the footer")
            await pilot.press("escape")
            await until_ui(pilot, lambda: not app.is_running, what="escape to close the console")
            return line, app.is_running

    line, running = asyncio.run(first())
    assert "esc Back" not in line and "q Quit" in line and not running, line

    async def from_a_run() -> str:
        app = app_for(base, run)
        async with app.run_test(size=(120, 30)) as pilot:
            await attached(pilot)
            await pilot.press("b")
            await until_ui(pilot, lambda: isinstance(app.screen, BrowserScreen), what="the browser")
            line = await until_ui(pilot, lambda: "esc Back" in (f := _footer_line(app)) and f,
                                  what="esc Back in the footer")
            await pilot.press("escape")
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen), what="escape back to the run")
            return line

    line = asyncio.run(from_a_run())
    assert "esc Back" in line and "q Quit" in line, line
