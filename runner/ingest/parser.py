"""LogParser: raw log bytes, in any chunking, to metric records and marks.

Stateful and incremental: ``feed`` takes whatever bytes arrived and returns records for the
lines completed by them; a partial last line waits for its newline (``flush`` reads it at
the end of a bulk read). It never raises on input: binary garbage, invalid UTF-8, truncated
dicts and absurdly long lines are counted in ``stats``, not fatal. A line whose visible text
is longer than ``max_line_bytes`` is not kept (counted as overlong); a partial line is
trimmed to its last carriage-return segment while it grows, so memory stays bounded.

Megatron prints its memory report (``[Rank N] (after N iterations) memory (MB) ...``) after
the iteration line of the same step, one line per model-parallel rank. The parser holds the
report until the next other line (or ``release_pending``/``flush``) and then emits one extra
record for that step: ``src: "megatron_mem"``, ``mem_gib`` = the highest ``max reserved`` over
the ranks (what ms-swift's ``memory(GiB)`` reports), the highest of each value over the ranks in
``extra`` under the ``records.MEMORY_FIELDS`` names, other fields None.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from runner.ingest import formats
from runner.ingest.lines import ANSI_RE, decode, split_rank, strip_bar, visible_segment
from runner.ingest.records import (MEM_ALLOCATED, MEM_MAX_ALLOCATED, MEM_MAX_RESERVED, MEM_RESERVED, classify_mapping,
                                   mark_from_mapping, record_from_mapping)

_STEP_WORDS = ("step", "iter")
MAX_EXAMPLES = 5
# Lines a trainer prints once when a training starts: Hugging Face Trainer, ms-swift, Megatron-LM.
_RUN_START_RE = re.compile(r"\*{5} Running training \*{5}|Start time of running main|"
                           r"\[before the start of training step\] datetime")

RECORD, MARK = "record", "mark"
Event = tuple[str, dict]


@dataclass
class ParseStats:
    lines: int = 0            # complete lines seen (blank ones included)
    metric_lines: int = 0     # lines that gave a metric record
    mark_lines: int = 0       # checkpoint saves, attempt markers, eval results, ...
    ignored_lines: int = 0    # understood but carrying nothing: progress bars, other memory reports
    unparsed_lines: int = 0   # non-blank lines not understood
    suspect_lines: int = 0    # ... of which looked like metrics (a dict; a step and a loss)
    overlong_lines: int = 0   # ... of which were longer than the cap
    formats: Counter = field(default_factory=Counter)
    examples: list = field(default_factory=list)   # (line number, text) of suspect lines
    processes: int = field(default=1, compare=False)   # processes that read the file (bulk)

    def merge(self, other: "ParseStats") -> None:
        for name in ("lines", "metric_lines", "mark_lines", "ignored_lines", "unparsed_lines",
                     "suspect_lines", "overlong_lines"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.formats.update(other.formats)
        room = MAX_EXAMPLES - len(self.examples)
        if room > 0:
            self.examples.extend(other.examples[:room])

    def to_dict(self) -> dict:
        return {"lines": self.lines, "metric_lines": self.metric_lines, "mark_lines": self.mark_lines,
                "ignored_lines": self.ignored_lines, "unparsed_lines": self.unparsed_lines,
                "suspect_lines": self.suspect_lines, "overlong_lines": self.overlong_lines,
                "formats": dict(self.formats), "examples": [list(e) for e in self.examples]}


def looks_like_metrics(text: str) -> bool:
    """A line not understood that a user would expect to be read: a step and a loss with
    numbers (argument dumps such as ``loss_type=None,`` are not)."""
    low = text.lower()
    return "loss" in low and any(w in low for w in _STEP_WORDS) and any(c.isdigit() for c in text)


class LogParser:
    """Stateful, incremental: feed raw bytes in any chunking; emits records for complete lines only."""

    def __init__(self, max_line_bytes: int = 1 << 20):
        self.max_line_bytes = max(int(max_line_bytes), 64)
        self.stats = ParseStats()
        self.records_emitted = 0
        self._buf = bytearray()
        self._skipping = False         # the partial line is over the cap: drop until newline
        self._marks: list[dict] = []
        self._last_step: int | None = None
        self._pending_mem: dict | None = None
        self._overlong_before = False  # a dropped overlong segment precedes the buffered text
        self._frag: tuple[str, int | None, int] | None = None  # (text, rank, lines) of a dict cut by a newline
        self._last_epoch: float | None = None   # epoch of the last record with an inferred step
        self._last_bar_step: int | None = None  # step of the last progress-bar record

    # ------------------------------------------------------------------ public API

    def feed(self, chunk: bytes) -> list[dict]:
        """Metric records for newly completed lines (marks wait in ``take_marks``)."""
        return self._split(self.feed_events(chunk))

    def flush(self) -> list[dict]:
        """At EOF (bulk mode): parse the trailing partial line and release held records."""
        return self._split(self.flush_events())

    def release_pending(self) -> list[dict]:
        """Everything written so far has been fed: emit a held memory record now."""
        return self._split(self._release())

    def take_marks(self) -> list[dict]:
        marks, self._marks = self._marks, []
        return marks

    def feed_events(self, chunk: bytes) -> list[Event]:
        """Like ``feed`` but returns records and marks together, in file order."""
        if not chunk:
            return []
        chunk = bytes(chunk)
        last_nl = chunk.rfind(b"\n")
        if last_nl < 0:
            self._append_partial(chunk)
            return []
        events: list[Event] = []
        first_nl = chunk.find(b"\n")
        start = 0
        if self._buf or self._skipping:
            self._append_partial(chunk[:first_nl])
            events.extend(self._complete_partial())
            start = first_nl + 1
        if start <= last_nl:
            for line in chunk[start:last_nl].split(b"\n"):
                events.extend(self.process_line(line))
        self._append_partial(chunk[last_nl + 1:])
        return events

    def flush_events(self) -> list[Event]:
        events: list[Event] = []
        if self._buf or self._skipping:
            events.extend(self._complete_partial())
        events.extend(self._drop_fragment())
        events.extend(self._release())
        return events

    def reset_partial(self) -> None:
        """Forget a partial line (the file was truncated or replaced under it)."""
        self._buf.clear()
        self._skipping = self._overlong_before = False

    @property
    def has_partial(self) -> bool:
        return bool(self._buf) or self._skipping

    def release_events(self) -> list[Event]:
        """``release_pending`` as events."""
        return self._release()

    def note_foreign(self, last_step: int, records: int) -> list[Event]:
        """The bulk reader read some metric lines itself (``records`` records, the last at
        ``last_step``): leave the state those lines would have left."""
        events = self._drop_fragment() + self._release()
        self.records_emitted += records
        self._last_step = last_step
        self._last_epoch = None
        return events

    # ------------------------------------------------------------------ lines

    def process_line(self, raw: bytes) -> list[Event]:
        """One complete line (without its newline)."""
        self.stats.lines += 1
        try:
            return self._classify(raw)
        except Exception:  # noqa: BLE001 - the parser must never raise on input
            self._unparsed("", suspect=False)
            return []

    def _classify(self, raw: bytes) -> list[Event]:
        seg = visible_segment(raw)
        if seg is None:
            return self._release()
        if len(seg) > self.max_line_bytes:
            events = self._drop_fragment() + self._release()
            self.stats.overlong_lines += 1
            self._unparsed("", suspect=False)
            return events
        events = []
        if b"\r" in raw and (b"it/s, " in raw or b"s/it, " in raw):   # bars with a postfix
            events = self._earlier_bars(raw, seg)
            if events:   # a held memory record belongs before them
                events = self._release() + events
        text = decode(seg)
        rank, text = split_rank(text)
        if self._frag is not None:
            joined = self._join_fragment(text)
            if joined is not None:
                return events + joined
        if text[:1] != "{" and text[-1:] == "}":
            # a dict glued to a progress bar with no carriage return between them
            had_bar, rest = strip_bar(text)
            if had_bar and rest[:1] == "{":
                text = rest
        if text[:1] == "{":
            if text[-1:] == "}":
                events += self._release()
                events.extend(self._object(text, rank))
                return events
            if ("':" in text or '":' in text) and len(text) < (64 << 10):
                # a dict cut by a stray newline: wait for the rest
                self._frag = (text, rank, 1)
                return events + self._release()
        had_bar, rest = strip_bar(text)
        if had_bar and not rest:
            events += self._release()
            got = formats.read_bar_postfix(text)
            if got is not None:
                events += self._bar_record(got, rank)
            else:
                self.stats.ignored_lines += 1
            return events
        text = rest
        # Megatron memory reports come one per rank after the iteration line: merge them.
        if text.startswith("[Rank ") and "memory (MB)" in text:
            report = formats.read_memory_report(text)
            if report is not None:
                return events + self._memory_report(report)
        events += self._release()
        mark = formats.read_mark(text)
        if mark is not None:
            return events + self._mark(mark)
        if _RUN_START_RE.search(text):
            self._new_run()
        for reader in (formats.read_megatron, formats.read_mmengine, formats.read_nanogpt_pipe,
                       formats.read_kv):
            if reader is formats.read_megatron and "iteration" not in text:
                continue
            if reader is formats.read_mmengine and "(train)" not in text:
                continue
            got = reader(text)
            if got is not None:
                mapping, src = got
                rec = record_from_mapping(mapping, src)
                if rec is not None:
                    return events + self._record(rec, rank)
        self._unparsed(text, suspect=looks_like_metrics(text))
        return events

    def _new_run(self) -> None:
        """A training (re)starts in this file: numbering of step-less records starts over."""
        self._last_step = None
        self._last_epoch = None
        self._last_bar_step = None

    def _join_fragment(self, text: str) -> list[Event] | None:
        """The line after a cut dict: events if it completes (or continues) the dict, None if
        it is something else (the fragment is then counted as not understood)."""
        assert self._frag is not None
        frag, rank, n = self._frag
        if text[:1] != "{" and text:
            joined = frag + text
            if joined.endswith("}") and formats.read_object(joined) is not None:
                self._frag = None
                self.stats.lines -= n    # the record is numbered like one line
                events = self._object(joined, rank)
                self.stats.lines += n
                return events
            if (not joined.endswith("}") and n < 4 and len(joined) < (64 << 10)
                    and ("':" in text or '":' in text) and text[-1:] == ","):
                self._frag = (joined, rank, n + 1)
                return []
        self._drop_fragment()
        return None

    def _drop_fragment(self) -> list[Event]:
        if self._frag is not None:
            self._unparsed(self._frag[0], suspect=True)
            self._frag = None
        return []

    def _earlier_bars(self, raw: bytes, seg: bytes) -> list[Event]:
        """Progress-bar redraws before the visible one, when they carry metrics with an explicit
        step: one record per new step (a terminal overwrote them, but the values were real)."""
        events: list[Event] = []
        parts = [p for p in raw.split(b"\r") if p.strip()]
        for part in parts[:-1]:
            if b"\x1b" in part:
                part = ANSI_RE.sub(b"", part)
            _, text = split_rank(decode(part))
            got = formats.read_bar_postfix(text)
            if got is not None and "step" in got[0]:
                events += self._bar_record(got, None)
        return events

    def _bar_record(self, got: tuple[dict, str], rank: int | None) -> list[Event]:
        mapping, src = got
        if "step" in mapping and mapping["step"] == self._last_bar_step:
            return []    # the same step redrawn
        rec = record_from_mapping(mapping, src, inferred_step=(self._last_step or 0) + 1)
        if rec is None:
            return []
        if "step" in mapping:
            self._last_bar_step = rec["step"]
        return self._record(rec, rank)

    def _object(self, text: str, rank: int | None) -> list[Event]:
        got = formats.read_object(text)
        if got is None:
            self._unparsed(text, suspect=True)
            return []
        mapping, src = got
        kind = classify_mapping(mapping)
        if kind == "metric":
            rec = record_from_mapping(mapping, src, inferred_step=(self._last_step or 0) + 1)
            if rec is not None:
                if rec["extra"].get("step_inferred"):
                    epoch = rec["epoch"]
                    if (epoch is not None and self._last_epoch is not None
                            and epoch < self._last_epoch - 1e-9):
                        # the epoch went back: a new run in the same file, count from 1
                        rec["step"] = 1
                    self._last_epoch = epoch
                else:
                    self._last_epoch = None
                return self._record(rec, rank)
        elif kind in ("eval", "summary", "final"):
            rec = record_from_mapping({k: v for k, v in mapping.items() if k != "log_history"}, src)
            return self._mark(mark_from_mapping(kind, mapping, rec["step"] if rec else None))
        self._unparsed(text, suspect=False)
        return []

    def _record(self, rec: dict, rank: int | None) -> list[Event]:
        if rank is not None:
            rec["extra"]["rank"] = rank
        self.records_emitted += 1
        self._last_step = rec["step"]
        self.stats.metric_lines += 1
        self.stats.formats[rec["src"]] += 1
        return [(RECORD, rec)]

    def _mark(self, mark: dict) -> list[Event]:
        if mark["kind"] == "attempt_marker":
            self._new_run()
        self.stats.mark_lines += 1
        mark["line"] = self.stats.lines
        mark["records_before"] = self.records_emitted
        return [(MARK, mark)]

    def _memory_report(self, report: dict) -> list[Event]:
        step = report["step"]
        pend = self._pending_mem
        events: list[Event] = []
        if pend is not None and pend["step"] != step:
            events = self._release()
            pend = None
        if step is None:
            self.stats.ignored_lines += 1
            return events
        values = report["values"]
        if pend is None:
            pend = self._pending_mem = {"step": step, "ranks": 0, "values": {}}
        pend["ranks"] += 1
        for k, v in values.items():
            pend["values"][k] = max(v, pend["values"].get(k, v))
        self.stats.metric_lines += 1
        self.stats.formats["megatron_mem"] += 1
        return events

    def _release(self) -> list[Event]:
        pend = self._pending_mem
        if pend is None:
            return []
        self._pending_mem = None
        values = dict(pend["values"])
        mem = next((values[k] for k in (MEM_MAX_RESERVED, MEM_RESERVED, MEM_MAX_ALLOCATED, MEM_ALLOCATED)
                    if values.get(k) is not None), None)
        extra: dict[str, Any] = {k: v for k, v in values.items()}
        extra["ranks"] = float(pend["ranks"])
        rec = {"step": pend["step"], "max_steps": None, "loss": None, "grad_norm": None, "lr": None,
               "mem_gib": mem, "tokens_per_s": None, "step_time_s": None, "epoch": None,
               "extra": extra, "src": "megatron_mem"}
        self.records_emitted += 1
        self._last_step = rec["step"]
        return [(RECORD, rec)]

    def _unparsed(self, text: str, suspect: bool) -> None:
        self.stats.unparsed_lines += 1
        if suspect:
            self.stats.suspect_lines += 1
            if len(self.stats.examples) < MAX_EXAMPLES:
                self.stats.examples.append((self.stats.lines, text[:200]))

    # ------------------------------------------------------------------ partial line

    def _append_partial(self, data: bytes) -> None:
        if not data:
            return
        if self._skipping:
            # Still inside an overlong segment; a carriage return starts a new one.
            cut = data.rfind(b"\r")
            if cut < 0:
                return
            self._skipping = False
            self._overlong_before = True
            data = data[cut:]
        self._buf += data
        if len(self._buf) <= self.max_line_bytes:
            return
        # Keep only the last non-blank carriage-return segment: the rest was overwritten.
        cut = self._buf.rfind(b"\r", 0, len(self._buf.rstrip()))
        if cut > 0:
            del self._buf[:cut]
        if len(self._buf) > self.max_line_bytes + 1:
            self._buf.clear()
            self._skipping = True

    def _complete_partial(self) -> list[Event]:
        overlong = self._skipping or self._overlong_before
        line = b"" if self._skipping else bytes(self._buf)
        self._skipping = self._overlong_before = False
        self._buf.clear()
        if overlong and visible_segment(line) is None:
            self.stats.lines += 1
            self.stats.overlong_lines += 1
            events = self._release()
            self._unparsed("", suspect=False)
            return events
        return self.process_line(line)

    def _split(self, events: list[Event]) -> list[dict]:
        """Records for the caller; marks kept for ``take_marks``."""
        self._marks.extend(obj for kind, obj in events if kind == MARK)
        return [obj for kind, obj in events if kind == RECORD]
