"""``moeconsole run RECIPE``: start a supervised run (detached runner), then attach the UI."""
from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from moeconsole.runner.core.errors import InputError
from moeconsole.runner.process import launch
from moeconsole.runner.recipes import cmdline, recipe as recipes
from moeconsole.runner.rundir import rundir
from moeconsole.runner.recipes.lint import lint_recipe
from moeconsole.runner.rundir.paths import runs_base

STARTED_WAIT_S = 10.0  # how long `run` waits to say "started" (or why not) before handing over
SETTLE_S = 3.0  # then how long `run --detach` watches a started attempt that has not logged a step yet
VERDICT_WAIT_S = 60.0  # and how long it waits for the verdict on an attempt that ended meanwhile


def start(recipe_path: str | None, overrides: list[str], *, runs_dir: str | None, name: str | None = None,
          allow_drift: bool = False, command: list[str] | None = None) -> tuple[int, rundir.RunDir | None]:
    """Start a run of the recipe at ``recipe_path``, or of ``command`` (``run -- COMMAND ...``:
    ``recipes.from_command``)."""
    base = runs_base(runs_dir)  # a runs directory that cannot be one is refused before anything is read
    if command is not None:
        recipe = recipes.from_command(command, overrides)
        recipe_path = "the command after --"
    else:
        assert recipe_path is not None
        try:
            recipe = recipes.load(recipe_path, overrides)
        except InputError as exc:
            if recipe_path.endswith((".yaml", ".yml")):
                raise
            from moeconsole.console.commands import RUN_COMMAND_HINT   # `run train.py`: a command was meant
            raise InputError(f"{exc}; {RUN_COMMAND_HINT}") from None
    _say_preflight(recipe)
    problems = lint_recipe(recipe, preflight=True)
    errors = [p for p in problems if p["level"] == "error"]
    for p in problems:
        sys.stderr.write(f"lint {p['level']}: {p['rule']}: {p['message']}\n")
    if errors:
        from moeconsole.runner.core.shellwords import quote
        from moeconsole.runner.recipes.swift.lint import parser_sees_more
        lint = f"moeconsole lint {quote(recipe_path)}" + "".join(f" --set {quote(o)}" for o in overrides)
        more = (f"; `{lint}` also asks ms-swift's own parser, for the flags its table lacks"
                if command is None and parser_sees_more(recipe) else "")
        sys.stderr.write(f"moeconsole: {recipe_path}: {len(errors)} lint error(s); nothing launched{more}\n")
        return 1, None
    run: rundir.RunDir | None = None
    try:
        # a Ctrl-C, a SIGTERM or a hang-up in between: the run is made and its runner started, then said so
        with _interrupt_after():
            run = launch.create_run(base, recipe, name=name, allow_drift=allow_drift)
            pid = launch.spawn_runner(run)
        launch.wait_ready(run, pid)
    except KeyboardInterrupt as exc:   # the one held back above, or one while the runner gets ready
        if run is None:
            raise
        raise StartInterrupted(run.run_id, getattr(exc, "signum", signal.SIGINT), run.path.parent) from None
    return 0, run


def _say_preflight(recipe: Any) -> None:
    """Said before the pre-flight asks the training Python anything (a process start: a second or more
    on a busy machine), so a wait is never silent."""
    if not recipe.command or not cmdline.is_swift_command(recipe.command):
        return
    from moeconsole.runner.recipes.swift.lint import preflight_needs
    need = preflight_needs(recipe)
    if need:
        python, trainer, modules = need
        sys.stderr.write(f"moeconsole: checking that {python} has {', '.join(modules)} ({trainer} imports it)...\n")
        sys.stderr.flush()


class StartInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM, SIGHUP) after the run's runner was started: the run goes on;
    ``run_id`` says which, ``signum`` which signal ended the command, ``base`` the runs directory."""

    def __init__(self, run_id: str, signum: int = signal.SIGINT, base: Path | None = None) -> None:
        super().__init__(run_id)
        self.run_id = run_id
        self.signum = int(signum)
        self.base = base


class HeldSignal(KeyboardInterrupt):
    """A SIGTERM or SIGHUP held back by ``_interrupt_after``, raised once the block is done."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)


# What ends `moeconsole run` from outside: Ctrl-C, `kill PID`, the terminal or SSH connection gone.
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _interrupt_after() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP held back until the block is done (creating the run directory
    and starting its runner), then raised: never a run directory without the runner about to
    take it (SIGTERM or a dropped SSH connection there had left a run STARTING for good, with no
    runner and no training), nor a runner nobody was told of. Handlers of our own, not a blocked
    signal: the runner must not inherit a signal mask (exec resets a handler, not a mask); a
    signal ignored on entry (``nohup``) stays ignored. Outside the main thread: as is."""
    hit: list[int] = []
    old: dict[signal.Signals, Any] = {}
    try:
        for sig in HELD_SIGNALS:
            if signal.getsignal(sig) is not signal.SIG_IGN:
                old[sig] = signal.signal(sig, lambda signum, _frame: hit.append(signum))
    except ValueError:   # not the main thread
        yield
        return
    try:
        yield
    finally:
        for held, handler in old.items():
            signal.signal(held, handler)
    if hit:
        raise KeyboardInterrupt if hit[0] == signal.SIGINT else HeldSignal(hit[0])


def went_on(run_id: str, signum: int = signal.SIGINT, status: str | None = None, base: Path | None = None) -> int:
    """Ctrl-C (or SIGTERM, a hang-up) once the run was started (`run`, `demo`, before the UI is up
    or while `--detach` waits for the first step): the run does not stop with this command; say
    so (it had exited 130 in silence, and the run trained on unseen). The exit status is the
    shell's for the signal: 130, 143, 129. A terminal that hung up takes no line: nothing is lost."""
    from moeconsole.console.format import leaving_words, run_words
    from moeconsole.console.own_command import path_note
    ref, typed = rundir.command_ref(base, run_id) if base is not None else (run_id, run_id)
    try:
        sys.stderr.write(f"moeconsole: interrupted; {run_words(ref, run_id)} was started and "
                         f"{leaving_words(typed, status)}\n{path_note()}")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return 128 + int(signum)


def first_outcome(run: rundir.RunDir, timeout: float = STARTED_WAIT_S) -> dict:
    """Until the first attempt is running or the run is refused (drift, pre-flight ``refuse``,
    a launch error); a pre-flight still waiting after ``timeout`` is reported as such."""
    return launch.wait_status(run, {rundir.RUNNING, *rundir.TERMINAL}, timeout)


SBATCH_ANSWER = "sbatch's answer"
VERDICT = "the verdict on the attempt that ended"


def _undecided(state: dict) -> str | None:
    """What a running run's start still waits for before `run` can say how it went: the verdict on
    an attempt that already ended (state.json ``judging``: the runner judges it off its loop, the
    status stays RUNNING meanwhile), or sbatch's answer to a batch job's submission (a refusal
    comes back as a failed run). None: nothing."""
    if state.get("status") != rundir.RUNNING:
        return None
    if state.get("judging"):
        return VERDICT
    job = state.get("job")
    if not job:
        return None
    from moeconsole.runner.process.engines.slurm import SUBMITTING, job_over
    if job.get("state") == SUBMITTING:
        return SBATCH_ANSWER
    return VERDICT if job_over(job.get("state")) else None   # the job ended (refused): judged next


def _wait_limit(what: str) -> float:
    """How long ``what`` is waited for: sbatch as long as the runner lets it take
    (``client.COMMAND_TIMEOUT_S``), a verdict ``VERDICT_WAIT_S``."""
    if what == SBATCH_ANSWER:
        from moeconsole.runner.process.slurm.client import COMMAND_TIMEOUT_S
        return COMMAND_TIMEOUT_S
    return VERDICT_WAIT_S


def until_decided(run: rundir.RunDir, state: dict) -> dict:
    """``state`` read again while its start is undecided (``_undecided``), each wait counted from
    when it was first seen, at most ``_wait_limit``, said on stderr once it passes ``SETTLE_S``
    (``report_start`` asks once: one clock per wait). A refused submission and a first attempt
    that crashed at once had been reported "started" (the runner's own start took most of
    ``first_outcome``'s timeout on a busy machine; the verdict is written a moment after the
    attempt ends)."""
    first: dict[str, float] = {}
    said: set[str] = set()
    while (what := _undecided(state)) is not None and launch.runner_alive(run, state):
        waited = time.monotonic() - first.setdefault(what, time.monotonic())
        limit = _wait_limit(what)
        if waited > limit:
            break
        if waited > SETTLE_S and what not in said:
            said.add(what)
            sys.stderr.write(f"moeconsole: waiting for {what} (at most {limit:.0f}s)\n")
            sys.stderr.flush()
        time.sleep(0.05)
        state = run.read_state() or state
    if state.get("status") not in rundir.TERMINAL and not launch.runner_alive(run, state):
        state = launch.wait_status(run, rundir.TERMINAL, 1.0)  # the runner's last write may be on its way
    return state


def settled_after_launch(run: rundir.RunDir, state: dict, window: float = SETTLE_S) -> dict:
    """A started local attempt, watched until it logged its first training step, ended (a crash,
    a failure, a success) or ran ``window`` seconds: a run that fails 0.1 s after launch is a run
    that failed, not one that started."""
    if state.get("status") != rundir.RUNNING or state.get("job"):
        return state  # a batch job's start is its submission (docs/slurm.md)
    attempt = state.get("attempt")
    deadline = time.monotonic() + window
    while time.monotonic() < deadline:
        if (state.get("status") != rundir.RUNNING or state.get("attempt") != attempt or state.get("last_crash")
                or state.get("first_step_at") or _undecided(state) or not launch.runner_alive(run, state)):
            break
        time.sleep(0.05)
        state = run.read_state() or state
    if state.get("status") not in rundir.TERMINAL and not launch.runner_alive(run, state):
        state = launch.wait_status(run, rundir.TERMINAL, 1.0)  # the runner's last write may be on its way
    return state


def report_start(run_dir: rundir.RunDir, settle_s: float = SETTLE_S) -> int:
    """Print the run id, then what became of the start: 0 launched (or still in pre-flight),
    1 refused or already over without success (the reason on stderr). The lines on stderr name
    the run by its short id (``format.run_words``), once, and each holds at most 80 columns for
    it: the whole id is the line above, on stdout. Every outcome names a next command, so the
    last line says how to reach this `moeconsole` when the shell's is not it (``own_command``)."""
    from moeconsole.console.own_command import path_note
    code = _report_start(run_dir, settle_s)
    sys.stderr.write(path_note())
    return code


def _report_start(run_dir: rundir.RunDir, settle_s: float) -> int:
    from moeconsole.console.format import run_words, watch_words
    print(run_dir.run_id)
    sys.stdout.flush()
    state = until_decided(run_dir, settled_after_launch(run_dir, first_outcome(run_dir), settle_s))
    status = state.get("status")
    short, ref = rundir.command_ref(run_dir.path.parent, run_dir.run_id)   # ref: with --runs-dir DIR if need be
    named = run_words(short, run_dir.run_id)
    if status == rundir.SUCCEEDED and state.get("ended_short"):   # exit 0 short of its total (core.ending)
        sys.stderr.write(f"{named} ran and ENDED SHORT: {state.get('pause_reason')}\n")
        return 0
    stopped = state.get("stopped_by")
    if status == rundir.SUCCEEDED and isinstance(stopped, dict):   # it stopped itself on purpose (core.ending)
        sys.stderr.write(f"{named} ran and succeeded, stopped by {stopped.get('by')} at step {stopped.get('step')} "
                         f"of {stopped.get('max_steps')}; `moeconsole runs show {ref}` shows it\n")
        return 0
    if status == rundir.SUCCEEDED:  # short enough to finish while we waited
        sys.stderr.write(f"{named} ran and succeeded; `moeconsole runs show {ref}` shows it\n")
        return 0
    if status in rundir.TERMINAL:
        sys.stderr.write(f"moeconsole: {ended_line(run_dir.run_id, state, run_dir.path.parent)}\n")
        return 1
    crash = state.get("last_crash") or {}
    if not launch.runner_alive(run_dir, state):
        # the runner died before the run was over (the OOM killer, a SIGKILL): nothing supervises it
        sys.stderr.write(f"moeconsole: {named} is {str(status).upper()} but its runner has ended: nothing "
                         f"supervises it; `moeconsole supervise {ref}` takes it over\n")
        return 1
    if status == rundir.PAUSED:
        sys.stderr.write(f"{named} started and is PAUSED: {state.get('pause_reason') or 'paused'}\n"
                         f"`moeconsole attach {ref}` shows why (d), `moeconsole restart {ref}` resumes it\n")
    elif crash:
        sys.stderr.write(f"{named} started, but attempt {crash.get('attempt')} already crashed: "
                         f"{crash.get('summary') or crash.get('class')}; the runner recovers it (now {status})\n"
                         f"{watch_words(ref)}\n")
    elif status == rundir.RUNNING:
        job = state.get("job") or {}
        undecided = _undecided(state)
        if undecided == VERDICT:   # still judged after VERDICT_WAIT_S: the status word's own words
            from moeconsole.runner.rundir.snapshot import judging_words
            what = f"started ({judging_words((state.get('judging') or {}).get('attempt', state.get('attempt')))})"
        elif job.get("job_id"):
            what = f"submitted as {state.get('engine') or 'slurm'} job {job['job_id']}"
        else:
            what = "is being submitted (sbatch has not answered yet)" if undecided == SBATCH_ANSWER else "started"
        sys.stderr.write(f"{named} {what} under a detached runner:\n{watch_words(ref)}\n")
    else:
        from moeconsole.runner.rundir.snapshot import waiting_text
        waiting = waiting_text((state.get("cooldown") or {}).get("waiting_on")) or "pre-flight"
        sys.stderr.write(f"{named} is {status}: waiting on {waiting}; the runner launches when it clears\n"
                         f"{watch_words(ref)}\n")
    return 0


def ended_line(run_id: str, state: dict, base: Path | None = None) -> str:
    """How a run that is over ended, for a run that did not succeed: one line, and with ``base``
    (its runs directory) a second, the command that starts it again (``format.restart_words``;
    `make demo` killed with k had ended on "ended KILLED: killed", the next step nowhere)."""
    status = state.get("status")
    reason = state.get("pause_reason") or (state.get("last_crash") or {}).get("summary") or status
    if isinstance(reason, str) and reason.startswith(f"{status}: "):
        # the restart policy's reason opens with its verdict ("failed: config_error: ..."): the status says it
        reason = reason[len(f"{status}: "):]     # once ("ended FAILED: failed: ...", newcomer round 12)
    started = int(state.get("attempt") or 0) > 0
    if status == rundir.UNSAVED:
        line = f"run {run_id} finished but is UNSAVED: {reason}"
    elif started and reason == status:   # nothing more to say than the status ("KILLED: killed")
        line = f"run {run_id} ended {str(status).upper()}"
    else:
        line = f"run {run_id} {('ended ' + str(status).upper()) if started else 'did not start'}: {reason}"
    if base is None or not started:
        return line
    from moeconsole.console.format import restart_words
    again = restart_words(rundir.RunDir(base / run_id), state, rundir.command_ref(base, run_id)[1])
    from moeconsole.runner.rundir.snapshot import command_refused
    fixed = status == rundir.FAILED and not command_refused(state)   # restart_words says what a refused one needs
    return f"{line}\n{'once the crash is fixed, ' if fixed else ''}{again}"


def exit_code(state: dict) -> int:
    """What `run` exits with once the UI is closed: 0 while the run goes on or after it
    succeeded, 1 when it ended any other way (failed, killed, unsaved)."""
    status = state.get("status")
    return 1 if status in rundir.TERMINAL and status != rundir.SUCCEEDED else 0


def run(args) -> int:
    try:
        code, run_dir = start(args.recipe, args.overrides, runs_dir=args.runs_dir, name=args.name,
                              allow_drift=args.allow_drift, command=getattr(args, "command_argv", None))
    except StartInterrupted as exc:
        return went_on(exc.run_id, exc.signum, base=exc.base)
    if code or run_dir is None:
        return code
    try:
        if args.detach:
            return report_start(run_dir)
        print(run_dir.run_id)
        sys.stdout.flush()
        from moeconsole.console.commands import attach
        args.run = run_dir.run_id
        code = attach.run(args)   # the UI reads Ctrl-C as a key: only its start-up is interrupted
    except KeyboardInterrupt:
        return went_on(run_dir.run_id, status=run_dir.read_state().get("status"), base=run_dir.path.parent)
    state = run_dir.read_state()
    if code == 0 and exit_code(state):
        sys.stderr.write(f"moeconsole: {ended_line(run_dir.run_id, state, run_dir.path.parent)}\n")
        return exit_code(state)
    return code
