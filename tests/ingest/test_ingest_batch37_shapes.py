"""Line shapes of held-out batch 37 that were misread: each written from the code that prints
it, fed as bytes, checked on the records a user gets, with a line of another program that only
resembles it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse

# LeRobot's MetricsTracker.__str__ (src/lerobot/utils/logging_utils.py) behind logging's prefix
TRACKER = "INFO 2026-04-09 12:{s:02d}:00 ot_train.py:451 step:{step} smpl:{smpl} ep:8 epch:1.14 " \
          "loss:{loss} grdn:1.5 lr:5.0e-05 updt_s:0.439 data_s:0.699"


def line(s: int, step: str, loss: float, smpl: str = "2K") -> str:
    return TRACKER.format(s=s, step=step, smpl=smpl, loss=loss)


def steps(recs) -> list[tuple]:
    return [(r["step"], r["loss"]) for r in recs]


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
