"""Ingest as one pipe: bytes -> lines -> records -> columns, read in one direction.

    bytes ──► lines ──────────────► records ─────────────► columns (Batch)
    (PartialLine:      (_route: one place picks       (BatchBuilder: file order,
     complete lines,    the strategy per line family:   one build per read)
     the rest waits)    TemplateReader or LogParser)

A read (a slice of a growing ``train.log``, a chunk of a past log) goes through every stage
once: its complete lines become a block, ``_route`` hands each line to the strategy of its
family, both strategies append their records to one ``BatchBuilder`` in file order, and the
batch is built once. The strategies never call each other: the template strategy only claims
the lines of its shape (``moeconsole.runner.ingest.template``), the line parser only reads the lines it is
given (``moeconsole.runner.ingest.parser``). What one line leaves for the next (the last step, the count of
records, the line number) is the parser's reading context; when the template has read rows,
the pipe sets that context as the parser would have left it (``context_after_rows``).

Which strategy reads a line (the rule, in ``_route``):
- a line that arrived in pieces (its start in an earlier read) is the parser's;
- before a template is learned every line is the parser's; the first metric dict line the
  parser reads that ``Template.learn`` accepts teaches the template, and the rest of the block
  is routed again;
- with a template, a line of its exact shape whose values convert is the template's, every
  other line the parser's; if one value of the block's template lines does not convert, the
  block is the parser's;
- a block where the template read under a tenth of the lines and the parser gave over 100
  records forgets the template (the log changed shape): the next block learns again.

Ingest imports nothing from its consumers (the monitors, the memory watch, the supervisor):
an import contract in pyproject.toml.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

from moeconsole.runner.ingest.batch import Batch, BatchBuilder
from moeconsole.runner.ingest.linebuf import PartialLine
from moeconsole.runner.ingest.parser import RECORD, LogEvent, LogParser
from moeconsole.runner.ingest.template import Claim, Rows, Template, TemplateReader

# sources of dict lines a template may be learned from
DICT_SRCS = frozenset(("swift_dict", "swift_megatron", "hf_dict", "jsonl"))
MAX_LEARN = 64   # dict lines tried as templates before giving up on a file


class Strategy(Protocol):
    """A reader of one family of lines: reads a run of them into the batch, in file order;
    returns the number of lines read."""

    def read(self, run: Any, out: BatchBuilder) -> int: ...


@dataclass(slots=True)
class Lines:
    """A run of lines the parser reads one by one. ``before``: each line's count of lines
    before it in the log (None: the parser's count goes on); ``as_json``: the batch holds the
    records as NDJSON lines, like the template rows around them."""
    raw: list[bytes]
    before: list[int] | None = None
    as_json: bool = False
    at: list[int] | None = None   # each line's byte offset in the log (None: not tracked)


LINE_AT_KEEP = 4096   # the parser's recent lines whose offsets are kept (``ParserReader.line_at``)


class ParserReader:
    """The line parser as a strategy: every line it is given, one at a time. Keeps the log
    offset of the lines it read lately, by line number: a record a later line releases (a
    progress bar's last count, a step block, a dict cut by a newline) is stamped with the offset
    of the line it came from (``LogParser.origins``)."""

    def __init__(self, parser: LogParser) -> None:
        self.parser = parser
        self.line_at: dict[int, int] = {}

    def note(self, at: int) -> None:
        """The next line the parser reads starts at log offset ``at``."""
        self.line_at[self.parser.stats.lines + 1] = at
        if len(self.line_at) > LINE_AT_KEEP:
            del self.line_at[next(iter(self.line_at))]

    def offsets(self, events: list[LogEvent], at: int | None) -> list[int] | int | None:
        """The log offset of each record of ``events`` (what the parser's last call gave): the
        line each came from, else ``at`` (the line just read)."""
        origins = self.parser.origins
        if at is None or len(origins) != sum(1 for kind, _ in events if kind == RECORD):
            return at
        return [self.line_at.get(o, at) for o in origins]

    def read(self, run: Lines, out: BatchBuilder, until: Callable[[bytes, list[LogEvent]], bool] | None = None) -> int:
        """``until(line, events)``: stop after the line it is true for (the pipe learns a
        template from it and routes the rest again)."""
        parser = self.parser
        for i, raw in enumerate(run.raw):
            if run.before is not None:
                parser.stats.lines = run.before[i]   # process_line counts this line
            at = None if run.at is None else run.at[i]
            if at is not None:
                self.note(at)
            evs = parser.process_line(raw)
            out.add_events(evs, run.as_json, self.offsets(evs, at))
            if until is not None and until(raw, evs):
                return i + 1
        return len(run.raw)


class LinePipe:
    """One log's reader: bytes in, batches out. ``parser`` is the line parser (its statistics
    and reading context are the log's); ``template`` a template already learned (a second
    process reading the second half of a file starts with the first half's)."""

    def __init__(self, parser: LogParser, want_records: bool = False, template: Template | None = None,
                 json_lines: bool = False, keep_dicts: bool = False, columns: bool = False,
                 learn: bool = True) -> None:
        """``json_lines``: template rows are their NDJSON lines (bytes) in ``Batch.records``;
        ``keep_dicts`` (with it): the parser's records stay dicts (else, beside template rows,
        they become lines too). ``columns`` (with ``json_lines``): the batch's
        steps/values/present are filled for template rows too (the runner feeds its monitors
        and charts from them, never building a dict per row). ``learn=False``: no template is
        learned, every line is the parser's (a short scratch read)."""
        self.parser = parser
        self.partial = PartialLine(parser.max_line_bytes)   # the log's unfinished last line
        self.want_records = want_records or json_lines
        self.keep_dicts = keep_dicts
        self.templates = TemplateReader(template, self.want_records, json_lines, columns,
                                        after_rows=parser.context_after_rows)
        self.lines = ParserReader(parser)
        self.fast_lines = 0   # lines the template read
        self.slow_lines = 0   # lines the parser read
        self._learn_tries = 0 if learn else MAX_LEARN
        self.at = 0            # the log's byte offset of the next byte fed (``feed(data, at=...)``)
        self.partial_at = 0   # ... of the line waiting in ``partial``

    @property
    def template(self) -> Template | None:
        return self.templates.template

    @property
    def has_partial(self) -> bool:
        return self.partial.waiting

    def reset_partial(self) -> None:
        self.partial.reset()

    def keep_partial(self, rest: bytes, at: int) -> None:
        """The bytes after a read's last newline (starting at log offset ``at``) wait."""
        if rest and not self.partial.waiting:
            self.partial_at = at
        self.partial.append(rest)

    # ------------------------------------------------------------------ bytes -> lines

    def feed(self, data: bytes, at: int | None = None) -> Batch:
        """A read of a stream, cut anywhere: the records and marks of the lines it completes.
        The bytes after its last newline wait for the next read. ``at``: the log's byte offset
        of ``data[0]`` (default: right after the bytes fed before); each record of the batch
        carries the offset of the line that completed it (``Batch.at``)."""
        if at is not None:
            self.at = at
        at = self.at
        self.at += len(data)
        out = BatchBuilder(self.want_records)
        pos = 0
        if self.partial.waiting:
            nl = data.find(b"\n")
            if nl < 0:
                self.partial.append(data)
                self._read_redraws(out)
                return out.build()
            self.lines.note(self.partial_at)
            evs = self.parser.read_completed(*self.partial.complete(data[:nl]))
            out.add_events(evs, at=self.lines.offsets(evs, self.partial_at))
            self.slow_lines += 1
            pos = nl + 1
        last = data.rfind(b"\n", pos)
        if last >= pos:
            # the block starts with the newline before its first line (a template is anchored there)
            block = data[pos - 1:last + 1] if pos else b"\n" + data[:last + 1]
            self._route(block, len(block), out, at + pos - 1)
            pos = last + 1
        self.keep_partial(data[pos:], at + pos)
        self._read_redraws(out)
        return out.build()

    def _read_redraws(self, out: BatchBuilder) -> None:
        """The redraws of the unfinished line that a later carriage return overwrote, read now
        (``PartialLine.take_redraws``, ``LogParser.read_redraws``): a tqdm loop's steps show
        while its bar runs, not only once it closes."""
        taken = self.partial.take_redraws()
        if taken is None:
            return
        self.lines.note(self.partial_at)
        evs = self.parser.read_redraws(*taken)
        out.add_events(evs, at=self.lines.offsets(evs, self.partial_at))

    def read_block(self, buf: bytes, end: int, at: int | None = None) -> Batch:
        """Complete lines ``buf[1:end]`` (``buf[0]`` the newline that ended the line before),
        as a file reader hands them (no partial line may be waiting); ``at``: the log's byte
        offset of ``buf[1]`` (default: right after the bytes fed before)."""
        if at is not None:
            self.at = at
        base = self.at - 1
        self.at += end - 1
        out = BatchBuilder(self.want_records)
        self._route(buf, end, out, base)
        return out.build()

    def finish(self, final: bool) -> Batch:
        """The end of what there is to read; ``final``: the end of the log (a partial line is
        read as a line, a cut dict that never got its rest is a line not understood)."""
        out = BatchBuilder(self.want_records)
        if final:
            if self.partial.waiting:
                self.lines.note(self.partial_at)
                evs = self.parser.read_completed(*self.partial.complete())
                out.add_events(evs, at=self.lines.offsets(evs, self.partial_at))
            evs = self.parser.end_of_input()
            out.add_events(evs, at=self.lines.offsets(evs, -1))
        else:
            # the end of a part: a dict held for its next line gets its step now (the next line,
            # where the log is cut, is a template line, no bar), as one pass would give it
            self._release_held(out)
        return out.build()

    def release_waiting(self) -> Batch:
        """The attempt that writes the log has ended (``LogParser.release_waiting``): its last
        bar count or held dict, which the next line would have given, now."""
        out = BatchBuilder(self.want_records)
        evs = self.parser.release_waiting()
        out.add_events(evs, at=self.lines.offsets(evs, -1))
        return out.build()

    def _release_held(self, out: BatchBuilder) -> None:
        """The record of a step-less dict the parser holds for the line after it
        (``LogParser.release_held``), before anything the parser does not read (template rows)."""
        self.parser.origins.clear()
        evs = self.parser.release_held()
        if evs:
            out.add_events(evs, at=self.lines.offsets(evs, -1))

    # ------------------------------------------------------------------ lines -> records

    def _route(self, buf: bytes, end: int, out: BatchBuilder, at: int) -> None:
        """The one place that decides which strategy reads each line of a block (``at``: the
        log's byte offset of ``buf[0]``)."""
        while True:
            claim = self.templates.claim(buf, end)
            if claim is not None:
                if self.want_records:
                    claim.locate(buf, end, at)
                base, records = self.parser.stats.lines, out.parser_records
                for strategy, run in self._families(claim, base):
                    if strategy is self.templates:
                        self._release_held(out)   # the row is the held dict's next line
                    strategy.read(run, out)
                self._claimed(claim, base, out.parser_records - records)
                return
            lines = buf[1:end].split(b"\n")
            if lines and lines[-1] == b"":
                lines.pop()
            starts = _line_starts(lines, at + 1) if self.want_records else None
            n = self.lines.read(Lines(lines, at=starts), out,
                                until=self._learn if self.templates.template is None else None)
            self.slow_lines += n
            if n == len(lines):
                return
            # a template was just learned: the rest of the block (from the newline before it)
            rest = n + 1 + sum(map(len, lines[:n]))
            buf, end, at = buf[rest - 1:end], end - rest + 1, at + rest - 1

    def _families(self, claim: Claim, base: int) -> Iterator[tuple[Strategy, Rows | Lines]]:
        """A claimed block as runs of one family each, in file order: the template's rows, and
        each line it does not read (numbered as it stands in the log) for the parser."""
        as_json = claim.json_rows and not self.keep_dicts
        cur = 0   # matches before this one are in a run already
        for k, kind, raw, line in claim.specials:
            if k > cur:
                lo, hi = claim.rows_before(cur), claim.rows_before(k)
                if hi > lo:
                    yield self.templates, Rows(claim, lo, hi)
                cur = k
            yield self.lines, Lines([raw], [base + line - 1], as_json, claim.line_start(line))
            if kind:   # match k was this line (a dict of another shape), not a row
                cur = k + 1
        lo, hi = claim.rows_before(cur), len(claim.rows)
        if hi > lo:
            yield self.templates, Rows(claim, lo, hi)

    def _claimed(self, claim: Claim, base: int, parser_records: int) -> None:
        """The log's statistics after a claimed block; a template that read under a tenth of a
        block whose other lines gave over 100 records is forgotten (the log changed shape)."""
        stats = self.parser.stats
        n_rows = len(claim.rows)
        stats.lines = base + claim.n_lines
        stats.metric_lines += n_rows
        if n_rows:
            stats.formats[claim.template.src] += n_rows
        self.fast_lines += n_rows
        self.slow_lines += claim.n_lines - n_rows
        if n_rows * 10 < claim.n_lines and parser_records > 100:
            self.templates.template = None   # learn again from the next block
            self._learn_tries = 0

    def _learn(self, line: bytes, evs: list[LogEvent]) -> bool:
        """A template from a metric dict line the parser just read, if it makes one."""
        if self._learn_tries >= MAX_LEARN or not evs or evs[-1][0] != RECORD or evs[-1][1]["src"] not in DICT_SRCS:
            return False
        self._learn_tries += 1
        self.templates.template = Template.learn(line)
        return self.templates.template is not None


def _line_starts(lines: list[bytes], at: int) -> list[int]:
    """The byte offsets of consecutive lines (without their newlines), the first at ``at``."""
    out = []
    for line in lines:
        out.append(at)
        at += len(line) + 1
    return out


def learn_template(head: bytes, max_line_bytes: int = 1 << 20) -> Template | None:
    """The template of the first metric dict line in ``head`` (read with a scratch parser)."""
    parser = LogParser(max_line_bytes)
    tries = 0
    for line in head.split(b"\n")[:-1]:
        evs = parser.process_line(line)
        if evs and evs[-1][0] == RECORD and evs[-1][1]["src"] in DICT_SRCS:
            template = Template.learn(line)
            tries += 1
            if template is not None or tries >= MAX_LEARN:
                return template
    return None
