"""Numbers as short text: durations, byte sizes, counts, and the one mark for a missing value.

Every screen, command and message that shows one of these imports it from here (the console's
``format`` module builds on it), so a process age in ``gpus`` and an elapsed time in the status
line read the same."""
from __future__ import annotations

import re
from typing import Any

from moeconsole.runner.core.numbers import finite_float

NA = "—"  # a value that is unknown or absent


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the cut marked with "…" (at least one character of
    the text is kept)."""
    return text if len(text) <= width else text[: max(1, width - 1)] + "…"


def path_name(path: Any) -> str:
    """A path's last part (``/runs/x/output/checkpoint-40/`` -> ``checkpoint-40``), ``NA`` for
    none: what a line shows of a checkpoint, a sync's copy or a resume point."""
    return str(path).rstrip("/").rsplit("/", 1)[-1] if path else NA


_BARE_NUMBER = re.compile(r"^[$€£(]?[\d.,:%/]+[a-zA-Z/%]{0,2}$")   # "$0.00", "1,400", "39s", "12.0G", "3/5"
_LITTLE_WORDS = frozenset({"a", "an", "the", "of", "in", "on", "to", "at", "by", "for", "with", "from"})


def fit_words(text: str, width: int, *, from_end: bool = False) -> str:
    """``text`` in ``width`` characters for a screen, losing the least: first the parenthesised
    asides that hold no number (``(chunk_gated_delta_rule_bwd)``), then the little words
    (``of``, ``in``, ``to``, ...), then whole words from the end, marked with "…". Never a cut inside a word, so what is left keeps its numbers, PIDs and verbs
    whole (a single word longer than ``width`` is the only thing ``clip`` still cuts).

    ``from_end``: only whole words from the end, each cut marked: a sentence read as it is written,
    where a little word dropped unmarked changes what it says (the events pane's
    `attempt 1 started scratch`, newcomer round 15)."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    asides = [] if from_end else list(re.finditer(r" ?\([^()]*\)", text))
    for m in reversed(asides):
        if not any(ch.isdigit() for ch in m.group(0)):
            text = text[:m.start()] + text[m.end():]
            if len(text) <= width:
                return text
    words = text.split(" ")
    for i in range(len(words) - 1, 0, -1):
        if not from_end and words[i].lower() in _LITTLE_WORDS:
            del words[i]
            if len(" ".join(words)) <= width:
                return " ".join(words)
    if not from_end and any(_ID_WORD.match(w) for w in words[1:]):
        kept = _keep_ids(words, width)
        if kept is not None:
            return kept
    while len(words) > 1 and len(" ".join(words).rstrip(",;:")) + 1 > width:   # the "…" takes a "," 's place
        words.pop()
    # a number that opened a clause whose words are cut ("$0.05/h, $0.00 so far, $0.00 projected" at
    # 80 columns: "..., $0.00…") says nothing: it goes with them. A number after its label ("step 39")
    # stays: only one after a clause's "," or ";". A member of a list of numbers ("PID 4121, 4122, 4123",
    # "on GPUs 0, 3": crash.py's ``', '.join(info.gpus)``) stays (``_opens_clause``), so what fits of
    # the list is kept: "PID 4121, 4122…", not "PID 4121…" (review R22).
    while (len(words) > 1 and _BARE_NUMBER.match(words[-1]) and words[-2].endswith((",", ";"))
           and _opens_clause(words[-2], words[-1])):
        words.pop()
    kept = " ".join(words).rstrip(",;:")
    return clip(kept + "…", width) if len(kept) + 1 <= width else clip(kept, width)


def _opens_clause(before: str, number: str) -> bool:
    """Whether ``number`` (a bare number after ``before``, which ends with "," or ";") opens a clause
    (``$0.05/h, $0.00 so far``) rather than going on a list of numbers (``4121, 4122, 4123``;
    ``0, 3``): a list repeats its members' form (digits aside: ``$0.05/h`` and ``$0.00`` differ),
    and a member followed by more of the list ends with its ","."""
    if number.endswith(","):
        return not _BARE_NUMBER.match(before)
    return _number_form(before) != _number_form(number)


def _number_form(word: str) -> str:
    return re.sub(r"\d+", "9", word.rstrip(",;"))


# A ``namespace/name`` id (a Hub repo such as ``meta-llama/Llama-3.1-8B``): what an alert is about,
# so the words before it go first (a path has been reduced to its last part by then).
_ID_WORD = re.compile(r"^['\"`(]?[\w.-]+/[\w.-]+['\"`),;:.]*$")


def _keep_ids(words: list[str], width: int) -> str | None:
    """``words`` in ``width`` losing whole words from the end but never an id (``_ID_WORD``):
    where words went, "…" says so ("... gated on the Hugging Face Hub… meta-llama/Llama-3.1-8B").
    None when the ids and the first word alone do not fit."""
    keep = [True] * len(words)

    def text() -> str:
        out: list[str] = []
        for i, w in enumerate(words):
            if not keep[i]:
                if out and not out[-1].endswith("…"):
                    out[-1] = out[-1].rstrip(",;:") + "…"
                continue
            out.append(w)
        return " ".join(out)

    for i in range(len(words) - 1, 0, -1):
        if len(text()) <= width:
            return text()
        if not _ID_WORD.match(words[i]):
            keep[i] = False
    return text() if len(text()) <= width else None


def fit_with_tail(head: str, tail: str, width: int) -> str:
    """``head`` fitted by ``fit_words`` so that ``head + tail`` takes ``width`` (the tail, a
    count and steps such as `` (x2, steps 4-8)``, always stays whole)."""
    return fit_words(head, max(12, width - len(tail))) + tail


def duration(seconds: Any) -> str:
    """42s, 7m36s, 3h02m, 26h00m, 2d04h: hours up to two days, then days."""
    s = finite_float(seconds)
    if s is None:
        return NA
    total = max(0, int(round(s)))
    if total < 60:
        return f"{total}s"
    m, sec = divmod(total, 60)
    if m < 60:
        return f"{m}m{sec:02d}s"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def number(value: Any, spec: str = ".0f") -> str:
    """A measured number in ``spec`` (``.0f``, ``.1f``), or NA when it is unknown or not finite."""
    v = finite_float(value)
    return NA if v is None else format(v, spec)


def whole(value: Any) -> str:
    """A whole reading (an index, degrees, watts, a percentage) truncated as the driver's integer,
    read by ``finite_float`` like every value an agent file carries: NA when it is unknown or odd
    (a bool, NaN, infinity, an int too large for a float, a list), never an error."""
    v = finite_float(value)
    return NA if v is None else str(int(v))


def gib_of_mib(mib: Any, unit: str = "") -> str:
    """A MiB reading (NVML's unit) as GiB with one decimal (``79.6``, or ``79.6G`` with
    ``unit="G"``); NA, without the unit, when it is unknown."""
    v = finite_float(mib)
    return NA if v is None else f"{v / 1024:.1f}{unit}"


def byte_rate(bps: Any) -> str:
    """A byte rate in few characters (powers of 1024): 812B/s, 1.5K/s, 3.2G/s; NA when unknown."""
    v = finite_float(bps)
    if v is None:
        return NA
    for div, unit in ((1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")):
        if v >= div:
            return f"{v / div:.1f}{unit}/s"
    return f"{v:.0f}B/s"


def gib_compact(gib: float) -> str:
    """A size in GiB in few characters: 1.5T, 794G, 9.5G (a disk's free space)."""
    return f"{gib / 1024:.1f}T" if gib >= 1024 else f"{gib:.0f}G" if gib >= 10 else f"{gib:.1f}G"


def human_bytes(n: int | float) -> str:
    """512 B, 1.5 KB, 30.0 GB (powers of 1024)."""
    x = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(x) < 1024 or unit == "TB":
            return f"{x:.0f} {unit}" if unit == "B" else f"{x:.1f} {unit}"
        x /= 1024
    return f"{x:.1f} TB"


def disk_bytes(n: float) -> str:
    """Decimal units, as disks are sold: 1.2 TB, 794 GB, 22 MB (sizes of saves against free disk)."""
    if n >= 1e12:
        return f"{n / 1e12:.1f} TB"
    if n >= 1e9:
        return f"{n / 1e9:.0f} GB"
    return f"{max(n, 0) / 1e6:.0f} MB"


def human_count(n: int) -> str:
    """999, 1.5K, 2.0M, 397.0B."""
    for unit, scale in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= scale:
            return f"{n / scale:.1f}{unit}"
    return str(n)


def printable(text: str) -> str:
    """``text`` for a one-line display: every character that does not print as its escape
    (``\\n``, ``\\x1b``, ``\\u202e``), the rest as it is (a name made before
    ``errors.printable_text``, a foreign process's command line)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def command_text(cmdline: str) -> str:
    """The informative part of a command line: the executable's name without its directory, then
    its arguments (``/opt/conda/envs/x/bin/python3 train.py --lr 1`` -> ``python3 train.py --lr 1``),
    one printable line (``printable``: an argument holding a newline or ESC, anybody's process's,
    had split a table's row in two or driven the terminal). A kernel thread's ``[name]`` stays as
    it is. Every list of processes shows this (the console's zombie list, ``moeconsole gpus``, a
    kill confirmation); ``--json`` keeps the command line as it is."""
    exe, _, rest = cmdline.strip().partition(" ")
    if not exe or exe.startswith("["):
        return printable(cmdline.strip())
    name = exe.rstrip("/").rsplit("/", 1)[-1] or exe
    return printable(f"{name} {rest}".strip())
