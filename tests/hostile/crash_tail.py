"""A training that ends with a crash tail built to cost the judge (round 21's measure, round 23's tests).

``python -m tests.hostile.crash_tail LINES [GO]``: prints LINES lines, each about 2,900 characters (under the
live tail's cut, ``ingest.live.TailLines``: 1,000-byte head + 2,000-byte tail, so each reaches ``classify`` whole)
made of the crash classifier's own literal words (every compiled pattern of ``moeconsole.runner.core.crash``,
read from its parse tree by ``literal_words``) between runs of CJK, Cyrillic, full-width forms, emoji, combining
marks, digits and punctuation (``adversarial_line``, fixed seeds), then exits 1. With GO, it first waits for the
file GO to exist (the test has seen the runner watching it)."""
from __future__ import annotations

import os
import re
import sys
import time

from moeconsole.runner.core import crash
from tests.test_patterns_linear_in_any_script import FILLS, adversarial_line, literal_words

WIDTH = 2900   # characters; the fills' characters are up to 4 bytes: kept under the live tail's 3,000-byte cut below


def crash_words() -> list[str]:
    """Every literal word of every compiled pattern of the crash classifier."""
    words: set[str] = set()
    for value in vars(crash).values():
        if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
            words.update(literal_words(value))
    return sorted(words)


def tail_lines(n: int) -> list[str]:
    """``n`` adversarial lines, each cut to fit the live tail whole (3,000 bytes)."""
    words, fills, out = crash_words(), sorted(FILLS), []
    for i in range(n):
        line = adversarial_line(words, fills[i % len(fills)], WIDTH, seed=i)
        out.append(line.encode()[:2990].decode(errors="ignore").replace("\n", " ").replace("\r", " "))
    return out


def main(argv: list[str]) -> int:
    n = int(argv[0])
    if len(argv) > 1:
        while not os.path.exists(argv[1]):
            time.sleep(0.05)
    for line in tail_lines(n):
        sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
