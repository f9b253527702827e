"""The tenth newcomer round (README only, a fresh clone, tmux): `make demo`, then `q`. The console
said "`moeconsole attach cc20` watches it"; the newcomer typed that and their shell answered
`moeconsole: command not found` (make ran `.venv/bin/moeconsole`; nothing had put it on PATH).
Every line that names the next commands now says, when the shell's `moeconsole` is not this one,
how to reach it: the venv's activate script, or the script's own path."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from moeconsole.console import own_command

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(own_command.beside() is None,
                                reason="the tests' interpreter has no moeconsole script beside it (not the project's venv)")


def start(runs_dir: Path, path: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": path, "MOECONSOLE_RUNS_DIR": str(runs_dir), "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "moeconsole", "run", "--detach", "--", sys.executable, "-c",
                           "print('step 1 loss 2.0')"], capture_output=True, text=True, cwd=REPO, env=env, timeout=180)


def test_a_shell_without_the_venv_on_path_is_told_how_to_reach_this_moeconsole(runs_dir):
    out = start(runs_dir, "/usr/bin:/bin")
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert any("`moeconsole " in line for line in lines[:-1]), out.stderr   # it named a next command
    own = own_command.beside()
    # as typed from the checkout: relative under it (a clone's own .venv), else absolute (a venv elsewhere)
    rel = os.path.relpath(own, REPO) if own.absolute().is_relative_to(REPO) else str(own)
    assert lines[-1] == (f"(`moeconsole` is not on this shell's PATH: run `. {os.path.dirname(rel)}/activate` "
                         f"first, or type `{rel}`)"), out.stderr


def test_a_shell_that_finds_this_moeconsole_gets_no_note(runs_dir):
    out = start(runs_dir, f"{own_command.beside().parent}:/usr/bin:/bin")
    assert out.returncode == 0, out.stderr
    assert "PATH" not in out.stderr and "another install" not in out.stderr, out.stderr
    assert "`moeconsole " in out.stderr, out.stderr


def test_a_shell_whose_moeconsole_is_another_install_is_told_which(runs_dir, tmp_path):
    other = tmp_path / "bin" / "moeconsole"
    other.parent.mkdir()
    other.write_text("#!/bin/sh\necho an older moeconsole\n")
    other.chmod(other.stat().st_mode | stat.S_IXUSR)
    out = start(runs_dir, f"{other.parent}:/usr/bin:/bin")
    assert out.returncode == 0, out.stderr
    last = out.stderr.splitlines()[-1]
    assert last.startswith(f"(`moeconsole` here is another install's, {other}: run `. ") and "activate` first" in last, out.stderr
