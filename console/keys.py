"""Key bindings as data: one table per screen. The footer, the screens' ``BINDINGS`` and the
help screen are all generated from these tables, so they cannot disagree.

Keys are plain letters, digits, arrows, enter/escape, Home/End/PgUp/PgDn and F-keys: what survives
tmux over SSH. A key means one thing in every screen, or nothing there (``g``: the GPU view; it had also been
the run browser's reload and the log view's first line; ``m`` the bell, once also the comparison's
metric, now ``c`` as the charts; ``c`` had also been the browser's compare, now ``x``, whose
align moved to ``t``; ``s`` the browser's sort, once also the run screen's start runner, now
``u``; ``d`` the run screen's alert, once also the chart picker's defaults, now ``0`` as the
charts' whole-run view): ``more_than_one_meaning`` checks it. A dialog's y/n and the ways out (q, escape)
are the exceptions.
``changes_process`` marks the keys that ask the runner to signal processes; they always go
through a confirmation naming the PIDs and the escalation timer, and ``--readonly`` disables
them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType

if TYPE_CHECKING:
    from moeconsole.runner.rundir.rundir import RunDir


@dataclass(frozen=True)
class Key:
    key: str            # Textual key name ("k", "question_mark", "enter", "escape")
    action: str         # action name on the screen (without "action_")
    label: str          # footer text
    help: str           # one sentence for the help screen
    changes_process: bool = False
    show: bool = True   # in the footer
    display: str = ""   # how the help screen writes the key ("?" for question_mark)
    needs: tuple[str, ...] = ()  # run conditions (see ``run_conditions``) under which the key applies
    unless: tuple[str, ...] = ()  # run conditions under which it does not (one key, two labels: q)
    # What the key says, pressed on a run that is over (no runner to ask: the footer has no such
    # key, and the press had done nothing, without a word: newcomer round 5): ``over_words``.
    over: str = ""
    # the same of a run that watches no checkpoint directory (no ``checkpoint_root`` in its state.json)
    over_unwatched: str = ""
    # before the focused widget's own binding of the key (a dialog's Ctrl-C, over its text field's copy)
    priority: bool = False

    @property
    def shown_key(self) -> str:
        return self.display or self.key

    def binding(self) -> Binding:
        """The Textual binding. A one-character key is shown as itself (what Textual's
        ``format_key`` makes of it too, but only after ``unicodedata.lookup`` of the character as
        a name, a miss that reads pages of Python's Unicode name tables: 0.2 MiB less resident
        memory measured for the run screen's footer)."""
        shown = self.display or (self.key if len(self.key) == 1 else None)
        return Binding(self.key, self.action, self.label, show=self.show, key_display=shown, priority=self.priority)


# Conditions of the run screen that decide which keys apply (``run_conditions``): a runner is
# there to ask; the runner is gone from a live run; alerts are active; the run had an alert (active
# or acknowledged); a listed process can be ended; the run is not live (it ended, or it is an
# imported log): nothing is attached to, so leaving the console quits rather than detaches. The run can
# be ended from here (``KILLABLE``): a runner is there to ask, or the live run's runner ran on another
# machine and state.json has stopped changing (``ELSEWHERE``: `kill --machine-gone`, round 30).
RUNNER, STALE, ALERTS, ANY_ALERT, ZOMBIES, ENDED = "runner", "stale", "alerts", "any_alert", "zombies", "ended"
ELSEWHERE, KILLABLE = "elsewhere", "killable"


def run_conditions(*, runner: bool, stale: bool, alerts: bool, killable: bool,
                   any_alert: bool = False, ended: bool = False, elsewhere: bool = False) -> frozenset[str]:
    """The conditions that hold now; a key applies when all of its ``needs`` hold and none of
    its ``unless``."""
    return frozenset(name for name, on in ((RUNNER, runner), (STALE, stale), (ALERTS, alerts),
                                           (ANY_ALERT, any_alert or alerts),
                                           (ZOMBIES, killable and runner), (ENDED, ended),
                                           (ELSEWHERE, elsewhere), (KILLABLE, runner or elsewhere)) if on)


# Conditions of the run browser (``browser_conditions``): runs are listed (open, mark, compare and
# sort have something to act on); the list can be filtered (runs are listed, or a filter that
# matched none is set: `/` changes it).
# A screen is behind the browser (it was opened from a run): escape goes back to it; on the first
# screen there is nothing to go back to, and escape closes the console like q (its footer said
# "esc Back" there).
ROWS, FILTERABLE, BEHIND = "rows", "filterable", "behind"


def browser_conditions(*, rows: bool, filtered: bool, behind: bool = False) -> frozenset[str]:
    """The run browser's conditions that hold now (an empty index, the first screen: none)."""
    return frozenset(name for name, on in ((ROWS, rows), (FILTERABLE, rows or filtered), (BEHIND, behind)) if on)


def applies(key: Key, conditions: frozenset[str]) -> bool:
    return set(key.needs) <= conditions and not set(key.unless) & conditions


# Ctrl-C in a dialog answers it as Esc does (a question: no, nothing sent; a prompt: left as it
# was): Textual stops the app's bindings at a modal screen, so the app's Ctrl-C (which says how to
# leave a screen) never reached one, and the press did nothing there, without a word (newcomer
# round 11). One binding for every dialog: ``CTRL_C``.
CTRL_C = "ctrl+c"

RUN_KEYS: tuple[Key, ...] = (
    Key("k", "kill", "Kill", "Clean kill: SIGTERM to the whole training tree, wait the recipe's grace period, "
        "then SIGKILL what is left. No restart.", changes_process=True, needs=(KILLABLE,),
        over="no process of it is left to end"),
    Key("r", "restart", "Restart", "Wait-and-restart: clean kill, cool down until no process of the old tree is "
        "left, GPU memory is released and the rendezvous port is free, then restart from the latest verified "
        "checkpoint. On a PAUSED run: resume the same way.", changes_process=True, needs=(RUNNER,),
        over="in a shell, {restart}"),
    Key("v", "verify", "Verify", "Ask the runner to verify the latest checkpoint now (reads files, signals nothing).",
        needs=(RUNNER,), over="in a shell, `moeconsole verify {ref}` verifies its newest checkpoint",
        # `verify RUN` of such a run finds nothing and names DIR (commands/verify.py ``_summary``): newcomer round 13
        over_unwatched="it names no checkpoints.dir: in a shell, `moeconsole verify DIR` verifies the directory "
                       "its command saves into"),
    Key("z", "kill_zombie", "Zombie", "End the selected zombie/blocker process (the runner checks its start time "
        "first, so a reused PID is never hit). Offered only while a listed process can be ended.",
        changes_process=True, needs=(ZOMBIES,)),
    Key("a", "acknowledge", "Ack", "Acknowledge the active alerts, in every console attached to the run: they "
        "leave the alert bar (kept in the run directory's acks.json, so they stay acknowledged when you attach "
        "again; a newer alert of the same cause opens them again).", needs=(ALERTS,)),
    Key("d", "alert_details", "Alert", "Open the newest active alert: its cause, how often and at which steps "
        "it fired, the evidence, and for a crash its report and hint. (The alert bar names it.) With none "
        "active, the newest acknowledged one (a failed run's fix stays one key away after `a`).",
        needs=(ANY_ALERT,), show=False),
    Key("enter", "details", "Details", "Open the highlighted event: full text, evidence, crash report and "
        "hint, checkpoint verdict.", show=False),
    # u, not s: s sorts the run browser, and a key means one thing in every screen
    Key("u", "start_runner", "Start runner", "Only when the runner is gone: start a new runner for this run "
        "(the same as `moeconsole supervise RUN`); it adopts the training if it still runs.", needs=(STALE,)),
    Key("e", "smooth_more", "Smooth", "More smoothing: the charts draw an EMA (0.6, 0.8, 0.9, 0.95, 0.99) over "
        "the faint raw line; the title says EMA and its weight.", show=False),
    Key("E", "smooth_less", "Less smooth", "Less smoothing (down to none).", show=False),
    Key("y", "log_scale", "Log y", "Log scale for the y axis of the charts (those whose values are all "
        "positive; memory against its capacity stays linear).", show=False),
    Key("plus,equals_sign", "zoom_in", "Zoom in", "Zoom the charts in to half the steps shown, around the "
        "newest step (or the middle of a zoomed range). The mouse wheel over a chart zooms around the step "
        "under it; a drag across a chart zooms to the steps it spans.", show=False, display="+"),
    Key("minus", "zoom_out", "Zoom out", "Zoom the charts out to twice the steps shown.", show=False, display="-"),
    Key("less_than_sign,comma", "pan_back", "Earlier", "Move the zoomed range back by half its width.",
        show=False, display="<"),
    Key("greater_than_sign,full_stop", "pan_forward", "Later", "Move the zoomed range forward by half its "
        "width.", show=False, display=">"),
    Key("0", "zoom_reset", "Whole run", "Show the whole run again (no zoom).", show=False),
    Key("b", "browser", "Runs", "Open the run browser (all runs from the index)."),
    Key("l", "log", "Log", "Full log of the run, with search."),
    Key("m", "toggle_bell", "Bell", "Turn the terminal bell for new critical alerts and crashes off or on "
        "(off from the start with MOECONSOLE_BELL=0 or --no-bell).", show=False),
    Key("tab", "app.focus_next", "Next pane", "Move the selection to the next pane (zombie list, events).",
        show=False),
    Key("question_mark", "help", "Help", "This help.", display="?"),
    Key("q", "detach", "Detach", "Close the console. The run and its runner go on; attach again at any time.",
        unless=(ENDED,)),
    Key("q", "quit_ended", "Quit", "On a run that is over (succeeded, failed, killed) or an imported log: close "
        "the console (nothing is attached to).", needs=(ENDED,)),
    # last in the footer: on an 80-column terminal with every key above shown, these two are the
    # ones left out whole (widgets.footer.KeyFooter; they stay in the help and always work)
    Key("c", "charts", "Charts", "Choose the charts: every metric the log carries (token accuracy, eval loss, "
        "learning rate, tokens/s, step time, MoE load-balancing loss, reward, ...) in a list, / filters it. "
        "The choice is kept for the recipe (chart-prefs.json in the runs directory)."),
    Key("g", "gpus", "GPUs", "GPU view: per GPU, which rank of the run holds how much memory and its "
        "utilisation (beside other processes), the GPU history of the whole run, host CPU, RAM and disk I/O."),
)

BROWSER_KEYS: tuple[Key, ...] = (
    Key("enter", "open_run", "Open", "Open the selected run: charts, events, crashes, checkpoints (live runs "
        "attach).", needs=(ROWS,)),
    Key("space", "mark", "Mark", "Mark or unmark the run for comparison (any number of runs).",
        needs=(ROWS,)),
    # x, not c: c chooses the charts (the run screen) and the metric (the comparison) everywhere else
    Key("x", "compare", "Compare", "Compare the marked runs (or the marked run and the selected one), live while "
        "they train.", needs=(ROWS,)),
    Key("slash", "filter", "Filter", "Filter by name or id; 'status:failed' filters by status, 'since:2d' (or since:2026-11-20) by start.", display="/",
        needs=(FILTERABLE,)),
    Key("s", "sort", "Sort", "Sort by the next column (again to cycle).", needs=(ROWS,)),
    Key("S", "reverse", "Reverse", "Reverse the sort order.", show=False, needs=(ROWS,)),
    Key("o", "open_path", "Open path", "Open a log or directory not made by moeconsole (swift output dir, "
        "Megatron log, logging.jsonl)."),
    # F5, not g: g is the GPU view on the run screen, and one key means one thing in every screen
    Key("f5", "reload", "Reload", "Reload the index now (the list also follows it by itself at the console's refresh period).", show=False,
        display="F5"),
    Key("question_mark", "help", "Help", "This help.", display="?"),
    Key("escape", "back", "Back", "Back to the previous screen.", needs=(BEHIND,)),
    Key("escape", "quit_first", "Quit", "On the first screen: close the console, as q does.", unless=(BEHIND,),
        show=False),
    Key("q", "quit_app", "Quit", "Close the console (runs go on)."),
)

LOG_KEYS: tuple[Key, ...] = (
    Key("slash", "search", "Search", "Search the whole log (plain text, case-insensitive).", display="/"),
    Key("n", "next_match", "Next", "Next match."),
    Key("N", "prev_match", "Prev", "Previous match."),
    Key("f", "follow", "Follow", "Follow the end of the log as it grows (on by default)."),
    Key("w", "wrap", "Wrap", "Wrap long lines (a line takes the rows it needs) or scroll them sideways (the "
        "default)."),
    Key("right", "pan_right", "Pan", "Scroll long lines to the right by a third of the width (line numbers "
        "stay); left goes back.", display="→"),
    Key("left", "pan_left", "Pan left", "Scroll long lines back to the left.", show=False, display="←"),
    Key("R", "ranks", "Ranks", "The ranks of a multi-node run in one log, merged by the time each line carries, "
        "each line with its rank: torchrun's per-rank files (--log-dir), else train.log's [rankN]: / srun "
        "--label prefixes. R again: the plain log."),
    # Home/End, not g/G: g is the GPU view on the run screen, and one key means one thing in every screen
    Key("home", "top", "Top", "Go to the first line (following stops; f follows again).", show=False,
        display="Home"),
    Key("end", "bottom", "Bottom", "Go to the last line.", show=False, display="End"),
    Key("question_mark", "help", "Help", "This help.", display="?"),
    Key("escape", "back", "Back", "Back to the run."),
)

COMPARE_KEYS: tuple[Key, ...] = (
    # c, as the run screen's charts: m is the run screen's bell, and a key means one thing everywhere
    Key("c", "metric", "Metric", "Choose the metric the runs are overlaid on (any metric the logs carry; / "
        "filters the list), as c chooses the charts on the run screen."),
    # t, not x: x compares the marked runs in the run browser
    Key("t", "align", "Step/time", "Align the runs by step or by wall time since each run started."),
    Key("e", "smooth_more", "Smooth", "More smoothing (EMA) of every run's line.", show=False),
    Key("E", "smooth_less", "Less smooth", "Less smoothing.", show=False),
    Key("y", "log_scale", "Log y", "Log scale for the y axis.", show=False),
    Key("plus,equals_sign", "zoom_in", "Zoom in", "Zoom in to half the range shown.", show=False, display="+"),
    Key("minus", "zoom_out", "Zoom out", "Zoom out to twice the range shown.", show=False, display="-"),
    Key("less_than_sign,comma", "pan_back", "Earlier", "Move the zoomed range back.", show=False, display="<"),
    Key("greater_than_sign,full_stop", "pan_forward", "Later", "Move the zoomed range forward.", show=False,
        display=">"),
    Key("0", "zoom_reset", "Whole run", "Show the whole range again.", show=False),
    Key("question_mark", "help", "Help", "This help.", display="?"),
    Key("escape", "back", "Back", "Back to the run browser.", show=False),
    Key("q", "back", "Back", "Leave the comparison (back to the run browser)."),
)

PICKER_METRIC_KEYS: tuple[Key, ...] = (
    Key("space", "mark_metric", "Mark", "Chart picker: mark or unmark the highlighted metric (charts follow the order "
        "of marking). Compare: choose it."),
    Key("enter", "apply", "Show", "Show the marked charts (compare: the highlighted metric)."),
    Key("slash", "filter", "Filter", "Filter the list by words of the metric's name.", display="/"),
    # 0, not d: d opens the newest alert on the run screen; 0 is "back to the default view" there too
    Key("0", "defaults", "Defaults", "Back to the default charts (loss, grad norm, memory, eval loss)."),
    Key("escape", "cancel", "Cancel", "Leave without a change (in the filter: back to the list)."),
    Key(CTRL_C, "cancel", "Cancel", "Leave without a change.", show=False, display="Ctrl-C", priority=True),
)

GPU_KEYS: tuple[Key, ...] = (
    Key("question_mark", "help", "Help", "This help.", display="?"),
    Key("escape", "back", "Back", "Back to the run.", show=False),
    Key("q", "back", "Back", "Back to the run."),
)

CONFIRM_KEYS: tuple[Key, ...] = (
    Key("y", "confirm", "Yes, do it", "Confirm the action named in the dialog."),
    Key("n", "cancel", "Cancel", "Cancel."),
    Key("escape", "cancel", "Cancel", "Cancel.", show=False),
    Key(CTRL_C, "cancel", "Cancel", "Cancel, as at a shell's prompt (nothing is sent).", show=False, display="Ctrl-C",
        priority=True),
)

PICKER_KEYS: tuple[Key, ...] = (
    Key("enter", "choose", "Choose", "Choose the selected process."),
    Key("escape", "cancel", "Cancel", "Cancel."),
)

SCREENS: tuple[tuple[str, tuple[Key, ...]], ...] = (
    ("Run screen", RUN_KEYS),
    ("Run browser", BROWSER_KEYS),
    ("Compare", COMPARE_KEYS),
    ("Metric picker", PICKER_METRIC_KEYS),
    ("GPU view", GPU_KEYS),
    ("Log view", LOG_KEYS),
    ("Confirmation", CONFIRM_KEYS),
    ("Zombie list", PICKER_KEYS),
)

# Actions that are one meaning under two names: choosing what the charts show (the run screen's
# charts, the comparison's metric), the charts' default view (the whole run; the default charts),
# marking in a list, and narrowing a list or a log to what matches.
SAME_MEANING: tuple[frozenset[str], ...] = (
    frozenset({"charts", "metric"}), frozenset({"zoom_reset", "defaults"}),
    frozenset({"mark", "mark_metric"}), frozenset({"filter", "search"}),
)
# The exceptions: a dialog's own keys (y/n, Enter chooses) and the ways out and in (q, Esc, ?,
# Enter opens what is selected, Tab the next pane).
_ANY_MEANING = frozenset({"q", "escape", "question_mark", "enter", "tab", CTRL_C})
_DIALOGS = ("Confirmation", "Zombie list")


def _meaning(action: str) -> str:
    return next((min(group) for group in SAME_MEANING if action in group), action)


def more_than_one_meaning() -> dict[str, set[str]]:
    """The keys that mean two things in two screens (none: a newcomer who learnt `s` as the
    browser's sort pressed it on the run screen and started a runner), key -> its actions."""
    meanings: dict[str, set[str]] = {}
    for title, table in SCREENS:
        if title in _DIALOGS:
            continue
        for k in table:
            for name in k.key.split(","):
                if name not in _ANY_MEANING:
                    meanings.setdefault(name, set()).add(k.action)
    return {name: actions for name, actions in meanings.items() if len({_meaning(a) for a in actions}) > 1}


PROCESS_KEYS = frozenset(k.key for k in RUN_KEYS if k.changes_process)

# The way out (q: detach, quit or back) and the help: in every footer however narrow the pane
# (``keybar.shown_keys``); at 60 columns the run screen's footer had dropped "q Detach".
ALWAYS_SHOWN = frozenset({"q", "question_mark"})


def over_words(key: Key, run_dir: "RunDir", state: dict, ref: str) -> str:
    """What ``key`` says, pressed on a run that is over (``state``: its state.json, status
    killed and the like): nothing supervises the run any more, so the runner's keys have no one to
    ask; the command that does it instead, for the run as a shell types it (``ref``:
    ``rundir.command_ref``; the restart as ``format.restart_words`` says it)."""
    from moeconsole.console.format import restart_words
    status = str(state.get("status"))
    over = key.over_unwatched if key.over_unwatched and not state.get("checkpoint_root") else key.over
    restart = restart_words(run_dir, state, ref) if "{restart}" in over else ""
    what = over.format(ref=ref, restart=restart)
    return f"{key.shown_key}: the run is {status.upper()}, no runner watches it: {what}"


def unmet_words(key: Key, conditions: frozenset[str]) -> str | None:
    """What ``key`` says, pressed while a condition it needs does not hold (``conditions``: the run
    screen's, ``run_conditions``): the footer does not show it then, and the press had done
    nothing, without a word (`d` for the alert the help offers, on a run that had none; `k` on a
    run whose runner is gone: newcomer round 11). Why, from the condition that is not met, and the
    key that meets it where there is one. None when the key applies. A run that is over says it
    in ``over_words`` (the commands that do it instead)."""
    missing = [c for c in key.needs if c not in conditions]
    if not missing:
        return None
    start = key_for(RUN_KEYS, "start_runner")
    why = {RUNNER: "nothing supervises it (it is over, or not a moeconsole run)" if ENDED in conditions else
           f"no runner watches this run now: {start} starts one (it adopts the training), then {key.shown_key}"
           if STALE in conditions else "no runner answers for this run yet",
           ALERTS: "no active alert" + (f" ({key_for(RUN_KEYS, 'alert_details')} opens the newest acknowledged one)"
                                        if ANY_ALERT in conditions else ""),
           ANY_ALERT: "this run has had no alert",
           STALE: "the runner is alive: nothing to start"}
    # z ends a process through the runner, k through it or `kill --machine-gone` (``KILLABLE``): without
    # a runner, that is what is missing
    first = RUNNER if missing[0] in (ZOMBIES, KILLABLE) and RUNNER not in conditions else missing[0]
    said = why.get(first, "no listed process can be ended now" if first == ZOMBIES else "it does not apply now")
    return f"{key.shown_key}: {said}"


def help_of(key: str, action: str) -> str:
    """The help sentence of ``key`` bound to ``action`` in any screen's table ("" when none)."""
    return next((k.help for _title, table in SCREENS for k in table if k.key == key and k.action == action), "")


def key_for(keys: tuple[Key, ...], action: str) -> str:
    """The key a screen's table (``keys``) binds to ``action``, as the footer and help show it
    (``F5`` for the browser's reload): what a message that names the key writes, so it follows
    the binding (a message still said `g` reloads after the reload moved to F5)."""
    return next(k.shown_key for k in keys if k.action == action)


def bindings(keys: tuple[Key, ...]) -> list[BindingType]:
    """A screen's ``BINDINGS`` (typed as Textual declares them, so a screen can add its own)."""
    return [k.binding() for k in keys]


def help_rows(keys: tuple[Key, ...]) -> list[tuple[str, str, str]]:
    """(key, what it does, note) rows for the help screen: one row per key a user presses. A key
    with two labels (``q``: Detach on a live run, Quit on an ended one) is one row whose text says
    both, in the table's order."""
    rows: dict[str, tuple[str, str, str]] = {}
    for k in keys:
        note = "asks to confirm; off with --readonly" if k.changes_process else ""
        if k.shown_key in rows:
            _, what, before = rows[k.shown_key]
            rows[k.shown_key] = (k.shown_key, f"{what} {k.help}", before or note)
        else:
            rows[k.shown_key] = (k.shown_key, k.help, note)
    return list(rows.values())
