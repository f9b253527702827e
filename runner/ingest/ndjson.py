"""A past log to NDJSON metric records, fast: what ``moeconsole parse --json`` prints.

The template strategy (see ``moeconsole.runner.ingest.template``) gets an NDJSON form: values whose text is already
the JSON ``moeconsole.runner.rundir.jsonio.dumps`` writes (shortest float digits, plain text) are copied into
one ``%`` format per line, so a template line costs one regex match and one format. Every
other line (other formats, odd values, NaN) goes through ``LogParser`` and ``dumps``, in file
order; the output is byte-identical to dumping the parser's records (tests compare both).

A big file is cut in two at a template line: a forked child writes the first part straight
to the output while this process spools the second part to an unlinked temporary file, then
appends it. When the reader of the output goes away (``parse --json | head``), the writers
die of SIGPIPE as command-line tools do, with no traceback.
"""
from __future__ import annotations

import os
import signal
import tempfile
import time
from typing import Any, BinaryIO, Callable

from moeconsole.runner.core.errors import InputError
from moeconsole.runner.ingest.bulk import CHUNK, SPLIT_MIN_BYTES, Report, SharedOffsets, kill_child, plan_split, read_range
from moeconsole.runner.ingest.parser import LogParser
from moeconsole.runner.ingest.pipe import LinePipe
from moeconsole.runner.ingest.template import Template
from moeconsole.runner.rundir.jsonio import dumps


def _ndjson_bytes(records: list) -> bytes:
    try:
        return b"".join(records)    # only template lines: one C-level join
    except TypeError:
        return b"".join(r if isinstance(r, bytes) else (dumps({"v": 1, **r}) + "\n").encode()
                        for r in records)


def write_range(path: str, start: int, end: int | None, out: BinaryIO, template: Template | None,
                final: bool, chunk: int = CHUNK, max_line_bytes: int = 1 << 20,
                on_chunk: Callable[[], None] | None = None,
                progress: Callable[[int], None] | None = None, line_format: Any = None) -> int:
    """NDJSON of the records in bytes [start, end) of a log; returns the number written."""
    pipe = LinePipe(LogParser(max_line_bytes, line_format), template=template, json_lines=True)
    n = 0
    for batch in read_range(path, start, end, pipe, final=final, chunk=chunk, progress=progress):
        if batch.records:
            out.write(_ndjson_bytes(batch.records))
            n += len(batch.records)
        if on_chunk is not None:
            on_chunk()
    return n


def write_ndjson(path: str, out: BinaryIO, workers: int = 2, chunk: int = CHUNK,
                 split_min_bytes: int = SPLIT_MIN_BYTES, max_line_bytes: int = 1 << 20,
                 report: Report | None = None, line_format: Any = None) -> int:
    """Every metric record of a log file as NDJSON (``{"v": 1, ...}`` per line) to ``out``;
    returns the number of records. Two processes for a big file (see the module doc).
    ``report(done, total)`` as the reading goes (from this process, both parts counted)."""
    size = os.path.getsize(path)
    plan = plan_split(path, max_line_bytes, split_min_bytes) if workers >= 2 and line_format is None else None
    if plan is None:
        progress = (lambda pos: report(pos, size)) if report is not None else None
        return write_range(path, 0, None, out, None, True, chunk, max_line_bytes, progress=progress,
                           line_format=line_format)
    template, split = plan
    offsets = SharedOffsets(2)
    out.flush()
    pid = os.fork()
    if pid == 0:   # the child: the first part, straight to the output; never returns
        code = 1
        try:
            write_range(path, 0, split, out, template, False, chunk, max_line_bytes,
                        progress=lambda pos: offsets.set(0, pos))
            out.flush()
            code = 0
        except BaseException:  # noqa: BLE001 - the parent reports a failed child
            pass
        finally:
            os._exit(code)
    child = _Child(pid)

    def own_progress(pos: int) -> None:
        offsets.set(1, pos - split)
        if report is not None:
            report(offsets.total(), size)
    try:
        with tempfile.TemporaryFile(prefix="moeconsole-ndjson-") as spool:
            own = write_range(path, split, None, spool, template, True, chunk, max_line_bytes,
                              on_chunk=child.check, progress=own_progress)
            offsets.set(1, size - split)
            status = child.wait((lambda: report(offsets.total(), size)) if report is not None else None)
            if status != 0:
                raise InputError(f"{path}: the process reading its first part failed (exit {status}); "
                                 f"the output above is incomplete")
            spool.flush()
            spool.seek(0)
            out.flush()
            _copy_stream(spool, out)
    finally:
        child.kill()
    return own


class _Child:
    """The forked writer of the first part."""

    def __init__(self, pid: int):
        self.pid: int | None = pid
        self._status = 0

    def check(self) -> None:
        """If the child already died of SIGPIPE (the reader is gone), so does this process."""
        if self.pid is None:
            return
        done, status = os.waitpid(self.pid, os.WNOHANG)
        if done:
            self.pid = None
            self._status = status
            _follow_sigpipe(status)

    def wait(self, waiting: Callable[[], None] | None = None) -> int:
        """The child's exit code; ``waiting()`` every 0.1 s until it ends."""
        if self.pid is not None:
            if waiting is not None:
                while True:
                    done, status = os.waitpid(self.pid, os.WNOHANG)
                    if done:
                        self._status = status
                        break
                    waiting()
                    time.sleep(0.1)
            else:
                _, self._status = os.waitpid(self.pid, 0)
            self.pid = None
        _follow_sigpipe(self._status)
        return os.waitstatus_to_exitcode(self._status)

    def kill(self) -> None:
        if self.pid is not None:
            kill_child(self.pid)
            self.pid = None


def _follow_sigpipe(status: int) -> None:
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGPIPE:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
        raise BrokenPipeError   # SIGPIPE is blocked: end as the caller ends a closed pipe


def _copy_stream(src: BinaryIO, out: BinaryIO) -> None:
    fd = out.fileno()
    size = os.fstat(src.fileno()).st_size
    pos = 0
    try:
        while pos < size:
            sent = os.sendfile(fd, src.fileno(), pos, size - pos)
            if sent == 0:
                break
            pos += sent
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        src.seek(pos)   # sendfile not possible here (e.g. out is not a plain fd): copy by hand
        while True:
            block = src.read(1 << 20)
            if not block:
                break
            out.write(block)
