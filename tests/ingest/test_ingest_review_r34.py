"""Review R34 of log batch 43's rules: a metric line named like an exception class whose first value
is NaN, inf, a tensor or "n/a" lost as an exception's message; the builtin ``Exception`` and a bare
``Error`` not taken as exceptions; a line naming an error stripped of its prefix twice. Each input
fed as bytes, checked on the records and evaluations a user gets."""
from __future__ import annotations

import math

import pytest

from moeconsole.runner.ingest import shape
from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps


def _step_loss(recs, step):
    return [r["loss"] for r in recs if r["step"] == step]


@pytest.mark.parametrize("line, step, loss", [
    # torchmetrics' MetricCollection keys default to the class names; compute() gives tensors
    ("MeanAbsoluteError: nan, step: 5, loss: nan", 5, math.nan),
    ("MeanSquaredError: inf | step: 6 | loss: inf", 6, math.inf),
    ("MeanAbsoluteError: tensor(0.41), step: 7, loss: 0.5", 7, 0.5),
    ("MeanAbsoluteError: tensor(0.4100, device='cuda:0'), step: 8, loss: 0.5", 8, 0.5),
    ("INFO: ValError: n/a step: 150 loss: 0.41", 150, 0.41),
    ("[rank0]: MeanSquaredError: NaN; step: 9; loss: nan", 9, math.nan),
])
def test_a_metric_named_like_an_exception_with_a_nonfinite_or_tensor_first_value_keeps_its_record(line, step, loss):
    """The NaN step is the one a user most needs to see: its line is a metric line, not a message."""
    recs, p = parse("step: 1, loss: 0.9", line)
    got = _step_loss(recs, step)
    assert len(got) == 1, steps(recs)
    assert got[0] == loss or (math.isnan(loss) and math.isnan(got[0]))


@pytest.mark.parametrize("line", [
    "RuntimeError: NaN or Inf found in input tensor.",
    "FloatingPointError: nan loss at step 3, loss: nan",
    "ValueError: inf values at step 4: loss 9.0",
])
def test_an_exception_message_that_only_begins_with_nan_or_inf_is_still_no_record(line):
    recs, p = parse("step 1 loss 0.9", "step 2 loss 0.8", line)
    assert steps(recs) == [(1, 0.9), (2, 0.8)]


@pytest.mark.parametrize("line", [
    # the builtin (traceback.format_exception_only prints no module for builtins or __main__)
    "Exception: Training diverged at step 1500, loss 87.3 above max_loss 20.0",
    "Exception: iteration 101: loss 7.5 exceeded limit",
    "[rank0]: Exception: iteration 101: loss 7.5 exceeded limit",
    # a script's own ``class Error(Exception)`` and a module's Error
    "Error: iteration 101: loss 7.5 exceeded limit",
    "shutil.Error: step 101 loss 7.5",
])
def test_the_builtin_exception_and_a_bare_error_are_no_record_and_no_summary(line):
    """Raised as RuntimeError the same message was skipped; as Exception it made a record at 1500 or a
    train_summary that moves an attempt's last step."""
    recs, p = parse("iteration 100 loss 2.1", line)
    assert steps(recs) == [(100, 2.1)]
    assert [m for m in p.marks if m["kind"] in ("train_summary", "eval")] == []


def test_a_metric_named_error_with_a_number_and_an_error_rate_still_read():
    recs, p = parse("step 1 loss 0.5", "Error: 0.12, step: 2, loss: 0.4", "step 3 loss 0.3 Mean Error: nan")
    assert (2, 0.4) in steps(recs) and (3, 0.3) in steps(recs)


def test_an_exception_between_csv_rows_is_skipped_and_the_block_stays_open():
    """docs/parsing.md: the exception line is skipped without ending a block read after the check."""
    recs, p = parse("epoch,step,loss,val_loss", "0,100,2.5,2.6", "1,200,2.1,2.2",
                    "ValueError: bad value in batch 3 shape (2, 8)", "2,300,1.9,2.0")
    assert steps(recs) == [(100, 2.5), (200, 2.1), (300, 1.9)]


def test_a_line_naming_an_error_is_stripped_of_its_prefix_once(monkeypatch):
    """An NCCL warning naming "Error: " is read by no reader: its prefix is stripped once, for the
    exception check and the stripped reading both (main stripped it twice)."""
    line = ("2026-12-01 05:31:30,123 - torch.distributed - WARNING - NCCL Error: remote process exited "
            "or there was a network error, NCCL version 2.21.5")
    calls: list[str] = []
    real = shape.strip_prefix_full

    def counting(text: str) -> str:
        if text.startswith("2026-12-01 "):   # the line before its prefix is stripped
            calls.append(text)
        return real(text)

    monkeypatch.setattr(shape, "strip_prefix_full", counting)
    recs, p = parse(line)
    assert recs == []
    assert len(calls) == 1
