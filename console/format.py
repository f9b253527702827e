"""Plain-text formatting of snapshot data: numbers, durations, the status line, events.

UI-free and pure (dicts in, strings out), so the screen and a test reading ``--json`` output
format the very same values the same way. Styles are named here (``status--running``) and
defined in the TCSS file; the words alone always carry the meaning.
"""
from __future__ import annotations

import math
import signal
import time
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from moeconsole.runner.core.numbers import as_float, finite_float
if TYPE_CHECKING:
    from moeconsole.runner.rundir.rundir import RunDir
from moeconsole.runner.core.units import NA, clip, command_text, duration, fit_with_tail, fit_words, path_name  # noqa: F401  (the console's text for NA and duration)

# The restarts used against the recipe's restart.max_restarts (state.json ``restarts``, the count
# core/policy.py ``restarts_used`` owns and ``decide`` checks: crashed attempts before the current one,
# waits for a GPU, Slurm or the Hub left out): `r` or `moeconsole restart` on a run that did not crash
# starts a new attempt but uses none. Called plain
# "restarts", it read "attempt 3 · restarts 0/10" right after two presses of "r Restart".
RESTARTS_WORD = "auto-restarts"


# Status -> style name (TCSS component class). The word is always shown with it.
STATUS_STYLE = {
    "running": "status--running", "starting": "status--running",
    "cooldown": "status--cooldown", "stopping": "status--cooldown",
    "paused": "status--paused",
    "failed": "status--failed", "killed": "status--killed",
    "succeeded": "status--succeeded", "unsaved": "status--unsaved",
}
STATUS_STYLES = frozenset(STATUS_STYLE.values()) | {"status--other"}


def num(x: Any, digits: int = 4) -> str:
    """A metric value in few characters: 2.345, 1.2e-05, nan, inf, — for missing."""
    v = as_float(x)
    if v is None:
        return NA
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if v == 0:
        return "0"
    a = abs(v)
    if a >= 1e5 or a < 1e-3:
        return f"{v:.{max(1, digits - 2)}e}"
    return f"{v:.{digits}g}"


def short(x: Any) -> str:
    """Compact magnitude for axes: 950, 1.2k, 3.4M."""
    v = finite_float(x)
    if v is None:
        return num(x)  # nan, inf or the missing mark
    a = abs(v)
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if a >= div:
            s = f"{v / div:.1f}".rstrip("0").rstrip(".")
            return s + suffix
    if a >= 100 or v == int(v):
        return str(int(round(v)))
    return num(v, 3)


def clock(t: Any) -> str:
    v = finite_float(t)
    if v is None:
        return NA
    return time.strftime("%H:%M:%S", time.localtime(v))


def date(t: Any) -> str:
    v = finite_float(t)
    if v is None:
        return NA
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(v))


def money(x: Any) -> str:
    v = finite_float(x)
    if v is None:
        return NA
    return f"${v:,.0f}" if abs(v) >= 100 else f"${v:,.2f}"


def intc(x: Any) -> str:
    """Integer with thousands separators."""
    v = finite_float(x)
    if v is None:
        return NA
    return f"{int(v):,}"


def run_status_style(row: dict) -> str:
    """Style of a run-index row's status cell (a stale run reads like a failed one)."""
    if row.get("stale"):
        return "status--failed"
    return STATUS_STYLE.get((row.get("status") or "").lower(), "status--other")


def status_style(run: dict) -> str:
    if run.get("stale"):
        return "status--failed"
    return STATUS_STYLE.get((run.get("status") or "").lower(), "status--other")


# The quiet-time indicator appears after this long without a log line or a step (owned by the
# runner's state model: the runner asks whether the training is held still from then on).
from moeconsole.runner.core.state import QUIET_SHOWN_S  # noqa: E402


def hung(run: dict, quiet_s: float | None) -> bool:
    """No output for much longer than a step takes: an ETA would be a guess."""
    if quiet_s is None:
        return False
    step_time = as_float(run.get("step_time_s")) or 0.0
    return quiet_s >= max(60.0, 10 * step_time)


def eta_shown(run: dict, quiet_s: float | None = None) -> float | None:
    """The ETA a screen shows: the snapshot's ``eta_s`` while the run trains (the snapshot's rule,
    ``moeconsole.runner.rundir.snapshot.training``, which leaves ``--json``'s ``eta_s`` null
    otherwise), left out while the run is quiet for long (the status line and the compare table
    both ask here)."""
    from moeconsole.runner.rundir.snapshot import training
    if not training(run.get("status"), bool(run.get("stale"))) or hung(run, quiet_s) or run.get("training_held"):
        return None
    return as_float(run.get("eta_s"))


def state_word(run: dict) -> str:
    """The state word: the snapshot's (``moeconsole.runner.rundir.snapshot.status_word``, the one
    owner: "COOLDOWN waiting for disk room" reads the same here, in ``runs show`` and ``--json``),
    worked out again from ``run`` so a cooldown read before its floor passed still says so."""
    from moeconsole.runner.rundir.snapshot import status_word
    return status_word(run)


def alert_args(run: dict, groups: Iterable[dict]) -> dict[str, Any]:
    """What the status line shows of the alert groups (``Snapshot.alert_groups`` as dicts, the
    same in ``--json``): the newest unacknowledged critical headline and how many more, and
    whether to name the last good checkpoint (once the run had a bad save or any critical
    alert: after ``a`` it is what is left to know)."""
    groups = list(groups)
    crit = [g for g in groups if g.get("level") == "critical"]
    active = sorted((g for g in crit if g.get("active")), key=lambda g: -(as_float(g.get("last_t")) or 0.0))
    return {"alert": active[0].get("headline") if active else None, "more_alerts": max(0, len(active) - 1),
            "show_last_good": bool(run.get("bad_saves")) or bool(crit)}


def fit_alert(headline: str, width: int) -> str:
    """An alert headline ("<title> (x2, steps 4-8)") fitted to ``width``: the title loses words
    (``moeconsole.runner.core.units.fit_words``), the count and steps stay."""
    if len(headline) <= width:
        return headline
    title, sep, tail = headline.rpartition(" (")
    if not sep or not tail.endswith(")") or not any(ch.isdigit() for ch in tail):
        return fit_words(headline, width)
    return fit_with_tail(title, " (" + tail, width)


# A run without checkpoints.dir watches no save: what to type for it to (lint's no_checkpoint_dir)
UNWATCHED_WORDS = "checkpoints not watched: run with --set checkpoints.dir=DIR"


def last_good_piece(good: dict | None, now: float, *, watched: bool = True) -> str:
    """"last good checkpoint: step 36, 4m02s ago" (or that there is none yet, or that the run
    watches no checkpoint directory: its own script may have saved many)."""
    if not good:
        return "no good checkpoint yet" if watched else UNWATCHED_WORDS
    from moeconsole.runner.rundir.rundir import moment_age
    age = moment_age(good, now)   # on the boot clock: a step of the wall clock moves nothing
    ago = f", {duration(age)} ago" if age is not None else ""
    return f"last good checkpoint: step {intc(good.get('step'))}{ago}"


def resume_words(good: dict | None) -> str:
    """"from iter_0000004 (step 4)": the run's resume point (``last_good_checkpoint``: what its
    runner wrote, else the runner's rule asked of the disk), or that a restart starts from step 0."""
    if not good or not good.get("path"):
        return "from step 0 (no checkpoint verified ok)"
    step = f" (step {intc(good.get('step'))})" if good.get("step") is not None else ""
    return f"from {Path(str(good.get('path'))).name}{step}"


def partial_resume_words(partial: str) -> str:
    """"Not a full resume: weights only ...": an attempt that resumed from a save without all of the
    training state (``step_count.partial_resume``, the attempt_start event's ``partial``)."""
    return f"Not a full resume: {partial}"


def best_direction_words(greater: bool) -> str:
    """How the Trainer picks the best evaluation (``greater_is_better``), as every view says it."""
    return "higher is better" if greater else "lower is better"


def kept_save_words(best: dict) -> str:
    """"checkpoint-8 (step 8, eval_loss 6.812, lower is better)": the save the Trainer named best
    (``best_checkpoint``), with its own evaluation and the direction it compared by."""
    what = [f"step {intc(best['step'])}"] if best.get("step") is not None else []
    if best.get("value") is not None:
        what.append(f"{best.get('metric') or 'metric'} {num(best['value'])}")
    if isinstance(best.get("greater_is_better"), bool):   # the way the Trainer compared (discover.greater_is_better)
        what.append(best_direction_words(best["greater_is_better"]))
    return f"{Path(str(best.get('path') or '')).name}" + (f" ({', '.join(what)})" if what else "")


def unsaved_best_words(best: dict) -> str | None:
    """"the best evaluation (step 6, eval_loss 0.5) was not saved": the Trainer names only a save it made
    (discover.best_save_named), so a better evaluation that fell between saves is said beside it; None: none."""
    unsaved = best.get("unsaved") or {}
    if unsaved.get("step") is None:
        return None
    value = f", {best.get('metric') or 'metric'} {num(unsaved['value'])}" if unsaved.get("value") is not None else ""
    return f"the best evaluation (step {intc(unsaved['step'])}{value}) was not saved"


def best_words(best: dict | None) -> str | None:
    """"checkpoint-8 (step 8, eval_loss 6.812, lower is better): verified ok": the best save by the run's evaluations
    (``best_checkpoint``: what the resume point's trainer_state.json names) and the verdict its runner gave
    it, then ``unsaved_best_words``; None when the run names none. The eval chart says the same words."""
    if not best or not best.get("path"):
        return None
    verdict = ("verified ok" if best.get("ok") else f"{str(best['verdict']).upper()}, not a save to use"
               if best.get("verdict") else "not verified (deleted before, or not yet)")
    unsaved = unsaved_best_words(best)
    return f"{kept_save_words(best)}: {verdict}" + (f"; {unsaved}" if unsaved else "")


def catching_up_piece(run: dict) -> str:
    """"catching up: ~12,345 lines behind" while the runner reads a backlog of the log (its
    state's ``ingest.catching_up``): the step shown is the newest one read, not the newest one
    printed. Nothing otherwise, or when the runner is gone (its last word is stale)."""
    ingest = run.get("ingest") or {}
    if not ingest.get("catching_up") or run.get("stale"):
        return ""
    return f"catching up: ~{intc(ingest.get('lines_behind'))} lines behind"


def ended_next_words(run: dict, ref: str | None = None) -> str:
    """What an ended run's screen tells a user to do next where nothing supervises it any more
    (the run screen's `r` needs a runner): a FAILED run, the crash and its fix, then the command
    that runs it again; an UNSAVED one (its result in no verified checkpoint), why, then the same
    with ``--force`` (a finished run restarts only so). Empty for every other run. ``ref``: the
    run as a shell types it (``rundir.command_ref``), as its r says it (``restart_words``)."""
    from moeconsole.runner.rundir.snapshot import REFUSED_NEXT, command_refused, next_command
    if command_refused(run) and not run.get("stale"):
        return f"next: the fix (d), then {REFUSED_NEXT}"
    command = next_command(run, ref)   # the one owner (``runs show`` and ``--json`` say the same)
    if command is None or run.get("stale"):
        return ""
    # one line at 80 columns for a run id of a 16-character name (docs/console.md)
    if (run.get("status") or "").lower() == "unsaved":
        return f"next: d, then {command}"
    return f"next: the fix (d), then {command}"


def restart_words(run_dir: "RunDir", state: dict, ref: str) -> str:
    """The command that starts a run that is over again (``snapshot.restart_command``: --force for
    a finished run) and what that restart does: the next attempt and where it resumes, in the
    words `restart` prints its plan in (``launch.restart_plan``, ``launch.resume_plan``: the newest
    checkpoint verified ok, or step 0 and why; a `run -- COMMAND` run has no resume setting, and
    this line had promised "the newest verified checkpoint": review R51). ``ref``: the run as a
    shell types it (``rundir.command_ref``). The run screen's r on a run that is over and `run`'s
    last line say it in these words."""
    from moeconsole.runner.process.launch import restart_plan, resume_plan
    from moeconsole.runner.rundir.snapshot import command_refused, restart_command
    where, _ = resume_plan(run_dir, state)
    said = f"`{restart_command(ref, state.get('status'))}` will {restart_plan(state, where)}"
    if command_refused(state):   # the restart runs the run's own copy of the refused command
        return f"{said}; it runs the refused command again, unchanged: after fixing the recipe (or the command), " \
               "`moeconsole run` it anew"
    return said


def run_words(ref: str, run_id: str) -> str:
    """A run as a line that names its next commands writes it: by its short id (``rundir.short_ref``),
    named as such, once; the commands that follow take that short id (``watch_words``). The whole
    id three times (and its directory) made `run --detach`'s line 250 columns, wrapped mid-id at
    80; whoever needs the whole id has it on stdout (`run`), in `moeconsole runs`, in the browser."""
    return f"run {ref}" if ref == run_id else f"run {ref} (short id)"


def watch_words(ref: str) -> str:
    """The commands that watch a live run and stop it (the next step of whoever started it or
    left its screen): one line of 74 columns for a short id; a ref too long for one line of 80
    (a whole id, ``--runs-dir DIR``) puts each command on a line of its own, never cut mid-word."""
    attach, kill = f"`moeconsole attach {ref}` watches it", f"`moeconsole kill {ref}` stops it"
    return f"{attach}, {kill}" if len(attach) + 2 + len(kill) <= 80 else f"{attach},\n{kill}"


def goes_on_words(ref: str) -> str:
    """What a user who leaves a live run (the console closed, or `run`/`demo` interrupted) needs
    next: that it goes on, and on a line of their own the commands that watch it and stop it."""
    return f"goes on under its runner:\n{watch_words(ref)}"


def paused_words(ref: str) -> str:
    """What a user who leaves a PAUSED run needs next: its training is stopped and its runner
    waits for them (it said the run "goes on"), so the command that resumes it first."""
    return (f"is paused, its training stopped:\n`moeconsole attach {ref}` shows why (d), "
            f"`moeconsole restart {ref}` resumes it,\n`moeconsole kill {ref}` ends it")


def leaving_words(ref: str, status: str | None) -> str:
    """The one pick between the two: what a user who leaves a live run needs next, by its status
    (``paused_words`` for a PAUSED run, ``goes_on_words`` otherwise): the console closed (``q``),
    `run` interrupted."""
    from moeconsole.runner.rundir import rundir
    return paused_words(ref) if status == rundir.PAUSED else goes_on_words(ref)


# What an imported run is, in the status line and `runs show`: a log the browser's `o` (or
# `attach PATH`) opened, which no runner supervises.
IMPORTED_WORDS = "a log not made by moeconsole (read only; no runner, no restarts)"


# A step that is a log entry's number (``ingest.records.step_numbered``: a Hugging Face Trainer
# dict with no step, numbered by the parser), in the status line and the STEP column: never
# "step N", which the trainer did not say.
ENTRY_WORD = "log entry"


def step_words(step: Any, total: Any, numbered: bool) -> str:
    """The status line's step: ``step 40/100``, or ``log entry 12`` when the step is the log
    entry's number (the percentage, when a total is known, is the caller's)."""
    if numbered:
        return f"{ENTRY_WORD} {intc(step)}" + (f"/{intc(total)}" if total else "")
    return f"step {intc(step)}/{intc(total)}" if total else f"step {intc(step)}"


def unread_log_words(run: dict, log_tail: Iterable[str]) -> str | None:
    """What the run screen says of a run whose log gave no step while one line shape repeats in
    its tail (``ingest.explain.unread_shape``): the trainer's metric lines in a format no reader
    knows, and the recipe key that declares it (`moeconsole run --set log_format=...`). None
    otherwise (a step read, a log of setup lines, a run not running: paused, failed, waiting or
    stale say why there instead (review R60); an imported log: `attach PATH --log-format` is its way)."""
    if (run.get("status") or "").lower() != "running" or run.get("stale") or run.get("step") is not None \
            or run.get("metric_count"):
        return None
    from moeconsole.runner.ingest.explain import unread_shape
    got = unread_shape(log_tail)
    if got is None:
        return None
    return f"no step read from {got[0]} alike log lines: set log_format (docs/parsing.md)"


def status_lines(run: dict, *, readonly: bool = False, quiet_s: float | None = None,
                 heartbeat_s: float | None = None, alert: str | None = None, more_alerts: int = 0,
                 show_last_good: bool = False, now: float | None = None,
                 width: int | None = None, unread: str | None = None) -> list[list[tuple[str, str]]]:
    """The two status lines as (text, style) pieces. Style "" is plain.

    Line 1: name, state word, step/total, step time, ETA (only while running and not quiet for
    long), the quiet time with the heartbeat limit. Line 2: attempt, auto-restarts used/cap (RESTARTS_WORD), elapsed,
    cost, and what a cooldown waits on / why the run is paused or failed.

    ``alert``: an unacknowledged critical alert (its one-line headline). It takes over the
    headline: the state word reads ``CRIT · RUNNING`` in the critical style, and line 2 is the
    alert itself, most telling part first, so it reads at 80 columns. ``show_last_good``:
    line 2 names the newest good checkpoint and its age (after a bad save or a critical alert)."""
    word = state_word(run)
    status = (run.get("status") or "").lower()
    running = status in ("running", "starting") and not run.get("stale")
    step, total = run.get("step"), run.get("max_steps")
    steps = step_words(step, total, bool(run.get("step_numbered")))
    if step is not None and total:
        steps += f" ({100 * float(step) / float(total):.1f}%)"
    badge = (f" CRIT · {word} ", "status--critical") if alert else (f" {word} ", status_style(run))
    line1: list[tuple[str, str]] = [
        (str(run.get("name") or run.get("id") or NA), "status--name"), ("  ", ""), badge, ("  ", ""), (steps, ""),
    ]
    if run.get("step_time_s") is not None:
        line1 += [("  ", ""), (f"{num(run['step_time_s'], 3)} s/step", "")]
    eta = eta_shown(run, quiet_s)
    if eta is not None:
        line1 += [("  ", ""), (f"ETA {duration(eta)}", "")]
    if running and quiet_s is not None and quiet_s >= QUIET_SHOWN_S and run.get("training_held"):
        # held still (the state word says how): silent by no fault of its own, the hang clock waits
        line1 += [("  ", ""), (f"held {duration(quiet_s)} (the hang clock waits)", "status--paused")]
    elif running and quiet_s is not None and quiet_s >= QUIET_SHOWN_S:
        limit = f" (hang limit {duration(heartbeat_s)})" if heartbeat_s else ""
        line1 += [("  ", ""), (f"quiet {duration(quiet_s)}{limit}",
                               "status--cooldown" if hung(run, quiet_s) else "")]
    behind = catching_up_piece(run)
    if behind:
        line1 += [("  ", ""), (behind, "status--cooldown")]
    if readonly:
        line1 += [("  ", ""), ("READ-ONLY", "status--readonly")]

    attempt = run.get("attempt")
    cap = run.get("max_restarts")
    line2: list[tuple[str, str]] = []
    if alert:  # first, so that 80 columns show it whole; the rest follows where there is room
        more = f" (+{more_alerts} more)" if more_alerts else ""
        if width:  # the headline fitted by words (its count and steps stay), never cut inside one
            alert = fit_alert(alert, width - len("CRIT ") - len(more) - 2)
        line2 += [(f"CRIT {alert}{more}", "status--critical"), (" · ", "")]
    if status == "paused" and run.get("pause_reason") and not run.get("stale"):
        # why the run waits for the user, said once and early: it stays on an 80-column line after the
        # alert is acknowledged (the pieces after it are cut first); a long reason keeps its first
        # words to a third of the line, so the last good checkpoint still shows (`d` has it whole)
        reason = strip_word(run['pause_reason'], 'paused')
        if width:
            reason = fit_words(reason, max(12, width // 3 - len("paused: ")))
        line2 += [(f"paused: {reason}", "status--paused"), (" · ", "")]
    if status == "cooldown" and not run.get("stale"):
        # what the run waits on, early for the same reason (newcomer round 14: after the cost, 132 columns
        # cut `... but there is…` and 80 dropped it whole); a long wait keeps its first words to two thirds
        # of the line, so the attempt and the elapsed time still show (`runs show` has it whole)
        from moeconsole.runner.rundir.snapshot import waiting_words
        waiting = waiting_words(run) or ""
        if width:
            waiting = fit_words(waiting, max(24, width * 2 // 3))
        line2 += [(waiting, "status--waiting"), (" · ", "")]
    crash = run.get("last_crash")
    crash_class = (crash.get("class") if isinstance(crash, dict) else str(crash)) if crash else None
    failed_early = status == "failed" and bool(crash_class) and not run.get("stale")
    if failed_early:
        # why the run failed, early for the same reason: after `a` an 80-column line still names the
        # class (the pieces after it are cut first); `d` opens the alert with the fix
        line2 += [(f"last crash: {crash_class}", "status--crash"), (" · ", "")]
    if unread and status == "running" and not run.get("stale"):
        # only while running, after the alert: never in place of why a run is paused, failed, waiting, or
        # unsupervised (the pieces above and the runner-gone/waiting-on pieces below; review R60); whole at 80
        # columns when no alert is up: "step —" alone had not said why (``unread_log_words``)
        line2 += [(unread, "status--cooldown"), (" · ", "")]
    # an imported log: no runner ever supervised it, so no attempt or restarts to count ("attempt — · restarts 0/—")
    line2.append((f"imported: {IMPORTED_WORDS}", "") if status == "imported"
                 else (f"attempt {attempt if attempt is not None else NA}", ""))
    if show_last_good:
        good = run.get("last_good_checkpoint")
        # the snapshot says which directory the runner watches (None: no checkpoints.dir)
        watched = "checkpoint_root" not in run or run["checkpoint_root"] is not None
        line2.append((f" · {last_good_piece(good, time.time() if now is None else now, watched=watched)}",
                      "" if good else "status--failed"))
    if status != "imported":
        line2.append((f" · {RESTARTS_WORD} {run.get('restarts') or 0}/{cap if cap is not None else NA}", ""))
    job = run.get("job") or {}
    if job.get("job_id"):
        where = f" on {','.join(job['nodes'][:4])}" if job.get("nodes") else ""
        line2.append((f" · {run.get('engine') or 'slurm'} job {job['job_id']} {job.get('state') or NA}{where}", ""))
        if job.get("slurm_error") and job.get("ended_at") is None:   # the controller away: the state is the last read
            line2.append((" (Slurm not answering)", "status--failed"))
    if run.get("elapsed_s") is not None:
        line2.append((f" · elapsed {duration(run['elapsed_s'])}", ""))
    if run.get("cost_per_hour"):
        cost = f" · {money(run['cost_per_hour'])}/h, {money(run.get('cost_so_far'))} so far"
        if run.get("cost_projected") is not None and run.get("eta_s") is not None:
            cost += f", {money(run['cost_projected'])} projected"
        line2.append((cost, ""))
    if run.get("stale"):
        from moeconsole.runner.rundir.snapshot import stale_runner_words
        gone = not run.get("runner_alive")
        line2.append((" · the runner is gone: nothing supervises this run" if gone else f" · {stale_runner_words(run)}",
                      "status--failed"))
    elif status == "unsaved":
        line2.append((f" · not saved: {strip_word(run.get('pause_reason'), 'unsaved')}", "status--unsaved"))
    elif status in ("failed", "killed") and crash_class and not failed_early:
        line2.append((f" · last crash: {crash_class}", "status--failed"))
    sync = run.get("sync")
    if isinstance(sync, dict):
        line2.append(sync_piece(sync))
    imp = run.get("import")
    if isinstance(imp, dict):
        piece = import_piece(imp)
        if piece is not None:
            line1 += [("  ", ""), piece]
    if width:
        return [fit_pieces(_name_cut(line1, width), width), fit_pieces(line2, width)]
    return [line1, line2]


def _name_cut(line1: list[tuple[str, str]], width: int) -> list[tuple[str, str]]:
    """Line 1 with a long run name (up to 64 characters) cut, by the run list's rule
    (``runcolumns.cut_name``), down to ``runcolumns.NAME_MIN`` so that what follows it shows: the
    name had filled an 80-column line, its step and ETA left as "…" (newcomer round 4)."""
    from moeconsole.console.runcolumns import NAME_MIN, cut_name
    name, style = line1[0]
    over = sum(cell_width(t) for t, _ in line1) - width
    if over <= 0 or cell_width(name) <= NAME_MIN:
        return line1
    return [(cut_name(name, max(NAME_MIN, cell_width(name) - over)), style), *line1[1:]]


FIT_PIECE_MIN = 10  # a piece with less room than this is left out whole, not cut to a stub


LABEL_WORDS_MAX = 2  # a label before its number: "auto-restarts 2/10", "slurm job 4242", "elapsed 3h02m"


def _lead(body: str) -> str:
    """What a piece keeps or goes whole: its first word and, when a number follows a label of at
    most ``LABEL_WORDS_MAX`` words, the number too. A label without its number says nothing: at
    a tmux split's 48-59 columns "auto-restarts 10/10" read "auto-restarts…" on a run failed at
    the cap (review R22)."""
    words = body.split(" ")
    for i, w in enumerate(words[:LABEL_WORDS_MAX + 1]):
        if any(ch.isdigit() for ch in w):
            return " ".join(words[:i + 1])
    return words[0]


def _fits_by_words(body: str, room: int, mark: int = 1) -> bool:
    """Whether ``body`` can be fitted into ``room`` by words: at least ``FIT_PIECE_MIN`` columns,
    and its lead (``_lead``: the first word, a label's number) whole with ``mark`` columns for what
    marks the rest. ``fit_words`` clips a first word wider than that ("auto-restarts 1/5" in 10
    columns read "auto-resta") and drops a label's number, so such a piece goes whole instead."""
    return room >= FIT_PIECE_MIN and len(_lead(body)) + mark <= room


def fit_pieces(pieces: list[tuple[str, str]], width: int) -> list[tuple[str, str]]:
    """A status line's pieces in ``width`` columns, cut between words, never inside one: the
    pieces that fit stay whole; the first that does not is fitted by words
    (``units.fit_words``: its numbers stay whole, "…" marks what went) when at least
    ``FIT_PIECE_MIN`` columns are left for it, else it and everything after it go and "…" after
    the separator says so (``a · b · …``: the last piece shown stays whole). The mark is never
    left off: when the pieces kept leave no room for it, the last of them go too (``_marked``).
    Only a first piece wider than the line (a name), or one filling it alone, is clipped."""
    if sum(len(t) for t, _ in pieces) <= width:
        return pieces
    out: list[tuple[str, str]] = []
    used = 0
    for text, style in pieces:
        if used + len(text) <= width:
            out.append((text, style))
            used += len(text)
            continue
        if not out:
            return [(clip(text, width), style)]
        lead = text[:len(text) - len(text.lstrip(" ·"))]
        body = text[len(lead):]
        room = width - used - len(lead)
        if body and _fits_by_words(body, room):
            out.append((lead + fit_words(body, room), style))
            return out
        return _marked(out, text if not body else lead, width)
    return out


def _marked(out: list[tuple[str, str]], sep: str, width: int) -> list[tuple[str, str]]:
    """``out`` (what fits) and the mark that more was there: "· …" after the separator, so the last
    piece shown reads whole, else a bare " …". Never left off: when the pieces kept leave no room
    for it, the last of them gives up its last words (``fit_words``, at least ``FIT_PIECE_MIN``
    columns kept, its "…" then stands for the rest) or goes whole; a first piece that fills the line
    alone is clipped."""
    while True:
        while len(out) > 1 and not out[-1][0].strip(" ·"):  # no separator left hanging at the end
            sep = out.pop()[0]
        used = sum(len(t) for t, _ in out)
        for mark in ((sep or " ") + "…", " …"):
            if used + len(mark) <= width:
                return out + [(mark, "")]
        text, style = out[-1]
        lead = text[:len(text) - len(text.lstrip(" ·"))]
        body = text[len(lead):]
        room = width - (used - len(text)) - len(lead)
        if len(out) > 1 and body and _fits_by_words(body, room, mark=3):
            fitted = fit_words(body, room)
            if not fitted.endswith("…"):          # only little words went: room for the mark too
                fitted = fit_words(body, room - 2)
                fitted += "" if fitted.endswith("…") else " …"
            return out[:-1] + [(lead + fitted, style)]
        if len(out) == 1:
            room = width - len(text)
            if room > 0:
                return [(text, style), ("…", "")]
            return [(clip(text + "…", width), style)]   # filling the line: its last character gives way to the mark
        out.pop()
        sep = lead or sep


IMPORT_BAR_CELLS = 12


def import_piece(imp: dict) -> tuple[str, str] | None:
    """A log being read into the console: a progress bar until its whole history is in (the
    newest steps are shown meanwhile); a read that failed says why."""
    if imp.get("error"):
        return (f"history: {imp['error']}", "status--failed")
    if imp.get("done"):
        return None
    frac = min(1.0, max(0.0, as_float(imp.get("progress")) or 0.0))
    full = int(frac * IMPORT_BAR_CELLS)
    bar = "█" * full + "░" * (IMPORT_BAR_CELLS - full)
    return (f"newest steps; reading history {bar} {frac * 100:.0f}%", "status--cooldown")


SYNC_LAG_WARN_S = 600.0


def sync_piece(sync: dict) -> tuple[str, str]:
    """Checkpoint sync in a few words: failing (and why), copying with its lag, or in sync."""
    if sync.get("failures"):
        return (f" · sync failing ({sync['failures']}x): {sync.get('last_error') or NA}", "status--failed")
    lag = as_float(sync.get("lag_s")) or 0.0
    if sync.get("pending"):
        name = path_name(sync["pending"])
        return (f" · syncing {name}, lag {duration(lag)}", "status--cooldown" if lag > SYNC_LAG_WARN_S else "")
    if sync.get("last_synced_step") is not None:
        return (f" · synced step {sync['last_synced_step']}", "")
    return (" · sync: nothing yet", "")


def strip_word(reason: Any, word: str) -> str:
    """'paused: paused: divergence' -> 'divergence' (a reason that repeats the state word)."""
    text = str(reason or "").strip()
    while text.lower().startswith(word.lower() + ":"):
        text = text[len(word) + 1:].strip()
    return text


def plain(pieces: list[tuple[str, str]]) -> str:
    return "".join(t for t, _ in pieces)


# ---- events ---------------------------------------------------------------------------------

LEVEL_WORD = {"critical": "CRIT", "crit": "CRIT", "error": "CRIT", "warning": "WARN", "warn": "WARN",
              "info": "INFO"}


def event_line(ev: dict) -> tuple[str, str]:
    """One event as (time and sentence, style), as the events pane and ``runs show`` write it."""
    from moeconsole.console.timeline import sentence  # it builds on this module
    text, style = sentence(ev)
    return f"{clock(ev.get('t'))} {text}", style


def checkpoint_line(ck: dict) -> tuple[str, str]:
    verdict = str(ck.get("verdict") or ("ok" if ck.get("ok") else NA))
    ok = ck.get("ok")
    mark = "OK " if ok else ("BAD" if ok is False else "?  ")
    if ck.get("suspect"):
        mark = "SUS"
    style = "event--crit" if ok is False else ("event--warn" if ck.get("suspect") else "event--ok")
    path = str(ck.get("path") or "")
    name = path_name(path)
    tensors = f" {ck['tensors']} tensors" if ck.get("tensors") is not None else ""
    reason = f": {ck['reason']}" if ck.get("reason") and not ok else ""
    gone = GONE_WORDS.get(str(ck.get("gone") or ("deleted" if ck.get("deleted") else "")))
    if gone is not None:   # snapshot.with_gone: verified, then not on disk (a bad one stays BAD)
        word = ("DEL" if ck.get("deleted") else "OUT") if ok else mark
        return (f"ckpt {word} step {intc(ck.get('step'))} {name} {verdict}{tensors}{reason}; {gone}"), \
            "event--warn" if ok else style
    if ck.get("export"):   # a merged export (discover.is_export): shown, never a save of the training
        return (f"ckpt {mark} step {intc(ck.get('step'))} {name} {verdict}{tensors}{reason}; {EXPORT_WORDS}",
                "event--warn" if ok is False else "")
    return f"ckpt {mark} step {intc(ck.get('step'))} {name} {verdict}{tensors}{reason}", style


# A merged export in the checkpoints panel and ``runs show`` (``discover.is_export``).
EXPORT_WORDS = "an export (merged weights), no resume point"


# A save verified, then deleted by its trainer (``order.saves_gone``): as ``runs show`` says it.
DELETED_SINCE_WORDS = "deleted since it was verified (the trainer's --save_total_limit?): not on disk"
# A verified save not on disk, by how it is gone (``order.GONE_*``; ``snapshot.with_gone``): ``runs show``'s words.
GONE_WORDS = {
    "deleted": DELETED_SINCE_WORDS,
    "removed": "removed with its directory since it was verified (verify --prune-superseded, or by hand): not on disk",
    "unreachable": "not found where it was verified, and no newer save of the run is there (a disk not mounted? "
                   "a directory moved?): out of reach, not known to be deleted",
}


def exit_words(d: dict) -> str:
    """How a process ended, as a user reads it: "killed by SIGKILL", "exit 1", "exit unknown"."""
    sig = d.get("signal")
    if sig:
        try:
            return f"killed by {signal.Signals(int(sig)).name}"
        except (ValueError, TypeError):
            return f"killed by signal {sig}"
    code = d.get("exit_code")
    return "exit unknown" if code is None else f"exit {code}"


def crash_line(c: dict) -> str:
    return (f"attempt {c.get('attempt')}: {c.get('class') or 'unknown'} ({exit_words(c)}) "
            f"{c.get('summary') or ''}").rstrip()


def blocker_cmd(b: dict, width: int = 60) -> str:
    """A listed process's command: the executable's name and its arguments, cut at ``width``."""
    cmd = b.get("cmdline")
    if isinstance(cmd, (list, tuple)):
        cmd = " ".join(str(c) for c in cmd)
    return clip(command_text(str(cmd)) if cmd else NA, width)


# ---- run comparison -------------------------------------------------------------------------

DIFF_ROWS = (("status", "status"), ("steps", "steps"), ("final_loss", "final loss"), ("min_loss", "min loss"),
             ("min_loss_step", "min loss at step"), ("peak_mem_gib", "peak memory GiB"),
             ("mean_tokens_per_s", "mean tokens/s"), ("mean_step_time_s", "mean step time s"),
             ("median_step_time_s", "median step time s"), ("attempts", "attempts"), ("restarts", RESTARTS_WORD),
             ("duration_s", "duration"))


def diff_cell(key: str, v: Any) -> str:
    if key == "duration_s":
        return duration(v)
    if key in ("steps", "min_loss_step", "attempts", "restarts"):
        return intc(v)
    if key == "status":
        return str(v or NA).upper()
    return num(v)


def diff_rows(d: dict) -> list[list[str]]:
    """The stats table of a comparison dict: metric, A, B, difference (and which is better)."""
    rows = []
    for key, label in DIFF_ROWS:
        delta = d["delta"].get(key)
        change = ""
        if delta:
            pct = f" ({delta['pct']:+.1f}%)" if delta.get("pct") is not None else ""
            better = f"  {delta['better'].upper()} better" if delta.get("better") else ""
            change = f"{num(delta['diff'])}{pct}{better}"
        # the status as the run screen says it ("RUNNING? (runner gone)") where the side is a run
        a, b = ((side["status_word"] if key == "status" and side.get("status_word") else diff_cell(key, side.get(key)))
                for side in (d["a"], d["b"]))
        rows.append([label, a, b, change])
    return rows


def run_cell(key: str, row: dict) -> str:
    """One cell of a run-index row, as `runs ls` and the run browser show it."""
    v = row.get(key)
    if key in ("started_at", "ended_at"):
        return date(v)
    if key in ("last_loss", "min_loss"):
        return num(v)
    if key == "last_step":
        steps = f"{intc(v)}/{intc(row.get('max_steps'))}" if row.get("max_steps") else intc(v)
        return f"entry {steps}" if row.get("step_numbered") and v is not None else steps
    if key == "status":
        # the run screen's word (``state_word``: the snapshot's one owner), from the row's status,
        # stale flag, cooldown and batch job: "RUNNING? (runner gone)", "PENDING (Priority)",
        # "PRE-FLIGHT", "COOLDOWN 42s"
        return state_word(row)
    if key == "recipe_hash":
        return (v or NA)[:8]
    if key == "display_name":
        return str(v or row.get("name") or row.get("id") or NA)
    if key in ("crashes", "bad_saves"):
        return str(v or 0)
    if key == "open_alerts":
        crit = row.get("open_critical") or 0
        return f"{v or 0}" + (f" ({crit} CRIT)" if crit else "")
    return NA if v is None else str(v)


# ---- terminal cells -------------------------------------------------------------------------
def cell_width(text: str) -> int:
    """The terminal cells ``text`` takes: a CJK character or most emoji take two, a combining
    mark none. Rich's ``cell_len`` (what every screen of the console draws with, so a table
    printed by a command lines up as the browser's does), imported only for text that holds a
    wide or zero-width character: ``runs ls`` of ASCII names and its ``—`` never loads rich."""
    if text.isascii() or not any(_maybe_not_one_cell(ch) for ch in text):
        return len(text)
    from rich.cells import cell_len
    return cell_len(text)


def _maybe_not_one_cell(ch: str) -> bool:
    """A character that may take other than one cell (East Asian wide or full width, a combining
    mark, a format or control character): ``cell_width`` asks rich's table for text holding one."""
    return (unicodedata.east_asian_width(ch) in ("W", "F") or unicodedata.combining(ch) != 0
            or unicodedata.category(ch) in ("Mn", "Me", "Cf", "Cc"))


def clip_cells(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal cells (``cell_width``), the cut marked with "…" (at least
    one character kept): ``clip`` for what is lined up in columns."""
    if cell_width(text) <= width:
        return text
    out: list[str] = []
    used = 1
    for ch in text:
        used += cell_width(ch)
        if used > width and out:
            break
        out.append(ch)
    return "".join(out) + "…"


def pad_cells(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` terminal cells (``str.ljust`` counts characters:
    a wide name pushed every column after it to the right)."""
    return text + " " * max(0, width - cell_width(text))
