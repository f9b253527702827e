"""``moeconsole restart RUN [--now] [--force] [--from CHECKPOINT]``: clean kill, cool down, restart from
the newest good checkpoint, or from the save ``--from`` names (a save of this run that verifies ok:
``order.chosen_save``, asked here before anything is sent and by the runner again). A run that
finished (succeeded, or unsaved) is restarted only with ``--force``: the refusal says what the
restart would do. No attempt resumes from a save that holds the training's total (``launch.restart_at_total_refusal``):
transformers would train one step past it."""
from __future__ import annotations

import sys
import time

from moeconsole.console.commands.kill import ensure_runner, goes_on
from moeconsole.runner.process import launch
from moeconsole.runner.supervisor import control
from moeconsole.runner.rundir import rundir
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.core.shellwords import quote
from moeconsole.runner.rundir.paths import runs_base


def run(args) -> int:
    run = rundir.check_owned(rundir.resolve(runs_base(args.runs_dir), args.run))
    state = ensure_runner(run)
    before = int(state.get("attempt") or 0)
    status = state.get("status")
    chosen = _chosen(run, state, getattr(args, "resume_from", None))
    events_at = _events_size(run)   # a pause written after this is the runner's answer to this restart
    at_total = launch.restart_at_total_refusal(run, state, chosen, rundir.command_ref(run.path.parent, run.run_id)[1])
    if at_total is not None:   # whatever its status: a resume from it would train one step past the total
        raise InputError(f"{run.run_id}: {at_total}")
    where, resumes = launch.resume_plan(run, state, chosen)   # the saves walked and judged once
    plan = launch.restart_plan(state, where)
    from_step_0 = "from step 0" if resumes else where   # said again if the attempt starts from scratch
    again = f" --from {quote(args.resume_from)}" if chosen is not None else ""
    # the run as a shell types it: its short id, with --runs-dir where a bare command would not
    # look (the whole id alone had found nothing for a run under --runs-dir DIR)
    typed = rundir.command_ref(run.path.parent, run.run_id)[1]
    if status in rundir.FINISHED and not getattr(args, "force", False):
        from moeconsole.runner.rundir.snapshot import restart_command
        raise InputError(f"{run.run_id} already {status}: restarting it would {plan}; "
                         f"`{restart_command(typed, status)}{again}` does that")
    if status in rundir.TERMINAL:
        sys.stderr.write(f"{run.run_id} is {status}: restarting will {plan}\n")
        from moeconsole.runner.rundir.snapshot import command_refused
        if command_refused(state):   # a fix of the data or the program's file is read again; one of the recipe is not
            sys.stderr.write(f"{run.run_id}: its command was refused (config_error), and the restart runs the same "
                             "command, this run's own copy of the recipe: a fix made in the recipe file needs "
                             "`moeconsole run` of it, a new run\n")
    if status in rundir.TERMINAL or not launch.runner_alive(run, state):
        pid = launch.spawn_runner(run, restart=True, resume_from=chosen["path"] if chosen else None)
        launch.wait_ready(run, pid)
        sys.stderr.write(f"{run.run_id}: new runner started for the next attempt\n")
    else:
        if chosen is not None:
            sys.stderr.write(f"{run.run_id}: restarting will {plan}\n")
        req = control.Restart(now=bool(args.now), by="cli")
        if chosen is not None:
            req.resume_from = str(chosen["path"])
        answer = launch.request(run, req)
        if chosen is not None and not answer.ok and _OLDER_RUNNER in (answer.text or ""):
            sys.stderr.write(f"{run.run_id}: this run's runner is older and cannot take --from; kill it and restart "
                             f"(`moeconsole kill {typed}`, then `moeconsole restart {typed}{again}`)\n")
            return 1
        sys.stderr.write(f"{run.run_id}: {answer.said}\n")
        if not answer.ok:
            return 1
    try:
        return _wait_for_attempt(run, before, from_step_0, events_at)
    except KeyboardInterrupt:
        return goes_on(run.run_id, "restart")


# A runner from before ``restart --from`` refuses the request's field: msgspec's words for an unknown
# field of a struct that forbids them (runner/supervisor/control.py ``request_of``, ``forbid_unknown_fields``)
_OLDER_RUNNER = "unknown field `resume_from`"


def _chosen(run: rundir.RunDir, state: dict, which: str | None) -> dict | None:
    """The save ``--from`` names (``order.run_chosen_save``), or None without ``--from``; one line refuses it."""
    if which is None:
        return None
    from moeconsole.runner.checkpoints.order import run_chosen_save
    chosen = run_chosen_save(run, state, which)
    if isinstance(chosen, str):
        raise InputError(f"{run.run_id}: {chosen}")
    return chosen


def _events_size(run: rundir.RunDir) -> int:
    try:
        return run.events.stat().st_size
    except OSError:
        return 0


def _paused_since(run: rundir.RunDir, events_at: int) -> bool:
    """Whether the runner paused the run after ``events_at`` (events.jsonl's size when the restart was asked): no
    attempt started (the save it would resume from holds the training's total, ``judge.resume_at_total_refusal``)."""
    from moeconsole.runner.rundir import jsonio
    return any(rec.get("type") == "pause" for _, rec in jsonio.iter_jsonl(run.events, events_at))


def _wait_for_attempt(run: rundir.RunDir, before: int, from_step_0: str, events_at: int = 0) -> int:
    """Wait for the next attempt to run and say where it started: the save it resumed from, or
    ``from_step_0`` (the plan's words when it planned none: from step 0, and why) when it resumed from none; or
    the pause, and why, when the runner started none (``_paused_since``)."""
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        state = run.read_state()
        if int(state.get("attempt") or 0) > before and state.get("status") == rundir.RUNNING:
            started = f"resumed from {state['resumed_from']}" if state.get("resumed_from") else from_step_0
            print(f"{run.run_id}: attempt {state['attempt']} running, {started}")
            from moeconsole.console.format import watch_words
            _, typed = rundir.command_ref(run.path.parent, run.run_id)   # the short id, --runs-dir if need be
            from moeconsole.console.own_command import path_note
            # the next step, on a line of its own: behind the whole id it took 104 columns and an
            # 80-column terminal broke it inside `kill` (newcomer round 15); the id is on the line above
            sys.stderr.write(f"{watch_words(typed)}\n{path_note()}")
            return 0
        if state.get("status") in rundir.TERMINAL and int(state.get("attempt") or 0) > before:
            break
        if state.get("status") == rundir.PAUSED and _paused_since(run, events_at):
            print(f"{run.run_id}: PAUSED, no attempt started: {state.get('pause_reason')}")
            return 1
        if not launch.runner_alive(run, state):
            break
        time.sleep(0.1)
    # the status as every reader names it (``snapshot.state_words``: DAMAGED and why when
    # state.json names none), never a raw None
    from moeconsole.runner.rundir.snapshot import status_said
    loaded = run.load_state()
    attempt = loaded.state.get("attempt")
    print(f"{run.run_id}: {status_said(loaded.state, loaded.problem)}"
          + (f" (attempt {attempt})" if isinstance(attempt, int) else ""))
    return 1
