"""Timing helpers shared by the benchmark scripts (run as ``python bench/bench_<area>.py``)."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Callable


def timings(fn: Callable[[], object], n: int, warmup: int = 3) -> list[float]:
    """Seconds per call of ``fn`` over ``n`` calls, after ``warmup`` untimed ones."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def p99(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.99 * (len(s) - 1))))]


def end_processes(procs: list[subprocess.Popen]) -> None:
    """SIGTERM each process the bench started (by PID; a stress-ng, started in its own session,
    by its process group so its workers go too), SIGKILL what is left after 5 s; all reaped."""
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM) if p.args[0] == "stress-ng" else p.send_signal(signal.SIGTERM)
            except ProcessLookupError:
                pass
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(timeout=5)
