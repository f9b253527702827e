"""Which processes matter to a launch: GPU processes outside the run, orphans of earlier
attempts, defunct children, holders of the rendezvous port.

The facts about each process are gathered once (psutil, NVML snapshot, socket table) and
labelled by :func:`classify`, a pure function. Labels:

* ``foreign_gpu``: holds GPU memory and is not in the supervised run's tree;
* ``orphan``: a live leftover of this run (our run id in its environment, or a tracked
  PID whose start time still matches) outside the current tree, or a leftover of any
  moeconsole run that is over;
* ``defunct``: exited but not reaped (Z state), child of us, of the run or of a leftover;
  it holds no memory and cannot be killed, only reaped by its parent;
* ``port_holder``: has a socket bound to the run's rendezvous port;
* ``run_tree``: part of the supervised run (its tracked tree, a process marked with the attempt
  that is running now or a newer one, its runner): never a blocker, never offered for killing.

What a label means for the zombie list is decided once, by :func:`standing`: the ``--json``
fields ``shown``/``blocker``/``killable`` and the console's list come from it.

Killing lives in :mod:`moeconsole.runner.telemetry.kill` (its callers import it from there).
"""
from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from moeconsole.runner.core.units import clip, command_text, duration
from moeconsole.runner.rundir import rundir
from moeconsole.runner.telemetry.gpu import GpuSnapshot
from moeconsole.runner.telemetry.identity import boot_epoch, descendants_of, read_stat, self_and_ancestors, start_time_matches
from moeconsole.runner.telemetry.identity import group_members, groups_of, kept_groups, marked_for
from moeconsole.runner.rundir.secrets import redact_cmdline

# psutil (1.7 MiB of code once imported) is imported where it is used: killing, and the places
# /proc cannot be read. On Linux the scan, the labelled processes' facts and the host line read
# /proc themselves, so the attached console never loads it (docs/benchmarks.md, ``ui``).
_PROCFS = os.path.isdir("/proc/self")   # Linux's /proc: what psutil itself reads there

RUN_ID_ENV = "MOECONSOLE_RUN_ID"
RUN_DIR_ENV = "MOECONSOLE_RUN_DIR"
ATTEMPT_ENV = "MOECONSOLE_ATTEMPT"

FOREIGN_GPU, ORPHAN, DEFUNCT, PORT_HOLDER, RUN_TREE = "foreign_gpu", "orphan", "defunct", "port_holder", "run_tree"
# Labels that stop a launch. Defunct processes hold nothing but a PID, so they are shown, not blocking.
BLOCKING = frozenset({FOREIGN_GPU, ORPHAN, PORT_HOLDER})



@dataclass(frozen=True)
class ProcFacts:
    """What is known about one process, as plain booleans (input of :func:`classify`)."""
    on_gpu: bool = False
    in_run_tree: bool = False
    belongs_to_run: bool = False      # our run id in its env, or a tracked PID with matching start time
    marker_run_live: bool = False     # carries a moeconsole run marker of a run that is still live
    marker_run_over: bool = False     # carries a marker of a run that is over (or whose dir is gone)
    zombie: bool = False
    parent_relevant: bool = False     # its parent is us, the run tree, a tracked or a marked process
    holds_port: bool = False
    run_context: bool = False         # a run id or run tree was given (pre-flight), else a bare survey
    own: bool = False                 # the run's own: its runner, or marked with its live or a newer attempt


def process_labels(f: ProcFacts) -> tuple[str, ...]:
    """Labels for one process; empty when it does not matter to a launch."""
    # Without a run context (``moeconsole gpus``), processes of a live supervised run are
    # that run's own, not strangers.
    supervised = f.in_run_tree or f.own or (not f.run_context and f.marker_run_live and not f.belongs_to_run)
    labels: list[str] = []
    if supervised:
        labels.append(RUN_TREE)
    if f.on_gpu and not supervised:
        labels.append(FOREIGN_GPU)
    if not supervised and not f.zombie and (f.belongs_to_run or f.marker_run_over):
        labels.append(ORPHAN)
    if f.zombie and (f.parent_relevant or f.belongs_to_run or f.in_run_tree):
        labels.append(DEFUNCT)
    if f.holds_port:
        labels.append(PORT_HOLDER)
    if labels == [RUN_TREE] and not f.on_gpu:
        return ()
    return tuple(labels)


@dataclass(frozen=True)
class Standing:
    """What the zombie list does with a labelled process."""
    shown: bool          # listed as a zombie or blocker
    blocker: bool        # stops a launch
    killable: bool       # offered for ending (z in the console)
    why: str = ""        # why it is not killable, when shown


def standing(labels: Iterable[str]) -> Standing:
    """The one rule for the zombie list: the run's own processes are neither listed nor offered
    for killing (the runner ends them itself); a defunct process is listed but cannot be ended,
    only reaped by its parent; the blocking labels are listed and may be ended."""
    found = set(labels)
    if RUN_TREE in found or not found:
        return Standing(False, False, False)
    if found & BLOCKING:
        return Standing(True, True, True)
    return Standing(True, False, False, "it has exited already; only its parent can reap it")


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    start_time: float | None          # psutil create_time; None when the PID is not visible here
    uid: int | None
    user: str | None
    cmdline: str                      # secrets redacted
    age_s: float | None
    gpu_mem_mib: float | None         # summed over GPUs; None when on no GPU or unknown
    gpus: tuple[int, ...]
    labels: tuple[str, ...]
    ppid: int | None = None
    status: str | None = None         # psutil status: "running", "sleeping", "zombie", ...
    run_id: str | None = None         # the moeconsole run marker in its environment
    visible: bool = True              # False: the driver lists a PID this namespace cannot see
    attempt: int | None = None        # the attempt marker in its environment
    session: int | None = None        # its session and process group: a process of a run is known by
    group: int | None = None          # them once its parent is gone (``identity.group_members``)
    owner_run: str | None = None      # the live run it is known to belong to (``run_tree``), by its
                                      # marker or, unmarked, by what of the run started it (``_handed_off``)

    @property
    def blocker(self) -> bool:
        return standing(self.labels).blocker

    @property
    def unseen(self) -> str:
        """Why a process the driver lists is not seen here (empty when it is)."""
        return "" if self.visible else unseen_why(self.pid)

    @property
    def killable(self) -> bool:
        """Offered for ending: the zombie list's rule, and a process seen here (an unseen one has
        no start time to prove which process its PID names: its kill would be refused)."""
        return standing(self.labels).killable and self.visible

    @property
    def not_killable_why(self) -> str | None:
        if standing(self.labels).killable and not self.visible:
            return f"{self.unseen}: no start time proves which process PID {self.pid} is"
        return standing(self.labels).why or None

    @property
    def command(self) -> str:
        """What the process runs, as a person reads it (:func:`command_text`)."""
        return command_text(self.cmdline)

    def describe(self, width: int = 60) -> str:
        """One human line: PID, owner, age, command, memory, labels."""
        if not self.visible:
            who = self.unseen
        else:
            cmd = clip(self.command, width)
            who = f"{self.user or '?'}, {duration(self.age_s)}, {cmd or '?'}"
        mem = ""
        if self.gpus:
            amount = "?" if self.gpu_mem_mib is None else f"{self.gpu_mem_mib:.0f}"
            mem = f" {amount} MiB on GPU {','.join(map(str, self.gpus))}"
        owner = f" of run {self.owner_run}" if self.owner_run and RUN_TREE in self.labels else ""
        return f"PID {self.pid} ({who}){mem} [{', '.join(self.labels)}]{owner}"

    def to_dict(self) -> dict:
        return {
            "pid": self.pid, "start_time": self.start_time, "uid": self.uid, "user": self.user,
            "cmdline": self.cmdline, "age_s": self.age_s, "gpu_mem_mib": self.gpu_mem_mib,
            "gpus": list(self.gpus), "labels": list(self.labels), "blocker": self.blocker,
            "shown": standing(self.labels).shown, "killable": self.killable,
            "not_killable_why": self.not_killable_why,
            "ppid": self.ppid, "status": self.status, "run_id": self.run_id, "attempt": self.attempt,
            "session": self.session, "group": self.group, "visible": self.visible,
            "owner_run": self.owner_run,
        }


def unseen_why(pid: int) -> str:
    """Why a PID the driver lists has no /proc entry here. Where this namespace's /proc is mounted
    ``hidepid`` (``proc_hides_pids``), a PID that exists here (signal 0 is refused, not "no such
    process") is another user's, hidden (proc(5)); otherwise, or when it does not exist here, it
    runs in another PID namespace (a container), or has just ended. Without hidepid no signal is
    sent: a PID of another namespace may be a stranger's here, and a 1,024-GPU view asks this of
    every process of every other node on every refresh."""
    if not proc_hides_pids():
        return "not visible here: another PID namespace, or ended"
    try:
        os.kill(pid, 0)
    except PermissionError:
        return "another user's, hidden here by /proc's hidepid"
    except OSError:
        return "not visible here: another PID namespace, or ended"
    return "not visible here"


@functools.lru_cache(maxsize=1)
def proc_hides_pids() -> bool:
    """Whether the /proc this process sees is mounted with ``hidepid`` (1, 2, ``noaccess``,
    ``invisible``; ``0``/``off`` hide nothing), by the last /proc mount of its namespace
    (/proc/self/mounts). Read once a process: a remount of /proc under a running console is
    not followed."""
    hides = False
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) > 3 and parts[1] == "/proc" and parts[2] == "proc":
                    hides = any(opt.startswith("hidepid=") and opt[len("hidepid="):] not in ("0", "off")
                                for opt in parts[3].split(","))
    except OSError:
        pass
    return hides


# -- gathering facts ------------------------------------------------------------------------

@dataclass
class _Row:
    pid: int
    ppid: int | None
    uid: int | None
    status: str | None
    create_time: float | None
    run_id: str | None = None
    run_dir: str | None = None
    attempt: int | None = None
    session: int | None = None
    group: int | None = None


def _is_kernel_thread(pid: int, ppid: int | None) -> bool:
    return pid == 2 or ppid == 2


Markers = tuple[str | None, str | None, int | None]  # run id, run dir, attempt

# (pid, start time) -> markers. A process's environment block is fixed at exec, so a marker
# read once stays true for that process: later scans only read new ones.
_markers: dict[tuple[int, float | None], Markers] = {}


def _attempt_of(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def _read_markers(pid: int) -> Markers:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            block = f.read()
    except OSError:
        if _PROCFS:   # gone, or not ours to read: psutil would read the same file
            return None, None, None
        import psutil
        try:
            env = psutil.Process(pid).environ()  # not Linux: psutil's own way
        except (psutil.Error, OSError):
            return None, None, None
        return env.get(RUN_ID_ENV), env.get(RUN_DIR_ENV), _attempt_of(env.get(ATTEMPT_ENV))
    found: dict[str, str] = {}
    for item in block.split(b"\0"):
        if item.startswith((b"MOECONSOLE_RUN_", b"MOECONSOLE_ATTEMPT=")):
            key, _, value = item.decode("utf-8", "replace").partition("=")
            found[key] = value
    return found.get(RUN_ID_ENV), found.get(RUN_DIR_ENV), _attempt_of(found.get(ATTEMPT_ENV))


# /proc/PID/stat state letters, as psutil names them (its STATUS_* constants, psutil/_common.py;
# tests/telemetry/test_procs_without_psutil.py checks each against psutil's).
STATUS_ZOMBIE = "zombie"
_STATES = {"R": "running", "S": "sleeping", "D": "disk-sleep", "T": "stopped", "t": "tracing-stop",
           "Z": STATUS_ZOMBIE, "X": "dead", "x": "dead", "K": "wake-kill", "W": "waking", "I": "idle",
           "P": "parked"}


def _proc_rows(table: dict[int, list[bytes]] | None = None) -> list[_Row] | None:
    """Every process from /proc directly: one stat and one small read each, a tenth of what
    psutil's per-process objects cost (the scan is most of an attached console's CPU). The
    start time is the boot's pinned wall time + start ticks / clock ticks (``identity.boot_epoch``),
    so it compares with every start time recorded (``identity.process_start``), across steps of
    the wall clock. None where there is no /proc. ``table``: filled with each process's stat
    fields as read (``identity.process_table``'s form), for the session and group rule."""
    try:
        names = os.listdir("/proc")
        boot, ticks = boot_epoch(), os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None
    if boot is None:
        return None
    rows = []
    for name in names:
        if not name.isdigit():
            continue
        try:
            uid = os.stat(f"/proc/{name}").st_uid
            fields = read_stat(name)[1]
            rows.append(_Row(pid=int(name), ppid=int(fields[1]), uid=uid,
                             status=_STATES.get(fields[0].decode(), "?"),
                             create_time=boot + int(fields[19]) / ticks,
                             session=int(fields[3]), group=int(fields[2])))
            if table is not None:
                table[int(name)] = fields
        except (OSError, ValueError, IndexError):
            continue  # exited while we looked
    return rows


def _psutil_rows() -> list[_Row]:
    import psutil
    rows = []
    for p in psutil.process_iter(["pid", "ppid", "uids", "status", "create_time"]):
        info = p.info
        uids = info.get("uids")
        rows.append(_Row(pid=info["pid"], ppid=info.get("ppid"), uid=uids.real if uids else None,
                         status=info.get("status"), create_time=info.get("create_time")))
    return rows


def _scan_process_table(read_env: bool, table: dict[int, list[bytes]] | None = None) -> dict[int, _Row]:
    """Every process with the cheap facts; the run markers from the environment of the
    processes we may read (our own uid, or all when root). ``table``: filled with the stat fields
    read (``_proc_rows``; left empty where there is no /proc)."""
    global _markers
    my_uid, root = os.getuid(), os.geteuid() == 0
    rows: dict[int, _Row] = {}
    seen: dict[tuple[int, float | None], Markers] = {}
    found = _proc_rows(table)
    for row in found if found is not None else _psutil_rows():
        rows[row.pid] = row
        if not read_env or _is_kernel_thread(row.pid, row.ppid) or row.status == STATUS_ZOMBIE:
            continue
        if not root and row.uid != my_uid:
            continue
        key = (row.pid, row.create_time)
        markers = _markers.get(key)
        if markers is None:
            markers = _read_markers(row.pid)
        seen[key] = markers
        row.run_id, row.run_dir, row.attempt = markers
    if read_env:
        _markers = seen
    return rows


def port_users(port: int) -> tuple[set[int], int]:
    """(PIDs with a socket bound to local ``port``, number of TIME_WAIT sockets on it)."""
    if _port_bound(port) is False:
        return set(), 0   # no socket on it: the scan of every process's descriptors is not needed
    import psutil
    try:
        conns = psutil.net_connections(kind="inet")
    except (psutil.Error, OSError):
        return set(), 0
    pids: set[int] = set()
    time_wait = 0
    for c in conns:
        if not c.laddr or c.laddr.port != port:
            continue
        if c.status == psutil.CONN_TIME_WAIT:
            time_wait += 1
        elif c.pid:
            pids.add(c.pid)
    return pids, time_wait


# The socket tables psutil reads for kind="inet" (psutil._pslinux.NetConnections.tmap).
_INET_TABLES = ("tcp", "tcp6", "udp", "udp6")


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_LONGEST_LINE = 512   # a socket table's line is at most ~180 bytes (tcp6)


def read_socket_table(path: str) -> bytes:
    """A ``/proc/net`` socket table whole, in as few reads as it takes. The kernel fills each
    read with at most one page of whole lines (``seq_read_iter``), and every read walks the
    socket hash table, which on a host with much memory takes milliseconds even for a table of
    ten lines; so a read more than a line short of a page is the end, without the read that
    would say so (half the time of ``f.read()``). OSError is the caller's."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            if len(chunk) < _PAGE - _LONGEST_LINE:
                break
        return b"".join(chunks)
    finally:
        os.close(fd)


def _port_bound(port: int) -> bool | None:
    """Whether a socket of the tables ``psutil.net_connections(kind="inet")`` reads has local
    ``port`` (one read of /proc/net, no per-process scan); None when they cannot be read."""
    end = f":{port:04X}"
    for name in _INET_TABLES:
        try:
            text = read_socket_table(f"/proc/net/{name}").decode("ascii", "replace")
        except FileNotFoundError:
            continue   # no IPv6 tables: psutil skips them too
        except OSError:
            return None
        for line in text.splitlines()[1:]:
            parts = line.split(None, 2)
            if len(parts) > 1 and parts[1].endswith(end):
                return True
    return False


def _run_is_live(run_dir: str | None, cache: dict[str, bool]) -> bool:
    """A marked run is live unless its state says it ended or its directory is gone."""
    if not run_dir:
        return True  # a marker without a directory: cannot tell, assume it is somebody's live run
    if run_dir not in cache:
        path = Path(run_dir)
        if not path.is_dir():
            cache[run_dir] = False
        else:
            cache[run_dir] = rundir.RunDir(path).read_state().get("status") not in rundir.TERMINAL
    return cache[run_dir]


def _marked_run(row: _Row, run_context: bool, marked_live: bool,
                cache: dict[str, tuple[set[int], dict[int, float], RunView] | None]
                ) -> tuple[set[int], dict[int, float], RunView] | None:
    """In a bare survey, the live run a process is marked with, as its console sees it: its
    tracked tree ({pid: start time}) and its view (attempt, runner). None when a run context
    was given, the run is over, or its state names no tree and no attempt to judge by (then the
    survey's own rule: a process of a live run is that run's)."""
    if run_context or not marked_live or not row.run_dir:
        return None
    if row.run_dir not in cache:
        state = rundir.RunDir(Path(row.run_dir)).read_state()
        if not state or not (state.get("pids") or isinstance(state.get("attempt"), int)):
            cache[row.run_dir] = None
        else:
            tracked = {int(p["pid"]): float(p.get("start_time") or 0) for p in state.get("pids") or []
                       if isinstance(p, dict) and isinstance(p.get("pid"), int)}
            cache[row.run_dir] = (set(tracked), tracked, RunView.from_state(state))
    return cache[row.run_dir]


def _handed_off(rows: dict[int, _Row], started_by: Callable[[dict[int, float]], set[int]],
                live_cache: dict[str, bool],
                cache: dict[str, tuple[set[int], dict[int, float], RunView] | None]
                ) -> dict[int, str]:
    """In a bare survey, every process with no marker that is a live run's own: tracked by its
    runner, started by a process of the run's own, or in a session or group one made
    (``started_by``: descendants and the session/group rule). The seeds are the processes the
    run's own console calls its own: marked with the run and in its tree or its attempt
    (``RunView.owns``), and its tracked PIDs whose start still matches; a leftover of an earlier
    attempt brings none (what it holds is not the run's now). {pid: the id of the run it is of}."""
    seeds: dict[str, dict[int, float]] = {}
    run_ids: dict[str, str] = {}
    for row in rows.values():
        if not row.run_id or not row.run_dir or row.create_time is None:
            continue
        marked = _marked_run(row, False, _run_is_live(row.run_dir, live_cache), cache)
        if marked is None:
            continue
        m_tree, m_tracked, m_view = marked
        if row.run_dir not in seeds:   # the run's tracked PIDs, once a run
            run_ids[row.run_dir] = row.run_id
            seeds[row.run_dir] = {pid: other.create_time for pid, since in m_tracked.items()
                                  if (other := rows.get(pid)) is not None and other.create_time is not None
                                  and start_time_matches(other.create_time, since)}
        if row.pid in m_tree or m_view.owns(row, row.run_id):
            seeds[row.run_dir][row.pid] = row.create_time
    out: dict[int, str] = {}
    for run_dir, mine in seeds.items():
        out.update({pid: run_ids[run_dir] for pid in set(mine) | started_by(mine)
                    if pid in rows and not rows[pid].run_id})
    return out


def _kept_by_runs(pids: set[int], table: dict[int, list[bytes]], uids: dict[int, int | None],
                  runs_dir: Path) -> dict[int, str]:
    """Of ``pids``, those in a session or process group a live run's ``state.json`` keeps as its
    own (``identity.kept_groups``: none of an ended run; held now and no stranger's number:
    ``group_members``): {pid: the run's id}. Only this user's processes can be: a run's members
    are its user's (``group_members``), so another user's GPU job costs no read of any run. The
    runs are read only when one of those is in a session or group at all, and only runs that
    keep one of those IDs are asked further."""
    me = os.getuid()
    pids = {pid for pid in pids if uids.get(pid) == me}
    ids: set[int] = set()
    for pid in pids:
        try:
            fields = table[pid]
            ids |= {int(fields[2]), int(fields[3])}
        except (KeyError, ValueError, IndexError):
            continue
    ids -= {0, 1}
    out: dict[int, str] = {}
    if not ids:
        return out
    for run in rundir.list_run_dirs(runs_dir):
        wanted = {g: made for g, made in kept_groups(run.read_state()).items() if g in ids}
        if not wanted:
            continue
        members, _ = group_members(wanted, table, uids)
        for pid in pids & set(members):
            out.setdefault(pid, run.run_id)
    return out


def _user_argv_name(pid: int) -> tuple[str, list[str] | None, str]:
    """(user, command line, name) of a process as psutil's ``username()``, ``cmdline()`` and
    ``name()`` give them, from /proc on Linux (psutil/_pslinux.py ``cmdline``: NUL-separated,
    or space-separated when a process rewrote it; ``username``: the real uid's name, else the
    number; the name: ``comm`` from the stat file, which psutil extends only from a command
    line, and it is asked for only when there is none). The command line is None for a zombie
    with none (psutil raises ``ZombieProcess`` there). Elsewhere psutil's. OSError: the process
    is gone or not readable."""
    if not _PROCFS:
        import psutil
        try:
            p = psutil.Process(pid)
            user = p.username()
        except psutil.Error as e:
            raise OSError(str(e)) from e
        try:
            return user, p.cmdline(), p.name()
        except psutil.Error:   # ZombieProcess among them
            return user, None, ""
    import pwd
    with open(f"/proc/{pid}/status", "rb") as f:
        uid_line = next((line for line in f if line.startswith(b"Uid:")), b"")
    try:
        uid = int(uid_line.split()[1])
    except (IndexError, ValueError) as e:
        raise OSError(f"no Uid line for {pid}") from e
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        data = f.read().decode("utf-8", "surrogateescape")
    argv: list[str] | None = []
    if data:
        sep = "\x00" if data.endswith("\x00") else " "
        data = data[:-1] if data.endswith(sep) else data
        argv = data.split(sep)
        if sep == "\x00" and len(argv) == 1 and " " in data:
            argv = data.split(" ")
    comm, fields = read_stat(pid)
    if not argv and fields[:1] == [b"Z"]:
        argv = None
    return user, argv, comm.decode("utf-8", "surrogateescape")


def _proc_info(pid: int, row: _Row | None, labels: tuple[str, ...], usage: dict[int, float | None],
               now: float, owner_run: str | None = None) -> ProcInfo:
    gpus = tuple(sorted(usage))
    known = [v for v in usage.values() if v is not None]
    mem = sum(known) if known else None
    if row is None:
        return ProcInfo(pid=pid, start_time=None, uid=None, user=None, cmdline="", age_s=None,
                        gpu_mem_mib=mem, gpus=gpus, labels=labels, visible=False)
    user, cmdline = None, ""
    try:
        user, argv, name = _user_argv_name(pid)
        if argv is not None:   # None: a zombie's (psutil raised ZombieProcess for it: no line)
            cmdline = redact_cmdline(argv) or f"[{name}]"
    except OSError:
        pass
    if user is None and row.uid is not None:
        user = str(row.uid)
    age = None if row.create_time is None else now - row.create_time
    return ProcInfo(pid=pid, start_time=row.create_time, uid=row.uid, user=user, cmdline=cmdline, age_s=age,
                    gpu_mem_mib=mem, gpus=gpus, labels=labels, ppid=row.ppid, status=row.status,
                    run_id=row.run_id, visible=True, attempt=row.attempt, session=row.session, group=row.group,
                    owner_run=owner_run if RUN_TREE in labels else None)


@dataclass(frozen=True)
class RunView:
    """What a reader knows of the run it looks at (from state.json): which attempt is current,
    whether it is running, and the runner's own PID and start time."""
    attempt: int | None = None
    attempt_live: bool = False
    runner: tuple[int, float | None] | None = None

    def owns(self, row: "_Row", run_id: str | None) -> bool:
        """The run's own process: its runner, or one marked with this run's id and the attempt
        that runs now or a newer one (a new attempt's waiter and command before state.json names
        them, Slurm's srun of the job). A process of an attempt that is over is a leftover."""
        if self.runner is not None and row.pid == self.runner[0] and (
                self.runner[1] is None or start_time_matches(row.create_time, self.runner[1])):
            return True
        if run_id is None or row.run_id != run_id or row.attempt is None or self.attempt is None:
            return False
        return row.attempt > self.attempt or (row.attempt == self.attempt and self.attempt_live)

    @classmethod
    def from_state(cls, state: dict) -> "RunView":
        runner = state.get("runner") or {}
        pid = runner.get("pid")
        attempt = state.get("attempt")
        return cls(attempt=attempt if isinstance(attempt, int) else None,
                   attempt_live=state.get("status") in rundir.ATTEMPT_LIVE,
                   runner=(pid, runner.get("start_time")) if isinstance(pid, int) else None)


def find_blockers(gpu: GpuSnapshot | None, *, run_id: str | None = None,
                  tracked: dict[int, float] | None = None, port: int | None = None,
                  run_tree: set[int] | None = None, view: RunView | None = None,
                  groups: dict[int, float | None] | None = None, runs_dir: Path | None = None,
                  run_dir: Path | None = None) -> list[ProcInfo]:
    """Every process that matters to a launch, labelled; blockers first, then by GPU memory.

    ``run_tree``: PIDs of the supervised run as it is now (their GPU use is shown with the
    ``run_tree`` label). ``tracked``: {pid: start_time} the runner recorded for earlier
    attempts. ``run_id``: this run's id, as in its processes' ``MOECONSOLE_RUN_ID``.
    ``view``: the reader's view of the run (current attempt, its runner): the run's own
    processes outside the tracked tree are ``run_tree`` too. ``groups``: the sessions and
    groups the run's state keeps (``identity.kept_groups``): what is in them is its tree's.
    ``runs_dir``: in a bare survey, the runs whose kept groups name a process no live process
    of a run accounts for (a worker left alone in a session its makers made, all ended).
    ``run_dir``: the run's directory: a process marked with the run's id but started for another
    directory (a copy of the run, another runs directory's run of that id) is not the run's
    (``identity.marked_for``, the kill's rule)."""
    now = time.time()
    tracked = tracked or {}
    usage = gpu.pid_usage() if gpu is not None else {}
    holders, _ = port_users(port) if port else (set(), 0)
    table: dict[int, list[bytes]] = {}
    rows = _scan_process_table(read_env=True, table=table)
    # a PID of the tree that is also tracked is the run's only while its start matches: one that
    # ended and whose PID was given to a stranger since (a survivor named by the cooldown) is not
    tree = {pid for pid in run_tree or () if pid not in tracked or (
        (row := rows.get(pid)) is not None and start_time_matches(row.create_time, tracked[pid]))}
    view = view or RunView()
    skip = self_and_ancestors()
    run_context = run_id is not None or run_tree is not None
    live_cache: dict[str, bool] = {}
    context_cache: dict[str, tuple[set[int], dict[int, float], RunView] | None] = {}

    def ours(row: _Row) -> bool:
        return run_id is not None and row.run_id == run_id and (run_dir is None or marked_for(row.run_dir, run_dir))

    def proven(row: _Row) -> bool:
        if ours(row):
            return True
        return row.pid in tracked and start_time_matches(row.create_time, tracked[row.pid])

    # What a process of the run started is the run's: its parent proves it (a training that left
    # the run's session and dropped its environment starts workers that no marker names, while
    # no runner watches them). So is what is in a session or process group a process of the run
    # made, once that parent is gone (a worker handed off by a double fork, re-parented to init):
    # the kill's and an adopted tree's rule (``identity.groups_of``, ``identity.group_members``),
    # asked of this scan's one read of /proc. The tree's and the run's processes each bring theirs;
    # not this process's own (a runner's pre-flight names itself as allowed: it is the subreaper
    # of an earlier attempt's leftovers, which stay leftovers).
    parent_of = {pid: row.ppid for pid, row in rows.items()}
    uids = {pid: row.uid for pid, row in rows.items()}

    def started_by(seeds: dict[int, float], kept: dict[int, float | None] | None = None) -> set[int]:
        made = {**(kept or {}), **groups_of(seeds, table)} if table else {}
        members, _ = group_members(made, table, uids) if made else ({}, set())
        return set(descendants_of(parent_of, seeds)) | set(members)

    tree |= started_by({pid: row.create_time for pid, row in rows.items() if pid in tree and pid != os.getpid()
                        and row.create_time is not None}, groups)
    started_by_run = started_by({pid: row.create_time for pid, row in rows.items()
                                 if proven(row) and row.create_time is not None}, groups)

    def belongs(row: _Row) -> bool:
        return proven(row) or row.pid in started_by_run

    # A bare survey: what the live runs' own processes started, or is in a session or group they
    # made, is that run's, judged as its console judges its own (``_marked_run``)
    handed = {} if run_context else _handed_off(rows, started_by, live_cache, context_cache)
    # a GPU or port user nothing above accounts for may be left alone in a session or group a run
    # made, every process that made it ended: the run's state keeps those (``kept_groups``)
    if runs_dir is not None and not run_context:
        unknown = {pid for pid in set(usage) | holders if (row := rows.get(pid)) is not None and not row.run_id
                   and pid not in handed and pid not in tree and not belongs(row)}
        handed.update(_kept_by_runs(unknown, table, uids, runs_dir))

    relevant_parents = {os.getpid()} | tree | {pid for pid, row in rows.items() if row.run_id or belongs(row)}
    candidates = set(usage) | holders | {pid for pid, row in rows.items()
                                         if row.run_id or belongs(row) or row.status == STATUS_ZOMBIE}
    found: list[ProcInfo] = []
    for pid in candidates - skip:
        row = rows.get(pid)
        if row is None:
            if pid in usage:  # listed by the driver, invisible here
                labels: tuple[str, ...] = (RUN_TREE,) if pid in tree else (FOREIGN_GPU,)
                found.append(_proc_info(pid, None, labels, usage[pid], now, owner_run=run_id))
            continue
        marked_live = bool(row.run_id) and _run_is_live(row.run_dir, live_cache)
        marked = _marked_run(row, run_context, marked_live, context_cache)
        # whose run a ``run_tree`` process is: the run looked at, its own marker's, or the run
        # whose processes handed it off (never the marker field of an unmarked process)
        owner = run_id if run_context else (row.run_id if marked_live else handed.get(pid))
        if marked is None and not row.run_id and pid in handed:
            facts = ProcFacts(
                on_gpu=pid in usage, in_run_tree=True, belongs_to_run=True, marker_run_live=True,
                zombie=row.status == STATUS_ZOMBIE, parent_relevant=True, holds_port=pid in holders,
                run_context=True)
        elif marked is not None:
            # A bare survey (``moeconsole gpus``) judges a process of a live run the way that run's
            # console does: with the run's own tree and view (one labelling for both)
            m_tree, m_tracked, m_view = marked
            facts = ProcFacts(
                on_gpu=pid in usage, in_run_tree=pid in m_tree, belongs_to_run=True, marker_run_live=True,
                marker_run_over=False, zombie=row.status == STATUS_ZOMBIE,
                parent_relevant=row.ppid in relevant_parents, holds_port=pid in holders, run_context=True,
                own=m_view.owns(row, row.run_id))
        else:
            facts = ProcFacts(
                on_gpu=pid in usage,
                in_run_tree=pid in tree,
                belongs_to_run=belongs(row),
                marker_run_live=marked_live,
                marker_run_over=bool(row.run_id) and not marked_live,
                zombie=row.status == STATUS_ZOMBIE,
                parent_relevant=row.ppid in relevant_parents,
                holds_port=pid in holders,
                run_context=run_context,
                own=view.owns(row, run_id if ours(row) else None),
            )
        labels = process_labels(facts)
        if labels:
            found.append(_proc_info(pid, row, labels, usage.get(pid, {}), now, owner_run=owner))
    found.sort(key=lambda p: (not p.blocker, -(p.gpu_mem_mib or 0.0), p.pid))
    return found


def blockers_on(procs: Iterable[ProcInfo], devices: Iterable[int] | None) -> list[ProcInfo]:
    """The blockers that matter for these GPUs: GPU strangers only on the listed devices;
    orphans and port holders always."""
    wanted = None if devices is None else set(devices)
    out = []
    for p in procs:
        if not p.blocker:
            continue
        if (wanted is not None and set(p.labels) == {FOREIGN_GPU} and p.gpus
                and not wanted.intersection(p.gpus)):
            continue
        out.append(p)
    return out
