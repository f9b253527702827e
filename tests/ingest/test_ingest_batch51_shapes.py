"""Line shapes of held-out batch 51 that were misread: each written from the code that prints it,
fed as bytes, checked on the records a user gets, with lines of other programs that only resemble
it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps


# --------------------------------------------------------------------------- Megatron's last field

def megatron(it: int, tail: str) -> str:
    return (f"iteration {it:8d}/     200 | elapsed time per iteration (ms): 123.5 | "
            f"throughput per GPU (TFLOP/s/GPU): 101.0 | lm loss: 1.028609E+01{tail}")


def test_a_grad_norm_left_last_without_its_pipe_is_read():
    """training_log prints " grad norm: {:.3f} |": a value with its three decimals that ends the
    line is whole though the closing pipe was trimmed (a guide's hand-shortened lines)."""
    recs, p = parse(megatron(50, " | grad norm: 9.007"), megatron(51, " | grad norm: 11.835"))
    assert steps(recs) == [(50, 10.28609), (51, 10.28609)]
    assert [r["grad_norm"] for r in recs] == [9.007, 11.835]
    assert recs[0]["step_time_s"] == 0.1235


def test_a_grad_norm_cut_before_its_last_decimal_is_not_read():
    """A terminal or a paste that cut the line inside the value leaves fewer decimals: unread."""
    recs, p = parse(megatron(50, " | grad norm: 9.00"), megatron(51, " | grad norm: 11."),
                    megatron(52, " | grad norm: 1"))
    assert steps(recs) == [(50, 10.28609), (51, 10.28609), (52, 10.28609)]
    assert [r["grad_norm"] for r in recs] == [None, None, None]


def test_other_fixed_point_fields_left_last_are_read_and_nan_is_whole():
    recs, p = parse("iteration        1/     200 | lm loss: 1.195488E+01 | elapsed time per iteration (ms): 20399.3",
                    "iteration        2/     200 | lm loss: 1.195488E+01 | grad norm: nan")
    assert steps(recs) == [(1, 11.95488), (2, 11.95488)]
    assert recs[0]["step_time_s"] == 20.3993
    assert recs[1]["grad_norm"] != recs[1]["grad_norm"]   # nan


def test_an_integer_field_left_last_stays_unread():
    """'{:5d}' and '{:3d}' fields cannot show whether a cut took digits: the learning rate printed
    '{:.6E}' before them is read, the batch size after them not taken for anything."""
    recs, p = parse("iteration       10/     100 | learning rate: 1.500000E-06 | global batch size:   51",
                    "iteration       11/     100 | learning rate: 1.500000E-06 | global batch size:   51")
    assert [(r["step"], r["lr"]) for r in recs] == [(10, 1.5e-06), (11, 1.5e-06)]


# --------------------------------------------------------------------------- an optimizer's echo

ULTRA = ("optimizer: AdamW(lr=0.000526, momentum=0.9) with parameter groups 57 weight(decay=0.0), "
         "66 weight(decay=0.0005), 64 bias(decay=0.0)")
ROW = "      {e}/100      2.06G      2.681      4.744      3.814         37        640: 100% ━━━━━━━━━━━━ 221/221 4.5it/s 49.5s"
HEAD = "      Epoch    GPU_mem   box_loss   cls_loss   dfl_loss  Instances       Size"


def test_ultralytics_optimizer_line_is_no_record():
    """build_optimizer's announcement: its lr is the setting the schedule starts from and its
    group counts no step (it was a record at step 66 before every ultralytics run)."""
    recs, p = parse(ULTRA, "Image sizes 640 train, 640 val", HEAD, ROW.format(e=1), HEAD, ROW.format(e=2))
    assert [r["step"] for r in recs] == [221, 442]
    assert all(r["lr"] is None for r in recs)


def test_yolov5_and_muon_echoes_are_no_record_either():
    recs, p = parse("optimizer: SGD(lr=0.01) with parameter groups 57 weight(decay=0.0), 60 weight(decay=0.0005), 60 bias",
                    "optimizer: MuSGD(lr=0.01, momentum=0.9) with parameter groups 97 weight(decay=0.0), "
                    "104 weight(decay=0.0005), 103 bias(decay=0.0)",
                    "Using optimizer Adam(lr=0.001, betas=0.9) for 10 epochs")
    assert recs == []


def test_a_step_line_beside_an_optimizer_echo_keeps_its_own_values():
    """Only the construction is masked: the step's own loss and lr are read, the echo's lr not."""
    recs, p = parse("step 10 loss 0.52 lr 3e-05 (optimizer AdamW(lr=0.001, weight_decay=0.01))",
                    "step 20 loss 0.48 lr 2e-05 (optimizer AdamW(lr=0.001, weight_decay=0.01))")
    assert steps(recs) == [(10, 0.52), (20, 0.48)]
    assert [r["lr"] for r in recs] == [3e-05, 2e-05]


def test_names_that_only_resemble_an_optimizer_are_read_as_before():
    """A call without a keyword argument (mmengine's "Epoch(train)"), a word that merely contains a
    class name, are untouched."""
    recs, p = parse("Epoch(train)  [1][ 50/1000]  lr: 1.0000e-03  eta: 0:10:00  time: 0.5000  loss: 0.9000",
                    "Epoch(train)  [1][100/1000]  lr: 1.0000e-03  eta: 0:09:00  time: 0.5000  loss: 0.8000")
    assert steps(recs) == [(50, 0.9), (100, 0.8)]
    recs, p = parse("step 1 SGDR(lr=0.1) loss 2.0", "step 2 SGDR(lr=0.1) loss 1.5")
    assert steps(recs) == [(1, 2.0), (2, 1.5)]
