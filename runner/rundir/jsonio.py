"""JSON on disk the way the run directory needs it: atomic state files, append-only logs,
and non-finite floats kept as the strings "nan", "inf", "-inf" (JSON has no such numbers)."""
from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import resource
import stat
from pathlib import Path
from typing import Any, BinaryIO, Iterator

SCHEMA_VERSION = 1
FILE_MODE = 0o600  # run files hold logs and commands: owner only
_APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC

# Tests only: the path of a file naming an errno (``EIO``). While it does, every file this process
# writes fails with that error the way a failing disk fails it: a replaced file at its fsync, its
# data written (the temp file is removed, the old file stays whole), an append after half its
# bytes reached the file (cut back off). Read once at import: without it, nothing is looked at.
WRITE_FAULT_ENV = "MOECONSOLE_TEST_WRITE_FAULT_FILE"
_WRITE_FAULT = os.environ.get(WRITE_FAULT_ENV) or None


def _injected_fault() -> int | None:
    """The errno the test-only fault file names now (None: no fault)."""
    if _WRITE_FAULT is None:
        return None
    try:
        with open(_WRITE_FAULT, encoding="ascii") as f:
            code = getattr(errno, f.read().strip(), None)
    except (OSError, ValueError):
        return None
    return code if isinstance(code, int) else None


def _fail_if_faulted(path: Path | str) -> None:
    code = _injected_fault()
    if code is not None:
        raise OSError(code, os.strerror(code), str(path))


def finite_or_str(x: Any) -> Any:
    """A float as JSON can hold it: NaN/inf become strings, everything else passes through."""
    if isinstance(x, float) and not math.isfinite(x):
        if math.isnan(x):
            return "nan"
        return "inf" if x > 0 else "-inf"
    return x


def _json_safe(obj: Any) -> Any:
    if isinstance(obj, float):
        return finite_or_str(obj)
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    return obj


def dumps(obj: Any) -> str:
    """Compact JSON with non-finite floats as strings; never emits NaN/Infinity tokens.

    The C encoder refuses a non-finite float (allow_nan=False): only then is the object walked
    to replace them, so the common record costs one C call."""
    try:
        return json.dumps(obj, separators=(",", ":"), allow_nan=False, default=str)
    except ValueError:
        return json.dumps(_json_safe(obj), separators=(",", ":"), allow_nan=False, default=str)


def loads(data: str | bytes, **kw: Any) -> Any:
    """``json.loads`` for files we did not write (a checkpoint's index, a trainer_state.json):
    nesting deeper than the interpreter can follow is a ``ValueError`` like any other bad JSON,
    never a ``RecursionError`` that escapes the caller's ``except ValueError``."""
    try:
        return json.loads(data, **kw)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def load_file(path: Path | str, **kw: Any) -> Any:
    """``loads`` of a whole file (OSError and ValueError as the caller expects them)."""
    with open(path, "rb") as f:
        return loads(f.read(), **kw)


def atomic_write_json(path: Path | str, obj: Any, *, follow_dir: bool = False) -> None:
    """Write to a temp file in the same directory, fsync, rename: readers never see half a file
    (``atomic_write_bytes``: never through a symlink)."""
    atomic_write_bytes(path, (json.dumps(_json_safe(obj), indent=1, allow_nan=False, default=str) + "\n").encode(),
                       follow_dir=follow_dir)


StatKey = tuple[int, int, int]  # inode, size, mtime (ns): what tells a changed file from the one read last


def stat_key(path: Path | str, *, regular: bool = False) -> StatKey | None:
    """What tells a changed file from the one read last time: inode, size, mtime. None when
    it is missing, or (``regular``) not a regular file: a FIFO or a directory in an agent
    file's place is not read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return None if regular and not stat.S_ISREG(st.st_mode) else (st.st_ino, st.st_size, st.st_mtime_ns)


def dir_identity(path: Path | str) -> tuple[int, int] | None:
    """A directory's (st_dev, st_ino), the symbolic links on its path followed; None when no
    directory is there. What tells a run directory from its copy (``rundir.copied_from``,
    ``proctree.marked_for``)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def atomic_write_bytes(path: Path | str, data: bytes, *, mode: int = FILE_MODE, follow_dir: bool = False,
                       sync: bool = True) -> None:
    """Replace ``path`` with ``data`` whole (a new temp file beside it, fsync, rename), created
    with ``mode``. Nothing is ever written through a symlink: the temp file is created
    ``O_EXCL|O_NOFOLLOW`` and renamed over the name (a planted ``receipt.md -> ~/.bashrc`` is
    replaced, its target untouched), both relative to one descriptor of the directory; and that
    directory is opened ``O_NOFOLLOW`` (a run's ``crashes/`` made a link to elsewhere is ELOOP,
    never written into) unless ``follow_dir`` (a directory the user named: ``--out DIR``, a
    checkpoint directory). ``sync=False`` skips the fsync, for a file worth nothing after a crash
    (a reader then finds no file, or an empty one, never half of one written earlier)."""
    path = Path(path)
    dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | (0 if follow_dir else os.O_NOFOLLOW))
    try:
        _replace_whole(dfd, path, data, mode, sync)
    except OSError as exc:
        if exc.errno is None or exc.filename == str(path):
            raise
        # the error names the file being written, never the hidden temp name beside it
        # (".chart-prefs.json.3764352b: Permission denied" told a user nothing)
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    finally:
        os.close(dfd)


def no_inode_free(directory: Path | str) -> bool:
    """Whether the filesystem of ``directory`` has bytes but no inode left for a new file (a
    filesystem that counts none, ``f_files`` 0, is never out of them)."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return False
    return st.f_files > 0 and st.f_favail == 0 and st.f_bavail > 0


def rewrite_in_place(path: Path | str, data: bytes) -> None:
    """Write ``data`` over the existing file ``path``, for a filesystem with no inode left for
    ``atomic_write_bytes``'s temp file: one ``pwrite`` from offset 0, padded with spaces to the
    old length (JSON reads them as whitespace) so no truncation ever leaves a reader the new text
    cut short, then fsync. Not atomic: a reader at that moment may find it damaged and read it
    again at its next look. Never through a symlink, never a file made (FileNotFoundError)."""
    fd = open_overwrite(path)
    try:
        _overwrite(fd, data, path)
    finally:
        os.close(fd)


def _overwrite(fd: int, data: bytes, path: Path | str) -> None:
    """``data`` over the open file ``fd`` from offset 0, padded with spaces to its old length
    (never truncated: a reader that has it open reads whitespace after the JSON, never nothing),
    then fsync."""
    size = os.fstat(fd).st_size
    body = data + b" " * (size - len(data)) if len(data) < size else data
    done = os.pwrite(fd, body, 0)
    if done != len(body):
        raise OSError(errno.ENOSPC, f"short write ({done} of {len(body)} bytes)", str(path))
    os.fsync(fd)


def replace_from_reserve(path: Path | str, reserve: Path | str, data: bytes, *, mode: int = FILE_MODE) -> bool:
    """Replace ``path`` with ``data`` on a full filesystem: ``data`` goes into the blocks the file
    ``reserve`` beside it already holds (made with ``posix_fallocate``; padded with spaces to its length,
    never truncated: no block let go), then the two names are swapped (``rename_exchange``): the old
    ``path`` is the reserve now, its blocks there for the next write. No byte and no inode of the
    filesystem's is needed and none is freed, so a writer that takes every byte freed (the training's own
    checkpoint save filling the disk) cannot take the room first, as it could between giving up the
    reserve and writing a new file, and every write of the outage has its room (the two files take
    turns), not the first only. Where the exchange is refused (NFS) ``reserve`` is renamed over ``path``
    and used up. False where ``data`` does not fit in the blocks ``reserve`` holds or there is no
    ``reserve`` fit to write over (``open_overwrite``)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False   # a directory or a link in its place is never swapped in as the reserve
    except FileNotFoundError:
        pass
    except OSError:
        return False
    try:
        fd = open_overwrite(reserve)
    except OSError:
        return False
    try:
        st = os.fstat(fd)
        if max(st.st_size, st.st_blocks * 512) < len(data):
            return False   # the end of data would need blocks the filesystem has not got
        _fail_if_faulted(path)   # the test-only fault file: a disk that refuses every write refuses this one
        _overwrite(fd, data, reserve)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    if not rename_exchange(reserve, path):
        os.replace(reserve, path)
    return True


def rename_exchange(a: Path | str, b: Path | str) -> bool:
    """Swap the names ``a`` and ``b`` in one step, ``renameat2(a, b, RENAME_EXCHANGE)`` (renameat2(2):
    "atomically exchange oldpath and newpath"; Linux 3.15, glibc 2.28, no ``os`` wrapper, so through
    ctypes). False where it cannot be done (a kernel or filesystem that refuses it: EINVAL on NFS,
    ENOSYS, no glibc wrapper); other errors raise."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, exchange = -100, 2   # <fcntl.h> AT_FDCWD, <linux/fs.h> RENAME_EXCHANGE (1 << 1)
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), str(b))


def exchange_write(path: Path | str, spare: Path | str, data: bytes) -> bool:
    """Replace ``path`` with ``data`` whole without a new inode: ``data`` is written into the
    existing file ``spare`` beside it (``_overwrite``: padded, never truncated), then the two
    names are swapped in one step, ``renameat2(spare, path, RENAME_EXCHANGE)`` (renameat2(2): "atomically exchange
    oldpath and newpath"; Linux 3.15, glibc 2.28, no ``os`` wrapper, so through ctypes). A reader
    sees the old file or the new one, never a mix; ``spare`` then holds the old one, ready for the
    next write. For a filesystem with no inode left for ``atomic_write_bytes``'s temp file
    (measured on a tmpfs with every inode taken: the exchange needs none). False where it cannot
    be done (no ``spare``, a kernel or filesystem that refuses the exchange: EINVAL on NFS,
    ENOSYS, no glibc wrapper): the caller falls back (``rewrite_in_place``). Never through a
    symlink, never a file made."""
    try:
        fd = open_overwrite(spare)
    except OSError:
        return False
    try:
        _overwrite(fd, data, spare)   # the previous state: a slow reader may still hold it open
    finally:
        os.close(fd)
    return rename_exchange(spare, path)


# the random part of a temp name (4 bytes in hex), and the spare kept beside a file (``spare_name``: for
# ``exchange_write``, and the exit record's): the waiter owns both, as it imports no package and names its spare
from moeconsole.runner.process.waiter import TEMP_TAG_HEX, spare_name  # noqa: E402,F401


def temp_name(name: str) -> str:
    """The hidden temp file ``atomic_write_bytes`` writes beside ``name`` before it renames it
    over ``name``: ``.state.json.3764352b``."""
    return f".{name}.{os.urandom(TEMP_TAG_HEX // 2).hex()}"


def is_temp_name(name: str) -> bool:
    """Whether ``name`` is one of ``temp_name``'s: nothing reads it; what it holds shows under
    its real name when it is renamed over it."""
    stem, dot, tag = name.rpartition(".")
    return name.startswith(".") and bool(dot) and len(stem) > 1 and len(tag) == TEMP_TAG_HEX and \
        all(c in "0123456789abcdef" for c in tag)


def _replace_whole(dfd: int, path: Path, data: bytes, mode: int, sync: bool) -> None:
    """``atomic_write_bytes`` inside the open directory ``dfd``."""
    for _ in range(100):
        tmp = temp_name(path.name)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                         dir_fd=dfd)
            break
        except FileExistsError:
            continue
    else:
        raise FileExistsError(f"{path.parent}: no free temp name")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)  # never from the umask: exactly ``mode``
            _fail_if_faulted(path)
            if sync:
                os.fsync(f.fileno())
        os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        raise


def replace_dir(src: Path | str, dst: Path | str) -> None:
    """rename(2) the finished directory ``src`` onto ``dst``; an older ``dst`` is moved aside
    first and removed after, so ``dst`` is never a half-written directory."""
    import shutil
    src, dst = Path(src), Path(dst)
    if dst.exists():
        old = dst.with_name(f".{dst.name}.old-{os.getpid()}")
        os.rename(dst, old)
        os.rename(src, dst)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.rename(src, dst)


class NotRegularFile(OSError):
    """A run file that is a FIFO, a device, a socket or a directory: never read or written."""


def not_regular_words(mode: int) -> str | None:
    """What a file of ``mode`` is when it is no regular file ("a FIFO, not a regular file"), else None."""
    if stat.S_ISREG(mode):
        return None
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) else "not a regular file"
    return f"{kind}, not a regular file"


def _regular(fd: int, path: Path | str) -> int:
    """``fd`` when it is a regular file (O_NONBLOCK cleared again), else closed and refused."""
    words = not_regular_words(os.fstat(fd).st_mode)
    if words is not None:
        os.close(fd)
        raise NotRegularFile(errno.EINVAL, words, str(path))
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd


def open_append(path: Path | str, *, readable: bool = False) -> int:
    """An O_APPEND descriptor on a run file, created 0600, refusing a symlink (ELOOP): a planted
    link must not make the runner write outside the run directory. A regular file only: a FIFO
    planted in its place is refused at once (``NotRegularFile``), never waited on."""
    flags = (_APPEND_FLAGS & ~os.O_WRONLY) | os.O_RDWR if readable else _APPEND_FLAGS
    try:
        fd = os.open(path, flags | os.O_NONBLOCK, FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ENXIO:   # a FIFO without a reader
            raise NotRegularFile(errno.EINVAL, "a FIFO, not a regular file", str(path)) from None
        raise
    return _regular(fd, path)


def open_read(path: Path | str) -> int:
    """A read descriptor on a log, never blocking on the open: a FIFO, a device or a directory
    in its place is ``NotRegularFile`` (a symlink is followed: a foreign run's log is one)."""
    return _regular(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), path)


def open_overwrite(path: Path | str) -> int:
    """A write descriptor on an existing run file to be written over in place (state.json's spare, the
    full-disk reserve): never a file made, never through a symlink (ELOOP), never blocking on the open
    (a FIFO in its place is ``NotRegularFile``, not a runner stopped until a reader comes), and never a
    file with a second name (a hard link planted in its place would have another file of the user's
    rewritten)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:   # a FIFO without a reader
            raise NotRegularFile(errno.EINVAL, "a FIFO, not a regular file", str(path)) from None
        raise
    fd = _regular(fd, path)
    if os.fstat(fd).st_nlink != 1:
        os.close(fd)
        raise NotRegularFile(errno.EINVAL, "a file with other names (hard links), not the run's own", str(path))
    return fd


def append_bytes(path: Path | str, data: bytes, *, line: bool = False) -> None:
    """Append ``data`` in one write(2). With ``line``, a file that ends mid-line (a writer died
    half-way) gets a newline first, so the new record is never glued onto the broken one. A write
    that fails part-way (disk full) is cut back off, so a retry does not leave a fragment."""
    fd = open_append(path, readable=line)
    try:
        size = os.fstat(fd).st_size
        if line and size and os.pread(fd, 1, size - 1) != b"\n":
            data = b"\n" + data
        try:
            if _injected_fault() is not None:
                os.write(fd, data[:len(data) // 2])
                _fail_if_faulted(path)
            n = os.write(fd, data)
        except OSError:
            _truncate_to(fd, size)
            raise
        if n != len(data):
            _truncate_to(fd, size)
            limit = file_size_limit()
            if limit is not None and size + n >= limit:   # the file size limit, not the disk
                raise OSError(errno.EFBIG, f"{os.strerror(errno.EFBIG)}: the file size limit (ulimit -f) is "
                              f"{limit} bytes", str(path))
            raise OSError(28, f"short write ({n} of {len(data)} bytes)")
    finally:
        os.close(fd)


def file_size_limit() -> int | None:
    """The file size limit in force (``ulimit -f``, RLIMIT_FSIZE) in bytes; None: unlimited."""
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def _truncate_to(fd: int, size: int) -> None:
    try:
        os.ftruncate(fd, size)
    except OSError:
        pass


def append_jsonl(path: Path | str, obj: Any) -> None:
    """One record, one line, one write(2) on an O_APPEND descriptor: no interleaving, no rewrite."""
    append_bytes(path, (dumps(obj) + "\n").encode(), line=True)


def read_json(path: Path | str, default: Any = None) -> Any:
    try:
        return load_file(path)
    except (OSError, ValueError):
        return default


def read_small(path: Path | str, size: int = 1 << 16) -> bytes:
    """A whole small file in three system calls (open, read, close): ``open(path, "rb").read()``
    makes ten (two more fstat, an ioctl, two lseek and a read at the end), and a 128-node
    console reads 64 agent files a second. ``size``: what its ``stat`` said; one byte more is
    asked for, and a file that grew since is read on to its end (a short read is the end of a
    regular file). Opened non-blocking: a FIFO in a file's place never blocks the reader (its
    read fails or reads nothing). OSError as ``open`` raises it."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        data = os.read(fd, size + 1)
        if len(data) <= size:
            return data
        parts = [data]
        while chunk := os.read(fd, 1 << 16):
            parts.append(chunk)
        return b"".join(parts)
    finally:
        os.close(fd)


def read_own_json(path: Path | str, default: Any = None, size: int = 1 << 16) -> Any:
    """A JSON file moeconsole writes itself (an agent's ``telemetry/<host>.json``,
    ``ranks.json``: strict JSON, never NaN) as ``read_json`` gives it, decoded by msgspec in
    about a third of the time: a 128-node run's console reads 64 agent files a second and a
    1,024-rank ``ranks.json`` whenever the runner writes it. Bad JSON, nesting too deep or an
    unreadable file: ``default``. ``size``: its size, when the caller's ``stat`` knows it
    (``read_small``)."""
    import msgspec
    try:
        return msgspec.json.decode(read_small(path, size))
    except (OSError, ValueError, RecursionError):  # msgspec.DecodeError is a ValueError
        return default


def iter_jsonl(path: Path | str, start: int = 0) -> Iterator[tuple[int, dict]]:
    """Yield (end_offset, record) for each complete, valid line from ``start``.

    A trailing partial line (a writer mid-append) is left for the next call; a corrupt
    line is skipped, never fatal."""
    try:
        f = open(path, "rb")
    except OSError:
        return
    with f:
        for offset, rec, _ in jsonl_records(f, start):
            yield offset, rec


def jsonl_records(f: BinaryIO, start: int, keep: int = 0, before: bytes = b"") -> Iterator[tuple[int, dict, bytes]]:
    """``iter_jsonl`` over a file open for reading, each record with the last ``keep`` bytes of
    the file before its end offset as read here (``before``: those before ``start``, read
    earlier): what a reader compares at its next read to tell the same file written on from
    another (``tail.text_changed``), taken from the bytes it read, on the same descriptor."""
    f.seek(start)
    offset, last = start, before[-keep:] if keep else b""
    for raw in f:
        if not raw.endswith(b"\n"):
            break
        offset += len(raw)
        if keep:
            last = raw[-keep:] if len(raw) >= keep else (last + raw)[-keep:]
        try:
            rec = loads(raw)
        except ValueError:
            continue
        if isinstance(rec, dict):
            yield offset, rec, last


def read_jsonl(path: Path | str) -> list[dict]:
    return [rec for _, rec in iter_jsonl(path)]
