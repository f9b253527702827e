"""A line format the user declares, for a log nothing else reads (docs/parsing.md, "Declaring
a log's line format"): the recipe's ``log_format:`` and ``moeconsole parse --log-format``.

One spec string, one parser (``parse_line_format``), two forms:

- a regular expression with named groups: ``step`` (required: the step is never invented),
  ``loss`` and any other name (``lr``, ``grad_norm``, ``mem``, ``ms_per_step``, ...; names map
  to record fields through ``records.field_of``, the rest are kept as extras). ``max_steps``
  is the total. The pattern is searched in the line after launcher prefixes are removed.
- ``kv SEP [STEPKEY]``: ``key SEP value`` pairs separated by spaces, commas, semicolons or
  pipes (``kv =`` reads ``it=10 ce=2.3 lr=1e-4``; ``kv : iter`` reads ``iter:10 ce:2.3``); the
  step is the pair named STEPKEY (``step`` by default).

A bad spec raises ``LineFormatError`` (an ``InputError``: one line, exit 2).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from moeconsole.runner.core.errors import InputError
from moeconsole.runner.ingest.records import field_of, parse_number, parse_step, unit_value

SRC = "user"
MAX_SPEC = 2000
# Where a kv pair's key starts: a key is a run of [\w./@()-] from an ASCII letter or '_' not glued to [\w./-] before
# it (after '(', ')' or '@' a key may start again inside the run: ``Seq(lr=0.1`` reads ``lr``). Each run is entered
# once, at its start, and the characters before its first such letter are taken possessively: a later start in
# the same run reaches the same ends as the first (its key is a tail of the first's), so if the first key found no
# SEP and value, none after it in the run does. Before (review R71) every '(' ')' '@' of a run let a key start
# again and scan to the run's end: the square of a line holding a model's repr (``Seq(Lin(Seq(...``), whatever SEP.
_KEY_START = r"(?<![\w./@()\-])(?:(?![A-Za-z_])[\w./@()\-]|(?<=[\w./-])[A-Za-z_])*+"


class LineFormatError(InputError):
    """A log format that cannot be used, said in one line."""


@dataclass(frozen=True)
class LineFormat:
    spec: str
    regex: re.Pattern | None = None
    pairs: re.Pattern | None = None
    step_key: str = "step"

    def read(self, text: str) -> tuple[dict, str] | None:
        """(mapping, "user") for a line of the declared format, else None."""
        if self.regex is not None:
            m = self.regex.search(text)
            if m is None:
                return None
            found = {k: v for k, v in m.groupdict().items() if v is not None}
        else:
            assert self.pairs is not None
            found = {}
            for pm in self.pairs.finditer(text):
                found.setdefault(pm.group("key"), pm.group("val").rstrip(",;|"))
            if self.step_key in found:
                found["step"] = found.pop(self.step_key)
        step, total = parse_step(found.pop("step", None))
        if step is None:
            return None
        out: dict[str, Any] = {"step": step}
        if total is not None:
            out["max_steps"] = total
        for name, raw in found.items():
            num = parse_number(raw)
            if name == "max_steps":
                if num is not None and num == int(num):
                    out["max_steps"] = int(num)
                continue
            got = field_of(name) if num is not None else None
            if got is not None and got[0] not in out:
                out[got[0]] = unit_value(got[0], num, None, name)
            else:
                out[name] = num if num is not None else raw
        return out, SRC


def line_format_of(spec: str | None) -> LineFormat | None:
    """The format a recipe's ``log_format`` declares (validated when the recipe was loaded), if any."""
    return parse_line_format(spec) if isinstance(spec, str) and spec.strip() else None


def parse_line_format(spec: str) -> LineFormat:
    """The format a spec string declares; ``LineFormatError`` (one line) when it is unusable."""
    if not isinstance(spec, str) or not spec.strip():
        raise LineFormatError("log format: empty (give a regular expression with a (?P<step>...) group, "
                              "or 'kv SEP [STEPKEY]')")
    if len(spec) > MAX_SPEC:
        raise LineFormatError(f"log format: longer than {MAX_SPEC} characters")
    words = spec.split()
    if words[0] == "kv":
        if len(words) not in (2, 3):
            raise LineFormatError(f"log format: {spec!r}: write 'kv SEP' or 'kv SEP STEPKEY' (e.g. 'kv = iter')")
        sep = re.escape(words[1])
        pairs = re.compile(_KEY_START + r"(?P<key>[A-Za-z_][\w./@()\-]*)\s*" + sep + r"\s*(?P<val>[^\s,;|]+)")
        return LineFormat(spec, pairs=pairs, step_key=words[2] if len(words) == 3 else "step")
    try:
        rx = re.compile(spec)
    except re.error as exc:
        raise LineFormatError(f"log format: not a valid regular expression ({exc})") from None
    if "step" not in rx.groupindex:
        raise LineFormatError("log format: the regular expression needs a (?P<step>...) group "
                              "(the step is never invented)")
    return LineFormat(spec, regex=rx)
