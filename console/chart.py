"""Terminal line charts drawn with Unicode braille (2x4 dots per cell), UI-free.

``render_chart`` turns whole-run series into rows of (text, style) runs at a given size. Each
series is downsampled to the pixel width first (bucket max, so spikes and NaN survive), which
makes a 1,000,000-step run cost the same to draw as a short one. Markers (restarts, checkpoints)
get their own glyphs on the axis row, so nothing depends on colour.

Row layout: a title row, the plot rows (y labels on the left), and an axis row with markers.
With two or more series (run comparison) each series is drawn at cell resolution with its own
glyph, because braille dots of two runs could not be told apart without colour.

``ChartOptions`` adds what TensorBoard and W&B users reach for: EMA smoothing drawn over the
faint raw line, a log axis, a zoomed step range, and an axis clipped to a quantile so one spike
does not flatten everything else (the points beyond it marked ``↑``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import math

from moeconsole.console.format import short
from moeconsole.runner.core.units import clip, fit_words
from moeconsole.runner.core.series import ema, in_range, reduce_mean

Row = list[tuple[str, str]]

# Braille dot bits by (pixel column within the cell, pixel row within the cell).
_BITS = ((0x01, 0x02, 0x04, 0x40), (0x08, 0x10, 0x20, 0x80))

MARKER_GLYPH = {"restart": "R", "ckpt": "C", "ckpt_bad": "✗", "ckpt_suspect": "?"}
MARKER_STYLE = {"restart": "chart--restart", "ckpt": "chart--ckpt", "ckpt_bad": "chart--bad",
                "ckpt_suspect": "chart--bad"}
SERIES_GLYPHS = ("•", "×", "+", "o", "#", "@", "%", "&")
SERIES_STYLES = ("chart--line", "chart--line-b", "chart--line-c", "chart--line-d")
BOTH_GLYPH = "◆"
LABEL_W = 6


class Downsampled(Protocol):
    n: int

    def downsample(self, points: int, lo: float | None = None, hi: float | None = None
                   ) -> tuple[Sequence[float], Sequence[float]]:
        """At most ``points`` (x, y) pairs, only those with x in ``lo``..``hi`` when given."""
        ...


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


def _cut_pad(text: str, width: int) -> str:
    """``text`` in exactly ``width`` cells: padded, or cut with the cut marked (``units.clip``)."""
    return clip(text, width).ljust(width) if width > 0 else ""


def _title_line(left: str, right: str, width: int) -> str:
    if right and len(left) + len(right) + 1 <= width:
        return left + right.rjust(width - len(left))
    return _cut_pad(left, width)


@dataclass(frozen=True)
class ChartOptions:
    """How a chart is drawn, beyond its data.

    ``smooth``: EMA weight (0 off); the raw line stays behind the smoothed one, faint.
    ``log``: a log10 y axis (when every value shown is positive; the title says if it cannot).
    ``xrange``: (first, last) step shown, None for the whole run (zoom).
    ``clip``: an axis clipped to the 98th percentile when a few values would squeeze the rest
    into a sliver; the points beyond it are marked ``↑`` on the top row.
    ``zero_based``: the y axis starts at 0 (a quantity like memory: its noise is not a sawtooth).
    ``over``: the run is over or the log imported, so no more data comes: an empty chart says the
    log has none ("not in this log"), not "no data yet" (which read as a wait on a finished log).
    ``stepping``: the live run has logged steps: an empty chart says its steps so far carry none
    (``STEPS_LACK_IT``), not "no data yet", which promised what may never come (newcomer round 12: ms-swift
    writes `memory(GiB)` only where a device's reserved memory is above 0, swift/trainers/patcher.py l.27-29,
    so a CPU run's memory chart said "no data yet" through all its 200 steps)."""
    smooth: float = 0.0
    log: bool = False
    xrange: tuple[float, float] | None = None
    clip: bool = True
    zero_based: bool = False
    over: bool = False
    stepping: bool = False


DEFAULT_OPTIONS = ChartOptions()
CLIP_QUANTILE = 0.98
CLIP_RATIO = 3.0        # clipped when the top value lies this many quantile spans above the floor
CLIP_MIN_POINTS = 20
MIN_REL_SPAN = 1e-3     # a flat series spans at least this fraction of its magnitude
CLIP_GLYPH = "↑"
NAN_GLYPH = "!"
NOT_IN_LOG = "not in this log"   # an empty chart of a run that is over (``ChartOptions.over``)
STEPS_LACK_IT = "not in its steps so far"   # ... of a live run that has logged steps (``ChartOptions.stepping``)
RESTART_LINE_GLYPH = "┆"
ZOOM_LEFT_GLYPH, ZOOM_RIGHT_GLYPH = "◀", "▶"   # a zoomed axis: more of the run lies that way
CAP_GLYPH = "╌"          # the memory chart's capacity line
OTHER_MARK_GLYPH = "|"   # on the x axis: a marker of a kind MARKER_GLYPH has no glyph for

# What each mark on a chart says, for the help screen's legend (``dialogs.help_table``): the marks
# are drawn below (``_Grid.markers``, ``_restart_line``, ``flags``); a newcomer met `C` and `R`
# on every chart at 80x24 and no word for them outside docs/console.md.
MARK_MEANINGS: tuple[tuple[str, str], ...] = (
    (MARKER_GLYPH["ckpt"], "On the x axis: a checkpoint saved at that step and verified ok."),
    (MARKER_GLYPH["ckpt_bad"], "On the x axis: a checkpoint that failed verification."),
    (MARKER_GLYPH["ckpt_suspect"], "On the x axis: a suspect checkpoint (enter on its event says why)."),
    (f"{MARKER_GLYPH['restart']} {RESTART_LINE_GLYPH}", "A restart: the first step of a new attempt "
     "(a dashed line down the chart)."),
    (CLIP_GLYPH, "A value above the top of the axis: a few spikes are cut off so the rest is readable "
     "(the top label has it too)."),
    (NAN_GLYPH, "A NaN or inf value at that step."),
    (f"{ZOOM_LEFT_GLYPH} {ZOOM_RIGHT_GLYPH}", "At an end of the x axis of a zoomed chart: more of the run lies "
     "that way (0 shows it all)."),
    (CAP_GLYPH, "The memory chart's capacity line, labelled on the y axis (80G)."),
    (OTHER_MARK_GLYPH, "On the x axis: a mark of another kind at that step."),
)


@dataclass(frozen=True)
class Frame:
    """Where a drawn chart put its data: the step range and the plot's cells (for the mouse)."""
    x0: float
    x1: float
    plot_left: int      # first plot column (after the y labels)
    plot_w: int         # plot columns
    clipped: int = 0    # points drawn at the top because they lie beyond the clipped axis
    log: bool = False   # the y axis is logarithmic

    def step_at(self, column: int) -> float | None:
        """The step under a column of the widget, None outside the plot."""
        c = column - self.plot_left
        if not 0 <= c < self.plot_w:
            return None
        if self.x1 <= self.x0:
            return self.x0
        return self.x0 + (c + 0.5) / self.plot_w * (self.x1 - self.x0)


def _y_range(ys: Sequence[Sequence[float]], cap: float | None, floor: float | None, zero_based: bool = False,
             clip: bool = False) -> tuple[tuple[float, float] | None, bool]:
    """(low, high) of the y axis, and whether it was clipped below the top value."""
    finite = [v for y in ys for v in y if math.isfinite(v)]
    if not finite and cap is None:
        return None, False
    lo = min(finite) if finite else 0.0
    hi = max(finite) if finite else 0.0
    clipped = False
    if cap is not None:
        lo = 0.0
        hi = max(hi, cap * 1.04)
    else:
        if zero_based:
            lo = min(lo, 0.0)
        if clip and len(finite) >= CLIP_MIN_POINTS:
            ordered = sorted(finite)
            q = ordered[min(len(ordered) - 1, int(CLIP_QUANTILE * (len(ordered) - 1)))]
            if q > lo and hi - lo > CLIP_RATIO * (q - lo):
                hi, clipped = q + 0.25 * (q - lo), True
    if floor is not None:
        lo = min(lo, floor)
    need = MIN_REL_SPAN * max(abs(lo), abs(hi))
    if hi - lo < need:
        mid = (hi + lo) / 2
        lo, hi = mid - need / 2, mid + need / 2
        if zero_based and lo < 0 <= min(finite or [0.0]):
            lo, hi = 0.0, need
    if hi <= lo:
        pad = abs(hi) * 0.1 or 1.0
        return (lo - pad, hi + pad), clipped
    return (lo, hi), clipped


def _log_ok(ys: Sequence[Sequence[float]]) -> bool:
    finite = [v for y in ys for v in y if math.isfinite(v)]
    return bool(finite) and min(finite) > 0


def _log10(ys: Sequence[float]) -> list[float]:
    return [math.log10(v) if v > 0 else (v if v != v else -math.inf) for v in ys]


def _smoothed(s: Downsampled, weight: float, points: int, lo: float | None, hi: float | None
              ) -> tuple[Sequence[float], Sequence[float]] | None:
    """The EMA of a series' bucket means over the whole run, cut to the range and reduced to the
    pixel width; None when the series has no means (another kind of series)."""
    downsample_ema = getattr(s, "downsample_ema", None)
    if downsample_ema is not None:
        return downsample_ema(weight, points, lo, hi)
    means = getattr(s, "means", None)
    if means is None:
        return None
    xs, ms = means()
    ys = ema(ms, weight)
    if lo is not None or hi is not None:
        xs, ys = in_range(xs, ys, lo, hi)
    return reduce_mean(xs, ys, points)


def _downsample(s: Downsampled, points: int, lo: float | None, hi: float | None) -> tuple[Sequence[float], Sequence[float]]:
    return s.downsample(points, lo, hi)


def render_chart(series: Sequence[Downsampled], width: int, height: int, *, title: str | Sequence[str] = "",
                 right_title: str = "", markers: Sequence[Marker] = (), cap: float | None = None,
                 cap_label: str = "cap", y_floor: float | None = None,
                 options: ChartOptions = DEFAULT_OPTIONS, x_label: Callable[[float], str] = short) -> list[Row]:
    """Rows of (text, style) runs, exactly ``height`` rows of ``width`` cells."""
    return render_chart_frame(series, width, height, title=title, right_title=right_title, markers=markers, cap=cap,
                              cap_label=cap_label, y_floor=y_floor, options=options, x_label=x_label)[0]


def render_chart_frame(series: Sequence[Downsampled], width: int, height: int, *, title: str | Sequence[str] = "",
                       right_title: str = "", markers: Sequence[Marker] = (), cap: float | None = None,
                       cap_label: str = "cap", y_floor: float | None = None,
                       options: ChartOptions = DEFAULT_OPTIONS, x_label: Callable[[float], str] = short
                       ) -> tuple[list[Row], Frame | None]:
    """``render_chart`` and the frame it drew in (None when nothing was plotted). The steps, each
    a function of its own: the title, the data sampled to the plot's pixels, the axes, the
    plotted cells, the cap line, the markers, the flags (NaN, clipped), the labelled rows."""
    width, height = max(0, width), max(0, height)
    candidates = [title] if isinstance(title, str) else (list(title) or [""])
    # candidates, longest first: the first that fits is shown (with the notes, below)
    first = ([t for t in candidates if len(t) <= width - 8] or candidates[-1:])[0]
    if width == 0 or height == 0:
        return [[("", "")] for _ in range(height)], None
    rows: list[Row] = [[(_title_line(first, right_title, width), "chart--title")]]
    plot_h, plot_w = height - 2, width - LABEL_W - 1
    if plot_h < 1 or plot_w < 4:
        return rows + [[(" " * width, "")] for _ in range(height - 1)], None
    overlay = len(series) > 1
    px_w, px_h = (plot_w, plot_h) if overlay else (plot_w * 2, plot_h * 4)
    sampled = _reduce_to_width(series, px_w, options)
    if not any(len(x) for x, _ in sampled.data):
        return rows + _empty_plot(plot_w, plot_h, options), None
    x0, x1 = _x_span(series, sampled.data, options)
    use_log = options.log and cap is None and _log_ok(sampled.raw_ys)
    if use_log:
        sampled = sampled.logged()
    yr, clipped_axis = _y_range(sampled.raw_ys, cap, y_floor if not use_log else None,
                                zero_based=options.zero_based and not use_log, clip=options.clip)
    y0, y1 = yr if yr else (0.0, 1.0)
    head, right = _with_notes(candidates, _notes(options, use_log, cap), _rights(right_title, options, x_label, x0, x1),
                              width)
    rows[0] = [(_title_line(head, right, width), "chart--title")]
    scale = _Scale(x0, x1, y0, y1, px_w, px_h)
    plot = _Plot(plot_w, plot_h, cell_w=1 if overlay else 2, y1=y1 if clipped_axis else None)
    if overlay:
        plot.overlay(sampled, scale)
    else:
        plot.single(sampled, scale)
    if cap is not None:
        plot.cap_line(scale.cell_row(cap, plot_h))
    plot.mark(markers, scale)
    if options.xrange is not None:
        plot.zoom_arrows(_extent(series), x0, x1)
    plot.flags()
    rows += plot.labelled_rows(_labels(scale, plot_h, clipped_axis, use_log, cap, cap_label))
    return rows, Frame(x0=x0, x1=x1, plot_left=LABEL_W + 1, plot_w=plot_w, clipped=plot.over_points, log=use_log)


@dataclass(frozen=True)
class _Sampled:
    """The series reduced to the plot's pixel width: (xs, ys) each, their raw ys as lists (the
    log axis replaces them), and the EMA lines (None per series when not smoothed)."""
    data: list[tuple[Sequence[float], Sequence[float]]]
    raw_ys: list[list[float]]
    smoothed: list[tuple[Sequence[float], Sequence[float]] | None]

    def logged(self) -> "_Sampled":
        return _Sampled(self.data, [_log10(y) for y in self.raw_ys],
                        [None if sm is None else (sm[0], _log10(sm[1])) for sm in self.smoothed])


def _reduce_to_width(series: Sequence[Downsampled], px_w: int, options: ChartOptions) -> _Sampled:
    lo_x, hi_x = options.xrange if options.xrange else (None, None)
    data = [_downsample(s, px_w, lo_x, hi_x) for s in series]
    smooth = _smooth_weight(options)
    smoothed: list[tuple[Sequence[float], Sequence[float]] | None] = (
        [_smoothed(s, smooth, px_w, lo_x, hi_x) for s in series] if smooth > 0 else [None] * len(series))
    return _Sampled(data, [list(y) for _, y in data], smoothed)


def _smooth_weight(options: ChartOptions) -> float:
    return min(max(options.smooth, 0.0), 0.999)


def empty_words(options: ChartOptions) -> str:
    """What an empty chart says: none in the zoomed range, none in a log that is over
    (``NOT_IN_LOG``), none in the steps a live run has logged (``STEPS_LACK_IT``), or none yet on a
    live run with no step. Its body and, for a metric the log has not shown at all, its heading
    (widgets/charts.py) say the same."""
    return ("no data in this range" if options.xrange is not None
            else NOT_IN_LOG if options.over else STEPS_LACK_IT if options.stepping else "no data yet")


def _empty_plot(plot_w: int, plot_h: int, options: ChartOptions) -> list[Row]:
    """The axes and what an empty chart says (``empty_words``), its words on as many rows as they
    need: at 80 columns a plot is 20 wide, and one row had read `not in its steps s…` (newcomer round
    15). Rows it lacks: the last kept loses words from its end (``fit_words``), never cut in one."""
    lines = _word_rows(empty_words(options), plot_w, plot_h)
    rows: list[Row] = [[(" " * LABEL_W + "│", "chart--axis"),
                        (_cut_pad(lines[i], plot_w) if i < len(lines) else " " * plot_w, "chart--axis")]
                       for i in range(plot_h)]
    rows.append([(" " * LABEL_W + "└" + "─" * plot_w, "chart--axis")])
    return rows


def _word_rows(text: str, width: int, rows: int) -> list[str]:
    """``text`` broken between words into at most ``rows`` lines of ``width``; what does not fit
    the last line is cut from its end by words (``fit_words``, ``from_end``)."""
    if width <= 0 or rows <= 0:
        return []
    words, lines = text.split(), list[str]()
    while words and len(lines) < rows - 1:
        line = words.pop(0)
        while words and len(line) + 1 + len(words[0]) <= width:
            line += " " + words.pop(0)
        lines.append(line)
    if words:
        lines.append(fit_words(" ".join(words), width, from_end=True))
    return lines


def _x_span(series: Sequence[Downsampled], data: list[tuple[Sequence[float], Sequence[float]]],
            options: ChartOptions) -> tuple[float, float]:
    """The step range drawn: the zoomed range, else the data's (to the true last step: a bucket
    is labelled by its first step, the last step may lie beyond)."""
    if options.xrange is not None:
        return float(options.xrange[0]), float(options.xrange[1])
    xs_all = [x for x, _ in data if len(x)]
    x0 = min(min(x) for x in xs_all)
    x1 = max(max(x) for x in xs_all)
    for s in series:
        last_x = getattr(s, "last_x", None)
        if isinstance(last_x, (int, float)):
            x1 = max(x1, float(last_x))
    return x0, x1


def _notes(options: ChartOptions, use_log: bool, cap: float | None) -> list[str]:
    """How the chart is drawn, long and compact: ``EMA 0.6 log`` / ``~.6 log``."""
    smooth = _smooth_weight(options)
    notes, compact = [], []
    if smooth > 0:
        notes.append(f"EMA {smooth:g}")
        compact.append(f"~{smooth:g}".replace("~0.", "~."))
    if use_log:
        notes.append("log")
        compact.append("log")
    elif options.log and cap is None:
        notes.append("log n/a")
        compact.append("lin")
    return [" ".join(notes), " ".join(compact)]


def _rights(right_title: str, options: ChartOptions, x_label: Callable[[float], str], x0: float, x1: float
            ) -> list[str]:
    if right_title:
        return [right_title]
    span = f"{x_label(x0)}–{x_label(x1)}"
    return [f"zoom {span}", span] if options.xrange is not None else [span]


@dataclass(frozen=True)
class _Scale:
    """Data to pixels: step to pixel column, value to pixel row."""
    x0: float
    x1: float
    y0: float
    y1: float
    px_w: int
    px_h: int

    def col(self, x: float) -> int:
        if self.x1 <= self.x0:
            return 0
        return min(max(round((x - self.x0) / (self.x1 - self.x0) * (self.px_w - 1)), 0), self.px_w - 1)

    def row(self, y: float) -> int:
        return min(max(round((self.y1 - y) / (self.y1 - self.y0) * (self.px_h - 1)), 0), self.px_h - 1)

    def cell_row(self, y: float, plot_h: int) -> int:
        """The cell row of a value (a cap line, its label)."""
        return min(max(round((self.y1 - y) / (self.y1 - self.y0) * (plot_h - 1)), 0), plot_h - 1)


class _Plot:
    """The plot's cells, the axis row below them, and the columns to flag (NaN, clipped)."""

    def __init__(self, plot_w: int, plot_h: int, *, cell_w: int, y1: float | None) -> None:
        self.w, self.h, self.cell_w = plot_w, plot_h, cell_w
        self.clip_top = y1        # the top of a clipped axis (None: not clipped)
        # cells[r][c] = (glyph, style); None = empty.
        self.cells: list[list[tuple[str, str] | None]] = [[None] * plot_w for _ in range(plot_h)]
        self.axis: list[tuple[str, str]] = [("─", "chart--axis")] * plot_w
        self.bad_cols: set[int] = set()
        self.over_cols: set[int] = set()   # cell columns with a point beyond a clipped axis
        self.over_points = 0

    def _over(self, v: float) -> bool:
        return self.clip_top is not None and v > self.clip_top

    def overlay(self, sampled: _Sampled, scale: _Scale) -> None:
        """Two or more series: one glyph each at cell resolution, ``◆`` where two meet."""
        for i, (x, _) in enumerate(sampled.data):
            glyph, style = SERIES_GLYPHS[i % len(SERIES_GLYPHS)], SERIES_STYLES[i % len(SERIES_STYLES)]
            sm = sampled.smoothed[i]
            xs_i, ys_i = (sm[0], sm[1]) if sm is not None else (x, sampled.raw_ys[i])
            for xv, yv in zip(xs_i, ys_i):
                if not math.isfinite(yv):
                    if sm is None:
                        self.bad_cols.add(scale.col(xv))
                    continue
                c, r = scale.col(xv), scale.row(yv)
                if self._over(yv):
                    self.over_cols.add(c)
                    self.over_points += 1
                cur = self.cells[r][c]
                self.cells[r][c] = (BOTH_GLYPH, "chart--both") if cur is not None and cur[0] != glyph else (glyph, style)

    def single(self, sampled: _Sampled, scale: _Scale) -> None:
        """One series in braille dots; smoothed, the EMA line over the faint raw one."""
        x, _ = sampled.data[0]
        y = sampled.raw_ys[0]
        for xv, v in zip(x, y):
            if math.isfinite(v) and self._over(v):
                self.over_cols.add(scale.col(xv) // 2)
                self.over_points += 1
        raw_dots, bad = _dots([scale.col(v) for v in x], [scale.row(v) if math.isfinite(v) else -1 for v in y],
                              self.w, self.h)
        self.bad_cols.update(c // 2 for c in bad)
        sm = sampled.smoothed[0]
        if sm is None:
            _paint(self.cells, raw_dots, "chart--line")
            return
        line_dots, _ = _dots([scale.col(v) for v in sm[0]],
                             [scale.row(v) if math.isfinite(v) else -1 for v in sm[1]], self.w, self.h)
        _paint(self.cells, raw_dots, "chart--raw")
        _paint(self.cells, line_dots, "chart--line")   # the smoothed line over the raw one

    def cap_line(self, r: int) -> None:
        for c in range(self.w):
            if self.cells[r][c] is None:
                self.cells[r][c] = (CAP_GLYPH, "chart--cap")

    def mark(self, markers: Sequence[Marker], scale: _Scale) -> None:
        """Per column, the markers that land there: the axis shows the strongest checkpoint
        verdict (✗ over ? over C), else R; a restart that shares its column with a checkpoint is
        written at the top of its dashed line instead, so both are seen."""
        by_col: dict[int, set[str]] = {}
        for m in markers:
            if not (scale.x0 <= m.step <= scale.x1) and scale.x1 > scale.x0:
                continue
            by_col.setdefault(scale.col(m.step) // self.cell_w, set()).add(m.kind)
        for c, kinds in thin_checkpoints(by_col).items():
            shown = _shown_marker(kinds)
            if shown is not None:
                self.axis[c] = (MARKER_GLYPH.get(shown, OTHER_MARK_GLYPH), MARKER_STYLE.get(shown, "chart--axis"))
            if "restart" in kinds:
                self._restart_line(c, on_axis=shown == "restart")

    def _restart_line(self, c: int, *, on_axis: bool) -> None:
        for r in range(self.h):
            if self.cells[r][c] is None:
                self.cells[r][c] = (RESTART_LINE_GLYPH, "chart--restart")
        if not on_axis:
            top = 1 if (c in self.bad_cols or c in self.over_cols) and self.h > 1 else 0
            self.cells[top][c] = (MARKER_GLYPH["restart"], MARKER_STYLE["restart"])

    def zoom_arrows(self, extent: tuple[float | None, float | None], x0: float, x1: float) -> None:
        """More of the run lies left or right of a zoomed range: ◀ ▶ at the axis's ends."""
        first, last = extent
        if first is not None and first < x0 and self.axis[0][0] == "─":
            self.axis[0] = (ZOOM_LEFT_GLYPH, "chart--axis")
        if last is not None and last > x1 and self.axis[-1][0] == "─":
            self.axis[-1] = (ZOOM_RIGHT_GLYPH, "chart--axis")

    def flags(self) -> None:
        """``↑`` over a point beyond the clipped axis, ``!`` over a NaN/inf (and on the axis)."""
        for c in self.over_cols:
            self.cells[0][min(c, self.w - 1)] = (CLIP_GLYPH, "chart--bad")
        for c in self.bad_cols:
            c = min(c, self.w - 1)
            self.cells[0][c] = (NAN_GLYPH, "chart--bad")
            self.axis[c] = (NAN_GLYPH, "chart--bad")

    def labelled_rows(self, labels: dict[int, str]) -> list[Row]:
        rows: list[Row] = []
        for r in range(self.h):
            text = labels.get(r, "")
            text = (text[:LABEL_W] if len(text) <= LABEL_W else text[-LABEL_W:]).rjust(LABEL_W)
            line = [(text + "┤" if r in labels else text + "│", "chart--axis")]
            line += [c if c is not None else (" ", "") for c in self.cells[r]]
            rows.append(_merge(line))
        rows.append(_merge([(" " * LABEL_W + "└", "chart--axis")] + self.axis))
        return rows


CKPT_GAP = 3   # axis cells kept clear on each side of a good checkpoint's C


def thin_checkpoints(by_col: dict[int, set[str]], gap: int = CKPT_GAP) -> dict[int, set[str]]:
    """The markers by axis column with the good checkpoints thinned to what the width can show:
    a run saving every few hundred steps put a ``C`` in every column (``CCCCCC``, no axis left).
    Kept whatever: every bad or suspect save, every restart, the newest good save; then, newest
    first, a good save's ``C`` only where no kept mark is within ``gap`` columns (a column with a
    restart keeps its ``C``, the ``R`` drawn at the top of its dashed line)."""
    plain = sorted((c for c, kinds in by_col.items() if _shown_marker(kinds) == "ckpt" and "restart" not in kinds),
                   reverse=True)
    kept = {c for c in by_col if c not in plain} | set(plain[:1])
    blocked: set[int] = set()
    for c in kept:
        blocked.update(range(c - gap, c + gap + 1))
    out = {c: kinds for c, kinds in by_col.items() if c in kept}
    for c in plain[1:]:
        if c not in blocked:
            out[c] = by_col[c]
            blocked.update(range(c - gap, c + gap + 1))
    return out


def _shown_marker(kinds: set[str]) -> str | None:
    """The marker a column's axis shows: the strongest checkpoint verdict, else another kind, else R."""
    ck = next((k for k in ("ckpt_bad", "ckpt_suspect", "ckpt") if k in kinds), None)
    return ck or next(iter(sorted(kinds - {"restart"})), None) or ("restart" if "restart" in kinds else None)


def _labels(scale: _Scale, plot_h: int, clipped_axis: bool, use_log: bool, cap: float | None,
            cap_label: str) -> dict[int, str]:
    """The y labels by plot row: top and bottom (``↑`` on a clipped top), the cap, a log axis's middle."""
    def label(v: float) -> str:
        return short(10 ** v) if use_log else short(v)

    labels = {0: (CLIP_GLYPH if clipped_axis else "") + label(scale.y1), plot_h - 1: label(scale.y0)}
    if cap is not None and plot_h > 2:
        labels[scale.cell_row(cap, plot_h)] = cap_label
    if use_log and plot_h > 4:
        labels.setdefault((plot_h - 1) // 2, label((scale.y0 + scale.y1) / 2))
    return labels


def _with_notes(candidates: list[str], notes: list[str], rights: list[str], width: int) -> tuple[str, str]:
    """(title, right-hand title): the longest title candidate that fits beside the step range
    with the notes (EMA, log; long or compact) after it. The notes say how the chart is drawn, so
    they are never dropped: the step range goes first (a zoomed axis also shows ◀ ▶ where more of
    the run lies), then the title's words from the end (``units.fit_words``), so five charts at
    120 columns still say ``~.6 log``."""
    long_note, short_note = (notes + ["", ""])[:2]
    if not short_note:
        for right in rights:
            for head in candidates:
                if len(head) + len(right) + 1 <= width:
                    return head, right
        return candidates[-1], ""
    tries = [(right, [(f"{c} · {long_note}" if c else long_note) for c in candidates] if long_note else [])
             for right in rights] + [(right, [(f"{c} {short_note}" if c else short_note) for c in candidates])
                                     for right in rights]
    tries += [("", heads) for _, heads in tries[:1] + tries[len(rights):len(rights) + 1]]
    for right, heads in tries:
        for head in heads:
            if len(head) + len(right) + 1 <= width:
                return head, right
    room = width - len(short_note) - 1
    if room < 1:
        return short_note[:width], ""
    return f"{fit_words(candidates[-1], room)} {short_note}".lstrip(), ""


def _extent(series: Sequence[Downsampled]) -> tuple[float | None, float | None]:
    """The first and last step of the whole series (not only the zoomed part)."""
    firsts, lasts = [], []
    for s in series:
        step_span = getattr(s, "step_span", None)
        if step_span is not None:   # a ``Series``: its first and last step, not every bucket
            span = step_span()
            first, last = span if span is not None else (None, None)
        else:
            xs, _ = s.downsample(1 << 30)
            first, last = (xs[0], xs[-1]) if len(xs) else (None, None)
        if first is not None and last is not None:
            firsts.append(first)
            lasts.append(max(last, float(getattr(s, "last_x", None) or last)))
    return (min(firsts) if firsts else None), (max(lasts) if lasts else None)


def _dots(pcol: list[int], prow: list[int], plot_w: int, plot_h: int) -> tuple[list[list[int]], set[int]]:
    """Braille dot bits per cell for one line: each point joined to the previous one (vertical
    spans, interpolated across the columns between two points when the data is sparser than the
    pixels); and the pixel columns of non-finite points (row -1)."""
    dots = [[0] * plot_w for _ in range(plot_h)]
    bad = {c for c, r in zip(pcol, prow) if r < 0}
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
    return dots, bad


def _paint(cells: list[list[tuple[str, str] | None]], dots: list[list[int]], style: str) -> None:
    for r, row in enumerate(dots):
        for c, bits in enumerate(row):
            if bits:
                cells[r][c] = (chr(0x2800 + bits), style)


def rows_text(rows: list[Row]) -> list[str]:
    """The rows as plain strings (tests, logs)."""
    return ["".join(t for t, _ in row) for row in rows]


# ---- zoom: a step range over the whole run's (first, last) step -------------------------------

MIN_ZOOM_STEPS = 4.0


def zoom_range(view: tuple[float, float] | None, full: tuple[float, float], factor: float,
               around: float | None = None) -> tuple[float, float] | None:
    """The step range after zooming ``view`` (None: the whole run) by ``factor`` (0.5 in, 2 out)
    around a step: the one given (the mouse), else the newest step when the whole run is shown
    (a live run's news stays in view), else the middle of the range. None again once the range
    covers the whole run."""
    a, b = full
    if b <= a:
        return None
    lo, hi = view if view is not None else full
    span = max(MIN_ZOOM_STEPS, (hi - lo) * factor)
    if span >= (b - a) - 1:   # (a step short of the whole run after rounding is the whole run)
        return None
    if around is None:
        around = b if view is None else (lo + hi) / 2
        frac = 1.0 if view is None else 0.5
    else:
        frac = (around - lo) / (hi - lo) if hi > lo else 0.5
    new_lo = around - frac * span
    new_lo = float(round(min(max(new_lo, a), b - span)))
    return (new_lo, float(round(new_lo + span)))


def zoom_to(lo: float, hi: float, full: tuple[float, float]) -> tuple[float, float] | None:
    """The range a drag selected, at least MIN_ZOOM_STEPS wide, inside the run."""
    a, b = full
    if hi - lo < MIN_ZOOM_STEPS:
        mid = (lo + hi) / 2
        lo, hi = mid - MIN_ZOOM_STEPS / 2, mid + MIN_ZOOM_STEPS / 2
    lo, hi = float(round(max(lo, a))), float(round(min(hi, b)))
    if hi <= lo or (lo <= a and hi >= b):
        return None
    return (lo, hi)


def pan_range(view: tuple[float, float] | None, full: tuple[float, float], direction: int
              ) -> tuple[float, float] | None:
    """``view`` moved by half its width (direction -1 earlier, 1 later), held inside the run."""
    if view is None:
        return None
    a, b = full
    lo, hi = view
    span = hi - lo
    lo = float(round(min(max(lo + direction * span / 2, a), b - span)))
    return (lo, lo + span)
