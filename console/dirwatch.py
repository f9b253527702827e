"""Wake the run screen when its run directory changes (Linux inotify through ctypes).

The screen would otherwise notice a new log line, step or alert only at its next 1 s poll.
Watching the directory (train.log, metrics.jsonl, events.jsonl appended; state.json replaced)
lets the poller read as soon as something is written. ctypes is loaded already (the NVML
binding uses it), so this costs no import; where inotify is missing the screen simply polls.
"""
from __future__ import annotations

import ctypes
import os
import sys

IN_MODIFY = 0x00000002
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
WATCH_MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE


class DirWatch:
    """An inotify descriptor on one directory: readable when a file in it changed."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    def drain(self) -> None:
        """Forget the pending notifications (the caller reads the files themselves)."""
        try:
            while os.read(self.fd, 65536):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def watch(path: os.PathLike | str) -> DirWatch | None:
    """A watch on ``path``, or None where inotify is not available (then the screen polls)."""
    if not sys.platform.startswith("linux") or os.environ.get("MOECONSOLE_WATCH", "1") == "0":
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
        if fd < 0:
            return None
        if libc.inotify_add_watch(fd, os.fsencode(path), WATCH_MASK) < 0:
            os.close(fd)
            return None
    except (OSError, AttributeError):
        return None
    return DirWatch(fd)
