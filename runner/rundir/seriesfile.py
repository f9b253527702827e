"""``series.json``: the run's charts kept small, so opening a run costs the same at any length.

The runner feeds every metric record it writes into a ``SeriesBook`` (bounded series per chart key,
restart steps, the newest record, the record count) and replaces ``series.json`` atomically now and
then, with ``metrics_offset``: the byte length of ``metrics.jsonl`` the book covers. A reader loads
the book and reads only the records after that offset, so ``--json --once``, attaching and
``runs show`` read a few hundred KiB however many steps the run has. ``metrics.jsonl`` stays the
full record; the book is a cache of it and is rebuilt from it when missing, stale or corrupt.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import TypedDict

from runner.core.numbers import as_float
from runner.rundir import jsonio, rundir
from runner.core.series import DEFAULT_LIMIT, Series

SCHEMA = 1
CHART_KEYS = ("loss", "grad_norm", "mem_gib", "step_time_s", "tokens_per_s")
EVAL_KEY = "eval_loss"   # the evaluation loss series (from evals.jsonl), beside the training charts


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


class SeriesBook:
    """What the charts and the run summary need from metrics.jsonl, in bounded memory."""

    def __init__(self, limit: int | None = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self.series: dict[str, Series] = {k: Series(limit) for k in CHART_KEYS}
        self.last_metrics: dict | None = None
        self.metric_count = 0
        self.restarts_at: list[int] = []
        self.offset = 0  # bytes of metrics.jsonl fed so far
        self.eval_series = Series(limit)   # evaluation loss by step
        self.last_eval: dict | None = None
        self.eval_count = 0
        self.evals_offset = 0  # bytes of evals.jsonl fed so far

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

    def feed_columns(self, steps: list[float], values: dict[str, list[float]], present: dict[str, list[bool]],
                     last: dict) -> None:
        """``feed_many`` of one attempt's records given as columns (the runner's live batches):
        ``values[k][i]`` counts where ``present[k][i]``; ``last`` is the newest record."""
        if not steps:
            return
        if self.last_metrics is not None and last.get("attempt") != self.last_metrics.get("attempt"):
            self.restarts_at.append(int(steps[0]))
        self.last_metrics = last
        self.metric_count += len(steps)
        for key in CHART_KEYS:
            ok, ys = present[key], values[key]
            if all(ok):
                self.series[key].extend(steps, ys)
            else:
                self.series[key].extend([s for s, k in zip(steps, ok) if k], [y for y, k in zip(ys, ok) if k])

    def feed_eval(self, rec: dict) -> None:
        """One evaluation result (an ``evals.jsonl`` record): the eval-loss chart and the newest."""
        self.eval_count += 1
        self.last_eval = rec
        step = rec.get("step")
        loss = as_float(rec.get("loss"))
        if isinstance(step, int) and loss is not None:
            self.eval_series.append(step, loss)

    def feed_file(self, run: rundir.RunDir) -> int:
        """Feed the records written after ``offset`` (and the evaluations after
        ``evals_offset``); returns how many lines were read."""
        n = 0
        for off, rec in jsonio.iter_jsonl(run.metrics, self.offset):
            self.offset = off
            self.feed(rec)
            n += 1
        for off, rec in jsonio.iter_jsonl(run.evals, self.evals_offset):
            self.evals_offset = off
            self.feed_eval(rec)
            n += 1
        return n

    def to_doc(self) -> SeriesDoc:
        series = {k: s.to_doc() for k, s in self.series.items()}
        series[EVAL_KEY] = self.eval_series.to_doc()
        return {"v": SCHEMA, "metrics_offset": self.offset, "metric_count": self.metric_count,
                "last_metrics": self.last_metrics, "restarts_at": list(self.restarts_at),
                "series": series, "evals_offset": self.evals_offset, "eval_count": self.eval_count,
                "last_eval": self.last_eval}

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
        except (KeyError, TypeError, ValueError, IndexError):
            return None
        return book


def path_of(run: rundir.RunDir) -> Path:
    return run.path / "series.json"


def save(run: rundir.RunDir, book: SeriesBook) -> None:
    jsonio.atomic_write_json(path_of(run), book.to_doc())


def load(run: rundir.RunDir, limit: int | None = DEFAULT_LIMIT) -> SeriesBook:
    """The run's book brought up to date: ``series.json`` when it matches ``metrics.jsonl`` (its
    offset inside the file, on a line boundary), else rebuilt from the start; then the records
    written since."""
    book = _cached(run, limit) or SeriesBook(limit)
    book.feed_file(run)
    return book


def _cached(run: rundir.RunDir, limit: int | None) -> SeriesBook | None:
    book = SeriesBook.from_doc(jsonio.read_json(path_of(run)), limit)
    if book is None or book.offset <= 0:
        return None
    try:
        with open(run.metrics, "rb") as f:
            if os.fstat(f.fileno()).st_size < book.offset:
                return None  # metrics.jsonl was replaced or cut: the book describes another file
            f.seek(book.offset - 1)
            if f.read(1) != b"\n":
                return None
    except OSError:
        return None
    if book.evals_offset and not _on_line_boundary(run.evals, book.evals_offset):
        # evals.jsonl replaced or cut: its part of the book is read again from the start
        book.eval_series, book.last_eval, book.eval_count, book.evals_offset = Series(limit), None, 0, 0
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

