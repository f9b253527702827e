"""The run screen: status line, runner-gone banner, alert bar, charts, GPU rows,
zombies/blockers, events, log tail.

A thread worker runs the UI-free poll loop (``moeconsole.console.runwatch.Poller``: file I/O,
about once a second or when the run directory changes) and posts each Snapshot to the UI
thread as a message a newer one replaces (a slow UI drops stale snapshots, it never queues
them); every widget redraws only if its slice changed. The charts are a widget of their own
(``moeconsole.console.widgets.charts.ChartRow``: choice, smoothing, log axis, zoom). The
same screen shows a live run (process keys enabled unless --readonly) and a past run (process
keys hidden: no runner listens). Every request goes to the runner's control socket.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.events import Key
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static
from textual.worker import get_current_worker

from moeconsole.console import alerts as alerts_mod
from moeconsole.console import keys
from moeconsole.console.lean import settle_after_first_frame
from moeconsole.console import format as fmt
from moeconsole.console.runwatch import FirstPoll, Polled, Poller, RunWatch, Waiting
from moeconsole.console.source import RunSource
from moeconsole.console.widgets.charts import ChartRow
from moeconsole.console.widgets.gpu_panel import GpuPanel, host_words
from moeconsole.console.widgets.keybar import KeyBar
from moeconsole.console.widgets.lines import LinesView
from moeconsole.console.widgets.panes import AlertBar, EventPane, LogTail, shown_blockers
from moeconsole.console.screens.messages import AlertNews, ToggleBell
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import alertgroups, rundir
from moeconsole.runner.rundir.alertgroups import AlertGroup
from moeconsole.runner.core.units import printable
from moeconsole.runner.rundir.snapshot import Snapshot

if TYPE_CHECKING:
    from moeconsole.console.confirmations import Confirmation
    from moeconsole.console.widgets.blockers import BlockerTable
    from moeconsole.runner.supervisor import control

# How long the screen's mount waits for the first frame's poll (``FirstPoll``; a few ms on a
# local disk): past it the screen is drawn without the run, which the poll's message then brings.
FIRST_POLL_WAIT_S = 0.25

_RUN_KEY_BY_ACTION = {k.action: k for k in keys.RUN_KEYS}


def breakpoint_classes(width: int, height: int, horizontal: list[tuple[int, str]],
                       vertical: list[tuple[int, str]]) -> dict[str, bool]:
    """The breakpoint classes a screen of ``width`` x ``height`` cells has (True) and has not
    (False): for each axis the class of the largest breakpoint the size reaches, as Textual's
    ``Screen._on_resize`` sets them (textual/screen.py ``_get_breakpoint_classes``)."""
    on: dict[str, bool] = {name: False for _, name in horizontal + vertical}
    for size, points in ((width, horizontal), (height, vertical)):
        reached = [(at, name) for at, name in points if size >= at]
        if reached:
            on[max(reached)[1]] = True
    return on


def blocker_hint(count: int, width: int) -> str:
    """How to end a listed process, after the count in the pane's title, in the words that fit
    its width (at 80 columns the pane is half of it: the long hint was cut to "(tab to select,")."""
    full = " (tab to select, z to end)"
    fits = not width or len(f"zombies / blockers: {count}{full}") <= width
    return full if fits else " (tab, z ends)"


class RunScreen(Screen):
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(keys.RUN_KEYS) + [Binding("escape", "back", "Back", show=False)]
    AUTO_FOCUS = "#events"  # Enter opens the newest event at once; tab reaches the zombie list
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]

    class SnapshotReady(Message):
        """A poll's result; a newer one waiting behind it replaces it (the screen shows the newest).
        ``polled`` None: the poll thread's, waiting in the screen's ``Waiting`` (never dropped:
        the poll thread tells the screen again only once it has taken them)."""
        def __init__(self, polled: Polled | None) -> None:
            super().__init__()
            self.polled = polled

        def can_replace(self, message: Message) -> bool:
            return (isinstance(message, RunScreen.SnapshotReady) and self.polled is not None
                    and self.polled.snapshot is not None)

    def __init__(self, source: RunSource, *, base: Path, scratch: Callable[[], Path] | None = None,
                 readonly: bool = False, interval: float = 1.0, clock: Callable[[], float] | None = None) -> None:
        """``base``: the runs directory (the browser's, and where chart choices are saved);
        ``scratch``: where a browser opened from here reads logs not made by moeconsole."""
        super().__init__()
        self.source = source
        self.base = base
        self._ref: str | None = None   # the run as a shell types it (``_typed_ref``)
        self.scratch = scratch
        self.readonly = readonly
        self.interval = interval
        self.clock = clock or time.time
        self.active_alerts: list[AlertGroup] = []
        self.alert_groups: list[AlertGroup] = []
        self._seen_alerts: dict[str, int] | None = None  # cause -> occurrences seen (None: nothing shown yet)
        self._local_acks: dict[str, float] = {}  # written by this console, until the next snapshot has them
        self._alert_dicts: list[dict] = []  # the groups as --json carries them (the status line reads these)
        self._conditions: frozenset[str] = frozenset()
        self._stale = False
        # the confirmation open over this screen and the run's (status, attempt) when it was asked
        self._asking: tuple[Screen, tuple[object, object], str] | None = None
        self._heartbeat_s: float | None = None
        self.snapshot: Snapshot | None = None
        self.polls = 0
        self.run_watch = RunWatch(source.run.path, interval)  # when to poll again (UI-free)
        self._live: bool | None = None
        self._last_output_t: float | None = None
        self._undrawn = False  # a snapshot came while another screen covered this one
        # a foreign log's history is read once its newest steps are on screen (the reading
        # thread would share the interpreter with the first frame's layout and paint)
        self._history_waits = getattr(source, "importing", None) is not None
        self.first_frame_at: float | None = None   # time.monotonic() after the first frame was drawn
        self.blocker_table: BlockerTable | None = None   # mounted at the first zombie or blocker
        self._painted = threading.Event()   # set with first_frame_at: the poller's full poll waits for it
        self._waiting = Waiting()   # the polls not yet shown: the newest snapshot and failed read

    # ---- layout -------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        # the breakpoint classes for the terminal's size, before the first style pass: Textual
        # sets them at the screen's first resize, which restyled every widget of the screen again
        # (with their component classes: about a tenth of the first frame's CPU)
        self.update_classes(breakpoint_classes(self.app.size.width, self.app.size.height,
                                               self.HORIZONTAL_BREAKPOINTS, self.VERTICAL_BREAKPOINTS),
                            update=False)
        # the first frame's poll starts now, beside the widgets' mounting (on_mount takes it)
        self._poller = Poller(self.source, self.run_watch, quiet_shown_s=fmt.QUIET_SHOWN_S, clock=self.clock)
        self._first_poll = FirstPoll(self._poller)
        yield StatusLine(readonly=self.readonly, id="status")
        yield Static("", id="runner-gone", markup=False)   # paths and commands, never markup
        yield AlertBar(id="alerts")
        yield ChartRow(self.base)
        yield GpuPanel(id="gpus")
        yield LinesView(id="hostline")   # this host: CPU, RAM, the output dir's disk I/O (live runs)
        with Horizontal(id="lower"):
            with Vertical(id="side"):
                yield Static("zombies / blockers: none", id="blockers-title", markup=False)   # a scan's error text
                # the blocker table (#blockers) is mounted here at the first zombie or blocker
                yield EventPane(id="events")
            yield LogTail(id="logtail")
        # the key footer is mounted once the first frame is drawn (``_first_frame_drawn``): its
        # keys' widgets and their style updates were a quarter of the first frame's layout CPU

    def on_mount(self) -> None:
        self.query_one("#runner-gone").display = False
        self.query_one("#hostline").display = False
        self.query_one(AlertBar).display = False
        polled = self._first_poll.take() if self._first_poll.wait(FIRST_POLL_WAIT_S) else None
        if polled is not None:   # the first layout and paint show the run (not an empty screen first)
            self._show_polled(polled)
        self._poll_loop()

    # ---- polling ------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="poll")
    def _poll_loop(self) -> None:
        worker = get_current_worker()
        self._poller.run(self._deliver, lambda: worker.is_cancelled,
                         painted=self._painted.wait, first=self._first_poll)

    def _deliver(self, polled: Polled) -> None:
        """From the poll thread: the poll waits in ``_waiting`` (the newest replaces the one before);
        the screen is told when nothing was waiting."""
        if self._waiting.put(polled):
            self.post_message(self.SnapshotReady(None))

    def poll_now(self) -> None:
        """Poll at once (after a request), instead of at the next tick."""
        self.run_watch.poke()

    def on_run_screen_snapshot_ready(self, message: SnapshotReady) -> None:
        for polled in (self._waiting.take() if message.polled is None else [message.polled]):
            self._show_polled(polled)

    def _show_polled(self, polled: Polled) -> None:
        if polled.heartbeat_s is not None:
            self._heartbeat_s = polled.heartbeat_s
        if polled.line_format is not None:
            self.query_one(LogTail).read_with(polled.line_format)
        if polled.snapshot is not None:
            self.apply(polled.snapshot, polled.last_output_t, files_only=polled.files_only)
        elif polled.error:
            self.notify(polled.error, title="reading the run failed", severity="error")
        if self.first_frame_at is None:
            self.call_after_refresh(self._first_frame_drawn)

    def _first_frame_drawn(self) -> None:
        if self.first_frame_at is not None:
            return
        self.first_frame_at = time.monotonic()
        self._painted.set()
        self.call_later(self._mount_footer)
        self.call_later(settle_after_first_frame)   # in `attach` only: the start's garbage freed (console/lean.py)
        if self._history_waits:
            self._history_waits = False
            self.source.importing.start()

    async def _mount_footer(self) -> None:
        """The key footer, after the first frame: mounted, then told the screen's bindings (it
        shows them when the screen publishes them; the first publication was before it)."""
        if not self.is_attached:   # the app closed right after its first frame
            return
        await self.mount(KeyBar())   # one widget (Textual's Footer: a widget per key, 1.4 MiB)
        self.refresh_bindings()

    def covered(self) -> bool:
        """Another opaque screen (the GPU view, the log pager, the browser) is on top: nothing of
        this one shows. Textual still counts it as visible and repaints the top screen whole for
        every line of it that changes; a dialog over it is translucent and leaves it drawn."""
        try:
            top = self.app.screen
        except Exception:  # no screen stack (the app is closing)
            return False
        return top is not self and top.styles.background.a >= 1

    def on_screen_resume(self) -> None:
        """Back on top: the newest snapshot at once (not at the next poll)."""
        if self._undrawn and self.snapshot is not None:
            self.apply(self.snapshot, self._last_output_t)

    def apply(self, snap: Snapshot, last_output_t: float | None = None, files_only: bool = False) -> None:
        """Show a snapshot; each widget compares its slice with what it shows. Under another
        screen only the alerts go on (their toast and bell reach the screen on top); the rest is
        drawn when this screen is back. ``files_only``: the first frame, before the GPU reading
        and the process scan (their panels wait; it is not ``self.snapshot``, the newest whole
        snapshot)."""
        if not files_only:
            self.snapshot = snap
            self._last_output_t = last_output_t
            self.polls += 1
        if self.covered():
            self._undrawn = True
            self._show_alerts(snap)
            return
        self._undrawn = False
        run = snap.run
        # A runner is there to ask while the run is not over and its runner lives (a finished
        # run's runner may still finish a checkpoint sync: it refuses commands then).
        live = run.get("status") in rundir.LIVE and (bool(run.get("runner_alive")) or not run.get("stale"))
        stale = bool(run.get("stale")) and not run.get("runner_alive")   # s starts a runner: none lives
        ended = run.get("status") not in rundir.LIVE   # over, or an imported log: q quits (keys.ENDED)
        self._live, self._stale = live, stale
        self._withdraw_stale_question(run)
        self._show_alerts(snap)
        quiet = None
        if last_output_t is not None and run.get("status") in rundir.LIVE:
            quiet = self.clock() - last_output_t
            quiet = quiet if quiet >= 0 else None
        self.query_one(StatusLine).show_run(run, quiet_s=quiet, heartbeat_s=self._heartbeat_s, now=self.clock(),
                                            unread=fmt.unread_log_words(run, snap.log_tail),
                                            **fmt.alert_args(run, self._alert_dicts))
        self._show_runner_gone(run)
        self.charts.show(snap)
        self.query_one(EventPane).show(snap.events)
        self.query_one(LogTail).show(snap.log_tail, snap.tail_records)
        if files_only and self.source.gpu:   # the first frame: the GPU reading and the scan follow
            _set_text(self.query_one("#blockers-title", Static), "zombies / blockers: scanning")
            self._set_conditions(live, stale, killable=False, ended=ended)
            return
        self.query_one(GpuPanel).show_gpu(snap.gpu, snap.nodes)
        hostline = self.query_one("#hostline", LinesView)
        _set_display(hostline, snap.host is not None)
        if snap.host is not None:
            hostline.set_lines([[(host_words(snap.host, max(20, self.size.width - 2)), "")]])
        blockers = [b for b in snap.blockers if isinstance(b, dict)]
        real = shown_blockers(blockers)
        table = self.blocker_table
        if table is None and real:
            from moeconsole.console.widgets.blockers import BlockerTable
            table = self.blocker_table = BlockerTable(blockers, id="blockers")
            self.query_one("#side").mount(table, before=self.query_one(EventPane))
        elif table is not None:
            table.show(blockers)
            if not real and table.has_focus:
                self.query_one(EventPane).focus()  # a hidden table must not swallow Enter
            _set_display(table, bool(real))
        errors = [b["error"] for b in blockers if b.get("error")]
        title = self.query_one("#blockers-title", Static)
        killable = any(b.get("killable") for b in real)
        _set_text(title, f"zombies / blockers: {len(real)}" + (blocker_hint(len(real), title.size.width)
                                                                  if killable and live else "")
                  if real else ("zombies / blockers: scan failed: " + errors[0]) if errors
                  else "zombies / blockers: none")
        self._set_conditions(live, stale, killable, ended=ended)

    def _set_conditions(self, live: bool, stale: bool, killable: bool, *, ended: bool) -> None:
        elsewhere = _gone_elsewhere(self._run())
        conditions = keys.run_conditions(runner=live, stale=stale, alerts=bool(self.active_alerts),
                                         killable=killable, any_alert=bool(self.alert_groups), ended=ended,
                                         elsewhere=elsewhere)
        if conditions != self._conditions:
            self._conditions = conditions
            self.refresh_bindings()  # the footer shows only the keys that apply now

    def _show_runner_gone(self, run: dict) -> None:
        """The banner under the status line: a live run whose runner is gone, or a FAILED or
        UNSAVED run (what to do next: ``fmt.ended_next_words``)."""
        banner = self.query_one("#runner-gone", Static)
        failed = fmt.ended_next_words(run, self._typed_ref())
        _set_display(banner, bool(run.get("stale") or failed))
        if failed:
            _set_text(banner, failed)
        from moeconsole.runner.rundir.snapshot import next_command
        if run.get("stale") and run.get("copy_of"):
            _set_text(banner, f"A COPY: this directory is a copy of {printable(str(run['copy_of']))}, whose run is "
                              f"live there; its runner and training are that directory's (no runner or kill here "
                              f"acts on them); run: {next_command(run)}")
        elif run.get("stale") and run.get("runner_elsewhere"):
            _set_text(banner, f"RUNNER ELSEWHERE: the run's runner ran on {run['runner_elsewhere']} (another machine, "
                              f"or a container), where nothing here can ask it, and state.json has stopped "
                              f"changing; on {run['runner_elsewhere']}, `moeconsole supervise {self._typed_ref()}` "
                              f"starts a new one if it is gone; if {run['runner_elsewhere']} is gone for good, "
                              f"`moeconsole restart {self._typed_ref()}` starts the next attempt here, "
                              f"`moeconsole kill {self._typed_ref()} --machine-gone` records it killed")
        elif run.get("stale") and run.get("runner_stopped"):
            _set_text(banner, f"RUNNER STOPPED: the runner (pid {run.get('runner_pid')}) is stopped (SIGSTOP, "
                              f"Ctrl-Z, a debugger): it records and answers nothing until `{next_command(run)}`; "
                              f"the training writes on to train.log, read once it goes on")
        elif run.get("stale") and run.get("runner_frozen"):
            _set_text(banner, f"RUNNER FROZEN: the runner (pid {run.get('runner_pid')}) is frozen by its cgroup "
                              f"{run.get('runner_frozen')} (docker pause, systemctl freeze, a batch system's "
                              f"suspend): it records and answers nothing until the cgroup is thawed (kill -CONT "
                              f"does not wake it); the training writes on to train.log, read once it goes on")
        elif run.get("stale") and run.get("runner_alive"):
            _set_text(banner, f"STATE NOT WRITTEN: the runner (pid {run.get('runner_pid')}) lives but has not "
                              f"replaced state.json lately (a run directory it cannot write, a failing disk, "
                              f"a stuck runner): {run.get('dir')}/runner.log says why")
        elif run.get("stale"):
            key = "" if self.readonly else (f"press {keys.key_for(keys.RUN_KEYS, 'start_runner')} to start a new runner "
                                             "(it adopts the training), or ")
            _set_text(banner, f"RUNNER GONE: nothing supervises this run (no restarts, no hang or crash "
                              f"handling); {key}run: {next_command(run, self._typed_ref())}")

    def _show_alerts(self, snap: Snapshot) -> None:
        """The alert bar (one line per cause, critical first), and one toast for the causes that
        got news since the last poll (never one per alert: toasts must not pile up)."""
        groups = alertgroups.with_acks(snap.alert_groups, self._local_acks)
        self._alert_dicts = [g.to_dict() for g in groups]
        self.active_alerts = alertgroups.active(groups)
        self.alert_groups = list(groups)  # newest first, acknowledged ones too (``d`` with none active)
        bar = self.query_one(AlertBar)
        headline = next((g.key for g in self.active_alerts if g.critical), None)  # the status line shows it
        bar.show_alerts(self.active_alerts, room=4 if self.size.height >= 36 else 2, in_headline=headline,
                        width=max(40, self.size.width - 2) if self.size.width else None)
        _set_display(bar, bool(self.active_alerts))
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

    # ---- charts (``ChartRow``; the keys are the screen's) -------------------------------
    @property
    def charts(self) -> ChartRow:
        return self.query_one(ChartRow)

    @property
    def xrange(self) -> tuple[float, float] | None:
        """The zoomed step range of the charts (None: the whole run)."""
        return self.charts.xrange

    def chart_keys(self) -> list[str]:
        return self.charts.chart_keys()

    def on_resize(self) -> None:
        self.call_after_refresh(self._redraw_charts)   # more or fewer charts fit

    def _redraw_charts(self) -> None:
        for row in self.query(ChartRow):   # none yet while the screen is being composed
            row.redraw()

    def action_charts(self) -> None:
        """c: every metric of the log in a list; the chosen ones become the charts (kept per recipe)."""
        from moeconsole.console import metrics as metrics_mod
        from moeconsole.console.screens.metricpicker import MetricPicker
        if self.snapshot is None:
            self.notify("no data yet")
            return
        charts = self.charts

        def chosen(keys_: list[str] | None) -> None:
            if keys_ is not None:
                charts.choose(keys_)
        self.app.push_screen(MetricPicker(metrics_mod.catalogue(self.snapshot), charts.chart_keys()), chosen)

    def action_smooth_more(self) -> None:
        self.charts.step_smooth(1)

    def action_smooth_less(self) -> None:
        self.charts.step_smooth(-1)

    def action_log_scale(self) -> None:
        self.charts.toggle_log()

    def action_zoom_in(self) -> None:
        self.charts.zoom_by(0.5)

    def action_zoom_out(self) -> None:
        self.charts.zoom_by(2.0)

    def action_pan_back(self) -> None:
        self.charts.pan(-1)

    def action_pan_forward(self) -> None:
        self.charts.pan(1)

    def action_zoom_reset(self) -> None:
        self.charts.zoom_reset()

    def action_gpus(self) -> None:
        from moeconsole.console.screens.gpu_view import GpuScreen
        self.app.push_screen(GpuScreen(self.source, self))

    # ---- keys ---------------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys as data (``moeconsole.console.keys``): a key shows only while its conditions hold (no kill
        on a finished run, no z without a process that can be ended); process keys of a
        read-only console are shown dimmed."""
        if action == "back":
            return len(self.app.screen_stack) > 2 or _browser_behind(self.app)
        key = _RUN_KEY_BY_ACTION.get(action)
        if key is None:
            return True
        if not keys.applies(key, self._conditions):
            return False
        if self.readonly and (key.changes_process or action == "start_runner"):
            return None  # shown dimmed
        return True

    def on_key(self, event: Key) -> None:
        if self._said_over(event):
            return
        if self.readonly and ((event.key in keys.PROCESS_KEYS and self._live is not False)
                              or (event.key == keys.key_for(keys.RUN_KEYS, "start_runner") and self._stale)):
            event.stop()
            event.prevent_default()
            self.notify("read-only console: process-changing keys are disabled", severity="warning")
            return
        self._said_unmet(event)

    def _said_unmet(self, event: Key) -> None:
        """A key of the run screen pressed while what it needs does not hold (``keys.unmet_words``):
        why, instead of nothing (its binding is off then, and the press went nowhere). Not before
        the first snapshot: nothing is known yet."""
        if self.snapshot is None:
            return
        bound = [k for k in keys.RUN_KEYS if event.key in k.key.split(",")]
        if not bound or any(keys.applies(k, self._conditions) for k in bound):   # q: Detach, else Quit
            return
        said = keys.unmet_words(bound[0], self._conditions)
        if said is None:
            return
        event.stop()
        event.prevent_default()
        self.notify(said, severity="warning", timeout=8, markup=False)

    def _said_over(self, event: Key) -> bool:
        """A runner's key (k, r, v) pressed on a run that is over says why it does nothing and
        what does it instead (``keys.over_words``): the footer has no such key then, and the
        press had been silent (a newcomer pressed r on the demo they had killed: nothing)."""
        run = self._run()
        status = run.get("status")
        key = next((k for k in keys.RUN_KEYS if k.over and event.key == k.key), None)
        if key is None or status not in rundir.TERMINAL or keys.applies(key, self._conditions):
            return False
        event.stop()
        event.prevent_default()
        state = self.source.run.read_state() or {"status": status}
        # plain text: a runs directory named `runs [old-b]` is markup to notify (review R51)
        self.notify(keys.over_words(key, self.source.run, state, self._typed_ref()), severity="warning", timeout=12,
                    markup=False)
        return True

    def _typed_ref(self) -> str:
        """The run as a shell types it (``rundir.command_ref``: its short id, ``--runs-dir`` where a
        bare command would not look), the one both the banner and r name it by; found once."""
        if self._ref is None:
            self._ref = rundir.command_ref(self.base, self.source.run.run_id)[1]
        return self._ref

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
        """d: the newest active alert group (critical first): its cause, count, steps, hint; with
        none active, the newest acknowledged one (after `a` a failed run's fix is still here)."""
        from moeconsole.console.screens.dialogs import DetailScreen
        if not self.active_alerts and not self.alert_groups:
            self.notify("no alerts")
            return
        group = self.active_alerts[0] if self.active_alerts else \
            next((g for g in self.alert_groups if g.critical), self.alert_groups[0])
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
    # The control protocol and the confirmations are imported at the key that uses them (a run
    # screen that is only watched never loads them: docs/benchmarks.md, ``ui``).
    def _confirm_and_send(self, confirmation: Confirmation) -> None:
        screen = _confirm_screen(confirmation)

        def done(yes: bool | None) -> None:
            withdrawn = self._asking is None or self._asking[0] is not screen
            self._asking = None
            if yes and confirmation.machine_gone:
                self._end_elsewhere()
            elif yes:
                self._send(confirmation.request)
            elif not withdrawn:
                self.notify("cancelled: nothing was sent")
        run = self._run()
        self._asking = (screen, (run.get("status"), run.get("attempt")), fmt.state_word(run))
        self.app.push_screen(screen, done)

    def _withdraw_stale_question(self, run: dict) -> None:
        """A confirmation whose facts no longer hold is closed, nothing sent, saying why: the run
        changed status or attempt while it was open (its PIDs, "the run ends as KILLED", are of
        then). A kill dialog left open in a tmux whose client was dropped had asked, after the
        run had SUCCEEDED, to kill its old PIDs, and `y` answered "no runner is listening"
        (newcomer round 4)."""
        if self._asking is None:
            return
        screen, (status, attempt), was = self._asking
        if (run.get("status"), run.get("attempt")) == (status, attempt):
            return
        if not screen.is_current:
            return   # another screen over it: the question goes when it is back on top
        self._asking = None
        screen.dismiss(False)
        now = fmt.state_word(run)
        change = f"is {now} now (it was {was}" + (f", attempt {attempt}" if attempt is not None else "") + ")" \
            if now != was else f"started attempt {run.get('attempt')} (the question was about attempt {attempt})"
        self.notify(f"the run {change}: the question was closed, nothing was sent", severity="warning",
                    timeout=30)

    @work(thread=True, group="control")
    def _send(self, request: control.Request) -> None:
        answer = self.source.request(request)
        ok = answer.ok
        self.app.call_from_thread(self.notify, f"{request.cmd}: {answer.said}",
                                  severity="information" if ok else "error")
        self.poll_now()

    @work(thread=True, group="control")
    def _end_elsewhere(self) -> None:
        """`k` answered yes on a live run whose runner's machine is gone: the run recorded killed from here,
        nothing signalled (``killrun.end_elsewhere``, what `kill RUN --machine-gone` does); its words said."""
        ok, said = self.source.end_elsewhere(
            say=lambda words: self.app.call_from_thread(self.notify, f"kill: {words.strip()}", markup=False))
        self.app.call_from_thread(self.notify, f"kill: {said}", severity="information" if ok else "error",
                                  timeout=30, markup=False)
        self.poll_now()

    def _run(self) -> dict:
        return self.snapshot.run if self.snapshot else {"id": self.source.run.run_id}

    def action_kill(self) -> None:
        from moeconsole.console import confirmations
        self._confirm_and_send(confirmations.kill(self._run(), self.source.recipe()))

    def action_restart(self) -> None:
        from moeconsole.console import confirmations
        self._confirm_and_send(confirmations.restart(self._run(), self.source.recipe()))

    def action_verify(self) -> None:
        from moeconsole.runner.supervisor.control import Verify
        self.notify("verify: asking the runner to verify the latest checkpoint")
        self._send(Verify())

    def action_kill_zombie(self) -> None:
        blocker = self.blocker_table.selected() if self.blocker_table is not None else None
        if blocker is None:
            self.notify("no zombie or blocker process to end", severity="warning")
            return
        if not blocker.get("killable"):
            why = blocker.get("not_killable_why") or "it is not a process that may be ended"
            self.notify(f"PID {blocker.get('pid')} cannot be ended: {why}", severity="warning")
            return
        from moeconsole.console import confirmations
        self._confirm_and_send(confirmations.kill_zombie(blocker, self.source.recipe()))

    def action_browser(self) -> None:
        from moeconsole.console.screens.browser import BrowserScreen
        stack = self.app.screen_stack
        for i in range(len(stack) - 1, -1, -1):
            if isinstance(stack[i], BrowserScreen):
                for _ in range(len(stack) - 1 - i):
                    self.app.pop_screen()
                return
        if not _browser_from_first_screen(self.app):   # attach PATH: the browser it was opened with
            self.app.push_screen(BrowserScreen(self.base, scratch=self.scratch, clock=self.clock))

    def action_log(self) -> None:
        from moeconsole.console.screens.logview import LogScreen
        self.app.push_screen(LogScreen(self.source.run.log, title=f"{self._run().get('name') or ''} train.log",
                                       over=self._over))

    def _over(self) -> bool:
        """The run is over (or an imported log): no more lines come (the snapshot's status, as the charts read it)."""
        return self.snapshot is not None and self.snapshot.run.get("status") not in rundir.LIVE

    def action_help(self) -> None:
        from moeconsole.console.screens.dialogs import HelpScreen
        self.app.push_screen(HelpScreen("Run screen"))

    def action_detach(self) -> None:
        self.app.exit(0)

    def action_quit_ended(self) -> None:   # q on a run that is over: the same exit, named for what it is
        self.action_detach()

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:   # attach PATH: back to the run browser it was opened with
            _browser_from_first_screen(self.app)


def _browser_behind(app: object) -> bool:
    """The console opened on a log path (``attach PATH``) with the run browser behind this screen
    (``MoeConsole.browser_behind``; screens do not import the app)."""
    return bool(getattr(app, "browser_behind", False))


def _browser_from_first_screen(app: object) -> bool:
    """Replace ``attach PATH``'s first screen with the run browser behind it
    (``MoeConsole.browser_from_first_screen``); False: there is none."""
    take = getattr(app, "browser_from_first_screen", None)
    return bool(take()) if take is not None else False


def _set_display(widget, visible: bool) -> None:
    """Show or hide a widget; untouched when already so (every change costs a new layout)."""
    if widget.display != visible:
        widget.display = visible


def _set_text(widget: Static, text: str) -> None:
    """Replace a Static's text only when it changed (an update re-lays out the screen)."""
    if widget.content != text:
        widget.update(text)


def _gone_elsewhere(run: dict) -> bool:
    """A live run whose runner ran on another machine and whose state.json has stopped changing (the banner's
    RUNNER ELSEWHERE; not a copy of a run live elsewhere): `k` asks to record it killed (``confirmations.kill``)."""
    return bool(run.get("status") in rundir.LIVE and run.get("stale") and run.get("runner_elsewhere")
                and not run.get("copy_of"))


def _confirm_screen(confirmation):
    from moeconsole.console.screens.dialogs import ConfirmScreen
    return ConfirmScreen(confirmation)
