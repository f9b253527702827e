"""Typed models of the run directory's files besides ``state.json`` (``runner/core/state.py``):
crash reports, the waiter's exit records, ``secrets.json`` and ``environ.json``.

Each file is read through its model only (msgspec: types checked, one line naming the key when
it does not fit), so a damaged file is a per-file problem a reader can show ("crash report
damaged: ...") and never a wrong value deep in a screen. A key a newer moeconsole of the same
schema (``v``) added is ignored, as in state.json (``runner/core/state.py``); a newer ``v`` is
refused with one line (``state.newer_schema``). The runner writes
crash reports through the same model. The waiter, which imports nothing but the standard
library, writes its exit record by hand; the model is what every reader holds it to.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import msgspec
from msgspec import inspect as mi

from moeconsole.runner.core.schema import as_dict
from moeconsole.runner.core.state import Pid, carried_keys, newer_schema

if TYPE_CHECKING:
    from moeconsole.runner.core import state as run_state

MAX_FILE_BYTES = 16 << 20  # a crash report with its 200-line log tail is well below this

T = TypeVar("T")


class _File(msgspec.Struct):
    """A file this project writes: its keys typed, a newer runner's extra key ignored."""


V1 = Annotated[int, msgspec.Meta(ge=1, le=1)]   # schema 1: a newer one is refused (``read``)


class CrashReport(_File):
    """``crashes/attempt-N.json`` (docs/run-directory.md)."""
    attempt: int
    cls: str = msgspec.field(name="class")
    v: V1 = 1
    t: float = 0.0
    run_id: str = ""
    exit_code: int | None = None
    returncode: int | None = None
    signal: int | None = None
    signal_name: str | None = None
    summary: str = ""
    evidence: list[str] = []
    recovery: str = ""
    retryable: bool = False
    hint: str | None = None
    steps_seen: int = 0
    last_step: int | None = None
    resumed_from: str | None = None
    log_tail: list[str] = []
    gpu: dict[str, Any] | None = None
    detected_after_s: float | None = None
    job: dict[str, Any] | None = None
    memory: dict[str, Any] | None = None  # a CUDA OOM explained (moeconsole.runner.core.oom)


class OrphanEnd(_File):
    """A process of the command's tree (an orphan the waiter reaps) that ended badly: ``mono``
    when, on the monotonic clock (the record's ``ended_mono`` is the command's end on it)."""
    pid: Pid
    returncode: int
    mono: float


class ExitRecord(_File):
    """``exits/attempt-N.json``, written by the attempt's waiter."""
    v: V1 = 1
    pid: int | None = None
    returncode: int | None = None
    signal: int | None = None
    started_at: float | None = None
    ended_at: float | None = None
    error: str | None = None
    fork_refused: bool = False  # the kernel refused the fork (a task limit, no memory): passes, not a bad command
    ended_mono: float | None = None  # the command's end on the system's monotonic clock
    orphan_ends: list[OrphanEnd] = []  # in the order the waiter reaped them
    outliving: list[Pid] = []  # the command's orphans alive when the waiter ended (now the runner's)
    # their starts in clock ticks since boot, in the same order (None: not readable); a record of
    # a waiter from before has none
    outliving_start_ticks: list[int | None] = []


class SecretsDoc(_File):
    """``secrets.json`` (0600): the literal secrets recipe.yaml does not show."""
    v: Literal[1] = 1
    env: dict[str, str] = {}
    argv: dict[str, str] = {}


LAUNCH_ENV_FILE = "environ.json"   # in a run directory, mode 0600 (docs/run-directory.md)


class LaunchEnv(_File):
    """``environ.json`` (0600): the environment of the shell that ran ``moeconsole run`` (without
    moeconsole's own variables), which every attempt of the run starts from, whichever shell
    starts a later runner (``restart`` after a reboot, ``kill`` or ``supervise`` of a run whose
    runner died). It holds whatever that shell held (tokens too): read by the runner only. Its
    ``env`` is required: readers ignore keys they do not know, and a file without it (damaged, or
    not this file) must say so rather than start every attempt from an empty environment."""
    env: dict[str, str]
    v: Literal[1] = 1


def read(path: Path | str, model: type[T], *, max_bytes: int = MAX_FILE_BYTES) -> tuple[T | None, str | None]:
    """The file as ``model``: (value, None), (None, None) when it does not exist, or (None, the
    problem in one line). Never raises; never follows a symlink; a regular file of at most
    ``max_bytes`` only (state.json, crash reports, exit records, secrets.json all read here)."""
    value, problem, _newer_schema = _read(path, model, max_bytes)
    return value, problem


def _read(path: Path | str, model: type[T], max_bytes: int) -> tuple[T | None, str | None, bool]:
    """``read``, and whether the file was refused as of a newer schema."""
    name = Path(path).name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, None, False
    except OSError as exc:
        return None, f"{name}: {exc.strerror or exc}", False
    try:
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None, f"{name}: not a regular file", False
            # what the file holds now and one byte more (so a file grown since shows): a read of
            # ``max_bytes + 1`` makes a buffer of that size first, 16 MiB at every poll of
            # state.json, for a file of a few KiB (issue 37)
            data = f.read(min(st.st_size, max_bytes) + 1)
            if st.st_size < len(data) <= max_bytes:   # it grew since: the rest, up to the bound
                data += f.read(max_bytes + 1 - len(data))
    except OSError as exc:
        return None, f"{name}: {exc.strerror or exc}", False
    if len(data) > max_bytes:
        return None, f"{name}: larger than {max_bytes >> 20} MiB", False
    try:
        return msgspec.json.decode(data, type=model), None, False
    except msgspec.ValidationError as exc:
        newer = _newer(name, data, model)
        return (None, newer, True) if newer else (None, f"{name}: {exc}", False)
    except (msgspec.DecodeError, RecursionError) as exc:
        return None, f"{name} is corrupt: {str(exc) or type(exc).__name__}", False


class _Version(msgspec.Struct):
    v: Any = None


def reads_version(model: type) -> int | None:
    """The newest schema ``v`` a model reads: its ``v`` field's bound (``le``, or the largest of a
    ``Literal``); None for a model without one."""
    info = mi.type_info(model)
    if not isinstance(info, mi.StructType):
        return None
    for f in info.fields:
        if f.encode_name == "v":
            types = f.type.types if isinstance(f.type, mi.UnionType) else (f.type,)
            for t in types:
                if isinstance(t, mi.IntType) and t.le is not None:
                    return t.le
                if isinstance(t, mi.LiteralType):
                    return max(x for x in t.values if isinstance(x, int))
    return None


def _newer(name: str, data: bytes, model: type) -> str | None:
    """The file refused as of a newer schema, when it is (read again for its ``v`` only: a file
    of another schema may fail on any key first)."""
    reads = reads_version(model)
    if reads is None:
        return None
    try:
        v = msgspec.json.decode(data, type=_Version).v
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    return newer_schema(name, v, reads)


def carried(path: Path | str) -> dict[str, msgspec.Raw]:
    """The top-level keys of the state file at ``path`` this version does not know
    (``state.carried_keys``), as their JSON text: what a rewrite keeps. Empty when the file is
    missing, unreadable or not an object of the current schema (nothing of it is carried)."""
    from moeconsole.runner.core import state as run_state
    try:
        with open(path, "rb", opener=lambda p, fl: os.open(p, fl | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)) as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return {}
            data = f.read(run_state.MAX_STATE_BYTES + 1)
    except OSError:
        return {}
    if len(data) > run_state.MAX_STATE_BYTES:
        return {}
    try:
        top = msgspec.json.decode(data, type=dict[str, msgspec.Raw])
        v = msgspec.json.decode(top["v"]) if "v" in top else None
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return {}
    if newer_schema("", v, run_state.STATE_VERSION):
        return {}
    return {k: top[k] for k in carried_keys(top)}


def read_secrets(run_dir: Path | str) -> SecretsDoc | None:
    """``secrets.json`` of a run (the older flat ``{NAME: value}`` form read as its env), or
    None when there is none or it is damaged (then nothing is restored and nothing known is
    masked beyond the token shapes)."""
    path = Path(run_dir) / "secrets.json"
    # The flat form first: every value a string. The current form holds its version, a number, and
    # maps; since a reader ignores the keys it does not know, the flat form read as the current one
    # would be an empty document (nothing restored, nothing masked), not a damaged one.
    flat, _ = read(path, dict[str, str])
    if flat is not None:
        return SecretsDoc(env=flat) if flat else None
    doc, _ = read(path, SecretsDoc)
    return doc


def storable_env(env: dict[str, str]) -> dict[str, str]:
    """The entries of ``env`` that ``environ.json`` can hold: a name or value that is not UTF-8
    text (Python's lone surrogates for such bytes) cannot be JSON; it is left to the runner's own
    environment."""
    out = {}
    for k, v in env.items():
        try:
            k.encode(), v.encode()
        except UnicodeEncodeError:
            continue
        out[k] = v
    return out


# Variables that describe where a runner runs, not the run: the Slurm allocation it is inside
# (a new allocation after a reboot has another job id, nodes and GPUs), the login session and
# terminal. A later runner takes these from its own environment, never from environ.json.
PLACE_PREFIXES = ("SLURM_", "SSH_", "TMUX")
PLACE_NAMES = frozenset({"XDG_RUNTIME_DIR", "XDG_SESSION_ID", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY",
                         "WAYLAND_DISPLAY", "TERM", "COLUMNS", "LINES", "SHLVL", "PWD", "OLDPWD", "_", "STY"})
# Set by Slurm for the GPUs of an allocation: the place's while inside one (SLURM_JOB_ID set), else
# the run's (a user's own choice of GPUs).
ALLOCATED_GPUS = frozenset({"CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "ROCR_VISIBLE_DEVICES"})


def run_env(stored: dict[str, str], own: dict[str, str]) -> dict[str, str]:
    """The environment an attempt starts from: the run's (``stored``, environ.json) with the
    place's variables from this runner's own environment (``own``): ``PLACE_*`` always, the
    allocated GPUs inside a Slurm allocation, and what environ.json cannot hold (``storable_env``)."""
    in_allocation = "SLURM_JOB_ID" in own

    def place(name: str) -> bool:
        return name.startswith(PLACE_PREFIXES) or name in PLACE_NAMES or (in_allocation and name in ALLOCATED_GPUS)

    kept = storable_env(own)
    out = {k: v for k, v in stored.items() if not place(k)}
    out.update({k: v for k, v in own.items() if place(k) or k not in kept})
    return out


def read_launch_env(run_dir: Path | str) -> tuple[dict[str, str] | None, str | None]:
    """``environ.json`` of a run: (its environment, None); (None, None) for a run made before
    the file was written; (None, the problem in one line) when it is damaged."""
    doc, problem = read(Path(run_dir) / LAUNCH_ENV_FILE, LaunchEnv)
    return (doc.env if doc is not None else None), problem


def crash_report(fields: dict) -> dict:
    """A crash report as the runner writes it: checked against the model (a field of the wrong
    type is a bug, caught here rather than by every reader)."""
    return as_dict(msgspec.convert(fields, CrashReport, strict=False))


def load_state(path: Path | str) -> "run_state.LoadedState":
    """``state.json`` through its model (``moeconsole.runner.core.state.StateFile``); never raises: a missing,
    truncated, corrupt or wrongly typed file says so in ``problem`` (and the state is empty). The
    file I/O lives here, not in the pure core."""
    from moeconsole.runner.core import state as run_state
    model, problem, newer = _read(path, run_state.StateFile, run_state.MAX_STATE_BYTES)
    if model is None:
        return run_state.LoadedState({}, problem or "no state.json", newer=newer)
    return run_state.LoadedState(as_dict(model))
