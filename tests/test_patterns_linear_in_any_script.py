"""No pattern of the runner costs the square of a line built from its own words and any script's characters.

The never-hang guard (``test_patterns_never_hang``) feeds ASCII runs; a pattern whose repetition ends only at a
literal phrase scans from every start of a line to its end when the phrase is there but the rest of the pattern is
not: the line's square. Found so (round 21): ``crash._ENV_SM`` (``\\S.*? with CUDA capability ...``) took 18 s on
one 16,384-character line holding its own words between runs of CJK or punctuation (0.27 s at 2k), and
``classify`` reads every line of a tail with it once any line names a CUDA capability.

For EVERY compiled pattern a module of ``moeconsole.runner`` holds (the classifier, the live line parser, the
monitors, the secret masking), lines are built from the pattern's own literal words (read from its parse tree)
interleaved with runs of CJK, Cyrillic, full-width forms, emoji, combining marks, digits, spaces and punctuation
(fixed seeds), and the cost of a search is compared at 1k and 4k characters (a line's cost grows 4 times, a
square's 16), a suspect confirmed at 8k (8 against 64). Ratios of the same search, not wall-clock thresholds:
each cost is the least of three CPU-time measures (a busy machine does not skew them) of enough repeats to take a
millisecond at 1k.
"""
from __future__ import annotations

import random
import re
import re._constants as sre_c  # type: ignore[import-not-found]
import re._parser as sre_parse  # type: ignore[import-not-found]
import time

from tests.test_patterns_never_hang import _patterns

FILLS = {"cjk": "训练失败显存不足错误", "cyrillic": "ошибкапамяти", "full-width": "ＡＢＣ１２３：．",
         "emoji": "🔥✨😀🚀", "combining": "a\u0301e\u0300o\u0308", "digits": "0123456789", "spaces": " ",
         "punctuation": ".,;:-!?", "mixed": "训练 ошибка １２ 🔥 a\u0301, "}
SIZES = (1000, 4000, 8000)
SUSPECT, SQUARE = 10.0, 32.0   # 1k->4k: a line 4, a square 16; 1k->8k: a line 8, a square 64


def literal_words(pattern: re.Pattern) -> list[str]:
    """The runs of literal characters of ``pattern`` (two or more), from its parse tree: the words its matches
    are made of (``with CUDA capability``, ``sm_``, ``loss``)."""
    found: list[str] = []

    def walk(items) -> None:
        run: list[str] = []
        for op, av in items:
            if op is sre_c.LITERAL:
                run.append(chr(av))
                continue
            if len(run) >= 2:
                found.append("".join(run))
            run = []
            if op is sre_c.SUBPATTERN:
                walk(av[-1])
            elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
                walk(av[2])
            elif op is sre_c.BRANCH:
                for branch in av[1]:
                    walk(branch)
            elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
                walk(av[1])
            elif op is sre_c.ATOMIC_GROUP:
                walk(av)
        if len(run) >= 2:
            found.append("".join(run))

    source = pattern.pattern if isinstance(pattern.pattern, str) else pattern.pattern.decode("latin-1")
    flags = pattern.flags & ~re.UNICODE if isinstance(pattern.pattern, bytes) else pattern.flags
    walk(sre_parse.parse(source, flags))
    return sorted({w for w in found if w.strip()}) or ["x"]


def adversarial_line(words: list[str], fill: str, size: int, seed: int) -> str:
    """``size`` characters: the pattern's words, each followed by a run of ``fill`` (0 to 40 of its pieces)."""
    rnd, parts, n = random.Random(seed), [], 0
    while n < size:
        word, run = rnd.choice(words), FILLS[fill] * rnd.randint(0, 40)
        parts += [word, run]
        n += len(word) + len(run)
    return "".join(parts)[:size]


def _cost(pattern: re.Pattern, text, reps: int) -> float:
    best = float("inf")
    for _ in range(3):
        began = time.process_time()
        for _ in range(reps):
            pattern.search(text)
        best = min(best, time.process_time() - began)
    return best


def _lines(pattern: re.Pattern, fill: str, seed: int) -> list:
    words = literal_words(pattern)
    lines = [adversarial_line(words, fill, size, seed) for size in SIZES]
    return [line.encode() for line in lines] if isinstance(pattern.pattern, bytes) else lines


def square_costs(pattern: re.Pattern, seed: int = 21) -> list[tuple[str, float, float]]:
    """The fills on whose lines ``pattern``'s search costs the square of the line: (fill, 1k->4k, 1k->8k)."""
    found = []
    for fill in FILLS:
        small, middle, large = _lines(pattern, fill, seed)
        reps, one = 1, _cost(pattern, small, 1)
        while one * reps < 0.001 and reps < 4096:
            reps *= 2
        base = _cost(pattern, small, reps)
        ratio = _cost(pattern, middle, reps) / base
        if ratio < SUSPECT:
            continue
        confirmed = _cost(pattern, large, reps) / base
        if confirmed >= SQUARE:
            found.append((fill, round(ratio, 1), round(confirmed, 1)))
    return found


def test_the_generator_builds_lines_from_a_patterns_own_words():
    from moeconsole.runner.core import crash

    words = literal_words(crash._ENV_SM)
    assert " with CUDA capability " in words and "sm_" in words
    line = adversarial_line(words, "cjk", 4000, 21)
    assert len(line) == 4000 and " with CUDA capability " in line and "训练" in line
    assert line == adversarial_line(words, "cjk", 4000, 21)      # fixed seeds: the same line every run


def test_the_ratio_catches_a_pattern_that_costs_the_square():
    """The measure itself: the shape round 21 found (a lazy field before a phrase, the phrase's rest absent)."""
    assert square_costs(re.compile(r"(?P<gpu>\S.*?) with CUDA capability (?P<sm>sm_\d+) is not compatible"))
    assert not square_costs(re.compile(r"(?P<gpu>\S[^\n]{0,96}?) with CUDA capability (?P<sm>sm_\d+) is not"))


def test_no_pattern_of_the_runner_costs_the_square_of_a_line_of_its_own_words_in_any_script():
    patterns = _patterns()
    assert len(patterns) > 300   # the walk found the parser's, the classifier's, the monitors' and the masking's
    assert {"moeconsole.runner.core.crash._ENV_SM", "moeconsole.runner.rundir.secrets._TOKEN_VALUE"} <= set(patterns)
    square = {name: found for name, pattern in sorted(patterns.items()) if (found := square_costs(pattern))}
    assert not square, square
