"""Reading a number back from a record: the one policy every reader uses.

Metric records, state and snapshots carry numbers as JSON numbers, as the strings "nan", "inf" and
"-inf" (JSON has no such numbers; ``jsonio.dumps`` writes them so), or not at all. A bool is not a
number here: ``true`` in a loss field is a writer's bug, not the value 1.0, so it reads as absent
like any other non-number. ``finite_float`` is the reader for a value that is shown or summed,
``run_cost`` the one formula for what a run cost."""
from __future__ import annotations

import math
from typing import Any, Iterable


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


def finite_float(x: Any) -> float | None:
    """``x`` as a finite float: None when absent, a bool, not a number, NaN or infinite (the
    reader for a value that is shown or summed, where NaN and infinity mean "no value")."""
    if type(x) is float:  # the common cases first (a 128-node console reads 20,000 a second)
        return x if math.isfinite(x) else None
    if type(x) is int:    # an agent's MiB and percentages; one too large for a float is no value
        try:
            return float(x)
        except OverflowError:
            return None
    v = as_float(x)
    return v if v is not None and math.isfinite(v) else None


def is_finite_number(x: Any) -> bool:
    """Whether ``x`` is a finite number as a record holds one: an int or a float, not a bool, not
    NaN or infinite (a string is not one here, unlike ``finite_float``'s "1.5")."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return False
    try:
        return math.isfinite(x)
    except OverflowError:   # an int too large for a float
        return False


def run_cost(seconds: Any, per_hour: Any) -> float | None:
    """What ``seconds`` of the run cost at the recipe's ``cost_per_hour`` (the whole run's hourly
    price): None when either is unknown, zero or not a finite number."""
    s, p = finite_float(seconds), finite_float(per_hour)
    return s / 3600.0 * p if s and p else None


def median(values: Iterable[float]) -> float:
    """The median, as ``statistics.median`` gives it (the mean of the middle two of an even
    count), without loading that module into every console."""
    ordered = sorted(float(v) for v in values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0
