"""Line shapes of held-out batch 57 that were misread: each written from the code that prints it,
fed as bytes, checked on the records a user gets, with lines of other programs that only resemble
it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps


# ------------------------------------------------- a step-less dict's step from its epoch
# transformers trainer.py: the banner prints "Num examples", "Num Epochs", "Total train batch size
# (w. parallel, distributed & accumulation)" and "Total optimization steps"; a run sized by epochs
# has max_steps = epochs * one epoch's steps; ProgressCallback.on_log prints each log with its epoch
# rounded to 2 places and no step; the first comes at step logging_steps.

def _banner(examples: int, epochs: int, batch: int, steps: int, prefix: str = "") -> list[str]:
    head = prefix + "[INFO|trainer.py:2414] 2025-05-15 07:26:19,308 >> "
    return [head + "***** Running training *****",
            head + f"  Num examples = {examples:,}",
            head + f"  Num Epochs = {epochs:,}",
            head + "  Instantaneous batch size per device = 2",
            head + f"  Total train batch size (w. parallel, distributed & accumulation) = {batch:,}",
            head + "  Gradient Accumulation steps = 4",
            head + f"  Total optimization steps = {steps:,}",
            head + "  Number of trainable parameters = 20,971,520"]


def _dict(loss: float, epoch: float) -> str:
    return f"{{'loss': {loss}, 'grad_norm': 0.5, 'learning_rate': 1e-05, 'epoch': {epoch}}}"


def test_dicts_every_three_steps_of_a_40_step_epoch():
    """Two epochs of 40 steps (320 examples, a batch of 8), logging every 3: the first dict's
    epoch 0.07 is step 3 (0.075 rounded), the next ones its multiples; the banner's steps are the
    records' max_steps."""
    recs, _ = parse(*_banner(320, 2, 8, 80), _dict(1.5, 0.07), _dict(1.4, 0.15), _dict(1.3, 0.23),
                    "Training completed.")
    assert steps(recs) == [(3, 1.5), (6, 1.4), (9, 1.3)]
    assert [r["max_steps"] for r in recs] == [80, 80, 80]


def test_a_thousand_separated_banner_with_examples_not_a_multiple_of_the_batch():
    """1,091 examples over a batch of 64 (17 steps an epoch, the last batch short), 3 epochs:
    logging every 10 reads 10, 20, 30 from epochs 0.58, 1.17, 1.75."""
    recs, _ = parse(*_banner(1091, 3, 64, 51), _dict(1.41, 0.58), _dict(1.04, 1.17), _dict(0.97, 1.75), "done")
    assert steps(recs) == [(10, 1.41), (20, 1.04), (30, 0.97)]


def test_a_second_training_in_the_file_tells_its_own_cadence():
    recs, _ = parse(*_banner(320, 2, 8, 80), _dict(1.5, 0.07), _dict(1.4, 0.15),
                    *_banner(800, 1, 8, 100), _dict(2.5, 0.05), _dict(2.4, 0.1), "done")
    assert steps(recs) == [(3, 1.5), (6, 1.4), (5, 2.5), (10, 2.4)]


def test_a_printed_logging_steps_comes_first():
    recs, _ = parse("  --logging_steps 4 \\", *_banner(320, 2, 8, 80), _dict(1.5, 0.07), _dict(1.4, 0.2), "done")
    assert steps(recs) == [(4, 1.5), (8, 1.4)]


def test_dicts_logged_every_step_read_as_before():
    recs, _ = parse(*_banner(320, 2, 8, 80), _dict(1.5, 0.03), _dict(1.4, 0.05), _dict(1.3, 0.07), "done")
    assert steps(recs) == [(1, 1.5), (2, 1.4), (3, 1.3)]


def test_a_run_sized_by_max_steps_numbers_its_dicts_as_before():
    """max_steps shorter than an epoch: the banner prints 1 epoch of 50 steps while 1,000 examples
    over a batch of 8 make 125 (the epochs are max_steps // an epoch's steps rounded up); without
    a dataloader length the epochs are sys.maxsize. Neither tells an epoch's steps."""
    short, _ = parse(*_banner(1000, 1, 8, 50), _dict(1.5, 0.04), _dict(1.4, 0.08), "done")
    assert steps(short) == [(1, 1.5), (2, 1.4)]
    endless, _ = parse(*_banner(1920, 9223372036854775807, 192, 10), _dict(2.8, 0.1), _dict(2.9, 0.2), "done")
    assert steps(endless) == [(1, 2.8), (2, 2.9)]


def test_epochs_of_more_than_a_hundred_steps_number_their_dicts_as_before():
    """At 400 steps an epoch the two decimals of 0.01 leave steps 2 to 6: no cadence is read."""
    recs, _ = parse(*_banner(3200, 2, 8, 800), _dict(1.5, 0.01), _dict(1.4, 0.02), "done")
    assert steps(recs) == [(1, 1.5), (2, 1.4)]


def test_steps_that_are_no_multiple_of_the_epochs_number_as_before():
    """num_train_epochs 2.5 prints 3 epochs over ceil(2.5 * 40) = 100 steps: no whole epoch's steps."""
    recs, _ = parse(*_banner(320, 3, 8, 100), _dict(1.5, 0.07), _dict(1.4, 0.15), "done")
    assert steps(recs) == [(1, 1.5), (2, 1.4)]


def test_rows_without_the_trainers_banner_tell_nothing():
    """Another program's "Num Epochs = 2" and "Total optimization steps = 80" lines, without the
    Trainer's "***** Running training *****" before them."""
    recs, _ = parse("  Num examples = 320", "  Num Epochs = 2",
                    "  Total train batch size (w. parallel, distributed & accumulation) = 8",
                    "  Total optimization steps = 80", _dict(1.5, 0.07), _dict(1.4, 0.15), "done")
    assert steps(recs) == [(1, 1.5), (2, 1.4)]


def test_a_first_dict_past_the_first_epoch_is_no_first_logging_event():
    """A paste that starts in the second epoch: its first dict's epoch tells no logging_steps."""
    recs, _ = parse(*_banner(320, 2, 8, 80), _dict(1.5, 1.07), _dict(1.4, 1.15), "done")
    assert steps(recs) == [(1, 1.5), (2, 1.4)]


def _live_steps(first: list[str], rest: list[str]) -> list[int]:
    """The steps a reader stopped after ``first`` and a new one restored from its context give."""
    from moeconsole.runner.ingest.live import LiveReader
    one = LiveReader(diagnostics=lambda msg: None)
    got = [r["step"] for b in one.feed_batches("".join(ln + "\n" for ln in first).encode(), 0) for r in b.records]
    two = LiveReader(diagnostics=lambda msg: None)
    two.restore_context(one.context())
    return got + [r["step"] for b in two.feed_batches("".join(ln + "\n" for ln in rest).encode(), 0) for r in b.records]


def test_a_reader_restarted_inside_the_banner_or_before_the_dicts_reads_on_the_cadence():
    banner = _banner(320, 2, 8, 80)
    dicts = [_dict(1.5, 0.07), _dict(1.4, 0.15), _dict(1.3, 0.23), "done"]
    assert _live_steps(banner[:5], banner[5:] + dicts) == [3, 6, 9]
    assert _live_steps(banner, dicts) == [3, 6, 9]
    assert _live_steps(banner + dicts[:2], dicts[2:]) == [3, 6, 9]


def test_a_first_dict_at_step_one_tells_no_cadence():
    """logging_first_step logs at step 1, then every logging_steps (5 here): the first dict's epoch
    0.03 of a 40-step epoch is step 1, which logging every step would print too; numbered as before."""
    recs, _ = parse(*_banner(320, 2, 8, 80), _dict(1.5, 0.03), _dict(1.4, 0.12), _dict(1.3, 0.25), "done")
    assert steps(recs) == [(1, 1.5), (2, 1.4), (3, 1.3)]
    assert all(r["extra"].get("step_numbered") for r in recs)
