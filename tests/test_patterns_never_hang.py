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


class _Counting:
    """A compiled pattern that counts the characters a search or a finditer is given to scan (each tries every
    position of its range: a range over the whole line for every match makes the work the line's square); a match or
    a fullmatch is anchored at its start and counts what it matched (1 when it failed)."""

    def __init__(self, pattern: re.Pattern, seen: list[int]) -> None:
        self.pattern, self.seen = pattern, seen

    def _count(self, text: str, pos: int, endpos: int | None) -> None:
        self.seen.append(min(len(text), len(text) if endpos is None else endpos) - pos)

    def search(self, text, pos=0, endpos=None):
        self._count(text, pos, endpos)
        return self.pattern.search(text, pos, len(text) if endpos is None else endpos)

    def match(self, text, pos=0, endpos=None):
        m = self.pattern.match(text, pos, len(text) if endpos is None else endpos)
        self.seen.append(m.end() - pos if m else 1)
        return m

    def fullmatch(self, text, pos=0, endpos=None):
        m = self.pattern.fullmatch(text, pos, len(text) if endpos is None else endpos)
        self.seen.append(m.end() - pos if m else 1)
        return m

    def finditer(self, text, pos=0, endpos=None):
        self._count(text, pos, endpos)
        return self.pattern.finditer(text, pos, len(text) if endpos is None else endpos)

    def __getattr__(self, name):
        return getattr(self.pattern, name)


@pytest.mark.parametrize("piece", [
    "CUDA out of memory x ",                       # every match kept: the first decides
    "If you hit CUDA out of memory, ",             # every match a hedge's: each looks back at its own sentence
    "To avoid CUDA out of memory errors set it; ",
    "Fixed: CUDA out of memory in eval. ",
    "「CUDA out of memory」というエラー ",
    "'CUDA out of memory' ",                       # quoted: every match is read
    "如果出现 'CUDA out of memory'，",             # quoted in Chinese prose: each reads its CJK limits (batch 52)
    "'CUDA out of memory'가 발생하면 ",            # ... and in Korean prose
    "Memory_Allocation_Failure(EL0004): Failed to allocate ",    # CANN's device OOM (batch 58)
    "MODULE:PT_DEVMEM Allocation failed for size::1 ",           # Gaudi's device OOM (batch 59)
    "it surfaces (late) as CUDA out of memory; ",  # an explainer's verb of manifestation: a bounded look back
    "这类错误通常表现为CUDA out of memory，",      # ... in Chinese, its clause read back over a bounded window
    "表现为表现为CUDA out of memory",              # a run of the verb's characters before the words
    "Seeing a CUDA out of memory error is common. ",   # a gerund's scene, a prevalence: each reads its sentence
])
def test_the_oom_rules_work_on_a_long_line_grows_with_the_line_not_its_square(monkeypatch, piece):
    """The OOM words repeated over a long line (a log's line can be 1 MiB): the characters the OOM rule's patterns
    are given to scan stay within a fixed multiple of the line's length (each match looks back over a bounded window
    before it, not the whole line), counted, not timed."""
    from moeconsole.runner.core import crash

    seen: list[int] = []
    for name, value in list(vars(crash).items()):
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(crash, name, _Counting(value, seen))
    line = piece * (20_000 // len(piece))
    crash.oom_stated(line)
    crash.oom_case_retold(line)
    assert sum(seen) <= 128 * len(line), (sum(seen), len(line))


@pytest.mark.parametrize("piece", [
    "it OOMs with a b c d e f g h i j k l m n o p ",   # batch 59: the verb, then a clause with no "on": a bounded look
    "OOMs on the ",                                     # ... ahead, every match read
    "OOMed OOMed OOMed ",
    "we OOMed on my RTX 4090 but not since; ",          # every match refused by its own sentence
    "容易爆显存，",                                      # 爆显存 told in Chinese (batch 59), each a general statement
    "爆爆爆爆显存",
    "字" * 50 + "爆显存 ",                               # a run of CJK characters before the words
])
def test_the_told_gpu_oom_rules_read_a_long_line_in_its_length(monkeypatch, piece):
    """A GPU's OOM told in words, repeated over a long line: the characters oom_told_on_gpu's patterns are given to
    scan stay within a fixed multiple of the line's length (each match looks back and ahead over bounded windows),
    counted, not timed."""
    from moeconsole.runner.core import crash

    seen: list[int] = []
    for name, value in list(vars(crash).items()):
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(crash, name, _Counting(value, seen))
    line = piece * (20_000 // len(piece))
    crash.oom_told_on_gpu(line)
    assert sum(seen) <= 128 * len(line), (sum(seen), len(line))


@pytest.mark.parametrize("piece", [
    "Xid 79 on GPU 0: 0 | ",                       # a monitor's fields: every match read and refused
    "we hit Xid 79 on GPU 0: 0, ",
    "If you hit Xid 79 on GPU 0, reset it; ",      # every match a hedge's: each looks back at its own sentence
    "health check: Xid 48 on node-3: none; ",
])
def test_the_told_xid_rules_work_on_a_long_line_grows_with_the_line_not_its_square(monkeypatch, piece):
    """An Xid told by its number repeated over a long line: the characters xid_told's patterns are given to scan stay
    within a fixed multiple of the line's length (each match looks back over a bounded window), counted, not timed."""
    from moeconsole.runner.core import crash

    seen: list[int] = []
    for name, value in list(vars(crash).items()):
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(crash, name, _Counting(value, seen))
    line = piece * (20_000 // len(piece))
    assert crash.xid_told(line) is None
    assert sum(seen) <= 128 * len(line), (sum(seen), len(line))


@pytest.mark.parametrize("piece", [
    "illegal memory access ",                      # every match stated: the first decides
    "You may hit an illegal memory access if the kernel is wrong; ",   # every match a hedge's
    "Fixed an illegal memory access in varlen. ",
    "An uncorrectable ECC error typically indicates failing HBM. ",
    "CUDA_ERROR_ILLEGAL_ADDRESS = 700, ",
    "#define CUDA_ERROR_ILLEGAL_ADDRESS ",          # a definition: looked back for over a window, not the line
    "--drop  on an illegal memory access ",        # an option's help: its lead read at the line's start
    "\\n[W reducer.cpp:1] an illegal memory access may happen ",
    "surfaces (asynchronously) as CUDA_ERROR_ILLEGAL_ADDRESS ",    # batch 58: every match looks back 120 chars
    "manifests as RuntimeError: CUDA error: an illegal memory access ",
    "这类错误通常表现为\"an illegal memory access\"，",
    "错误错误错误错误表现为an illegal memory access",
])
def test_the_told_fault_rules_read_every_match_of_a_long_line_in_its_length(monkeypatch, piece):
    """A fault's words repeated over a long line (a job's log joined into one line): every match is read (since batch
    51; the runtime's own line after many mentions decides), and the characters the rule's patterns are given to scan
    stay within a fixed multiple of the line's length, counted, not timed."""
    from moeconsole.runner.core import crash

    seen: list[int] = []
    for name, value in list(vars(crash).items()):
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(crash, name, _Counting(value, seen))
    line = piece * (20_000 // len(piece))
    crash._fault_stated(line)
    assert sum(seen) <= 128 * len(line), (sum(seen), len(line))


# A run that two neighbouring repetitions can split every way (``[\s-]+[\w.:-]*\w`` over dashes, `` {2,}Exit Code``
# tried at each space of a run) costs the run's square, not 2**n: at 30 pieces it passes above, over a long line it
# stalls (the review of batch 47 timed one 16 KiB line at 5-16 s in classify). So the classifier is also given long
# runs of the pieces such repetitions share (spaces, dashes, tabs, word characters), alone and behind the words the
# rules read before a run: a told Xid's count noun and place, a shell's status; each line as long as the classifier
# keeps one (MAX_PART_CHARS: a longer one is cut, which breaks the run). A square's cost shows there in seconds (the
# two the review found: 5-16 s), a line's in hundredths, so such a line is stopped after LONG_HANG_S.
# (Left for a later mend: "CUDA out of memory" followed by 16 KiB of digits takes about 3 s.)
LONG_HANG_S = 2.0
LONG_LEADS = ("", "x", "We saw Xid 79 events on node", "Xid 79 on GPU", "exit code 137", "worker exited with code 137",
              "srun: error: n1: task 0: Exited with exit code 137", "segfault while",
              # batch 60: the shell's line in CJK prose, Megatron's non-finite result without its head
              '出现"Segmentation fault (core dumped)"', "Unexpected result nan")
LONG_PIECES = (" ", "-", "\t", "a", ". ")


def test_the_classifier_never_hangs_on_a_long_run_behind_a_rules_words():
    from moeconsole.runner.core.crash import MAX_PART_CHARS, classify

    hung = []
    previous = signal.signal(signal.SIGALRM, _stop)
    try:
        for lead in LONG_LEADS:
            for piece in LONG_PIECES:
                for tail in ("!", "Exit Code:  137"):
                    line = lead + piece * ((MAX_PART_CHARS - len(lead) - len(tail)) // len(piece)) + tail
                    signal.setitimer(signal.ITIMER_REAL, LONG_HANG_S)
                    try:
                        classify(1, [line], steps_seen=100)
                    except _Hung:
                        hung.append((lead, piece, tail))
                    finally:
                        signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not hung, hung


# A lazy field behind a reader's head ended by ``\s*$`` tries the run of spaces after it at every character it takes:
# the line's square (review R41: tqdm-loggable's ``postfix:(.+?)`?\s*$`` took 9 s on one line of 40k spaces behind
# Levanter's bar, about 1.5 hours at the parser's 1 MiB cap), and a greedy dict behind each of many heads on a line
# with no closing brace scanned to the end and back from every head. The parser is given long runs of the pieces such
# tails feed on behind the heads of the readers that end so, each line well under the 1 MiB cap; a square's cost
# shows in tens of seconds there, a line's in hundredths.
# Review R59: a tqdm bar cut at the width after "<{remaining}," (lines.BAR_CUT_RIGHT) with two ``\s*`` touching
# around an optional group took 11 s on one line of 30k blanks behind it.
READER_LEADS = ("Progress on:train 11.0it/18.0it rate:34.5s/it remaining:04:01 elapsed:17:46 postfix:loss=15.5",
                "(PPOTrainer pid=1) ✨ Global step 3: {'policy_loss': 0.5, 'actor_lr': 1e-06}",
                "Train:  11%|█| 3/27 [01:52<14:28,")
READER_PIECES = (" ", "\t", "a ", ", ", "} ", "✨ Global step 1: {'a': 1} ",
                 "Progress on:train 1it/2it rate:a remaining:a elapsed:a postfix:a ")
READER_LINE_CHARS = 50_000


class _ParserHung(BaseException):
    """Raised by the guard's alarm inside the parser, which catches every ``Exception`` a reader raises."""


def _stop_parser(*_: object) -> None:
    raise _ParserHung


def test_the_log_readers_never_hang_on_a_long_run_behind_a_readers_head():
    from moeconsole.runner.ingest import LogParser
    from moeconsole.runner.ingest.history import read_events

    hung = []
    previous = signal.signal(signal.SIGALRM, _stop_parser)
    try:
        for lead in READER_LEADS:
            for piece in READER_PIECES:
                for tail in ("|", "x", "}"):
                    line = lead + piece * ((READER_LINE_CHARS - len(lead)) // len(piece)) + tail
                    signal.setitimer(signal.ITIMER_REAL, LONG_HANG_S)
                    try:
                        read_events(LogParser(), [line.encode() + b"\n"])
                    except _ParserHung:
                        hung.append((lead[:20], piece, tail))
                    finally:
                        signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not hung, hung


# --- review R62 (finding 6): the counts above could not see a square ---------------------------------------------------
# _Counting records a failed fullmatch as 1 character whatever region it was given, and str's own scans (`in`, find,
# rfind) are not counted at all; a rule that scanned the whole line once a match (R62: `"\\n" in text` in
# _sentence_start) or tried a fullmatch over a growing region passed the budget. Below, both are counted by their region,
# and the work is measured at N and 2N: a line's length doubled must at most double it (a square quadruples it).


class _CountingStr(str):
    """A line whose own scans count the characters they are given (str's `in`, find, rfind, index, rindex)."""
    seen: list[int]

    def __contains__(self, sub):
        self.seen.append(len(self))
        return str.__contains__(self, sub)

    def _region(self, lo, hi) -> None:
        n = len(self)
        lo = 0 if lo is None else (lo if lo >= 0 else max(0, n + lo))
        hi = n if hi is None else (hi if hi >= 0 else max(0, n + hi))
        self.seen.append(max(0, min(hi, n) - lo))

    def find(self, sub, lo=None, hi=None):
        self._region(lo, hi)
        return str.find(self, sub, lo, hi)

    def rfind(self, sub, lo=None, hi=None):
        self._region(lo, hi)
        return str.rfind(self, sub, lo, hi)

    def index(self, sub, lo=None, hi=None):
        self._region(lo, hi)
        return str.index(self, sub, lo, hi)

    def rindex(self, sub, lo=None, hi=None):
        self._region(lo, hi)
        return str.rindex(self, sub, lo, hi)


class _RegionCounting(_Counting):
    """_Counting, with a failed fullmatch counted as the region it was given (endpos - pos), not 1."""

    def fullmatch(self, text, pos=0, endpos=None):
        m = self.pattern.fullmatch(text, pos, len(text) if endpos is None else endpos)
        self.seen.append(m.end() - pos if m else (len(text) if endpos is None else endpos) - pos)
        return m


def _oom_work(monkeypatch, piece: str, size: int) -> int:
    from moeconsole.runner.core import crash

    seen: list[int] = []
    with monkeypatch.context() as mp:
        for name, value in list(vars(crash).items()):
            if isinstance(value, re.Pattern):
                mp.setattr(crash, name, _RegionCounting(value, seen))
        crash._first_end.cache_clear()
        line = _CountingStr(piece * (size // len(piece)))
        line.seen = seen
        crash.oom_stated(line)
        crash.oom_case_retold(line)
    return sum(seen)


@pytest.mark.parametrize("piece", [
    "Seeing a CUDA out of memory error is common. ",          # R62's rows: a gerund's scene, a prevalence
    "CUDA out of memory is the most common error. ",
    " " * 380 + "A slow leak surfaces as CUDA out of memory. ",   # a run of spaces before the gerund's lead
    "If you hit CUDA out of memory, ",                        # a hedge's: every match reads its sentence
    "Getting CUDA out of memory even though there is free memory, ",
    "这类错误通常表现为CUDA out of memory，",
    "The crash manifests as CUDA out of memory; ",
    "Memory_Allocation_Failure(EL0004): Failed to allocate memory means the HBM is full. ",
])
def test_the_oom_rules_work_in_the_lines_length_counting_every_scan(monkeypatch, piece):
    small = _oom_work(monkeypatch, piece, 20_000)
    large = _oom_work(monkeypatch, piece, 40_000)
    assert large <= 2.5 * small, (small, large)
