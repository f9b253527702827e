"""The charts a user chose, kept per recipe under the runs base (``chart-prefs.json``).

A user who picks token accuracy and the MoE load-balancing loss for a recipe wants them again
on the next run of that recipe, from any console. The file holds, per recipe name, the chosen
metric keys (``moeconsole.console.metrics``), the smoothing weight and the log axis; it is replaced
atomically and merged with what is there at write time (two consoles choosing for different
recipes keep both). A damaged file is ignored (the defaults are shown) and replaced at the next
choice. At most ``KEEP`` recipes, the least recently chosen dropped first.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from moeconsole.console.metrics import clean_choice
from moeconsole.runner.rundir import jsonio

FILE = "chart-prefs.json"
SCHEMA = 1
KEEP = 200
SMOOTH_STEPS = (0.0, 0.6, 0.8, 0.9, 0.95, 0.99)   # the smoothing "slider": e goes up, E down


@dataclass
class ChartPrefs:
    charts: list[str] = field(default_factory=list)   # empty: the defaults
    smooth: float = 0.0
    log: bool = False

    def to_doc(self) -> dict:
        return {"charts": list(self.charts), "smooth": self.smooth, "log": self.log, "t": time.time()}

    @classmethod
    def from_doc(cls, doc: Any) -> "ChartPrefs | None":
        if not isinstance(doc, dict):
            return None
        smooth = doc.get("smooth")
        smooth = float(smooth) if isinstance(smooth, (int, float)) and not isinstance(smooth, bool) else 0.0
        if not (math.isfinite(smooth) and 0.0 <= smooth < 1.0):
            smooth = 0.0
        charts = doc.get("charts")
        return cls(charts=clean_choice(charts) if isinstance(charts, list) else [], smooth=smooth,
                   log=doc.get("log") is True)


def prefs_path(base: Path) -> Path:
    return Path(base) / FILE


def _read_recipes(base: Path) -> dict:
    doc = jsonio.read_json(prefs_path(base))
    if not isinstance(doc, dict) or doc.get("v") != SCHEMA or not isinstance(doc.get("recipes"), dict):
        return {}
    return doc["recipes"]


def load_prefs(base: Path, recipe: str) -> ChartPrefs | None:
    """The saved choice for ``recipe`` (None: nothing saved, or the file is unreadable)."""
    return ChartPrefs.from_doc(_read_recipes(base).get(recipe))


def save_prefs(base: Path, recipe: str, prefs: ChartPrefs) -> None:
    """Write the choice for ``recipe``, keeping every other recipe's (raises OSError)."""
    recipes = {k: v for k, v in _read_recipes(base).items() if isinstance(k, str) and isinstance(v, dict)}
    recipes[recipe] = prefs.to_doc()
    if len(recipes) > KEEP:
        newest = sorted(recipes, key=lambda k: recipes[k].get("t") or 0, reverse=True)[:KEEP]
        recipes = {k: recipes[k] for k in newest}
    Path(base).mkdir(parents=True, exist_ok=True)
    jsonio.atomic_write_json(prefs_path(base), {"v": SCHEMA, "recipes": recipes}, follow_dir=True)


def step_smooth(current: float, direction: int) -> float:
    """The next smoothing weight up (direction 1) or down (-1) the slider, ends held."""
    i = min(range(len(SMOOTH_STEPS)), key=lambda k: abs(SMOOTH_STEPS[k] - current))
    return SMOOTH_STEPS[min(max(i + direction, 0), len(SMOOTH_STEPS) - 1)]
