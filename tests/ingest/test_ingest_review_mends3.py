"""The review of batches 32-33's parser rules: each finding fed as the framework prints it, checked
on the records and evaluations a user gets."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse


def evals(p) -> list[tuple]:
    return [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"]


TRAIN = "Epoch: [0]  [ 0/10]  eta: 0:00:10  lr: 0.000001  loss: 6.9000 (6.9000)  time: 1.0000  data: 0.5000"


def test_metric_loggers_last_batch_line_is_the_evaluation_with_its_average_loss():
    """MetricLogger.log_every prints its last line at ``i == len(iterable) - 1``: [97/98]."""
    _, p = parse(TRAIN,
                 "Test:  [ 0/98]  eta: 0:01:00  loss: 5.7000 (5.7000)  acc1: 1.0000 (1.0000)  time: 0.5",
                 "Test:  [50/98]  eta: 0:00:30  loss: 5.9000 (5.8500)  acc1: 0.5000 (0.8000)  time: 0.5",
                 "Test:  [97/98]  eta: 0:00:00  loss: 5.8000 (5.8010)  acc1: 0.7000 (0.7500)  time: 0.5")
    assert [loss for _, loss in evals(p)] == [5.801]


def test_a_loop_that_never_prints_its_last_batch_keeps_its_lines_as_evaluations():
    """The PyTorch ImageNet example's ProgressMeter prints ``if i % print_freq == 0``."""
    _, p = parse(TRAIN,
                 "Test: [180/196]\tTime  0.123 ( 0.123)\tLoss 3.7e+00 (3.9e+00)\tAcc@1  76.56 ( 76.56)",
                 "Test: [190/196]\tTime  0.123 ( 0.123)\tLoss 3.8e+00 (3.9e+00)\tAcc@1  76.56 ( 76.56)")
    assert [loss for _, loss in evals(p)] == [3.7, 3.8]
    _, p = parse(TRAIN, "Valid: [199/200] loss 2.30 (2.41)", "Val: [10/20] loss 2.5 (2.6)")
    assert len(evals(p)) == 2


def test_timm_ema_validation_is_read_as_the_plain_one():
    """timm validate(..., log_suffix=' (EMA)'): log_name = 'Test' + log_suffix."""
    _, p = parse(TRAIN,
                 "Test (EMA): [   0/30]  Time: 6.593 (6.593)  Loss:   6.723 ( 6.723)  Acc@1:   0.000 (  0.000)",
                 "Test (EMA): [  30/30]  Time: 3.856 (0.732)  Loss:   6.615 ( 6.691)  Acc@1:   0.000 (  0.076)")
    assert [loss for _, loss in evals(p)] == [6.691]


def test_a_dict_of_validation_values_with_a_best_loss_is_an_evaluation():
    """nanoGPT-style evaluation dicts: ``best_val_loss`` names no training loss."""
    recs, p = parse("{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.4}",
                    "{'val_loss': 2.31, 'val_ppl': 10.07, 'best_val_loss': 2.31, 'epoch': 0.5}")
    assert [m["loss"] for m in p.marks if m["kind"] == "eval"] == [2.31]
    assert [r["loss"] for r in recs] == [2.5]


def test_a_loss_without_a_training_prefix_leaves_a_dict_an_evaluation():
    for name in ("aux_loss", "z_loss", "hellaswag/loss", "evaluation/loss"):
        _, p = parse("{'loss': 2.5, 'learning_rate': 1e-05, 'epoch': 0.4}",
                     "{'eval_loss': 2.31, '%s': 0.5, 'epoch': 0.5}" % name)
        assert [m["loss"] for m in p.marks if m["kind"] == "eval"] == [2.31], name


YOLOV5_KEYS = ["train/box_loss", "train/obj_loss", "train/cls_loss", "metrics/precision", "metrics/recall",
               "metrics/mAP_0.5", "metrics/mAP_0.5:0.95", "val/box_loss", "val/obj_loss", "val/cls_loss",
               "x/lr0", "x/lr1", "x/lr2"]


def test_yolov5_results_csv_is_read_by_its_epochs():
    """YOLOv5/v7/v9 utils/loggers/__init__.py ``on_fit_epoch_end``: the header
    ``('%20s,' * n % tuple(['epoch'] + self.keys)).rstrip(',')``, then a row ``'%20.5g,' * n``."""
    n = len(YOLOV5_KEYS) + 1
    head = ("%20s," * n % tuple(["epoch"] + YOLOV5_KEYS)).rstrip(",")
    rows = [("%20.5g," * n % tuple([e, 0.1 - e * 0.01, 0.05, 0.02, 0.5, 0.4, 0.3 + e * 0.01, 0.2 + e * 0.01,
                                     0.09 - e * 0.01, 0.04, 0.01, 0.0033, 0.0033, 0.07])).rstrip(",")
            for e in range(3)]
    recs, p = parse(head, *rows)
    assert [r["step"] for r in recs] == [0, 1, 2]
    assert recs[2]["extra"]["metrics/mAP_0.5:0.95"] == 0.22
    assert [m["values"]["val/box_loss"] for m in p.marks if m["kind"] == "eval"] == [0.09, 0.08, 0.07]


def test_a_line_of_colon_pairs_between_commas_is_no_table_header():
    recs, _ = parse("step:5,loss:2.3,lr:0.1", "step:6,loss:2.2,lr:0.1")
    assert all(r["src"] != "csv" for r in recs)
    assert [(r["step"], r["loss"]) for r in recs] == [(5, 2.3), (6, 2.2)]


LEROBOT = "INFO 2025-05-28 12:13:{s:02d} ts/train.py:232 step:{step} smpl:{smpl} ep:{ep} epch:{epch} loss:{loss} " \
          "grdn:{g} lr:1.0e-05 updt_s:0.042 data_s:0.000"


def test_a_step_rounded_to_thousands_in_lower_case_is_no_step():
    recs, _ = parse(LEROBOT.format(s=5, step=800, smpl="6k", ep=13, epch="0.65", loss="2.331", g="68.764"),
                    LEROBOT.format(s=14, step="1k", smpl="8k", ep=16, epch="0.81", loss="2.075", g="64.323"))
    assert [r["step"] for r in recs] == [800]
    recs, _ = parse("step 1k loss 2.5", "step 2k loss 2.4")
    assert recs == []


def test_a_tqdm_count_scaled_to_thousands_is_read_as_before():
    """tqdm's unit_scale prints "1.00k/10.0k": a fraction, not a rounded step; a bar's line stays
    no record, the plain step lines around it stay records."""
    recs, _ = parse("step 999 loss 2.6",
                    "step:  10%|#         | 1.00k/10.0k [00:10<01:30, 100it/s, loss=2.5]",
                    "step:  11%|#         | 1.10k/10.0k [00:11<01:30, 100it/s, loss=2.4]",
                    "step 1100 loss 2.4")
    assert [(r["step"], r["loss"]) for r in recs] == [(999, 2.6), (1100, 2.4)]


def test_a_table_led_by_epoch_with_its_own_step_column_counts_by_that_column():
    recs, _ = parse("epoch,train/loss,train/learning_rate,train/global_step", "0.25,2.5,1e-05,50",
                    "0.5,2.4,1e-05,100")
    assert [(r["step"], r["loss"], r["lr"], r["epoch"]) for r in recs] == [(50, 2.5, 1e-05, 0.25),
                                                                          (100, 2.4, 1e-05, 0.5)]
    assert all("step" not in r["extra"] for r in recs)


def timm_train(epoch: int, n: int, loss: float) -> str:
    """timm train.py train_one_epoch: f'Train: {epoch} [{update_idx:>4d}/{updates_per_epoch} ...'."""
    return (f"Train: {epoch} [{n:>4d}/73 ({100. * (n + 1) / 73:>3.0f}%)]  Loss: {loss:#.3g} ({loss:#.3g})  "
            f"Time: 0.320s,  400.32/s  (0.470s,  272.39/s)  LR: 1.000e-05  Data: 0.217 (0.047)")


def test_a_timm_log_that_starts_in_a_later_epoch_counts_the_epochs_before_it():
    """A resumed timm run's new log starts at "Train: 5 [   0/73": its steps are the whole log's."""
    whole, _ = parse(*[timm_train(e, n, 6.5) for e in range(7) for n in (0, 72)])
    resumed, _ = parse(*[timm_train(e, n, 6.5) for e in range(5, 7) for n in (0, 72)])
    assert [r["step"] for r in resumed] == [r["step"] for r in whole][-4:] == [365, 437, 438, 510]


def test_slimes_perf_report_cut_inside_a_value_is_joined_with_its_rest():
    """slime: logger.info(f"perf {rollout_id}: {log_dict}") wrapped by a terminal inside a value."""
    for label in ("", "(MegatronTrainRayActor pid=3301) "):
        recs, _ = parse(label + "perf 3: {'perf/step_time': 12.3, 'perf/x': 0.00093463",
                        "12, 'train/loss': 2.5, 'train/step': 300}")
        assert [(r["step"], r["loss"], r["extra"]["perf/x"]) for r in recs] == [(300, 2.5, 0.0009346312)], label
