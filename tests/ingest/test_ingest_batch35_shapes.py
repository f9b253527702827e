"""Line shapes of held-out batch 35 that were misread: each written from the code that prints
it, fed as bytes, checked on the records and evaluations a user gets, with a line of another
program that only resembles it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse

TITAN = "[titan] 2026-01-16 02:42:48,277 - root - INFO - "


def evals(p) -> list[tuple]:
    return [(m["step"], m["loss"]) for m in p.marks if m["kind"] == "eval"]


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
