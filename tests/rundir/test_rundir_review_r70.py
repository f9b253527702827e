"""R70: `closed_by`/`not_yours` call things "another user's run" that are no run of anybody's, or
this user's own run. As a second real user (runuser -u nobody), like tests/rundir/test_newcomer8_users.py."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.console.conftest import write_run
from tests.rundir.test_other_users_runs import OTHER_PYTHON, OTHER_SKIP

pytestmark = pytest.mark.skipif(OTHER_PYTHON is None, reason=OTHER_SKIP)


def _as_other(cwd: str, *args: str) -> subprocess.CompletedProcess:
    assert OTHER_PYTHON is not None
    return subprocess.run([*OTHER_PYTHON, "-m", "moeconsole.console.cli", *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd)


@pytest.fixture
def place():
    top = Path(tempfile.mkdtemp(prefix="r70u-"))
    os.chmod(top, 0o755)
    try:
        yield top
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _own_runs(top: Path) -> Path:
    """nobody's own runs directory, with one live run of theirs named `mine`."""
    base = top / "nb" / "runs"
    base.mkdir(parents=True)
    write_run(base, "20240101-000000-mine-0001", status="running")
    subprocess.run(["chown", "-R", "nobody", str(top / "nb")], check=True)
    os.chmod(top / "nb", 0o700)
    os.chmod(base, 0o700)
    return base


def test_a_log_in_a_private_directory_is_not_called_a_run(place):
    priv = place / "rootpriv"
    priv.mkdir(mode=0o700)
    (priv / "train.log").write_text("step 1 loss 1.0\n")
    done = _as_other("/", "parse", str(priv / "train.log"))
    print(done.stderr)
    assert done.returncode == 2
    assert "another user's run" not in done.stderr, done.stderr


def test_ones_own_run_named_from_a_directory_one_may_not_enter_is_not_anothers(place):
    """`sudo -u alice moeconsole kill mine` typed in /root: alice's own run, by its name."""
    base = _own_runs(place)
    cwd = place / "rootpriv"
    cwd.mkdir(mode=0o700)
    for args in (("runs", "show", "mine"), ("--json", "--once", "mine"), ("kill", "mine")):
        done = _as_other(str(cwd), *args, "--runs-dir", str(base))
        print(args, done.returncode, done.stderr)
        assert "another user's run" not in done.stderr, (args, done.stderr)
        assert "permission denied" not in done.stderr, (args, done.stderr)   # it is found, as from /
    shown = _as_other(str(cwd), "runs", "show", "mine", "--runs-dir", str(base))
    assert shown.returncode == 0 and "20240101-000000-mine-0001" in shown.stdout, shown


def test_a_directory_root_made_inside_ones_own_run_does_not_make_it_anothers(place):
    """A training in a container as root wrote its output directory 0700 into the user's run."""
    base = _own_runs(place)
    run = base / "20240101-000000-mine-0001"
    out = run / "output" / "docker"
    out.mkdir(parents=True)     # root's, as Docker leaves it
    os.chmod(out, 0o700)
    (out / "train.log").write_text("step 1 loss 1.0\n")
    done = _as_other("/", "attach", str(out / "train.log"), "--runs-dir", str(base))
    print(done.stderr)
    assert "another user's run" not in done.stderr, done.stderr
