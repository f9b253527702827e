"""The second reading process of a big file, the part of it that needs no numpy (so a UI can
start it before its first frame): whether a second core is free, the size below which a second
process is not worth it, ``Spawned`` (one of our modules started beside this process), and the
history's started process (``start_part``: how much of the log it reads, ``split_fraction``), which
``attach LOG`` starts as its process starts, before any UI module is imported."""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

SPLIT_MIN_BYTES = 8 << 20   # below this a second process costs more than it saves
# The history is read in chunks this big: a smaller chunk than ``parse``'s keeps the memory of
# a UI that reads in the background low (each chunk's rows exist at once), at a few % of speed.
HISTORY_CHUNK = 2 << 20


def least_split_bytes(given: int | None) -> int:
    """The size from which a log may be read in two processes: ``given`` (tests), else
    ``SPLIT_MIN_BYTES``."""
    return SPLIT_MIN_BYTES if given is None else given


def split_worth(size: int, *, line_format: object, workers: int | None, split_min_bytes: int | None) -> bool:
    """Whether a second reading process may read a part of a log, before the cores are sampled
    (``second_core_free``, 0.1 s: only then): a log of at least ``least_split_bytes``, no declared
    line format (the started process reads without one), and not one worker asked for."""
    return line_format is None and (workers is None or workers >= 2) and size >= least_split_bytes(split_min_bytes)


def second_core_free(sample_s: float = 0.1) -> bool:
    """Whether a second reading process can help: this process may run on 2 cores or more (its
    CPU affinity, and its cgroup's CPU limit: a container limited to one CPU on a bigger host
    reads alone, ``cpustat.quota_cores``), and other processes leave more than one of them free
    now (busy time of all cores sampled over ``sample_s`` from /proc/stat, less this process's
    own: a UI painting its first frame is no reason to read alone; where there is no /proc/stat,
    the 1-minute load average). Else one process reads: two would only take turns on the one
    free core."""
    import time
    from moeconsole.runner.telemetry import cpustat   # (busy, total) CPU seconds of all cores
    cores: float
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = cpustat.quota_cores()
    if quota is not None:
        cores = min(cores, quota)
    if cores < 2:
        return False
    before, own0, t0 = cpustat.sample(), sum(os.times()[:2]), time.monotonic()
    if before is not None:
        time.sleep(sample_s)
        after, own1, t1 = cpustat.sample(), sum(os.times()[:2]), time.monotonic()
        if after is not None and after[1] > before[1] and t1 > t0:
            busy = (after[0] - before[0]) / (after[1] - before[1]) * (os.cpu_count() or cores)
            others = max(0.0, busy - (own1 - own0) / (t1 - t0))
            return cores - others >= 1.5
    try:
        return cores - os.getloadavg()[0] >= 1.5
    except OSError:
        return True


class Spawned:
    """``python -P -m module args...`` (one of our modules, ``moeconsole.runner.process.pyexec``)
    started to read a part of a file beside this process, from any process (a UI with threads
    may not fork). The part's result goes into files the caller names in ``args``; ``wait()``
    says whether it succeeded. ``close()`` ends it (by its pid) if it still runs."""

    def __init__(self, module: str, *args: str) -> None:
        import subprocess
        from moeconsole.runner.process.pyexec import module_argv, own_env
        self.proc: "subprocess.Popen[bytes] | None" = subprocess.Popen(
            module_argv(module, *args), env=own_env(os.environ), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)

    def wait(self, waiting: Callable[[], bool] | None = None) -> bool:
        """True if the process ended well; ``waiting()`` every 0.1 s meanwhile (False from it:
        stop waiting, the process is ended and this returns False). Its end is noticed at once
        (a pidfd: the history's last step waits on it; ``Popen.wait`` with a timeout polls, up
        to 50 ms late), else by polling."""
        import select
        import subprocess
        assert self.proc is not None
        try:
            pidfd: int | None = os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):   # no pidfd here (not Linux 5.3+), or already reaped
            pidfd = None
        try:
            while True:
                if pidfd is not None and waiting is not None:
                    if select.select([pidfd], [], [], 0.1)[0]:
                        code = self.proc.wait()
                        break
                    if not waiting():
                        self.close()
                        return False
                    continue
                try:
                    code = self.proc.wait(0.1 if waiting is not None else None)
                    break
                except subprocess.TimeoutExpired:
                    if waiting is not None and not waiting():
                        self.close()
                        return False
        finally:
            if pidfd is not None:
                os.close(pidfd)
        self.proc = None
        return code == 0

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
            self.proc.wait()
            self.proc = None


# The started process reads and folds the first part, then feeds its book this process's chart
# inputs of the second part as they come: it takes the smaller part, less what starting Python
# costs it (``split_fraction``). With the book fed numpy columns, this left the two processes'
# CPU within a few % of each other on 200k- and 1M-step logs (82 and 423 MB; a fixed 0.37 left
# this process a fifth more on the 1M-step log, 0.45 the started one 40% more on the 200k one).
HISTORY_SPLIT = 0.47
SPAWN_BYTES = 8 << 20      # about what one process reads in the CPU time a started one takes to start
MIN_SPLIT = 0.25


# A process started before a UI's first frame (``start_part``) reads while the UI starts: the
# reading thread begins only after that frame and shares its process with the UI (its first
# frame, its polls: about 1 s of CPU in ``attach`` of a 423 MB log, where the started process's
# own start overlaps the UI's). So the started process takes more of the file, by about what
# this process reads in that CPU: with 40 MiB the two processes' CPU came within a few % of each
# other (``attach`` of the 1M-step log, the second process forced, medians of 3 runs: 4.53 s here
# and 4.41 s there, against 5.41 s and 3.76 s with ``split_fraction``'s share; 50 MiB left the
# started process the longer one; docs/benchmarks-open.md). Since the started process copies the
# later part's rows in as they come (``HistoryFold.replay``), its part ends best a little before
# this one's, so it catches up the copy while this one still reads: 24 MiB (against 40, 32 and 16
# in alternating rounds on an idle machine, the history's end at 0.95-1.0x of 40's; 2026-12-04).
UI_LEAD_BYTES = 24 << 20
MAX_SPLIT = 0.8


def split_fraction(size: int, early: bool = False) -> float:
    """The part of a log of ``size`` bytes the started process reads (``read_history``);
    ``early``: started before a UI's first frame (``start_part``)."""
    if early:
        return min(MAX_SPLIT, HISTORY_SPLIT + (UI_LEAD_BYTES - SPAWN_BYTES) / max(1, size))
    return max(MIN_SPLIT, HISTORY_SPLIT - SPAWN_BYTES / max(1, size))


class EarlyPart:
    """``read_history``'s started process, started before the read (``start_part``: as soon as
    the log's size is known, before a UI's first frame, with no numpy in this process): it
    plans the split itself (``bulk.plan_split``: a larger part, ``split_fraction(early=True)``,
    else where ``read_history`` would cut) and writes the offset into DIR/plan (0: no split),
    then reads its part. ``read_history`` takes it over (``early=``) with the template the cut
    was found by (the line it was learnt from follows the offset in DIR/plan: this process
    learns it from that line, not from the file's head again); ``close()`` ends it if the read
    never comes."""

    def __init__(self, path: str, metrics: Path | None, evals: Path | None, chunk: int,
                 split_min_bytes: int | None) -> None:
        self.chunk = chunk
        if metrics is None or evals is None:   # no run directory yet: its part goes beside, moved in at the end
            self.work = Path(tempfile.mkdtemp(prefix="moeconsole-history-"))
            metrics, evals = self.work / "first-metrics.jsonl", self.work / "first-evals.jsonl"
        else:
            self.work = Path(tempfile.mkdtemp(prefix=".history-", dir=Path(metrics).parent))
        (self.work / "progress").write_bytes(bytes(8))
        (self.work / "spool").touch()   # the other process opens it before this one writes it
        size = os.path.getsize(path)   # its larger part; else (no template line there) the usual one
        plan = (f"plan:{split_fraction(size, early=True)},{split_fraction(size)}"
                f":{least_split_bytes(split_min_bytes)}")
        self.child: Any = Spawned("moeconsole.runner.ingest.history", "part", path, plan, str(chunk),
                                  str(metrics), str(evals), str(self.work), str(os.getpid()))

    def split(self, stop: threading.Event | None = None) -> tuple[int, bytes]:
        """The offset the started process cut the log at (0: it does not read a part, or failed)
        and the line of the log its template was learnt from."""
        import time

        def plan() -> tuple[int, bytes]:
            blob = (self.work / "plan").read_bytes()
            return int.from_bytes(blob[:8], "little"), blob[8:]
        while True:
            try:
                return plan()
            except FileNotFoundError:
                pass
            if self.child.proc is None or self.child.proc.poll() is not None or (stop is not None and stop.is_set()):
                try:   # it may have written the plan just before it ended
                    return plan()
                except FileNotFoundError:
                    return 0, b""
            time.sleep(0.005)

    def close(self) -> None:
        self.child.close()
        shutil.rmtree(self.work, ignore_errors=True)


def start_part(path: str, metrics: Path | None, evals: Path | None, *, chunk: int = HISTORY_CHUNK,
               split_min_bytes: int | None = None) -> EarlyPart:
    """The started process of a two-process ``read_history`` of ``path`` into a fold of
    ``metrics`` and ``evals``, started now. None for them: the fold's files are not known yet
    (``attach LOG`` as its process starts): the part is folded into files of its own, which
    ``read_history`` moves to the fold's (a rename: both in the temporary directory)."""
    return EarlyPart(path, metrics, evals, chunk, split_min_bytes)
