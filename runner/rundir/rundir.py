"""The run directory: the contract between runner, UI, ``--json`` and the run browser.

One directory per run under the base directory::

    recipe.yaml           the resolved recipe as launched
    state.json            current status (atomic replace)
    train.log             raw output of all attempts, attempt marker lines between them
    metrics.jsonl         one record per parsed training step (append-only)
    events.jsonl          state changes, alerts, crashes, restarts, verifications (append-only)
    crashes/attempt-N.json
    jobs/attempt-N.json   Slurm runs: each attempt's job id, state and exit (and its batch script)
    control.sock          the runner's control socket, mode 0600
    runner.log            the runner's own diagnostics
"""
from __future__ import annotations

import errno
import fcntl
import math
import os
import re
import stat
import time
from dataclasses import dataclass, field
from typing import Any, Mapping
from pathlib import Path

import msgspec

from moeconsole.runner.rundir import jsonio, runfiles
from moeconsole.runner.telemetry import identity
from moeconsole.runner.core import state as run_state
from moeconsole.runner.core.state import ATTEMPT_LIVE, FINISHED, LIVE, TERMINAL, Status  # noqa: F401  (re-exported: rundir.TERMINAL, ...)
from moeconsole.runner.core.errors import AmbiguousRun, InputError, printable_text, utf8_decoded, utf8_path, utf8_text
from moeconsole.runner.core.numbers import is_finite_number
from moeconsole.runner.core.units import printable

# Statuses a run can be in (``moeconsole.runner.core.state.Status``, a str enum). Terminal ones end the runner.
STARTING, RUNNING, COOLDOWN, PAUSED, STOPPING = (Status.STARTING, Status.RUNNING, Status.COOLDOWN,
                                                 Status.PAUSED, Status.STOPPING)
SUCCEEDED, UNSAVED, FAILED, KILLED = Status.SUCCEEDED, Status.UNSAVED, Status.FAILED, Status.KILLED
from moeconsole.runner.process.waiter import DIR_MODE, make_private_dir  # noqa: F401  (the one owner: the waiter, which imports no package)
# The run directory's subdirectories, made (empty) at its creation and written into only when an
# attempt ends (its exit record) or crashes (its report): a /tmp cleaner's age rule removes them
# as old empty directories while the run trains (``dirguard.DirGuard`` makes them again).
SUBDIRS = ("crashes", "exits")
LOCK_NAME = "runner.lock"

ATTEMPT_MARKER = "=== moeconsole: attempt {attempt} start"
ATTEMPT_MARKER_RE = re.compile(r"^=== moeconsole: attempt (\d+) start")


def attempt_marker_line(attempt: int, when: str, argv: list[str]) -> str:
    """The line the runner writes into train.log before an attempt: one line whatever the
    command holds (a ``python -c`` program's newlines are written ``\\n``), so no part of the
    command ever reads as a line of the training's own output (a metric, a crash)."""
    shown = " ".join(a.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r") for a in argv)
    return f"{ATTEMPT_MARKER.format(attempt=attempt)} {when} argv={shown}"


_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


EVENTS_NAME = "events.jsonl"   # ``RunDir.events``; looked at by name alone in ``store.listing_seen``


@dataclass(frozen=True)
class RunDir:
    path: Path
    # the stat key of the state.json this RunDir last wrote and the keys it carried: a runner
    # writes state.json about once a second, and reads it back only when another writer replaced it
    _wrote_state: list[tuple[jsonio.StatKey, dict[str, msgspec.Raw]]] = field(
        default_factory=list, init=False, compare=False, repr=False)

    @property
    def run_id(self) -> str:
        return self.path.name

    recipe = property(lambda self: self.path / "recipe.yaml")
    state = property(lambda self: self.path / "state.json")
    log = property(lambda self: self.path / "train.log")
    metrics = property(lambda self: self.path / "metrics.jsonl")
    evals = property(lambda self: self.path / "evals.jsonl")   # evaluation results, never steps
    events = property(lambda self: self.path / EVENTS_NAME)
    crashes = property(lambda self: self.path / "crashes")
    sock = property(lambda self: self.path / "control.sock")
    runner_log = property(lambda self: self.path / "runner.log")
    telemetry = property(lambda self: self.path / "telemetry")

    def crash_report(self, attempt: int) -> Path:
        return self.crashes / f"attempt-{attempt}.json"

    lock = property(lambda self: self.path / LOCK_NAME)
    exits = property(lambda self: self.path / "exits")
    # the spare state.json is swapped with when no inode is free (``jsonio.exchange_write``)
    state_spare = property(lambda self: self.path / jsonio.spare_name("state.json"))
    rank_times = property(lambda self: self.path / "ranks.json")  # each rank's latest step time (moeconsole.runner.rundir.ranktimes)
    gpu_history = property(lambda self: self.path / "gpu-history.json")  # moeconsole.runner.rundir.gpuhistory
    series = property(lambda self: self.path / "series.json")  # the chart book (moeconsole.runner.rundir.seriesfile)
    jobs = property(lambda self: self.path / "jobs")  # batch engines: jobs/attempt-N.{json,sh}

    def job_record(self, attempt: int) -> Path:
        """The batch job of attempt ``attempt``: its id and, once known, how it ended."""
        return self.jobs / f"attempt-{attempt}.json"

    def rendezvous_record(self, attempt: int) -> Path:
        """A multi-node job's rendezvous endpoint, published by its first node (moeconsole.runner.process.slurm.nodestep)."""
        return self.jobs / f"attempt-{attempt}.rdzv.json"

    def job_records(self) -> list[dict]:
        """Every attempt's batch job record (``jobs/attempt-N.json``), oldest first."""
        try:
            names = os.listdir(self.jobs)
        except OSError:
            return []
        out = []
        for name in names:
            m = re.fullmatch(r"attempt-(\d+)\.json", name)
            rec = jsonio.read_json(self.jobs / name, default=None) if m else None
            if isinstance(rec, dict) and isinstance(rec.get("job_id"), str):
                out.append(rec)
        return sorted(out, key=lambda r: r["attempt"] if isinstance(r.get("attempt"), int) else 0)

    def exit_record(self, attempt: int) -> Path:
        """Written by the attempt's waiter when the command ends (outlives any runner)."""
        return self.exits / f"attempt-{attempt}.json"

    def read_state(self) -> dict:
        """The state as a plain dict, checked against the model (empty when missing, corrupt or
        wrongly typed); ``load_state`` also says why."""
        return self.load_state().state

    def load_state(self) -> run_state.LoadedState:
        """The typed state, with the reason when the file is missing, truncated or corrupt; a
        copy's without its original's processes (``as_copy``)."""
        return as_copy(self.path, runfiles.load_state(self.state))

    def write_state(self, state: dict, *, reserve: Path | None = None) -> None:
        """Replace state.json atomically, through the model (a value of the wrong type raises
        ``StateError`` instead of reaching the file). The top-level keys of the file it replaces
        that this version does not know (a newer runner's) are written back as they were.
        ``reserve``: a file of blocks kept for a full disk, written into and swapped with
        state.json (``jsonio.replace_from_reserve``); ENOSPC where it cannot take the state."""
        state = {**state, "v": run_state.STATE_VERSION, "updated_at": time.time()}
        wrote = self._wrote_state
        if wrote and wrote[0][0] == jsonio.stat_key(self.state):
            carried = wrote[0][1]   # the file is the one written last: its carried keys are known
        else:
            carried = runfiles.carried(self.state)
        data = run_state.encode(state, carried)
        if reserve is not None:
            if not jsonio.replace_from_reserve(self.state, reserve, data):
                raise OSError(errno.ENOSPC, "no reserve that can take it", str(self.state))
            key = jsonio.stat_key(self.state)
            wrote[:] = [(key, carried)] if key is not None else []
            return
        try:
            jsonio.atomic_write_bytes(self.state, data)
        except OSError as exc:
            # Out of inodes, not bytes (a cache or a cleaner's small files filled the filesystem):
            # the temp file cannot be made, and state.json stayed "running" after the run ended,
            # the views calling it "RUNNING? (runner gone)". Its own inode is rewritten instead.
            if exc.errno != errno.ENOSPC or not jsonio.no_inode_free(self.path):
                raise
            # Swapped with the spare kept beside it since the run's creation (no inode needed,
            # atomic); rewritten in its own inode only where the exchange is refused (NFS). Not
            # atomic then: a reader may find it damaged and read it again (reviewed R27).
            if not jsonio.exchange_write(self.state, self.state_spare, data):
                jsonio.rewrite_in_place(self.state, data)
        key = jsonio.stat_key(self.state)
        wrote[:] = [(key, carried)] if key is not None else []

    def state_taken_over(self, mine: Mapping[str, Any]) -> str | None:
        """The machine that took this runner's run over (``taken_over_by``), read from state.json only
        when it is not the file this RunDir wrote last (one stat otherwise); None while it is ours."""
        wrote = self._wrote_state
        if wrote and wrote[0][0] == jsonio.stat_key(self.state):
            return None
        return taken_over_by(self.read_state(), mine)

    def event(self, type_: str, **fields) -> dict:
        """Append one record to events.jsonl (the one place an event line is built)."""
        rec = {"v": jsonio.SCHEMA_VERSION, "t": time.time(), "type": type_, **fields}
        jsonio.append_jsonl(self.events, rec)
        return rec

    def event_if_possible(self, type_: str, **fields) -> bool:
        """``event`` for a client acting on a run (a kill, a failed launch): an unwritable run
        directory never stops what it does. True when the line was written."""
        try:
            self.event(type_, **fields)
        except OSError:
            return False
        return True


class RunLocked(InputError):
    """Another runner holds this run's lock."""


def lock_runner(run: RunDir, *, wait_s: float = 0.5) -> int:
    """Take the run's runner lock (flock on ``runner.lock``) and return its descriptor, to keep
    open for the runner's life. The kernel drops it when the runner dies, however it dies, so a
    crashed runner never blocks its successor, and two runners can never supervise one run.
    A client probing the lock holds it for microseconds: retry briefly before giving up."""
    fd = os.open(run.lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, jsonio.FILE_MODE)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise RunLocked(f"{run.run_id}: another runner already supervises this run") from None
            time.sleep(0.02)


def runner_locked(run: RunDir) -> bool:
    """True while some runner holds the run's lock (a live runner, whatever state.json says)."""
    try:
        fd = os.open(run.lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def new_run_id(name: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = id_slug(name) or "run"
    import secrets  # only where a run is created: readers start faster without it
    return f"{stamp}-{safe}-{secrets.token_hex(2)}"


def create(base: Path, name: str) -> RunDir:
    """A new private run directory under ``base`` for a run called ``name``; a base path or a name
    that is not UTF-8 is refused before anything is made (``errors.utf8_text``)."""
    utf8_path(str(base), "runs directory")
    name = utf8_text(name, "run name")
    printable_text(name, "run name")
    try:
        make_private_dirs(base)
        check_base(base, write=True)
        _check_inodes(base)
        for _ in range(10):
            path = base / new_run_id(name)
            try:
                make_private_dir(path)
            except FileExistsError:
                continue
            try:
                for sub in SUBDIRS:
                    make_private_dir(path / sub)
                make_state_spare(RunDir(path))
            except OSError:
                remove_new(RunDir(path))
                raise
            return RunDir(path)
    except OSError as exc:
        from moeconsole.runner.rundir.paths import ELSEWHERE
        raise InputError(f"cannot create a run directory under {base}: {exc.strerror or exc}; {ELSEWHERE}") from None
    raise InputError(f"{base}: could not create a unique run directory")


# The files a run makes over its life, each one inode: the directory and its two subdirectories,
# recipe, secrets, environment, state with its temp file and its spare, the three logs, the runner's lock, socket
# and reserve, the chart and GPU caches with their temp files, the index and its journal files,
# and per attempt its exit record and crash report; twice that, for a dozen attempts.
RUN_INODES = 64


def _check_inodes(base: Path) -> None:
    """A filesystem whose free inodes (files) run out before a run has made its files is refused
    before anything is made: with a few left, ``run`` made the directory and its files and then
    the runner died creating its lock (the CLI quoted the traceback, the run stayed STARTING for
    good), or could not bind its socket, or ran with every state write refused. A filesystem that
    counts no inodes (``f_files`` 0: btrfs, some network filesystems) is not asked."""
    from moeconsole.runner.checkpoints.diskroom import free_files
    try:
        free = free_files(os.statvfs(base))
    except OSError:
        return
    if free is not None and free < RUN_INODES:
        raise InputError(f"cannot create a run directory under {base}: its filesystem has {free} free "
                         f"inodes (files) left, a run needs at least {RUN_INODES}; free some (`df -i {base}`), "
                         "or use --runs-dir on another filesystem")


def remove_new(run: RunDir) -> None:
    """Take back a run directory ``create`` just made and could not fill (a full disk): nothing
    half-made stays behind. Only what the creation writes is removed, never through a link."""
    for sub in SUBDIRS:
        try:
            os.rmdir(run.path / sub)
        except OSError:
            pass
    try:
        for entry in os.scandir(run.path):
            if entry.is_file(follow_symlinks=False) or entry.is_symlink():
                os.unlink(entry.path)
        os.rmdir(run.path)
    except OSError:
        pass


def remake(run: RunDir, files: Mapping[str, bytes]) -> None:
    """A run directory deleted under its live runner (a cleanup job, an ``rm -rf`` of the wrong
    run), made again as ``create`` makes it: 0700 (missing parents too), ``crashes/`` and
    ``exits/``, and ``files`` (name -> the bytes the runner kept: the recipe, the secrets), 0600."""
    make_private_dirs(run.path)
    for sub in SUBDIRS:
        make_private_dir(run.path / sub, exist_ok=True)
    make_state_spare(run)
    for name, data in files.items():
        jsonio.atomic_write_bytes(run.path / name, data)


def make_state_spare(run: RunDir) -> bool:
    """The empty spare beside state.json (``RunDir.state_spare``), made at the run's creation while
    inodes are free, for ``write_state`` to swap with when none is (``jsonio.exchange_write``).
    True when it was made now; False when it is there already (never replaced, never through a
    symlink)."""
    try:
        fd = os.open(run.state_spare, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     jsonio.FILE_MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(fd, jsonio.FILE_MODE)   # swapped in as state.json: its mode exactly, never the umask's
    finally:
        os.close(fd)
    return True


def make_private_dirs(path: Path) -> None:
    """``path`` and every missing parent, each ``make_private_dir`` (0700 whatever the umask);
    existing ones are left as they are (``check_base`` judges the base)."""
    missing = []
    p = Path(path)
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        make_private_dir(d, exist_ok=True)


def _mode_text(mode: int) -> str:
    return oct(stat.S_IMODE(mode))[2:].rjust(4, "0")


def unsafe_dir(path: Path, st: os.stat_result, *, owned: bool) -> str | None:
    """Why ``path`` must not hold runs (None when it may): writable by group or others (another
    user could rename, swap or plant a run in it), or, with ``owned``, not the current user's."""
    if st.st_mode & 0o022:
        return (f"writable by other users (mode {_mode_text(st.st_mode)}): they could swap or plant runs; "
                f"`chmod go-w {path}`")
    if owned and st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not by you (uid {os.geteuid()})"
    return None


def other_owner(run: RunDir) -> str | None:
    """Whose run this is when it is not this user's: ``user NAME (uid N)``; None for this user's
    own run (or one whose directory cannot be looked at: the caller's next step says why)."""
    try:
        uid = os.lstat(run.path).st_uid
    except OSError:
        return None
    return None if uid == os.geteuid() else user_words(uid)


def user_words(uid: int) -> str:
    """A user as every line about another user's run names them: ``user NAME (uid N)``."""
    import pwd
    try:
        return f"user {pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _closed_dir(path: str | Path) -> tuple[Path, int] | None:
    """The nearest of ``path`` and its parents that this user may look at but not enter and that
    another user owns, with that user's uid; None when there is none."""
    p = Path(os.path.abspath(path))
    for d in (p, *p.parents):
        try:
            st = os.stat(d)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid != os.geteuid() and not os.access(d, os.R_OK | os.X_OK):
            return d, st.st_uid
        return None
    return None


def closed_refusal(ref: str, path: str | Path) -> InputError | None:
    """The one line for ``ref`` when another user's directory keeps this user out of ``path``
    (homes are often 0755, ``~/.local`` 0700), worded by what that directory is proven to be
    (review R70): "another user's run" only when a run directory of another uid encloses it; in
    this user's own run (a container running as root wrote its output there) it is their run;
    anything else (a log in a private directory, a cwd one may not enter) names the directory and
    its owner, without the word run, for nothing inside it can be looked at. None when no such
    directory is on the way (the OS's own error then says the rest)."""
    found = _closed_dir(path)
    if found is None:
        return None
    closed, uid = found
    if (run := enclosing_run(closed)) is not None:
        try:
            owner = os.stat(run).st_uid
        except OSError:
            owner = uid
        if owner == os.geteuid():
            return InputError(f"{ref}: permission denied: {closed} in your run {run.name} is {user_words(uid)}'s "
                              f"(made by a process running as that user?)")
        return not_yours(ref, f"{run} is {user_words(owner)}'s")
    return InputError(f"{ref}: permission denied: {closed} is {user_words(uid)}'s and closed to you")


def not_yours(ref: str, whose: str) -> InputError:
    """The one line for a RUN that is another user's (named by id, name or path): nothing is read,
    shown, steered or signalled; its owner's own commands act on it."""
    return InputError(f"{ref}: permission denied: {whose}: another user's run is theirs to attach, kill or "
                      f"restart (nothing was read or signalled)")


def check_owned(run: RunDir) -> RunDir:
    """A run this user may act on (start its runner, run its command): the run directory a
    real directory owned by this user and writable by nobody else, in a runs directory nobody
    else can write, and its recipe.yaml, secrets.json and environ.json (the environment its command
    gets: an ``LD_PRELOAD`` planted there would run anything) this user's. A planted run's command
    is never run, whoever asks (root included)."""
    try:
        parent = os.stat(run.path.parent)
        st = os.lstat(run.path)
    except OSError as exc:
        raise InputError(f"{run.run_id}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise InputError(f"{run.run_id}: not a directory (a symlink?): refusing to act on it")
    why = unsafe_dir(run.path, st, owned=True)
    if why is None and parent.st_mode & 0o022 and not parent.st_mode & stat.S_ISVTX:
        why = f"its directory {run.path.parent} is writable by other users (mode {_mode_text(parent.st_mode)})"
    for name in ("recipe.yaml", "secrets.json", runfiles.LAUNCH_ENV_FILE) if why is None else ():
        try:
            fst = os.lstat(run.path / name)
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise InputError(f"{run.run_id}: {name}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(fst.st_mode) or fst.st_uid != os.geteuid() or fst.st_mode & 0o022:
            why = f"{name} is not a private file of yours (uid {fst.st_uid}, mode {_mode_text(fst.st_mode)})"
    if why:
        raise InputError(f"{run.run_id}: {why}: refusing to run its command")
    return run


RUN_ID_RE = re.compile(r"\d{8}-\d{6}-[A-Za-z0-9._-]*-[0-9a-f]{4}\Z")
MAX_NAME_BYTES = 255   # NAME_MAX: a longer RUN cannot name a file or a run
MAX_PATH_BYTES = 4096  # PATH_MAX


def is_run_dir(path: Path) -> bool:
    """A directory with a state.json or recipe.yaml; one we may not look into counts when its
    name is a run id (``runs ls`` then shows it as unreadable instead of hiding it)."""
    try:
        return (path / "state.json").is_file() or (path / "recipe.yaml").is_file()
    except OSError:
        return bool(RUN_ID_RE.match(path.name))


def enclosing_run(path: Path) -> Path | None:
    """The run directory ``path`` lies in (its output directory, a checkpoint, its train.log):
    the nearest ancestor named as a run id that holds a state.json (a user's own directory with a
    recipe.yaml is never taken for one); None outside every run."""
    try:
        for parent in path.resolve().parents:
            if RUN_ID_RE.match(parent.name) and (parent / "state.json").is_file():
                return parent
    except (OSError, RuntimeError):   # a path that cannot be resolved (a symlink loop)
        return None
    return None


def dangling_link(path: Path) -> tuple[Path, str] | None:
    """The first symbolic link on the way to ``path`` (itself or a directory above it) whose target
    is not there, and that target as the link says it; None when none is (a path not made yet).
    A runs directory that is such a link (``~/.local/share/moeconsole`` linked to a data disk that
    is not mounted, an NFS home's directory removed) read as a runs directory not made yet: `runs
    ls` and `--json --once` said "no runs under ...", exit 0, of a place holding every run, and
    `run` failed "No such file or directory" (round 16)."""
    path = Path(os.path.abspath(path))
    for at in (*reversed(path.parents), path):
        try:
            if not stat.S_ISLNK(os.lstat(at).st_mode):
                continue
            target = os.readlink(at)
        except OSError:
            return None   # this part is not there (nor anything under it): a path not made yet
        if not os.path.exists(at):
            return at, target
    return None


def check_base(base: Path, *, write: bool = False) -> Path:
    """The runs directory as given (``--runs-dir``, the environment): an existing path must be a
    directory writable by nobody but its owner (a base others can write is refused for every
    command: its runs may be swapped or planted), and, to be written (``write``: a new run, the
    index), owned by this user; another user's base can still be read. Every problem is one
    InputError line."""
    try:
        st = os.stat(base)
    except FileNotFoundError:
        dangling = dangling_link(base)
        if dangling is not None:
            from moeconsole.runner.rundir.paths import ELSEWHERE
            link, target = dangling
            raise InputError(f"runs directory {base}: {link} is a link to {target}, which is not there (a disk "
                             f"not mounted, a directory moved or removed): its runs are where it points; mount or "
                             f"restore it, or {ELSEWHERE}") from None
        return base
    except OSError as exc:
        from moeconsole.runner.rundir.paths import ELSEWHERE
        raise InputError(f"runs directory {base}: {exc.strerror or exc}; {ELSEWHERE}") from None
    if not stat.S_ISDIR(st.st_mode):
        from moeconsole.runner.rundir.paths import ELSEWHERE
        raise InputError(f"runs directory {base}: not a directory; {ELSEWHERE}")
    why = unsafe_dir(base, st, owned=write)
    if why:
        raise InputError(f"runs directory {base}: {why}")
    return base


def list_run_dirs(base: Path) -> list[RunDir]:
    """All run directories under ``base``, by id descending (its local-time stamp: a listing's
    order, not which run is newer, which is ``newer_key``'s).
    An entry that cannot be looked at is skipped, never an error for the others."""
    try:
        if not base.is_dir():
            return []
        entries = list(os.scandir(base))
    except OSError:
        return []
    runs = []
    for e in entries:
        try:
            if e.is_dir(follow_symlinks=False) and is_run_dir(Path(e.path)):
                runs.append(RunDir(Path(e.path)))
        except OSError:
            continue
    return sorted(runs, key=lambda r: r.run_id, reverse=True)


def check_ref(ref: str) -> str:
    """A RUN a user typed: never empty (``kill ""`` must not mean "the newest live run"), never
    longer than a file name or path can be."""
    if not ref.strip():
        raise InputError("RUN is empty: give a run id, a unique part of one, or a run directory "
                         "(`moeconsole runs ls` lists them)")
    raw = os.fsencode(ref)
    if b"\0" in raw or len(raw) > MAX_PATH_BYTES or any(len(part) > MAX_NAME_BYTES for part in raw.split(b"/")):
        raise InputError(f"RUN {ref[:40]!r}... ({len(raw)} bytes): too long for a run id or a path")
    return ref


def _readable(run: RunDir) -> RunDir:
    """A run directory this user may read (another user's run is one clear line, not a
    PermissionError deep in a reader)."""
    # its state.json too: a run directory its owner opened to others keeps state.json 0600 (every
    # write replaces it, private), and that run read as DAMAGED ("state.json: Permission denied")
    # in `runs show`, `--json` and the run screen (newcomer round 8)
    opened = os.access(run.path, os.R_OK | os.X_OK)
    if opened and (os.access(run.state, os.R_OK) or not run.state.exists()):
        return run
    try:
        uid = run.path.stat().st_uid
    except OSError:
        uid = None
    if uid is not None and uid != os.geteuid():
        raise not_yours(run.run_id, f"owned by {user_words(uid)}, not by you (uid {os.geteuid()})")
    if opened:
        return run   # this user's own run with a state.json they made unreadable: DAMAGED says why
    raise InputError(f"{run.run_id}: permission denied" + (f" (owned by {user_words(uid)})" if uid is not None else ""))


SLUG_MAX = 40   # characters of a run's name its id holds
_HASH_HEX = 6


def id_slug(name: str) -> str:
    """The part of a run id that a run name becomes (``new_run_id``), at most 40 characters:
    accents folded to ASCII (``démo run`` is ``demo-run``, NFKD without the combining marks),
    other characters than ASCII letters, digits, ``.``, ``_`` and ``-`` as ``-``; a letter or digit
    with no ASCII form (``训练``, ``обучение``) adds a short hash of the whole name at the end, so a
    name in another script still gets a non-empty id of its own (``训练`` is ``h3a5c0f``, the same
    every time, found again by ``_runs_named``)."""
    import unicodedata
    folded = "".join(ch for ch in unicodedata.normalize("NFKD", name) if not unicodedata.combining(ch))
    slug = _SAFE_NAME.sub("-", folded).strip("-")
    if not any(ch.isalnum() and not ch.isascii() for ch in folded):
        # no '-' left at the cut: `...-a-long-` had made ids end `long--0200` (newcomer round 5);
        # ``_runs_named``'s `-{slug}-` still finds the runs named so before
        return slug[:SLUG_MAX].rstrip("-")
    import hashlib
    tag = "h" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_HEX]
    kept = slug[:SLUG_MAX - len(tag) - 1].rstrip("-")
    return f"{kept}-{tag}" if kept else tag


def _legacy_slug(name: str) -> str:
    """The slug ids were made with before accents were folded (``démo run`` was ``d-mo-run``, a
    name in another script nothing): runs made then are still found by their name."""
    return _SAFE_NAME.sub("-", name).strip("-")[:SLUG_MAX]


def _exists(ref: str) -> bool:
    try:
        return Path(ref).expanduser().exists()
    except OSError:
        return False


def _runs_named(runs: list[RunDir], ref: str) -> list[RunDir]:
    """The runs named ``ref`` (``run --name``) where the name is not in the id as typed (spaces,
    a slash, more than 40 characters): those whose id holds the name's slug, narrowed to those
    whose state names them exactly when some do."""
    ref = utf8_decoded(ref) or ref   # a UTF-8 name typed under an ASCII locale is that name
    slugs = {id_slug(ref), _legacy_slug(ref)} - {""}
    if not slugs or ref in slugs:   # typed as the id holds it: the id matches already found it
        return []
    found = [r for r in runs if any(f"-{slug}-" in r.run_id for slug in slugs)]
    exact = [r for r in found if r.read_state().get("name") == ref]
    return exact or found


def bare_ref(ref: str) -> bool:
    """A RUN typed with no ``/`` and no ``~``: when looking it up as a path relative to the cwd is
    refused (a cwd this user may not enter: ``sudo -u`` keeps it), it is no path the user meant but
    a run's id or name under the runs directory (review R70: it was called root's run)."""
    return os.sep not in ref and not ref.startswith("~")


def resolve(base: Path, ref: str | None) -> RunDir:
    """A run from what a user types: a path (a run directory or any path inside one), a full id, any unique part of an id (a prefix, a suffix or a piece between), a run's
    name (``run --name``, also one with spaces or longer than the id holds), or nothing
    (``None``: the newest live run, else the newest run). An empty RUN is an error."""
    check_base(base)
    if ref is not None:
        check_ref(ref)
        try:
            p = Path(ref).expanduser()
            try:
                if p.is_dir() and is_run_dir(p):
                    return _readable(RunDir(p.resolve()))
                if p.exists() and (inside := enclosing_run(p)) is not None:   # `attach .` in its output dir
                    return _readable(RunDir(inside))
            except PermissionError:
                if not bare_ref(ref):
                    raise
            direct = base / ref
            if direct.is_dir() and is_run_dir(direct):
                return _readable(RunDir(direct))
        except OSError as exc:
            # a path into another user's private directory: whose it is, not a bare "Permission denied"
            if isinstance(exc, PermissionError) and (refusal := closed_refusal(f"RUN {ref!r}", p)):
                raise refusal from None
            raise InputError(f"RUN {ref!r}: {exc.strerror or exc}") from None
        runs = list_run_dirs(base)
        matches = [r for r in runs if r.run_id.startswith(ref) or r.run_id.endswith(ref) or ref in r.run_id]
        if not matches:
            matches = _runs_named(runs, ref)
        if len(matches) == 1:
            return _readable(matches[0])
        if not matches and _exists(ref):
            from moeconsole.runner.core.shellwords import quote
            raise InputError(f"{ref}: not a run directory (no state.json or recipe.yaml); a training log or "
                             f"output directory opens with `moeconsole attach {quote(ref)}`")
        if not matches and os.sep in ref:   # typed as a path: say that first
            raise InputError(f"{ref}: no such file or directory (nor a run of that name under {base})")
        if not matches:
            # the next step: where the runs are listed (or how to make one, when there are none)
            nxt = "`moeconsole runs` lists them" if runs else f"there are none: {NO_RUNS_NEXT}"
            raise InputError(f"no run matches {ref!r} under {base}; {nxt}")
        states = [(m, m.read_state()) for m in matches]
        live = [(m, st) for m, st in states if st.get("status") in LIVE]
        # each by its short id (``short_refs``, newest first): the whole ids had wrapped the line
        # mid-id at 80 columns, and the command offered takes the short one as well
        short = short_refs([r.run_id for r in runs])
        listed = ", ".join(f"{short[m.run_id]} ({st.get('status') or 'no state'})" for m, st in states[:5])
        more = f" and {len(states) - 5} more" if len(states) > 5 else ""
        raise AmbiguousRun(f"{ref!r} matches {len(matches)} runs: {listed}{more}", ref,
                           short[_newest(live or states).run_id],
                           tuple((m.run_id, st.get("status")) for m, st in states))
    runs = list_run_dirs(base)
    if not runs:
        raise InputError(f"no runs under {base}: {NO_RUNS_NEXT}")
    states = [(r, r.read_state()) for r in runs]
    live = [(r, st) for r, st in states if st.get("status") in LIVE]
    return _readable(_newest(live or states))


def short_refs(run_ids: list[str]) -> dict[str, str]:
    """Each id as a user types it for ``resolve``: the shortest end of it, in whole ``-`` parts,
    that holds an ASCII letter and that no other of ``run_ids`` holds anywhere, else the whole id.
    Most often that is its random suffix (``a3f2``, ``new_run_id``'s ``secrets.token_hex(2)``: four
    of 0-9a-f) when it holds a hex letter; a suffix of digits only (``1541``, about 15% of them)
    takes the name's last part with it (``demo-1541``). ``resolve`` matches any part of an id, and
    every id begins with a time stamp of digits (``new_run_id``'s ``%Y%m%d-%H%M%S``): text of
    digits only (``1541``) is also in the stamp of a run started at 15:41, now or later, so it would
    stop naming its run (or, typed under another runs directory, name a different one); text with
    a letter never is. (The whole id there had made the lines that name a run's next commands wrap
    mid-id at 80 columns.) The one rule for the short id the run browser's ID column, ``runs ls``
    and those lines show; ``run_ids`` is every run under the directory, never a filtered list
    (reviewed, R29)."""
    def short(rid: str) -> str:
        parts = rid.split("-")
        for k in range(1, len(parts) - 1):   # never into the stamp's two parts: then the whole id
            tail = "-".join(parts[-k:])
            if (len(tail) >= 4 and any(c.isascii() and c.isalpha() for c in tail)
                    and sum(tail in other for other in run_ids) == 1):
                return tail
        return rid
    return {rid: short(rid) for rid in run_ids}


def short_ref(base: Path, run_id: str) -> str:
    """``run_id``'s short id among every run under ``base`` (``short_refs``): what a line that
    names the commands for one run writes (`moeconsole attach a3f2`), so it fits 80 columns. A
    command for a run outside the runs directory a bare command uses takes ``runs_dir_words``."""
    ids = [r.run_id for r in list_run_dirs(base)]
    return short_refs(ids)[run_id] if run_id in ids else run_id   # a run elsewhere: only its id finds it


def command_ref(base: Path, run_id: str) -> tuple[str, str]:
    """(the run's short id, what a printed command types after its command word): the short id,
    with `` --runs-dir DIR`` when ``base`` is not the runs directory a bare command uses
    (``paths.runs_dir_words``): `moeconsole kill c282 --runs-dir /other`."""
    from moeconsole.runner.rundir.paths import runs_dir_words
    ref = short_ref(base, run_id)
    return ref, ref + runs_dir_words(base)


# What to do where there is no run yet: `runs ls`, the run browser and every command that takes
# a RUN say it in these words.
NO_RUNS_NEXT = "start one with `moeconsole run RECIPE`, or try the built-in `moeconsole demo`"


def live_runs(base: Path) -> list[tuple[RunDir, dict]]:
    """Every run under ``base`` whose status is live, with its state (the runs bare ``moeconsole``
    picks the newest of)."""
    return [(r, st) for r in list_run_dirs(base) if (st := r.read_state()).get("status") in LIVE]


def newest_live(base: Path) -> RunDir | None:
    live = live_runs(base)
    return _newest(live) if live else None


def newer_key(state: Mapping[str, Any], run_id: str, now: float | None = None,
              up: float | None = None) -> tuple[bool, float, str]:
    """Which of two runs is the newer, for every command that picks "the newest" run (bare
    ``moeconsole``, ``attach``/``--json``/``verify`` without RUN) and every listing (``runs ls``,
    the run browser): the later start as the STARTED column shows it (``start_shown``: on the boot
    clock where a wall clock was off when ``started_at`` was stamped; the index's ``ORDER BY
    started_at DESC, id DESC`` only reads the rows), then the greater id. ``state``: its
    state.json or index row; ``now``: the wall clock it is shown at; ``up``: the boot clock read once
    for a whole listing (``identity.uptime``; read here when not given).
    Never the id alone: its stamp is the local time of the shell that ran ``run``, so a run started
    under another ``TZ`` (a console on a laptop's zone, a DST change) sorted hours away from its
    place, and two runs of one second were ordered by their random suffix. A run without a start
    time (a damaged ``state.json``) is the oldest."""
    started = state.get("started_at")
    ok = isinstance(started, (int, float)) and not isinstance(started, bool) and math.isfinite(started)
    shown = start_shown(state, time.time() if now is None else now, up) if ok else None
    return (ok, float(shown) if shown is not None else 0.0, run_id)


def _newest(runs: list[tuple[RunDir, dict]]) -> RunDir:
    now, up = time.time(), identity.uptime()
    return max(runs, key=lambda rs: newer_key(rs[1], rs[0].run_id, now, up))[0]


def hostname() -> str:
    return os.uname().nodename  # what socket.gethostname() returns, without importing socket


def runner_record(run_path: Path | None = None) -> dict[str, Any]:
    """state.json's ``runner`` for this process: its PID and start time (``start_time``: the
    caller's, from /proc), the host (shown), where its PID means this process (``runner_here``) and
    the run directory it supervises, by path and identity (``copied_from`` reads them)."""
    here = dir_identity(run_path) if run_path is not None else None
    return {"pid": os.getpid(), "host": hostname(), "boot_id": identity.boot_id() or None,
            "pidns": identity.pid_namespace(), "run_dir": str(run_path) if here is not None else None,
            "run_dir_id": list(here) if here is not None else None}


dir_identity = jsonio.dir_identity


def copied_from(run_path: Path, runner: Mapping[str, Any]) -> str | None:
    """The run directory this one is a copy of, when state.json's ``runner`` names another
    directory that is still there, with the identity the runner recorded (``cp -a``, ``rsync -a``
    of a live run: a backup before an upgrade, a snapshot to compare with): its runner, PIDs and
    groups are that directory's, never this one's. None for the directory itself, by whatever path
    (a link, a bind mount), for a directory moved or renamed (its old path is gone, or another
    directory now), a runner of an older version (no ``run_dir``) and another machine's directory
    (another ``st_dev``)."""
    path, ident = runner.get("run_dir"), runner.get("run_dir_id")
    if not isinstance(path, str) or not path or not isinstance(ident, list) or len(ident) != 2:
        return None
    there = dir_identity(path)
    if there is None or list(there) != ident:
        return None
    here = dir_identity(run_path)
    return None if here is None or here == there else path


# What a copy's state.json names of its original's processes (``as_copy`` drops them).
_PROCESS_KEYS: dict[str, Any] = {"pids": [], "groups": [], "pgid": None, "held": None}


def live_original(state: Mapping[str, Any]) -> "RunDir | None":
    """The run directory this one is a copy of (``as_copy`` left it in ``runner.copy_of``) while
    its run is still live there (a runner holds it, or its state.json says so), else None. Its
    processes are that directory's: a runner of the copy would adopt them by their marker, a kill
    end them, and two runners would then restart one training each. Once the original is over,
    the copy is a directory of its own."""
    runner = state.get("runner")
    original = runner.get("copy_of") if isinstance(runner, Mapping) else None
    if not isinstance(original, str):
        return None
    there = RunDir(Path(original))
    return there if runner_locked(there) or there.read_state().get("status") in LIVE else None


def runner_host_elsewhere(state: Mapping[str, Any]) -> str | None:
    """The host a live run's recorded runner ran on when that is another machine: another host name and
    not a process this reader can ask (``runner_here``: another boot or PID namespace); None for this
    machine (a reboot keeps the host name), a copy (``copy_of``) or a run that is over. Nothing here can
    see that runner's processes: a runner started here would take its training for ended and start it
    again here (round 28's open item), a kill here would signal none of them."""
    runner = state.get("runner") or {}
    host = runner.get("host") if isinstance(runner, Mapping) else None
    if state.get("status") not in LIVE or not isinstance(host, str) or not host or host == hostname() \
            or runner.get("copy_of") or runner_here(runner):
        return None
    return host


def replacing(previous: Any) -> dict[str, Any]:
    """What a runner record written over ``previous`` (the ``runner`` state.json held) says it replaced:
    ``{"took_over": {pid, start_time, boot_id, host}}``, read by that runner if it comes back
    (``taken_over_by``); {} when ``previous`` names no runner process (a run's first runner, a client's
    record of none). A client's record that named one (``client_record``: `kill --machine-gone`) passes it on: a
    `restart` after that kill replaces the same runner."""
    if isinstance(previous, Mapping) and previous.get("pid") is None and isinstance(previous.get("took_over"), Mapping):
        return {"took_over": dict(previous["took_over"])}
    if not isinstance(previous, Mapping) or not isinstance(previous.get("pid"), int) \
            or not isinstance(previous.get("start_time"), (int, float)):
        return {}
    host = previous.get("host")
    boot = previous.get("boot_id")
    return {"took_over": {"pid": previous["pid"], "start_time": previous["start_time"],
                          "boot_id": boot if isinstance(boot, str) else None, "host": host if isinstance(host, str) else ""}}


def _both_boots(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(isinstance(r.get("boot_id"), str) and r.get("boot_id") for r in (a, b))


def _same_machine(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Whether two runner records were written on one machine: the same boot where both name one, else the
    same host name (an older record, or no boot to read)."""
    return a.get("boot_id") == b.get("boot_id") if _both_boots(a, b) else a.get("host") == b.get("host")


def _replaced_me(other: Mapping[str, Any], mine: Mapping[str, Any]) -> bool:
    """Whether the runner record ``other`` names ``mine`` as the one it replaced (``replacing``): the same
    PID, start time and machine."""
    took = other.get("took_over")
    return (isinstance(took, Mapping) and took.get("pid") is not None and took.get("pid") == mine.get("pid")
            and took.get("start_time") is not None and took.get("start_time") == mine.get("start_time")
            and _same_machine(took, mine))


def taken_over_by(state: Mapping[str, Any], mine: Mapping[str, Any]) -> str | None:
    """The host that took a live runner's run over while that runner could not write (a network partition
    of a shared filesystem, a node suspended, a runner stopped past ``stale_after_s``): ``state`` (state.json
    as it is now) names another machine's runner or client (another boot, or, without boots to compare,
    another host name) and was written after this runner (``mine``: its ``runner_record``, with its
    ``start_time``) started. A `restart` there (``launch.elsewhere_refusal``: a new runner, the next attempt
    there) or a `kill --machine-gone` there (``killrun.end_elsewhere``: the run recorded killed) writes it.
    None for this machine's writes (a runner here holds the lock: none writes meanwhile), a state.json with
    no runner (a cleaner's deletion) and an older one restored by hand (written before this runner started).
    A writer of this version names the runner record it replaced (``replacing``: ``took_over``): a runner
    named there was taken over whatever the two machines' clocks say (a machine whose clock is behind by
    more than this runner's age wrote an ``updated_at`` before its start, and the takeover went unseen);
    the times are compared for a record that does not name it (an older version's, or a second takeover:
    a runner that replaced the one that replaced this one)."""
    other = state.get("runner")
    if not isinstance(other, Mapping):
        return None
    host = other.get("host") if isinstance(other.get("host"), str) else ""
    # another machine: another boot, or, without boots to compare, another host name (a record naming none is no one's)
    if _same_machine(other, mine) or not (host or _both_boots(other, mine)):
        return None
    if _replaced_me(other, mine):
        return host or "another machine"
    updated, started = state.get("updated_at"), mine.get("start_time")
    if not isinstance(updated, (int, float)) or not isinstance(started, (int, float)) or updated <= started:
        return None
    return host or "another machine"


def client_record(previous: Any = None) -> dict[str, Any]:
    """state.json's ``runner`` written by a command that ends a run without a runner from another machine
    (``killrun.end_elsewhere``): where it was done, no process, and the runner record it replaced
    (``previous``, ``replacing``: a runner of that run coming back reads it: ``taken_over_by``)."""
    return {"pid": None, "host": hostname(), "boot_id": identity.boot_id() or None, "pidns": identity.pid_namespace(),
            **replacing(previous)}


def copy_refusal(state: Mapping[str, Any], what: str) -> str | None:
    """Why ``what`` (a kill, a runner) must not act on a run directory with this state: a copy of
    a run still live (``live_original``); None when it may."""
    there = live_original(state)
    if there is None:
        return None
    return (f"this run directory is a copy of {printable(str(there.path))}, whose run is still live there; "
            f"its processes are that directory's, so {what} here would act on them: nothing was done "
            f"(`moeconsole runs show {command_ref(there.path.parent, there.run_id)[1]}` shows the run)")


def as_copy(run_path: Path, loaded: run_state.LoadedState) -> run_state.LoadedState:
    """``loaded`` as this directory's own: a copy (``copied_from``) keeps none of the process
    facts its original's runner recorded (they would have a `kill` or a runner of the copy signal
    or adopt the original's runner and training); its ``runner`` says only where it was copied
    from (``copy_of``) and the host."""
    runner = loaded.state.get("runner")
    original = copied_from(run_path, runner) if isinstance(runner, dict) else None
    if original is None:
        return loaded
    assert isinstance(runner, dict)
    state = {**loaded.state, **{k: v for k, v in _PROCESS_KEYS.items() if k in loaded.state},
             "runner": {"host": runner.get("host", ""), "copy_of": original}}
    return run_state.LoadedState(state, loaded.problem, newer=loaded.newer)


def runner_here(runner: Mapping[str, Any]) -> bool:
    """Whether a run's recorded runner (state.json's ``runner``) is a process this reader can ask
    by PID: the same boot and PID namespace where it recorded them (a hostname changed mid-run,
    `hostnamectl`, DHCP, cloud-init, leaves it here; a container sharing the run directory and the
    hostname is not), else, for a runner of a version before them, the same hostname."""
    boot, ns = runner.get("boot_id"), runner.get("pidns")
    boot = boot if isinstance(boot, str) and boot else None
    ns = ns if isinstance(ns, int) and not isinstance(ns, bool) else None
    if boot is not None and (here := identity.boot_id()) and boot != here:
        return False   # another boot: its PID means nothing now, whatever else matches
    if ns is not None and (mine := identity.pid_namespace()) is not None:
        return ns == mine   # with the boot (or no boot to compare) the PID namespace decides
    return runner.get("host") == hostname()   # an older runner, or no namespace to compare


def named_runner_pid(state: Mapping[str, Any]) -> int | None:
    """The PID of the runner ``state`` (state.json, or a reader's copy of it) names, where it runs on
    this machine (``runner_here``): the only listener at the run's control socket a request may be sent
    to or an answer taken from (``control.not_the_runner``); None where it is not known here."""
    r = state.get("runner")
    if not isinstance(r, Mapping):
        return None
    pid = r.get("pid")
    return pid if isinstance(pid, int) and not isinstance(pid, bool) and runner_here(r) else None


pid_alive = identity.answers   # signal 0: a process of that PID exists (no proof of which)


def start_stamp() -> dict[str, Any]:
    """state.json's fields for a run that starts now: the wall clock (shown) and the boot clock
    (what its elapsed time is measured on: ``run_elapsed``)."""
    return {"started_at": time.time(), "started_uptime_s": identity.uptime(),
            "started_boot_id": identity.boot_id() or None, "ended_at": None, "ended_uptime_s": None}


def end_stamp(state: Mapping[str, Any]) -> dict[str, Any]:
    """state.json's fields for a run that ends now (the boot clock's reading only on the boot
    the run started on: another boot's clock starts again at 0)."""
    same = state.get("started_boot_id") is not None and state.get("started_boot_id") == identity.boot_id()
    return {"ended_at": time.time(), "ended_uptime_s": identity.uptime() if same else None}


def run_elapsed(state: Mapping[str, Any], now: float) -> float | None:
    """How long the run has been going (ended: went), in seconds; None before it started. On the
    boot clock when the start (and the end) were read on this reader's boot, so a wall clock
    that was hours fast at the start and then corrected (or stepped since) changes nothing;
    otherwise (another boot, another host) the difference of the wall-clock stamps, never below 0.
    ``state``: state.json or an index row (both carry the stamps of ``start_stamp``)."""
    return _since_start(state, now, to_end=True)


def run_age(state: Mapping[str, Any], now: float, up: float | None = None) -> float | None:
    """How long ago the run started (ended or not), measured as ``run_elapsed`` measures (``up``:
    as ``start_shown`` takes it)."""
    return _since_start(state, now, to_end=False, up=up)


# Below this, the wall clock and the boot clock disagree by their own drift, not by a step: the
# start is shown as state.json recorded it.
CLOCK_STEP_S = 60.0


def start_shown(state: Mapping[str, Any], now: float, up: float | None = None) -> float | None:
    """When the run started, on the wall clock as it reads ``now`` (what the STARTED column and
    `runs show` print): ``now`` less the run's age on the boot clock, so a wall clock hours off at
    the start and then corrected shows the true start, as the age and the elapsed time are measured;
    state.json's ``started_at`` where the two agree within ``CLOCK_STEP_S``, and where the age
    cannot be read on the boot clock (another boot, another host: the wall-clock stamp is all there is).
    ``up``: ``/proc/uptime`` (``identity.uptime``) read once by a caller that shows many runs (a
    listing's sort and its STARTED and AGE columns); read here when not given."""
    started = state.get("started_at")
    if not isinstance(started, (int, float)):
        return None
    age = _boot_since_start(state, to_end=False, up=up)
    return float(started) if age is None or abs(now - age - started) < CLOCK_STEP_S else now - age


def _since_start(state: Mapping[str, Any], now: float, *, to_end: bool, up: float | None = None) -> float | None:
    started = state.get("started_at")
    if not isinstance(started, (int, float)):
        return None
    on_boot = _boot_since_start(state, to_end=to_end, up=up)
    if on_boot is not None:
        return on_boot
    ended = state.get("ended_at") if to_end else None
    end = ended if isinstance(ended, (int, float)) else now
    return max(0.0, end - started)


def _boot_since_start(state: Mapping[str, Any], *, to_end: bool, up: float | None = None) -> float | None:
    """``_since_start`` on the boot clock: None when the stamps were not read on this boot."""
    up0 = state.get("started_uptime_s")
    if not isinstance(up0, (int, float)) or not state.get("started_boot_id"):
        return None
    if to_end and state.get("ended_at") is not None:
        up1 = state.get("ended_uptime_s")
        return up1 - up0 if isinstance(up1, (int, float)) and up1 >= up0 else None
    return _boot_since(up0, state.get("started_boot_id"), up)


def _boot_since(up0: Any, boot: Any, up: float | None = None) -> float | None:
    """Seconds since the boot clock read ``up0`` on the boot ``boot``: None unless that is this
    boot (another boot's clock started again at 0) and the clock has not gone back."""
    if not is_finite_number(up0) or not boot or boot != identity.boot_id():
        return None
    if up is None:
        up = identity.uptime()
    return up - up0 if up is not None and up >= up0 else None


def moment_stamp() -> dict[str, Any]:
    """An event's moment on the boot clock, beside its wall-clock ``t`` (which is shown):
    ``t_up`` (``identity.uptime``) and ``t_boot`` (``identity.boot_id``); ``moment_age`` measures
    from them."""
    return {"t_up": identity.uptime(), "t_boot": identity.boot_id() or None}


def moment_age(rec: Mapping[str, Any], now: float, up: float | None = None) -> float | None:
    """How long ago an event was (``rec``: its ``t`` and ``moment_stamp``'s fields), measured as
    ``run_elapsed`` measures: on the boot clock where it was stamped on this boot, so a wall clock
    stepped since (NTP, ``date -s``) changes nothing; otherwise ``now`` less its ``t``, never below
    0. None without a ``t``."""
    t: Any = rec.get("t")
    if not is_finite_number(t):   # a bool (JSON true) is no moment, -Infinity none either
        return None
    on_boot = _boot_since(rec.get("t_up"), rec.get("t_boot"), up)
    return on_boot if on_boot is not None else max(0.0, now - float(t))
