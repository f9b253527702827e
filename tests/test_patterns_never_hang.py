"""No regular expression of the runner stalls on a line built to make it backtrack.

The runner parses every line of a live run and classifies every ended attempt's tail with these
patterns; one that backtracks exponentially (a repeated group holding another repetition that can
split the same characters several ways: ``(?:\\d+,?)+``) stalled ingest for seconds to minutes on a
single cut line (BasicSR's lr list cut at the terminal's width took 12.8 s at five values; six more
such patterns were found by the review that followed). This walks every compiled pattern a module of
``moeconsole.runner`` holds and searches each with runs of the pieces such backtracking feeds on
(digits, separators, words, number lists, table rules), each ended by a character that makes the
match fail. It is a hang guard, not a timing: a search is stopped after ``HANG_S`` seconds (the
slowest pattern takes a few hundredths of a second on these lines; the ones it caught took seconds
at 30 pieces and double with each piece more).
"""
from __future__ import annotations

import importlib
import pkgutil
import re
import signal

import pytest

import moeconsole.runner

HANG_S = 10.0
RUNS = 30
PIECES = ("1", "1,", "1.", "a", "a.", "1/", " ", "-", "=1 ", "|1 ", "1e-", "a1", "[1", "(1", ":1 ", "a b", "1 ",
          "/1", "a_", "_1", "\t", "12345678/", "1.0 | ", "1.000e-04,", "ab ", "a1b2", "--", "1,000", "a=1,",
          "loss 1.0 | ", "-1", "1 a ", "a: ", "a/")
LINES = tuple(piece * RUNS + end for piece in PIECES for end in ("!", "\x00"))


def _patterns() -> dict[str, re.Pattern]:
    found: dict[str, re.Pattern] = {}
    for info in pkgutil.walk_packages(moeconsole.runner.__path__, "moeconsole.runner."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                found[f"{info.name}.{name}"] = value
    return found


class _Hung(Exception):
    pass


def _stop(*_: object) -> None:
    raise _Hung


def test_no_pattern_of_the_runner_hangs_on_a_line_made_to_backtrack():
    patterns = _patterns()
    assert len(patterns) > 300   # the walk found the parser's and the classifier's patterns
    assert "moeconsole.runner.ingest.formats._BASICSR_RE" in patterns
    hung = []
    previous = signal.signal(signal.SIGALRM, _stop)
    try:
        for name, pattern in sorted(patterns.items()):
            for line in LINES:
                text = line.encode() if isinstance(pattern.pattern, bytes) else line
                signal.setitimer(signal.ITIMER_REAL, HANG_S)
                try:
                    pattern.search(text)
                except _Hung:
                    hung.append((name, line[:24]))
                    break
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not hung, hung


@pytest.mark.parametrize("pattern", [r"lr:\(?((?:(?:\d+|\d{1,3}(?:,\d{3})+)(?:\.\d+)?,?)+)x",
                                     r"^(?:-+\+?)+$"])
def test_the_guard_stops_a_pattern_that_backtracks(pattern):
    """The guard itself: a pattern of the shape it hunts is stopped, not waited out."""
    compiled = re.compile(pattern)
    previous = signal.signal(signal.SIGALRM, _stop)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(_Hung):
            for line in LINES:
                compiled.search(line)
            compiled.search("lr:(" + "1" * 60 + "!")
            compiled.search("-" * 60 + "!")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
