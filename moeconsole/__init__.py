"""moeconsole: supervise, watch and steer multi-GPU MoE fine-tuning runs from the terminal.

Everything is installed and imported under this one name: ``moeconsole.runner`` (headless
supervision; the ``runner/`` folder of the repository) and ``moeconsole.console`` (the Textual UI
and the command line; ``console/``). In a checkout, ``moeconsole/runner`` and
``moeconsole/console`` are links to those folders; the wheel holds them as real packages, with the
recipes as package data (``moeconsole/recipes``).
"""
from __future__ import annotations

# Neither typing nor pathlib at import time: the command line starts by importing this package, and
# its first CPU sample is taken before anything heavy (mypy reads TYPE_CHECKING as True).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__version__ = "0.1.0"


def own_packages_first() -> None:
    """Every Python process of moeconsole's imports its own install's packages before what the
    user's ``PYTHONPATH`` holds. That variable is the training's (``pyexec.training_env`` gives it
    back to it exactly), and on a cluster it often names another Python's site-packages (`module
    load python/3.10`, a conda activate script): ahead of ours on ``sys.path``, its msgspec, yaml or
    psutil built for that Python ended every command in a traceback. Its entries move behind
    site-packages (still found there, for what only they hold); the directory that holds this
    package stays where it is (a checkout's, and ``pyexec.own_env``'s for our children). Runs at
    the import of this package, which every process of ours does first (the ``moeconsole``
    command, ``python -m moeconsole...``), before any third-party import; ``-E``/``-I`` ignore
    ``PYTHONPATH`` anyway."""
    import os
    import sys
    if sys.flags.ignore_environment:
        return
    try:   # sys.path holds them absolute and normalized; a relative one needs the current directory
        given = {os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    except OSError:   # the current directory deleted under the shell: `run` says so in one line
        given = {os.path.normpath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isabs(p)}
    here = os.path.dirname(os.path.dirname(os.path.normpath(__file__)))
    leaked = [p for p in sys.path if os.path.isabs(p) and os.path.normpath(p) in given and os.path.normpath(p) != here]
    if leaked:
        sys.path[:] = [p for p in sys.path if p not in leaked] + leaked


own_packages_first()


def recipes_dir() -> Path:
    """The shipped recipes: ``recipes/`` of the checkout, or the wheel's package data."""
    from pathlib import Path
    return Path(__file__).resolve().parent / "recipes"


def import_root() -> Path:
    """The directory that holds this package: the one path a child process needs to import it."""
    from pathlib import Path
    return Path(__file__).resolve().parent.parent
