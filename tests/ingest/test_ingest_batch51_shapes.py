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


def test_a_build_printing_more_decimals_leaves_a_grad_norm_cut_at_three_unread():
    """Ascend's MindSpeed-Core-MS rules rewrite training_log's '{:.6E}' losses and '{:.3f}' grad norm
    to '{:.16f}': a row wrapped after the grad norm's third decimal is no whole value there. The
    same line unwrapped, and a stock line cut the same way, are read."""
    full = ("iteration {it:8d}/     200 | consumed samples:          256 | elapsed time per iteration (ms): "
            "4647.8 | learning rate: 1.500000E-06 | global batch size:   256 | lm loss: 2.1234567890123456 | "
            "loss scale: 1.0 | grad norm: 1.2345678901234567 | number of skipped iterations:   0 | "
            "number of nan iterations:   0 |")
    lines = [full.format(it=it) for it in (1, 2)]
    cut = lines[0].index("grad norm: ") + len("grad norm: 1.234")
    rows = [part for line in lines for part in (line[:cut], line[cut:])]
    assert rows[0].endswith("| grad norm: 1.234") and rows[1].startswith("5678901234567 |")
    recs, p = parse(*rows)
    assert [(r["step"], r["loss"]) for r in recs] == [(1, 2.1234567890123457), (2, 2.1234567890123457)]
    assert [r["grad_norm"] for r in recs] == [None, None]
    recs, p = parse(full.format(it=1))
    assert recs[0]["grad_norm"] == 1.2345678901234567
    recs, p = parse(megatron(3, " | loss scale: 1.0 | grad norm: 1.234"))
    assert recs[0]["grad_norm"] == 1.234
    # a fixed-point field with more decimals than stock gives the build away as well
    recs, p = parse(megatron(4, " | loss scale: 1.0000000000000000 | grad norm: 1.234"))
    assert recs[0]["grad_norm"] is None


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


def test_any_optimizer_class_announced_is_no_record():
    """The class is ``type(optimizer).__name__``: YOLOv9's smart_optimizer builds Lion for
    --optimizer LION, other trainers their own; a keyword value may hold a tuple."""
    recs, p = parse("optimizer: Lion(lr=0.01) with parameter groups 230 weight(decay=0.0), "
                    "247 weight(decay=0.0005), 245 bias", HEAD, ROW.format(e=1), HEAD, ROW.format(e=2))
    assert [r["step"] for r in recs] == [221, 442]
    assert all(r["lr"] is None for r in recs)
    recs, p = parse("optimizer: AdamW(lr=0.002, momentum=0.9, betas=(0.9, 0.999)) with parameter groups "
                    "81 weight(decay=0.0), 88 weight(decay=0.0005), 87 bias(decay=0.0)",
                    "optimizer: FusedAdam(lr=0.001) with parameter groups 57 weight(decay=0.0), "
                    "66 weight(decay=0.0005), 64 bias",
                    "Optimizer: DistributedFusedLAMB(lr=0.0003, betas=(0.9, 0.95))")
    assert recs == []


def test_a_step_lines_lr_in_a_call_is_read_alike_by_every_reader():
    """A "Name(lr=...)" on a step line with no announcement beside it is the step's own lr (it
    changes line to line), read by the kv reader and the shape learner alike; announced as the
    optimizer ("optimizer: AdamW(lr=...)") it is the setting, read by neither."""
    kv = ["step 10 loss 0.52 AdamW(lr=0.001)", "step 20 loss 0.48 AdamW(lr=0.0009)"]
    learned = ["Epoch 1 | AdamW(lr=0.00100) | loss 0.912", "Epoch 2 | AdamW(lr=0.00090) | loss 0.801",
               "Epoch 3 | AdamW(lr=0.00081) | loss 0.700"]
    recs, p = parse(*kv)
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(10, 0.52, 0.001), (20, 0.48, 0.0009)]
    recs, p = parse(*learned)
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(1, 0.912, 0.001), (2, 0.801, 0.0009), (3, 0.7, 0.00081)]
    recs, p = parse(*(ln.replace("AdamW(", "optimizer: AdamW(") for ln in kv))
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(10, 0.52, None), (20, 0.48, None)]
    recs, p = parse(*(ln.replace("AdamW(", "optimizer: AdamW(") for ln in learned))
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(1, 0.912, None), (2, 0.801, None), (3, 0.7, None)]
