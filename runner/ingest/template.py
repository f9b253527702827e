"""The template strategy: a log's repeated line shape read many lines at a time.

Training logs repeat one line shape a million times. Once the line parser has read one metric
dict line, ``Template.learn`` turns that line into a bytes regex (its exact keys and
separators, a capture group per value). ``TemplateReader.claim`` runs it over a whole block
of complete lines with ``findall`` and says which lines are the template's (their values as
numpy columns, their records or NDJSON lines) and which are not: every other line (other
formats, save messages, eval dicts, odd values) is the line parser's, and the pipe
(``moeconsole.runner.ingest.pipe``) hands each to its reader in file order. A claim is all or nothing
for the values: if one value of the block's rows does not convert as the parser would read
it, there is no claim and the parser reads the whole block. This module never calls the
parser: it only reads lines of its own shape.
"""
from __future__ import annotations

import bisect
import re
from array import array
from dataclasses import dataclass, field
from itertools import chain, compress, repeat
from operator import itemgetter
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from moeconsole.runner.core.bounds import STEP_DIGITS
from moeconsole.runner.core.columns import COLUMN_FIELDS
from moeconsole.runner.ingest.batch import BatchBuilder
from moeconsole.runner.ingest.formats import object_src
from moeconsole.runner.ingest.lines import visible_segment
from moeconsole.runner.ingest.pydict import bare_value
from moeconsole.runner.ingest.records import (FIELD_KEYS, MAX_STEP_KEYS, STEP_KEYS, SWIFT_RATE_KEY, classify_mapping, eval_key, framework_mapping,
                                   parse_number, record_from_mapping)
from moeconsole.runner.rundir.secrets import is_secret_name, mask_lines
from moeconsole.runner.rundir.seriesfile import OtherBlock, other_fields

_NONCLOSE_RE = re.compile(rb"\n(?<!\}\n)")
_CLOSE_RE = re.compile(rb"\}\n")
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
# a step: no leading zero, at most bounds.STEP_DIGITS digits (a longer one is out of range: the
# line goes to the parser, which skips and counts it)
_J_INT = rb"(?:0|[1-9][0-9]{0,%d})" % (STEP_DIGITS - 1)
_STEP_DIGITS = rb"(\d{1,%d})" % STEP_DIGITS
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




Floats = dict[int, np.ndarray]   # per capture group: its values' float() as a column (``Template.loose_rows``)
KNOWN_TEXTS = 1 << 14   # texts of one group a template keeps as checked (``Template.loose_rows``)
# ``Template.loose_rows``' mark of a value whose text is not known to be in its strict form: no
# text in a strict form (``_J_FLOAT``, ``_J_INT_FLOAT``: digits only) reads as NaN
_UNCHECKED = float("nan")


def float_texts(distinct: set[bytes], n: int) -> dict[bytes, float] | None:
    """``float()`` of each distinct text of a column of ``n`` values, when under half of them are
    distinct (else converting each value costs less than the table)."""
    return {text: float(text) for text in distinct} if len(distinct) * 2 <= n else None


def float_column(texts: Sequence[bytes]) -> np.ndarray:
    """``float()`` of each value as a float64 column (ValueError as ``float`` raises it). A
    logged number repeats (a constant memory figure, a learning rate held for thousands of
    steps, a loss printed to 4 digits): each distinct text is converted once."""
    n = len(texts)
    table = float_texts(set(texts), n)
    if table is None:
        return np.fromiter(map(float, texts), dtype=np.float64, count=n)
    if len(table) == 1:   # one text, the column's every value (a memory figure, a held rate)
        return np.full(n, next(iter(table.values())))
    # an array('d') takes the floats at less cost per value than numpy's fromiter
    return np.frombuffer(array("d", map(table.__getitem__, texts)), dtype=np.float64)


def quoted_number_json(text: bytes, form: re.Pattern) -> bytes | None:
    """The JSON of the number a quoted value's text is, as the line parser's record writes it
    (``records.parse_number``: a float, written by ``jsonio.dumps`` as its repr), when that JSON
    is in ``form`` (a template's strict form of the value); else None (``nan``, a word, digits
    past the form's: the line is the parser's)."""
    try:
        num = parse_number(text.decode("ascii"))
    except UnicodeDecodeError:
        return None
    if num is None:
        return None
    out = repr(num).encode()
    return out if form.fullmatch(out) else None


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
        self.line = b""   # the raw line ``learn`` made it from (another process learns the same from it)
        self.anchor = anchor
        self.values = values
        self.src = src
        self.keys = [v.key for v in values]
        self.rx = self._compile(body_parts, records=False)
        self.rx_records = self._compile(body_parts, records=True)
        self.rx_json: re.Pattern | None = None
        # NDJSON mode's first pass: ``rx_json`` with each number's strict form loosened to any
        # text between its delimiters; the distinct values of each such group are then checked
        # against the strict form (``loose_rows``), so a block's rows are read by a cheaper regex
        # with exactly ``rx_json``'s result (``TemplateReader.claim``)
        self.rx_loose: re.Pattern | None = None
        # (group, its strict form as whole lines, whether a text out of that form may be written as
        # its number's JSON: a quoted value whose line writes "%s", ``quoted_number_json``)
        self._strict: list[tuple[int, re.Pattern, bool]] = []
        self._raw_text = b""   # a row's values -> its dict's text after the "{" (``loose_rows``)
        self._known: dict[int, dict[bytes, float]] = {}   # per loosened group: texts found in strict form -> float()
        self.json_line: Callable[[tuple], bytes] | None = None
        # rows (and their groups as columns, when known: ``loose_rows``) -> their NDJSON lines
        self.json_rows: Callable[[list, list[tuple] | None], list[bytes]] = lambda rows, cols: []
        self._other_plan: tuple[dict, list[tuple[str, int]] | None] | None = None
        if texts is not None and self._plan_json():
            self.rx_json = self._compile(body_parts, records=True, json=True)
            self.rx_loose = self._compile(body_parts, records=True, json=True, loose=True)
            self.json_line = self._json_formatter()

    def _compile(self, parts: list[tuple[bytes, int]], records: bool, json: bool = False,
                 loose: bool = False) -> re.Pattern:
        """``loose`` (NDJSON mode): a number's group takes any non-empty text up to its
        delimiter (its closing quote, or for a bare number the separator, which never starts
        with a character of ``_NUM_BARE``), and ``_strict`` lists each such group with the
        strict form ``rx_json`` has in its place."""
        out = [re.escape(self.anchor), rb"\{(?:"]
        group = 0
        raw: list[bytes] = []
        for literal, vi in parts:
            out.append(re.escape(literal))
            raw.append(literal.replace(b"%", b"%%"))
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
                    if loose and v.json in ("float", "intfloat"):
                        self._strict.append((group, re.compile(b"(?m)^(?:" + inner + b")$"),
                                             bool(v.quote) and v.json == "float"))
                        inner = (rb"[^" + re.escape(v.quote) + rb"\r\n]+") if v.quote else _NUM_BARE
                    pat, width = b"(" + inner + b")", 1
                if v.quote:
                    pat = re.escape(v.quote) + pat + re.escape(v.quote)
                raw.append(v.quote.replace(b"%", b"%%") + (b"%s/%s" if width == 2 else b"%s") + v.quote)
                group += width
                out.append(pat)
                continue
            if v.role == "step":
                if v.slash:   # summary mode needs max_steps only once per chunk (see last_max)
                    pat, width = (_STEP_DIGITS + b"/" + _STEP_DIGITS, 2) if records else (
                        _STEP_DIGITS + b"/" + _STEP_DIGITS[1:-1], 1)
                else:
                    pat, width = _STEP_DIGITS, 1
            elif v.role == "max_steps":
                pat, width = (_STEP_DIGITS, 1) if records else (_STEP_DIGITS[1:-1], 0)
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
        if loose:
            self._raw_text = b"".join(raw)
        return re.compile(b"".join(out))

    def loose_rows(self, tuples: list[Any]) -> tuple[list[Any], Floats, list[Any] | None]:
        """``rx_json.findall`` of a block, from ``rx_loose.findall`` of it (``tuples``), the
        float columns of the loosened groups (``Floats``: a value for each tuple, NaN where the
        row left the template), and the rows' groups as columns (None when a row changed). Both regexes match at the same places: a loosened group holds the same text
        wherever ``rx_json`` matches the template, and where a value is out of its strict form
        ``rx_json`` reads that line as a dict of another shape, to its end (as ``rx_loose``
        reads it, its closing brace before the newline), so that row becomes such a match: its
        text in the alt group (rebuilt from the row's values), the same trail. Each distinct
        text is checked once per template: the texts found in form are kept with their float
        (up to ``KNOWN_TEXTS`` per group; a loss printed to 4 digits has a few thousand), so a
        group's float column is one lookup per value, which is the check too (the values whose
        text is not kept are checked then).

        Except: a quoted number out of form whose record value is a float written in form
        (``quoted_number_json``: ``'2'``, ``'35.10'``, ``'1e-5'``, whose JSON is ``2.0``, ``35.1``,
        ``1e-05``) stays a row, with that JSON text in its group, which is what the line
        parser writes for it: such rows no longer leave the template for the parser."""
        floats: Floats = {}
        if not tuples or not self._strict:
            return tuples, floats, None
        n = len(tuples)
        cols: list[Any] = list(zip(*tuples))
        bad_rows: set[int] = set()
        fixes: list[tuple[int, dict[bytes, bytes]]] = []
        for g, form, fixable in self._strict:
            known = self._known.setdefault(g, {})
            col = cols[g]
            # one pass over the group: each value's float when its text is known to be in form,
            # else _UNCHECKED (NaN, which no text in form reads as): the values left to check
            x = np.fromiter(map(known.get, col, repeat(_UNCHECKED)), dtype=np.float64, count=n)
            floats[g] = x
            unchecked = np.flatnonzero(np.isnan(x)).tolist()
            if not unchecked:
                continue
            texts = [col[j] for j in unchecked]
            new = set(texts)
            new.discard(b"")   # a match of another dict shape (its template groups are empty)
            good = set(form.findall(b"\n".join(new)))   # one C pass over the new distinct texts
            fix: dict[bytes, bytes] = {}
            if len(good) != len(new):
                bad = new - good
                if fixable:
                    fix = {t: js for t in bad if (js := quoted_number_json(t, form)) is not None}
                    bad.difference_update(fix)
                if bad:
                    bad_rows.update(compress(unchecked, map(bad.__contains__, texts)))
            found = {v: float(v) for v in good}
            if len(known) + len(found) <= KNOWN_TEXTS:
                known.update(found)
            if fix:   # their JSON texts are in form: the group's column holds them instead
                found.update((t, float(js)) for t, js in fix.items())
                fixes.append((g, fix))
            x[unchecked] = np.fromiter(map(found.get, texts, repeat(_UNCHECKED)), dtype=np.float64,
                                       count=len(texts))
        out = tuples
        if fixes:
            out = list(tuples)
            for g, fix in fixes:
                col = list(cols[g])
                for j in compress(range(n), map(fix.__contains__, col)):
                    col[j] = fix[col[j]]
                    if j not in bad_rows:
                        out[j] = (*out[j][:g], col[j], *out[j][g + 1:])
                cols[g] = col
        if not bad_rows:
            return out, floats, cols
        k = len(tuples[0])   # the alt group, then the trail, after the template's groups
        empty = (b"",) * (k - 2)
        out = list(out)
        for j in bad_rows:
            tp = tuples[j]
            out[j] = (*empty, self._raw_text % tp[:k - 2], tp[k - 1])
        return out, floats, None

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
        """row (the records regex's groups) -> its NDJSON line, as ``moeconsole.runner.rundir.jsonio.dumps``
        writes the record (``{"v": 1, ...}``)."""
        import json as _json
        from moeconsole.runner.ingest.records import RECORD_FIELDS
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

        def values(rows: list, cols: list[tuple] | None) -> Iterable[tuple]:
            # each row's values in the line's order: zipped from the columns when they are known
            # (zip hands ``%`` one tuple it refills, where the getter makes one per row)
            return map(getter, rows) if cols is None else zip(*[cols[g] for g in order])

        def lines(rows: list, cols: list[tuple] | None = None) -> list[bytes]:
            out = list(map(fmt.__mod__, values(rows, cols)))
            if not texts:
                return out
            # a quoted text value may hold a token the training printed: masked on the way out.
            # Only whether a value holds a token's mark is asked of the probe: each distinct text
            # once (a log's times repeat: every text joined made the probe's scans about twice as
            # long as building the set)
            distinct = (set().union(*[cols[g] for g in texts]) if cols is not None
                        else set(chain.from_iterable(map(itemgetter(*texts, *texts[:1]), rows))))
            return mask_lines(out, probe=b"\n".join(distinct))
        self.json_rows = lines
        return lambda row: fmt % getter(row)

    def other_columns(self, rows: list, floats: Floats | None = None,
                      cols: list[tuple] | None = None) -> tuple[dict, dict[str, np.ndarray]] | None:
        """NDJSON mode: the other numbers of the rows' records (``seriesfile.other_fields``) as
        columns. Which values they are is decided once, by that rule on a row's record: a
        float value's text is JSON's, so every row has the same ones; None when a place of the
        rule is not one value of the template (the records are read instead)."""
        if self.json_line is None or not rows:
            return None
        if self._other_plan is None:
            import json as _json
            proto = _json.loads(self.json_line(rows[0]))
            self._other_plan = (proto, self._other_groups(proto))
        proto, groups = self._other_plan
        if groups is None:
            return None
        floats = floats or {}
        return proto, {name: floats[g] if g in floats else
                       float_column(cols[g] if cols is not None else list(map(itemgetter(g), rows)))
                       for name, g in groups}

    def _other_groups(self, proto: dict) -> list[tuple[str, int]] | None:
        from moeconsole.runner.ingest.records import RECORD_FIELDS
        by_field = {v.role: v.rgroup - 1 for v in self.values if v.role in RECORD_FIELDS}
        by_extra: dict[str, int] = {}
        for v in self.values:
            if v.role == "extra":
                key = str(v.key)[:100]   # as the JSON line names it (``_json_formatter``)
                if key in by_extra:
                    return None
                by_extra[key] = v.rgroup - 1
        groups: list[tuple[str, int]] = []
        for name, place, _ in other_fields(proto):
            g = by_field.get(place[0]) if len(place) == 1 else by_extra.get(place[1])
            if g is None or any(name == n for n, _ in groups):
                return None
            groups.append((name, g))
        return groups

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
        if framework_mapping(mapping) is not mapping:
            return None   # a framework's nesting or units (records.framework_mapping): the parser's
        if classify_mapping(mapping) != "metric" or any(eval_key(k) is not None for k in mapping) \
                or not cls._assign_roles(values, mapping):
            return None   # evaluation values beside the step's go through the parser
        if any(is_secret_name(k) for k in mapping):
            return None  # a secret-named value: the parser's records mask it, a template would copy it
        if SWIFT_RATE_KEY in mapping:
            return None  # ms-swift 2.x/3.x iter/s: its step time depends on the dict before (the parser's)
        src = object_src(mapping, json_text=seg.startswith(b'{"'))
        t = cls(anchor, values, parts, src, texts)
        t.line = raw
        return t

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


# ----------------------------------------------------------------------------- the strategy

Special = tuple[int, int, bytes, int]   # (k, kind, raw line, line number in the block)


@dataclass
class Claim:
    """What the template reads of one block of complete lines (``buf[1:end]``, ``buf[0]`` the
    newline before it), and what it leaves to the line parser.

    ``n_matches`` counts the template regex's matches; a match of another dict shape (NDJSON
    mode captures its text; its index is in ``alt``) is not one of the ``rows``. ``specials`` are the lines the
    template does not read, in file order: (k, 0, raw, line) a line before match k, (k, 1,
    raw, line) match k itself when it is a dict of another shape; ``line`` is the line's
    number in the block (from 1). ``steps``/``values``/``present`` are the rows' columns,
    ``max_steps`` the last row's."""
    template: Template
    rows: list[tuple]
    n_matches: int
    alt: set[int]
    specials: list[Special]
    n_lines: int
    steps: Any
    values: dict[str, np.ndarray]
    present: dict[str, np.ndarray]
    max_steps: int | None
    json_rows: bool
    floats: Floats | None = None   # some groups of the rows as float columns (``loose_rows``)
    cols: list[tuple] | None = None   # the rows' groups as columns, when known
    _row_at: np.ndarray | None = None
    _records: list | None = field(default=None, repr=False)
    _other: tuple | None = field(default=None, repr=False)
    # the log's byte offset of each line's start (``locate``): index k-1 for line k of the block
    _starts: np.ndarray | None = field(default=None, repr=False)
    line_at: np.ndarray | None = field(default=None, repr=False)   # ... of each row's line

    def locate(self, buf: bytes, end: int, at: int) -> None:
        """Where the block's lines stand in the log (``at``: the offset of ``buf[0]``): each
        row's line (``line_at``) and each other line's (``line_start``). Every line of the block
        is a row or a special, so the rows' lines are the lines no special names."""
        newlines = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8, count=end) == 10)
        starts = newlines[:self.n_lines] + (at + 1)
        is_row = np.ones(self.n_lines, dtype=bool)
        if self.specials:
            is_row[[line - 1 for _, _, _, line in self.specials]] = False
        row_at = starts[is_row]
        self._starts = starts
        self.line_at = row_at if len(row_at) == len(self.rows) else None

    def line_start(self, line: int) -> list[int] | None:
        """[the log's byte offset of the block's line ``line`` (from 1)], or None (not located)."""
        return None if self._starts is None else [int(self._starts[line - 1])]

    def __post_init__(self) -> None:
        if self.alt:
            is_row = np.ones(self.n_matches, dtype=np.int64)
            is_row[list(self.alt)] = 0
            self._row_at = np.concatenate(([0], np.cumsum(is_row)))

    def rows_before(self, j: int) -> int:
        """Rows among matches 0..j-1."""
        return j if self._row_at is None else int(self._row_at[j])

    def records(self) -> list[Any]:
        """Each row's record, exactly as the parser reads its line (NDJSON mode: each row's
        JSON line, the same text ``dumps`` gives that record)."""
        if self._records is None:
            self._records = _template_records(self.template, self.rows, self.json_rows, self.cols)
        return self._records

    def other_block(self, lo: int, hi: int) -> OtherBlock | None:
        """Rows ``lo..hi-1``'s numbers that are not columns (``seriesfile.other_fields`` of their
        records) as columns; None outside NDJSON mode (the records are read for them instead)."""
        if not self.json_rows or not self.rows:
            return None
        if self._other is None:
            self._other = self.template.other_columns(self.rows, self.floats, self.cols) or (None, None)
        proto, cols = self._other
        if proto is None or cols is None:
            return None
        return proto, {name: col[lo:hi] for name, col in cols.items()}, hi - lo


@dataclass(slots=True)
class Rows:
    """A run of consecutive template lines: rows ``lo..hi-1`` of a claim."""
    claim: Claim
    lo: int
    hi: int


class TemplateReader:
    """The template strategy: claims the lines of a block that are its shape (``claim``) and
    reads a run of them into the batch (``read``)."""

    def __init__(self, template: Template | None, want_records: bool, json_lines: bool, columns: bool,
                 after_rows: Callable[[int, int], None] | None = None) -> None:
        """``after_rows(last step, rows)`` is told of every run read (the pipe keeps the
        reading context the other strategy reads the next line in)."""
        self.template = template
        self.want_records = want_records
        self.json_lines = json_lines
        self.columns = columns
        self.after_rows = after_rows

    def read(self, run: Rows, out: BatchBuilder) -> int:
        """The run's rows into the batch, as columns (and records or NDJSON lines)."""
        out.add_rows(run.claim, run.lo, run.hi)
        if self.after_rows is not None:
            self.after_rows(int(run.claim.steps[run.hi - 1]), run.hi - run.lo)
        return run.hi - run.lo

    @property
    def json_rows(self) -> bool:
        return self.json_lines and self.template is not None and self.template.json_line is not None

    def _rx(self, t: Template) -> re.Pattern:
        if self.json_lines and t.rx_json is not None:
            return t.rx_json
        return t.rx_records if self.want_records else t.rx

    def claim(self, buf: bytes, end: int) -> Claim | None:
        """The template's lines of ``buf[1:end]`` and the others; None when there is no
        template or it cannot vouch for a value of the block (the parser reads it all)."""
        t = self.template
        if t is None:
            return None
        rx = self._rx(t)
        trail = rx.groups - 1
        head_m = _HEAD_RE.match(buf, 1, end)   # matches at least the empty string
        head = head_m.end() if head_m else 1
        tuples: list[Any]
        floats: Floats | None = None
        cols: list[tuple] | None = None
        if rx is t.rx_json and t.rx_loose is not None:   # NDJSON mode: the cheaper first pass
            tuples, floats, cols = t.loose_rows(t.rx_loose.findall(buf, head - 1, end))
        else:
            tuples = rx.findall(buf, head - 1, end)
        n_lines = buf.count(b"\n", 1, end)
        n_head = buf.count(b"\n", 1, head)
        specials: list[Special] = [(0, 0, line, i + 1) for i, line in enumerate(buf[1:head].split(b"\n")[:-1])]
        n_trail = 0
        # NDJSON mode captures the text of a dict the template does not match (group before
        # the trail), so such dicts go to the parser here instead of the slow exact path
        alt = trail - 1 if rx is t.rx_json else None
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
            rows = tuples
            if alt_rows:
                rows = [tp for j, tp in enumerate(tuples) if j not in alt_rows]
                if floats:   # the float columns of the rows kept
                    keep = np.ones(len(tuples), dtype=bool)
                    keep[list(alt_rows)] = False
                    floats = {g: x[keep] for g, x in floats.items()}
            got = self._claim(t, rows, len(tuples), alt_rows, specials, n_lines, floats,
                              None if alt_rows else cols)
            if got is not None:
                if not self.want_records and tuples:
                    got.max_steps = t.last_max(buf, end)
                return got
        return self._positions(t, buf, end, rx, n_lines)

    def _positions(self, t: Template, buf: bytes, end: int, rx: re.Pattern, n_lines: int) -> Claim | None:
        """Exact ordering from match positions: used when some line is neither a match nor a
        plain line, or a dict of another shape shows up (its template groups are None)."""
        step_g = t.step_group(self.want_records)
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
        specials: list[Special] = []
        nl, prev = 0, 1
        for k, kind, p in found:
            nl += buf.count(b"\n", prev, p)
            prev = p
            raw = alt_text[k] if kind else buf[buf.rfind(b"\n", 0, p) + 1:p]
            specials.append((k, kind, raw, nl + 1))
        rows = [tp for j, tp in enumerate(tuples) if j not in alt_rows] if alt_rows else tuples
        got = self._claim(t, rows, len(tuples), alt_rows, specials, n_lines)
        if got is None:  # a value the template cannot vouch for: the parser reads the block
            return None
        if not self.want_records and rows:
            got.max_steps = t.last_max(buf, end)
        return got

    def _claim(self, t: Template, rows: list, n_matches: int, alt: set[int], specials: list[Special],
               n_lines: int, floats: Floats | None = None, cols: list[tuple] | None = None) -> Claim | None:
        """Template rows as columns, one float() pass per column; None if a value does not convert
        (an other-shaped dict, or a value only the parser knows what to do with)."""
        n = len(rows)
        json_rows = self.json_rows

        def made(steps: Any, values: dict, present: dict, mx: int | None) -> Claim:
            return Claim(t, rows, n_matches, alt, specials, n_lines, steps, values, present, mx, json_rows, floats,
                         cols)
        if json_rows and not self.columns:   # the JSON lines need no columns; the step keeps the parser's context
            g = t.step_group(True)
            if b"" in map(itemgetter(g), rows):   # a dict of another shape: exact positions
                return None
            return made(_LazySteps(rows, g), {f: np.full(n, np.nan) for f in COLUMN_FIELDS},
                        {f: np.zeros(n, dtype=bool) for f in COLUMN_FIELDS}, None)
        col: dict[str, np.ndarray] = {}
        try:
            for role, g in t.numeric_groups(self.want_records):
                if floats and g in floats:
                    col[role] = floats[g]
                    continue
                texts = cols[g] if cols is not None else list(map(itemgetter(g), rows))
                if role == "step":   # digits (``_STEP_DIGITS``, ``_J_INT``): int() reads them as float() would
                    col[role] = np.fromiter(map(int, texts), dtype=np.int64, count=n)
                else:
                    col[role] = float_column(texts)
        except ValueError:
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
        return made(col["step"], values, present, mx)


def _template_records(t: Template, rows: list, json_rows: bool, cols: list[tuple] | None = None) -> list[Any]:
    """Records mode: each row through record_from_mapping, exactly as the parser does
    (NDJSON mode: each row's JSON line, the same text ``dumps`` gives that record; ``cols``: the
    rows' groups as columns, when known)."""
    if json_rows:
        return t.json_rows(rows, cols)
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
