"""The runner's catch-up rate under a log flood, per runner, against the same parser offline.

Run from the repository root:

    .venv/bin/python bench/bench_catchup.py [--lines 200000] [--runners 1,4] [--runs 3]
        [--baseline REV]

A training command (``BURST`` below) waits until its runner watches, then prints ``--lines``
JSON metric lines as fast as Python writes them (step, loss, lr, grad_norm, epoch: what a
trainer's per-step record carries), notes the wall time of its first and last line in a file and
exits. Each runner is real (``moeconsole run --detach``); ``--runners 1,4`` measures one runner
alone and then that many at once (each with its own burst, all started together). Per runner:

- catch-up time: from the last line printed to the ``attempt_end`` event (the runner reads an
  ended attempt's whole log before judging it, so that event is written once every record is in
  ``metrics.jsonl``); the rate is ``--lines`` over that time (the figure issue 37 names), and
  ``--lines`` over the time from the *first* line printed (the runner reads during the burst too);
- every record is checked to be in ``metrics.jsonl``, once.

The anchor, measured in the same run on the same bytes: the parser offline, in one process
(``LiveReader.feed_batches`` over the log in the runner's 256 KiB reads, nothing written): lines/s.
The ratio runner / offline says what share of the parser's speed the runner keeps with everything
else it does per slice (records written, charts, monitors, state).

``--baseline REV`` runs every measurement with that git revision's code too (``git archive``),
alternating which goes first. Medians with min-max. Temp directories only; every runner ends by
itself when its run ends (the bench waits for it) and any left is ended by PID.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.bench_ingest import export, tree_env  # noqa: E402
from bench.bench_parse import PY, wait_quiet  # noqa: E402

SLICE = 256 * 1024   # moeconsole.runner.supervisor.ingest_pipe.INGEST_SUBSLICE_BYTES

BURST = textwrap.dedent("""\
    import os, sys, time
    n, stamps, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    while not os.path.exists(go):      # every runner of the round watches before any burst
        time.sleep(0.05)
    w = sys.stdout.write
    t0 = time.time()
    for i in range(1, n + 1):
        w('{"step": %d, "loss": %r, "lr": %r, "grad_norm": %r, "epoch": %r}\\n'   # floats as Python prints them
          % (i, round(2.0 / (1 + i * 1e-4), 6), 1e-4 * min(1.0, i / 1000), 0.5 + (i % 7) / 64, i / 50000))
    sys.stdout.flush()
    open(stamps, "w").write(f"{t0!r} {time.time()!r}")
""")

OFFLINE = r"""
import sys, time
from moeconsole.runner.ingest.live import LiveReader
data = open(sys.argv[1], "rb").read()
step = int(sys.argv[2])
reader = LiveReader()
rows = 0
t0 = time.perf_counter()
for i in range(0, len(data), step):
    for batch in reader.feed_batches(data[i:i + step]):
        rows += len(batch)
print(time.perf_counter() - t0, rows)
"""


def burst_log(lines: int, path: Path) -> None:
    """The bytes the burst prints, for the offline anchor (the same lines)."""
    code = BURST.replace("while not os.path.exists(go)", "while False")
    with open(path, "wb") as out:
        subprocess.run([PY, "-c", code, str(lines), os.devnull, "-"], stdout=out, check=True)


def offline_once(tree: Path, log: Path) -> float:
    done = subprocess.run([PY, "-c", OFFLINE, str(log), str(SLICE)], cwd=tree, env=tree_env(tree),
                          capture_output=True, text=True, check=True)
    wall, rows = done.stdout.split()
    return int(rows) / float(wall)


def _state(run: Path) -> dict:
    try:
        return json.loads((run / "state.json").read_text())
    except (OSError, ValueError):
        return {}


def runners_once(tree: Path, lines: int, runners: int, work: Path) -> list[dict]:
    """``runners`` runs started together, each bursting ``lines`` lines: per runner, the catch-up."""
    runs_dir = Path(tempfile.mkdtemp(prefix="runs-", dir=work))
    go = runs_dir / "go"
    runs: list[tuple[Path, Path]] = []
    try:
        for k in range(runners):
            stamps = runs_dir / f"stamps-{k}"
            recipe = runs_dir / f"burst-{k}.yaml"
            recipe.write_text(json.dumps({"name": f"burst{k}", "command": ["{python}", "-c", BURST, str(lines),
                                                                            str(stamps), str(go)],
                                          "checkpoints": {"dir": None}, "resume": {"arg": None},
                                          "restart": {"max_restarts": 0}}))
            done = subprocess.run([PY, "-m", "moeconsole.console.cli", "run", str(recipe), "--detach",
                                   "--runs-dir", str(runs_dir)], cwd=tree, env=tree_env(tree),
                                  capture_output=True, text=True, timeout=300)
            if done.returncode != 0:
                raise SystemExit(f"run --detach failed: {done.stderr.strip()}")
            runs.append((runs_dir / done.stdout.strip().splitlines()[0], stamps))
        deadline = time.monotonic() + 120
        while not all(_state(r).get("status") == "running" for r, _ in runs):
            if time.monotonic() > deadline:
                raise SystemExit("the runs did not all reach running")
            time.sleep(0.1)
        go.write_text("")
        deadline = time.monotonic() + 1800
        while not all(_state(r).get("status") in ("succeeded", "failed", "killed") for r, _ in runs):
            if time.monotonic() > deadline:
                raise SystemExit("the runs did not end within 30 minutes")
            time.sleep(0.1)
        out = []
        for run, stamps in runs:
            first, last = (float(x) for x in stamps.read_text().split())
            events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
            end = next(e["t"] for e in events if e["type"] == "attempt_end")
            steps = [json.loads(x)["step"] for x in open(run / "metrics.jsonl", "rb")]
            if steps != list(range(1, lines + 1)):
                raise SystemExit(f"{run.name}: records lost or doubled ({len(steps)} of {lines})")
            out.append({"catch_up_s": end - last, "rate_from_last": lines / (end - last),
                        "rate_from_first": lines / (end - first), "burst_s": last - first})
        return out
    finally:
        for run, _ in runs:   # a runner still there (a failed measurement) is ended by its PID
            pid = (_state(run).get("runner") or {}).get("pid")
            if pid and _state(run).get("status") not in ("succeeded", "failed", "killed"):
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except OSError:
                    pass
        shutil.rmtree(runs_dir, ignore_errors=True)


def med(xs: list[float], digits: int = 0) -> str:
    xs = sorted(xs)
    return f"{statistics.median(xs):,.{digits}f} ({xs[0]:,.{digits}f}-{xs[-1]:,.{digits}f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=200_000)
    ap.add_argument("--runners", default="1,4", help="comma-separated: runners at once per measurement")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--baseline", help="a git revision to measure too, in the same run")
    args = ap.parse_args()
    counts = [int(x) for x in args.runners.split(",")]
    t0 = time.monotonic()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-catchup-") as tmp:
        work = Path(tmp)
        trees = [("this code", REPO)]
        if args.baseline:
            trees.append((f"baseline {args.baseline}", export(args.baseline, work / "baseline")))
        log = work / "burst.log"
        burst_log(args.lines, log)
        results: dict[str, dict] = {name: {"offline": [], **{n: [] for n in counts}} for name, _ in trees}
        busy = []
        for r in range(args.runs):
            for name, tree in (trees if r % 2 == 0 else trees[::-1]):
                busy.append(wait_quiet(30.0))
                results[name]["offline"].append(offline_once(tree, log))
                for n in counts:
                    busy.append(wait_quiet(30.0))
                    results[name][n].append(runners_once(tree, args.lines, n, work))
        size = log.stat().st_size
    took = time.monotonic() - t0
    cmd = " ".join(["bench/bench_catchup.py", *sys.argv[1:]])
    print("## Runner catch-up rate under a log flood\n")
    print(f"Machine: {os.uname().machine}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
          f"1-minute load average {load0:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; "
          f"busy share before each measurement median {statistics.median(busy):.0%}. Total {took:.0f} s.\n")
    print(f"Command (from the repository root):\n\n    .venv/bin/python {cmd}\n")
    print(f"Burst: {args.lines:,} JSON lines ({size / 2**20:.1f} MiB) per run, {args.runs} runs each; "
          "medians with min-max over every runner of every run.\n")
    print("| code | runners at once | catch-up s (last line -> attempt_end) | lines/s from the last line | "
          "lines/s from the first line | offline parser lines/s (anchor) | runner / offline |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, _ in trees:
        off = results[name]["offline"]
        for n in counts:
            per = [x for round_ in results[name][n] for x in round_]
            rates = [x["rate_from_first"] for x in per]
            print(f"| {name} | {n} | {med([x['catch_up_s'] for x in per], 2)} | "
                  f"{med([x['rate_from_last'] for x in per])} | {med(rates)} | {med(off)} | "
                  f"{statistics.median(rates) / statistics.median(off):.2f} |")


if __name__ == "__main__":
    main()
