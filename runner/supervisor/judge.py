"""The attempt judge: an ended attempt's facts in, a typed ``Outcome`` out.

The runner gathers what it knows about an attempt that ended (return code, the waiter's or the
batch system's exit record, why the runner itself stopped it, the masked log tail, progress,
the GPUs) into an ``EndedAttempt`` and calls ``judge``. The judge classifies the crash
(``moeconsole.runner.core.crash``), builds the crash report (``runfiles.CrashReport``, whose JSON is
``crashes/attempt-N.json``), asks the restart policy (``moeconsole.runner.core.policy.decide``) and answers
with everything the runner must record and the lifecycle's next event (``lc.Judged``). It
writes nothing and reads no process or file itself: the two questions only the run can answer
(does the newest save hold the result? what does the memory watch say about an OOM?) come in as
callables, so the judge is tested on plain exit codes and log tails.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.core.crash import (CrashVerdict, classify, classify_job_state, decode_exit, divergence_hint,
                                          error_identity, fork_refused_verdict, signal_name, warning_handled)
from moeconsole.runner.core.ending import StopSave, at_total_words, below_total, short_end
from moeconsole.runner.core.oom import crash_hint
from moeconsole.runner.core.policy import (RESUME_UNKNOWN, AttemptRecord, Clock, Decision, RestartSettings, decide,
                                          is_crash_class, restarts_used)
from moeconsole.runner.process.attempt import ExitStatus
from moeconsole.runner.rundir.runfiles import CrashReport

if TYPE_CHECKING:
    from moeconsole.runner.checkpoints.keeper import CheckpointKeeper, SaveCheck

CRASH_REPORT_TAIL = 200  # log lines a crash report keeps

JournalEvent = tuple[str, dict[str, Any]]  # a journal event: its type and fields, written in order


@dataclass(frozen=True)
class EndedAttempt:
    """Everything the runner knows about an attempt that ended, gathered before judging."""
    run_id: str
    attempt: int
    returncode: int | None                 # Popen convention: exit code, or -N for signal N
    ended_at: float                        # when it is judged (wall clock)
    exit_status: ExitStatus | None = None  # the waiter's (or batch system's) record of the end
    kill_reason: str | None = None         # why the runner stopped it: user | restart | hang | ...
    now_restart: bool = False              # a requested restart skips the cooldown floor
    tail: list[str] = field(default_factory=list)  # the attempt's last log lines, secrets masked
    steps_seen: int = 0
    last_step: int | None = None           # the newest step this attempt logged (None: none; never the run's)
    max_steps: int | None = None           # the total steps the training's log gave (None: not known)
    log_every: int | None = None           # the gap between its last two steps logged (None: not known)
    step_numbered: bool = False            # ... is a log entry's number (``ingest.records.step_numbered``)
    started_at: float | None = None
    ran_s: float | None = None             # how long it ran, on the monotonic clock (None: not measured so)
    ended_mono: float | None = None        # when it is judged, ``time.monotonic()`` on the boot ``boot_id``
    boot_id: str | None = None
    exit_seen_at: float | None = None      # when the runner noticed the end (wall clock, shown)
    detected_after_s: float | None = None  # judged this long after the end was noticed (monotonic)
    resumed_step: int | None = None
    resumed_from: str | None = None
    resume_next: str | None = None         # the checkpoint the next attempt would resume from, as it stands now
    gpus: int | None = None                # the GPUs the run uses (None: not known)
    end_unread: bool = False               # the tree outlived an adopted attempt's waiter: its end is nobody's to read
    job: dict[str, Any] | None = None      # a batch job's record
    gpu: dict[str, Any] | None = None      # the GPUs as NVML sees them now
    foreign_gpu_memory: bool = False       # a process of someone else holds memory on the GPUs
    own_pids: frozenset[int] = frozenset()  # every PID the attempt had, in any namespace
    live_pids: frozenset[int] = frozenset()
    python: str | None = None              # the interpreter the command runs (dependency hints)
    bad_saves_reason: str = ""             # why the runner paused it for bad saves
    log_at_limit: int | None = None        # the log reached the file size limit the runner cannot lift (bytes)
    log_refused: str | None = None         # why the log cannot be written now ("Read-only file system"; None: it can)
    address_limit: int | None = None       # the attempt's address-space limit (ulimit -v / -d, bytes; None: none or not known)
    alloc_ceiling: int | None = None       # the largest allocation the machine's overcommit allows (bytes; None: none or not known)
    address_space_seen: int | None = None  # the most address space one of its processes here was seen holding (bytes)
    elsewhere_client: str | None = None    # a client of its tree whose work runs elsewhere (`docker`, `ssh`; None: none seen)
    programs_run: Mapping[str, bool] | None = None  # the Python programs its processes here ran -> under an address limit
    divergence_step: int | None = None     # the step of the first non-finite value the monitors saw (None: none)
    oom_kills: int | None = None           # OOM kills the kernel counted while it ran (None: not known)
    host: str | None = None                # the runner's machine, where oom_kills is read (None: not known)
    # The command ran before this attempt: an earlier attempt of the run logged a step, or this one resumed
    # from a save (its command then carries the resume flags). False: every attempt before it ended before its
    # first step and this one started from scratch, so it ran the first attempt's command again, unchanged, and
    # a usage error now is the command's as on attempt 1 (``as_attempt``). True for a caller that does not know.
    ran_before: bool = True


# The events that record an attempt's verdict, each with its ``attempt`` (the first of ``Outcome.events`` where it
# has any): a runner that finds one already written for the attempt it judges again writes the verdict's events
# no second time (``recovery.verdict_recorded``)
VERDICT_EVENTS = frozenset({"crash", "success", "unsaved", "restart"})


@dataclass(frozen=True)
class Outcome:
    """What the runner records for a judged attempt, and the lifecycle's next event."""
    judged: lc.Judged
    record: AttemptRecord                  # the attempt's entry in the restart history
    state: dict[str, Any] = field(default_factory=dict)  # state.json fields to set
    events: tuple[JournalEvent, ...] = ()         # journal events, written after the report
    report: CrashReport | None = None      # crashes/attempt-N.json
    verdict: CrashVerdict | None = None
    next_env: dict[str, str] = field(default_factory=dict)  # env the next attempt gets (the crash's remedy: ``remedy_env``)


def alert_event(level: str, rule: str, message: str, *, step: int | None, attempt: int, **values: Any) -> JournalEvent:
    return "alert", {"level": level, "rule": rule, "step": step, "message": message, "values": values,
                     "attempt": attempt}


@dataclass(frozen=True)
class TailVerdicts:
    """What the judge reads in an ended attempt's log tail, the costly part of judging (``classify`` reads
    every line with every pattern of the classifier: about 4 ms a line on a tail built to cost it, round 23).
    ``tail_verdicts`` is pure on the ``EndedAttempt`` alone, so the runner computes it off its loop (a worker
    thread, ``supervisor.Judging``) and hands it to ``judge``, which then reads no tail line itself."""
    job: CrashVerdict | None              # the batch job's own end (``classify_job_state``)
    unread: CrashVerdict | None           # an adopted attempt's crash no one could read (``_unread_crash``)
    crash: CrashVerdict | None            # the log's verdict (``classify``); None where the judge needs none


def tail_verdicts(e: EndedAttempt) -> TailVerdicts:
    """The verdicts ``judge`` takes from the tail, under the conditions it asks for each (a verdict it would
    not ask for is not computed; where this misses one, ``judge`` computes it itself)."""
    status = e.exit_status
    job = classify_job_state(status.job_state if status else None, e.tail,
                             status.failed_nodes if status else (),
                             time_warning=status.time_warning if status else None) \
        if e.kill_reason in (None, "cleanup") else None
    rc = e.returncode
    unread = _unread_crash(e) if rc == 0 and e.kill_reason is None and job is None else None
    needed = job is None and unread is None and not (rc == 0 and e.kill_reason in (None, "cleanup"))
    return TailVerdicts(job, unread, _classify_ended(e, rc) if needed else None)


def as_attempt(e: EndedAttempt) -> int:
    """The attempt number the classifier judges ``e`` as: its own, or 1 where it ran the run's first command
    again with nothing run before it (``ran_before`` False: `moeconsole restart` of a run that failed on its
    command's own refusal, or auto-restarts after attempts that never reached a step). The classifier's
    first-attempt rules (``config_error``: "a usage text on a later attempt is not a configuration error, the
    command ran before") then hold for it as for attempt 1: the same refusal is the same class (newcomer
    round 12: `restart` of a run failed on ms-swift's `remaining_argv: ['--learning_rte', ...]` relaunched it
    as `unknown` twice more, its LAST CRASH `unknown`)."""
    return e.attempt if e.ran_before else 1


def _classify_ended(e: EndedAttempt, rc: int | None) -> CrashVerdict:
    """``crash.classify`` with the ended attempt's own facts (its tail, kill reason, pids, limits)."""
    return classify(rc, e.tail, user_kill=e.kill_reason == "user", hang=e.kill_reason == "hang",
                    steps_seen=e.steps_seen, foreign_gpu_memory=e.foreign_gpu_memory,
                    divergence=e.kill_reason == "divergence", attempt=as_attempt(e), own_pids=e.own_pids,
                    live_pids=e.live_pids, python=e.python, log_at_limit=e.log_at_limit,
                    oom_kills=e.oom_kills, local_host=e.host, address_limit=e.address_limit,
                    alloc_ceiling=e.alloc_ceiling, address_space_seen=e.address_space_seen,
                    elsewhere_client=e.elsewhere_client, programs_run=e.programs_run, log_refused=e.log_refused)


def judge(ended: EndedAttempt, history: list[AttemptRecord], settings: RestartSettings, *, floor_s: float,
          saved: Callable[[], "SaveCheck"],
          explain: Callable[[CrashVerdict, int | None], dict[str, Any] | None] = lambda v, s: None,
          save_before: Callable[[int], dict[str, Any] | None] = lambda step: None,
          stop_saves: Callable[[], list[StopSave]] = lambda: [],
          finished: Callable[[str], tuple[int, int] | None] = lambda path: None,
          diag: Callable[[str], None] = lambda msg: None, verdicts: TailVerdicts | None = None) -> Outcome:
    """Judge one ended attempt. ``history``: the attempts before it; ``floor_s``: the recipe's
    cooldown floor; ``saved()``: whether the newest save holds the result (asked only after
    exit 0); ``explain(verdict, last_step)``: a CUDA OOM's memory verdict (None otherwise);
    ``save_before(step)``: the newest clean save verified ok from before a step (``order.save_before``),
    which a divergence's hint names; ``stop_saves()``: the attempt's saves made with the
    stop requested (asked only after exit 0 below the total its log gave, ``ending.below_total``); ``finished(path)``:
    (global_step, max_steps) when the save at ``path`` was made at its training's total (``discover.finished_save``,
    asked only of the resume point of a crash to be restarted); ``verdicts``: the tail's
    verdicts (``tail_verdicts``), computed here when not given."""
    e = ended
    verdicts = tail_verdicts(e) if verdicts is None else verdicts
    rc, n, step = e.returncode, e.attempt, e.last_step
    record = AttemptRecord(attempt=n, started_at=e.started_at or e.ended_at, ended_at=e.ended_at,
                           resumed_step=e.resumed_step, last_step=step, crash_class=None,
                           ran_s=e.ran_s, ended_mono=e.ended_mono, boot_id=e.boot_id,
                           resumed_from=e.resumed_from, resume_next=e.resume_next, gpus=e.gpus)
    # A batch job's own end (TIMEOUT, NODE_FAIL, ...) outranks its exit code (TIMEOUT is 0:0). A
    # cleanup (the runner ending what outlived the end: a job Slurm requeued, cancelled once its
    # requeue was seen) comes after that end and changes nothing of its cause.
    status = e.exit_status
    job_verdict = verdicts.job
    unread = verdicts.unread
    own_end = rc == 0 and e.kill_reason is None and job_verdict is None
    short = short_end(step, e.max_steps, e.tail, e.log_every) if own_end else None
    # the saves are read below the total within the last logging interval too (where ``short_end`` without them
    # says nothing): an EarlyStoppingCallback stop there is in its save only
    if own_end and below_total(step, e.max_steps) and (short is None or short.sigterm_line is None):
        short = short_end(step, e.max_steps, e.tail, e.log_every, stop_saves()) or short
    handled = warning_handled(status.time_warning if status else None, status.job_state if status else None,
                              short.where, e.tail, short.sigterm_line) if unread is None and short is not None else None
    if handled is not None:
        # it exited 0 short of its total once its job's time-limit warning came: the time limit, resumed
        unread = handled
    if unread is None and short is not None and short.sigterm_line is not None:
        # its own line says it handled a SIGTERM the runner did not send: a preemption, resumed as one
        unread = CrashVerdict("preempted", (short.sigterm_line, f"exit 0 at {short.where}"), True, "restart",
                              short.summary())
    if unread is not None:
        rc = None                          # not the launcher's 0: the training's own end, as its log tells it
    if rc == 0 and e.kill_reason in (None, "cleanup") and job_verdict is None:
        check = saved()
        # the step a log entry's number: the event says so, as the status line does
        numbered = {"step_numbered": True} if e.step_numbered and step is not None else {}
        if not check.ok:  # a lost run is never called a success
            return Outcome(lc.Judged("unsaved", f"training finished (exit 0) but {check.reason}"), record,
                           {"exit_code": 0},
                           (alert_event("critical", "unsaved", f"training finished but {check.reason}", step=step,
                                        attempt=n, last_good=check.last_good),
                            ("unsaved", {"attempt": n, "step": step, "reason": check.reason,
                                         "last_good": check.last_good, **numbered})))
        if short is not None and short.stopped_by is not None:
            # it stopped itself on purpose and said so (``ending.STOPPED_ITSELF``): finished, and what stopped it named
            stopped = {"by": short.stopped_by, "step": short.step, "max_steps": short.total, "line": short.stop_line}
            return Outcome(lc.Judged("succeed", f"training finished (exit 0), {short.stopped_words()}"), record,
                           {"exit_code": 0, "stopped_by": stopped},
                           (("success", {"attempt": n, "step": step, **numbered, "max_steps": short.total,
                                         "stopped_by": short.stopped_by, "stop_line": short.stop_line}),))
        if short is not None:  # it stopped itself short of its total: the words say so and offer the resume
            return Outcome(lc.Judged("succeed", short.reason(e.run_id)), record,
                           {"exit_code": 0, "pause_reason": short.reason(e.run_id),
                            "ended_short": {"step": short.step, "max_steps": short.total}},
                           (("success", {"attempt": n, "step": step, **numbered, "max_steps": short.total,
                                         "short": True}),))
        return Outcome(lc.Judged("succeed", "training finished (exit 0)"), record, {"exit_code": 0},
                       (("success", {"attempt": n, "step": step, **numbered}),))
    if e.kill_reason == "bad_saves":
        return Outcome(lc.Judged("pause", e.bad_saves_reason or "bad saves in a row"), record)
    # a fork the kernel refused (a task limit reached) passes as processes end: restarted, never failed (R36)
    forked = (fork_refused_verdict(status.error)
              if status and status.fork_refused and status.error and e.kill_reason is None else None)
    exec_error = status.error if status and rc is not None and forked is None else None
    if exec_error and e.kill_reason is None:
        # The command could not even be started: retrying the same argv cannot help.
        return Outcome(lc.Judged("fail", exec_error), record, {"exit_code": None})
    if e.kill_reason == "restart":
        return Outcome(lc.Judged("restart", "restart requested", 0.0, 0.0 if e.now_restart else None), record,
                       events=(("restart", {"attempt": n, "requested_by": "user"}),))
    verdict = job_verdict or unread or forked or verdicts.crash or _classify_ended(e, rc)
    code, sig = decode_exit(rc)
    record = replace(record, crash_class=verdict.cls, signature=error_identity(verdict))
    memory = _memory_explanation(explain, verdict, step, diag)
    if memory is not None:
        record = replace(record, memory_verdict=memory["verdict"])
    report = CrashReport(attempt=n, cls=verdict.cls, t=e.ended_at, run_id=e.run_id, exit_code=code, returncode=rc,
                         signal=sig, signal_name=signal_name(sig) if sig else None, summary=verdict.summary,
                         evidence=list(verdict.evidence), recovery=verdict.recovery, retryable=verdict.retryable,
                         hint=crash_hint({"hint": _hint(verdict, e, save_before), "memory": memory}),  # the memory verdict's advice
                         steps_seen=e.steps_seen, last_step=step, resumed_from=e.resumed_from,
                         log_tail=e.tail[-CRASH_REPORT_TAIL:], gpu=e.gpu,
                         detected_after_s=e.detected_after_s, job=e.job,
                         memory=memory)
    floor = floor_s * float(verdict.cooldown_scale or 1.0)
    decision = decide(verdict, [*history, record], settings, Clock(e.ended_at, e.ended_mono, e.boot_id),
                      floor_s=floor)
    done = _pause_at_total(e, decision, finished)
    if done is not None:
        decision = Decision("pause", 0.0, done, "warning")
    events: list[JournalEvent] = [("crash", {
        "attempt": n, "step": step,  # the last step the attempt logged: where it crashed (None before one)
        "class": verdict.cls, "summary": verdict.summary, "recovery": verdict.recovery, "exit_code": code, "signal": sig, "decision": decision.action, "reason": decision.reason,
        **({"memory_verdict": memory["verdict"], "memory_summary": memory["summary"]} if memory else {})})]
    if decision.alert:
        events.append(alert_event(decision.alert, "restart_policy", decision.reason, step=step, attempt=n,
                                  crash_class=verdict.cls))
    state: dict[str, Any] = {"exit_code": code}
    if is_crash_class(verdict.cls):  # the user's kill leaves the last crash as it was
        state["last_crash"] = {"class": verdict.cls, "attempt": n, "summary": verdict.summary}
    if decision.action == "restart":
        # the restarts the next attempt has used: the count decide checks against the cap (its reason says it)
        state["restarts"] = restarts_used([r.crash_class for r in [*history, record]])
        judged = lc.Judged("restart", f"{verdict.cls}: {decision.reason}", decision.delay_s, floor)
        return Outcome(judged, record, state, tuple(events), report, verdict, remedy_env(verdict, memory))
    action = decision.action if decision.action in ("pause", "stop") else "fail"
    # a restart the user asks for later gets the remedy too (state.json's next_env)
    return Outcome(lc.Judged(action, decision.reason), record, state, tuple(events), report, verdict,
                   remedy_env(verdict, memory))


def _pause_at_total(e: EndedAttempt, decision: Decision,
                     finished: Callable[[str], tuple[int, int] | None]) -> str | None:
    """Why a crash is not restarted when the save it would resume from is its training's total (the pause
    reason), else None. The training ended after it trained and saved every step of the total its log gave
    (a crash or a hang in its end: a failed push, an OOM loading the best model, a preemption, a process group
    that does not exit), and a restart would not redo that end: transformers resumes a save at max_steps by
    training one step past it (``discover.finished_save``). Only a save of this total: a recipe whose total
    was raised resumes as any other."""
    if decision.action != "restart" or not e.resume_next or e.resume_next == RESUME_UNKNOWN or e.max_steps is None:
        return None
    done = finished(e.resume_next)
    if done is None or done[1] != e.max_steps:
        return None
    return f"it ended after the training reached its total: {at_total_words(e.resume_next, done)}"


def remedy_env(verdict: CrashVerdict, memory: dict[str, Any] | None) -> dict[str, str]:
    """The environment the next attempt gets for this crash: its class's (``CrashVerdict.env``:
    CUDA_LAUNCH_BLOCKING=1 after a CUDA fault) and a CUDA OOM's memory verdict's (``OomExplanation.env``:
    the allocator's expandable segments after fragmentation, under the name the run's torch reads)."""
    env = dict(verdict.env)
    mem_env = (memory or {}).get("env")
    if isinstance(mem_env, dict):
        env.update({str(k): str(v) for k, v in mem_env.items()})
    return env


def _unread_crash(e: EndedAttempt) -> CrashVerdict | None:
    """An adopted attempt whose training outlived its launcher (exit 0) and then ended where no
    one could read how: its parent is not this runner (the waiter, its subreaper, was orphaned with
    the runner that started it), so the log is the only witness. A crash the log names is the
    attempt's end; a log that names none leaves the launcher's 0 (a good end looks the same)."""
    if not e.end_unread:
        return None
    v = classify(None, e.tail, steps_seen=e.steps_seen, attempt=as_attempt(e), own_pids=e.own_pids,
                 live_pids=e.live_pids, python=e.python)
    if v.cls == "unknown":
        return None
    why = "its training outlived its launcher (exit 0) under an adopted attempt and ended where no one could read its exit status"
    return replace(v, evidence=(*v.evidence, why))


def _hint(verdict: CrashVerdict, e: EndedAttempt, save_before: Callable[[int], dict[str, Any] | None]) -> str | None:
    """The classifier's hint; a divergence's names the ``restart --from`` command with the save from
    before the step the divergence began (the monitors' first non-finite value, else the attempt's last step)."""
    if verdict.cls != "divergence":
        return verdict.hint
    began = e.divergence_step if e.divergence_step is not None else e.last_step
    return divergence_hint(e.run_id, save_before(began) if began is not None else None, began)


def _memory_explanation(explain: Callable[[CrashVerdict, int | None], dict[str, Any] | None], verdict: CrashVerdict,
             step: int | None, diag: Callable[[str], None]) -> dict[str, Any] | None:
    """The memory verdict is an explanation: its failure is reported in it, never stops the judging."""
    try:
        return explain(verdict, step)
    except Exception as exc:
        diag("memory verdict failed:\n" + traceback.format_exc())
        return {"verdict": "unknown", "summary": f"no memory verdict: {exc}", "evidence": [], "advice": "",
                "restart": "unknown"}


def bad_saves_pause(checkpoints: "CheckpointKeeper", limit: int) -> str | None:
    """Why the run pauses for bad saves (``checkpoints.pause_after_bad_saves`` saves in a row
    failed verification), naming the last good checkpoint (the resume point); None while the
    streak is shorter, or a newer save verified ok ends it."""
    from moeconsole.runner.checkpoints.keeper import describe_good
    bad = checkpoints.bad_in_a_row
    if not limit or len(bad) < limit:
        return None
    if checkpoints.streak_broken_by(checkpoints.last_good(suspect_too=True)):
        return None  # a newer save is whole (suspect or not): the watcher records it at its next poll
    good = checkpoints.last_good()
    names = ", ".join(Path(p).name for p in bad[-limit:])
    return f"{len(bad)} bad saves in a row ({names}); {describe_good(good)}; " \
           f"paused by checkpoints.pause_after_bad_saves={limit}"
