"""Will the next saves fit? Every save of a long run lands on one file system, and ms-swift never
prunes an earlier attempt's ``v<N>-<time>/`` (rotation sees only its own directory), so a disk
can fill hours before the run ends. After each verified save the keeper asks ``disk_alert``:
the free space against the size of that save. Pure: numbers in, an alert dict (or None) out.
"""
from __future__ import annotations

import os

from moeconsole.runner.core.units import human_bytes

RULE = "disk_filling"
WARN_SAVES = 3.0    # a warning when fewer than this many saves of the same size still fit
CRIT_SAVES = 1.2    # critical: the next save (with a margin) may not fit


def level_for(free: int, save_bytes: int) -> str | None:
    """"critical", "warning" or None for ``free`` bytes left and a save of ``save_bytes``."""
    if save_bytes <= 0:
        return None
    if free < CRIT_SAVES * save_bytes:
        return "critical"
    if free < WARN_SAVES * save_bytes:
        return "warning"
    return None


def disk_alert(free: int, save_bytes: int, where: str, step: int | None, name: str) -> dict | None:
    level = level_for(free, save_bytes)
    if level is None:
        return None
    fits = int(free // save_bytes)
    return {"level": level, "rule": RULE, "step": step,
            "message": (f"{where} has {human_bytes(free)} free and {name} took {human_bytes(save_bytes)}: "
                        + ("the next save may not fit" if level == "critical" else f"room for {fits} more such save(s)")
                        + "; free space (old attempts' v<N>-<time>/ once synced, a lower save_total_limit)"),
            "values": {"free_bytes": free, "save_bytes": save_bytes, "saves_that_fit": fits, "path": where}}


# ---- waiting for room after a disk_full crash --------------------------------------------------
MIB = 1 << 20
ROOM_WAIT_PREFIX = "room on "   # how the waiting line starts (``room_wait_line``; ``is_room_wait`` reads it)


def room_needed(largest_save: int, *, margin: float, min_free_mib: float) -> int:
    """Free bytes the filesystem of the run's output needs before a run that crashed with
    ``disk_full`` is restarted: ``margin`` times the largest checkpoint seen (the next save must
    fit), and never less than ``min_free_mib`` (before any save was seen, or saves are tiny)."""
    return max(int(margin * max(largest_save, 0)), int(min_free_mib * MIB))


def room_wait_line(where: str, free: int, need: int, largest_save: int, margin: float) -> str:
    """The cooldown's waiting line (status line, ``--json``, the alert): the path and the numbers."""
    basis = (f"{margin:g} x the largest checkpoint, {human_bytes(largest_save)}" if margin * largest_save >= need
             else "cooldown.disk_free_min_mib")
    return f"{ROOM_WAIT_PREFIX}{where}: {human_bytes(free)} free, need {human_bytes(need)} ({basis})"


def files_needed(largest_save_files: int, *, margin: float, min_files: int) -> int:
    """Free inodes (files) the output's filesystem needs before a run that crashed with
    ``disk_full`` is restarted: ``margin`` times the files and directories of the largest save,
    and never fewer than ``min_files`` (before any save was verified: the same floor as the bytes'
    ``min_free_mib``; one file freed must not end the wait and restart the run into the same
    ENOSPC). A filesystem out of inodes refuses every new file with the ENOSPC a full one gives,
    however many bytes it has free (a scratch filesystem shared with a job that makes millions of
    small files, a tmpfs' ``nr_inodes``)."""
    return max(min_files, int(margin * max(largest_save_files, 0) + 0.999999))


def free_files(vfs: os.statvfs_result) -> int | None:
    """Free inodes (files) a filesystem has for us (``f_favail``), or None where it counts none
    (``f_files`` 0: btrfs, some network filesystems): there files never run short."""
    return vfs.f_favail if vfs.f_files else None


def files_wait_line(where: str, free: int, need: int, largest_save_files: int, margin: float) -> str:
    """The cooldown's waiting line when the files are short (the bytes are not): as ``room_wait_line``."""
    basis = (f"{margin:g} x the files of the largest checkpoint, {largest_save_files}"
             if margin * largest_save_files >= need else "at least the files a run makes")
    return f"{ROOM_WAIT_PREFIX}{where}: {free} files free, need {need} ({basis}; `df -i {where}`)"


def is_room_wait(line: object) -> bool:
    """Is this cooldown waiting line the wait for room after ``disk_full`` (``room_wait_line``)?"""
    return isinstance(line, str) and line.startswith(ROOM_WAIT_PREFIX)
