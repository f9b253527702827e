"""Line shapes of held-out batch 42 (trainers outside LLM training) that were misread: each
written from the code that prints it, fed as bytes, checked on the records and evaluations a user
gets, with lines of other programs that only resemble it read as before."""
from __future__ import annotations

import math

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps, eval_losses as evals

RULE = "\u2500" * 30


def test_dreamerv3_step_rule_then_its_wrapped_slash_report_is_one_record_at_the_step():
    """embodied/core/logger.py TerminalOutput: console.rule(f'[green bold]Step {step}'), then
    console.print(' [blue]/[/blue] '.join(f'{k} {v}' ...)) wrapped to the terminal, print('')."""
    recs, p = parse(f"{RULE} Step 15104 {RULE}",
                    "episode/length 3000 / episode/score 0.09 / episode/reward_rate 0 /         ",
                    "train/action_mean -0.04 / train/actor_opt_grad_norm 7e-6 / train/actor_opt_loss -8.29 /",
                    "",
                    f"{RULE} Step 20480 {RULE}",
                    "episode/score 0.12 / train/model_loss nan /",
                    "")
    assert steps(recs) == [(15104, None), (20480, None)]
    assert recs[0]["extra"]["episode/score"] == 0.09
    assert recs[0]["extra"]["train/actor_opt_loss"] == -8.29


def test_dreamerv3_report_line_cut_inside_a_pair_keeps_the_rest_of_the_record():
    """rich wraps the joined report anywhere: a name at a line's end, its value on the next."""
    recs, p = parse(f"{RULE} Step 381545 {RULE}",
                    "train/cont_neg_acc 0 / train/extr_critic_critic_opt_loss",
                    "1.4e4 / train/extr_critic_mag 0 / train/image_loss_mean 3490.35 /", "")
    assert steps(recs) == [(381545, None)]
    assert recs[0]["extra"]["train/image_loss_mean"] == 3490.35


def test_a_rule_without_a_step_or_a_line_of_words_after_it_is_no_dreamer_record():
    """A rich rule titled otherwise, and a prose line after a step rule, give nothing of it."""
    recs, p = parse(f"{RULE} Summary {RULE}", "loss 0.5 / acc 0.9 /", f"{RULE} Step 7 {RULE}",
                    "Saving checkpoint to logdir now", "step 9 loss 1.5")
    assert all(r["src"] != "dreamer" or r["step"] == 7 for r in recs)
    assert (9, 1.5) in steps(recs) and 0.5 not in [r["loss"] for r in recs]


def test_chainerrl_scores_txt_rows_are_records_at_their_steps():
    """chainerrl/experiments/evaluator.py: '\\t'.join of ('steps', 'episodes', 'elapsed', 'mean',
    'median', 'stdev', 'max', 'min') and the agent's statistics; rows of str(x), a one-element
    numpy array printed "[-2.17921662]"."""
    recs, p = parse("steps\tepisodes\telapsed\tmean\tmedian\tstdev\tmax\tmin\taverage_v\taverage_loss_policy",
                    "50099\t52\t992.45\t-19.8\t-20.0\t0.91\t-18.0\t-21.0\t[-2.17921662]\t-0.0195",
                    "100524\t96\t2090.0\t-18.6\t-19.0\t1.64\t-16.0\t-21.0\t[ 0.08042493]\t-0.1209")
    assert steps(recs) == [(50099, None), (100524, None)]
    assert recs[0]["extra"]["average_v"] == -2.17921662 and recs[1]["extra"]["average_v"] == 0.08042493
    assert recs[0]["extra"]["mean"] == -19.8


def test_a_tab_table_whose_steps_column_is_not_first_in_scores_order_is_not_read_so():
    """Only ChainerRL's own first columns name "steps" the step: another table with a "steps"
    column, or a bracketed list cell in a table of another header, is not read as its rows."""
    recs, p = parse("episodes\tsteps\tmean", "52\t50099\t-19.8",
                    "step\tloss\tv", "10\t0.5\t[1.0, 2.0]")
    assert steps(recs) == []


def test_nnunet_v1_val_loss_in_eval_mode_is_the_epochs_evaluation():
    """nnunet/training/network_training/network_trainer.py (2019): print_to_log_file("val loss
    (train=False): %.4f" % self.all_val_losses[-1]); with also_val_in_tr_mode also "val loss
    (train=True): %.4f", that evaluation run again in training mode: no evaluation of its own."""
    recs, p = parse("epoch:  42", "2019-12-22 18:23:23.210800: train loss : -0.9671",
                    "2019-12-22 18:23:30.078278: val loss (train=False): -0.9747",
                    "2019-12-22 18:23:30.100000: val loss (train=True): -0.9500",
                    "2019-12-22 18:23:31.196459: This epoch took 148.683396 s")
    assert steps(recs) == [(42, -0.9671)]
    assert evals(p) == [(42, -0.9747)]   # the train=True line is no evaluation of its own (R26)


def test_a_nan_value_after_its_equals_sign_is_read_whatever_name_follows():
    """Learning-to-See-in-the-Dark's train_Sony.py prints "%d %d Loss=%.3f Time=%.3f": with a
    NaN loss the capitalised "Time=" after it made the NaN a word of a name "Loss=nan Time" (the
    line's loss lost; an epoch line so printed gave no record at all)."""
    recs, p = parse("Epoch 3 Loss=nan Time=0.040", "Epoch 4 Loss=0.5 Time=0.041")
    assert [r["step"] for r in recs] == [3, 4]
    assert math.isnan(recs[0]["loss"]) and recs[1]["loss"] == 0.5


def test_megatrons_number_of_nan_iterations_is_still_a_name_not_a_nan_loss():
    """Megatron's training_log: "number of nan iterations: 0" (the NaN a word of the name)."""
    recs, p = parse(" iteration       10/     100 | lm loss: 2.500000E+00 | number of skipped iterations:   0 |"
                    " number of nan iterations:   0 |")
    assert steps(recs) == [(10, 2.5)]


def test_acme_learner_rows_are_records_at_learner_steps_and_actor_rows_are_not():
    """acme/utils/loggers/terminal.py: f'[{_format_key(label)}] ' + ' | '.join(f'{_format_key(k)}
    = {_format_value(v)}' for k, v in sorted(values.items())); the learner's counter is
    "learner_steps"; the actor's and the evaluator's rows report episodes."""
    glog = "I0925 18:52:06.416487 140563283464576 terminal.py:91] "
    recs, p = parse(glog + "[Learner] Actor Steps = 825 | Critic Loss = 0.097 | Learner Steps = 2 | Loss = -0.374 | Param Norm = 48.7",
                    glog + "[Actor] Actor Episodes = 2 | Actor Steps = 1678 | Episode Return = -21.0 | Learner Steps = 2",
                    glog + "[Evaluator] Episode Return = -21.0 | Evaluator Steps = 2295 | Learner Steps = 2",
                    glog + "[Learner] Learner Steps = 3 | Loss = -0.275")
    assert steps(recs) == [(2, -0.374), (3, -0.275)]
    assert recs[0]["extra"]["critic_loss"] == 0.097


def test_a_learner_label_before_other_text_is_no_acme_row():
    recs, p = parse("[Learner] starting with 4 actors", "[Learner] Learner Steps = x | Loss = 0.5")
    assert steps(recs) == []
