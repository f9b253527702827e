"""Review R52 of log batch 48's readers: a bar described "steps"/"Steps" made anew every epoch
numbered over its first epoch (the rule kept for kohya's close() redraw had switched off the next
epoch for every such bar); a bar cut by the terminal's width only at its closing "]" giving no
record (its whole last value was dropped); a resumed Lightning 2 run's bar ("Epoch 10: 50/100")
numbered below the earlier attempt's records. Each input fed as bytes through the parser,
checked on the records a user gets."""
from __future__ import annotations

import pytest

from tests.ingest.test_ingest_real_shapes import parse


def _steps(recs) -> list:
    return [(r["step"], r["loss"]) for r in recs]


# --------------------------------------------------------------------------- steps bar per epoch

_STEPS = "{d}: {p:3d}%|##        | {n}/4 [00:0{n}<00:00,  4.00it/s, loss={l}]"


@pytest.mark.parametrize("desc", ["Steps", "steps"])
def test_a_steps_bar_made_again_every_epoch_counts_on_across_the_epochs(desc):
    # for epoch in ...: for b in tqdm(loader, desc="Steps"): ... set_postfix(loss=...)
    lines = []
    for ep in range(2):
        lines += [_STEPS.format(d=desc, p=n * 25, n=n, l=f"0.{ep}{n}") for n in range(1, 5)]
        lines.append(f"episode {ep} reward 12.0")
    recs, _ = parse(*lines)
    assert [s for s, _ in _steps(recs)] == list(range(1, 9))
    assert _steps(recs)[4] == (5, 0.11)


def test_a_steps_bar_redrawn_with_cr_each_epoch_counts_on():
    # three epochs, each a "steps:" bar redrawn with \r from 1/4 to 4/4, then close()'s redraw
    lines: list = []
    for ep in range(3):
        lines.append(f"epoch {ep + 1}/3")
        bars = [_STEPS.format(d="steps", p=n * 25, n=n, l=f"0.{ep}{n}") for n in range(1, 5)]
        lines.append(("\r".join(bars) + "\r" + bars[-1]).encode())
    recs, _ = parse(*lines)
    assert [s for s, _ in _steps(recs)] == list(range(1, 13))


def test_a_steps_bar_over_the_run_drawn_again_at_its_total_is_not_the_next_epoch():
    # kohya's train_network.py: tqdm(range(max_train_steps), desc="steps"), the last step, its
    # "saving checkpoint:" line, then close() draws the bar once more at its total
    lines = [_STEPS.format(d="steps", p=n * 25, n=n, l=f"0.0{n}") for n in range(1, 5)]
    lines += ["saving checkpoint: /out/last.safetensors", _STEPS.format(d="steps", p=100, n=4, l="0.04")]
    recs, _ = parse(*lines)
    assert _steps(recs) == [(1, 0.01), (2, 0.02), (3, 0.03), (4, 0.04)]


# --------------------------------------------------------------------------- a bar cut at its "]"

@pytest.mark.parametrize("tail,want", [
    # only the "]" cut: the last value is whole as tqdm's format_num writes it (3 significant digits)
    ("v_num=1, loss={a}", [(45, 0.234), (46, 0.231)]),
    ("loss={a}, lr=1e-5", [(45, 0.234), (46, 0.231)]),
])
def test_a_bar_cut_only_at_its_closing_bracket_keeps_its_last_value(tail, want):
    bar = "Epoch 3:  {p}%|####5     | {n}/100 [00:10<00:12,  4.50it/s, " + tail
    recs, _ = parse(bar.format(p=45, n=45, a="0.234"), bar.format(p=46, n=46, a="0.231"))
    assert _steps(recs) == want
    if "lr=" in tail:
        assert [r["lr"] for r in recs] == [1e-5, 1e-5]


@pytest.mark.parametrize("cut", ["loss=0.23", "loss=0.2", "loss=1.23", "loss=0."])
def test_a_bar_cut_inside_its_last_value_drops_that_value(cut):
    # "0.23" may be "0.234" cut, "1.23" may be "1.23e-5" cut before its exponent: not read
    bar = " 45%|####5     | 45/100 [00:10<00:12,  4.50it/s, acc=0.912, " + cut
    recs, _ = parse(bar)
    assert [r["loss"] for r in recs] == [None]
    assert recs[0]["extra"]["acc"] == 0.912


# --------------------------------------------------------------------------- Lightning 2 resumed

_PL2 = "Epoch {e}: {p:3d}%|#####     | {n}/100 [00:10<00:10,  5.00it/s, v_num=1, train_loss={l}]"


def test_a_resumed_lightning2_bar_is_at_its_true_step():
    # tqdm_progress.py: the label is trainer.current_epoch, the total one epoch's training batches
    recs, _ = parse("Restoring states from the checkpoint path at /ckpt/epoch=9-step=1000.ckpt",
                    _PL2.format(e=10, p=50, n=50, l="0.300"), _PL2.format(e=10, p=100, n=100, l="0.250"),
                    _PL2.format(e=11, p=50, n=50, l="0.200"))
    assert _steps(recs) == [(1050, 0.3), (1100, 0.25), (1150, 0.2)]


def test_a_fresh_lightning2_run_reads_as_before():
    recs, _ = parse(*[_PL2.format(e=e, p=n, n=n, l=f"0.{e}{n // 50}") for e in (0, 1) for n in (50, 100)])
    assert [s for s, _ in _steps(recs)] == [50, 100, 150, 200]


def test_a_lightning1_bar_is_still_counted_from_the_first_epoch_shown():
    # 1.x's bar shows the running "loss" and its total counts the validation batches too
    bar = "Epoch {e}:  50%|#####     | 50/100 [00:10<00:10,  5.00it/s, loss={l}, v_num=1]"
    recs, _ = parse(bar.format(e=10, l="0.3"), bar.format(e=11, l="0.2"))
    assert _steps(recs) == [(50, 0.3), (150, 0.2)]


def test_a_nemo_bar_over_the_run_is_not_multiplied_by_its_epoch():
    # NeMo's Megatron bar: "Epoch 0: :" over the run's steps, read at its postfix's global step
    recs, _ = parse("Epoch 1: :   3%|▎ | 9000/301500 [1:42:42<55:37:46, v_num=0-56, "
                    "reduced_train_loss=2.31, global_step=9000.0]")
    assert _steps(recs) == [(9000, 2.31)]


# --------------------------------------------------------------------------- a bar's rate

def test_a_fairseq_bar_cut_at_the_width_keeps_the_step_time_of_its_rate():
    # graphormer's tmux-cut fairseq bar: before batch 48 read as a key-value line, the step time
    # from "12.92it/s"; a bar's rate in tqdm's own unit gives it on every bar, cut or not
    cut = ("epoch 065: 100%|▉| 2972/2974 [04:35<00:00, 12.92it/s, loss=0.086149, wps=800.2, ups=11.06, "
           "wpb=72.4, bsz=1024, num_updates=193200, lr=0.00017166,2$")
    for line in (cut, cut[:cut.rindex(",")] + "]"):
        (rec,), _ = parse(line)
        assert (rec["step"], rec["loss"]) == (193200, 0.086149)
        assert rec["step_time_s"] == pytest.approx(1 / 12.92)


@pytest.mark.parametrize("rate,want", [("2.27s/it", 2.27), ("4.00it/s", 0.25), ("3.90batch/s", None)])
def test_a_bar_rate_in_iterations_is_the_step_time(rate, want):
    (rec,), _ = parse(f"Training:  40%|####      | 40/100 [00:10<00:15,  {rate}, loss=2.3]")
    assert rec["step_time_s"] == (pytest.approx(want) if want is not None else None)
