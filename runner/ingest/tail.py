"""Following a growing log file.

``FileTailer`` reads new bytes by offset, synchronously (the runner calls it from its own
loop). It notices truncation (the size fell below the offset) and replacement (the path now
names another inode, or the file was deleted): it first drains what is left of the old file,
then starts from offset 0 of the new one and counts a reset.

``LiveTail`` runs a FileTailer in a thread, woken by file-system notifications (watchdog /
inotify) with a fallback poll, feeds a LogParser, and calls subscribers with each new run of
records (and of marks), in file order.
"""
from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any, Callable

from runner.ingest.parser import MARK, RECORD, LogParser

log = logging.getLogger(__name__)

Callback = Callable[[list[dict]], None]


class FileTailer:
    """New bytes of a file since the last call, by offset."""

    def __init__(self, path: str | os.PathLike, start_offset: int = 0, max_read: int = 4 << 20):
        self.path = Path(path)
        self.offset = max(0, int(start_offset))
        self.max_read = max(1, int(max_read))
        self.resets = 0
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None

    def _open(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return False
        st = os.fstat(fd)
        self._fd, self._ident = fd, (st.st_dev, st.st_ino)
        return True

    def _path_ident(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _read(self, size: int) -> bytes:
        if self._fd is None or size <= self.offset:
            return b""
        data = os.pread(self._fd, min(self.max_read, size - self.offset), self.offset)
        self.offset += len(data)
        return data

    def read_new(self) -> bytes:
        """Bytes appended since the last call (b"" if none). After a truncation or a
        replacement the next bytes come from offset 0 of the new file and ``resets`` grows."""
        if self._fd is None:
            if not self._open() or self._fd is None:
                return b""
            if os.fstat(self._fd).st_size < self.offset:
                self.offset = 0
                self.resets += 1
        assert self._fd is not None
        st = os.fstat(self._fd)
        ident = self._path_ident()
        if ident is not None and ident != self._ident:
            data = self._read(st.st_size)      # the rest of the old file comes first
            if data:
                return data
            self.close()
            self.offset = 0
            self.resets += 1
            if not self._open():
                return b""
            st = os.fstat(self._fd)
        elif st.st_size < self.offset:
            self.offset = 0
            self.resets += 1
        return self._read(st.st_size)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class LiveTail:
    """Watch a log file and deliver parsed records to subscribers with low latency."""

    def __init__(self, path: str | os.PathLike, on_records: Callback | None = None,
                 poll_interval: float = 0.25, start_offset: int = 0,
                 on_marks: Callback | None = None, max_line_bytes: int = 1 << 20):
        self.path = Path(path)
        self.poll_interval = poll_interval
        self.tailer = FileTailer(self.path, start_offset)
        self.parser = LogParser(max_line_bytes)
        self._record_subs: list[Callback] = [on_records] if on_records else []
        self._mark_subs: list[Callback] = [on_marks] if on_marks else []
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._observer: Any = None
        self._lock = threading.Lock()

    def subscribe(self, on_records: Callback | None = None, on_marks: Callback | None = None) -> None:
        with self._lock:
            if on_records:
                self._record_subs.append(on_records)
            if on_marks:
                self._mark_subs.append(on_marks)

    @property
    def offset(self) -> int:
        return self.tailer.offset

    def start(self) -> "LiveTail":
        self._start_observer()
        self._thread = threading.Thread(target=self._run, name=f"tail:{self.path.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._observer is not None:
            try:
                self._observer.stop()
                self._observer.join(timeout)
            except Exception:  # noqa: BLE001 - shutting down anyway
                pass
            self._observer = None
        self.tailer.close()

    def __enter__(self) -> "LiveTail":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ internals

    def _start_observer(self) -> None:
        """inotify (via watchdog) on the file's directory; without it the poll still works."""
        if self._observer is not None or not self.path.parent.is_dir():
            return
        try:
            from watchdog.events import FileSystemEventHandler
            from watchdog.observers import Observer
        except ImportError:
            return
        target = str(self.path)
        wake = self._wake

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event) -> None:  # noqa: ANN001 - watchdog's type
                if event.src_path == target or getattr(event, "dest_path", None) == target:
                    wake.set()

        try:
            obs = Observer()
            obs.schedule(_Handler(), str(self.path.parent), recursive=False)
            obs.daemon = True
            obs.start()
            self._observer = obs
        except Exception as exc:  # noqa: BLE001 - e.g. out of inotify watches: poll instead
            log.debug("no file notifications for %s: %s", self.path, exc)

    def _run(self) -> None:
        resets = self.tailer.resets
        while not self._stop.is_set():
            self._wake.wait(self.poll_interval)
            self._wake.clear()
            if self._observer is None:
                self._start_observer()
            events = []
            try:
                while True:
                    data = self.tailer.read_new()
                    if self.tailer.resets != resets:
                        # a new file: the old one's unfinished line is as complete as it gets
                        resets = self.tailer.resets
                        events.extend(self.parser.flush_events())
                    if not data:
                        break
                    events.extend(self.parser.feed_events(data))
                events.extend(self.parser.release_events())
            except OSError as exc:
                log.warning("tail %s: %s", self.path, exc)
            if events:
                self._deliver(events)

    def _deliver(self, events: list) -> None:
        """Runs of records and of marks, in file order."""
        with self._lock:
            rec_subs, mark_subs = list(self._record_subs), list(self._mark_subs)
        run_kind: str | None = None
        run: list = []
        for kind, obj in events + [(None, None)]:
            if kind != run_kind and run:
                for cb in rec_subs if run_kind == RECORD else mark_subs if run_kind == MARK else []:
                    try:
                        cb(run)
                    except Exception:  # noqa: BLE001 - a subscriber must not stop the tail
                        log.exception("subscriber failed")
                run = []
            run_kind = kind
            if obj is not None:
                run.append(obj)
