"""Numbers as short text: durations, byte sizes, counts, and the one mark for a missing value.

Every screen, command and message that shows one of these imports it from here (the console's
``format`` module builds on it), so a process age in ``gpus`` and an elapsed time in the status
line read the same."""
from __future__ import annotations

import math
from typing import Any

from runner.core.numbers import as_float

NA = "—"  # a value that is unknown or absent


def duration(seconds: Any) -> str:
    """42s, 7m36s, 3h02m, 26h00m, 2d04h: hours up to two days, then days."""
    s = as_float(seconds)
    if s is None or not math.isfinite(s):
        return NA
    total = max(0, int(round(s)))
    if total < 60:
        return f"{total}s"
    m, sec = divmod(total, 60)
    if m < 60:
        return f"{m}m{sec:02d}s"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def human_bytes(n: int | float) -> str:
    """512 B, 1.5 KB, 30.0 GB (powers of 1024)."""
    x = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(x) < 1024 or unit == "TB":
            return f"{x:.0f} {unit}" if unit == "B" else f"{x:.1f} {unit}"
        x /= 1024
    return f"{x:.1f} TB"


def disk_bytes(n: float) -> str:
    """Decimal units, as disks are sold: 1.2 TB, 794 GB, 22 MB (sizes of saves against free disk)."""
    if n >= 1e12:
        return f"{n / 1e12:.1f} TB"
    if n >= 1e9:
        return f"{n / 1e9:.0f} GB"
    return f"{max(n, 0) / 1e6:.0f} MB"


def human_count(n: int) -> str:
    """999, 1.5K, 2.0M, 397.0B."""
    for unit, scale in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return str(n)
