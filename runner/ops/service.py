"""Which run a service manager's runner should supervise for a recipe.

A unit restarted by systemd (after a reboot or a runner death) must find the run it was
supervising, never start a second one, and never start a finished run again. The choice is a
pure function of the runs under the base directory, so it is tested on plain data.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence

from moeconsole.runner.core.state import LIVE


@dataclass(frozen=True)
class Candidate:
    run_id: str
    name: str | None
    recipe_hash: str | None     # the run's identity on its node (``recipes.node_recipe_hash`` of its own recipe)
    status: str | None
    started_at: float | None


@dataclass(frozen=True)
class Choice:
    action: Literal["new", "supervise", "over"]
    run_id: str | None = None
    status: str | None = None


def choose(candidates: Sequence[Candidate], name: str, recipe_hash: str) -> Choice:
    """The newest run of this recipe (same name and node hash: two nodes of one world are two runs, review
    R48 D1): supervise it while it is live; if it
    is over, say so (a reboot never starts a finished run again); with none, start one."""
    mine = [c for c in candidates if c.name == name and c.recipe_hash == recipe_hash]
    if not mine:
        return Choice("new")
    newest = max(mine, key=lambda c: (c.started_at or 0.0, c.run_id))
    if (newest.status or "").lower() in LIVE:
        return Choice("supervise", newest.run_id, newest.status)
    return Choice("over", newest.run_id, newest.status)
