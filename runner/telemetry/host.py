"""Host telemetry (CPU, RAM, load) through psutil, degrading field by field like NVML."""
from __future__ import annotations

import os
import socket
import threading
import time

import psutil

GIB = 1024.0 ** 3
_FIRST_SAMPLE_S = 0.1

_lock = threading.Lock()
_last_cpu: tuple[float, float] | None = None  # (busy, total) seconds at the previous call


def _busy_total(t) -> tuple[float, float]:
    """Busy and total CPU seconds from a ``psutil.cpu_times()`` result (guest time is
    already inside user time on Linux, so it is not counted twice)."""
    total = sum(t) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)
    idle = t.idle + getattr(t, "iowait", 0.0)
    return total - idle, total


def cpu_busy_pct(prev: tuple[float, float], cur: tuple[float, float]) -> float | None:
    """CPU use between two (busy, total) samples, in percent of all cores."""
    d_total = cur[1] - prev[1]
    if d_total <= 0:
        return None
    return max(0.0, min(100.0, 100.0 * (cur[0] - prev[0]) / d_total))


def _cpu_pct() -> float | None:
    """CPU use since the previous call; the first call in a process samples 0.1 s, so a
    one-shot command still shows a real figure. Kept apart from ``psutil.cpu_percent``'s
    global state so other callers in the process do not shorten our interval."""
    global _last_cpu
    with _lock:
        prev = _last_cpu
        if prev is None:
            prev = _busy_total(psutil.cpu_times())
            time.sleep(_FIRST_SAMPLE_S)
        cur = _busy_total(psutil.cpu_times())
        _last_cpu = cur
    return cpu_busy_pct(prev, cur)


def host_snapshot() -> dict:
    """{"cpu_pct","cpu_count","ram_used_gib","ram_total_gib","load1","load5","load15","hostname"}
    with ``None`` for what the system cannot tell. RAM "used" is total minus available,
    the figure that matters for the host OOM killer."""
    snap: dict = {"cpu_pct": None, "cpu_count": os.cpu_count(), "ram_used_gib": None, "ram_total_gib": None,
                  "load1": None, "load5": None, "load15": None, "hostname": socket.gethostname()}
    try:
        snap["cpu_pct"] = _cpu_pct()
    except (OSError, psutil.Error):
        pass
    try:
        vm = psutil.virtual_memory()
        snap["ram_used_gib"] = (vm.total - vm.available) / GIB
        snap["ram_total_gib"] = vm.total / GIB
    except (OSError, psutil.Error):
        pass
    try:
        snap["load1"], snap["load5"], snap["load15"] = os.getloadavg()
    except OSError:
        pass
    return snap
