"""The snapshot model: one immutable picture of a run, built only from its run directory
(plus live GPU telemetry). The Textual UI renders it and ``--json`` serialises the very same
object, so the two cannot disagree.

``RunWatcher`` reads the run directory incrementally (byte offsets into the append-only
files), so polling a run with a million steps costs only what is new since the last poll.
"""
from __future__ import annotations

import collections
import math
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from moeconsole.runner.core.units import clip, duration, printable
from moeconsole.runner.rundir import jsonio, ranktimes, rundir, runfiles, seriesfile
from moeconsole.runner.rundir.jsonio import StatKey, stat_key as _stat_key
from moeconsole.runner.rundir.seriesfile import CHART_KEYS  # noqa: F401  (re-exported for rundiff and the console)
from moeconsole.runner.core import bounds, nodehealth
from moeconsole.runner.core.numbers import finite_float, run_cost
from moeconsole.runner.core.schema import as_dict
from moeconsole.runner.core.state import STATE_HEARTBEAT_S, LoadedState, StateDict, StateError
from moeconsole.runner.rundir.secrets import Redactor
from moeconsole.runner.ingest.tail import SEEN_BYTES, bytes_before, text_changed
from moeconsole.runner.core.series import Series, to_pairs
from moeconsole.runner.rundir import alertgroups
from moeconsole.runner.rundir.alertgroups import AlertBook, AlertGroup
# One object of a run-directory file or of telemetry, as read: an event, an alert, a crash, a
# checkpoint, a node, a GPU sample (JSON: its values stay Any until a reader narrows them).
Doc = dict[str, Any]
# What the node verdicts were judged from: each file's stat key, each node's step time, and which are stale.
NodesKey = tuple[int, tuple[float | None, ...], tuple[bool, ...]]
Telemetry = Callable[[StateDict], tuple[Doc | None, list[Doc]]]  # state -> (GPU document, blockers)

EVENT_KEEP = 200
LOG_TAIL_LINES = 40
LOG_TAIL_BYTES = 64 * 1024


@dataclass(frozen=True)
class Snapshot:
    """Everything a screen or a script needs about a run at one moment."""

    taken_at: float
    run: Doc
    last_metrics: Doc | None
    series: dict[str, Series] = field(repr=False)
    events: tuple[Doc, ...]
    alerts: tuple[Doc, ...]
    crashes: tuple[Doc, ...]
    checkpoints: tuple[Doc, ...]
    restarts_at: tuple[int, ...]
    gpu: Doc | None
    blockers: tuple[Doc, ...]
    log_tail: tuple[str, ...]
    nodes: tuple[Doc, ...] = ()
    # the runner's metric record of each log_tail line (None: the line has none), from the
    # records' ``log_at``; None when the run's records do not name their lines (written before
    # they did, or a log opened without a runner): a line is then parsed to be shown as columns
    tail_records: tuple[Doc | None, ...] | None = field(default=None, repr=False)
    # evaluation results (evals.jsonl): their own series, never training steps
    eval_series: Series = field(default_factory=Series, repr=False)
    last_eval: Doc | None = None
    eval_count: int = 0
    alert_groups: tuple[AlertGroup, ...] = ()  # one per cause, newest news first, with ack state
    # every other number the log carries (lr, epoch, extras, the step's wall time "t") and every
    # number of the evaluations, by name: any of them can be charted
    other_series: dict[str, Series] = field(default_factory=dict, repr=False)
    eval_values: dict[str, Series] = field(default_factory=dict, repr=False)
    # this host: CPU, RAM and the disk I/O and free space of the run's output directory
    # (``HostLine``), for a live run; None otherwise
    host: Doc | None = None

    def to_dict(self, series_points: int = 120, events: int = 20) -> Doc:
        return {
            "v": jsonio.SCHEMA_VERSION,
            "t": self.taken_at,
            "run": self.run,
            "last_metrics": self.last_metrics,
            "series": {k: to_pairs(*s.downsample(series_points)) for k, s in self.series.items()},
            "events": list(self.events[-events:]),
            "alerts": list(self.alerts[-events:]),
            "crashes": list(self.crashes),
            "checkpoints": list(self.checkpoints),
            "restarts_at": list(self.restarts_at),
            "gpu": self.gpu,
            "blockers": list(self.blockers),
            "log_tail": list(self.log_tail),
            # the runner's record of each log_tail line (null: the line has none), what the
            # screen's tail shows as its columns; null when the records do not name their lines
            "tail_records": list(self.tail_records) if self.tail_records is not None else None,
            "nodes": list(self.nodes),
            "eval": {"count": self.eval_count, "last": self.last_eval,
                     "loss": to_pairs(*self.eval_series.downsample(series_points))},
            "alert_groups": [g.to_dict() for g in self.alert_groups],
            "other_series": {k: to_pairs(*s.downsample(series_points)) for k, s in self.other_series.items()},
            "eval_values": {k: to_pairs(*s.downsample(series_points)) for k, s in self.eval_values.items()},
            "host": self.host,
        }

    @property
    def active_alerts(self) -> list[AlertGroup]:
        """Unacknowledged groups, critical first: what the alert bar and the headline show."""
        return alertgroups.active(self.alert_groups)


def with_gone(checkpoints: tuple[Doc, ...], best: Doc | None = None) -> tuple[Doc, ...]:
    """``checkpoints`` (verdicts as the snapshot keeps them) with how each save that is not on disk now
    is gone (``order.saves_gone``, the one rule): ``gone`` its word, and ``deleted: true`` only when a
    deletion is proven (rotated away by its trainer, removed with its directory), never for a save
    merely not found (a disk not mounted: review R72). One look at the disk per save: asked only by the
    views that show it (``runs show``, ``--json``; ``RunWatcher.poll(saves_gone=True)``). ``best``: the run's
    best save as its trainer names it (``run.best_checkpoint``), which the trainer never deletes."""
    from moeconsole.runner.checkpoints.order import GONE_UNREACHABLE, saves_gone
    named = best.get("path") if isinstance(best, dict) else None
    gone = saves_gone([(str(c["path"]), c.get("step") if isinstance(c.get("step"), int) else None)
                       for c in checkpoints if isinstance(c.get("path"), str) and c.get("path")],
                      best=named if isinstance(named, str) and named else None)
    out = []
    for c in checkpoints:
        path = c.get("path")
        word = gone.get(path) if isinstance(path, str) else None
        out.append(c if word is None else {**c, "gone": word, "deleted": word != GONE_UNREACHABLE})
    return tuple(out)


def preflight_reason() -> str:
    """The lifecycle's name for the checks before the first launch (imported when a cooldown is
    shown: the lifecycle module costs an attached console about 1 MiB it needs only then)."""
    from moeconsole.runner.core.lifecycle import PREFLIGHT
    return PREFLIGHT


# A live run's word when its runner lives but state.json has not moved past ``stale_after_s``.
STATE_NOT_WRITTEN = "runner alive, state.json not written: see runner.log"


def runner_stopped_words(pid: Any) -> str:
    """A live run's word when its runner is stopped (SIGSTOP, Ctrl-Z, a debugger): it reads,
    records and answers nothing until continued; the training goes on writing train.log."""
    return f"runner stopped: kill -CONT {pid}"


# A stale run's word when its runner is gone (dead, or its PID reused): nothing supervises it.
RUNNER_GONE = "runner gone"


def runner_frozen_words(cgroup: Any) -> str:
    """A live run's word when its runner is frozen by its cgroup's freezer (`docker pause`,
    `systemctl freeze`, a batch system's suspend): like a stopped one it records and answers
    nothing, but `kill -CONT` does not wake it; whoever froze the cgroup thaws it."""
    from moeconsole.runner.core.state import frozen_words
    return f"runner {frozen_words(cgroup)}"


def copy_words(original: Any) -> str:
    """A live run's word when its directory is a copy of one whose run is live (``rundir.live_original``:
    `cp -a`, `rsync -a` of a live run): its runner and training are that directory's."""
    return f"a copy: the run is live in {printable(str(Path(str(original)).parent))}"


def elsewhere_words(host: Any) -> str:
    """A live run's word when its runner ran on another machine (or a container: another host name
    where its PID means nothing here, ``runner_elsewhere``) and state.json stopped changing: nothing
    here can tell whether it lives."""
    return f"runner on {host}, not seen from here"


def stale_runner_words(run: Doc) -> str:
    """Why a stale run is stale, in the words the status word (``status_word``) and the status
    line's second line show: its runner stopped (``runner_stopped_words``) or frozen
    (``runner_frozen_words``), alive but not writing
    state.json (``STATE_NOT_WRITTEN``: a run directory remounted read-only, a failing disk, a stuck
    runner; runner.log says which), or gone (``RUNNER_GONE``). Read only of a stale run."""
    if run.get("copy_of"):
        return copy_words(run["copy_of"])
    if run.get("runner_elsewhere"):
        return elsewhere_words(run["runner_elsewhere"])
    if run.get("runner_stopped"):
        return runner_stopped_words(run.get("runner_pid"))
    if run.get("runner_frozen"):
        return runner_frozen_words(run["runner_frozen"])
    return STATE_NOT_WRITTEN if run.get("runner_alive") else RUNNER_GONE


def judging_words(attempt: Any) -> str:
    """What the status word says while the runner judges an ended attempt (state.json's ``judging``)."""
    return f"attempt {attempt} ended, judging its crash"


def storage_words(storage: Mapping[str, Any]) -> str:
    """What the status word says while the runner cannot write the run directory (state.json's
    ``storage``, written through the full-disk reserve): why, and how many records wait in memory."""
    waiting = storage.get("pending_records")
    return f"run directory not writable: {storage.get('error')}" + (
        f"; {waiting} records wait in memory" if isinstance(waiting, int) and waiting > 0 else "")


def status_word(run: Doc) -> str:
    """The status as the UI shows it: RUNNING, COOLDOWN 42s, PAUSED, ... (also in JSON). A
    cooldown whose floor has passed says that it still waits instead of counting down to
    "COOLDOWN 0s": "COOLDOWN waiting", and "COOLDOWN waiting for disk room" while a ``disk_full``
    crash waits for room on the output's filesystem (at 80 columns the status line's second line
    holds the crash's alert, so the word is where a user learns it; ``runs show`` and ``--json``
    say the same)."""
    if run.get("damaged") and not run.get("status"):
        return "DAMAGED"
    status = (run.get("status") or "unknown").upper()
    short = run.get("ended_short")
    if status == "SUCCEEDED" and isinstance(short, dict):
        # exit 0 short of its total with nothing to say why (``core.ending``): never a bare SUCCEEDED
        return f"ENDED SHORT (step {short.get('step')} of {short.get('max_steps')})"
    stopped = run.get("stopped_by")
    if status == "SUCCEEDED" and isinstance(stopped, dict):
        # it stopped itself on purpose short of its total, its own line says what did (``core.ending``)
        return f"SUCCEEDED (stopped by {stopped.get('by')} at step {stopped.get('step')} of {stopped.get('max_steps')})"
    if run.get("stale"):
        return f"{status}? ({stale_runner_words(run)})"
    storage = run.get("storage")
    if isinstance(storage, dict) and storage.get("error"):
        # the runner cannot write the run directory (a full disk): what is read now is not recorded yet
        return f"{status} ({storage_words(storage)})"
    judging = run.get("judging")
    if isinstance(judging, dict) and status in ("RUNNING", "STOPPING"):
        # the attempt ended and the runner reads its crash off its loop (round 23): not training, not hung
        return f"{status} ({judging_words(judging.get('attempt'))})"
    if run.get("training_held"):   # stopped, or frozen by its cgroup: not training, not hung
        return f"{status} ({run['training_held']})"
    if run.get("waiting_nodes"):   # torchrun's agent waits in its rendezvous (no step yet): not hung, not held
        return f"{status} ({run['waiting_nodes']})"
    cd = run.get("cooldown") or {}
    if status == "COOLDOWN" and cd.get("reason") == preflight_reason():
        return "PRE-FLIGHT"  # checks before the first attempt, not a cooldown after a crash
    if status == "COOLDOWN" and cd.get("waiting_on") and (finite_float(cd.get("remaining_s")) or 0.0) <= 0:
        from moeconsole.runner.checkpoints.diskroom import is_room_wait
        room = any(is_room_wait(w) for w in cd["waiting_on"])
        return f"COOLDOWN waiting{' for disk room' if room else ''}"
    if status == "COOLDOWN" and cd.get("remaining_s") is not None:
        return f"COOLDOWN {int(math.ceil(cd['remaining_s']))}s"
    job = run.get("job") or {}
    if status == "RUNNING" and job.get("state") and job.get("ended_at") is None and job["state"] != "RUNNING":
        # Submitted but not (yet) running: Slurm's word and why, e.g. PENDING (Resources).
        return f"{job['state']} ({job['reason']})" if job.get("reason") else str(job["state"])
    return status


def state_words(state: Doc, now: float, problem: str | None = None) -> tuple[str, str | None]:
    """The status word and what the run waits on of a run's ``state.json`` as read (``problem``:
    why it could not be read, when it could not): the words every reader shows (the status line,
    ``--json``, the receipt, ``kill`` while it waits): "COOLDOWN waiting for disk room" and
    "waiting on: room on ...", "PRE-FLIGHT", "PENDING (Resources)", "DAMAGED"; a run whose runner
    is gone says so instead of waiting."""
    doc = {**state, **liveness_facts(state, now)}
    if problem and not state.get("status"):
        doc["damaged"] = problem
    if state.get("status") == rundir.COOLDOWN:
        doc["cooldown"] = cooldown_now(state.get("cooldown"), now)
    return status_word(doc), waiting_words(doc)


def status_said(state: Doc, problem: str | None = None, now: float | None = None) -> str:
    """The status of a run as a command says it when it stops waiting (``restart``, ``kill``):
    its word (``state_words``) and why state.json could not be read, when it could not:
    "RUNNING", "DAMAGED (state.json: ...)"; never a raw None."""
    word, _ = state_words(state, time.time() if now is None else now, problem)
    return word + (f" ({problem})" if problem else "")


def training(status: Any, stale: bool) -> bool:
    """Whether the run trains now: starting or running, its runner there. The one rule for an
    ETA (``eta_s`` is None otherwise: a paused, cooling-down, stopping, stale or ended run has
    none, in ``--json``, the status line and the compare table alike)."""
    return status in (rundir.STARTING, rundir.RUNNING) and not stale


def restart_command(ref: str, status: Any) -> str:
    """The command that starts a run that is over again: ``restart``, with ``--force`` for a
    finished run (succeeded, unsaved: ``rundir.FINISHED``), which `restart` refuses without it
    (``commands.restart``). ``ref``: the run as a shell types it (its id, or ``rundir.command_ref``'s
    short id and ``--runs-dir``). The one owner of that rule: ``next_command``, the run screen's
    banner and r, `run`'s last line and `supervise` on an ended run say it so (the banner and r had
    each decided --force, and named the run differently: review R51)."""
    force = " --force" if status in rundir.FINISHED else ""
    return f"moeconsole restart{force} {ref}"


def command_refused(run: Doc) -> bool:
    """The run FAILED on its command's own refusal: its last crash is ``config_error`` (the trainer refused
    its command line, arguments, data or program before a step: ``crash._config_verdict``, whose hint says
    restarting fails the same way). A restart runs the run's own copy of its recipe (``recipe.yaml``),
    command and all, unchanged: a fix made in the recipe file reaches only a new run, `moeconsole run`
    (``REFUSED_NEXT``). ``run``: a state.json or a snapshot's run (status, last_crash). The one owner of
    that fact: ``next_command``, the run screen's banner and r, `run`'s last line and `runs show` read it
    (newcomer round 12: all of them said "once the crash is fixed, moeconsole restart 153d"; typed after
    fixing the recipe, it ran the refused `--learning_rte` again, three attempts more)."""
    return str(run.get("status") or "").lower() == rundir.FAILED and \
        (run.get("last_crash") or {}).get("class") == "config_error"


# What a run whose command was refused needs next, in words (``command_refused``): no command starts it
# again as it is.
REFUSED_NEXT = "moeconsole run it anew (restart repeats its command)"


def next_command(run: Doc, ref: str | None = None) -> str | None:
    """The command a run needs next where nothing supervises it: a live run whose runner is
    gone, a new runner (it adopts the training); a FAILED run, ``restart`` (once the crash is
    fixed; where it resumes is ``launch.resume_plan``'s to say); an UNSAVED one, ``restart
    --force`` (``restart_command``), as a SUCCEEDED one that ended short of its total
    (``ended_short``). None for every other run. ``ref``: the run as a shell types it
    (``rundir.command_ref``: the run screen's banner, as its r says it), else its whole id. The
    one owner of the next step: the run screen's banner, ``runs show`` and ``--json``
    (``run.next_command``) read it. None for a run whose command was refused (``command_refused``):
    a restart runs that command again, unchanged; the fix goes to a new run (``REFUSED_NEXT``)."""
    run_id = run.get("id")
    if not run_id:
        return None
    ref = ref or str(run_id)
    if run.get("stale") and run.get("copy_of"):   # a runner of the copy is refused: the run is the original's
        original = Path(str(run["copy_of"]))
        return f"moeconsole runs show {rundir.command_ref(original.parent, original.name)[1]}"
    if run.get("stale") and run.get("runner_elsewhere"):
        return None   # on that machine, `moeconsole supervise` if it is gone there: said by the word, never typed here
    if run.get("stale"):
        # a new runner is refused while the old one lives ("a runner is already alive"); a
        # stopped one goes on once continued
        if run.get("runner_stopped") and run.get("runner_pid"):
            return f"kill -CONT {run['runner_pid']}"
        return None if run.get("runner_alive") else f"moeconsole supervise {ref}"
    status = (run.get("status") or "").lower()
    if command_refused(run):
        return None    # a restart repeats the refused command (REFUSED_NEXT says what to do instead)
    if status == rundir.FAILED or status == rundir.UNSAVED or (status == rundir.SUCCEEDED and run.get("ended_short")):
        return restart_command(ref, status)
    return None


def runner_liveness(state: Doc, now: float) -> tuple[bool, float | None, bool]:
    """(runner alive, state age in seconds, stale) of a run: stale is a live run whose runner
    on this host is dead, or lives but no longer moves its state (stuck, or a disk that refuses
    writes) past ``stale_after_s``."""
    runner = state.get("runner") or {}
    runner_pid = runner.get("pid")
    here = rundir.runner_here(runner)
    created = runner.get("start_time")
    # a zombie (a container's PID 1 that never reaps, a slow one) or a reused PID is no runner
    from moeconsole.runner.telemetry.identity import lives
    alive = isinstance(runner_pid, int) and here and lives(runner_pid, float(created)
                                                           if isinstance(created, (int, float)) else None)
    live = state.get("status") in rundir.LIVE
    updated, limit = state.get("updated_at"), state.get("stale_after_s")
    state_age = now - updated if isinstance(updated, (int, float)) else None
    frozen = live and state_age is not None and isinstance(limit, (int, float)) and state_age > limit
    return alive, state_age, (live and here and not alive) or frozen


# A reader asks a live runner for its state when state.json is older than three of its rewrites
# (``STATE_HEARTBEAT_S``): the runner cannot write its run directory (a filesystem the kernel took
# read-only, a quota), but its loop lives and answers. One second for the answer: a loop that ticks
# answers in milliseconds, one that does not is said stale as before.
ASK_RUNNER_PAST_S = 3 * STATE_HEARTBEAT_S
RUNNER_ANSWER_S = 1.0


def held_state(run: rundir.RunDir, loaded: LoadedState, now: float) -> LoadedState:
    """``loaded`` (state.json as read), or, when its runner should be asked (``runner_to_ask``), the
    state it answers (``answered_state``): what it holds but cannot write (round 27: a runs directory
    turned read-only read "RUNNING? ... state.json not written" with the runner cooling down and
    saying why). Only the runner state.json names is asked (``rundir.named_runner_pid``): another process
    listening at the run's socket (round 32) is sent nothing, and state.json is shown as read."""
    if not runner_to_ask(loaded, now):
        return loaded
    return answered_state(run, now, rundir.named_runner_pid(loaded.state)) or loaded


def runner_to_ask(loaded: LoadedState, now: float) -> bool:
    """Whether ``loaded`` is a live run's state.json, late (``ASK_RUNNER_PAST_S``, or its ``stale_after_s`` when
    shorter), whose runner lives here, neither stopped nor frozen: one that can answer for it."""
    state = loaded.state
    updated, stale_after = state.get("updated_at"), state.get("stale_after_s")
    # (by the time a reader would call it stale at the latest: a runner that answers is never said stale)
    late = min(ASK_RUNNER_PAST_S, stale_after) if isinstance(stale_after, (int, float)) else ASK_RUNNER_PAST_S
    if loaded.problem or state.get("status") not in rundir.LIVE or not isinstance(updated, (int, float)) \
            or now - updated <= late:
        return False
    alive, _, _ = runner_liveness(state, now)
    return alive and not runner_stopped(state, True) and runner_frozen(state, True) is None


# control sockets whose runner did not answer -> when (monotonic): not asked again for ``ASK_RUNNER_PAST_S`` (each
# ask may wait ``RUNNER_ANSWER_S``: a console polling, the browser refreshing, must not wait at every look)
_UNANSWERED: dict[str, float] = {}


def answered_state(run: rundir.RunDir, now: float, runner_pid: int | None) -> LoadedState | None:
    """The state run's runner answers on its control socket (``StatusRequest``, ``RUNNER_ANSWER_S``),
    through state.json's model, as of ``now``; the keys this version does not know are left out. None:
    no answer, or one the model refuses, or a runner that did not answer within ``ASK_RUNNER_PAST_S``,
    or a listener that is not ``runner_pid`` (``control.not_the_runner``: nothing is sent to it)."""
    from moeconsole.runner.core.state import STATE_KEYS, from_dict
    from moeconsole.runner.supervisor import control
    sock, asked = str(run.sock), time.monotonic()
    if asked - _UNANSWERED.get(sock, -math.inf) < ASK_RUNNER_PAST_S:
        return None
    try:
        answer = control.send(run.sock, control.StatusRequest(by="reader"), timeout=RUNNER_ANSWER_S,
                              runner_pid=runner_pid)
        held = answer.state if answer.ok and isinstance(answer.state, dict) else None
        model = from_dict({k: v for k, v in held.items() if k in STATE_KEYS}) if held is not None else None
    except (control.ControlError, OSError, StateError):
        model = None
    if model is None:
        _UNANSWERED[sock] = asked
        return None
    _UNANSWERED.pop(sock, None)
    return LoadedState({**as_dict(model), "updated_at": now})


def liveness_facts(state: Doc, now: float) -> dict[str, Any]:
    """``{stale, runner_alive, runner_stopped, runner_frozen, runner_pid, training_held, waiting_nodes}`` of a
    run (``runner_liveness``, ``runner_stopped``, ``runner_frozen``, ``training_held``, ``waiting_nodes``), as every reader shows them: the run screen and ``--json`` (``run``), `runs ls`
    and the browser (``store.refresh_live``), the receipt's status word; the status word and what the
    run waits on read them (``status_word``)."""
    alive, _, stale = runner_liveness(state, now)
    return liveness_facts_of(state, alive, stale)


# ``liveness_facts`` of a run that is not live (finished, damaged, empty): every `runs ls` row
# carries the same keys, live or not.
NOT_STALE: dict[str, Any] = {"stale": False, "runner_alive": False, "runner_stopped": False, "runner_frozen": None,
                             "copy_of": None, "runner_elsewhere": None,
                             "runner_pid": None, "training_held": None, "waiting_nodes": None}


def liveness_facts_of(state: Doc, alive: bool, stale: bool) -> dict[str, Any]:
    """``liveness_facts`` from ``runner_liveness``'s results a caller already has (one read of
    /proc per poll where the caller needs the state age too)."""
    stopped = runner_stopped(state, stale)
    original = rundir.live_original(state) if stale and state.get("status") in rundir.LIVE else None
    return {"stale": stale, "runner_alive": alive, "runner_stopped": stopped,
            "copy_of": str(original.path) if original is not None else None,
            "runner_elsewhere": runner_elsewhere(state, stale),
            "runner_frozen": runner_frozen(state, stale) if stale and alive and not stopped else None,
            "runner_pid": (state.get("runner") or {}).get("pid"), "training_held": training_held(state, stale),
            "waiting_nodes": waiting_nodes(state, stale)}


def runner_elsewhere(state: Doc, stale: bool) -> str | None:
    """The host a stale live run's runner ran on, when that is not this machine: another host name
    and not a process this reader can ask (``rundir.runner_here``: another boot or PID namespace).
    A run directory on a shared filesystem read from the login node while the runner ran on a GPU
    node, a runs directory copied to a laptop, a container's run read from its host: "runner gone"
    and `moeconsole supervise` had told this machine to start the training, where nothing can tell
    whether it still runs there. None otherwise (a reboot keeps the host name: gone is then known)."""
    host = rundir.runner_host_elsewhere(state) if stale else None
    return printable(host) if host is not None else None


def training_held(state: Doc, stale: bool) -> str | None:
    """What a running run's training held still says (``state.held_words`` of state.json's
    ``held``, which its runner sets and clears: stopped, or frozen by its cgroup), else None.
    Only while the runner writes its state (a stale run's ``held`` is its last runner's word)."""
    if stale or state.get("status") not in (rundir.STARTING, rundir.RUNNING, rundir.STOPPING):
        return None
    from moeconsole.runner.core.state import held_words
    return held_words(state.get("held"), state.get("pgid"))   # -- -PGID only for the run's own group


def waiting_nodes(state: Doc, stale: bool) -> str | None:
    """What a running run whose torchrun agent waits for the other nodes says (``state.rendezvous_words``
    of state.json's ``rendezvous``, which its runner sets and clears), else None."""
    if stale or state.get("status") != rundir.RUNNING:
        return None
    from moeconsole.runner.core.state import rendezvous_words
    return rendezvous_words(state.get("rendezvous"))


def runner_stopped(state: Doc, stale: bool) -> bool:
    """Whether a stale run's runner on this host is stopped (``identity.is_stopped``: its PID and
    start time checked): asked only of a stale run, one read of /proc."""
    runner = state.get("runner") or {}
    pid, created = runner.get("pid"), runner.get("start_time")
    if not stale or not isinstance(pid, int) or not isinstance(created, (int, float)) \
            or not rundir.runner_here(runner):
        return False
    from moeconsole.runner.telemetry.identity import is_stopped
    return is_stopped(pid, float(created))


def runner_frozen(state: Doc, stale: bool) -> str | None:
    """The cgroup whose freezer holds a stale run's runner on this host (``cpustat.frozen_cgroup``;
    its PID and start time checked), else None: asked only of a stale run whose runner lives and
    is not stopped. A frozen process is in state D or S, never T: it had read as a runner alive
    that does not write its state (see runner.log, which says nothing)."""
    runner = state.get("runner") or {}
    pid, created = runner.get("pid"), runner.get("start_time")
    if not stale or not isinstance(pid, int) or not isinstance(created, (int, float)) \
            or not rundir.runner_here(runner):
        return None
    from moeconsole.runner.telemetry.cpustat import frozen_cgroup
    from moeconsole.runner.telemetry.identity import lives
    cgroup = frozen_cgroup(pid)
    return cgroup if cgroup is not None and lives(pid, float(created)) else None


def _last_crash(last: Any) -> Any:
    """state.json's last crash, unless it is the user's kill (a run directory from before the
    runner left it out: ``moeconsole.runner.core.policy.is_crash_class``)."""
    from moeconsole.runner.core.policy import is_crash_class
    cls = last.get("class") if isinstance(last, dict) else last
    return last if is_crash_class(str(cls) if cls else None) else None


def cooldown_now(cd: Any, now: float) -> Doc | None:
    """state.json's cooldown with ``remaining_s`` (to its floor) as of ``now``; None without one."""
    if not isinstance(cd, dict):
        return None
    return {**cd, "remaining_s": max(0.0, (cd.get("until") or now) - now)}


def waiting_text(items: Any) -> str:
    """What a cooldown waits on, in one line: its ``waiting_on`` entries joined ("port 29500 busy,
    gpu memory on GPU 3")."""
    out = []
    for item in items or ():
        if isinstance(item, dict):
            what = item.get("what") or item.get("check") or item.get("name") or ""
            detail = item.get("detail") or item.get("message") or ""
            out.append(f"{what} {detail}".strip() or str(item))
        else:
            out.append(str(item))
    return ", ".join(out)


def waiting_words(run: Doc) -> str | None:
    """What a waiting run waits on, in the words of the status line's second line (the one
    owner: the console, ``runs show`` and the receipt read it): "waiting on: port 29500 busy (at
    least 3s more)", "waiting on: the cooldown floor (at least 12s more)". None when the run does
    not wait in a cooldown (a batch job's queue wait is in ``status_word``: "PENDING (Resources)")."""
    if (run.get("status") or "").lower() != rundir.COOLDOWN or run.get("stale"):
        return None
    cd = run.get("cooldown") or {}
    waiting = waiting_text(cd.get("waiting_on") or ())
    left = finite_float(cd.get("remaining_s"))
    floor = f" (at least {duration(left)} more)" if left else ""
    return f"waiting on: {waiting or 'the cooldown floor'}{floor}"


def _bytes_before_in_file(path: Path, end: int, n: int) -> bytes | None:
    """``tail.bytes_before`` of the file at ``path``, opened for this one read and closed again
    (``jsonio.open_read``: never blocks on a FIFO); None when it cannot be opened."""
    try:
        fd = jsonio.open_read(path)
    except OSError:
        return None
    try:
        return bytes_before(fd, end, n)
    finally:
        os.close(fd)


def _tail_with_offsets(path: Path, n: int = LOG_TAIL_LINES, max_bytes: int = LOG_TAIL_BYTES,
                redactor: Redactor | None = None) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Last complete lines of a log, secrets masked, and the byte offset each starts at in the
    file (what the runner stamps its records with, ``seriesfile.log_at``); progress-bar carriage
    returns keep only the newest redraw."""
    try:
        with os.fdopen(jsonio.open_read(path), "rb") as f:   # never blocks on a FIFO
            f.seek(0, os.SEEK_END)
            size = f.tell()
            start = max(0, size - max_bytes)
            f.seek(start)
            data = f.read()
    except OSError:
        return (), ()
    raw = data.split(b"\n")
    raw = raw[max(1 if size > max_bytes else 0, len(raw) - (n + 1)):]   # a cut first line is dropped
    offsets = []
    at = start + len(data) + 1
    for piece in reversed(raw):
        at -= len(piece) + 1
        offsets.append(at)
    offsets.reverse()
    out = []
    for piece in raw:
        line = piece.decode("utf-8", "replace").rstrip("\r").rsplit("\r", 1)[-1]
        out.append(clip(redactor.redact(line) if redactor else line, 500))
    while out and not out[-1]:
        out.pop()
        offsets.pop()
    return tuple(out[-n:]), tuple(offsets[-n:])


class RunWatcher:
    """Turns a run directory into Snapshots, reading only what is new each poll."""

    def __init__(self, run: rundir.RunDir, *,
                 telemetry: Telemetry | None = None,
                 full: bool = False,
                 book_source: Callable[[], seriesfile.SeriesBook] | None = None,
                 host: Callable[[StateDict], Doc | None] | None = None,
                 line_records: bool = False) -> None:
        """``full``: every metric point, read from metrics.jsonl (run comparison statistics);
        otherwise the bounded chart series, started from the runner's ``series.json``.
        ``book_source``: the chart book comes from there instead of the run directory (a log
        being imported: its newest steps, then its whole history). ``line_records``: each
        snapshot carries the runner's record of each log tail line (``tail_records``: the
        screen's tail shows them)."""
        self.run = run
        self.telemetry = telemetry
        self.host = host   # this host's line (CPU, RAM, output dir I/O), sampled with the GPUs
        self.full = full
        self.book_source = book_source
        self.book: seriesfile.SeriesBook | None = None
        self._events_off = 0
        self.events: collections.deque[Doc] = collections.deque(maxlen=EVENT_KEEP)
        self.alerts: collections.deque[Doc] = collections.deque(maxlen=EVENT_KEEP)
        self.checkpoints: dict[str, Doc] = {}
        # (the checkpoint directory's listing, monotonic time, the resume point) when read from disk
        self._resume_cache: tuple[tuple[tuple[str, int], ...], float, Doc | None] | None = None
        self._best_cache: tuple[tuple[str, Any], Doc | None] | None = None   # (resume point, its best save)
        self._crash_cache: dict[str, Doc] = {}
        self.crash_events: dict[int, Doc] = {}   # each attempt's crash event, for a report not on disk
        self.alert_book = AlertBook()  # every alert of the run, by cause (not only the newest events)
        self.redactor = Redactor.for_run_dir(run.path)
        self.nodes = NodeReader(run)
        # the log's last lines as last read: its stat key, when they were last known current
        # (monotonic), the lines, their offsets, and the bytes that ended the file then
        self._tail: tuple[StatKey | None, float, tuple[str, ...], tuple[int, ...], bytes] = (None, 0.0, (), (), b"")
        self._state: tuple[StatKey, float, LoadedState] | None = None   # state.json as last parsed: its stat key, monotonic time
        # the newest records by the log line they came from (the tail's columns); never for a
        # log being imported (its lines are parsed)
        self.line_records = (seriesfile.LineRecords(keep=LOG_TAIL_LINES) if line_records and book_source is None
                             else None)

    def _log_tail(self) -> tuple[tuple[str, ...], tuple[Doc | None, ...] | None]:
        """The log's last lines, read again only when the file changed (a poll woken by another
        file's write costs one stat) or when they are one refresh tick old (``bounds.REFRESH_S``:
        the stat key's blind spots, as for state.json, ``_load_state``: a log replaced by a new
        file with the freed inode, the old size and mtime tick), and the runner's record of each."""
        key = _stat_key(str(self.run.log))
        now = time.monotonic()
        known = self._tail
        if key is not None and key == known[0] and now - known[1] >= bounds.REFRESH_S and \
                not text_changed(known[4], _bytes_before_in_file(self.run.log, key[1], len(known[4]))):
            # the same identity a tick later, ending as it did: current still (a pread of its last
            # bytes, not the tail read again: a log quiet between its bursts is looked at each tick)
            known = self._tail = (key, now, *known[2:])
        elif key is None or key != known[0] or now - known[1] >= bounds.REFRESH_S:
            lines, offsets = _tail_with_offsets(self.run.log, redactor=self.redactor)
            ends = _bytes_before_in_file(self.run.log, key[1], SEEN_BYTES) if key is not None else None
            known = self._tail = (key, now, lines, offsets, ends or b"")
        records = self.line_records.of(known[3]) if self.line_records is not None else None
        return known[2], records

    def _load_state(self) -> LoadedState:
        """state.json through its model, parsed again when the file changed (its inode, size or
        mtime; the runner replaces it whole, a new inode each time, or with no inode free swaps it
        with its spare, ``jsonio.exchange_write``: the other inode, a new mtime; only where that is
        refused is it rewritten in its own inode, the mtime still moving) or when the parse is older than
        one refresh tick (``bounds.REFRESH_S``): a console polls when any file of the run changes (a
        1,024-rank run's log, ranks.json, metrics: two or three polls a second) and state.json
        changes about once a second. The tick bounds the stat key's blind spots: a freed inode is
        given to the next new file, so A -> B -> C can give C A's inode, size and (coarse: 4 ms on
        ext4, 1-2 s elsewhere, an NFS attribute cache) mtime, and a chmod that ends a read error
        moves the ctime only. A missing file is asked again every poll. A late state.json of a runner
        that lives here is its answer on the control socket instead (``runner_to_ask``, ``answered_state``:
        the state it holds and cannot write)."""
        key = _stat_key(str(self.run.state))
        known = self._state
        now = time.monotonic()
        if key is not None and known is not None and known[0] == key and now - known[1] < bounds.REFRESH_S:
            return known[2]
        loaded = held_state(self.run, self.run.load_state(), time.time())   # late: what its live runner holds
        self._state = (key, now, loaded) if key is not None else None
        return loaded

    def _read_metrics(self) -> seriesfile.SeriesBook:
        if self.book_source is not None:
            return self.book_source()
        if self.book is None:
            self.book = seriesfile.SeriesBook(limit=None) if self.full else seriesfile.load_book(self.run)
            if self.line_records is not None:
                self.line_records.prime(self.run)
        self.book.feed_file(self.run, self.line_records.feed if self.line_records is not None else None)
        return self.book

    def _read_events(self) -> None:
        for off, ev in jsonio.iter_jsonl(self.run.events, self._events_off):
            self._events_off = off
            self.events.append(ev)
            self.alert_book.feed(ev)
            kind = ev.get("type")
            if kind == "alert":
                self.alerts.append(ev)
            elif kind == "crash" and isinstance(ev.get("attempt"), int):
                self.crash_events[ev["attempt"]] = ev
            elif kind == "checkpoint" and ev.get("path"):
                self.checkpoints[ev["path"]] = {k: ev.get(k) for k in
                                                ("path", "step", "verdict", "ok", "reason", "suspect", "tensors", "t",
                                                 "t_up", "t_boot", "export")}

    def _crashes(self) -> tuple[Doc, ...]:
        out = []
        try:
            names = sorted(os.listdir(self.run.crashes), key=lambda s: int(s.split("-")[1].split(".")[0])
                           if s.startswith("attempt-") else 0)
        except (OSError, ValueError, IndexError):
            names = []
        for name in names:
            if name not in self._crash_cache:
                report, problem = runfiles.read(self.run.crashes / name, runfiles.CrashReport)
                if report is None and problem is None:
                    continue
                if report is None:  # a damaged report says so instead of showing garbage
                    number = name.split("-", 1)[-1].split(".")[0]
                    self._crash_cache[name] = {"attempt": int(number) if number.isdigit() else None,
                                               "class": "damaged", "exit_code": None, "signal": None,
                                               "summary": problem, "evidence": [], "t": None, "recovery": None,
                                               "hint": None}
                else:
                    rep = as_dict(report)
                    self._crash_cache[name] = {k: rep.get(k) for k in
                                               ("attempt", "class", "exit_code", "signal", "summary", "evidence",
                                                "t", "recovery", "hint")}
                    # the OOM rules and the memory module they build on (~1.6 MiB) load only
                    # for a run that has a crash report: a console on a healthy run never needs them
                    from moeconsole.runner.core.oom import crash_hint
                    self._crash_cache[name]["hint"] = crash_hint(rep)
                    mem = rep.get("memory")
                    if isinstance(mem, dict):  # a CUDA OOM's verdict (its memory history stays in the report)
                        self._crash_cache[name]["memory"] = {k: mem.get(k) for k in (
                            "verdict", "summary", "evidence", "advice", "restart", "gpu", "env",
                            "failed_allocation")}
            out.append(self._crash_cache[name])
        return tuple(sorted(out + _unreported(self.crash_events, out), key=lambda c: c.get("attempt") or 0))

    def _run_info(self, state: StateDict, now: float, book: seriesfile.SeriesBook, problem: str | None = None) -> Doc:
        status = state.get("status")
        alive, state_age, stale = runner_liveness(state, now)
        liveness = liveness_facts_of(state, alive, stale)
        cd = state.get("cooldown")
        if cd and status == rundir.COOLDOWN:
            cd = cooldown_now(cd, now)
        step = state.get("step")
        max_steps = state.get("max_steps")
        lm = book.last_metrics or {}
        step_time = _recent_step_time(book.series["step_time_s"], state)
        eta = None
        job = state.get("job") or None
        queued = bool(job and job.get("ended_at") is None and job.get("state") not in (None, "RUNNING"))
        if step is not None and max_steps and step_time and training(status, stale) and not queued \
                and not liveness["training_held"]:   # held still (stopped, frozen): no time to the end
            eta = max(0, max_steps - step) * step_time
        elapsed = rundir.run_elapsed(state, now)   # on the boot clock: a step of the wall clock moves nothing
        cost = state.get("cost_per_hour")
        so_far = run_cost(elapsed, cost)
        return {
            "id": self.run.run_id,
            "name": state.get("name") or self.run.run_id,
            "dir": str(self.run.path),
            "status": status,
            "status_word": "",
            "damaged": problem,  # why state.json could not be used (missing, corrupt, wrongly typed)
            **liveness,
            "attempt": state.get("attempt"),
            "restarts": state.get("restarts", 0),
            "max_restarts": state.get("max_restarts"),
            "step": step,
            # the step is a log entry's number (``ingest.records.step_numbered``): every view says so
            "step_numbered": bool(state.get("step_numbered")),
            "max_steps": max_steps if max_steps is not None else lm.get("max_steps"),
            "step_time_s": step_time,
            "eta_s": eta,
            "elapsed_s": elapsed,
            "cost_per_hour": cost,
            "cost_so_far": so_far,
            "cost_projected": run_cost((elapsed or 0) + (eta or 0), cost) if so_far is not None else None,
            "recipe_hash": state.get("recipe_hash"),
            "pids": state.get("pids") or [],
            "pgid": state.get("pgid"),
            "cooldown": cd if status == rundir.COOLDOWN else None,
            "pause_reason": state.get("pause_reason"),
            "judging": state.get("judging"),   # the ended attempt being judged (``status_word`` says so)
            "ended_short": state.get("ended_short") if status == rundir.SUCCEEDED else None,
            "stopped_by": state.get("stopped_by") if status == rundir.SUCCEEDED else None,
            "last_crash": _last_crash(state.get("last_crash")),
            "exit_code": state.get("exit_code"),
            "started_at": state.get("started_at"),
            "ended_at": state.get("ended_at"),
            "port": state.get("port"),
            "checkpoint_root": state.get("checkpoint_root"),
            "mem_capacity_gib": state.get("mem_capacity_gib"),
            "memory": state.get("memory"),  # the envelope per GPU, tightest first (moeconsole.runner.core.memory)
            "metric_count": book.metric_count,
            "state_age_s": state_age,
            "storage": state.get("storage"),
            "ingest": state.get("ingest"),
            "sync": state.get("sync"),
            "engine": state.get("engine") or "local",
            "job": job,  # a batch engine's job of this attempt: id, state, pending reason, nodes
            "import": state.get("import"),  # a log not made by moeconsole being read: progress, done
            "bad_saves": (state.get("bad_saves") or {}).get("total", 0),
            "last_good_checkpoint": (good := self._last_good(state, alive)),
            "best_checkpoint": self._best(good),
        }

    def _best(self, good: Doc | None) -> Doc | None:
        """The best save by the run's evaluations, as the resume point's trainer_state.json names it
        (``discover.best_save_named``: ``{path, step, metric, value, unsaved}``), with the verdict the runner gave it
        (``verdict``, ``ok``; None when it never verified it). Read again only when the resume point changes."""
        if not good or not good.get("path"):
            return None
        key = (str(good["path"]), good.get("t"))
        if self._best_cache is None or self._best_cache[0] != key:
            from moeconsole.runner.checkpoints.discover import best_save_named
            self._best_cache = (key, best_save_named(Path(str(good["path"]))))
        best = self._best_cache[1]
        if best is None:
            return None
        # the runner's events name each save by its resolved path (supervisor's ``Path(dir).resolve()``); the
        # Trainer's by the output dir as given (ms-swift's ``to_abspath``: symlinks kept)
        seen = self.checkpoints.get(best["path"]) or self.checkpoints.get(str(Path(best["path"]).resolve()))
        return {**best, "verdict": seen.get("verdict") if seen else None, "ok": seen.get("ok") if seen else None}

    def _last_good(self, state: StateDict, alive: bool) -> Doc | None:
        """The run's resume point, {path, step, t}: the one its runner wrote into state.json, else
        the same rule asked of the disk (``order.current_resume_point``; before,
        the newest save by step among the verdict events, which named a deleted save, skipped a
        suspect one the runner resumes from, and took the highest step where resumes count from
        step 1 again). ``t``: when its verdict was recorded."""
        from moeconsole.runner.checkpoints.order import RESUME_POINT_S, current_resume_point
        if not state.get("checkpoint_root"):
            return None
        if "resume_point" in state:   # the runner's word (its save still there when the runner is gone)
            good = current_resume_point(self.run, state, runner_alive=alive)
        else:   # a runner that wrote none: the disk, asked again when a save came or went and every RESUME_POINT_S
            key = self._saves_listing(state.get("checkpoint_root"))
            t = time.monotonic()
            cached = self._resume_cache
            if cached is None or cached[0] != key or t - cached[1] >= RESUME_POINT_S:
                try:
                    found = current_resume_point(self.run, state, runner_alive=False)
                except OSError:
                    found = None
                self._resume_cache = cached = (key, t, found)
            good = cached[2]
        if not good:
            return None
        seen = self.checkpoints.get(str(good.get("path")))
        return {"path": good.get("path"), "step": good.get("step"),
                **{k: seen.get(k) if seen else None for k in ("t", "t_up", "t_boot")}}   # its age: rundir.moment_age

    @staticmethod
    def _saves_listing(root: Any) -> tuple[tuple[str, int], ...]:
        """The checkpoint directory's entries and their modification times, cheaply (one scandir,
        one stat each, on every poll): a save written or deleted changes them; a save rewritten in
        place below them waits for the next ``RESUME_POINT_S``."""
        out: list[tuple[str, int]] = []
        if not isinstance(root, str):
            return ()
        try:
            with os.scandir(root) as it:
                for e in it:
                    try:
                        out.append((e.name, e.stat(follow_symlinks=False).st_mtime_ns))
                    except OSError:
                        continue
        except OSError:
            pass
        return tuple(sorted(out))

    def poll(self, *, with_gpu: bool = True, nodes: bool = True, saves_gone: bool = False) -> Snapshot:
        """``nodes=False``: the agents' nodes of the last poll again (as they were),
        their files not looked at (a console's poll woken by a log write between two timer polls).
        ``saves_gone``: whether each verified save is still on disk (``with_gone``), for the views that
        show it; the run screen, compare and the exporter never pay for it (review R72: 0.4-1 s a poll at
        1,000 saves)."""
        now = time.time()
        loaded = self._load_state()
        state = loaded.state
        book = self._read_metrics()
        self._read_events()
        run = self._run_info(state, now, book, loaded.problem)
        run["status_word"] = status_word(run)
        run["next_command"] = next_command(run)
        gpu: Doc | None = None
        blockers: list[Doc] = []
        host: Doc | None = None
        if with_gpu and self.telemetry:
            gpu, blockers = self.telemetry(state)
        crashes = _with_held_crash(self._crashes(), state.get("last_crash"))
        groups = self.alert_book.groups(alertgroups.read_acks(self.run.path), alertgroups.crash_hints(crashes))
        groups = alertgroups.current(groups, (state.get("memory") or {}).get("alerts"))
        run["open_alerts"] = sum(1 for g in groups if g.active)
        # after the metrics: every line the tail shows was written before the records read above
        # (the runner writes a line, then its record), so its record is among the newest kept
        log_tail, tail_records = self._log_tail()
        node_docs = self.nodes.read(now) if nodes else self.nodes.again(now)
        if with_gpu and self.host:
            # last: a one-shot's first CPU figure needs a minimum window (``host.cpu_figure``),
            # which the work above fills instead of a sleep
            host = self.host(state)
        saves = tuple(sorted(self.checkpoints.values(), key=lambda c: (c.get("step") or -1), reverse=True))
        return Snapshot(
            taken_at=now,
            run=run,
            last_metrics=book.last_metrics,
            series=book.series,
            events=tuple(self.events),
            alerts=tuple(self.alerts),
            crashes=crashes,
            checkpoints=with_gone(saves, run.get("best_checkpoint")) if saves_gone else saves,
            restarts_at=tuple(book.restarts_at),
            gpu=gpu,
            blockers=tuple(blockers),
            log_tail=log_tail,
            tail_records=tail_records,
            nodes=node_docs,
            eval_series=book.eval_series,
            last_eval=book.last_eval,
            eval_count=book.eval_count,
            alert_groups=tuple(groups),
            other_series=book.other,
            eval_values=book.eval_values,
            host=host,
        )


NODE_STALE_S = 10.0


def _node_entry(doc: Doc, name: str) -> Doc:
    """One agent file as a ``Snapshot.nodes`` entry, without its age (that changes each poll)."""
    host: Doc = doc["host"] if isinstance(doc.get("host"), dict) else {}
    ranks = doc.get("ranks")
    procs = doc.get("processes")
    return {"host": host.get("hostname") or name[:-5], "t": doc.get("t"), "gpu": doc.get("gpu"), "host_stats": host,
            "ranks": [r for r in ranks if isinstance(r, dict)] if isinstance(ranks, list) else [],
            "processes": procs if isinstance(procs, int) and not isinstance(procs, bool) else None}


def _glance_entry(path: str, name: str, size: int = 1 << 16, last: Doc | None = None) -> Doc | None:
    """One agent file as a ``Snapshot.nodes`` entry holding only its glance (``"glance": True``;
    see ``moeconsole.runner.rundir.agentglance``): what ``_node_entry`` gives for those fields. A file another
    version wrote with other types: its whole document (``_node_entry``); unreadable or not
    JSON: None. ``last``: the entry of this file's last read; its ranks and host parts are the
    new entry's too (the very same objects) while the file lists the same: an agent rewrites its
    file every second with new GPU figures, its ranks and host name stay. (At 128 nodes, 64 files
    a second: half the containers a read made, which set the cyclic collector's pace.)"""
    from moeconsole.runner.rundir import agentglance
    try:
        data = jsonio.read_small(path, size)
    except OSError:
        return None
    try:
        doc = agentglance.DECODER.decode(data)
    except agentglance.ValidationError:
        whole = jsonio.read_own_json(path, size=size)
        return _node_entry(whole, name) if isinstance(whole, dict) else None
    except (ValueError, RecursionError):  # not JSON (msgspec.DecodeError is a ValueError)
        return None
    gpu_dict = agentglance.gpu_dict
    gpu = None if doc.gpu is None else {
        "available": doc.gpu.available, "reason": doc.gpu.reason,
        "gpus": [gpu_dict(g) for g in doc.gpu.gpus]}
    hostname = doc.host.hostname if doc.host is not None else None
    procs = doc.processes
    ranks: list[Doc] | None = None
    host_stats: Doc | None = None
    if last is not None and last.get("glance"):
        kept = last["ranks"]
        if len(kept) == len(doc.ranks):
            for k, r in zip(kept, doc.ranks):
                was, got = k["rank"], r.rank
                if was != got or type(was) is not type(got):
                    break
            else:
                ranks = kept
        kept = last["host_stats"]
        if (not kept) if doc.host is None else (len(kept) == 1 and kept.get("hostname", kept) == hostname):
            host_stats = kept
    return {"host": hostname or name[:-5], "t": doc.t, "gpu": gpu,
            "host_stats": host_stats if host_stats is not None else {} if doc.host is None else {"hostname": hostname},
            "ranks": ranks if ranks is not None else [{"rank": r.rank} for r in doc.ranks],
            "processes": procs if isinstance(procs, int) and not isinstance(procs, bool) else None, "glance": True}


def _age_of(entry: Doc, now: float) -> float | None:
    """How long ago a node's agent wrote its file (None: no time in it); past NODE_STALE_S the
    node is stale. ``t`` read by ``finite_float``, the reader of every value an agent file
    carries: a bool, NaN, infinity or an int too large for a float is no time (the node is
    stale, the read goes on), a number in a string is one."""
    t = finite_float(entry.get("t"))
    return None if t is None else now - t


class NodeReader:
    """The agents' files of a run (``telemetry/<host>.json``), each re-read only when it changed
    (its inode, size or mtime), and the nodes judged again only when a file or a node's step
    time changed or a node went stale: a console on a 128-node run polls several times a
    second, agents write once a second, and the runner of a 1,024-rank run rewrites
    ``ranks.json`` at every flush (of which only each rank's step time is decoded:
    ``ranktimes.load_step_times``). A node's figures for that judgement
    (``nodehealth.node_figures``) are worked out when its file is read and its step time when
    its ranks or ``ranks.json`` change, so judging again costs only the verdicts. Past
    ``FILES_PER_S`` nodes a changed file waits its turn: each is re-read at most every
    (nodes / FILES_PER_S) seconds, so the cost per second stays flat (128 nodes: every 2 s),
    and until then it is not even looked at (no ``stat``).

    ``whole`` False (the run screen of a console): past ``GLANCE_PAST`` nodes each file is
    decoded only for the fields the judgement and the summary line use (``_glance_entry``,
    marked ``"glance": True``); the run screen shows one summary line per node then (its GPU
    panel holds at most 16 lines). Set it True again (the GPU view, with every node's rows) and
    the next read reads every file whole. ``--json`` and every other reader: whole documents."""

    FILES_PER_S = 64
    GLANCE_PAST = 16

    def __init__(self, run: rundir.RunDir) -> None:
        self.run = run
        self._dir = str(run.telemetry)
        self._files: dict[str, tuple[StatKey, float, Doc]] = {}   # name -> (stat key, read at, entry)
        self._gpu_figures: dict[str, tuple[Doc, Doc]] = {}   # name -> (entry, its nodehealth.gpu_figures)
        self._steps: dict[str, tuple[Doc, StatKey | None, float | None, list[int]]] = {}  # name -> (its entry, ranks.json, step time, its ranks)
        self._ranks: tuple[StatKey | None, ranktimes.StepTimes] = (None, {})
        self._steps_from: StatKey | None = None  # the ranks.json of the step times in ``_steps``
        self._judged: tuple[NodesKey, tuple[Doc, ...]] | None = None
        self._read_count = 0      # goes up when a file was read again, or left out, or came: what was read changed
        self._last: tuple[Doc, ...] = ()  # what read returned last
        self.whole = True         # every node's whole document (see the class's docstring)
        self._glanced = False     # the entries kept hold glances (read while whole was False)

    def _rank_times(self) -> tuple[StatKey | None, ranktimes.StepTimes]:
        """Each rank's step time in ``ranks.json``, decoded again only when the file changed."""
        key = _stat_key(str(self.run.rank_times))
        if key != self._ranks[0]:
            self._ranks = (key, ranktimes.load_step_times(self.run, key[1]) if key else {})
        return self._ranks

    def read(self, now: float) -> tuple[Doc, ...]:
        """Per-node telemetry (multi-node runs on shared storage), judged and ordered worst first
        (``moeconsole.runner.core.nodehealth``). An agent silent for NODE_STALE_S is marked stale."""
        try:
            names = sorted(n for n in os.listdir(self._dir) if n.endswith(".json"))
        except OSError:
            names = []
        files: dict[str, tuple[StatKey, float, Doc]] = {}
        wait_s = len(names) / self.FILES_PER_S if len(names) > self.FILES_PER_S else 0.0
        glance = not self.whole and len(names) > self.GLANCE_PAST
        if self._glanced and not glance:  # whole documents wanted now: every file read again at once
            self._files, self._judged = {}, None
        self._glanced = glance
        fresh = False
        for name in names:
            old = self._files.get(name)
            if old is not None and now - old[1] < wait_s:  # read lately: it waits its turn, not even looked at
                files[name] = old
                continue
            path = os.path.join(self._dir, name)
            key = _stat_key(path, regular=True)
            if key is None:
                continue
            if old is not None and old[0] == key:
                files[name] = old
                continue
            if glance:
                entry = _glance_entry(path, name, key[1], old[2] if old is not None else None)
                if entry is not None:
                    files[name] = (key, now, entry)
                    fresh = True
                continue
            doc = jsonio.read_own_json(path, size=key[1])
            if isinstance(doc, dict):
                files[name] = (key, now, _node_entry(doc, name))
                fresh = True
        if fresh or len(files) != len(self._files):  # (a file gone and none read: fewer files)
            self._read_count += 1
        self._files = files
        if not files:
            self._last = ()
            return ()
        entries = [entry for _, _, entry in files.values()]
        ages = [_age_of(entry, now) for entry in entries]
        stale = tuple(age is None or age > NODE_STALE_S for age in ages)
        read_from = self._read_count  # (not each file's stat key: 128 tuples a second, compared again)
        ranks = self._rank_times()
        known = self._judged
        # each node's step time: the last ones while no file and not ranks.json changed
        steps = known[0][1] if known is not None and known[0][0] == read_from and \
            ranks[0] == self._steps_from else self._node_steps(files, ranks)
        # the inputs of the verdicts: each file as read, each node's step time (not ranks.json
        # itself: rewritten at every flush of a run whose ranks print, it mostly moves ranks
        # within the same node's step time) and which nodes are stale
        judged_from: NodesKey = (read_from, steps, stale)
        if self._judged is not None and self._judged[0] == judged_from:
            # same verdicts: only the ages moved on (one copy of each node, not two)
            age_of = {entry["host"]: age for entry, age in zip(entries, ages)}
            self._last = tuple({**n, "age_s": age_of.get(n["host"])} for n in self._judged[1])
            return self._last
        nodes = [{**entry, "age_s": age, "stale": old} for entry, age, old in zip(entries, ages, stale)]
        judged = tuple(nodehealth.assess_nodes(nodes, None, self._figures(files, steps)))
        self._judged = (judged_from, judged)
        self._last = judged
        return judged

    def _node_steps(self, files: dict[str, tuple[StatKey, float, Doc]],
                    ranks: tuple[StatKey | None, ranktimes.StepTimes]) -> tuple[float | None, ...]:
        """Each node's step time (``nodehealth.slowest`` of its ranks' in ``ranks.json``,
        ``ranks``: its stat key and step times), in the order of ``files``: worked out again
        only when its ranks (an agent rewrites its file each second, its ranks stay) or
        ``ranks.json`` changed; a file not read again is not even looked at."""
        ranks_key, step_times = ranks
        self._steps_from = ranks_key
        steps: dict[str, tuple[Doc, StatKey | None, float | None, list[int]]] = {}
        for name, (_, _, entry) in files.items():
            step = self._steps.get(name)
            ranks_of = step[3] if step is not None and (step[0] is entry or step[0]["ranks"] is entry["ranks"]) \
                else nodehealth.node_ranks(entry)   # its rank numbers, as the rule reads them (not the list's equality)
            if step is None or ranks_of != step[3] or step[1] != ranks_key:  # its ranks or ranks.json changed
                step = (entry, ranks_key, nodehealth.slowest(step_times.get(r) for r in ranks_of), ranks_of)
            elif step[0] is not entry:  # a new file of the same ranks: the same step time
                step = (entry, ranks_key, step[2], step[3])
            steps[name] = step
        self._steps = steps
        return tuple(step[2] for step in steps.values())

    def _figures(self, files: dict[str, tuple[StatKey, float, Doc]], steps: tuple[float | None, ...]) -> list[Doc]:
        """Each node's ``nodehealth.node_figures``: its GPUs' worked out once per read of its
        file, its step time as ``_node_steps`` gave it."""
        gpu_figures: dict[str, tuple[Doc, Doc]] = {}
        out = []
        for (name, (_, _, entry)), step in zip(files.items(), steps):
            known = self._gpu_figures.get(name)
            g = known[1] if known is not None and known[0] is entry else \
                nodehealth.gpu_figures(entry["gpu"] if entry.get("gpu") else None)
            gpu_figures[name] = (entry, g)
            out.append({**g, "step_time_s": step})
        self._gpu_figures = gpu_figures
        return out

    def again(self, now: float) -> tuple[Doc, ...]:
        """The last ``read`` as it was (the very same tuple: nothing read, nothing copied; ages
        and stale flags as of that read, which the timer's poll brings up to date once a
        second). A console's poll woken by a log write between two timer polls shows the log at
        once and leaves the 128 nodes alone."""
        if self._judged is None:
            return self.read(now)
        return self._last


def read_nodes(run: rundir.RunDir, now: float) -> tuple[Doc, ...]:
    """The nodes of a run once (see ``NodeReader``)."""
    return NodeReader(run).read(now)


def _recent_step_time(series: Series, state: StateDict, window: int = 20) -> float | None:
    """Median of the last step times: robust to one slow step (a save)."""
    if series.n:
        recent = [v for v in series.recent(window) if math.isfinite(v)]
        if recent:
            recent.sort()
            return recent[len(recent) // 2]
    return state.get("step_time_s")


class LiveTelemetry:
    """GPU telemetry plus the blockers of a run (foreign GPU processes, orphans, port holders).
    A missing driver is a state in the GPU dict, not an error."""

    def __init__(self, run_dir: Path | None = None) -> None:
        """``run_dir``: the run looked at: a process marked with its id but started for another
        directory (a copy of it, another runs directory's run of that id) is not its."""
        from moeconsole.runner.telemetry.gpu import get_backend
        from moeconsole.runner.telemetry.gpuranks import RankFinder
        self.run_dir = run_dir
        self.backend = get_backend()
        self.ranks = RankFinder()

    def gpu(self, state: StateDict) -> Doc | None:
        """The GPU snapshot with each process's rank in the run (``RankFinder``)."""
        return self.ranks.annotate(self.backend.snapshot().to_dict(), state)

    def __call__(self, state: StateDict) -> tuple[Doc | None, list[Doc]]:
        from moeconsole.runner.telemetry.identity import kept_groups
        from moeconsole.runner.telemetry.procs import RunView, find_blockers
        snap = self.backend.snapshot()
        tracked = {int(p["pid"]): float(p.get("start_time") or 0) for p in state.get("pids") or []}
        try:
            blockers = [b.to_dict() for b in find_blockers(
                snap, run_id=state.get("run_id"), tracked=tracked or None,
                port=state.get("port"), run_tree=set(tracked), view=RunView.from_state(state),
                groups=kept_groups(state), run_dir=self.run_dir)]
        except Exception as exc:  # a process scan racing with exits must not break the screen
            blockers = [{"error": str(exc)}]
        return self.ranks.annotate(snap.to_dict(), state), blockers


class HostLine:
    """This host's CPU and RAM (``moeconsole.runner.telemetry.host``) and the disk I/O and free space of the
    run's output directory (its checkpoint root, else the run directory): the run screen's host
    line. A figure the system cannot give is None."""

    def __init__(self, run_dir: Path) -> None:
        # the first CPU sample now (``cpustat``: the standard library; the command line took it
        # as it started): the first figure's interval runs while the rest is made. The sampler
        # (``telemetry.host``; psutil only where /proc cannot tell) is imported at the first
        # reading, which the run screen takes after its first frame, on the poll thread (not in
        # that frame's path)
        from moeconsole.runner.telemetry import cpustat
        cpustat.prime()
        self.run_dir = str(run_dir)
        # where the run's runner shares its CPU reading (``host.CpuMark``): the directory its run is in
        self.runs_dir = Path(run_dir).parent
        self._io: dict[str, Any] = {}

    def __call__(self, state: StateDict) -> Doc:
        from moeconsole.runner.telemetry.host import DirIO, host_snapshot, prime_cpu
        prime_cpu()   # adopts the sample taken above (``cpustat.first``), once
        out = host_snapshot(self.runs_dir)
        path = state.get("checkpoint_root") or self.run_dir
        if not os.path.isdir(path):
            path = self.run_dir
        io = self._io.get(path)
        if io is None:
            io = self._io[path] = DirIO(path)
        out["io"] = io.sample()
        return out


def _with_held_crash(crashes: tuple[Doc, ...], last: Any) -> tuple[Doc, ...]:
    """``crashes`` (reports and events on disk) with the state's last crash (``last_crash``: its class,
    attempt and summary) when neither is on disk for its attempt: a runner that can write nothing of its
    run directory (read-only, ``answered_state``) holds it alone. No exit, evidence or hint."""
    from moeconsole.runner.core.policy import is_crash_class
    attempt = last.get("attempt") if isinstance(last, dict) else None
    # (attempt 0: a record that names none, the model's default; attempts count from 1)
    if not isinstance(attempt, int) or attempt < 1 or not is_crash_class(last.get("class")) \
            or any(c.get("attempt") == attempt for c in crashes):
        return crashes
    return (*crashes, {"attempt": attempt, "class": last.get("class"), "exit_code": None, "signal": None,
                       "summary": last.get("summary"), "evidence": [], "t": None, "recovery": None, "hint": None})


def _unreported(events: Mapping[int, Doc], reported: list[Doc]) -> list[Doc]:
    """The crashes whose report is not on disk, from their crash events: a report is a whole file
    replaced through a temp file, which waits for an inode on a filesystem out of them while the
    event, an append, is written (``Journal.flush``), and a cleaner may take it. Shown with what
    the event says (class, exit, summary, recovery), no evidence and no hint."""
    have = {c.get("attempt") for c in reported}
    return [{"attempt": n, "class": ev.get("class"), "exit_code": ev.get("exit_code"), "signal": ev.get("signal"),
             "summary": ev.get("summary"), "evidence": [], "t": ev.get("t"), "recovery": ev.get("recovery"),
             "hint": None} for n, ev in events.items() if n not in have]
