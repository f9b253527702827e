"""Round 22b: one long line of a Chinese (or Cyrillic, or digits) log costs the live parser a line, not its square.

The live tail reads every line with the named readers; several read a name as a run of word characters
(``[\\w.]*``, ``\\w+``, ``[\\w./-]+``; CJK and Cyrillic are ``\\w``) and were tried from every character of the
run to its end when the value after the name was absent: 0.6 s for one 8,000-character line behind a dict
(``formats._DICT_LABEL_RE``), 1.5 s for one before a colon name (``_KV_COLON_HEAD_RE``), and a line can be up to
``max_line_bytes`` (1 MB). Each line here is what a user's log can hold; the cost of reading it whole through
``LogParser.process_line`` is compared at 1k and 8k characters of the run (a line 8, a square 64; the least of
three CPU measures, no wall clock), and what the parser reads from it is what it read before the mend.

Below, each mended pattern alone, as the runner calls it, on a line of one long run of a fill and its own words:
the walk (``tests/test_patterns_linear_in_any_script``) does not measure a search under its FLOOR at 1k, and
several of these cost less than that at 1k while being squares.
"""
from __future__ import annotations

import pytest

from moeconsole.runner.ingest import formats, shape
from moeconsole.runner.ingest.parser import LogParser
from tests.test_patterns_linear_in_any_script import FILLS, _cost, anchored_use

# This file's own measure (review R71: it imported the walk's SQUARE, a bound for the walk's 2k->32k, 64 there, and
# the squares it guards against, x50-70 for 1k->8k, then passed): 1k against 8k characters, a line's cost grows 8
# times, a square's 64; a ratio of SQUARE_AT or more (three times a line's growth, under half a square's) fails.
SIZES = (1000, 8000)
SQUARE_AT = 24.0

RUN = "训练loss下降"   # a Chinese log's words with an ASCII word inside: every character is \w

# (the line at n characters of the run, the step and loss the parser reads, one value it reads beside them)
LINES = {
    "a dict behind a long prefix (split_prefixed_object)":
        (lambda n: (RUN * n)[:n] + " {'loss': 1.5, 'learning_rate': 0.001, 'epoch': 0.1}", 1, 1.5, ("lr", 0.001)),
    "an ESPnet reporter line with a long run before its pairs":
        (lambda n: "1epoch:train:1-10batch: " + ("训练" * n)[:n] + " loss=1.0, acc=0.5", 10, 1.0, ("src", "espnet")),
    "a key-value line with a long run before a name with colons":
        (lambda n: "step 3 loss 1.5 " + ("训练" * n)[:n] + "::a:time 1.0", 3, 1.5, ("extra", {"a:time": 1.0})),
    "a BasicSR line with a long run of letters between CJK after its loss":
        (lambda n: "[epoch:  1, iter:   1,000, lr:(1.000e-04,)] l_pix: 1.0e-02 " + ("训a" * n)[:n] + " x", 1000, None,
         ("lr", 0.0001)),
}


def _read(line: str) -> list:
    parser = LogParser()
    return parser.process_line(line.encode()) + parser.end_of_input()


def _ratio(method, build) -> float:
    """Cost of ``method`` on build(8000) over build(1000) (``SIZES``): the least of three CPU measures of enough
    calls to take 2 ms at 1k (a busy machine does not stretch CPU time)."""
    small, large = (build(size) for size in SIZES)
    reps = 1
    while _cost(method, small, reps, 1) < 0.002 and reps < 1 << 14:
        reps *= 2
    return _cost(method, large, reps) / _cost(method, small, reps)


@pytest.mark.parametrize("case", sorted(LINES))
def test_one_long_line_costs_the_parser_a_line_and_reads_the_same(case):
    build, step, loss, (key, value) = LINES[case]
    events = _read(build(1000))
    records = [fields for kind, fields in events if kind == "record"]
    assert len(records) == 1, events
    assert (records[0]["step"], records[0]["loss"], records[0][key]) == (step, loss, value)
    ratio = _ratio(lambda text: _read(text), build)
    assert ratio < SQUARE_AT, f"{case}: 1k->8k cost x{ratio:.0f} (a line x8, a square x64)"


# Each mended pattern, the fill whose run cost it the square before, and a line: its words around one long run.
MENDED = {
    "_DICT_LABEL_RE": ("digits", lambda run: "".join(c + "a" for c in run) + " x"),
    "_KV_COLON_HEAD_RE": ("cjk", lambda run: "a" + run + "::b"),
    "_ESPNET_PAIR_RE": ("cyrillic", lambda run: run + "=x"),
    "_CLEARERVOICE_LOSS_RE": ("cjk", lambda run: run + "_Loss"),
    "_BASICSR_PAIR_RE": ("cjk", lambda run: "".join(c + "a" for c in run) + ":"),
    "_WENET_PAIR_RE": ("cjk", lambda run: "".join(c + "a" for c in run) + " x"),
    "_DS_PIPE_EXTRA_RE": ("cyrillic", lambda run: run + ":x"),
    "_LGB_PAIR_RE": ("spaces", lambda run: run + "x's l2"),
    "shape._EVAL_NAME_SUFFIX_RE": ("spaces", lambda run: "Test" + run + "(EMA"),
}


@pytest.mark.parametrize("name", sorted(MENDED))
def test_each_mended_pattern_costs_a_line_as_the_runner_calls_it(name):
    fill, around = MENDED[name]
    module, attr = (shape, name.split(".")[1]) if name.startswith("shape.") else (formats, name)
    pattern = getattr(module, attr)
    method = getattr(pattern, anchored_use(f"{module.__name__}.{attr}") or "search")
    ratio = _ratio(method, lambda n: around((FILLS[fill] * n)[:n]))
    assert ratio < SQUARE_AT, f"{name} on a run of {fill}: 1k->8k cost x{ratio:.0f} (a line x8, a square x64)"
