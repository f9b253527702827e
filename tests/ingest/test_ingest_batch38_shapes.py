"""Line shapes of held-out batch 38 that were misread: each written from the code that prints
it, fed as bytes, checked on the records and evaluations a user gets, with a line of another
program that only resembles it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps, eval_losses as evals


STEP_LINE = ("[2025-12-02 17:45:11] ('epoch 1 step 50 / 50 ', 'lr: 0.000153 ', 'train loss: 10.6642 ', "
             "'val loss: 10.6673 ', 'val ppl: 42927.0406 ')")


def test_wandb_end_of_run_footer_restates_the_last_values_and_is_no_evaluation():
    """wandb/sdk/wandb_run.py _footer_history_summary_info: "Run history:" and "Run summary:"
    grids behind "wandb: "; the summary's rows are the run's last logged values."""
    recs, p = parse(
        STEP_LINE,
        "wandb:                                                                                ",
        "wandb: ",
        "wandb: Run history:",
        "wandb:     train/loss █▇▇▅▁",
        "wandb:       val/loss █▇▆▄▁",
        "wandb: ",
        "wandb: Run summary:",
        "wandb:     train/loss 10.66421",
        "wandb:       val/loss 10.66726",
        "wandb:        val/ppl 42927.0406",
        "wandb: ",
        "wandb: 🚀 View run winter-waterfall-8 at: https://wandb.ai/x/y/runs/rggo8gdo",
        "(main_task pid=7) wandb: Run summary:",
        "(main_task pid=7) wandb:       val/loss 3.5")
    assert steps(recs) == [(50, 10.6642)]
    assert evals(p) == [(50, 10.6673)]


def test_a_line_after_the_wandb_footer_is_read_again():
    recs, p = parse(
        STEP_LINE,
        "wandb: Run summary:",
        "wandb:       val/loss 10.66726",
        "[2025-12-02 17:45:14] ('epoch 2 step 60 / 60 ', 'lr: 0.000153 ', 'train loss: 10.5 ', "
        "'val loss: 10.4 ', 'val ppl: 42927.0406 ')")
    assert steps(recs) == [(50, 10.6642), (60, 10.5)]
    assert evals(p) == [(50, 10.6673), (60, 10.4)]


def test_a_summary_block_of_another_program_without_wandbs_prefix_is_read_as_before():
    """A script's own "Run summary:" heading with its own metric lines is no W&B footer."""
    recs, p = parse("step 5 loss 1.0", "Run summary:", "val/loss 1.5")
    assert steps(recs) == [(5, 1.0)]
    assert evals(p) == [(5, 1.5)]


def test_the_step_total_after_a_spaced_slash_is_the_runs_steps():
    recs, _ = parse(STEP_LINE)
    assert [(r["step"], r["max_steps"], r["lr"]) for r in recs] == [(50, 50, 0.000153)]


def test_a_spaced_slash_after_another_value_gives_no_total():
    recs, _ = parse("step 12 loss 0.33 time 2 / 3")
    assert [(r["step"], r["max_steps"], r["loss"]) for r in recs] == [(12, None, 0.33)]


def test_an_evaluation_sets_size_before_the_first_step_is_no_evaluation():
    recs, p = parse("[2025-12-02 17:44:55] train dataset size: 96632",
                    "[2025-12-02 17:44:55] val dataset size: 1024",
                    STEP_LINE)
    assert steps(recs) == [(50, 10.6642)]
    assert evals(p) == [(50, 10.6673)]


def test_an_evaluation_line_with_its_loss_beside_a_size_is_still_an_evaluation():
    recs, p = parse("step 5 loss 1.0", "val loss: 1.5, val size: 1024")
    assert evals(p) == [(5, 1.5)]


def test_build_nanogpt_pipe_line_gives_its_colonless_lr():
    """build-nanogpt train_gpt2.py: print(f"step {step:5d} | loss: {..:.6f} | lr {lr:.4e} |
    norm: {norm:.4f} | dt: {dt*1000:.2f}ms | tok/sec: {tokens_per_sec:.2f}")."""
    recs, _ = parse("step   498 | loss: 5.180400 | lr 4.1874e-04 | norm: 1.0096 | dt: 927.33ms | tok/sec: 565373.84")
    assert [(r["step"], r["loss"], r["lr"], r["grad_norm"]) for r in recs] == [(498, 5.1804, 0.00041874, 1.0096)]


def test_llmc_pipe_line_without_colons_is_read_as_before():
    """llm.c's train_gpt2.cu prints every piece without a colon: its own reader's, not the
    nanoGPT pipe reader's (its z-scored loss, its norm)."""
    recs, _ = parse("step   61/74 | loss 3.208939 (+nanz)| norm 1.4800 (+nanz)| lr 3.00e-04 | 44.57 ms | "
                    "-100.0% bf16 MFU | 91886 tok/s")
    assert [(r["step"], r["loss"], r["grad_norm"]) for r in recs] == [(61, 3.208939, 1.48)]


def test_xiaotudui_tutorial_steps_and_test_set_loss():
    """xiaotudui/pytorch-tutorial src/train.py: print("训练次数：{}, Loss: {}".format(...)) every
    100 steps, print("整体测试集上的Loss: {}".format(total_test_loss)) after each epoch."""
    recs, p = parse(
        "-------第 1 轮训练开始------",
        "训练次数：100, Loss：1.9817659854888916",
        "训练次数：200, Loss: 1.9057204723358154",
        "整体测试集上的Loss: 262.62046909332275",
        "整体测试集上的正确率: 0.3889999985694885",
        "模型已保存")
    assert steps(recs) == [(100, 1.9817659854888916), (200, 1.9057204723358154)]
    assert evals(p) == [(200, 262.62046909332275)]


def test_a_count_line_of_another_chinese_script_is_no_tutorial_record():
    """The data set sizes the tutorial prints first, and a step count with no loss, give nothing."""
    recs, p = parse("训练数据集的长度为：50000", "训练次数：100", "整体测试集上的正确率: 0.38")
    assert recs == [] and evals(p) == []
