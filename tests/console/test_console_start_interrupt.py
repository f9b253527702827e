"""Ctrl-C while `moeconsole run` makes the run and starts its runner: the key is held back until
the runner is started (never a run directory without its runner), then the command says the run
was started and goes on, with the commands to stop or watch it (exit 130), as it does for a
Ctrl-C while the runner gets ready. A real SIGINT to this process, a real runner, ended by
`moeconsole kill` and waited for by its PID."""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from moeconsole.console.commands import run as run_cmd
from moeconsole.runner.process import launch
from moeconsole.runner.rundir import rundir
from tests.waiting import until

REPO = Path(__file__).resolve().parents[2]


def test_ctrl_c_while_the_runner_is_started_says_the_run_goes_on(base, tmp_path, monkeypatch, capsys):
    recipe = tmp_path / "sleeper.yaml"
    recipe.write_text('name: sleeper\ncommand: ["{python}", "-c", "import time; time.sleep(600)"]\n'
                      'kill: {grace_s: 3}\n')
    spawn = launch.spawn_runner
    started: list[int] = []

    def spawn_then_ctrl_c(run):   # the key pressed just as the runner is started
        pid = spawn(run)
        started.append(pid)
        os.kill(os.getpid(), signal.SIGINT)
        return pid
    monkeypatch.setattr(launch, "spawn_runner", spawn_then_ctrl_c)
    args = argparse.Namespace(recipe=str(recipe), overrides=[], runs_dir=str(base), name=None, allow_drift=False,
                              detach=True)
    try:
        try:
            code = run_cmd.run(args)
        except KeyboardInterrupt:
            code = None   # out of the command unsaid: the cli's bare exit 130
        err = capsys.readouterr().err
        runs = rundir.list_run_dirs(base)
        assert len(runs) == 1 and started, (runs, started)
        run_id = runs[0].run_id
        assert code == 130, (code, err)
        assert f"run {run_id} was started and goes on under its runner" in err, err
        assert f"`moeconsole kill {run_id}` stops it" in err, err
        until(lambda: runs[0].read_state().get("status") == "running", timeout=60, what="the run running")
    finally:
        for pid in started:
            if psutil.pid_exists(pid):
                for run in rundir.list_run_dirs(base):
                    # the training started (the kill then ends it too), however the command ended
                    until(lambda: run.read_state().get("status") != "starting" or not psutil.pid_exists(pid),
                          timeout=120, what="the run past its start")
                    subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "kill", run.run_id, "--runs-dir",
                                    str(base)], cwd=REPO, capture_output=True, timeout=120,
                                   env={**os.environ, "PYTHONPATH": str(REPO)})
                proc = psutil.Process(pid)
                try:
                    proc.wait(timeout=60)
                except psutil.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=30)
