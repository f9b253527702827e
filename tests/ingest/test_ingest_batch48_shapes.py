"""Line shapes of held-out batch 48 (trainers outside LLM training) that were misread: each
written from the code that prints it, fed as bytes, checked on the records a user gets, with lines
of other programs that only resemble it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps


# --------------------------------------------------------------------------- a bar trimmed to the width

def test_a_bar_trimmed_to_the_terminal_width_is_read_without_its_cut_piece():
    """tqdm trims the whole line to ncols (std.py format_meter: disp_trim(res, ncols)): the
    postfix loses its tail and its "]"; the pieces before the cut one are read."""
    recs, p = parse(
        "Epoch 81:   1%|▏         | 1/76 [00:00<00:45,  1.65it/s, loss=0.173, v_num=0, train/loss_step=0.175, global_step=6074.0, train/",
        "Epoch 81:   9%|▉         | 7/76 [00:02<00:25,  2.72it/s, loss=0.17, v_num=0, train/loss_step=0.201, global_step=6080.0, train/l")
    assert steps(recs) == [(6074, 0.175), (6080, 0.201)]


def test_a_value_cut_by_the_width_is_not_read():
    """The last piece may be cut inside its value (``lr=0.00`` of ``lr=0.0003``): never read."""
    recs, p = parse("steps:  10%|█         | 100/1000 [00:57<08:14,  1.74it/s, avr_loss=0.0725, lr=0.00",
                    "steps:  20%|██        | 200/1000 [01:54<07:08,  1.75it/s, avr_loss=0.0715, lr=0.00")
    assert steps(recs) == [(100, 0.0725), (200, 0.0715)]
    assert all(r["lr"] is None for r in recs)


def test_a_message_glued_to_a_bar_without_its_bracket_is_still_read():
    """A bar missing its "]" with a dict glued after the rate is no trimmed postfix (no ", " after
    the rate): the dict is read as before."""
    recs, p = parse("{'loss': 0.329, 'learning_rate': 5e-05}",
                    "  0%|          | 1/13000 [00:10<36:34:36, 10.13s/it]{'loss': 0.5, 'learning_rate': 5e-05}",
                    "  0%|          | 2/13000 [00:28<54:33:11, 15.11s/it{'loss': 0.2527, 'learning_rate': 5e-05}")
    assert [loss for _, loss in steps(recs)][-1] == 0.2527


# --------------------------------------------------------------------------- Lightning's forked step loss

def test_lightnings_forked_step_loss_is_the_loss_not_the_running_mean():
    """latent-diffusion logs f"{prefix}/loss" with on_step and on_epoch: the bar shows
    train/loss_step (the step's) beside Lightning 1.x's running mean loss=."""
    recs, p = parse("Epoch 0: 92% 920/1000 [4:08:40<23:06, 17.33s/it, loss=0.15, v_num=16, train/loss_simple_step=0.164, "
                    "train/loss_vlb_step=0.00294, train/loss_step=0.164, global_step=919.0]")
    assert steps(recs) == [(919, 0.164)]
    assert recs[0]["extra"].get("loss_smoothed") == 0.15


def test_a_step_metric_that_is_no_loss_leaves_the_running_loss():
    """Only a loss key's forked name is the step's loss: ``train/acc_step`` is not."""
    recs, p = parse("Epoch 0: 50% 500/1000 [01:00<01:00, 8.33it/s, loss=0.42, v_num=3, train/acc_step=0.91, global_step=499.0]")
    assert steps(recs) == [(499, 0.42)]


# --------------------------------------------------------------------------- a bar over the whole run

KOHYA = "steps: {pct:3d}%|████      | {n}/2000 [{t}<00:00,  1.75it/s, avr_loss={loss}]"


def test_a_steps_bar_drawn_again_at_its_total_after_a_message_is_no_next_epoch():
    """kohya's tqdm(range(max_train_steps), desc="steps") counts the run; its last
    "saving checkpoint:" line, then the bar once more at 2000/2000, is the same step."""
    recs, p = parse(KOHYA.format(pct=95, n=1900, t="18:06", loss="0.0708"),
                    "saving checkpoint: out/bg-step00001900.safetensors",
                    KOHYA.format(pct=100, n=2000, t="19:03", loss="0.0702"),
                    "saving checkpoint: out/bg-step00002000.safetensors",
                    KOHYA.format(pct=100, n=2000, t="19:04", loss="0.0702"))
    assert steps(recs) == [(1900, 0.0708), (2000, 0.0702)]


def test_description_less_bars_one_per_epoch_still_count_on():
    """SpeechBrain's bars have no description: a finished bar, other lines, then a bar of the
    same length is the next epoch, as before."""
    bar = "100%|██████████| 13/13 [00:02<00:00,  5.45it/s, train_loss={loss}]"
    recs, p = parse(bar.format(loss="6.18"), "speechbrain.utils.epoch_loop - Going into epoch 2",
                    bar.format(loss="-2.26"))
    assert steps(recs) == [(13, 6.18), (26, -2.26)]


# --------------------------------------------------------------------------- Keras epochs elided

def test_a_keras_header_past_the_next_epoch_counts_the_epochs_left_out():
    """ProgbarLogger prints every epoch's number: after "..." the header says where the run is."""
    bar = "1/1 [==============================] - 0s 3ms/step - loss: {loss}"
    recs, p = parse("Epoch 1/450", bar.format(loss="206.7690"), "Epoch 2/450", bar.format(loss="199.3452"),
                    "...", "Epoch 449/450", bar.format(loss="0.8768"), "Epoch 450/450", bar.format(loss="0.8767"))
    assert steps(recs) == [(1, 206.769), (2, 199.3452), (449, 0.8768), (450, 0.8767)]
    bar = "10/10 [==============================] - 0s 3ms/step - loss: {loss}"
    recs, p = parse("Epoch 1/50", bar.format(loss="2.0"), "Epoch 7/50", bar.format(loss="1.0"))
    assert steps(recs) == [(10, 2.0), (70, 1.0)]


def test_consecutive_keras_epochs_count_as_before():
    bar = "10/10 [==============================] - 0s 3ms/step - loss: {loss}"
    recs, p = parse("Epoch 1/3", bar.format(loss="2.0"), "Epoch 2/3", bar.format(loss="1.5"),
                    "Epoch 3/3", bar.format(loss="1.0"))
    assert steps(recs) == [(10, 2.0), (20, 1.5), (30, 1.0)]


# --------------------------------------------------------------------------- a comment's "#"

def test_a_commented_sample_factory_line_keeps_its_stamp_a_prefix():
    """A run description keeping each run's last report in comments: the millisecond field of
    "# [2020-04-29 22:12:31,036][16355]" is no step."""
    recs, p = parse("# [2020-04-29 22:12:31,035][16355] Fps is (10 sec: 0.0, 60 sec: 2166.8, 300 sec: 1322.3). "
                    "Total num frames: 983040. Throughput: 0: 2348.7. Samples: 1046959. Policy #0 lag: (min: 156.0, avg: 156.6, max: 412.0)",
                    "# [2020-04-29 22:12:31,036][16355] Avg episode reward: [(0, '124.200')]",
                    "# [2020-04-29 22:42:36,124][19233] Fps is (10 sec: 3254.8, 60 sec: 2714.5, 300 sec: 2706.0). "
                    "Total num frames: 999424. Throughput: 0: 2444.4. Samples: 999711. Policy #0 lag: (min: 240.0, avg: 243.5, max: 496.0)",
                    "# [2020-04-29 22:42:36,124][19233] Avg episode reward: [(0, '822.773')]")
    assert [r["step"] for r in recs] == [983040, 999424]


def test_a_markdown_heading_is_no_commented_log_line():
    """Only a "#" before a bracketed date is a comment's marker: a heading stays prose."""
    recs, p = parse("### Task 1: Cache pipeline", "## Step 3 results", "# 2 runs")
    assert recs == []


# --------------------------------------------------------------------------- Lightning 2 after a fit

L2 = "Epoch {e}: 100%|█| 12/12 [00:02<00:00,  4.93it/s, v_num=0, train_loss_step={loss}]"


def test_a_lightning_paste_is_still_counted_from_the_first_epoch_shown():
    """The corpus's convention since batch 28 (a 1.x main bar also counts the validation
    batches): the epochs before the first bar shown are not counted (batch 48 left it so)."""
    recs, p = parse("Epoch 1:  39%|███▉      | 4846/12331 [05:59<09:15, 13.47it/s, loss=0.0136, v_num=1]")
    assert steps(recs) == [(4846, 0.0136)]


def test_lightnings_model_summary_rows_are_no_records():
    recs, p = parse("  | Name    | Type              | Params | Mode",
                    "------------------------------------------------------",
                    "0 | loss_fn | BCEWithLogitsLoss | 0      | train",
                    "1 | model   | MobileNetV3Large  | 9.8 M  | train",
                    "2 | metrics | ModuleList        | 0      | train")
    assert recs == []


def test_pipe_separated_step_lines_are_still_read():
    """llama2.c's f"{iter_num} | loss {lossf:.4f} | lr {lr:e} | {dt*1000:.2f}ms | mfu ..." starts
    with a number and a pipe too: its columns are values, not a layer's name and class."""
    recs, p = parse("490 | loss 5.7543 | lr 4.9e-05 | 8060.78ms | mfu 0.21%",
                    "500 | loss 5.7012 | lr 5.0e-05 | 8061.02ms | mfu 0.21%")
    assert steps(recs) == [(490, 5.7543), (500, 5.7012)]


RULE = "─" * 89


def test_lightnings_results_table_is_one_evaluation_at_the_last_step():
    """_print_results without rich: rule, f"{stage} metric" / "DataLoader 0", rule, a row a
    metric, rule. The loss is the logged test_loss; the other rows are that evaluation's."""
    recs, p = parse(L2.format(e=0, loss="0.197"),
                    "Testing DataLoader 0: 100%|██████████| 2/2 [00:00<00:00, 48.40it/s]",
                    RULE, "       Test metric             DataLoader 0", RULE,
                    "        test_loss           0.1949172168970108",
                    " test_multilabelaccuracy        0.923828125", RULE,
                    "Testing time: 3.087925910949707 seconds")
    evals = [m for m in p.marks if m["kind"] == "eval"]
    assert [(m["step"], m["loss"]) for m in evals] == [(12, 0.1949172168970108)]
    assert evals[0]["values"]["test_multilabelaccuracy"] == 0.923828125


def test_a_line_after_the_results_table_is_read_as_any_line():
    recs, p = parse(RULE, "     Validate metric           DataLoader 0", RULE,
                    "        val_loss            0.5", RULE,
                    "step 5: loss 1.25")
    assert [(m["split"], m["loss"]) for m in p.marks if m["kind"] == "eval"] == [("val", 0.5)]
    assert steps(recs) == [(5, 1.25)]


def test_an_evaluations_duration_alone_is_no_evaluation_but_its_loss_with_a_time_is():
    recs, p = parse("step 10: loss 2.0", "Testing time: 3.08 seconds")
    assert [m for m in p.marks if m["kind"] == "eval"] == []
    recs, p = parse("step 10: loss 2.0", "test loss: 1.5, test time: 3.08")
    assert [m["loss"] for m in p.marks if m["kind"] == "eval"] == [1.5]
