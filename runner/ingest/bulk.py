"""Past log files read whole: chunks of a file through the ingest pipe, in one or two processes.

``read_range`` is the file's side of the pipe's first stage (bytes -> lines): it reads a file
in big chunks, each starting at a line with the newline before it (so a chunk is a block of
complete lines as it stands in the file, no copy), and hands each to
``moeconsole.runner.ingest.pipe.LinePipe``; a line longer than a chunk is fed to the pipe's partial line
up to its newline. The pipe does the rest (template rows and the parser's lines, in order, as
one batch per chunk).

``fold_file`` also splits a big file in two at a template line (the reading context after
such a line is fully determined by the line) and folds the first part in a forked process.
"""
from __future__ import annotations

import os
import pickle
import signal
import struct
import tempfile
import threading
from typing import Any, Callable, Iterator

from moeconsole.runner.ingest.batch import Batch, batch_from_events, concat_batches
from moeconsole.runner.ingest.parser import LogParser, ParseStats
from moeconsole.runner.ingest.pipe import LinePipe, learn_template
from moeconsole.runner.ingest.template import Template
from moeconsole.runner.ingest.spawned import SPLIT_MIN_BYTES, Spawned, second_core_free

__all__ = ["Batch", "batch_from_events", "concat_batches", "read_range", "scan_file", "fold_file", "plan_split",
           "Template", "SharedOffsets", "Report", "kill_child", "CHUNK", "SPLIT_MIN_BYTES", "second_core_free",
           "Spawned"]

CHUNK = 8 << 20
FIRST_CHUNK = 256 << 10


# ----------------------------------------------------------------------------- files

def read_range(path: str, start: int, end: int | None, pipe: LinePipe,
               final: bool, chunk: int = CHUNK, progress: Callable[[int], None] | None = None) -> Iterator[Batch]:
    """Batches for the bytes [start, end) of a file (``start`` at a line start);
    ``final`` reads the last partial line at the end. ``progress(offset)`` after each chunk."""
    with open(path, "rb") as f:
        pos = start
        size = min(FIRST_CHUNK, chunk) if pipe.template is None else chunk
        while end is None or pos < end:
            if progress is not None:
                progress(pos)
            want = size if end is None else min(size, end - pos)
            if pipe.has_partial:
                # inside an unfinished (maybe huge) line: the pipe takes bytes to its newline
                f.seek(pos)
                data = f.read(want)
                if not data:
                    break
                nl = data.find(b"\n")
                take = len(data) if nl < 0 else nl + 1
                batch = pipe.feed(data[:take], at=pos)
                pos += take
                if len(batch) or batch.marks:
                    yield batch
                continue
            if pos > 0:   # start the buffer with the newline that ended the previous line
                f.seek(pos - 1)
                buf = f.read(want + 1)
            else:
                buf = b"\n" + f.read(want)
            if len(buf) <= 1:
                break
            last = buf.rfind(b"\n")
            if last <= 0:
                # no newline: it waits as the partial line (the redraws a carriage return
                # overwrote are read now: ``LinePipe.feed``)
                batch = pipe.feed(buf[1:], at=pos)
                pos += len(buf) - 1
                if len(batch) or batch.marks:
                    yield batch
                continue
            batch = pipe.read_block(buf, last + 1, at=pos)
            pos += last
            size = chunk
            if len(batch) or batch.marks:
                yield batch
    tail = pipe.finish(final)
    if len(tail) or tail.marks:
        yield tail


def kill_child(pid: int) -> None:
    """End a forked worker of ours and reap it (its result is no longer wanted)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def _find_split(path: str, size: int, template: Template, fraction: float) -> int | None:
    """A line start near ``fraction`` of the file whose line the template matches."""
    at = int(size * fraction)
    with open(path, "rb") as f:
        f.seek(at)
        window = f.read(1 << 20)
    nl = window.find(b"\n")
    if nl < 0:
        return None
    step_g = template.step_group(False) + 1
    m = template.rx.search(window, nl)
    while m is not None and m.group(step_g) is None:   # skip dicts of another shape
        m = template.rx.search(window, m.end())
    if m is None:
        return None
    return at + window.rfind(b"\n", 0, m.start() + 1) + 1


# The forked child reads (and folds) the first part while this process reads the second;
# this process then also folds its own part, so it takes a little less of the file.
SPLIT_FRACTION = 0.52


def scan_file(path: str, want_records: bool = False, max_line_bytes: int = 1 << 20,
              chunk: int = CHUNK, line_format: Any = None) -> Iterator[tuple[Batch, ParseStats]]:
    """Batches of a whole file in order, each with the statistics so far (the last ones are
    the totals)."""
    parser = LogParser(max_line_bytes, line_format)
    pipe = LinePipe(parser, want_records)
    for batch in read_range(path, 0, None, pipe, final=True, chunk=chunk):
        yield batch, parser.stats


def plan_split(path: str, max_line_bytes: int = 1 << 20, split_min_bytes: int = SPLIT_MIN_BYTES,
               fraction: float = SPLIT_FRACTION, fork: bool = True) -> tuple[Template, int] | None:
    """(template, offset of a template line near ``fraction`` of the file) when the file is
    big enough and (``fork``) this process may fork; else None. ``fork=False``: the other part
    is read by a started process (``Spawned``), which any process may start."""
    # fork only from a single-threaded process: a thread holding a lock at fork time (as in a
    # UI) could leave the child waiting forever
    if fork and threading.active_count() != 1 or os.path.getsize(path) < split_min_bytes:
        return None
    template = head_template(path, max_line_bytes)
    if template is None:
        return None
    split = _find_split(path, os.path.getsize(path), template, fraction)
    return None if split is None else (template, split)


def head_template(path: str, max_line_bytes: int = 1 << 20) -> Template | None:
    """The template ``plan_split`` cuts a file with: learnt from its first bytes."""
    with open(path, "rb") as f:
        head = f.read(FIRST_CHUNK)
    return learn_template(head, max_line_bytes)


class SharedOffsets:
    """How far each reading process got (bytes), in memory a forked child shares with its parent:
    the parent reports progress for both."""

    def __init__(self, slots: int = 2) -> None:
        import mmap
        self._m = mmap.mmap(-1, 8 * slots)
        self.slots = slots

    def set(self, slot: int, value: int) -> None:
        struct.pack_into("q", self._m, 8 * slot, int(value))

    def total(self) -> int:
        return sum(struct.unpack_from("q", self._m, 8 * i)[0] for i in range(self.slots))


Report = Callable[[int, int], None]   # (bytes read, bytes in all): a progress display


def fold_file(path: str, init: Callable[[], Any], step: Callable[[Any, Batch], None],
              want_records: bool = False, workers: int = 2, max_line_bytes: int = 1 << 20,
              chunk: int = CHUNK, split_min_bytes: int = SPLIT_MIN_BYTES,
              report: Report | None = None, line_format: Any = None) -> tuple[Any, ParseStats]:
    """``step(state, batch)`` for every batch of the file in order, from ``state = init()``;
    returns (state, statistics).

    With ``workers`` >= 2 a big file is cut at a template line: a forked child folds the first
    part from a fresh state (exact: that is where the file starts) and sends the state back
    (pickled); this process reads the second part meanwhile, then folds it onto that state.
    If the child fails, this process folds the first part itself. ``report(done, total)`` is
    called from this process as the reading goes (both parts counted)."""
    size = os.path.getsize(path)
    # a declared line format is read by one process (the split is planned for dict logs)
    plan = plan_split(path, max_line_bytes, split_min_bytes) if workers >= 2 and line_format is None else None
    if plan is None:
        state = init()
        stats = ParseStats()
        parser = LogParser(max_line_bytes, line_format)
        pipe = LinePipe(parser, want_records)
        progress = (lambda pos: report(pos, size)) if report is not None else None
        for batch in read_range(path, 0, None, pipe, final=True, chunk=chunk, progress=progress):
            step(state, batch)
        return state, parser.stats
    template, split = plan
    offsets = SharedOffsets(2)
    child = _Forked(lambda: _fold_range(path, 0, split, template, init, step, want_records,
                                        max_line_bytes, chunk, lambda pos: offsets.set(0, pos)))

    def own(pos: int) -> None:
        offsets.set(1, pos - split)
        if report is not None:
            report(offsets.total(), size)
    spool = tempfile.TemporaryFile(prefix="moeconsole-parse-")  # the second part waits on disk
    try:
        parser = LogParser(max_line_bytes)
        pipe = LinePipe(parser, want_records, template)
        n_own = 0
        for batch in read_range(path, split, None, pipe, final=True, chunk=chunk, progress=own):
            pickle.dump(batch, spool, protocol=pickle.HIGHEST_PROTOCOL)
            n_own += 1
        offsets.set(1, size - split)
        result = child.result(waiting=(lambda: report(offsets.total(), size)) if report is not None else None)
        processes = 2
        if result is None:   # the child failed: do its part here
            result = _fold_range(path, 0, split, template, init, step, want_records, max_line_bytes, chunk)
            processes = 1
        state, first_stats, first_records = result
        # the first part's totals shift this part's line numbers and record counts
        parser.stats.examples = [(ln + first_stats.lines, text) for ln, text in parser.stats.examples]
        spool.seek(0)
        for _ in range(n_own):
            batch = pickle.load(spool)
            for _, mark in batch.marks:
                mark["line"] = mark.get("line", 0) + first_stats.lines
                mark["records_before"] = mark.get("records_before", 0) + first_records
            step(state, batch)
        total = ParseStats(processes=processes)
        total.merge(first_stats)
        total.merge(parser.stats)
        return state, total
    finally:
        spool.close()
        child.close()


def _fold_range(path: str, start: int, end: int, template: Template, init: Callable[[], Any],
                step: Callable[[Any, Batch], None], want_records: bool, max_line_bytes: int,
                chunk: int, progress: Callable[[int], None] | None = None) -> tuple[Any, ParseStats, int]:
    state = init()
    parser = LogParser(max_line_bytes)
    pipe = LinePipe(parser, want_records, template)
    for batch in read_range(path, start, end, pipe, final=False, chunk=chunk, progress=progress):
        step(state, batch)
    return state, parser.stats, parser.records_emitted


class _Forked:
    """``fn()`` run in a forked child; ``result()`` is its return value (pickled through a
    pipe), or None if the child failed."""

    def __init__(self, fn: Callable[[], Any]):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the caller
            code = 1
            try:
                os.close(r)
                blob = pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(w, "wb") as out:
                    out.write(blob)
                code = 0
            except BaseException:  # noqa: BLE001 - the parent notices and does the work itself
                pass
            finally:
                os._exit(code)
        os.close(w)
        self.pid: int | None = pid
        self.fd = os.fdopen(r, "rb")

    def result(self, waiting: Callable[[], None] | None = None) -> Any:
        """The child's return value; ``waiting()`` every 0.1 s until it comes."""
        if waiting is not None:
            import select
            while not select.select([self.fd], [], [], 0.1)[0]:
                waiting()
        blob = self.fd.read()
        assert self.pid is not None
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        if os.waitstatus_to_exitcode(status) != 0 or not blob:
            return None
        try:
            return pickle.loads(blob)
        except Exception:  # noqa: BLE001 - a torn result: treat as a failed child
            return None

    def close(self) -> None:
        self.fd.close()
        if self.pid is not None:
            kill_child(self.pid)
            self.pid = None


