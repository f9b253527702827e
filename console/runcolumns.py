"""Which columns of a run table fit a width: one priority rule for `runs ls`, the run browser
and the compare table.

A table lists its columns; each may name the kind of fact it shows (``PRIORITY``). The kinds in
``PRIORITY`` come first, in that order (status, name, step, loss, alerts, the id, the last crash
when a listed run has one, age), then the table's other columns in its own order. The id is
what a user types next (`attach`, `kill`, `verify` take it; `run` and `q` print it), so it is
fitted before the name is widened, before the last crash and the age: a long name is cut (…)
and the ID column stays on an 80-column line (a 60-character name had pushed it out, and among
200 runs, where a short id may take 11 columns, `lr-193-1590`, so had the last crash: newcomer
round 5). A FAILED run's why
tells more than how long ago the run started: at 80 columns a list that holds a crash keeps LAST
CRASH and leaves the age out if both do not fit. ``fit`` keeps the priority columns while they fit (the name at
``NAME_MIN``, cut with ``cut_name``; the age is then left out again where the name would be cut
below its floor, ``name_floor``: the values that tell runs apart stay whole), widens the name
to what it needs (up to ``NAME_MAX``), then adds every other column that still fits *whole*: a
column is shown whole or not at all, so no number is cut.
"""
from __future__ import annotations

from dataclasses import dataclass

from moeconsole.console import format as fmt
from moeconsole.console.format import cell_width, clip_cells
from moeconsole.runner.rundir import rundir

PRIORITY = ("status", "name", "step", "loss", "alerts", "id", "crash", "age")
NAME_MIN = 16   # the name is cut (…) down to this before a priority column is left out
NAME_MAX = 48
YIELD_TO_NAME = ("age",)   # left out before the name is cut below its floor (``name_floor``)
GAP = 2         # between columns (two spaces; a DataTable's cell padding; a rich Table's padding)

# The run index's columns as `runs ls` and the browser show them: (row key, header, narrow
# header, kind), in the order a table shows them. The id (what `attach` takes) is a priority
# column, kind "id"; after the priority kinds the rest are added in this order. The last crash class is a
# priority column (kind "crash", ``crash_kind``) when a listed run has one: a FAILED run's why is
# kept before the age, before the name is widened and before the counts.
RUN_COLUMNS = (("status", "STATUS", "STATUS", "status"), ("display_name", "NAME", "NAME", "name"),
               ("last_step", "STEP", "STEP", "step"), ("last_loss", "LAST LOSS", "LOSS", "loss"),
               ("open_alerts", "ALERTS", "ALERTS", "alerts"), ("age", "AGE", "AGE", "age"),
               ("id", "ID", "ID", "id"), ("last_crash_class", "LAST CRASH", "CRASH", "crash"),
               ("bad_saves", "BAD SAVES", "BAD", None), ("attempts", "ATT", "ATT", None),
               ("crashes", "CRASHES", "CRASHES", None),
               ("min_loss", "MIN LOSS", "MIN LOSS", None), ("started_at", "STARTED", "STARTED", None),
               ("ended_at", "ENDED", "ENDED", None), ("recipe_hash", "RECIPE", "RECIPE", None))


@dataclass(frozen=True)
class Column:
    key: str
    width: int                  # what its widest cell (or header) needs
    kind: str | None = None     # one of PRIORITY, or None
    always: bool = False        # shown at any width (the compare table's glyph)
    floor: int = NAME_MIN       # the name column: the narrowest it is cut to (``name_floor``)


def rank(columns: list[Column], priority: tuple[str, ...] = PRIORITY) -> list[Column]:
    """The columns in priority order: the kinds of ``priority`` first, the rest as given."""
    order = {k: i for i, k in enumerate(priority)}
    return sorted(columns, key=lambda c: (0 if c.always else 1, order.get(c.kind or "", len(priority))))


def fit_columns(columns: list[Column], width: int | None, gap: int = GAP,
                priority: tuple[str, ...] = PRIORITY) -> tuple[list[str], int]:
    """(keys shown, in priority order; the name column's width). ``width`` None: all of them.
    ``priority``: a table's own order of kinds (the zombie table's, ``widgets.blockers``); the
    kind ``name`` is the one column cut."""
    ranked = rank(columns, priority)
    name = next((c for c in ranked if c.kind == "name"), None)
    name_need = min(name.width, NAME_MAX) if name is not None else 0
    if width is None:
        return [c.key for c in ranked], name_need

    def span(keys: list[Column], name_w: int) -> int:
        return sum(name_w if c is name else c.width for c in keys) + gap * max(0, len(keys) - 1)

    chosen: list[Column] = []
    name_min = min(NAME_MIN, name_need)
    for col in ranked:
        if not (col.always or col.kind in priority):
            continue
        trial = chosen + [col]
        if span(trial, name_min) > width and not col.always:
            if col is name:
                break
            continue
        chosen = trial
    def widened() -> int:
        if name is None or name not in chosen:
            return name_min
        return max(name_min, min(name_need, width - span([c for c in chosen if c is not name], 0) - gap))
    name_w = widened()
    floor = min(name.floor, name_need) if name is not None else 0
    for col in reversed(chosen):   # the age goes before the values that tell runs apart are cut
        if name_w >= floor:
            break
        if col.kind in YIELD_TO_NAME:
            chosen.remove(col)
            name_w = widened()
    for col in ranked:
        if col in chosen:
            continue
        if span(chosen + [col], name_w) <= width:
            chosen.append(col)
    keys = {c.key for c in chosen}
    return [c.key for c in ranked if c.key in keys], name_w


def cut_name(text: str, w: int) -> str:
    """A display name cut to ``w``: the values that tell runs of one name apart are kept whole,
    the shared name is shortened first (``tiny-m… --fault=oom@40``), then dropped
    (``…--learning_rate=3.5e-4``), then values are left out whole from the end
    (``…--lr=2e-4 --fp8…``); only a single value longer than ``w`` is cut. ``w`` counts terminal
    cells (``format.cell_width``: a CJK name takes two a character)."""
    if cell_width(text) <= w:
        return text
    name, sep, values = text.partition(" ")
    if not sep:
        return clip_cells(text, w)
    if cell_width(values) + 3 <= w:
        keep = w - cell_width(values) - 2
        return clip_cells(name, keep + 1) + " " + values
    if cell_width(values) + 1 <= w:
        return "…" + values
    kept: list[str] = []
    for value in values.split(" "):
        if cell_width("…" + " ".join(kept + [value]) + "…") > w:
            break
        kept.append(value)
    return "…" + " ".join(kept) + "…" if kept else clip_cells(text, w)


def name_floor(names: list[str]) -> int:
    """The narrowest name column at which ``cut_name`` keeps every listed name's values whole
    (``…--learning_rate=1.5e-4``): ``NAME_MIN``, or a value's width and its mark, up to
    ``NAME_MAX``. Below it a column that ranks after the name (the age) is left out first."""
    need = [cell_width(n.partition(" ")[2]) + 1 for n in names if " " in n]
    return min(NAME_MAX, max([NAME_MIN] + need))


def cut_apart(names: list[str], w: int) -> list[str]:
    """The names as a column ``w`` wide shows them (``cut_name``), where two different names
    would be cut to one text (a sweep's `qwen3-moe-lora-sft-ablation-…-lr195` and `…-lr190`,
    both `qwen3-moe-lora-sft-ab…`: eight identical rows) each keeps instead the word where it
    differs from the name nearest it (the longest start they share; a word runs between the
    separators ``-``, ``_``, ``.``, a space), with as much of its start as fits and … for what is
    left out on either side: `qwen3-moe-lora-sf…lr195`, `qwen3-moe-…lr195…` when the names differ
    in the middle (`…-lr195-with-a-long-descriptive-name-seed1`: the whole tail from the first
    difference had not fit, and the plain cut came back: review R51). Names that do not collide,
    or whose words would still read alike, are cut as ``cut_name`` cuts."""
    import os
    from collections import defaultdict
    cut = [cut_name(n, w) for n in names]
    groups: dict[str, set[str]] = defaultdict(set)
    for name, shown in zip(names, cut):
        groups[shown].add(name)
    kept: dict[str, str] = {}
    for shown, alike in groups.items():
        if len(alike) < 2:
            continue
        told = {name: _told_word(name, alike - {name}, w) for name in alike}
        if None not in told.values() and len(set(told.values())) == len(alike):
            kept.update({name: text for name, text in told.items() if text is not None})
    return [kept.get(name, shown) for name, shown in zip(names, cut)]


_WORD_SEPARATORS = "-_. "


def _told_word(name: str, others: set[str], w: int) -> str | None:
    """``name`` in ``w`` cells keeping the word where it first differs from the nearest of
    ``others`` (``cut_apart``): its start as fits, …, the word, … when more follows. None when the
    word and five cells of start do not fit."""
    import os
    if cell_width(name) <= w:
        return name
    at = max(len(os.path.commonprefix([name, other])) for other in others)
    start = max(name.rfind(sep, 0, at) + 1 for sep in _WORD_SEPARATORS)
    ends = [i for i in (name.find(sep, max(at, start + 1)) for sep in _WORD_SEPARATORS) if i >= 0]
    end = min(ends) if ends else len(name)
    word, more = name[start:end], ("…" if end < len(name) else "")
    room = w - cell_width(word) - cell_width(more)
    if room < 5:
        return None
    head = name[:start]
    return (clip_cells(head, room).removesuffix("…") + "…" if cell_width(head) > room - 1 else head) + word + more


def told_apart(names: list[str], short: list[str]) -> list[str]:
    """Display names as a table without its ID column shows them: a name that two listed runs
    share (same name, no recipe value apart: two `moeconsole demo` runs) gets the run's short id
    after it (``tiny-moe-cpu [a3f2]``, what `attach` takes), a value ``cut_name`` keeps whole; at
    80 columns the browser had shown two identical rows. On screen only: ``--json`` keeps each
    run's ``display_name`` and ``id``."""
    from collections import Counter
    seen = Counter(names)
    return [f"{n} [{s}]" if seen[n] > 1 else n for n, s in zip(names, short)]


def short_ids(rows: list[dict], every: list[str] | None = None) -> dict[str, str]:
    """Each run's id as `attach` needs it (``rundir.short_refs``), among ``every`` run under the
    directory (``rows`` when they are all of them): a filter that hides a run does not make a
    suffix it holds unique, since `attach` still finds both (reviewed, R29)."""
    from moeconsole.runner.rundir.rundir import short_refs
    listed = [str(r["id"]) for r in rows]
    short = short_refs(sorted(set(listed) | set(every or [])))
    return {rid: short[rid] for rid in listed}


def listed_cell(key: str, row: dict, now: float, ids: dict[str, str] | None, up: float | None = None) -> str:
    """One cell of a run-index row: the age since it started and the start, the id as ``ids``
    shortens it, else ``format.run_cell``. ``up``: the boot clock read once for the listing
    (``rundir.start_shown``)."""
    if key == "age":
        age = rundir.run_age(row, now, up)
        return fmt.duration(age) if age is not None else fmt.NA
    if key == "started_at":     # on the boot clock where it can tell (``rundir.start_shown``), as the age
        return fmt.date(rundir.start_shown(row, now, up))
    if key == "id" and ids is not None:
        return ids.get(str(row["id"]), str(row["id"]))
    return fmt.run_cell(key, row)


def crash_kind(kind: str | None, rows: list[dict]) -> str | None:
    """A column's kind in this list: the last crash ranks as a priority column only when a listed
    run has a crash class (else it is a column of dashes, added only where it fits)."""
    if kind != "crash":
        return kind
    return kind if any(r.get("last_crash_class") for r in rows) else None


def run_table(rows: list[dict], width: int | None, now: float, *, extra: dict[str, int] | None = None,
              full_ids: bool = False, every: list[str] | None = None,
              ) -> tuple[list[tuple[str, str, int]], dict[str, list[str]]]:
    """The run index fitted to ``width``: ([(key, header, width)] in order, cells per key).
    ``extra``: more room a column's cells need (the browser's mark before the status);
    ``full_ids``: the whole id (output that is not a terminal); ``every``: the id of every run
    under the directory, when ``rows`` are filtered (``short_ids``)."""
    ids = None if full_ids else short_ids(rows, every)
    from moeconsole.runner.telemetry.identity import uptime
    up = uptime()   # /proc/uptime once for the listing, not once per row and column
    cells = {k: [listed_cell(k, r, now, ids, up) for r in rows] for k, _, _, _ in RUN_COLUMNS}
    heads = {k: (full if width is None else narrow) for k, full, narrow, _ in RUN_COLUMNS}
    widths = {k: max([cell_width(heads[k])] + [cell_width(c) + (extra or {}).get(k, 0) for c in cells[k]])
              for k, _, _, _ in RUN_COLUMNS}
    def fit() -> tuple[list[str], int]:
        floor = name_floor(cells["display_name"])
        return fit_columns([Column(k, widths[k], crash_kind(kind, rows), floor=floor)
                            for k, _, _, kind in RUN_COLUMNS], width)
    keys, name_w = fit()
    if "id" not in keys and ids is not None:
        told = told_apart(cells["display_name"], [ids[str(r["id"])] for r in rows])
        if told != cells["display_name"]:   # the names grew: the columns are fitted again
            cells["display_name"] = told
            widths["display_name"] = max(cell_width(c) for c in told + [heads["display_name"]])
            keys, name_w = fit()
    # shown in the table's order (RUN_COLUMNS: ... AGE, ID, LAST CRASH), whatever the priority
    # that chose them
    cols = [(k, heads[k], name_w if k == "display_name" and width is not None else widths[k])
            for k, _, _, _ in RUN_COLUMNS if k in keys]
    if width is not None and "display_name" in keys:
        cells["display_name"] = cut_apart(cells["display_name"], name_w)
    return cols, cells
