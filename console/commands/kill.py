"""``moeconsole kill RUN``: clean kill through the runner (SIGTERM, grace, SIGKILL), no restart."""
from __future__ import annotations

import sys

from runner.process import launch
from runner.rundir import rundir
from runner.rundir.paths import runs_base


def ensure_runner(run: rundir.RunDir) -> dict:
    """A live run whose runner died gets a new runner that adopts the training, so that every
    signal still goes through the one process that owns the tree."""
    state = run.read_state()
    if state.get("status") in rundir.LIVE and not launch.runner_alive(run, state):
        sys.stderr.write(f"runner of {run.run_id} is gone; starting a new one to adopt the training\n")
        pid = launch.spawn_runner(run)
        state = launch.wait_ready(run, pid)
    return state


def run(args) -> int:
    run = rundir.resolve(runs_base(args.runs_dir), args.run)
    state = ensure_runner(run)
    if state.get("status") in rundir.TERMINAL:
        print(f"{run.run_id}: already {state['status']}; nothing to kill")
        return 0
    req = {"cmd": "kill", "by": "cli"}
    if args.grace is not None:
        req["grace_s"] = args.grace
    answer = launch.request(run, req)
    sys.stderr.write(f"{run.run_id}: {answer.get('message')}\n")
    grace = float(answer.get("grace_s") or 60)
    timeout = args.timeout if args.timeout is not None else grace + 60
    state = launch.wait_status(run, rundir.TERMINAL | {rundir.PAUSED}, timeout)
    status = state.get("status")
    if status not in rundir.TERMINAL:
        print(f"{run.run_id}: still {status} after {timeout:g}s")
        return 1
    print(f"{run.run_id}: {status}")
    return 0
