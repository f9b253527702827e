"""Text that is not UTF-8 on a machine that is not a clean test box: a latin-1 directory name
(``/data/m\\xfcller``), a run name or a ``--set`` value typed in a latin-1 terminal. Python hands
such bytes over as lone surrogates, which no JSON or SQLite record of the run can hold. Each was a
traceback (and a run directory left UNREADABLE, or a runner that died at its first state write,
or a run ``runs ls`` never listed); each is now one line naming the text and the byte, exit 2,
and nothing made. Through the real CLI and, for the checkpoint directory, the real runner."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.runner.conftest import REPO

LATIN1 = os.fsdecode(b"m\xfcller")   # what a latin-1 terminal or file name gives Python


def _cli(harness, *args: str, runs_dir, cwd=REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(runs_dir)],
                          capture_output=True, text=True, errors="backslashreplace", timeout=120, env=env, cwd=cwd)


def _run_dirs(base) -> list[str]:
    return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


@pytest.mark.parametrize("args, named", [
    (["--name", LATIN1], "run name"),
    (["--set", f"kill.grace_s={LATIN1}"], "--set"),
    (["--set", f"checkpoints.dir=/data/{LATIN1}"], "--set"),
])
def test_a_name_or_value_that_is_not_utf8_is_one_line_and_makes_nothing(harness, runs_dir, args, named):
    out = _cli(harness, "run", str(harness.recipe()), "--detach", *args, runs_dir=runs_dir)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    line = [l for l in out.stderr.splitlines() if l.startswith("moeconsole:")]
    assert len(line) == 1 and named in line[0] and "not UTF-8" in line[0] and "0xfc" in line[0], out.stderr
    assert _run_dirs(runs_dir) == [], "a run directory was left behind"


def test_a_runs_directory_whose_path_is_not_utf8_is_refused_before_a_run_is_made(harness, tmp_path):
    """A run made there had no row in the index (`runs ls` said "no runs"), and with its saves
    under ``{run_dir}`` its runner died writing state.json."""
    base = tmp_path / LATIN1 / "runs"
    out = _cli(harness, "run", str(harness.recipe()), "--detach", runs_dir=base)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and "runs directory" in out.stderr and "not UTF-8" in out.stderr, out.stderr
    assert _run_dirs(base) == []


def test_a_checkpoint_directory_under_a_cwd_that_is_not_utf8_is_said_by_the_runner(harness, runs_dir, tmp_path):
    """A relative checkpoint directory is resolved by the runner against the command's working
    directory: its runner had died at its first state write with a UnicodeEncodeError, and `run`
    quoted the traceback's last lines. The runner refuses in one line, the run ends FAILED with
    that reason."""
    where = tmp_path / LATIN1
    where.mkdir()
    out = _cli(harness, "run", str(harness.recipe()), "--detach", "--set", "checkpoints.dir=out",
               runs_dir=runs_dir, cwd=where)
    assert out.returncode != 0, out.stderr
    assert "Traceback" not in out.stderr and "UnicodeEncodeError" not in out.stderr, out.stderr
    assert "checkpoint directory" in out.stderr and "not UTF-8" in out.stderr, out.stderr
    from tests.runner.conftest import Run
    (run_id,) = _run_dirs(runs_dir)
    st = Run(runs_dir / run_id).state()
    assert st["status"] == "failed" and "not UTF-8" in st["last_crash"]["summary"], st


def test_runs_under_a_path_that_became_not_utf8_are_still_listed(harness, tmp_path):
    """Runs made in a UTF-8 directory, which was then renamed (or is reached through a mount) with
    a latin-1 name: `runs ls` rebuilt the index and ended in a UnicodeEncodeError traceback (the
    path column); a live runner's index row failed the same way, so the browser had no row. The
    path is kept out of the index (the run's directory under the base) and every run listed."""
    first = tmp_path / "first"
    first.mkdir()
    made = _cli(harness, "run", str(harness.recipe(command=["{python}", "-c", "print('done')"],
                                                  checkpoints={"dir": None}, resume={"arg": None})),
                "--detach", runs_dir=first)
    run_id = made.stdout.strip().splitlines()[0]
    from tests.runner.conftest import Run
    Run(first / run_id).wait_status("succeeded", "failed", "unsaved", timeout=60)
    moved = tmp_path / LATIN1
    os.rename(first, moved)
    (moved / "index.sqlite").unlink()
    for _ in range(2):   # rebuilt, then read from the index
        out = _cli(harness, "runs", "ls", "--json", runs_dir=moved)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        import json
        rows = json.loads(out.stdout)["runs"]
        assert [r["id"] for r in rows] == [run_id], rows
        assert rows[0]["status"] in ("succeeded", "unsaved"), rows
