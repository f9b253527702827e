"""The last stage of ingest, records -> columns: a batch of a log's records, in file order.

Both strategies that read lines (``moeconsole.runner.ingest.template`` and the line parser) hand their
records to one ``BatchBuilder`` in the order their lines stand in the file: template rows as
a range of numpy columns they already hold, the parser's records as dicts, marks at the count
of records before them. ``build`` makes the batch once, at the end of a read: the columns of
every record (``moeconsole.runner.core.columns``), the records themselves when wanted, the marks, and
``max_steps`` of the last record that had one. A read that is all template rows (the usual
case) or all parser records costs no reordering at all.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np

from moeconsole.runner.core.columns import COLUMN_FIELDS, records_to_columns
from moeconsole.runner.ingest.events import MARK, RECORD, LogEvent
from moeconsole.runner.ingest.records import step_numbered
from moeconsole.runner.rundir.jsonio import dumps



@dataclass
class Batch:
    """Metric records of one read as columns (plus marks at record positions)."""
    steps: np.ndarray
    values: dict[str, np.ndarray]
    present: dict[str, np.ndarray]
    max_steps: int | None = None                        # of the last record that had one
    marks: list[tuple[int, dict]] = field(default_factory=list)   # (records before it, mark)
    records: list[Any] | None = None   # records mode only: dicts, or (NDJSON mode) a template row's JSON line
    # records mode: the records' numbers that are no column, block by block
    # (``moeconsole.runner.rundir.seriesfile.OtherBlock``: template rows as columns, the parser's
    # dicts), computed when called; None from it when a block cannot give them (read the records)
    other: Callable[[], list | None] | None = None
    # records mode: the log's byte offset of the line that completed each record (-1: unknown,
    # a record the end of the log released); None when the reader did not track offsets
    at: np.ndarray | None = None
    # the newest record's step is a log entry's number (``records.step_numbered``); None: no record
    numbered: bool | None = None

    def __len__(self) -> int:
        return len(self.steps)

    def __getstate__(self) -> dict:
        # ``other`` reads the template rows of this process (a spooled or forked batch is data)
        return {**self.__dict__, "other": None}


class RowColumns(Protocol):
    """Template rows as columns (``moeconsole.runner.ingest.template.Claim``)."""
    steps: Any                      # int64 array, or the lazy step column of NDJSON mode
    values: dict[str, np.ndarray]
    present: dict[str, np.ndarray]
    max_steps: int | None           # of the last row
    line_at: np.ndarray | None      # the log's byte offset of each row's line (None: not located)

    def records(self) -> list[Any]: ...

    def other_block(self, lo: int, hi: int) -> Any: ...


class BatchBuilder:
    """Records and marks in file order -> one ``Batch``."""

    def __init__(self, want_records: bool) -> None:
        self.want_records = want_records
        self._claims: list[RowColumns] = []
        self._pieces: list[list[int]] = []   # [claim index or -1 (parser records), start, stop]
        self._dicts: list[dict] = []          # the parser's records
        self._out: list[Any] = []             # ... as the batch holds them (a dict or its JSON line)
        self._marks: list[tuple[int, dict]] = []
        self._max: int | None = None
        self.n = 0                            # records so far
        self._at: list[Any] = []              # each piece's line offsets, in file order (``Batch.at``)
        self._at_known = True                 # every piece had its offsets
        self._numbered: bool | None = None    # ``Batch.numbered`` of what was added

    @property
    def parser_records(self) -> int:
        return len(self._dicts)

    def add_rows(self, rows: RowColumns, lo: int, hi: int) -> None:
        """Template rows ``lo..hi-1`` of ``rows``, after everything added so far."""
        if hi <= lo:
            return
        if rows.line_at is None:
            self._at_known = False
        else:
            self._at.append(rows.line_at[lo:hi])
        if not self._claims or self._claims[-1] is not rows:
            self._claims.append(rows)
        c = len(self._claims) - 1
        last = self._pieces[-1] if self._pieces else None
        if last is not None and last[0] == c and last[2] == lo:
            last[2] = hi
        else:
            self._pieces.append([c, lo, hi])
        self.n += hi - lo
        self._numbered = False   # a template row has its step on its line
        if hi == len(rows.steps) and rows.max_steps is not None:
            self._max = rows.max_steps

    def add_events(self, events: list[tuple[str, dict]], as_lines: bool = False,
                   at: int | list[int] | None = None) -> None:
        """The parser's records and marks, in order. ``as_lines``: the batch holds these
        records as their NDJSON lines (the template rows around them are lines too). ``at``:
        the log's byte offset of the line each record came from (one for all, or one per
        record; None or -1: not known)."""
        k = 0
        for kind, obj in events:
            if kind != RECORD:
                self._marks.append((self.n, obj))
                continue
            off = at[k] if isinstance(at, list) else at
            k += 1
            self._at.append((-1 if off is None else off,))
            i = len(self._dicts)
            self._dicts.append(obj)
            self._numbered = step_numbered(obj)
            self._out.append((dumps({"v": 1, **obj}) + "\n").encode() if as_lines else obj)
            last = self._pieces[-1] if self._pieces else None
            if last is not None and last[0] == -1 and last[2] == i:
                last[2] = i + 1
            else:
                self._pieces.append([-1, i, i + 1])
            self.n += 1
            if obj.get("max_steps") is not None:
                self._max = obj["max_steps"]

    def _offsets(self) -> np.ndarray | None:
        """``Batch.at``: every record's line offset, in the order the records were added."""
        if not self.want_records or not self._at_known:
            return None
        if len(self._at) == 1 and isinstance(self._at[0], np.ndarray):
            return self._at[0]
        return np.concatenate([np.asarray(a, dtype=np.int64) for a in self._at]) if self._at \
            else np.zeros(0, dtype=np.int64)

    def build(self) -> Batch:
        batch = self._build()
        batch.numbered = self._numbered
        return batch

    def _build(self) -> Batch:
        want = self.want_records
        if len(self._pieces) == 1 and self._pieces[0][0] >= 0 and self._pieces[0][1] == 0 and \
                self._pieces[0][2] == len(self._claims[0].steps):
            rows = self._claims[0]   # the usual read: one template claim, whole
            return Batch(rows.steps, rows.values, rows.present, self._max, self._marks,
                         rows.records() if want else None, self._other() if want else None, self._offsets())
        if not self._claims:
            steps, values, present = records_to_columns(self._dicts)
            return Batch(steps, values, present, self._max, self._marks, self._out if want else None,
                         self._other() if want else None, self._offsets())
        # template rows and parser records interleaved: one gather over both
        parts_steps = [np.asarray(c.steps, dtype=np.int64) for c in self._claims]
        parts_values = {f: [c.values[f] for c in self._claims] for f in COLUMN_FIELDS}
        parts_present = {f: [c.present[f] for c in self._claims] for f in COLUMN_FIELDS}
        offsets = np.cumsum([0] + [len(s) for s in parts_steps]).tolist()
        if self._dicts:
            g_steps, g_values, g_present = records_to_columns(self._dicts)
            parts_steps.append(g_steps)
            for f in COLUMN_FIELDS:
                parts_values[f].append(g_values[f])
                parts_present[f].append(g_present[f])
        base_g = offsets[-1]
        order = np.concatenate([np.arange(offsets[c] + lo, offsets[c] + hi) if c >= 0
                                else np.arange(base_g + lo, base_g + hi) for c, lo, hi in self._pieces])
        steps = np.concatenate(parts_steps)[order]
        values = {f: np.concatenate(parts_values[f])[order] for f in COLUMN_FIELDS}
        present = {f: np.concatenate(parts_present[f])[order] for f in COLUMN_FIELDS}
        records = None
        if want:   # the pieces' records in order (what ``order`` gathers), a slice each
            records = []
            for c, lo, hi in self._pieces:
                records += self._claims[c].records()[lo:hi] if c >= 0 else self._out[lo:hi]
        return Batch(steps, values, present, self._max, self._marks, records, self._other() if want else None,
                     self._offsets())

    def _other(self) -> Callable[[], list | None]:
        """``Batch.other`` of what was added: a block per piece, in file order."""
        claims, pieces, dicts = self._claims, [tuple(p) for p in self._pieces], self._dicts

        def blocks() -> list | None:
            out = []
            for c, lo, hi in pieces:
                block = dicts[lo:hi] if c < 0 else claims[c].other_block(lo, hi)
                if block is None:
                    return None
                out.append(block)
            return out
        return blocks


def batch_from_events(events: list[tuple[str, dict]], want_records: bool,
                      at: int | list[int] | None = None) -> Batch:
    """A batch from LogParser events (records and marks in file order); ``at``: the log's
    byte offset of the line they (or each) came from."""
    out = BatchBuilder(want_records)
    out.add_events(events, at=at)
    return out.build()


def concat_batches(batches: list[Batch]) -> Batch:
    """Batches read one after the other, as one."""
    if len(batches) == 1:
        return batches[0]
    steps = np.concatenate([b.steps for b in batches])
    values = {f: np.concatenate([b.values[f] for b in batches]) for f in COLUMN_FIELDS}
    present = {f: np.concatenate([b.present[f] for b in batches]) for f in COLUMN_FIELDS}
    marks: list[tuple[int, dict]] = []
    off, mx = 0, None
    recs: list | None = [] if all(b.records is not None for b in batches) else None
    for b in batches:
        marks.extend((i + off, m) for i, m in b.marks)
        off += len(b)
        if b.max_steps is not None:
            mx = b.max_steps
        if recs is not None:
            recs.extend(b.records or [])
    at = np.concatenate([b.at for b in batches]) if all(b.at is not None for b in batches) else None
    numbered = next((b.numbered for b in reversed(batches) if b.numbered is not None), None)
    return Batch(steps, values, present, mx, marks, recs, at=at, numbered=numbered)


def in_file_order(records: list[Any], marks: list[tuple[int, dict]]) -> list[LogEvent]:
    """A batch's records and marks as events in file order (each mark after the records read
    before it)."""
    if not marks:
        return [(RECORD, r) for r in records]
    out: list[LogEvent] = []
    i = 0
    for before, mark in marks:
        out.extend((RECORD, r) for r in records[i:before])
        i = max(i, before)
        out.append((MARK, mark))
    out.extend((RECORD, r) for r in records[i:])
    return out
