"""Which process is which, without psutil: the start-time rule and this process's ancestors.

Both the blocker scan (``procs``, every poll of an attached console) and the checked kill
(``kill``) ask them. Neither needs psutil on Linux, so the scan runs without importing it
(1.7 MiB of code in the attached console: docs/benchmarks.md, ``ui``); ``kill`` still signals
through psutil, which re-checks the start time before each signal.
"""
from __future__ import annotations

import functools
import math
import os
import stat
from pathlib import Path
from typing import Iterable, Mapping

from moeconsole.runner.core.state import TERMINAL
from moeconsole.runner.rundir import jsonio

# psutil derives create_time from clock ticks since boot (10 ms); two reads of one process
# agree far closer than this, and a PID cannot be recycled within it.
START_TIME_TOLERANCE_S = 0.05


def start_time_matches(actual: float | None, expected: float | None) -> bool:
    return actual is not None and expected is not None and abs(actual - expected) <= START_TIME_TOLERANCE_S


# ---- a process's start time that a step of the wall clock does not move --------------------------
# The kernel keeps a process's start as clock ticks since boot (``/proc/PID/stat`` field 22); a wall
# start time is that plus the boot's wall time, ``/proc/stat``'s ``btime``, which the kernel derives
# from the wall clock at each read (fs/proc/stat.c: ``getboottime64``): a step of the wall clock
# (NTP stepping, ``date -s``, a VM restored or migrated, a leap second) moves ``btime``, and with it
# every start time psutil's ``create_time`` gives, by the step. Every recorded start time then
# stopped matching its process (a tolerance of 50 ms): a new runner took the live training for
# gone, a kill without a runner found nothing to end. psutil's own identity on Linux uses the
# ticks since boot for that reason (``Process._get_ident``). Ours keeps the recorded wall values
# (state.json, crash reports) and pins the boot's wall time per boot: the first of our processes
# on a boot writes ``btime`` as it read it into a private file named by the boot id; every later
# one (runner, console, kill) adds its ticks to that same value.

PIN_DIRS = ("/dev/shm", "/run/user/{uid}", "/tmp")   # tmpfs, gone with the boot; the first usable
_pinned: tuple[str, float] | None = None


@functools.lru_cache(maxsize=1)
def boot_id() -> str:
    """This boot's id (``/proc/sys/kernel/random/boot_id``), "" when unknown: ``time.monotonic()``
    readings and ticks since boot of two processes compare only within one boot. Read once per
    process (no process outlives its boot): ``process_start`` asks it for every process scanned."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return ""


def uptime() -> float | None:
    """Seconds since this boot (``/proc/uptime``'s first field: the boot clock, CLOCK_BOOTTIME,
    suspend included); None when unknown. A step of the wall clock (NTP, ``date -s``, a clock set
    hours fast) never moves it, in any process of the boot: spans of a run measured on it compare
    across runners and readers of the same ``boot_id``."""
    try:
        with open("/proc/uptime", "rb") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def live_btime() -> float | None:
    """``/proc/stat``'s ``btime`` now, read as psutil reads it (``psutil/_pslinux.py``
    ``boot_time``: ``float`` of the line's second field). None where it cannot be read."""
    try:
        with open(PROC_STAT, "rb") as fh:
            for line in fh:
                if line.startswith(b"btime"):
                    return float(line.strip().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


PROC_STAT = "/proc/stat"


def boot_epoch() -> float | None:
    """The wall time this boot began, as our first process on this boot read it (pinned, see
    above), so start times stay put across steps of the wall clock; ``live_btime()`` where no pin
    can be kept (no boot id, no private tmpfs). None where neither can be read."""
    global _pinned
    boot = boot_id()
    if _pinned is not None and _pinned[0] == boot:
        return _pinned[1]
    live = live_btime()
    if not boot or live is None:
        return live
    for where in PIN_DIRS:
        value = _pin(where.format(uid=os.getuid()), boot, live)
        if value is not None:
            _pinned = (boot, value)
            return value
    return live


def _pin(directory: str, boot: str, live: float) -> float | None:
    """The boot's pinned wall time in ``directory``, written there first if absent (a whole file
    linked into place: a reader never sees half of it). Only a regular file of this user that
    nobody else can write is believed. None where the directory does not serve."""
    path = os.path.join(directory, f"moeconsole-{os.getuid()}-btime-{boot}")
    for _ in range(2):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            if not _write_pin(path, live):
                return None
            continue
        except OSError:
            return None
        try:
            st = os.fstat(fd)
            if not (stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022):
                return None
            value = float(os.read(fd, 64).decode("ascii").strip())
            return value if math.isfinite(value) and value > 0 else None
        except (OSError, ValueError, UnicodeDecodeError):
            return None
        finally:
            os.close(fd)
    return None


def _write_pin(path: str, live: float) -> bool:
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return False
    try:
        os.write(fd, f"{live!r}\n".encode())
        os.close(fd)
        try:
            os.link(tmp, path)   # fails when another process pinned first: its value is read
        except FileExistsError:
            pass
        return True
    except OSError:
        return False
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def process_start(pid: int) -> float | None:
    """When ``pid`` started, as a wall time on this boot's pinned clock (``boot_epoch``): its
    ticks since boot from ``/proc/PID/stat``. None when it is gone or cannot be read."""
    try:
        fields = read_stat(pid)[1]
        ticks = int(fields[19])
    except (OSError, ValueError, IndexError):
        return None
    return started_at(ticks)


def started_at(ticks: int) -> float | None:
    """A start of ``ticks`` clock ticks after boot as a wall time on this boot's pinned clock."""
    boot = boot_epoch()
    return None if boot is None else boot + ticks / os.sysconf("SC_CLK_TCK")


def read_stat(pid: int | str) -> tuple[bytes, list[bytes]]:
    """``/proc/PID/stat`` as (the process's name, the fields after it): ``fields[0]`` the state
    letter, ``[1]`` the parent PID, ``[3]`` the session, ``[19]`` the start time in clock ticks
    since boot (proc(5), numbered from the state). The name is what stands between the first
    "(" and the last ")" (a name may hold both). OSError: gone or not readable; ValueError: not
    a stat line."""
    fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)   # no buffered file: a third of the time,
    try:                                                             # read each second per held process
        stat = os.read(fd, 4096)
    finally:
        os.close(fd)
    end = stat.rindex(b")")
    return stat[stat.index(b"(") + 1:end], stat[end + 2:].split()


def descendants_of(parent_of: Mapping[int, int | None], roots: Iterable[int]) -> dict[int, int]:
    """PID -> parent PID of every descendant of ``roots`` (the roots left out) in a process table
    given as PID -> parent PID: the one walk of a tree (the runner's, the kill's, the zombie
    view's)."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parent_of.items():
        if ppid is not None:
            children.setdefault(ppid, []).append(pid)
    out: dict[int, int] = {}
    todo = list(set(roots))
    seen = set(todo)
    while todo:
        parent = todo.pop()
        for child in children.get(parent, ()):
            if child not in seen:
                seen.add(child)
                out[child] = parent
                todo.append(child)
    return out


def answers(pid: int) -> bool:
    """Whether a process of that PID exists, by signal 0 (no proof of which process it is: a
    process of another user answers too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lives(pid: int, created: float | None) -> bool:
    """Whether ``pid`` runs and is the process that started at ``created`` (None: not asked):
    not a zombie (ended, not yet reaped: a container's PID 1 that never reaps keeps one for
    good), not a PID reused by a stranger. A process /proc does not show (another user's under
    ``hidepid``) is asked with signal 0: it lives when it exists."""
    try:
        fields = read_stat(pid)[1]
    except (OSError, ValueError):
        return answers(pid)   # ours and alive yet unreadable a moment ago, or hidden: its stat is read next time
    try:
        if fields[0] in (b"Z", b"X"):
            return False
        return created is None or start_time_matches(started_at(int(fields[19])), created)
    except (ValueError, IndexError):
        return True


def is_stopped(pid: int, created: float) -> bool:
    """Whether ``pid``, still the process that started at ``created``, is stopped: by a signal
    (SIGSTOP, SIGTSTP: state ``T``) or by a debugger or profiler attached (``t``), proc(5). It
    lives and runs nothing until continued (``kill -CONT``)."""
    try:
        fields = read_stat(pid)[1]
        return fields[0] in (b"T", b"t") and start_time_matches(started_at(int(fields[19])), created)
    except (OSError, ValueError, IndexError):
        return False


def _ppid(pid: int) -> int:
    """The parent PID from ``/proc/PID/stat``."""
    return int(read_stat(pid)[1][1])


def self_and_ancestors() -> set[int]:
    """This process and every ancestor: never labelled, never killed. On Linux the parent chain
    from ``/proc`` (what psutil's ``parents()`` walks: each parent's parent up to PID 1); where
    that cannot be read, psutil's."""
    pid = os.getpid()
    pids = {pid}
    try:
        while True:
            pid = _ppid(pid)
            if pid <= 0 or pid in pids:
                return pids
            pids.add(pid)
    except (OSError, ValueError, IndexError):
        if len(pids) > 1:
            return pids   # an ancestor exited while we looked: the rest is not ours to walk
    import psutil
    me = psutil.Process()
    pids = {me.pid}
    try:
        pids.update(p.pid for p in me.parents())
    except psutil.Error:
        pass
    return pids


# ---- the sessions and process groups of a run (the kill, an adopted tree, the blocker scan) -------

def process_table() -> dict[int, list[bytes]]:
    """PID -> the fields of its ``/proc/PID/stat`` (``identity.read_stat``), every process, from
    one read of /proc; empty when /proc cannot be read. A walk reads it once and takes parents,
    sessions, groups and start times from it."""
    out: dict[int, list[bytes]] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            out[int(name)] = read_stat(name)[1]
        except (OSError, ValueError):
            continue   # ended while we looked
    return out




def _in_table(g: int, table: Mapping[int, list[bytes]] | None) -> tuple[bool, float | None, bool]:
    """(a process of PID ``g`` exists, its start, it has ended: a zombie) as the process table just
    read (``process_table``) has it, else as its ``stat`` reads now. Only a PID missing from the
    table is asked, by signal 0 (``answers``: one /proc hides, another user's under ``hidepid``, or
    one started since the read): it exists with no start known."""
    fields = table.get(g) if table is not None else None
    if fields is None and table is None:
        try:
            fields = read_stat(g)[1]
        except (OSError, ValueError):
            fields = None
    if fields is None:
        return answers(g), None, False
    try:
        return True, started_at(int(fields[19])), fields[0] in (b"Z", b"X")
    except (ValueError, IndexError):
        return True, None, False


def groups_of(procs: Mapping[int, float], table: Mapping[int, list[bytes]] | None = None) -> dict[int, float | None]:
    """The sessions and process groups these processes (PID -> start time, each proven the run's)
    are in, that are the run's, each with its maker's start time (None: the maker is gone): read
    from each one's own ``stat`` while its start time still matches (a zombie's too: it keeps
    both). A session is made by a process (``setsid``) and passed on by fork alone, and a group
    moves only within its session: so the session of a process of the run was made by one of its
    ancestors, and the waiter leads a session of its own and its command another, so that ancestor
    is the run's (the maker gone or alive). Kept out: this process's own session and group, and an
    ID whose maker lives and is not among ``procs`` (the session of a shell or a ``slurmstepd``: a
    process not the waiter's descendant). ``table``: the process table just read
    (``process_table``): the makers' starts and states are taken from it; else each one's
    ``stat`` is read."""
    own = {os.getsid(0), os.getpgid(0)}
    out: dict[int, float | None] = {}
    for pid, created in procs.items():
        try:
            fields = read_stat(pid)[1] if table is None else table.get(pid)
            if fields is None or not start_time_matches(started_at(int(fields[19])), created):
                continue
            ids = {int(fields[2]), int(fields[3])}
        except (OSError, ValueError, IndexError):
            continue
        for g in ids:
            if g <= 1 or g in own or g in out:
                continue
            if g in procs:
                out[g] = procs[g]
                continue
            exists, start, ended = _in_table(g, table)
            if not exists or ended:   # its maker ended: a zombie (its start kept) or gone
                out[g] = start
    return out


def _made_by_its_maker(g: int, made: float | None, table: Mapping[int, list[bytes]] | None = None) -> bool:
    """Whether session or group ``g``, kept with its maker's start (None: the maker was gone), can
    still be the run's: no process of PID ``g`` other than its maker exists. A kept ID is only
    known held at each look; between two looks (a kill's whole grace) everything in it may end
    and the number go to a new process, which may make a group of its own (a shell's job): a
    process ``g`` that exists now and did not make it is a stranger's group. One /proc hides
    (another user's under ``hidepid``) has no start known: it is not the maker, which was the
    run's and readable. ``table``: the process table just read (``_in_table``)."""
    exists, start, _ended = _in_table(g, table)
    if not exists:
        return True
    return made is not None and start_time_matches(start, made)


def group_members(groups: Mapping[int, float | None], table: Mapping[int, list[bytes]] | None = None,
                  uids: Mapping[int, int | None] | None = None) -> tuple[dict[int, float], set[int]]:
    """(PID -> start time of every live process of this user in one of these sessions or process
    groups (ID -> its maker's start, ``groups_of``), the IDs still the run's: ``groups_held``).
    A session or group ID is the PID of the process that made it, and the kernel gives that
    number to no new process while any process is in it, the maker gone or not: so what is in a
    session or group of the run is the run's (a process started as its parent ended, re-parented
    out of the tree, its environment dropped), for as long as the ID is held. Once nothing holds it
    the number is free again (``_made_by_its_maker``): an ID not in the second set must be
    forgotten. ``table``: the process table just read (``process_table``), read here when None;
    ``uids``: the owner of each of its processes as that read found it (the /proc entry's uid),
    else each one is stat'ed."""
    members: dict[int, float] = {}
    if not groups:
        return members, set()
    table = process_table() if table is None else table
    held = groups_held(groups, table)
    if not held:
        return members, held
    me = os.getuid()
    for pid, fields in table.items():
        try:
            if not {int(fields[2]), int(fields[3])} & held:
                continue
            if fields[0] == b"Z" or (os.stat(f"/proc/{pid}").st_uid if uids is None else uids.get(pid)) != me:
                continue
            created = started_at(int(fields[19]))
        except (OSError, ValueError, IndexError):
            continue   # ended while we looked
        if created is not None and pid != os.getpid():
            members[pid] = created
    return members, held


def groups_held(groups: Mapping[int, float | None], table: Mapping[int, list[bytes]]) -> set[int]:
    """The IDs of ``groups`` (ID -> maker's start) still the run's: held by some process of
    ``table`` (``process_table``) and no process but its maker has that PID
    (``_made_by_its_maker``, asked of the same table); the one owner of that rule
    (``group_members`` asks it)."""
    kept = {g for g, made in groups.items() if _made_by_its_maker(g, made, table)}
    held: set[int] = set()
    for fields in table.values() if kept else ():
        try:
            held |= {int(fields[2]), int(fields[3])} & kept
        except (ValueError, IndexError):
            continue
    return held


@functools.lru_cache(maxsize=1)
def pid_namespace() -> int | None:
    """The inode of this process's PID namespace (``/proc/self/ns/pid``, namespaces(7)), None when
    unknown: a PID and its start name one process only within one namespace. A container and its
    host share the kernel (one ``boot_id``) and may share a run directory and a hostname, yet a PID
    of one is another process, or none, in the other."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def group_records(groups: Mapping[int, float | None], attempt: int | None) -> list[dict]:
    """State.json's ``groups`` for these sessions and groups (ID -> maker's start) the attempt
    ``attempt``'s processes made: each tagged with the attempt and the PID namespace they were
    seen in, which ``kept_groups`` requires to be the state's attempt and the reader's namespace.
    A runner of a version before the tags carries ``groups`` as an unknown key into every state it
    writes (``state.carried_keys``): an earlier attempt's groups would read as its own."""
    ns = pid_namespace()
    return [{"id": g, "made": made, "attempt": attempt, "pidns": ns} for g, made in sorted(groups.items())]


def kept_groups(state: Mapping[str, object]) -> dict[int, float | None]:
    """The sessions and process groups a run's ``state.json`` keeps (``groups``: what its runner
    last saw its processes make and hold, ``groups_of``) as ID -> maker's start, for
    ``group_members``: the one reader for ``kill``, a runner taking the run over and the GPU
    survey. A worker left alone in one after every process that made it ended (a double fork's,
    its makers SIGKILLed) is known by it alone. None are kept:

    - once the run has ended (a terminal status) or keeps no PID (its attempt's end recorded, a
      kill without a runner found nothing): a kept ID outlives its last holder, and the number's
      next session (a daemon whose ``setsid`` parent exited) is a stranger's;
    - but those of the state's own attempt (``group_records``' tag; a file without it has none):
      a runner of an earlier version copies ``groups`` back unchanged at every write;
    - but those seen in this PID namespace (``pid_namespace``) on this boot (``attempt_boot_id``):
      start times compare within one boot, PIDs within one namespace.

    ``group_members`` also drops an ID whose number a stranger holds now (``_made_by_its_maker``)."""
    records, attempt = state.get("groups"), state.get("attempt")
    if (not isinstance(records, list) or not records or not state.get("pids") or state.get("status") in TERMINAL
            or state.get("attempt_boot_id") != boot_id() or pid_namespace() is None
            or not isinstance(attempt, int) or isinstance(attempt, bool)):
        return {}
    out: dict[int, float | None] = {}
    for rec in records:
        if not isinstance(rec, Mapping) or rec.get("attempt") != attempt or rec.get("pidns") != pid_namespace():
            continue
        g, made = rec.get("id"), rec.get("made")
        if isinstance(g, int) and not isinstance(g, bool) and g > 1:
            out[g] = float(made) if isinstance(made, (int, float)) and not isinstance(made, bool) else None
    return out


def marked_for(marked_dir: str | None, run_dir: Path | str) -> bool:
    """Whether a process whose marker names the run directory ``marked_dir`` (``MOECONSOLE_RUN_DIR``,
    set by the runner that started it) may be ``run_dir``'s: unless that names another directory
    still there. A copy of a run directory (`cp -a`) has the run's id, and so has the copy's own
    training once it was supervised there: each must leave the other's processes alone. A
    directory moved or renamed (its old path gone) keeps its processes, as one reached by a link."""
    if not marked_dir or marked_dir == os.fspath(run_dir):
        return True
    theirs = jsonio.dir_identity(marked_dir)
    return theirs is None or theirs == jsonio.dir_identity(run_dir)
