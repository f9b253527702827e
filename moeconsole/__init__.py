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


def recipes_dir() -> Path:
    """The shipped recipes: ``recipes/`` of the checkout, or the wheel's package data."""
    from pathlib import Path
    return Path(__file__).resolve().parent / "recipes"


def import_root() -> Path:
    """The directory that holds this package: the one path a child process needs to import it."""
    from pathlib import Path
    return Path(__file__).resolve().parent.parent
