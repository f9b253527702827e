"""A FAILED run opened in the console (from the browser, or `attach`) left a newcomer without the
next action: the footer has no `r` (nothing supervises an ended run) and nothing said how to run
it again. The banner under the status line says it now, on one line at 80 columns (an UNSAVED
run, whose result no verified checkpoint holds, the same with --force, which a finished run needs);
a run that succeeded or was killed gets no banner."""
from __future__ import annotations

import asyncio

from textual.widgets import Static

from moeconsole.console.screens.run import RunScreen
from tests.console.test_console_app import app_for, attached, telemetry
from tests.waiting import until_ui


def _screen_lines(base, run, size=(80, 24)) -> tuple[list[str], bool]:
    async def go() -> tuple[list[str], bool]:
        app = app_for(base, run, telemetry=telemetry())
        async with app.run_test(size=size) as pilot:
            screen = await attached(pilot)
            polls = screen.polls
            await until_ui(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen.polls > polls,
                           what="a poll drawn")
            await pilot.pause()
            banner = screen.query_one("#runner-gone", Static).display
            return [strip.text.rstrip() for strip in app.screen._compositor.render_strips()], banner
    return asyncio.run(go())


def _typed(base, run) -> str:
    """The run as the banner names it, as its r does (``rundir.command_ref``, reviewed R51)."""
    from moeconsole.runner.rundir.rundir import command_ref
    return command_ref(base, run.run_id)[1]


def test_a_failed_run_says_how_to_run_it_again_on_one_line_at_80_columns(base, make_run, monkeypatch):
    monkeypatch.setenv("MOECONSOLE_RUNS_DIR", str(base))   # the runs where a bare command looks: no --runs-dir
    run = make_run(base, "20240103-000000-qwen3-moe-lora-0003", name="qwen3-moe-lora", status="failed",
                   steps=30, crash={"class": "nccl_error", "summary": "NCCL watchdog timeout"})
    lines, banner = _screen_lines(base, run)
    assert banner
    want = f"next: the fix (d), then moeconsole restart {_typed(base, run)}"
    assert any(line.strip() == want for line in lines), lines  # whole, on one line


def test_a_run_that_succeeded_or_was_killed_has_no_banner(base, make_run):
    for run_id, status in (("20240101-000000-ok-0001", "succeeded"), ("20240102-000000-gone-0002", "killed")):
        run = make_run(base, run_id, name=status, status=status, steps=20, restart_at=None)
        lines, banner = _screen_lines(base, run)
        assert not banner and not any("moeconsole restart" in line for line in lines), (status, lines)


def test_an_unsaved_run_says_how_to_train_it_again_into_a_saved_checkpoint(base, make_run, monkeypatch):
    monkeypatch.setenv("MOECONSOLE_RUNS_DIR", str(base))
    run = make_run(base, "20240104-000000-qwen3-moe-lora-0004", name="qwen3-moe-lora", status="unsaved",
                   steps=60, max_steps=60, restart_at=None, checkpoints=((40, False),))
    lines, banner = _screen_lines(base, run)
    assert banner
    want = f"next: d, then moeconsole restart --force {_typed(base, run)}"
    assert any(line.strip() == want for line in lines), "\n".join(lines[:6])
