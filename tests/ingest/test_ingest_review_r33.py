"""Review R33 of log batch 44: Coqui's training averages under "--> EVAL PERFORMANCE" made an
evaluation, 3D Gaussian Splatting's resumed bar and its evaluations on two axes, ML-Agents'
current ConsoleWriter lines unread, a step glued to a stamp's bracket taken for a process id, and
a printed tensor's value read by a second rule. Each input fed as bytes, checked on the records and
evaluations a user gets."""
from __future__ import annotations

import math

from moeconsole.runner.ingest.pydict import parse_pydict
from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps, eval_losses as evals

HEAD = "   --> TIME: 2023-03-01 10:00:05 -- STEP: 0/25 -- GLOBAL_STEP: {}"


def _summaries(p) -> list[tuple]:
    return [(m["step"], m["values"].get("loss")) for m in p.marks if m["kind"] == "train_summary"]


# --------------------------------------------------------------------------- Coqui run_eval=False

def test_coqui_training_averages_under_eval_performance_are_the_epochs_summary_not_an_evaluation():
    """Trainer._fit (trainer.py v0.0.36 L1791-1794) prints keep_avg_train's averages under the same
    head when run_eval is off; only they hold avg_step_time (train_step L1416-1419)."""
    lines: list[str] = []
    for step, loss, avg in ((0, 3.82345, 3.54321), (25, 3.12345, 3.01321)):
        lines += [HEAD.format(step), f"     | > loss: {loss}  ({loss})", "     | > step_time: 0.3145  (0.3145)", "", "",
                  "  --> EVAL PERFORMANCE", "     | > avg_loader_time: 0.0110 (+0)", "     | > avg_step_time: 0.3012 (+0)",
                  f"     | > avg_loss: {avg} (+0)", "     | > avg_log_mle: 0.90100 (+0)", ""]
    recs, p = parse(*lines)
    assert steps(recs) == [(0, 3.82345), (25, 3.12345)]
    assert evals(p) == []
    assert _summaries(p) == [(0, 3.54321), (25, 3.01321)]


def test_coqui_two_optimizer_training_averages_make_no_evaluation_either():
    """VITS with run_eval off: avg_loss_0/avg_loss_1 and the step time, no evaluation."""
    recs, p = parse(HEAD.format(50), "     | > loss_0: 2.5  (2.5)", "", "  --> EVAL PERFORMANCE",
                    "     | > avg_loader_time: 0.01 (+0)", "     | > avg_step_time: 1.4 (+0)",
                    "     | > avg_loss_0: 2.58 (+0.08)", "     | > avg_loss_1: 28.9 (-1.26)", "")
    assert evals(p) == []
    assert _summaries(p) == [(50, None)]


def test_coqui_evaluation_averages_stay_an_evaluation():
    """eval_epoch puts only avg_loader_time and the avg_ loss keys in keep_avg_eval: an evaluation."""
    recs, p = parse(HEAD.format(25), "     | > loss: 0.91  (0.93)", "", "  --> EVAL PERFORMANCE",
                    "     | > avg_loader_time: 0.00631 (+0.00023)", "     | > avg_loss: 0.87 (-0.01)", "")
    assert evals(p) == [(25, 0.87)]
    assert _summaries(p) == []


# --------------------------------------------------------------------------- 3DGS resumed

def _bar(n: int, total: int, loss: float) -> str:
    return f"Training progress:  {100 * n // total}%|█         | {n}/{total} [00:25<10:00, 40.00it/s, Loss={loss:.7f}]"


def test_gaussian_splatting_resumed_bar_and_its_evaluation_share_one_axis():
    """train.py --start_checkpoint chkpnt7000.pth: tqdm(range(first_iter, opt.iterations)) counts
    0..23000 while training_report prints "[ITER 30000]": the evaluation is at the bar's last step,
    not 7000 steps past every training record."""
    recs, p = parse(_bar(21000, 23000, 0.0048), _bar(22000, 23000, 0.0046), "",
                    "[ITER 30000] Evaluating test: L1 0.03114532 PSNR 27.8123 [01/12 05:10:00]", "",
                    "[ITER 30000] Evaluating train: L1 0.02514532 PSNR 30.1123 [01/12 05:10:01]",
                    _bar(23000, 23000, 0.0044))
    assert steps(recs) == [(21000, 0.0048), (22000, 0.0046), (23000, 0.0044)]
    assert evals(p) == [(22000, None), (22000, None)]
    ev = [m for m in p.marks if m["kind"] == "eval"]
    assert ev[0]["values"]["iteration_printed"] == 30000 and ev[0]["step_inferred"]
    assert max(m["step"] for m in ev) <= max(r["step"] for r in recs)


def test_gaussian_splatting_fresh_run_evaluations_keep_their_iteration():
    recs, p = parse(_bar(7000, 30000, 0.0937), "[ITER 7000] Evaluating test: L1 0.0385 PSNR 23.82 [31/08 22:43:31]",
                    _bar(30000, 30000, 0.0586), "[ITER 30000] Evaluating test: L1 0.03 PSNR 27.8 [31/08 22:50:31]")
    assert evals(p) == [(7000, None), (30000, None)]
    assert all("iteration_printed" not in m["values"] for m in p.marks if m["kind"] == "eval")


# --------------------------------------------------------------------------- ML-Agents ConsoleWriter

def test_mlagents_self_play_poca_and_ranked_summaries_are_records():
    """stats.py ConsoleWriter.write_stats: "Rank: N" before the reward, "Mean Group Reward" in
    place of "Std of Reward" (POCA), "ELO: X" after "Training" (self-play)."""
    recs, p = parse("[INFO] Tennis. Step: 10000. Time Elapsed: 40.123 s. Mean Reward: -0.120. Std of Reward: 0.400. Training. ELO: 1199.822.",
                    "[INFO] SoccerTwos. Step: 20000. Time Elapsed: 80.456 s. Mean Reward: 0.000. Mean Group Reward: 0.050. Training. ELO: 1203.111.",
                    "[INFO] 3DBall. Step: 30000. Time Elapsed: 120.789 s. Rank: 1. Mean Reward: 2.050. Std of Reward: 0.300. Not Training.",
                    "[INFO] Crawler. Step: 40000. Time Elapsed: 160.000 s. Mean Reward: 1.000. Mean Group Reward: 2.000. Training.")
    assert steps(recs) == [(10000, None), (20000, None), (30000, None), (40000, None)]
    assert recs[0]["extra"]["elo"] == 1199.822 and recs[0]["extra"]["std_of_reward"] == 0.4
    assert recs[1]["extra"]["mean_group_reward"] == 0.05 and "std_of_reward" not in recs[1]["extra"]
    assert recs[2]["extra"]["mean_reward"] == 2.05


def test_words_after_an_mlagents_elo_are_not_its_summary():
    recs, p = parse("Step: 5. Mean Reward: 1.0. Mean Group Reward: 0.1. Training. ELO: 1200.0. and then some more words",
                    "step 9 loss 1.5")
    assert steps(recs) == [(9, 1.5)]


# --------------------------------------------------------------------------- [stamp][N]

def test_a_short_number_glued_to_a_stamp_is_the_lines_step_not_a_process_id():
    """Sample Factory pads its process id with "%05d": "[stamp][100]" is no process id."""
    recs, p = parse(*(f"[2024-01-01 10:00:0{i}][{i}00] loss: {1 / i:.4f}, lr: 0.0001" for i in range(1, 6)))
    assert [r["step"] for r in recs] == [100, 200, 300, 400, 500]
    recs, p = parse(*(f"[2024-01-01 10:00:0{i},123][{i}00] loss={1 / i:.4f} lr=0.0001" for i in range(1, 4)))
    assert [r["step"] for r in recs] == [100, 200, 300]


def test_a_padded_process_id_glued_to_a_stamp_is_still_no_step():
    recs, p = parse("[2023-02-10 12:00:01,001][01234] Fps is 19622.1. Total num frames: 438272.",
                    "[2023-02-10 12:00:02,001][01234] Avg episode reward: [(0, '-1.416')]")
    assert steps(recs) == [(438272, None)]


# --------------------------------------------------------------------------- tensor values

def test_a_tensor_with_its_autograd_node_is_read_as_its_number_in_a_coqui_row_and_a_dict():
    """torch prints "tensor(1.5, device='cuda:0', grad_fn=<AddBackward0>)": one rule (pydict's)
    reads it wherever it is printed."""
    recs, p = parse(HEAD.format(7), "     | > loss: tensor(1.5, device='cuda:0', grad_fn=<AddBackward0>)  (tensor(1.6, device='cuda:0'))",
                    "     | > grad_norm: tensor(inf, device='cuda:0')  (tensor(2.0))", "")
    assert steps(recs)[0] == (7, 1.5) and math.isinf(recs[0]["grad_norm"])
    assert parse_pydict("{'loss': tensor(1.5, device='cuda:0', grad_fn=<AddBackward0>), 'lr': 0.1}") == {"loss": 1.5, "lr": 0.1}


def test_a_tensor_of_several_values_or_cut_is_no_row_value():
    recs, p = parse(HEAD.format(8), "     | > loss: 0.5  (0.5)", "     | > x: tensor([1.0, 2.0])",
                    "     | > y: tensor(1.5, grad_fn=<AddBackward0", "")
    assert steps(recs) == [(8, 0.5)]
    assert "x" not in recs[0]["extra"] and "y" not in recs[0]["extra"]
