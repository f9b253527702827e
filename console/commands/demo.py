"""``moeconsole demo``: the built-in tiny MoE recipe (CPU, no GPU needed) under the UI."""
from __future__ import annotations

import importlib.util

import moeconsole
from moeconsole.console.commands import run as run_cmd
from moeconsole.runner.core.errors import InputError

DEMO_RECIPE = moeconsole.recipes_dir() / "tiny-moe-cpu.yaml"


def run(args) -> int:
    if not DEMO_RECIPE.is_file():
        raise InputError(f"{DEMO_RECIPE}: the demo recipe is missing from this installation (reinstall moeconsole)")
    if importlib.util.find_spec("torch") is None:
        from moeconsole.runner.core.cpu_torch import install_hint
        raise InputError(f"the demo trains a real model and needs torch: {install_hint()}")
    args.recipe = str(DEMO_RECIPE)
    args.name = getattr(args, "name", None)
    args.allow_drift = False
    return run_cmd.run(args)
