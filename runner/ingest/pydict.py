"""Read a printed Python dict (``str(dict)``) without evaluating anything.

``ast.literal_eval`` cannot read what trainers print: NaN prints as a bare ``nan``, tensors as
``tensor(1.2, device='cuda:0')``; it is also slow. This reader accepts quoted strings,
numbers, nan/inf, None/True/False (and JSON's null/true/false), nested lists/dicts/tuples, and
a call such as ``tensor(1.2, ...)`` (read as its first number). Anything else, including a
truncated dict, gives None: it never raises.
"""
from __future__ import annotations

import re
from typing import Any

from moeconsole.runner.ingest.records import parse_number

# One flat "key: value," pair; the common case, read with one regex match.
_S1 = r"'((?:[^'\\\n]|\\.)*)'"
_S2 = r'"((?:[^"\\\n]|\\.)*)"'
FLAT_PAIR_RE = re.compile(
    r"\s*(?:" + _S1 + "|" + _S2 + r")\s*:\s*(?:" + _S1 + "|" + _S2 + r"|([-+\w.]+))\s*([,}])")
_TOKEN_RE = re.compile(r"\s*(?:'((?:[^'\\\n]|\\.)*)'|\"((?:[^\"\\\n]|\\.)*)\"|([-+\w.]+)|(.))", re.S)
_ESC_RE = re.compile(r"\\(.)")
_CONSTS = {"None": None, "null": None, "True": True, "true": True, "False": False, "false": False}
_MAX_DEPTH = 20
_CALL_HEAD_RE = re.compile(r"\s*[A-Za-z_]\w*\(")


class _Fail(Exception):
    pass


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    return _ESC_RE.sub(lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1), m.group(1)), s)


def bare_value(tok: str) -> Any:
    """A bare token: None/True/False, an int, a float (nan/inf included), else the text."""
    if tok in _CONSTS:
        return _CONSTS[tok]
    if tok.isdigit() or (tok[:1] in "+-" and tok[1:].isdigit()):
        return int(tok)
    num = parse_number(tok)
    return tok if num is None else num


# A printed dict whose quotes an editor turned into typographic ones while it was pasted (macOS
# and word processors' "smart quotes": ‘loss’, “loss”): Python's repr and JSON print only ' and ".
_SMART_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})


# A value the poster set in markdown bold to point at it ("{'loss': **4.7581**, 'grad_norm': ...}",
# an issue comparing two runs' losses; unsloth issue 344): Python's repr never prints "**", so the
# emphasis is taken off a bare value (a number, nan, inf) and the dict reads as printed.
_BOLD_VALUE_RE = re.compile(r"(?<=: )\*\*([-+]?(?:\d[\d.eE+-]{0,30}|nan|inf))\*\*(?=[,}])")
# The rest of a dict left out by the poster with an ellipsis as its last item ("{'eval_loss':
# 1.73133361, 'eval_acc': 0.58826206, ...}", OpenRLHF's "✨ Global step 3: {..., 'kl': 0.0, ...}"
# quoted in an issue): the items before it are read; repr never prints a bare "..." item.
_ELIDED_END_RE = re.compile(r",\s*+(?:\.\.\.|\u2026)\s*+\}$")


def parse_pydict(text: str) -> dict | None:
    """The dict printed in ``text`` (which must start with '{' and end with '}'), or None."""
    if not text.startswith("{"):
        return None
    if text[1:2] in ("\u2018", "\u201c"):
        text = text.translate(_SMART_QUOTES)
    if "**" in text:
        text = _BOLD_VALUE_RE.sub(r"\1", text)
    if text.endswith(("...}", "\u2026}", "... }", "\u2026 }")):
        text = _ELIDED_END_RE.sub("}", text)
    out: dict = {}
    pos = 1
    n = len(text)
    if text[1:].strip() == "}":
        return out
    while True:
        m = FLAT_PAIR_RE.match(text, pos)
        if m is None:
            return _parse_nested(text)
        k1, k2, v1, v2, bare, end = m.groups()
        key = _unescape(k1 if k1 is not None else k2)
        if v1 is not None:
            out[key] = _unescape(v1)
        elif v2 is not None:
            out[key] = _unescape(v2)
        else:
            out[key] = bare_value(bare)
        pos = m.end()
        if end == "}":
            return out if text[pos:].strip() == "" else None
        if pos >= n:
            return None


def split_objects(text: str) -> list[str] | None:
    """The dicts of a line holding two or more whole printed dicts side by side (``{...} {...}``:
    a console that lost the newlines between ``tqdm.write`` calls, as pasted from ms-swift/HF
    runs), each as its own text; None when the line is not exactly that. Quotes are respected;
    the depth of braces and brackets decides where a dict ends."""
    if not (text.startswith("{") and text.endswith("}")) or "}" not in text[:-1]:
        return None
    parts: list[str] = []
    depth, start, quote, i, n = 0, 0, "", 0, len(text)
    while i < n:
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "{[(":
            if depth == 0:
                if text[start:i].strip():
                    return None
                start = i
            depth += 1
        elif c in "}])":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                parts.append(text[start:i + 1])
                start = i + 1
        elif depth == 0 and not c.isspace():
            return None
        i += 1
    if depth != 0 or quote or len(parts) < 2 or not all(p.startswith("{") for p in parts):
        return None
    return parts


# Where one printed dict ends and the next begins on a line: "}" then maybe a list's ", ", then
# "{" and a quoted key (a JSON list of records pasted as one line, ms-swift's logging.jsonl
# records joined by ", "). Found by pattern, not by counting braces: a pasted run may begin
# inside a quoted key, where counting quotes would read it backwards. The spaces are read
# possessively: ``\s*,?\s*`` split a run of spaces after a "}" every way before failing, the
# run's square (a dict then 20k spaces took 7 s; found by review R41's mend).
_OBJECT_BOUNDARY_RE = re.compile(r"\}\s*+(?:,\s*+)?(?=\{\s*+[\"'])")


def object_run(text: str) -> tuple[str, list[str], str] | None:
    """A line holding printed dicts one after another, whose first or last may be cut (a paste
    or a terminal's wrap cut the run inside a record): (head, whole, tail). ``head`` is the end
    of a dict begun before the line ("" if the line starts with a whole one), ``whole`` the
    dicts printed whole, ``tail`` the start of a dict the next line goes on with ("" if the line
    ends with a whole one). None when the line is not such a run: no boundary between two
    dicts, or a dict between two boundaries that does not read."""
    cuts = [m.start() + 1 for m in _OBJECT_BOUNDARY_RE.finditer(text)]
    if not cuts:
        return None
    pieces, start = [], 0
    for cut in cuts:
        pieces.append(text[start:cut].strip().rstrip(","))
        start = text.index("{", cut)
    pieces.append(text[start:].strip())
    head = "" if parse_pydict(pieces[0]) is not None else pieces.pop(0)
    tail = ""
    if pieces and parse_pydict(pieces[-1]) is None:
        tail = pieces.pop()
        if not tail.startswith("{") or tail.endswith("}"):
            return None   # a whole-looking last dict that does not read: not a cut run
    if any(parse_pydict(p) is None for p in pieces):
        return None
    if head and (head.startswith("{") or not head.endswith("}")):
        return None       # the first piece is a dict that does not read, not the end of one
    return head, pieces, tail


def _parse_nested(text: str) -> dict | None:
    try:
        toks = _Tokens(text)
        value = toks.value(0)
        if not isinstance(value, dict) or toks.peek() is not None:
            return None
        return value
    except (_Fail, RecursionError, IndexError, ValueError):
        return None


def printed_call_number(text: str) -> int | float | None:
    """The number a printed call holds, as a dict value's is read: ``tensor(8.1043,
    device='cuda:0')`` is 8.1043 (its first number); anything else (a tensor of several values,
    a cut call, trailing text) is None. Never raises."""
    if _CALL_HEAD_RE.match(text) is None:
        return None
    try:
        toks = _Tokens(text)
        if toks.toks[1:2] != [("p", "(")] or toks.toks[0][0] != "bare":
            return None
        value = toks.value(0)
        if toks.peek() is not None:
            return None
    except (_Fail, RecursionError, IndexError, ValueError):
        return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class _Tokens:
    def __init__(self, text: str):
        self.toks: list[tuple[str, Any]] = []
        for m in _TOKEN_RE.finditer(text):
            s1, s2, bare, punct = m.groups()
            if s1 is not None:
                self.toks.append(("str", _unescape(s1)))
            elif s2 is not None:
                self.toks.append(("str", _unescape(s2)))
            elif bare is not None:
                self.toks.append(("bare", bare))
            elif punct is not None and not punct.isspace():
                self.toks.append(("p", punct))
        self.i = 0

    def peek(self) -> tuple[str, Any] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def next(self) -> tuple[str, Any]:
        if self.i >= len(self.toks):
            raise _Fail
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def expect(self, p: str) -> None:
        if self.next() != ("p", p):
            raise _Fail

    def value(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise _Fail
        kind, v = self.next()
        if kind == "str":
            return v
        if kind == "bare":
            nxt = self.peek()
            if nxt == ("p", "(") and v.isidentifier():
                self.next()
                args = self.seq(")", depth)
                return next((a for a in args if isinstance(a, (int, float)) and not isinstance(a, bool)), None)
            return bare_value(v)
        if v == "{":
            return self.mapping(depth)
        if v == "[":
            return self.seq("]", depth)
        if v == "(":
            return tuple(self.seq(")", depth))
        if v == "<":
            # an object's default repr, as torch prints a tensor's autograd node in its call
            # ("tensor(1.2, device='cuda:0', grad_fn=<AddBackward0>)"): no value
            while self.next() != ("p", ">"):
                pass
            return None
        raise _Fail

    def seq(self, close: str, depth: int) -> list:
        items: list = []
        while True:
            nxt = self.peek()
            if nxt == ("p", close):
                self.next()
                return items
            # keyword arguments inside calls: name=value
            if nxt is not None and nxt[0] == "bare" and self.i + 1 < len(self.toks) and self.toks[self.i + 1] == ("p", "="):
                self.i += 2
            items.append(self.value(depth + 1))
            sep = self.next()
            if sep == ("p", close):
                return items
            if sep != ("p", ","):
                raise _Fail

    def mapping(self, depth: int) -> dict:
        out: dict = {}
        while True:
            nxt = self.peek()
            if nxt == ("p", "}"):
                self.next()
                return out
            key = self.value(depth + 1)
            self.expect(":")
            out[key if isinstance(key, str) else str(key)] = self.value(depth + 1)
            sep = self.next()
            if sep == ("p", "}"):
                return out
            if sep != ("p", ","):
                raise _Fail
