"""Several runs side by side, live while they train: one metric overlaid (any metric the logs
carry, ``c`` to choose), aligned by step or by wall time since each run started (``t``), each
run's status, step, ETA, alerts and its figures, and the recipe keys that differ between them.

The BF16 / FP8 / NVFP4 profiles of one recipe trained at the same time is the case: the table of
recipe differences says what sets the runs apart (``runs diff``'s code, ``moeconsole.runner.rundir.rundiff``,
for any number of runs), the overlay shows where their curves part. Each run has a glyph
(• × + o # @ % &) in the chart and in the tables, so nothing rests on colour; ◆ marks a cell two
runs share. A run directory is followed with its own ``RunWatcher`` (only what is new is read at
each poll); a log or directory not made by moeconsole is read once, as the browser's ``o`` does.
``q`` or Esc goes back to the browser."""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from moeconsole.console.widgets.footer import KeyFooter
from moeconsole.console import chartprefs, keys, runcolumns
from moeconsole.console import format as fmt
from moeconsole.console import metrics as metrics_mod
from moeconsole.console.chart import SERIES_GLYPHS, ChartOptions, pan_range, zoom_range, zoom_to
from moeconsole.console.widgets.chart import ChartView
from moeconsole.runner.core.series import Series
from moeconsole.runner.rundir import rundir
from moeconsole.runner.rundir.snapshot import RunWatcher, Snapshot

MAX_RUNS = len(SERIES_GLYPHS)
POLL_S = 2.0
SCROLLBAR = 2
LEGEND_GAP = 3


@dataclass
class Side:
    """One run of the comparison: where it is read from and its newest snapshot."""
    ref: str
    label: str
    watcher: RunWatcher | None = None
    snap: Snapshot | None = None
    recipe: dict | None = None
    error: str | None = None


def stats_table(sides: list[Side], metric: str, width: int | None = None) -> Table:
    """Per run: its glyph (at every width: the legend beside its row), label, status, step/max,
    the metric's last value, open alerts, ETA, the metric's minimum (with its step), peak memory (GiB, as `runs diff` says it),
    step time (median of the last 20). The columns that fit ``width`` are chosen by
    ``moeconsole.console.runcolumns`` (the rule of the run browser and `runs ls`): each shown
    whole, the label cut by ``cut_name`` (the values that tell the runs apart stay)."""
    name = metrics_mod.label(metric)
    # (key, header, kind)
    spec = (("glyph", "", None), ("run", "run", "name"), ("status", "status", "status"), ("step", "step", "step"),
            ("ETA", "ETA", None), ("alerts", "alerts", "alerts"), ("metric", name, "loss"),
            ("min", "min @step", None), ("mem", "peak GiB", None), ("s/step", "s/step", None))
    rows: list[dict[str, str]] = []
    for i, side in enumerate(sides):
        glyph = SERIES_GLYPHS[i % len(SERIES_GLYPHS)]
        snap = side.snap
        if snap is None:
            rows.append({"glyph": glyph, "run": side.label, "status": side.error or "reading…"})
            continue
        run = snap.run
        s = metrics_mod.series_of(snap, metric)
        low = s.finite_min() if s is not None else None
        alerts = run.get("open_alerts") or 0
        crit = sum(1 for g in snap.alert_groups if g.active and g.critical)
        rows.append({
            "glyph": glyph, "run": side.label, "status": run.get("status_word") or fmt.NA, "step": _step_cell(run),
            "ETA": fmt.duration(eta) if (eta := fmt.eta_shown(run)) is not None else fmt.NA,
            "alerts": (f"{alerts} ({crit} CRIT)" if crit else str(alerts)) if alerts else "0",
            "metric": fmt.num(s.last()) if s is not None else "not logged",
            "min": (f"{fmt.num(low[0])} @{fmt.short(low[1])}" if low is not None else fmt.NA),
            "mem": fmt.num(snap.series["mem_gib"].finite_max(), 3), "s/step": fmt.num(run.get("step_time_s"), 3)})
    columns = [runcolumns.Column(key, max([len(head)] + [len(r.get(key, "")) for r in rows]), kind,
                                 always=key == "glyph") for key, head, kind in spec]
    keys, name_w = runcolumns.fit_columns(columns, width)
    heads = {key: head for key, head, _ in spec}
    widths = {c.key: (name_w if c.kind == "name" else c.width) for c in columns}
    order = [key for key, _, _ in spec if key in keys]   # the table's own order, the chosen columns
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    for key in order:
        table.add_column(heads[key], no_wrap=True, overflow="ellipsis", width=widths[key], min_width=widths[key])
    for r in rows:
        # plain text: a run's name, a value are no markup
        table.add_row(*(Text(runcolumns.cut_name(r.get(key, ""), widths[key]) if key == "run" else str(r.get(key, "")))
                        for key in order))
    return table


def legend_lines(labels: list[str], width: int) -> list[str]:
    """The legend, each run's glyph and label kept on one line (never broken inside a label):
    as many per line as fit ``width``, a label longer than a line cut by ``cut_name``; ◆ last."""
    items = [f"{SERIES_GLYPHS[i % len(SERIES_GLYPHS)]} {runcolumns.cut_name(label, width - 2)}"
             for i, label in enumerate(labels)] + ["◆ shared"]
    lines: list[str] = []
    for item in items:
        if lines and len(lines[-1]) + LEGEND_GAP + len(item) <= width:
            lines[-1] += " " * LEGEND_GAP + item
        else:
            lines.append(item)
    return lines


def _step_cell(run: dict) -> str:
    step, total = run.get("step"), run.get("max_steps")
    if step is None:
        return fmt.NA
    return f"{step:,}/{total:,}" if total else f"{step:,}"


def recipe_table(sides: list[Side]) -> Table | Text:
    """The recipe keys whose values differ between the runs (``runs diff`` for N runs)."""
    from moeconsole.runner.rundir.rundiff import format_value, recipe_differences_n
    recipes = [s.recipe or {} for s in sides]
    diffs = recipe_differences_n(recipes)
    if not diffs:
        return Text("recipe differences: none")
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False,
                  title=f"recipe differences ({len(diffs)})", title_justify="left")
    table.add_column("key", no_wrap=True)
    for i, _ in enumerate(sides):
        table.add_column(SERIES_GLYPHS[i % len(SERIES_GLYPHS)], overflow="fold")
    for d in diffs:
        table.add_row(Text(d["key"]), *(Text(format_value(v)) for v in d["values"]))   # a command's flags: no markup
    return table


class CompareScreen(Screen):
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(keys.COMPARE_KEYS)

    def __init__(self, refs: list[str | Path] | str | Path, b: str | Path | None = None, base: Path | None = None, *,
                 labels: list[str] | None = None, interval: float = POLL_S, metric: str = "loss",
                 scratch: Callable[[], Path] | None = None) -> None:
        """``refs``: run ids, run directories or paths of logs (a second positional argument is
        the second run, as before); ``scratch``: where a log not made by moeconsole is read into
        (without it such a log is not compared); ``labels``: the names of the runs as the caller
        shows them, kept for a run that cannot be read (a run read is named by
        ``name_sides``)."""
        super().__init__()
        items = [refs] if isinstance(refs, (str, Path)) else list(refs)
        if b is not None:
            items.append(b)
        self.refs = [str(r) for r in items][:MAX_RUNS]
        self.base = base
        self.scratch = scratch
        self.labels = labels or []
        self.interval = interval
        self.metric = metric
        self.by_time = False
        self.smooth = 0.0
        self.log_y = False
        self.xrange: tuple[float, float] | None = None
        self.sides: list[Side] = []
        self.result: dict | None = None   # what is shown, as data (tests)
        self._drawn: object = None

    def compose(self) -> ComposeResult:
        yield Static("comparing…", id="compare-title", markup=False)   # run names: never markup
        yield ChartView("loss", id="compare-chart")
        with VerticalScroll(id="compare-body"):
            yield Static("", id="compare-stats")
            yield Static("", id="compare-recipe")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._load()

    def on_resize(self) -> None:
        if self.sides:
            self._show()

    # ---- data (worker threads) ---------------------------------------------------------------
    @work(thread=True, exclusive=True, group="compare")
    def _load(self) -> None:
        sides = [self._open(ref, self.labels[i] if i < len(self.labels) else None) for i, ref in enumerate(self.refs)]
        self.name_sides(sides)
        self.app.call_from_thread(self._loaded, sides)

    @staticmethod
    def name_sides(sides: list[Side]) -> None:
        """Each run read is named by its name and, among the runs compared that share it, the
        recipe values that tell them apart *here* (``store.distinguishing_names``, the rule
        of `runs ls` and the browser, over these runs: the index's display name may show values
        that differ elsewhere in the index)."""
        from moeconsole.runner.rundir import store
        from moeconsole.runner.rundir.rundiff import flatten_recipe
        read = [s for s in sides if s.snap is not None]
        names = [str(s.snap.run.get("name") or s.snap.run.get("run_id") or s.label) for s in read if s.snap is not None]
        labels = store.distinguishing_names(names, [store.value_texts(flatten_recipe(s.recipe or {})) for s in read])
        for side, label in zip(read, labels):
            side.label = label

    def _open(self, ref: str, label: str | None) -> Side:
        from moeconsole.runner.rundir.rundiff import flat_recipe
        path = Path(ref).expanduser()
        try:
            if path.is_dir() and rundir.is_run_dir(path):
                run = rundir.RunDir(path.resolve())
            elif not path.exists() and self.base is not None:
                run = rundir.resolve(self.base, ref)
            elif path.exists():
                from moeconsole.console.foreign import open_path
                if self.scratch is None:
                    raise ValueError("no scratch directory to read it into")
                run = open_path(path, self.scratch())
            else:
                raise ValueError("no such run or path")
        except Exception as exc:  # InputError, unreadable: that run says so, the rest is compared
            return Side(ref, label or Path(ref).name, error=f"cannot read: {exc}")
        watcher = RunWatcher(run)
        snap = watcher.poll(with_gpu=False)
        recipe = flat_recipe(run.path) or (flat_recipe(path) if path.exists() and path.is_dir() else {})
        return Side(ref, label or snap.run.get("name") or run.run_id, watcher=watcher, snap=snap, recipe=recipe)

    def _loaded(self, sides: list[Side]) -> None:
        self.sides = sides
        self._show()
        self.set_interval(self.interval, self._poll)

    @work(thread=True, exclusive=True, group="compare-poll")
    def _poll(self) -> None:
        """Every run that may still change (live), read again: only what is new."""
        changed = False
        for side in self.sides:
            if side.watcher is None or side.snap is None:
                continue
            if side.snap.run.get("status") not in rundir.LIVE and side.snap.run.get("status") is not None:
                continue
            try:
                side.snap = side.watcher.poll(with_gpu=False)
                changed = True
            except Exception as exc:  # a run directory going away: said in its row
                side.error = f"{type(exc).__name__}: {exc}"
        if changed:
            self.app.call_from_thread(self._show)

    # ---- drawing -----------------------------------------------------------------------------
    def _series(self) -> list[Series]:
        out: list[Series] = []
        for side in self.sides:
            s = metrics_mod.series_of(side.snap, self.metric) if side.snap is not None else None
            if s is not None and self.by_time:
                t0 = side.snap.run.get("started_at") if side.snap is not None else None
                s = metrics_mod.by_time(s, side.snap.other_series.get("t") if side.snap is not None else None, t0)
            out.append(s if s is not None else Series())
        return out

    def _show(self) -> None:
        sides = self.sides
        live = sum(1 for s in sides if s.snap is not None and s.snap.run.get("status") in rundir.LIVE)
        legend = legend_lines([s.label for s in sides], self.body_width())
        axis = "wall time since each run started" if self.by_time else "step"
        self.query_one("#compare-title", Static).update(
            f"{len(sides)} runs ({live} live)  ·  {metrics_mod.label(self.metric)} by {axis}  ·  "
            f"{keys.key_for(keys.COMPARE_KEYS, 'metric')} metric, {keys.key_for(keys.COMPARE_KEYS, 'align')} step/time, "
            "q back\n" + "\n".join(legend))
        series = self._series()
        chart = self.query_one(ChartView)
        options = ChartOptions(smooth=self.smooth, log=self.log_y, xrange=self.xrange,
                               zero_based=metrics_mod.zero_based(self.metric))
        key = ("compare", tuple((s.n, repr(s.last())) for s in series), self.metric, self.by_time, options)
        missing = [sides[i].label for i, s in enumerate(series) if not s.n]
        head = f"{metrics_mod.label(self.metric)}  " + "  ".join(
            f"{SERIES_GLYPHS[i % len(SERIES_GLYPHS)]} {fmt.num(s.last())}" for i, s in enumerate(series) if s.n)
        if self.by_time and missing:
            head += f"  (no times: {', '.join(missing)})"
        chart.set_data(series, heading=head, key=key, options=options,
                       x_label=fmt.duration if self.by_time else fmt.short)
        self.query_one("#compare-stats", Static).update(stats_table(sides, self.metric, self.body_width()))
        self.query_one("#compare-recipe", Static).update(recipe_table(sides))
        from moeconsole.runner.rundir.rundiff import recipe_differences_n
        self.result = {
            "metric": self.metric, "by_time": self.by_time,
            "runs": [{"label": s.label, "ref": s.ref, "error": s.error,
                      "status": s.snap.run.get("status_word") if s.snap else None,
                      "step": s.snap.run.get("step") if s.snap else None,
                      "eta_s": s.snap.run.get("eta_s") if s.snap else None,
                      "open_alerts": s.snap.run.get("open_alerts") if s.snap else None,
                      "points": series[i].n, "last": series[i].last()} for i, s in enumerate(sides)],
            "recipe_diff": recipe_differences_n([s.recipe or {} for s in sides]),
        }

    def body_width(self) -> int:
        """The columns the title and the tables may fill: the screen less its edges and a
        vertical scrollbar."""
        return max(20, (self.size.width or self.app.size.width) - 2 - SCROLLBAR)

    # ---- keys --------------------------------------------------------------------------------
    def action_metric(self) -> None:
        from moeconsole.console.screens.metricpicker import MetricPicker
        seen: dict[str, metrics_mod.Metric] = {}
        for side in self.sides:
            if side.snap is not None:
                for m in metrics_mod.catalogue(side.snap):
                    seen.setdefault(m.key, m)
        if not seen:
            self.notify("no metrics yet")
            return

        def chosen(keys_: list[str] | None) -> None:
            if keys_:
                self.metric = keys_[0]
                self.xrange = None
                self._show()
        self.app.push_screen(MetricPicker(list(seen.values()), [self.metric], multi=False,
                                          title="Metric to overlay: enter chooses"), chosen)

    def action_align(self) -> None:
        self.by_time = not self.by_time
        self.xrange = None
        self._show()
        self.notify("aligned by wall time since each run started" if self.by_time else "aligned by step")

    def action_smooth_more(self) -> None:
        self.smooth = chartprefs.step_smooth(self.smooth, 1)
        self._show()

    def action_smooth_less(self) -> None:
        self.smooth = chartprefs.step_smooth(self.smooth, -1)
        self._show()

    def action_log_scale(self) -> None:
        self.log_y = not self.log_y
        self._show()

    def _full(self) -> tuple[float, float] | None:
        xs = [x for s in self._series() for x in s.points()[0]]
        return (min(xs), max(xs)) if xs else None

    def _zoom(self, view: tuple[float, float] | None) -> None:
        self.xrange = view
        self._show()

    def action_zoom_in(self) -> None:
        full = self._full()
        if full is not None:
            self._zoom(zoom_range(self.xrange, full, 0.5))

    def action_zoom_out(self) -> None:
        full = self._full()
        if full is not None and self.xrange is not None:
            self._zoom(zoom_range(self.xrange, full, 2.0))

    def action_pan_back(self) -> None:
        full = self._full()
        if full is not None:
            self._zoom(pan_range(self.xrange, full, -1))

    def action_pan_forward(self) -> None:
        full = self._full()
        if full is not None:
            self._zoom(pan_range(self.xrange, full, 1))

    def action_zoom_reset(self) -> None:
        self._zoom(None)

    def on_chart_view_zoom_around(self, message: ChartView.ZoomAround) -> None:
        full = self._full()
        if full is not None:
            self._zoom(zoom_range(self.xrange, full, message.factor, around=message.step))

    def on_chart_view_zoom_to(self, message: ChartView.ZoomTo) -> None:
        full = self._full()
        if full is not None:
            self._zoom(zoom_to(message.lo, message.hi, full))

    def action_help(self) -> None:
        from moeconsole.console.screens.dialogs import HelpScreen
        self.app.push_screen(HelpScreen("Compare"))

    def action_back(self) -> None:
        self.app.pop_screen()
