"""The second reading process of a big file, the part of it that needs no numpy (so a UI can
start it before its first frame): whether a second core is free, the size below which a second
process is not worth it, and ``Spawned`` (one of our modules started beside this process)."""
from __future__ import annotations

import os
from typing import Callable

SPLIT_MIN_BYTES = 8 << 20   # below this a second process costs more than it saves


def _cpu_times() -> tuple[int, int] | None:
    """(idle, total) jiffies of all cores from /proc/stat, or None where there is none."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return fields[3] + (fields[4] if len(fields) > 4 else 0), sum(fields[:8])


def second_core_free(sample_s: float = 0.1) -> bool:
    """Whether a second reading process can help: this process may run on 2 cores or more, and
    other processes leave more than one of them free now (busy time of all cores sampled over
    ``sample_s`` from /proc/stat, less this process's own: a UI painting its first frame is no
    reason to read alone; where there is no /proc/stat, the 1-minute load average). Else one
    process reads: two would only take turns on the one free core."""
    import time
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    if cores < 2:
        return False
    before, own0, t0 = _cpu_times(), sum(os.times()[:2]), time.monotonic()
    if before is not None:
        time.sleep(sample_s)
        after, own1, t1 = _cpu_times(), sum(os.times()[:2]), time.monotonic()
        if after is not None and after[1] > before[1] and t1 > t0:
            total = after[1] - before[1]
            busy = (total - (after[0] - before[0])) / total * (os.cpu_count() or cores)
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
        stop waiting, the process is ended and this returns False)."""
        import subprocess
        assert self.proc is not None
        while True:
            try:
                code = self.proc.wait(0.1 if waiting is not None else None)
                break
            except subprocess.TimeoutExpired:
                if waiting is not None and not waiting():
                    self.close()
                    return False
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
