"""The one guard of the batch rule tests' long-line cases: ``classify`` must end on a line made of a rule's
words and a piece repeated to 40,000 characters (every pattern linear: ``tests/test_patterns_never_hang.py``
for the runner's whole set); a run that has not ended after ``HANG_S`` is stopped by SIGALRM and fails the test
with the line's recipe, instead of holding the worker."""
from __future__ import annotations

import signal

import pytest

from moeconsole.runner.core.crash import classify

HANG_S = 20.0   # seconds: hundreds of times what a linear scan of 40,000 characters takes, on any busy machine
LONG = 40_000   # characters of repeated piece behind a rule's words


class _Hung(Exception):
    pass


def _stop(*_: object) -> None:
    raise _Hung


def long_line(lead: str, piece: str) -> str:
    """``lead``, then ``piece`` repeated to about ``LONG`` characters."""
    return lead + piece * (LONG // len(piece))


def classify_ends(lines: list[str], what: str) -> None:
    """``classify(1, lines)`` ends within ``HANG_S`` (else the test fails, naming ``what``)."""
    previous = signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_REAL, HANG_S)
    try:
        classify(1, lines, steps_seen=10)
    except _Hung:
        pytest.fail(f"classify hung on {what}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
