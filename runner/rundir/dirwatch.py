"""The one file watcher: wake a reader when a file in a run directory changes.

A reader that polls notices a new log line, step or alert only at its next poll. watchdog's
observer (inotify on Linux, the platform's own mechanism elsewhere) watches the directory instead
(``train.log``, ``metrics.jsonl``, ``events.jsonl`` appended; ``state.json`` replaced) and writes a
byte into a pipe, so a reader waits on one descriptor with ``select`` beside its other wake-ups and
its timer. Only the changes a reader cares about are asked of the kernel (``wake_events``): a
file or directory opened or closed without a write (every reader's poll, an agent's directory
fsync) is never delivered, so a run directory that many readers and writers touch costs the
watcher nothing it would throw away. Where no observer can be had (``MOECONSOLE_WATCH=0``, no
inotify instance left), ``watch`` returns None and the reader simply polls on its timer.
"""
from __future__ import annotations

import os
from typing import Any

WATCH_ENV = "MOECONSOLE_WATCH"  # "0" turns the watcher off (the reader polls)


class DirWatch:
    """An observer on one directory; ``fileno()`` is readable once a file in it changed.
    ``delivered``: how many events the observer handed over (each one cost its threads a
    wake-up)."""

    def __init__(self, observer: Any, read_fd: int, write_fd: int) -> None:
        self._observer = observer
        self._r, self._w = read_fd, write_fd
        self.delivered = 0

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
    dw: DirWatch | None = None

    class _Wake(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if dw is not None:
                dw.delivered += 1
            try:
                os.write(write_fd, b"f")
            except OSError:  # the pipe is full (a wake-up is pending) or closed
                pass

    observer = Observer()
    try:
        observer.schedule(_Wake(), os.fspath(path), recursive=False, event_filter=wake_events())
        observer.daemon = True
        observer.start()
    except (OSError, RuntimeError):
        os.close(read_fd)
        os.close(write_fd)
        return None
    dw = DirWatch(observer, read_fd, write_fd)
    return dw


def wake_events() -> list[type]:
    """What wakes a reader: a file or directory created, written, closed after a write,
    replaced, moved, deleted or with changed attributes. Not a file opened, nor one closed
    without a write (reads by us and others: the console's own polls, ``os.listdir`` of
    ``telemetry/``, an agent's fsync of that directory after each atomic write): the kernel is
    not asked for those (watchdog builds the inotify mask from this list)."""
    from watchdog import events as ev
    return [ev.FileCreatedEvent, ev.FileModifiedEvent, ev.FileAttribEvent, ev.FileClosedEvent, ev.FileMovedEvent,
            ev.FileDeletedEvent, ev.DirCreatedEvent, ev.DirModifiedEvent, ev.DirAttribEvent, ev.DirMovedEvent,
            ev.DirDeletedEvent]
