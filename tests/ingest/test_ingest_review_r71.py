"""Review R71: three more lines a user's log can hold cost the live parser their square, not a line.

- a long run of digits (an id dump, a hash printed in digits): ``lines.NO_RATE_BAR_RE`` started its count at every
  digit of the run and scanned to the run's end looking for the '/' (0.48 s for 8,000 digits; a line may be 1 MB);
- a pipe-separated line (fairseq's ``| epoch 001 | loss ... | wps ...``) read after any dashes line:
  ``formats.TABLE_ROW_RE`` scanned its second cell to the line's end from each ' | ' when the line did not end in '|';
- a run holding '(' ')' or '@' (a model's repr) in a log read with a ``kv SEP`` format the user declared: a key
  started again after each of them and scanned to the run's end, whatever the separator.

Each line goes whole through ``LogParser.process_line`` (as the live tail reads it), what it reads is checked, and
its cost at 1k and 8k characters compared with this round's own measure (``test_ingest_word_run_squares``: a line
x8, a square x64, failing at ``SQUARE_AT``). The user's format is built at run time, so no walk of the runner's
module-level patterns sees it: here it is built for a family of separators.
"""
from __future__ import annotations

import pytest

from moeconsole.runner.ingest import formats
from moeconsole.runner.ingest.parser import LogParser
from moeconsole.runner.ingest.userformat import parse_line_format
from tests.ingest.test_ingest_word_run_squares import SQUARE_AT, _ratio


def _read(lines: list[str], line_format=None) -> list:
    parser = LogParser(line_format=line_format)
    events = []
    for line in lines:
        events += parser.process_line(line.encode())
    return events + parser.end_of_input()


def _records(events: list) -> list[dict]:
    return [fields for kind, fields in events if kind == "record"]


DIGITS = {"ASCII": "0123456789", "full-width": "０１２３４５６７８９"}


@pytest.mark.parametrize("digits", sorted(DIGITS))
def test_a_line_with_a_long_run_of_digits_costs_a_line(digits):
    def build(n: int) -> str:
        return "step 1 loss 2.0 ids " + (DIGITS[digits] * n)[:n]

    records = _records(_read([build(1000)]))
    assert [(r["step"], r["loss"]) for r in records] == [(1, 2.0)]
    ratio = _ratio(lambda text: _read([text]), build)
    assert ratio < SQUARE_AT, f"{digits} digits: 1k->8k cost x{ratio:.0f} (a line x8, a square x64)"
    ratio = _ratio(lambda text: _read([text]), lambda n: (DIGITS[digits] * n)[:n])
    assert ratio < SQUARE_AT, f"a line of {digits} digits alone: 1k->8k cost x{ratio:.0f}"


def test_a_no_rate_bar_is_still_read_after_a_run_of_digits():
    # NeMo's bar_format without the rate: its postfix after the remaining time (lines.NO_RATE_BAR_RE's shape),
    # here behind a digit run glued to its count (the count starts where the run starts: the same bar as before).
    from moeconsole.runner.ingest.lines import may_be_bar
    assert may_be_bar("Epoch 0: 12/100 [00:01<00:09, loss=2.0]")
    assert may_be_bar("id 98765 12/100 [00:01<00:09, loss=2.0]")
    assert not may_be_bar("id " + "1" * 5000 + " [00:01<00:09, loss=2.0]")


def _pipe_line(n: int) -> str:
    # cells a table row could hold, the line not ending in '|' (review R71's row)
    return ("| " + "a | " * n)[:n]


def test_a_pipe_separated_line_after_a_dashes_line_costs_a_line():
    # a pipe-separated progress line (older fairseq's '| epoch 001 | loss ... | wps ...', review R71) after a
    # dashes line is still read; a line of many more cells costs a line.
    events = _read(["-" * 30, "| epoch 001 | loss 2.0 | wps 3"])
    assert [(r["step"], r["loss"]) for r in _records(events)] == [(1, 2.0)], events
    ratio = _ratio(lambda text: _read(["-" * 30, text]), _pipe_line)
    assert ratio < SQUARE_AT, f"1k->8k cost x{ratio:.0f} (a line x8, a square x64)"


def test_a_stable_baselines_table_reads_the_same():
    # stable_baselines3/common/logger.py HumanOutputFormat.write: dashes, "| key | value |" rows, dashes.
    table = ["-" * 30, "| rollout/            |          |", "|    ep_rew_mean      | 12.5     |",
             "| time/               |          |", "|    total_timesteps  | 2048     |",
             "| train/              |          |", "|    loss             | 0.25     |", "-" * 30]
    records = _records(_read(table))
    assert len(records) == 1 and records[0]["step"] == 2048 and records[0]["loss"] == 0.25, records


SEPARATORS = ["=", ":", "-", "->", ":=", "(", "@", "/"]
RUNS = {"a model's repr": "Seq(Lin(", "an address": "a@", "closing brackets": "a)", "a call": "loss("}


@pytest.mark.parametrize("sep", SEPARATORS)
def test_a_declared_kv_format_costs_a_line_on_a_run_of_brackets_whatever_its_separator(sep):
    fmt = parse_line_format(f"kv {sep} iter")
    for what, run in RUNS.items():
        def build(n: int, run=run) -> str:
            return f"iter{sep}1 loss{sep}2.0 model " + (run * n)[:n]

        records = _records(_read([build(1000)], fmt))
        assert [(r["step"], r["loss"]) for r in records] == [(1, 2.0)], (what, records)
        ratio = _ratio(lambda text: _read([text], fmt), build)
        assert ratio < SQUARE_AT, f"kv {sep!r} on {what}: 1k->8k cost x{ratio:.0f} (a line x8, a square x64)"


def test_a_declared_kv_format_still_reads_a_key_inside_a_run():
    # After '(', ')' or '@' a key starts again inside its run, as before; glued to a word, digit or '.', it does not.
    got, src = parse_line_format("kv = iter").read("iter=1 loss=2.0 model Seq(lr=0.1 ((a=3 x@b=4 1(c=5 y.(d=6")
    assert src == "user"
    assert got == {"step": 1, "loss": 2.0, "Seq(lr": 0.1, "a": 3.0, "x@b": 4.0, "c": 5.0, "y.(d": 6.0}


# Round 22b's "Left", mended here: each head scanned to the next colon or tab whether a value followed or not.
# (LightGBM's pairs are read only inside a line its round pattern matched, where each scan ends at its own value;
# the pattern alone, as the walk measures it, cost the square. torchcv's second row is read only in a line holding
# "Train Iteration: ".)
def test_lightgbm_pairs_cost_a_line_on_many_heads_and_read_the_same():
    line = "[10]\ttraining's l2: 0.25\tvalid_1's l2: 0.3 + 0.01\tvalid_1's ndcg@1: 0.8"
    got = formats.read_gbdt(line)
    assert got.sets == [("training", "l2", "0.25"), ("valid_1", "l2", "0.3"), ("valid_1", "ndcg@1", "0.8")]
    for tail in (":", ": x", ""):
        ratio = _ratio(formats._LGB_PAIR_RE.findall, lambda n, tail=tail: ("x's a" * n)[:n] + tail)
        assert ratio < SQUARE_AT, f"_LGB_PAIR_RE on heads then {tail!r}: 1k->8k cost x{ratio:.0f}"


TORCHCV = ("Train Epoch: 3\tTrain Iteration: 1200\tTime 10.500s / 50iters, (0.210)\tData load 1.000s / 50iters, "
           "(0.020000)\tLearning rate = [0.00995, 0.0995]\tLoss = 0.41234567 (ave = 0.45678901)")


def test_torchcv_rows_cost_a_line_on_many_lr_heads_and_read_the_same():
    got, src = formats.read_torchcv(TORCHCV)
    assert src == "torchcv"
    assert (got["step"], got["lr"], got["loss"], got["loss_avg"], got["step_time"]) == (
        1200, "0.00995", "0.41234567", "0.45678901", "0.210")
    # a head glued before the real row's (no tab between): the first head's lr, as one search read it
    assert formats.read_torchcv(TORCHCV.replace("\tLearning rate = [", "\tLearning rate = 0.5 Learning rate = ["))[
        0]["lr"] == "0.5"

    def build(n: int) -> str:
        return "Train Epoch: 3\tTrain Iteration: 1200\t" + ("Learning rate = 0.1 " * n)[:n]

    assert formats.read_torchcv(build(1000)) is None
    ratio = _ratio(formats.read_torchcv, build)
    assert ratio < SQUARE_AT, f"torchcv heads without a tab: 1k->8k cost x{ratio:.0f} (a line x8, a square x64)"
