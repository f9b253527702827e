"""``moeconsole service RECIPE [--set K=V]``: the runner in the foreground, for systemd.

Finds the run of this recipe (same name, and the same recipe on this node: ``recipes.node_recipe_hash``) and becomes its runner (``exec``, so
the service manager's main process is the runner itself); starts a new run only when the recipe
has none. A finished run is reported and left alone (exit 0), so a reboot never starts it again.
See ``moeconsole systemd`` for the unit that calls this.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.process import launch
from moeconsole.runner.recipes import recipe as recipes
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.core.shellwords import quote
from moeconsole.runner.ops.service import Candidate, choose
from moeconsole.runner.rundir.paths import runs_base
from moeconsole.runner.supervisor.recovery import load_run_recipe


def _node_hash(run: rundir.RunDir) -> str | None:
    """The run's identity on its node, from its own recipe (``recipes.node_recipe_hash``); None when it
    cannot be read (such a run is never taken up as this recipe's)."""
    try:
        return recipes.node_recipe_hash(load_run_recipe(run))
    except (InputError, OSError, ValueError):
        return None


def _candidates(base: Path, name: str) -> list[Candidate]:
    out = []
    for run in rundir.list_run_dirs(base):
        st = run.read_state()
        if not isinstance(st, dict) or st.get("name") != name:
            continue
        out.append(Candidate(run.run_id, st.get("name"), _node_hash(run), st.get("status"),
                             st.get("started_at") if isinstance(st.get("started_at"), (int, float)) else None))
    return out


def _exec_runner(run: rundir.RunDir) -> None:
    """Replace this process with the runner; its diagnostics go to runner.log as usual."""
    rundir.check_owned(run)  # a run planted with the recipe's name and hash is never taken up
    fd = jsonio.open_append(run.runner_log)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    argv = launch.runner_argv(run)
    os.execve(argv[0], argv, launch.runner_env())


def run(args) -> int:
    base = runs_base(getattr(args, "runs_dir", None))
    rundir.make_private_dirs(base)
    rundir.check_base(base, write=True)
    recipe = recipes.load(args.recipe, args.overrides)
    choice = choose(_candidates(base, recipe.name or ""), recipe.name or "", recipes.node_recipe_hash(recipe))
    if choice.action == "over":
        print(f"{choice.run_id}: run is over ({choice.status}); nothing to supervise. "
              f"Start a new run with `moeconsole run {quote(str(args.recipe))}`.", flush=True)
        return 0
    if choice.action == "supervise":
        run_dir = rundir.resolve(base, choice.run_id)
        if launch.runner_alive(run_dir):
            raise InputError(f"{run_dir.run_id}: another runner is alive; this service waits for it to end")
        print(f"{run_dir.run_id}: supervising ({choice.status}); runner log: {run_dir.runner_log}", flush=True)
    else:
        run_dir = launch.create_run(base, recipe)
        print(f"{run_dir.run_id}: new run; runner log: {run_dir.runner_log}", flush=True)
    _exec_runner(run_dir)
    return 0  # not reached
