"""A growing log file as numbered lines, without loading it: a byte-offset index that is
extended with what was appended, rebuilt when the file is truncated or replaced, and a search
that scans the file in chunks. UI-free; the log view runs it in a worker thread.

The file is not held open between refreshes (the ranks view follows hundreds of them), so its
inode number alone does not tell a new file from the one indexed: ext4 gives a freed inode to
the next new file at once. A replacement is a new (device, inode, generation)
(``tail.file_version``), or, where the filesystem keeps no generation, or the same file was
truncated and written past the indexed end between two refreshes, its first bytes or the bytes
before the indexed end no longer the ones indexed (``tail.text_changed``, the runner's tail's rule).
Those checks open the file and read it: a look takes one stat first, and opens and checks only
when the stat changed (device, inode, size, mtime, ctime) or once a refresh tick
(``bounds.REFRESH_S``: the stat's blind spot, a new file with the freed inode, the old size and
mtime tick), as the snapshot's log tail does (the ranks view looks at hundreds of logs a refresh,
on a network filesystem each open a round trip).

Only whole lines are decoded (a trailing partial line waits for its newline, except at the end
of a finished file), progress-bar carriage returns keep the newest redraw, and very long lines
are cut at ``max_line`` characters.
"""
from __future__ import annotations

import os
import threading
import time
from array import array
from bisect import bisect_right
from pathlib import Path
from typing import Callable

from moeconsole.runner.core import bounds
from moeconsole.runner.core.units import clip
from moeconsole.runner.ingest.tail import SEEN_BYTES, bytes_before, file_version, text_changed
from moeconsole.runner.rundir.jsonio import NotRegularFile, open_read


CHUNK = 4 << 20


def _stat_of(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What a stat tells of a file's change: device, inode, size, mtime, ctime."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _other_file(was: tuple[int, int, int | None], now: tuple[int, int, int | None]) -> bool:
    """Whether (device, inode, generation) names another file: the generation is compared only
    when both looks got one (``FS_IOC_GETVERSION`` that failed once, on a network filesystem, is
    no new file)."""
    return was[:2] != now[:2] or (was[2] is not None and now[2] is not None and was[2] != now[2])


class LogFile:
    def __init__(self, path: Path | str, *, max_line: int = 2000,
                 redact: Callable[[str], str] | None = None) -> None:
        self.path = Path(path)
        self.max_line = max_line
        self.redact = redact           # secrets out of every line shown
        self._starts = array("q")      # byte offset of each complete line's start
        self._end = 0                  # offset just past the last indexed newline
        self._size = 0                 # file size at the last refresh (bytes past _end: a partial line)
        self._ident: tuple[int, int, int | None] | None = None   # device, inode, generation
        self._stat: tuple[int, int, int, int, int] | None = None   # device, inode, size, mtime, ctime
        self._checked = 0.0            # time.monotonic() of the last look that opened the file
        self._head = b""               # the file's first bytes as indexed (up to SEEN_BYTES)
        self._seen = b""               # the bytes right before _end as indexed (up to SEEN_BYTES)
        self._lock = threading.Lock()
        self.resets = 0                # how often truncation/replacement forced a re-index

    def refresh(self) -> bool:
        """Index what was appended since the last call. True if the line count changed."""
        with self._lock:
            try:
                st = os.stat(self.path)
            except OSError:
                st = None
            now = time.monotonic()
            if (st is not None and self._stat == _stat_of(st) and self._ident is not None
                    and now - self._checked < bounds.REFRESH_S):
                return False
            try:
                fd = open_read(self.path)
            except (OSError, NotRegularFile):
                changed = len(self._starts) > 0
                self._reset()
                return changed
            self._checked = now
            try:
                return self._refresh(fd)
            finally:
                os.close(fd)

    def _refresh(self, fd: int) -> bool:
        st = os.fstat(fd)
        ident = (st.st_dev, st.st_ino, file_version(fd))
        if self._ident is not None and (_other_file(self._ident, ident) or st.st_size < self._end or self._moved(fd)):
            self._reset()
            self.resets += 1
        self._ident = ident
        self._stat = _stat_of(st)
        before = len(self)
        self._size = st.st_size
        if st.st_size == self._end:
            return len(self) != before
        import numpy as np  # only once the full-log view opens: the attached screen stays numpy-free
        pos = self._end
        while True:
            chunk = os.pread(fd, CHUNK, pos)
            if not chunk:
                break
            nl = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == 10)
            if nl.size:
                # each newline ends a line; the line started at the previous end
                ends = nl.astype(np.int64) + pos + 1
                self._starts.append(self._end)
                self._starts.extend(ends[:-1].tolist())
                self._end = int(ends[-1])
            pos += len(chunk)
        self._size = max(self._size, pos)
        self._head = os.pread(fd, min(SEEN_BYTES, self._end), 0)
        self._seen = os.pread(fd, min(SEEN_BYTES, self._end), self._end - min(SEEN_BYTES, self._end))
        return len(self) != before

    def _moved(self, fd: int) -> bool:
        """The file indexed is not the one there now, or was written again before the indexed end:
        its first bytes, or those right before the end, are not the ones indexed."""
        return any(seen and text_changed(seen, bytes_before(fd, end, len(seen)))
                   for end, seen in ((len(self._head), self._head), (self._end, self._seen)))

    def _reset(self) -> None:
        self._starts = array("q")
        self._end = 0
        self._size = 0
        self._ident = None
        self._stat = None
        self._head = self._seen = b""

    def __len__(self) -> int:
        """Complete lines, plus one for a trailing line still without its newline."""
        return len(self._starts) + (1 if self._size > self._end else 0)

    def _clean(self, raw: bytes) -> str:
        text = raw.rstrip(b"\n").decode("utf-8", "replace").rstrip("\r")
        if "\r" in text:
            text = text.rsplit("\r", 1)[-1]
        if self.redact is not None:
            text = self.redact(text)
        if len(text) > self.max_line:
            text = clip(text, self.max_line + 1)
        return text.expandtabs(4)

    def lines(self, start: int, count: int) -> list[str]:
        """Lines [start, start+count) of the indexed part."""
        with self._lock:
            n = len(self._starts)
            start = max(0, start)
            stop = min(n, start + max(0, count))
            partial = self._size > self._end and start + count > n
            first = self._starts[start] if start < n else self._end
            last = self._starts[stop] if stop < n else (self._size if partial else self._end)
            last = min(last, first + (1 << 26)) if start >= stop else last
            offsets = self._starts[start:stop].tolist() if start < stop else []
            if partial:
                offsets.append(self._end)
        if not offsets:
            return []
        try:
            with open(self.path, "rb") as f:
                f.seek(first)
                data = f.read(last - first)
        except OSError:
            return []
        out = []
        for i, off in enumerate(offsets):
            a = off - first
            b = (offsets[i + 1] - first) if i + 1 < len(offsets) else len(data)
            out.append(self._clean(data[a:b]))
        return out

    def line_of(self, offset: int) -> int:
        return max(0, bisect_right(self._starts, offset) - 1)

    def search(self, needle: str, start_line: int, *, backwards: bool = False) -> int | None:
        """Index of the first line at/after (or before, backwards) ``start_line`` containing
        ``needle`` (case-insensitive), wrapping around once; None if nowhere."""
        pattern = needle.lower().encode()
        if not pattern or not len(self):
            return None
        n = len(self)
        start_line = min(max(0, start_line), n - 1)
        with self._lock:
            begin = self._starts[start_line]
            end = self._end
        ranges = [(begin, end), (0, begin)] if not backwards else [(0, begin), (begin, end)]
        for lo, hi in ranges:
            hit = self._scan(pattern, lo, hi, backwards)
            if hit is not None:
                return self.line_of(hit)
        return None

    def count(self, needle: str) -> int | None:
        """Occurrences of ``needle`` (case-insensitive) in the indexed part of the file; None if
        it cannot be read."""
        pattern = needle.lower().encode()
        if not pattern:
            return 0
        with self._lock:
            end = self._end
        overlap = len(pattern) - 1
        total, pos, tail = 0, 0, b""
        try:
            with open(self.path, "rb") as f:
                while pos < end:
                    chunk = f.read(min(CHUNK, end - pos)).lower()
                    if not chunk:
                        break
                    data = tail + chunk
                    total += data.count(pattern)
                    # a match across two chunks starts in the kept tail (too short to hold a whole
                    # match by itself, so nothing is counted twice)
                    tail = data[-overlap:] if overlap else b""
                    pos += len(chunk)
        except OSError:
            return None
        return total

    def _scan(self, pattern: bytes, lo: int, hi: int, backwards: bool) -> int | None:
        overlap = len(pattern) - 1
        try:
            f = open(self.path, "rb")
        except OSError:
            return None
        with f:
            if not backwards:
                pos = lo
                while pos < hi:
                    f.seek(pos)
                    chunk = f.read(min(CHUNK, hi - pos)).lower()
                    i = chunk.find(pattern)
                    if i >= 0:
                        return pos + i
                    if len(chunk) < CHUNK:
                        return None
                    pos += len(chunk) - overlap
                return None
            pos = hi
            while pos > lo:
                a = max(lo, pos - CHUNK)
                f.seek(a)
                chunk = f.read(pos - a).lower()
                i = chunk.rfind(pattern)
                if i >= 0:
                    return a + i
                if a == lo:
                    return None
                pos = a + overlap
            return None
