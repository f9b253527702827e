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
    status = state.get("status")
    if status in rundir.TERMINAL:
        # a run that is over: the runner finds no training to adopt (it said "runner pid N" as if
        # one now watched the run); the next step is a restart
        from moeconsole.runner.rundir.snapshot import restart_command
        typed = rundir.command_ref(run.path.parent, run.run_id)[1]   # --runs-dir where a bare command would not look
        print(f"{run.run_id}: the run is already {status}, nothing to supervise; "
              f"`{restart_command(typed, status)}` runs it again")
        return 0
    attempt = state.get("attempt")
    print(f"{run.run_id}: runner pid {pid}, status {status}" + (f", attempt {attempt}" if isinstance(attempt, int) else ""))
    return 0
