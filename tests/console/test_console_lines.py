"""LinesView (status line, GPU rows, log tail): drawn segment for segment as a Static of the
same text (styles, truncation, the text-selection offsets), and an update draws and repaints
only the lines that changed."""
from __future__ import annotations

import asyncio
from pathlib import Path

from textual.app import App
from textual.geometry import Region
from textual.visual import Visual, visualize
from textual.widget import Widget

from moeconsole.console import format as fmt
from moeconsole.console.widgets.gpu_panel import HISTORY, GpuPanel, gpu_lines
from moeconsole.console.widgets.panes import LogTail
from moeconsole.console.widgets.status import StatusLine

CSS = Path(__file__).resolve().parents[2] / "console" / "console.tcss"
GPUS = [{"index": i, "util_pct": 40 + 7 * i, "mem_used_mib": 110_000 + 3500 * i, "mem_total_mib": 143_771,
         "temp_c": 55 + 9 * i, "power_w": 350 + 20 * i, "power_limit_w": 700, "processes": [1]} for i in range(8)]
RUN = {"id": "20240101-000000-demo-0001", "name": "qwen3-moe-lora-with-a-long-name", "status": "running",
       "step": 1234, "max_steps": 10000, "attempt": 2, "restarts": 1, "max_restarts": 10,
       "started_at": 1_700_000_000.0, "step_time_s": 2.1, "cost_per_hour": 70.0}


class Panes(App):
    CSS_PATH = str(CSS)

    def compose(self):
        yield StatusLine(id="status")
        yield GpuPanel(id="gpus")
        yield LogTail(id="logtail")


def pipeline_rows(widget) -> list:
    """What a Static holding the widget's text draws: the Content pipeline on all of it."""
    width, height = widget.size
    visual = visualize(widget, widget.render(), markup=False)
    strips = Visual.to_strips(widget, visual, width, height, widget.visual_style)
    return [list(strip) for strip in strips]


def drawn_rows(widget) -> list:
    return [list(widget.render_line(y)) for y in range(len(widget.lines))]


def assert_screen_lines_as_textual_draws_them(widget) -> None:
    """The lines with padding, background and line filters (LinesView.render_lines) are the
    ones Textual's styles cache makes, whole and cropped."""
    for region in (Region(0, 0, *widget.outer_size), Region(3, 1, widget.outer_size.width - 5, 2)):
        ours = widget.render_lines(region)
        widget._styles_cache.clear()
        assert ours == Widget.render_lines(widget, region), region


def test_lines_are_drawn_as_a_static_draws_them():
    status_runs = [RUN, {**RUN, "status": "paused", "pause_reason": "divergence"},
                   {**RUN, "status": "failed", "last_crash_class": "cuda_oom", "step": 7},
                   {**RUN, "status": "cooldown", "cooldown_until": 1e18}]
    log = tuple(["step 1/100 loss 2.0 grad_norm 1.0", "plain words " * 12, "tab\tseparated", "wide 中文 text",
                 "", "a bell \x07 and a carriage return\r", "x" * 200, "ünïcödé and — dashes · dots"]
                + [f"{{'loss': {1 / (i + 1):.4f}, 'grad_norm': 0.5, 'global_step/max_steps': '{i}/100'}}"
                   for i in range(30)])

    async def go():
        for size in ((160, 48), (80, 24), (45, 20)):
            app = Panes()
            async with app.run_test(size=size) as pilot:
                status, gpus, tail = app.query_one(StatusLine), app.query_one(GpuPanel), app.query_one(LogTail)
                for run in status_runs:
                    status.show_run(run, quiet_s=125.0, heartbeat_s=600.0)
                    await pilot.pause()
                    assert drawn_rows(status) == pipeline_rows(status), (size, run["status"])
                    assert_screen_lines_as_textual_draws_them(status)
                for k in range(3):
                    gpus.show_gpu({"available": True, "gpus": [{**g, "util_pct": g["util_pct"] + k} for g in GPUS]})
                    await pilot.pause()
                    assert drawn_rows(gpus) == pipeline_rows(gpus)[: len(gpus.lines)], size
                    assert_screen_lines_as_textual_draws_them(gpus)
                for n in range(1, len(log) + 1, 3):
                    tail.show(log[:n])
                    await pilot.pause()
                    assert drawn_rows(tail) == pipeline_rows(tail), (size, n)
                    assert_screen_lines_as_textual_draws_them(tail)
    asyncio.run(go())


def test_only_changed_lines_are_drawn_and_repainted():
    async def go():
        app = Panes()
        async with app.run_test(size=(160, 48)) as pilot:
            status, gpus, tail = app.query_one(StatusLine), app.query_one(GpuPanel), app.query_one(LogTail)
            width = gpus.size.width
            snapshot = {"available": True, "gpus": [dict(g) for g in GPUS]}
            gpus.show_gpu(snapshot)
            status.show_run(RUN)
            tail.show(tuple(f"line {i}" for i in range(100)))
            await pilot.pause()
            lines = len(gpus.lines)
            assert lines == len(gpu_lines(GPUS, width, lambda i: [1.0])) and gpus.draws == lines

            # the same snapshot again: nothing is drawn or repainted
            draws = (status.draws, gpus.draws, tail.draws)
            status.show_run(RUN)
            gpus.show_gpu(snapshot)
            tail.show(tuple(f"line {i}" for i in range(100)))
            assert [w for w in (status, gpus, tail) if w._repaint_regions] == []
            await pilot.pause()
            assert (status.draws, gpus.draws, tail.draws) == draws

            # one GPU changes
            # A new reading is a new snapshot (the very same object is a poll that read no GPU);
            # readings of a steady utilisation, until every sparkline is full and stays the same:
            for _ in range(HISTORY):
                snapshot = {**snapshot, "gpus": [dict(g) for g in snapshot["gpus"]]}
                gpus.show_gpu(snapshot)
            await pilot.pause()
            before = [gpus.render_line(y) for y in range(lines)]
            draws = (draws[0], gpus.draws, draws[2])
            snapshot = {**snapshot, "gpus": [{**snapshot["gpus"][0], "temp_c": 91}, *snapshot["gpus"][1:]]}
            gpus.show_gpu(snapshot)
            assert [(r.y - gpus.content_offset.y, r.height) for r in gpus._repaint_regions] == [(0, 1)]
            await pilot.pause()
            assert gpus.draws == draws[1] + 1
            after = [gpus.render_line(y) for y in range(lines)]
            assert after[1:] == before[1:] and after[0] != before[0]
            assert "91C" in gpus.plain_lines[0]

            # a new step changes the first status line only
            status.show_run({**RUN, "step": RUN["step"] + 1})
            assert [(r.y, r.height) for r in status._repaint_regions] == [(0, 1)]
            await pilot.pause()
            assert status.draws == draws[0] + 1
            assert fmt.intc(RUN["step"] + 1) in status.plain_lines[0]
    asyncio.run(go())


def test_a_pane_whose_line_count_changes_is_laid_out_again():
    async def go():
        app = Panes()
        async with app.run_test(size=(160, 48)) as pilot:
            gpus = app.query_one(GpuPanel)
            gpus.show_gpu({"available": True, "gpus": GPUS})
            await pilot.pause()
            assert gpus.size.height == len(gpus.lines) > 1
            gpus.show_gpu({"available": True, "gpus": GPUS[:1]})
            await pilot.pause()
            assert gpus.size.height == len(gpus.lines) == 1
            lines = [gpus.render_line(y).text for y in range(gpus.size.height)]
            assert lines[0].startswith(" 0 [")
            assert [s.text.strip() for s in gpus.render_lines(Region(0, 0, *gpus.outer_size))] == \
                [line.strip() for line in gpus.plain_lines]
    asyncio.run(go())


def test_a_chart_repaints_only_the_rows_a_new_step_changed():
    from moeconsole.runner.core.series import Series
    from moeconsole.console.widgets.chart import ChartView

    class Charts(App):
        CSS_PATH = str(CSS)

        def compose(self):
            yield ChartView("memory", id="chart-mem")

    def series(n: int) -> Series:
        s = Series()
        for i in range(1, n + 1):
            s.append(i, 120.0 + i % 5)
        return s

    async def go():
        app = Charts()
        async with app.run_test(size=(60, 16)) as pilot:
            chart = app.query_one(ChartView)
            chart.set_data([series(3000)], key=3000, cap=140.0)
            await pilot.pause()
            assert_screen_lines_as_textual_draws_them(chart)
            before = [chart.render_line(y) for y in range(chart.size.height)]
            draws = chart.draws
            chart.set_data([series(3002)], key=3002, cap=140.0, heading="memory 122 GiB")
            rows = {y - chart.content_offset.y for r in chart._repaint_regions for y in range(r.y, r.bottom)}
            assert rows and len(rows) < len(before) and chart.draws == draws + 1
            await pilot.pause()
            chart._cache_key = None  # drawn again from scratch: what the screen must now show
            after = [chart.render_line(y) for y in range(chart.size.height)]
            assert {y for y in range(len(after)) if after[y] != before[y]} <= rows
            assert_screen_lines_as_textual_draws_them(chart)
            assert chart.text_rows()[0].startswith("memory 122 GiB")
    asyncio.run(go())


def test_only_the_changed_columns_of_a_line_are_repainted():
    """A summary line whose age ticks (`agent 1s ago` -> `agent 2s ago`) repaints that cell, not
    its 160 columns; every cell whose text or style differs is inside the repainted columns
    (random lines: pieces added, removed, restyled, lengthened, past the width)."""
    import random
    from moeconsole.console.widgets.lines import changed_columns

    def cells(line, width):
        out = [(ch, style) for text, style in line for ch in text][:width]
        return out + [(" ", "")] * (width - len(out))
    rng = random.Random(3)
    words = ["gpu-node-001", "  agent 1s ago", "  agent 2s ago", "  ranks 8-15", "  mem 1011/1123G", "  STALE",
             "  max util 98%", "  max util 9%", "", "x" * 30]
    for _ in range(3000):
        width = rng.choice((20, 60, 160))
        old = tuple((rng.choice(words), rng.choice(("", "gpu--dim", "gpu--warn"))) for _ in range(rng.randint(0, 6)))
        new = list(old)
        for _ in range(rng.randint(1, 3)):
            k = rng.randrange(len(new) + 1)
            op = rng.choice(("set", "insert", "delete", "style"))
            if op == "insert" or not new:
                new.insert(k, (rng.choice(words), ""))
            elif op == "delete":
                del new[min(k, len(new) - 1)]
            elif op == "style":
                t, _ = new[min(k, len(new) - 1)]
                new[min(k, len(new) - 1)] = (t, rng.choice(("", "gpu--crit")))
            else:
                new[min(k, len(new) - 1)] = (rng.choice(words), new[min(k, len(new) - 1)][1])
        new = tuple(new)
        a, b = cells(old, width), cells(new, width)
        differ = [x for x in range(width) if a[x] != b[x]]
        span = changed_columns(old, new, width)
        if differ:
            assert span is not None and span[0] <= differ[0] and differ[-1] < span[1], (old, new, width, span)

    assert changed_columns((("gpu-node-001", "gpu--title"), ("  agent 1s ago", "gpu--dim")),
                           (("gpu-node-001", "gpu--title"), ("  agent 2s ago", "gpu--dim")), 160) == (20, 21)
    assert changed_columns((("wide 中文", ""),), (("wide 中文!", ""),), 160) is None, "not one-cell text: the whole line"

    async def go():
        app = Panes()
        async with app.run_test(size=(160, 48)) as pilot:
            gpus = app.query_one(GpuPanel)
            nodes = [{"host": f"gpu-node-{i:03d}", "t": 1000.0 + i, "age_s": 1.0, "stale": False, "glance": True,
                      "gpu": {"available": True, "gpus": [dict(g) for g in GPUS]},
                      "ranks": [{"rank": 8 * i + k} for k in range(8)]} for i in range(40)]
            gpus.show_gpu(None, tuple(nodes))
            await pilot.pause()
            assert gpus.summarised and "agent 1s ago" in gpus.plain_lines[3]
            gpus.show_gpu(None, tuple({**n, "age_s": 2.0} for n in nodes))
            regions = sorted(gpus._repaint_regions, key=lambda r: r.y)
            assert len(regions) == len(gpus.plain_lines) - 1 and all(r.width == 1 for r in regions), regions
            await pilot.pause()
            assert "agent 2s ago" in gpus.plain_lines[3]
            row = "".join(seg.text for seg in gpus.render_lines(Region(0, 3, *gpus.outer_size))[0])
            assert row.strip() == gpus.plain_lines[3].strip(), "the line as drawn, whole"
            assert_screen_lines_as_textual_draws_them(gpus)
    asyncio.run(go())
