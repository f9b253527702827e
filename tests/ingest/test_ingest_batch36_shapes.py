"""Line shapes of held-out batch 36 that were misread: each written from the code that prints
it, fed as bytes, checked on the records a user gets, with a line of another program that only
resembles it read as before."""
from __future__ import annotations

import pytest

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps

RERUN = "ERROR:megatron.core.rerun_state_machine:"


def test_megatron_rerun_state_machine_messages_are_no_training_records():
    """megatron/core/rerun_state_machine.py validate_result and log_failure name the iteration
    they check ("at iteration #2", "iteration #40:"); none of them is a step's record."""
    recs, _ = parse(
        RERUN + "Unexpected result nan on rank 13 at iteration #2 invokation #1 (message='found NaN in "
                "local grad norm for bucket #0 in backward pass before data-parallel communication "
                "collective')",
        "[rank5]: " + RERUN + "Unexpected result inf at /opt/megatron/megatron/training/training.py line "
                              "1231, invokation #1 at iteration #40 (message='found Inf in local grad norm')",
        "WARNING:megatron.core.rerun_state_machine:Rank 3, node gpu-node-7, device 3, iteration #40: "
        "Possible transient error!",
        RERUN + "Unexpected result 1.0e+12 on rank 0 at iteration #41 invocation #2 (message='Spiky loss')")
    assert recs == []


def test_a_rerun_message_between_megatron_iterations_leaves_the_iterations_as_they_are():
    recs, _ = parse(
        " iteration        1/    5000 | consumed samples:          128 | elapsed time per iteration (ms): "
        "140930.2 | learning rate: 5.000000E-08 | global batch size:   128 | lm loss: 1.196676E+01 | "
        "loss scale: 1.0 | grad norm: nan | number of skipped iterations:   0 | number of nan iterations:   0 |",
        RERUN + "Unexpected result nan on rank 13 at iteration #2 invokation #1 (message='found NaN in "
                "local forward loss calculation')")
    assert steps(recs) == [(1, 11.96676)]


@pytest.mark.parametrize("message", [
    "RuntimeError: Rank 3, node dgx-a-12, device 3, iteration 40: Unexpected result nan (message='found "
    "NaN in local grad norm for bucket #0 in backward pass before data-parallel communication collective')",
    "WARNING:megatron.core.rerun_state_machine:Rank 0, node dgx-a-12, device 0, iteration 40: Unexpected "
    "result 51234.5 (message='Spiky loss')"])
def test_megatron_rerun_message_with_reruns_disabled_is_no_record(message):
    """validate_result with RerunMode.DISABLED raises (or warns) f"Rank {rank}, node {node}, device
    {device}, iteration {iteration}: Unexpected result {result} (message='{message}')", no "#":
    it made an empty record at 40 between iterations 39 and 41."""
    from tests.ingest.test_ingest_real_shapes import MEGATRON

    def it(i: int) -> str:
        return MEGATRON.replace("iteration       10/", f"iteration {i:8d}/")
    recs, _ = parse(it(39), message, it(41))
    assert [r["step"] for r in recs] == [39, 41]


def test_another_programs_step_hash_lines_are_still_steps():
    """TensorFlow's kws_streaming (absl): logging.info('Step #%d: rate %f, accuracy %.2f%%, cross
    entropy %f', ...): a `#` before a step number is this program's progress line."""
    recs, _ = parse("INFO:absl:Step #1: rate 0.001000, accuracy 0.00%, cross entropy 2.493576",
                    "INFO:absl:Step #2: rate 0.001000, accuracy 0.00%, cross entropy 2.628293")
    assert steps(recs) == [(1, 2.493576), (2, 2.628293)]


def test_build_nanogpt_norm_column_is_the_steps_gradient_norm():
    """build-nanogpt train_gpt2.py: norm = clip_grad_norm_(...); print(f"step {step:5d} | loss:
    {loss_accum.item():.6f} | lr {lr:.4e} | norm: {norm:.4f} | dt: {dt*1000:.2f}ms | tok/sec: ...")."""
    recs, _ = parse("step    10 | loss: 8.611700 | lr 1.2000e-04 | norm: 2.9301 | dt: 19315.15ms | tok/sec: 6785.97",
                    "step: 20 | loss: 7.287700 | lr: 2.1000e-04 | norm: 1.4600 | dt: 19741.21ms | tok/sec: 6639.51")
    assert steps(recs) == [(10, 8.6117), (20, 7.2877)]
    assert [r["grad_norm"] for r in recs] == [2.9301, 1.46]
    assert recs[0]["step_time_s"] == pytest.approx(19.31515)


def test_a_weight_norm_column_in_another_pipe_line_is_not_the_gradient_norm():
    """Only the bare `norm` of that pipe line is clip_grad_norm_'s; a named norm stays an extra."""
    recs, _ = parse("step 100 | loss: 2.100000 | weight norm: 51.20 | dt: 12.00ms | tok/sec: 9000.00")
    assert steps(recs) == [(100, 2.1)] and recs[0]["grad_norm"] is None


def test_mingpt_iter_dt_is_the_steps_time():
    """minGPT projects/chargpt/chargpt.py batch_end_callback: print(f"iter_dt {trainer.iter_dt *
    1000:.2f}ms; iter {trainer.iter_num}: train loss {trainer.loss.item():.5f}")."""
    recs, _ = parse("iter_dt 0.00ms; iter 0: train loss 2.84515",
                    "iter_dt 7797.46ms; iter 2: train loss 2.60938")
    assert steps(recs) == [(0, 2.84515), (2, 2.60938)]
    assert [r["step_time_s"] for r in recs] == pytest.approx([0.0, 7.79746])


def test_an_iter_dt_without_a_step_makes_no_record():
    """A timing line of another loop (a profiler's note) names no step: no record."""
    recs, _ = parse("profiler: iter_dt 12.00ms")
    assert recs == []
