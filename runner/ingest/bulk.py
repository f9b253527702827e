"""Bulk reading of a past log: the same records as ``LogParser``, much faster.

Training logs repeat one line shape a million times. Once ``LogParser`` has read one metric
dict line, ``Template`` turns that line into a bytes regex (its exact keys and separators,
a capture group per value) and ``ChunkScanner`` runs it over whole multi-megabyte chunks
with ``findall``; values become numpy columns. Every line the template does not match
exactly (other formats, save messages, eval dicts, odd values) goes through the normal
``LogParser.process_line``, in file order, and the parser's state is kept as if it had read
every line itself. Tests compare both paths on mixed files.

``fold_file`` also splits a big file in two at a template line (the parser state after such
a line is fully determined by the line) and folds the first part in a forked process.
"""
from __future__ import annotations

import bisect
import os
import pickle
import re
import signal
import struct
import tempfile
import threading
from dataclasses import dataclass, field
from itertools import compress
from operator import itemgetter
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from runner.ingest.formats import object_src
from runner.ingest.lines import visible_segment
from runner.ingest.parser import MARK, RECORD, LogParser, ParseStats
from runner.ingest.pydict import bare_value
from runner.ingest.records import (FIELD_KEYS, MAX_STEP_KEYS, STEP_KEYS, classify_mapping, eval_key,
                                   parse_number, record_from_mapping)
from runner.rundir.jsonio import dumps
from runner.core.columns import COLUMN_FIELDS, records_to_columns
from runner.rundir.secrets import is_secret_name, mask_lines

CHUNK = 8 << 20
FIRST_CHUNK = 256 << 10
SPLIT_MIN_BYTES = 8 << 20   # below this a second process costs more than it saves

_NONCLOSE_RE = re.compile(rb"\n(?<!\}\n)")
_CLOSE_RE = re.compile(rb"\}\n")
_DICT_SRCS = frozenset(("swift_dict", "swift_megatron", "hf_dict", "jsonl"))
_PAIR_RE = re.compile(
    rb"(?P<key>'[^'\\\r\n]*'|\"[^\"\\\r\n]*\")(?P<colon>[ \t]*:[ \t]*)"
    rb"(?P<val>'[^'\\\r\n]*'|\"[^\"\\\r\n]*\"|[-+\w.]+)(?P<sep>[ \t]*,[ \t]*|[ \t]*\})")
# A number as a template captures it: float() accepts exactly what parse_number accepts among
# such strings (no underscores, no inner blanks); anything float() rejects sends the chunk to
# the parser.
_NUM_QUOTED = rb"[^'\"\\\r\n\x00_ \t]{1,64}"
_NUM_BARE = rb"[-+.0-9A-Za-z]{1,64}"
# Lines after a template line that are neither templates nor dicts: no carriage return, not
# starting with '{' (captured by a look-ahead, so the next match's anchor stays available).
_TRAIL = rb"(?=\n((?:[^\r\n{][^\r\n]*\n|\n)*))"
_HEAD_RE = re.compile(rb"(?:[^\r\n{][^\r\n]*\n|\n)*")
_DIGITS_RE = re.compile(rb"\d+(?:/\d+)?")
_CONVERT = {  # converter name in FIELD_KEYS -> vectorised form
    "_ident": None, "_mib_to_gib": 1024.0, "_ms_to_s": 1000.0, "_rate_to_period": "rate",
}

# NDJSON mode: values whose text is already what ``json.dumps`` writes for the record's value,
# so a template line becomes its JSON line by one ``%`` format. A float's JSON is its repr: the
# shortest round-trip digits (ensured here by at most 15 significant digits and no trailing
# zero), fixed notation from 1e-4 up to 1e16, else d.ddde[+-]XX. Anything else (a trailing
# zero, more digits, NaN, an odd spelling) does not match and goes through the parser like any
# other line. Bounded repetitions instead of look-aheads: they cost less per value.
_J_FLOAT = (rb"(?:-?(?:[1-9][0-9]{0,6}\.(?:0|[0-9]{0,7}[1-9])|0\.(?:0|0{0,3}[1-9](?:[0-9]{0,13}[1-9])?))"
            rb"|-?[1-9](?:\.[0-9]{0,13}[1-9])?e(?:-(?:0[5-9]|[1-9][0-9]|[12][0-9]{2})"
            rb"|\+(?:1[6-9]|[2-9][0-9]|[12][0-9]{2})))")
_J_INT = rb"(?:0|[1-9][0-9]{0,15})"           # a step: no leading zero
_J_INT_FLOAT = rb"(?:-?(?:0|[1-9][0-9]{0,14}))"  # an integer read as a float: JSON adds ".0"


def _json_text(quote: bytes) -> bytes:
    """Quoted text that stays text and needs no JSON escaping: printable ASCII without quotes
    or backslash, at most 200 characters, with at least one character that cannot be part of
    a number or of a NaN/inf spelling (so ``parse_number`` would not read it)."""
    allowed = bytes(c for c in range(0x20, 0x7F) if c not in (ord(quote), 0x22, 0x5C))
    non_num = bytes(c for c in allowed if c not in b"-+.0123456789eE nNaAiIfFtTyY")
    cls = b"[" + b"".join(re.escape(bytes([c])) for c in allowed) + b"]"
    ncls = b"[" + b"".join(re.escape(bytes([c])) for c in non_num) + b"]"
    return cls + b"{0,100}" + ncls + cls + b"{0,99}"


# ----------------------------------------------------------------------------- template

@dataclass
class _Value:
    key: str            # decoded key
    quote: bytes        # b"'", b'"' or b"" (bare)
    role: str           # "step", "max_steps", a record field name, or "extra"
    group: int = 0      # first capture group (1-based) in the summary regex, 0 if not captured
    rgroup: int = 0     # capture group in the records regex
    slash: bool = False  # step value is "i/N"
    json: str = ""      # NDJSON mode: "int" (step), "float", "intfloat" or "text"


class Template:
    """One dict line shape, compiled to regexes over raw bytes."""

    def __init__(self, anchor: bytes, values: list[_Value], body_parts: list[tuple[bytes, int]],
                 src: str, texts: dict[str, str] | None = None):
        self._learned = texts or {}     # each value's text in the line it was learned from
        self.anchor = anchor
        self.values = values
        self.src = src
        self.keys = [v.key for v in values]
        self.rx = self._compile(body_parts, records=False)
        self.rx_records = self._compile(body_parts, records=True)
        self.rx_json: re.Pattern | None = None
        self.json_line: Callable[[tuple], bytes] | None = None
        self.json_rows: Callable[[list], list[bytes]] = lambda rows: []
        if texts is not None and self._plan_json():
            self.rx_json = self._compile(body_parts, records=True, json=True)
            self.json_line = self._json_formatter()

    def _compile(self, parts: list[tuple[bytes, int]], records: bool, json: bool = False) -> re.Pattern:
        out = [re.escape(self.anchor), rb"\{(?:"]
        group = 0
        for literal, vi in parts:
            out.append(re.escape(literal))
            if vi < 0:
                continue
            v = self.values[vi]
            capture = records or v.role in ("step", "max_steps") or v.role in COLUMN_FIELDS
            if json:
                if v.json == "text":
                    pat, width = b"(" + _json_text(v.quote) + b")", 1
                elif v.role == "step" and v.slash:
                    pat, width = b"(" + _J_INT + b")/(" + _J_INT + b")", 2
                else:
                    inner = {"int": _J_INT, "float": _J_FLOAT, "intfloat": _J_INT_FLOAT}[v.json]
                    pat, width = b"(" + inner + b")", 1
                if v.quote:
                    pat = re.escape(v.quote) + pat + re.escape(v.quote)
                group += width
                out.append(pat)
                continue
            if v.role == "step":
                if v.slash:   # summary mode needs max_steps only once per chunk (see last_max)
                    pat, width = (rb"(\d+)/(\d+)", 2) if records else (rb"(\d+)/\d+", 1)
                else:
                    pat, width = rb"(\d+)", 1
            elif v.role == "max_steps":
                pat, width = (rb"(\d+)", 1) if records else (rb"\d+", 0)
            elif v.role != "extra":
                num = _NUM_QUOTED if v.quote else _NUM_BARE
                pat, width = (b"(" + num + b")", 1) if capture else (num, 0)
            elif v.quote:
                q = re.escape(v.quote)
                inner = rb"[^" + q + rb"\\\r\n\x00]*"
                pat, width = (b"(" + inner + b")", 1) if capture else (inner, 0)
            else:
                pat, width = (rb"([-+\w.]+)", 1) if capture else (rb"[-+\w.]+", 0)
            if v.quote:
                pat = re.escape(v.quote) + pat + re.escape(v.quote)
            if width:
                if records:
                    v.rgroup = group + 1
                else:
                    v.group = group + 1
            group += width
            out.append(pat)
        # or any other dict (its template groups stay empty; NDJSON mode captures its text);
        # then the plain lines that follow (the last group, "trail")
        out.append((rb"|([^\r\n]*\}))" if json else rb"|[^\r\n]*\})") + _TRAIL)
        return re.compile(b"".join(out))

    def _plan_json(self) -> bool:
        """Decide each value's JSON form from the learned line; False when some value cannot be
        copied (a unit conversion, a bare word, a container)."""
        for v in self.values:
            if v.role in ("step", "max_steps"):
                v.json = "int"
                continue
            if v.role != "extra":
                conv = next(c for k, c in FIELD_KEYS[v.role] if k in self.keys)
                if conv.__name__ != "_ident":
                    return False
            text = self._learned[v.key]
            if parse_number(text) is None:
                if v.role != "extra" or not v.quote:
                    return False
                v.json = "text"
            elif re.fullmatch(r"-?\d+", text.strip()):
                v.json = "intfloat"
            else:
                v.json = "float"
        return True

    def _json_formatter(self) -> Callable[[tuple], bytes]:
        """row (the records regex's groups) -> its NDJSON line, as ``runner.rundir.jsonio.dumps``
        writes the record (``{"v": 1, ...}``)."""
        import json as _json
        from runner.ingest.records import RECORD_FIELDS
        by_role = {v.role: v for v in self.values if v.role != "extra"}
        pieces: list[bytes] = []
        order: list[int] = []

        def lit(text: str) -> None:
            pieces.append(text.encode().replace(b"%", b"%%"))

        def val(v: _Value, g: int) -> None:
            order.append(g)
            pieces.append({"text": b'"%s"', "intfloat": b"%s.0"}.get(v.json, b"%s"))

        step = by_role["step"]
        lit('{"v":1,"step":')
        val(step, step.rgroup - 1)
        lit(',"max_steps":')
        if step.slash:
            order.append(step.rgroup)
            pieces.append(b"%s")
        elif "max_steps" in by_role:
            val(by_role["max_steps"], by_role["max_steps"].rgroup - 1)
        else:
            lit("null")
        for fname in RECORD_FIELDS:
            lit(f',"{fname}":')
            if fname in by_role:
                val(by_role[fname], by_role[fname].rgroup - 1)
            else:
                lit("null")
        lit(',"extra":{')
        first = True
        for v in self.values:
            if v.role != "extra":
                continue
            lit(("" if first else ",") + _json.dumps(str(v.key)[:100]) + ":")
            val(v, v.rgroup - 1)
            first = False
        lit("}," + '"src":' + _json.dumps(self.src) + "}\n")
        fmt = b"".join(pieces)
        getter = itemgetter(*order) if len(order) > 1 else (lambda row, g=order[0]: (row[g],))
        texts = [v.rgroup - 1 for v in self.values if v.role == "extra" and v.json == "text"]
        if texts:  # a quoted text value may hold a token the training printed: masked on the way out
            probe = itemgetter(*texts) if len(texts) > 1 else (lambda row, g=texts[0]: (row[g],))
            self.json_rows = lambda rows: mask_lines(list(map(fmt.__mod__, map(getter, rows))),
                                                     probe=b"\n".join(b"\n".join(probe(r)) for r in rows))
        else:
            self.json_rows = lambda rows: list(map(fmt.__mod__, map(getter, rows)))
        return lambda row: fmt % getter(row)

    def step_group(self, records: bool) -> int:
        """0-based group of the step (empty/None on a match of another dict shape)."""
        v = next(v for v in self.values if v.role == "step")
        return (v.rgroup if records else v.group) - 1

    def last_max(self, buf: bytes, end: int) -> int | None:
        """max_steps of the last template line in buf[:end] (summary mode does not capture it)."""
        mg = self.max_steps_group(True)
        if mg is None:
            return None
        start = max(0, end - (64 << 10))
        while True:
            last = None
            for m in self.rx_records.finditer(buf, start, end):
                if m.group(1 + self.step_group(True)) is not None:
                    last = m
            if last is not None:
                return int(last.group(1 + mg))
            if start == 0:
                return None
            start = max(0, start - (1 << 20))

    def numeric_groups(self, records: bool) -> list[tuple[str, int]]:
        """(role, 0-based group) of the step and the monitored fields, in group order."""
        out = []
        for v in self.values:
            g = (v.rgroup if records else v.group) - 1
            if v.role == "step" or v.role in COLUMN_FIELDS:
                out.append((v.role, g))
        return sorted(out, key=lambda rg: rg[1])

    def max_steps_group(self, records: bool) -> int | None:
        """0-based group of max_steps; only the records regex captures it."""
        if not records:
            return None
        for v in self.values:
            g = (v.rgroup if records else v.group) - 1
            if v.role == "step" and v.slash:
                return g + 1
            if v.role == "max_steps":
                return g
        return None

    @classmethod
    def learn(cls, raw: bytes) -> "Template | None":
        """A template from one raw line whose visible text is a flat dict, or None."""
        seg = visible_segment(raw)
        if seg is None or not raw.endswith(seg) or not (seg.startswith(b"{") and seg.endswith(b"}")):
            return None
        if len(raw) == len(seg):
            anchor = b"\n"
        elif raw[len(raw) - len(seg) - 1:len(raw) - len(seg)] == b"\r":
            anchor = b"\r"
        else:
            return None
        if b"\x1b" in raw[len(raw) - len(seg) - 1:] or b"\x00" in seg:
            return None
        pos, parts, values, literal = 1, [], [], b""
        mapping: dict[str, Any] = {}
        texts: dict[str, str] = {}
        while pos < len(seg):
            m = _PAIR_RE.match(seg, pos)
            if m is None:
                return None
            key_raw, val_raw = m.group("key"), m.group("val")
            quote = val_raw[:1] if val_raw[:1] in (b"'", b'"') else b""
            key = key_raw[1:-1].decode("utf-8", "replace")
            text = val_raw[1:-1].decode("utf-8", "replace") if quote else val_raw.decode("ascii", "replace")
            mapping[key] = text if quote else bare_value(text)
            texts[key] = text
            values.append(_Value(key, quote, "extra"))
            parts.append((literal + key_raw + m.group("colon"), len(values) - 1))
            literal = m.group("sep")
            pos = m.end()
            if b"}" in literal:
                if pos != len(seg):
                    return None
                break
        else:
            return None
        parts.append((literal, -1))
        if classify_mapping(mapping) != "metric" or any(eval_key(k) is not None for k in mapping) \
                or not cls._assign_roles(values, mapping):
            return None   # evaluation values beside the step's go through the parser
        if any(is_secret_name(k) for k in mapping):
            return None  # a secret-named value: the parser's records mask it, a template would copy it
        src = object_src(mapping, json_text=seg.startswith(b'{"'))
        return cls(anchor, values, parts, src, texts)

    @staticmethod
    def _assign_roles(values: list[_Value], mapping: dict) -> bool:
        """Mark the values record_from_mapping reads as step/max_steps/fields. Only shapes
        where that choice cannot depend on a line's values are accepted."""
        by_key = {v.key: v for v in values}
        if len(by_key) != len(values):
            return False
        steps = [k for k in STEP_KEYS if k in by_key]
        if len(steps) != 1:
            return False
        sv = by_key[steps[0]]
        raw = mapping[sv.key]
        text = raw if isinstance(raw, str) else str(raw)
        if isinstance(raw, bool) or not _DIGITS_RE.fullmatch(text.encode()):
            return False
        sv.role, sv.slash = "step", "/" in text
        maxes = [k for k in MAX_STEP_KEYS if k in by_key]
        if sv.slash and maxes:
            return False
        if maxes:
            if len(maxes) > 1:
                return False
            mv = by_key[maxes[0]]
            mraw = mapping[mv.key]
            if isinstance(mraw, bool) or not str(mraw).isdigit():
                return False
            mv.role = "max_steps"
        for fname, keys in FIELD_KEYS.items():
            present = [k for k, _ in keys if k in by_key]
            if not present:
                continue
            for k in present:
                if parse_number(mapping[k]) is None:
                    return False
            by_key[present[0]].role = fname
        return True

    def converter(self, fname: str) -> Any:
        for key, conv in FIELD_KEYS[fname]:
            if key in self.keys:
                return _CONVERT[conv.__name__]
        return None


# ----------------------------------------------------------------------------- batches

@dataclass
class Batch:
    """Metric records of one chunk as columns (plus marks at record positions)."""
    steps: np.ndarray
    values: dict[str, np.ndarray]
    present: dict[str, np.ndarray]
    max_steps: int | None = None                        # of the last record that had one
    marks: list[tuple[int, dict]] = field(default_factory=list)   # (records before it, mark)
    records: list[Any] | None = None   # records mode only: dicts, or (NDJSON mode) a template row's JSON line

    def __len__(self) -> int:
        return len(self.steps)


def batch_from_events(events: list[tuple[str, dict]], want_records: bool) -> Batch:
    """A batch from LogParser events (the general path)."""
    recs = [obj for kind, obj in events if kind == RECORD]
    marks, n = [], 0
    for kind, obj in events:
        if kind == RECORD:
            n += 1
        else:
            marks.append((n, obj))
    steps, values, present = records_to_columns(recs)
    mx = next((r["max_steps"] for r in reversed(recs) if r.get("max_steps") is not None), None)
    return Batch(steps, values, present, mx, marks, recs if want_records else None)


class _LazySteps:
    """The step column of template rows, read only where it is needed (NDJSON mode: the
    parser's state before other lines, and the last row); a numpy array on demand."""

    def __init__(self, rows: list, group: int):
        self.rows, self.group = rows, group

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int) -> int:
        return int(self.rows[i][self.group])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.fromiter(map(int, map(itemgetter(self.group), self.rows)), dtype=np.int64,
                           count=len(self.rows))


class ChunkScanner:
    """Reads chunks of complete lines with a template where it can, the parser elsewhere.

    A chunk is ``buf[1:end]`` where ``buf[0]`` is the newline that ended the line before it
    (so a template anchored at a line start matches the first line too)."""

    MAX_LEARN = 64   # dict lines tried as templates before giving up on a file

    def __init__(self, parser: LogParser, want_records: bool = False, template: Template | None = None,
                 json_lines: bool = False, keep_dicts: bool = False, columns: bool = False):
        """``keep_dicts`` (with ``json_lines``): the parser's own records stay dicts, only
        template rows become JSON lines. ``columns`` (with ``json_lines``): the batch's
        steps/values/present columns are filled for template rows too (the runner feeds its
        monitors and charts from them, never building a dict per row)."""
        self.parser = parser
        self.keep_dicts = keep_dicts
        self.columns = columns
        self.want_records = want_records or json_lines
        # NDJSON mode: template rows become their JSON lines (bytes) in ``Batch.records``
        self.json_lines = json_lines
        self.template = template
        self.fast_lines = 0
        self.slow_lines = 0
        self._learn_tries = 0

    def scan(self, buf: bytes, end: int) -> Batch:
        if self.template is None:
            return self._general(buf, end)
        rx = self._rx()
        trail = rx.groups - 1
        head_m = _HEAD_RE.match(buf, 1, end)   # matches at least the empty string
        head = head_m.end() if head_m else 1
        tuples = rx.findall(buf, head - 1, end)
        n_lines = buf.count(b"\n", 1, end)
        n_head = buf.count(b"\n", 1, head)
        specials = [(0, 0, line, i + 1) for i, line in enumerate(buf[1:head].split(b"\n")[:-1])]
        n_trail = 0
        # NDJSON mode captures the text of a dict the template does not match (group before
        # the trail), so such dicts go to the parser here instead of the slow exact path
        alt = trail - 1 if rx is self._t.rx_json else None
        alt_rows: set[int] = set()
        with_trail: Iterable[int] = compress(range(len(tuples)), map(itemgetter(trail), tuples))
        if alt is not None:
            alt_rows = set(compress(range(len(tuples)), map(itemgetter(alt), tuples)))
            if alt_rows:
                with_trail = sorted(alt_rows.union(with_trail))
        for j in with_trail:
            line_no = n_head + j + 1 + n_trail      # line number of match j
            if j in alt_rows:
                specials.append((j, 1, b"{" + tuples[j][alt], line_no))
            lines = tuples[j][trail].split(b"\n")[:-1]
            specials.extend((j + 1, 0, line, line_no + i + 1) for i, line in enumerate(lines))
            n_trail += len(lines)
        # Every line is a head line, a match, or a plain line trailing a match: if the counts
        # agree nothing was skipped. Dicts of another shape (empty groups) fail the conversion.
        if n_head + len(tuples) + n_trail == n_lines:
            rows = [tp for j, tp in enumerate(tuples) if j not in alt_rows] if alt_rows else tuples
            cols = self._columns(rows)
            if cols is not None:
                if not self.want_records and tuples:
                    cols["max"] = self._t.last_max(buf, end)
                return self._assemble(tuples, cols, alt_rows, specials, n_lines)
        return self._positions(buf, end, rx, n_lines)

    @property
    def _t(self) -> Template:
        """The learned template (only called on paths that have one)."""
        t = self.template
        assert t is not None
        return t

    def _rx(self) -> re.Pattern:
        t = self._t
        if self.json_lines and t.rx_json is not None:
            return t.rx_json
        return t.rx_records if self.want_records else t.rx

    @property
    def _json_rows(self) -> bool:
        return self.json_lines and self.template is not None and self.template.json_line is not None

    def _positions(self, buf: bytes, end: int, rx: re.Pattern, n_lines: int) -> Batch:
        """Exact ordering from match positions: used when some line is neither a match nor a
        plain line, or a dict of another shape shows up (its template groups are None)."""
        step_g = self._t.step_group(self.want_records)
        ends: list[int] = []
        tuples: list[tuple] = []
        alt_rows: set[int] = set()
        alt_text: dict[int, bytes] = {}
        for m in rx.finditer(buf, 0, end):
            if m.group(step_g + 1) is None:
                alt_rows.add(len(tuples))
                alt_text[len(tuples)] = buf[m.start() + 1:m.end()]
            ends.append(m.end())
            tuples.append(m.groups())
        matched = set(ends)
        line_ends = [m.start() for m in _NONCLOSE_RE.finditer(buf, 0, end) if m.start() > 0]
        line_ends += [m.start() + 1 for m in _CLOSE_RE.finditer(buf, 0, end) if m.start() + 1 not in matched]
        found = [(bisect.bisect_left(ends, p), 0, p) for p in line_ends]
        found += [(j, 1, ends[j]) for j in alt_rows]
        found.sort(key=lambda sp: sp[2])
        specials, nl, prev = [], 0, 1
        for k, kind, p in found:
            nl += buf.count(b"\n", prev, p)
            prev = p
            raw = alt_text[k] if kind else buf[buf.rfind(b"\n", 0, p) + 1:p]
            specials.append((k, kind, raw, nl + 1))
        rows = [tp for j, tp in enumerate(tuples) if j not in alt_rows] if alt_rows else tuples
        cols = self._columns(rows)
        if cols is None:  # a value the template cannot vouch for: the parser reads the chunk
            return self._general(buf, end)
        if not self.want_records and rows:
            cols["max"] = self._t.last_max(buf, end)
        return self._assemble(tuples, cols, alt_rows, specials, n_lines)

    def _assemble(self, tuples: list, cols: dict, alt_rows: set, specials: list, n_lines: int) -> Batch:
        """Template rows and the parser's events for the special lines, in file order.

        ``specials`` are (k, kind, raw, line) sorted by line: kind 0 is a line before match
        k, kind 1 is match k itself, a dict of another shape; ``line`` is its line number
        in the chunk."""
        parser, t = self.parser, self._t
        if alt_rows:
            is_row = np.ones(len(tuples), dtype=np.int64)
            is_row[list(alt_rows)] = 0
            row_at = np.concatenate(([0], np.cumsum(is_row)))
            match_of_row = np.flatnonzero(is_row)
        else:
            row_at = None
            match_of_row = np.arange(len(tuples), dtype=np.int64)
        steps = cols["steps"]
        line_base = parser.stats.lines
        events: list[tuple[int, int, tuple[str, dict]]] = []   # (slot, seq, event)
        cur = 0

        def rows_before(j: int) -> int:
            return j if row_at is None else int(row_at[j])

        def add(slot: int, evs: list) -> None:
            for ev in evs:
                events.append((slot, len(events), ev))

        def foreign(upto: int) -> None:
            """Template matches cur..upto-1 were read here: let the parser know."""
            nonlocal cur
            if upto <= cur:
                return
            n_rows = rows_before(upto) - rows_before(cur)
            if n_rows:
                add(2 * cur, parser.note_foreign(int(steps[rows_before(upto) - 1]), n_rows))
            cur = upto

        for k, kind, raw, line in specials:
            foreign(k)
            parser.stats.lines = line_base + line - 1   # process_line counts this line
            if kind == 0:
                add(2 * k, parser.process_line(raw))
            else:
                add(2 * k + 1, parser.process_line(raw))
                cur = k + 1
        foreign(len(tuples))
        parser.stats.lines = line_base + n_lines
        n_rows = len(match_of_row)
        parser.stats.metric_lines += n_rows
        if n_rows:
            parser.stats.formats[t.src] += n_rows
        self.fast_lines += n_rows
        self.slow_lines += n_lines - n_rows
        rows = [tuples[j] for j in match_of_row.tolist()] if alt_rows else tuples
        batch = self._merge(cols, rows, events, match_of_row)
        if n_rows * 10 < n_lines and len(batch) - n_rows > 100:
            self.template = None   # the file changed shape: learn again from the next chunk
            self._learn_tries = 0
        return batch

    def _columns(self, rows: list) -> dict[str, Any] | None:
        """Template rows as columns, one float() pass per column; None if a value does not convert
        (an other-shaped dict, or a value only the parser knows what to do with)."""
        t = self._t
        n = len(rows)
        if self._json_rows and not self.columns:   # the JSON lines need no columns; the step keeps the parser's state
            g = t.step_group(True)
            if b"" in map(itemgetter(g), rows):   # a dict of another shape: exact positions
                return None
            steps = _LazySteps(rows, g)
            return {"steps": steps, "max": None,
                    "values": {f: np.full(n, np.nan) for f in COLUMN_FIELDS},
                    "present": {f: np.zeros(n, dtype=bool) for f in COLUMN_FIELDS}}
        col: dict[str, np.ndarray] = {}
        try:
            for role, g in t.numeric_groups(self.want_records):
                col[role] = np.fromiter(map(float, map(itemgetter(g), rows)), dtype=np.float64, count=n)
        except ValueError:
            return None
        if n and float(col["step"].max()) >= 2.0 ** 53:
            return None
        values: dict[str, np.ndarray] = {}
        present: dict[str, np.ndarray] = {}
        for fname in COLUMN_FIELDS:
            if fname not in col:
                values[fname], present[fname] = np.full(n, np.nan), np.zeros(n, dtype=bool)
                continue
            x, ok = col[fname], np.ones(n, dtype=bool)
            conv = t.converter(fname)
            if conv == "rate":
                ok = x != 0
                x = np.where(ok, 1.0 / np.where(ok, x, 1.0), np.nan)
            elif conv is not None:
                x = x / conv
            values[fname], present[fname] = x, ok
        mx = None
        mg = t.max_steps_group(self.want_records)
        if n and mg is not None:
            mx = int(rows[-1][mg])
        return {"steps": col["step"].astype(np.int64), "values": values, "present": present, "max": mx}

    def _template_records(self, rows: list) -> list[Any]:
        """Records mode: each row through record_from_mapping, exactly as the parser does
        (NDJSON mode: each row's JSON line, the same text ``dumps`` gives that record)."""
        t = self._t
        if self._json_rows:
            return t.json_rows(rows)
        recs = []
        for tp in rows:
            mapping: dict[str, Any] = {}
            for v in t.values:
                g = v.rgroup - 1
                if v.role in ("step", "max_steps"):
                    text = tp[g].decode() + ("/" + tp[g + 1].decode() if v.slash else "")
                else:
                    text = tp[g].decode("utf-8", "replace")
                mapping[v.key] = text if v.quote else bare_value(text)
            rec = record_from_mapping(mapping, t.src)
            if rec is not None:
                recs.append(rec)
        return recs

    def _merge(self, cols: dict, rows: list, events: list, match_of_row: np.ndarray) -> Batch:
        n_rows = len(rows)
        t_values, t_present = cols["values"], cols["present"]
        t_recs = self._template_records(rows) if self.want_records else None
        if not events:
            return Batch(cols["steps"], t_values, t_present, cols["max"], [], t_recs)
        recs = [(slot, seq, obj) for slot, seq, (kind, obj) in events if kind == RECORD]
        if not recs:   # only marks: the template rows are already in order
            slots_of_rows = 2 * match_of_row + 1
            marks = [(int(np.searchsorted(slots_of_rows, slot)), obj) for slot, _, (_, obj) in events]
            return Batch(cols["steps"], t_values, t_present, cols["max"], marks, t_recs)
        # Order key: template row at match j -> slot 2j+1; an event carries its slot, and
        # its sequence number orders events that share a slot.
        g_steps, g_values, g_present = records_to_columns([obj for _, _, obj in recs])
        key = np.concatenate((
            (2 * match_of_row + 1) << 32,
            np.array([(slot << 32) + seq for slot, seq, _ in recs], dtype=np.int64)))
        order = np.argsort(key, kind="stable")
        sorted_key = key[order]
        steps = np.concatenate((cols["steps"], g_steps))[order]
        values = {f: np.concatenate((t_values[f], g_values[f]))[order] for f in COLUMN_FIELDS}
        present = {f: np.concatenate((t_present[f], g_present[f]))[order] for f in COLUMN_FIELDS}
        marks = [(int(np.searchsorted(sorted_key, (slot << 32) + seq)), obj)
                 for slot, seq, (kind, obj) in events if kind == MARK]
        # max_steps of the last record (in order) that has one
        best_key, mx = -1, None
        if cols["max"] is not None and n_rows:
            best_key, mx = int((2 * match_of_row[-1] + 1) << 32), cols["max"]
        for slot, seq, obj in recs:
            if obj.get("max_steps") is not None and (slot << 32) + seq > best_key:
                best_key, mx = (slot << 32) + seq, obj["max_steps"]
        out_recs = None
        if t_recs is not None:
            if self._json_rows and not self.keep_dicts:   # the parser's records as their JSON lines too
                all_recs = t_recs + [(dumps({"v": 1, **obj}) + "\n").encode() for _, _, obj in recs]
            else:
                all_recs = t_recs + [obj for _, _, obj in recs]
            out_recs = [all_recs[i] for i in order.tolist()]
        return Batch(steps, values, present, mx, marks, out_recs)

    def _general(self, buf: bytes, end: int) -> Batch:
        """Every line through the parser (no template yet); learn one on the way."""
        events: list = []
        parser = self.parser
        lines = buf[1:end].split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        pos = 1   # where the next line starts in buf
        for i, line in enumerate(lines):
            pos += len(line) + 1
            evs = parser.process_line(line)
            events.extend(evs)
            if (self.template is None and self._learn_tries < self.MAX_LEARN and evs
                    and evs[-1][0] == RECORD and evs[-1][1]["src"] in _DICT_SRCS):
                self._learn_tries += 1
                self.template = Template.learn(line)
                if self.template is not None and pos < end:
                    # the rest of the chunk goes through the template just learned (its
                    # newline, buf[pos - 1], starts the rest as ``scan`` expects)
                    self.slow_lines += i + 1
                    head = batch_from_events(events, self.want_records)
                    return concat_batches([head, self.scan(buf[pos - 1:end], end - pos + 1)])
        self.slow_lines += len(lines)
        return batch_from_events(events, self.want_records)


# ----------------------------------------------------------------------------- files

def read_range(path: str, start: int, end: int | None, scanner: ChunkScanner,
               final: bool, chunk: int = CHUNK, progress: Callable[[int], None] | None = None) -> Iterator[Batch]:
    """Batches for the bytes [start, end) of a file (``start`` at a line start);
    ``final`` flushes the last partial line at the end. ``progress(offset)`` after each chunk."""
    parser = scanner.parser
    with open(path, "rb") as f:
        pos = start
        size = min(FIRST_CHUNK, chunk) if scanner.template is None else chunk
        while end is None or pos < end:
            if progress is not None:
                progress(pos)
            want = size if end is None else min(size, end - pos)
            if parser.has_partial:
                # inside an unfinished (maybe huge) line: the parser takes bytes to its newline
                f.seek(pos)
                data = f.read(want)
                if not data:
                    break
                nl = data.find(b"\n")
                take = len(data) if nl < 0 else nl + 1
                events = parser.feed_events(data[:take])
                pos += take
                if events:
                    yield batch_from_events(events, scanner.want_records)
                continue
            if pos > 0:   # start the buffer with the newline that ended the previous line
                f.seek(pos - 1)
                buf = f.read(want + 1)
            else:
                buf = b"\n" + f.read(want)
            if len(buf) <= 1:
                break
            last = buf.rfind(b"\n")
            if last <= 0:
                parser.feed_events(buf[1:])
                pos += len(buf) - 1
                continue
            batch = scanner.scan(buf, last + 1)
            pos += last
            size = chunk
            if len(batch) or batch.marks:
                yield batch
    tail = parser.flush_events() if final else parser.release_events()
    if tail:
        yield batch_from_events(tail, scanner.want_records)


def concat_batches(batches: list[Batch]) -> Batch:
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
    return Batch(steps, values, present, mx, marks, recs)


def learn_template(head: bytes, max_line_bytes: int = 1 << 20) -> Template | None:
    """The template of the first metric dict line in ``head`` (read with a scratch parser)."""
    parser = LogParser(max_line_bytes)
    tries = 0
    for line in head.split(b"\n")[:-1]:
        evs = parser.process_line(line)
        if evs and evs[-1][0] == RECORD and evs[-1][1]["src"] in _DICT_SRCS:
            template = Template.learn(line)
            tries += 1
            if template is not None or tries >= ChunkScanner.MAX_LEARN:
                return template
    return None


def kill_child(pid: int) -> None:
    """End a forked worker of ours and reap it (its result is no longer wanted)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def _find_split(path: str, size: int, template: Template, fraction: float) -> int | None:
    """A line start near ``fraction`` of the file whose line the template matches."""
    at = int(size * fraction)
    with open(path, "rb") as f:
        f.seek(at)
        window = f.read(1 << 20)
    nl = window.find(b"\n")
    if nl < 0:
        return None
    step_g = template.step_group(False) + 1
    m = template.rx.search(window, nl)
    while m is not None and m.group(step_g) is None:   # skip dicts of another shape
        m = template.rx.search(window, m.end())
    if m is None:
        return None
    return at + window.rfind(b"\n", 0, m.start() + 1) + 1


# The forked child reads (and folds) the first part while this process reads the second;
# this process then also folds its own part, so it takes a little less of the file.
SPLIT_FRACTION = 0.52


def scan_file(path: str, want_records: bool = False, max_line_bytes: int = 1 << 20,
              chunk: int = CHUNK) -> Iterator[tuple[Batch, ParseStats]]:
    """Batches of a whole file in order, each with the statistics so far (the last ones are
    the totals)."""
    parser = LogParser(max_line_bytes)
    scanner = ChunkScanner(parser, want_records)
    for batch in read_range(path, 0, None, scanner, final=True, chunk=chunk):
        yield batch, parser.stats


def plan_split(path: str, max_line_bytes: int = 1 << 20, split_min_bytes: int = SPLIT_MIN_BYTES,
               fraction: float = SPLIT_FRACTION) -> tuple[Template, int] | None:
    """(template, offset of a template line near ``fraction`` of the file) when the file is
    big enough and this process may fork; else None."""
    # fork only from a single-threaded process: a thread holding a lock at fork time (as in a
    # UI) could leave the child waiting forever
    if threading.active_count() != 1 or os.path.getsize(path) < split_min_bytes:
        return None
    with open(path, "rb") as f:
        head = f.read(FIRST_CHUNK)
    template = learn_template(head, max_line_bytes)
    if template is None:
        return None
    split = _find_split(path, os.path.getsize(path), template, fraction)
    return None if split is None else (template, split)


class SharedOffsets:
    """How far each reading process got (bytes), in memory a forked child shares with its parent:
    the parent reports progress for both."""

    def __init__(self, slots: int = 2) -> None:
        import mmap
        self._m = mmap.mmap(-1, 8 * slots)
        self.slots = slots

    def set(self, slot: int, value: int) -> None:
        struct.pack_into("q", self._m, 8 * slot, int(value))

    def total(self) -> int:
        return sum(struct.unpack_from("q", self._m, 8 * i)[0] for i in range(self.slots))


Report = Callable[[int, int], None]   # (bytes read, bytes in all): a progress display


def fold_file(path: str, init: Callable[[], Any], step: Callable[[Any, Batch], None],
              want_records: bool = False, workers: int = 2, max_line_bytes: int = 1 << 20,
              chunk: int = CHUNK, split_min_bytes: int = SPLIT_MIN_BYTES,
              report: Report | None = None) -> tuple[Any, ParseStats]:
    """``step(state, batch)`` for every batch of the file in order, from ``state = init()``;
    returns (state, statistics).

    With ``workers`` >= 2 a big file is cut at a template line: a forked child folds the first
    part from a fresh state (exact: that is where the file starts) and sends the state back
    (pickled); this process reads the second part meanwhile, then folds it onto that state.
    If the child fails, this process folds the first part itself. ``report(done, total)`` is
    called from this process as the reading goes (both parts counted)."""
    size = os.path.getsize(path)
    plan = plan_split(path, max_line_bytes, split_min_bytes) if workers >= 2 else None
    if plan is None:
        state = init()
        stats = ParseStats()
        parser = LogParser(max_line_bytes)
        scanner = ChunkScanner(parser, want_records)
        progress = (lambda pos: report(pos, size)) if report is not None else None
        for batch in read_range(path, 0, None, scanner, final=True, chunk=chunk, progress=progress):
            step(state, batch)
        return state, parser.stats
    template, split = plan
    offsets = SharedOffsets(2)
    child = _Forked(lambda: _fold_range(path, 0, split, template, init, step, want_records,
                                        max_line_bytes, chunk, lambda pos: offsets.set(0, pos)))

    def own(pos: int) -> None:
        offsets.set(1, pos - split)
        if report is not None:
            report(offsets.total(), size)
    spool = tempfile.TemporaryFile(prefix="moeconsole-parse-")  # the second part waits on disk
    try:
        parser = LogParser(max_line_bytes)
        scanner = ChunkScanner(parser, want_records, template)
        n_own = 0
        for batch in read_range(path, split, None, scanner, final=True, chunk=chunk, progress=own):
            pickle.dump(batch, spool, protocol=pickle.HIGHEST_PROTOCOL)
            n_own += 1
        offsets.set(1, size - split)
        result = child.result(waiting=(lambda: report(offsets.total(), size)) if report is not None else None)
        processes = 2
        if result is None:   # the child failed: do its part here
            result = _fold_range(path, 0, split, template, init, step, want_records, max_line_bytes, chunk)
            processes = 1
        state, first_stats, first_records = result
        # the first part's totals shift this part's line numbers and record counts
        parser.stats.examples = [(ln + first_stats.lines, text) for ln, text in parser.stats.examples]
        spool.seek(0)
        for _ in range(n_own):
            batch = pickle.load(spool)
            for _, mark in batch.marks:
                mark["line"] = mark.get("line", 0) + first_stats.lines
                mark["records_before"] = mark.get("records_before", 0) + first_records
            step(state, batch)
        total = ParseStats(processes=processes)
        total.merge(first_stats)
        total.merge(parser.stats)
        return state, total
    finally:
        spool.close()
        child.close()


def _fold_range(path: str, start: int, end: int, template: Template, init: Callable[[], Any],
                step: Callable[[Any, Batch], None], want_records: bool, max_line_bytes: int,
                chunk: int, progress: Callable[[int], None] | None = None) -> tuple[Any, ParseStats, int]:
    state = init()
    parser = LogParser(max_line_bytes)
    scanner = ChunkScanner(parser, want_records, template)
    for batch in read_range(path, start, end, scanner, final=False, chunk=chunk, progress=progress):
        step(state, batch)
    return state, parser.stats, parser.records_emitted


class _Forked:
    """``fn()`` run in a forked child; ``result()`` is its return value (pickled through a
    pipe), or None if the child failed."""

    def __init__(self, fn: Callable[[], Any]):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the caller
            code = 1
            try:
                os.close(r)
                blob = pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(w, "wb") as out:
                    out.write(blob)
                code = 0
            except BaseException:  # noqa: BLE001 - the parent notices and does the work itself
                pass
            finally:
                os._exit(code)
        os.close(w)
        self.pid: int | None = pid
        self.fd = os.fdopen(r, "rb")

    def result(self, waiting: Callable[[], None] | None = None) -> Any:
        """The child's return value; ``waiting()`` every 0.1 s until it comes."""
        if waiting is not None:
            import select
            while not select.select([self.fd], [], [], 0.1)[0]:
                waiting()
        blob = self.fd.read()
        assert self.pid is not None
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        if os.waitstatus_to_exitcode(status) != 0 or not blob:
            return None
        try:
            return pickle.loads(blob)
        except Exception:  # noqa: BLE001 - a torn result: treat as a failed child
            return None

    def close(self) -> None:
        self.fd.close()
        if self.pid is not None:
            kill_child(self.pid)
            self.pid = None
