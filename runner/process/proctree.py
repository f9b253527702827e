"""Owning a training process tree: know every process of it, signal only those, prove none survive.

A process group is not the whole tree (torchrun puts each worker in a session of its own), and a
SIGKILLed launcher orphans its workers. So the runner makes itself a child subreaper (orphans come
back to it, not to PID 1), and tracks PID + start time of every descendant, refreshed
continuously. A PID is only ever signalled if its start time still matches: a reused PID is a
stranger.
"""
from __future__ import annotations

import os
import resource
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, NamedTuple

import psutil

from moeconsole.runner.core.programs import UNKNOWN, python_program
from moeconsole.runner.rundir import jsonio
from moeconsole.runner.telemetry.identity import process_start, read_stat, start_time_matches, started_at
from moeconsole.runner.telemetry.identity import descendants_of
from moeconsole.runner.telemetry.cpustat import frozen_cgroup
from moeconsole.runner.telemetry.identity import is_stopped
from moeconsole.runner.telemetry.identity import marked_for as marked_for
# the session/group rule (psutil-free, so the blocker scan asks it too): one owner
from moeconsole.runner.telemetry.identity import group_members as group_members
from moeconsole.runner.telemetry.identity import groups_of as groups_of
from moeconsole.runner.telemetry.identity import groups_held as groups_held
from moeconsole.runner.telemetry.identity import group_records
from moeconsole.runner.telemetry.identity import kept_groups as kept_groups
from moeconsole.runner.telemetry.identity import process_table as process_table

# the waiter's (stdlib only, run by path): one owner
from moeconsole.runner.process.waiter import reap_children as reap_children
from moeconsole.runner.process.waiter import returncode_from_status as returncode_from_status
from moeconsole.runner.process.waiter import set_child_subreaper as set_child_subreaper


class ReapedChild(NamedTuple):
    """A child of this process that ended and was reaped: its raw wait status, and the session and
    process group it was in (read from its zombie just before the reap; None when it could not be).
    An orphan comes back to a subreaper with nothing of its ancestry left; its session and group
    still name the process that made them."""
    status: int
    session: int | None
    group: int | None


def reap_children_in_groups() -> dict[int, ReapedChild]:
    """Every exited child reaped (the waiter's ``reap_children`` loop, one child at a time), each
    with its session and process group: the runner's reaping, where an orphan of the attempt's tree
    is known by them once its parent is gone."""
    out: dict[int, ReapedChild] = {}
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)  # ended, not reaped yet
        except ChildProcessError:
            break
        if info is None or not info.si_pid:
            break
        pid = info.si_pid
        session, group = _session(pid), _pgid(pid)  # a zombie keeps both until it is reaped
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue  # reaped meanwhile by a wait of its own (a Popen's): not ours to report
        if done == pid:
            out[pid] = ReapedChild(status, session, group)
    return out


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def lift_file_size_limit() -> int | None:
    """The soft file size limit (``ulimit -f``) raised to the hard one, for the runner and all it
    starts; the limit in force after, in bytes (None: unlimited). A shell's soft limit (a site's
    limits.conf, a leftover ``ulimit -f``) stopped train.log, metrics.jsonl and every checkpoint at
    that size: the training died of EFBIG at its next print, without a line saying why (its
    traceback could not be written either), and the runner's records waited in memory. A hard
    limit cannot be lifted by the user: what is kept of it is returned for the runner to say."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
            soft = hard
        except (OSError, ValueError):
            pass
    return jsonio.file_size_limit()


def address_space_limit() -> int | None:
    """The lower of the soft limits on the address space (``ulimit -v``, RLIMIT_AS) and the data
    segment (``ulimit -d``, RLIMIT_DATA) in force, in bytes; None when both are unlimited. The
    runner's, which every attempt it starts inherits (the crash judge names it: ``crash.classify``'s
    ``address_limit``)."""
    finite = [soft for soft in (resource.getrlimit(r)[0] for r in (resource.RLIMIT_AS, resource.RLIMIT_DATA))
              if soft != resource.RLIM_INFINITY]
    return min(finite) if finite else None


def process_address_limited(pid: int) -> bool | None:
    """Whether process ``pid`` runs under a soft limit on its address space or data segment (the
    ``Max address space`` and ``Max data size`` rows of ``/proc/PID/limits``, proc(5): what
    ``address_space_limit`` reads of the runner itself); None: not readable (gone, another user's)."""
    try:
        with open(f"/proc/{pid}/limits", "rb") as f:
            rows = f.read().decode("ascii", "replace").splitlines()
    except OSError:
        return None
    soft = [row[25:].split()[0] for row in rows if row.startswith(("Max address space", "Max data size"))]
    return any(v != "unlimited" for v in soft) if soft else None


def command_line(pid: int) -> list[str] | None:
    """Process ``pid``'s argv (``/proc/PID/cmdline``); None when gone or not readable."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode("utf-8", "surrogateescape") for a in f.read().split(b"\0")[:-1]]
    except OSError:
        return None


def python_program_of(pid: int) -> str | None:
    """The Python program process ``pid`` runs (``programs.python_program`` of its ``/proc/PID/cmdline``
    and ``cwd``); None: none (not an interpreter) or not readable."""
    argv = command_line(pid)
    if not argv:
        # None: gone. Empty: caught inside its ``execve``, the new program's ``exe`` set and its arguments
        # not yet (fs/exec.c ``begin_new_exec`` before binfmt_elf.c ``create_elf_tables`` sets ``arg_start``;
        # fs/proc/base.c ``get_mm_cmdline`` reads nothing while ``arg_start >= arg_end``), or exiting:
        # nothing known yet, read again at the next walk (CI, loaded: read as an unknown program, it made
        # every refusal the runner's own limit's)
        return None
    if not os.path.basename(argv[0]).startswith("python"):
        try:   # an interpreter that retitled itself (``setproctitle``): its program is not known
            return UNKNOWN if os.path.basename(os.readlink(f"/proc/{pid}/exe")).startswith("python") else None
        except OSError:
            return None
    try:
        cwd: str | None = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        cwd = None
    return python_program(argv, cwd)


# The open files the runner needs at the least: its lock, control socket, runner.log, the
# training's log and pidfd, state.json's and the journal's writes, the run index (SQLite), the
# launch's pipes. Measured (round 14, a local run, no checkpoints): with ``ulimit -n`` 15 a run
# trains to its end; at 13-14 the launch fails ("cannot start ...: Too many open files", a limit
# that is the runner's, said as the command's); at 10-12 the runner died mid-tick with a traceback
# in runner.log and state.json left in the pre-flight cooldown. Round 11 proved ``run``, the runner,
# ``--json``, ``kill`` and the console at 16: the floor.
RUNNER_MIN_OPEN_FILES = 16


def open_files_short(floor: int = RUNNER_MIN_OPEN_FILES) -> int | None:
    """The soft open-file limit (``ulimit -n``) when it is below ``floor`` and the hard one does not
    allow lifting it there (then it is lifted to ``floor``, no further: the training inherits the
    shell's own limit otherwise); None when the runner has room."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= floor:
        return None
    if hard == resource.RLIM_INFINITY or hard >= floor:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (floor, hard))
            return None
        except (OSError, ValueError):
            pass
    return int(soft)


def open_files_refused(floor: int = RUNNER_MIN_OPEN_FILES) -> str | None:
    """Why no runner can start under this process's open-file limit, in one line (None: it has
    room, or the soft limit was lifted to ``floor``: ``open_files_short``). A hard limit below
    ``floor`` is named as the cause: only root raises a hard limit (setrlimit(2): "an unprivileged
    process may ... irreversibly lower its hard limit"), so "ulimit -n 1024" would fail there
    (reviewed R27: soft 12 / hard 15 was told to raise the soft one)."""
    short = open_files_short(floor)
    if short is None:
        return None
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < floor:
        return (f"the hard open-file limit (ulimit -Hn) is {hard}, below the {floor} the runner needs, and only "
                f"root can raise it: start from a session whose hard limit is higher (limits.conf nofile, "
                f"systemd's LimitNOFILE=)")
    return (f"the open-file limit (ulimit -n) is {short}, below the {floor} the runner needs: raise it "
            f"(ulimit -n 1024, limits.conf nofile, systemd's LimitNOFILE=)")


def start_time(pid: int) -> float | None:
    """When ``pid`` started, on the boot's pinned clock (``identity.process_start``: a step of the
    wall clock does not move it). None when it is gone."""
    return process_start(pid)


# A stopped process (SIGSTOP, job control) holds a termination signal pending until it runs again:
# its SIGTERM handler (a graceful save) never ran, and the kill waited its whole grace for a SIGKILL.
# So SIGCONT follows it, as systemd's stop does and a shell's `kill %job`.
CONTINUE_AFTER = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def stopped_pids(tracked: Iterable[Mapping[str, Any]]) -> list[int]:
    """The processes of an attempt (its waiter aside) that are stopped now: by a signal
    (SIGSTOP, SIGTSTP: state ``T``) or by a debugger or profiler attached (``t``), proc(5).
    Only a PID whose start time is still the tracked one's."""
    out = []
    for t in tracked:
        if t.get("role") == "waiter":
            continue
        try:
            if is_stopped(int(t["pid"]), float(t["start_time"])):
                out.append(int(t["pid"]))
        except (KeyError, TypeError, ValueError):
            continue
    return sorted(out)


def agent_lines(tracked: Iterable[Mapping[str, Any]]) -> list[tuple[list[str], bool]]:
    """The command line of each of the attempt's processes (its waiter aside), with whether it has a
    child process now: a torchrun agent without one has not started its workers, which it does only
    once its rendezvous is complete (torch 2.13 torch/distributed/elastic/agent/server/api.py
    ``_initialize_workers``, l.713 ``self._rendezvous`` then l.716 ``self._start_workers``; the static
    rendezvous waits in its ``TCPStore``, elastic/rendezvous/static_tcp_rendezvous.py l.63-74); one with
    a child has met the other nodes. The caller picks the torchrun ones (``recipes.cmdline.rendezvous_of``).
    Only PIDs whose start time is still the tracked one's."""
    parents = set(_parent_map().values())
    out = []
    for t in tracked:
        if t.get("role") == "waiter":
            continue
        try:
            pid, created = int(t["pid"]), float(t["start_time"])
            if not same_process(pid, created):
                continue
            out.append((psutil.Process(pid).cmdline(), pid in parents))
        except (KeyError, TypeError, ValueError, psutil.Error, OSError):
            continue
    return out


def frozen_pids(tracked: Iterable[Mapping[str, Any]]) -> dict[int, str]:
    """The processes of an attempt (its waiter aside) that their cgroup's freezer holds now
    (`docker pause`, `systemctl freeze`, a batch system's suspend: ``cpustat.frozen_cgroup``), each
    with that cgroup. Only a PID whose start time is still the tracked one's."""
    out = {}
    read: dict[str, bool] = {}   # each freezer read once for all the processes in its cgroup
    for t in tracked:
        if t.get("role") == "waiter":
            continue
        try:
            pid, created = int(t["pid"]), float(t["start_time"])
        except (KeyError, TypeError, ValueError):
            continue
        cgroup = frozen_cgroup(pid, read=read)
        if cgroup is not None and same_process(pid, created):
            out[pid] = cgroup
    return dict(sorted(out.items()))


def same_process(pid: int, created: float) -> bool:
    """True if ``pid`` is still the process that started at ``created`` (and is not a zombie)."""
    try:
        fields = read_stat(pid)[1]
    except (OSError, ValueError):
        return False
    return _is_process(fields, created)


def _is_process(fields: list[bytes] | None, created: float) -> bool:
    """Whether these ``stat`` fields (None: no such process) are of the process that started at
    ``created``, not a zombie."""
    try:
        return fields is not None and fields[0] != b"Z" and start_time_matches(started_at(int(fields[19])), created)
    except (ValueError, IndexError):
        return False


def reused(pid: int, created: float | None) -> bool:
    """True if a process other than the one that started at ``created`` has ``pid`` now (its
    zombie is still that one); False when no process has it, or ``created`` is unknown."""
    now = start_time(pid)
    return created is not None and now is not None and not start_time_matches(now, created)


def has_run_marker(proc: psutil.Process, run_id: str, run_dir: Path | str | None = None) -> bool:
    """Whether ``proc`` carries this run's environment marker (``MOECONSOLE_RUN_ID``), and, given
    ``run_dir``, was started for that directory (``marked_for``)."""
    try:
        env = proc.environ()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
        return False
    return env.get("MOECONSOLE_RUN_ID") == run_id and (run_dir is None or marked_for(env.get("MOECONSOLE_RUN_DIR"), run_dir))


def marked_processes(run_id: str, run_dir: Path | str | None = None) -> dict[int, float]:
    """Every live process of ours carrying this run's environment marker (orphans included); given
    ``run_dir``, only those started for that directory (``marked_for``)."""
    me = os.getuid()
    out: dict[int, float] = {}
    for p in psutil.process_iter(["uids", "status"]):
        try:
            if p.info["uids"] is None or p.info["uids"].real != me or p.pid == os.getpid():
                continue
            if p.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if has_run_marker(p, run_id, run_dir):
                created = process_start(p.pid)
                if created is not None:
                    out[p.pid] = created
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return out


def same_host(pid: int) -> bool:
    """True unless ``pid`` runs under another host name than ours (another UTS namespace: a
    container, or one of the nodes a one-machine test cluster simulates). Unreadable: True."""
    try:
        return os.readlink(f"/proc/{pid}/ns/uts") == os.readlink("/proc/self/ns/uts")
    except OSError:
        return True


def foreign_pids(pids: list[int], tracked: set[int], run_id: str,
                 run_dir: Path | str | None = None) -> list[int]:
    """Of ``pids`` (say, the processes NVML lists on a GPU), those that are not this run's: not
    tracked, alive, and without the run's marker. The marker makes a Slurm job's tasks (started
    by slurmstepd, never our children) and orphans of an earlier attempt ours."""
    out = []
    for pid in pids:
        if pid in tracked:
            continue
        try:
            proc = psutil.Process(pid)
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue   # gone since it was listed: it holds nothing now
        if not has_run_marker(proc, run_id, run_dir):
            out.append(pid)
    return out


REFRESH_WALKS = 8  # walks of the table in one refresh while each finds a process of the tree ended


@dataclass
class TrackedProc:
    pid: int
    start_time: float
    role: str  # "waiter" (our direct child) | "leader" (the command) | "child"

    def to_dict(self) -> dict:
        return {"pid": self.pid, "start_time": self.start_time, "role": self.role}


def address_space_seen(before: int | None, stats: Iterable[list[bytes] | None]) -> int | None:
    """The largest address space one process holds, from the fields of their ``/proc/PID/stat``
    (``vsize``, field 23: ``fields[20]``, bytes; proc(5)), and ``before``: the most one process of
    an attempt was seen holding. An address-space limit (RLIMIT_AS) refuses a process whose own
    ``total_vm`` plus the request would pass it (mm/mmap.c ``may_expand_vm``); a walk misses what a
    process mapped since the last one (one ``mmap`` adds a whole shard), so a refusal the log names the
    size of with no process seen near the limit is still the limit's, its words naming the other place
    too (``crash.address_limit_verdict``, review R43). Read from the walk's table: no read of its own."""
    seen = before
    for fields in stats:
        try:
            vsize = int(fields[20]) if fields is not None else None
        except (ValueError, IndexError):
            vsize = None
        if vsize is not None and (seen is None or vsize > seen):
            seen = vsize
    return seen


# The clients whose work runs where the runner's resource limits do not reach (``elsewhere_client``): the
# process that does the work is no descendant of the client, so it does not inherit the runner's
# limits: `docker run` / `nerdctl run` (dockerd/containerd start it under containerd-shim, with the
# container's own `--ulimit`), `podman run` (conmon and the OCI runtime apply the container's
# rlimits: containers.conf `default_ulimits`), `kubectl exec|run` (the pod's node), `ssh host cmd`
# (sshd on that host), `srun` (slurmstepd on the job's node; limits propagate only as the site's
# `PropagateResourceLimits` says). An MPI or pdsh launch reaches other hosts through `ssh`, seen so too.
WORK_ELSEWHERE_CLIENTS = frozenset({"docker", "nerdctl", "podman", "kubectl", "ssh", "srun"})


def elsewhere_client(name: bytes | str | None) -> str | None:
    """``name`` (a process's ``comm``: ``identity.read_stat``'s name, the executable's or script's
    base name cut to 15 bytes) when it is one of ``WORK_ELSEWHERE_CLIENTS``, else None. Pure."""
    if isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    return name if name in WORK_ELSEWHERE_CLIENTS else None


class ProcessTree:
    """The set of processes that belong to one attempt of a run."""

    def __init__(self, run_id: str, run_dir: Path | str | None = None) -> None:
        self.run_id = run_id
        self.run_dir = run_dir   # a marked process started for another directory is not this tree's (``marked_for``)
        self.procs: dict[int, TrackedProc] = {}
        self.leader: TrackedProc | None = None
        self.pgid: int | None = None
        self.adopted = False  # the leader is not our child (a new runner took over a live attempt)
        # an adopted attempt's sessions and process groups (``groups_of``), kept while held
        self.groups: dict[int, float | None] = {}
        # The runner's own helpers (metrics exporter, checkpoint sync, notifications): children
        # of the runner but not of the attempt, so never tracked, never signalled with it.
        self.sidecars: Callable[[], set[int]] = set
        # the largest address space (bytes) one process of the tree was seen holding at a walk
        # (``address_space_seen``); None: none seen, or the tree is adopted (not this runner's limits)
        self.vm_seen: int | None = None
        # the first process of the tree seen that is a client whose work runs elsewhere
        # (``elsewhere_client``: `docker`, `ssh`, `srun`, ...), its name; None: none seen (round 18's
        # review R50: only then may a refusal that names no size be judged not the runner's limit's)
        self.elsewhere: str | None = None
        # the Python programs the tree's processes ran (``programs.python_program``), each mapped to whether
        # a process that ran it was under an address-space limit (``process_address_limited``): what proves a
        # refusal a traceback printed came from a process here, under the limit (round 20:
        # ``programs.frames_ran_here``); ``command_program``: the command's own, as launched, for a
        # command that ends before a walk sees it
        self.programs: dict[str, bool] = {}
        self.command_program: tuple[str, bool] | None = None
        self._programs_read: dict[int, tuple[float, str | None]] = {}

    def set_leader(self, pid: int, created: float | None = None, *, waiter: bool = False) -> None:
        """``pid`` is the process whose end ends the attempt. With ``waiter`` it is the waiter
        (``moeconsole.runner.process.waiter``) and its own child, once seen, is tracked as the command: ``leader``."""
        created = created if created is not None else (start_time(pid) or time.time())
        self.leader = TrackedProc(pid, created, "waiter" if waiter else "leader")
        self.procs = {pid: self.leader}
        self.groups = {}
        self.vm_seen = None
        self.elsewhere = None
        self.programs, self.command_program, self._programs_read = {}, None, {}
        try:
            self.pgid = os.getpgid(pid)
        except OSError:
            self.pgid = pid

    def refresh(self) -> None:
        """Add every descendant of this runner (orphans re-parented to us) and, in an adopted
        attempt, of every live process of it; drop processes that are gone or whose PID was
        reused."""
        # Our own descendants cover a leader we spawned and every orphan re-parented to us (the
        # runner and the waiter are subreapers). An adopted attempt is not ours: its processes
        # were re-parented to PID 1 when the runner before died, a training that left its session
        # (setsid, a double fork) among them. A child one of them starts while no runner watches
        # (a worker, a data loader) carries no marker when the training dropped its environment:
        # its parent, a process proven the run's (PID and start time), is its proof, so every
        # live tracked process is walked, not the leader alone.
        # A process that ends between the table's read and the check of its start time hands its
        # children to this runner after the read: a launcher's middle process that forks the
        # training and exits at once. Dropped, it took them out of sight, and the tree was judged
        # ended with its training alive. Its children are ours before it is a zombie (the kernel
        # re-parents them first), so a walk that drops a process is walked again.
        # A zombie is never tracked, so one that lingers (a parent that has not reaped it yet) costs
        # no walk: only a tracked process found ended does.
        for _ in range(REFRESH_WALKS):
            if not self._walk():
                break

    def _walk(self) -> bool:
        """One read of the process table into the tree; True when a process it tracked had ended."""
        table = process_table()
        roots = {os.getpid()}
        if self.adopted:
            tracked = {pid: t.start_time for pid, t in self.procs.items()
                       if _is_process(table.get(pid), t.start_time)}
            roots |= set(tracked)
            # nor is this runner the ancestor of what a process of it starts as it ends (a training
            # that hands on to a process it starts): re-parented away from the tree, with the
            # marker dropped, it is known by the session or group it is in, the attempt's
            self.groups = {**groups_of(tracked, table), **self.groups}
            members, held = group_members(self.groups, table)
            self.groups = {g: made for g, made in self.groups.items() if g in held}
            for pid, since in members.items():
                if pid not in self.procs:
                    self.procs[pid] = TrackedProc(pid, since, "child")
                roots.add(pid)
        parents = _parent_map(table)
        excluded = self._sidecar_pids(parents)
        # the waiter's first child is the command; its later ones are the command's orphans (the
        # waiter is their subreaper)
        command_wanted = bool(self.leader and self.leader.role == "waiter"
                              and not any(t.role == "leader" for t in self.procs.values()))
        for pid, ppid in descendants_of(parents, roots).items():
            if pid in self.procs or pid in excluded:
                continue
            fields = table.get(pid)
            try:
                if fields is None:
                    raise ValueError(pid)   # from psutil's table: read its own
                created = started_at(int(fields[19]))
            except (ValueError, IndexError):
                try:
                    fields = read_stat(pid)[1]
                    created = started_at(int(fields[19]))
                except (OSError, ValueError, IndexError):
                    continue   # gone since the walk
            role = "child"
            if command_wanted and self.leader and ppid == self.leader.pid:
                role = "leader"  # the command: its process group is the attempt's (named by its zombie too)
                command_wanted = False
                self.pgid = _pgid(pid) or self.pgid
            if fields[0] == b"Z" or created is None:
                continue   # ended: its children are this runner's already, and found by this walk
            self.procs[pid] = TrackedProc(pid, created, role)
        live = {pid: t for pid, t in self.procs.items() if same_process(pid, t.start_time)}
        ended = len(live) < len(self.procs)
        self.procs = live
        if self.leader and self.leader.role == "waiter" and self.pgid is not None and self.pgid == _pgid(self.leader.pid):
            # the command seen between the waiter's fork and its own ``setsid`` (waiter.py ``_fork_exec``) was in the
            # waiter's group: the attempt's is the command's once it leads one (round 32: state.json's ``pgid`` had
            # named the waiter's for the whole attempt, and a `kill -STOP -- -PGID` of it stopped the waiter alone)
            command = next((pid for pid, t in live.items() if t.role == "leader"), None)
            self.pgid = (_pgid(command) if command is not None else None) or self.pgid
        if not self.adopted:
            self.vm_seen = address_space_seen(self.vm_seen, (table.get(pid) for pid in live))
            if self.elsewhere is None:
                self._name_clients(live)
            self._read_programs(live)
        # the sessions and groups the tree made, kept while held (state.json's ``groups``): a
        # worker one hands off and every maker then ends is known by them alone once no runner
        # watches (``kill``, the GPU survey: ``identity.kept_groups``)
        self.groups = {**groups_of({pid: t.start_time for pid, t in live.items()}, table), **self.groups}
        held = groups_held(self.groups, table)
        self.groups = {g: made for g, made in self.groups.items() if g in held}
        return ended

    def _name_clients(self, live: Mapping[int, TrackedProc]) -> None:
        """Read the name of each process of the tree until one is a client whose work runs elsewhere
        (``elsewhere``). Read at every walk, not once per process: a process is named by what it runs
        now, and a fork not yet at its ``exec`` bears its parent's name (the waiter's child was read as
        `python` a moment before it became `ssh`), as a wrapper that ends in ``exec docker run ...`` or
        ``exec srun ...`` bears the shell's. The tree is the attempt's few processes."""
        for pid in live:
            try:
                self.elsewhere = elsewhere_client(read_stat(pid)[0])
            except (OSError, ValueError):
                continue   # gone since the walk
            if self.elsewhere is not None:
                return

    def _read_programs(self, live: Mapping[int, TrackedProc]) -> None:
        """Add the Python program each process of the tree runs, and whether it runs under an
        address-space limit, to ``programs``. Read again when a process's command line changed (an
        ``exec``: a fork bears its parent's until then), so a process is read once per program. What was
        read of a process that has ended is dropped (review R58: one long attempt forking short helpers held
        an entry per process ID it ever had, up to ``pid_max``)."""
        self._programs_read = {pid: read for pid, read in self._programs_read.items() if pid in live}
        for pid, t in live.items():
            program = python_program_of(pid)
            if self._programs_read.get(pid) == (t.start_time, program):
                continue
            self._programs_read[pid] = (t.start_time, program)
            limited = process_address_limited(pid)
            if program is not None and limited is not None:
                self.programs[program] = self.programs.get(program, False) or limited

    def programs_run(self) -> dict[str, bool] | None:
        """``programs`` with the command's own (``command_program``) where no walk read it; None for an
        adopted tree (not this runner's limits)."""
        if self.adopted:
            return None
        return {**dict([self.command_program] if self.command_program else []), **self.programs}

    def track(self, procs: Iterable[tuple[int, float | None]]) -> None:
        """Add these processes, (pid, start time), those alive (not zombies) and still the same
        process, as the attempt's children: the ones its waiter names as outliving it, wherever
        they were re-parented. A PID whose process started at another time is another's: the
        named one ended and its PID was given again (a runner reading the waiter's record long
        after it was written). A start time None (a record that has none): the PID alone."""
        for pid, named in procs:
            created = start_time(pid) if named is None else named
            if pid not in self.procs and created is not None and same_process(pid, created):
                self.procs[pid] = TrackedProc(pid, created, "child")

    def set_sidecars(self, pids: Callable[[], set[int]]) -> None:
        """Name the runner's helpers, and drop any of them a walk already picked up."""
        self.sidecars = pids
        for pid in self._sidecar_pids():
            if self.leader is None or pid != self.leader.pid:
                self.procs.pop(pid, None)

    def _sidecar_pids(self, parents: Mapping[int, int] | None = None) -> set[int]:
        """The runner's helpers and everything they started (rsync, a notification command), from
        ``parents`` (PID -> parent PID: the table ``refresh`` read) or one read of the process table."""
        sidecars = self.sidecars()
        if not sidecars:
            return set()
        return set(sidecars) | set(descendants_of(_parent_map() if parents is None else parents, sidecars))

    def survivors(self, *, scan_markers: bool = False) -> dict[int, float]:
        """Live processes of this tree; with ``scan_markers`` also any process carrying the run's
        marker (the proof step after a kill, where a double-forked orphan could hide)."""
        alive = {pid: t.start_time for pid, t in self.procs.items() if same_process(pid, t.start_time)}
        if scan_markers:
            alive.update(marked_processes(self.run_id, self.run_dir))
        return alive

    def alive(self, *, scan_markers: bool = False) -> bool:
        """Anything of the attempt still running (a batch engine's tree also asks its scheduler)."""
        return bool(self.survivors(scan_markers=scan_markers))

    def blocking(self) -> list[str]:
        """What of the attempt, beyond its processes, still keeps the next one from starting."""
        return []

    def signal(self, sig: int, procs: dict[int, float] | None = None) -> list[int]:
        """Send ``sig`` to the process group and to every tracked process whose start time
        still matches. Returns the PIDs signalled. A termination signal is followed by SIGCONT
        to the same (``continue_after``)."""
        sent = self._send(sig, procs)
        if sig in CONTINUE_AFTER and sent:
            self._send(signal.SIGCONT, procs)
        return sent

    def _send(self, sig: int, procs: dict[int, float] | None) -> list[int]:
        targets = procs if procs is not None else {p: t.start_time for p, t in self.procs.items()}
        targets = {pid: c for pid, c in targets.items() if pid not in (0, 1, os.getpid()) and same_process(pid, c)}
        sent: set[int] = set()
        if self.pgid and self.pgid > 1 and self.pgid != os.getpgid(0):
            # the members are known before the signal: one that dies of it at once (and is reaped
            # by its parent) got it all the same, and a look after could not find its group
            members = [pid for pid in targets if _pgid(pid) == self.pgid]
            try:
                os.killpg(self.pgid, sig)
                sent.update(members)
            except (ProcessLookupError, PermissionError):
                pass
        for pid, created in targets.items():
            # Members of the group got it already; a re-check keeps a reused PID out.
            if pid in sent or not same_process(pid, created):
                continue
            try:
                os.kill(pid, sig)
                sent.add(pid)
            except (ProcessLookupError, PermissionError):
                continue
        return sorted(sent)

    def group_records(self, attempt: int | None) -> list[dict]:
        """The sessions and groups the tree of attempt ``attempt`` made and still holds, as
        state.json's ``groups`` (``identity.group_records``; read back by ``identity.kept_groups``)."""
        return group_records(self.groups, attempt)

    def to_list(self) -> list[dict]:
        return [t.to_dict() for t in self.procs.values()]


def descendants(roots: Iterable[int], table: Mapping[int, list[bytes]] | None = None) -> dict[int, int]:
    """PID -> parent PID of every descendant of ``roots`` (the roots themselves left out), from
    one read of the process table (psutil's ``children(recursive=True)`` reads the whole table
    once per root). Zombies are in, as psutil has them (a command that has just ended still
    names its process group); callers check each PID's start time (``same_process``). ``table``:
    the process table just read (``process_table``), read here when None."""
    return descendants_of(_parent_map(table), roots)


def _parent_map(table: Mapping[int, list[bytes]] | None = None) -> dict[int, int]:
    """PID -> parent PID of every process, from ``table`` (``process_table``, read here when
    None), psutil's where /proc cannot be read."""
    table = process_table() if table is None else table
    out: dict[int, int] = {}
    if not table:
        for p in psutil.process_iter(["ppid"]):
            if p.info["ppid"] is not None:
                out[p.pid] = int(p.info["ppid"])
        return out
    for pid, fields in table.items():
        try:
            out[pid] = int(fields[1])
        except (ValueError, IndexError):
            continue
    return out


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


def session_members(sid: int) -> list[int]:
    """Every live process in session ``sid`` (read from /proc: a timed-out helper's whole
    family, grandchildren included, whatever their process group)."""
    out: list[int] = []
    for pid, fields in process_table().items():
        try:
            if fields[0] != b"Z" and int(fields[3]) == sid:
                out.append(pid)
        except (ValueError, IndexError):
            continue
    return out


def kill_session(sid: int) -> list[int]:
    """SIGKILL every process of session ``sid`` (the session leader included); the PIDs sent."""
    sent = []
    for pid in session_members(sid):
        try:
            os.kill(pid, signal.SIGKILL)
            sent.append(pid)
        except OSError:
            pass
    return sent


def holds_file(pid: int, ident: tuple[int, int]) -> bool:
    """Whether process ``pid`` has the file ``ident`` (device, inode) open on any descriptor
    (False when it is gone or its descriptors cannot be read)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            st = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == ident:
            return True
    return False


def own_pid_set(pids: Iterable[int], proc: str = "/proc") -> set[int]:
    """The PIDs of a process tree in every PID namespace: each PID plus the ``NSpid`` values
    of ``/proc/PID/status`` (a process in a container has one PID per namespace level, and
    NVML, hence PyTorch's OOM message, names the outermost one). Read while the processes
    are alive; missing entries are skipped."""
    out: set[int] = set()
    for pid in pids:
        out.add(int(pid))
        try:
            with open(f"{proc}/{int(pid)}/status", encoding="ascii", errors="replace") as f:
                for line in f:
                    if line.startswith("NSpid:"):
                        out.update(int(x) for x in line.split()[1:] if x.isdigit())
                        break
        except OSError:
            continue
    return out


def live_pid_set(proc: str = "/proc") -> set[int]:
    """The PIDs alive in this process's PID namespace now (``live_pids`` for ``moeconsole.runner.core.crash.classify``)."""
    try:
        return {int(name) for name in os.listdir(proc) if name.isdigit()}
    except OSError:
        return set()
