"""Benchmarks of opening a long run and of the runner catching up a log backlog.

Run from the repository root:

    .venv/bin/python bench/bench_snapshot.py [--sizes 10000,1000000,5000000] [--runs 5]
        [--backlog 200000,1000000,4000000] [--naive-max 1000000]

1. Opening a run: for runs of 10k, 1M and 5M steps (``--sizes``), a run directory
   with ``metrics.jsonl`` and the ``series.json`` the runner keeps is generated, then the whole
   commands ``moeconsole --json --once RUN`` and ``moeconsole runs show RUN --json`` are timed
   against the naive baseline in the same run: a script that reads the whole ``metrics.jsonl``
   (``json.loads`` per line). The same ``--json --once`` without ``series.json`` (the state of a
   run from before it existed) shows what the file saves. The two slow baselines run once, not
   ``--runs`` times, above ``--naive-max`` steps (at 5M they take about a minute each).
2. Backlog: a training command that prints a ms-swift log of ``--backlog`` steps at once; the
   runner as a whole process (``moeconsole run --detach``), from start until ``metrics.jsonl``
   holds every step and the attempt is judged, with the latency of ``status`` requests on the
   control socket sent every 0.2 s meanwhile; baseline: the naive per-line ``ast.literal_eval``
   script over the same log (skipped above ``--naive-max`` steps: 75 s per million).

3. Line written -> on screen: the real app (Textual, driven by Pilot in this process, 160x48,
   1 s poll interval) attached to a live run; a line is appended to ``train.log`` every
   0.1-0.3 s and the time until the log tail shows it is taken, with the run directory watched
   (inotify wakes the poller) and, as the baseline in the same run, without (the 1 s poll);
   ``tail -F`` on the same file is the floor.

Medians with min-max; the files are deleted afterwards.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
PY = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable

NAIVE_READ = r"""
import json, sys
n, last = 0, None
with open(sys.argv[1]) as f:
    for line in f:
        rec = json.loads(line)
        n += 1
        last = rec
print(n, last["step"])
"""


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("MOECONSOLE_")}
    e["PYTHONPATH"] = str(REPO)
    return e


def timed(argv: list[str], runs: int) -> tuple[float, float, float]:
    """(median, min, max) wall seconds of a whole command."""
    walls = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, cwd=REPO, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        walls.append(time.perf_counter() - t)
    return statistics.median(walls), min(walls), max(walls)


def make_run(base: Path, steps: int) -> Path:
    """A finished run of ``steps`` steps as the runner leaves it (metrics.jsonl, series.json)."""
    from moeconsole.runner.rundir import rundir, seriesfile
    run = rundir.create(base, f"long-{steps}")
    rnd = random.Random(steps)
    now = time.time()
    with open(run.metrics, "w") as f:
        for s in range(1, steps + 1):
            f.write(json.dumps({"v": 1, "t": now, "attempt": 1, "step": s, "max_steps": steps,
                                "loss": 2.0 - s / (steps * 2) + rnd.random() * 0.05, "grad_norm": 0.8 + rnd.random(),
                                "lr": 1e-4, "mem_gib": 35.0, "tokens_per_s": 1500.0, "step_time_s": 0.2,
                                "epoch": s / steps, "extra": {"token_acc": 0.7}, "src": "swift_dict"},
                               separators=(",", ":")) + "\n")
    run.write_state({"status": "succeeded", "name": run.run_id, "attempt": 1, "step": steps, "max_steps": steps,
                     "started_at": now - steps * 0.2, "ended_at": now, "restarts": 0})
    seriesfile.save_book(run, seriesfile.load_book(run))
    return run.path


def fmt(t: tuple[float, float, float]) -> str:
    return f"{t[0] * 1000:.0f} ms ({t[1] * 1000:.0f}-{t[2] * 1000:.0f})"


def bench_open(tmp: Path, steps: int, runs: int, naive_max: int) -> dict:
    base = tmp / f"runs-{steps}"
    run = make_run(base, steps)
    cli = [PY, "-m", "moeconsole.console.cli"]
    out = {"steps": steps, "mb": (run / "metrics.jsonl").stat().st_size / 1e6,
           "series_kb": (run / "series.json").stat().st_size / 1e3}
    out["json"] = timed(cli + ["--json", "--once", run.name, "--runs-dir", str(base), "--no-gpu"], runs)
    out["show"] = timed(cli + ["runs", "show", run.name, "--json", "--runs-dir", str(base)], runs)
    slow_runs = runs if steps <= naive_max else 1
    out["naive"] = timed([PY, "-c", NAIVE_READ, str(run / "metrics.jsonl")], slow_runs)
    kept = run / "series.kept"
    os.replace(run / "series.json", kept)
    out["json_nobook"] = timed(cli + ["--json", "--once", run.name, "--runs-dir", str(base), "--no-gpu"],
                               max(1, min(slow_runs, 3)))
    os.replace(kept, run / "series.json")
    shutil.rmtree(base, ignore_errors=True)
    return out


def bench_backlog(tmp: Path, steps: int, naive_max: int) -> dict:
    from bench.bench_parse import NAIVE, write_swift_log
    from moeconsole.runner.supervisor import control
    log = tmp / "backlog.log"
    lines = write_swift_log(log, steps)
    runs_dir = tmp / "runs-backlog"
    recipe = tmp / "backlog.yaml"
    code = f"import sys; sys.stdout.buffer.write(open({str(log)!r}, 'rb').read())"
    recipe.write_text(json.dumps({"name": "backlog", "command": ["{python}", "-c", code]}))
    t0 = time.monotonic()
    done = subprocess.run([PY, "-m", "moeconsole.console.cli", "run", str(recipe), "--detach", "--runs-dir", str(runs_dir)],
                          cwd=REPO, env=env(), capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise SystemExit(f"run --detach failed: {done.stderr.strip()}")
    run = runs_dir / done.stdout.strip().splitlines()[0]
    lat: list[float] = []
    status = None
    while time.monotonic() - t0 < 3600:
        t = time.monotonic()
        try:
            control.send(run / "control.sock", {"cmd": "status"}, timeout=60)
            lat.append(time.monotonic() - t)
        except Exception:  # noqa: BLE001 - not listening yet, or gone at the end
            pass
        try:
            status = json.loads((run / "state.json").read_text()).get("status")
        except (OSError, ValueError):
            status = None
        if status in ("succeeded", "failed", "killed"):
            break
        time.sleep(0.2)
    wall = time.monotonic() - t0
    events = [json.loads(x) for x in (run / "events.jsonl").read_text().splitlines()]
    t_start = next(e["t"] for e in events if e["type"] == "attempt_start")
    t_end = next((e["t"] for e in events if e["type"] == "attempt_end"), float("nan"))
    records = sum(1 for _ in open(run / "metrics.jsonl", "rb"))
    mb = log.stat().st_size / 1e6
    naive = None
    if steps <= naive_max:
        t = time.perf_counter()
        subprocess.run([PY, "-c", NAIVE, str(log)], stdout=subprocess.DEVNULL, check=True)
        naive = time.perf_counter() - t
    shutil.rmtree(runs_dir, ignore_errors=True)
    log.unlink()
    return {"steps": steps, "lines": lines, "status": status, "records": records, "wall": wall, "mb": mb,
            "ingest": t_end - t_start, "naive": naive, "lat": sorted(lat)}


def bench_latency(tmp: Path, lines: int, watch: bool) -> list[float]:
    import asyncio
    os.environ["MOECONSOLE_WATCH"] = "1" if watch else "0"
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.console.widgets.panes import LogTail
    from moeconsole.runner.rundir import rundir
    base = tmp / f"runs-lat-{int(watch)}"
    run = rundir.create(base, "latency")
    run.write_state({"status": "running", "name": "latency", "attempt": 1, "step": 1,
                     "runner": {"pid": os.getpid(), "host": rundir.hostname()}, "started_at": time.time()})
    run.log.write_text("".join(f"[INFO:swift] warm-up line {i}\n" for i in range(40)))
    rnd = random.Random(7)
    lat: list[float] = []

    async def go() -> None:
        app = MoeConsole(base, run, gpu=False, interval=1.0)
        async with app.run_test(size=(160, 48)) as pilot:
            while not (isinstance(app.screen, RunScreen) and app.screen.snapshot is not None):
                await pilot.pause(0.01)
            tail = app.screen.query_one(LogTail)
            for i in range(lines):
                await asyncio.sleep(rnd.uniform(0.1, 0.3))
                text = f"latency probe {i} "
                t0 = time.monotonic()
                with open(run.log, "a") as f:
                    f.write(text + "\n")
                while not any(text in line for line in tail.plain_lines):
                    await asyncio.sleep(0.002)
                lat.append(time.monotonic() - t0)
    asyncio.run(go())
    os.environ.pop("MOECONSOLE_WATCH", None)
    return sorted(lat)


def bench_tail_f(tmp: Path, lines: int) -> list[float]:
    import select as sel
    log = tmp / "tailf.log"
    log.write_text("")
    proc = subprocess.Popen(["tail", "-n", "0", "-F", str(log)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    rnd = random.Random(7)
    lat = []
    try:
        time.sleep(0.5)
        for i in range(lines):
            time.sleep(rnd.uniform(0.1, 0.3))
            t0 = time.monotonic()
            with open(log, "a") as f:
                f.write(f"probe {i}\n")
            got = b""
            while f"probe {i}\n".encode() not in got:
                if sel.select([proc.stdout], [], [], 5)[0]:
                    got += os.read(proc.stdout.fileno(), 4096)
                else:
                    break
            lat.append(time.monotonic() - t0)
    finally:
        proc.kill()
        proc.wait()
    return sorted(lat)


def qs(lat: list[float]) -> str:
    if not lat:
        return "n/a"
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000  # noqa: E731
    return f"{q(0.5):.0f} ms | {q(0.99):.0f} ms | {lat[-1] * 1000:.0f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,1000000,5000000")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--backlog", default="200000,1000000,4000000",
                    help="comma-separated steps printed at once, one backlog each (0: skip)")
    ap.add_argument("--naive-max", type=int, default=1000000,
                    help="above this many steps the slow baselines run once (opening) or not at all (backlog)")
    ap.add_argument("--latency-lines", type=int, default=60, help="lines for line -> screen (0: skip)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-snapshot-"))
    try:
        load0 = os.getloadavg()[0]
        opened = [bench_open(tmp, int(s), args.runs, args.naive_max) for s in args.sizes.split(",") if s.strip()]
        backlogs = [bench_backlog(tmp, int(s), args.naive_max) for s in args.backlog.split(",") if int(s or 0)]
        latency = None
        if args.latency_lines:
            latency = {"watched": bench_latency(tmp, args.latency_lines, True),
                       "polled": bench_latency(tmp, args.latency_lines, False),
                       "tail": bench_tail_f(tmp, args.latency_lines)}
        load1 = os.getloadavg()[0]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("## Opening a long run, a log backlog, line -> screen\n")
    print(f"Command: `.venv/bin/python bench/bench_snapshot.py --sizes {args.sizes} --runs {args.runs} "
          f"--backlog {args.backlog} --naive-max {args.naive_max} --latency-lines {args.latency_lines}` (from the "
          f"repository root). Machine: {os.cpu_count()} cores, load average "
          f"{load0:.2f} before, {load1:.2f} after. Whole commands (process start to exit), median (min-max) of "
          f"{args.runs} runs (the naive read and the run without series.json: one run above {args.naive_max:,} "
          f"steps).\n")
    print("| steps (metrics.jsonl) | `--json --once` | `runs show --json` | naive: read all of metrics.jsonl "
          "| `--json --once` without series.json | naive / `--json --once` |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in opened:
        print(f"| {r['steps']:,} ({r['mb']:.0f} MB; series.json {r['series_kb']:.0f} kB) | {fmt(r['json'])} | "
              f"{fmt(r['show'])} | {fmt(r['naive'])} | {fmt(r['json_nobook'])} | "
              f"{r['naive'][0] / r['json'][0]:.1f}x |")
    for r in opened:
        ok = r["json"][0] < 0.1 and r["show"][0] < 0.1
        print(f"\nGoal, `--json --once` and `runs show` under 100 ms whatever the run's length: at {r['steps']:,} steps "
              f"{r['json'][0] * 1000:.0f} and {r['show'][0] * 1000:.0f} ms ({'met' if ok else 'NOT met'}).", end="")
    if opened:
        print()
    if backlogs:
        print("\n### Backlog: a training command prints N steps at once\n")
        print("From the attempt's start to its judged end (every record in metrics.jsonl, the attempt judged); "
              "`status` requests on the control socket every 0.2 s meanwhile. Baseline: the naive per-line "
              "`ast.literal_eval` script over the same log.\n")
        print("| steps (lines; log size) | records written | runner: start to judged end | steps/s | whole command "
              "| naive script | naive / runner | `status` answered: n, median, p99, max |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for b in backlogs:
            lat = b["lat"]
            q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else float("nan")  # noqa: E731
            naive = f"{b['naive']:.1f} s" if b["naive"] is not None else "not run (> --naive-max)"
            ratio = f"{b['naive'] / b['ingest']:.1f}x" if b["naive"] is not None else "—"
            print(f"| {b['steps']:,} ({b['lines']:,}; {b['mb']:.0f} MB) | {b['records']:,} ({b['status']}) | "
                  f"{b['ingest']:.1f} s | {b['steps'] / b['ingest'] / 1e3:.0f}k | {b['wall']:.1f} s | {naive} | {ratio} | "
                  + (f"{len(lat)}, {q(0.5):.0f} ms, {q(0.99):.0f} ms, {lat[-1] * 1000:.0f} ms |" if lat
                     else "none: it ended before the first request |"))
        big = [b for b in backlogs if b["lines"] >= 4_000_000]
        for b in big:
            print(f"\nGoal, a backlog of 4M lines caught up in seconds (taken as at most 10 s): {b['lines']:,} lines in "
                  f"{b['ingest']:.1f} s ({'met' if b['ingest'] <= 10 else 'NOT met'}).")

    if latency:
        print(f"\n### Line written -> on screen ({args.latency_lines} lines, 0.1-0.3 s apart)\n")
        print("| reader | p50 | p99 | max |")
        print("|---|---:|---:|---:|")
        print(f"| moeconsole run screen, run directory watched | {qs(latency['watched'])} |")
        print(f"| the same screen polling every 1 s (baseline: before the watch) | {qs(latency['polled'])} |")
        print(f"| `tail -F` (floor) | {qs(latency['tail'])} |")


if __name__ == "__main__":
    main()
