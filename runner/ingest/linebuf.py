"""The first stage of ingest, bytes -> lines: the unfinished last line of a stream.

Bytes arrive cut anywhere (a read of a growing file, a chunk of a past one). Every complete
line goes on to be read; the bytes after the last newline wait here for the rest of their
line. The wait is bounded: a partial line longer than ``max_line_bytes`` is trimmed to its
last carriage-return segment while it grows (a terminal shows only that one), and when even
that is over the cap the line is dropped until its newline (it is then read as an overlong
line, the segment after a later carriage return excepted).
"""
from __future__ import annotations


class PartialLine:
    """The bytes of a line whose newline has not arrived yet."""

    def __init__(self, max_line_bytes: int) -> None:
        self.max_line_bytes = max_line_bytes
        self._buf = bytearray()
        self._skipping = False         # the partial line is over the cap: drop until newline
        self._overlong_before = False  # a dropped overlong segment precedes the buffered text
        self._started = False          # the line's first bytes were taken (``take_redraws``)

    @property
    def waiting(self) -> bool:
        """Some bytes of an unfinished line are held (or being dropped)."""
        return bool(self._buf) or self._skipping

    def append(self, data: bytes) -> None:
        """More bytes of the line (no newline in them)."""
        if not data:
            return
        if self._skipping:
            # Still inside an overlong segment; a carriage return starts a new one.
            cut = data.rfind(b"\r")
            if cut < 0:
                return
            self._skipping = False
            self._overlong_before = True
            data = data[cut:]
        self._buf += data
        if len(self._buf) <= self.max_line_bytes:
            return
        # Keep only the last non-blank carriage-return segment: the rest was overwritten.
        cut = self._buf.rfind(b"\r", 0, len(self._buf.rstrip()))
        if cut > 0:
            del self._buf[:cut]
        if len(self._buf) > self.max_line_bytes + 1:
            self._buf.clear()
            self._skipping = True

    def take_redraws(self) -> tuple[bytes, bool] | None:
        """The carriage-return segments a later one overwrote, to read before the newline (a
        tqdm bar redraws itself behind ``\\r`` and writes its newline only when it closes):
        (those bytes, whether they begin the line), or None when there are none. The buffer
        keeps the rest, from the carriage return of its last non-blank segment on, so every
        segment is read once (the visible one with its line)."""
        if self._skipping:
            return None
        cut = self._buf.rfind(b"\r", 0, len(self._buf.rstrip()))
        if cut <= 0:
            return None
        done = bytes(self._buf[:cut])
        del self._buf[:cut]
        line_start, self._started = not self._started, True
        return done, line_start

    def saved(self) -> tuple[bytes, bool, bool, bool]:
        """The partial line as it is now (``restore`` brings it back)."""
        return bytes(self._buf), self._skipping, self._overlong_before, self._started

    def restore(self, saved: tuple[bytes, bool, bool, bool] | None) -> None:
        """The partial line as ``saved`` left it (None: no partial line)."""
        self.reset()
        if saved is not None:
            self._buf[:] = saved[0]
            self._skipping, self._overlong_before, self._started = saved[1], saved[2], saved[3]

    def complete(self, rest: bytes = b"") -> tuple[bytes, bool]:
        """The line, its newline (or the end of input) having come after ``rest``: (its
        bytes, whether an overlong part of it was dropped). The buffer is empty after."""
        self.append(rest)
        overlong = self._skipping or self._overlong_before
        line = b"" if self._skipping else bytes(self._buf)
        self.reset()
        return line, overlong

    def reset(self) -> None:
        """Forget the partial line (the file was truncated or replaced under it)."""
        self._buf.clear()
        self._skipping = self._overlong_before = self._started = False

