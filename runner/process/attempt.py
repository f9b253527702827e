"""The attempt-process interface: what the runner needs from whatever runs an attempt.

The runner never blocks on an attempt: it starts one, or adopts one a previous runner started,
then learns of its end through a file descriptor it can ``select`` on (or a poll), signals the
attempt's processes (the termination deadline is the lifecycle's, on the monotonic clock), and
reads the exit status the attempt left in the run directory. The local engine
(``runner.process.engines.local``) runs the command under the waiter on this host; a batch-system engine
(Slurm) implements the same methods over its own job ids.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Mapping, Protocol, Sequence

from runner.core.state import JobRecord, TrackedPid
from runner.process.proctree import ProcessTree


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


class Attempt(Protocol):
    number: int
    adopted: bool
    polled: bool  # the end is learned by ``poll`` each loop turn (batch jobs), not from ``wait_fd``
    tree: ProcessTree  # the attempt's processes as the runner tracks them (a batch job: its job)
    proc: subprocess.Popen[bytes] | None  # the runner's own child (the waiter), when it started one

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

    def poll(self, reaped: Mapping[int, int]) -> int | None | bool:
        """Non-blocking: the return code once ended (None if unknown), False while running.
        ``reaped`` is what this runner's waitpid collected this turn."""

    def signal(self, sig: int, pids: Mapping[int, float] | None = None) -> list[int]:
        """Send ``sig`` to the attempt's processes (start times checked); the PIDs signalled."""

    def survivors(self, *, scan_markers: bool = False) -> dict[int, float]:
        """Processes of the attempt still alive."""

    def tracked(self) -> list[TrackedPid]:
        """The attempt's processes as ``state.json`` records them (so a new runner can adopt)."""


class Engine(Protocol):
    name: str

    def start(self, spec: LaunchSpec, log_fd: int) -> Attempt:
        """Start an attempt, output to ``log_fd``; raises OSError when nothing could start."""

    def attempt_alive(self, number: int, pids: Sequence[TrackedPid]) -> bool:
        """Whether attempt ``number`` (recorded by a previous runner) still runs."""

    def adopt(self, number: int, pids: Sequence[TrackedPid]) -> Attempt | None:
        """Take over a live attempt a previous runner started; None when it is gone."""

    def exit_status(self, number: int) -> ExitStatus | None:
        """The recorded end of attempt ``number`` (outlives any runner), if it ended."""
