"""The log tail's rendering: metric lines become aligned columns of step, loss, grad norm and lr
under one header line; every other line is shown as it is. Pure.

A run's lines are shown from the runner's own records: each metric record names the train.log
line it came from (``log_at``, ``moeconsole.runner.rundir.seriesfile.LineRecords``), so a line
with a record shows that record's values and a line without one is raw; nothing is parsed
twice. A log nobody supervises (``attach PATH``), or a run directory written before records
named their lines, has no such records: its lines are read by the one ``LogParser`` (any format
``moeconsole.runner.ingest`` reads, with the log's declared line format), the parse of each
distinct line cached (the tail repeats itself every poll)."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Sequence

from moeconsole.console import format as fmt
from moeconsole.runner.ingest.records import step_numbered
from moeconsole.runner.rundir.snapshot import LOG_TAIL_LINES

# The lines whose display is remembered: those of one tail (a snapshot carries at most
# LOG_TAIL_LINES; a line that has left the tail does not come back). The memory is held for as
# long as the console is attached: a line shown from a record holds that record (about 2 KB).
CACHE_LINES = LOG_TAIL_LINES
HEADER = ("step", "loss", "grad norm", "lr")
ENTRY_HEADER = "entry"   # the first column's header when the steps are log entries' numbers
Cells = tuple[str, str, str, str]


def record_cells(rec: dict | None) -> Cells | None:
    """The four cells of a metric record (the runner's, or a line's parse), or None for a record
    that is no training step with a loss (a memory report) or no record."""
    if rec is None or rec.get("step") is None or rec.get("loss") is None:
        return None
    step = fmt.intc(rec["step"]) + (f"/{fmt.intc(rec['max_steps'])}" if rec.get("max_steps") else "")
    return step, fmt.num(rec.get("loss")), fmt.num(rec.get("grad_norm")), fmt.num(rec.get("lr"), 3)


def parse_metric(line: str, line_format: Any = None) -> Cells | None:
    """The four cells of a metric line, or None for any other line (``line_format``: the log's
    declared line format, ``moeconsole.runner.ingest.userformat``, as the runner reads it). Only
    for a log without the runner's records."""
    # Imported at the first line parsed: the parser and its format regexes are about 2 MiB of an
    # attached console, which a run whose runner writes records never needs (docs/benchmarks-ui.md).
    from moeconsole.runner.ingest.parser import LogParser
    # A fresh parser per line: the tail is a window, so no state may leak between lines.
    try:
        events = LogParser(line_format=line_format).process_line(line.encode("utf-8", "replace"))
    except Exception:  # a line the parser chokes on is still worth showing as it is
        return None
    return record_cells(next((r for kind, r in events if kind == "record"), None))


def align(rows: list[str | tuple[str, ...]], numbered: bool = False) -> list[str]:
    """Metric rows (cell tuples) as right-aligned columns under a header; strings as they are.
    ``numbered``: the steps are log entries' numbers (``records.step_numbered``), and the first
    column says ``entry``, as the status line says ``log entry N``."""
    cells = [r for r in rows if isinstance(r, tuple)]
    if not cells:
        return [str(r) for r in rows]
    header = (ENTRY_HEADER, *HEADER[1:]) if numbered else HEADER
    widths = [max(len(header[i]), *(len(c[i]) for c in cells)) for i in range(len(header))]

    def line(c: tuple[str, ...]) -> str:
        return "  ".join(v.rjust(w) for v, w in zip(c, widths)).rstrip()
    return [line(header)] + [line(r) if isinstance(r, tuple) else r for r in rows]


class MetricColumns:
    """Log lines -> display lines. A line with the runner's record shows the record; without
    records (``records`` None) a line is parsed, the parse of the last ``CACHE_LINES`` lines
    remembered."""

    def __init__(self, line_format: Any = None) -> None:
        self.line_format = line_format
        self._cache: OrderedDict[str, tuple[str, ...] | str] = OrderedDict()
        # a line shown from a record: (that record, what it shows), while it is the line's record
        self._from_records: OrderedDict[str, tuple[dict | None, tuple[str, ...] | str]] = OrderedDict()

    def cell(self, line: str) -> tuple[str, ...] | str:
        """A line of a log without records: its parse (cached) or the line."""
        shown = self._cache.get(line)
        if shown is None:
            shown = parse_metric(line, self.line_format) or line.expandtabs(4)
            self._cache[line] = shown
            if len(self._cache) > CACHE_LINES:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(line)
        return shown

    def shown(self, line: str, rec: dict | None) -> tuple[str, ...] | str:
        """A line shown from the runner's record of it (None: the line as it is); remembered
        while the record is the same (the tail shows most lines again every poll)."""
        got = self._from_records.get(line)
        if got is not None and got[0] is rec:
            self._from_records.move_to_end(line)
            return got[1]
        shown = record_cells(rec) or line.expandtabs(4)
        self._from_records[line] = (rec, shown)
        if len(self._from_records) > CACHE_LINES:
            self._from_records.popitem(last=False)
        return shown

    def rows(self, lines, height: int | None = None,
             records: Sequence[dict | None] | None = None) -> list[str]:
        """The newest lines that fit in ``height`` (one goes to the header if any metric shows).
        ``records``: the runner's record of each line (None for a line without one), or None
        when the log has no records naming their lines (each line is then parsed)."""
        lines = list(lines)
        recs = list(records) if records is not None else None
        if height is not None:
            lines = lines[-height:]
            recs = recs[-height:] if recs is not None else None
        numbered = False
        if recs is not None:
            cells: list[tuple[str, ...] | str] = [self.shown(line, rec) for line, rec in zip(lines, recs)]
            newest = next((r for r, c in zip(reversed(recs), reversed(cells)) if isinstance(c, tuple)), None)
            numbered = step_numbered(newest)
        else:
            cells = [self.cell(line) for line in lines]
        if height == 1 and lines and isinstance(cells[-1], tuple):
            # one row (a short tmux pane): the header would take it and leave no line, and the
            # panel said "(train.log is empty)" of a log of thousands; the newest line as written
            return [lines[-1].expandtabs(4)]
        if height is not None and len(cells) >= height and any(isinstance(c, tuple) for c in cells):
            cells = cells[1:]
        return align(cells, numbered)
