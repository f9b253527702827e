"""Errors that reach the user as one line and exit code 2 (bad input), never a traceback."""
from __future__ import annotations

from moeconsole.runner.core.units import clip
from moeconsole.runner.core.units import printable as printable   # its owner: units (command_text uses it)


class InputError(Exception):
    """Unreadable file, invalid YAML, unknown run, bad flag value: the user must fix the input."""


class AmbiguousRun(InputError):
    """A RUN as typed matches several runs. ``ref`` is what was typed, ``pick`` the id the command
    line offers in its place (the live run, else the newest), so the user is given the command to
    type again (``console/cli.py``). ``matches``: each matching run's (id, status), so a command
    for which the choice does not matter can answer for all of them (``kill`` of runs that all
    ended)."""

    def __init__(self, message: str, ref: str, pick: str,
                 matches: tuple[tuple[str, str | None], ...] = ()) -> None:
        super().__init__(message)
        self.ref = ref
        self.pick = pick
        self.matches = matches


def shown(value: object, limit: int = 80) -> str:
    """A value as a one-line message quotes it: repr, cut to ``limit`` characters (a 5000-level
    list or a 400-digit number stays one readable line; ``str`` of a huge int may even refuse)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"a number of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value).replace("\n", "\\n")
    return clip(text, limit)


def not_utf8(text: str) -> str | None:
    """The first byte of ``text`` that is not UTF-8, as ``0xff``, else None. A command-line
    argument or a path holding such a byte (a latin-1 directory name) reaches Python as a lone
    surrogate (``os.fsdecode``), which no JSON or SQLite record of the run can hold."""
    for ch in text:
        if "\udc80" <= ch <= "\udcff":
            return f"0x{ord(ch) - 0xDC00:02x}"
        if "\ud800" <= ch <= "\udfff":
            return f"U+{ord(ch):04X}"
    return None


def utf8_decoded(text: str) -> str | None:
    """``text`` as its bytes read as UTF-8, else None. Under an ASCII locale (``LC_ALL=C`` with
    ``PYTHONUTF8=0 PYTHONCOERCECLOCALE=0``) Python decodes every command-line argument and path as
    ASCII, each other byte a lone surrogate (``surrogateescape``, PEP 383): a name typed in UTF-8
    reaches us as ``caf\\udcc3\\udca9``. Decided from the bytes, it is ``café``. A surrogate
    no byte makes (``\\ud800``) is not UTF-8 either."""
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8")
    except UnicodeError:
        return None


def _bad_byte(text: str) -> str:
    """The first byte of ``text`` that UTF-8 does not decode, as ``0xff`` (``U+D800`` for a
    surrogate no byte makes): the one the refusal names, not merely the first escaped one."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        return f"U+{ord(text[exc.start]):04X}"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"0x{raw[exc.start]:02x}"
    return not_utf8(text) or ""


def utf8_text(text: str, what: str) -> str:
    """``text`` as UTF-8 text, decided from its bytes (``utf8_decoded``: a UTF-8 name typed under
    an ASCII locale is the name typed); else one ``InputError`` line naming ``what`` and the byte.
    The one rule for a name the run's records must hold (state.json, the index, events): it had
    been a traceback, a half-made run directory, or a run ``runs ls`` never showed."""
    decoded = utf8_decoded(text)
    if decoded is None:
        raise InputError(f"{what} {shown(text)} is not UTF-8 text (it holds the byte {_bad_byte(text)}): the run's "
                         "records are UTF-8 and could not hold it; give it in UTF-8")
    return decoded


def utf8_path(text: str, what: str) -> str:
    """``text``, a path the run's records hold, when it is UTF-8 text as this Python holds it;
    else one ``InputError`` line. A path whose bytes are UTF-8 but that this Python holds as
    escapes (an ASCII locale: ``utf8_decoded``) cannot be given back decoded, since every file
    call would encode it as ASCII: the line says which locale setting to change, not that the
    bytes are wrong."""
    if not_utf8(text) is None:
        return text
    decoded = utf8_decoded(text)
    if decoded is not None:
        raise InputError(f"{what} {shown(decoded)} is UTF-8, but this Python reads paths as ASCII (an ASCII "
                         "locale such as LC_ALL=C, with PYTHONUTF8=0): set PYTHONUTF8=1 or a UTF-8 locale "
                         "(LC_ALL=C.UTF-8) and start it again")
    return utf8_text(text, what)


def unprintable(text: str) -> str | None:
    """The first character of ``text`` that is not printable (``str.isprintable``: a control
    character such as a newline, a tab or ESC, a format character such as a bidi override or a
    zero-width space, a line separator, a space other than U+0020), as ``U+000A``; else None."""
    for ch in text:
        if not ch.isprintable():
            return f"U+{ord(ch):04X}"
    return None


def printable_text(text: str, what: str) -> str:
    """``text`` when every character of it prints; else one ``InputError`` line naming ``what``
    and the character. The one rule for a name shown in a line of a table or a header: a newline
    in a run's name made ``runs ls`` show a second run that does not exist, ESC sequences drove
    the user's terminal, a bidi override showed the name reversed."""
    ch = unprintable(text)
    if ch is not None:
        raise InputError(f"{what} {shown(text)} holds a character that does not print ({ch}): it is shown in "
                         "tables and headers; give it without control, format or separator characters")
    return text


