"""The date words a listing is narrowed by (``runs ls --since``, the run browser's ``since:``):
one reading for every place, so ``2d`` means the same everywhere. Pure (the local time zone of
the process, as the STARTED column shows a run's start, is the only thing read besides ``now``).

An age counts back from ``now``: ``90m``, ``12h``, ``2d``, ``1w`` (``s``, ``m``, ``h``, ``d``,
``w``, or the word: ``2 days``, ``3 hours ago``; a whole or decimal number). A day is the local calendar's: ``2026-11-20`` (or
``20261120``, as a run id begins: exactly 8 digits), ``today`` and ``yesterday`` mean its midnight;
``2026-11-20T14:30`` (or with a space, or ``14:30:05``) that minute or second."""
from __future__ import annotations

import re
import time
from datetime import datetime, timedelta

from moeconsole.runner.core.errors import InputError

UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}
# the unit's letter, or its word ("2 days", "90 min", "1 week ago")
_AGE = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|wks?|weeks?)"
                  r"(?:\s+ago)?$")
_FORMS = ("%Y-%m-%d", "%Y%m%d", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S")
_COMPACT_DAY = re.compile(r"\d{8}")   # a run id's day, YYYYMMDD: only exactly 8 digits (never 202611)
PHRASE_WORDS_MAX = 3   # the most words a time phrase takes: "3 hours ago", "2026-11-20 14:30"
EXAMPLES = "an age such as 2d, 12h, 30m or 1w, a date such as 2026-11-20 or 2026-11-20T14:30, or today / yesterday"


def since_cutoff(text: str, now: float, *, what: str = "--since") -> float:
    """The moment (seconds since the epoch) ``text`` names: runs that started at or after it are
    kept. ``what``: the option or filter word the one-line error names. Raises InputError."""
    word = " ".join(str(text).split()).lower()
    age = _AGE.match(word)
    if age:
        return now - float(age.group(1)) * UNIT_S[age.group(2)[0]]
    if word in ("today", "yesterday"):
        day = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0)
        return (day - timedelta(days=1 if word == "yesterday" else 0)).timestamp()
    for form in _FORMS:
        if form == "%Y%m%d" and not _COMPACT_DAY.fullmatch(word):
            continue   # strptime takes 1-digit fields: 202611 would read as 2026-01-01 (review R44)
        try:
            return time.mktime(datetime.strptime(word.upper() if "t" in word else word, form).timetuple())
        except ValueError:
            continue
    raise InputError(f"{what}: cannot read {text!r} as a time: give {EXAMPLES}")


def phrase_words(words: list[str]) -> int:
    """How many of ``words`` (a filter's words after its ``since:``, the first one included) form
    the longest time phrase ``since_cutoff`` reads: "2026-11-20 14:30" and "2 days ago" are one
    phrase, so a filter split on spaces does not read their tail as a name. At least 1 (an unreadable
    first word is the phrase, for its one-line error). Pure."""
    best = 1
    for n in range(2, min(len(words), PHRASE_WORDS_MAX) + 1):
        try:
            since_cutoff(" ".join(words[:n]), 0.0)
        except InputError:
            continue
        best = n
    return best
