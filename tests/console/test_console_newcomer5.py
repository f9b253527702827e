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
