"""One rule for the numbers that measure time, name a port or count things.

Every duration, port and count a recipe, a command-line flag or a control request gives is
checked here, against a named range. A value outside is refused with one line naming it
(``kill.grace_s: must be a number of seconds from 0 to 3600 (1 h), got 1e+308``), never
silently used: a grace of 1e308 s is finite, yet a kill with it never escalates. Two forms:

- ``check(value, RANGE, what)``: for input (recipes, flags): the value, or ``OutOfRange``.
- ``sane(value, RANGE, default)``: for values already inside the runner (a control request's
  ``grace_s``, a recipe read back): the value if it is in range, else ``default``. A deadline
  computed from it always comes.

Pure: no I/O; the lifecycle and the kill module import it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from moeconsole.runner.core.errors import shown

MINUTE = 60.0
HOUR = 3600.0
DAY = 86400.0

MAX_SECONDS = 30 * DAY     # no wait, window or allowance a run needs is longer
MAX_GRACE_S = HOUR         # SIGTERM -> SIGKILL: longer and a kill no longer "escalates"
MAX_COUNT = 1_000_000      # restarts, windows, copies kept, nodes: far beyond any real run


@dataclass(frozen=True)
class Range:
    """Allowed values: ``lo`` (excluded when ``lo_open``) to ``hi``; ``integer`` for counts
    and ports; ``unit`` names what the number measures in messages."""
    lo: float
    hi: float
    lo_open: bool = False
    integer: bool = False
    unit: str = "seconds"

    def describe(self) -> str:
        if self.unit == "port":
            return f"a TCP port {_g(self.lo)}..{_g(self.hi)}"
        kind = {"seconds": "a finite number of seconds", "count": "a whole number"}.get(
            self.unit, f"a finite number ({self.unit})")
        hi = _g(self.hi) + (f" ({_human(self.hi)})" if self.unit == "seconds" and self.hi >= 2 * MINUTE else "")
        return f"{kind} {'>' if self.lo_open else '>='} {_g(self.lo)} and <= {hi}"

    def contains(self, value: Any) -> bool:
        """True for a number of the right kind inside the range (never raises, whatever the
        value: a 400-digit integer is compared as an integer, never converted to float)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        if value > self.hi:
            return False
        return value > self.lo if self.lo_open else value >= self.lo


def _g(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _human(s: float) -> str:
    for size, word in ((DAY, "days"), (HOUR, "h"), (MINUTE, "min")):
        if s >= size:
            n = s / size
            return f"{_g(n)} {word}" if word != "days" or n != 1 else "1 day"
    return f"{_g(s)} s"


SECONDS = Range(0.0, MAX_SECONDS)                      # a wait, window or allowance; 0 allowed
POSITIVE_SECONDS = Range(0.0, MAX_SECONDS, lo_open=True)
GRACE = Range(0.0, MAX_GRACE_S)                        # SIGTERM -> SIGKILL
INTERVAL = Range(0.05, DAY)                            # a polling or refresh period: 0 would spin
REFRESH_S = 1.0   # the console's refresh period (its --interval default): the tick a cached parse lives for
PORT = Range(1, 65535, integer=True, unit="port")
PORT_OR_ANY = Range(0, 65535, integer=True, unit="port")  # 0: the system picks a free one
COUNT = Range(0, MAX_COUNT, integer=True, unit="count")
POSITIVE_COUNT = Range(1, MAX_COUNT, integer=True, unit="count")
PID = Range(1, 1 << 22, integer=True, unit="count")   # Linux's largest pid_max

# A training step, as a log line gives it. At most 15 digits: below 2**53, so a float64 column
# holds every step exactly and an int64 one never overflows. A line whose step (or max_steps)
# is outside (negative, 20 digits, 1e308, 5,000 digits) is no record: it is skipped and counted
# (``ParseStats.out_of_range_lines``), never converted. The template reader's patterns accept
# at most ``STEP_DIGITS`` digits, the parser's records pass ``is_step``.
STEP_DIGITS = 15
MAX_STEP = 10 ** STEP_DIGITS - 1
STEP = Range(0, MAX_STEP, integer=True, unit="count")


def is_step(value: Any) -> bool:
    """A step or max_steps a record may carry (an int in ``STEP``)."""
    return STEP.contains(value)


class OutOfRange(ValueError):
    """A number outside its range, or not a number of the right kind (one line, names it)."""


def check(value: Any, rng: Range, what: str) -> Any:
    """``value`` when ``rng`` contains it (an int stays an int, else a float); else
    ``OutOfRange`` naming ``what``."""
    if rng.contains(value):
        return int(value) if rng.integer else float(value)
    raise OutOfRange(f"{what}: must be {rng.describe()}, got {shown(value)}")


def sane(value: Any, rng: Range, default: float) -> float:
    """``value`` when ``rng`` contains it, else ``default``: NaN, infinity, negative, absurdly
    large, a string or None all mean "not given"."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return default
    return float(value) if rng.contains(value) else default


def sane_seconds(value: Any, default: float, rng: Range = SECONDS) -> float:
    """A duration the runner computes a deadline from (cooldown floors, kill graces)."""
    return sane(value, rng, default)


def parse(text: str, rng: Range, what: str) -> Any:
    """A command-line word as a number in ``rng`` (``--interval inf``, ``--port 99999`` and
    ``--grace nan`` are refused)."""
    text = text.strip()
    if len(text) > 64:
        raise OutOfRange(f"{what}: must be {rng.describe()}, got a {len(text)}-character word")
    try:
        value: Any = int(text) if rng.integer else float(text)
    except ValueError:
        raise OutOfRange(f"{what}: must be {rng.describe()}, got {text!r}") from None
    return check(value, rng, what)


