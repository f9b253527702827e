"""Newcomer round 8: two users on one login node. User A names user B's run (by its path, or a
run directory B opened to others): one line that says whose run it is, exit 2, nothing read or
signalled. It had been ``RUN '/home/b/...': Permission denied`` (whose? is the path wrong?) for
a path into B's private runs directory, and for a run directory B made readable (its state.json
stays 0600: every write replaces it) `runs show` and `--json` exited 0 calling B's healthy run
DAMAGED ("state.json: Permission denied"). Real commands as a second real user (``runuser -u
nobody``): needs root (skipped otherwise, with the reason)."""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.console.conftest import write_run
from tests.rundir.test_other_users_runs import OTHER_PYTHON, OTHER_SKIP

pytestmark = pytest.mark.skipif(OTHER_PYTHON is None, reason=OTHER_SKIP)
ME = f"user {pwd.getpwuid(os.geteuid()).pw_name} (uid {os.geteuid()})"


def _as_other(base: Path, *args: str) -> subprocess.CompletedProcess:
    assert OTHER_PYTHON is not None
    return subprocess.run([*OTHER_PYTHON, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(base)],
                          capture_output=True, text=True, timeout=120, cwd="/")


def _one_line_refusal(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done
    assert done.stdout == "" and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done
    return done.stderr


def test_a_path_into_another_users_private_runs_directory_says_whose_it_is():
    home = Path(tempfile.mkdtemp(prefix="mcuserb-"))      # B's home: others may look, not enter .local
    other_base = Path(tempfile.mkdtemp(prefix="mcusera-"))  # A's own (empty) runs directory
    try:
        os.chmod(home, 0o755)
        private = home / ".local"
        runs = private / "share" / "moeconsole" / "runs"
        runs.mkdir(parents=True)
        os.chmod(private, 0o700)
        run = write_run(runs, "20240101-000000-mine-0001", status="running")
        os.chmod(other_base, 0o777)
        mine = other_base / "a"
        subprocess.run(["runuser", "-u", "nobody", "--", "mkdir", "-m", "700", str(mine)], check=True, timeout=30)
        for args in (("kill", str(run.path)), ("--json", "--once", str(run.path)), ("runs", "show", str(run.path)),
                     ("attach", str(run.path / "train.log"))):
            line = _one_line_refusal(_as_other(mine, *args))
            assert f"permission denied: {private} is {ME}'s and closed to you" in line, (args, line)
            assert "another user's run" not in line   # nothing proves a run behind it (review R70)
        assert run.read_state()["status"] == "running"
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(other_base, ignore_errors=True)


def test_a_run_directory_opened_to_others_is_not_theirs_to_read_as_damaged():
    base = Path(tempfile.mkdtemp(prefix="mcopen-"))
    try:
        os.chmod(base, 0o755)
        run = write_run(base, "20240101-000000-mine-0001", status="running")
        for path in [run.path, *run.path.rglob("*")]:   # `chmod -R go+rX` by its owner, to share it
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        os.chmod(run.state, 0o600)                      # as the runner's next write of it leaves it
        for args in (("runs", "show", run.run_id), ("--json", "--once", run.run_id), ("kill", run.run_id),
                     ("runs", "receipt", run.run_id)):
            line = _one_line_refusal(_as_other(base, *args))
            assert f"{run.run_id}: permission denied: owned by {ME}, not by you" in line, (args, line)
            assert "DAMAGED" not in line
        listed = json.loads(_as_other(base, "runs", "ls", "--json").stdout)["runs"][0]
        assert listed["status"] == "unreadable", listed
        assert json.loads(run.state.read_text())["status"] == "running"
    finally:
        shutil.rmtree(base, ignore_errors=True)
