"""The key footer of the run screen and the GPU view (``widgets/keybar.py``: one widget for all
the keys, where Textual's Footer has one per key): what it draws, what it dims, and a click on
a key presses it. Real apps via Pilot."""
from __future__ import annotations

import asyncio

from moeconsole.console.screens.dialogs import ConfirmScreen, HelpScreen
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.keybar import KeyBar
from tests.console.test_console_app import _screen_text, app_for, attached, live_run, telemetry
from tests.waiting import until_ui


def _x_of(bar: KeyBar, key: str) -> int:
    """The column of a key's label on the bar (its key display, e.g. ``k`` or ``?``)."""
    text = "".join(piece for line in bar.lines for piece, _style in line)
    return text.index(f" {key} ") + 1


def _style_at(bar: KeyBar, x: int):
    strip = bar.render_line(0)
    at = 0
    for seg in strip:
        if at <= x < at + len(seg.text):
            return seg.style
        at += len(seg.text)
    raise AssertionError(f"nothing drawn at column {x}")


def test_the_bar_draws_the_keys_that_apply_and_dims_the_others(base, make_run, fake_runner):
    """Read-only: kill, restart and zombie keys are shown dimmed, the others as they are; the
    bar's keys are the screen's bindings (one per action, in their order)."""
    run = live_run(base, make_run)
    fake_runner(run)

    async def go():
        app = app_for(base, run, readonly=True, telemetry=telemetry())
        async with app.run_test(size=(160, 30)) as pilot:
            screen = await attached(pilot)
            bar = await until_ui(pilot, lambda: screen.query(KeyBar) and screen.query_one(KeyBar).keys
                                 and screen.query_one(KeyBar), what="the key bar")
            await pilot.pause()
            drawn = {shown: enabled for shown, _label, enabled in bar.keys}
            assert drawn["k"] is False and drawn["r"] is False
            assert drawn["q"] and drawn["l"] and drawn["?"]
            text = _screen_text(app)
            assert "k Kill" in text and "q Detach" in text and "? Help" in text
            assert _style_at(bar, _x_of(bar, "k")).dim
            assert not _style_at(bar, _x_of(bar, "q")).dim
            # a key that is off is struck through too: dim is only a shade under NO_COLOR or 8 colours
            # (Textual blends it into the colour), the one sign a newcomer with --readonly had
            assert _style_at(bar, _x_of(bar, "k") + 2).strike    # "Kill"
            assert not _style_at(bar, _x_of(bar, "q") + 2).strike   # "Detach"
            assert _style_at(bar, _x_of(bar, "q")).bold
    asyncio.run(go())


def test_a_click_on_a_key_presses_it_and_a_dimmed_key_rings_the_bell(base, make_run, fake_runner):
    run = live_run(base, make_run)
    fake_runner(run)

    async def go():
        app = app_for(base, run, readonly=True, telemetry=telemetry())
        bells: list[int] = []
        app.bell = lambda: bells.append(1)   # type: ignore[method-assign]
        async with app.run_test(size=(160, 30)) as pilot:
            screen = await attached(pilot)
            bar = await until_ui(pilot, lambda: screen.query(KeyBar) and screen.query_one(KeyBar).keys
                                 and screen.query_one(KeyBar), what="the key bar")
            await pilot.pause()
            assert await pilot.click(KeyBar, offset=(_x_of(bar, "k"), 0))
            await until_ui(pilot, lambda: bells, what="the bell of a key that does not apply")
            assert isinstance(app.screen, RunScreen) and not isinstance(app.screen, ConfirmScreen)
            assert await pilot.click(KeyBar, offset=(_x_of(bar, "?"), 0))
            await until_ui(pilot, lambda: isinstance(app.screen, HelpScreen), what="the help opened by a click")
    asyncio.run(go())


def test_the_gpu_view_has_its_own_keys(base, make_run, fake_runner):
    """``g`` opens the GPU view (imported at the key press); its bar shows its keys, and ``q``
    there goes back to the run."""
    run = live_run(base, make_run)
    fake_runner(run)

    async def go():
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(160, 30)) as pilot:
            screen = await attached(pilot)
            await pilot.press("g")
            await until_ui(pilot, lambda: type(app.screen).__name__ == "GpuScreen", what="the GPU view")
            bar = await until_ui(pilot, lambda: app.screen.query_one(KeyBar).keys and app.screen.query_one(KeyBar),
                                 what="the GPU view's key bar")
            assert [(shown, label) for shown, label, _on in bar.keys] == [("?", "Help"), ("q", "Back")]
            await until_ui(pilot, lambda: "q Back" in _screen_text(app), what="the keys drawn")
            await pilot.press("q")
            await until_ui(pilot, lambda: app.screen is screen, what="back to the run")
    asyncio.run(go())


def test_q_says_quit_on_an_ended_run_and_detach_on_a_live_one(base, make_run, fake_runner):
    """Nothing is attached to on a run that is over: both footers read the one key table, whose
    ``q`` is Detach while the run is live and Quit once it ended (succeeded, failed, killed); q
    then closes the console."""
    live = live_run(base, make_run, run_id="20240101-000000-live-0001")
    fake_runner(live)
    ended = {status: make_run(base, f"20240101-00000{i}-{status}-0001", status=status)
             for i, status in enumerate(("succeeded", "failed", "killed"), start=1)}

    async def labels(run) -> tuple[dict[str, str], str]:
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=(120, 30)) as pilot:
            screen = await attached(pilot)
            shown = await until_ui(pilot, lambda: (bar := screen.query(KeyBar)) and "q" in
                                   (keys := {k: label for k, label, _on in bar.first().keys}) and "b" in keys
                                   and screen.snapshot is not None and keys, what="the key bar")
            text = _screen_text(app)
            await pilot.press("q")
            await until_ui(pilot, lambda: not app.is_running, what="q to close the console")
        return shown, text

    shown, text = asyncio.run(labels(live))
    assert shown["q"] == "Detach" and "q Detach" in text and "q Quit" not in text
    for status, run in ended.items():
        shown, text = asyncio.run(labels(run))
        assert shown["q"] == "Quit", (status, shown)
        assert "q Quit" in text and "Detach" not in text, status
