"""How moeconsole starts a Python process of its own (the runner, the waiter, the exporter, notify,
checkpoint sync, the Slurm node step, the demo trainer's launch in recipes).

``python -m pkg`` puts the current directory first on ``sys.path``, and a training repository very
often holds a ``runner.py``, ``console.py`` or a ``moeconsole/`` of its own: each of our processes
would import the user's file instead of ours. ``-P`` (Python 3.11+) leaves the current directory
(and a script's directory) off ``sys.path``; the one directory that holds the ``moeconsole`` package
comes through ``PYTHONPATH`` (``own_env``). The training command itself keeps the user's directory.

That ``PYTHONPATH`` is ours, not the user's: the runner inherits it, and a training command given
it would import from moeconsole's own install first (a wheel's root is its venv's
``site-packages``: our numpy, yaml or torch ahead of the training environment's own; a checkout's
root holds top-level ``runner``, ``console``, ``tests`` and ``scripts``). ``own_env`` remembers the
``PYTHONPATH`` it was given (``USER_PYTHONPATH_ENV``, or its absence) and ``training_env`` gives it
back to the training; only a command run by our own interpreter (``{python}``, which is what the
shipped demo recipes launch ``moeconsole.runner.demo.train`` with) keeps our root in front.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Mapping

import moeconsole


def module_argv(module: str, *args: str, python: str | None = None) -> list[str]:
    """``python -P -m module args...``: one of our modules, never shadowed by the user's files."""
    return [python or sys.executable, "-P", "-m", module, *args]


def script_argv(script: str, *args: str, flags: tuple[str, ...] = ()) -> list[str]:
    """Our stdlib-only script by path (the waiter), without its own directory on ``sys.path``."""
    return [sys.executable, *flags, "-P", script, *args]


# own_env's record of the user's PYTHONPATH: ADDED_ENV is set once own_env has put our root in
# front (the first time only: a runner's own children keep the console's user value), USER_ENV holds
# the PYTHONPATH it found then, absent when there was none.
ADDED_ENV = "MOECONSOLE_PYTHONPATH_ADDED"
USER_ENV = "MOECONSOLE_PYTHONPATH_USER"


def own_env(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with the directory that holds ``moeconsole`` first on ``PYTHONPATH`` (the user's
    own ``PYTHONPATH`` remembered for ``training_env``)."""
    env = dict(base)
    root = str(moeconsole.import_root())
    if ADDED_ENV not in env:
        env.pop(USER_ENV, None)
        if "PYTHONPATH" in env:
            env[USER_ENV] = env["PYTHONPATH"]
        env[ADDED_ENV] = root
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    env["PYTHONPATH"] = os.pathsep.join([root, *rest])
    return env


def user_env(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with ``PYTHONPATH`` as it was before ``own_env`` (unset when it was unset) and
    without own_env's record of it."""
    env = dict(base)
    if ADDED_ENV in env:
        if USER_ENV in env:
            env["PYTHONPATH"] = env[USER_ENV]
        else:
            env.pop("PYTHONPATH", None)
    env.pop(ADDED_ENV, None)
    env.pop(USER_ENV, None)
    return env


def training_env(base: Mapping[str, str], argv: list[str]) -> dict[str, str]:
    """The environment a recipe's command starts from (before the recipe's own ``env``): the
    user's (``user_env``), and our package root in front only when the command is run by this
    very interpreter (``{python}``), which is one of our Python processes."""
    env = user_env(base)
    if argv and argv[0] == sys.executable:
        env = own_env(env)
        env.pop(ADDED_ENV, None)
        env.pop(USER_ENV, None)
    return env


def recipe_command_env(base: Mapping[str, str], argv: list[str], recipe_env: Mapping[str, str]) -> dict[str, str]:
    """The environment a recipe's command runs with, the one owner of it: ``training_env`` of the
    caller's environment less moeconsole's own ``MOECONSOLE_*`` variables, then the recipe's ``env``
    over it, already resolved (``${NAME}`` from ``base``: ``recipes.resolve_env``; nothing else is
    filled, ``{recipe_dir}`` included). The launcher starts every attempt with it (plus that
    attempt's own variables); ``lint``'s ms-swift probe imports with it, so what lint finds
    importable is what the run imports."""
    env = {k: v for k, v in training_env(base, argv).items() if not k.startswith("MOECONSOLE_")}
    env.update(recipe_env)
    return env
