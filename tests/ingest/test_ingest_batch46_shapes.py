"""Line shapes of held-out batch 46 (trainers outside LLM training) that were misread: each
written from the code that prints it, fed as bytes, checked on the records a user gets, with lines
of other programs that only resemble it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps


# --------------------------------------------------------------------------- rl_games

def test_rl_games_reports_of_every_version_are_records_at_their_epochs():
    """a2c_common.py print_statistics (2023 on, the totals printed when not -1), 2022-09's
    "frame: F/FM", 2022-04's ".1f" rates with two spaces before "fps total"."""
    recs, p = parse("fps step: 112918 fps step and policy inference: 104337 fps total: 78179 epoch: 1/150 frames: 0",
                    "fps step: 416 fps step and policy inference: 409 fps total: 337 epoch: 2/150 frames: 507904/9830400",
                    "fps step: 408 fps step and policy inference: 401 fps total: 332 epoch: 3 frames: 524288",
                    "fps step: 408 fps step and policy inference: 401 fps total: 332 epoch: 4 frames: 540672/9830400")
    assert steps(recs) == [(1, None), (2, None), (3, None), (4, None)]
    assert recs[0]["max_steps"] == 150 and recs[0]["src"] == "rl_games"
    assert recs[1]["extra"]["frames"] == 507904 and recs[1]["extra"]["fps_step"] == 416
    recs, p = parse("fps step: 261574 fps step and policy inference: 230705 fps total: 181660 epoch: 376/500 frame: 24576000/-1",
                    "fps step: 61574.3 fps step and policy inference: 30705.1  fps total: 21660.0 epoch: 377/500")
    assert steps(recs) == [(376, None), (377, None)]
    assert recs[1]["max_steps"] == 500 and recs[1]["extra"]["fps_total"] == 21660.0


def test_lines_that_only_resemble_an_rl_games_report_are_not_its_records():
    """The oldest report names no epoch (no step); other words after the frames are not
    rl_games' line."""
    recs, p = parse("fps step: 1234.5 fps step and policy inference: 1100.0 fps total: 999.0",
                    "fps step: 416 fps step and policy inference: 409 fps total: 337 epoch: 32/200 frames: 507904 done")
    assert all(r["src"] != "rl_games" for r in recs)
    assert all(r["step"] != 32 for r in recs)


# --------------------------------------------------------------------------- OneTrainer

BAR = "step: 100%|██████████| 39/39 [{t}<00:00,  {rate}s/it, loss={loss}, smooth loss={smooth}]"


def test_finished_bars_one_under_another_are_the_epochs_one_after_another():
    """GenericTrainer makes tqdm(..., desc="step", total=current_epoch_length) anew each epoch;
    each closed bar stays on its line: new values and a new rate, another bar."""
    recs, p = parse(BAR.format(t="01:28", rate="2.27", loss="0.00467", smooth="0.133"),
                    BAR.format(t="02:16", rate="3.50", loss="0.287", smooth="0.139"),
                    BAR.format(t="01:09", rate="1.79", loss="0.313", smooth="0.131"),
                    "epoch: 100%|██████████| 3/3 [04:53<00:00, 97.67s/it]")
    assert steps(recs) == [(39, 0.00467), (78, 0.287), (117, 0.313)]


def test_one_bar_drawn_again_at_its_total_stays_one_step():
    """update() then set_postfix() at the last count: one rate, two postfixes; close() then
    draws the last state again (the same postfix, the rate of the whole run)."""
    recs, p = parse("Steps: 100%|██████████| 101/101 [03:23<00:00,  1.98s/it, lr=1e-5, step_loss=0.0323]",
                    "Steps: 100%|██████████| 101/101 [03:23<00:00,  1.98s/it, lr=1e-5, step_loss=0.0456]",
                    "Steps: 100%|██████████| 101/101 [03:32<00:00,  2.11s/it, lr=1e-5, step_loss=0.0456]")
    assert steps(recs) == [(101, 0.0456)]


def test_a_finished_bar_with_its_rate_unknown_drawn_again_stays_one_step():
    """tqdm prints "?it/s" before it has measured a rate: no new rate, no new bar."""
    recs, p = parse("step: 100%|██████████| 39/39 [01:28<00:00, ?it/s, loss=0.1]",
                    "step: 100%|██████████| 39/39 [01:29<00:00, ?it/s, loss=0.2]")
    assert [r["step"] for r in recs] == [39]


# --------------------------------------------------------------------------- epoch lines with a note

def test_an_epoch_line_with_another_note_after_its_values_is_still_a_record():
    """An early-stopping loop marks the epochs that improved and counts the others' patience."""
    recs, p = parse("Epoch: 001, Loss: 1.8883, Test MAE: 1.0745 [New Best Model Saved]",
                    "Epoch: 039, Loss: 0.2282, Test MAE: 0.7743 [New Best Model Saved]",
                    "Epoch: 045, Loss: 0.1300, Test MAE: 0.8256 (Patience: 6/10)",
                    "",
                    "Early Stopping Triggered. (Best MAE: 0.7743)")
    assert steps(recs) == [(1, 1.8883), (39, 0.2282), (45, 0.13)]


def test_a_line_of_other_values_after_epoch_lines_is_no_epoch_record():
    recs, p = parse("Epoch: 001, Loss: 1.8883, Test MAE: 1.0745 [New Best Model Saved]",
                    "Epoch: 002, Loss: 1.5000, Test MAE: 1.0000 [New Best Model Saved]",
                    "Epoch: 003, Test MAE: 0.9000, Loss: 1.2000 (Patience: 1/10)")
    assert steps(recs) == [(1, 1.8883), (2, 1.5)]
