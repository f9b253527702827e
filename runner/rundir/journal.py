"""The runner's writes to its run directory, made to survive a full or unwritable disk.

Records (events, metrics) and replaced files (crash reports) that cannot be written wait in
memory, in order, and go out first the next time a write succeeds: none is lost, none is
duplicated, and the runner never dies of ``ENOSPC``. While writes fail, ``storage`` says so (the
runner puts it into ``state.json``, written into the blocks of a small reserve file the two then
take turns with, so no write needs a byte the disk has not got; the outage ends once the reserve is
whole again and the disk has room beyond it). The one exception: a file that may grow no
more (EFBIG: a hard ``ulimit -f``, the filesystem's largest file) takes the whole lines that fit
and drops the rest, said once in an alert, so it never holds the records behind it for good.
"""
from __future__ import annotations

import collections
import errno
import os
import stat
import time
from pathlib import Path
from typing import Any, Callable, Iterator

from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.rundir.ownership import Ownership
from moeconsole.runner.core.state import Storage
from moeconsole.runner.core.state import StateError

RESERVE_BYTES = 256 * 1024
PENDING_WARN = 10_000


class Journal:
    def __init__(self, run: rundir.RunDir, diag: Callable[[str], None] = lambda msg: None,
                 owner: Ownership | None = None) -> None:
        self.run = run
        self.diag = diag
        self.pending: collections.deque[tuple[str, Path, Any]] = collections.deque()
        self.error: str | None = None
        self.since: float | None = None  # when writing began to fail (wall clock, shown)
        self._since_mono = 0.0  # the same moment on the monotonic clock (the outage's length)
        self.reserve = run.path / ".reserve"
        # The run directory renamed under the live run (``dirguard.DirGuard``): where it is now.
        # Every record and state write goes there (a path under ``run.path`` is taken as the same
        # path under it) until it is renamed back; None: the directory is where it was.
        self.moved_to: Path | None = None
        # An outage of the run directory's writes that just ended: (the error, its seconds, the
        # records that waited and are written now), for the runner to say once (``outage_over``).
        self._over: tuple[str, float, int] | None = None
        # Called with every event, after it is queued (notifications, checkpoint sync). A
        # listener's failure is reported, never raised into the runner.
        self.listeners: list[Callable[[dict], None]] = []
        # The log offset state.json may name (``log_offset``, where a restarted or adopting
        # runner reads on): every record of the log before it is written. A mark queued behind
        # records that wait for the disk moves it only once they are written (``mark``).
        self.log_mark = 0
        # ... and the digest of the log's bytes right before it (``tail.seen_digest``, state.json's
        # ``log_seen``): a runner starting there tells a log rewritten meanwhile (a copytruncate).
        self.log_seen: str | None = None
        # ... and the reading context at it (``LiveReader.context``, state.json's ``log_context``, a
        # ``core.readctx.ReadingContext`` as builtins): a table's header, the run's length, ...
        self.log_context: dict | None = None
        # Records dropped per file name because the file may grow no more (EFBIG: ``_too_large``).
        self.too_large: dict[str, int] = {}
        # Whole files (crash reports) that wait for a free inode, oldest first: set aside so the
        # records queued behind them, appends that need no inode, are written meanwhile (``flush``).
        self.aside: collections.deque[tuple[Path, Any]] = collections.deque()
        # Records that waited and went out while the outage is not over yet (``_back``): said with its end.
        self._written_since = 0
        # Asked before records are written (``ownership.Ownership.still_ours``, the runner's claim on the run):
        # False, the run is another machine's now, and what waits is dropped, never written (round 30).
        self.owner = owner

    # the parts of RunDir the checkpoint keeper uses, so it writes through the journal too
    @property
    def run_id(self) -> str:
        return self.run.run_id

    @property
    def path(self) -> Path:
        return self.run.path

    @property
    def here(self) -> rundir.RunDir:
        """The run directory where it is now (for the caches written beside the journal:
        ``series.json``, ``ranks.json``, ``gpu-history.json``)."""
        return rundir.RunDir(self.moved_to) if self.moved_to is not None else self.run

    def where(self, path: Path) -> Path:
        """``path`` (under the run directory) where the directory is now."""
        if self.moved_to is None:
            return path
        try:
            return self.moved_to / path.relative_to(self.run.path)
        except ValueError:
            return path

    def event(self, type_: str, **fields) -> dict:
        rec = {"v": jsonio.SCHEMA_VERSION, "t": time.time(), "type": type_, **fields}
        self._queue("line", self.run.events, rec)
        for listener in self.listeners:
            try:
                listener(rec)
            except Exception as exc:  # noqa: BLE001 - an ops side effect must not stop supervision
                self.diag(f"event listener failed: {exc!r}")
        return rec

    def metric(self, rec: dict) -> None:
        self._queue("line", self.run.metrics, rec)

    def metrics(self, recs: list[dict], lines: list[bytes | None] | None = None) -> None:
        """A batch of metric records: one write for all (live ingest writes per log slice).
        ``lines``: each record's JSON line where the caller has it already (else None)."""
        if recs:
            self._queue("lines", self.run.metrics, (recs, lines))

    def evals(self, recs: list[dict]) -> None:
        """Evaluation results (``evals.jsonl``), in one write."""
        if recs:
            self._queue("lines", self.run.evals, (recs, None))

    def mark(self, offset: int, seen: str | None = None, context: dict | None = None) -> None:
        """The records of the log before ``offset`` are queued: ``log_mark`` moves there once they
        are written (at once when nothing waits), ``log_seen`` to ``seen`` (the digest of the
        bytes before it), ``log_context`` to ``context`` (the reading context there). A runner SIGKILLed while records wait restarts from before them, never
        past them (on a full disk the reserve lets state.json be written while the records behind
        it could not)."""
        if not self.pending:
            self.log_mark, self.log_seen, self.log_context = offset, seen, context
        elif self.pending[-1][0] == "mark":
            self.pending[-1] = ("mark", self.run.path, (offset, seen, context))
        else:
            self.pending.append(("mark", self.run.path, (offset, seen, context)))

    def write_json(self, path: Path, obj: Any) -> None:
        """A whole file replaced atomically (a crash report), retried like a record."""
        self._queue("file", path, obj)

    def _queue(self, kind: str, path: Path, obj: Any) -> None:
        self.pending.append((kind, path, obj))
        if len(self.pending) == PENDING_WARN:
            self.diag(f"{PENDING_WARN} records wait for the disk")
        self.flush()

    def discard(self) -> int:
        """Drop every record that waits in memory (a runner whose run another machine took over: they are
        of a training that is not the run's any more, ``Supervisor._stand_down``); how many were dropped."""
        dropped = self.waiting
        self.pending.clear()
        self.aside.clear()
        return dropped

    def flush(self) -> bool:
        """Write what waits, oldest first; stop at the first failure (order is kept). One
        exception: a whole file replaced through a temp file (a crash report) that fails for want
        of an inode (``jsonio.no_inode_free``: a filesystem out of inodes, not bytes) is set aside
        (``aside``) and retried at each flush, while the records behind it, appends to files that
        exist and need no inode, go on: held behind it, the attempt's crash, its recovery and the
        run's end never reached events.jsonl, so `runs show` listed no crash and no alert for as
        long as no inode was free (round 15; state.json had them)."""
        if (self.pending or self.aside) and self.owner is not None and not self.owner.still_ours(self.here):
            self.discard()
            return False
        written = self._flush_aside()
        while self.pending:
            kind, queued, obj = self.pending[0]
            if kind == "mark":
                self.log_mark, self.log_seen, self.log_context = obj
                self.pending.popleft()
                continue
            path = self.where(queued)
            try:
                if kind == "line":
                    jsonio.append_jsonl(path, obj)
                elif kind == "lines":
                    recs, lines = obj
                    jsonio.append_bytes(path, b"".join(_lines(recs, lines)), line=True)
                else:
                    jsonio.atomic_write_json(path, obj)
            except OSError as exc:
                if kind == "file" and self._not_a_run_dir(path, exc):
                    self.pending.popleft()
                    continue
                if kind == "file" and exc.errno == errno.ENOSPC and jsonio.no_inode_free(path.parent):
                    self.pending.popleft()
                    self.aside.append((queued, obj))
                    self.failed(exc)
                    self.diag(f"{path.name} waits for a free inode; the records behind it are written meanwhile")
                    continue
                if exc.errno == errno.EFBIG:
                    # The file may grow no more (a hard ``ulimit -f`` the runner cannot lift, the
                    # filesystem's largest file): no wait can help, and waiting would hold every
                    # record and crash report behind it for good. Said once per file, as an alert.
                    self.pending.popleft()
                    kept = self._fit(path, obj) if kind == "lines" else 0
                    written += kept
                    self._too_large(path, (len(obj[0]) if kind == "lines" else 1) - kept, exc)
                    continue
                self.failed(exc)
                return False
            self.pending.popleft()
            written += len(obj[0]) if kind == "lines" else 1
        if self.error is not None and written and not self.aside:
            self._back(written)
        return not self.aside

    def _not_a_run_dir(self, path: Path, exc: OSError) -> bool:
        """A symlink (or a file) where a directory of the run belongs (``crashes/``: ELOOP, ENOTDIR): never
        written through, and no retry can help; said, and the file dropped (True)."""
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            return False
        self.diag(f"refused to write {path}: {exc.strerror}: {path.parent} is not a directory of this run")
        return True

    def _flush_aside(self) -> int:
        """The whole files set aside for want of an inode, written in order while they can be (how many). One
        that can never be written (``crashes/`` made a symlink meanwhile, ``_not_a_run_dir``; EFBIG) is dropped as
        the main loop drops it: retried forever, it kept ``unwritten`` true and a finishing runner waited for it
        for good (review R36)."""
        written = 0
        while self.aside:
            queued, obj = self.aside[0]
            path = self.where(queued)
            try:
                jsonio.atomic_write_json(path, obj)
            except OSError as exc:
                if self._not_a_run_dir(path, exc):
                    self.aside.popleft()
                    continue
                if exc.errno == errno.EFBIG:
                    self.aside.popleft()
                    self._too_large(path, 1, exc)
                    continue
                self.failed(exc)
                break
            self.aside.popleft()
            written += 1
        return written

    @property
    def unwritten(self) -> bool:
        """Something waits for the disk: records, or a whole file set aside for an inode."""
        return bool(self.pending or self.aside)

    @staticmethod
    def _fit(path: Path, obj: Any) -> int:
        """The whole lines of a batch that still fit under the file size limit, written (how many)."""
        limit = jsonio.file_size_limit()
        try:
            room = (limit - os.stat(path).st_size - 1) if limit is not None else 0   # 1: a newline it may need first
        except OSError:
            return 0
        fit, size = [], 0
        for line in _lines(*obj):
            if size + len(line) > room:
                break
            fit.append(line)
            size += len(line)
        if not fit:
            return 0
        try:
            jsonio.append_bytes(path, b"".join(fit), line=True)
        except OSError:
            return 0
        return len(fit)

    def _too_large(self, path: Path, records: int, exc: OSError) -> None:
        lost = self.too_large.get(path.name, 0)
        self.too_large[path.name] = lost + records
        if lost:
            return
        self.diag(f"cannot write to {path}: {exc.strerror}; its records from now on are lost")
        self.event("alert", level="critical", rule="storage",
                   message=f"{path.name} can grow no more ({exc.strerror}): its records from now on are not written")

    def _writable_again(self, written: int) -> None:
        """A write succeeded after writes failed: the outage is over (said once: ``outage_over``).
        Only a write that succeeded says so, never a flush with nothing to write."""
        took = time.monotonic() - self._since_mono
        self.diag(f"run directory writable again after {took:.0f}s")
        self._over = (self.error or "", took, written)
        self.error = self.since = None

    def outage_over(self) -> tuple[str, float, int] | None:
        """The outage of writes that ended since the last call, once: (the error, how long it
        lasted in seconds, the records that waited in memory and are written now)."""
        over, self._over = self._over, None
        return over

    def failed(self, exc: OSError) -> None:
        if self.error is None:
            self.since, self._since_mono = time.time(), time.monotonic()  # shown; the outage's length
            self.diag(f"cannot write to the run directory: {exc}; records wait in memory")
        self.error = f"{exc.strerror or exc}" + (f" ({exc.filename})" if getattr(exc, "filename", None) else "")

    @property
    def storage(self) -> Storage | None:
        if self.error is None:
            return None
        return Storage(error=self.error, since=self.since or time.time(), pending_records=self.waiting)

    @property
    def waiting(self) -> int:
        """The records that wait for the disk."""
        return len(self.aside) + sum(len(obj[0]) if kind == "lines" else kind != "mark" for kind, _, obj in self.pending)

    def write_state(self, state: dict) -> bool:
        """Replace ``state.json``; on a full disk write it into the reserve's blocks to say so."""
        run = self.here
        try:
            run.write_state(state)
        except StateError as exc:  # a value the model refuses: say so, keep supervising
            self.diag(str(exc))
            return False
        except OSError as exc:
            self.failed(exc)
            said = {**state, "storage": self.storage}
            try:   # the reserve's own blocks: no byte freed that another writer could take first
                run.write_state(said, reserve=self.where(self.reserve))
            except (OSError, StateError):
                # A copy-on-write filesystem (ZFS; btrfs once a block was written) needs new blocks even to
                # overwrite, and a reserve too small for the state cannot take it: the reserve is given up
                # and the room it frees written into the usual way.
                try:
                    self.where(self.reserve).unlink()
                    run.write_state(said)
                except (OSError, StateError):
                    return False
            return False  # written, but only thanks to the reserve: keep retrying
        if self.error is not None and not self.unwritten:
            self._back(0)
        if self.error is None:
            self.ensure_reserve()
        return True

    def _back(self, written: int) -> None:
        """Writes succeed after writes failed (``written`` records that waited went out now): the outage
        is over once the reserve is whole again and the disk has room beyond it. A write that succeeded
        in a moment's room (another writer's temp file deleted, the reserve's own blocks let go) had
        ended it at once: the reserve could not be made again, state.json said all was well, and the
        disk full a moment later went unsaid for good (round 24, CI)."""
        self._written_since += written
        self.ensure_reserve()
        try:
            fs = os.statvfs(self.where(self.run.path))
            room = fs.f_bavail * fs.f_frsize
        except OSError:
            room = RESERVE_BYTES   # no answer: the write that succeeded is the witness
        if room < RESERVE_BYTES:
            return
        self._writable_again(self._written_since)
        self._written_since = 0

    def ensure_reserve(self) -> bool:
        """The reserve whole (True): a regular file of this run's alone with ``RESERVE_BYTES`` allocated. One
        left short (a runner killed between making it and allocating it; the old state.json an outage's
        writes left in its place, ``jsonio.replace_from_reserve``) is allocated to its length in place, kept
        as it was where the disk has not the room; a FIFO, a link or a hard link in its place is replaced:
        kept, it failed the next full disk for good."""
        reserve = self.where(self.reserve)
        try:
            st = os.lstat(reserve)
        except FileNotFoundError:
            st = None
        except OSError:
            return False
        if st is not None and not (stat.S_ISREG(st.st_mode) and st.st_nlink == 1):
            try:
                os.unlink(reserve)   # never a directory (EISDIR): that name is then left alone
            except OSError:
                return False
            st = None
        if st is not None and st.st_size >= RESERVE_BYTES and st.st_blocks * 512 >= RESERVE_BYTES:
            return True
        try:
            fd = jsonio.open_overwrite(reserve) if st is not None else os.open(
                reserve, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, jsonio.FILE_MODE)
        except OSError:
            return False
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        except OSError:
            if st is None:
                reserve.unlink(missing_ok=True)   # a new one that could not be made whole: none
            return False
        finally:
            os.close(fd)
        return True


def _lines(recs: list[dict], lines: list[bytes | None] | None) -> Iterator[bytes]:
    """A batch's JSON lines: each record's own where the caller had it, else encoded now."""
    for rec, line in zip(recs, lines or [None] * len(recs)):
        yield line if line is not None else (jsonio.dumps(rec) + "\n").encode()
