"""One check for the seconds values of the operations sections (metrics, notify, sync)."""
from __future__ import annotations

import math
from typing import Any, Mapping

from runner.core import bounds


def seconds(section: Mapping[str, Any], key: str, default: float, *, positive: bool = False,
            below: float = math.inf) -> float:
    """``section[key]`` as a number of seconds in range (> 0 with ``positive``, else >= 0; at
    most ``below`` and never beyond ``bounds.MAX_SECONDS``); ValueError naming the key."""
    v = section.get(key, default)
    rng = bounds.Range(0.0, min(below, bounds.MAX_SECONDS), lo_open=positive)
    try:
        return float(bounds.check(v, rng, key))
    except bounds.OutOfRange as exc:
        raise ValueError(str(exc)) from None
