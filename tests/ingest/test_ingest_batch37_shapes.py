"""Line shapes of held-out batch 37 that were misread: each written from the code that prints
it, fed as bytes, checked on the records a user gets, with a line of another program that only
resembles it read as before."""
from __future__ import annotations

import pytest

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps

# LeRobot's MetricsTracker.__str__ (src/lerobot/utils/logging_utils.py) behind logging's prefix
TRACKER = "INFO 2026-04-09 12:{s:02d}:00 ot_train.py:451 step:{step} smpl:{smpl} ep:8 epch:1.14 " \
          "loss:{loss} grdn:1.5 lr:5.0e-05 updt_s:0.439 data_s:0.699"


def line(s: int, step: str, loss: float, smpl: str = "2K") -> str:
    return TRACKER.format(s=s, step=step, smpl=smpl, loss=loss)


def test_lerobot_rounded_step_is_the_next_step_of_the_log_cadence():
    """lerobot_train.py logs when step % cfg.log_freq == 0: 600, 800, then "1K" is 1000, 1200,
    1400 and "2K" 1600 (format_big_number rounds to the thousand)."""
    recs, _ = parse(line(1, "600", 1.4), line(2, "800", 1.3), line(3, "1K", 1.2), line(4, "1K", 1.1),
                    line(5, "1K", 1.0), line(6, "2K", 0.9))
    assert steps(recs) == [(600, 1.4), (800, 1.3), (1000, 1.2), (1200, 1.1), (1400, 1.0), (1600, 0.9)]


def test_lerobot_rounded_step_off_the_cadence_stays_no_step():
    """200, 500 (a restart with another log_freq) then "2K": 800 does not print as "2K", so the
    line names no step it can be sure of."""
    recs, _ = parse(line(1, "200", 1.4), line(2, "500", 1.3), line(3, "2K", 1.2))
    assert steps(recs) == [(200, 1.4), (500, 1.3)]


def test_another_programs_rounded_step_stays_no_step():
    """A "step:1K" that is not LeRobot's tracker (no "smpl:" after it) after steps at a cadence."""
    recs, _ = parse("step:600 loss:1.4", "step:800 loss:1.3", "step:1K loss:1.2")
    assert steps(recs) == [(600, 1.4), (800, 1.3)]


def test_lerobot_announced_steps_are_the_runs_length():
    """logging.info(f"{cfg.steps=} ({format_big_number(cfg.steps)})") before the first step."""
    recs, _ = parse("INFO 2026-04-09 12:35:52 ot_train.py:348 cfg.steps=6000 (6K)",
                    "INFO 2026-04-09 12:35:52 ot_train.py:349 dataset.num_frames=1400 (1K)",
                    line(1, "200", 2.1))
    assert [(r["step"], r["max_steps"]) for r in recs] == [(200, 6000)]


def test_another_count_announced_the_same_way_is_no_length():
    recs, _ = parse("INFO 2026-04-09 12:35:52 ot_train.py:349 dataset.num_frames=1400 (1K)",
                    "INFO 2026-04-09 12:35:52 x.py:1 train.steps=6000 (6K)", line(1, "200", 2.1))
    assert [(r["step"], r["max_steps"]) for r in recs] == [(200, None)]


BAR = "Training:   {pct}% {n}/20000 [39:28<10:02:35,  {rate}]"


def test_lerobot_training_bar_glued_before_a_rounded_step_gives_the_step():
    """tqdm(total=cfg.steps - step, desc="Training", unit="step") updated before the tracker is
    logged: at 1.92 s a step the bar drawn in front of the line shows that step."""
    recs, _ = parse(BAR.format(pct=6, n=1200, rate="1.92s/step") + line(1, "1K", 1.209),
                    BAR.format(pct=7, n=1400, rate="1.91s/step") + line(2, "1K", 1.03))
    assert [(r["step"], r["loss"], r["max_steps"]) for r in recs] == [(1200, 1.209, 20000), (1400, 1.03, 20000)]


def test_a_fast_bar_glued_before_a_rounded_step_gives_no_step():
    """At 25 steps a second tqdm redraws every few updates: the count drawn may lag the step."""
    recs, _ = parse(BAR.format(pct=6, n=1190, rate="25.00step/s") + line(1, "1K", 1.209))
    assert steps(recs) == []


SB3_MARKDOWN = ["-----------------------------------------",
                "| rollout/            |                 |",
                "|---------------------|-----------------|",
                "| ep_len_mean        | 1e+03           |",
                "| time/              |                 |",
                "| total_timesteps    | 32768           |",
                "| train/             |                 |",
                "| learning_rate     | 0.0003           |",
                "| loss             | 0.0195            |",
                "-----------------------------------------"]


def test_stable_baselines_table_pasted_as_markdown_keeps_its_record():
    """HumanOutputFormat's table in a wiki: a delimiter row under its first row."""
    recs, _ = parse(*SB3_MARKDOWN)
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(32768, 0.0195, 0.0003)]


def test_a_markdown_table_of_another_program_gives_no_record():
    """A markdown table with no stable-baselines border around it stays unread."""
    recs, _ = parse("| step | loss |", "|------|------|", "| 32768 | 0.0195 |")
    assert all(r["src"] != "sb3_table" for r in recs)
    recs2, _ = parse("-----------------------------------------", "|---------------------|-----------------|",
                     "| total_timesteps    | 32768           |", "| loss             | 0.0195            |",
                     "-----------------------------------------")
    assert recs2 == []   # a delimiter row before any row is no table's: the rows after it are read as before


def _restarted_marks(first: bytes, rest: bytes) -> list[dict]:
    """The evaluations a new reader gives for ``rest`` after one that read ``first`` saved its
    context (through state.json's JSON, as the runner keeps it)."""
    import msgspec

    from moeconsole.runner.core.readctx import ReadingContext
    from moeconsole.runner.ingest.live import LiveReader
    reader = LiveReader(diagnostics=lambda msg: None)
    reader.feed_batches(first, 0)
    saved = msgspec.json.encode(reader.context())
    again = LiveReader(diagnostics=lambda msg: None)
    again.restore_context(msgspec.json.decode(saved, type=ReadingContext))
    return [m for b in again.feed_batches(rest, len(first)) for m in b.marks if m["kind"] == "eval"]


CSV_NAN = (b"epoch,         train/box_loss,         val/box_loss,           val/cls_loss\n"
           b"    1,                 1.0528,                    nan,                    nan\n",
           b"    2,                  0.975,                    nan,                    nan\n")


def test_a_restart_keeps_the_nan_evaluation_values_printed_beside_training_values():
    """ultralytics' results.csv with val/ losses nan on every row: read whole, the same nan
    values beside epoch 2 are no new evaluation; a reader restarted between the rows knows them
    too (the context keeps a number's text, "nan", as read), and a number's text only."""
    _, whole = parse(*(row.decode().rstrip("\n") for row in (CSV_NAN[0] + CSV_NAN[1]).splitlines()))
    assert [m["step"] for m in whole.marks if m["kind"] == "eval"] == [1]
    assert _restarted_marks(CSV_NAN[0], CSV_NAN[1]) == []
    from moeconsole.runner.core.readctx import values_fit
    assert values_fit({"val/box_loss": "nan", "loss": 0.5}) == {"val/box_loss": "nan", "loss": 0.5}
    assert values_fit({"val/box_loss": "hf_aBcDeF"}) is None   # never a line's text


def test_a_restart_keeps_the_lerobot_cadence():
    """A reader restarted after steps 600 and 800 reads the next "1K" as 1000 (the context keeps
    the last two exact steps)."""
    import msgspec

    from moeconsole.runner.core.readctx import ReadingContext
    from moeconsole.runner.ingest.live import LiveReader
    first = (line(1, "600", 1.4) + "\n" + line(2, "800", 1.3) + "\n").encode()
    reader = LiveReader(diagnostics=lambda msg: None)
    reader.feed_batches(first, 0)
    again = LiveReader(diagnostics=lambda msg: None)
    again.restore_context(msgspec.json.decode(msgspec.json.encode(reader.context()), type=ReadingContext))
    got = [(r["step"], r["loss"]) for b in again.feed_batches((line(3, "1K", 1.2) + "\n").encode(), len(first))
           for r in b.records]
    assert got == [(1000, 1.2)]


# --- mends after review: a resumed LeRobot run, its evaluation tracker, the banner's counts

def lerobot_number(n: int) -> str:
    from moeconsole.runner.ingest.formats import lerobot_big_number
    return lerobot_big_number(n)


def banner(total: int, batch: int | None = None) -> list[str]:
    """lerobot_train.py's banner, printed at every start and resume: cfg.steps, num_frames, the
    effective batch size (2025-10's form)."""
    lines = [f"INFO 2026-04-09 12:35:52 ot_train.py:348 cfg.steps={total} ({lerobot_number(total)})",
             "INFO 2026-04-09 12:35:52 ot_train.py:349 dataset.num_frames=1400 (1K)"]
    if batch is not None:
        lines.append(f"INFO 2026-04-09 12:35:52 ot_train.py:350 Effective batch size: {batch} x 1 = {batch}")
    return lines


def run_lines(first: int, last: int, every: int, loss0: float) -> list[str]:
    return [line(i % 60, lerobot_number(s), round(loss0 - s / 10000, 4)) for i, s in enumerate(range(first, last + 1, every))]


@pytest.mark.parametrize("resumed_every", [200, 500])
def test_a_resumed_lerobot_run_gives_no_step_from_the_cadence_before_it(resumed_every):
    """Logged every 200 steps to 1800, crashed, resumed from the checkpoint at 1000 (the banner
    again, then "1K" for 1200 and 1400, or log_freq 500 from 1500): the cadence of the run before
    read 1600 as 2000. The announced cfg.steps starts the cadence over: no rounded step of the
    resumed run is guessed (the first run's steps are as before)."""
    first = run_lines(200, 1800, 200, 2.0)
    recs, _ = parse(*banner(6000), *first, *banner(6000), *run_lines(1000 + resumed_every, 3000, resumed_every, 1.0))
    assert [r["step"] for r in recs] == list(range(200, 2000, 200))
    assert all(r["loss"] > 1.5 for r in recs)


def test_a_bar_glued_before_the_line_is_read_before_the_cadence():
    """A resumed run's bar counts from the step it resumed at (tqdm(total=cfg.steps - step)):
    600/2000 of a 3000-step run is step 1600, not the cadence's 2250 (both print "2K")."""
    bar = "Training:   {pct}% {n}/2000 [39:28<10:02:35,  1.92s/step]"
    recs, _ = parse(*banner(3000), *run_lines(250, 2000, 250, 3.0),
                    bar.format(pct=30, n=600) + line(1, "2K", 0.5), bar.format(pct=40, n=800) + line(2, "2K", 0.4))
    assert steps(recs)[-2:] == [(1600, 0.5), (1800, 0.4)]


def tracker(s: int, step: int, loss: float, batch: int, shown: str | None = None) -> str:
    """The tracker line at ``step`` with the samples and epochs MetricsTracker prints for it."""
    samples = step * batch
    return (f"INFO 2026-04-09 12:{s:02d}:00 ot_train.py:451 step:{shown or lerobot_number(step)} "
            f"smpl:{lerobot_number(samples)} ep:8 epch:{samples / 1400:.2f} loss:{loss} grdn:1.5 lr:5.0e-05")


def test_a_cadence_guess_the_lines_samples_contradict_is_refused():
    """Batch 8: step 1600 prints "step:2K smpl:13K epch:9.14". Resumed from 1000 without its
    banner (the log cut before it) after steps to 1800 at a cadence of 200, the cadence read it
    as 2000 (smpl:16K): the line's own samples refuse that; a line whose samples fit is read."""
    first = [tracker(i, s, round(2 - s / 10000, 4), 8) for i, s in enumerate(range(200, 1900, 200))]
    resumed = [tracker(i, s, round(1 - s / 10000, 4), 8) for i, s in enumerate(range(1200, 2000, 200))]
    recs, _ = parse(*banner(6000, batch=8), *first, *resumed)
    assert [r["step"] for r in recs] == list(range(200, 1900, 200))
    fits, _ = parse(*banner(6000, batch=8), *first[:4], tracker(5, 1000, 1.9, 8), tracker(6, 1200, 1.88, 8))
    assert [r["step"] for r in fits] == [200, 400, 600, 800, 1000, 1200]


def test_a_multi_process_run_of_the_tracker_that_counted_processes_twice_is_not_checked():
    """lerobot_train.py 2025-10-16 to 2026-02-24 gave MetricsTracker the effective batch size and
    its step() multiplied it by the processes again: "8 x 2 = 16" and step 1000 prints smpl:32K.
    The cadence's 1000 is read, not refused for the 16K a step of 16 samples would give."""
    recs, _ = parse("INFO 2026-01-20 10:00:00 ot_train.py:350 Effective batch size: 8 x 2 = 16",
                    *[tracker(i, s, round(2 - s / 10000, 4), 32) for i, s in enumerate(range(200, 1100, 200))])
    assert [r["step"] for r in recs] == [200, 400, 600, 800, 1000]


def test_a_line_of_another_batch_size_is_no_lerobot_banner():
    """A batch size that does not multiply to the total it prints is not LeRobot's banner: the
    cadence reads on unchecked."""
    recs, _ = parse("INFO x.py:1 Effective batch size: 8 x 2 = 20", *run_lines(200, 1400, 200, 2.0))
    assert [r["step"] for r in recs] == list(range(200, 1600, 200))


EVAL = "INFO 2026-04-09 12:{s:02d}:00 ot_train.py:470 step:{step} smpl:2K ep:8 epch:1.14 ∑rwrd:12.300 success:40.0 eval_s:33.2"


def test_lerobot_evaluation_tracker_line_is_at_the_last_step_and_keeps_the_cadence():
    """lerobot/scripts/train.py logs ``eval_tracker`` (no loss:) after the training line of the
    same step: it took a slot of the cadence, so 1200 was read as 1400. Now it is the evaluation
    at 1000 and the steps after it are 1200, 1400, 1600."""
    recs, p = parse(line(1, "600", 1.4), line(2, "800", 1.3), line(3, "1K", 1.2), EVAL.format(s=4, step="1K"),
                    line(5, "1K", 1.1), line(6, "1K", 1.0), line(7, "2K", 0.9))
    assert steps(recs) == [(600, 1.4), (800, 1.3), (1000, 1.2), (1200, 1.1), (1400, 1.0), (1600, 0.9)]
    assert [m["step"] for m in p.marks if m["kind"] == "eval"] == [1000]


def test_lerobot_announced_steps_need_their_own_rounded_number():
    """format_big_number(cfg.steps) is the bracket: "6000 (7K)" is not that line."""
    recs, _ = parse("INFO 2026-04-09 12:35:52 ot_train.py:348 cfg.steps=6000 (7K)", line(1, "200", 2.1))
    assert [(r["step"], r["max_steps"]) for r in recs] == [(200, None)]


@pytest.mark.parametrize(("online", "total"), [(0, 100000), (5000, 105000)])
def test_hydra_era_lerobot_offline_and_online_steps_are_the_runs_length(online, total):
    """lerobot/scripts/train.py 2024-03 to 2025-01: logging.info(f"{cfg.training.offline_steps=}
    ({format_big_number(...)})") then f"{cfg.training.online_steps=}"; the online loop's steps
    count on after the offline ones."""
    recs, _ = parse("INFO 2024-06-01 10:00:00 ts/train.py:350 cfg.training.offline_steps=100000 (100K)",
                    f"INFO 2024-06-01 10:00:00 ts/train.py:351 cfg.training.online_steps={online}",
                    line(1, "200", 2.1))
    assert [(r["step"], r["max_steps"]) for r in recs] == [(200, total)]


@pytest.mark.parametrize("delimiter", ["|-|-|", "|:--|--:|", "|:-:|---|"])
def test_stable_baselines_table_with_a_short_markdown_delimiter_row_keeps_its_record(delimiter):
    """GitHub-flavored markdown's delimiter cells need one dash (a colon at either end)."""
    recs, _ = parse(*SB3_MARKDOWN[:2], delimiter, *SB3_MARKDOWN[3:])
    assert [(r["step"], r["loss"], r["lr"]) for r in recs] == [(32768, 0.0195, 0.0003)]


def test_a_restart_keeps_evaluation_values_printed_without_a_leading_zero():
    """A CSV's ".5" beside a "nan" is kept as read; the context refused ".5", and with it every
    value beside it, so the restarted reader gave the same values at epoch 2 as a new evaluation."""
    head = b"epoch,         train/box_loss,         val/box_loss,           val/cls_loss\n"
    rows = [b"    %d,                 1.0528,                    nan,                    %s\n" % (e, v)
            for e, v in ((1, b".5"), (2, b".5"))]
    assert _restarted_marks(head + rows[0], rows[1]) == []
    neg = [row.replace(b".5", b"-.5") for row in rows]
    assert _restarted_marks(head + neg[0], neg[1]) == []


def test_a_context_of_the_runner_before_text_values_is_not_restored():
    """A context whose mixed_eval held floats only was version 1; this runner reads its own
    version only (readctx: a saved context of another version is read on without)."""
    from moeconsole.runner.supervisor.ingest_pipe import _context
    assert _context({"v": 1, "last_step": 7, "run_total": 40}) is None
