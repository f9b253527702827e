"""Terminal line charts drawn with Unicode braille (2x4 dots per cell), UI-free.

``render_chart`` turns whole-run series into rows of (text, style) runs at a given size. Each
series is downsampled to the pixel width first (bucket max, so spikes and NaN survive), which
makes a 1,000,000-step run cost the same to draw as a short one. Markers (restarts, checkpoints)
get their own glyphs on the axis row, so nothing depends on colour.

Row layout: a title row, the plot rows (y labels on the left), and an axis row with markers.
With two or more series (run comparison) each series is drawn at cell resolution with its own
glyph, because braille dots of two runs could not be told apart without colour.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

import math

from console.format import short

Row = list[tuple[str, str]]

# Braille dot bits by (pixel column within the cell, pixel row within the cell).
_BITS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))

MARKER_GLYPH = {"restart": "R", "ckpt": "C", "ckpt_bad": "✗", "ckpt_suspect": "?"}
MARKER_STYLE = {"restart": "chart--restart", "ckpt": "chart--ckpt", "ckpt_bad": "chart--bad",
                "ckpt_suspect": "chart--bad"}
SERIES_GLYPHS = ("•", "×", "+", "o")
SERIES_STYLES = ("chart--line", "chart--line-b", "chart--line-c", "chart--line-d")
BOTH_GLYPH = "◆"
LABEL_W = 6


class Downsampled(Protocol):
    n: int

    def downsample(self, points: int) -> tuple[Sequence[float], Sequence[float]]: ...


@dataclass(frozen=True)
class Marker:
    step: float
    kind: str  # one of MARKER_GLYPH


def markers_from(restarts_at: Sequence[int], checkpoints: Sequence[dict]) -> tuple[Marker, ...]:
    """Chart markers from a snapshot's restart steps and checkpoint verdicts."""
    out = [Marker(float(s), "restart") for s in restarts_at]
    for ck in checkpoints:
        step = ck.get("step")
        if step is None:
            continue
        kind = "ckpt_bad" if ck.get("ok") is False else ("ckpt_suspect" if ck.get("suspect") else "ckpt")
        out.append(Marker(float(step), kind))
    return tuple(out)


def _merge(cells: list[tuple[str, str]]) -> Row:
    """Join neighbouring cells of one style into one run (fewer segments to draw)."""
    row: Row = []
    for ch, style in cells:
        if row and row[-1][1] == style:
            row[-1] = (row[-1][0] + ch, style)
        else:
            row.append((ch, style))
    return row


def _fit(text: str, width: int) -> str:
    return text[:width].ljust(width)


def _title(left: str, right: str, width: int) -> str:
    if right and len(left) + len(right) + 1 <= width:
        return left + right.rjust(width - len(left))
    return _fit(left, width)


def _y_range(ys: list[Sequence[float]], cap: float | None, floor: float | None) -> tuple[float, float] | None:
    finite = [v for y in ys for v in y if math.isfinite(v)]
    if not finite and cap is None:
        return None
    lo = min(finite) if finite else 0.0
    hi = max(finite) if finite else 0.0
    if cap is not None:
        lo = 0.0
        hi = max(hi, cap * 1.04)
    if floor is not None:
        lo = min(lo, floor)
    if hi <= lo:
        pad = abs(hi) * 0.1 or 1.0
        return lo - pad, hi + pad
    return lo, hi


def render_chart(series: Sequence[Downsampled], width: int, height: int, *, title: str | Sequence[str] = "",
                 right_title: str = "", markers: Sequence[Marker] = (), cap: float | None = None,
                 cap_label: str = "cap", y_floor: float | None = None) -> list[Row]:
    """Rows of (text, style) runs, exactly ``height`` rows of ``width`` cells."""
    width, height = max(0, width), max(0, height)
    if not isinstance(title, str):  # candidates, longest first: the first that fits is shown
        fitting = [t for t in title if len(t) <= width - 8] or list(title)[-1:] or [""]
        title = fitting[0]
    if width == 0 or height == 0:
        return [[("", "")] for _ in range(height)]
    rows: list[Row] = [[(_title(title, right_title, width), "chart--title")]]
    plot_h = height - 2
    plot_w = width - LABEL_W - 1
    if plot_h < 1 or plot_w < 4:
        return rows + [[(" " * width, "")] for _ in range(height - 1)]

    overlay = len(series) > 1
    px_w = plot_w if overlay else plot_w * 2
    px_h = plot_h if overlay else plot_h * 4
    data = [s.downsample(px_w) for s in series]
    xs_all = [x for x, _ in data if len(x)]
    if not xs_all:
        empty = _fit("no data yet", plot_w)
        rows += [[(" " * LABEL_W + "│", "chart--axis"), (empty if i == 0 else " " * plot_w, "chart--axis")]
                 for i in range(plot_h)]
        rows.append([(" " * LABEL_W + "└" + "─" * plot_w, "chart--axis")])
        return rows
    x0 = min(min(x) for x in xs_all)
    x1 = max(max(x) for x in xs_all)
    for s in series:  # a bucket is labelled by its first step: the true last step may lie beyond
        last_x = getattr(s, "last_x", None)
        if isinstance(last_x, (int, float)):
            x1 = max(x1, float(last_x))
    if not right_title:
        rows[0] = [(_title(title, f"{short(x0)}–{short(x1)}", width), "chart--title")]
    yr = _y_range([y for _, y in data], cap, y_floor)
    y0, y1 = yr if yr else (0.0, 1.0)

    def col_of(x: float) -> int:
        if x1 <= x0:
            return 0
        return min(max(round((x - x0) / (x1 - x0) * (px_w - 1)), 0), px_w - 1)

    def row_of(y: float) -> int:
        return min(max(round((y1 - y) / (y1 - y0) * (px_h - 1)), 0), px_h - 1)

    # cells[r][c] = (glyph, style); None = empty.
    cells: list[list[tuple[str, str] | None]] = [[None] * plot_w for _ in range(plot_h)]
    bad_cols: set[int] = set()
    if overlay:
        for i, (x, y) in enumerate(data):
            glyph, style = SERIES_GLYPHS[i % len(SERIES_GLYPHS)], SERIES_STYLES[i % len(SERIES_STYLES)]
            for xv, yv in zip(x, y):
                if not math.isfinite(yv):
                    bad_cols.add(col_of(xv))
                    continue
                c, r = col_of(xv), row_of(yv)
                cur = cells[r][c]
                if cur is not None and cur[0] != glyph:
                    cells[r][c] = (BOTH_GLYPH, "chart--both")
                else:
                    cells[r][c] = (glyph, style)
    else:
        x, y = data[0]
        dots = [[0] * plot_w for _ in range(plot_h)]
        pcol = [col_of(v) for v in x]
        prow = [row_of(v) if math.isfinite(v) else -1 for v in y]
        bad_cols.update(c // 2 for c, r in zip(pcol, prow) if r < 0)
        # Connect each point to the previous one: vertical spans, interpolated across the
        # columns between two points when the data is sparser than the pixels (a line, not dots).
        prev_c = prev_r = -1
        for c, r in zip(pcol, prow):
            if r < 0:
                prev_c = prev_r = -1
                continue
            if prev_r < 0 or c <= prev_c:
                cols = [(c, r if prev_r < 0 else prev_r, r)]
            else:
                cols, last = [], prev_r
                for cc in range(prev_c + 1, c + 1):
                    rr = int(round(prev_r + (r - prev_r) * (cc - prev_c) / (c - prev_c)))
                    cols.append((cc, last, rr))
                    last = rr
            for cc, a, b in cols:
                lo, hi = (a, b) if a <= b else (b, a)
                bits = _BITS[cc % 2]
                for rr in range(lo, hi + 1):
                    dots[rr // 4][cc // 2] |= bits[rr % 4]
            prev_c, prev_r = c, r
        for r in range(plot_h):
            row = dots[r]
            for c, bits in enumerate(row):
                if bits:
                    cells[r][c] = (chr(0x2800 + bits), "chart--line")

    if cap is not None:
        r = min(max(round((y1 - cap) / (y1 - y0) * (plot_h - 1)), 0), plot_h - 1)
        for c in range(plot_w):
            if cells[r][c] is None:
                cells[r][c] = ("╌", "chart--cap")
    cell_w = 1 if overlay else 2
    axis: list[tuple[str, str]] = [("─", "chart--axis")] * plot_w
    for m in sorted(markers, key=lambda m: m.kind == "ckpt"):  # bad verdicts drawn over good ones
        if not (x0 <= m.step <= x1) and x1 > x0:
            continue
        c = col_of(m.step) // cell_w
        axis[c] = (MARKER_GLYPH.get(m.kind, "|"), MARKER_STYLE.get(m.kind, "chart--axis"))
        if m.kind == "restart":
            for r in range(plot_h):
                if cells[r][c] is None:
                    cells[r][c] = ("┆", "chart--restart")
    for c in bad_cols:
        c = min(c, plot_w - 1)
        cells[0][c] = ("!", "chart--bad")
        axis[c] = ("!", "chart--bad")

    labels = {0: short(y1), plot_h - 1: short(y0)}
    if cap is not None and plot_h > 2:
        rc = min(max(round((y1 - cap) / (y1 - y0) * (plot_h - 1)), 0), plot_h - 1)
        labels[rc] = cap_label
    for r in range(plot_h):
        label = labels.get(r, "")[:LABEL_W].rjust(LABEL_W)
        line = [(label + "┤" if r in labels else label + "│", "chart--axis")]
        line += [c if c is not None else (" ", "") for c in cells[r]]
        rows.append(_merge(line))
    rows.append(_merge([(" " * LABEL_W + "└", "chart--axis")] + axis))
    return rows


def rows_text(rows: list[Row]) -> list[str]:
    """The rows as plain strings (tests, logs)."""
    return ["".join(t for t, _ in row) for row in rows]
