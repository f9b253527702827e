"""The one file watcher: wake a reader when a file in a run directory changes.

A reader that polls notices a new log line, step or alert only at its next poll. watchdog's
observer (inotify on Linux, the platform's own mechanism elsewhere) watches the directory instead
(``train.log``, ``metrics.jsonl``, ``events.jsonl`` appended; ``state.json`` replaced) and writes a
byte into a pipe, so a reader waits on one descriptor with ``select`` beside its other wake-ups and
its timer. Where no observer can be had (``MOECONSOLE_WATCH=0``, no inotify instance left), ``watch``
returns None and the reader simply polls on its timer.
"""
from __future__ import annotations

import os
from typing import Any

WATCH_ENV = "MOECONSOLE_WATCH"  # "0" turns the watcher off (the reader polls)


class DirWatch:
    """An observer on one directory; ``fileno()`` is readable once a file in it changed."""

    def __init__(self, observer: Any, read_fd: int, write_fd: int) -> None:
        self._observer = observer
        self._r, self._w = read_fd, write_fd

    def fileno(self) -> int:
        return self._r

    def drain(self) -> None:
        """Forget the pending wake-ups (the caller reads the files themselves)."""
        try:
            while os.read(self._r, 65536):
                pass
        except OSError:  # BlockingIOError: nothing pending
            pass

    def close(self) -> None:
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(5.0)
        for fd in (self._r, self._w):
            if fd >= 0:
                os.close(fd)
        self._r = self._w = -1


def watch(path: os.PathLike | str) -> DirWatch | None:
    """A watch on directory ``path``, or None where none can be had (then the caller polls)."""
    if os.environ.get(WATCH_ENV, "1") == "0":
        return None
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    os.set_blocking(write_fd, False)

    class _Wake(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.event_type in ("opened", "closed_no_write"):  # reads by us and others
                return
            try:
                os.write(write_fd, b"f")
            except OSError:  # the pipe is full (a wake-up is pending) or closed
                pass

    observer = Observer()
    try:
        observer.schedule(_Wake(), os.fspath(path), recursive=False)
        observer.daemon = True
        observer.start()
    except (OSError, RuntimeError):
        os.close(read_fd)
        os.close(write_fd)
        return None
    return DirWatch(observer, read_fd, write_fd)
