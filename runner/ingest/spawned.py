"""The second reading process of a big file, the part of it that needs no numpy (so a UI can
start it before its first frame): whether a second core is free, the size below which a second
process is not worth it, and ``Spawned`` (one of our modules started beside this process)."""
from __future__ import annotations

import os
from typing import Callable

SPLIT_MIN_BYTES = 8 << 20   # below this a second process costs more than it saves


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
