"""`moeconsole` started inside a run's own directories (the shell left in its output dir after
looking at a checkpoint): `.` there, or the run's train.log, means the run itself, not a
directory of someone else's logs to import (``attach .`` had opened the run's output dir as a
foreign log: an imported copy, no kill or restart keys). Real `moeconsole` processes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_dot_inside_a_runs_output_directory_is_the_run(base, make_run):
    run = make_run(base, status="running")
    out = run.path / "output" / "checkpoint-20"
    out.mkdir(parents=True)
    (run.path / "output" / "logging.jsonl").write_text('{"global_step/max_steps": "1/100", "loss": 2.0}\n')
    for where in (run.path / "output", out):
        snap = _cli(where, "--json", "--once", ".", "--runs-dir", str(base))
        assert snap.returncode == 0, snap.stderr
        assert json.loads(snap.stdout.splitlines()[0])["run"]["id"] == run.run_id
        # attach without a terminal names the run it would have opened (a foreign import names none)
        attach = _cli(where, "attach", ".", "--runs-dir", str(base))
        assert attach.returncode == 2 and f"(the run {run.run_id} goes on)" in attach.stderr, attach.stderr
    log = _cli(base, "attach", str(run.path / "train.log"), "--runs-dir", str(base))
    assert f"(the run {run.run_id} goes on)" in log.stderr, log.stderr


def test_a_users_own_directory_with_a_recipe_yaml_is_not_taken_for_a_run(base, tmp_path):
    """Only an ancestor named as a run id with a state.json is a run: a project directory that
    holds a recipe.yaml above the output dir still opens as logs to import."""
    project = tmp_path / "project"
    (project / "output").mkdir(parents=True)
    (project / "recipe.yaml").write_text("name: mine\n")
    (project / "output" / "logging.jsonl").write_text('{"global_step/max_steps": "1/100", "loss": 2.0}\n')
    attach = _cli(project / "output", "attach", ".", "--runs-dir", str(base))
    assert attach.returncode == 2 and "the console needs a terminal;" in attach.stderr, attach.stderr
