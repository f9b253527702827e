"""The run screen: status line, runner-gone banner, alert bar, charts, GPU rows,
zombies/blockers, events, log tail.

A thread worker polls the run directory about once a second (``RunSource.poll`` does file I/O)
and hands each Snapshot to the UI thread; every widget redraws only if its slice changed. The
same screen shows a live run (process keys enabled unless --readonly) and a past run (process
keys hidden: no runner listens). Every request goes to the runner's control socket.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import Key
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.worker import get_current_worker

from moeconsole.console import alerts as alerts_mod
from moeconsole.console import chartprefs, confirmations, keys
from moeconsole.console import format as fmt
from moeconsole.console import memory as memory_view
from moeconsole.console import metrics as metrics_mod
from moeconsole.console.chart import ChartOptions, markers_from, pan_range, zoom_range, zoom_to
from moeconsole.console.runwatch import RunWatch
from moeconsole.console.source import RunSource
from moeconsole.console.widgets.chart import ChartView
from moeconsole.console.widgets.gpus import GpuPanel, host_words
from moeconsole.console.widgets.lines import LinesView
from moeconsole.console.widgets.panes import AlertBar, BlockerTable, EventPane, LogTail
from moeconsole.console.screens.messages import AlertNews, ToggleBell
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import alertgroups, rundir
from moeconsole.runner.rundir.alertgroups import AlertGroup
from moeconsole.runner.core.series import Series
from moeconsole.runner.rundir.snapshot import Snapshot
from moeconsole.runner.supervisor import control

_RUN_KEY_BY_ACTION = {k.action: k for k in keys.RUN_KEYS}
# A chart of the whole run gains nothing from redrawing every second; at most this often (a
# new checkpoint or restart marker redraws at once). The status line still counts every step.
CHART_REFRESH_S = 2.0
CHART_MIN_W = 20   # a chart narrower than this says too little: fewer charts are shown
# The usual charts keep their widget ids (tests and the benchmark find them so); any other
# metric gets a chart made for it.
FIXED_CHART_IDS = {"loss": "chart-loss", "grad_norm": "chart-grad", "mem_gib": "chart-mem",
                   metrics_mod.EVAL_LOSS: "chart-eval"}


def _series_key(s) -> tuple:
    last = s.last()
    return (s.n, None if last is None else (repr(last)))


class RunScreen(Screen):
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(keys.RUN_KEYS) + [Binding("escape", "back", "Back", show=False)]
    AUTO_FOCUS = "#events"  # Enter opens the newest event at once; tab reaches the zombie list
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]

    class SnapshotReady(Message):
        def __init__(self, snapshot: Snapshot | None, error: str | None = None,
                     last_output_t: float | None = None, files_only: bool = False) -> None:
            super().__init__()
            self.snapshot = snapshot
            self.error = error
            self.last_output_t = last_output_t
            self.files_only = files_only   # the first frame: no GPU reading or process scan yet

    def __init__(self, source: RunSource, *, base: Path, scratch: Callable[[], Path] | None = None,
                 readonly: bool = False, interval: float = 1.0, clock: Callable[[], float] | None = None) -> None:
        """``base``: the runs directory (the browser's, and where chart choices are saved);
        ``scratch``: where a browser opened from here reads logs not made by moeconsole."""
        super().__init__()
        self.source = source
        self.base = base
        self.scratch = scratch
        self.readonly = readonly
        self.interval = interval
        self.clock = clock or time.time
        self.active_alerts: list[AlertGroup] = []
        self._seen_alerts: dict[str, int] | None = None  # cause -> occurrences seen (None: nothing shown yet)
        self._local_acks: dict[str, float] = {}  # written by this console, until the next snapshot has them
        self._alert_dicts: list[dict] = []  # the groups as --json carries them (the status line reads these)
        self._conditions: frozenset[str] = frozenset()
        self._stale = False
        self._heartbeat_s: float | None = None
        self._charts_at = float("-inf")
        self.snapshot: Snapshot | None = None
        self.polls = 0
        self._applied = threading.Event()
        self.run_watch = RunWatch(source.run.path, interval)  # when to poll again (UI-free)
        self._gpu_at = float("-inf")
        self._live: bool | None = None
        self._marker_key: object = None
        self._markers: tuple = ()
        # the charts: the metrics chosen for this recipe (None: the defaults), smoothing, log
        # axis (saved per recipe) and the zoomed step range (this console only)
        self.chart_choice: list[str] | None = None
        self.smooth = 0.0
        self.log_y = False
        self.xrange: tuple[float, float] | None = None
        self._prefs_loaded = False
        self._recipe_name = ""
        self._chart_look: object = None
        self._extra_charts: dict[str, ChartView] = {}
        self._extra_n = 0

    # ---- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusLine(readonly=self.readonly, id="status")
        yield Static("", id="runner-gone")
        yield AlertBar(id="alerts")
        with Horizontal(id="charts"):
            yield ChartView("loss", id="chart-loss")
            yield ChartView("grad norm", id="chart-grad")
            yield ChartView("memory", id="chart-mem")
            yield ChartView("eval loss", id="chart-eval")   # shown once the run has evaluations
        yield GpuPanel(id="gpus")
        yield LinesView(id="hostline")   # this host: CPU, RAM, the output dir's disk I/O (live runs)
        with Horizontal(id="lower"):
            with Vertical(id="side"):
                yield Static("zombies / blockers: none", id="blockers-title")
                yield BlockerTable(id="blockers")
                yield EventPane(id="events")
            yield LogTail(id="logtail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#blockers").display = False
        for chart in self.query(ChartView):
            chart.display = chart.id in ("chart-loss", "chart-grad", "chart-mem")
        self.query_one("#runner-gone").display = False
        self.query_one("#hostline").display = False
        self.query_one(AlertBar).display = False
        self._poll_loop()

    # ---- polling ------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="poll")
    def _poll_loop(self) -> None:
        worker = get_current_worker()
        full = True  # GPU telemetry too: on the timer, not on every file change
        first = bool(self.source.gpu)  # the first frame from the run's files alone; the full poll follows at once
        try:
            while not worker.is_cancelled:
                self._applied.clear()
                try:
                    if full and not first:
                        self._gpu_at = time.monotonic()
                    snap = self.source.poll(telemetry=full, files_only=first)
                    last_output = self.source.last_output_t(snap)
                    if self._heartbeat_s is None and last_output is not None and \
                            self.clock() - last_output >= fmt.QUIET_SHOWN_S:
                        # the hang limit is shown beside the quiet time only: the recipe (and its
                        # YAML reader) is read once the run has been quiet, not on every attach
                        self._heartbeat_s = self.source.heartbeat_s()
                    self.post_message(self.SnapshotReady(snap, last_output_t=last_output, files_only=first))
                except Exception as exc:  # a bad file must not kill the poller: show it and go on
                    self.post_message(self.SnapshotReady(None, f"{type(exc).__name__}: {exc}"))
                # Back-pressure: never queue a second snapshot before the UI applied the first.
                while not self._applied.wait(0.2):
                    if worker.is_cancelled:
                        return
                if first:
                    first = False
                    continue
                woken_by_file = self.run_watch.wait_next(lambda: worker.is_cancelled)
                full = not woken_by_file or time.monotonic() - self._gpu_at >= 0.75 * self.interval
        finally:
            self.run_watch.close()

    def poll_now(self) -> None:
        """Poll at once (after a request), instead of at the next tick."""
        self.run_watch.poke()

    def on_run_screen_snapshot_ready(self, message: SnapshotReady) -> None:
        try:
            if message.snapshot is not None:
                self.apply(message.snapshot, message.last_output_t, files_only=message.files_only)
            elif message.error:
                self.notify(message.error, title="reading the run failed", severity="error")
        finally:
            self._applied.set()

    def apply(self, snap: Snapshot, last_output_t: float | None = None, files_only: bool = False) -> None:
        """Show a snapshot; each widget compares its slice with what it shows. ``files_only``:
        the first frame, before the GPU reading and the process scan (their panels wait; it is
        not ``self.snapshot``, the newest whole snapshot)."""
        if not files_only:
            self.snapshot = snap
            self.polls += 1
        if not self._prefs_loaded:
            self._load_prefs(snap)
        run = snap.run
        # A runner is there to ask while the run is not over and its runner lives (a finished
        # run's runner may still finish a checkpoint sync: it refuses commands then).
        live = run.get("status") in rundir.LIVE and (bool(run.get("runner_alive")) or not run.get("stale"))
        stale = bool(run.get("stale"))
        self._live, self._stale = live, stale
        self._show_alerts(snap)
        quiet = None
        if last_output_t is not None and run.get("status") in rundir.LIVE:
            quiet = self.clock() - last_output_t
            quiet = quiet if quiet >= 0 else None
        self.query_one(StatusLine).show_run(run, quiet_s=quiet, heartbeat_s=self._heartbeat_s, now=self.clock(),
                                            **fmt.alert_args(run, self._alert_dicts))
        self._show_runner_gone(run)
        self._show_charts(snap)
        self.query_one(EventPane).show(snap.events)
        self.query_one(LogTail).show(snap.log_tail)
        if files_only and self.source.gpu:   # the first frame: the GPU reading and the scan follow
            _set_text(self.query_one("#blockers-title", Static), "zombies / blockers: scanning")
            self._set_conditions(live, stale, killable=False)
            return
        self.query_one(GpuPanel).show_gpu(snap.gpu, snap.nodes)
        hostline = self.query_one("#hostline", LinesView)
        _show(hostline, snap.host is not None)
        if snap.host is not None:
            hostline.set_lines([[(host_words(snap.host, max(20, self.size.width - 2)), "")]])
        blockers = [b for b in snap.blockers if isinstance(b, dict)]
        table = self.query_one(BlockerTable)
        table.show(blockers)
        errors = [b["error"] for b in blockers if b.get("error")]
        title = self.query_one("#blockers-title", Static)
        real = table.blockers
        if not real and table.has_focus:
            self.query_one(EventPane).focus()  # a hidden table must not swallow Enter
        _show(table, bool(real))
        killable = any(b.get("killable") for b in real)
        _set_text(title, f"zombies / blockers: {len(real)}" + (" (tab to select, z to end)" if killable and live else "")
                  if real else ("zombies / blockers: scan failed: " + errors[0]) if errors
                  else "zombies / blockers: none")
        self._set_conditions(live, stale, killable)

    def _set_conditions(self, live: bool, stale: bool, killable: bool) -> None:
        conditions = keys.run_conditions(runner=live, stale=stale, alerts=bool(self.active_alerts),
                                         killable=killable)
        if conditions != self._conditions:
            self._conditions = conditions
            self.refresh_bindings()  # the footer shows only the keys that apply now

    def _show_runner_gone(self, run: dict) -> None:
        banner = self.query_one("#runner-gone", Static)
        _show(banner, bool(run.get("stale")))
        if run.get("stale"):
            key = "" if self.readonly else "press s to start a new runner (it adopts the training), or "
            _set_text(banner, f"RUNNER GONE: nothing supervises this run (no restarts, no hang or crash "
                              f"handling); {key}run: moeconsole supervise {run.get('id')}")

    def _show_alerts(self, snap: Snapshot) -> None:
        """The alert bar (one line per cause, critical first), and one toast for the causes that
        got news since the last poll (never one per alert: toasts must not pile up)."""
        groups = alertgroups.with_acks(snap.alert_groups, self._local_acks)
        self._alert_dicts = [g.to_dict() for g in groups]
        self.active_alerts = alertgroups.active(groups)
        bar = self.query_one(AlertBar)
        headline = next((g.key for g in self.active_alerts if g.critical), None)  # the status line shows it
        bar.show_alerts(self.active_alerts, room=4 if self.size.height >= 36 else 2, in_headline=headline,
                        width=max(40, self.size.width - 2) if self.size.width else None)
        _show(bar, bool(self.active_alerts))
        seen = {g.key: g.count for g in groups}
        if self._seen_alerts is None:  # history is not news
            self._seen_alerts = seen
            return
        news = [g for g in self.active_alerts if g.count > self._seen_alerts.get(g.key, 0)]
        self._seen_alerts = seen
        if not news:
            return
        title, message, severity = alerts_mod.toast(news)
        # one message per poll that brought news, however many arrived: one toast, at most one bell
        self.post_message(AlertNews(title, message, severity, critical=any(g.critical for g in news)))

    # ---- charts -------------------------------------------------------------------------
    def _load_prefs(self, snap: Snapshot) -> None:
        """The chart choice saved for this recipe (once, at the first snapshot)."""
        self._prefs_loaded = True
        self._recipe_name = str(snap.run.get("name") or "")
        if not self._recipe_name:
            return
        prefs = chartprefs.load(self.base, self._recipe_name)
        if prefs is not None:
            self.chart_choice = prefs.charts or None
            self.smooth, self.log_y = prefs.smooth, prefs.log

    def _save_prefs(self) -> None:
        if not self._recipe_name:
            return
        try:
            chartprefs.save(self.base, self._recipe_name, chartprefs.ChartPrefs(
                charts=list(self.chart_choice or []), smooth=self.smooth, log=self.log_y))
        except OSError as exc:
            self.notify(f"chart choice not saved: {exc}", severity="warning")

    def chart_keys(self, snap: Snapshot | None = None) -> list[str]:
        """The metrics charted now: the recipe's saved choice, else the defaults."""
        snap = snap or self.snapshot
        return list(self.chart_choice) if self.chart_choice else metrics_mod.default_charts(snap)

    def _options(self, key: str) -> ChartOptions:
        return ChartOptions(smooth=self.smooth, log=self.log_y, xrange=self.xrange,
                            zero_based=metrics_mod.zero_based(key))

    def _chart_widgets(self, shown: list[str]) -> list[ChartView]:
        """One ChartView per shown metric, in order (the usual four keep their ids); the rest hidden."""
        row = self.query_one("#charts", Horizontal)
        widgets: list[ChartView] = []
        for key in shown:
            wid = FIXED_CHART_IDS.get(key)
            if wid is None:
                chart = self._extra_charts.get(key)
                if chart is None:
                    self._extra_n += 1
                    chart = self._extra_charts[key] = ChartView(metrics_mod.label(key), id=f"chart-x{self._extra_n}")
                    row.mount(chart)
            else:
                chart = self.query_one(f"#{wid}", ChartView)
            widgets.append(chart)
        for chart in row.query(ChartView):
            _show(chart, chart in widgets)
        order = [c for c in row.children if isinstance(c, ChartView)]
        if [c for c in order if c in widgets] != widgets:
            for i, chart in enumerate(widgets):
                if i == 0:
                    row.move_child(chart, before=0)
                else:
                    row.move_child(chart, after=widgets[i - 1])
        return widgets

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
            xs = s.points()[0]
            if xs:
                lo = min(lo, xs[0])
                hi = max(hi, xs[-1], s.last_x if s.last_x is not None else xs[-1])
        return (lo, hi) if hi >= lo else None

    def _show_charts(self, snap: Snapshot, force: bool = False) -> None:
        marker_key = (snap.restarts_at, tuple((c.get("step"), c.get("ok"), c.get("suspect")) for c in snap.checkpoints))
        now = time.monotonic()
        look = (tuple(self.chart_keys(snap)), self.smooth, self.log_y, self.xrange, self.size.width)
        if not force and marker_key == self._marker_key and look == self._chart_look \
                and now - self._charts_at < CHART_REFRESH_S:
            return
        self._charts_at = now
        self._chart_look = look
        if marker_key != self._marker_key:
            self._marker_key = marker_key
            self._markers = markers_from(snap.restarts_at, snap.checkpoints)
        keys_now = self.chart_keys(snap)
        fit = max(1, self.size.width // CHART_MIN_W) if self.size.width else len(keys_now)
        shown = keys_now[:fit]
        for key, chart in zip(shown, self._chart_widgets(shown)):
            self._draw_chart(chart, key, snap, marker_key)

    def _draw_chart(self, chart: ChartView, key: str, snap: Snapshot, marker_key: object) -> None:
        markers = self._markers
        options = self._options(key)
        s = metrics_mod.series_of(snap, key)
        if key == "mem_gib":
            self._draw_memory(chart, snap, marker_key, options)
            return
        if key == metrics_mod.EVAL_LOSS:
            self._draw_eval(chart, snap, marker_key, options)
            return
        if s is None:
            chart.set_data([Series()], key=(key, "none"), heading=f"{metrics_mod.label(key)}: not in this log",
                           options=options)
            return
        dkey = (key, _series_key(s), marker_key, options)
        if dkey == chart._data_key:
            return
        name = metrics_mod.label(key)
        last = f"{name} {fmt.num(s.last())}"
        heading: tuple[str, ...] = (last,)
        if key == "loss":
            lo = (s.finite_min() or (None,))[0]
            heading = (f"{last} min {fmt.num(lo)}", last) if lo is not None else (last,)
        elif key not in ("grad_norm",):
            low, high = s.finite_min(), s.finite_max()
            if low is not None and high is not None:
                heading = (f"{last} ({fmt.num(low[0])}–{fmt.num(high)})", last)
        chart.set_data([s], key=dkey, markers=markers, heading=heading, options=options)

    def _draw_memory(self, chart: ChartView, snap: Snapshot, marker_key: object, options: ChartOptions) -> None:
        mem = snap.series["mem_gib"]
        envelope = snap.run.get("memory")
        tight = memory_view.tightest(envelope) or {}
        cap = tight.get("capacity_gib") or snap.run.get("mem_capacity_gib") or _gpu_capacity_gib(snap.gpu)
        key = (_series_key(mem), marker_key, cap, memory_view.heading_key(envelope), options)
        if key == chart._data_key:
            return
        last = fmt.num(mem.last(), 3)
        heading: tuple[str, ...] = (f"memory {last} GiB", f"mem {last}G")
        by_gpu = memory_view.heading(envelope)   # the tightest GPU first, when the runner knows it
        if by_gpu:
            heading = by_gpu
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
        key = (_series_key(ev), marker_key, options)
        if key == chart._data_key:
            return
        if not ev.n:
            chart.set_data([ev], key=key, heading="eval loss: no evaluations yet", options=options)
            return
        last = snap.last_eval or {}
        split = last.get("split") or "eval"
        lo = ev.finite_min()
        head = f"{split} loss {fmt.num(ev.last())}"
        best = f" best {fmt.num(lo[0])} @{fmt.short(lo[1])}" if lo is not None else ""
        chart.set_data([ev], key=key, markers=self._markers,
                       heading=(f"{head}{best} ({snap.eval_count} evals)", head), options=options)

    def _redraw_charts(self) -> None:
        if self.snapshot is not None:
            self._show_charts(self.snapshot, force=True)

    def on_resize(self) -> None:
        self.call_after_refresh(self._redraw_charts)   # more or fewer charts fit

    def action_charts(self) -> None:
        """c: every metric of the log in a list; the chosen ones become the charts (kept per recipe)."""
        from moeconsole.console.screens.metricpicker import MetricPicker
        if self.snapshot is None:
            self.notify("no data yet")
            return
        entries = metrics_mod.catalogue(self.snapshot)

        def chosen(keys_: list[str] | None) -> None:
            if keys_ is None:
                return
            self.chart_choice = metrics_mod.clean_choice(keys_) or None
            self._save_prefs()
            self._redraw_charts()
            shown = self.chart_keys()
            fit = max(1, self.size.width // CHART_MIN_W)
            more = f" ({len(shown) - fit} more on a wider terminal)" if len(shown) > fit else ""
            self.notify("charts: " + ", ".join(metrics_mod.label(k) for k in shown) + more)
        self.app.push_screen(MetricPicker(entries, self.chart_keys()), chosen)

    def action_smooth_more(self) -> None:
        self._set_smooth(chartprefs.step_smooth(self.smooth, 1))

    def action_smooth_less(self) -> None:
        self._set_smooth(chartprefs.step_smooth(self.smooth, -1))

    def _set_smooth(self, value: float) -> None:
        self.smooth = value
        self._save_prefs()
        self._redraw_charts()
        self.notify(f"smoothing: EMA {value:g}" if value else "smoothing off")

    def action_log_scale(self) -> None:
        self.log_y = not self.log_y
        self._save_prefs()
        self._redraw_charts()
        self.notify("y axis: log scale" if self.log_y else "y axis: linear")

    def _zoom(self, view: tuple[float, float] | None, say: bool = True) -> None:
        self.xrange = view
        self._redraw_charts()
        if say:
            self.notify("whole run" if view is None else f"steps {fmt.short(view[0])}–{fmt.short(view[1])}")

    def action_zoom_in(self) -> None:
        full = self.full_range()
        if full is None:
            return
        self._zoom(zoom_range(self.xrange, full, 0.5))

    def action_zoom_out(self) -> None:
        full = self.full_range()
        if full is None or self.xrange is None:
            return
        self._zoom(zoom_range(self.xrange, full, 2.0))

    def action_pan_back(self) -> None:
        full = self.full_range()
        if full is not None and self.xrange is not None:
            self._zoom(pan_range(self.xrange, full, -1))

    def action_pan_forward(self) -> None:
        full = self.full_range()
        if full is not None and self.xrange is not None:
            self._zoom(pan_range(self.xrange, full, 1))

    def action_zoom_reset(self) -> None:
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

    def action_gpus(self) -> None:
        from moeconsole.console.screens.gpus import GpuScreen
        self.app.push_screen(GpuScreen(self.source, self))

    # ---- keys ---------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys as data (``moeconsole.console.keys``): a key shows only while its conditions hold (no kill
        on a finished run, no z without a process that can be ended); process keys of a
        read-only console are shown dimmed."""
        if action == "back":
            return len(self.app.screen_stack) > 2
        key = _RUN_KEY_BY_ACTION.get(action)
        if key is None:
            return True
        if not keys.applies(key, self._conditions):
            return False
        if self.readonly and (key.changes_process or action == "start_runner"):
            return None  # shown dimmed
        return True

    def on_key(self, event: Key) -> None:
        if self.readonly and ((event.key in keys.PROCESS_KEYS and self._live is not False)
                              or (event.key == "s" and self._stale)):
            event.stop()
            event.prevent_default()
            self.notify("read-only console: process-changing keys are disabled", severity="warning")

    # ---- alerts, details, runner --------------------------------------------------------
    def action_acknowledge(self) -> None:
        """Acknowledge every active alert group, in acks.json: every console attached to the
        run (and every later one) sees them acknowledged."""
        if not self.active_alerts:
            self.notify("no active alerts")
            return
        groups = list(self.active_alerts)
        try:
            self._local_acks = alertgroups.acknowledge(self.source.run.path, groups)
        except OSError as exc:
            self._local_acks = {**self._local_acks, **{g.key: g.last_t for g in groups}}
            self.notify(f"acknowledged for this console only: cannot write acks.json ({exc})", severity="warning")
        n = len(groups)
        if self.snapshot is not None:
            self.apply(self.snapshot)
        self.notify(f"acknowledged {n} alert{'s' if n != 1 else ''}")
        self.poll_now()

    def action_toggle_bell(self) -> None:
        self.post_message(ToggleBell())  # the app holds the setting and says what it became

    def on_event_pane_chosen(self, message: EventPane.Chosen) -> None:
        self._open_detail(message.entry)

    def action_details(self) -> None:
        """Enter outside the events list: the highlighted event (Enter in the list opens it too)."""
        pane = self.query_one(EventPane)
        if pane.entries and pane.highlighted is not None:
            self._open_detail(pane.entries[min(pane.highlighted, len(pane.entries) - 1)])
        else:
            self.notify("no event to show")

    def action_alert_details(self) -> None:
        """d: the newest active alert group (critical first): its cause, count, steps, hint."""
        from moeconsole.console.screens.dialogs import DetailScreen
        if not self.active_alerts:
            self.notify("no active alerts")
            return
        group = self.active_alerts[0]
        crash: dict = next((m for m in reversed(group.members) if m.get("type") == "crash"), {})
        self.app.push_screen(DetailScreen(f"{alerts_mod.word(group)} alert", alerts_mod.group_detail_lines(
            group, self._crash_report(crash))))

    def _crash_report(self, ev: dict) -> dict | None:
        if ev.get("type") != "crash" or self.snapshot is None:
            return None
        return next((c for c in self.snapshot.crashes if c.get("attempt") == ev.get("attempt")), None)

    def _open_detail(self, entry) -> None:
        from moeconsole.console.screens.dialogs import DetailScreen
        from moeconsole.console.timeline import entry_detail_lines
        report = self._crash_report(entry.event)
        self.app.push_screen(DetailScreen(entry.text.split(":", 1)[0], entry_detail_lines(entry, report)))

    def action_start_runner(self) -> None:
        if not self._stale:
            self.notify("the runner is alive: nothing to start")
            return
        try:
            pid = self.source.start_runner()
        except Exception as exc:  # say why on screen; the run directory is untouched
            self.notify(f"could not start a runner: {exc}", severity="error")
            return
        self.notify(f"started a new runner (pid {pid}); it adopts the training if it still runs")
        self.poll_now()
    def _confirm_and_send(self, confirmation: confirmations.Confirmation) -> None:
        def done(yes: bool | None) -> None:
            if yes:
                self._send(confirmation.request)
            else:
                self.notify("cancelled: nothing was sent")
        self.app.push_screen(_confirm_screen(confirmation), done)

    @work(thread=True, group="control")
    def _send(self, request: control.Request) -> None:
        answer = self.source.request(request)
        ok = answer.ok
        message = answer.text or ("done" if ok else "refused")
        self.app.call_from_thread(self.notify, f"{request.cmd}: {message}",
                                  severity="information" if ok else "error")
        self.poll_now()

    def _run(self) -> dict:
        return self.snapshot.run if self.snapshot else {"id": self.source.run.run_id}

    def action_kill(self) -> None:
        self._confirm_and_send(confirmations.kill(self._run(), self.source.recipe()))

    def action_restart(self) -> None:
        self._confirm_and_send(confirmations.restart(self._run(), self.source.recipe()))

    def action_verify(self) -> None:
        self.notify("verify: asking the runner to verify the latest checkpoint")
        self._send(control.Verify())

    def action_kill_zombie(self) -> None:
        blocker = self.query_one(BlockerTable).selected()
        if blocker is None:
            self.notify("no zombie or blocker process to end", severity="warning")
            return
        if not blocker.get("killable"):
            why = blocker.get("not_killable_why") or "it is not a process that may be ended"
            self.notify(f"PID {blocker.get('pid')} cannot be ended: {why}", severity="warning")
            return
        self._confirm_and_send(confirmations.kill_zombie(blocker, self.source.recipe()))

    def action_browser(self) -> None:
        from moeconsole.console.screens.browser import BrowserScreen
        stack = self.app.screen_stack
        for i in range(len(stack) - 1, -1, -1):
            if isinstance(stack[i], BrowserScreen):
                for _ in range(len(stack) - 1 - i):
                    self.app.pop_screen()
                return
        self.app.push_screen(BrowserScreen(self.base, scratch=self.scratch))

    def action_log(self) -> None:
        from moeconsole.console.screens.logview import LogScreen
        self.app.push_screen(LogScreen(self.source.run.log, title=f"{self._run().get('name') or ''} train.log"))

    def action_help(self) -> None:
        from moeconsole.console.screens.dialogs import HelpScreen
        self.app.push_screen(HelpScreen("Run screen"))

    def action_detach(self) -> None:
        self.app.exit(0)

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()


def _show(widget, visible: bool) -> None:
    """Show or hide a widget; untouched when already so (every change costs a new layout)."""
    if widget.display != visible:
        widget.display = visible


def _set_text(widget: Static, text: str) -> None:
    """Replace a Static's text only when it changed (an update re-lays out the screen)."""
    if widget.content != text:
        widget.update(text)


def _confirm_screen(confirmation):
    from moeconsole.console.screens.dialogs import ConfirmScreen
    return ConfirmScreen(confirmation)


def _gpu_capacity_gib(gpu: dict | None) -> float | None:
    if not gpu or not gpu.get("available"):
        return None
    totals = [g.get("mem_total_mib") for g in gpu.get("gpus") or () if g.get("mem_total_mib")]
    return min(totals) / 1024 if totals else None

