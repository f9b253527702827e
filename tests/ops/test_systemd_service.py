"""The systemd unit (verified by systemd-analyze) and the restart cycle it relies on, done for
real: `moeconsole service` becomes the runner, is SIGKILLed as a crash would, is started again
the way systemd would, adopts the live training, and never starts a finished run again."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from moeconsole.runner.ops.service import Candidate, choose
from tests.ops.ops_helpers import end, read_json, wait_for
from tests.runner.conftest import Harness

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    return env


def test_choose_supervises_the_live_run_and_never_restarts_a_finished_one():
    c = [Candidate("a", "t", "h1", "succeeded", 10.0), Candidate("b", "t", "h1", "running", 20.0),
         Candidate("c", "t", "h2", "running", 30.0), Candidate("d", "other", "h1", "running", 40.0)]
    assert choose(c, "t", "h1").action == "supervise" and choose(c, "t", "h1").run_id == "b"
    assert choose(c[:1], "t", "h1").action == "over"
    assert choose(c, "t", "h3").action == "new"        # a changed recipe is a new run


def _unit(h: Harness, recipe: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "systemd", str(recipe), "--runs-dir",
                           str(h.runs_dir), *extra], capture_output=True, text=True, timeout=60, env=_env(), cwd=REPO)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_unit_verifies_and_says_how_it_restarts(tmp_path, runs_dir):
    h = Harness(tmp_path, runs_dir)
    recipe = h.recipe(cooldown={"floor_s": 7.0, "ceiling_s": 30.0})
    proc = _unit(h, recipe, "--user")
    assert proc.returncode == 0, proc.stderr
    first, text = proc.stdout.split("\n", 1)
    assert first == "# moeconsole-t.service"
    unit = tmp_path / "moeconsole-t.service"
    unit.write_text(text)
    for line in ("Restart=always", "RestartSec=7", "KillMode=process", "RestartPreventExitStatus=0 2",
                 "WantedBy=default.target", f"Environment=MOECONSOLE_RUNS_DIR={runs_dir}"):
        assert line in text.splitlines(), line
    assert any(l.startswith("EnvironmentFile=-") and l.endswith("/moeconsole/t.env") for l in text.splitlines())
    exec_start = next(l for l in text.splitlines() if l.startswith("ExecStart="))
    assert exec_start.split()[1:3] == ["service", str(recipe)]
    check = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and check.stderr.strip() == "", check.stderr


def test_unit_refuses_paths_systemd_cannot_hold(tmp_path, runs_dir):
    h = Harness(tmp_path, runs_dir)
    spaced = tmp_path / "my recipes"
    spaced.mkdir()
    recipe = h.recipe()
    target = spaced / "r.yaml"
    target.write_text(recipe.read_text())
    proc = _unit(h, target)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "cannot be written into a unit" in proc.stderr


def _state(path: Path) -> dict:
    return read_json(path / "state.json") or {}


def _service(h: Harness, recipe: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "moeconsole.console.cli", "service", str(recipe), "--runs-dir",
                             str(h.runs_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), cwd=REPO)


def test_service_survives_a_runner_death_and_never_reruns_a_finished_run(tmp_path, runs_dir):
    h = Harness(tmp_path, runs_dir)
    recipe = h.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
                               "--max_steps", "30", "--save_steps", "10", "--step_delay", "0.15"])
    first = _service(h, recipe)
    try:
        run_path = wait_for(lambda: next(iter(runs_dir.iterdir()), None), 60, "the run directory")
        st = wait_for(lambda: (s := _state(run_path)).get("status") == "running" and (s.get("step") or 0) >= 2 and s,
                   180, "training steps")
        assert st["runner"]["pid"] == first.pid          # the service process became the runner (exec)
        leader = next(p for p in st["pids"] if p.get("role") == "leader")
        os.kill(first.pid, signal.SIGKILL)               # a runner death, as systemd would see it
        first.wait(timeout=30)
        os.kill(leader["pid"], 0)                        # training goes on without a runner
    finally:
        end(first)

    second = _service(h, recipe)                         # systemd's Restart=always
    try:
        wait_for(lambda: _state(run_path).get("runner", {}).get("pid") == second.pid, 60, "the new runner")
        assert second.wait(timeout=240) == 0             # the run ended; the runner exits 0: no restart
    finally:
        end(second)
    st = _state(run_path)
    assert st["status"] == "succeeded" and st["attempt"] == 1   # adopted, not relaunched
    assert [p.name for p in runs_dir.iterdir() if p.is_dir()] == [run_path.name]

    third = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "service", str(recipe), "--runs-dir",
                            str(runs_dir)], capture_output=True, text=True, timeout=60, env=_env(), cwd=REPO)
    assert third.returncode == 0 and "run is over (succeeded)" in third.stdout
    assert [p.name for p in runs_dir.iterdir() if p.is_dir()] == [run_path.name]
