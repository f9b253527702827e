"""Killing a blocker safely, and waiting until its GPU memory is really released.

Rules (each a refusal, never a guess): never PID 0/1, never this process or its ancestors,
never a PID whose start time differs from the one the caller saw (the PID was reused),
never another user's process unless we are root and the caller says so. Then SIGTERM, a
grace period, SIGKILL, and a bounded wait for the exit.
"""
from __future__ import annotations

import math
import os
import signal
import time
from dataclasses import asdict, dataclass
from typing import Iterable, Mapping

import psutil

from moeconsole.runner.core.bounds import GRACE, sane_seconds
from moeconsole.runner.telemetry.gpu import GpuBackend, GpuSnapshot
from moeconsole.runner.telemetry.identity import process_start, self_and_ancestors, start_time_matches


@dataclass
class KillResult:
    pid: int
    ok: bool
    action: str        # "terminated" | "killed" | "gone" | "refused"
    reason: str
    seconds: float     # from the first signal to the exit (0 when nothing was sent)

    def to_dict(self) -> dict:
        return asdict(self)


def _user_of(proc: psutil.Process, uid: int) -> str:
    try:
        return proc.username()
    except (psutil.Error, KeyError):
        return str(uid)


def _exited(proc: psutil.Process) -> bool:
    """Gone, replaced by another process, or a zombie (its resources are already freed)."""
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
    except psutil.Error:
        return False


def _identity_refusal(pid: int, start_time: float, proc: psutil.Process, allow_other_users: bool) -> str | None:
    try:
        actual = process_start(pid)   # on the boot's pinned clock, as every start time is recorded
        uid = proc.uids().real
        if actual is None:
            return None  # gone: handled by the caller
    except psutil.NoSuchProcess:
        return None  # handled by the caller as "gone"
    if not start_time_matches(actual, start_time):
        return (f"PID {pid} was reused: the process now there started at {actual:.2f}, "
                f"not at {start_time:.2f} as expected")
    if uid != os.getuid():
        owner = _user_of(proc, uid)
        if os.geteuid() != 0:
            return f"PID {pid} belongs to user {owner}, not to you"
        if not allow_other_users:
            return f"PID {pid} belongs to user {owner}; killing other users' processes needs an explicit flag"
    return None


def check_target(pid: int, start_time: float | None, *, allow_other_users: bool = False) -> KillResult | None:
    """Every refusal rule, or "gone"; None when ``pid`` may be signalled."""
    if pid <= 1:
        return KillResult(pid, False, "refused", f"refusing to signal PID {pid}", 0.0)
    if start_time is None:
        return KillResult(pid, False, "refused",
                          f"no start time known for PID {pid}: cannot rule out a reused PID", 0.0)
    if pid in self_and_ancestors():
        return KillResult(pid, False, "refused", f"PID {pid} is this console or one of its ancestors", 0.0)
    try:
        proc = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return KillResult(pid, True, "gone", f"PID {pid} has already exited", 0.0)
    reason = _identity_refusal(pid, start_time, proc, allow_other_users)
    if reason:
        return KillResult(pid, False, "refused", reason, 0.0)
    if _exited(proc):
        try:
            parent = f"; its parent PID {proc.ppid()} must reap it"
        except psutil.Error:
            parent = ""
        return KillResult(pid, True, "gone", f"PID {pid} has already exited (defunct{parent})", 0.0)
    return None


class Termination:
    """The one way a process is ended: SIGTERM now, SIGKILL at a monotonic deadline, done when it
    has exited (or ``kill_wait_s`` after SIGKILL). ``step`` never blocks, so the runner drives many
    of these from its loop; ``kill_checked`` drives one to the end for a command-line caller."""

    def __init__(self, pid: int, start_time: float, *, grace_s: float, kill_wait_s: float = 10.0,
                 now: float | None = None) -> None:
        self.pid = pid
        self.start_time = start_time
        self.grace_s = sane_seconds(grace_s, 10.0, GRACE)
        self.kill_wait_s = sane_seconds(kill_wait_s, 10.0, GRACE)
        self.started = time.monotonic() if now is None else now
        self.deadline = self.started + self.grace_s
        self.escalated = False
        self.result: KillResult | None = None
        self._proc = psutil.Process(pid)
        self._signal(signal.SIGTERM)
        if self.result is None:   # a stopped process gets it once continued (proctree.CONTINUE_AFTER)
            self._signal(signal.SIGCONT)

    def _signal(self, sig: int) -> None:
        try:
            self._proc.send_signal(sig)  # psutil re-checks the start time before signalling
        except psutil.NoSuchProcess:
            pass
        except psutil.AccessDenied:
            self.result = KillResult(self.pid, False, "refused", f"no permission to send {sig!r} to PID {self.pid}",
                                     0.0)

    def step(self, now: float | None = None) -> KillResult | None:
        """Advance; the result once the process is gone (or given up on), else None."""
        if self.result is not None:
            return self.result
        now = time.monotonic() if now is None else now
        took = now - self.started
        if _exited(self._proc):
            if self.escalated:
                self.result = KillResult(self.pid, True, "killed", f"PID {self.pid} ignored SIGTERM for "
                                         f"{self.grace_s:g} s; SIGKILL ended it ({took:.1f} s in all)", took)
            else:
                self.result = KillResult(self.pid, True, "terminated",
                                         f"PID {self.pid} exited after SIGTERM in {took:.1f} s", took)
        elif not self.escalated and now >= self.deadline:
            self.escalated = True
            self._signal(signal.SIGKILL)
        elif self.escalated and now >= self.deadline + self.kill_wait_s:
            self.result = KillResult(self.pid, False, "killed", f"PID {self.pid} still alive {self.kill_wait_s:g} s "
                                     f"after SIGKILL (stuck in the kernel, D state?)", took)
        return self.result

    def next_due(self) -> float:
        return self.deadline if not self.escalated else self.deadline + self.kill_wait_s


def start_termination(pid: int, start_time: float | None, *, grace_s: float, allow_other_users: bool = False,
                      kill_wait_s: float = 10.0) -> Termination | KillResult:
    """A checked termination under way, or the refusal / "gone" result at once."""
    early = check_target(pid, start_time, allow_other_users=allow_other_users)
    if early is not None:
        return early
    assert start_time is not None
    try:
        return Termination(pid, start_time, grace_s=grace_s, kill_wait_s=kill_wait_s)
    except psutil.NoSuchProcess:
        return KillResult(pid, True, "gone", f"PID {pid} exited before the signal", 0.0)


def kill_checked(pid: int, start_time: float | None, *, grace_s: float = 10.0, allow_other_users: bool = False,
                 kill_wait_s: float = 10.0, poll_s: float = 0.05) -> KillResult:
    """SIGTERM, wait ``grace_s``, SIGKILL, wait ``kill_wait_s``; only after every check passed.
    Blocking: for command-line callers. The runner drives a ``Termination`` from its loop."""
    term = start_termination(pid, start_time, grace_s=grace_s, allow_other_users=allow_other_users,
                             kill_wait_s=kill_wait_s)
    while isinstance(term, Termination):
        res = term.step()
        if res is not None:
            return res
        time.sleep(poll_s)
    return term


Tolerance = float | Mapping[int, float]


def gpu_released(snap: GpuSnapshot, pids: Iterable[int], devices: Iterable[int] | None,
                 tolerance_mib: Tolerance) -> bool:
    """No listed PID on the devices and memory used at or below the tolerance on each
    (one figure for all, or per GPU index). Without a GPU there is nothing to wait for."""
    if not snap.available:
        return True
    pids = set(pids)
    wanted = None if devices is None else set(devices)
    for g in snap.gpus:
        if wanted is not None and g.index not in wanted:
            continue
        if g.processes and pids.intersection(p.pid for p in g.processes):
            return False
        limit = tolerance_mib.get(g.index, math.inf) if isinstance(tolerance_mib, Mapping) else tolerance_mib
        if g.mem_used_mib is not None and g.mem_used_mib > limit:
            return False
    return True


def release_targets(snap: GpuSnapshot, pid: int, slack_mib: float = 256.0) -> dict[int, float]:
    """Per GPU the process is on: the memory used there once its share is given back (as
    seen in ``snap``, before the kill), plus some slack for others' allocations."""
    targets: dict[int, float] = {}
    for g in snap.gpus:
        mine = next((p.used_mib for p in g.processes or () if p.pid == pid), None)
        if mine is not None and g.mem_used_mib is not None:
            targets[g.index] = g.mem_used_mib - mine + max(slack_mib, 0.01 * (g.mem_total_mib or 0.0))
    return targets


def wait_gpu_released(backend: GpuBackend, pids: set[int], *, devices: list[int] | None = None,
                      tolerance_mib: Tolerance = 1024, timeout_s: float = 90,
                      poll_s: float = 0.5) -> tuple[bool, float]:
    """Poll until :func:`gpu_released`; (released, seconds waited). ``devices=None``: all GPUs."""
    t0 = time.monotonic()
    while True:
        if gpu_released(backend.snapshot(), pids, devices, tolerance_mib):
            return True, time.monotonic() - t0
        if time.monotonic() - t0 >= timeout_s:
            return False, time.monotonic() - t0
        time.sleep(poll_s)
