"""The host's CPU time, read from ``/proc/stat`` with the standard library only, so that a
command can take its first CPU sample the moment it starts (``cli`` calls :func:`prime` before
its own imports): a one-shot command's first CPU figure must span a minimum window
(``host.first_window_s``: 0.1 s on 2 cores), and that interval then runs while the interpreter
imports the rest instead of in a sleep at the end.

``host`` owns the figure (``prime_cpu``, ``host_snapshot``, ``CpuMeter``); this module owns the
sample and where the first one was taken. psutil reads the same line (``psutil/_pslinux.py``
``cpu_times``: the fields of the ``cpu`` line divided by ``SC_CLK_TCK``); ``host`` falls back to
it where ``/proc/stat`` cannot be read.
"""
from __future__ import annotations

import functools
import os
import time

PROC_STAT = "/proc/stat"

# (busy, total) CPU seconds of the first sample in this process, and its time.monotonic().
first: tuple[float, float] | None = None
first_at = 0.0


def busy_total(fields: "tuple[float, ...] | list[float]") -> tuple[float, float]:
    """Busy and total CPU seconds from the ``cpu`` line's fields in their kernel order (user, nice,
    system, idle, iowait, irq, softirq, steal, guest, guest_nice: proc(5)), which is also
    ``psutil.cpu_times()``'s order on Linux. Guest time is already inside user and nice time, so
    it is not counted twice; idle and iowait are idle."""
    f = list(fields) + [0.0] * (10 - len(fields))
    total = sum(f[:8])
    idle = f[3] + f[4]
    return total - idle, total


def ticks_per_s() -> int:
    """``USER_HZ``: the unit of ``/proc/stat``'s counters (100 on Linux)."""
    return os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def parse_cpu_line(text: str) -> tuple[float, ...] | None:
    """The aggregate ``cpu`` line of ``/proc/stat`` text, in seconds; None if it is not there."""
    tick = ticks_per_s()
    for line in text.splitlines():
        if line.startswith("cpu "):
            try:
                return tuple(int(v) / tick for v in line.split()[1:])
            except ValueError:
                return None
    return None


def sample() -> tuple[float, float] | None:
    """(busy, total) CPU seconds now, or None where ``/proc/stat`` cannot be read."""
    try:
        with open(PROC_STAT, "rb") as fh:
            fields = parse_cpu_line(fh.read(4096).decode("ascii", "replace"))
    except OSError:
        return None
    return None if fields is None else busy_total(fields)


def prime() -> None:
    """Take the process's first CPU sample, once; later calls keep the first."""
    global first, first_at
    if first is None:
        first, first_at = sample(), time.monotonic()


# The CPU bandwidth limit of this process's cgroup, as the kernel shows it
# (Documentation/admin-guide/cgroup-v2.rst "cpu.max": "$MAX $PERIOD", "max" for none;
# Documentation/scheduler/sched-bwc.rst, v1: cpu.cfs_quota_us, -1 for none, and
# cpu.cfs_period_us). Paths are module constants so a test can lay out a cgroup tree.
CGROUP_ROOT = "/sys/fs/cgroup"
PROC_SELF_CGROUP = "/proc/self/cgroup"


def _read_cgroup_file(path: str) -> str | None:
    """A cgroup or /proc file's first 4 KiB as text (one open, read and close: asked each second of
    a held training's silence, for every tracked process: ``frozen_cgroup``)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 4096).decode("ascii", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _quota_v2(directory: str) -> float | None:
    text = _read_cgroup_file(os.path.join(directory, "cpu.max"))
    parts = (text or "").split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    try:
        quota, period = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def _quota_v1(directory: str) -> float | None:
    quota, period = (_read_cgroup_file(os.path.join(directory, name)) for name in ("cpu.cfs_quota_us", "cpu.cfs_period_us"))
    try:
        q, p = int((quota or "").strip()), int((period or "").strip())
    except ValueError:
        return None
    return q / p if q > 0 and p > 0 else None


def _hierarchies(text: str, root: str, controller: str) -> list[tuple[bool, str, list[str]]]:
    """The cgroup hierarchies of a ``/proc/PID/cgroup`` text that hold ``controller``, and the
    unified one (v2: ``0::/path``): each as (v2, the cgroup's path, its directories that exist
    under the mount, deepest first up to the mount's root). A path the mount does not show (a
    container without its own cgroup namespace sees its cgroup at the mount's root) is looked for
    from its deepest existing part up."""
    out = []
    for line in text.splitlines():
        hier, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hier == "0" and controllers == "":
            v2, bases = True, [root, os.path.join(root, "unified")]
        elif controller in controllers.split(","):
            v2, bases = False, [os.path.join(root, controllers), os.path.join(root, controller)]
            if controller == "cpu":
                bases.append(os.path.join(root, "cpu,cpuacct"))
        else:
            continue
        base = next((b for b in bases if os.path.isdir(b)), None)
        if base is None:
            continue
        parts = [p for p in path.strip().split("/") if p]
        dirs = [d for d in (os.path.join(base, *parts[:depth]) for depth in range(len(parts), -1, -1))
                if os.path.isdir(d)]
        out.append((v2, path.strip(), dirs))
    return out


def quota_cores(root: str | None = None, own: str | None = None) -> float | None:
    """The CPUs this process may use by its cgroup's CPU bandwidth limit (quota / period: 1.0 for
    a container limited to one CPU, whatever the host's cores), the smallest over its cgroup and
    the cgroups above it; None when there is no limit or none can be read. v2 (the unified
    hierarchy, ``0::/path`` in ``/proc/self/cgroup``) reads ``cpu.max``, v1 (a hierarchy with the
    ``cpu`` controller) ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``."""
    root = CGROUP_ROOT if root is None else root
    text = _read_cgroup_file(PROC_SELF_CGROUP if own is None else own)
    if text is None:
        return None
    limits: list[float] = []
    for v2, _, dirs in _hierarchies(text, root, "cpu"):
        for directory in dirs:
            limit = (_quota_v2 if v2 else _quota_v1)(directory)
            if limit is not None:
                limits.append(limit)
    return min(limits) if limits else None


# A cgroup's freezer, as the kernel shows it: v2's ``cgroup.events`` holds "frozen 1" once every
# process of the cgroup (or of one above it) is frozen (Documentation/admin-guide/cgroup-v2.rst,
# "cgroup.freeze"); v1's ``freezer.state`` reads FREEZING or FROZEN, a child's the state it takes
# from its parents (Documentation/admin-guide/cgroup-v1/freezer-subsystem.rst). What `docker
# pause`, `systemctl freeze` and a batch system's suspend write. A frozen process is in state D
# (v1) or S (v2) in /proc, never T, and SIGCONT does not wake it: only thawing its cgroup does.
FROZEN_V1 = ("FREEZING", "FROZEN")


def frozen_cgroup(pid: int, root: str | None = None, own: str | None = None,
                  read: dict[str, bool] | None = None) -> str | None:
    """The cgroup (its path as ``/proc/PID/cgroup``, or the file ``own``, names it) whose freezer
    holds ``pid`` frozen now, else None (no such process, no freezer, or one that cannot be read).
    ``read``: the freezer files already read in this look (file -> frozen), filled here: the
    processes of one training share a cgroup, whose freezer is read once for all of them."""
    root = CGROUP_ROOT if root is None else root
    text = _read_cgroup_file(f"/proc/{pid}/cgroup" if own is None else own)
    for path, state in _freezer_files(text or "", root):
        held = read.get(state) if read is not None else None
        if held is None:
            if state.endswith("cgroup.events"):
                events = _read_cgroup_file(state) or ""
                held = any(line.split() == ["frozen", "1"] for line in events.splitlines())
            else:
                held = (_read_cgroup_file(state) or "").strip() in FROZEN_V1
            if read is not None:
                read[state] = held
        if held:
            return path or "/"
    return None


@functools.lru_cache(maxsize=64)
def _freezer_files(text: str, root: str) -> tuple[tuple[str, str], ...]:
    """(the cgroup's path, its freezer's state file) for each hierarchy of a ``/proc/PID/cgroup``
    text that has a freezer: v2's ``cgroup.events``, v1's ``freezer.state``, in the deepest
    directory the mount shows. Kept by the text: the same text names the same cgroups, and a
    cgroup is not removed while a process is in it (rmdir(2) on a cgroup: EBUSY), so the walk of
    the mount (``_hierarchies``: a stat per directory level) is made once per cgroup, not once a
    second per process while a held training is rechecked."""
    return tuple((path, os.path.join(dirs[0], "cgroup.events" if v2 else "freezer.state"))
                 for v2, path, dirs in _hierarchies(text, root, "freezer") if dirs)
