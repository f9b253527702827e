"""Line shapes of held-out batch 55 that were misread: each written from the code that prints it,
fed as bytes, checked on the records a user gets, with lines of other programs that only resemble
it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import eval_losses, parse, step_losses as steps


def _fields(recs, *names):
    return [tuple(r[n] for n in names) for r in recs]


# ------------------------------------------------- scepter: the first param group's lr
# scepter modules/solver/base_solver.py collect_log_vars: ret[f'pg{idx}_lr'] = pg['lr'] per param
# group, printed by hooks/log.py _print_iter_log as f'{k}: {v}' after the step's values.

def test_scepter_pg0_lr_is_the_runs_lr_the_other_groups_are_extras():
    recs, _ = parse("scepter [INFO] 2024-10-06 20:19:51,817 [File: log.py Function: _print_iter_log at line 71]  "
                    "Stage [train] iter: [10/500], data_time: 1.0402(1.0402), time: 1.4696(1.4696), "
                    "loss: 0.0978(0.0978), pg0_lr: 0.000100, pg1_lr: 0.000010, scale: 65536.000000, "
                    "[35secs 2.00%(29mins 15secs)]")
    assert _fields(recs, "step", "loss", "lr", "max_steps", "step_time_s") == [(10, 0.0978, 0.0001, 500, 1.4696)]
    assert recs[0]["extra"]["pg1_lr"] == 0.00001


def test_a_second_groups_lr_alone_is_no_lr():
    recs, _ = parse("Stage [train] iter: [10/500], data_time: 1.0402(1.0402), time: 1.4696(1.4696), "
                    "loss: 0.0978(0.0978), pg1_lr: 0.000100, [35secs 2.00%(29mins 15secs)]")
    assert _fields(recs, "step", "lr") == [(10, None)]


# ------------------------------------------------- Chinese-CLIP: "Global Steps: n/N" is the step
# cn_clip/training/train.py: f"Global Steps: {step + 1}/{args.max_steps} | " + f"Train Epoch: {epoch + 1}
# [{num_samples}/{samples_per_epoch} ({percent_complete:.0f}%)] | " + f"Loss: ..." (the accuracies
# only with report_training_batch_acc), "Batch Time: {:.3f}s", "LR: {:5f}".

def _clip(step: int, samples: int, loss: float, lr: str) -> str:
    return (f"2023-01-14,20:32:17 | INFO | Rank 0 | Global Steps: {step}/5215 | Train Epoch: 1 "
            f"[{samples}/250320 (0%)] | Loss: {loss:.6f} | Data Time: 0.019s | Batch Time: 0.361s | "
            f"LR: {lr} | logit_scale: 4.605 | Global Batch Size: 48")


def test_chinese_clip_lines_are_read_at_their_global_step_not_the_sample_count():
    recs, _ = parse(_clip(10, 480, 0.551259, "0.000000"), _clip(20, 960, 0.655716, "0.000001"))
    assert _fields(recs, "step", "loss", "lr", "max_steps", "step_time_s") == [
        (10, 0.551259, 0.0, 5215, 0.361), (20, 0.655716, 1e-06, 5215, 0.361)]


def test_the_epoch_and_sample_counter_alone_read_as_before():
    """Without "Global Steps" the bracket is the only counter, as before (the mnist example's shape)."""
    recs, _ = parse("Train Epoch: 1 [480/250320 (0%)] | Loss: 0.551259 | LR: 0.000001")
    assert steps(recs) == [(480, 0.551259)]


# ------------------------------------------------- stable-baselines' table without its dashes
# stable-baselines 2.10.2 logger.py HumanOutputFormat.writekvs: the sorted rows between two lines
# of dashes; ppo2.py learn logs serial_timesteps, n_updates, total_timesteps, fps, ..., the losses.

_SB3_ROWS = ("| rollout/           |          |", "|    ep_len_mean     | 200      |",
             "| time/              |          |", "|    total_timesteps | 4096     |",
             "| train/             |          |", "|    loss            | 6.04     |",
             "|    learning_rate   | 0.0003   |")


def test_sb3_rows_pasted_without_the_dashes_are_the_table():
    recs, _ = parse(*_SB3_ROWS)   # the log ends inside the rows
    assert _fields(recs, "step", "loss", "lr") == [(4096, 6.04, 0.0003)]
    recs, _ = parse(*_SB3_ROWS, "", "step 5000: loss 1.5")   # the line after the rows is read as usual
    assert steps(recs) == [(4096, 6.04), (5000, 1.5)]


def test_sb2_rows_without_dashes_and_without_a_loss():
    recs, _ = parse("| approxkl           | 0.00069229305 |", "| n_updates          | 782           |",
                    "| policy_loss        | -0.011813248  |", "| total_timesteps    | 100096        |",
                    "| value_loss         | 0.4478733     |", "What do these values mean?")
    assert steps(recs) == [(100096, None)]


def test_other_two_column_tables_and_rows_without_the_timesteps_read_as_before():
    """A pasted table of settings (``| steps | 1000 |``) is no stable-baselines table, and the
    learners' rows without their total timesteps name no step: nothing is invented, the line
    after them is read."""
    for rows in (("| steps | 1000 |", "| lr | 0.001 |"), ("| fps | 120 |", "| policy_loss | -0.01 |")):
        recs, _ = parse(*rows, "step 7: loss 1.5")
        assert steps(recs) == [(7, 1.5)], rows


# ------------------------------------------------- torch-ngp's bar: the values in its description
# NeuralLift-360 nerf/utils.py Trainer.train_one_epoch (torch-ngp's, stable-dreamfusion's):
# bar_format='{desc}: {percentage:3.0f}% {n_fmt}/{total_fmt} [{elapsed}<{remaining}, {rate_fmt}]',
# pbar.set_description(f"loss={loss_val:.4f} ({mean:.4f}), lr={lr:.6f}"), a bar per epoch.

def _ngp(n: int, loss: str, mean: str, lr: str | None = "0.000100") -> str:
    desc = f"loss={loss} ({mean})" + (f", lr={lr}" if lr is not None else "")
    return f"{desc}: : {100 * n // 100:3d}% {n}/100 [01:47<03:04,  2.97s/it]"


def test_torch_ngp_bars_give_the_steps_values_at_the_count_across_epochs():
    recs, _ = parse("==> Start Training ws Epoch 1, lr=0.000100 ...", _ngp(99, "0.5000", "0.6000"),
                    _ngp(100, "0.4000", "0.5000"), "==> Finished Epoch 1.",
                    "==> Start Training ws Epoch 2, lr=0.000100 ...", _ngp(1, "0.3000", "0.3000"),
                    _ngp(2, "nan", "nan"))
    assert [s for s, _ in steps(recs)] == [99, 100, 101, 102]
    assert [r["lr"] for r in recs] == [0.0001] * 4 and recs[0]["extra"]["loss_mean"] == 0.6
    assert recs[0]["max_steps"] is None   # the bar counts one epoch
    recs, _ = parse(_ngp(38, "nan", "nan") + "WARNING:tensorboardX.x2num:NaN or Inf found in input tensor.")
    assert [r["step"] for r in recs] == [38]


def test_an_evaluation_bar_and_a_description_without_values_read_as_before():
    """evaluate_one_epoch draws the same bar with the loss alone: without the lr no step is read."""
    recs, _ = parse(_ngp(1, "0.1000", "0.2000", lr=None), _ngp(2, "0.1000", "0.2000", lr=None))
    assert recs == []
    recs, _ = parse("Epoch 1: loss=0.1000:  50%|█████     | 1/2 [00:01<00:01,  1.00s/it]")
    assert recs == []


# ------------------------------------------------- DeepSpeed's report as its engine starts
# deepspeed runtime/engine.py DeepSpeedEngine.__init__: _configure_optimizer, _configure_lr_scheduler,
# self._report_progress(0); a step reports global_steps + 1 every steps_per_print.

def test_deepspeeds_step_zero_report_is_no_step_its_later_reports_are():
    recs, _ = parse("[2024-07-02 10:42:54,313] [INFO] [logging.py:96:log_dist] [Rank 0] step=0, skipped=0, "
                    "lr=[1e-05], mom=[(0.9, 0.999)]",
                    "[2024-07-02 10:43:54,313] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, "
                    "lr=[1e-05], mom=[(0.9, 0.999)]")
    assert _fields(recs, "step", "lr") == [(10, 1e-05)]


# ------------------------------------------------- fastai's table as a markdown table, nolearn's table
# fastprogress NBMasterBar.write(line, table=True) -> text2html_table: GitHub's editor pastes the
# HTML table as "a | b" rows under a "-- | --" row. nolearn 0.5 lasagne.py NeuralNet.fit prints
# " Epoch  |  Train loss  |  Valid loss  |  Train / Val  |  Valid acc  |  Dur" and a row per epoch.

def test_fastai_table_pasted_as_markdown():
    recs, p = parse("epoch | train_loss | valid_loss | accuracy | time", "-- | -- | -- | -- | --",
                    "0 | 0.512345 | 0.412345 | 0.900000 | 00:10", "1 | 0.312345 | 0.302345 | 0.920000 | 00:10")
    assert steps(recs) == [(0, 0.512345), (1, 0.312345)]
    assert eval_losses(p) == [(0, 0.412345), (1, 0.302345)]


def test_fine_tunes_two_tables_both_epoch_0_are_both_read():
    recs, p = parse("epoch | train_loss | valid_loss | error_rate | time", "-- | -- | -- | -- | --",
                    "0 | 0.139242 | 0.033724 | 0.009472 | 26:43", "",
                    "epoch\ttrain_loss\tvalid_loss\terror_rate\ttime", "0\t0.052510\t0.019551\t0.008119\t35:40")
    assert steps(recs) == [(0, 0.139242), (0, 0.05251)]
    assert eval_losses(p) == [(0, 0.033724), (0, 0.019551)]


def test_nolearns_table_with_its_colours_duration_and_accuracy():
    recs, p = parse(" Epoch  |  Train loss  |  Valid loss  |  Train / Val  |  Valid acc  |  Dur",
                    "--------|--------------|--------------|---------------|-------------|-------",
                    "     1  |  \x1b[94m  0.056823\x1b[0m  |  \x1b[32m  0.019580\x1b[0m  |     2.902030  "
                    "|    0.99120  |  13.9s",
                    "     2  |    0.062345  |    0.021111  |     2.953060  |    0.99300  |  13.7s")
    assert steps(recs) == [(1, 0.056823), (2, 0.062345)]
    assert eval_losses(p) == [(1, 0.01958), (2, 0.021111)]
    assert recs[0]["extra"]["epoch_time_s"] == 13.9


def test_tables_that_only_resemble_fastais_or_nolearns_read_as_before():
    """A markdown header with spaced names is neither fastai's nor nolearn's; nolearn's header
    without its training and validation losses is another table."""
    recs, p = parse("epoch | train loss | valid loss | time", "-- | -- | -- | --", "0 | 0.512345 | 0.412345 | 00:10")
    assert (recs, eval_losses(p)) == ([], [])
    recs, p = parse(" Epoch  |  Loss  |  Acc", "     1  |  0.5  |  0.9")
    assert (recs, eval_losses(p)) == ([], [])
