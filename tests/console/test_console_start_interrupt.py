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
import pytest

from moeconsole.console.commands import run as run_cmd
from moeconsole.console.format import run_words
from moeconsole.runner.process import launch
from moeconsole.runner.rundir import rundir
from tests.waiting import until

REPO = Path(__file__).resolve().parents[2]


def _kill_runs(runs: list, base) -> None:
    """``moeconsole kill`` each run, then wait for its runner to end."""
    for run in runs:
        runner = (run.read_state().get("runner") or {}).get("pid")
        subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "kill", run.run_id, "--runs-dir",
                        str(base)], cwd=REPO, capture_output=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(REPO)})
        if runner:
            _end_runner(runner)


def _end_runner(pid: int) -> None:
    """Wait for a runner the kill ended (SIGKILL after a minute); one already gone is no error."""
    try:
        proc = psutil.Process(pid)
        try:
            proc.wait(timeout=60)
        except psutil.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
    except psutil.NoSuchProcess:
        pass


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
        short = rundir.short_ref(base, run_id)   # a run outside the default runs directory: its commands name it
        assert f"{run_words(short, run_id)} was started and goes on under its runner" in err, err
        assert f"`moeconsole kill {short} --runs-dir {base}` stops it" in err, err
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
                _end_runner(pid)


def test_run_detach_inside_tmux_asks_tmux_nothing(base, tmp_path):
    """`run --detach` opens no console, so nothing asks tmux how its clients take UTF-8 (the
    question, a process of its own, is for the console's terminal driver: ``glyphs.ask_tmux_early``).
    A `tmux` on PATH that notes each call; the run it starts is ended by `moeconsole kill`."""
    bin_dir, asked = tmp_path / "bin", tmp_path / "asked"
    bin_dir.mkdir()
    (bin_dir / "tmux").write_text(f"#!/bin/sh\necho \"$@\" >> {asked}\necho 1\n")
    (bin_dir / "tmux").chmod(0o755)
    recipe = tmp_path / "sleeper.yaml"
    recipe.write_text('name: sleeper\ncommand: ["{python}", "-c", "import time; time.sleep(600)"]\n'
                      'kill: {grace_s: 3}\n')
    env = {**os.environ, "PYTHONPATH": str(REPO), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "TMUX": "/nowhere/tmux-0/default,1,0", "TMUX_PANE": "%0"}
    env.pop("MOECONSOLE_ASCII", None)
    done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "run", str(recipe), "--detach",
                           "--runs-dir", str(base)], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    runs = rundir.list_run_dirs(base)
    try:
        assert done.returncode == 0, done.stderr
        assert len(runs) == 1 and runs[0].run_id in done.stdout, done.stdout
        assert not asked.exists(), asked.read_text()
    finally:
        _kill_runs(runs, base)


# `moeconsole run`, ended by a signal the moment its run directory is made and before its runner
# is started: the signal is sent by the process to itself from inside ``create_run`` (a wrapper
# that calls the real one, then signals), the one moment a kill could leave a run without runner.
SIGNALLED_START = """
import os, signal, sys
from moeconsole.runner.process import launch
from moeconsole.console import cli
real = launch.create_run
def create_then_signal(*a, **kw):
    run = real(*a, **kw)
    os.kill(os.getpid(), signal.{sig})
    return run
launch.create_run = create_then_signal
sys.exit(cli.main(["run", sys.argv[1], "--detach", "--runs-dir", sys.argv[2]]))
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_sigterm_or_hangup_while_the_run_is_made_leaves_no_run_without_its_runner(base, tmp_path, sig):
    """`kill PID` of `moeconsole run`, or its SSH connection dropped, just after the run directory
    was made: the command used to die there, leaving a run STARTING for good with no runner and
    no training (`runs ls` said STARTING forever). The signal is held until the runner is
    started: the run trains, the command says it goes on and exits as the signal says (128+n)."""
    recipe = tmp_path / "sleeper.yaml"
    recipe.write_text('name: sleeper\ncommand: ["{python}", "-c", "import time; time.sleep(600)"]\n'
                      'kill: {grace_s: 3}\n')
    num = int(getattr(signal, sig))
    done = subprocess.run([sys.executable, "-c", SIGNALLED_START.format(sig=sig), str(recipe), str(base)], cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)
    runs = rundir.list_run_dirs(base)
    try:
        assert len(runs) == 1, runs
        run_id = runs[0].run_id
        assert done.returncode == 128 + num, (done.returncode, done.stderr)
        short = rundir.short_ref(base, run_id)   # ``rundir.short_refs``: the suffix, or the name's end with it
        assert f"{run_words(short, run_id)} was started and goes on under its runner" \
            in done.stderr, \
            done.stderr
        until(lambda: runs[0].read_state().get("status") == "running", timeout=60,
              what=f"the run running under its runner after {sig} (it stayed {runs[0].read_state().get('status')})")
    finally:
        _kill_runs(runs, base)
