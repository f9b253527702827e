"""The run browser's refresh at 500 runs: what its worker reads at each period while nothing but a
live run changed.

Run from the repository root:

    .venv/bin/python bench/bench_browser.py [--runs 500] [--reps 30]

``--runs`` finished runs (bench_index.make_runs) and one live run (its state.json written by this
process, so its runner is alive) in a temp directory. Timed, median with min-max of ``--reps``:

1. whole: what every refresh read before (``store.list_runs`` and ``rundir.list_run_dirs``);
2. stat first: what a refresh reads now when the index and the run directories are as last
   read (``store.listing_seen``, ``store.index_seen``, then ``store.refresh_listed``: the live
   row alone read again);
3. the look alone (``listing_seen`` and ``index_seen``), what a refresh costs when it does read
   the index again.

The files are deleted afterwards.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def timed(fn, reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.1f} ms ({min(xs):.1f}-{max(xs):.1f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    from bench.bench_index import make_runs
    from moeconsole.runner.rundir import rundir, store
    tmp = Path(tempfile.mkdtemp(prefix="bench-browser-"))
    try:
        base = tmp / "runs"
        base.mkdir()
        make_runs(base, args.runs - 1)
        live = rundir.RunDir(base / "29991231-000000-live-0001")
        live.path.mkdir()
        live.write_state({"status": "running", "name": "live", "attempt": 1, "step": 5, "max_steps": 20,
                          "started_at": time.time(), "runner": {"pid": os.getpid()}})
        rows = store.list_runs(base)
        assert len(rows) == args.runs, len(rows)
        seen = (store.listing_seen(base), store.index_seen(base))

        def whole() -> None:
            store.list_runs(base)
            rundir.list_run_dirs(base)

        def stat_first() -> None:
            assert (store.listing_seen(base), store.index_seen(base)) == seen
            assert store.refresh_listed(rows, "started_at") is not None

        def look() -> None:
            store.listing_seen(base)
            store.index_seen(base)
        before, now, alone = (timed(f, args.reps) for f in (whole, stat_first, look))
        load = os.getloadavg()[0]
        print(f"### The run browser's refresh, {args.runs} runs, one live\n")
        print(f"Machine: {os.cpu_count()} cores, 1-minute load average {load:.2f}; "
              f"median (min-max) of {args.reps} refreshes each.\n")
        print("| per refresh | time |\n|---|---:|")
        print(f"| whole read (the baseline: every refresh before) | {spread(before)} |")
        print(f"| stat first (now, nothing but the live run changed) | {spread(now)} |")
        print(f"| the look alone | {spread(alone)} |\n")
        print(f"Ratio whole read / stat first (medians): {statistics.median(before) / statistics.median(now):.1f}x.")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
