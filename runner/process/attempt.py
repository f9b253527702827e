"""The attempt-process interface: what the runner needs from whatever runs an attempt.

The runner never blocks on an attempt: it starts one, or adopts one a previous runner started,
then learns of its end through a file descriptor it can ``select`` on (or a poll), signals the
attempt's processes (the termination deadline is the lifecycle's, on the monotonic clock), and
reads the exit status the attempt left in the run directory. The local engine
(``moeconsole.runner.process.engines.local``) runs the command under the waiter on this host; a batch-system engine
(Slurm) implements the same methods over its own job ids.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping, Protocol, Sequence, Union

from moeconsole.runner.core.crash import TimeWarningEnd
from moeconsole.runner.core.state import JobRecord, TrackedPid
from moeconsole.runner.process.proctree import ProcessTree


@dataclass(frozen=True)
class LaunchSpec:
    attempt: int
    argv: Sequence[str]
    env: Mapping[str, str]
    cwd: str


@dataclass(frozen=True)
class ExitStatus:
    """How an attempt's command ended, as its waiter recorded it."""
    returncode: int | None       # Popen convention: exit code, or -N for signal N
    error: str | None = None     # the command could not be started at all
    ended_at: float | None = None
    job_state: str | None = None  # a batch engine's final job state (Slurm: TIMEOUT, NODE_FAIL, ...)
    failed_nodes: tuple[str, ...] = ()  # nodes of the job the batch system lists down ("node2: down*, Not responding")
    # the job ended as the warning signal its batch system sends ahead of its time limit would end it (Slurm: the
    # sbatch option that asked for it, ``--signal=USR1@40``): the time limit when srun's lines prove it
    # (``crash.classify_job_state``), not the training's crash
    time_warning: TimeWarningEnd | None = None
    # The orphans of the command's tree that ended badly, in order: (pid, returncode, seconds after
    # the command's end, negative before it); the processes of the tree that outlived the waiter,
    # (pid, start time; None: not recorded). The local engine's waiter records both.
    orphan_ends: tuple[tuple[int, int, float], ...] = ()
    outliving: tuple[tuple[int, float | None], ...] = ()
    fork_refused: bool = False   # ``error``'s cause: the kernel refused the fork (a task limit): that passes (R36)


@dataclass(frozen=True)
class Running:
    """``Attempt.poll``: the attempt still runs (or its end is not known yet)."""


@dataclass(frozen=True)
class Ended:
    """``Attempt.poll``: the attempt ended. ``returncode`` in the Popen convention (exit code, or
    -N for signal N), None when only the exit record can say; ``signal`` the signal that ended it."""
    returncode: int | None = None

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None


Polled = Union[Running, Ended]


class Processes(Protocol):
    """The processes of one attempt as the runner tracks them (PID + start time): what the
    runner signals and watches. Every kill and survivor check goes through these methods."""

    @property
    def pids(self) -> dict[int, float]:
        """The attempt's tracked PIDs now, with their start times."""

    @property
    def pgid(self) -> int | None:
        """The command's process group (None: none on this host)."""

    @property
    def leader_pid(self) -> int | None:
        """The attempt's root process (None: none, or no longer watched)."""

    def set_sidecars(self, pids: Callable[[], set[int]]) -> None:
        """PIDs of the run's ops helpers: never part of the attempt."""

    def refresh(self) -> None:
        """Track the attempt's processes as they are now."""

    def signal(self, sig: int, pids: Mapping[int, float] | None = None) -> list[int]:
        """Send ``sig`` to the attempt's processes (start times checked); the PIDs signalled."""

    def survivors(self, *, scan_markers: bool = False) -> dict[int, float]:
        """Processes of the attempt still alive (``scan_markers``: also those carrying the run's
        marker outside the tracked tree)."""

    def alive(self, *, scan_markers: bool = False) -> bool:
        """Anything of the attempt still alive (a batch job: the job unfinished)."""

    def blocking(self) -> list[str]:
        """What still holds the attempt up besides local processes (a batch job not ended)."""

    def tracked(self) -> list[TrackedPid]:
        """The attempt's processes as ``state.json`` records them (so a new runner can adopt)."""

    def groups(self) -> list[dict]:
        """The sessions and process groups the attempt's processes made, as ``state.json`` keeps
        them (``groups``): a worker left alone in one is the run's to ``kill`` and the survey."""

    def address_space_seen(self) -> int | None:
        """The largest address space (bytes) one of the attempt's processes that run under this
        runner's limits was seen holding (``proctree.address_space_seen``); None: not known."""

    def elsewhere_client(self) -> str | None:
        """The name of a process of the attempt seen that is a client whose work runs where this
        runner's limits do not reach (``proctree.elsewhere_client``: `docker`, `ssh`, `srun`); None:
        none seen."""
        return None

    def programs_run(self) -> dict[str, bool] | None:
        """The Python programs the attempt's processes here ran, each mapped to whether one that ran it
        was under an address-space limit (``proctree.ProcessTree.programs_run``); None: not known."""
        return None

    def forget_leader(self) -> None:
        """The attempt has been judged: its root is no longer watched."""

    def track(self, procs: Iterable[tuple[int, float | None]]) -> None:
        """Count these live processes, (pid, start time), among the attempt's (the orphans of its
        command that outlived its waiter: the waiter names them); a start time None: any process
        of that PID now."""


class Attempt(Processes, Protocol):
    number: int
    adopted: bool
    polled: bool  # the end is learned by ``poll`` each loop turn (batch jobs), not from ``wait_fd``

    @property
    def pending(self) -> bool:
        """Queued by a batch system, not yet running: silence is expected (no hang)."""

    @property
    def job_id(self) -> str | None:
        """The batch job's id once known (None: no batch job)."""

    def view(self) -> JobRecord | None:
        """The batch job as ``state.json`` shows it (pending reason, nodes); None without one."""

    def wait_fd(self) -> int | None:
        """A descriptor that becomes readable when the attempt ends (None: poll instead)."""

    def poll(self, reaped: Mapping[int, int]) -> Polled:
        """Non-blocking: ``Ended`` once the attempt's end is seen, else ``Running``. ``reaped``
        is what this runner's waitpid collected this turn."""


class TreeBacked:
    """The ``Processes`` half of an attempt over a ``ProcessTree`` (the engines' own; the runner
    never reaches into it)."""
    tree: ProcessTree
    number: int   # the attempt's (0: none is tracked)

    @property
    def pids(self) -> dict[int, float]:
        return {pid: t.start_time for pid, t in self.tree.procs.items()}

    @property
    def pgid(self) -> int | None:
        return self.tree.pgid

    @property
    def leader_pid(self) -> int | None:
        return self.tree.leader.pid if self.tree.leader is not None else None

    def set_sidecars(self, pids: Callable[[], set[int]]) -> None:
        self.tree.set_sidecars(pids)

    def refresh(self) -> None:
        self.tree.refresh()

    def signal(self, sig: int, pids: Mapping[int, float] | None = None) -> list[int]:
        return self.tree.signal(sig, dict(pids) if pids is not None else None)

    def survivors(self, *, scan_markers: bool = False) -> dict[int, float]:
        return self.tree.survivors(scan_markers=scan_markers)

    def alive(self, *, scan_markers: bool = False) -> bool:
        return self.tree.alive(scan_markers=scan_markers)

    def blocking(self) -> list[str]:
        return self.tree.blocking()

    def tracked(self) -> list[TrackedPid]:
        return [TrackedPid(**t) for t in self.tree.to_list()]  # type: ignore[typeddict-item]

    def groups(self) -> list[dict]:
        return self.tree.group_records(self.number)

    def address_space_seen(self) -> int | None:
        return self.tree.vm_seen

    def elsewhere_client(self) -> str | None:
        return self.tree.elsewhere

    def programs_run(self) -> dict[str, bool] | None:
        return self.tree.programs_run()

    def forget_leader(self) -> None:
        self.tree.leader = None

    def track(self, procs: Iterable[tuple[int, float | None]]) -> None:
        self.tree.track(procs)


class NoAttempt(TreeBacked):
    """The run's processes while no attempt is tracked (before the first launch, or after an
    attempt that ended unwatched): nothing tracked, but a marker scan still finds any process of
    the run left on this host."""

    def __init__(self, run_id: str, run_dir: Path | str | None = None) -> None:
        self.tree = ProcessTree(run_id, run_dir)
        self.number = 0


class Engine(Protocol):
    name: str

    def start(self, spec: LaunchSpec, log_fd: int) -> Attempt:
        """Start an attempt, output to ``log_fd``; raises OSError when nothing could start."""

    def attempt_alive(self, number: int, pids: Sequence[TrackedPid]) -> bool:
        """Whether attempt ``number`` (recorded by a previous runner) still runs."""

    def adopt(self, number: int, pids: Sequence[TrackedPid],
              groups: Mapping[int, float | None] | None = None) -> Attempt | None:
        """Take over a live attempt a previous runner started; None when it is gone. ``groups``:
        the sessions and process groups state.json keeps (``proctree.kept_groups``)."""

    def exit_status(self, number: int) -> ExitStatus | None:
        """The recorded end of attempt ``number`` (outlives any runner), if it ended."""
