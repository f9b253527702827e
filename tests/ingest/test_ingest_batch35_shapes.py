"""Line shapes of held-out batch 35 that were misread: each written from the code that prints
it, fed as bytes, checked on the records and evaluations a user gets, with a line of another
program that only resembles it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse, eval_losses as evals

TITAN = "[titan] 2026-01-16 02:42:48,277 - root - INFO - "


def test_torchtitan_validate_line_is_an_evaluation_at_its_step_not_a_training_step():
    """components/metrics.py log_validation: f"validate step: {step:2}  loss: {loss:7.4f} ..."."""
    recs, p = parse(TITAN + "validate step:  1  loss: 12.4699  memory: 69.81GiB(88.17%)  tps: 74,600",
                    TITAN + "step: 20  loss: 11.8347  grad_norm:  4.6875  memory: 69.83GiB(88.19%)"
                            "  tps: 40,890  tflops: 261.49  mfu: 26.44%")
    assert [(r["step"], r["loss"]) for r in recs] == [(20, 11.8347)]
    assert evals(p) == [(1, 12.4699)]


def test_every_rank_printing_the_same_evaluation_gives_one_evaluation():
    """log_validation runs on every rank; unfiltered, each prints it with its own time and tps."""
    _, p = parse(TITAN + "validate step: 40  loss:  3.1000  memory: 69.81GiB(88.17%)  tps: 74,600",
                 TITAN + "Synchronizing and adjusting timeout for all ProcessGroups to 0:01:40",
                 TITAN + "validate step: 40  loss:  3.1000  memory: 69.81GiB(88.17%)  tps: 74,594")
    assert evals(p) == [(40, 3.1)]


def test_two_evaluations_of_one_step_or_one_loss_after_a_step_stay_two():
    """Another program's two evaluation sets at one step, and the same loss again after a
    training step, are evaluations of their own."""
    recs, p = parse("step 10 loss 2.5", "eval step: 10  loss: 2.0", "eval step: 10  loss: 1.9",
                    "step 20 loss 2.4", "eval step: 20  loss: 1.9")
    assert [r["step"] for r in recs] == [10, 20]
    assert evals(p) == [(10, 2.0), (10, 1.9), (20, 1.9)]


def test_a_validate_step_with_a_total_counts_batches_not_the_run():
    """MONAI-style tqdm descriptions ("Validate Step: 3 / 10") count the evaluation's batches: no
    evaluation is placed at step 3, no training record is made."""
    recs, p = parse("step 100 loss 0.5", "Validate Step: 3 / 10 (dice=0.81)")
    assert [r["step"] for r in recs] == [100]
    assert all(m["step"] != 3 for m in p.marks)


def test_torchtitan_trainer_line_gives_the_runs_total_steps():
    """train.py Trainer.__init__: "Trainer is initialized with ... total steps {steps} (warmup N)"."""
    recs, _ = parse(TITAN + "Trainer is initialized with local batch size 6, global batch size 48, gradient "
                            "accumulation steps 1, sequence length 4096, total steps 150000 (warmup 200)",
                    TITAN + "step: 20  loss: 11.8347  grad_norm:  4.6875  memory: 69.83GiB(88.19%)"
                            "  tps: 40,890  tflops: 261.49  mfu: 26.44%")
    assert [(r["step"], r["max_steps"]) for r in recs] == [(20, 150000)]


def test_an_older_torchtitan_start_line_gives_the_total_too():
    """train.py main (2024): f"Training starts at step {n}, with local batch size ..., total steps {N}"."""
    recs, _ = parse(TITAN + "Training starts at step 1, with local batch size 8, global batch size 64, "
                            "sequence length 2048, total steps 1000 (warmup 200)",
                    TITAN + "step:  1  loss: 12.2521  memory: 43.52GiB(31.13%)  wps: 6,922  mfu: 1.35%")
    assert [(r["step"], r["max_steps"]) for r in recs] == [(1, 1000)]


def test_total_steps_in_another_programs_sentence_is_not_the_runs_length():
    recs, _ = parse("Scheduler: warmup 100, total steps 5000 (cosine)", "step 10 loss 2.5",
                    "Training starts at step 1")
    assert [(r["step"], r["max_steps"]) for r in recs] == [(10, None)]


def test_tianshou_bars_count_the_run_in_env_step_and_name_the_epoch_after_a_hash():
    """trainer/base.py: tqdm(desc=f"Epoch #{epoch}"), t.set_postfix(env_step=..., loss=...): the
    bar's own count restarts every epoch; env_step is the step the logger writes."""
    recs, _ = parse(
        "Epoch #1: 50001it [00:40, 1244.54it/s, env_step=50000, len=200, loss=-0.562, rew=200.00]",
        "Epoch #1: test_reward: 200.000000 ± 0.000000, best_reward: 200.000000 ± 0.000000 in #1",
        "Epoch #2: 50001it [00:40, 1237.34it/s, env_step=100000, len=200, loss=-0.023, rew=200.00]")
    assert [(r["step"], r["loss"], r["epoch"]) for r in recs] == [(50000, -0.562, 1), (100000, -0.023, 2)]


def test_an_epoch_hash_bar_without_env_step_still_counts_its_batches():
    """Another loop's bar named like tianshou's, without env_step: the bar's count is the step."""
    recs, _ = parse("Epoch #1: 100%|██████████| 50/50 [00:01<00:00, 40.00it/s, loss=0.300]")
    assert [(r["step"], r["loss"]) for r in recs] == [(50, 0.3)]


def test_a_lightning_bar_is_still_lightnings():
    """Lightning's "Epoch 0: ... v_num=0, train_loss_step=..." keeps its running mean apart."""
    recs, _ = parse("Epoch 0: 100%|██████████| 10/10 [00:01<00:00,  9.00it/s, loss=0.52, v_num=0, "
                    "train_loss_step=0.480]")
    assert [(r["step"], r["loss"], r["src"]) for r in recs] == [(10, 0.48, "pl_bar")]


# ---------------------------------------------------------------- since the review after batch 35

def test_two_epochs_evaluations_without_step_lines_stay_two():
    """No step is known: two evaluations alike but for their time are two (one an epoch)."""
    _, p = parse("Validation loss: 0.6931, accuracy: 0.5000, time: 3.2s",
                 "Validation loss: 0.6931, accuracy: 0.5000, time: 3.4s")
    assert len([m for m in p.marks if m["kind"] == "eval"]) == 2


def test_an_evaluation_with_the_same_loss_and_another_value_is_its_own():
    """The same step and loss but another accuracy: two evaluation sets, not a rank's copy."""
    _, p = parse("step 500 loss 2.5", "val loss: 2.31 acc: 0.51", "val loss: 2.31 acc: 0.63")
    got = [(m["step"], m["loss"], m["values"]) for m in p.marks if m["kind"] == "eval"]
    assert len(got) == 2 and got[0][2] != got[1][2]


def test_rank_copies_differing_in_memory_and_tps_are_one_evaluation():
    """Each rank prints its own memory (device_mem_stats.max_reserved_gib) and tps."""
    _, p = parse(TITAN + "validate step: 40  loss:  3.1000  memory: 69.81GiB(88.17%)  tps: 74,600",
                 TITAN + "validate step: 40  loss:  3.1000  memory: 70.02GiB(88.43%)  tps: 74,594")
    assert evals(p) == [(40, 3.1)]


def test_an_eval_batch_counter_is_not_the_evaluations_step():
    """"eval step: N" counting the evaluation's batches after training step 1000: the evaluations
    are at step 1000 (an evaluation is never before the training step already read)."""
    _, p = parse("step 1000 loss 2.5 lr 1e-4", "eval step: 1 loss: 0.5123", "eval step: 2 loss: 0.6123")
    assert evals(p) == [(1000, 0.5123), (1000, 0.6123)]
    _, p = parse("step 1000 loss 2.5 lr 1e-4", "Validation step 5 loss 0.51")
    assert evals(p) == [(1000, 0.51)]


def test_env_step_in_another_bar_does_not_replace_its_count():
    """env_step is the run's step only in tianshou's "Epoch #N" bars (trainer/base.py)."""
    recs, _ = parse("Training: 45%|####5     | 450/1000 [01:00<01:13, 7.5it/s, env_step=3600, loss=0.31]")
    assert [(r["step"], r["max_steps"]) for r in recs] == [(450, 1000)]


def test_env_step_never_replaces_an_explicit_step():
    recs, _ = parse("Epoch #3: 120it [00:10, 12.00it/s, step=120, env_step=48000, loss=0.25]")
    assert [r["step"] for r in recs] == [120]


def test_torchtitan_total_behind_ezpz_prefix():
    """ezpz's logger prefix "[date time,usec][I][module:line:func] " before torchtitan's Trainer line."""
    recs, _ = parse("[2026-02-28 14:29:22,114507][I][ft/trainer:364:__init__] Trainer is initialized with "
                    "local batch size 8, global batch size 64, gradient accumulation steps 1, sequence length "
                    "2048, total steps 10000 (warmup 200)",
                    "[2026-02-28 14:29:40,001234][I][ft/trainer:610:train_step] step: 20  loss: 11.8347  "
                    "grad_norm:  4.6875  memory: 69.83GiB(88.19%)  tps: 40,890")
    assert [(r["step"], r["max_steps"]) for r in recs] == [(20, 10000)]
