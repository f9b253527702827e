"""Reading a number back from a record: the one policy every reader uses.

Metric records, state and snapshots carry numbers as JSON numbers, as the strings "nan", "inf" and
"-inf" (JSON has no such numbers; ``jsonio.dumps`` writes them so), or not at all. A bool is not a
number here: ``true`` in a loss field is a writer's bug, not the value 1.0, so it reads as absent
like any other non-number."""
from __future__ import annotations

from typing import Any


def as_float(x: Any) -> float | None:
    """``x`` as a float ("nan"/"inf"/"-inf" strings included); None when absent, a bool, or not a
    number."""
    if x is None or isinstance(x, bool):
        return None
    if isinstance(x, float):
        return x
    try:
        return float(x)
    except (TypeError, ValueError, OverflowError):
        return None
