"""``moeconsole gpus [--json] [--port N]``: one snapshot of every GPU, the host, and the
processes that matter to a launch (the same data as the UI's GPU panel).

No NVIDIA GPU is a state, not an error: a clear line and exit 0. With ``--kill PID`` (when
the CLI offers it) each named process is killed after a confirmation that names it and the
escalation timer, by the same checked rules as everywhere else.
"""
from __future__ import annotations

import sys
from typing import Iterable

from moeconsole.console.gpurows import GPU_HEADER, gpu_row, pair
from moeconsole.runner.rundir import jsonio
from moeconsole.runner.rundir.paths import runs_base
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.telemetry.gpu import GpuBackend, GpuSnapshot, get_backend
from moeconsole.runner.telemetry.host import host_snapshot, prime_cpu
from moeconsole.runner.telemetry.kill import KillResult, kill_checked, release_targets, wait_gpu_released
from moeconsole.runner.telemetry.preflight import port_free
from moeconsole.runner.core.units import NA, clip, duration, number
from moeconsole.runner.telemetry.procs import RUN_TREE, ProcInfo, find_blockers, port_users

NONE = "-"  # a process on no GPU: nothing to show (not an unknown value, which is NA)


def render_gpus(snap: GpuSnapshot) -> list[str]:
    if not snap.available:
        return [f"No NVIDIA GPU: {snap.reason}"]
    lines = [f"NVIDIA driver {snap.driver or NA}, {len(snap.gpus)} GPU(s)", GPU_HEADER]
    lines += [gpu_row(g.to_dict()) for g in snap.gpus]
    unknown_procs = [str(g.index) for g in snap.gpus if g.processes is None]
    if unknown_procs:
        lines.append(f"GPU process list unavailable on GPU {','.join(unknown_procs)}")
    return lines


def cpu_window_words(host: dict) -> str:
    """Over what window the CPU figure ran and from whose first reading: ``last 1.4 s, from the
    runner's reading`` (``host.CpuFigure``); empty for a host dict without it."""
    window = host.get("cpu_window_s")
    if not isinstance(window, (int, float)):
        return ""
    since = ", from the runner's reading" if host.get("cpu_source") == "runner" else ""
    return f" (last {number(window, '.1f' if window < 10 else '.0f')} s{since})"


def render_host(host: dict) -> str:
    cpu = NA if host.get("cpu_pct") is None else \
        f"{number(host['cpu_pct'])}% of {host.get('cpu_count') or NA} cores{cpu_window_words(host)}"
    ram = f"{pair(host.get('ram_used_gib'), host.get('ram_total_gib'), '.1f')} GiB"
    loads = [host.get(k) for k in ("load1", "load5", "load15")]
    load = NA if None in loads else " ".join(f"{x:.2f}" for x in loads)
    return f"Host {host.get('hostname')}: CPU {cpu}, RAM {ram}, load {load}"


PROC_HEADER = f"  {'PID':>7}  {'User':<10} {'Age':>7}  {'GPU MiB':>8}  {'GPUs':<7} {'Labels':<24} Command"


def proc_row(p: ProcInfo, width: int = 60) -> str:
    mem = NONE if not p.gpus else number(p.gpu_mem_mib)
    gpus = ",".join(map(str, p.gpus)) or NONE
    cmd = p.command if p.visible else f"({p.unseen})"
    cmd = clip(cmd, width)
    mark = "!" if p.blocker else " "
    owner = f" (run {p.owner_run})" if p.owner_run and RUN_TREE in p.labels else ""
    return (f"{mark} {p.pid:>7}  {(p.user or NA)[:10]:<10} {duration(p.age_s):>7}  {mem:>8}  {gpus:<7} "
            f"{','.join(p.labels) + owner:<24} {cmd}")


def render_procs(procs: list[ProcInfo]) -> list[str]:
    if not procs:
        return ["Processes: none on the GPUs, no leftovers, nothing on the port"]
    n_block = sum(p.blocker for p in procs)
    return [f"Processes ({n_block} blocking, marked !)", PROC_HEADER] + [proc_row(p) for p in procs]


def render_port(port: int | None, free: bool | None, holders: Iterable[int], time_wait: int) -> str | None:
    if not port:
        return None
    if free:
        return f"Port {port}: free"
    holders = sorted(holders)
    if holders:
        return f"Port {port}: in use by PID {', '.join(map(str, holders))}"
    return f"Port {port}: not bindable" + (f" ({time_wait} in TIME_WAIT)" if time_wait else "")


def render_report(snap: GpuSnapshot, host: dict, procs: list[ProcInfo], port: int | None, free: bool | None,
           holders: Iterable[int] = (), time_wait: int = 0) -> str:
    lines = render_gpus(snap) + [render_host(host)]
    port_line = render_port(port, free, holders, time_wait)
    if port_line:
        lines.append(port_line)
    lines += [""] + render_procs(procs)
    return "\n".join(lines)


def _check_port(port: int | None) -> int | None:
    if port is None or port == 0:
        return None
    if not 1 <= port <= 65535:
        raise InputError(f"--port {port}: not a TCP port (1-65535)")
    return port


# -- kill ---------------------------------------------------------------------------------

def _confirm(p: ProcInfo, grace_s: float) -> bool:
    """Ask on the terminal (stderr, so ``--json`` output stays one object)."""
    sys.stderr.write(f"Kill {p.describe()}?\n  SIGTERM now, SIGKILL after {grace_s:g} s if it is still alive. [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def _kill_listed(backend: GpuBackend, listing: GpuSnapshot, procs: list[ProcInfo], pids: list[int], *,
                 yes: bool, grace_s: float, allow_other_users: bool, as_json: bool) -> tuple[list[dict], bool]:
    """Kill the requested PIDs that the listing shows, each after confirmation."""
    by_pid = {p.pid: p for p in procs}
    if not yes and not sys.stdin.isatty():
        raise InputError("--kill needs a confirmation: run it in a terminal or add --yes")
    outcomes: list[dict] = []
    all_ok = True
    for pid in pids:
        p = by_pid.get(pid)
        if p is None or not p.visible or p.start_time is None:
            res = KillResult(pid, False, "refused",
                             f"PID {pid} is not a GPU process, leftover or port holder listed here", 0.0)
        elif RUN_TREE in p.labels:
            whose, how = (f"the live run {p.owner_run}", f"moeconsole kill {p.owner_run}") if p.owner_run \
                else ("a live run", "moeconsole kill RUN")
            res = KillResult(pid, False, "refused", f"PID {pid} belongs to {whose}: stop it with `{how}`", 0.0)
        elif not yes and not _confirm(p, grace_s):
            res = KillResult(pid, False, "refused", "not confirmed", 0.0)
        else:
            res = kill_checked(pid, p.start_time, grace_s=grace_s, allow_other_users=allow_other_users)
        outcome = res.to_dict()
        if res.ok and p is not None and p.gpus:
            released, waited = wait_gpu_released(backend, {pid}, devices=list(p.gpus),
                                                 tolerance_mib=release_targets(listing, pid), poll_s=0.2)
            outcome["gpu_released"], outcome["gpu_release_s"] = released, waited
            res_line = (f"GPU memory released after {waited:.1f} s" if released
                        else f"GPU memory not released {waited:.0f} s after the kill")
        else:
            res_line = ""
        all_ok = all_ok and res.ok and outcome.get("gpu_released", True)
        outcomes.append(outcome)
        if not as_json:
            print(f"{res.action}: {res.reason}" + (f"; {res_line}" if res_line else ""))
    return outcomes, all_ok


def _share_dir(given: str | None):
    """The runs directory, where a live runner on this host shares its CPU reading: one the user
    named must be valid (one InputError line); a bad default only means no shared reading."""
    if given is not None:
        return runs_base(given)
    try:
        return runs_base(None)
    except InputError:
        return None


def run(args) -> int:
    port = _check_port(getattr(args, "port", None))
    kill_pids = list(getattr(args, "kill", None) or [])
    prime_cpu()  # the CPU figure's window runs while NVML and the process scan work
    base = _share_dir(getattr(args, "runs_dir", None))
    backend = get_backend()
    try:
        snap = backend.snapshot()
        procs = find_blockers(snap, port=port, runs_dir=base)
        free = port_free(port) if port else None
        holders, time_wait = port_users(port) if port and not free else (set(), 0)
        host = host_snapshot(base)  # last: the scans above fill the first CPU figure's window (no sleep after them)
        kills: list[dict] = []
        ok = True
        if kill_pids:
            if not args.json:
                print(render_report(snap, host, procs, port, free, holders, time_wait))
                print()
            kills, ok = _kill_listed(backend, snap, procs, kill_pids, yes=bool(getattr(args, "yes", False)),
                                     grace_s=float(getattr(args, "grace", None) or 10.0),
                                     allow_other_users=bool(getattr(args, "allow_other_users", False)),
                                     as_json=args.json)
        if args.json:
            record = {"v": jsonio.SCHEMA_VERSION, "host": host, "gpu": snap.to_dict(),
                      "blockers": [p.to_dict() for p in procs],
                      "port": None if not port else {"port": port, "free": free}}
            if kill_pids:
                record["kills"] = kills
            print(jsonio.dumps(record))
        elif not kill_pids:
            print(render_report(snap, host, procs, port, free, holders, time_wait))
        return 0 if ok else 1
    finally:
        backend.close()
