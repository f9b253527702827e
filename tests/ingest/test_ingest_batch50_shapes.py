"""Line shapes of held-out batch 50 (trainers outside LLM training) that were misread: each
written from the code that prints it, fed as bytes, checked on the records a user gets, with lines
of other programs that only resemble it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import eval_losses, parse, step_losses as steps


# --------------------------------------------------------------------------- wav2letter's update count

W2L = ("epoch:       {e} | nupdates:      {n} | lr: 0.000015 | lrcriterion: 0.000015 | runtime: 03:54:30 | "
       "bch(ms): 400.24 | loss:  {loss} | train-TER: 130.06 | dev-clean-loss:  156.15754 | dev-clean-WER: 367.43")


def test_wav2letters_nupdates_is_the_step_not_the_epoch():
    """wav2letter's getLogString prints "epoch" then "nupdates": the updates are the steps."""
    recs, p = parse(W2L.format(e=45, n=1546867, loss="263.68357"), W2L.format(e=46, n=1582023, loss="263.54657"))
    assert steps(recs) == [(1546867, 263.68357), (1582023, 263.54657)]
    assert recs[0]["epoch"] == 45 and recs[0]["lr"] == 1.5e-05


def test_an_epoch_line_without_an_update_count_is_still_at_its_epoch():
    """Without "nupdates" the same layout is an epoch's line, at the epoch, as before."""
    recs, p = parse("epoch:       45 | lr: 0.000015 | loss:  263.68357", "epoch:       46 | lr: 0.000015 | loss:  263.54657")
    assert steps(recs) == [(45, 263.68357), (46, 263.54657)]


# --------------------------------------------------------------------------- a sentence's number

def test_lightgbms_early_stopping_notice_is_no_evaluation():
    """LightGBM's "Train until valid scores didn't improve in 100 rounds." names no value."""
    recs, p = parse("[1]\ttraining's binary_logloss: 0.712679\tvalid_1's binary_logloss: 0.712513",
                    "Train until valid scores didn't improve in 100 rounds.",
                    "[2]\ttraining's binary_logloss: 0.732192\tvalid_1's binary_logloss: 0.731889")
    assert steps(recs) == [(1, 0.712679), (2, 0.732192)]
    assert eval_losses(p) == [(1, 0.712513), (2, 0.731889)]


def test_the_newer_notice_and_a_curly_apostrophe_are_sentences_too():
    recs, p = parse("step 10 loss: 0.5",
                    "Training until validation scores don’t improve for 50 rounds",
                    "Training until validation scores don't improve for 50 rounds",
                    "step 20 loss: 0.4")
    assert steps(recs) == [(10, 0.5), (20, 0.4)]
    assert eval_losses(p) == []


def test_a_metric_named_with_an_apostrophe_s_is_still_read():
    """Only a negated contraction is a sentence: LightGBM's "valid_1's l2" stays a metric."""
    recs, p = parse("[5]:  train's l2:0.0950898  valid's l2:0.100327")
    assert steps(recs) == [(5, 0.0950898)]
    assert eval_losses(p) == [(5, 0.100327)]


# --------------------------------------------------------------------------- LightGBM's 2016 command line

def lgb2016(it: int, auc: str, ll: str) -> list[str]:
    return [f"[LightGBM] [Info] Iteration:{it}, training's auc: {auc}",
            f"[LightGBM] [Info] Iteration:{it}, training's log loss: {ll}",
            f"[LightGBM] [Info] 2.4 seconds elapsed, finished {it} iteration",
            "[LightGBM] [Info] cannot find more split with gain = -inf , current #leaves=16"]


def test_lightgbm_2016_lines_of_one_iteration_are_one_record():
    """2016's metrics printed "Iteration:%d, %s's %s: %f" and the round ended with "finished %d
    iteration": one record a round, its loss the log loss (auc is a score)."""
    recs, p = parse(*lgb2016(998, "1.000000", "0.004594"), *lgb2016(999, "1.000000", "0.004589"))
    assert steps(recs) == [(998, 0.004594), (999, 0.004589)]


def test_lightgbm_cli_of_later_versions_reads_as_before():
    recs, p = parse("[LightGBM] [Info] Iteration:18, training binary_logloss : 0.19997",
                    "[LightGBM] [Info] Iteration:18, valid_1 binary_logloss : 0.200636",
                    "[LightGBM] [Info] 81.515303 seconds elapsed, finished iteration 18")
    assert steps(recs) == [(18, 0.19997)]
    assert eval_losses(p) == [(18, 0.200636)]


def test_a_finished_n_iteration_sentence_elsewhere_is_no_round():
    """Only LightGBM's exact "<seconds> seconds elapsed, finished N iteration" ends a round."""
    recs, p = parse("step 5 loss: 0.3", "we finished 3 iteration of tuning, loss: 9.9", "step 6 loss: 0.2")
    assert (3, 9.9) not in steps(recs)


# --------------------------------------------------------------------------- Spark's log4j prefix

SPARK = ("22/06/01 10:06:44 ERROR RabitTracker$TrackerProcessLogger: 2022-06-01 10:06:44,{ms} INFO "
         "[{i}]    train-logloss:{a}  eval-logloss:{b}")


def test_xgboost_rounds_behind_sparks_log4j_prefix_are_read():
    """Spark's "%d{yy/MM/dd HH:mm:ss} %p %c{1}: " before the tracker's Python logging line: the
    milliseconds of the inner stamp are no step."""
    recs, p = parse(SPARK.format(ms=668, i=15, a="0.00502", b="0.5174"), SPARK.format(ms=669, i=16, a="0.00399", b="0.5419"))
    assert steps(recs) == [(15, 0.00502), (16, 0.00399)]
    assert eval_losses(p) == [(15, 0.5174), (16, 0.5419)]


def test_a_spark_info_line_keeps_its_own_numbers():
    recs, p = parse("22/06/01 10:06:44 INFO TaskSetManager: step 120 loss: 0.25",
                    "22/06/01 10:06:45 INFO TaskSetManager: step 121 loss: 0.24")
    assert steps(recs) == [(120, 0.25), (121, 0.24)]


def test_a_date_then_a_word_and_colon_without_a_level_is_no_spark_prefix():
    """Without log4j's level the class-like word is the line's own name."""
    recs, p = parse("22/06/01 10:06:44 step: 7 loss: 0.5", "22/06/01 10:06:45 step: 8 loss: 0.4")
    assert steps(recs) == [(7, 0.5), (8, 0.4)]


# --------------------------------------------------------------------------- XGBoost without a training set

def test_xgboost_rounds_with_only_validation_sets_are_steps_without_a_loss():
    """The scikit-learn wrapper names the eval sets validation_0, validation_1: each round is a
    step taken (no training loss printed), the sets' values its evaluation."""
    rows = [f"[{i}]\tvalidation_0-logloss:0.{90 - i}\tvalidation_1-logloss:0.{95 - i}" for i in range(1, 4)]
    recs, p = parse("Will train until validation_1-logloss hasn't improved in 1000 rounds.", *rows)
    assert steps(recs) == [(1, None), (2, None), (3, None)]
    assert eval_losses(p) == [(1, 0.89), (2, 0.88), (3, 0.87)]


def test_xgboost_with_a_training_set_keeps_its_loss():
    recs, p = parse("[500]\teval-logloss:0.41906\ttrain-logloss:0.160439", "[1000]\teval-logloss:0.468176\ttrain-logloss:0.093267")
    assert steps(recs) == [(500, 0.160439), (1000, 0.093267)]
    assert eval_losses(p) == [(500, 0.41906), (1000, 0.468176)]


# --------------------------------------------------------------------------- an epoch's loss in parts

def test_an_epoch_line_with_two_loss_parts_is_the_epochs_record_without_a_loss():
    """CDCN writes 'epoch:%d, Train: Absolute_Depth_loss= %.4f, Contrastive_Depth_loss= %.4f \\n':
    the loss it steps on is their sum, never printed."""
    recs, p = parse("epoch:1262, Train: Absolute_Depth_loss= 0.0052, Contrastive_Depth_loss= 0.0033 ",
                    "epoch:1263, Train: Absolute_Depth_loss= 0.0048, Contrastive_Depth_loss= 0.0033 ")
    assert steps(recs) == [(1262, None), (1263, None)]
    assert recs[0]["extra"]["Contrastive_Depth_loss"] == 0.0033


def test_an_epoch_line_with_its_loss_keeps_it():
    recs, p = parse("epoch: 3, train_loss: 0.52, d_loss: 0.1", "epoch: 4, train_loss: 0.50, d_loss: 0.1")
    assert steps(recs) == [(3, 0.52), (4, 0.50)]


def test_an_epoch_evaluation_line_with_a_loss_part_stays_an_evaluation():
    """A validation line's losses name the evaluation (``val_``): no training record from them."""
    recs, p = parse("epoch:5, Train: Absolute_Depth_loss= 0.0052, Contrastive_Depth_loss= 0.0033 ",
                    "epoch:5, Val: val_Depth_loss= 0.0100, val_ACC= 0.5659")
    assert steps(recs) == [(5, None)]


def test_an_epoch_line_of_accuracy_only_is_no_record():
    """A metric that is no loss (accuracy alone) makes no epoch record, as before."""
    recs, p = parse("epoch:7, Train: acc= 0.91", "epoch:8, Train: acc= 0.92")
    assert steps(recs) == []


def test_an_epochs_mean_validation_losses_are_no_training_record():
    """Two loss names behind an evaluation's word ("mean val loss", "mean val ce loss") are the
    evaluation's summary, not a training epoch's parts."""
    recs, p = parse("epoch : 254, mean val loss : 0.229273, mean val ce loss: 0.125730, mean val dice : 0.667185",
                    "epoch : 255, iteration : 15304, train loss : 0.150384, train loss_ce: 0.090005")
    assert steps(recs) == [(15304, 0.150384)]
