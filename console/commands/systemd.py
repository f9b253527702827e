"""``moeconsole systemd RECIPE [--user] [--set K=V]``: print a unit that keeps the recipe's
runner alive across reboots and runner deaths (install steps in docs/operations.md)."""
from __future__ import annotations

import getpass
import os
import shutil
import sys
from pathlib import Path

from moeconsole.console import own_command
from moeconsole.runner.recipes import recipe as recipes
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.ops.systemd import UnitError, UnitSpec, unit_name, unit_text
from moeconsole.runner.rundir.paths import runs_base


def _moeconsole_exe() -> Path:
    """The moeconsole beside this interpreter (a venv's bin/), else the one on PATH."""
    script = own_command.beside()
    if script is not None:
        return script.absolute()
    found = shutil.which("moeconsole")
    if not found:
        raise InputError("cannot find the moeconsole executable to put in ExecStart (install the project first)")
    return Path(found).absolute()


def run(args) -> int:
    recipe_path = Path(args.recipe).absolute()
    recipe = recipes.load(recipe_path, args.overrides)
    config = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "moeconsole"
    name = recipe.name or recipe_path.stem
    spec = UnitSpec(
        recipe_path=recipe_path, recipe_name=name, moeconsole=_moeconsole_exe(),
        runs_dir=runs_base(getattr(args, "runs_dir", None)).absolute(),
        restart_sec=float(recipe.cooldown.floor_s), working_dir=Path.cwd(),
        env_file=config / f"{name}.env", overrides=tuple(args.overrides), user_unit=args.user,
        user=None if args.user or os.geteuid() != 0 else getpass.getuser(),
    )
    if not args.user and os.geteuid() != 0:
        spec = UnitSpec(**{**spec.__dict__, "user": getpass.getuser()})
    try:
        text = unit_text(spec)
    except UnitError as exc:
        raise InputError(str(exc)) from None
    sys.stdout.write(f"# {unit_name(name)}\n{text}")
    return 0
