"""The fifth newcomer round (README only, tmux at 80x24 over SSH, a machine nobody set up): what
each screen and command said that misled them, as they met it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, columns: int = 80) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": str(columns)}
    return subprocess.run([sys.executable, "-m", "moeconsole", *args], capture_output=True, text=True,
                          cwd=REPO, timeout=120, env=env)


@pytest.mark.parametrize("columns", [80, 60])
@pytest.mark.parametrize("argv", [("--help",), ("help",), ("run", "--help")])
def test_help_fits_the_terminal_and_wraps_at_words(argv, columns):
    """`moeconsole --help` at 80 columns printed the command list unwrapped ("attach" 129
    characters, `run --help`'s usage 86): tmux broke them mid-word ("trai" / "ning log") at the
    left edge. Every line fits; a long command line goes on under its own text."""
    out = cli(*argv, columns=columns)
    assert out.returncode == 0, out.stderr
    too_wide = [line for line in out.stdout.splitlines() if len(line) > columns]
    assert not too_wide, "\n".join(too_wide)
    if argv != ("run", "--help"):
        text = out.stdout
        at = text.index("\n  attach ")
        block = text[at + 1:text.index("\n  kill ", at)].splitlines()
        assert len(block) >= 2 and all(line.startswith(" " * 14) for line in block[1:]), block
        assert "training log" in " ".join(line.strip() for line in block), block


def test_help_says_what_the_marks_on_the_charts_are(base, make_run):
    """At 80x24 every chart's x axis carried `C`s, and `R` with a dashed line after a restart;
    `?` listed every key but no word on the marks (only docs/console.md had it). The help now has
    a "Chart marks" section after the run screen's keys, one row a mark."""
    import asyncio

    from tests.console.test_console_app import _screen_text, app_for, attached
    from tests.waiting import until_ui
    from moeconsole.console.screens.dialogs import HelpScreen
    run = make_run(base, status="succeeded")

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=(80, 24)) as pilot:
            await attached(pilot)
            await pilot.press("question_mark")
            await until_ui(pilot, lambda: isinstance(app.screen, HelpScreen))
            for _ in range(40):
                if "Chart marks" in _screen_text(app):
                    break
                await pilot.press("pagedown")
                await pilot.pause()
            await until_ui(pilot, lambda: "Chart marks" in _screen_text(app), what="the chart marks in the help")
            def help_words() -> str:   # the dialog's text without its borders, wrapped rows joined
                return " ".join(_screen_text(app).replace("│", " ").split())
            text = await until_ui(pilot, lambda: "C On the x axis: a checkpoint" in (t := help_words()) and t,
                                  what="the checkpoint mark's row")
            assert "Chart marks" in text, text
    asyncio.run(go())
