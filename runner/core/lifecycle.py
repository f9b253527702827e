"""The run's lifecycle as one pure function: ``step(life, event, now) -> (life, effects)``.

No processes, files or clocks here: the runner turns what it sees (a leader's exit, a control
request, a deadline passing, the result of a probe) into an ``Event``, calls ``step``, and carries
out the ``Effect``s it gets back (signal the tree, launch, judge the attempt, write a status).
Every decision about *what happens next* lives here, so it is tested on plain data like
``policy.decide``; how to do it lives in the runner and the attempt engine.

Times are the runner's monotonic clock (``now``); deadlines are compared, never slept on.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Union

from moeconsole.runner.core.state import TERMINAL, Status
from moeconsole.runner.core.bounds import GRACE, sane_seconds

PREFLIGHT = "pre-flight"  # the reason of the cooldown before the first launch
ESCALATED_REPORT_S = 30.0
JUDGING_WORDS = "the attempt has ended and its crash is being judged"  # what ``status`` and a refused command say
# a restart asked while a user's kill stops the run: refused, the kill goes on
USER_KILL_UNDER_WAY = ("a kill by the user is stopping the run: it ends KILLED and nothing restarts it; "
                       "restart it once it is KILLED")
LEADER_ENDED_WORDS = "the attempt's leader has ended"   # ... and its tree is watched, before the judging
ORPHAN_END_WINDOW_S = 2.0  # an orphan that ends badly this close before its leader's exit 0 is the attempt's end  # after SIGKILL, re-signal and re-alert this often while anything lives


# ---- the lifecycle's own state ---------------------------------------------------------------
@dataclass(frozen=True)
class KillInProgress:
    reason: str            # user | restart | hang | divergence | bad_saves | cleanup
    started: float
    deadline: float        # SIGKILL at this monotonic time
    requested_by: str = "runner"
    escalated: bool = False
    now_restart: bool = False


@dataclass(frozen=True)
class Cooldown:
    started: float
    earliest: float
    ceiling_at: float
    reason: str
    preflight: bool = False  # before the first launch: ``on_busy: refuse`` applies
    waiting_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class Life:
    status: Status
    attempt_live: bool = False   # a leader of the current attempt exists and has not exited
    exited: bool = False         # the leader exited; the rest of the tree may still live
    exited_at: float = 0.0       # when the leader's exit was heard (monotonic)
    lingering: bool = False      # the leader exited 0 and its tree still writes the log: the attempt goes on in it
    returncode: int | None = None
    kill: KillInProgress | None = None
    cooldown: Cooldown | None = None
    # the ended attempt is being judged (``JudgeAttempt`` given, ``Judged`` not come yet): the runner's loop
    # serves control meanwhile (round 23); ``stop_by``: who killed the run while it was judged (the verdict
    # still lands, then the run stops instead of restarting or pausing)
    judging: bool = False
    stop_by: str | None = None


# ---- events -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Started:
    """A runner took over the run: what the run directory and the process table say."""
    leader_alive: bool           # the recorded attempt root is still the same process
    leader_known: bool           # an attempt was launched at all
    restart_requested: bool = False
    stopping: tuple[str, str] | None = None  # a STOPPING run: the kill under way (reason, requested_by)
    drift_refused: str | None = None


@dataclass(frozen=True)
class LeaderExit:
    returncode: int | None


@dataclass(frozen=True)
class TreeProbe:
    """After the leader's exit or during a kill: what of the attempt's tree still lives."""
    alive: bool
    hidden: bool = False         # processes carrying the run marker outside the tracked tree
    writing: bool = False        # the log grew since the leader's exit, within the last kill grace


@dataclass(frozen=True)
class Control:
    cmd: str
    grace_s: float | None = None
    now: bool = False
    by: str = "client"


@dataclass(frozen=True)
class Tick:
    """Time passed: kill deadlines."""


@dataclass(frozen=True)
class Hang:
    quiet_s: float
    limit_s: float


@dataclass(frozen=True)
class Divergence:
    message: str = "non-finite loss"


@dataclass(frozen=True)
class BadSaves:
    """Saves in a row failed verification (``checkpoints.pause_after_bad_saves``): stop the
    attempt and pause; training on would only write more of them."""
    reason: str


@dataclass(frozen=True)
class ConditionsProbe:
    waiting: tuple[str, ...]
    on_busy: str                 # wait | kill | refuse
    port_busy: bool = False
    blockers: bool = False       # killable blockers were found
    hold: bool = False           # a wait the ceiling never ends (no room to save: a launch would crash again)


@dataclass(frozen=True)
class Launched:
    """The attempt the lifecycle asked for (``Launch``) started."""
    attempt: int


@dataclass(frozen=True)
class LaunchFailed:
    """Nothing could start (the command is missing, not executable): retrying cannot help."""
    reason: str


@dataclass(frozen=True)
class Judged:
    """The attempt was classified and the restart policy decided (impure inputs, pure result)."""
    action: str                  # restart | pause | fail | stop | succeed | unsaved
    reason: str
    delay_s: float = 0.0
    floor_s: float | None = None


LifecycleEvent = Union[Started, LeaderExit, TreeProbe, Control, Tick, Hang, Divergence, BadSaves, ConditionsProbe, Launched,
              LaunchFailed, Judged]


# ---- effects ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class SetStatus:
    """The status changed: record it (an event, the state file, the index). Given only when
    the status really changes; the status itself is ``Life.status``."""
    status: Status
    reason: str


@dataclass(frozen=True)
class SignalTree:
    sig: str                     # "TERM" | "KILL"
    why: str = ""


@dataclass(frozen=True)
class Record:
    type: str
    fields: dict[str, Any] = field(default_factory=dict)  # the event's JSON fields besides its type


@dataclass(frozen=True)
class Adopt:
    pass


@dataclass(frozen=True)
class Launch:
    new_port: bool = False
    ceiling_alert: tuple[str, ...] = ()


@dataclass(frozen=True)
class JudgeAttempt:
    """Classify the ended attempt (log, GPUs) and ask the policy: the runner answers with Judged."""
    kill_reason: str | None
    now_restart: bool = False


@dataclass(frozen=True)
class KillBlockers:
    pass


@dataclass(frozen=True)
class Reply:
    answer: dict[str, Any]  # the control answer's JSON


Effect = Union[SetStatus, SignalTree, Record, Adopt, Launch, JudgeAttempt, KillBlockers, Reply]


@dataclass(frozen=True)
class Settings:
    grace_s: float
    floor_s: float
    ceiling_s: float


# ---- the function -----------------------------------------------------------------------------
def next_deadline(life: Life, now: float) -> float | None:
    """Seconds until the lifecycle has something to do without any event from outside: the
    kill's SIGKILL deadline or the cooldown's earliest launch (None: nothing is due)."""
    due = []
    if life.kill and not life.kill.escalated and life.kill.deadline > now:
        due.append(life.kill.deadline - now)
    if life.cooldown and life.cooldown.earliest > now:
        due.append(life.cooldown.earliest - now)
    return min(due) if due else None


def attempt_returncode(leader: int | None, orphan_ends: Iterable[tuple[float, int]]) -> int | None:
    """How an attempt ended, from its leader's return code and the ends of the orphans of its
    tree (a training its launcher left running in the background), each ``(seconds after the
    leader's end, negative before it; return code)`` in the order they were seen. A leader's
    failure, or an end not known, stands. After its exit 0 the first orphan that ended badly
    after it, or within ``ORPHAN_END_WINDOW_S`` before it, is the attempt's end: a backgrounded
    training that dies at once often dies while its launcher is still exiting, and that crash is
    never a success on the launcher's 0. An orphan that ended longer before is not (a helper that
    had done its job, hours into a training that then ended well)."""
    if leader != 0:
        return leader
    return next((rc for after, rc in orphan_ends if rc != 0 and after >= -ORPHAN_END_WINDOW_S), 0)


def step(life: Life, event: LifecycleEvent, now: float, cfg: Settings) -> tuple[Life, list[Effect]]:
    """The next lifecycle state and what to do, for one event. A ``SetStatus`` that would not
    change the status is dropped: every status change is recorded once."""
    new, effects = _step(life, event, now, cfg)
    return new, [e for e in effects if not (isinstance(e, SetStatus) and e.status == life.status)]


def _step(life: Life, event: LifecycleEvent, now: float, cfg: Settings) -> tuple[Life, list[Effect]]:
    if life.status in TERMINAL and not isinstance(event, (Started, Control)):
        return life, []
    if isinstance(event, Started):
        return _started(life, event, now, cfg)
    if isinstance(event, LeaderExit):
        return _leader_exit(life, event, now)
    if isinstance(event, TreeProbe):
        return _tree_probe(life, event, now, cfg)
    if isinstance(event, Control):
        return _control(life, event, now, cfg)
    if isinstance(event, Tick):
        return _tick(life, now)
    if isinstance(event, Hang):
        if life.status != Status.RUNNING or life.kill or not (life.attempt_live or life.lingering):
            return life, []
        return _begin_kill(life, "hang", now, cfg.grace_s)
    if isinstance(event, Divergence):
        if life.kill or not (life.attempt_live or life.lingering):
            return life, []
        return _begin_kill(life, "divergence", now, cfg.grace_s)
    if isinstance(event, BadSaves):
        if life.status != Status.RUNNING or life.kill or not (life.attempt_live or life.lingering):
            return life, []
        return _begin_kill(life, "bad_saves", now, cfg.grace_s)
    if isinstance(event, ConditionsProbe):
        return _conditions(life, event, now)
    if isinstance(event, Launched):
        if life.status != Status.COOLDOWN or not life.attempt_live:
            return life, []
        return replace(life, status=Status.RUNNING), [SetStatus(Status.RUNNING, f"attempt {event.attempt} started")]
    if isinstance(event, LaunchFailed):
        return (replace(life, status=Status.FAILED, attempt_live=False, exited=False),
                [SetStatus(Status.FAILED, event.reason)])
    if isinstance(event, Judged):
        return _judged(life, event, now, cfg)
    raise TypeError(f"unknown event {event!r}")


def _cooldown(life: Life, reason: str, now: float, cfg: Settings, *, delay: float = 0.0,
              floor: float | None = None, preflight: bool = False) -> tuple[Life, list[Effect]]:
    floor = cfg.floor_s if floor is None else floor
    earliest = now + max(sane_seconds(floor, 0.0), sane_seconds(delay, 0.0))
    ceiling_at = max(now + cfg.ceiling_s, earliest)
    cd = Cooldown(now, earliest, ceiling_at, reason, preflight=preflight)
    return (replace(life, status=Status.COOLDOWN, cooldown=cd, kill=None, attempt_live=False, exited=False,
                    lingering=False),
            [Record("cooldown", {"until": earliest, "ceiling_at": ceiling_at, "reason": reason}),
             SetStatus(Status.COOLDOWN, reason)])


def _started(life: Life, ev: Started, now: float, cfg: Settings) -> tuple[Life, list[Effect]]:
    status = life.status
    if ev.drift_refused:
        return replace(life, status=Status.FAILED), [SetStatus(Status.FAILED, ev.drift_refused)]
    if status in (Status.RUNNING, Status.STOPPING, Status.COOLDOWN, Status.PAUSED) and ev.leader_alive:
        # A live attempt outlives its runner: take it over, never start a second one.
        adopted = replace(life, status=Status.RUNNING, attempt_live=True)
        if status == Status.STOPPING and ev.stopping is not None:
            # ... and a kill the dead runner had begun goes on (a user's kill is never lost): its
            # SIGTERM again, with a grace from now
            reason, by = ev.stopping
            new, effects = _begin_kill(adopted, reason, now, cfg.grace_s, by=by)
            return new, [Adopt(), *effects]
        return adopted, [Adopt()]
    if status in (Status.RUNNING, Status.STOPPING) and ev.leader_known:
        # Runner and training both died: judge the attempt from its records.
        # (a user's kill the dead runner had taken while it judged still stops the run once judged again)
        stop_by = ev.stopping[1] if status == Status.STOPPING and ev.stopping and ev.stopping[0] == "user" else None
        return replace(life, attempt_live=False, exited=True, judging=True, stop_by=stop_by), [JudgeAttempt(None)]
    if status == Status.PAUSED and not ev.restart_requested:
        return life, []  # only the user resumes, restarts or kills a paused run
    if status in (Status.COOLDOWN, Status.PAUSED) or (status in TERMINAL and ev.restart_requested):
        if ev.restart_requested:
            return _cooldown(life, "restart requested", now, cfg, floor=0.0)
        return _cooldown(life, "resumed", now, cfg)
    if status in TERMINAL:
        return life, []
    return _cooldown(life, PREFLIGHT, now, cfg, floor=0.0, preflight=True)


def _leader_exit(life: Life, ev: LeaderExit, now: float) -> tuple[Life, list[Effect]]:
    if not life.attempt_live:
        return life, []
    return (replace(life, attempt_live=False, exited=True, returncode=ev.returncode, exited_at=now),
            [Record("attempt_end", {"returncode": ev.returncode})])


def _tree_probe(life: Life, ev: TreeProbe, now: float, cfg: Settings) -> tuple[Life, list[Effect]]:
    if life.kill:
        if ev.alive or life.attempt_live:
            return life, []
        if ev.hidden:
            return life, [SignalTree("KILL", "marked processes outside the tree")]
        kill = life.kill
        done = Record("kill_done", {"reason": kill.reason, "seconds": round(now - kill.started, 3),
                                    "escalated": kill.escalated, "survivors": []})
        # a user's kill is done: the run stops once judged, and a second kill meanwhile (two consoles, a double
        # Enter) is told so, never recorded as a kill of its own after ``kill_done`` (round 32)
        stop_by = kill.requested_by if kill.reason == "user" else None
        return (replace(life, kill=None, exited=False, lingering=False, judging=True, stop_by=stop_by),
                [done, JudgeAttempt(kill.reason, kill.now_restart)])
    if life.exited:
        if ev.alive and life.lingering:
            return life, []  # the attempt lives on in its tree: it ends with it, a hang or a kill
        if ev.alive and life.returncode == 0 and (ev.writing or now - life.exited_at < cfg.grace_s):
            # The leader ended cleanly but its tree may train on (a launcher that started the
            # training in the background and returned): ending it at once would cut the training
            # short and call the run a success. What outlives the leader gets a kill grace to
            # show it writes the log; once it does, the attempt goes on in it as in any attempt
            # (the heartbeat's hang rule, kill, restart) until the tree ends. A tree that writes
            # nothing within the grace is cleaned up (below).
            if not ev.writing:
                return life, []
            return replace(life, lingering=True), [Record("alert", {
                "level": "warning", "rule": "tree_outlives_leader",
                "message": "the leader exited 0 but processes of its tree still write the log; "
                           "the attempt goes on until they end"})]
        if ev.alive:  # the leader is gone but part of its tree lives: end it before judging
            return _begin_kill(life, "cleanup", now, cfg.grace_s)
        return replace(life, exited=False, lingering=False, judging=True), [JudgeAttempt(None)]
    return life, []


def _begin_kill(life: Life, reason: str, now: float, grace: float | None, *, by: str = "runner",
                now_restart: bool = False) -> tuple[Life, list[Effect]]:
    g = sane_seconds(grace, 10.0, GRACE)
    kill = KillInProgress(reason, now, now + g, by, now_restart=now_restart)
    return (replace(life, status=Status.STOPPING, kill=kill),
            [SignalTree("TERM", reason), Record("kill", {"reason": reason, "requested_by": by, "grace_s": g}),
             SetStatus(Status.STOPPING, f"{reason} kill")])


def _control(life: Life, ev: Control, now: float, cfg: Settings) -> tuple[Life, list[Effect]]:
    status = life.status
    busy = status in (Status.RUNNING, Status.STOPPING) and (life.attempt_live or life.lingering
                                                            or life.kill is not None)
    # The attempt's processes have ended and it is judged, or its leader has ended and its tree is watched for the
    # kill grace (does what outlives it train?): anything of the run still found is killed now, the verdict lands,
    # then the run stops (``_judged``). In the grace a kill had found nothing ``busy``, said "nothing was running"
    # and left a silent process of the attempt alive (a stuck data-loader worker holding its GPU; review R74).
    leader_ended = (status in (Status.RUNNING, Status.STOPPING) and life.exited and not life.lingering
                    and life.kill is None)
    if ev.cmd == "kill" and (life.judging or leader_ended):
        words, why, then = (
            (JUDGING_WORDS, "killed by user while the ended attempt was judged",
             "the run stops once its verdict is written") if life.judging else
            (LEADER_ENDED_WORDS, "killed by user after the attempt's leader ended",
             "what is left of it is killed, and the run stops once its verdict is written"))
        if life.stop_by is not None:
            return life, [Reply({"ok": True, "message": f"already stopping (user kill): {words}"})]
        return (replace(life, status=Status.STOPPING, stop_by=ev.by),
                [SignalTree("KILL", why),
                 Record("kill", {"reason": "user", "requested_by": ev.by, "grace_s": 0.0}),
                 SetStatus(Status.STOPPING, "user kill"),
                 Reply({"ok": True, "message": f"{words}: {then}"})])
    if ev.cmd == "restart" and life.judging and life.stop_by is not None:
        return life, [Reply({"ok": False, "message": USER_KILL_UNDER_WAY})]
    if ev.cmd == "restart" and life.judging:
        return life, [Reply({"ok": False, "message": f"{JUDGING_WORDS}: restart once its verdict is written"})]
    if ev.cmd == "kill":
        grace = sane_seconds(ev.grace_s, cfg.grace_s, GRACE)
        if life.kill and life.kill.reason != "user":
            # the user's kill joins the runner's (a restart's, a hang's) under way: recorded, so that the events say
            # who stopped the run and a runner taking the run over carries on the user's kill, not a restart
            # (``recovery.kill_under_way`` reads the last ``kill``: round 32)
            kill = replace(life.kill, reason="user", requested_by=ev.by)
            return replace(life, kill=kill), [
                Record("kill", {"reason": "user", "requested_by": ev.by, "joins": life.kill.reason,
                                "grace_s": round(max(0.0, kill.deadline - now), 3)}),
                Reply({"ok": True, "message": f"already stopping ({life.kill.reason}): the run stops after it, "
                                              "no restart"})]
        if life.kill:
            return life, [Reply({"ok": True, "message": f"already stopping ({life.kill.reason})"})]
        if busy:
            new, effects = _begin_kill(life, "user", now, grace, by=ev.by)
            return new, effects + [Reply({"ok": True, "message": f"SIGTERM sent; SIGKILL in {grace:g}s for "
                                                                 f"anything left", "grace_s": grace})]
        if status in TERMINAL:
            return life, [Reply({"ok": False, "message": f"run is already {status}"})]
        return (replace(life, status=Status.KILLED, cooldown=None),
                [SetStatus(Status.KILLED, f"killed by user while {status}"),
                 Reply({"ok": True, "message": f"run stopped (was {status}); nothing was running", "pids": []})])
    if ev.cmd == "restart":
        if busy and (life.attempt_live or life.lingering):
            if life.kill and life.kill.reason == "user":
                # the user's kill goes on and nothing restarts the run after it: a restart from a second console is
                # refused in so many words (it had been told "already stopping (user)", ok, and waited for an
                # attempt that never came: round 32)
                return life, [Reply({"ok": False, "message": USER_KILL_UNDER_WAY})]
            if life.kill:
                kill = replace(life.kill, reason="restart", now_restart=ev.now)
                return replace(life, kill=kill), [Reply({"ok": True, "message": f"already stopping ({kill.reason})"})]
            new, effects = _begin_kill(life, "restart", now, cfg.grace_s, by=ev.by, now_restart=ev.now)
            return new, effects + [Reply({"ok": True, "message": "stopping, then restarting"})]
        if status in (Status.COOLDOWN, Status.PAUSED):
            new, effects = _cooldown(life, "restart requested", now, cfg, floor=0.0 if ev.now else None)
            return new, effects + [Reply({"ok": True, "message": "cooling down, then restarting", "pids": []})]
        return life, [Reply({"ok": False, "message": f"cannot restart while {status}"})]
    if ev.cmd == "resume":
        if status != Status.PAUSED:
            return life, [Reply({"ok": False, "message": f"run is {status}, not paused"})]
        new, effects = _cooldown(life, "resumed by user", now, cfg)
        return new, effects + [Reply({"ok": True, "message": "resuming after cooldown"})]
    return life, []  # status, verify, kill_pid: answered by the runner, no lifecycle change


def _tick(life: Life, now: float) -> tuple[Life, list[Effect]]:
    kill = life.kill
    if not kill:
        return life, []
    if not kill.escalated and now >= kill.deadline:
        return (replace(life, kill=replace(kill, escalated=True)),
                [SignalTree("KILL", f"still alive after {kill.deadline - kill.started:g}s grace")])
    if kill.escalated and now >= kill.deadline + ESCALATED_REPORT_S:
        return (replace(life, kill=replace(kill, deadline=now)),
                [SignalTree("KILL", "processes survive SIGKILL"),
                 Record("alert", {"level": "critical", "rule": "kill_failed",
                                  "message": "processes survive SIGKILL"})])
    return life, []


def _conditions(life: Life, ev: ConditionsProbe, now: float) -> tuple[Life, list[Effect]]:
    cd = life.cooldown
    if life.status != Status.COOLDOWN or cd is None:
        return life, []
    cd = replace(cd, waiting_on=tuple(ev.waiting))
    life = replace(life, cooldown=cd)
    effects: list[Effect] = []
    if ev.waiting and ev.on_busy == "kill" and ev.blockers:
        effects.append(KillBlockers())
    if ev.waiting and ev.on_busy == "refuse" and cd.preflight:
        msg = "pre-flight failed: " + "; ".join(ev.waiting)
        return replace(life, status=Status.FAILED, cooldown=None), effects + [SetStatus(Status.FAILED, msg)]
    if now < cd.earliest or (ev.waiting and now < cd.ceiling_at) or ev.hold:
        return life, effects
    launch = Launch(new_port=bool(ev.waiting) and ev.port_busy, ceiling_alert=tuple(ev.waiting))
    return replace(life, cooldown=None, attempt_live=True, exited=False, returncode=None), effects + [launch]


def _judged(life: Life, ev: Judged, now: float, cfg: Settings) -> tuple[Life, list[Effect]]:
    stop_by = life.stop_by
    life = replace(life, attempt_live=False, exited=False, lingering=False, kill=None, judging=False, stop_by=None)
    if stop_by is not None and ev.action not in ("succeed", "unsaved"):
        # killed while its crash was judged: the verdict is recorded (last_crash, its report), the run is the
        # user's killed as any kill of a live attempt is; a training that finished keeps its end
        return replace(life, status=Status.KILLED, cooldown=None), [SetStatus(Status.KILLED, "killed by user")]
    if ev.action == "succeed":
        return replace(life, status=Status.SUCCEEDED), [SetStatus(Status.SUCCEEDED, ev.reason)]
    if ev.action == "unsaved":  # exit 0, but no verified checkpoint holds the result
        return replace(life, status=Status.UNSAVED), [SetStatus(Status.UNSAVED, ev.reason)]
    if ev.action == "restart":
        return _cooldown(life, ev.reason, now, cfg, delay=ev.delay_s, floor=ev.floor_s)
    if ev.action == "pause":
        return (replace(life, status=Status.PAUSED),
                [Record("pause", {"reason": ev.reason}), SetStatus(Status.PAUSED, ev.reason)])
    if ev.action == "stop":
        return replace(life, status=Status.KILLED), [SetStatus(Status.KILLED, "killed by user")]
    return replace(life, status=Status.FAILED), [SetStatus(Status.FAILED, ev.reason)]


# ---- the status where no runner is (the only places outside ``step`` that decide one) ----------
def created() -> Status:
    """A new run directory, before its runner starts (``process.launch.create_run``)."""
    return Status.STARTING


def never_started(status: Status | None) -> Status | None:
    """A new run whose runner died before it wrote a word (``process.launch.record_never_started``):
    a run still STARTING ends FAILED (a ``launch_failed`` crash); any other status is the runner's
    (None: nothing to change)."""
    return Status.FAILED if status == Status.STARTING else None


def imported() -> Status:
    """A foreign log opened in the run browser: a run directory no runner ever supervises
    (``moeconsole.console.foreign``)."""
    return Status.IMPORTED


def killed_without_runner() -> Status:
    """Every process of the run ended by a direct kill because no runner could start
    (``process.killrun.end_run``)."""
    return Status.KILLED


def replayed(status: Status | None, kind: str, value: Any = None) -> Status | None:
    """``state.json`` was lost: the status rebuilt from ``events.jsonl``, one record at a time
    (``supervisor.recovery.recover_state``). A ``status`` record says it; an ``attempt_start``
    after an end means the run went on (running); anything else changes nothing."""
    if kind == "status":
        return Status.parse(value) or status
    if kind == "attempt_start":
        return status if status in TERMINAL else Status.RUNNING
    return status
