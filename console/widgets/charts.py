"""ChartRow: the run screen's row of charts, with what they need beyond a snapshot: which
metrics are charted (the recipe's saved choice, else the defaults), smoothing and the log axis
(saved per recipe in ``chart-prefs.json``), the zoomed step range (this console only), the
checkpoint and restart markers, and each chart's heading. The memory chart draws the log's
memory field, or, for a log that prints none, the runner's NVML per-step peaks of the tightest
GPU (``moeconsole.console.memory.peaks``), and its title says which.

The run screen hands it every snapshot (``show``) and its keys (``smooth``, ``toggle_log``,
``zoom_in``, ...); the mouse's zoom messages from a ``ChartView`` end here. Drawing is
``moeconsole.console.chart`` (pure); this widget only decides what to draw and when.
"""
from __future__ import annotations

from dataclasses import replace
import math
import time
from pathlib import Path

from textual.containers import Horizontal

from moeconsole.console import chartprefs
from moeconsole.console import format as fmt
from moeconsole.console import memory as memory_view
from moeconsole.console import metrics as metrics_mod
from moeconsole.console.chart import ChartOptions, empty_words, markers_from, pan_range, zoom_range, zoom_to
from moeconsole.console.widgets.chart import ChartView
from moeconsole.runner.core.series import Series
from moeconsole.runner.core.state import LIVE
from moeconsole.runner.rundir.snapshot import Snapshot

# A chart of the whole run gains nothing from redrawing every second; at most this often (a
# new checkpoint or restart marker redraws at once). The status line still counts every step.
CHART_REFRESH_S = 2.0
CHART_MIN_W = 20   # a chart narrower than this says too little: fewer charts are shown
# The usual charts keep their widget ids (tests and the benchmark find them so); any other
# metric gets a chart made for it.
FIXED_CHART_IDS = {"loss": "chart-loss", "grad_norm": "chart-grad", "mem_gib": "chart-mem",
                   metrics_mod.EVAL_LOSS: "chart-eval"}
DEFAULT_SHOWN = ("chart-loss", "chart-grad", "chart-mem")


def _series_key(s: Series) -> tuple:
    last = s.last()
    return (s.n, None if last is None else (repr(last)))


class ChartRow(Horizontal):
    """The charts of one run (``base``: the runs directory, where chart choices are saved)."""

    def __init__(self, base: Path, *, id: str | None = "charts") -> None:
        super().__init__(id=id)
        self.base = base
        # the metrics chosen for this recipe (None: the defaults), smoothing, log axis (saved per
        # recipe) and the zoomed step range (this console only)
        self.chart_choice: list[str] | None = None
        self.smooth = 0.0
        self.log_y = False
        self.xrange: tuple[float, float] | None = None
        self.snapshot: Snapshot | None = None
        self._prefs_loaded = False
        self._recipe_name = ""
        self._charts_at = float("-inf")
        self._chart_look: object = None
        self._marker_key: object = None
        self._markers: tuple = ()
        self._extra_charts: dict[str, ChartView] = {}
        self._extra_n = 0
        # the runner's per-step memory peaks (NVML) seen since attach: the memory chart of a log
        # that prints no memory (the state carries only the newest ones)
        self._nvml_mem = Series()

    def compose(self):
        yield ChartView("loss", id="chart-loss")
        yield ChartView("grad norm", id="chart-grad")
        yield ChartView("memory", id="chart-mem")
        yield ChartView("eval loss", id="chart-eval")   # shown once the run has evaluations

    def on_mount(self) -> None:
        for chart in self.query(ChartView):
            chart.display = chart.id in DEFAULT_SHOWN

    # ---- the choice, kept per recipe --------------------------------------------------------
    def _load_prefs(self, snap: Snapshot) -> None:
        """The chart choice saved for this recipe (once, at the first snapshot)."""
        self._prefs_loaded = True
        self._recipe_name = str(snap.run.get("name") or "")
        if not self._recipe_name:
            return
        prefs = chartprefs.load_prefs(self.base, self._recipe_name)
        if prefs is not None:
            self.chart_choice = prefs.charts or None
            self.smooth, self.log_y = prefs.smooth, prefs.log

    def _save_prefs(self) -> None:
        if not self._recipe_name:
            return
        try:
            chartprefs.save_prefs(self.base, self._recipe_name, chartprefs.ChartPrefs(
                charts=list(self.chart_choice or []), smooth=self.smooth, log=self.log_y))
        except OSError as exc:
            self.notify(f"chart choice not saved: {exc}", severity="warning")

    def chart_keys(self, snap: Snapshot | None = None) -> list[str]:
        """The metrics charted now: the recipe's saved choice, else the defaults."""
        snap = snap or self.snapshot
        return list(self.chart_choice) if self.chart_choice else metrics_mod.default_charts(snap)

    def fit(self) -> int:
        """How many charts the width holds."""
        width = self.screen.size.width
        return max(1, width // CHART_MIN_W) if width else len(self.chart_keys())

    def choose(self, keys_: list[str]) -> None:
        """The picker's choice (empty: the defaults), saved for the recipe; says what is shown."""
        self.chart_choice = metrics_mod.clean_choice(keys_) or None
        self._save_prefs()
        self.redraw()
        shown = self.chart_keys()
        fit = self.fit()
        more = f" ({len(shown) - fit} more on a wider terminal)" if len(shown) > fit else ""
        self.notify("charts: " + ", ".join(metrics_mod.label(k) for k in shown) + more)

    def step_smooth(self, direction: int) -> None:
        value = self.smooth = chartprefs.step_smooth(self.smooth, direction)
        self._save_prefs()
        self.redraw()
        self.notify(f"smoothing: EMA {value:g}" if value else "smoothing off")

    def toggle_log(self) -> None:
        self.log_y = not self.log_y
        self._save_prefs()
        self.redraw()
        self.notify("y axis: log scale" if self.log_y else "y axis: linear")

    # ---- zoom -------------------------------------------------------------------------------
    def full_range(self, snap: Snapshot | None = None) -> tuple[float, float] | None:
        """(first, last) step of what the charts show: the range zoom works inside."""
        snap = snap or self.snapshot
        if snap is None:
            return None
        lo, hi = math.inf, -math.inf
        for key in self.chart_keys(snap):
            s = metrics_mod.series_of(snap, key)
            if s is None or not s.n:
                continue
            span = s.step_span()
            if span is not None:
                lo = min(lo, span[0])
                hi = max(hi, span[1], s.last_x if s.last_x is not None else span[1])
        return (lo, hi) if hi >= lo else None

    def _zoom(self, view: tuple[float, float] | None, say: bool = True) -> None:
        self.xrange = view
        self.redraw()
        if say:
            self.notify("whole run" if view is None else f"steps {fmt.short(view[0])}–{fmt.short(view[1])}")

    def zoom_by(self, factor: float) -> None:
        """Zoom in (factor < 1) or out (> 1; only from a zoomed range)."""
        full = self.full_range()
        if full is None or (factor > 1 and self.xrange is None):
            return
        self._zoom(zoom_range(self.xrange, full, factor))

    def pan(self, direction: int) -> None:
        full = self.full_range()
        if full is not None and self.xrange is not None:
            self._zoom(pan_range(self.xrange, full, direction))

    def zoom_reset(self) -> None:
        if self.xrange is not None:
            self._zoom(None)

    def on_chart_view_zoom_around(self, message: ChartView.ZoomAround) -> None:
        full = self.full_range()
        if full is not None:
            self._zoom(zoom_range(self.xrange, full, message.factor, around=message.step), say=False)

    def on_chart_view_zoom_to(self, message: ChartView.ZoomTo) -> None:
        full = self.full_range()
        if full is not None:
            self._zoom(zoom_to(message.lo, message.hi, full))

    # ---- drawing ----------------------------------------------------------------------------
    def redraw(self) -> None:
        if self.snapshot is not None:
            self.show(self.snapshot, force=True)

    def show(self, snap: Snapshot, force: bool = False) -> None:
        """Draw a snapshot: at once for new markers or a new look, else at most every
        ``CHART_REFRESH_S``."""
        self.snapshot = snap
        if not self._prefs_loaded:
            self._load_prefs(snap)
        marker_key = (snap.restarts_at, tuple((c.get("step"), c.get("ok"), c.get("suspect")) for c in snap.checkpoints))
        now = time.monotonic()
        look = (tuple(self.chart_keys(snap)), self.smooth, self.log_y, self.xrange, self.screen.size.width)
        if not force and marker_key == self._marker_key and look == self._chart_look \
                and now - self._charts_at < CHART_REFRESH_S:
            return
        self._charts_at = now
        self._chart_look = look
        if marker_key != self._marker_key:
            self._marker_key = marker_key
            self._markers = markers_from(snap.restarts_at, snap.checkpoints)
        shown = self.chart_keys(snap)[:self.fit()]
        for key, chart in zip(shown, self._chart_widgets(shown)):
            self._draw_chart(chart, key, snap, marker_key)

    def _options(self, key: str) -> ChartOptions:
        return ChartOptions(smooth=self.smooth, log=self.log_y, xrange=self.xrange,
                            zero_based=metrics_mod.zero_based(key), over=self._over(), stepping=self._stepping())

    def _over(self) -> bool:
        """The run is over, or an imported log: what a chart lacks will not come (``ChartOptions.over``)."""
        return self.snapshot is not None and self.snapshot.run.get("status") not in LIVE

    def _stepping(self) -> bool:
        """The run has logged a step (``ChartOptions.stepping``): a chart still empty lacks what its steps carry."""
        return self.snapshot is not None and self.snapshot.run.get("step") is not None

    def _chart_widgets(self, shown: list[str]) -> list[ChartView]:
        """One ChartView per shown metric, in order (the usual four keep their ids); the rest hidden."""
        widgets: list[ChartView] = []
        for key in shown:
            wid = FIXED_CHART_IDS.get(key)
            if wid is None:
                chart = self._extra_charts.get(key)
                if chart is None:
                    self._extra_n += 1
                    chart = self._extra_charts[key] = ChartView(metrics_mod.label(key), id=f"chart-x{self._extra_n}")
                    self.mount(chart)
            else:
                chart = self.query_one(f"#{wid}", ChartView)
            widgets.append(chart)
        for chart in self.query(ChartView):
            if chart.display != (chart in widgets):
                chart.display = chart in widgets
        order = [c for c in self.children if isinstance(c, ChartView)]
        if [c for c in order if c in widgets] != widgets:
            for i, chart in enumerate(widgets):
                if i == 0:
                    self.move_child(chart, before=0)
                else:
                    self.move_child(chart, after=widgets[i - 1])
        return widgets

    def _draw_chart(self, chart: ChartView, key: str, snap: Snapshot, marker_key: object) -> None:
        options = self._options(key)
        if key == "mem_gib":
            self._draw_memory(chart, snap, marker_key, options)
            return
        if key == metrics_mod.EVAL_LOSS:
            self._draw_eval(chart, snap, marker_key, options)
            return
        s = metrics_mod.series_of(snap, key)
        if s is None:
            # a live run's metric not logged yet is "no data yet" (before its first step; after, not in
            # its steps so far), heading and body alike; the options are in the key (set_data's rule), so
            # the first step and the run's end redraw it
            chart.set_data([Series()], key=(key, "none", options),
                           heading=f"{metrics_mod.label(key)}: {empty_words(replace(options, xrange=None))}",
                           options=options)
            return
        dkey = (key, _series_key(s), marker_key, options)
        if dkey == chart._data_key:
            return
        chart.set_data([s], key=dkey, markers=self._markers, heading=metric_heading(key, s), options=options)

    def memory_series(self, snap: Snapshot) -> tuple[Series, bool]:
        """What the memory chart draws: the log's memory field, or, when the log has none (or
        only zeros), the runner's NVML per-step peaks of the tightest GPU. (series, from NVML)"""
        mem = snap.series["mem_gib"]
        if (mem.finite_max() or 0.0) > 0:
            return mem, False
        new = memory_view.peaks(snap.run.get("memory"))
        last = self._nvml_mem.last_x
        for step, gib in new:
            if last is None or step > last:
                self._nvml_mem.append(step, gib)
                last = step
        return (self._nvml_mem, True) if self._nvml_mem.n else (mem, False)

    def _draw_memory(self, chart: ChartView, snap: Snapshot, marker_key: object, options: ChartOptions) -> None:
        mem, nvml = self.memory_series(snap)
        envelope = snap.run.get("memory")
        tight = memory_view.tightest(envelope) or {}
        cap = tight.get("capacity_gib") or snap.run.get("mem_capacity_gib") or gpu_capacity_gib(snap.gpu)
        key = (_series_key(mem), nvml, marker_key, cap, memory_view.heading_key(envelope), options)
        if key == chart._data_key:
            return
        last = fmt.num(mem.last(), 3)
        heading: tuple[str, ...] = (f"memory {last} GiB", f"mem {last}G")
        # the tightest GPU first, when the runner knows it
        by_gpu = memory_view.heading(envelope, nvml=nvml)
        if by_gpu:
            heading = by_gpu
        elif not nvml and mem.n and mem.finite_max() == 0.0:
            # only zeros from the log: the trainer measured no GPU memory (ms-swift's memory(GiB) is torch.cuda's
            # reserved peak, 0.0 without CUDA), never "141G free at peak" of a GPU that is not there
            # (newcomer round 14: the 8xH200 recipe on a machine without a GPU)
            heading = ("memory 0 GiB on every step: the log measured no GPU memory",
                       "mem 0G: no GPU memory measured", "mem 0G, none measured")
        elif cap:
            peak = mem.finite_max()
            free = f"{fmt.num(cap - peak, 3)}" if peak is not None else fmt.NA
            capt = fmt.num(cap, 3)
            heading = (f"memory {last} of {capt} GiB, headroom {free} GiB at peak",
                       f"mem {last}/{capt}G, {free}G free at peak", f"mem {last}/{capt}G")
        chart.set_data([mem], key=key, markers=self._markers, cap=cap,
                       cap_label=f"{fmt.short(cap)}G" if cap else "cap", heading=heading, options=options)

    def _draw_eval(self, chart: ChartView, snap: Snapshot, marker_key: object, options: ChartOptions) -> None:
        """Evaluation loss by step: a chart of its own (an evaluation is never a training step)."""
        ev = snap.eval_series
        kept = snap.run.get("best_checkpoint") or {}
        key = (_series_key(ev), marker_key, options,
               *(str(kept.get(k)) for k in ("path", "metric", "value", "step", "greater_is_better", "unsaved")))
        if key == chart._data_key:
            return
        if not ev.n:
            chart.set_data([ev], key=key, heading="eval loss: no evaluations " + ("in this log" if options.over else "yet"),
                           options=options)
            return
        split = (snap.last_eval or {}).get("split") or "eval"
        chart.set_data([ev], key=key, markers=self._markers, heading=eval_heading(ev, split, snap.eval_count, kept),
                       options=options)


def eval_heading(ev: Series, split: str, count: int, kept: dict) -> tuple[str, ...]:
    """The evaluation chart's heading, widest first: the newest eval loss, then the save the Trainer kept
    as its best (``kept``: the snapshot's ``best_checkpoint``, discover.best_save_named: by
    ``metric_for_best_model`` and ``greater_is_better``, GRPO's by the highest reward) in ``runs show``'s
    words (format.kept_save_words), with the better evaluation it did not save when there is one
    (format.unsaved_best_words): never a "best" the plot contradicts. Without one, the eval loss's minimum,
    said as "min" (the lowest is no best the run chose)."""
    lo = ev.finite_min()
    head = f"{split} loss {fmt.num(ev.last())}"
    if kept.get("path") and kept.get("metric") and kept.get("value") is not None and kept.get("step") is not None:
        unsaved = fmt.unsaved_best_words(kept)
        best = f"; kept {fmt.kept_save_words(kept)}" + (f"; {unsaved}" if unsaved else "")
    else:
        best = f" min {fmt.num(lo[0])} @{fmt.short(lo[1])}" if lo is not None else ""
    return (f"{head}{best} ({count} evals)", head)


def metric_heading(key: str, s: Series) -> tuple[str, ...]:
    """A metric chart's heading, widest first: the newest value, and the loss's minimum or
    another metric's range (grad norm: its value alone, a spike would say little)."""
    last = f"{metrics_mod.label(key)} {fmt.num(s.last())}"
    if key == "loss":
        lo = s.finite_min()
        return (f"{last} min {fmt.num(lo[0])}", last) if lo is not None else (last,)
    if key != "grad_norm":
        low, high = s.finite_min(), s.finite_max()
        if low is not None and high is not None:
            return (f"{last} ({fmt.num(low[0])}–{fmt.num(high)})", last)
    return (last,)


def gpu_capacity_gib(gpu: dict | None) -> float | None:
    if not gpu or not gpu.get("available"):
        return None
    totals = [g.get("mem_total_mib") for g in gpu.get("gpus") or () if g.get("mem_total_mib")]
    return min(totals) / 1024 if totals else None
