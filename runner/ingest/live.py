"""Live log ingestion with the bulk engine: the runner's reader of ``train.log``.

The runner reads the log in slices of arbitrary bytes as the training writes it. Each slice
goes through the same ``ChunkScanner`` that ``parse --json`` uses (a learned template over whole
chunks of complete lines, the line parser for every other line), so a backlog of millions of
lines is caught up at the bulk engine's speed instead of line by line. An unfinished last line
waits in the parser, exactly as with ``LogParser.feed_events``; the events (records and marks,
in file order) are the same as the line parser's, which the tests check.
"""
from __future__ import annotations

import json

from runner.ingest.bulk import Batch, ChunkScanner, batch_from_events
from runner.ingest.parser import MARK, RECORD, Event, LogParser


class JsonRecord(dict):
    """A record read from a template row, with that row's JSON line (``{"v":1,...}\n``, the
    exact text ``jsonio.dumps`` writes for it): the runner writes the line instead of encoding
    the dict again."""

    __slots__ = ("raw",)
    raw: bytes


class LiveReader:
    def __init__(self, parser: LogParser | None = None) -> None:
        self.parser = parser or LogParser()
        # Template rows come out as their JSON lines (formatted from the captured text) with
        # their values as columns: the runner feeds its monitors and charts from those, never
        # building a dict per row (``feed`` loads the lines back as dicts, for comparison).
        self.scanner = ChunkScanner(self.parser, want_records=True, json_lines=True, keep_dicts=True,
                                    columns=True)

    def feed_batches(self, data: bytes) -> list[Batch]:
        """The same records and marks as ``feed``, in file order, as batches: ``records`` holds
        a template row's JSON line (bytes) or the parser's dict, and ``steps``/``values``/
        ``present`` hold every record's numbers (no dict is built for a template row)."""
        parser = self.parser
        out: list[Batch] = []
        pos = 0
        if parser.has_partial:
            nl = data.find(b"\n")
            pos = len(data) if nl < 0 else nl + 1
            out.append(batch_from_events(parser.feed_events(data[:pos]), True))
        last = data.rfind(b"\n", pos)
        if last >= pos:
            buf = b"\n" + data[pos:last + 1]
            out.append(self.scanner.scan(buf, len(buf)))
            pos = last + 1
        tail: list[Event] = []
        if pos < len(data):
            tail.extend(parser.feed_events(data[pos:]))
        tail.extend(parser.release_events())
        out.append(batch_from_events(tail, True))
        return [b for b in out if len(b) or b.marks]

    def feed(self, data: bytes) -> list[Event]:
        """Events for the lines this slice completes (and held records now due)."""
        parser = self.parser
        events: list[Event] = []
        pos = 0
        if parser.has_partial:
            # finish the line the previous slice left open, through the parser that holds it
            nl = data.find(b"\n")
            pos = len(data) if nl < 0 else nl + 1
            events.extend(parser.feed_events(data[:pos]))
        last = data.rfind(b"\n", pos)
        if last >= pos:
            buf = b"\n" + data[pos:last + 1]
            events.extend(_events_of(self.scanner.scan(buf, len(buf))))
            pos = last + 1
        if pos < len(data):
            events.extend(parser.feed_events(data[pos:]))  # an unfinished line: kept for later
        events.extend(parser.release_events())
        return events

    def reset_partial(self) -> None:
        self.parser.reset_partial()


def _records(objs: list) -> list[dict]:
    """Template rows (JSON lines) loaded in one call of the JSON reader; the parser's dicts as
    they are; order kept."""
    lines = [o for o in objs if not isinstance(o, dict)]
    if not lines:
        return objs
    loaded = iter(json.loads(b"[" + b",".join(lines) + b"]"))
    out = []
    for o in objs:
        if isinstance(o, dict):
            out.append(o)
        else:
            rec = JsonRecord(next(loaded))
            del rec["v"]
            rec.raw = o
            out.append(rec)
    return out


def _events_of(batch: Batch) -> list[Event]:
    recs = _records(batch.records or [])
    if not batch.marks:
        return [(RECORD, r) for r in recs]
    out: list[Event] = []
    i = 0
    for before, mark in batch.marks:
        out.extend((RECORD, r) for r in recs[i:before])
        i = max(i, before)
        out.append((MARK, mark))
    out.extend((RECORD, r) for r in recs[i:])
    return out
