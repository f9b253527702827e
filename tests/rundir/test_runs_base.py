"""Where runs live on a machine set up by someone else: a relative $XDG_DATA_HOME (invalid in the
XDG Base Directory spec) or an empty or relative $HOME must not put the runs under whatever the
working directory is (`moeconsole run` in one directory and `moeconsole` in another then did not
find the run). Real `moeconsole runs ls` processes from two working directories."""
from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _runs_ls(cwd: Path, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k not in ("MOECONSOLE_RUNS_DIR", "XDG_DATA_HOME", "HOME")}
    environ.update(env, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "runs", "ls"], cwd=cwd, env=environ,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("xdg", ["data", "./data", ""])
def test_a_relative_xdg_data_home_is_ignored_so_every_directory_finds_the_same_runs(tmp_path, xdg):
    home = tmp_path / "home"
    home.mkdir()
    where = []
    for name in ("a", "b"):
        cwd = tmp_path / name
        cwd.mkdir()
        done = _runs_ls(cwd, HOME=str(home), XDG_DATA_HOME=xdg)
        assert done.returncode == 0 and "Traceback" not in done.stderr, done
        where.append(done.stdout)
        assert not list(cwd.iterdir()), f"runs ls wrote under the working directory: {list(cwd.iterdir())}"
    assert where[0] == where[1], where
    assert f"no runs under {home}/.local/share/moeconsole/runs" in where[0], where[0]


@pytest.mark.parametrize("bad_home", ["", "relhome"])
def test_an_empty_or_relative_home_falls_back_to_the_users_home_directory(tmp_path, bad_home):
    done = _runs_ls(tmp_path, HOME=bad_home)
    own = pwd.getpwuid(os.getuid()).pw_dir
    assert done.returncode == 0, done
    if "no runs under" in done.stdout:   # else the user's own runs are listed (a table)
        assert f"no runs under {Path(own) / '.local/share/moeconsole/runs'}" in done.stdout, done
    assert "no runs under /.local" not in done.stdout and "relhome" not in done.stdout, done
    assert not list(tmp_path.iterdir()), list(tmp_path.iterdir())
