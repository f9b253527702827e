"""Trace a log slice's way through live ingestion: which module calls which, how often.

Run from the repository root (``PYTHONPATH=DIR`` traces another checkout of the code):

    .venv/bin/python bench/trace_ingest.py [--steps 3000] [--slice 262144]

It writes an ms-swift 4.x style log (``bench_parse.write_swift_log``: a tqdm bar before every
dict line, a save line every 100 steps), feeds it to ``LiveReader.feed_batches`` in slices of
``--slice`` bytes (the runner's read size) and, with ``sys.setprofile``, records every call that
enters an ingest module (``moeconsole.runner.ingest.*``, ``moeconsole.runner.core.columns``) from another module, and
every ``np.concatenate`` and ``list.extend`` made inside those modules: the hand-offs between
stages. It prints the calls of one steady-state slice (the template learned; a partial line held
from the slice before) in order, and the counts per slice over the whole log.
"""
from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.append(str(REPO))   # bench_parse; the code traced is whatever ``runner`` imports first (PYTHONPATH)

from bench.bench_parse import write_swift_log  # noqa: E402

MODULES = ("moeconsole.runner.ingest", "moeconsole.runner.core.columns")
# The stages of the pipe (and the engines of the code before it); the parser's own helpers
# (lines, formats, records, pydict) are the inside of one line's reading, not a stage.
STAGES = {"moeconsole.runner.ingest.live", "moeconsole.runner.ingest.bulk", "moeconsole.runner.ingest.parser", "moeconsole.runner.core.columns",
          "moeconsole.runner.ingest.pipe", "moeconsole.runner.ingest.template", "moeconsole.runner.ingest.batch", "moeconsole.runner.ingest.linebuf"}


def _module(frame) -> str:
    return frame.f_globals.get("__name__", "?")


def _ours(name: str) -> bool:
    return name.startswith(MODULES)


class Tracer:
    """Module crossings into ingest, and the hand-offs made inside it, for one call."""

    def __init__(self) -> None:
        self.crossings: list[str] = []
        self.handoffs: collections.Counter = collections.Counter()

    def __call__(self, frame, event, arg):  # noqa: ANN001 - sys.setprofile's signature
        if event == "call":
            callee = _module(frame)
            caller = frame.f_back
            if caller is None or callee not in STAGES:
                return
            src = _module(caller)
            if src != callee:
                if frame.f_code.co_name in ("__len__", "__init__"):
                    return   # building or sizing a value, not a stage
                fn = frame.f_code.co_qualname if hasattr(frame.f_code, "co_qualname") else frame.f_code.co_name
                where = caller.f_code.co_qualname if hasattr(caller.f_code, "co_qualname") else caller.f_code.co_name
                self.crossings.append(f"{src.rsplit('.', 1)[-1]}.{where} -> {callee.rsplit('.', 1)[-1]}.{fn}")
        elif event == "c_call" and _ours(_module(frame)):
            name = getattr(arg, "__name__", "")
            if name == "extend":
                self.handoffs[name] += 1


def _count_concatenate(tracer_of) -> None:  # noqa: ANN001
    """numpy's concatenate is not a builtin the profiler reports: count it by a wrapper."""
    import numpy as np
    real = np.concatenate

    def counted(*a, **k):  # noqa: ANN002, ANN003
        t = tracer_of()
        if t is not None and _ours(_module(sys._getframe(1))):
            t.handoffs["concatenate"] += 1
        return real(*a, **k)
    np.concatenate = counted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=6000)
    ap.add_argument("--slice", type=int, default=256 * 1024)
    args = ap.parse_args()
    import moeconsole.runner
    from moeconsole.runner.ingest.live import LiveReader
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "train.log"
        write_swift_log(log, args.steps)
        data = log.read_bytes()
    reader = LiveReader()
    current: list = [None]
    _count_concatenate(lambda: current[0])
    per_slice = []
    shown = None
    for i, off in enumerate(range(0, len(data), args.slice)):
        chunk = data[off:off + args.slice]
        partial = reader.pipe.has_partial
        t = Tracer()
        current[0] = t
        sys.setprofile(t)
        try:
            batches = reader.feed_batches(chunk)
        finally:
            sys.setprofile(None)
            current[0] = None
        per_slice.append((t, len(batches)))
        if shown is None and i >= 1 and partial and chunk.rfind(b"\n") < len(chunk) - 1:
            shown = (i, t, len(batches))
    print(f"code: {Path(runner.__file__).parent.parent}")
    print(f"log: {args.steps} steps, {len(data):,} bytes, {len(per_slice)} slices of {args.slice:,} bytes\n")
    first_t, first_nb = per_slice[0]
    for title, t, nb in (([(f"slice {shown[0]} (a partial line held from the slice before, another left open)",
                            shown[1], shown[2])] if shown is not None else []) +
                         [("slice 0 (the first: no template yet, the parser teaches one)", first_t, first_nb)]):
        print(f"{title}: {nb} batch(es) returned\n")
        for n, line in enumerate(_runs(t.crossings), 1):
            print(f"{n:3d}. {line}")
        print(f"\nhand-offs in ingest: {dict(t.handoffs)}")
        print("\ncalls into each function of another module:")
        for fn, n in sorted(collections.Counter(c.split(" -> ")[1] for c in t.crossings).items()):
            print(f"  {n:4d}  {fn}")
        print()
    steady = per_slice[1:]
    for label, fn in (("calls across module boundaries (accessors included)", lambda t: len(t.crossings)),
                      ("calls from LiveReader.feed_batches down into the engines",
                       lambda t: sum(c.startswith("live.LiveReader.feed_batches -> ") for c in t.crossings)),
                      ("trips to the columns (records_to_columns)",
                       lambda t: sum(c.endswith("records_to_columns") for c in t.crossings)),
                      ("entries into the line parser",
                       lambda t: sum(" -> parser." in c and "LogParser.has_partial" not in c for c in t.crossings)),
                      ("np.concatenate", lambda t: t.handoffs["concatenate"]),
                      ("list.extend", lambda t: t.handoffs["extend"])):
        xs = [fn(t) for t, _ in steady]
        print(f"{label} per slice (slices 2..{len(per_slice)}): median {statistics.median(xs)}, "
              f"min {min(xs)}, max {max(xs)}")
    xs = [nb for _, nb in steady]
    print(f"batches per slice: median {statistics.median(xs)}, min {min(xs)}, max {max(xs)}")


def _runs(calls: list[str]) -> list[str]:
    """Consecutive repeats of one call folded into 'call  (xN)'."""
    out: list[str] = []
    prev, n = None, 0
    for c in calls + [None]:
        if c == prev:
            n += 1
            continue
        if prev is not None:
            out.append(prev + (f"  (x{n})" if n > 1 else ""))
        prev, n = c, 1
    return out


if __name__ == "__main__":
    main()
