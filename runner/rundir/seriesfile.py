"""``series.json``: the run's charts kept small, so opening a run costs the same at any length.

The runner feeds every metric record it writes into a ``SeriesBook`` (bounded series per chart key,
restart steps, the newest record, the record count) and replaces ``series.json`` atomically now and
then, with ``metrics_offset``: the byte length of ``metrics.jsonl`` the book covers. A reader loads
the book and reads only the records after that offset, so ``--json --once``, attaching and
``runs show`` read a few hundred KiB however many steps the run has. ``metrics.jsonl`` stays the
full record; the book is a cache of it and is rebuilt from it when missing, stale or corrupt.

Beside the five chart series the book keeps every other number the log carries, so any of them
can be charted: the learning rate, the epoch, each numeric ``extra`` of the records (token
accuracy, MoE load-balancing loss, reward, consumed samples, ...), each number of the
evaluations (``eval_values``), and the wall time of each step (``t``, to align runs by time).
At most ``MAX_OTHER`` of them, ``OTHER_LIMIT`` buckets each, so the file stays small.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TypedDict, Union, cast

from moeconsole.runner.core.numbers import as_float
from moeconsole.runner.ingest.records import STEP_INFERRED, STEP_NUMBERED
from moeconsole.runner.ingest.tail import SEEN_BYTES, bytes_before, digest_changed, seen_digest, text_changed
from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.core.series import DEFAULT_LIMIT, Series

SCHEMA = 2   # 2: bucket means, the other metrics and eval values (a version 1 book is rebuilt)
CHART_KEYS = ("loss", "grad_norm", "mem_gib", "step_time_s", "tokens_per_s")
EVAL_KEY = "eval_loss"   # the evaluation loss series (from evals.jsonl), beside the training charts
RECORD_OTHER = ("lr", "epoch")   # record fields that are numbers but not one of the chart series
TIME_KEY = "t"                   # the wall time of each step (not a chart: runs compared by time)
# Numbers in a record's extras that are no metric: which rank a line came from.
# extras that are not a trainer's numbers: which process printed them, how the step was found
# (``records.STEP_INFERRED``/``STEP_NUMBERED``: a chart of them was a flat line at 1)
NOT_METRICS = frozenset({"rank", "local_rank", "world_size", "node_rank", "pid", STEP_INFERRED, STEP_NUMBERED})
MAX_OTHER = 64                   # other series kept (the first seen); more are counted, not kept
OTHER_LIMIT = 1024               # buckets per other series (the chart series keep DEFAULT_LIMIT)
# A metric record's byte offset in train.log of the line that completed it (absent in records
# written before it was stamped, and in records of a foreign log's first quick read).
LOG_AT = "log_at"
_LOG_AT_TAIL = b',"' + LOG_AT.encode() + b'":%d}\n'
_RESERVED = frozenset(CHART_KEYS) | frozenset(RECORD_OTHER) | {TIME_KEY, EVAL_KEY}
_RECORD_PLACES = (*RECORD_OTHER, TIME_KEY)   # the record fields that are other numbers, in order


def log_at(rec: dict) -> int | None:
    """The train.log offset a metric record is stamped with (``LOG_AT``), or None."""
    at = rec.get(LOG_AT)
    return at if type(at) is int and at >= 0 else None


def with_log_at(line: bytes, at: int) -> bytes:
    """A record's JSON line (``{...}\n``) with ``LOG_AT`` as its last field (``at`` < 0:
    unknown, the line as it is). The same bytes ``jsonio.dumps`` writes for the record with the
    field added last."""
    if at < 0:
        return line
    return line[:-2] + _LOG_AT_TAIL % at


def with_log_at_each(lines: Iterable[bytes], offsets: Iterable[int]) -> list[bytes]:
    """``with_log_at`` of each line with its offset (a batch's records: one pass, no call per
    line)."""
    tail = _LOG_AT_TAIL
    return [line if at < 0 else line[:-2] + tail % at for line, at in zip(lines, offsets)]


def extra_name(key: str) -> str:
    """The series name of a record's extra: the key as the trainer printed it (cut to 64
    characters), prefixed with ``extra.`` if it would shadow a record field."""
    key = str(key)[:64]
    return f"extra.{key}" if key in _RESERVED else key


def other_values(rec: dict) -> list[tuple[str, float]]:
    """(series name, value) of every number of a metric record that is not a chart series: lr,
    epoch, the record's time and its numeric extras."""
    return [(name, v) for name, _, v in other_fields(rec)]


def other_fields(rec: dict) -> list[tuple[str, tuple[str, ...], float]]:
    """``other_values`` with where each number stands in the record: ``(name, ("lr",), v)`` for a
    record field, ``(name, ("extra", key), v)`` for an extra. The one rule of what is another
    number (a reader of template rows maps the places to its columns, ``OtherBlock``)."""
    out: list[tuple[str, tuple[str, ...], float]] = []
    for key in _RECORD_PLACES:
        v = as_float(rec.get(key))
        if v is not None:
            out.append((key, (key,), v))
    extra = rec.get("extra")
    if isinstance(extra, dict):
        out += [(name, ("extra", key), v) for name, key, v in _extra_fields(extra)]
    return out


def _extra_fields(extra: dict) -> list[tuple[str, str, float]]:
    """(series name, key, value) of a record's numeric extras (the part of ``other_fields``
    that is per record however the rows come)."""
    out: list[tuple[str, str, float]] = []
    for key, value in extra.items():
        if key in NOT_METRICS or isinstance(value, str) and not _numeric_text(value):
            continue
        v = as_float(value)
        if v is not None:
            out.append((extra_name(key), key, v))
    return out


# series name -> (steps, values), being built: floats, or numpy pieces (``feed_arrays``)
Columns = dict[str, tuple[list[Any], list[Any]]]


# Where a series is first met in a batch's rows: (row, place in that row's ``other_fields``).
# The book makes its series in this order, the order one record at a time (``feed``) makes
# them, however the rows come (a record without ``epoch`` before ones with it, an extra before
# the first ``lr``): the chart book's column order and which names pass ``MAX_OTHER``.
FirstSeen = dict[str, tuple[int, int]]


def _add(cols: Columns, first: FirstSeen, at: tuple[int, int], name: str, xs: Any, ys: Any) -> None:
    """``xs``/``ys`` appended to the series' column (numpy arrays: kept as pieces, joined once
    by ``_joined``)."""
    col = cols.get(name)
    if col is None:
        col = cols[name] = ([], [])
        first[name] = at
    if type(xs) is list:
        col[0].extend(xs)
        col[1].extend(ys)
    else:
        col[0].append(xs)
        col[1].append(ys)


def _joined(pieces: list) -> Any:
    """A column kept as numpy pieces (``_add``) as one array."""
    import numpy as np
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


def _block_columns(cols: Columns, first: FirstSeen, row0: int, steps: Sequence[float], block: "OtherBlock",
                   t: Any) -> None:
    """The other numbers (``other_fields``) of one block of rows (``steps``: its rows' steps;
    ``row0``: the batch row it starts at) appended to ``cols`` a column at a time, and where
    each new series is first met (``first``). Records (dicts): a batch of a thousand costs a few
    comprehensions, not a thousand calls. Template rows (``(a record, {name: each row's
    value}, rows)``): the record says which numbers there are, the columns give them (a number
    missing from the columns is the same in every row). ``t``: the time of a row without its
    own."""
    if not isinstance(block, list):
        proto, by_name, n = block
        if t is not None and TIME_KEY not in proto:
            proto = {**proto, TIME_KEY: t}
        xs = steps[:n]
        arrays = type(steps) is not list   # numpy columns in, numpy pieces out (``feed_arrays``)
        for place, (name, _, v) in enumerate(other_fields(proto)):
            ys = by_name.get(name)
            if arrays:
                _add(cols, first, (row0, place), name, xs, _full(n, v) if ys is None else ys)
            else:
                _add(cols, first, (row0, place), name, xs, [v] * n if ys is None else ys.tolist())
        return
    recs, t = block, as_float(t)
    for place, key in enumerate(_RECORD_PLACES):
        got = [r.get(key, t) for r in recs] if key == TIME_KEY else [r.get(key) for r in recs]
        if got and set(map(type, got)) == {float}:   # one C pass: the usual column, every value a float
            _add(cols, first, (row0, place), key, steps[:len(got)], cast("list[float]", got))
            continue
        found = [(i, s, v) for i, s, v in ((i, s, as_float(v)) for i, (s, v) in enumerate(zip(steps, got))
                                           if v is not None) if v is not None]
        if found:
            _add(cols, first, (row0 + found[0][0], place), key, [s for _, s, _ in found], [v for _, _, v in found])
    base = len(_RECORD_PLACES)
    for row, (step, rec) in enumerate(zip(steps, recs), row0):
        extra = rec.get("extra")
        if extra and isinstance(extra, dict):
            for place, (name, _, v) in enumerate(_extra_fields(extra), base):
                col = cols.get(name)
                if col is None:
                    col = cols[name] = ([], [])
                    first[name] = (row, place)
                col[0].append(step)
                col[1].append(v)


def _full(n: int, v: float) -> Any:
    import numpy as np
    return np.full(n, v, dtype=np.float64)


# The other numbers of a batch's rows, block by block in row order: a block of rows of one
# shape as columns, ``(a record of the block, {series name: each row's value}, rows)`` (a series
# of the record missing from the dict is the same for every row: the time a batch is stamped
# with), or records (dicts) read one by one.
OtherBlock = Union[tuple[dict, dict[str, Any], int], list[dict]]


def _numeric_text(text: str) -> bool:
    """A string extra that is a number as JSON writes non-finite ones ("nan", "inf")."""
    return text in ("nan", "inf", "-inf")


class SeriesDoc(TypedDict, total=False):
    v: int
    metrics_offset: int
    metric_count: int
    last_metrics: dict | None
    restarts_at: list[int]
    series: dict[str, dict]
    # evaluation results (evals.jsonl); absent in books written before evaluations were read
    evals_offset: int
    eval_count: int
    last_eval: dict | None
    other: dict[str, dict]         # the other numbers of the records, by series name
    eval_values: dict[str, dict]   # every number of the evaluations, by name
    dropped: list[str]             # names seen past MAX_OTHER
    # the digest of metrics.jsonl's bytes right before metrics_offset (``tail.seen_digest``):
    # a file replaced meanwhile is read anew (``_cached``); absent in older books, or none known
    metrics_seen: str | None


class SeriesBook:
    """What the charts and the run summary need from metrics.jsonl, in bounded memory."""

    def __init__(self, limit: int | None = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self.clear()

    def clear(self) -> None:
        """Forget everything fed (the records, the evaluations, the offsets): the next feed reads
        both files from their start."""
        limit = self.limit
        self.series: dict[str, Series] = {k: Series(limit) for k in CHART_KEYS}
        self.last_metrics: dict | None = None
        self.metric_count = 0
        self.restarts_at: list[int] = []
        self.offset = 0  # bytes of metrics.jsonl fed so far
        self.eval_series = Series(limit)   # evaluation loss by step
        self.last_eval: dict | None = None
        self.eval_count = 0
        self.evals_offset = 0  # bytes of evals.jsonl fed so far
        other_limit = None if limit is None else min(limit, OTHER_LIMIT)
        self.other_limit = other_limit
        self.other: dict[str, Series] = {}         # lr, epoch, t, the extras by name
        self.eval_values: dict[str, Series] = {}   # every number of the evaluations, by name
        self.dropped: set[str] = set()             # names past MAX_OTHER (said, not kept)
        # metrics.jsonl as fed: its stat (inode, size, mtime) at the last feed and the bytes right
        # before ``offset`` as read (up to ``tail.SEEN_BYTES``): a file replaced by a new one with
        # the freed inode, or cut and written on, is fed anew, not as a continuation (``_replaced``)
        self._metrics_stat: tuple[int, int, int] | None = None
        self._metrics_seen = b""

    def _other(self, table: dict[str, Series], name: str) -> Series | None:
        s = table.get(name)
        if s is None:
            if len(self.other) + len(self.eval_values) >= MAX_OTHER:
                if len(self.dropped) < 256:
                    self.dropped.add(name)
                return None
            s = table[name] = Series(self.other_limit)
        return s

    def feed_other(self, steps: list[int], recs: list[dict]) -> None:
        """The other numbers of metric records (``other_values``), one extend per series."""
        self.feed_other_blocks(steps, [recs])

    def feed_other_blocks(self, steps: Any, blocks: list[OtherBlock], t: Any = None) -> None:
        """``feed_other`` of rows given as ``OtherBlock``s (``t``: the time of rows without
        their own, as ``feed_arrays`` stamps them), one extend per series. ``steps``: a list of
        floats, or a float64 array (``feed_arrays``: the series are extended by numpy columns)."""
        cols: Columns = {}
        first: FirstSeen = {}
        at = 0
        arrays = type(steps) is not list   # float64 columns (``feed_arrays``): kept as arrays
        for block in blocks:
            n = len(block) if isinstance(block, list) else block[2]
            if arrays and isinstance(block, list):   # the parser's records among template rows
                import numpy as np
                part: Columns = {}
                part_first: FirstSeen = {}
                _block_columns(part, part_first, at, steps[at:at + n].tolist(), block, t)
                for name, (xs, ys) in part.items():
                    _add(cols, first, part_first[name], name, np.asarray(xs, dtype=np.float64),
                         np.asarray(ys, dtype=np.float64))
            else:
                _block_columns(cols, first, at, steps[at:at + n], block, t)
            at += n
        for name in sorted(cols, key=first.__getitem__):   # new series in the order the rows meet them
            xs_, ys_ = cols[name]
            s = self._other(self.other, name)
            if s is not None:
                if arrays:
                    s.extend_array(_joined(xs_), _joined(ys_))
                else:
                    s.extend(xs_, ys_)

    def feed(self, rec: dict) -> None:
        step = rec.get("step")
        if not isinstance(step, int):
            return
        self.metric_count += 1
        if self.last_metrics is not None and rec.get("attempt") != self.last_metrics.get("attempt"):
            self.restarts_at.append(step)
        self.last_metrics = rec
        for key in CHART_KEYS:
            value = as_float(rec.get(key))
            if value is not None:
                self.series[key].append(step, value)
        for name, value in other_values(rec):
            s = self._other(self.other, name)
            if s is not None:
                s.append(step, value)

    def feed_many(self, recs: list[dict]) -> None:
        """``feed`` of a batch (the runner's slice of records), a series at a time."""
        steps = [r.get("step") for r in recs]
        kept = [(s, r) for s, r in zip(steps, recs) if isinstance(s, int)]
        if not kept:
            return
        prev = self.last_metrics
        for s, r in kept:
            if prev is not None and r.get("attempt") != prev.get("attempt"):
                self.restarts_at.append(s)
            prev = r
        self.last_metrics = prev
        self.metric_count += len(kept)
        for key in CHART_KEYS:
            xs: list[float] = []
            ys: list[float] = []
            for s, r in kept:
                value = as_float(r.get(key))
                if value is not None:
                    xs.append(s)
                    ys.append(value)
            self.series[key].extend(xs, ys)
        self.feed_other([s for s, _ in kept], [r for _, r in kept])

    def _count_batch(self, first_step: Any, count: int, last: dict) -> None:
        """A batch of ``count`` records whose newest is ``last``: a restart mark at its first step
        when its attempt is not the previous record's, and the records counted."""
        if self.last_metrics is not None and last.get("attempt") != self.last_metrics.get("attempt"):
            self.restarts_at.append(int(first_step))
        self.last_metrics = last
        self.metric_count += count

    def feed_arrays(self, steps: Any, values: dict[str, Any], present: dict[str, Any], last: dict,
                    records: list | None = None, other: Callable[[], list[OtherBlock] | None] | None = None) -> None:
        """``feed_many`` of one attempt's records given as a batch's numpy columns (float64 steps
        and values, bool present): the runner's live batches and a history read's, the one way
        columns reach the book. ``values[k][i]`` counts where ``present[k][i]``; ``last`` is the
        newest record. Every series is extended by ``Series.extend_array`` (a short batch by
        ``extend``), so a long batch makes no Python float per value. ``records``: the same rows
        as records (dicts, or a template row's JSON line), for the numbers that are not columns
        (``other_values``); without them only the columns are fed. ``other``: gives those numbers
        as ``OtherBlock``s (``Batch.other``), or None; then ``records`` are not read (the same
        series, without a JSON load and a dict per row)."""
        if not len(steps):
            return
        self._count_batch(steps[0], len(steps), last)
        for key in CHART_KEYS:
            ok, ys = present[key], values[key]
            if ok.all():
                self.series[key].extend_array(steps, ys)
            elif ok.any():
                self.series[key].extend_array(steps[ok], ys[ok])
        blocks = other() if other is not None else None
        if blocks is not None:
            self.feed_other_blocks(steps, blocks, last.get("t"))
        elif records is not None:
            self.feed_other_blocks([int(s) for s in steps.tolist()], [as_dicts(records)], last.get("t"))

    @classmethod
    def from_records(cls, records: Iterable[dict], marks: Iterable[dict]) -> "SeriesBook":
        """A book of a window read by the line parser: its records, then its evaluation marks (as
        the screen's first window feeds them: after the records)."""
        book = cls()
        for rec in records:
            book.feed(rec)
        for mark in marks:
            if mark.get("kind") == "eval":
                book.feed_eval(mark)
        return book

    def feed_eval(self, rec: dict) -> None:
        """One evaluation result (an ``evals.jsonl`` record): the eval-loss chart and the newest."""
        self.eval_count += 1
        self.last_eval = rec
        step = rec.get("step")
        loss = as_float(rec.get("loss"))
        if isinstance(step, int) and loss is not None:
            self.eval_series.append(step, loss)
        values = rec.get("values")
        if isinstance(step, int) and isinstance(values, dict):
            for key, value in values.items():
                v = as_float(value)
                if v is None or key in NOT_METRICS:
                    continue
                s = self._other(self.eval_values, str(key)[:64])
                if s is not None:
                    s.append(step, v)

    def feed_file(self, run: rundir.RunDir, each: Callable[[dict], None] | None = None) -> int:
        """Feed the records written after ``offset`` (and the evaluations after
        ``evals_offset``); returns how many lines were read. ``each``: also told of every
        metric record read (``LineRecords.feed``)."""
        n = 0
        try:
            fd = jsonio.open_read(run.metrics)   # a FIFO in its place is not read
        except OSError:
            fd = None
        if fd is not None:
            # one descriptor for the check, the records and the bytes kept of them: a file replaced
            # between two opens would be taken for the one read
            with os.fdopen(fd, "rb") as f:
                if self._replaced(f.fileno()):
                    self.clear()   # read anew from its start (evals too)
                for off, rec, seen in jsonio.jsonl_records(f, self.offset, SEEN_BYTES, self._metrics_seen):
                    self.offset, self._metrics_seen = off, seen
                    self.feed(rec)
                    if each is not None:
                        each(rec)
                    n += 1
        for off, rec in jsonio.iter_jsonl(run.evals, self.evals_offset):
            self.evals_offset = off
            self.feed_eval(rec)
            n += 1
        return n

    def _replaced(self, fd: int) -> bool:
        """Whether metrics.jsonl (open as ``fd``) is no longer the file fed up to ``offset``:
        shorter than it, or the bytes before it no longer the ones read (``tail.text_changed``,
        the log tail's rule: a file deleted and written again, given the freed inode, at least as
        long). One stat a feed; the bytes are read only when the stat changed (an unchanged file
        costs no read)."""
        try:
            st = os.fstat(fd)
        except OSError:
            return False
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if key == self._metrics_stat:
            return False
        self._metrics_stat = key
        if st.st_size < self.offset:
            return True
        return bool(self._metrics_seen) and text_changed(
            self._metrics_seen, bytes_before(fd, self.offset, len(self._metrics_seen)))

    def seen_digest(self) -> str | None:
        """The digest of the bytes before ``offset`` (``tail.seen_digest``) as ``series.json`` keeps
        it: only when all of the ``tail.SEEN_BYTES`` before it were read (a reader compares as many)."""
        whole = len(self._metrics_seen) == min(SEEN_BYTES, self.offset)
        return seen_digest(self._metrics_seen) if whole else None

    def to_doc(self) -> SeriesDoc:
        series = {k: s.to_doc() for k, s in self.series.items()}
        series[EVAL_KEY] = self.eval_series.to_doc()
        return {"v": SCHEMA, "metrics_offset": self.offset, "metrics_seen": self.seen_digest(),
                "metric_count": self.metric_count,
                "last_metrics": self.last_metrics, "restarts_at": list(self.restarts_at),
                "series": series, "evals_offset": self.evals_offset, "eval_count": self.eval_count,
                "last_eval": self.last_eval, "other": {k: s.to_doc() for k, s in self.other.items()},
                "eval_values": {k: s.to_doc() for k, s in self.eval_values.items()},
                "dropped": sorted(self.dropped)}

    @classmethod
    def from_doc(cls, doc: object, limit: int | None = DEFAULT_LIMIT) -> "SeriesBook | None":
        """The book in ``doc``, or None when it is not a readable book of this schema."""
        if not isinstance(doc, dict) or doc.get("v") != SCHEMA:
            return None
        try:
            book = cls(limit)
            book.offset = int(doc["metrics_offset"])
            book.metric_count = int(doc["metric_count"])
            last = doc.get("last_metrics")
            book.last_metrics = last if isinstance(last, dict) else None
            book.restarts_at = [int(s) for s in doc["restarts_at"]]
            for key in CHART_KEYS:
                book.series[key] = Series.from_doc(doc["series"][key], limit)
            if EVAL_KEY in doc["series"] and "evals_offset" in doc:
                book.eval_series = Series.from_doc(doc["series"][EVAL_KEY], limit)
                book.evals_offset = int(doc["evals_offset"])
                book.eval_count = int(doc.get("eval_count") or 0)
                last_eval = doc.get("last_eval")
                book.last_eval = last_eval if isinstance(last_eval, dict) else None
                book.eval_values = {str(k): Series.from_doc(d, book.other_limit)
                                    for k, d in (doc.get("eval_values") or {}).items()}
            book.other = {str(k): Series.from_doc(d, book.other_limit) for k, d in doc["other"].items()}
            book.dropped = {str(k) for k in doc.get("dropped") or ()}
        except (KeyError, TypeError, ValueError, IndexError):
            return None
        return book


LINE_RECORDS_BYTES = 64 << 10   # of metrics.jsonl read back when a reader starts (~200 records)


class LineRecords:
    """The newest metric records by the train.log line they are stamped with (``log_at``): what a
    line of the log tail shows as columns, read from the runner's records instead of parsing the
    line again. ``stamped``: the newest record read carries the stamp (a run directory written
    before it, or a log nobody supervises, has none: its lines must be parsed to be columns).
    ``keep``: how many lines' records are held, the newest (the reader passes the lines its tail
    shows, ``snapshot.LOG_TAIL_LINES``: a record is written after its line, so the records of the
    lines in a tail read after them are among that many newest; more is memory held for nothing,
    about 2 KB a record, for as long as a console stays attached)."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.by_at: dict[int, dict] = {}
        self.stamped = False

    def feed(self, rec: dict) -> None:
        at = log_at(rec)
        self.stamped = at is not None
        if at is None:
            return
        self.by_at.pop(at, None)   # several records of one line (a bar's redraws): the newest
        self.by_at[at] = rec
        if len(self.by_at) > self.keep:
            del self.by_at[next(iter(self.by_at))]

    def prime(self, run: rundir.RunDir, max_bytes: int = LINE_RECORDS_BYTES) -> None:
        """The records at the end of ``metrics.jsonl`` (a reader that starts from ``series.json``
        never reads them otherwise)."""
        try:
            size = os.path.getsize(run.metrics)
        except OSError:
            return
        start = max(0, size - max_bytes)
        if start:
            with open(run.metrics, "rb") as f:
                f.seek(start - 1)
                head = f.read(min(size - start + 1, 64 << 10))
            nl = head.find(b"\n")
            if nl < 0:
                return
            start += nl
        for _, rec in jsonio.iter_jsonl(run.metrics, start):
            self.feed(rec)

    def of(self, offsets: Sequence[int | None]) -> tuple[dict | None, ...] | None:
        """The record stamped with each offset (None: no record of that line); None when the
        records are not stamped."""
        if not self.stamped:
            return None
        return tuple(None if at is None else self.by_at.get(at) for at in offsets)


def as_dicts(records: list) -> list[dict]:
    """Records as dicts: a template row's JSON line (bytes) loaded (all of a batch in one call of
    msgspec's JSON reader, which builds the same objects as ``json.loads`` at a fraction of the
    cost; ``json`` when msgspec refuses a number it cannot hold), a dict as it is."""
    lines = [r for r in records if type(r) is bytes]
    if not lines:
        return records
    doc = b"[" + b",".join(lines) + b"]"
    try:
        loaded = iter(_decode_json_array(doc))
    except ValueError:   # msgspec.DecodeError is one: a number past a double (json reads it as inf)
        import json
        loaded = iter(json.loads(doc))
    return [next(loaded) if type(r) is bytes else r for r in records]


def _decode_json_array(doc: bytes) -> list:
    import msgspec
    return msgspec.json.decode(doc)


def save_book(run: rundir.RunDir, book: SeriesBook) -> None:
    jsonio.atomic_write_json(run.series, book.to_doc())


def load_book(run: rundir.RunDir, limit: int | None = DEFAULT_LIMIT) -> SeriesBook:
    """The run's book brought up to date: ``series.json`` when it matches ``metrics.jsonl`` (its
    offset inside the file, on a line boundary), else rebuilt from the start; then the records
    written since."""
    book = _cached(run, limit) or SeriesBook(limit)
    book.feed_file(run)
    return book


def _cached(run: rundir.RunDir, limit: int | None) -> SeriesBook | None:
    """The book ``series.json`` keeps, when it describes the ``metrics.jsonl`` there now: the file
    at least as long as its offset, the bytes before it those read (``metrics_seen``: the log
    tail's rule for a saved digest, ``tail.digest_changed``; a book without it: the offset on a
    line boundary). A file replaced by another as long or longer (written anew, synced back) is
    read from its start."""
    doc = jsonio.read_json(run.series)
    book = SeriesBook.from_doc(doc, limit)
    if book is None or book.offset <= 0:
        return None
    try:
        fd = jsonio.open_read(run.metrics)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_size < book.offset:
            return None  # metrics.jsonl was replaced or cut: the book describes another file
        seen = bytes_before(fd, book.offset, SEEN_BYTES)
    finally:
        os.close(fd)
    saved = doc.get("metrics_seen") if isinstance(doc, dict) else None
    if isinstance(saved, str) and digest_changed(saved, seen):
        return None
    if not isinstance(saved, str) and (seen is None or not seen.endswith(b"\n")):
        return None
    book._metrics_seen = seen or b""
    if book.evals_offset and not _on_line_boundary(run.evals, book.evals_offset):
        # evals.jsonl replaced or cut: its part of the book is read again from the start
        book.eval_series, book.last_eval, book.eval_count, book.evals_offset = Series(limit), None, 0, 0
        book.eval_values = {}
    return book


def _on_line_boundary(path: Path, offset: int) -> bool:
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size < offset:
                return False
            f.seek(offset - 1)
            return f.read(1) == b"\n"
    except OSError:
        return False

