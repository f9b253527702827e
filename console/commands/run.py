"""``moeconsole run RECIPE``: start a supervised run (detached runner), then attach the UI."""
from __future__ import annotations

import sys

from runner import launch, recipe as recipes
from runner.lint import lint_recipe
from runner.paths import runs_base


def start(recipe_path: str, overrides: list[str], *, runs_dir: str | None, name: str | None = None,
          allow_drift: bool = False) -> tuple[int, object]:
    recipe = recipes.load(recipe_path, overrides)
    problems = lint_recipe(recipe, preflight=True)
    errors = [p for p in problems if p["level"] == "error"]
    for p in problems:
        sys.stderr.write(f"lint {p['level']}: {p['rule']}: {p['message']}\n")
    if errors:
        sys.stderr.write(f"moeconsole: {recipe_path}: {len(errors)} lint error(s); nothing launched\n")
        return 1, None
    run = launch.create_run(runs_base(runs_dir), recipe, name=name, allow_drift=allow_drift)
    pid = launch.spawn_runner(run)
    launch.wait_ready(run, pid)
    return 0, run


def run(args) -> int:
    code, run_dir = start(args.recipe, args.overrides, runs_dir=args.runs_dir, name=args.name,
                          allow_drift=args.allow_drift)
    if code:
        return code
    print(run_dir.run_id)
    sys.stderr.write(f"run {run_dir.run_id} started under a detached runner; directory {run_dir.path}\n")
    sys.stdout.flush()
    if args.detach:
        return 0
    from console.commands import attach
    args.run = run_dir.run_id
    return attach.run(args)
