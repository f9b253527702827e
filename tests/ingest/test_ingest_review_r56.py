"""Review R56 of log batch 50's readers: a reading context a runner before batch 50 saved no longer
named a Spark-prefixed line's shape (epochs lost or steps renumbered across the upgrade); the best
round LightGBM and XGBoost restate after early stopping read as a step going back; CDCN's stdout
mini-batch lines and an epoch line labelled "(validation)" taken as the epoch's training record;
another loop's "Iteration:N, training loss: ..., accuracy: ..." read as a LightGBM round with its
accuracy as the loss. Each input fed as bytes through the parser (the restart ones through a
runner's reader and state.json's context), checked on the records a user gets."""
from __future__ import annotations

import pytest

from moeconsole.runner.core import readctx
from moeconsole.runner.supervisor import ingest_pipe
from tests.ingest import resume_cuts
from tests.ingest.test_ingest_real_shapes import eval_losses, parse, step_losses as steps


def _records(events: list) -> list[tuple]:
    return sorted((e[1], dict(e[2]).get("loss")) for e in resume_cuts.given(events) if e[0] == "record")


# --------------------------------------------------------------------------- (1) a v5 context

def _epoch_log(prefix: str) -> bytes:
    return "".join(f"{prefix}Epoch {n}, loss: {3 - n / 10:.4f}, accuracy: {0.5 + n / 100:.3f}\n"
                   for n in range(1, 11)).encode()


def _batch_log(prefix: str) -> bytes:
    return "".join(f"{prefix}epoch {e} batch {b}/5 loss {3 - e / 10 - b / 100:.4f}\n"
                   for e in range(1, 5) for b in range(1, 6)).encode()


def _after(data: bytes, lines: int, saved: dict) -> list[tuple]:
    """The records a runner gives reading on after ``lines`` lines with the context state.json
    holds (``saved``, converted as a runner reads it)."""
    ctx = ingest_pipe._context(saved)
    assert ctx is not None   # a version this runner reads
    at = len(b"".join(data.splitlines(keepends=True)[:lines]))
    return _records(resume_cuts.read(data, at, context=ctx)[1])


SPARK = "22/06/01 10:05:00 INFO {}: "


@pytest.mark.parametrize("cls", ["Trainer", "TrainLogger$EpochListener", "org.example.Fit"])
def test_a_v5_context_of_spark_epoch_lines_reads_on_after_the_upgrade(cls):
    # a runner before batch 50 kept the logger's class in the line's shape ("Trainer: Epoch #, ...")
    # and saved its epoch shape's digests so: epochs 6-10 were lost across the upgrade
    data = _epoch_log(SPARK.format(cls))
    saved = {"v": 5, "last_step": 5, "records": 5,
             "epoch_shape": readctx.prefix_digests(f"{cls}: Epoch #, loss: #, accuracy: #")}
    assert [s for s, _ in _after(data, 5, saved)] == [6, 7, 8, 9, 10]


def test_a_v5_context_of_spark_batch_counter_lines_counts_on_not_from_one():
    # "epoch E batch B/5": the batch counter's offset across epochs; with the counter lost a new
    # runner read steps 11-20 as 1-10 (a step back, the docs' sign of a new run)
    data = _batch_log(SPARK.format("TrainLogger"))
    saved = {"v": 5, "last_step": 10, "records": 10,
             "shapes": [[readctx.digest("TrainLogger: epoch # batch #"), 5, 5, 2.0, 5, None]]}
    assert [s for s, _ in _after(data, 10, saved)] == list(range(11, 21))


@pytest.mark.parametrize("lines", [5, 7])
def test_this_versions_own_context_of_spark_lines_still_reads_on(lines):
    data = _epoch_log(SPARK.format("Trainer"))
    at = len(b"".join(data.splitlines(keepends=True)[:lines]))
    first, _ = resume_cuts.read(data[:at], over=False)
    saved = ingest_pipe._saved(first.context(), _NoRedaction())
    assert saved is not None and saved["v"] == readctx.CONTEXT_VERSION >= 6   # a v5 runner refuses it
    assert [s for s, _ in _after(data, lines, saved)] == list(range(lines + 1, 11))


def test_a_v5_context_of_unprefixed_lines_reads_on_as_before():
    data = _epoch_log("")
    saved = {"v": 5, "last_step": 5, "records": 5, "epoch_shape": readctx.prefix_digests("Epoch #, loss: #, accuracy: #")}
    assert [s for s, _ in _after(data, 5, saved)] == [6, 7, 8, 9, 10]


class _NoRedaction:
    def redact(self, text: str) -> str:
        return text


# --------------------------------------------------------------------------- (2) the best round restated

LGB_VALID = ["[300]\tvalid_0's auc: 0.655652", "[310]\tvalid_0's auc: 0.655591",
             "[320]\tvalid_0's auc: 0.655528", "[330]\tvalid_0's auc: 0.655468", "[340]\tvalid_0's auc: 0.655465"]


@pytest.mark.parametrize("head", ["Early stopping, best iteration is:", "Did not meet early stopping. Best iteration is:"])
def test_lightgbm_validation_only_best_round_after_early_stopping_is_no_step(head):
    # LightGBM's quick-start: valid_sets=[dval] only, early stopping (a public notebook's log)
    recs, p = parse(*LGB_VALID, head, "[140]\tvalid_0's auc: 0.656576")
    assert [s for s, _ in steps(recs)] == [300, 310, 320, 330, 340]
    assert [s for s, _ in eval_losses(p)][-1] == 340


def test_lightgbm_best_round_with_a_training_set_after_early_stopping_is_no_step():
    lines = [f"[{n}]\ttraining's binary_logloss: 0.{60 - n}\tvalid_1's binary_logloss: 0.{70 - n}" for n in range(1, 6)]
    recs, _ = parse(*lines, "Early stopping, best iteration is:", lines[2])
    assert [s for s, _ in steps(recs)] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("sets", [("validation_0", "validation_1"), ("train", "eval")])
def test_old_xgboost_best_round_after_stopping_is_no_step(sets):
    # XGBoost < 1.3: "Stopping. Best iteration:\n{best_msg}\n\n", best_msg the round's own line
    a, b = sets
    lines = [f"[{n}]\t{a}-logloss:0.{60 - n}\t{b}-logloss:0.{70 - n}" for n in range(5)]
    recs, _ = parse("Will train until validation_1-logloss hasn't improved in 3 rounds.", *lines,
                    "Stopping. Best iteration:", lines[1], "", "")
    assert [s for s, _ in steps(recs)] == [0, 1, 2, 3, 4]


def test_a_round_after_other_words_and_a_round_two_lines_after_the_notice_are_steps():
    recs, _ = parse(*LGB_VALID[:2], "Best iteration so far:", "[320]\tvalid_0's auc: 0.6555",
                    "Early stopping, best iteration is:", "[310]\tvalid_0's auc: 0.655591", "[330]\tvalid_0's auc: 0.6554")
    assert [s for s, _ in steps(recs)] == [300, 310, 320, 330]


# --------------------------------------------------------------------------- (3) CDCN on stdout

CDCN_MB = "epoch:{e}, mini-batch:{b:3d}, lr=0.000100, Absolute_Depth_loss= {a:.4f}, Contrastive_Depth_loss= {c:.4f}"
CDCN_EPOCH = "epoch:{e}, Train:  Absolute_Depth_loss= {a:.4f}, Contrastive_Depth_loss= {c:.4f} "


def test_cdcn_stdout_mini_batch_lines_are_not_the_epochs_record():
    # train_CDCN.py prints the running averages every 50 batches, then writes the epoch's line
    lines = []
    for e in (1, 2):
        lines += [CDCN_MB.format(e=e, b=50, a=0.0312 / e, c=0.0101), CDCN_MB.format(e=e, b=100, a=0.029 / e, c=0.0095),
                  CDCN_EPOCH.format(e=e, a=0.028 / e, c=0.0093), ""]
    recs, _ = parse(*lines)
    assert [(r["step"], r["extra"].get("Absolute_Depth_loss")) for r in recs] == [(1, 0.028), (2, 0.014)]
    assert not any("mini-batch" in r["extra"] for r in recs)


@pytest.mark.parametrize("line", ["epoch:{e}, minibatch: 50, recon_loss= {r}, kl_loss= 0.1",
                                  "epoch:{e}, mini_batch:100, recon_loss= {r}, kl_loss= 0.1",
                                  "epoch:{e}, mini batch: 50, recon_loss= {r}, kl_loss= 0.1",
                                  "Epoch {e}, Mini-Batch 50, recon_loss: {r}, kl_loss: 0.1"])
def test_an_epoch_line_with_a_mini_batch_count_and_loss_parts_is_no_epoch_record(line):
    recs, _ = parse(*(line.format(e=e, r=round(0.3 / e, 4)) for e in (1, 2)))
    assert recs == []


# --------------------------------------------------------------------------- (4) LightGBM's command line

def test_another_loops_iteration_line_keeps_its_loss_not_its_last_number():
    recs, _ = parse("Iteration:100, training loss: 0.52, accuracy: 0.8", "Iteration:200, training loss: 0.42, accuracy: 0.85")
    assert steps(recs) == [(100, 0.52), (200, 0.42)]


@pytest.mark.parametrize("lines,want", [
    # LightGBM 2016 (binary_metric.hpp "Iteration:%d, %s's %s: %f", gbdt.cpp "finished %d iteration")
    (["[LightGBM] [Info] Iteration:1, training's log loss: 0.600000", "[LightGBM] [Info] 0.1 seconds elapsed, finished 1 iteration",
      "[LightGBM] [Info] Iteration:2, training's log loss: 0.500000", "[LightGBM] [Info] 0.2 seconds elapsed, finished 2 iteration"],
     [(1, 0.6), (2, 0.5)]),
    # LightGBM since 2.0 (gbdt.cpp OutputMetric "Iteration:" << iter << ", training " << name << " : " << score)
    (["[LightGBM] [Info] Iteration:1, training binary_logloss : 0.6", "[LightGBM] [Info] Iteration:1, valid_1 binary_logloss : 0.7",
      "[LightGBM] [Info] 0.1 seconds elapsed, finished iteration 1",
      "[LightGBM] [Info] Iteration:2, training binary_logloss : 0.5", "[LightGBM] [Info] 0.2 seconds elapsed, finished iteration 2"],
     [(1, 0.6), (2, 0.5)]),
])
def test_lightgbms_own_command_line_rounds_still_read(lines, want):
    recs, _ = parse(*lines)
    assert steps(recs) == want


# --------------------------------------------------------------------------- (5) an evaluation's label

@pytest.mark.parametrize("label", ["(validation)", "(val)", "[test]", "(eval set)"])
def test_an_epoch_line_labelled_as_an_evaluation_is_no_training_record(label):
    recs, _ = parse(*(f"Epoch {e} {label} recon_loss: 0.{e} kl_loss: 0.1" for e in (5, 6)))
    assert recs == []


def test_an_epoch_line_with_loss_parts_and_no_label_is_still_the_epochs_record():
    recs, _ = parse(*(f"Epoch {e} (train) recon_loss: 0.{e} kl_loss: 0.1" for e in (5, 6)))
    assert [r["step"] for r in recs] == [5, 6]
