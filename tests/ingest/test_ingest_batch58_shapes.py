"""Line shapes of held-out batch 58 that were misread: each written from the code that prints it,
fed as bytes, checked on the records a user gets, with lines of other programs that only resemble
it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import eval_losses, parse, step_losses as steps

_FIT = "1563/1563 [==============================] - 4s 2ms/step - loss: 1.1661 - accuracy: 0.5858 - val_loss: 1.2037"


# ------------------------------------------------- a Keras Progbar with no value
# keras/src/utils/data_utils.py get_file: "Downloading data from {origin}", then a Progbar of the
# bytes; predict(): a Progbar of its batches. Neither prints a value (fit and evaluate print the loss).

def test_get_file_downloads_before_fit_are_no_steps():
    recs, p = parse("Downloading data from https://storage.googleapis.com/x/mnist.npz",
                    "11490434/11490434 [==============================] - 1s 0us/step",
                    "Epoch 1/2", _FIT.replace("1.1661", "1.5"), "Epoch 2/2", _FIT)
    assert steps(recs) == [(1563, 1.5), (3126, 1.1661)]
    assert eval_losses(p) == [(1563, 1.2037), (3126, 1.2037)]


def test_a_predict_bar_after_fit_and_a_keras3_download_are_no_steps():
    recs, _ = parse("Epoch 1/1", _FIT, "313/313 [==============================] - 1s 2ms/step",
                    "Downloading data from https://x/cifar.tar.gz",
                    "170498071/170498071 \u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501 5s 0us/step")
    assert steps(recs) == [(1563, 1.1661)]


def test_a_counter_with_a_step_time_and_a_loss_is_still_read():
    """Refusal: a bar that prints a value is fit's; a line of another loop with a per-step time reads as before."""
    recs, _ = parse("Epoch 1/1", "20/20 [==============================] - 1s 5ms/step - loss: 0.25")
    assert steps(recs) == [(20, 0.25)]
    recs, _ = parse("step 10/100 loss 2.5 (0.5 sec/step)", "step 20/100 loss 2.4 (0.5 sec/step)")
    assert steps(recs) == [(10, 2.5), (20, 2.4)]


# ------------------------------------------------- Keras ModelCheckpoint's verdict
# keras/src/callbacks.py ModelCheckpoint._save_model: f"\nEpoch {epoch + 1}: {monitor} improved from
# {best:.5f} to {current:.5f}, saving model to {filepath}" or "... did not improve from {best:.5f}".

def test_model_checkpoint_verdicts_are_no_evaluations():
    recs, p = parse("Epoch 1/2",
                    "Epoch 1: val_loss improved from inf to 1.20370, saving model to best.h5",
                    _FIT, "Epoch 2/2",
                    "Epoch 00002: val_accuracy did not improve from 0.90140", _FIT.replace("1.2037", "1.1"))
    assert steps(recs) == [(1563, 1.1661), (3126, 1.1661)]
    assert eval_losses(p) == [(1563, 1.2037), (3126, 1.1)]


def test_an_evaluation_that_only_mentions_improvement_reads_as_before():
    """Refusal: a line with its own values and more than the verdict is an evaluation still."""
    _, p = parse("step 100 loss 2.0", "Epoch 1: val_loss 1.5 improved (best 1.6)")
    assert [m["values"] for m in p.marks if m["kind"] == "eval"] != []


# ------------------------------------------------- a test value printed again to more digits
# TensorFlow's CNN tutorial: model.evaluate(..., verbose=2) prints "313/313 - 0s - loss: ... -
# accuracy: 0.6745 - ..." (4 decimals), then print("test accuracy:", test_acc).

def test_test_accuracy_restating_evaluate_is_not_a_second_evaluation():
    _, p = parse("Epoch 1/1", _FIT,
                 "313/313 - 0s - loss: 0.9287 - accuracy: 0.6745 - 352ms/epoch - 1ms/step",
                 "test accuracy: 0.6744999885559082")
    evals = [m for m in p.marks if m["kind"] == "eval"]
    assert [(m["step"], m["loss"]) for m in evals] == [(1563, 1.2037), (1563, 0.9287)]


def test_a_test_value_of_its_own_is_an_evaluation():
    """Refusals: another value, the same digits, a line further down, or a name the line above
    has not are each an evaluation of its own."""
    head = ("Epoch 1/1", _FIT, "313/313 - 0s - loss: 0.9287 - accuracy: 0.6745 - 352ms/epoch - 1ms/step")
    for tail in (("test accuracy: 0.7012345",), ("test accuracy: 0.6745",), ("done", "test accuracy: 0.6744999885559082"),
                 ("test f1: 0.6744999885559082",)):
        _, p = parse(*head, *tail)
        assert len([m for m in p.marks if m["kind"] == "eval"]) == 3, tail


# ------------------------------------------------- a veRL step line wider than 4,096 characters
# verl/utils/logger/aggregate_logger.py concat_dict_to_str: " - ".join of every numeric metric.

def _verl(step: int, fields: int) -> str:
    extra = " - ".join(f"env/action_reason/reason_{i}/count:{i}.000" for i in range(fields))
    return (f"(main_task pid=144783) step:{step} - actor/pg_loss:-0.05 - actor/grad_norm:0.{step}75 - "
            f"{extra} - timing_s/step:330.467")


def test_a_verl_step_line_of_many_metrics_is_read():
    wide = _verl(2, 150)
    assert len(wide) > 4096
    recs, _ = parse(_verl(1, 10), "epoch 0, step 2", wide, _verl(3, 400))
    assert [r["step"] for r in recs] == [1, 2, 3]
    assert [r["grad_norm"] for r in recs] == [0.175, 0.275, 0.375]
    assert recs[1]["step_time_s"] == 330.467


def test_a_long_line_of_another_shape_is_still_left():
    """Refusal: the 4,096 bound holds for any other line, a veRL head with no value last too."""
    other = "iter 5 | " + " | ".join(f"m{i} {i}.5" for i in range(600))
    assert len(other) > 4096
    recs, _ = parse("iter 4 | loss 2.0 | lr 0.1", other)
    assert [r["step"] for r in recs] == [4]
    cut = _verl(2, 150) + " - actor/lr"
    recs, _ = parse(_verl(1, 10), cut)
    assert [r["step"] for r in recs] == [1]


# ------------------------------------------------- torchtune descriptions side by side
# torchtune recipes/lora_finetune_distributed.py: pbar.set_description(f"{curr_epoch + 1}|
# {self.global_step}|Loss: {loss_to_log}") after each step.

def test_torchtune_descriptions_pasted_side_by_side_are_a_step_each():
    recs, _ = parse("1|1|Loss: 2.629014253616333    1|2|Loss: 3.023068428039551\t\t1|3|Loss: 2.06",
                    "2|4|Loss: 1.4e-05    2|5|Loss: nan")
    assert [r["step"] for r in recs] == [1, 2, 3, 4, 5]
    assert [r["loss"] for r in recs][:4] == [2.629014253616333, 3.023068428039551, 2.06, 1.4e-05]


def test_torchtune_bars_and_lookalikes_read_as_before():
    """Refusals: the bar with its description reads as before; a line with other text between
    the descriptions, or one blank only between them, is not cut."""
    recs, _ = parse("1|1|Loss: 1.849762201309204:   0%|          | 1/1367 [04:24<100:30:01, 264.86s/it]",
                    "1|2|Loss: 1.2548030614852905:   0%|          | 2/1367 [05:03<49:53:19, 131.58s/it]")
    assert steps(recs) == [(1, 1.849762201309204), (2, 1.2548030614852905)]
    recs, _ = parse("1|1|Loss: 2.5 then 1|2|Loss: 2.4")
    assert len(recs) <= 1
    recs, _ = parse("1|1|Loss: 2.5 1|2|Loss: 2.4")
    assert len(recs) <= 1
