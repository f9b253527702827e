"""ASCII output for a terminal that cannot show UTF-8 (``LANG=C`` on someone else's cluster).

tmux decides per client whether it may send UTF-8 from the client's locale (the first set of
``LC_ALL``, ``LC_CTYPE``, ``LANG`` naming UTF-8, unless ``tmux -u``); a client without one gets
every non-ASCII cell as ``_``: the braille charts became rows of underscores, the GPU bars and
``…`` too (GNU screen likewise). So inside tmux, when tmux says a client of the console's session
gets no UTF-8 (``tmux_clients_utf8``; the console's own locale is the server's, not the client's),
else inside tmux or screen when the console's locale names no UTF-8 (tmux's rule), everything the
console draws is written in ASCII, one character per cell
so nothing moves: a braille cell by where its dots lie (``'`` high, ``-`` middle, ``.`` low,
``|`` a vertical stroke), box drawing as ``- | +``, blocks as ``#``, ``·`` as ``|``, ``…`` as
``~``, a letter with an accent as the letter. ``MOECONSOLE_ASCII=1``
asks for it anywhere (a terminal set to another charset), ``MOECONSOLE_ASCII=0`` turns it off
(``tmux -u``).

The one owner of that decision (``ascii_only``) and of the translation (``to_ascii``); the app
applies it to every frame its terminal driver writes (``MoeConsole.get_driver_class``).
"""
from __future__ import annotations

import os
import unicodedata
from collections.abc import Mapping

_ON, _OFF = ("1", "yes", "on", "true"), ("0", "no", "off", "false")


def ascii_only(environ: Mapping[str, str] | None = None, *, wait: bool = True) -> bool:
    """Whether the console draws in ASCII: ``MOECONSOLE_ASCII`` when it says yes or no, else inside
    tmux what tmux says of the clients showing this session (``tmux_clients_utf8``), else, inside
    tmux or GNU screen (``TMUX``, ``STY``: the multiplexers that judge their client's terminal by
    its locale and show ``_`` for what it cannot take), whether the locale (``LC_ALL``, else
    ``LC_CTYPE``, else ``LANG``: tmux's rule) names no UTF-8. Outside them the terminal emulator
    draws the UTF-8 it is sent whatever the locale (a container without ``LANG``): Unicode.
    ``environ`` None: the environment this process was started with (``started_environ``).
    ``wait`` False: while tmux's answer to the early question is not in yet (``tmux_pending``),
    the locale rule's answer, what it says when tmux cannot say."""
    asked = (os.environ if environ is None else environ).get("MOECONSOLE_ASCII", "").strip().lower()
    if asked in _ON or asked in _OFF:
        return asked in _ON
    env = started_environ() if environ is None else environ
    if not (env.get("TMUX") or env.get("STY")):
        return False   # a terminal emulator shows UTF-8 whatever the remote locale says
    if env.get("TMUX") and (wait or environ is not None or not tmux_pending()) and \
            (utf8 := _tmux_answer() if environ is None else tmux_clients_utf8(env)) is not None:
        return not utf8
    locale = next((env[name] for name in ("LC_ALL", "LC_CTYPE", "LANG") if env.get(name)), "")
    return not any(tag in locale.lower() for tag in ("utf-8", "utf8"))


_EARLY: list = []   # (thread, answers) of ask_tmux_early


def ask_tmux_early() -> None:
    """Ask tmux (``tmux_clients_utf8``) on a thread now, while the console's modules import: the
    answer waits for ``ascii_only`` when the terminal driver is made (the question is a process
    of its own, ~10 ms, that would otherwise sit on the way to the first frame). Nothing to ask
    outside tmux or when ``MOECONSOLE_ASCII`` decides."""
    import threading
    env = started_environ()
    asked = os.environ.get("MOECONSOLE_ASCII", "").strip().lower()
    if _EARLY or not env.get("TMUX") or asked in _ON or asked in _OFF:
        return
    answers: list[bool | None] = []
    thread = threading.Thread(target=lambda: answers.append(tmux_clients_utf8(env)), name="tmux-utf8",
                              daemon=True)
    thread.start()
    _EARLY.append((thread, answers))


def _tmux_answer() -> bool | None:
    """What tmux says of this process's clients, asked once a process: the early question's
    answer (``ask_tmux_early``), the question asked now when nobody asked it early (every
    ``MoeConsole`` made in one process takes that one answer; the question is a process of its
    own)."""
    if not _EARLY:
        ask_tmux_early()
    return _early_answer() if _EARLY else None


def tmux_pending() -> bool:
    """Whether the early question to tmux (``ask_tmux_early``) is still waiting for its answer:
    the terminal driver then draws by the locale rule (``ascii_only(wait=False)``) and by tmux's
    answer once it comes (``MoeConsole`` waits for it on a thread and repaints), so a slow tmux
    (a busy server: up to ``tmux_clients_utf8``'s 3 s) never holds the first frame back."""
    return bool(_EARLY) and _EARLY[0][0].is_alive()


# What the console's terminal driver draws in now (``MoeConsole.get_driver_class``): decided when
# the driver is made, changed once when tmux's answer comes after it (``MoeConsole``).
DRAWING_ASCII: list[bool] = [False]


def draw_ascii(on: bool) -> None:
    """Draw in ASCII from now on, or not (``DRAWING_ASCII``); the commands the console names (a
    toast, the banner, the lines it leaves on the terminal) then write a path the way a shell
    reads it back (``shellwords.ASCII_OUTPUT``), not as stand-ins naming another directory."""
    from moeconsole.runner.core import shellwords
    DRAWING_ASCII[0] = shellwords.ASCII_OUTPUT[0] = on


def _early_answer() -> bool | None:
    thread, answers = _EARLY[0]
    thread.join(5.0)   # tmux_clients_utf8 gives up after 3 s
    return answers[0] if answers else None


def tmux_clients_utf8(env: Mapping[str, str], timeout: float = 3.0) -> bool | None:
    """Whether every tmux client showing this pane takes UTF-8, as tmux itself judged each when it
    attached (``#{client_utf8}``: ``1``, or ``0`` for a client whose locale named no UTF-8 and no
    ``tmux -u``): a server started from a UTF-8 login passes that locale to the console, while a
    client attached later from ``LANG=C`` still gets ``_`` for every non-ASCII cell. Asked of the
    server in ``TMUX`` about the clients of the session holding ``TMUX_PANE`` (``list-clients``);
    one client saying ``0`` is enough (it sees the same screen). None when tmux cannot say: no
    client attached yet (``new-session -d``), a tmux too old to know ``client_utf8`` (it expands
    an unknown name to nothing), no ``tmux`` command, no answer within ``timeout``."""
    import shutil
    import subprocess
    tmux = shutil.which("tmux", path=env.get("PATH") or os.environ.get("PATH"))
    if tmux is None:
        return None
    pane = env.get("TMUX_PANE", "")
    cmd = ([tmux, "list-clients", "-t", pane, "-F", "#{client_utf8}"] if pane
           else [tmux, "display-message", "-p", "#{client_utf8}"])
    try:
        done = subprocess.run(cmd, env=dict(env), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              errors="replace", timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    said = [line.strip() for line in done.stdout.splitlines()] if done.returncode == 0 else []
    if "0" in said:
        return False
    return True if "1" in said else None


def started_environ() -> Mapping[str, str]:
    """The environment as the user's shell passed it: ``/proc/self/environ``. Python rewrites its
    own at start in the C locale (PEP 538 sets ``LC_CTYPE=C.UTF-8`` when ``LANG=C`` or nothing is
    set), which would hide the very locale tmux judges the terminal by. ``os.environ`` where
    /proc cannot be read."""
    try:
        with open("/proc/self/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return os.environ
    env: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep:
            env[os.fsdecode(name)] = os.fsdecode(value)
    return env


# Braille dot bits (U+2800 + bits) by row in the cell: the left and the right dot of each row.
_BRAILLE_ROWS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))

_PUNCTUATION = {
    "·": "|", "•": "*", "…": "~", "—": "-", "–": "-", "−": "-", "‐": "-", "’": "'", "‘": "'", "“": '"',
    "”": '"', "↑": "^", "↓": "v", "→": ">", "←": "<", "×": "x", "≥": ">", "≤": "<", "≈": "~", "°": "o",
    "✓": "v", "✔": "v", "✗": "x", "✘": "x", "█": "#", "▓": "#", "▒": ":", "░": ".", "µ": "u",
    "▁": "_", "▂": ".", "▃": ".", "▄": "o", "▅": "o", "▆": "O", "▇": "#", "▔": "-", "▀": "\"",
}


def _braille(bits: int) -> str:
    rows = [r for r, (left, right) in enumerate(_BRAILLE_ROWS) if bits & (left | right)]
    if not rows:
        return " "
    if rows[-1] - rows[0] >= 2:
        return "|"
    mean = sum(rows) / len(rows)
    return "'" if mean < 0.75 else "-" if mean < 2.25 else "."


def _one(ch: str) -> str:
    """The ASCII stand-in of one non-ASCII character, as many cells wide as it is."""
    code = ord(ch)
    if 0x2800 <= code <= 0x28FF:
        return _braille(code - 0x2800)
    if ch in _PUNCTUATION:
        return _PUNCTUATION[ch]
    name = unicodedata.name(ch, "")
    if name.startswith("BOX DRAWINGS"):
        words = set(name.split())
        if "AND" in words or "DIAGONAL" in words:
            return "+"
        return "-" if words & {"HORIZONTAL", "LEFT", "RIGHT"} else "|" if words & {"VERTICAL", "UP", "DOWN"} else "+"
    if "BLOCK" in name or name.startswith("QUADRANT"):
        return "|" if "LEFT" in name or "RIGHT" in name else "#"
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
        return ""
    wide = unicodedata.east_asian_width(ch) in ("W", "F")
    base = unicodedata.normalize("NFKD", ch).encode("ascii", "ignore").decode()
    if len(base) == 1 and not wide:
        return base
    if ch.isspace():
        return " "
    return "??" if wide else "?"


class _Table(dict):
    """``str.translate``'s table, filled as characters are met (ASCII maps to itself)."""

    def __missing__(self, code: int) -> str:
        value = chr(code) if code < 128 else _one(chr(code))
        self[code] = value
        return value


_TABLE = _Table()


def whole_cell_scrollbars() -> None:
    """Scrollbars whose thumb is whole cells, for a console drawn in ASCII: Textual ends a thumb in
    an eighth block for a smoother look (``textual/scrollbar.py`` ``ScrollBarRender.VERTICAL_BARS``
    and ``HORIZONTAL_BARS``, drawn where they are not a space), which ``to_ascii`` can only write
    as a bar's height (``▄`` is ``o``): the help's scrollbar under LANG=C ended in "oo" beside the
    text. A thumb of reverse-video cells reads as a thumb in any charset; Textual's documented
    hook is ``ScrollBar.renderer``, for every scrollbar of the process (the console's own)."""
    from textual.scrollbar import ScrollBar, ScrollBarRender

    class WholeCells(ScrollBarRender):
        VERTICAL_BARS = [" "] * len(ScrollBarRender.VERTICAL_BARS)
        HORIZONTAL_BARS = [" "] * len(ScrollBarRender.HORIZONTAL_BARS)
    ScrollBar.renderer = WholeCells


def to_ascii(text: str) -> str:
    """``text`` with every non-ASCII character replaced by its ASCII stand-in (escape sequences
    are ASCII and pass unchanged)."""
    return text if text.isascii() else text.translate(_TABLE)
