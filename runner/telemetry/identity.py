"""Which process is which, without psutil: the start-time rule and this process's ancestors.

Both the blocker scan (``procs``, every poll of an attached console) and the checked kill
(``kill``) ask them. Neither needs psutil on Linux, so the scan runs without importing it
(1.7 MiB of code in the attached console: docs/benchmarks.md, ``ui``); ``kill`` still signals
through psutil, which re-checks the start time before each signal.
"""
from __future__ import annotations

import os

# psutil derives create_time from clock ticks since boot (10 ms); two reads of one process
# agree far closer than this, and a PID cannot be recycled within it.
START_TIME_TOLERANCE_S = 0.05


def start_time_matches(actual: float | None, expected: float | None) -> bool:
    return actual is not None and expected is not None and abs(actual - expected) <= START_TIME_TOLERANCE_S


def read_stat(pid: int | str) -> tuple[bytes, list[bytes]]:
    """``/proc/PID/stat`` as (the process's name, the fields after it): ``fields[0]`` the state
    letter, ``[1]`` the parent PID, ``[3]`` the session, ``[19]`` the start time in clock ticks
    since boot (proc(5), numbered from the state). The name is what stands between the first
    "(" and the last ")" (a name may hold both). OSError: gone or not readable; ValueError: not
    a stat line."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    end = stat.rindex(b")")
    return stat[stat.index(b"(") + 1:end], stat[end + 2:].split()


def _ppid(pid: int) -> int:
    """The parent PID from ``/proc/PID/stat``."""
    return int(read_stat(pid)[1][1])


def self_and_ancestors() -> set[int]:
    """This process and every ancestor: never labelled, never killed. On Linux the parent chain
    from ``/proc`` (what psutil's ``parents()`` walks: each parent's parent up to PID 1); where
    that cannot be read, psutil's."""
    pid = os.getpid()
    pids = {pid}
    try:
        while True:
            pid = _ppid(pid)
            if pid <= 0 or pid in pids:
                return pids
            pids.add(pid)
    except (OSError, ValueError, IndexError):
        if len(pids) > 1:
            return pids   # an ancestor exited while we looked: the rest is not ours to walk
    import psutil
    me = psutil.Process()
    pids = {me.pid}
    try:
        pids.update(p.pid for p in me.parents())
    except psutil.Error:
        pass
    return pids
