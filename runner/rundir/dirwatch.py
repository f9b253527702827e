"""The one file watcher: wake a reader when a file in a run directory changes.

A reader that polls notices a new log line, step or alert only at its next poll. The watcher
watches the directory instead (``train.log``, ``metrics.jsonl``, ``events.jsonl`` appended;
``state.json`` replaced) and hands the reader one descriptor that is readable once something
changed, so it waits with ``select`` beside its other wake-ups and its timer. On Linux that
descriptor is the kernel's own inotify instance (``inotify_init1``, through ctypes): no thread
and no module beyond ctypes, the queue lives in the kernel until the reader drains it. Elsewhere
watchdog's observer (the platform's own mechanism) writes a byte into a pipe from its threads.
Only the changes a reader cares about are asked of the kernel (``WAKE_MASK``, the same set as
``wake_events`` for watchdog): a file or directory opened or closed without a write (every
reader's poll, an agent's directory fsync) is never delivered, so a run directory that many
readers and writers touch costs the watcher nothing it would throw away. Where no watch can be
had (``MOECONSOLE_WATCH=0``, no inotify instance or watch left), ``watch`` returns None and the
reader simply polls on its timer.
"""
from __future__ import annotations

import os
import struct
import sys
from typing import Any, Callable

WATCH_ENV = "MOECONSOLE_WATCH"  # "0" turns the watcher off (the reader polls)

# inotify(7) event bits (linux/inotify.h) and inotify_init1 flags (O_NONBLOCK, O_CLOEXEC)
_IN_MODIFY, _IN_ATTRIB, _IN_CLOSE_WRITE = 0x002, 0x004, 0x008
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x040, 0x080, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF = 0x400, 0x800
_IN_NONBLOCK, _IN_CLOEXEC = os.O_NONBLOCK, getattr(os, "O_CLOEXEC", 0o2000000)
# What wakes a reader: a file or directory created, written, closed after a write, replaced,
# moved, deleted or with changed attributes, and the directory itself deleted or moved. Not a
# file opened (IN_OPEN), read (IN_ACCESS) nor closed without a write (IN_CLOSE_NOWRITE).
WAKE_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
             | _IN_DELETE_SELF | _IN_MOVE_SELF)
_EVENT_HEAD = struct.Struct("iIII")   # struct inotify_event: wd, mask, cookie, len (then len bytes of name)


class DirWatch:
    """A watch on one directory; ``fileno()`` is readable once a file in it changed.
    ``delivered``: how many change events reached the reader (inotify: counted as ``drain``
    reads them; watchdog: as its threads hand them over, each one a wake-up of theirs)."""

    def __init__(self, observer: Any, read_fd: int, write_fd: int = -1) -> None:
        self._observer = observer   # watchdog's observer, or None for an inotify descriptor
        self._r, self._w = read_fd, write_fd
        self.delivered = 0

    def fileno(self) -> int:
        return self._r

    def drain(self, wanted: Callable[[str], bool] | None = None) -> bool:
        """Forget the pending wake-ups (the caller reads the files themselves). True when one of
        them is ``wanted`` (a name it says True of; every change when None). inotify names each
        file; a change without a name (the directory itself, a queue overflow) and every change
        watchdog hands over (no names here) are always wanted."""
        inotify = self._observer is None
        woke = False
        try:
            while True:
                data = os.read(self._r, 65536)
                if not data:
                    return woke
                if inotify:
                    names = _event_names(data)   # one walk of the read: its count and its names
                    self.delivered += len(names)
                    woke = woke or wanted is None or any(not name or wanted(name) for name in names)
                else:
                    woke = True
        except OSError:  # BlockingIOError: nothing pending
            return woke

    def close(self) -> None:
        observer, self._observer = self._observer, None
        if observer is not None:
            observer.stop()
            observer.join(5.0)
        for fd in (self._r, self._w):
            if fd >= 0:
                os.close(fd)
        self._r = self._w = -1


def _event_names(data: bytes) -> list[str]:
    """The file name of each inotify event one read returned ("" for the directory itself)."""
    names = []
    at = 0
    while at + _EVENT_HEAD.size <= len(data):
        _, _, _, name_len = _EVENT_HEAD.unpack_from(data, at)
        at += _EVENT_HEAD.size
        names.append(os.fsdecode(data[at:at + name_len].rstrip(b"\0")))
        at += name_len
    return names


def watch(path: os.PathLike | str) -> DirWatch | None:
    """A watch on directory ``path``, or None where none can be had (then the caller polls)."""
    if os.environ.get(WATCH_ENV, "1") == "0":
        return None
    if sys.platform.startswith("linux"):
        return _inotify_watch(path)
    return _watchdog_watch(path)


def _inotify_watch(path: os.PathLike | str) -> DirWatch | None:
    """The kernel's inotify instance on ``path`` as the reader's descriptor, or None (no
    instance or watch left: ``fs.inotify.max_user_instances`` / ``max_user_watches``, or no
    such directory)."""
    import ctypes
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init1, add_watch = libc.inotify_init1, libc.inotify_add_watch
    except (OSError, AttributeError):
        return None
    add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
    fd = init1(_IN_NONBLOCK | _IN_CLOEXEC)
    if fd < 0:
        return None
    if add_watch(fd, os.fsencode(os.fspath(path)), WAKE_MASK) < 0:
        os.close(fd)
        return None
    return DirWatch(None, fd)


def _watchdog_watch(path: os.PathLike | str) -> DirWatch | None:
    """watchdog's observer (the platform's mechanism where inotify is not) writing into a pipe."""
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
    """``WAKE_MASK`` in watchdog's terms: a file or directory created, written, closed after a
    write, replaced, moved, deleted or with changed attributes. Not a file opened, nor one closed
    without a write (reads by us and others: the console's own polls, ``os.listdir`` of
    ``telemetry/``, an agent's fsync of that directory after each atomic write): the kernel is
    not asked for those (watchdog builds the inotify mask from this list)."""
    from watchdog import events as ev
    return [ev.FileCreatedEvent, ev.FileModifiedEvent, ev.FileAttribEvent, ev.FileClosedEvent, ev.FileMovedEvent,
            ev.FileDeletedEvent, ev.DirCreatedEvent, ev.DirModifiedEvent, ev.DirAttribEvent, ev.DirMovedEvent,
            ev.DirDeletedEvent]
