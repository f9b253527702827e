"""Benchmark: one full telemetry snapshot (8 GPUs + host + process scan) and the CPU share
of polling it at 1 Hz. Prints a Markdown section.

    .venv/bin/python bench/bench_telemetry.py [--iterations N] [--poll-seconds S]

There is no GPU here: NVML is the fake library from tests/fakes (built with gcc), loaded
in-process through the backend's ``lib_path``. So the GPU figures measure our wrapper,
pynvml's ctypes calls and a trivial C function behind each; a real driver's calls cost more
(not measured here). Baselines, measured in the same run: the same NVML queries made with
bare pynvml (wrapper overhead), and a bare psutil pass over all processes (scan overhead).
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import psutil  # noqa: E402

from moeconsole.runner.telemetry.gpu import get_backend  # noqa: E402
from moeconsole.runner.telemetry.host import host_snapshot  # noqa: E402
from moeconsole.runner.telemetry.procs import find_blockers  # noqa: E402
from tests.fakes.nvml import SCENARIO_ENV, FakeProc, build_fake_nvml, write_scenario  # noqa: E402
from benchlib import p99, timings

N_GPUS = 8
RANKS_PER_GPU = 2
PORT = 29500






def ms(x: float) -> str:
    return f"{x * 1000:.2f}"


def raw_pynvml_snapshot() -> None:
    """The same queries as the backend, with bare pynvml and no degradation handling."""
    import pynvml as nv
    for i in range(nv.nvmlDeviceGetCount()):
        h = nv.nvmlDeviceGetHandleByIndex(i)
        nv.nvmlDeviceGetName(h)
        nv.nvmlDeviceGetUUID(h)
        nv.nvmlDeviceGetUtilizationRates(h)
        nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2)
        nv.nvmlDeviceGetTemperatureV(h, nv.NVML_TEMPERATURE_GPU)
        nv.nvmlDeviceGetPowerUsage(h)
        nv.nvmlDeviceGetEnforcedPowerLimit(h)
        nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM)
        nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM)
        nv.nvmlDeviceGetComputeRunningProcesses_v3(h)


def bare_process_pass() -> None:
    for p in psutil.process_iter(["pid", "ppid", "uids", "status", "create_time"]):
        p.info  # noqa: B018 - the pass itself is what we time


def cpu_share(poll: Callable[[], object], seconds: float) -> tuple[float, float]:
    """(CPU seconds per wall second in percent of one core, mean poll time) while polling at 1 Hz."""
    n = max(1, int(seconds))
    cpu0, wall0 = time.process_time(), time.monotonic()
    spent = []
    for k in range(n):
        t0 = time.perf_counter()
        poll()
        spent.append(time.perf_counter() - t0)
        next_tick = wall0 + k + 1
        time.sleep(max(0.0, next_tick - time.monotonic()))
    cpu = time.process_time() - cpu0
    wall = time.monotonic() - wall0
    return 100.0 * cpu / wall, statistics.mean(spent)


def spawn_sleepers(n: int, env: dict[str, str]) -> list[subprocess.Popen]:
    return [subprocess.Popen(["sleep", "3600"], env=env, stdout=subprocess.DEVNULL) for _ in range(n)]


def end(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        p.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--poll-seconds", type=float, default=30.0)
    ap.add_argument("--extra-processes", type=int, default=300, help="sleepers to emulate a busy node")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-telemetry-"))
    libdir = build_fake_nvml(work)
    scenario = work / "scenario.txt"
    os.environ[SCENARIO_ENV] = str(scenario)
    run_id = "bench-run"
    rank_env = dict(os.environ, MOECONSOLE_RUN_ID=run_id, MOECONSOLE_RUN_DIR=str(work / "run"))
    ranks = spawn_sleepers(N_GPUS * RANKS_PER_GPU, rank_env)
    extra: list[subprocess.Popen] = []
    try:
        write_scenario(scenario, N_GPUS, [FakeProc(i % N_GPUS, r.pid, 60000) for i, r in enumerate(ranks)])
        backend = get_backend(lib_path=libdir)
        assert backend.name == "nvml", backend.snapshot().reason
        tree = {r.pid for r in ranks}
        n = args.iterations

        def full() -> None:
            snap = backend.snapshot()
            host_snapshot()
            find_blockers(snap, run_id=run_id, port=PORT, run_tree=tree)

        t_raw = timings(raw_pynvml_snapshot, n)
        t_gpu = timings(backend.snapshot, n)
        snap = backend.snapshot()
        t_bare = timings(bare_process_pass, n)
        t_scan = timings(lambda: find_blockers(snap, run_id=run_id, run_tree=tree), n)
        t_scan_port = timings(lambda: find_blockers(snap, run_id=run_id, port=PORT, run_tree=tree), n)
        t_host = timings(host_snapshot, n)
        t_full = timings(full, n)
        n_procs_small = len(psutil.pids())
        extra = spawn_sleepers(args.extra_processes, dict(os.environ))
        n_procs_big = len(psutil.pids())
        t_full_big = timings(full, n)
        share_big, mean_big = cpu_share(full, args.poll_seconds)
        end(extra)
        extra = []
        share_small, mean_small = cpu_share(full, args.poll_seconds)
        backend.close()
    finally:
        end(extra)
        end(ranks)

    rows = [
        ("bare pynvml, same 8-GPU queries (baseline)", t_raw),
        ("GPU snapshot, 8 GPUs (wrapper)", t_gpu),
        (f"bare psutil pass, {n_procs_small} processes (baseline)", t_bare),
        ("blocker scan, no port", t_scan),
        ("blocker scan + port 29500 holders", t_scan_port),
        ("host snapshot (CPU, RAM, load)", t_host),
        (f"full snapshot, {n_procs_small} processes", t_full),
        (f"full snapshot, {n_procs_big} processes", t_full_big),
    ]
    med = {name: statistics.median(t) for name, t in rows}
    print("## Telemetry\n")
    print(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
          f"{platform.python_version()}, psutil {psutil.__version__}. NVML is the fake library (no GPU here); "
          f"{N_GPUS} GPUs, {len(ranks)} GPU processes. {n} iterations each.\n")
    print("| what | median ms | p99 ms |")
    print("|---|---:|---:|")
    for name, t in rows:
        print(f"| {name} | {ms(statistics.median(t))} | {ms(p99(t))} |")
    print()
    print(f"- wrapper / bare pynvml: {med[rows[1][0]] / med[rows[0][0]]:.2f}x")
    print(f"- blocker scan / bare psutil pass: {med[rows[3][0]] / med[rows[2][0]]:.2f}x")
    print(f"- polling the full snapshot at 1 Hz for {args.poll_seconds:g} s: {share_small:.2f}% of one core "
          f"({n_procs_small} processes, {ms(mean_small)} ms per poll); {share_big:.2f}% with "
          f"{n_procs_big} processes ({ms(mean_big)} ms per poll)")


if __name__ == "__main__":
    main()
