"""Host telemetry (CPU, RAM, load) from /proc, through psutil where /proc cannot tell, degrading
field by field like NVML.

The CPU figure is the share of all cores busy between two readings of ``/proc/stat``'s ``cpu``
line, and every figure says over what window (``CpuFigure``). A one-shot command (``--json RUN
--once``, ``gpus --json``) has no earlier reading of its own, so its first figure either waits
until its window is long enough to mean something (``first_window_s``: enough clock ticks over
all cores) or starts from the reading a live runner on this host shared (``CpuMark``: the
runner reads ``/proc/stat`` every few seconds while it supervises, and leaves its newest
reading in the runs directory). Either way the figure ends now, never earlier.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import msgspec

from moeconsole.runner.telemetry import cpustat
from moeconsole.runner.telemetry.identity import boot_id
from moeconsole.runner.rundir.rundir import hostname

GIB = 1024.0 ** 3
MIN_TICKS = 20         # clock ticks over all cores a first figure spans at least (5% steps)
MIN_WINDOW_S = 0.02    # and never less than this: the kernel accounts busy time at scheduler ticks
MARK_MAX_AGE_S = 5.0   # a runner's reading older than this is not used (it reads every 2 s)
MARK_MAX_AGE_ENV = "MOECONSOLE_CPU_MARK_MAX_S"   # that limit, for tests on a busy machine
MARK_VERSION = 1

_lock = threading.Lock()
_last_cpu: tuple[float, float] | None = None  # (busy, total) seconds at the previous call
_last_at = 0.0                                  # time.monotonic() of that sample
_figured = False                                # a figure was given (only the first one waits)


def first_window_s(cores: int | None = None, hz: int | None = None) -> float:
    """The shortest window a first CPU figure may span: ``MIN_TICKS`` clock ticks over all cores
    (``USER_HZ`` is 100: 0.1 s on 2 cores, 0.025 s on 8), never less than ``MIN_WINDOW_S``."""
    cores = cores or os.cpu_count() or 1
    hz = hz or cpustat.ticks_per_s()
    return max(MIN_WINDOW_S, MIN_TICKS / (cores * hz))


class CpuFigure(msgspec.Struct, frozen=True):
    """CPU use of all cores over the ``window_s`` seconds that end at the reading; ``source`` says
    where the window's first reading came from: ``"runner"`` (the reading a live runner on this
    host shared, ``CpuMark``) or ``"process"`` (this process's own earlier reading)."""
    pct: float
    window_s: float
    source: str


class CpuMark(msgspec.Struct, frozen=True):
    """A runner's newest reading of ``/proc/stat``, shared with one-shot commands on the same host
    (``<runs dir>/.host-cpu-<host>.json``, replaced at each reading). ``mono`` is
    ``time.monotonic()``: CLOCK_MONOTONIC, one clock for every process of one boot (``boot_id``)."""
    v: int
    host: str
    boot_id: str
    pid: int
    busy_s: float
    total_s: float
    mono: float
    wall: float




def cpu_mark_path(runs_dir: Path | str) -> Path:
    """``<runs dir>/.host-cpu-<host>.json``: one per host (a runs directory on a shared disk)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in hostname())[:64] or "host"
    return Path(runs_dir) / f".host-cpu-{safe}.json"


def write_cpu_mark(runs_dir: Path | str, reading: tuple[float, float], at: float) -> None:
    """Share a reading taken at ``time.monotonic()`` ``at`` (no fsync: after a crash it is stale
    anyway). OSError is the caller's to ignore."""
    from moeconsole.runner.rundir import jsonio
    boot = boot_id()
    if not boot:
        return   # without a boot id a later reader could not tell this boot's clock from another's
    mark = CpuMark(MARK_VERSION, hostname(), boot, os.getpid(), reading[0], reading[1], at,
                   time.time() - (time.monotonic() - at))
    # the runs directory is one the user named (it may be a link to a data disk): followed, as
    # ``atomic_write_bytes`` follows a checkpoint directory; the file itself never through a link
    jsonio.atomic_write_bytes(cpu_mark_path(runs_dir), msgspec.json.encode(mark), sync=False, follow_dir=True)


def read_cpu_mark(runs_dir: Path | str | None, now: float, cur_total: float) -> CpuMark | None:
    """The shared reading if it can start a figure that ends at ``now`` (``time.monotonic()``)
    with ``cur_total`` CPU seconds: this host, this boot, taken before now and at most
    ``MARK_MAX_AGE_S`` ago, and counters that did not run backwards. None otherwise."""
    if runs_dir is None:
        return None
    try:
        with open(cpu_mark_path(runs_dir), "rb") as f:
            mark = msgspec.json.decode(f.read(4096), type=CpuMark)
    except (OSError, msgspec.ValidationError, msgspec.DecodeError):
        return None
    try:
        max_age = float(os.environ.get(MARK_MAX_AGE_ENV) or MARK_MAX_AGE_S)
    except ValueError:
        max_age = MARK_MAX_AGE_S
    if (mark.v != MARK_VERSION or mark.host != hostname() or mark.boot_id != boot_id()
            or not 0.0 < now - mark.mono <= max_age or mark.total_s > cur_total or mark.busy_s < 0):
        return None
    return mark


def _busy_total_now() -> tuple[float, float]:
    """Busy and total CPU seconds now: ``/proc/stat`` read directly (``cpustat``), else
    ``psutil.cpu_times()`` with the same arithmetic (psutil imported only then: 1.7 MiB of the
    attached console). OSError: neither can tell."""
    got = cpustat.sample()
    if got is not None:
        return got
    import psutil
    try:
        return cpustat.busy_total(tuple(psutil.cpu_times()))
    except psutil.Error as e:
        raise OSError(str(e)) from e


def cpu_busy_pct(prev: tuple[float, float], cur: tuple[float, float]) -> float | None:
    """CPU use between two (busy, total) samples, in percent of all cores."""
    d_total = cur[1] - prev[1]
    if d_total <= 0:
        return None
    return max(0.0, min(100.0, 100.0 * (cur[0] - prev[0]) / d_total))


def prime_cpu() -> None:
    """Take the first CPU sample now, or adopt the one ``cli`` took as the process started
    (``cpustat.prime``): the window the first figure needs passes while the command's other
    work runs instead of in a sleep."""
    global _last_cpu, _last_at
    with _lock:
        if _last_cpu is None:
            cpustat.prime()
            if cpustat.first is not None:
                _last_cpu, _last_at = cpustat.first, cpustat.first_at
            else:
                _last_cpu, _last_at = _busy_total_now(), time.monotonic()


def cpu_figure(runs_dir: Path | str | None = None) -> CpuFigure | None:
    """CPU use since the previous call. The first figure in a process spans at least
    ``first_window_s`` (it waits for the rest when its start is younger), so a one-shot command
    shows a real figure. It starts from a live runner's shared reading in ``runs_dir``
    (``read_mark``: at most ``MARK_MAX_AGE_S`` old) when that one is old enough or older than
    this process's first reading (``prime_cpu``), else from the latter. The runner's reading is
    preferred: its window (up to a few seconds) is the host's load, where a window of this
    process's own start-up is mostly that start-up (on 2 cores a one-shot busy on one of them
    reads at least 50%). Kept apart from
    ``psutil.cpu_percent``'s global state so other callers in the process do not shorten our
    interval."""
    global _last_cpu, _last_at, _figured
    prime_cpu()
    with _lock:
        prev, prev_at, source = _last_cpu, _last_at, "process"
        if not _figured:
            need = first_window_s()
            if runs_dir is not None:
                now = time.monotonic()
                mark = read_cpu_mark(runs_dir, now, _busy_total_now()[1])
                if mark is not None and (now - mark.mono >= need or mark.mono < prev_at):
                    prev, prev_at, source = (mark.busy_s, mark.total_s), mark.mono, "runner"
            since = time.monotonic() - prev_at
            if since < need:
                time.sleep(need - since)
        cur = _busy_total_now()
        _last_cpu, _last_at, _figured = cur, time.monotonic(), True
    pct = cpu_busy_pct(prev, cur) if prev is not None else None
    return None if pct is None else CpuFigure(pct, max(0.0, _last_at - prev_at), source)


def _cpu_pct() -> float | None:
    """``cpu_figure``'s percentage alone."""
    fig = cpu_figure()
    return None if fig is None else fig.pct


def host_snapshot(runs_dir: Path | str | None = None) -> dict:
    """{"cpu_pct","cpu_window_s","cpu_source","cpu_count","ram_used_gib","ram_total_gib","load1",
    "load5","load15","hostname"} with ``None`` for what the system cannot tell. The CPU figure
    covers the last ``cpu_window_s`` seconds; ``cpu_source`` says where they started
    (``CpuFigure``; ``runs_dir``: where a live runner shares its reading). RAM "used" is total
    minus available, the figure that matters for the host OOM killer."""
    snap: dict = {"cpu_pct": None, "cpu_window_s": None, "cpu_source": None, "cpu_count": os.cpu_count(),
                  "ram_used_gib": None, "ram_total_gib": None, "load1": None, "load5": None, "load15": None,
                  "hostname": hostname()}
    try:
        fig = cpu_figure(runs_dir)
    except OSError:
        fig = None
    if fig is not None:
        snap["cpu_pct"], snap["cpu_window_s"], snap["cpu_source"] = fig.pct, round(fig.window_s, 3), fig.source
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
    samples it with the GPUs; the first call has no interval yet and says None). With
    ``share_in`` (the runs directory) each reading is also left there for one-shot commands on
    this host (``write_mark``); a failed write is never the caller's problem."""

    def __init__(self, share_in: Path | str | None = None) -> None:
        self._prev: tuple[float, float] | None = None
        self.share_in = share_in

    def sample(self) -> float | None:
        try:
            cur = _busy_total_now()
        except OSError:
            return None
        if self.share_in is not None:
            try:
                write_cpu_mark(self.share_in, cur, time.monotonic())
            except OSError:
                pass
        prev, self._prev = self._prev, cur
        return None if prev is None else cpu_busy_pct(prev, cur)


def ram_now() -> dict:
    """{"ram_used_gib", "ram_total_gib", "hostname"}: used is total minus available, as in
    ``host_snapshot``."""
    out: dict = {"ram_used_gib": None, "ram_total_gib": None, "hostname": hostname()}
    got = _meminfo_total_available()
    if got is None:
        import psutil
        try:
            vm = psutil.virtual_memory()
            got = vm.total, vm.available
        except (OSError, psutil.Error):
            return out
    total, available = got
    out["ram_used_gib"] = (total - available) / GIB
    out["ram_total_gib"] = total / GIB
    return out


def oom_kills() -> int | None:
    """The OOM kills this machine's kernel has counted since boot: ``oom_kill`` of ``/proc/vmstat``
    (Linux 4.13+; ``__oom_kill_process`` in mm/oom_kill.c counts every kill, the whole machine's and
    a memory cgroup's, ``count_vm_event(OOM_KILL)``; the file is not namespaced, so a container reads
    the host's count). None where the file or the line is not there."""
    try:
        with open("/proc/vmstat", "rb") as f:
            for line in f:
                if line.startswith(b"oom_kill "):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def overcommit_ceiling() -> int | None:
    """The largest single allocation this machine's overcommit policy lets a process have, in
    bytes, whatever its address-space limit (None: the policy refuses none, or it cannot be read).
    mm/util.c ``__vm_enough_memory`` (Linux 5.2+, commit 8c7829b04c52): ``vm.overcommit_memory`` 0
    (heuristic, the default) refuses a request of more pages than ``totalram_pages() +
    total_swap_pages`` (MemTotal + SwapTotal), and nothing smaller; 1 refuses nothing; 2 (strict)
    refuses once the committed total would pass ``vm_commit_limit()`` (CommitLimit), so a request
    over CommitLimit alone is always refused. The crash judge compares a refused allocation's size
    with it (``crash.classify``'s ``alloc_ceiling``)."""
    try:
        with open("/proc/sys/vm/overcommit_memory", "rb") as f:
            mode = int(f.read().split()[0])
        found: dict[bytes, int] = {}
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                key, _, rest = line.partition(b":")
                if key in (b"MemTotal", b"SwapTotal", b"CommitLimit"):
                    found[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    if mode == 0 and b"MemTotal" in found:
        return found[b"MemTotal"] + found.get(b"SwapTotal", 0)
    if mode == 2 and b"CommitLimit" in found:
        return found[b"CommitLimit"]
    return None


def _meminfo_total_available() -> tuple[int, int] | None:
    """(total, available) bytes from ``/proc/meminfo``'s MemTotal and MemAvailable, the two
    figures psutil's ``virtual_memory()`` takes from the same lines (``psutil/_pslinux.py``:
    kB times 1024). None where the file or MemAvailable (kernels before 3.14) is not there or
    the latter is 0 or above the total: psutil estimates it from other lines then."""
    found: dict[bytes, int] = {}
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                key, _, rest = line.partition(b":")
                if key in (b"MemTotal", b"MemAvailable"):
                    found[key] = int(rest.split()[0]) * 1024
                    if len(found) == 2:
                        total, available = found[b"MemTotal"], found[b"MemAvailable"]
                        # 0 (a kernel bug) or more than the total (a container): psutil estimates
                        return (total, available) if 0 < available <= total else None
    except (OSError, ValueError, IndexError):
        return None
    return None
