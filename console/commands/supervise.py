"""``moeconsole supervise RUN``: (re)start the runner of an existing run; it adopts live training."""
from __future__ import annotations

from moeconsole.runner.process import launch
from moeconsole.runner.rundir import rundir
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.rundir.paths import runs_base


def run(args) -> int:
    run = rundir.check_owned(rundir.resolve(runs_base(getattr(args, "runs_dir", None)), args.run_dir))
    if launch.runner_alive(run):
        raise InputError(f"{run.run_id}: a runner is already alive")
    pid = launch.spawn_runner(run)
    state = launch.wait_ready(run, pid)
    print(f"{run.run_id}: runner pid {pid}, status {state.get('status')}, attempt {state.get('attempt')}")
    return 0
