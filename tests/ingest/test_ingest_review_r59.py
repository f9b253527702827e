"""Review R59 of batch 49 (a tqdm bar cut at the terminal's width before its "]"): the Hugging
Face Trainer's cut bar gives the step-less dict under it its count and max_steps as the whole bar
does, a bar cut right after its rate's ", " (tqdm's ", " + postfix, the blank stripped) is a bar
with no value too, and programs' lines that only resemble one are read as before."""
from __future__ import annotations

import pytest

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps

HF_DICT = "{{'loss': {loss}, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.01}}"


def _trainer_log(rate: str, total: int = 1000) -> list[str]:
    """The Trainer's bar (ProgressCallback: tqdm(total=max_steps), no description) at steps 1..30,
    each line ending at ``rate`` as tqdm's disp_trim leaves it, a dict every 10 steps."""
    out = []
    for n in range(1, 31):
        out.append(f"{n * 100 // total:3d}%|▏ | {n}/{total} [00:0{n // 10}<03:05,  {rate}")
        if n % 10 == 0:
            out.append(HF_DICT.format(loss=f"1.{9 - n // 10}"))
    return out


@pytest.mark.parametrize("rate", ["5.37it/s", "5.37it/", "5.37it", "5.37i", "5.37", "5.37it/s,",
                                  "5.37s/it", "5.37s/i", "5.37s/", "5.37s", "5.37it/s]"])
def test_a_trainers_bar_cut_at_the_width_gives_the_dict_under_it_its_step_and_max_steps(rate):
    recs, p = parse(*_trainer_log(rate))
    assert [(r["step"], r["loss"], r.get("max_steps")) for r in recs] == [
        (10, 1.8, 1000), (20, 1.7, 1000), (30, 1.6, 1000)]


@pytest.mark.parametrize("rate", ["5.37ba/s", "5.37ba/", "5.37ex", "5.37examples/s"])
def test_a_cut_bar_counting_another_unit_gives_no_step(rate):
    """datasets' map bars count "ba" or "examples": a cut one is no Trainer bar, as a whole one
    is not (the dicts are numbered in order, as under a whole "ba/s" bar)."""
    cut = [r["step"] for r in parse(*_trainer_log(rate))[0]]
    whole = [r["step"] for r in parse(*_trainer_log("5.37ba/s]"))[0]]
    assert cut == whole == [1, 2, 3]


BARS = {"Epoch 0": "Lightning/NeMo", "Steps": "accelerate/diffusers", "Train": "ms-swift"}


@pytest.mark.parametrize("desc", list(BARS))
def test_a_bar_cut_right_after_its_rates_comma_is_a_bar_with_no_value(desc):
    """tqdm's r_bar "[{elapsed}<{remaining}, {rate}{postfix}]" with postfix = ", " + postfix
    (std.py format_meter): cut between the "," and the postfix, the line ends "5.37it/s," once its
    blank is stripped. No record at the count (nor, for "Steps", at the percentage 44)."""
    lines = [f"{desc}:  44%|▍| {n}/1000 [01:21<01:44,  5.37it/s, " for n in range(440, 446)]
    assert steps(parse(*lines)[0]) == []


def test_a_postfix_cut_after_its_first_value_is_still_read():
    """The other side: one character of the postfix more and its values are read (batch 48)."""
    recs, p = parse("Epoch 0:  44%|▍| 440/1000 [01:21<01:44,  5.37it/s, loss=2.61, v")
    assert steps(recs) == [(440, 2.61)]


def test_a_line_ending_in_a_rate_and_a_comma_with_no_bar_is_read_as_before():
    recs, p = parse("step 440/1000 [01:21<01:44,  5.37it/s, loss: 2.61",
                    "step 441/1000 [01:21<01:44,  5.37it/s, loss: 2.59")
    assert steps(recs) == [(440, 2.61), (441, 2.59)]
