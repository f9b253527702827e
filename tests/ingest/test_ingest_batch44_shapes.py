"""Line shapes of held-out batch 44 (trainers outside LLM training) that were misread: each
written from the code that prints it, fed as bytes, checked on the records and evaluations a user
gets, with lines of other programs that only resemble it read as before."""
from __future__ import annotations

import math

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps, eval_losses as evals


# --------------------------------------------------------------------------- ML-Agents

def test_mlagents_summaries_of_every_version_are_records_at_their_steps():
    """0.3 " {brain}: Step: {}. Mean Reward: ... Std of Reward: ...", 0.5+ with run id and
    "Training.", 0.10+ with "Time Elapsed: T s ", stats.py's ConsoleWriter behind "[INFO] "."""
    recs, p = parse("INFO:unityagents: Brain: Step: 2000. Mean Reward: 1.175. Std of Reward: 0.000.",
                    "INFO:mlagents.trainers: ppo-1: Walker: Step: 4000. Mean Reward: -3.601. Std of Reward: 6.692. Training.",
                    "INFO:mlagents.trainers: gpu_test: FindTheTarget: Step: 5000. Time Elapsed: 80.900 s Mean Reward: 0.333. "
                    "Std of Reward: 0.471. Not Training.",
                    "[INFO] 3DBall. Step: 6000. Time Elapsed: 59.470 s. Mean Reward: 1.173. Std of Reward: 0.721. Training.")
    assert steps(recs) == [(2000, None), (4000, None), (5000, None), (6000, None)]
    assert recs[1]["extra"]["mean_reward"] == -3.601 and recs[1]["extra"]["std_of_reward"] == 6.692
    assert recs[2]["extra"]["time_elapsed_s"] == 80.9


def test_mlagents_summary_without_an_episode_and_one_cut_in_its_last_word_keep_their_steps():
    recs, p = parse("INFO:mlagents.trainers: run: Learner: Step: 23000. Mean Reward: -38.835. Std of Reward: 0.000. Training.",
                    "INFO:mlagents.trainers: run: Learner: Step: 24000. No episode was completed since last summary. Training.",
                    "INFO:mlagents.trainers: run: Learner: Step: 25000. Mean Reward: 0.000. Std of Reward: 0.000. Tra")
    assert steps(recs) == [(23000, None), (24000, None), (25000, None)]
    assert "mean_reward" not in recs[1]["extra"]


def test_lines_that_only_resemble_an_mlagents_summary_are_not_its_records():
    """Another word after the summary, or a cut number before its closing, is not ML-Agents'."""
    recs, p = parse("Step: 5. Mean Reward: 1.0. Std of Reward: 0.1. Restarting the environment now",
                    "step 9 loss 1.5")
    assert steps(recs) == [(9, 1.5)]


# --------------------------------------------------------------------------- Sample Factory

def test_sample_factory_report_is_a_record_at_the_frames_counted_not_at_the_process_id():
    """runner.py print_stats behind utils.py's "[%(asctime)s][%(process)05d] " prefix; the
    "Avg episode reward" line after it names no step."""
    recs, p = parse("[2022-03-02 23:05:46,460][18482] Fps is (10 sec: 20404.3, 60 sec: 20404.3, 300 sec: 20404.3). "
                    "Total num frames: 241664. Throughput: 0: 3098.6, 1: 2000.1. Samples: 54300. Policy #0 lag: (min: 52.0, avg: 52.0, max: 52.0)",
                    "[2022-03-02 23:05:46,460][18482] Avg episode reward: [(0, '-1.416')]",
                    "[2022-03-02 23:05:51,461][18482] Fps is (10 sec: nan, 60 sec: nan, 300 sec: nan). Total num frames: 335872.",
                    "[2022-03-02 23:05:56,480][18482] Fps is 19622.1. Total num frames: 438272. Throughput: 0: 4965.4. Samples: 113450")
    assert steps(recs) == [(241664, None), (335872, None), (438272, None)]
    assert recs[0]["extra"]["fps"] == 20404.3 and recs[0]["extra"]["samples"] == 54300


def test_a_bracketed_number_standing_alone_is_still_the_lines_own():
    """flax's clu writer "[1000] train_loss=..." keeps its step: only a process id glued to a
    stamp's bracket is a prefix."""
    recs, p = parse("[1000] steps_per_second=1.58, train_learning_rate=0.35, train_loss=3.21")
    assert steps(recs) == [(1000, 3.21)]


# --------------------------------------------------------------------------- Coqui TTS

HEAD = "   --> STEP: 652/652 -- GLOBAL_STEP: 191450"


def test_coqui_rows_printed_as_tensors_join_the_report_and_one_shared_lr_is_the_runs():
    """Trainer.train_step puts the grad norms in as tensors ("tensor(8.1043, device='cuda:0')")
    and the lr of each optimizer as current_lr_{idx}."""
    recs, p = parse(HEAD, "     | > loss_0: 2.7056  (2.5223)",
                    "     | > grad_norm_0: tensor(8.1043, device='cuda:0')  (tensor(17.1827, device='cuda:0'))",
                    "     | > loss_1: 32.9018  (31.7345)",
                    "     | > current_lr_0: 0.00019302 ", "     | > current_lr_1: 0.00019302 ",
                    "     | > step_time: 1.5487  (1.4106)", "")
    (r,) = recs
    assert (r["step"], r["loss"], r["lr"], r["step_time_s"]) == (191450, None, 0.00019302, 1.5487)
    assert r["extra"]["grad_norm_0"] == 8.1043 and r["extra"]["loss_1"] == 32.9018


def test_coqui_optimizers_with_different_rates_name_no_lr():
    recs, p = parse(HEAD, "     | > current_lr_0: 0.0002 ", "     | > current_lr_1: 0.0001 ", "")
    assert recs[0]["lr"] is None


def test_coqui_eval_performance_block_is_one_evaluation_at_the_last_step():
    """console_logger.py print_epoch_end: "--> EVAL PERFORMANCE", rows "avg_" + key with the
    change in parentheses; avg_loss is the loss of a model with one optimizer."""
    recs, p = parse(HEAD, "     | > loss: 0.91  (0.93)", "", " > EVALUATION ", "",
                    "  --> EVAL PERFORMANCE", "     | > avg_loader_time: 0.00631 (+0.00023)",
                    "     | > avg_loss: 0.87 (-0.01)", "     | > avg_loss_mel: 19.75 (-1.00)", "")
    assert steps(recs) == [(191450, 0.91)]
    assert evals(p) == [(191450, 0.87)]


def test_a_multi_optimizer_eval_performance_has_no_loss_and_other_rows_are_not_read_so():
    recs, p = parse(HEAD, "     | > loss_0: 2.5  (2.5)", "", "  --> EVAL PERFORMANCE",
                    "     | > avg_loss_0: 2.58 (+0.08)", "     | > avg_loss_1: 28.9 (-1.26)", "",
                    "| > loss: 3.0)", "| > loss: tensor([1.0, 2.0])")
    assert evals(p) == [(191450, None)]
    assert steps(recs) == [(191450, None)]


# --------------------------------------------------------------------------- 3D Gaussian Splatting

def test_gaussian_splatting_bar_loss_and_its_evaluations_of_test_and_train_views():
    """train.py: tqdm(desc="Training progress"), set_postfix({"Loss": ...}); training_report's
    "[ITER N] Evaluating {test|train}: L1 X PSNR Y" with safe_state's " [%d/%m %H:%M:%S]"."""
    recs, p = parse("Training progress:  14%|██████      | 7000/50000 [05:20<47:50, 14.98it/s, Loss=0.0937450]",
                    "[ITER 7000] Evaluating test: L1 0.0385 PSNR 23.82 [31/08 22:43:31]",
                    "", "[ITER 7000] Evaluating train: L1 0.0371 PSNR 24.1 [31/08 22:43:33]",
                    "Training progress:  60%|█████▏      | 30000/50000 [39:43<29:39, 11.24it/s, Loss=0.0586456, Mouth=13.0-21.6]")
    assert steps(recs) == [(7000, 0.093745), (30000, 0.0586456)]
    assert evals(p) == [(7000, None), (7000, None)]
    ev = [m for m in p.marks if m["kind"] == "eval"]
    assert ev[0]["split"] == "test" and ev[0]["values"]["psnr"] == 23.82 and ev[1]["split"] == "train"


def test_a_capitalised_loss_on_a_bar_of_an_evaluation_or_of_no_training_word_stays_an_extra():
    """Only a bar whose description names the steps, an epoch or the training takes a synonym."""
    recs, p = parse("Rendering:  50%|█████     | 5/10 [00:01<00:01, 4.1it/s, Loss=0.5]",
                    "Evaluating training views: 100%|██████████| 10/10 [00:01<00:00, 9.0it/s, Loss=0.4]")
    assert all(r["loss"] is None for r in recs)


def test_an_iter_line_of_another_shape_is_no_gaussian_splatting_evaluation():
    recs, p = parse("[ITER 7000] Saving Gaussians [31/08 22:43:31]",
                    "[ITER 7000] Evaluating test: L1 0.03 PSNR 23.8 SSIM 0.9")
    assert evals(p) == []


# --------------------------------------------------------------------------- CatBoost

def test_catboost_round_cut_inside_its_best_column_keeps_its_values():
    recs, p = parse("98:\tlearn: 0.9547390\ttest: 0.8340691\tbest: 0.8356368 (1)\ttotal: 51.2s\tremaining: 1h 42m 40s",
                    "99:     learn: 0.9547319        test: 0.8343504 best: 0.835636")
    assert steps(recs) == [(98, 0.954739), (99, 0.9547319)]
    assert evals(p) == [(98, 0.8340691), (99, 0.8343504)]


def test_a_catboost_round_with_words_after_best_is_not_read():
    recs, p = parse("99:\tlearn: 0.95\ttest: 0.83\tbest: see the plot")
    assert steps(recs) == [] or all(r["src"] != "catboost" for r in recs)
    assert not any(math.isclose(r["loss"] or 0, 0.95) for r in recs)
