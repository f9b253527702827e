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
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable

from moeconsole.runner.ingest.events import LogEvent
from moeconsole.runner.ingest.linebuf import PartialLine
from moeconsole.runner.ingest.parser import MARK, RECORD, LogParser, ParseStats
from moeconsole.runner.rundir.jsonio import dumps

if TYPE_CHECKING:
    from moeconsole.runner.ingest.batch import Batch

TAIL_BYTES = 512 << 10
# The history is read in chunks this big: a smaller chunk than ``parse``'s keeps the memory of
# a UI that reads in the background low (each chunk's rows exist at once), at a few % of speed.
HISTORY_CHUNK = 2 << 20


def read_tail(path: str, max_bytes: int = TAIL_BYTES, line_format: Any = None) -> tuple[list[dict], list[dict], int]:
    """(records, marks, offset read from) of the last ``max_bytes`` of a log, from the first line
    that starts in them. ``line_format``: a declared line format (``moeconsole.runner.ingest.userformat``)."""
    size = os.path.getsize(path)
    start = max(0, size - max_bytes)
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(size - start)
    if start:
        nl = data.find(b"\n")
        data = data[nl + 1:] if nl >= 0 else b""
        start = size - len(data)
    events = read_events(LogParser(line_format=line_format), [data])
    return ([o for k, o in events if k == RECORD], [o for k, o in events if k == MARK], start)


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
    already, the parser's records are encoded like ``jsonio.dumps``."""
    recs = batch.records or []
    try:
        return b"".join(recs)
    except TypeError:
        return b"".join(r if isinstance(r, bytes) else (dumps({"v": 1, **r}) + "\n").encode() for r in recs)


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
    for batch in read_range(path, 0, None, pipe, final=True, chunk=chunk, progress=progress):
        on_batch(batch)
        if stop is not None and stop.is_set():
            break
    return parser.stats
