"""The moeconsole Textual app: a client of the runner, opened over SSH and tmux.

It shows one run (``RunScreen``) or the run browser, reads only the run directory, and steers
the runner only through its control socket. Quitting the app (``q``), a crash of the app or a
lost SSH connection changes nothing for the run. Looks live in ``console.tcss``.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.driver import Driver
from textual.notifications import Notification, Notify, SeverityLevel
from textual.screen import Screen

from moeconsole.console import keys
from moeconsole.console.screens.messages import AlertNews, OpenPath, OpenRun, ToggleBell
from moeconsole.console.source import HostSampler, RunSource, Telemetry
from moeconsole.runner.core import bounds
from moeconsole.runner.rundir import rundir

if TYPE_CHECKING:
    from moeconsole.console.foreign import Import

# Toasts sit in the bottom right corner, over the log; more than this many would climb over the
# charts. The oldest goes when a new one comes.
MAX_TOASTS = 2


def console_theme():
    """The console's colours: Textual's dark theme with every text/background pair it draws at a
    contrast of at least 4.5:1 (WCAG AA; tests/console/test_console_contrast.py measures them on
    the rendered screens): a lighter red for errors on the dark panels, a darker blue where text
    sits on the primary colour, and a dark selection (a selected CRASH row stays readable)."""
    from textual.theme import BUILTIN_THEMES, Theme
    base = BUILTIN_THEMES["textual-dark"]
    return Theme(name="moeconsole", primary="#005a9e", secondary=base.secondary, warning=base.warning,
                 error="#ff7a8f", success=base.success, accent=base.accent, foreground=base.foreground,
                 background=base.background, surface=base.surface, panel=base.panel, boost=base.boost,
                 dark=True, luminosity_spread=base.luminosity_spread, text_alpha=base.text_alpha,
                 variables={"block-cursor-background": "#163354", "block-cursor-foreground": "#ffffff",
                            "block-cursor-blurred-background": "#1f2a36"})


class MoeConsole(App[int]):
    """The app returns the exit code of ``moeconsole attach`` (0: detached)."""
    CSS_PATH = "console.tcss"
    TITLE = "moeconsole"
    ENABLE_COMMAND_PALETTE = False
    # Ctrl-Z suspends the console to the shell (`fg` brings it back, repainted); Textual reads the
    # key itself (the terminal's ISIG is off), so without this binding it did nothing. The run
    # goes on meanwhile, as when detached.
    BINDINGS = [Binding("ctrl+z", "suspend_process", show=False, system=True)]

    def __init__(self, base: Path, run: rundir.RunDir | None = None, *, readonly: bool = False,
                 gpu: bool = True, interval: float = bounds.REFRESH_S, control_timeout: float = 10.0,
                 telemetry: Telemetry | None = None, clock: Callable[[], float] | None = None,
                 bell: bool | None = None, open_path: Path | None = None, host: HostSampler = True,
                 line_format: Any = None, trim_caches_s: float | None = None, note: str | None = None) -> None:
        """``open_path``: a log or directory not made by moeconsole to open first (``attach PATH``);
        ``line_format``: its declared line format (``attach PATH --log-format``);
        ``trim_caches_s``: how often Rich's and Textual's drawing caches are emptied and the
        freed heap given back (None: ``lean.TRIM_CACHES_EVERY_S``)."""
        from moeconsole.console.lean import known_key_characters, lines_without_cycles, updates_by_rows
        known_key_characters()   # the binding chain's key characters without Unicode's name tables
        lines_without_cycles()   # a drawn line freed when the next refresh replaces it
        updates_by_rows()   # a refresh draws the rows it changed, not every widget between them
        super().__init__()
        self.first_path = open_path
        self.first_note = note   # said once the first screen is up (``attach.others_live_note``)
        self.line_format = line_format
        self.trim_caches_s = trim_caches_s
        self._imports: list[Import] = []
        self._signals_before: dict[int, object] = {}   # the handlers _leave_on_signals took over
        self.held: HeldSignals | None = None   # LEAVE_ON caught before on_mount (run_app's)
        self.signalled: int | None = None      # the LEAVE_ON signal the app left on
        # The terminal bell for a new critical alert: on unless MOECONSOLE_BELL=0 or --no-bell;
        # the `m` key toggles it while attached.
        self.bell_on = bell_enabled() if bell is None else bell
        # The wall clock of the quiet-time indicator (tests pin it so screens do not depend on time).
        self.clock = clock
        self.base = Path(base)
        self.first_run = run
        self.readonly = readonly
        self.gpu = gpu
        self.interval = interval
        self.control_timeout = control_timeout
        self.telemetry = telemetry
        self.host = host   # the host line's sampler (True: this host's; see RunSource)
        self.animation_level = "none"
        theme, start = console_theme(), self.current_theme
        self.register_theme(theme)
        if (theme.dark, theme.ansi) == (start.dark, start.ansi):
            # The theme from the start, in the first parse of the CSS. Setting ``self.theme`` runs
            # Textual's watcher (textual/app.py ``_watch_theme``), which queues ``refresh_css``: a
            # second parse of console.tcss and of every widget's CSS before the first frame (about
            # 8 ms of CPU). Its other work is done here: the theme classes, and the variables the
            # first parse reads; its ANSI filter is the one made for the starting theme (as dark,
            # as native-ANSI as this one: Textual's dark theme, unless TEXTUAL_THEME says otherwise).
            self.set_reactive(MoeConsole.theme, theme.name)
            self.update_classes({f"-theme-{theme.name}": True, "-dark-mode": theme.dark,
                                 "-light-mode": not theme.dark}, update=False)
            self.stylesheet.set_variables(self.get_css_variables())
        else:
            self.theme = theme.name
        self._scratch: Path | None = None
        # attach PATH: the run browser is what escape (or `b`) brings from the log's screen; it is
        # made then, not beneath the log's screen before its first frame (composing it took about
        # a fifth of the first frame's CPU)
        self._browser_beneath = False
        self._alert_note: Notification | None = None
        # The run whose screen was opened last: what a user leaves when the console closes.
        self.last_run: rundir.RunDir | None = None

    @property
    def _background_screens(self) -> list[Screen]:
        """The screens that show through the top one. Textual lists the first opaque one below
        even when the top screen is opaque itself: that screen then counts as visible, renders
        itself whole on every message it gets and repaints the top screen whole each time (the
        run screen under the GPU view, once a second). Under an opaque screen nothing shows."""
        try:
            top = self.screen
        except Exception:  # no screen yet
            return []
        if top.styles.background.a >= 1:
            return []
        return super()._background_screens

    def get_driver_class(self) -> type[Driver]:
        """Textual's terminal driver; when the terminal cannot show UTF-8 (``glyphs.ascii_only``:
        the locale names none, as tmux decides), one that writes every frame in ASCII
        (``glyphs.to_ascii``: the charts stay charts instead of tmux's rows of ``_``)."""
        driver = super().get_driver_class()
        from moeconsole.console import glyphs
        # tmux's answer not in yet (a busy server): the locale rule draws the first frame, never
        # held back for it; the answer decides when it comes (``_tmux_answered``). It had been
        # waited for here, in the App's constructor, before anything was drawn.
        glyphs.ask_tmux_early()   # a process that did not ask it early (a test, an embedding program)
        pending = glyphs.tmux_pending()
        glyphs.draw_ascii(glyphs.ascii_only(wait=False))
        if not glyphs.DRAWING_ASCII[0] and not pending:
            return driver

        def write(self: Any, data: str) -> None:
            driver.write(self, glyphs.to_ascii(data) if glyphs.DRAWING_ASCII[0] else data)
        return type(f"{'Asking' if pending else 'Ascii'}{driver.__name__}", (driver,), {"write": write})

    @work(thread=True, group="tmux-utf8")
    def _wait_for_tmux(self) -> None:
        """tmux's answer to the early question, waited for off the UI (``glyphs.tmux_pending``)."""
        from moeconsole.console import glyphs
        ascii = glyphs.ascii_only()
        self.call_from_thread(self._tmux_answered, ascii)

    def _tmux_answered(self, ascii: bool) -> None:
        """Draw as tmux said from now on: every cell again when that is not what the locale rule
        drew (a client attached from ``LANG=C`` to a server started from a UTF-8 login)."""
        from moeconsole.console import glyphs
        if ascii == glyphs.DRAWING_ASCII[0]:
            return
        glyphs.draw_ascii(ascii)
        if ascii:
            glyphs.whole_cell_scrollbars()
        self.refresh(layout=True)

    @on(Driver.SignalResume)
    def _repaint_after_fg(self) -> None:
        """Back from Ctrl-Z (`fg`): every cell again. Textual repaints after its own ``suspend()``
        but not after SIGCONT, and the console writes only the rows a refresh changed
        (``lean.updates_by_rows``): after `clear; fg` the footer and every still row stayed
        blank, the keys shown nowhere (newcomer round 7; the tmux test had passed by luck)."""
        self.refresh(layout=True)

    def action_help_quit(self) -> None:
        """Ctrl-C (bound by Textual, which quits only with ctrl+q): says which key leaves this
        screen and what leaving does, in the words of the help (``keys.help_of``): "q Detach: ...
        The run and its runner go on". Textual's own text named ctrl+q, a key shown nowhere, and
        did not say whether the run would stop."""
        for key in ("q", "escape"):
            active = self.screen.active_bindings.get(key)
            if active is not None and active.enabled:
                binding = active.binding
                shown, said = binding.key_display or key, keys.help_of(key, binding.action)
                more = f": {said}" if said and said.rstrip(".") != binding.description else ""
                self.notify(f"{shown} {binding.description}{more}", title="Ctrl-C stops nothing here")
                return

    # SIGTERM, and SIGHUP where the terminal outlives it (`kill PID` from another pane, a session
    # manager): Python's default ends the process on the spot, leaving the terminal in the
    # alternate screen with mouse reporting on, the cursor hidden and echo off, and no word on how
    # to come back (newcomer round 8). Handled as `q`: the terminal restored, the run goes on.
    # A terminal that hung up (its SSH connection or tmux server gone) has nothing to restore, and
    # Textual's writer can block on it for good: the signal's default action then, as before.
    LEAVE_ON = ("SIGTERM", "SIGHUP")

    def _signalled(self, sig: int) -> None:
        if not terminal_alive():
            # hung up (the kernel's hung-up tty answers every ioctl with EIO), or no terminal at
            # all: the signal goes to the handler that was there before ours (its default action,
            # or a test runner's handler that ends what the tests started), as before
            self._leave_on_signals(False)
            os.kill(os.getpid(), sig)
            return
        self.signalled = int(sig)
        self.exit(128 + int(sig))

    def _leave_on_signals(self, install: bool) -> None:
        """Take LEAVE_ON over while the app runs, and give each back as it was (review R70: asyncio's
        ``remove_signal_handler`` leaves SIG_DFL, which dropped a ``nohup``'s SIG_IGN and pytest's
        handler that runs the teardowns). A signal ignored on entry (nohup) stays ignored, the
        rule of ``commands/run.py`` ``_interrupt_after``."""
        import asyncio
        import signal
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        if not install:
            for taken, before in list(self._signals_before.items()):
                del self._signals_before[taken]
                try:
                    loop.remove_signal_handler(taken)
                    signal.signal(taken, before if before is not None else signal.SIG_DFL)   # type: ignore[arg-type]
                except (NotImplementedError, RuntimeError, ValueError):   # not the main thread, not Unix
                    pass
            return
        for name in self.LEAVE_ON:
            sig = getattr(signal, name, None)
            if sig is None or int(sig) in self._signals_before:
                continue
            try:
                before = signal.getsignal(sig)
                if before is signal.SIG_IGN:
                    continue
                loop.add_signal_handler(sig, self._signalled, int(sig))
                self._signals_before[int(sig)] = before
            except (NotImplementedError, RuntimeError, ValueError):   # not the main thread, not Unix
                pass

    def on_mount(self) -> None:
        self._leave_on_signals(True)
        if self.held is not None and self.held.caught:
            # a signal between the start and now (the terminal already in application mode, the
            # loop's handlers not yet installed), held by ``HeldSignals``: answered as one after
            self._signalled(self.held.caught[0])
        from moeconsole.console.lean import TRIM_CACHES_EVERY_S, trim_memory
        # Rich's and Textual's caches of what was drawn, emptied now and then, and the freed heap
        # given back: otherwise a console attached for days holds them (console/lean.py)
        self.set_interval(self.trim_caches_s or TRIM_CACHES_EVERY_S, trim_memory)
        from moeconsole.console import glyphs
        if glyphs.DRAWING_ASCII[0]:
            glyphs.whole_cell_scrollbars()
        if self.driver_class.__name__.startswith("Asking"):
            self._wait_for_tmux()
        if self.first_run is not None:
            self.open_run(self.first_run)
            if self.first_note:
                self.notify(self.first_note, timeout=20)
        else:
            if self.first_path is not None:
                # the log's screen paints first; the browser comes when the user leaves it
                self._browser_beneath = True
                self.open_foreign(self.first_path)
            else:
                self._push_browser()

    def _push_browser(self) -> None:
        from moeconsole.console.screens.browser import BrowserScreen
        self._browser_beneath = False
        self.push_screen(BrowserScreen(self.base, scratch=self.scratch_dir, clock=self.clock))

    @property
    def browser_behind(self) -> bool:
        """``attach PATH``'s first screen: the run browser is behind it (made when asked for)."""
        return self._browser_beneath and len(self.screen_stack) == 2

    def browser_from_first_screen(self) -> bool:
        """``attach PATH``: the log's screen was opened with the run browser behind it; replace
        that screen with the browser (escape or `b` on it) and say so. False for any other screen
        (then there is no browser behind it to return to)."""
        if not self.browser_behind:
            return False
        from moeconsole.console.screens.browser import BrowserScreen
        self._browser_beneath = False
        self.switch_screen(BrowserScreen(self.base, scratch=self.scratch_dir, clock=self.clock))
        return True

    def on_open_run(self, message: OpenRun) -> None:
        self.open_run(message.run, message.importing)

    def on_open_path(self, message: OpenPath) -> None:
        self.open_foreign(message.path)

    def on_toggle_bell(self, message: ToggleBell) -> None:
        self.bell_on = not self.bell_on
        self.notify("bell on for new critical alerts" if self.bell_on else "bell off")

    def on_alert_news(self, message: AlertNews) -> None:
        self.toast_alert(message.text, title=message.title, severity=message.severity)
        if message.critical and self.bell_on:
            self.bell()

    def open_run(self, run: rundir.RunDir, importing: Import | None = None) -> None:
        """Show a run: live runs with GPU telemetry and the process keys, past runs without.
        ``importing``: the import reading a foreign log's history (started here)."""
        from moeconsole.console.screens.run import RunScreen
        self.last_run = run
        live = run.read_state().get("status") in rundir.LIVE
        source = RunSource(run, gpu=self.gpu and live, telemetry=self.telemetry,
                           control_timeout=self.control_timeout, importing=importing, host=self.host)
        # another user's run (root reads every run) is theirs to steer: its screen changes no process
        readonly = self.readonly or rundir.other_owner(run) is not None
        self.push_screen(RunScreen(source, base=self.base, scratch=self.scratch_dir, readonly=readonly,
                                   interval=self.interval, clock=self.clock))
        if importing is not None:   # the screen starts its history read after its first frame
            self._imports.append(importing)

    @work(thread=True, exclusive=True, group="open-foreign")
    def open_foreign(self, path: Path) -> None:
        """Open a log not made by moeconsole: its newest steps at once, its history read in the
        background (a progress bar on the run screen)."""
        from moeconsole.console.foreign import start_import
        try:
            run, importing = start_import(Path(path).expanduser(), self.scratch_dir(), self.line_format)
            if importing is not None:   # its second reading process starts now, not after the first frame
                importing.start_part()
        except Exception as exc:  # InputError and unreadable files: one line, keep the browser
            if self._browser_beneath:
                self.call_from_thread(self._push_browser)
            self.call_from_thread(self.notify, str(exc), severity="error")
            return
        self.call_from_thread(self.open_run, run, importing)

    def _on_notify(self, event: Notify) -> None:
        """Every toast goes through here: at most MAX_TOASTS on screen, the oldest dropped; each
        plain text, never markup (Textual's ``notify`` reads markup by default: a log search for
        `[rank3]` said "'' not found", one for `[/x]` showed no toast at all, the log view's
        `R` lost the `[rankN]:` it names, a path or an error's text likewise: newcomer round 11;
        no toast of the console is written in markup)."""
        event.notification.markup = False
        shown = list(self._notifications)
        for old in shown[: max(0, len(shown) - MAX_TOASTS + 1)]:
            self._unnotify(old, refresh=False)
        super()._on_notify(event)

    def toast_alert(self, message: str, *, title: str, severity: SeverityLevel, timeout: float = 10.0) -> None:
        """The alert toast: one at a time, a new one replaces the last (call on the UI thread)."""
        if self._alert_note is not None:
            self._unnotify(self._alert_note, refresh=False)
        self._alert_note = Notification(message, title, severity, timeout, markup=False)
        self.post_message(Notify(self._alert_note))

    def scratch_dir(self) -> Path:
        """Where logs not made by moeconsole are ingested; removed when the app ends."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="moeconsole-open-"))
        return self._scratch

    def on_unmount(self) -> None:
        self._leave_on_signals(False)
        for importing in self._imports:
            importing.cancel()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)


def terminal_alive() -> bool:
    """Whether this process's terminal still answers (a hung-up tty answers every ioctl with EIO;
    none at all, a pipe, neither)."""
    import sys
    import termios
    try:
        termios.tcgetattr(sys.__stdout__.fileno() if sys.__stdout__ else 1)
    except (OSError, termios.error, ValueError):
        return False
    return True


class HeldSignals:
    """The console's LEAVE_ON signals from before ``App.run`` until the app's loop takes them over
    (``on_mount``), and again while it winds down after ``on_unmount`` gave them back: Textual puts
    the terminal in application mode (the alternate screen, mouse reporting, the cursor hidden)
    before the first mount, and a SIGTERM there (`kill PID` right after the start, newcomer round
    10) took Python's default and left the pane so. Held ones are answered by the app when its
    handlers are in (``MoeConsole.on_mount``); on leaving, the handlers that were there before are
    put back. A signal ignored on entry (nohup) stays ignored; one whose terminal hung up gets the
    handler from before at once, as ``_signalled`` does (nothing to restore, and the app could block
    writing to it)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.caught: list[int] = []
        self._before: dict[int, Any] = {}

    def _catch(self, signum: int, _frame: Any) -> None:
        if not terminal_alive():
            self.__exit__()
            os.kill(os.getpid(), signum)
            return
        self.caught.append(int(signum))

    def __enter__(self) -> "HeldSignals":
        import signal
        for name in self.names:
            sig = getattr(signal, name, None)
            if sig is None:
                continue
            try:
                before = signal.getsignal(sig)
                if before is signal.SIG_IGN:
                    continue
                signal.signal(sig, self._catch)
                self._before[int(sig)] = before
            except ValueError:   # not the main thread
                pass
        return self

    def __exit__(self, *_exc: object) -> None:
        import signal
        for sig, before in list(self._before.items()):
            del self._before[sig]
            signal.signal(sig, before if before is not None else signal.SIG_DFL)


def bell_enabled(environ=None) -> bool:
    """MOECONSOLE_BELL=0 (or off/no/false) silences the bell for critical alerts."""
    value = (environ if environ is not None else os.environ).get("MOECONSOLE_BELL", "1")
    return value.strip().lower() not in ("0", "off", "no", "false")


def run_app(base: Path, run: rundir.RunDir | None = None, *, readonly: bool = False, gpu: bool = True,
            bell: bool | None = None, open_path: Path | None = None, line_format: Any = None,
            note: str | None = None) -> int:
    """Open the UI on ``run`` (or the browser, or a foreign log) and block until the user detaches;
    ``note``: a notification to show on opening (``attach.others_live_note``)."""
    app = MoeConsole(base, run, readonly=readonly, gpu=gpu, bell=bell, open_path=open_path,
                     line_format=line_format, note=note)
    with HeldSignals(MoeConsole.LEAVE_ON) as app.held:
        result = app.run()
    if app.held.caught and app.signalled is None:
        # caught while the app wound down (after on_unmount gave the loop's handlers back): it left
        # anyway, the terminal restored; the exit status still says the signal
        result = 128 + app.held.caught[0]
    try:
        left_runs(app)
    except OSError:   # a terminal hung up under us (SIGHUP): nobody is there to read the line
        pass
    return int(result or 0) if isinstance(result, int) else (app.return_code or 0)


def left_runs(app: MoeConsole) -> None:
    """The console closed: the line of each live run it leaves (``left_live``): the run it was opened on
    (``first_run``), and the one on screen last when that is another. Only the last one's had been said:
    `q` on a killed run opened from the browser said nothing of the PAUSED run `run` had started and
    the console was opened on (newcomer round 13)."""
    left_live(app.first_run)
    if app.last_run is not None and (app.first_run is None or app.last_run.path != app.first_run.path):
        left_live(app.last_run)


def left_live(run: rundir.RunDir | None) -> None:
    """After the console closed on a run that goes on under its runner: one line on stderr with
    the commands that watch it again and stop it (the screen is gone; a newcomer had only the
    run id `run` printed before the UI, and no word on how to come back)."""
    if run is None:
        return
    from moeconsole.runner.process.launch import runner_alive
    state = run.read_state()
    if state.get("status") in rundir.LIVE and runner_alive(run, state):
        import sys
        from moeconsole.console.format import leaving_words
        from moeconsole.console.format import run_words
        ref, typed = rundir.command_ref(run.path.parent, run.run_id)
        from moeconsole.console.own_command import path_note
        sys.stderr.write(f"{run_words(ref, run.run_id)} {leaving_words(typed, state.get('status'))}\n{path_note()}")
