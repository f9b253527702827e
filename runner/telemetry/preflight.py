"""Pre-flight before every launch and restart, and the wait the runner's cooldown uses.

Conditions: on every GPU the recipe uses, no foreign process and memory used at or below a
tolerance; no live leftover of this run; the rendezvous port bindable. The recipe picks
what to do when they fail: ``wait`` for them, ``kill`` the blockers (same safety rules as
a user's kill) and wait, or ``refuse`` with the problems spelled out.
"""
from __future__ import annotations

import errno
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from moeconsole.runner.telemetry.gpu import GpuBackend, GpuSnapshot
from moeconsole.runner.telemetry.kill import KillResult, kill_checked, wait_gpu_released
from moeconsole.runner.telemetry.procs import ORPHAN, PORT_HOLDER, ProcInfo, blockers_on, find_blockers, port_users

POLICIES = ("wait", "kill", "refuse")


def _bind_check(family: int, host: str, port: int) -> bool | None:
    """True bindable, False in use, None when this address family/host does not apply."""
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        # A TCPStore server sets SO_REUSEADDR, so TIME_WAIT leftovers do not block it.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(1)
        return True
    except OSError as exc:
        if exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
            return None
        return False
    finally:
        s.close()


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Really bind (and listen on) the port, as the rendezvous server would: on ``host``
    and on the wildcard address, since a server bound to either blocks the other."""
    checks = [(socket.AF_INET, host), (socket.AF_INET, "0.0.0.0")]
    if socket.has_ipv6:
        checks.append((socket.AF_INET6, "::"))
    return all(_bind_check(fam, h, port) is not False for fam, h in checks if h)


@dataclass
class PreflightResult:
    ok: bool
    problems: list[str]          # one human line each
    blockers: list[ProcInfo]
    gpu_waiting: bool            # a GPU condition fails (memory or foreign processes)
    port_waiting: bool           # the port is not bindable
    gpu: GpuSnapshot | None = None

    def summary(self) -> str:
        return "clear" if self.ok else self.problems[0] + (f" (+{len(self.problems) - 1} more)"
                                                           if len(self.problems) > 1 else "")

    def to_dict(self) -> dict:
        return {"ok": self.ok, "problems": list(self.problems), "blockers": [b.to_dict() for b in self.blockers],
                "gpu_waiting": self.gpu_waiting, "port_waiting": self.port_waiting}


def gpu_problems(snap: GpuSnapshot | None, devices: list[int] | None, tolerance_mib: float) -> list[str]:
    """Memory and presence problems on the devices a recipe uses (pure)."""
    if not devices:
        return []
    if snap is None or not snap.available:
        reason = "no GPU backend" if snap is None else snap.reason
        # the cause first: the console's status line shows this after the run's cost and clips its tail
        # (newcomer round 14: at 132 columns `waiting on: recipe uses GPU 0,1,2,3,4,5,6,7 but there is…`)
        return [f"no NVIDIA GPU on this machine for the recipe's GPU {','.join(map(str, devices))}: {reason}"]
    problems = []
    for i in devices:
        g = snap.gpu(i)
        if g is None:
            problems.append(f"GPU {i} is not present (this node has {len(snap.gpus)})")
        elif g.mem_used_mib is not None and g.mem_used_mib > tolerance_mib:
            problems.append(f"GPU {i}: {g.mem_used_mib:.0f} MiB used, above the {tolerance_mib:.0f} MiB tolerance")
    return problems


def _blocker_problem(p: ProcInfo, port: int | None, run_id: str | None) -> str:
    if ORPHAN in p.labels:
        what = f"leftover of run {p.run_id}" if p.run_id and p.run_id != run_id else "leftover of this run"
    elif PORT_HOLDER in p.labels and not p.gpus:
        what = f"holds port {port}"
    else:
        what = "foreign GPU process"
    return f"{what}: {p.describe()}"


def preflight(backend: GpuBackend | None, *, devices: list[int] | None, tolerance_mib: float,
              port: int | None, run_id: str | None, exclude_pids: Iterable[int] = frozenset(),
              tracked: dict[int, float] | None = None, run_dir: Path | None = None) -> PreflightResult:
    """Check every launch condition once. ``exclude_pids``: processes that are allowed to
    exist (e.g. the runner itself); ``devices=None``: the recipe uses no GPU."""
    snap = backend.snapshot() if backend is not None else None
    procs = find_blockers(snap, run_id=run_id, tracked=tracked, port=port, run_tree=set(exclude_pids), run_dir=run_dir)
    blockers = blockers_on(procs, devices)
    problems = gpu_problems(snap, devices, tolerance_mib)
    gpu_waiting = bool(problems) or any(p.gpus for p in blockers)
    problems += [_blocker_problem(p, port, run_id) for p in blockers]
    port_waiting = False
    if port and not port_free(port):
        port_waiting = True
        if not any(PORT_HOLDER in p.labels for p in blockers):
            _, time_wait = port_users(port)
            why = (f"{time_wait} connection(s) in TIME_WAIT" if time_wait
                   else "no holder visible here (another user's or another network namespace's process?)")
            problems.append(f"port {port} is not free: {why}")
    return PreflightResult(ok=not problems, problems=problems, blockers=blockers, gpu_waiting=gpu_waiting,
                           port_waiting=port_waiting, gpu=snap)


@dataclass
class ClearResult:
    ok: bool
    policy: str
    waited_s: float
    final: PreflightResult
    killed: list[KillResult] = field(default_factory=list)
    message: str = ""

    def to_dict(self) -> dict:
        return {"ok": self.ok, "policy": self.policy, "waited_s": self.waited_s, "message": self.message,
                "killed": [k.to_dict() for k in self.killed], "final": self.final.to_dict()}


def clear_for_launch(backend: GpuBackend | None, *, policy: str, devices: list[int] | None,
                     tolerance_mib: float, port: int | None, run_id: str | None,
                     exclude_pids: Iterable[int] = frozenset(), tracked: dict[int, float] | None = None,
                     timeout_s: float = 90.0, poll_s: float = 1.0, grace_s: float = 10.0,
                     allow_other_users: bool = False,
                     on_poll: Callable[[PreflightResult, float], None] | None = None) -> ClearResult:
    """Pre-flight under a policy; ``timeout_s`` is the ceiling of the wait. ``on_poll``
    receives each result and the seconds waited so far (the UI's countdown)."""
    if policy not in POLICIES:
        raise ValueError(f"unknown pre-flight policy {policy!r} (expected one of {', '.join(POLICIES)})")
    exclude = frozenset(exclude_pids)
    check = lambda: preflight(backend, devices=devices, tolerance_mib=tolerance_mib,  # noqa: E731
                              port=port, run_id=run_id, exclude_pids=exclude, tracked=tracked)
    t0 = time.monotonic()
    killed: list[KillResult] = []
    tried: set[int] = set()
    while True:
        result = check()
        waited = time.monotonic() - t0
        if on_poll:
            on_poll(result, waited)
        if result.ok:
            return ClearResult(True, policy, waited, result, killed, "clear")
        if policy == "refuse":
            return ClearResult(False, policy, waited, result, killed,
                               "refusing to launch: " + "; ".join(result.problems))
        if policy == "kill":
            targets = [b for b in result.blockers
                       if b.visible and b.start_time is not None and b.pid not in tried]
            for b in targets:
                tried.add(b.pid)
                killed.append(kill_checked(b.pid, b.start_time, grace_s=grace_s,
                                           allow_other_users=allow_other_users))
            ended = [b for b, k in zip(targets, killed[len(killed) - len(targets):]) if k.ok]
            gpus_freed = sorted({i for b in ended for i in b.gpus})
            if ended and backend is not None and gpus_freed:
                left = max(0.0, timeout_s - (time.monotonic() - t0))
                wait_gpu_released(backend, {b.pid for b in ended}, devices=devices or gpus_freed,
                                  tolerance_mib=tolerance_mib, timeout_s=left, poll_s=min(poll_s, 0.5))
            if ended:
                continue
        if time.monotonic() - t0 >= timeout_s:
            refused = [k.reason for k in killed if not k.ok]
            return ClearResult(False, policy, time.monotonic() - t0, result, killed,
                               f"still not clear after {timeout_s:g} s: " + "; ".join(result.problems + refused))
        time.sleep(poll_s)
