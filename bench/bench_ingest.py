"""Ingest throughput of this code against a baseline revision, measured in the same run.

Run from the repository root:

    .venv/bin/python bench/bench_ingest.py [--baseline REV] [--steps 1000000] [--runs 5]
        [--live-steps 200000] [--backlog-steps 1000000] [--backlog-runs 3]

``--baseline REV`` exports that git revision's code (``git archive``) into a temporary directory
and every measurement runs once with each code tree per round, alternating which goes first,
with this checkout's virtualenv (``PYTHONPATH`` and the working directory pick the code). The
log is ``bench_parse.write_swift_log`` (ms-swift 4.x dicts behind tqdm redraws, a save line
every 100 steps):

1. ``moeconsole parse FILE`` and ``moeconsole parse FILE --json`` as whole processes on a log
   of ``--steps`` steps (wall and CPU time via wait4, output to /dev/null for ``--json``);
2. the runner's ingest work in one process: ``LiveReader.feed_batches`` over a log of
   ``--live-steps`` steps in the runner's 256 KiB reads, each batch through the supervisor's pure
   per-batch functions (``rows_to_write``, ``metric_lines``, ``newest_record``); CPU time of the
   loop only (the file is read before);
3. the runner as a whole process catching up a backlog: a training command prints a log of
   ``--backlog-steps`` steps at once (``moeconsole run --detach``), timed from the attempt's
   start to its judged end (``events.jsonl``), every record in ``metrics.jsonl``.

Medians with min-max; the files are deleted afterwards. Without ``--baseline`` only this code
is measured.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_parse import PY, run_measured, wait_quiet, write_swift_log  # noqa: E402

SLICE = 256 * 1024   # moeconsole.runner.supervisor.supervisor.INGEST_SUBSLICE_BYTES

LIVE = r"""
import sys, time
from moeconsole.runner.ingest.live import LiveReader, Written, metric_lines, newest_record, rows_to_write
import numpy as np
data = open(sys.argv[1], "rb").read()
slice_ = int(sys.argv[2])
reader = LiveReader()
last = Written()
stamp = {"v": 1, "t": 1.0, "attempt": 1}
rows = batches = 0
t0, c0 = time.perf_counter(), time.process_time()
for off in range(0, len(data), slice_):
    for batch in reader.feed_batches(data[off:off + slice_]):
        batches += 1
        kept, counted, last = rows_to_write(batch.records, np.asarray(batch.steps).tolist(), last)
        if kept:
            metric_lines(batch.records, kept, stamp)
            newest_record(batch.records, kept, stamp)
        rows += len(kept)
print(time.perf_counter() - t0, time.process_time() - c0, rows, batches)
"""


def tree_env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOECONSOLE_")}
    env["PYTHONPATH"] = str(tree)
    return env


def export(rev: str, into: Path) -> Path:
    """The code of ``rev`` as files (no .git): a baseline to run from."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


QUIET_WAIT = 30.0   # seconds to wait, before each run, for the machine to be at most 10% busy
BUSY: list[float] = []


def rounds(trees: list[tuple[str, Path]], runs: int, measure) -> dict[str, list[dict]]:  # noqa: ANN001
    """``measure(tree)`` ``runs`` times per tree, alternating which tree goes first; before each
    run the machine is given up to ``QUIET_WAIT`` s to calm down (the busy share is noted)."""
    out: dict[str, list[dict]] = {name: [] for name, _ in trees}
    for r in range(runs):
        for name, tree in (trees if r % 2 == 0 else trees[::-1]):
            BUSY.append(wait_quiet(QUIET_WAIT))
            out[name].append(measure(tree))
    return out


def live_once(tree: Path, log: Path) -> dict:
    done = subprocess.run([PY, "-c", LIVE, str(log), str(SLICE)], cwd=tree, env=tree_env(tree),
                          capture_output=True, text=True, check=True)
    wall, cpu, rows, batches = done.stdout.split()
    return {"wall": float(wall), "cpu": float(cpu), "rows": int(rows), "batches": int(batches)}


def backlog_once(tree: Path, log: Path, work: Path) -> dict:
    runs_dir = Path(tempfile.mkdtemp(prefix="runs-", dir=work))
    recipe = runs_dir / "backlog.yaml"
    code = f"import sys; sys.stdout.buffer.write(open({str(log)!r}, 'rb').read())"
    recipe.write_text(json.dumps({"name": "backlog", "command": ["{python}", "-c", code]}))
    done = subprocess.run([PY, "-m", "moeconsole.console.cli", "run", str(recipe), "--detach", "--runs-dir", str(runs_dir)],
                          cwd=tree, env=tree_env(tree), capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"run --detach failed: {done.stderr.strip()}")
    run = runs_dir / done.stdout.strip().splitlines()[0]
    deadline = time.monotonic() + 1800
    status = None
    cpu = 0.0   # the runner's own CPU time (user+sys), last seen before it ended
    hz = os.sysconf("SC_CLK_TCK")
    while time.monotonic() < deadline:
        try:
            state = json.loads((run / "state.json").read_text())
            status = state.get("status")
            fields = Path(f"/proc/{state['runner']['pid']}/stat").read_text().rsplit(")", 1)[1].split()
            cpu = max(cpu, (int(fields[11]) + int(fields[12])) / hz)
        except (OSError, ValueError, KeyError, TypeError):
            pass
        if status in ("succeeded", "failed", "killed"):
            break
        time.sleep(0.1)
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    t_start = next(e["t"] for e in events if e["type"] == "attempt_start")
    t_end = next((e["t"] for e in events if e["type"] == "attempt_end"), float("nan"))
    records = sum(1 for _ in open(run / "metrics.jsonl", "rb"))
    shutil.rmtree(runs_dir, ignore_errors=True)
    return {"ingest": t_end - t_start, "cpu": cpu, "records": records, "status": status}


def med(xs: list[float], unit: str = "s", digits: int = 2) -> str:
    xs = sorted(xs)
    return f"{statistics.median(xs):.{digits}f} {unit} ({xs[0]:.{digits}f}-{xs[-1]:.{digits}f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", help="git revision to compare against (its code, exported)")
    ap.add_argument("--steps", type=int, default=1_000_000, help="steps of the log `parse` reads")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--live-steps", type=int, default=200_000)
    ap.add_argument("--backlog-steps", type=int, default=1_000_000)
    ap.add_argument("--backlog-runs", type=int, default=3)
    ap.add_argument("--skip", action="append", default=[], choices=["parse", "live", "backlog"])
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip()
    trees = [(f"this code ({head})", REPO)]
    if args.baseline:
        trees.append((f"baseline ({args.baseline})", export(args.baseline, work / "baseline")))
    t0 = time.time()
    load0 = os.getloadavg()[0]
    results: dict[str, dict] = {}
    try:
        if "parse" not in args.skip:
            log = work / "parse.log"
            lines = write_swift_log(log, args.steps)
            mb = log.stat().st_size / 1e6
            for label, extra, null in (("`moeconsole parse FILE`", [], False),
                                       ("`moeconsole parse FILE --json`", ["--json"], True)):
                argv = [PY, "-m", "moeconsole.console.cli", "parse", str(log)] + extra
                results[label] = {"what": f"{args.steps:,} steps ({lines:,} lines, {mb:.0f} MB)", "metric": "wall",
                                  "runs": rounds(trees, args.runs,
                                                 lambda tree: run_measured(argv, null, cwd=tree, env=tree_env(tree)))}
            log.unlink()
        if "live" not in args.skip:
            log = work / "live.log"
            lines = write_swift_log(log, args.live_steps)
            mb = log.stat().st_size / 1e6
            results["runner's ingest in one process (LiveReader + per-batch functions)"] = {
                "what": f"{args.live_steps:,} steps ({lines:,} lines, {mb:.0f} MB) in 256 KiB reads",
                "metric": "cpu", "lines": lines,
                "runs": rounds(trees, args.runs, lambda tree: live_once(tree, log))}
            log.unlink()
        if "backlog" not in args.skip:
            log = work / "backlog.log"
            lines = write_swift_log(log, args.backlog_steps)
            mb = log.stat().st_size / 1e6
            results["runner process catching up a backlog (attempt start to judged end)"] = {
                "what": f"{args.backlog_steps:,} steps ({lines:,} lines, {mb:.0f} MB) printed at once",
                "metric": "ingest", "lines": lines,
                "runs": rounds(trees, args.backlog_runs, lambda tree: backlog_once(tree, log, work))}
            log.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load1 = os.getloadavg()[0]
    report(args, trees, results, time.time() - t0, load0, load1)


def report(args, trees, results: dict, took: float, load0: float, load1: float) -> None:  # noqa: ANN001
    cmd = " ".join(["bench/bench_ingest.py"] + (["--baseline", args.baseline] if args.baseline else []) +
                   [f"--steps {args.steps}", f"--runs {args.runs}", f"--live-steps {args.live_steps}",
                    f"--backlog-steps {args.backlog_steps}", f"--backlog-runs {args.backlog_runs}"] +
                   [f"--skip {s}" for s in args.skip])
    print("### Ingest: this code against a baseline, in the same run\n")
    print(f"Command: `.venv/bin/python {cmd}` (from the repository root, {took:.0f} s). Machine: "
          f"{os.cpu_count()} cores, shared with other work; load average {load0:.2f} before, {load1:.2f} after. "
          "Each round runs every code tree once, alternating which goes first; before each run the bench "
          f"waits (up to {QUIET_WAIT:.0f} s) for 3 s with the machine at most 10% busy (busy before the runs: "
          f"median {statistics.median(BUSY or [0]):.0%}, max {max(BUSY or [0]):.0%}). Median (min-max).\n")
    print("| measurement | input | code | runs | wall | CPU | lines/s (median) | vs baseline |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for label, r in results.items():
        base_med = None
        for name, _ in reversed(trees):   # the baseline (last) first, for the ratio
            runs = r["runs"][name]
            key = r["metric"]
            if key == "ingest":
                wall, cpu = med([x["ingest"] for x in runs]), med([x["cpu"] for x in runs])
                m = statistics.median(x["ingest"] for x in runs)
                lines = r["lines"]
            else:
                wall, cpu = med([x["wall"] for x in runs]), med([x["cpu"] for x in runs])
                m = statistics.median(x[key] for x in runs)
                lines = r.get("lines") or int(r["what"].split("(")[1].split(" lines")[0].replace(",", ""))
            if name == trees[-1][0]:
                base_med = m
            ratio = f"{base_med / m:.2f}x" if base_med and len(trees) > 1 else "—"
            print(f"| {label} | {r['what']} | {name} | {len(runs)} | {wall} | {cpu} | {lines / m / 1e3:.0f}k | {ratio} |")
    notes = []
    for label, r in results.items():
        for name, _ in trees:
            runs = r["runs"][name]
            if "batches" in runs[0]:
                notes.append(f"- {label}, {name}: {runs[0]['rows']:,} rows kept in {runs[0]['batches']:,} batches.")
            if "records" in runs[0]:
                notes.append(f"- {label}, {name}: {', '.join(str(x['records']) for x in runs)} records written, "
                             f"status {', '.join(str(x['status']) for x in runs)}.")
    print("\nvs baseline: the baseline's median over this code's (above 1.00x: this code is faster), of the "
          "column lines/s is computed from: CPU for the in-process reader, wall for whole commands, attempt "
          "start to judged end for the runner (its CPU column: the runner process's own user+sys time, read "
          "from /proc every 0.1 s until it ended).")
    if notes:
        print("\n" + "\n".join(notes))


if __name__ == "__main__":
    main()
