"""Live log ingestion: the runner's reader of ``train.log``.

The runner reads the log in slices of arbitrary bytes as the training writes it. Each slice
goes once through the same pipe that ``parse --json`` uses (``moeconsole.runner.ingest.pipe``: complete
lines, each read by the strategy of its family, a learned template over the repeated metric
line and the line parser for every other line; one batch), so a backlog of millions of lines
is caught up at the template's speed instead of line by line. An unfinished last line waits
for the next slice (``LinePipe.partial``); the events (records and marks,
in file order) are the same as the line parser's, which the tests check.
"""
from __future__ import annotations

import collections
import json
import sys
import time
from itertools import compress
from dataclasses import dataclass
from typing import Any, Callable

from moeconsole.runner.core.readctx import ReadingContext
from moeconsole.runner.core.units import clip
from moeconsole.runner.ingest.batch import Batch, batch_from_events, in_file_order
from moeconsole.runner.ingest.parser import MARK, RECORD, LogEvent, LogParser
from moeconsole.runner.ingest.pipe import LinePipe
from moeconsole.runner.ingest.records import MEMORY_SRCS


class JsonRecord(dict):
    """A record read from a template row, with that row's JSON line (``{"v":1,...}\n``, the
    exact text ``jsonio.dumps`` writes for it): the runner writes the line instead of encoding
    the dict again."""

    __slots__ = ("raw",)
    raw: bytes


class LiveReader:
    def __init__(self, parser: LogParser | None = None,
                 diagnostics: Callable[[str], None] | None = None, line_format: Any = None) -> None:
        """``diagnostics``: where a failure to read a slice is reported (the runner's log);
        ``line_format``: the recipe's declared ``log_format`` (``moeconsole.runner.ingest.userformat``)."""
        self.parser = parser or LogParser(line_format=line_format)
        self.diagnostics: Callable[[str], None] = diagnostics or _to_stderr
        self.failed_lines = 0   # lines skipped because reading them failed
        # Template rows come out as their JSON lines (formatted from the captured text) with
        # their values as columns: the runner feeds its monitors and charts from those, never
        # building a dict per row (``feed`` loads the lines back as dicts, for comparison).
        self.pipe = LinePipe(self.parser, want_records=True, json_lines=True, keep_dicts=True, columns=True)

    def feed_batches(self, data: bytes, at: int | None = None) -> list[Batch]:
        """The same records and marks as ``feed``, in file order, as batches (one per slice,
        none when the slice completed nothing): ``records`` holds a template row's JSON line
        (bytes) or the parser's dict, and ``steps``/``values``/``present`` hold every
        record's numbers (no dict is built for a template row).

        Never raises on what the log holds: if reading a slice fails anyway (a value no rule
        foresaw), the failure is reported to ``diagnostics`` and the slice's lines are read
        again one at a time, each its own batch; a line that still fails is skipped and
        counted (``failed_lines``). One line never ends the reading.

        ``at``: the log's byte offset of ``data[0]`` (default: right after the slice before);
        ``Batch.at`` holds the offset of the line that completed each record."""
        partial = self.pipe.partial.saved() if self.pipe.partial.waiting else None
        partial_at = self.pipe.partial_at
        at = self.pipe.at if at is None else at
        try:
            batch = self.pipe.feed(data, at)
        except Exception as exc:  # noqa: BLE001 - one line must never end the runner
            self.diagnostics(f"reading the log failed ({type(exc).__name__}: {clip(str(exc), 200)}): "
                             "reading that slice line by line")
            return self._line_by_line(data, partial, at, partial_at)
        return [batch] if len(batch) or batch.marks else []

    def _line_by_line(self, data: bytes, partial: tuple[bytes, bool, bool, bool] | None, at: int,
                      partial_at: int) -> list[Batch]:
        """The slack path of ``feed_batches``: the template is forgotten (it is learned again),
        the unfinished line restored as it was before the slice, each completed line alone
        (``at``: the offset of ``data[0]``; ``partial_at``: of the unfinished line)."""
        self.pipe.templates.template = None
        self.pipe.partial.restore(partial)
        self.pipe.at = at + len(data)
        out: list[Batch] = []
        pos = 0
        while True:
            nl = data.find(b"\n", pos)
            piece = data[pos:] if nl < 0 else data[pos:nl + 1]
            if not piece:
                break
            try:
                if nl < 0:
                    self.pipe.keep_partial(piece, at + pos)
                    break
                line_at = partial_at if self.pipe.partial.waiting and pos == 0 else at + pos
                self.pipe.lines.note(line_at)
                if self.pipe.partial.waiting:
                    events = self.parser.read_completed(*self.pipe.partial.complete(piece[:-1]))
                else:
                    events = self.parser.process_line(piece[:-1])
                batch = batch_from_events(events, True, self.pipe.lines.offsets(events, line_at))
                if len(batch) or batch.marks:
                    out.append(batch)
            except Exception as exc:  # noqa: BLE001 - skipped and counted
                self.failed_lines += 1
                self.diagnostics(f"log line skipped ({type(exc).__name__}: {clip(str(exc), 200)})")
            pos = nl + 1
        return out

    def feed(self, data: bytes) -> list[LogEvent]:
        """Events for the lines this slice completes: the batches of ``feed_batches`` as the
        line parser's events, template rows loaded back as dicts."""
        return [ev for batch in self.feed_batches(data) for ev in _events_of(batch)]

    def finish(self) -> list[LogEvent]:
        """The end of the log: its last line read without a newline, a cut dict that never
        got its rest counted as a line not understood."""
        return _events_of(self.pipe.finish(True))

    def reset_partial(self) -> None:
        self.pipe.reset_partial()

    def resume_offset(self, end: int) -> int:
        """Where a new reader starts to give every record not given yet (``LinePipe.resume_offset``;
        ``end``: the log offset of the byte after the last one fed)."""
        return self.pipe.resume_offset(end)

    def context(self) -> ReadingContext:
        """The reading context saved with ``resume_offset`` (``LogParser.reading_context``; no
        line waits: the offset is right after the last line read, or at the unfinished one)."""
        return self.parser.reading_context(at_end=self.parser.waiting_line() is None)

    def restore_context(self, ctx: ReadingContext | None) -> None:
        """Read on with the context a reader before this one saved (None: none was saved)."""
        if ctx is not None:
            self.parser.restore_context(ctx)

    def attempt_over(self) -> list[Batch]:
        """The attempt writing the log has ended and its output is read: what waits for a next
        line (a tqdm bar's last count) as a batch, so the run's last step is recorded when it
        ends, not when the next attempt starts (a finished tqdm run showed 39/40)."""
        batch = self.pipe.release_waiting()
        return [batch] if len(batch) or batch.marks else []


def _to_stderr(msg: str) -> None:
    """The runner's stderr is its ``runner.log``."""
    try:
        sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


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


def _events_of(batch: Batch) -> list[LogEvent]:
    return in_file_order(_records(batch.records or []), batch.marks)


# ---- the runner's side of a batch: pure functions, tested without a runner -------------------

@dataclass(frozen=True)
class Written:
    """How far an attempt's metric records are written: the newest step of any record (the
    progress; an inferred step's duplicate) and the newest step a record really carried."""
    step: int | None = None
    real: int | None = None

    @classmethod
    def upto(cls, step: int | None) -> "Written":
        return cls(step, step)


def _row_like(rec: dict) -> bool:
    """A parser record that is a training step like a template row: its own step, not a
    memory report, not inferred."""
    return isinstance(rec.get("step"), int) and rec.get("src") not in MEMORY_SRCS and not _inferred(rec)


def _inferred(rec: Any) -> bool:
    return type(rec) is not bytes and bool((rec.get("extra") or {}).get("step_inferred"))


def rows_to_write(records: list, steps: list[int], last: Written) -> tuple[list[int], list[int], Written]:
    """Which rows of a batch the runner writes: (kept, counted, how far written). A step at or
    below the last one written is a duplicate (after an adoption, or a repeated line) and is
    never written twice; a memory report (Megatron's per rank, DeepSpeed's, ``MEMORY_SRCS``) at or
    after the newest step written is kept as a record of its own but is not a new step (DeepSpeed
    prints its report before the trainer's record of the same step). A record whose step the
    parser inferred (its line carried no readable step) never makes a real record a duplicate:
    both are kept, as ``parse`` keeps them. ``counted``: the kept rows that are new steps."""
    n = len(steps)
    if n and (last.step is None or steps[0] > last.step) and all(a < b for a, b in zip(steps, steps[1:])) and \
            all(map(_row_like, compress(records, [type(r) is not bytes for r in records]))):
        rows = list(range(n))  # the usual batch: template rows (and plain parser records), each a new step
        return rows, rows, Written.upto(steps[-1])
    kept: list[int] = []
    counted: list[int] = []
    newest, real = last.step, last.real
    for i, step in enumerate(steps):
        rec = records[i]
        if type(rec) is not bytes:
            if not isinstance(rec.get("step"), int):
                continue
            if rec.get("src") in MEMORY_SRCS:
                if newest is None or step >= newest:
                    kept.append(i)
                continue
        if _inferred(rec):
            if newest is not None and step <= newest:
                continue
        elif real is not None and step <= real:
            continue
        else:
            real = step
        kept.append(i)
        counted.append(i)
        newest = step if newest is None else max(newest, step)
    return kept, counted, Written(newest, real)


def metric_lines(records: list, kept: list[int], stamp: dict,
                 at: Any = None) -> tuple[list[dict | None], list[bytes | None]]:
    """What ``Journal.metrics`` appends for the kept rows: a template row's JSON line with the
    stamp (``v``, ``t``, ``attempt``) spliced in after ``{"v":1,``, a parser record as a dict
    to encode. Both give the same bytes ``jsonio.dumps`` writes for the stamped record. ``at``:
    each row's line offset in the log (``Batch.at``), written as the record's last field,
    ``log_at`` (``seriesfile.with_log_at``)."""
    from moeconsole.runner.rundir import jsonio
    from moeconsole.runner.rundir.seriesfile import LOG_AT, with_log_at
    head = b'{"v":%d,"t":%s,"attempt":%s,' % (stamp["v"], repr(stamp["t"]).encode(),
                                             jsonio.dumps(stamp["attempt"]).encode())
    cut = len(b'{"v":1,')
    dicts: list[dict | None] = []
    lines: list[bytes | None] = []
    offsets = at.tolist() if at is not None else None
    for i in kept:
        rec = records[i]
        off = offsets[i] if offsets is not None else -1
        if type(rec) is bytes:
            dicts.append(None)
            lines.append(with_log_at(head + rec[cut:], off))
        else:
            dicts.append({**stamp, **rec, LOG_AT: off} if off >= 0 else {**stamp, **rec})
            lines.append(None)
    return dicts, lines


def newest_record(records: list, kept: list[int], stamp: dict) -> dict:
    """The last kept row as the stamped dict (one JSON load per batch, for the chart book)."""
    rec = records[kept[-1]]
    return {**stamp, **(json.loads(b"{" + rec[len(b'{"v":1,'):]) if type(rec) is bytes else rec)}


class TailLines:
    """The attempt's last lines, kept as bytes (decoded only when a crash is judged): the hot
    path splits a slice, it never decodes it.

    A line longer than ``width`` keeps its tail (``width`` bytes: a traceback glued to the end
    of a progress bar) and its head (``width // 2`` bytes: the exception's name and message).
    ms-swift 4.6 refuses an unknown ``--template`` with one 3.5 KB line, ``ValueError:
    template_type: 'X' not in [<every template>]`` (swift/template/register.py l.50): its tail
    alone is a list of names, and the refusal was ``unknown``, restarted three times."""

    CUT = b" ... "

    def __init__(self, keep: int = 2000, width: int = 2000) -> None:
        self.lines: collections.deque[bytes] = collections.deque(maxlen=keep)
        self.width = width
        self.partial = b""

    def _cut(self, line: bytes) -> bytes:
        if len(line) <= self.width + self.width // 2 + len(self.CUT):
            return line
        return line[:self.width // 2] + self.CUT + line[-self.width:]

    def add(self, data: bytes) -> None:
        lines = (self.partial + data).split(b"\n")
        partial = lines.pop()
        self.partial = partial if len(partial) <= 3 * self.width else \
            partial[:self.width // 2] + self.CUT + partial[-2 * self.width:]
        lines = lines[-(self.lines.maxlen or len(lines)):]
        if lines and max(map(len, lines)) > self.width:
            lines = [self._cut(line) for line in lines]
        self.lines.extend(lines)

    def clear(self) -> None:
        self.lines.clear()

    def text(self) -> list[str]:
        out = list(self.lines) + ([self.partial] if self.partial else [])
        return [line.decode("utf-8", "replace") for line in out]
