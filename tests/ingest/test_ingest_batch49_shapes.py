"""Line shapes of held-out batch 49 (LLM and MoE trainers) that were misread: each written from
the code that prints it, fed as bytes, checked on the records a user gets, with lines of other
programs that only resemble it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps

SWIFT_DICT = ("{'loss': 1.13790035, 'grad_norm': 1.41472316, 'learning_rate': 5e-05, 'epoch': 0.04, "
              "'global_step/max_steps': '1/27', 'percentage': '3.70%', 'elapsed_time': '46s', "
              "'remaining_time': '20m 1s', 'memory(GiB)': 61.79, 'train_speed(iter/s)': 0.021641}")
SWIFT_BAR = "Train:  11%|████████████                                              | 3/27 [01:52<14:28, 36.19s/it]"


# --------------------------------------------------------------------------- a bar cut inside its rate

def test_a_bar_cut_after_its_rate_is_a_bar_with_no_value():
    """tqdm trims the whole line to the terminal's width (std.py format_meter: disp_trim(res,
    ncols)); ms-swift's Train bar has no postfix, so a narrow terminal cuts it inside
    "[{elapsed}<{remaining}, {rate}" and drops its "]": still the bar, no record at its count."""
    recs, p = parse(SWIFT_DICT, SWIFT_BAR[:-1])
    assert steps(recs) == [(1, 1.13790035)]


def test_a_bar_cut_inside_its_rate_unit_is_a_bar_too():
    """Read as the whole bar is: the Hugging Face Trainer's bar (no description, unit "it") cut
    inside its unit gives the step-less dict under it its count and max_steps (review R59: the
    dict was numbered 1 and max_steps lost; before batch 49 the same)."""
    for cut in ("36.19s/", "36.19s/i", "5.37it/", "5.37i"):
        bar = f"  1%|▏         | 10/1000 [01:52<14:28, {cut}"
        recs, p = parse(bar, "{'loss': 1.9, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.01}")
        assert [(r["step"], r["loss"], r.get("max_steps")) for r in recs] == [(10, 1.9, 1000)], cut


def test_cut_bars_of_a_plain_loop_give_no_records_as_whole_ones_do():
    """The same bars with their "]" give no record either (a bar without a postfix is progress)."""
    cut = ["Epoch 1:  11%|███         | 3/27 [01:52<14:28, 36.19s/it",
           "Epoch 1:  15%|████        | 4/27 [01:55<14:28,  2.10it/s"]
    whole = [line + "]" for line in cut]
    assert steps(parse(*cut)[0]) == steps(parse(*whole)[0]) == []


def test_a_ranks_cut_bar_is_no_record():
    recs, p = parse(SWIFT_DICT, "[rank1]:" + SWIFT_BAR[:-1], "[rank0]:" + SWIFT_BAR[:-1])
    assert steps(recs) == [(1, 1.13790035)]


# --------------------------------------------------------------------------- lines it must not take

def test_a_postfix_cut_at_the_width_is_still_read():
    """The cut after the rate's ", " is batch 48's rule: the whole pieces before the cut are read."""
    recs, p = parse("Epoch 0:  11%|███         | 3/27 [01:52<14:28, 36.19s/it, loss=0.512, v_num=0, lr=0.00")
    assert steps(recs) == [(3, 0.512)]


def test_a_dict_glued_after_a_rate_without_its_bracket_is_still_read():
    recs, p = parse("  0%|          | 2/13000 [00:28<54:33:11, 15.11s/it{'loss': 0.2527, 'learning_rate': 5e-05}")
    assert [loss for _, loss in steps(recs)] == [0.2527]


def test_a_line_of_values_behind_a_percentage_is_no_bar():
    """No bar's "{n}/{total} [" behind the percentage: the line is read as before."""
    recs, p = parse("step 3/27 [01:52<14:28, 36.19s/it] loss: 0.5123",
                    "step 4/27 [01:55<14:28, 36.19s/it] loss: 0.4987")
    assert steps(recs) == [(3, 0.5123), (4, 0.4987)]


def test_a_bar_wrapped_by_the_terminal_reads_no_invented_step():
    """A bar wider than the terminal that tqdm did not trim wraps: its first row ends inside the
    bracket like a trimmed bar. Its rest on the next row is not joined (a known limit, as
    before); neither row is a record of its own (before, the first row was a record at the bar's
    count with no loss, which a whole bar without a postfix never is)."""
    recs, p = parse("Epoch 1:  11%|███         | 3/27 [01:52<14:28, 36.19s/it",
                    "01:52<14:28, 36.19s/it, loss=0.512]",
                    "{'loss': 0.4987, 'epoch': 1.0, 'global_step/max_steps': '4/27'}")
    assert steps(recs) == [(4, 0.4987)]
