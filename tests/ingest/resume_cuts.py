"""What a restarted runner misses: every corpus log (``tests/ingest/corpus``) read by a runner
that is stopped at 5 points of it (1/6 .. 5/6 of its bytes), and a new runner that starts from
the ``log_offset`` the first would save (``LiveReader.resume_offset``) with the reading context
it would save (``LiveReader.context``, restored into the new parser). A cut loses what the
whole log's read gives and neither of the two gives: a record or an evaluation (its step and
the names of the values it carries, ``max_steps`` among them).

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
    """The records and evaluations given: (what, step, the names of the values they carry), so a
    record given again without some of its values (``max_steps``: the Trainer's banner) counts
    as lost."""
    out = set()
    for b in batches:
        for kind, rec in _events_of(b):
            if (kind == RECORD or rec.get("kind") == "eval") and isinstance(rec.get("step"), int):
                inner = {**rec.get("extra", {}), **rec.get("values", {})}
                names = {k for k, v in rec.items() if v is not None and k not in ("extra", "values")}
                names |= {f"extra.{k}" for k, v in inner.items() if v is not None}
                out.add((kind if kind == RECORD else "eval", rec["step"], tuple(sorted(names))))
    return out


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
        missing = whole - given(before) - given(after)
        if missing:
            lost.append(Cut(name, cut, resume, sorted(missing)))
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


def what_lost(cut: Cut, whole: set | None = None) -> set[str]:
    """The kinds of loss of a cut: ``record`` (a step no reader gave), ``max_steps``, or a value."""
    return {"max_steps" if "max_steps" in m[2] else m[0] for m in cut.missing}


def main(argv: list[str]) -> int:
    total, lost = measure()
    by_family = Counter(family(c.log) for c in lost)
    print(f"{len(lost)} of {total} cuts lose a record, an evaluation or a value "
          f"({len({c.log for c in lost})} logs); max_steps lost at "
          f"{sum(1 for c in lost if any('max_steps' in m[2] for m in c.missing))}")
    for fam, n in by_family.most_common():
        print(f"  {fam:16} {n}")
    if "--lost" in argv:
        for c in lost:
            print(f"{c.log} cut {c.at} resume {c.resume}: {c.missing[:3]}{' ...' if len(c.missing) > 3 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
