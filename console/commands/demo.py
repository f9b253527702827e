"""``moeconsole demo``: the built-in tiny MoE recipe (CPU, no GPU needed) under the UI."""
from __future__ import annotations

from pathlib import Path

from moeconsole.console.commands import run as run_cmd
from moeconsole.runner.core.errors import InputError

DEMO_RECIPE = Path(__file__).resolve().parents[2] / "recipes" / "tiny-moe-cpu.yaml"


def run(args) -> int:
    if not DEMO_RECIPE.is_file():
        raise InputError(f"{DEMO_RECIPE}: the demo recipe is missing (install the project from its checkout)")
    args.recipe = str(DEMO_RECIPE)
    args.name = getattr(args, "name", None)
    args.allow_drift = False
    return run_cmd.run(args)
