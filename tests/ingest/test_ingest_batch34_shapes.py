"""Line shapes of held-out batch 34 that were misread: each written from the code that prints
it, fed as bytes, checked on the records and evaluations a user gets, with a line of another
program that only resembles it read as before."""
from __future__ import annotations

import math

from moeconsole.runner.ingest.lines import split_progbar_print
from moeconsole.runner.ingest.shape import strip_prefix
from tests.ingest.test_ingest_real_shapes import parse, eval_losses as evals


def test_terminate_on_nans_message_glued_to_the_bar_leaves_the_loss_whole():
    """Keras' bar ends an update with no newline; TerminateOnNaN prints right after it."""
    recs, _ = parse("Epoch 1/10",
                    "  3/234 [..............................] - ETA: 33:37:24 - loss: 44.4110"
                    "Batch 3: Invalid loss, terminating training",
                    "  4/234 [..............................] - ETA: 25:09:00 - loss: inf ")
    assert [r["step"] for r in recs] == [3, 4]
    assert recs[0]["loss"] == 44.411 and math.isinf(recs[1]["loss"])


def test_an_epoch_header_glued_inside_an_epoch_does_not_restart_the_epochs():
    """'Epoch 1/1000' glued to epoch 308's unfinished bar is not that bar's header."""
    recs, p = parse("Epoch 308/1000",
                    " 99/100 [============================>.] - ETA: 2s - loss: 0.2445Epoch 1/1000",
                    "100/100 [==============================] - 328s 3s/step - loss: 0.2445 - val_loss: 0.2342",
                    "Epoch 309/1000",
                    " 99/100 [============================>.] - ETA: 3s - loss: 1.5000e-04Epoch 1/1000",
                    "100/100 [==============================] - 332s 3s/step - loss: 1.2000e-04 - val_loss: nan")
    assert [(r["step"], r["loss"]) for r in recs] == [(30799, 0.2445), (30800, 0.2445),
                                                      (30899, 1.5e-04), (30900, 1.2e-04)]
    assert [s for s, _ in evals(p)] == [30800, 30900]


def test_a_keras_bar_line_is_cut_after_the_glued_value_only():
    bar = b" 3/9 [=====>........................] - ETA: 4s - loss: 0.1234 - acc: 0.5000"
    assert split_progbar_print(bar + b"Batch 3: Invalid loss, terminating training") == [
        bar, b"Batch 3: Invalid loss, terminating training"]
    assert split_progbar_print(bar + b"\r") == [bar + b"\r"]


def test_a_value_glued_to_a_word_in_another_programs_line_stays_one_line():
    # no Keras bar on the line: a MetricLogger-style line, a tqdm bar with a postfix
    other = b"Train: [ 9/10]  eta: 0:00:01 - loss: 0.2445Epoch 1/10"
    assert split_progbar_print(other) == [other]
    tqdm = b"Epoch 1:  90%|#########  | 9/10 [00:09<00:01, 1.00it/s, loss=0.2445] - acc: 0.5000Done"
    assert split_progbar_print(tqdm) == [tqdm]
    # a Keras bar whose value runs into a lower-case word is not cut (no print starts so)
    low = b" 3/9 [=====>........................] - ETA: 4s - loss: 0.1234ms"
    assert split_progbar_print(low) == [low]


def test_modded_nanogpt_lines_pasted_as_code_spans_keep_their_steps():
    """A GitHub comment's `step:1495/1770 val_loss:...` with its closing backtick on the next line."""
    _, p = parse("`step:1495/1770 val_loss:3.2778 train_time:1583613ms step_avg:1059.27ms", "`",
                 "`step:1770/1770 val_loss:3.2129 train_time:1887538ms step_avg:1066.41ms", "`")
    assert evals(p) == [(1495, 3.2778), (1770, 3.2129)]


def test_a_fence_or_a_double_backtick_is_no_code_span_opening():
    assert strip_prefix("```python") == "```python"
    assert strip_prefix("`` step 3 ``") == "`` step 3 ``"
    assert strip_prefix("` step 3") == "` step 3"
    assert strip_prefix("`step:3/10 loss:1.5") == "step:3/10 loss:1.5"


# --- since the review after batch 34 -----------------------------------------------------------------------------

KERAS3_BAR = ("\x1b[1m 3/10\x1b[0m \x1b[32m━━━━━━\x1b[0m\x1b[37m━━━━━━━━━━━━━━\x1b[0m \x1b[1m4s\x1b[0m 500ms/step"
              " - loss: 44.4110")


def test_a_keras_3_bar_as_a_log_keeps_it_in_colour_is_cut_too():
    """Keras 3's Progbar always colours its count and bar (keras/src/utils/progbar.py: bar =
    f"\\x1b[1m{bar}\\x1b[0m "): a tee'd log keeps the codes between the count and the bar."""
    recs, _ = parse("Epoch 1/10", KERAS3_BAR + "Batch 3: Invalid loss, terminating training")
    assert [(r["step"], r["loss"]) for r in recs] == [(3, 44.411)]


def test_tensorflows_own_prints_glued_to_a_keras_bar_leave_its_value_whole():
    """TF's Python warnings ('WARNING:tensorflow:...') and its C++ log lines (a date first) land
    right after the bar's last value as TerminateOnNaN's message does."""
    recs, _ = parse("Epoch 1/5",
                    "  2/100 [>.............................] - ETA: 1:23 - loss: 2.3026WARNING:tensorflow:Callback "
                    "method `on_train_batch_end` is slow compared to the batch time",
                    "  3/100 [>.............................] - ETA: 5:00 - loss: 2.30252021-07-15 12:34:56.789012: "
                    "I tensorflow/stream_executor/cuda/cuda_dnn.cc:359] Loaded cuDNN version 8100")
    assert [(r["step"], r["loss"]) for r in recs] == [(2, 2.3026), (3, 2.3025)]


def test_a_line_of_thousands_of_redraws_with_glued_prints_is_cut_without_recursion():
    """A bar redrawn with \\b and a print glued after each update, never a newline: one cut each
    (before, one recursive call per cut: past Python's recursion limit the whole line was lost)."""
    bar = b" 3/9 [=====>........................] - ETA: 4s - loss: 0.1234"
    parts = split_progbar_print((bar + b"Batch 3: x") * 3000)
    assert len(parts) == 3001 and parts[0] == bar and parts[1] == b"Batch 3: x" + bar


def test_a_python_logging_line_with_dashes_is_not_searched_for_a_bar():
    line = b"2026-05-01 10:00:00,123 - trainer - INFO - step 3/9 - loss: 0.1234Done"
    assert split_progbar_print(line) == [line]
