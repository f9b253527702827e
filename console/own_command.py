"""Which `moeconsole` command is this process's, and whether the user's shell finds it by that name.

Every line that names a next command (`moeconsole attach 957f`) assumes the word `moeconsole` runs
this install. After `make demo`, or `.venv/bin/moeconsole run ...` typed in a shell that never
activated the venv, it does not: a newcomer typed the printed `moeconsole attach cc20` and got
`moeconsole: command not found` (or, worse, another install's older moeconsole). The lines that
name the next commands add ``path_note()`` then, saying how to reach this one.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def beside() -> Path | None:
    """The `moeconsole` script beside this interpreter (a venv's ``bin/``), or None (run as
    ``python -m moeconsole`` from an interpreter with no such script)."""
    script = Path(sys.executable).parent / "moeconsole"
    return script if script.is_file() else None


def _as_typed_here(path: Path) -> str:
    """``path`` as the user can type it from here: relative under the working directory."""
    try:
        return os.path.relpath(path) if path.absolute().is_relative_to(Path.cwd()) else str(path)
    except (OSError, ValueError):
        return str(path)


def path_note() -> str:
    """One line (with its newline) after the printed commands when the shell's `moeconsole` is not
    this process's script: not on PATH at all, or another install's; else "" (it runs this one, or
    there is no script to name)."""
    own = beside()
    if own is None:
        return ""
    found = shutil.which("moeconsole")
    try:
        if found is not None and os.path.samefile(found, own):
            return ""
    except OSError:
        pass
    typed = _as_typed_here(own)
    activate = own.parent / "activate"
    reach = (f"run `. {_as_typed_here(activate)}` first, or type `{typed}`" if activate.is_file()
             else f"type `{typed}`")
    if found is None:
        return f"(`moeconsole` is not on this shell's PATH: {reach})\n"
    return f"(`moeconsole` here is another install's, {found}: {reach})\n"
