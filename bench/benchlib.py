"""Timing helpers shared by the benchmark scripts (run as ``python bench/bench_<area>.py``)."""
from __future__ import annotations

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
