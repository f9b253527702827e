"""Charts of any metric the log carries: the picker (c, / filters, space marks, enter shows, d
defaults), the choice kept per recipe in chart-prefs.json, EMA smoothing over the faint raw line
(e/E), a log axis (y), zoom (+ - < > 0 and the mouse), an axis clipped to a quantile so one
spike does not flatten the grad-norm chart, memory without a capacity drawn from zero, and a
restart and a checkpoint in one column both shown. Pure renderer tests on plain series, Pilot
tests on run directories written the way the runner writes them."""
from __future__ import annotations

import asyncio
import json
import math
import os

import pytest
from textual import events

from moeconsole.console.app import MoeConsole
from moeconsole.console.chart import Marker, render_chart, rows_text
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.widgets.chart import ChartView
from moeconsole.runner.core.series import Series
from moeconsole.runner.rundir import jsonio, seriesfile
from tests.console.chart_helpers import plot_cols, series
from tests.waiting import until_ui

# What this file adds is imported where it is used: run on the code before it, each test fails
# on the behaviour it checks, not on an import.


def _options(**kw):
    from moeconsole.console.chart import ChartOptions
    return ChartOptions(**kw)




def lit_rows(rows: list[str]) -> set[int]:
    """The plot rows that hold any braille dot."""
    return {i for i, r in enumerate(plot_cols(rows)) if any(0x2800 < ord(c) <= 0x28FF for c in r)}


# ---- the renderer on plain data -----------------------------------------------------------------

def test_one_spike_does_not_flatten_the_grad_norm_chart_and_is_marked():
    grad = [0.8 + 0.4 * ((i * 37) % 11) / 10 for i in range(300)]   # 0.8 .. 1.2 noise
    grad[150] = 60.0
    rows = rows_text(render_chart([series(range(300), grad)], 60, 12, title="grad norm"))
    # the noise fills the chart's height instead of a line along the floor (away from the spike)
    assert len(lit_rows([r[:27] for r in rows])) >= 6, rows
    top = plot_cols(rows)[0]
    assert "↑" in top, "the point beyond the clipped axis is marked on the top row"
    col = top.index("↑")
    assert abs(col - round(150 / 299 * (len(top) * 2 - 1)) // 2) <= 1
    assert rows[1].lstrip().startswith("↑"), "the axis label says it is clipped"
    # without clipping the same data is one flat line at the bottom and the spike
    flat = rows_text(render_chart([series(range(300), grad)], 60, 12, options=_options(clip=False)))
    assert len(lit_rows([r[:27] for r in flat])) <= 2


def test_memory_without_a_capacity_starts_at_zero_not_a_sawtooth():
    mem = [0.26 + 0.02 * (i % 2) for i in range(100)]   # 0.26-0.28 GiB noise
    rows = rows_text(render_chart([series(range(100), mem)], 50, 10, options=_options(zero_based=True)))
    assert rows[-2].lstrip().startswith("0┤"), "drawn from zero"
    assert len(lit_rows(rows)) <= 2, "2% of noise is not drawn across the whole height"
    sawtooth = rows_text(render_chart([series(range(100), mem)], 50, 10))
    assert len(lit_rows(sawtooth)) == 8   # what it looked like before


def test_a_restart_and_a_checkpoint_in_one_column_both_show():
    s = series(range(0, 1001), [1.0] * 1001)
    marks = [Marker(500.0, "ckpt"), Marker(501.0, "restart")]
    rows = rows_text(render_chart([s], 30, 8, markers=marks))
    axis, body = rows[-1][7:], plot_cols(rows)
    assert "C" in axis and "R" not in axis
    col = axis.index("C")
    assert body[0][col] == "R", "the restart is written at the top of its dashed line"
    assert any(r[col] == "┆" for r in body[1:])
    bad = rows_text(render_chart([s], 30, 8, markers=[Marker(500.0, "ckpt_bad"), Marker(500.0, "ckpt"),
                                                      Marker(501.0, "restart")]))
    assert "✗" in bad[-1] and plot_cols(bad)[0][bad[-1][7:].index("✗")] == "R"


def test_smoothing_draws_the_ema_over_the_faint_raw_line():
    ys = [1.0 + (0.5 if i % 2 else -0.5) for i in range(200)]
    rows = render_chart([series(range(200), ys)], 60, 10, title="loss", options=_options(smooth=0.9))
    styles = {style for row in rows for _, style in row}
    assert "chart--raw" in styles and "chart--line" in styles
    assert "EMA 0.9" in rows_text(rows)[0]
    smooth_cells = [(r, i) for r, row in enumerate(rows[1:-1]) for i, (t, st) in enumerate(row) if st == "chart--line"]
    assert smooth_cells, "the smoothed line is drawn"
    # the EMA of +-0.5 noise settles in the middle: past its first steps its cells are on the
    # middle rows, while the raw line spans the whole height
    settled = [r for r, i in smooth_cells if i > 10]
    assert settled and all(2 <= r <= 5 for r in settled), smooth_cells


def test_ema_is_tensorboards_debiased_average_and_skips_nan():
    from moeconsole.runner.core.series import ema
    assert ema([2.0, 2.0, 2.0], 0.9) == [2.0, 2.0, 2.0]
    out = ema([0.0, 10.0, math.nan, 10.0], 0.5)
    assert out[0] == 0.0 and math.isclose(out[1], 10 * 0.5 / (1 - 0.25)) and math.isnan(out[2])
    assert ema([1.0, 3.0], 0.0) == [1.0, 3.0]


def test_bucket_means_survive_merges_and_the_max_keeps_the_spike():
    s = Series(limit=64)
    for i in range(10_000):
        s.append(i, 100.0 if i == 5000 else 1.0)
    xs, ms = s.means()
    assert max(s.points()[1]) == 100.0, "the max keeps the spike"
    assert max(ms) < 2.0, "the mean does not jump with it"
    doc = json.loads(json.dumps(s.to_doc()))
    assert Series.from_doc(doc, 64).means() == (xs, ms)


def test_log_axis_and_its_refusal_on_non_positive_values():
    pos = series(range(100), [10 ** (i / 25) for i in range(100)])   # 1 .. ~10^4
    rows = rows_text(render_chart([pos], 60, 10, title="lr", options=_options(log=True)))
    assert "log" in rows[0]
    lit = sorted(lit_rows(rows))
    assert lit == list(range(lit[0], lit[-1] + 1)) and len(lit) >= 7, "a straight line on a log axis"
    neg = series(range(10), [-1.0, 1.0] * 5)
    assert "log n/a" in rows_text(render_chart([neg], 60, 8, title="x", options=_options(log=True)))[0]


def test_zoom_draws_only_the_range_and_says_so():
    from moeconsole.console.chart import render_chart_frame
    s = series(range(1000), [float(i) for i in range(1000)])
    rows, frame = render_chart_frame([s], 60, 10, title="loss", options=_options(xrange=(200.0, 400.0)))
    text = rows_text(rows)
    assert "zoom 200–400" in text[0]
    assert text[-2].lstrip().startswith("200") and text[1].lstrip().startswith("400")
    assert text[-1][7] == "◀" and text[-1][-1] == "▶", "more of the run on both sides"
    assert frame is not None and 200 <= frame.step_at(frame.plot_left) < 205
    assert "no data in this range" in rows_text(render_chart([s], 60, 10, options=_options(xrange=(2000.0, 3000.0))))[1]


def test_zoom_and_pan_ranges():
    from moeconsole.console.chart import pan_range, zoom_range, zoom_to
    full = (0.0, 1000.0)
    assert zoom_range(None, full, 0.5) == (500.0, 1000.0), "the newest steps stay in view"
    assert zoom_range((500.0, 1000.0), full, 0.5) == (625.0, 875.0)
    assert zoom_range((500.0, 1000.0), full, 2.0) is None, "back to the whole run"
    assert zoom_range(None, full, 0.5, around=100.0) == (50.0, 550.0)
    assert pan_range((500.0, 700.0), full, -1) == (400.0, 600.0)
    assert pan_range((900.0, 1000.0), full, 1) == (900.0, 1000.0)
    assert zoom_to(300.0, 100.5, full) is None or zoom_to(100.0, 300.0, full) == (100.0, 300.0)
    assert zoom_to(-50.0, 2000.0, full) is None


# ---- series.json keeps every other number the log carries -------------------------------------

def test_the_book_keeps_lr_epoch_extras_and_eval_values_and_reads_old_books_again(tmp_path):
    from moeconsole.runner.rundir import rundir
    run = rundir.create(tmp_path / "runs", "book")
    for step in range(1, 501):
        jsonio.append_jsonl(run.metrics, {"v": 1, "t": 100.0 + step, "attempt": 1, "step": step, "loss": 2.0,
                                          "lr": 1e-4 * step, "epoch": step / 100,
                                          "extra": {"token_acc": 0.5 + step / 1000, "rank": 3, "percentage": "5%",
                                                    "load_balancing_loss": "nan" if step == 7 else 1.0},
                                          "src": "swift_dict"})
    jsonio.append_jsonl(run.evals, {"v": 1, "t": 1.0, "attempt": 1, "step": 500, "split": "eval", "loss": 1.5,
                                    "values": {"eval_loss": 1.5, "eval_token_acc": 0.7}})
    book = seriesfile.load_book(run)
    assert set(book.other) == {"lr", "epoch", "t", "token_acc", "load_balancing_loss"}, "rank and text are no metrics"
    assert book.other["token_acc"].last() == 1.0 and book.other["lr"].n == 500
    assert math.isnan(max(book.other["load_balancing_loss"].points()[1], key=lambda v: v != v))
    assert book.eval_values["eval_token_acc"].last() == 0.7
    seriesfile.save_book(run, book)
    again = seriesfile.load_book(run)
    assert again.to_doc() == book.to_doc()
    # a book of the old schema (no other series) is not trusted: rebuilt from metrics.jsonl
    doc = json.loads(run.series.read_text())
    doc["v"] = 1
    del doc["other"]
    jsonio.atomic_write_json(run.series, doc)
    assert set(seriesfile.load_book(run).other) == set(book.other)


def test_the_runners_columns_feed_the_other_series_from_template_rows():
    """The runner feeds the book a batch of template rows (JSON lines as bytes): their extras
    become series too, exactly as one record at a time."""
    import numpy as np

    from moeconsole.runner.ingest.live import LiveReader
    reader = LiveReader()
    # what ms-swift prints: a dict's str(), floats in their shortest form
    lines = b"".join(str({"loss": round(2 - i / 100, 4), "grad_norm": 0.5, "learning_rate": 1e-05,
                          "token_acc": round(0.5 + i / 1000, 3), "global_step/max_steps": f"{i}/100",
                          "epoch": 0.1}).encode() + b"\n" for i in range(1, 101))
    book = seriesfile.SeriesBook()
    ref = seriesfile.SeriesBook()
    cut = lines.index(b"\n", 2000) + 1   # in two slices, as the runner reads: the second one by template
    batches = reader.feed_batches(lines[:cut]) + reader.feed_batches(lines[cut:])
    assert any(type(r) is bytes for b in batches for r in (b.records or [])), "template rows are JSON lines"
    for batch in batches:
        if not len(batch):
            continue
        rows = list(range(len(batch)))
        book.feed_arrays(np.asarray(batch.steps, dtype=np.float64), batch.values, batch.present, {"t": 5.0},
                         records=batch.records)
        for rec in seriesfile.as_dicts([batch.records[i] for i in rows]):
            ref.feed({**rec, "t": 5.0})
    assert book.other["token_acc"].n == 100 and book.other["token_acc"].last() == 0.6
    assert book.other["token_acc"].to_doc() == ref.other["token_acc"].to_doc()
    assert book.other["lr"].last() == 1e-05


# ---- the run screen's keys (Pilot) ---------------------------------------------------------------

def _run_with_extras(base, make_run, name="demo", run_id="20240101-000000-demo-0001"):
    run = make_run(base, run_id, name=name, status="succeeded", steps=60)
    recs = jsonio.read_jsonl(run.metrics)
    run.metrics.write_text("")
    for r in recs:
        r["extra"] = {"token_acc": 0.5 + r["step"] / 200, "load_balancing_loss": 1.0 + 0.01 * (r["step"] % 4)}
        jsonio.append_jsonl(run.metrics, r)
    jsonio.append_jsonl(run.evals, {"v": 1, "t": 1.0, "attempt": 2, "step": 60, "split": "eval", "loss": 0.9,
                                    "values": {"eval_loss": 0.9, "eval_token_acc": 0.81}})
    return run


def _titles(screen) -> list[str]:
    return [rows[0] for rows in (c.text_rows() for c in screen.query(ChartView) if c.display) if rows]


async def _attach(pilot):
    """The run screen once its charts are settled: two whole polls applied (the first frame comes
    from the run's files alone; a chart such as the evaluation's joins with the polls after it)."""
    await until_ui(pilot, lambda: isinstance(pilot.app.screen, RunScreen) and pilot.app.screen.snapshot is not None)
    screen = pilot.app.screen
    await until_ui(pilot, lambda: screen.polls >= 2 and any(t.startswith("loss") for t in _titles(screen)))
    await pilot.pause()
    return screen


def _picker(app):
    """The metric picker, if it is the screen on top."""
    return app.screen if type(app.screen).__name__ == "MetricPicker" else None


def test_c_picks_any_metric_with_a_filter_and_the_choice_is_kept_for_the_recipe(base, make_run):
    from moeconsole.console import chartprefs
    run = _run_with_extras(base, make_run)
    other = _run_with_extras(base, make_run, run_id="20240102-000000-demo-0002")

    async def go(target, actions):
        app = MoeConsole(base, target, gpu=False, interval=0.2)
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await _attach(pilot)
            return await actions(pilot, screen)

    async def choose(pilot, screen):
        await pilot.press("c")
        picker = await until_ui(pilot, lambda: _picker(pilot.app))
        keys_ = [m.key for m in picker.metrics]
        assert {"loss", "grad_norm", "mem_gib", "lr", "epoch", "token_acc", "load_balancing_loss", "eval:loss",
                "eval:eval_token_acc"} <= set(keys_), keys_
        assert "eval:eval_loss" not in keys_, "the evaluation loss is listed once"
        await pilot.press("slash", *"balanc", "enter")
        await until_ui(pilot, lambda: [m.key for m in picker.shown] == ["load_balancing_loss"])
        await pilot.press("space", "escape")          # Esc from the list: cancel, nothing changes
        await until_ui(pilot, lambda: pilot.app.screen is screen)
        assert not any(t.startswith("load_balancing_loss") for t in _titles(screen))
        await pilot.press("c")
        picker = await until_ui(pilot, lambda: _picker(pilot.app))
        await pilot.press("slash", *"acc", "enter")
        await until_ui(pilot, lambda: [m.key for m in picker.shown] == ["token_acc", "eval:eval_token_acc"])
        await pilot.press("space", "enter")
        await until_ui(pilot, lambda: pilot.app.screen is screen and any(t.startswith("token_acc 0.8") for t in _titles(screen)))
        assert screen.chart_keys() == ["loss", "grad_norm", "mem_gib", "eval:loss", "token_acc"]
        return _titles(screen)

    titles = asyncio.run(go(run, choose))
    assert titles[-1].startswith("token_acc 0.8")
    prefs = json.loads(chartprefs.prefs_path(base).read_text())
    assert prefs["recipes"]["demo"]["charts"][-1] == "token_acc"
    assert oct(os.stat(chartprefs.prefs_path(base)).st_mode & 0o777) == "0o600"

    async def kept(pilot, screen):   # another run of the recipe opens with the same charts
        await until_ui(pilot, lambda: any(t.startswith("token_acc") for t in _titles(screen)))
        await pilot.press("c")
        await until_ui(pilot, lambda: _picker(pilot.app))
        await pilot.press("0")                        # 0: back to the defaults, saved too
        await until_ui(pilot, lambda: pilot.app.screen is screen and not any(t.startswith("token_acc")
                                                                             for t in _titles(screen)))
        return _titles(screen)
    titles = asyncio.run(go(other, kept))
    assert [t.split()[0] for t in titles] == ["loss", "grad", "mem", "eval"]
    assert chartprefs.load_prefs(base, "demo").charts == []


def test_a_damaged_prefs_file_shows_the_defaults(base, make_run):
    run = _run_with_extras(base, make_run)
    (base / "chart-prefs.json").write_text("{not json")

    async def go():
        app = MoeConsole(base, run, gpu=False, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await _attach(pilot)
            await until_ui(pilot, lambda: len(_titles(screen)) >= 4, what="the default charts")
            return [t.split()[0] for t in _titles(screen)]
    assert asyncio.run(go()) == ["loss", "grad", "mem", "eval"]


def test_e_E_y_and_the_zoom_keys_change_every_chart(base, make_run):
    from moeconsole.console import chartprefs
    run = _run_with_extras(base, make_run)

    async def go():
        app = MoeConsole(base, run, gpu=False, interval=0.2)
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await _attach(pilot)
            loss = screen.query_one("#chart-loss", ChartView)
            await pilot.press("e", "e")
            await until_ui(pilot, lambda: "EMA 0.8" in loss.text_rows()[0])
            await pilot.press("E")
            await until_ui(pilot, lambda: "EMA 0.6" in loss.text_rows()[0])
            await pilot.press("E")
            await until_ui(pilot, lambda: "EMA" not in loss.text_rows()[0])
            await pilot.press("y")
            await until_ui(pilot, lambda: "log" in loss.text_rows()[0])
            assert chartprefs.load_prefs(base, "demo").log is True
            await pilot.press("y")
            await until_ui(pilot, lambda: "log" not in loss.text_rows()[0])
            await pilot.press("plus")
            await until_ui(pilot, lambda: "zoom 30–60" in loss.text_rows()[0])
            grad = screen.query_one("#chart-grad", ChartView)
            assert "zoom 30–60" in grad.text_rows()[0], "the charts share the zoomed range"
            await pilot.press("equals_sign")
            await until_ui(pilot, lambda: "zoom 38–53" in loss.text_rows()[0])
            await pilot.press("less_than_sign")
            await until_ui(pilot, lambda: screen.xrange is not None and screen.xrange[0] < 37)
            await pilot.press("greater_than_sign")
            await until_ui(pilot, lambda: screen.xrange is not None and screen.xrange[0] >= 37)
            await pilot.press("minus")
            await until_ui(pilot, lambda: "zoom 30–60" in loss.text_rows()[0] or "zoom 31–60" in loss.text_rows()[0])
            await pilot.press("0")
            await until_ui(pilot, lambda: screen.xrange is None and "1–60" in loss.text_rows()[0])
    asyncio.run(go())


def test_the_mouse_wheel_and_a_drag_zoom_where_the_terminal_sends_them(base, make_run):
    run = _run_with_extras(base, make_run)

    async def go():
        app = MoeConsole(base, run, gpu=False, interval=0.2)
        async with app.run_test(size=(160, 48)) as pilot:
            screen = await _attach(pilot)
            await until_ui(pilot, lambda: len(_titles(screen)) >= 4, what="every chart laid out")
            await pilot.pause()
            loss = screen.query_one("#chart-loss", ChartView)
            frame = await until_ui(pilot, lambda: getattr(loss, "frame", None))
            x = frame.plot_left + frame.plot_w // 4       # a quarter into the run
            loss.post_message(events.MouseScrollUp(loss, x, 3, 0, 0, 0, False, False, False))
            await until_ui(pilot, lambda: screen.xrange is not None)
            lo, hi = screen.xrange
            assert hi - lo <= 31 and lo <= 16 <= hi, screen.xrange
            loss.post_message(events.MouseScrollDown(loss, x, 3, 0, 0, 0, False, False, False))
            await until_ui(pilot, lambda: screen.xrange is None)
            # a drag from a third to two thirds of the plot
            await pilot.mouse_down(loss, offset=(frame.plot_left + frame.plot_w // 3, 4))
            await pilot.mouse_up(loss, offset=(frame.plot_left + 2 * frame.plot_w // 3, 4))
            await until_ui(pilot, lambda: screen.xrange is not None)
            lo, hi = screen.xrange
            assert 15 <= lo <= 25 and 35 <= hi <= 45, screen.xrange
    asyncio.run(go())


def test_five_charts_at_120_columns_keep_their_ema_and_log_marks(base, make_run):
    """Five charts at 120 columns: the step range and the title's last words go before the marks
    that say how a chart is drawn (``~.6`` EMA, ``log`` axis) ever do."""
    from moeconsole.console import chartprefs
    run = _run_with_extras(base, make_run)
    chartprefs.save_prefs(base, "demo", chartprefs.ChartPrefs(
        charts=["loss", "grad_norm", "mem_gib", "eval:loss", "token_acc"], smooth=0.6, log=True))

    async def go():
        app = MoeConsole(base, run, gpu=False, interval=0.2)
        async with app.run_test(size=(120, 36)) as pilot:
            screen = await _attach(pilot)
            await until_ui(pilot, lambda: len(_titles(screen)) == 5 and "token_acc" in _titles(screen)[-1])
            return _titles(screen)
    titles = asyncio.run(go())
    assert [t.split()[0] for t in titles] == ["loss", "grad", "mem", "eval", "token_acc"], titles
    for t in titles:
        # memory is drawn against its capacity (a linear axis): its mark is the EMA's alone
        marks = ["~.6"] if t.startswith("mem") else ["~.6", "log"]
        assert all(m in t.split() for m in marks), titles
    assert titles[0].startswith("loss 0.77"), "the value stays beside the name"
    # a title too long for any variant loses its words from the end, never the marks
    from moeconsole.console.chart import ChartOptions
    rows = rows_text(render_chart([series(range(1, 50), [1.0 + i for i in range(49)])], 22, 6,
                                  title=("load_balancing_loss 1.25 (1–2)", "load_balancing_loss 1.25"),
                                  options=ChartOptions(smooth=0.6, log=True)))
    assert rows[0].rstrip().endswith("~.6 log") and rows[0].startswith("load_balanc"), rows[0]


@pytest.mark.parametrize("log_mem", ["none", "zeros"])
def test_memory_seen_only_through_nvml_is_drawn_and_the_title_names_nvml(base, make_run, log_mem):
    """A log with no memory field (or one that prints 0), a runner that watches the GPUs through
    NVML: the memory chart draws the runner's per-step NVML peaks of the tightest GPU (a leak
    rises), not an empty or flat chart under a `headroom ... LOW` title, and every width of the
    title says NVML."""
    from moeconsole.runner.core.memory import MemorySettings, MemoryWatch, readings_from_nvml
    run = make_run(base, status="running", steps=120, max_steps=400, restart_at=None, checkpoints=())
    recs = jsonio.read_jsonl(run.metrics)
    run.metrics.write_text("")
    for r in recs:
        r.pop("mem_gib")
        if log_mem == "zeros":
            r["mem_gib"] = 0.0
        jsonio.append_jsonl(run.metrics, r)
    # the runner's memory watch, fed the NVML samples of a 170 MiB/step leak on an 80 GiB GPU
    watch = MemoryWatch(MemorySettings())
    for step in range(1, 121):
        gpu = {"available": True, "gpus": [{"index": 0, "mem_used_mib": 60 * 1024 + step * 170,
                                              "mem_total_mib": 80 * 1024, "processes": []}]}
        for reading in readings_from_nvml(gpu, step=step, t=1000.0 + step):
            watch.observe(reading)
    state = jsonio.read_json(run.state)
    state["memory"] = watch.to_dict()
    jsonio.atomic_write_json(run.state, state)
    assert state["memory"]["gpus"][0]["ok"] is False, "the headroom is LOW: what the title says"

    async def go(size):
        app = MoeConsole(base, run, gpu=False, interval=0.2)
        async with app.run_test(size=size) as pilot:
            screen = await _attach(pilot)
            mem = screen.query_one("#chart-mem", ChartView)
            await until_ui(pilot, lambda: "nvml" in mem.text_rows()[0].lower(), what="the NVML memory title")
            return mem.text_rows()
    for size in ((80, 24), (120, 36), (160, 48)) if log_mem == "none" else ((120, 36),):
        rows = asyncio.run(go(size))
        title, body = rows[0], plot_cols(rows)
        assert "LOW" in title and "nvml" in title.lower(), title
        dots = [(r, c) for r, line in enumerate(body) for c, ch in enumerate(line) if 0x2800 < ord(ch) <= 0x28FF]
        assert dots, rows
        assert "no data" not in "".join(rows)
        # a leak: the line's right end lies higher (a smaller row) than its left end
        left = min(c for _, c in dots)
        right = max(c for _, c in dots)
        assert right - left >= len(body[0]) // 2, "drawn across the steps"
        assert min(r for r, c in dots if c == right) < max(r for r, c in dots if c == left), rows
