"""A past log opened to be looked at: the newest steps at once, the whole history after.

A user who opens a finished run's log (a million steps, hundreds of MB) wants to see where it
ended now, not after the whole file has been read. ``read_tail`` parses only the last bytes of
the file (the newest steps, in a fraction of a second); ``scan_history`` then reads the whole
file through the ingest pipe (``moeconsole.runner.ingest.pipe``), chunk by chunk, handing each batch to the
caller as NDJSON lines (the exact text ``metrics.jsonl`` holds) plus numpy columns for the
charts, so memory stays bounded whatever the file's length. UI-free: ``moeconsole.console.foreign`` runs it in a thread and shows progress.

Step-less records (Hugging Face dicts) are numbered by the parser from the start of what it
reads: in the tail they count from the tail's first record, until the history has been read.
"""
from __future__ import annotations

import json
import os
import pickle
import shutil
import sys
import tempfile
import threading
from array import array
from contextlib import closing
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator

from moeconsole.runner.collector import collector_paused, paused_each
from moeconsole.runner.ingest.events import LogEvent
from moeconsole.runner.ingest.linebuf import PartialLine
from moeconsole.runner.ingest.parser import MARK, RECORD, LogParser, ParseStats
from moeconsole.runner.rundir import jsonio, seriesfile
from moeconsole.runner.rundir.jsonio import dumps

# the started process's side that needs no numpy (a UI starts it before its first frame) lives there
from moeconsole.runner.ingest.spawned import (HISTORY_CHUNK, HISTORY_SPLIT, MAX_SPLIT, MIN_SPLIT,  # noqa: F401
                                              SPAWN_BYTES, UI_LEAD_BYTES, EarlyPart, split_fraction, start_part)

if TYPE_CHECKING:
    from moeconsole.runner.ingest.batch import Batch

TAIL_BYTES = 512 << 10
# A log opened to be looked at is first read from its last FIRST_TAIL_BYTES (a few ms of parsing:
# the newest step and max steps for the status line, a chart's width of newest points), so its
# screen paints at once; then from its last TAIL_BYTES (more points while the history is read,
# for a log bigger than WIDEN_MIN_BYTES, whose history takes long enough for it to be worth
# it), then whole. ``moeconsole.console.foreign.Import`` reads them in that order.
FIRST_TAIL_BYTES = 64 << 10
WIDEN_MIN_BYTES = 4 * TAIL_BYTES


def tail_start(path: str, max_bytes: int) -> int:
    """The offset of the first line that starts in the last ``max_bytes`` of a log (its size when
    none does), as ``read_tail`` reads from."""
    size = os.path.getsize(path)
    start = max(0, size - max_bytes)
    if not start:
        return 0
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(size - start)
    nl = data.find(b"\n")
    return size if nl < 0 else start + nl + 1


def read_tail(path: str, max_bytes: int = TAIL_BYTES, line_format: Any = None) -> tuple[list[dict], list[dict], int]:
    """(records, marks, offset read from) of the last ``max_bytes`` of a log, from the first line
    that starts in them. ``line_format``: a declared line format (``moeconsole.runner.ingest.userformat``)."""
    size = os.path.getsize(path)
    start = tail_start(path, max_bytes)
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(size - start)
    events = read_events(LogParser(line_format=line_format), [data])
    return ([o for k, o in events if k == RECORD], [o for k, o in events if k == MARK], start)


def tail_book(path: str, max_bytes: int = TAIL_BYTES, line_format: Any = None) -> tuple[seriesfile.SeriesBook, int]:
    """(the chart book of a log's last ``max_bytes``, the offset it was read from): the book the
    line parser's records and evaluations of ``read_tail`` give, read as the history is (the
    template's rows as columns, ``scan_history``'s batches): a log's widened window (512 KiB,
    1,400-2,000 ms-swift steps) costs a tenth of the line parser's time. Imports numpy: for a
    reading thread, not for a screen's first frame."""
    from moeconsole.runner.ingest.bulk import read_range
    from moeconsole.runner.ingest.pipe import LinePipe
    import numpy as np
    book = seriesfile.SeriesBook()
    start = tail_start(path, max_bytes)
    pipe = LinePipe(LogParser(line_format=line_format), json_lines=True, columns=True)
    marks: list[dict] = []
    for batch in read_range(path, start, None, pipe, final=True, chunk=HISTORY_CHUNK):
        if len(batch):
            blocks = batch.other() if batch.other is not None else None
            _feed_book(book, ("rows", (np.asarray(batch.steps, dtype=np.float64), batch.values, batch.present,
                                       last_record(batch) or {}, batch.records if blocks is None else None, blocks)))
        marks += (m for _, m in batch.marks if m.get("kind") == "eval")
    for mark in marks:   # as the screen's first window feeds them (``Import._read_tail``): after the records
        book.feed_eval(mark)
    return book, start


def read_events(parser: LogParser, chunks: Iterable[bytes], final: bool = True) -> list[LogEvent]:
    """A log's bytes, cut anywhere, read by the line parser alone (no template, no columns: a
    short read such as the newest steps of a log opened imports nothing numeric): the records
    and marks of its lines in file order; ``final``: the end of the log (the last line is read
    without its newline)."""
    partial = PartialLine(parser.max_line_bytes)
    out: list[LogEvent] = []
    for data in chunks:
        pos = 0
        if partial.waiting:
            nl = data.find(b"\n")
            if nl < 0:
                partial.append(data)
                continue
            out += parser.read_completed(*partial.complete(data[:nl]))
            pos = nl + 1
        last = data.rfind(b"\n", pos)
        if last >= pos:
            for line in data[pos:last].split(b"\n"):
                out += parser.process_line(line)
            pos = last + 1
        partial.append(data[pos:])
    if final:
        if partial.waiting:
            out += parser.read_completed(*partial.complete())
        out += parser.end_of_input()
    return out


def record_lines(batch: "Batch") -> bytes:
    """A batch's records as NDJSON (``{"v": 1, ...}`` per line): template rows are their line
    already, the parser's records are encoded like ``jsonio.dumps``; each stamped with the
    offset of its line in the log (``Batch.at``: ``log_at``, as the runner writes it)."""
    lines = batch.records or []
    if not all(map(bytes.__instancecheck__, lines)):   # the usual batch is all lines: one C-level check, no re-encoding
        lines = [r if isinstance(r, bytes) else (dumps({"v": 1, **r}) + "\n").encode() for r in lines]
    if batch.at is not None:
        lines = seriesfile.with_log_at_each(lines, batch.at.tolist())
    return b"".join(lines)


def last_record(batch: "Batch") -> dict | None:
    """The batch's newest record as a dict (one JSON load per batch)."""
    if not batch.records:
        return None
    last = batch.records[-1]
    if isinstance(last, bytes):
        rec = json.loads(last)
        rec.pop("v", None)
        return rec
    return dict(last)


def scan_history(path: str, on_batch: Callable[["Batch"], None], *, progress: Callable[[int], None] | None = None,
                 stop: threading.Event | None = None, line_format: Any = None,
                 chunk: int = HISTORY_CHUNK) -> ParseStats:
    """Every batch of the log in file order (records as NDJSON lines or dicts, their columns,
    marks, ``other``: their other numbers, mostly as columns); ``progress(offset)`` as the
    reading goes; ``stop`` ends it early."""
    from moeconsole.runner.ingest.bulk import read_range   # numpy: only once the history is read
    from moeconsole.runner.ingest.pipe import LinePipe
    parser = LogParser(line_format=line_format)
    pipe = LinePipe(parser, json_lines=True, columns=True)
    with closing(paused_each(read_range(path, 0, None, pipe, final=True, chunk=chunk, progress=progress))) as batches:
        for batch in batches:   # each block read and folded with the collector paused (``read_history``)
            on_batch(batch)
            if stop is not None and stop.is_set():
                break
    return parser.stats


# ----------------------------------------------------------------------------- the import's fold

class HistoryFold:
    """What reading a log's history builds: ``metrics`` (NDJSON, appended), ``evals``, the chart
    book, the (step, grad norm) of every record as arrays (for checkpoint verdicts; a million
    steps as Python tuples would cost ~100 MiB) and the record count. ``feed`` takes the batches
    in file order.

    A fold of a file's later part, made while the earlier part is read by another process, has a
    ``spool``: its chart inputs go there as frames (``_write_frame``) instead of into its book, to
    be fed after the earlier part's (``replay``: by the other process as they come, or here),
    each with how far its rows files are written then (``replay`` copies them in as it goes)."""

    def __init__(self, metrics: Path, evals: Path, spool: Path | None = None) -> None:
        self.metrics, self.evals = Path(metrics), Path(evals)
        self.book = seriesfile.SeriesBook()
        self.steps, self.grads = array("q"), array("d")
        self.records = 0
        self.spool = spool
        self._spool_out: IO[bytes] | None = open(spool, "wb") if spool is not None else None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_spool_out": None}   # another process's fold is data

    def feed(self, batch: "Batch") -> None:
        from moeconsole.runner.ingest.records import eval_record
        if len(batch):
            import numpy as np   # only on the reading thread: the screen opens before it
            jsonio.append_bytes(self.metrics, record_lines(batch), line=True)
            self.records += len(batch)
            ok = batch.present["grad_norm"]
            # the arrays' own bytes (the same 8-byte values): no Python number per row
            self.steps.frombytes(np.asarray(batch.steps, dtype=np.int64)[ok].tobytes())
            self.grads.frombytes(np.asarray(batch.values["grad_norm"], dtype=np.float64)[ok].tobytes())
            blocks = batch.other() if batch.other is not None else None
            item = (np.asarray(batch.steps, dtype=np.float64), batch.values, batch.present,
                    last_record(batch) or {}, batch.records if blocks is None else None, blocks)
            self._put(("rows", item))
        evals = [{"v": jsonio.SCHEMA_VERSION, **eval_record(m)} for _, m in batch.marks if m.get("kind") == "eval"]
        if evals:
            jsonio.append_bytes(self.evals, "".join(jsonio.dumps(e) + "\n" for e in evals).encode(), line=True)
            self._put(("evals", evals))

    def _put(self, item: tuple) -> None:
        if self._spool_out is not None:   # the rows before it are written: how far, with it
            written = tuple(_size(p) for p in (self.metrics, self.evals))
            _write_frame(self._spool_out, pickle.dumps((item, written), protocol=pickle.HIGHEST_PROTOCOL))
        else:
            _feed_book(self.book, item)

    def end_spool(self) -> None:
        """The later part is read: the spool's last frame (empty) says so."""
        if self._spool_out is not None:
            _write_frame(self._spool_out, b"")
            self._spool_out.close()
            self._spool_out = None

    def replay(self, spool: Path, wait: Callable[[], None] | None = None, later: "HistoryFold | None" = None) -> None:
        """Feed this book the chart inputs of a later part's spool, to its last frame; ``wait()``
        when the next frame is not written yet (the later part still being read): else the
        spool must be complete. ``later``: that part's fold, whose rows are appended to this
        fold's as far as each frame says they are written, so they are all in when its last
        frame is (while the later part is still read, the process that reads it does not wait
        for the copy at its end: on a 400 MB log, 0.1-0.3 s the history waited on)."""
        copied = [0, 0]
        with open(spool, "rb") as f:
            for blob in _read_frames(f, wait):
                item, written = pickle.loads(blob)
                _feed_book(self.book, item)
                if later is not None:
                    for i, (mine, theirs) in enumerate(((self.metrics, later.metrics), (self.evals, later.evals))):
                        if written[i] > copied[i]:
                            _append_range(mine, theirs, copied[i], written[i])
                            copied[i] = written[i]

    def append_rows(self, later: "HistoryFold") -> None:
        """A later part's metrics and evals lines after this fold's (all of them)."""
        for mine, theirs in ((self.metrics, later.metrics), (self.evals, later.evals)):
            _append_range(mine, theirs, 0, _size(theirs))

    def add_counts(self, later: "HistoryFold") -> None:
        self.steps.extend(later.steps)
        self.grads.extend(later.grads)
        self.records += later.records


def _size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except FileNotFoundError:
        return 0


def _append_range(mine: Path, theirs: Path, start: int, end: int) -> None:
    """Bytes [start, end) of ``theirs`` appended to ``mine``: copied by the kernel
    (``copy_file_range``, which refuses a file opened for appending: the lines are written at
    the file's end, the fold its only writer), else through this process. The first range of a
    file (``start`` 0) gives a cut last line of ``mine`` its newline first."""
    n = end - start
    if n <= 0:
        return
    if start == 0:
        jsonio.append_bytes(mine, b"", line=True)
    src = os.open(theirs, os.O_RDONLY)
    try:
        dst = os.open(mine, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            at = os.fstat(dst).st_size
            done = 0
            while done < n:
                try:
                    k = os.copy_file_range(src, dst, n - done, start + done, at + done)
                except OSError:
                    k = 0
                if k <= 0:   # no in-kernel copy here: through this process
                    data = os.pread(src, min(8 << 20, n - done), start + done)
                    if not data:
                        break
                    k = os.pwrite(dst, data, at + done)
                done += k
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _write_frame(out: IO[bytes], blob: bytes) -> None:
    out.write(len(blob).to_bytes(8, "little") + blob)
    out.flush()


def _read_frames(f: IO[bytes], wait: Callable[[], None] | None) -> Iterator[bytes]:
    """The frames of a spool up to its empty last one; ``wait()`` while it is still written."""
    pos = 0
    while True:
        f.seek(pos)
        head = f.read(8)
        blob = b""
        if len(head) == 8:
            n = int.from_bytes(head, "little")
            if n == 0:
                return
            blob = f.read(n)
            if len(blob) == n:
                pos += 8 + n
                yield blob
                continue
        if wait is None:
            raise EOFError("the spool ends before its last frame")
        wait()


def _feed_book(book: seriesfile.SeriesBook, item: tuple) -> None:
    kind, data = item
    if kind == "evals":
        for e in data:
            book.feed_eval(e)
        return
    steps, values, present, last, records, blocks = data
    book.feed_arrays(steps, values, present, last, records=records,
                     other=(lambda: blocks) if blocks is not None else None)


def read_history(path: str, fold: HistoryFold, *, progress: Callable[[int], None] | None = None,
                 stop: threading.Event | None = None, line_format: Any = None, chunk: int = HISTORY_CHUNK,
                 workers: int | None = None, split_min_bytes: int | None = None,
                 early: EarlyPart | None = None) -> tuple[HistoryFold, ParseStats]:
    """The whole log folded into ``fold`` (which must be empty, without a spool), in file order;
    returns the fold that holds it all (``fold``, or the one the other process made) and the
    statistics. ``progress(bytes read)`` as the reading goes (both parts); ``stop`` ends it early.

    ``workers`` (default: 2 when ``bulk.second_core_free``): with 2, a big file without a
    declared line format is cut at a template line (``bulk.plan_split``). A started process
    (``bulk.Spawned``: this one may have threads, as a UI) reads and folds the first part exactly
    as one process would, while this one reads the second part from that line, writing its rows
    to a file beside and its chart inputs to a spool; the other process feeds them to its book
    as they come, then appends the rows (``_part_main``). If the other process fails this one
    reads the first part itself and does the same.

    ``early``: that process already started (``start_part``, with this ``chunk``): its plan is
    taken (the decision to read in two was made when it started); with a ``line_format`` (which
    it does not read) it is ended and this process reads the whole log.

    The cyclic collector is paused while each block is read and folded (``paused_each``): the
    read makes a tuple per row and frees it a block later, none in a cycle, and the passes the
    collector ran over them were about a tenth of the read's CPU. It is the process's, not the
    thread's: between two blocks it is on again, so a UI that reads in a thread keeps its own
    collection (the started process pauses it for its whole part: ``_part_main``)."""
    from moeconsole.runner.ingest import bulk   # numpy: only once the history is read
    plan = None
    if early is not None and line_format is not None:
        early.close()
        early = None
    if early is not None:
        at, line = early.split(stop)
        template = bulk.Template.learn(line) if at else None   # the template the cut was found by
        if template is None:
            early.close()
        else:
            plan, chunk = (template, at), early.chunk
    else:
        from moeconsole.runner.ingest.spawned import least_split_bytes, split_worth
        size = os.path.getsize(path)
        if split_worth(size, line_format=line_format, workers=workers, split_min_bytes=split_min_bytes) and (
                workers is not None or bulk.second_core_free()):
            plan = bulk.plan_split(path, split_min_bytes=least_split_bytes(split_min_bytes),
                                   fraction=split_fraction(size), fork=False)
    if plan is None:
        stats = scan_history(path, fold.feed, progress=progress, stop=stop, line_format=line_format, chunk=chunk)
        return fold, stats
    template, split = plan
    child: bulk.Spawned | None = None
    if early is not None:
        work, child = early.work, early.child
    else:   # beside the run's files: the rows are copied into them in the kernel at the end
        work = Path(tempfile.mkdtemp(prefix=".history-", dir=fold.metrics.parent))
    later = HistoryFold(work / "metrics.jsonl", work / "evals.jsonl", spool=work / "spool")
    try:
        if child is None:
            (work / "progress").write_bytes(bytes(8))
            child = bulk.Spawned("moeconsole.runner.ingest.history", "part", path, str(split), str(chunk),
                                 str(fold.metrics), str(fold.evals), str(work), str(os.getpid()))
        fd = os.open(work / "progress", os.O_RDONLY)
        try:
            def first_done() -> int:
                return int.from_bytes(os.pread(fd, 8, 0), "little")

            def own(pos: int) -> None:
                if progress is not None:
                    progress(first_done() + pos - split)
            parser = LogParser()
            pipe = bulk.LinePipe(parser, json_lines=True, columns=True, template=template)
            with closing(paused_each(bulk.read_range(path, split, None, pipe, final=True, chunk=chunk,
                                                     progress=own))) as batches:
                for batch in batches:
                    later.feed(batch)
                    if stop is not None and stop.is_set():
                        return fold, parser.stats
            later.end_spool()
            size = os.path.getsize(path)

            def waiting() -> bool:
                if progress is not None:
                    progress(first_done() + size - split)
                return not (stop is not None and stop.is_set())
            ok = child.wait(waiting)
        finally:
            os.close(fd)
        if stop is not None and stop.is_set():
            return fold, parser.stats
        first: HistoryFold | None = None
        first_stats = ParseStats()
        if ok:
            try:
                with open(work / "result.pickle", "rb") as f:
                    first, first_stats = pickle.load(f)
                if first is not None and (first.metrics, first.evals) != (fold.metrics, fold.evals):
                    _move_rows(first, fold)   # a part folded before the fold's files were known
            except Exception:  # noqa: BLE001 - a torn result: read the part here
                first = None
        processes = 2
        if first is None:   # the other process failed: do its work here
            processes = 1
            for p in (fold.metrics, fold.evals):
                p.unlink(missing_ok=True)
            first, first_stats = _read_part(path, split, chunk, fold.metrics, fold.evals)
            first.replay(work / "spool")
            first.append_rows(later)
        first.add_counts(later)
        parser.stats.examples = [(ln + first_stats.lines, text) for ln, text in parser.stats.examples]
        total = ParseStats(processes=processes)
        total.merge(first_stats)
        total.merge(parser.stats)
        return first, total
    finally:
        if child is not None:
            child.close()
        later.end_spool()
        shutil.rmtree(work, ignore_errors=True)


def _move_rows(first: HistoryFold, fold: HistoryFold) -> None:
    """The rows of ``first`` (the whole log's, in files of its own) made the fold's files: a
    rename, else (another file system) a copy; a file ``first`` never wrote is not made."""
    for mine, theirs in ((first.metrics, fold.metrics), (first.evals, fold.evals)):
        theirs.unlink(missing_ok=True)
        if not mine.exists():
            continue
        try:
            os.replace(mine, theirs)
        except OSError:
            shutil.copyfile(mine, theirs)
    first.metrics, first.evals = fold.metrics, fold.evals


def _read_part(path: str, end: int, chunk: int, metrics: Path, evals: Path,
               progress: Callable[[int], None] | None = None) -> tuple[HistoryFold, ParseStats]:
    """The fold of the bytes [0, end) of a log, read as one process reads it from the start."""
    from moeconsole.runner.ingest.bulk import LinePipe, read_range
    fold = HistoryFold(metrics, evals)
    parser = LogParser()
    pipe = LinePipe(parser, json_lines=True, columns=True)
    with closing(paused_each(read_range(path, 0, end, pipe, final=False, chunk=chunk, progress=progress))) as batches:
        for batch in batches:
            fold.feed(batch)
    return fold, parser.stats


def _part_main(argv: list[str]) -> int:
    """``python -m moeconsole.runner.ingest.history part PATH END CHUNK METRICS EVALS DIR PPID``:
    the first part of a log folded (``read_history``'s other process), then the second part's
    chart inputs from DIR/spool fed after it as they come and its rows (DIR/metrics.jsonl,
    DIR/evals.jsonl) appended as far as each frame says they are written; how far it read goes into DIR/progress, the fold into
    DIR/result.pickle. It ends itself when the process that started it is gone. END
    ``plan:FRACTION,...:MIN_BYTES`` (``EarlyPart``): the split planned here, at the first of the
    fractions near which a line of the template stands (a log whose dicts change shape after the
    first is cut at the next), its offset into DIR/plan."""
    with collector_paused():   # as the reading process's (``read_history``)
        return _part(*argv[1:])


def _part(path: str, end: str, chunk: str, metrics: str, evals: str, work: str, ppid: str) -> int:
    import time
    fd = os.open(os.path.join(work, "progress"), os.O_WRONLY)

    def alive() -> None:
        if os.getppid() != int(ppid):
            os._exit(3)

    def progress(pos: int) -> None:
        alive()
        os.pwrite(fd, int(pos).to_bytes(8, "little"), 0)

    def wait() -> None:
        alive()
        time.sleep(0.005)
    if end.startswith("plan:"):   # started early (``EarlyPart``): the split is planned here
        from moeconsole.runner.ingest.bulk import plan_split
        _, fractions, least = end.split(":")
        plan = None
        for fraction in fractions.split(","):
            plan = plan_split(path, split_min_bytes=int(least), fraction=float(fraction), fork=False)
            if plan is not None:
                break
        end = str(plan[1] if plan is not None else 0)
        tmp = os.path.join(work, "plan.tmp")
        with open(tmp, "wb") as f:   # the offset, then the line the template was learnt from
            f.write(int(end).to_bytes(8, "little") + (plan[0].line if plan is not None else b""))
        os.replace(tmp, os.path.join(work, "plan"))
        if plan is None:
            return 0
    fold, stats = _read_part(path, int(end), int(chunk), Path(metrics), Path(evals), progress)
    progress(int(end))
    fold.replay(Path(work) / "spool", wait, later=HistoryFold(Path(work) / "metrics.jsonl", Path(work) / "evals.jsonl"))
    tmp = os.path.join(work, "result.pickle.tmp")
    with open(tmp, "wb") as f:
        pickle.dump((fold, stats), f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, os.path.join(work, "result.pickle"))
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] != ["part"] or len(sys.argv) != 9:
        print("usage: python -m moeconsole.runner.ingest.history part PATH END CHUNK METRICS EVALS DIR PPID",
              file=sys.stderr)
        sys.exit(2)
    from moeconsole.runner.ingest.history import _part_main as main   # this module's classes, not __main__'s
    code = main(sys.argv[1:])
    # the result is written (or the part refused): the reading process waits on this exit, not on
    # the interpreter freeing a million steps' objects (every file of the part is closed)
    os._exit(code)
