"""Host telemetry (CPU, RAM, load) through psutil, degrading field by field like NVML."""
from __future__ import annotations

import os
import socket
import threading
import time

import psutil

from moeconsole.runner.telemetry import cpustat

GIB = 1024.0 ** 3
_FIRST_SAMPLE_S = 0.1

_lock = threading.Lock()
_last_cpu: tuple[float, float] | None = None  # (busy, total) seconds at the previous call
_last_at = 0.0                                  # time.monotonic() of that sample
_figured = False                                # a figure was given (only the first one waits)


def _busy_total_now() -> tuple[float, float]:
    """Busy and total CPU seconds now: ``/proc/stat`` read directly (``cpustat``), else
    ``psutil.cpu_times()`` with the same arithmetic."""
    return cpustat.sample() or cpustat.busy_total(tuple(psutil.cpu_times()))


def cpu_busy_pct(prev: tuple[float, float], cur: tuple[float, float]) -> float | None:
    """CPU use between two (busy, total) samples, in percent of all cores."""
    d_total = cur[1] - prev[1]
    if d_total <= 0:
        return None
    return max(0.0, min(100.0, 100.0 * (cur[0] - prev[0]) / d_total))


def prime_cpu() -> None:
    """Take the first CPU sample now, or adopt the one ``cli`` took as the process started
    (``cpustat.prime``): the 0.1 s the first figure needs passes while the command's other work
    runs instead of in a sleep."""
    global _last_cpu, _last_at
    with _lock:
        if _last_cpu is None:
            cpustat.prime()
            if cpustat.first is not None:
                _last_cpu, _last_at = cpustat.first, cpustat.first_at
            else:
                _last_cpu, _last_at = _busy_total_now(), time.monotonic()


def _cpu_pct() -> float | None:
    """CPU use since the previous call; the first figure in a process covers at least 0.1 s
    (from ``prime_cpu``, else sampled here), so a one-shot command still shows a real figure.
    Kept apart from ``psutil.cpu_percent``'s global state so other callers in the process do not
    shorten our interval."""
    global _last_cpu, _last_at, _figured
    prime_cpu()
    with _lock:
        prev, since = _last_cpu, time.monotonic() - _last_at
        if not _figured and since < _FIRST_SAMPLE_S:
            time.sleep(_FIRST_SAMPLE_S - since)
        cur = _busy_total_now()
        _last_cpu, _last_at, _figured = cur, time.monotonic(), True
    return cpu_busy_pct(prev, cur) if prev is not None else None


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
    ram = ram_now()
    snap["ram_used_gib"], snap["ram_total_gib"] = ram["ram_used_gib"], ram["ram_total_gib"]
    try:
        snap["load1"], snap["load5"], snap["load15"] = os.getloadavg()
    except OSError:
        pass
    return snap


# ---- disk I/O of one directory's block device -------------------------------------------------

SECTOR = 512   # /sys/block/*/stat counts 512-byte sectors whatever the device's own size


def parse_block_stat(text: str) -> tuple[int, int] | None:
    """(bytes read, bytes written) since boot from a ``/sys/dev/block/M:m/stat`` line (fields 3
    and 7 are sectors read and written: Documentation/block/stat.rst); None if unreadable."""
    fields = text.split()
    if len(fields) < 7 or not (fields[2].isdigit() and fields[6].isdigit()):
        return None
    return int(fields[2]) * SECTOR, int(fields[6]) * SECTOR


def io_rates(prev: tuple[float, int, int] | None, cur: tuple[float, int, int]) -> tuple[float | None, float | None]:
    """Read and write bytes per second between two (time, read, written) samples."""
    if prev is None or cur[0] <= prev[0] or cur[1] < prev[1] or cur[2] < prev[2]:
        return None, None
    dt = cur[0] - prev[0]
    return (cur[1] - prev[1]) / dt, (cur[2] - prev[2]) / dt


class DirIO:
    """Read/write throughput and free space of the filesystem holding a directory (the run's
    output: checkpoints are written there). The block device comes from the directory's
    ``st_dev``; a filesystem without one (tmpfs, NFS, overlay) has no I/O figures, only space."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._prev: tuple[float, int, int] | None = None
        self._device: tuple[str | None, str | None] | None = None   # (stat file, name) once found

    def _find_device(self) -> tuple[str | None, str | None]:
        if self._device is None:
            try:
                st = os.stat(self.path)
                major, minor = os.major(st.st_dev), os.minor(st.st_dev)
                node = f"/sys/dev/block/{major}:{minor}"
                name = os.path.basename(os.path.realpath(node)) if os.path.exists(node) else None
                self._device = (f"{node}/stat", name) if name else (None, None)
            except OSError:
                return None, None
        return self._device

    def sample(self, now: float | None = None) -> dict:
        """{"path", "device", "read_bps", "write_bps", "free_gib", "total_gib", "why"}: rates are
        None on the first call (two samples are needed) and without a block device (``why``)."""
        out: dict = {"path": self.path, "device": None, "read_bps": None, "write_bps": None,
                     "free_gib": None, "total_gib": None, "why": None}
        try:
            vfs = os.statvfs(self.path)
            out["free_gib"] = vfs.f_bavail * vfs.f_frsize / GIB
            out["total_gib"] = vfs.f_blocks * vfs.f_frsize / GIB
        except OSError as exc:
            out["why"] = f"cannot read {self.path}: {exc.strerror or exc}"
            return out
        stat_file, name = self._find_device()
        out["device"] = name
        if stat_file is None:
            out["why"] = "no block device (a network or memory filesystem)"
            return out
        try:
            with open(stat_file) as f:
                counts = parse_block_stat(f.read())
        except OSError:
            counts = None
        if counts is None:
            out["why"] = f"no I/O counters for {name}"
            return out
        cur = (time.monotonic() if now is None else now, counts[0], counts[1])
        out["read_bps"], out["write_bps"] = io_rates(self._prev, cur)
        self._prev = cur
        return out


class CpuMeter:
    """CPU use between two calls, in percent of all cores, without sleeping (the runner's loop
    samples it with the GPUs; the first call has no interval yet and says None)."""

    def __init__(self) -> None:
        self._prev: tuple[float, float] | None = None

    def sample(self) -> float | None:
        try:
            cur = _busy_total_now()
        except (OSError, psutil.Error):
            return None
        prev, self._prev = self._prev, cur
        return None if prev is None else cpu_busy_pct(prev, cur)


def ram_now() -> dict:
    """{"ram_used_gib", "ram_total_gib", "hostname"}: used is total minus available, as in
    ``host_snapshot``."""
    out: dict = {"ram_used_gib": None, "ram_total_gib": None, "hostname": socket.gethostname()}
    try:
        vm = psutil.virtual_memory()
        out["ram_used_gib"] = (vm.total - vm.available) / GIB
        out["ram_total_gib"] = vm.total / GIB
    except (OSError, psutil.Error):
        pass
    return out
