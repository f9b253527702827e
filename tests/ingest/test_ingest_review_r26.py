"""Review R26 of log batch 42: DreamerV3's step block taking other programs' lines, its named rule
unread, its unbounded record, and nnU-Net v1's train-mode validation made an evaluation of its own.
Each input fed as bytes, checked on the records and evaluations a user gets."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps, eval_losses as evals

RULE = "\u2500" * 30


def test_rows_naming_their_own_step_after_a_step_rule_are_their_own_records():
    """An agent or tool loop's ``console.rule(f"Step {step}")`` then a trainer's rows: each row names
    its step, so it is no line of a DreamerV3 report (those print each name once, no counter)."""
    recs, p = parse(f"{RULE} Step 3 {RULE}", "step 100 / loss 0.52 / lr 0.001",
                    "step 200 / loss 0.41 / lr 0.001", "step 300 / loss 0.33 / lr 0.001")
    assert steps(recs) == [(100, 0.52), (200, 0.41), (300, 0.33)]
    assert all(r["src"] != "dreamer" for r in recs)


def test_epoch_rows_after_a_dreamer_report_without_a_blank_line_do_not_join_it():
    recs, p = parse(f"{RULE} Step 15104 {RULE}", "episode/score 0.09 / train/model_loss 3.2 /",
                    "Epoch 5 / Loss 0.41", "Epoch 6 / Loss 0.39")
    dreamer = [r for r in recs if r["src"] == "dreamer"]
    assert [r["step"] for r in dreamer] == [15104]
    assert dreamer[0]["extra"] == {"episode/score": 0.09, "train/model_loss": 3.2}
    # each epoch line read on its own (after a step record, an epoch line is its summary)
    read = [m["values"].get("loss") for m in p.marks if m["kind"] == "train_summary"] + [r["loss"] for r in recs]
    assert 0.41 in read and 0.39 in read


def test_a_row_repeating_a_name_of_the_report_starts_something_else():
    """TerminalOutput prints each scalar once: a name read again is not the same report."""
    recs, p = parse(f"{RULE} Step 3 {RULE}", "reward 1.0 / score 0.5", "reward 2.0 / score 0.4", "")
    dreamer = [r for r in recs if r["src"] == "dreamer"]
    assert [r["extra"] for r in dreamer] == [{"reward": 1.0, "score": 0.5}]


def test_a_wrapped_dreamer_report_still_joins_its_rule():
    recs, p = parse(f"{RULE} Step 381545 {RULE}", "train/cont_neg_acc 0 / train/extr_critic_critic_opt_loss",
                    "1.4e4 / train/extr_critic_mag 0 / train/image_loss_mean 3490.35 /",
                    "episode/score 12 / episode/length 500 /", "")
    assert steps(recs) == [(381545, None)]
    assert recs[0]["extra"]["train/image_loss_mean"] == 3490.35 and recs[0]["extra"]["episode/length"] == 500


def test_a_named_terminal_output_rule_is_read_as_the_step():
    """elements/logger.py TerminalOutput(pattern, 'Agent') (rich era):
    rule(f'[green bold]{self._name} (Step {step})')."""
    recs, p = parse(f"{RULE} Agent (Step 15104) {RULE}", "episode/score 0.09 / train/model_loss 3.2 /", "",
                    f"{RULE} Agent (Step 20480) {RULE}", "episode/score 0.12 /", "")
    assert steps(recs) == [(15104, None), (20480, None)]
    assert recs[0]["extra"]["episode/score"] == 0.09


def test_a_rule_with_unbalanced_or_other_titles_is_no_step():
    recs, p = parse(f"{RULE} Agent (Step 7 {RULE}", "episode/score 0.09 /", "",
                    f"{RULE} Agent Step 8) {RULE}", "episode/score 0.1 /", "")
    assert [r for r in recs if r["src"] == "dreamer"] == []


def test_a_dreamer_record_keeps_a_bounded_number_of_values():
    """A step rule then 256 lines of thousands of distinct pairs: one record, its values capped."""
    lines = [f"{RULE} Step 1 {RULE}"]
    n = 0
    for _ in range(40):
        lines.append(" / ".join(f"k{n + i} 1" for i in range(100)))
        n += 100
    recs, p = parse(*lines, "")
    assert steps(recs) == [(1, None)]
    assert 50 <= len(recs[0]["extra"]) <= 1000


def test_nnunet_train_mode_validation_is_no_evaluation_of_its_own():
    """nnunet network_trainer.py run_training: validate(False) then, with also_val_in_tr_mode,
    validate(True): "val loss (train=False): %.4f" then "val loss (train=True): %.4f"."""
    t = "2019-12-22 18:23:30.078278: "
    recs, p = parse("epoch:  42", t + "train loss : -0.9671", t + "val loss (train=False): -0.9747",
                    t + "val loss (train=True): -0.9500", t + "This epoch took 148.68 s", "epoch:  43",
                    t + "train loss : -0.9700", t + "val loss (train=False): -0.9800", t + "val loss (train=True): -0.9600")
    assert steps(recs) == [(42, -0.9671), (43, -0.97)]
    assert evals(p) == [(42, -0.9747), (43, -0.98)]


def test_nnunet_older_validation_loss_spelling_with_train_mode_is_one_evaluation():
    t = "2019-12-22 18:23:30.078278: "
    recs, p = parse("epoch:  42", t + "train loss : -0.9671", t + "validation loss: -0.9747",
                    t + "validation loss (train=True): -0.9500")
    assert evals(p) == [(42, -0.9747)]


def test_another_evaluation_value_line_is_still_read():
    """Only the train-mode repeat is left out: an evaluation line of another name is read as before."""
    t = "2019-12-22 18:23:30.078278: "
    recs, p = parse("epoch:  42", t + "train loss : -0.9671", t + "val loss (train=False): -0.9747",
                    t + "val acc: 0.95")
    assert [e for e in evals(p)][0] == (42, -0.9747) and len(evals(p)) == 2


def test_chainerrl_scores_txt_before_its_episodes_column_is_read():
    """chainerrl (2017) experiments/evaluator.py: column_names = (('steps', 'elapsed', 'mean',
    'median', 'stdev') + custom_columns), rows '\\t'.join(str(x) ...)."""
    recs, p = parse("steps\telapsed\tmean\tmedian\tstdev\taverage_q\taverage_loss",
                    "10000\t30.1\t-20.0\t-20.0\t0.0\t0.1\t0.2", "20000\t61.5\t-19.0\t-19.5\t1.2\t[0.15]\t0.18")
    assert [r["step"] for r in recs] == [10000, 20000]
    assert recs[0]["extra"]["mean"] == -20.0 and recs[1]["extra"]["average_q"] == 0.15


def test_a_tab_table_starting_steps_elapsed_otherwise_is_not_read_as_scores():
    recs, p = parse("steps\telapsed\treward", "100\t2.0\t[5.0]")
    assert recs == []


def test_dreamer_line_without_rich_keeps_each_name_as_printed():
    """elements/embodied TerminalOutput without rich: print(f'[{step}]', ' / '.join(f'{k} {v}' ...))."""
    recs, p = parse("[15104] episode/score 0.09 / train/model_loss 3.2 / train/actor_opt_loss -8.29",
                    "[20480] episode/score 0.12 / train/model_loss nan")
    assert steps(recs) == [(15104, None), (20480, None)]
    assert recs[0]["extra"] == {"episode/score": 0.09, "train/model_loss": 3.2, "train/actor_opt_loss": -8.29}


def test_a_bracketed_count_before_other_lines_is_read_as_before():
    recs, p = parse("[5] step 100 / loss 0.5", "[6] step 200 / loss 0.4")
    assert steps(recs) == [(100, 0.5), (200, 0.4)]
