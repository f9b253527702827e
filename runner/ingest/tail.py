"""Following a growing log file.

``FileTailer`` reads new bytes by offset, synchronously (the runner calls it from its own
loop). It notices truncation (the size fell below the offset) and replacement (the path now
names another inode, or the file was deleted): it first drains what is left of the old file,
then starts from offset 0 of the new one and counts a reset. A *pinned* tailer (the runner's
train.log, whose writer is the training's stdout) never follows the path: a training keeps
writing the file it was given however the name moves (logrotate's rename-and-create), so the
tailer reads that file until ``follow`` hands it the next attempt's. Only a regular file is read: the
open never blocks (a FIFO planted as the log would hold the runner until a writer came), and a
path that names anything else is reported in ``problem`` and read again once it is a file.

Readers that want to be woken when the file grows wait on ``moeconsole.runner.rundir.dirwatch`` (the one
file watcher) and then read with a FileTailer.
"""
from __future__ import annotations

import os
from pathlib import Path

from moeconsole.runner.rundir.jsonio import NotRegularFile, not_regular_words, open_read

# The last bytes read, compared with what the file holds before the offset at each read that
# finds it grown: a file truncated and written past the offset again between two reads
# (logrotate's copytruncate under a reader that was busy or stopped) is read again from its start.
SEEN_BYTES = 64


# FS_IOC_GETVERSION (linux/fs.h: _IOR('v', 1, long)): the inode's generation number
_GETVERSION = 0x80087601


def file_version(fd: int) -> int | None:
    """The generation number of the inode ``fd`` is open on (``FS_IOC_GETVERSION``): a filesystem
    that gives a freed inode number to a new file (ext4 does at once) gives it another generation
    (ext4, XFS, btrfs), so (device, inode, generation) tells the new file from the old one where
    (device, inode) does not. None where the filesystem keeps none (tmpfs, NFS, overlayfs' lower
    layers): there a reader that does not hold the file open has only its bytes to go by
    (``text_changed``)."""
    try:
        import fcntl
        import struct
        return struct.unpack("q", fcntl.ioctl(fd, _GETVERSION, bytes(8)))[0] & 0xFFFFFFFF
    except (ImportError, OSError, ValueError):
        return None


def text_changed(seen: bytes, now: bytes | None) -> bool:
    """Whether the bytes a reader read at some place of a file (``seen``) are no longer what the
    file holds there (``now``, as long; None: the file holds fewer there): only a byte read as
    text that changed says so. Bytes turned to zeros are the hole a writer without O_APPEND
    leaves after a truncation, its new text at its old offset: the same file written on. Zeros
    read turned to text are a file written on too (a shared filesystem can show the new size
    before the data)."""
    if now is None or now.strip(b"\0") == b"":
        return False
    return any(a and a != b for a, b in zip(seen, now))


def bytes_before(fd: int, offset: int, n: int) -> bytes | None:
    """The ``n`` bytes before ``offset`` in the file open as ``fd`` (fewer when the offset is
    nearer its start); None when there are none or the file holds fewer there now (or cannot be
    read)."""
    n = min(n, offset)
    if n <= 0:
        return None
    try:
        data = os.pread(fd, n, offset - n)
    except OSError:
        return None
    return data if len(data) == n else None


def seen_digest(data: bytes) -> str | None:
    """What a saved state keeps of the bytes read right before its offset (``FileTailer(seen=)``):
    a digest, never the text (a log line may hold a secret). None when they hold a zero byte:
    zeros read may be a shared filesystem's size shown before its data, text later (see
    ``FileTailer._rewritten``), which a digest could not tell from a rewrite."""
    if not data or b"\0" in data:
        return None
    # BLAKE2 from its own module (the digest ``hashlib.blake2b`` gives): ``import hashlib`` loads
    # OpenSSL's libcrypto, and a console checks the chart book's digest (``seriesfile._cached``)
    from _blake2 import blake2b
    return blake2b(data, digest_size=16).hexdigest()


def digest_changed(saved: str, now: bytes | None) -> bool:
    """Whether the bytes a saved state's digest (``seen_digest``) was made of are no longer what
    the file holds there (``now``, as many; None: fewer there): ``text_changed`` for a reader that
    kept the digest only. Zeros read are not text (a hole left by a truncation, a shared
    filesystem's size before its data): not a change."""
    return now is not None and now.strip(b"\0") != b"" and seen_digest(now) != saved


class FileTailer:
    """New bytes of a file since the last call, by offset."""

    def __init__(self, path: str | os.PathLike, start_offset: int = 0, max_read: int = 4 << 20, *,
                 pinned: bool = False, seen: str | None = None):
        """``seen``: when starting at a saved ``start_offset``, the digest of the bytes read before
        it then (``digest_before``): a file whose text there changed meanwhile (a copytruncate
        while no reader ran) is read again from its start."""
        self.path = Path(path)
        self.pinned = pinned  # the file read is the writer's, not whatever the path names now
        self.offset = max(0, int(start_offset))
        self.max_read = max(1, int(max_read))
        self.resets = 0
        self._seen = b""   # the bytes read right before ``offset`` (up to SEEN_BYTES; none: not known)
        self._saved = seen if self.offset else None   # ... their digest, as a saved state kept it
        self.problem: str | None = None   # the path names no regular file (a FIFO): why nothing is read
        self._fd: int | None = None
        self._ident: tuple[int, int] | None = None

    def _open(self) -> bool:
        try:
            fd = open_read(self.path)
        except NotRegularFile as exc:
            self.problem = f"{self.path.name} is {exc.strerror}: not read"
            return False
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return False
        self.problem = None
        st = os.fstat(fd)
        self._fd, self._ident = fd, (st.st_dev, st.st_ino)
        return True

    def _path_ident(self) -> tuple[int, int] | None:
        """The file the path names now. When that is no regular file (a FIFO planted there), the
        problem is said at once, while the rest of the old file is still read (its writer may
        go on writing to it for good: a training's stdout never follows the path)."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        words = not_regular_words(st.st_mode)
        if words is not None:
            self.problem = f"{self.path.name} is {words}: not read"
        return st.st_dev, st.st_ino

    def _read(self, size: int) -> bytes:
        if self._fd is None or size <= self.offset:
            return b""
        data = os.pread(self._fd, min(self.max_read, size - self.offset), self.offset)
        self.offset += len(data)
        if data:
            self._seen = (self._seen + data)[-SEEN_BYTES:] if len(data) < SEEN_BYTES else data[-SEEN_BYTES:]
        return data

    def _restart(self) -> None:
        """The next bytes come from offset 0 (a truncated, replaced or rewritten file)."""
        self.offset = 0
        self._seen = b""
        self._saved = None
        self.resets += 1

    def _rewritten(self, size: int) -> bool:
        """The file grew past the offset, but the bytes before the offset are no longer the ones
        read: it was truncated and written again past the offset between two reads (a size
        check alone read on from the middle of the new text: its first lines were lost). Only a
        byte read as text that changed says so (``text_changed``)."""
        if self._fd is None or size <= self.offset or not (self._seen or self._saved):
            return False
        now = self._tailed_bytes_before(self.offset, len(self._seen) or SEEN_BYTES)
        if not self._seen:   # started at a saved offset: only the digest of what was read is known
            return digest_changed(self._saved or "", now)
        return text_changed(self._seen, now)

    def digest_before(self, offset: int) -> str | None:
        """The digest of the bytes before ``offset`` in the file read (``seen_digest``), for a state
        that saves ``offset`` (None: nothing there, or not readable)."""
        data = self._tailed_bytes_before(offset, SEEN_BYTES)
        return seen_digest(data) if data is not None else None

    def _tailed_bytes_before(self, offset: int, n: int) -> bytes | None:
        """``bytes_before`` of the file this tailer holds open (None while it holds none)."""
        return bytes_before(self._fd, offset, n) if self._fd is not None else None

    def read_new(self) -> bytes:
        """Bytes appended since the last call (b"" if none). After a truncation or a
        replacement the next bytes come from offset 0 of the new file and ``resets`` grows."""
        if self._fd is None:
            if not self._open() or self._fd is None:
                return b""
            if os.fstat(self._fd).st_size < self.offset:
                self._restart()
        assert self._fd is not None
        st = os.fstat(self._fd)
        ident = self._path_ident()
        if ident is not None and ident != self._ident and not self.pinned:
            data = self._read(st.st_size)      # the rest of the old file comes first
            if data:
                return data
            self.close()
            self._restart()
            if not self._open():
                return b""
            st = os.fstat(self._fd)
        elif st.st_size < self.offset or self._rewritten(st.st_size):
            self._restart()
        return self._read(st.st_size)

    @property
    def ident(self) -> tuple[int, int] | None:
        """(device, inode) of the file read, None before one is open."""
        return self._ident if self._fd is not None else None

    @property
    def reading(self) -> bool:
        """A file is open and read (a pinned tailer goes on reading it whatever the path names)."""
        return self._fd is not None

    def follow(self, fd: int) -> bool:
        """Read the file ``fd`` is open on from now on (what the runner's new attempt writes):
        when it is another file than the one the path gave, from its start, counted as a reset
        (True)."""
        st = os.fstat(fd)
        if self._fd is None:
            self._open()
        if (st.st_dev, st.st_ino) == self._ident:
            return False
        # a read descriptor on that very file (``fd`` is the child's write-only stdout): through
        # /proc, which names the open file itself, never a path someone could swap
        new = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        got = os.fstat(new)
        if (got.st_dev, got.st_ino) != (st.st_dev, st.st_ino):
            os.close(new)
            return False
        self.close()
        self._fd, self._ident = new, (st.st_dev, st.st_ino)
        self._restart()
        return True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
