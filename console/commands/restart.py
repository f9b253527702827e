"""``moeconsole restart RUN [--now] [--force]``: clean kill, cool down, restart from the newest good
checkpoint. A run that finished (succeeded, or unsaved) is restarted only with ``--force``: the
refusal says what the restart would do."""
from __future__ import annotations

import sys
import time

from moeconsole.console.commands.kill import ensure_runner, goes_on
from moeconsole.runner.process import launch
from moeconsole.runner.supervisor import control
from moeconsole.runner.rundir import rundir
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.rundir.paths import runs_base


def run(args) -> int:
    run = rundir.check_owned(rundir.resolve(runs_base(args.runs_dir), args.run))
    state = ensure_runner(run)
    before = int(state.get("attempt") or 0)
    status = state.get("status")
    if status in rundir.FINISHED and not getattr(args, "force", False):
        raise InputError(f"{run.run_id} already {status}: restarting it would {launch.restart_plan(run, state)}; "
                         f"`moeconsole restart {run.run_id} --force` does that")
    if status in rundir.TERMINAL:
        sys.stderr.write(f"{run.run_id} is {status}: restarting will {launch.restart_plan(run, state)}\n")
    if status in rundir.TERMINAL or not launch.runner_alive(run, state):
        pid = launch.spawn_runner(run, restart=True)
        launch.wait_ready(run, pid)
        sys.stderr.write(f"{run.run_id}: new runner started for the next attempt\n")
    else:
        answer = launch.request(run, control.Restart(now=bool(args.now), by="cli"))
        sys.stderr.write(f"{run.run_id}: {answer.text or None}\n")
        if not answer.ok:
            return 1
    try:
        return _wait_for_attempt(run, before)
    except KeyboardInterrupt:
        return goes_on(run.run_id, "restart")


def _wait_for_attempt(run: rundir.RunDir, before: int) -> int:
    deadline = time.time() + 600
    while time.time() < deadline:
        state = run.read_state()
        if int(state.get("attempt") or 0) > before and state.get("status") == rundir.RUNNING:
            print(f"{run.run_id}: attempt {state['attempt']} running"
                  + (f", resumed from {state['resumed_from']}" if state.get("resumed_from") else ""))
            from moeconsole.console.format import watch_words
            sys.stderr.write(f"{run.run_id}: {watch_words(run.run_id)}\n")   # the next step
            return 0
        if state.get("status") in rundir.TERMINAL and int(state.get("attempt") or 0) > before:
            break
        if not launch.runner_alive(run, state):
            break
        time.sleep(0.1)
    state = run.read_state()
    print(f"{run.run_id}: {state.get('status')} (attempt {state.get('attempt')})")
    return 1
