"""The ``state.json`` contract: a run's status enum and the typed, versioned state record.

The runner is the only writer; the UI, ``--json``, the run browser and ``launch`` read it. The
status is a ``str`` enum, so ``state["status"] == "running"`` and the JSON on disk stay exactly
what they were before the enum existed.
"""
from __future__ import annotations

import enum
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

STATE_VERSION = 1


class Status(str, enum.Enum):
    STARTING = "starting"
    RUNNING = "running"
    COOLDOWN = "cooldown"
    PAUSED = "paused"
    STOPPING = "stopping"
    SUCCEEDED = "succeeded"
    UNSAVED = "unsaved"     # the training finished, but no verified checkpoint holds its result
    FAILED = "failed"
    KILLED = "killed"

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


class RunnerInfo(TypedDict):
    pid: int
    start_time: float | None
    host: str


class TrackedPid(TypedDict):
    pid: int
    start_time: float
    role: str  # "leader" | "child"


class Cooldown(TypedDict):
    until: float
    ceiling_at: float
    waiting_on: list[str]
    reason: str


# "class" is a Python keyword, so this one is spelled in the functional form
LastCrash = TypedDict("LastCrash", {"class": str, "attempt": int, "summary": str})


class LastCheckpoint(TypedDict, total=False):
    path: str
    step: int | None
    verdict: str | None
    ok: bool


class AttemptHistory(TypedDict, total=False):
    attempt: int
    started_at: float
    ended_at: float
    resumed_step: int | None
    last_step: int | None
    crash_class: str | None


class BadSaves(TypedDict):
    """Saves that failed verification: how many in all, and the newest in a row (paths)."""
    total: int
    in_a_row: list[str]


class Storage(TypedDict):
    """Set while run files cannot be written (disk full, read-only, permissions)."""
    error: str
    since: float
    pending_records: int


class Ingest(TypedDict):
    """How far log ingestion trails the end of ``train.log``."""
    offset: int
    size: int
    lag_bytes: int


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


class RunState(TypedDict, total=False):
    v: int
    status: Status
    run_id: str
    name: str
    attempt: int
    restarts: int
    max_restarts: int
    runner: RunnerInfo | None
    pids: list[TrackedPid]
    pgid: int | None
    step: int | None
    max_steps: int | None
    last_loss: float | None
    min_loss: float | None
    step_time_s: float | None
    recipe_hash: str
    cooldown: Cooldown | None
    resumed_from: str | None
    last_crash: LastCrash | None
    last_checkpoint: LastCheckpoint | None
    bad_saves: BadSaves | None
    checkpoint_root: str | None
    port: int | None
    log_offset: int
    history: list[AttemptHistory]
    pause_reason: str | None
    exit_code: int | None
    started_at: float
    ended_at: float | None
    attempt_started_at: float
    first_step_at: float | None
    updated_at: float
    stale_after_s: float
    allow_drift: bool
    no_resume: bool
    verified: list[str]
    cost_per_hour: float | None
    mem_capacity_gib: float | None
    storage: Storage | None
    ingest: Ingest | None
    engine: str
    job: JobRecord | None


@dataclass(frozen=True)
class LoadedState:
    """A state file as read: the record (empty when unreadable) and why it could not be used."""
    state: RunState
    problem: str | None = None

    @property
    def status(self) -> Status | None:
        return Status.parse(self.state.get("status"))


_INT_KEYS = ("attempt", "restarts", "log_offset")


def coerce(raw: Any) -> tuple[RunState, str | None]:
    """A raw JSON object as a ``RunState``: unknown status and wrongly typed counters are dropped
    (with the reason), so a damaged file never crashes a reader or the runner."""
    if not isinstance(raw, dict):
        return RunState(), "state.json is not a JSON object"
    state: dict = dict(raw)
    problems = []
    status = Status.parse(state.get("status"))
    if state.get("status") is not None and status is None:
        problems.append(f"unknown status {state.get('status')!r}")
        state.pop("status")
    elif status is not None:
        state["status"] = status
    for key in _INT_KEYS:
        if key in state and not (isinstance(state[key], int) and not isinstance(state[key], bool)
                                 and state[key] >= 0):
            problems.append(f"bad {key} {state[key]!r}")
            state.pop(key)
    for key in ("pids", "history", "verified"):
        if key in state and not isinstance(state[key], list):
            problems.append(f"bad {key}")
            state.pop(key)
    if "pids" in state:
        state["pids"] = [p for p in state["pids"] if isinstance(p, dict) and isinstance(p.get("pid"), int)
                         and isinstance(p.get("start_time"), (int, float))]
    if "runner" in state and not isinstance(state["runner"], dict):
        state["runner"] = None
    return RunState(**state), ("; ".join(problems) or None)


def load(path: Path | str) -> LoadedState:
    """The typed loader: never raises; a missing, truncated or corrupt file says so in ``problem``."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return LoadedState(RunState(), "no state.json")
    except OSError as exc:
        return LoadedState(RunState(), f"cannot read state.json: {exc.strerror or exc}")
    try:
        with os.fdopen(fd, "rb") as f:
            raw = json.loads(f.read())
    except (OSError, ValueError) as exc:
        return LoadedState(RunState(), f"state.json is corrupt: {exc}")
    state, problem = coerce(raw)
    return LoadedState(state, problem)
