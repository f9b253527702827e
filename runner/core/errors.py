"""Errors that reach the user as one line and exit code 2 (bad input), never a traceback."""
from __future__ import annotations

from moeconsole.runner.core.units import clip


class InputError(Exception):
    """Unreadable file, invalid YAML, unknown run, bad flag value: the user must fix the input."""


def shown(value: object, limit: int = 80) -> str:
    """A value as a one-line message quotes it: repr, cut to ``limit`` characters (a 5000-level
    list or a 400-digit number stays one readable line; ``str`` of a huge int may even refuse)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"a number of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value).replace("\n", "\\n")
    return clip(text, limit)
