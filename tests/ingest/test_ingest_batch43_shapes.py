"""Line shapes of held-out batch 43 (LLM and MoE trainers) that were misread: each written from
the code that prints it, fed as bytes, checked on the records and evaluations a user gets, with
lines of other programs that only resemble it read as before."""
from __future__ import annotations

import math

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps, eval_losses as evals

NEMO = ("Training epoch 0, iteration {i}/9 | lr: 2e-05 | global_batch_size: 1 | global_step: {i} | "
        "reduced_train_loss: {loss} | train_step_timing in s: 0.35{extra}")


def test_nemo_checkpoint_save_timing_is_no_record_at_its_iteration():
    """nemo/lightning/io/pl.py MegatronCheckpointIO.save_checkpoint: logging.info(f"Global
    Checkpoint Save : Rank: {rank} : Iteration: {iteration} : Start time: {t:.3f}s : Save duration:
    {d:.3f}s") between the ProgressPrinter's lines: no record at the iteration, no step time."""
    recs, p = parse(NEMO.format(i=3, loss=1.277, extra=""), NEMO.format(i=4, loss=1.257, extra=""),
                    "[NeMo I 2025-06-18 21:57:05 nemo_logging:393] Global Checkpoint Save : Rank: 0 : "
                    "Iteration: 4 : Start time: 1750309024.990s : Save duration: 0.217s",
                    "[NeMo I 2025-04-23 02:54:14 nemo_logging:393] Global Checkpoint Save : Rank: 0 : "
                    "Start time: 1745376794.226s : Save duration: 60.221s",
                    NEMO.format(i=5, loss=1.26, extra=" | val_loss: 1.264"))
    assert steps(recs) == [(3, 1.277), (4, 1.257), (5, 1.26)]
    assert recs[1]["step_time_s"] == 0.35
    assert evals(p) == [(5, 1.264)]


def test_lightning_checkpoint_verdict_not_in_top_k_is_no_evaluation():
    """lightning/pytorch/callbacks/model_checkpoint.py _save_monitor_checkpoint (verbose):
    f"Epoch {epoch:d}, global step {step:d}: {self.monitor!r} was not in top {self.save_top_k}",
    and before 1.0 f"Epoch {epoch:05d}: {self.monitor}  was not in top {self.save_top_k}" (also behind
    a rank label): the verdict on a metric, no evaluation of its own."""
    recs, p = parse(NEMO.format(i=4, loss=1.257, extra=""),
                    "Epoch 0, global step 4: 'val_loss' was not in top 5",
                    "Epoch 00003: val_loss  was not in top 1",
                    "[default0]:Epoch 1, global step 9: 'reduced_train_loss' was not in top -1",
                    NEMO.format(i=5, loss=1.26, extra=" | val_loss: 1.264"))
    assert steps(recs) == [(4, 1.257), (5, 1.26)]
    assert evals(p) == [(5, 1.264)]


def test_lines_that_only_resemble_the_checkpoint_messages_read_as_before():
    """A step line that merely names a checkpoint, or a 'top' figure with a loss, keeps its record."""
    recs, p = parse("step 10, loss: 2.5, Save duration: 0.5s, checkpoint: yes",
                    "Epoch 2, step 20: loss 1.5, acc 0.7 (top 5 acc 0.9)")
    assert (10, 2.5) in steps(recs)
    assert any(r["loss"] == 1.5 for r in recs)


def test_a_python_exception_line_after_training_lines_is_no_record():
    """traceback.format_exception_only: f"{qualname}: {message}" (module before it unless
    builtins): the message's numbers are no step's metrics (keys_values' long-context trainer)."""
    recs, p = parse("Epoch 0 | iter   1 | loss train: 35.250, val_loss valid: n/a | iter time: 177.845 s",
                    "Epoch 0 | iter   2 | loss train: 20.875, val_loss valid: n/a | iter time: 122.751 s",
                    "ValueError: Annotation scatter-key (0,1): (2, 8, 32768, 128): final chunk_idx = 11, "
                    "must be in [1, 2]",
                    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.1 GiB "
                    "total capacity; 3 iterations)",
                    "RuntimeError: step 3 failed: loss = 7.5, grad_norm = 1e9")
    assert steps(recs) == [(1, 35.25), (2, 20.875)]
    assert recs[0]["step_time_s"] == 177.845
    assert evals(p) == []


def test_a_metric_named_like_an_error_with_a_number_after_it_is_still_read():
    """Only an exception's message is skipped: a custom loop's "RMSError: 0.12" starts with its
    value and stays the metric it was."""
    recs, p = parse("step 1 loss 0.5", "step 2 loss 0.4 RMSError: 0.12")
    assert steps(recs) == [(1, 0.5), (2, 0.4)]
    assert recs[1]["extra"].get("RMSError") == 0.12


def test_maxtext_completed_step_line_cut_after_its_time_is_that_steps_record():
    """src/MaxText/metric_logger.py _log_training_metrics: f"completed step: {step}, seconds:
    {t:.3f}, TFLOP/s/device: ..." then tokens, weights and loss; a line cut (", ...") or shortened
    after the first fields is still that step's record, its time kept."""
    recs, p = parse("completed step: 0, seconds: 192.392, TFLOP/s/device: 0.091, ...",
                    "completed step: 1, seconds: 2.364, TFLOP/s/device: 7.390, ...",
                    "I0317 10:00:13.224641 1253 metric_logger.py:181] completed step: 2, seconds: 0.445, "
                    "TFLOP/s/device: 39.243")
    assert steps(recs) == [(0, None), (1, None), (2, None)]
    assert [r["step_time_s"] for r in recs] == [192.392, 2.364, 0.445]


def test_maxtext_whole_line_and_prose_about_completed_steps_read_as_before():
    """The whole line keeps its loss; a sentence that says a step completed, or a time alone under
    another head, makes no record."""
    recs, p = parse("completed step: 3, seconds: 0.434, TFLOP/s/device: 237.056, Tokens/s/device: 9448.085, "
                    "total_weights: 29413, loss: 14.140",
                    "We completed step: 4, seconds: 2.1 after the restart.",
                    "phase: 2, seconds: 5.5")
    assert steps(recs) == [(3, 14.14)]


def test_nanotron_time_per_iteration_ms_is_the_step_time():
    """src/nanotron/trainer.py train_step_logs: LogItem("time_per_iteration_ms", ...) since 2025-03
    (before, "elapsed_time_per_iteration_ms"), human-formatted: the step's time in ms."""
    recs, p = parse("iteration: 91 / 100 | consumed_tokens: 93.2K | time_per_iteration_ms: 90.4 | "
                    "tokens_per_sec: 11.3K | tokens_per_sec_per_gpu: 5.66K | global_batch_size: 1.02K | "
                    "grad_norm: 1.4M | lr: 3.3e-05 | lm_loss: 9.2 | model_tflops_per_gpu: 0.784",
                    "iteration: 92 / 100 | consumed_tokens: 94.2K | time_per_iteration_ms: 1.2K | "
                    "tokens_per_sec: 11.3K | lm_loss: 9.1 | lr: 3.3e-05")
    assert steps(recs) == [(91, 9.2), (92, 9.1)]
    assert math.isclose(recs[0]["step_time_s"], 0.0904) and math.isclose(recs[1]["step_time_s"], 1.2)
    assert recs[0]["grad_norm"] == 1400000.0
