"""What a restarted runner misses: every corpus log (``tests/ingest/corpus``) read by a runner
that is stopped at 5 points of it (1/6 .. 5/6 of its bytes), and a new runner that starts from
the ``log_offset`` the first would save (``LiveReader.resume_offset``) with the reading context
it would save (``LiveReader.context``, restored into the new parser). A cut loses what the
whole log's read gives and neither of the two gives: a record or an evaluation (its step and
the values it carries, ``max_steps`` among them), or gives what the whole read does not (a
record given twice under two steps, with other values).

Also a script: ``python -m tests.ingest.resume_cuts`` prints the counts by family (the numbers
in docs/reliability.md); ``--lost`` names each cut and what it lost. The test is
``tests/ingest/test_ingest_resume_context.py``."""
from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from moeconsole.runner.ingest.live import LiveReader, _events_of
from moeconsole.runner.ingest.parser import RECORD

CORPUS = Path(__file__).with_name("corpus")
CUTS = 5
SLICE = 4096


def given(batches: list) -> set[tuple]:
    """The records and evaluations given: (what, step, its values by name, each rounded; not an
    evaluation's ``line``: the reader's own line count, a new reader's counts from its offset), so a
    record given again without some of its values (``max_steps``: the Trainer's banner), with
    other values, or under another step counts as lost (and the one given instead as extra)."""
    out = set()
    for b in batches:
        for kind, rec in _events_of(b):
            if (kind == RECORD or rec.get("kind") == "eval") and isinstance(rec.get("step"), int):
                inner = {**rec.get("extra", {}), **rec.get("values", {})}
                values = {k: v for k, v in rec.items() if v is not None and k not in ("extra", "values", "line")}
                values |= {f"extra.{k}": v for k, v in inner.items() if v is not None}
                out.add((kind if kind == RECORD else "eval", rec["step"],
                         tuple(sorted((k, _rounded(v)) for k, v in values.items()))))
    return out


def names(event: tuple) -> set[str]:
    """The names of the values an event of ``given`` carries."""
    return {k for k, _ in event[2]}


def _rounded(value: object) -> object:
    """A value as the measure compares it: a float to 6 significant digits, anything else by its text."""
    return f"{value:.6g}" if isinstance(value, float) else repr(value)


def read(data: bytes, start: int = 0, *, over: bool = True, context: object = None) -> tuple[LiveReader, list]:
    """A runner's reading from ``start`` in 4 KiB slices, with the reading context a runner before
    it saved (``context``); ``over``: the attempt ends at the log's end."""
    reader = LiveReader(diagnostics=lambda msg: None)
    if context is not None:
        reader.restore_context(context)
    batches = []
    for at in range(start, len(data), SLICE):
        batches += reader.feed_batches(data[at:at + SLICE], at)
    if over:
        batches += reader.attempt_over()
    return reader, batches


def cut_points(data: bytes, n: int = CUTS) -> list[int]:
    """The ``n`` points, k/(n+1) of the bytes (a runner is killed at any byte, inside a line too)."""
    return [len(data) * k // (n + 1) for k in range(1, n + 1)]


@dataclass
class Cut:
    log: str
    at: int
    resume: int
    missing: list[tuple]
    extra: list[tuple]


def lost_cuts(data: bytes, name: str = "") -> tuple[int, list[Cut]]:
    """(the cuts made, those that lost something). A log that gives no record makes none."""
    whole = given(read(data)[1])
    if not whole:
        return 0, []
    lost = []
    cuts = sorted(set(c for c in cut_points(data) if 0 < c < len(data)))
    for cut in cuts:
        first, before = read(data[:cut], over=False)
        resume = first.resume_offset(cut)
        _, after = read(data, resume, context=_context(first, resume))
        got = given(before) | given(after)
        missing, extra = whole - got, got - whole
        if missing or extra:
            lost.append(Cut(name, cut, resume, sorted(missing), sorted(extra)))
    return len(cuts), lost


def _context(reader: LiveReader, resume: int) -> object:
    """The context the first runner saves with its offset (none from a reader without it: the
    measure of the code before)."""
    return reader.context() if hasattr(reader, "context") else None


def family(name: str) -> str:
    return name.split("_", 1)[0]


def logs() -> list[Path]:
    return sorted(CORPUS.glob("*.log"))


def measure() -> tuple[int, list[Cut]]:
    total, lost = 0, []
    for path in logs():
        n, bad = lost_cuts(path.read_bytes(), path.stem)
        total += n
        lost += bad
    return total, lost


def differences(cut: Cut) -> set[str]:
    """What a cut's readers gave otherwise than the whole read: the names of the values a
    record or evaluation of the same step carries otherwise, ``record`` for one of a step only
    the whole read gives, ``extra`` for one of a step only the cut's readers give."""
    given_at = {(e[0], e[1]): dict(e[2]) for e in cut.extra}
    out = set()
    for m in cut.missing:
        other = given_at.get((m[0], m[1]))
        if other is None:
            out.add("record")
            continue
        mine = dict(m[2])
        out |= {k for k in set(mine) | set(other) if mine.get(k) != other.get(k)}
    lost_at = {(m[0], m[1]) for m in cut.missing}
    return out | ({"extra"} if any((e[0], e[1]) not in lost_at for e in cut.extra) else set())


def main(argv: list[str]) -> int:
    total, lost = measure()
    by_family = Counter(family(c.log) for c in lost)
    print(f"{len(lost)} of {total} cuts lose or add a record, an evaluation or a value "
          f"({len({c.log for c in lost})} logs); max_steps lost at "
          f"{sum(1 for c in lost if 'max_steps' in differences(c))}")
    for fam, n in by_family.most_common():
        print(f"  {fam:16} {n}")
    if "--lost" in argv:
        for c in lost:
            print(f"{c.log} cut {c.at} resume {c.resume}: missing {c.missing[:3]}{' ...' if len(c.missing) > 3 else ''}"
                  f" extra {c.extra[:3]}{' ...' if len(c.extra) > 3 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
