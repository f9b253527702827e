"""Line shapes of held-out batch 45 (LLM and MoE trainers) that were misread: each written from
the code that prints it, fed as bytes, checked on the records and evaluations a user gets, with
lines of other programs that only resemble it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps, eval_losses as evals


# --------------------------------------------------------------------------- OpenRLHF

def test_openrlhf_global_step_dicts_are_records_at_their_steps_behind_rays_label():
    """ppo_trainer.py: logger.info(f"✨ Global step {global_step}: {log_status}"), behind the
    logger's file column and Ray's actor label; an RL step names no one loss."""
    recs, p = parse("(PPOTrainer) ppo_trainer.py:547] ✨ Global step 1: {'response_length': 40.375, "
                    "'policy_loss': 0.0, 'kl': 0.0012, 'timing/generation': 2.95, 'actor_lr': 3.25e-06}",
                    "(PPOTrainer) ✨ Global step 2: {'response_length': 49.5625, 'timing/ppo_train': 3.39, "
                    "'actor_lr': 5e-07}")
    assert steps(recs) == [(1, None), (2, None)]
    assert recs[0]["extra"]["policy_loss"] == 0.0 and recs[1]["extra"]["response_length"] == 49.5625


def test_openrlhf_global_step_dict_cut_by_a_notes_ellipsis_keeps_the_values_before_it():
    recs, p = parse("✨ Global step 7: {'reward': 0.25, 'policy_loss': -0.01, ...}",
                    "✨ Global step 8: {'reward': 0.5, 'policy_loss': 0.02, …}")
    assert steps(recs) == [(7, None), (8, None)]
    assert recs[1]["extra"]["reward"] == 0.5


def test_lines_that_only_resemble_openrlhfs_step_line_are_not_its_records():
    """A dict that does not read, words after the dict, no sparkle: not OpenRLHF's line (the
    shape learner reads them as it did before)."""
    recs, p = parse("✨ Global step 3: {'reward': 0.25, 'policy_loss' -0.01}",
                    "✨ Global step 4: {'reward': 0.25} and then some words",
                    "Global step 5: {'reward': 0.25, 'policy_loss': 0.5}",
                    "step 9 loss 1.5")
    assert "openrlhf" not in {r["src"] for r in recs}
    assert steps(recs)[-1] == (9, 1.5)


def test_openrlhf_sft_gpt_loss_is_the_loss_of_a_bar_whose_remaining_time_a_note_elided():
    """sft_trainer.py sets logs_dict = {"gpt_loss": gpt_loss.item(), ...} as its bar's postfix; a
    guide's "[00:04<.., " is no tqdm rate, so the line is read by its names, gpt_loss the loss."""
    recs, p = parse("Train step of epoch 0:   5%|▌         | 1/17 [00:04<.., gpt_loss=0.793, lr=1.25e-6, grad_norm=38.9]")
    assert steps(recs) == [(1, 0.793)]
    assert recs[0]["grad_norm"] == 38.9


# --------------------------------------------------------------------------- tqdm-loggable (Levanter)

def test_tqdm_loggable_progress_line_with_a_loss_is_a_record_at_its_count():
    """tqdm_logging.py: "Progress on:%s %s/%s rate:%s remaining:%s elapsed:%s postfix:%s", the counts
    through format_sizeof with the unit."""
    recs, p = parse("Progress on:train 11.0it/18.0it rate:34.5s/it remaining:04:01 elapsed:17:46 postfix:loss=15.5",
                    "I0309 02:47:10.123456 140 tqdm_logging.py:156] Progress on:train 500it/1.00kit rate:1.2it/s "
                    "remaining:06:56 elapsed:06:56 postfix:loss=3.21, lr=0.0003")
    assert steps(recs) == [(11, 15.5), (500, 3.21)]
    assert recs[0]["max_steps"] == 18 and recs[1]["lr"] == 0.0003
    assert recs[1]["max_steps"] is None   # "1.00kit": format_sizeof rounded it


def test_tqdm_loggable_line_quoted_in_a_notes_bullet_is_read():
    recs, p = parse("    - `Progress on:train 11.0it/18.0it rate:34.5s/it remaining:04:01 elapsed:17:46 postfix:loss=15.5`")
    assert steps(recs) == [(11, 15.5)]


def test_tqdm_loggable_lines_without_a_metric_or_of_an_evaluation_are_no_training_records():
    """A count with no postfix value is progress; a bar described "eval" is no training step; a
    rounded count ("1.23kit") names no exact step."""
    recs, p = parse("Progress on:train -/18 rate:- remaining:? elapsed:00:00 postfix:-",
                    "Progress on:train 1.00it/18.0it rate:483.9s/it remaining:2:17:06 elapsed:08:04 postfix:-",
                    "Progress on:eval 106it/184it rate:2.1it/s remaining:00:37 elapsed:00:50 postfix:loss=0.693",
                    "Progress on:train 1.23kit/5.00kit rate:2.1it/s remaining:29:48 elapsed:09:45 postfix:loss=2.5")
    assert steps(recs) == []


# --------------------------------------------------------------------------- MaxText

WRAPPED = ("completed step: 29, seconds: 10.493, TFLOP/s/device: 245.836, Tokens/s/device: 1561.409,",
           "Tokens(B)/device/day: 0.135, total_weights: 8289372, loss: 0.658564, lm_loss: 0.592118,",
           "lr: 2.544001e-05, global_batch_size: 1024, mtp_loss: 0.066741, raw_mtp_loss: 0.667408,",
           "grad_norm: 0.030, raw_grad_norm: 0.030, num_zeros: 666582257, skipped_iters: 0, nan_iters: 0")


def test_maxtext_line_wrapped_after_commas_is_one_record():
    """metric_logger.py appends each field as f", {name}: {value}": the line never ends with a comma."""
    recs, p = parse(*WRAPPED)
    (r,) = recs
    assert (r["step"], r["loss"], r["lr"], r["grad_norm"], r["step_time_s"]) == (29, 0.658564, 2.544001e-05, 0.03, 10.493)
    assert r["tokens_per_s"] == 1561.409


def test_maxtext_wrapped_line_ends_at_a_line_of_its_own():
    """A wrap's rows go on with a field; the next step's head, or a message, is a line of its own."""
    recs, p = parse(WRAPPED[0], "loss: 0.5, lr: 1e-05",
                    "completed step: 30, seconds: 10.4, TFLOP/s/device: 245.8, Tokens/s/device: 1561.0, loss: 0.64")
    assert steps(recs) == [(29, 0.5), (30, 0.64)]
    recs, p = parse("completed step: 31, seconds: 10.4, TFLOP/s/device: 245.8,", "Saving checkpoint 31")
    assert steps(recs) == [(31, None)]


# --------------------------------------------------------------------------- Composer under srun

def test_composer_block_behind_sruns_label_is_read_and_its_lr_monitor_is_the_lr():
    """srun --label puts "0: " before every line of task 0, the block's indentation after it;
    LRMonitor logs f"lr-{optimizer.__class__.__name__}/group{idx}"."""
    recs, p = parse("0: [batch=1/300000000]:",
                    "0:       Train time/batch: 0",
                    "0:       Train loss/train/total: 12.0000",
                    "0:       Train lr-DecoupledAdamW/group0: 0.0001",
                    "0:       Train lr-DecoupledAdamW/group1: 0.0002",
                    "0: [batch=2/300000000]:",
                    "0:       Train loss/train/total: 11.5000")
    assert steps(recs) == [(1, 12.0), (2, 11.5)]
    assert recs[0]["lr"] == 0.0001 and recs[0]["max_steps"] == 300000000


def test_another_tasks_lines_do_not_join_a_block_and_a_later_group_is_no_lr():
    recs, p = parse("0: [batch=1/100]:",
                    "0:       Train loss/train/total: 12.0",
                    "0:       Train lr-AdamW/group3: 0.5",
                    "1:       Train loss/train/total: 99.0")
    assert steps(recs) == [(1, 12.0)]
    assert recs[0]["lr"] is None


# --------------------------------------------------------------------------- process and thread columns

def test_a_logging_formats_process_and_thread_ids_are_no_step():
    """"%(levelname)s:%(name)s p:%(process)d t:%(thread)d: %(message)s": the thread id (a pointer)
    was read as a step of a vLLM worker's message."""
    recs, p = parse("2025-08-11 16:17:39 gpu_worker.py:104 INFO:vllm.v1.worker.gpu_worker p:475093 t:140305750705984: "
                    "Sleep mode freed 71.28 GiB memory, 1.38 GiB memory is still in use.",
                    "[2025-08-11 16:20:00] INFO::(P:4242 T:139650923292480)::train - step 5 loss 1.25")
    assert steps(recs) == [(5, 1.25)]


def test_a_step_named_by_a_single_letter_word_stays_the_lines():
    recs, p = parse("p:12 loss: 1.0 step: 3")
    assert steps(recs) == [(3, 1.0)]


# --------------------------------------------------------------------------- DeepSpeed-Chat

def test_deepspeed_chat_perplexity_under_its_announcement_is_an_evaluation_at_the_last_step():
    """step1 main.py: "***** Evaluating perplexity, Epoch {e}/{E} *****", then "ppl: X" (", loss: Y"
    since 2023-09); the DeepSpeed report of the last step, waiting, is that step."""
    recs, p = parse("[2023-06-21 03:46:43,211] [INFO] [logging.py:96:log_dist] [Rank 0] step=1900, skipped=19, "
                    "lr=[4.94e-08, 4.94e-08], mom=[(0.9, 0.95), (0.9, 0.95)]",
                    "***** Evaluating perplexity, Epoch 2/2 *****",
                    "ppl: 2.159278392791748, loss: 0.7697")
    assert steps(recs) == [(1900, None)]
    assert evals(p) == [(1900, 0.7697)]
    assert p.marks[0]["values"]["ppl"] == 2.159278392791748


def test_deepspeed_chat_evaluation_behind_pdshs_host_label():
    recs, p = parse("worker-0: step 5 loss 1.0",
                    "actor-multi-node-worker-0: ***** Evaluating perplexity, Epoch 1/1 *****",
                    "actor-multi-node-worker-0: ppl: 2.16")
    assert evals(p) == [(5, None)]
    assert p.marks[0]["values"] == {"ppl": 2.16}


def test_a_perplexity_line_without_the_announcement_is_no_evaluation():
    recs, p = parse("step 5 loss 1.0", "***** Running training *****", "ppl: 2.16")
    assert evals(p) == []


def test_a_runner_restarted_at_a_waiting_deepspeed_report_gives_the_evaluation_as_the_whole_read_does():
    """A new runner starts at the report still waiting for its step's record and gives the timer
    line's memory record after it again: the record count its context holds is the one before the
    report's line, so the evaluation's place among the records is the whole read's."""
    from pathlib import Path
    from tests.ingest.resume_cuts import lost_cuts
    log = Path(__file__).with_name("corpus") / "deepspeed_chat_step1_t9k_worker_labels_timer_reports_final_ppl.log"
    tried, lost = lost_cuts(log.read_bytes(), log.stem)
    assert tried == 5 and lost == []
