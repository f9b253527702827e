"""The braille chart renderer on plain data: exact size, spikes and NaN survive downsampling,
markers land on their steps, memory is drawn against capacity, overlays use glyphs."""
from __future__ import annotations

import numpy as np

from moeconsole.console.chart import Marker, markers_from, render_chart, rows_text
from moeconsole.runner.core.series import Series
from tests.console.chart_helpers import plot_cols, series




def test_exact_size_for_many_sizes():
    s = series(range(100), np.linspace(3, 1, 100))
    for w, h in ((20, 5), (26, 8), (80, 14), (160, 20)):
        rows = rows_text(render_chart([s], w, h, title="loss"))
        assert len(rows) == h
        assert all(len(r) == w for r in rows), (w, h, [len(r) for r in rows])


def test_single_spike_in_a_million_points_is_drawn_at_its_step():
    n = 1_000_000
    s = Series()
    for i in range(n):
        s.append(i, 50.0 if i == 737_000 else 1.0)
    assert s.n == n and len(s.points()[0]) <= 2048, "a million steps stay a bounded series"
    rows = rows_text(render_chart([s], 87, 12, title="grad norm"))
    top = plot_cols(rows)[0]
    lit = [i for i, ch in enumerate(top) if ch not in " "]
    assert lit, "the spike must reach the top row"
    plot_w = len(top)
    expected = round(737_000 / (n - 1) * (plot_w * 2 - 1)) // 2
    assert all(abs(c - expected) <= 1 for c in lit), (lit, expected)
    assert rows[1].startswith("    50")


def test_nan_is_marked_not_hidden():
    ys = [1.0] * 50
    ys[30] = float("nan")
    rows = rows_text(render_chart([series(range(50), ys)], 40, 8, title="loss"))
    assert "!" in rows[-1] and "!" in rows[1]


def test_markers_on_axis_row_with_distinct_glyphs():
    s = series(range(0, 101), np.linspace(2, 1, 101))
    marks = markers_from([50], [{"step": 25, "ok": True}, {"step": 75, "ok": False}, {"step": 90, "suspect": True}])
    assert {m.kind for m in marks} == {"restart", "ckpt", "ckpt_bad", "ckpt_suspect"}
    rows = rows_text(render_chart([s], 57, 8, markers=marks))
    axis = rows[-1][7:]
    pos = {ch: axis.index(ch) for ch in "RC✗?"}
    assert pos["C"] < pos["R"] < pos["✗"] < pos["?"]
    assert abs(pos["R"] - len(axis) // 2) <= 1
    # the restart is also a dashed vertical line through the empty plot cells
    assert any(r[7 + pos["R"]] == "┆" for r in rows[1:-1])


def test_memory_against_capacity_shows_the_cap_line_and_headroom():
    s = series(range(100), [60.0] * 100)
    rows = rows_text(render_chart([s], 60, 10, cap=80.0, cap_label="80G"))
    cap_rows = [r for r in rows if "╌" in r]
    assert len(cap_rows) == 1 and cap_rows[0].lstrip().startswith("80G")
    data_rows = [i for i, r in enumerate(rows[1:-1]) if any(0x2800 < ord(c) <= 0x28FF for c in r)]
    cap_index = rows.index(cap_rows[0]) - 1
    assert data_rows and min(data_rows) > cap_index, "60 GiB is drawn below the 80 GiB line"
    assert rows[-2].lstrip().startswith("0"), "memory charts start at zero"


def test_overlay_uses_one_glyph_per_series():
    a = series(range(100), np.linspace(3, 1, 100))
    b = series(range(100), np.linspace(3, 2, 100))
    text = "\n".join(rows_text(render_chart([a, b], 60, 12)))
    assert "•" in text and "×" in text and "◆" in text  # both start at 3.0: drawn as "both"


def test_empty_and_tiny():
    rows = rows_text(render_chart([Series()], 30, 6, title="loss"))
    assert len(rows) == 6 and "no data yet" in rows[1]
    assert rows_text(render_chart([Series()], 0, 0)) == []
    assert len(rows_text(render_chart([series([1], [1.0])], 10, 2))) == 2


def test_a_title_too_wide_for_its_chart_shows_where_it_was_cut():
    s = series(range(10), np.linspace(3, 1, 10))
    rows = rows_text(render_chart([s], 14, 5, title="grad norm 123.456 of 4096"))
    assert len(rows[0]) == 14 and rows[0].rstrip().endswith("…"), rows[0]
    empty = rows_text(render_chart([Series()], 12, 4, title="loss"))
    # "no data yet" on the rows it has, broken between words, the cut marked on the last
    assert all(len(r) == 12 for r in empty) and empty[1].split("│")[1].strip() == "no" and "…" in empty[2], empty


def test_marker_outside_the_range_is_skipped():
    s = series(range(10, 20), [1.0] * 10)
    rows = rows_text(render_chart([s], 40, 6, markers=[Marker(500, "restart")]))
    assert "R" not in rows[-1]


def test_frequent_saves_on_a_long_run_leave_the_axis_readable_keeping_the_newest_and_the_bad():
    """A newcomer's 20,000-step run saving every 200 steps drew ``CCCCCC...`` along the whole axis
    at 60 columns: no axis left, and one bad save among them hard to find. The good saves are
    thinned to what the width shows (clear columns around each C); every bad save, every restart
    and the newest save stay where they are."""
    n = 20_000
    s = series(range(0, n + 1, 10), np.linspace(3, 1, n // 10 + 1))
    saves = [{"step": st, "ok": st != 9_000} for st in range(200, n + 1, 200)]
    rows = rows_text(render_chart([s], 60, 10, markers=markers_from([12_345], saves)))
    axis = rows[-1][7:]
    cs = [i for i, ch in enumerate(axis) if ch == "C"]
    assert "CC" not in axis and "C C" not in axis, axis
    assert all(b - a > 3 for a, b in zip(cs, cs[1:])), axis
    assert len(cs) >= len(axis) // 6, axis   # still spread along the whole run, not all dropped
    assert axis.count("✗") == 1 and abs(axis.index("✗") - round(9_000 / n * (len(axis) - 1))) <= 1, axis
    restart = [c for c in range(len(axis)) if any(r[7 + c] == "┆" for r in rows[1:-1])]
    assert len(restart) == 1 and abs(restart[0] - round(12_345 / n * (len(axis) - 1))) <= 1, rows
    assert "R" in (axis[restart[0]], *(r[7 + restart[0]] for r in rows[1:-1])), rows
    assert cs[-1] >= len(axis) - 2, axis   # the newest save, at the run's end
