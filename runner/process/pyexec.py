"""How moeconsole starts a Python process of its own (the runner, the waiter, the exporter, notify,
checkpoint sync, the Slurm node step, the demo trainer's launch in recipes).

``python -m pkg`` puts the current directory first on ``sys.path``, and a training repository very
often holds a ``runner.py``, ``console.py`` or a ``moeconsole/`` of its own: each of our processes
would import the user's file instead of ours. ``-P`` (Python 3.11+) leaves the current directory
(and a script's directory) off ``sys.path``; the one directory that holds the ``moeconsole`` package
comes through ``PYTHONPATH`` (``own_env``). The training command itself keeps the user's directory.
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


def own_env(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with the directory that holds ``moeconsole`` first on ``PYTHONPATH``."""
    env = dict(base)
    root = str(moeconsole.import_root())
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != root]
    env["PYTHONPATH"] = os.pathsep.join([root, *rest])
    return env
