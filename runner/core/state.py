"""The ``state.json`` contract: a run's status enum and the typed, versioned state record.

The runner is the only writer; the UI, ``--json``, the run browser and ``launch`` read it. The
file is read and written through one model (``StateFile``, a msgspec struct that refuses wrongly
typed or out-of-range values), so a damaged file is found where it is read, as one line naming
the key (``state.json: Expected `str`, got `int` - at `$.status```), and never reaches code that
would trip over it.

Versions: ``v`` is the schema's major version. A newer moeconsole of the same ``v`` only adds
keys, so a key this version does not know is no damage: readers ignore it, and a writer carries
a top-level one into the file it writes (``encode``'s ``carried``: an older runner adopting a
newer run never erases what it does not know; a key inside a record is its owner's and goes with
the record's rewrite). A larger ``v`` is another schema: the file is refused with one line
(``newer_schema``), never read as this one, never rewritten. Readers get the state as a plain dict (``.get`` works as
before); the status is a ``str`` enum, so ``state["status"] == "running"`` holds.
"""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypedDict

import msgspec
from msgspec import UNSET, UnsetType

from moeconsole.runner.core.schema import as_dict

STATE_VERSION = 1
MAX_STATE_BYTES = 4 << 20  # a state file is a few KiB; anything near this is not ours
# a live runner rewrites state.json at least this often (unchanged or not): its readers tell a late file by it
STATE_HEARTBEAT_S = 2.0


class Status(str, enum.Enum):
    """A run's status. One owner decides it: ``moeconsole.runner.core.lifecycle`` (``step`` while a runner
    supervises; ``created``, ``never_started``, ``imported``, ``killed_without_runner`` and
    ``replayed`` where no runner is). The runner writes what ``step`` decides; the places that
    write a status without a runner take it from those functions: ``process.launch.create_run`` (a
    new run), ``process.launch.record_never_started`` (a runner that died before it wrote a word:
    STARTING ends FAILED, a ``launch_failed`` crash), ``process.killrun.end_run`` (a kill when no
    runner can start), ``moeconsole.console.foreign`` (an imported log, which no runner ever
    supervises). The transitions::

        (new) ──created──▶ STARTING ──pre-flight cooldown──▶ COOLDOWN ──launched──▶ RUNNING
                              │ drift refused                   ▲   │ ceiling, cannot start  │
                              ▼                                 │   ▼                        │
                            FAILED ◀──crash, policy: fail───────┼── FAILED                   │
                                                                │                            │
        RUNNING ──crash, policy: restart─────────────────────────┘ (COOLDOWN, then RUNNING)   │
        RUNNING ──kill / hang / divergence / bad saves──▶ STOPPING ──ended──▶ KILLED | COOLDOWN | PAUSED
        RUNNING ──exit 0──▶ SUCCEEDED | UNSAVED (no verified checkpoint holds the result)
        RUNNING ──crash, policy: pause──▶ PAUSED ──resume / restart──▶ COOLDOWN
        COOLDOWN | PAUSED ──kill──▶ KILLED
        SUCCEEDED | UNSAVED | FAILED | KILLED ──restart (a new runner)──▶ COOLDOWN
        any live status, no runner can start ──direct kill──▶ KILLED   (killed_without_runner)
        (new) ──import of a foreign log──▶ IMPORTED                     (imported; never live)

    A new runner adopts RUNNING/STOPPING/COOLDOWN/PAUSED as they are; a lost ``state.json`` is
    rebuilt from ``events.jsonl`` (``replayed``)."""

    STARTING = "starting"
    RUNNING = "running"
    COOLDOWN = "cooldown"
    PAUSED = "paused"
    STOPPING = "stopping"
    SUCCEEDED = "succeeded"
    UNSAVED = "unsaved"     # the training finished, but no verified checkpoint holds its result
    FAILED = "failed"
    KILLED = "killed"
    IMPORTED = "imported"  # a foreign log opened in the run browser: no runner, never live

    def __str__(self) -> str:  # "running", not "Status.RUNNING", in messages and f-strings
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)

    @property
    def terminal(self) -> bool:
        return self in TERMINAL

    @classmethod
    def parse(cls, value: Any) -> "Status | None":
        try:
            return cls(value)
        except ValueError:
            return None


TERMINAL = frozenset({Status.SUCCEEDED, Status.UNSAVED, Status.FAILED, Status.KILLED})
# The training reached its end (as opposed to being stopped): a restart needs --force.
FINISHED = frozenset({Status.SUCCEEDED, Status.UNSAVED})
LIVE = frozenset({Status.STARTING, Status.RUNNING, Status.COOLDOWN, Status.PAUSED, Status.STOPPING})
# An attempt's processes are alive (or being ended by the runner): its own, not leftovers.
ATTEMPT_LIVE = frozenset({Status.RUNNING, Status.STOPPING})


# ---- the in-memory shapes other modules build (engines, journal) -------------------------------
class TrackedPid(TypedDict):
    pid: int
    start_time: float
    role: str  # "waiter" | "leader" | "child"


class BadSaves(TypedDict):
    """Saves that failed verification: how many in all, and the newest in a row (paths)."""
    total: int
    in_a_row: list[str]


class Storage(TypedDict):
    """Set while run files cannot be written (disk full, read-only, permissions)."""
    error: str
    since: float
    pending_records: int


class JobRecord(TypedDict, total=False):
    """``jobs/attempt-N.json`` and the ``job`` field of ``state.json``: one attempt's batch job."""
    v: int
    engine: str                 # "slurm"
    attempt: int
    job_id: str                 # "" until sbatch answers
    job_name: str               # unique per attempt: finds a job whose sbatch answer was lost
    submitted_at: float
    state: str | None           # Slurm's word: PENDING, RUNNING, COMPLETED, TIMEOUT, ...
    reason: str | None          # why it is pending (Resources, Priority, ReqNodeNotAvail, ...)
    nodes: list[str]
    exit_code: int | None
    signal: int | None
    source: str | None          # which Slurm command said so: squeue | sacct | scontrol
    ended_at: float | None
    failed_nodes: list[str]     # after NODE_FAIL: the job's nodes sinfo lists down, "node2: down* (Not responding)"
    slurm_error: str            # while Slurm's commands fail (controller away): why; the state is the last read
    restarts: int               # Slurm requeued the job this often while no runner watched it (found on adoption)
    restarts_seen: int          # Slurm's restart count a runner accepted (read at the first start seen, at adoption)
    started_seen: str           # Slurm's start of the run a runner first saw the job in (its words: squeue's %S)
    elapsed_s: int              # at its end: how long it ran, seconds (sacct's ElapsedRaw, scontrol's RunTime)
    limit_s: int                # at its end: its time limit, seconds (none: no limit, or not said)


# ---- the file's model -------------------------------------------------------------------------
# Ranges: a PID fits Linux's pid_max (2^22), a count or an offset fits 63 bits, a time is a
# finite number of seconds. A value outside is damage, not data.
Pid = Annotated[int, msgspec.Meta(ge=1, le=1 << 22)]
Count = Annotated[int, msgspec.Meta(ge=0, le=(1 << 63) - 1)]
Port = Annotated[int, msgspec.Meta(ge=0, le=65535)]
Seconds = Annotated[float, msgspec.Meta(ge=0)]
Step = Annotated[int, msgspec.Meta(ge=-(1 << 63), le=(1 << 63) - 1)]


class _Record(msgspec.Struct):
    """A part of state.json this module owns: its keys are typed; a key a newer runner of the same
    schema added is ignored (it is not damage: a console left open across an upgrade reads on)."""


class ReplacedRec(_Record):
    """The runner record a writer replaced when it took the run over (``rundir.replacing``): that runner's
    PID, start time (its own clock's, copied, never compared with another clock), boot and host."""
    pid: Pid | None = None
    start_time: float | None = None
    boot_id: str | None = None
    host: str = ""


class RunnerRec(_Record):
    pid: Pid | None = None  # {} is "no runner recorded", as a run directory written by hand may say
    start_time: float | None = None
    host: str = ""   # shown; a name the user may change mid-run, so not what tells a reader it is here
    # where its PID means one process: the boot (``identity.boot_id``) and the PID namespace's inode
    # (``identity.pid_namespace``); ``rundir.runner_here`` reads them (older runners: the host)
    boot_id: str | None = None
    pidns: Annotated[int, msgspec.Meta(ge=0)] | None = None
    # the run directory it supervises, as it opened it, and that directory's (st_dev, st_ino):
    # a copy of the directory carries them, so a reader of the copy knows its records name another
    # directory's processes (``rundir.copied_from``); None in records of older runners
    run_dir: str | None = None
    run_dir_id: list[Annotated[int, msgspec.Meta(ge=0)]] | None = None
    # the runner record this one was written over (a runner taking the run over, `kill --machine-gone`):
    # a runner that comes back and finds itself named here was taken over, whatever the two clocks say
    # (``rundir.taken_over_by``); None in records of older versions and of a run's first runner
    took_over: ReplacedRec | None = None
    # (a reader's copy of the record may say ``copy_of``, ``rundir.as_copy``: never written, not a field)


class PidRec(_Record):
    pid: Pid
    start_time: float
    role: Literal["waiter", "leader", "child"] = "child"  # records from before roles: a child


class GroupRec(_Record):
    """A session or process group processes of the run made (``identity.groups_of``): its ID, its
    maker's start time (None: the maker had ended when it was seen), the attempt whose processes
    made it and the PID namespace it was seen in (``identity.group_records``; a record without
    them is kept by no reader: ``identity.kept_groups``)."""
    id: Pid
    made: float | None = None
    attempt: Count | None = None
    pidns: Annotated[int, msgspec.Meta(ge=0)] | None = None


class CooldownRec(_Record):
    until: float
    ceiling_at: float
    waiting_on: list[str] = []
    reason: str = ""


class CrashRec(_Record):
    cls: str = msgspec.field(name="class")
    attempt: Count = 0
    summary: str = ""


class JudgingRec(_Record):
    """The ended attempt whose crash the runner is judging (off its loop, round 23)."""
    attempt: Count = 0
    since: float | None = None    # wall clock


class CheckpointRec(_Record):
    path: str = ""
    step: Step | None = None
    verdict: str | None = None
    ok: bool = False


class ResumePointRec(_Record):
    """The save the run's next attempt resumes from (``checkpoints.order.resume_point``): the
    runner writes it whenever its verdicts change; the screen, ``--json``, ``runs show`` and
    ``restart``'s plan read it."""
    path: str = ""
    step: Step | None = None


class HistoryRec(_Record):
    attempt: Count = 0
    started_at: float = 0.0
    ended_at: float = 0.0
    resumed_step: Step | None = None
    last_step: Step | None = None
    crash_class: str | None = None
    memory_verdict: str | None = None  # a CUDA OOM's verdict (moeconsole.runner.core.oom)
    ran_s: float | None = None         # how long it ran on the monotonic clock (policy.AttemptRecord)
    ended_mono: float | None = None    # its end on the monotonic clock of the boot ``boot_id``
    boot_id: str | None = None
    signature: str | None = None       # the crash's error identity (crash.error_identity); None: older runners
    resumed_from: str | None = None    # the checkpoint it resumed from (None: none)
    resume_next: str | None = None     # the checkpoint the next attempt would resume from when it ended
    gpus: Count | None = None          # the GPUs the run uses (None: not known)


class BadSavesRec(_Record):
    total: Count = 0
    in_a_row: list[str] = []


class ImportRec(_Record):
    """A foreign log being read in the console's scratch directory (console/foreign.py)."""
    progress: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.0
    done: bool = False
    records: Count = 0
    bytes: Count = 0
    error: str | None = None


class StorageRec(_Record):
    error: str
    since: float
    pending_records: Count = 0


class HeldRec(_Record):
    """The training's processes held still while the runner runs (``IngestPipe.hang``): ``how``
    ``stopped`` (SIGSTOP, a debugger: state T or t) or ``frozen`` by their cgroup's freezer (`docker
    pause`, `systemctl freeze`, a batch system's suspend: state D or S), which ``cgroups``, the PIDs
    held (every one: the views shorten, this record never does). ``pgid``: the process group every
    stopped PID is in, when they share one (``kill -CONT -- -PGID`` wakes them all). Set once the
    silence is shown (``QUIET_SHOWN_S``) or at a takeover, cleared once it runs again: every view
    says it (``held_words``)."""
    how: Literal["stopped", "frozen"]
    pids: list[Pid] = msgspec.field(default_factory=list)
    cgroups: list[str] = msgspec.field(default_factory=list)
    pgid: Pid | None = None


# The views' quiet indicator ("quiet 2m") appears after this long without a log line or a step;
# the runner asks whether the training is held still (``held``) from then on, so a view that shows
# the silence says why (``IngestPipe.hang``). Console and runner read it here.
QUIET_SHOWN_S = 15.0

# Docker's short container ID: ``stringid.TruncateID`` cuts an ID to 12 hex digits (moby
# pkg/stringid/stringid.go, ``shortLen = 12``), what `docker ps` shows and `docker unpause` takes.
_SHORT_ID = 12
_CGROUP_SHOWN_MAX = 32   # a cgroup path longer than this is named by its last component
_LONG_HEX = re.compile(r"[0-9a-f]{32,}")


def cgroup_shown(cgroup: Any) -> str:
    """A cgroup as a status word names it, bounded: a path of at most ``_CGROUP_SHOWN_MAX``
    characters whole, a longer one by its last component (``/system.slice/docker-<64 hex>.scope``
    -> ``docker-0123456789ab.scope``) with a long hex ID (a container's) cut to docker's short ID.
    The full path stays in state.json's ``held`` and in the ``stopped`` alert."""
    path = str(cgroup)
    if len(path) <= _CGROUP_SHOWN_MAX:
        return path
    name = path.rstrip("/").rsplit("/", 1)[-1] or path
    return _LONG_HEX.sub(lambda m: m.group(0)[:_SHORT_ID], name)


def frozen_words(cgroups: Any) -> str:
    """"frozen: thaw CGROUP": the one wording of a cgroup freezer holding a process, the training's
    (``held_words``) or the runner's (``snapshot.runner_frozen_words``); bounded: the first cgroup,
    shortened (``cgroup_shown``), and how many more. Short, so a status word keeps it whole at 80
    columns beside a run's name."""
    names = [str(c) for c in cgroups] if isinstance(cgroups, (list, tuple)) else [str(cgroups)]
    more = f" and {len(names) - 1} more" if len(names) > 1 else ""
    return f"frozen: thaw {cgroup_shown(names[0]) if names else '?'}{more}"


def held_words(held: Any, pgid: Any = None) -> str | None:
    """What a run whose training is held still (state.json's ``held``, ``HeldRec``) says beside its
    status, in every view, bounded whatever the number of processes: "training frozen: thaw
    docker-ab12cd34ef56.scope", "training stopped: kill -CONT 4242", "training stopped:
    kill -CONT -- -4240" (several, every one in the run's process group ``pgid``), "training
    stopped: kill -CONT 4242 and 71 more" (state.json's ``held`` lists them); None when it is not held."""
    if not isinstance(held, dict):
        return None
    if held.get("how") == "frozen":
        return f"training {frozen_words(held.get('cgroups') or [])}"
    if held.get("how") != "stopped":
        return None
    pids = [p for p in held.get("pids") or [] if isinstance(p, int) and not isinstance(p, bool)]
    group = held.get("pgid")
    if len(pids) > 1 and isinstance(group, int) and not isinstance(group, bool) and group > 1 and group == pgid:
        return f"training stopped: kill -CONT -- -{group}"
    if len(pids) > 1:
        return f"training stopped: kill -CONT {pids[0]} and {len(pids) - 1} more"   # state.json lists them
    return f"training stopped: kill -CONT {pids[0] if pids else '?'}"


class RendezvousRec(_Record):
    """A torchrun agent of several nodes that has not started its workers: it waits in its
    rendezvous for the other nodes (``proctree.agent_lines``, ``cmdline.rendezvous_of``);
    set by the runner before the attempt's first step, cleared once the workers run. ``endpoint``
    host:port, ``nodes`` as ``--nnodes`` says, ``node_rank`` this node's when given."""
    endpoint: str
    nodes: str
    node_rank: str | None = None


def rendezvous_words(rdzv: Any) -> str | None:
    """What a run waiting in torchrun's rendezvous says beside its status, in every view:
    "waiting for the other nodes at 10.0.0.1:29500, node 1 of 2"; None when it is not waiting."""
    if not isinstance(rdzv, dict) or not isinstance(rdzv.get("endpoint"), str):
        return None
    rank, nodes = rdzv.get("node_rank"), rdzv.get("nodes")
    node = f"node {rank} of {nodes}" if rank is not None else f"{nodes} nodes"
    return f"waiting for the other nodes at {rdzv['endpoint']}, {node}"


class IngestRec(_Record):
    """How far the runner's reading is behind ``train.log`` (``IngestPipe.lag``)."""
    offset: Count
    size: Count
    lag_bytes: Count = 0
    lines_behind: Count = 0       # the lines in lag_bytes, estimated from the mean line read so far
    catching_up: bool = False     # more than one read behind: the views say "catching up"


class JobRec(msgspec.Struct):
    """A batch job as its engine reports it (``JobRecord``): the engine owns these keys, so a
    newer engine's extra key is kept rather than called damage; the known ones are typed."""
    v: int = 1
    engine: str = ""
    attempt: Count = 0
    job_id: str = ""
    job_name: str = ""
    submitted_at: float | None = None
    state: str | None = None
    reason: str | None = None
    nodes: list[str] = []
    exit_code: int | None = None
    signal: int | None = None
    source: str | None = None
    ended_at: float | None = None
    slurm_error: str | None = None
    restarts: Count | None = None
    restarts_seen: Count | None = None
    started_seen: str | None = None
    elapsed_s: Count | None = None
    limit_s: Count | None = None


class SyncRec(msgspec.Struct):
    """The checkpoint sync's report (``SyncStatus.to_dict``), owned by runner/checkpoints/sync."""
    dest: str = ""
    last_synced_step: Step | None = None
    last_synced_at: float | None = None
    pending: str | None = None
    pending_since: float | None = None
    failures: Count = 0
    last_error: str | None = None
    lag_s: float = 0.0


class StateFile(_Record):
    """Every key ``state.json`` may hold (docs/run-directory.md describes each). A key the
    writer did not give stays out of the file (``UNSET``); ``null`` stays ``null``."""
    v: Annotated[int, msgspec.Meta(ge=1, le=STATE_VERSION)] | UnsetType = UNSET  # a newer schema is refused (newer_schema)
    updated_at: float | None | UnsetType = UNSET
    status: Status | None | UnsetType = UNSET
    run_id: str | None | UnsetType = UNSET
    name: str | None | UnsetType = UNSET
    engine: Literal["local", "slurm"] | None | UnsetType = UNSET
    attempt: Count | None | UnsetType = UNSET
    restarts: Count | None | UnsetType = UNSET
    max_restarts: Count | None | UnsetType = UNSET
    runner: RunnerRec | None | UnsetType = UNSET
    pids: list[PidRec] | UnsetType = UNSET
    pgid: Pid | None | UnsetType = UNSET
    # the sessions and process groups the attempt's processes made, as the runner last saw them held:
    # a worker left alone in one, every process that made it ended, is the run's to ``kill`` and the
    # GPU survey (``identity.kept_groups`` reads them), on the boot ``attempt_boot_id``
    groups: list[GroupRec] | UnsetType = UNSET
    step: Step | None | UnsetType = UNSET
    max_steps: Step | None | UnsetType = UNSET
    step_at_attempt_start: Step | None | UnsetType = UNSET
    last_loss: float | None | UnsetType = UNSET
    min_loss: float | None | UnsetType = UNSET
    step_time_s: float | None | UnsetType = UNSET
    # the step is a log entry's number, not the trainer's step (``ingest.records.step_numbered``)
    step_numbered: bool | None | UnsetType = UNSET
    recipe_hash: str | None | UnsetType = UNSET
    cooldown: CooldownRec | None | UnsetType = UNSET
    resumed_from: str | None | UnsetType = UNSET
    last_crash: CrashRec | None | UnsetType = UNSET
    # the ended attempt being judged (``supervisor.judging``): set when its end is known, null once its verdict is
    # written; a runner that died between the two leaves it set and the next one judges the attempt again
    judging: JudgingRec | None | UnsetType = UNSET
    last_checkpoint: CheckpointRec | None | UnsetType = UNSET
    bad_saves: BadSavesRec | None | UnsetType = UNSET
    resume_point: ResumePointRec | None | UnsetType = UNSET
    # the save the user chose for the next attempt (``restart --from``, ``order.chosen_save``): used
    # once, by that attempt's launch (a runner that takes over meanwhile keeps it)
    resume_choice: ResumePointRec | None | UnsetType = UNSET
    # the environment the next attempt gets on top of the recipe's: the last crash's remedy (its
    # class's, e.g. CUDA_LAUNCH_BLOCKING=1; the memory verdict's allocator setting), used once by
    # that attempt's launch, whether the runner restarts it or the user does (``restart``'s plan shows it)
    next_env: dict[str, str] | None | UnsetType = UNSET
    checkpoint_root: str | None | UnsetType = UNSET
    # on a node of rank > 0: the shares of the world's saves on its disk when the run began (path under
    # checkpoint_root -> their written time then; ``discover.shares_on_disk``), so that those written since are
    # known with no clock (``discover.node_shares``'s ``before``)
    node_shares_before: dict[str, float] | None | UnsetType = UNSET
    # on a node of rank > 0: the files only the world's process 0 writes in the output dir when the run began (path
    # under checkpoint_root -> their modification time then; ``discover.world_zero_on_disk``), so that one written
    # since (node 0 writes into this dir) is known with no clock (``discover.world_zero_writes_here``'s ``before``)
    world_zero_before: dict[str, float] | None | UnsetType = UNSET
    port: Port | None | UnsetType = UNSET
    log_offset: Count | None | UnsetType = UNSET
    # the digest of the log's bytes right before log_offset (``ingest.tail.seen_digest``): a runner
    # starting there reads a log rewritten meanwhile (logrotate's copytruncate) from its start
    log_seen: str | None | UnsetType = UNSET
    # the reading context at log_offset (``core.readctx``: a table's columns, the run's length, the
    # count step-less records go on from; numbers, flags and logged names, never a line's text).
    # A plain object here: a newer runner's context (another version, other bounds) never makes
    # the file unreadable; it is converted to a ``ReadingContext`` of this version where it is read
    # (``ingest_pipe._context``) and checked against it where it is written (``ingest_pipe._saved``)
    log_context: dict[str, Any] | None | UnsetType = UNSET
    history: list[HistoryRec] | UnsetType = UNSET
    pause_reason: str | None | UnsetType = UNSET
    # a training that exited 0 short of the total its log gave, nothing proving why
    # (``core.ending.short_end``): {"step", "max_steps"}; None otherwise
    ended_short: dict[str, int] | None | UnsetType = UNSET
    # a training that exited 0 short of its total after its own line said it stopped itself on purpose
    # (``core.ending.STOPPED_ITSELF``): {"by": "ms-swift --max_epochs", "step", "max_steps", "line"}; None otherwise
    stopped_by: dict[str, Any] | None | UnsetType = UNSET
    exit_code: int | None | UnsetType = UNSET
    started_at: float | None | UnsetType = UNSET
    ended_at: float | None | UnsetType = UNSET
    # the run's start and end on the boot clock (``identity.uptime``) of the boot ``started_boot_id``:
    # its elapsed time (``rundir.run_elapsed``) never follows a step of the wall clock
    started_uptime_s: float | None | UnsetType = UNSET
    started_boot_id: str | None | UnsetType = UNSET
    ended_uptime_s: float | None | UnsetType = UNSET
    attempt_started_at: float | None | UnsetType = UNSET
    # the attempt's start on the monotonic clock of the boot ``attempt_boot_id``: how long it ran
    # is measured there, never across a step of the wall clock (a new runner of the same boot too)
    attempt_started_mono: float | None | UnsetType = UNSET
    attempt_boot_id: str | None | UnsetType = UNSET
    # the kernel's OOM kill count (``host.oom_kills``) at the attempt's start on that boot, for a
    # training run here (None: not known): a SIGKILL with no kill counted since was no OOM kill
    attempt_oom_kills: int | None | UnsetType = UNSET
    first_step_at: float | None | UnsetType = UNSET
    stale_after_s: Seconds | None | UnsetType = UNSET
    allow_drift: bool | UnsetType = UNSET
    no_resume: bool | UnsetType = UNSET
    # the log showed transformers' Trainer opening its loop: the run saves through the Trainer
    # (``flags.run_saves_through_trainer``; ``flags.TRAINER_LOGGED`` names this key)
    trainer_logged: bool | UnsetType = UNSET
    verified: list[str] | UnsetType = UNSET
    cost_per_hour: float | None | UnsetType = UNSET
    mem_capacity_gib: float | None | UnsetType = UNSET
    storage: StorageRec | None | UnsetType = UNSET
    ingest: IngestRec | None | UnsetType = UNSET
    # the training held still, stopped or frozen by its cgroup, as the runner's hang clock last
    # found it (``HeldRec``); null once it runs again
    held: HeldRec | None | UnsetType = UNSET
    # torchrun's agent waits for the other nodes in its rendezvous (``RendezvousRec``); null once its
    # workers run
    rendezvous: RendezvousRec | None | UnsetType = UNSET
    job: JobRec | None | UnsetType = UNSET
    sync: SyncRec | None | UnsetType = UNSET
    # the memory watch's per-GPU envelope and forecast (moeconsole.runner.core.memory.MemoryWatch.to_dict,
    # which owns its keys)
    memory: dict[str, Any] | None | UnsetType = UNSET
    recovered_from: str | None | UnsetType = UNSET
    # a foreign log opened in the run browser (console/foreign.py)
    source_path: str | None | UnsetType = UNSET
    imported_at: float | None | UnsetType = UNSET
    import_: ImportRec | None | UnsetType = msgspec.field(default=UNSET, name="import")


# state.json's keys (as in the file) this version knows
STATE_KEYS = frozenset(f.encode_name for f in msgspec.structs.fields(StateFile))
# keys an earlier version wrote and this one dropped: a rewrite drops them too (never carried as a
# newer runner's); none yet
RETIRED_KEYS: frozenset[str] = frozenset()


def carried_keys(keys: Any) -> list[str]:
    """Of a state file's top-level keys, those a writer of this version carries as they are: a
    newer runner's, unknown here."""
    return [k for k in keys if k not in STATE_KEYS and k not in RETIRED_KEYS]


StateDict = dict[str, Any]  # what readers get: StateFile's keys that hold a value, as plain JSON types


@dataclass(frozen=True)
class LoadedState:
    """A state file as read: the record (empty when unusable) and why it could not be used."""
    state: StateDict = field(default_factory=dict)
    problem: str | None = None
    newer: bool = False   # of a newer schema (``newer_schema``): no runner of this version takes it over

    @property
    def status(self) -> Status | None:
        return Status.parse(self.state.get("status"))


_encoder = msgspec.json.Encoder()


def from_dict(state: StateDict) -> StateFile:
    """A writer's dict as the model (a key the model does not have or a value of the wrong type
    is a bug: ``StateError``)."""
    unknown = sorted(k for k in state if k not in STATE_KEYS)
    if unknown:
        raise StateError(f"state not written: {unknown[0]!r} is not a field of state.json")
    try:
        return msgspec.convert(state, StateFile, strict=False)
    except msgspec.ValidationError as exc:
        raise StateError(f"state not written: {exc}") from None


def encode(state: StateDict, carried: dict[str, msgspec.Raw] | None = None) -> bytes:
    """The file's bytes for a writer's dict, checked against the model first; ``carried``: the
    top-level keys of the file being replaced that this version does not know (``carried_keys``),
    written back as they were."""
    data = _encoder.encode(from_dict(finite_state(state)))
    extra = carried   # ``carried_keys`` has left out the model's own keys
    if extra:   # the model's object with the carried keys after its own: ``{...,"k":v}``
        data = data[:-1] + (b"," if data != b"{}" else b"") + _encoder.encode(extra)[1:]
    return msgspec.json.format(data, indent=1) + b"\n"


def newer_schema(name: str, v: Any, reads: int) -> str | None:
    """The one line a reader says of a file whose schema ``v`` is newer than the ``reads`` it knows
    (None when it is not): it is another schema, never read as this one."""
    if isinstance(v, int) and not isinstance(v, bool) and v > reads:
        return (f"{name}: written by a newer moeconsole (schema v{v}; this one reads v{reads}): "
                f"use that version or newer for this run")
    return None


def finite_state(obj: Any) -> Any:
    """NaN and infinity have no JSON number: the state keeps None for them (a reader sees 'no
    value', the same as a missing loss)."""
    if isinstance(obj, float):
        return obj if obj == obj and obj not in (float("inf"), float("-inf")) else None
    if isinstance(obj, dict):
        return {k: finite_state(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_state(v) for v in obj]
    return obj


class StateError(ValueError):
    """state.json cannot be read as a state, or a writer's state does not fit the model."""


