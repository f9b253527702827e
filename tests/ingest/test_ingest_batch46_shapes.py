"""Line shapes of held-out batch 46 (trainers outside LLM training) that were misread: each
written from the code that prints it, fed as bytes, checked on the records a user gets, with lines
of other programs that only resemble it read as before."""
from __future__ import annotations

from tests.ingest.test_ingest_real_shapes import parse, step_losses as steps


# --------------------------------------------------------------------------- rl_games

def test_rl_games_reports_of_every_version_are_records_at_their_epochs():
    """a2c_common.py print_statistics (2023 on, the totals printed when not -1), 2022-09's
    "frame: F/FM", 2022-04's ".1f" rates with two spaces before "fps total"."""
    recs, p = parse("fps step: 112918 fps step and policy inference: 104337 fps total: 78179 epoch: 1/150 frames: 0",
                    "fps step: 416 fps step and policy inference: 409 fps total: 337 epoch: 2/150 frames: 507904/9830400",
                    "fps step: 408 fps step and policy inference: 401 fps total: 332 epoch: 3 frames: 524288",
                    "fps step: 408 fps step and policy inference: 401 fps total: 332 epoch: 4 frames: 540672/9830400")
    assert steps(recs) == [(1, None), (2, None), (3, None), (4, None)]
    assert recs[0]["max_steps"] == 150 and recs[0]["src"] == "rl_games"
    assert recs[1]["extra"]["frames"] == 507904 and recs[1]["extra"]["fps_step"] == 416
    recs, p = parse("fps step: 261574 fps step and policy inference: 230705 fps total: 181660 epoch: 376/500 frame: 24576000/-1",
                    "fps step: 61574.3 fps step and policy inference: 30705.1  fps total: 21660.0 epoch: 377/500")
    assert steps(recs) == [(376, None), (377, None)]
    assert recs[1]["max_steps"] == 500 and recs[1]["extra"]["fps_total"] == 21660.0


def test_lines_that_only_resemble_an_rl_games_report_are_not_its_records():
    """The oldest report names no epoch (no step); other words after the frames are not
    rl_games' line."""
    recs, p = parse("fps step: 1234.5 fps step and policy inference: 1100.0 fps total: 999.0",
                    "fps step: 416 fps step and policy inference: 409 fps total: 337 epoch: 32/200 frames: 507904 done")
    assert all(r["src"] != "rl_games" for r in recs)
    assert all(r["step"] != 32 for r in recs)


# --------------------------------------------------------------------------- OneTrainer

BAR = "step: 100%|██████████| 39/39 [{t}<00:00,  {rate}s/it, loss={loss}, smooth loss={smooth}]"


def test_finished_bars_one_under_another_stay_one_epoch():
    """GenericTrainer makes tqdm(..., desc="step", total=current_epoch_length) anew each epoch;
    each closed bar stays on its line. No text of tqdm's tells them from one bar drawn again by
    close() or from DDP ranks' bars (review R42, tests/ingest/test_ingest_review_r42.py): one
    epoch, its last values (OneTrainer pending)."""
    recs, p = parse(BAR.format(t="01:28", rate="2.27", loss="0.00467", smooth="0.133"),
                    BAR.format(t="02:16", rate="3.50", loss="0.287", smooth="0.139"),
                    BAR.format(t="01:09", rate="1.79", loss="0.313", smooth="0.131"),
                    "epoch: 100%|██████████| 3/3 [04:53<00:00, 97.67s/it]")
    assert steps(recs) == [(39, 0.313)]


def test_one_bar_drawn_again_at_its_total_stays_one_step():
    """update() then set_postfix() at the last count: one rate, two postfixes; close() then
    draws the last state again (the same postfix, the rate of the whole run)."""
    recs, p = parse("Steps: 100%|██████████| 101/101 [03:23<00:00,  1.98s/it, lr=1e-5, step_loss=0.0323]",
                    "Steps: 100%|██████████| 101/101 [03:23<00:00,  1.98s/it, lr=1e-5, step_loss=0.0456]",
                    "Steps: 100%|██████████| 101/101 [03:32<00:00,  2.11s/it, lr=1e-5, step_loss=0.0456]")
    assert steps(recs) == [(101, 0.0456)]


def test_a_finished_bar_with_its_rate_unknown_drawn_again_stays_one_step():
    """tqdm prints "?it/s" before it has measured a rate: no new rate, no new bar."""
    recs, p = parse("step: 100%|██████████| 39/39 [01:28<00:00, ?it/s, loss=0.1]",
                    "step: 100%|██████████| 39/39 [01:29<00:00, ?it/s, loss=0.2]")
    assert [r["step"] for r in recs] == [39]


# --------------------------------------------------------------------------- epoch lines with a note

def test_an_epoch_line_with_another_note_after_its_values_is_still_a_record():
    """An early-stopping loop marks the epochs that improved and counts the others' patience."""
    recs, p = parse("Epoch: 001, Loss: 1.8883, Test MAE: 1.0745 [New Best Model Saved]",
                    "Epoch: 039, Loss: 0.2282, Test MAE: 0.7743 [New Best Model Saved]",
                    "Epoch: 045, Loss: 0.1300, Test MAE: 0.8256 (Patience: 6/10)",
                    "",
                    "Early Stopping Triggered. (Best MAE: 0.7743)")
    assert steps(recs) == [(1, 1.8883), (39, 0.2282), (45, 0.13)]


def test_a_line_of_other_values_after_epoch_lines_is_no_epoch_record():
    recs, p = parse("Epoch: 001, Loss: 1.8883, Test MAE: 1.0745 [New Best Model Saved]",
                    "Epoch: 002, Loss: 1.5000, Test MAE: 1.0000 [New Best Model Saved]",
                    "Epoch: 003, Test MAE: 0.9000, Loss: 1.2000 (Patience: 1/10)")
    assert steps(recs) == [(1, 1.8883), (2, 1.5)]


# --------------------------------------------------------------------------- 3DGS resumed

def _gs_attempt(argv: list[str]) -> str:
    from moeconsole.runner.rundir.rundir import attempt_marker_line
    return attempt_marker_line(2, "2026-12-01T08:00:00", argv)


GS_BAR = "Training progress:  {pct}%|#         | {n}/{total} [00:{s:02d}<10:00, 40.00it/s, Loss=0.0{loss}]"


def test_a_3dgs_run_resumed_from_its_checkpoint_counts_its_bar_as_read_without_its_command():
    """train.py resumed with --start_checkpoint .../chkpnt7000.pth draws tqdm(range(7000, 30000)):
    its bar counts 0 .. 23000. The command does not say so (LangSplat's train.py takes the same
    flag and restarts at 0; review R42): read as in a log without its command (review R33), the
    counts are the steps and the evaluation past the bar's total is at its last step."""
    recs, p = parse(_gs_attempt(["python", "train.py", "-s", "data/garden", "-m", "out/garden",
                                 "--start_checkpoint", "out/garden/chkpnt7000.pth"]),
                    "Optimizing out/garden",
                    GS_BAR.format(pct=0, n=10, total=23000, s=1, loss=9),
                    GS_BAR.format(pct=0, n=20, total=23000, s=2, loss=8),
                    GS_BAR.format(pct=100, n=23000, total=23000, s=59, loss=5),
                    "",
                    "[ITER 30000] Evaluating test: L1 0.0297 PSNR 27.43 [01/12 08:10:00]")
    assert steps(recs) == [(10, 0.09), (20, 0.08), (23000, 0.05)]
    (ev,) = [m for m in p.marks if m["kind"] == "eval"]
    assert ev["step"] == 23000


# --------------------------------------------------------------------------- nerfstudio

NS_HEAD = f"{'Step (% Done)':<20}" + "".join(f"{n:<20} " for n in ("Train Iter (time)", "ETA (time)", "Train Rays / Sec", "Test PSNR"))
NS_RULE = "-" * len(NS_HEAD)


def _ns_row(step: int, iter_time: str, eta: str, rays: str, psnr: str) -> str:
    return f"{f'{step} ({step / 300:.02f}%)':<20}" + "".join(f"{v:<20} " for v in (iter_time, eta, rays, psnr))


def test_nerfstudio_rows_are_records_and_the_rows_a_redraw_repeats_are_not():
    """LocalWriter with max_log_size set redraws the header, the rule and the last rows after each
    logged step: every row once, at its step, its iteration time the step time."""
    r1 = _ns_row(100, "43.140 ms", "1 m, 5 s", "14.86 M", "21.3000")
    r2 = _ns_row(200, "1 s, 2.500 ms", "2 h, 1 m, 5 s", "980.5 K", "22.1000")
    recs, p = parse(NS_HEAD, NS_RULE, r1, NS_HEAD, NS_RULE, r1, r2)
    assert [r["step"] for r in recs] == [100, 200]
    assert recs[0]["step_time_s"] == 0.04314 and abs(recs[1]["step_time_s"] - 1.0025) < 1e-9
    assert recs[0]["extra"]["train_rays_per_sec"] == 14.86e6 and recs[1]["extra"]["train_rays_per_sec"] == 980.5e3
    assert recs[0]["loss"] is None
    # the test PSNR is the last evaluation's, drawn on every row: no evaluation per row
    assert not [m for m in p.marks if m["kind"] == "eval"] and "test_psnr" not in recs[0]["extra"]


def test_nerfstudio_rows_printed_through_rich_keep_their_caller_out_and_a_cut_row_its_cells():
    recs, p = parse(NS_HEAD + "      latfacto.py:604", NS_RULE + "      latfacto.py:554",
                    _ns_row(4090, "43.140 ms", "39 s, 300.687 ms", "14.86 M", "20.0000") + "      latfacto.py:566",
                    "4210 (84.18%)       46.225 ms")
    assert [(r["step"], r["step_time_s"]) for r in recs] == [(4090, 0.04314), (4210, 0.046225)]


def test_lines_that_only_resemble_a_nerfstudio_row_are_not_its_records():
    """A cell that is no stat's format, or words after the last column, is not the writer's row."""
    recs, p = parse(NS_HEAD, NS_RULE, _ns_row(100, "fast", "1 m, 5 s", "14.86 M", "21.3000"),
                    _ns_row(200, "43.140 ms", "1 m, 5 s", "14.86 M", "21.3000") + "  extra words")
    assert all(r["src"] != "nerfstudio" for r in recs)


# --------------------------------------------------------------------------- read on by a new runner

def _read_on(first: list[str], rest: list[str]) -> list[dict]:
    """The records a runner started in place of a killed one gives for ``rest``: a new parser
    given the context the first one saved after ``first`` (as state.json's log_context)."""
    import msgspec
    from moeconsole.runner.core.readctx import ReadingContext
    from moeconsole.runner.ingest import LogParser
    from moeconsole.runner.ingest.history import read_events
    p = LogParser()
    read_events(p, [b"".join(ln.encode() + b"\n" for ln in first)])
    saved = msgspec.json.decode(msgspec.json.encode(p.reading_context(at_end=True)), type=ReadingContext)
    q = LogParser()
    q.restore_context(saved)
    events = read_events(q, [b"".join(ln.encode() + b"\n" for ln in rest)])
    return [o for k, o in events if k == "record"]


def test_a_new_runner_reads_on_a_3dgs_bar_and_a_nerfstudio_table_as_the_first_did():
    gs = [_gs_attempt(["python", "train.py", "--start_checkpoint", "out/chkpnt7000.pth"]),
          GS_BAR.format(pct=0, n=10, total=23000, s=1, loss=9)]
    assert steps(_read_on(gs, [GS_BAR.format(pct=0, n=20, total=23000, s=2, loss=8)])) == [(20, 0.08)]
    ns = [NS_HEAD, NS_RULE, _ns_row(100, "43.140 ms", "1 m, 5 s", "14.86 M", "21.3000")]
    got = _read_on(ns, [_ns_row(200, "44.000 ms", "1 m, 4 s", "14.80 M", "21.3000")])
    assert [(r["step"], r["src"]) for r in got] == [(200, "nerfstudio")]
    epochs = ["Epoch: 001, Loss: 1.8883, Test MAE: 1.0745 [New Best Model Saved]",
              "Epoch: 039, Loss: 0.2282, Test MAE: 0.7743 [New Best Model Saved]"]
    assert steps(_read_on(epochs, ["Epoch: 045, Loss: 0.1300, Test MAE: 0.8256 (Patience: 6/10)"])) == [(45, 0.13)]
