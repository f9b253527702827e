"""One check for the seconds values of the operations sections (metrics, notify, sync)."""
from __future__ import annotations

import math
from typing import Any, Mapping


def seconds(section: Mapping[str, Any], key: str, default: float, *, positive: bool = False,
            below: float = math.inf) -> float:
    """``section[key]`` as a finite number of seconds (> 0 with ``positive``, else >= 0);
    ValueError naming the key otherwise."""
    v = section.get(key, default)
    ok = not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and \
        (v > 0 if positive else v >= 0) and v < below
    if not ok:
        raise ValueError(f"{key} must be a finite number of seconds {'>' if positive else '>='} 0"
                         + (f" and below {below:g}" if below != math.inf else ""))
    return float(v)
