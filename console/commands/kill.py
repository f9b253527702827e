"""``moeconsole kill RUN``: clean kill through the runner (SIGTERM, grace, SIGKILL), no restart.

A kill always gets through. The run's runner does it (a new runner is started to adopt the
training when the old one died); when no runner can take the run over (its recipe or state is
damaged, the directory refuses it), the processes are ended directly from what ``state.json``
recorded and the run's environment marker (``moeconsole.runner.process.killrun``). Another
user's run is refused, root included (``killrun.not_ours``): it is theirs to end.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from moeconsole.runner.process import launch
from moeconsole.runner.supervisor import control
from moeconsole.runner.rundir import rundir
from moeconsole.runner.rundir.paths import runs_base
from moeconsole.runner.core import bounds, units
from moeconsole.runner.core.errors import AmbiguousRun, InputError

LIVE_STATUS_EVERY_S = 1.0  # while state.json does not show the end, the runner is asked this often
ANSWER_TIMEOUT_S = 10.0   # a runner answers a kill within milliseconds; past this it is unfit to carry one out


def ensure_runner(run: rundir.RunDir) -> dict:
    """A live run whose runner died gets a new runner that adopts the training, so that every
    signal still goes through the one process that owns the tree."""
    state = run.read_state()
    if state.get("status") in rundir.LIVE and not launch.runner_alive(run, state):
        if rundir.runner_host_elsewhere(state) and launch.elsewhere_refusal(run, state, "a runner", restart=True) is None:
            return state   # its machine's runner went silent: the restart's own runner takes the run over here
        sys.stderr.write(f"runner of {run.run_id} is gone; starting a new one to adopt the training\n")
        pid = launch.spawn_runner(run)
        state = launch.wait_ready(run, pid)
    return state


def run(args) -> int:
    from moeconsole.runner.process import killrun
    try:
        run = rundir.resolve(runs_base(args.runs_dir), args.run)
    except AmbiguousRun as exc:
        if not exc.matches or any(status not in rundir.TERMINAL for _, status in exc.matches):
            raise   # one of them may still be running: the user names which
        return _all_ended(exc)
    theirs = killrun.not_ours(run)
    if theirs:   # root reads every run, but another user's is theirs to end (as `restart` refuses it)
        raise InputError(f"{run.run_id}: {theirs}")
    if getattr(args, "machine_gone", False):
        return _machine_gone(run)
    loaded = run.load_state()
    state = loaded.state
    # a copy's processes are the original's, another machine's are none this one sees, signals or proves gone
    refused = launch.acting_refusal(run, state, "a kill")
    if refused is not None:
        raise InputError(f"{run.run_id}: {refused}")
    if not launch.runner_alive(run, state) and (loaded.problem or state.get("status") in rundir.LIVE):
        try:
            state = ensure_runner_or_raise(run, loaded.problem)
        except InputError as exc:
            return _without_runner(run, state, args, str(exc))
    if state.get("status") in rundir.TERMINAL:
        print(f"{run.run_id}: already {state['status']}; nothing to kill")
        return 0
    req = control.KillRequest(by="cli") if args.grace is None else control.KillRequest(by="cli", grace_s=args.grace)
    try:
        answer = _ask(run, req)
    except control.ControlError as exc:
        status = run.load_state().state.get("status")
        if status in rundir.TERMINAL:
            # it ended meanwhile: a runner that closes its socket as it exits resets a request still
            # queued (a second `kill` of the same run, a double Enter, another user's console): it was
            # called unfit, SIGKILLed and the run's records searched for processes (round 16)
            print(f"{run.run_id}: already {status}; nothing to kill")
            return 0
        if not launch.runner_alive(run):
            raise InputError(f"{run.run_id}: {exc}") from None
        return _end_unanswering_runner(run, args, str(exc))
    if not answer.ok:   # refused (with or without words): nothing to wait for
        status = _status_now(run)
        if status in rundir.TERMINAL:   # it ended meanwhile (the runner refuses while it writes its last records)
            print(f"{run.run_id}: already {status}; nothing to kill")
            return 0
        sys.stderr.write(f"{run.run_id}: {answer.said}\n")
        return 1
    try:   # from here the runner carries the kill out, whatever becomes of this command
        if answer.text:
            sys.stderr.write(f"{run.run_id}: {answer.text}\n")
        grace = bounds.sane_seconds(answer.grace_s or None, 60.0, bounds.GRACE)
        timeout = args.timeout if args.timeout is not None else grace + 60
        waited = _wait_end(run, timeout)
    except KeyboardInterrupt:
        return goes_on(run.run_id, "kill")
    state = waited.state
    status = state.get("status")
    if status not in rundir.TERMINAL:
        print(f"{run.run_id}: {waited.words()}")
        return 1
    storage = state.get("storage")
    if isinstance(storage, dict) and storage.get("error"):
        sys.stderr.write(f"{run.run_id}: state.json cannot be written now ({storage['error']}): the runner holds "
                         "the run's end in memory and writes it once the disk takes it\n")
    print(f"{run.run_id}: {status}")
    return 0


def _machine_gone(run: rundir.RunDir) -> int:
    """``kill RUN --machine-gone``: the run recorded killed from here, nothing signalled
    (``killrun.end_elsewhere``); a run already over is said so, exit 0, as a plain kill says it."""
    from moeconsole.runner.process import killrun
    outcome, words = killrun.end_elsewhere(run, say=sys.stderr.write)
    if outcome == killrun.ELSEWHERE_KILLED:
        print(f"{run.run_id}: killed ({words}; any of its processes still alive there are not ended)")
        return 0
    if outcome == killrun.ELSEWHERE_OVER:
        print(f"{run.run_id}: {words}")
        return 0
    raise InputError(f"{run.run_id}: {words}")


def _all_ended(exc: AmbiguousRun) -> int:
    """``kill NAME`` where every run the name matches has already ended: nothing to kill, said
    in one line naming them (it had asked the user to pick one of runs that were all over), and
    exit 0, as the kill of one run that has ended (``already failed; nothing to kill``): the answer
    must not depend on how many past runs share the name, and a second kill must not fail."""
    shown = ", ".join(f"{run_id} ({status})" for run_id, status in exc.matches[:5])
    more = f" and {len(exc.matches) - 5} more" if len(exc.matches) > 5 else ""
    print(f"{exc.ref!r}: every run it matches has already ended ({shown}{more}); "
          "nothing to kill (`moeconsole runs ls` lists them)")
    return 0


@dataclass(frozen=True)
class Waited:
    """What ``kill`` saw of the run when it stopped waiting for the end."""
    state: dict            # the newest state that named a status: state.json's, or the runner's answer
    problem: str | None    # why state.json could not be read at the last look (None: it could)
    waited_s: float        # how long it waited, on the monotonic clock

    def words(self) -> str:
        """"still STOPPING after 61.2s": the status as the console names it (``snapshot.state_words``;
        DAMAGED and why when state.json never named one), and the time waited, not the one allowed."""
        from moeconsole.runner.rundir.snapshot import status_said
        took = f"{self.waited_s:.1f}s" if self.waited_s < 60 else units.duration(self.waited_s)
        return f"still {status_said(self.state, self.problem)} after {took}"


def _status_now(run: rundir.RunDir) -> object:
    """The run's status as its runner holds it (on a disk that refuses writes state.json may still
    say the run goes on while the runner has ended it), else as state.json says it."""
    try:
        answer = control.send(run.sock, control.StatusRequest(), timeout=LIVE_STATUS_EVERY_S,
                              runner_pid=launch.read_named_runner_pid(run))
        if answer.ok and isinstance(answer.state, dict) and answer.state.get("status") is not None:
            return answer.state["status"]
    except control.ControlError:
        pass
    return run.load_state().state.get("status")


def _wait_end(run: rundir.RunDir, timeout: float) -> Waited:
    """Until the run is over (or paused) in state.json, or in its runner's own answer to
    ``status``: on a disk that refuses writes (full, out of inodes, failing) state.json keeps the
    old status while the runner, which carried the kill out, waits to write it (the kill said
    "still stopping after 120s" of a run that had ended). A state.json that names no status for a
    while (unreadable, replaced by hand) leaves the newest status seen before (it had said "still
    None after 120s")."""
    ends = rundir.TERMINAL | {rundir.PAUSED}
    t0 = time.monotonic()
    deadline = t0 + timeout
    known: dict = {}
    while True:
        state = launch.wait_status(run, ends, min(LIVE_STATUS_EVERY_S, max(0.0, deadline - time.monotonic())))
        if state.get("status") is not None:
            known = state
        alive = launch.runner_alive(run, known or state)
        if state.get("status") in ends or not alive:
            break   # (a runner gone answers nothing: said at once, as before the status question)
        if time.monotonic() >= deadline and known:
            break   # (nothing known yet: the runner's own word, once, before giving up)
        try:
            answer = control.send(run.sock, control.StatusRequest(), timeout=LIVE_STATUS_EVERY_S,
                                  runner_pid=launch.read_named_runner_pid(run))
        except control.ControlError:
            if time.monotonic() >= deadline:
                break
            continue
        live = answer.state if answer.ok and isinstance(answer.state, dict) else {}
        if live.get("status") is not None:
            known = live
        if live.get("status") in ends or time.monotonic() >= deadline:
            break
    loaded = run.load_state()   # the last look: the end written meanwhile, or why the file says none
    if loaded.status is not None and (loaded.status in ends or known.get("status") not in ends):
        return Waited(loaded.state, None, time.monotonic() - t0)
    return Waited(known, loaded.problem if loaded.status is None else None, time.monotonic() - t0)


def goes_on(run_id: str, what: str) -> int:
    """Ctrl-C while ``kill``/``restart`` waits for what the runner was asked to do: the runner
    carries it out all the same; say so (it had exited 130 in silence: a kill that seemed
    cancelled went on, SIGKILL included)."""
    sys.stderr.write(f"moeconsole: interrupted; the {what} of {run_id} goes on in its runner (it was asked "
                     f"before the interrupt): `moeconsole runs show {run_id}` shows how it ends\n")
    return 130


def _ask(run: rundir.RunDir, req: control.KillRequest, timeout: float = ANSWER_TIMEOUT_S) -> control.Answer:
    """The kill request to the runner. Nothing listening, or another process listening there (the
    socket file was deleted or replaced: the runner binds it again within a second), is asked again
    until ``timeout``; a request sent and not answered is never sent twice."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return control.send(run.sock, req, timeout=round(max(0.5, deadline - time.monotonic()), 1),
                                runner_pid=launch.read_named_runner_pid(run))
        except (control.NotListening, control.NotTheRunner):
            if time.monotonic() >= deadline or not launch.runner_alive(run):
                raise
            time.sleep(0.1)


def _end_unanswering_runner(run: rundir.RunDir, args, why: str) -> int:
    """The runner lives but does not take the kill (stopped, its socket gone, stuck): it is
    ended (SIGKILL, checked) so that it never carries out the request later, and the run's
    processes are ended from its records, as when the runner is dead."""
    from moeconsole.runner.process import killrun
    sys.stderr.write(f"{run.run_id}: the runner does not take the kill ({why}); ending the runner and the "
                     "run's processes from its records\n")
    state = run.read_state()
    refused = killrun.end_runner(run, state)
    if refused:
        raise InputError(f"{run.run_id}: the runner does not answer and cannot be ended: {refused}")
    return _without_runner(run, run.read_state(), args, why, announce=False)


def ensure_runner_or_raise(run: rundir.RunDir, problem: str | None) -> dict:
    """Start a runner for a live run whose runner is gone (or whose state.json is damaged: the
    runner rebuilds it from the records); InputError when none can start."""
    if problem:
        sys.stderr.write(f"{run.run_id}: {problem}; starting a runner to rebuild it from the run's records\n")
    else:
        sys.stderr.write(f"runner of {run.run_id} is gone; starting a new one to adopt the training\n")
    pid = launch.spawn_runner(run)
    return launch.wait_ready(run, pid)


def _without_runner(run: rundir.RunDir, state: dict, args, why: str, announce: bool = True) -> int:
    """No runner could start: end the run's processes directly (``moeconsole.runner.process.killrun``)."""
    from moeconsole.runner.process import killrun
    grace = args.grace if args.grace is not None else _recipe_grace(run)
    if announce:
        sys.stderr.write(f"{run.run_id}: no runner can take this run over ({why}); ending its processes "
                         f"directly (SIGTERM, {grace:g}s grace, SIGKILL)\n")
    try:
        result = killrun.end_run(run, state, grace_s=grace, why=why)
    except rundir.RunLocked:
        raise InputError(f"{run.run_id}: a runner started meanwhile; run the kill again to ask it") from None
    if result.refused:
        sys.stderr.write(f"{run.run_id}: {result.refused}\n")
        return 1
    if result.survivors:
        print(f"{run.run_id}: still alive after SIGKILL: PIDs {result.survivors}")
        return 1
    if not result.pids:
        print(f"{run.run_id}: no process of this run is alive; nothing to kill")
        return 0
    print(f"{run.run_id}: killed (PIDs {result.pids}, no runner)")
    return 0


def _recipe_grace(run: rundir.RunDir) -> float:
    """The recipe's kill grace when recipe.yaml still reads, else the default."""
    from moeconsole.runner.core.errors import InputError
    from moeconsole.runner.recipes.recipe import saved_recipe
    try:
        grace: float | None = saved_recipe(run.path).kill.grace_s
    except InputError:
        grace = None
    return bounds.sane_seconds(grace, 60.0, bounds.GRACE)
