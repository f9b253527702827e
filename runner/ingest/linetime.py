"""When a log line says it was written: the timestamp near its start, as seconds since the epoch.

Per-rank logs are merged by time (the full-log view's ranks mode), and each rank writes its
own file: the time a line carries is the only clock they share. The forms trainers and their
loggers print, found in the first 80 characters (after a rank prefix, a level word, a bracket):

- ISO 8601 and Python ``logging``'s default: ``2025-01-02 03:04:05,123``,
  ``2025-01-02T03:04:05.123456Z``, ``[2025-01-02 03:04:05]`` (Megatron), with an optional
  ``+01:00``/``Z`` zone (local time without one);
- glog and ``torch._logging``: ``W0102 03:04:05.123000 41200 path:line]`` (no year: the year
  given, else this year);
- ``2025/01/02 03:04:05`` (some launchers, ms-swift's older ``logger``).

A line without a timestamp gets None; the caller lets it follow the line before it.
"""
from __future__ import annotations

import calendar
import re
import time

_ISO_RE = re.compile(
    r"(?<!\d)(\d{4})[-/](\d\d)[-/](\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?"
    r"(?:\s?(Z|[+-]\d\d:?\d\d)(?!\d))?")
_GLOG_RE = re.compile(r"(?:^|[\s\]:])[IWEFCV](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{1,9})(?!\d)")
HEAD = 80


def line_time(text: str, year: int | None = None) -> float | None:
    """Seconds since the epoch of the timestamp near the start of ``text``; None without one."""
    head = text[:HEAD]
    m = _ISO_RE.search(head)
    if m:
        y, mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 7))
        frac = float("0." + m.group(7)) if m.group(7) else 0.0
        return _epoch(y, mo, d, h, mi, s, frac, m.group(8))
    m = _GLOG_RE.search(head)
    if m:
        mo, d, h, mi, s = (int(m.group(i)) for i in range(1, 6))
        frac = float("0." + m.group(6))
        return _epoch(year or time.localtime().tm_year, mo, d, h, mi, s, frac, None)
    return None


def _epoch(y: int, mo: int, d: int, h: int, mi: int, s: int, frac: float, zone: str | None) -> float | None:
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h <= 23 and mi <= 59 and s <= 60):
        return None
    fields = (y, mo, d, h, mi, min(s, 59), 0, 0, -1)
    try:
        if zone is None:
            return time.mktime(fields) + frac   # a naive time is the machine's local time
        base = calendar.timegm(fields)
    except (OverflowError, ValueError):
        return None
    if zone == "Z":
        return base + frac
    sign = 1 if zone[0] == "+" else -1
    digits = zone[1:].replace(":", "")
    offset = int(digits[:2]) * 3600 + int(digits[2:4]) * 60
    return base - sign * offset + frac
