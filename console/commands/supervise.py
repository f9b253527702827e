"""``moeconsole supervise RUN``: (re)start the runner of an existing run; it adopts live training."""
from __future__ import annotations

from runner.process import launch
from runner.rundir import rundir
from runner.core.errors import InputError
from runner.rundir.paths import runs_base


def run(args) -> int:
    run = rundir.check_owned(rundir.resolve(runs_base(getattr(args, "runs_dir", None)), args.run_dir))
    if launch.runner_alive(run):
        raise InputError(f"{run.run_id}: a runner is already alive")
    pid = launch.spawn_runner(run)
    state = launch.wait_ready(run, pid)
    print(f"{run.run_id}: runner pid {pid}, status {state.get('status')}, attempt {state.get('attempt')}")
    return 0
