"""The whole history of a big past log read by the console's import, in one process and in two.

Run from the repository root:

    .venv/bin/python bench/bench_history.py [--steps 1000000] [--runs 3]

It writes the ms-swift log of bench_parse (1M steps is about 420 MB), then, alternately, opens it
as ``moeconsole attach LOG`` does (``moeconsole.console.foreign.start_import``: the newest steps,
then ``Import`` reading the history in a thread, as in the UI) with the history read by one
process (``workers=1``) and by two (``workers=2``: the first part by a started process), and
prints the wall time from the start to the history read, and the CPU time of this process and of
the started one. The machine's state decides which ``attach`` takes (``second_core_free``); this
bench pins it, so both are measured on the same log in the same minutes. Compare with toolong's
scan of the same log in ``bench_open.py``.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO))
from bench_parse import wait_quiet, write_swift_log  # noqa: E402


def cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def one(log: Path, workers: int) -> dict:
    from moeconsole.console.foreign import start_import
    scratch = Path(tempfile.mkdtemp(prefix="bench-history-"))
    try:
        c0, k0, t0 = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
        run, job = start_import(log, scratch)
        assert job is not None
        job.workers = workers
        job.start()
        job.wait()
        took = time.perf_counter() - t0
        assert job.done and job.error is None, job.error
        return {"wall": took, "cpu": cpu(resource.RUSAGE_SELF) - c0, "child": cpu(resource.RUSAGE_CHILDREN) - k0,
                "processes": job.processes, "records": job.records}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-history-"))
    try:
        log = tmp / "train.log"
        write_swift_log(log, args.steps)
        results: dict[int, list[dict]] = {1: [], 2: []}
        busy = []
        for _ in range(args.runs):
            for workers in (1, 2):
                busy.append(wait_quiet(120))
                results[workers].append(one(log, workers))
        size = log.stat().st_size / 1e6
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"Machine: {os.uname().machine}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, 1-minute load "
          f"{os.getloadavg()[0]:.2f} at the end; busy before the runs: median {statistics.median(busy) * 100:.0f}%, "
          f"max {max(busy) * 100:.0f}%. Log: {args.steps:,} steps, {size:.0f} MB. Medians (min-max) of {args.runs} runs.\n")
    print("| history read by | whole history s | CPU here s | CPU started process s |")
    print("|---|---:|---:|---:|")
    for workers, rs in results.items():
        def sp(key: str) -> str:
            xs = [r[key] for r in rs]
            return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"
        print(f"| {workers} process{'es' if workers > 1 else ''} | {sp('wall')} | {sp('cpu')} | {sp('child')} |")
    ratio = statistics.median(r["wall"] for r in results[1]) / statistics.median(r["wall"] for r in results[2])
    print(f"\nTwo processes: {ratio:.2f}x faster than one.")


if __name__ == "__main__":
    main()
