"""Benchmarks of log ingestion: bulk parse speed, live latency, memory.

Run from the repository root:

    .venv/bin/python bench/bench_parse.py [--sizes 10000,1000000,5000000] [--runs 5] [--naive-max 1000000]

It writes an ms-swift 4.x style log (transformers 5.x string values, a tqdm bar redrawn with
carriage returns and cleared before every dict line, a checkpoint save every 100 steps) into a
temporary directory for each size (10k, 1M and 5M steps by default), times
``moeconsole parse FILE --json`` and ``moeconsole parse FILE`` (whole commands) against
``grep -c`` over the same file and against the obvious per-line ``ast.literal_eval`` script in
the same run, and prints a Markdown section (medians with min-max) and deletes the files. Above
``--naive-max`` steps the commands run 3 times and the naive script (75 s per million steps) once.
"""
from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
PY = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable


# ----------------------------------------------------------------------------- the log

def format_time(seconds: float) -> str:
    """ms-swift's format_time: '{d}d {h}h {m}m {s}s' without leading zero units."""
    s = int(round(seconds))
    d, s = divmod(s, 86400)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    parts = [(d, "d"), (h, "h"), (m, "m")]
    out, started = [], False
    for v, unit in parts:
        if v or started:
            out.append(f"{v}{unit}")
            started = True
    out.append(f"{s}s")
    return " ".join(out)


def tqdm_bar(i: int, n: int, elapsed: float, per_it: float) -> str:
    pct = i * 100 // n
    filled = i * 10 // n
    rem = (n - i) * per_it
    clock = lambda t: f"{int(t // 3600):d}:{int(t % 3600 // 60):02d}:{int(t % 60):02d}"  # noqa: E731
    return f"Train: {pct:3d}%|{'█' * filled}{' ' * (10 - filled)}| {i}/{n} [{clock(elapsed)}<{clock(rem)}, {per_it:.2f}s/it]"


def write_swift_log(path: Path, steps: int, seed: int = 0) -> int:
    """ms-swift 4.x HF-trainer output with transformers 5.x: returns the number of lines."""
    rnd = random.Random(seed)
    per_it = 0.195
    lines = 0
    with open(path, "w", encoding="utf-8", newline="") as f:
        head = [
            "run sh: `/usr/bin/python -m torch.distributed.run --nproc_per_node 8 swift/cli/sft.py --model Qwen3-MoE`",
            "[INFO:swift] Start time of running main: 2026-01-02 03:04:05.123456",
            "[INFO:swift] model_kwargs: {'device_map': 'cuda:0'}",
            "[INFO:swift] output_dir: /data/out/v3-20260102-030405",
        ]
        f.write("\n".join(head) + "\n")
        lines += len(head)
        buf = []
        for i in range(1, steps + 1):
            elapsed = i * per_it
            loss = 2.2 * math.exp(-i / (steps / 3)) + 0.6 + rnd.random() * 0.05
            grad = 0.8 + rnd.random() * 0.2
            lr = 2e-5 * 0.5 * (1 + math.cos(math.pi * i / steps))
            d = {"loss": f"{loss:.4g}", "grad_norm": f"{grad:.4g}", "learning_rate": f"{lr:.4g}",
                 "token_acc": f"{0.6 + 0.3 * i / steps:.4g}", "epoch": f"{3 * i / steps:.4g}",
                 "global_step/max_steps": f"{i}/{steps}", "elapsed_time": format_time(elapsed),
                 "remaining_time": format_time((steps - i) * per_it), "memory(GiB)": "35.12",
                 "train_speed(s/it)": f"{per_it:.4g}"}
            bar = tqdm_bar(i, steps, elapsed, per_it)
            buf.append(f"\r{bar}\r{' ' * len(bar)}\r{d}\n")
            lines += 1
            if i % 100 == 0:
                buf.append(f"[INFO:swift] Saving model checkpoint to /data/out/v3-20260102-030405/checkpoint-{i}\n")
                lines += 1
            if len(buf) >= 4096:
                f.write("".join(buf))
                buf.clear()
        f.write("".join(buf))
        tail = [
            str({"train_runtime": f"{steps * per_it:.4g}", "train_samples_per_second": "41.03",
                 "train_steps_per_second": "5.128", "train_loss": "1.1", "epoch": "3.0",
                 "global_step/max_steps": f"{steps}/{steps}"}),
            f"[INFO:swift] last_model_checkpoint: /data/out/v3-20260102-030405/checkpoint-{steps}",
        ]
        f.write("\n".join(tail) + "\n")
        lines += len(tail)
    return lines


# ----------------------------------------------------------------------------- timing

def cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def wait_quiet(max_wait: float, busy_max: float = 0.10, window: float = 3.0) -> float:
    """Wait (at most max_wait s) for a window in which the machine is at most busy_max busy;
    returns the busy fraction of the last window. Other people's work shares these cores."""
    deadline = time.monotonic() + max_wait
    while True:
        b0, t0 = cpu_ticks()
        time.sleep(window)
        b1, t1 = cpu_ticks()
        busy = (b1 - b0) / max(t1 - t0, 1)
        if busy <= busy_max or time.monotonic() >= deadline:
            return busy


def run_measured(argv: list[str], to_null: bool = False, cwd: Path = REPO, env: dict | None = None) -> dict:
    """One run: wall time, CPU time (user+sys, children included) and peak RSS, via wait4.
    stdout goes to a file so the output can be shown. ``others`` is the machine's busy CPU
    time during the run that was not this command's. ``cwd``/``env``: where the command runs
    (another checkout of the code, for a baseline)."""
    out = tempfile.TemporaryFile()
    load = os.getloadavg()[0]
    b0, j0 = cpu_ticks()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            os.dup2(os.open(os.devnull, os.O_WRONLY) if to_null else out.fileno(), 1)
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 2)
            if env is None:
                os.execvp(argv[0], argv)
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    b1, j1 = cpu_ticks()
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{argv}: exit {os.waitstatus_to_exitcode(status)}")
    out.seek(0)
    cpu = usage.ru_utime + usage.ru_stime
    hz = os.sysconf("SC_CLK_TCK")
    others = max(0.0, (b1 - b0) / hz - cpu)
    return {"wall": wall, "cpu": cpu, "rss_kib": int(usage.ru_maxrss), "load": load, "others": others,
            "out": out.read().decode(errors="replace")}


def median_runs(argv: list[str], runs: int, to_null: bool = False) -> tuple[dict, list[dict]]:
    results = [run_measured(argv, to_null) for _ in range(runs)]
    med = {k: statistics.median(r[k] for r in results) for k in ("wall", "cpu", "rss_kib", "load", "others")}
    med["out"] = results[-1]["out"]
    return med, results


NAIVE = r"""
import ast, json, sys
# The obvious `parse --json`: each line, the text after the last \r, ast.literal_eval, a record.
out = sys.stdout
with open(sys.argv[1], encoding="utf-8", errors="replace", newline="\n") as f:
    for line in f:
        text = line.rstrip("\n").rsplit("\r", 1)[-1].strip()
        if not text.startswith("{"):
            continue
        try:
            d = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            continue
        if isinstance(d, dict) and "global_step/max_steps" in d:
            step, _, total = str(d["global_step/max_steps"]).partition("/")
            rec = {"v": 1, "step": int(step), "max_steps": int(total), "loss": float(d.get("loss", "nan")),
                   "grad_norm": float(d.get("grad_norm", "nan")), "lr": float(d.get("learning_rate", "nan")),
                   "mem_gib": float(d.get("memory(GiB)", "nan"))}
            out.write(json.dumps(rec) + "\n")
"""


# ----------------------------------------------------------------------------- baseline

def compare_to_baseline(tmp: Path, sizes: list[int], runs: int, baseline: Path, busy: float) -> str:
    """``parse --json`` and ``parse`` of this tree and of ``baseline`` on the same logs, the runs
    interleaved (ours, theirs, ours, ...) so load drifts hit both alike; medians and the ratio."""
    base_py = str(baseline / ".venv" / "bin" / "python") if (baseline / ".venv" / "bin" / "python").exists() else PY
    base_env = dict(os.environ, PYTHONPATH=str(baseline))
    our_env = dict(os.environ, PYTHONPATH=str(REPO))
    lines = ["## Log parsing against a baseline tree (same run)\n",
             f"Command: `.venv/bin/python bench/bench_parse.py --sizes {','.join(map(str, sizes))} --runs {runs} "
             f"--baseline DIR`. Machine: {os.cpu_count()} cores, shared, {busy * 100:.0f}% busy before timing. "
             "Runs interleaved (this tree, the baseline, ...); medians (min-max) of wall time.\n",
             "| steps (log size) | command | this tree | baseline | ratio |", "|---|---|---:|---:|---:|"]
    for steps in sizes:
        log = tmp / f"train-{steps}.log"
        write_swift_log(log, steps)
        with open(log, "rb") as f:
            while f.read(64 << 20):
                pass
        for label, extra in (("`parse FILE --json`", ["--json"]), ("`parse FILE`", [])):
            ours, theirs = [], []
            for _ in range(runs):
                ours.append(run_measured([PY, "-m", "moeconsole.console.cli", "parse", str(log), *extra], to_null=True, env=our_env))
                theirs.append(run_measured([base_py, "-m", "moeconsole.console.cli", "parse", str(log), *extra], to_null=True,
                                           cwd=baseline, env=base_env))
            a = statistics.median(r["wall"] for r in ours)
            b = statistics.median(r["wall"] for r in theirs)
            lines.append(f"| {steps:,} ({log.stat().st_size / 1e6:.0f} MB) | {label} | {spread(ours, 'wall')} | "
                         f"{spread(theirs, 'wall')} | {a / b:.3f} |")
        log.unlink()
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- main

def spread(runs: list[dict], key: str) -> str:
    vals = sorted(r[key] for r in runs)
    return f"{statistics.median(vals):.2f} s ({vals[0]:.2f}-{vals[-1]:.2f})"


def bench_size(tmp: Path, steps: int, runs: int, naive_runs: int, naive_max: int) -> dict:
    """Every command on one generated log of ``steps`` steps; medians and spreads."""
    log = tmp / f"train-{steps}.log"
    t0 = time.perf_counter()
    n_lines = write_swift_log(log, steps)
    gen_s = time.perf_counter() - t0
    with open(log, "rb") as f:           # warm the page cache for everybody
        while f.read(64 << 20):
            pass
    cli = [PY, "-m", "moeconsole.console.cli", "parse", str(log)]
    if steps > naive_max:
        runs, naive_runs = min(runs, 3), 1
    out = {"steps": steps, "lines": n_lines, "mb": log.stat().st_size / 1e6, "gen_s": gen_s}
    out["json"] = median_runs(cli + ["--json"], runs, to_null=True)
    out["summary"] = median_runs(cli, runs)
    out["grep"] = median_runs(["grep", "-c", "loss", str(log)], runs)
    out["naive"] = median_runs([PY, "-c", NAIVE, str(log)], naive_runs, to_null=True)
    log.unlink()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,1000000,5000000",
                    help="comma-separated step counts (5000000 writes a 2 GB log)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--naive-runs", type=int, default=3)
    ap.add_argument("--naive-max", type=int, default=1000000,
                    help="above this many steps: 3 runs of each command, 1 of the naive script")
    ap.add_argument("--baseline", metavar="DIR",
                    help="another checkout of the code: time its parse on the same logs, runs interleaved, "
                         "and print the ratio (ours / baseline) instead of the full table")
    ap.add_argument("--wait-quiet", type=float, default=60.0,
                    help="wait up to this many seconds for the shared machine to be quiet before timing")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",") if x.strip()]

    tmp = Path(tempfile.mkdtemp(prefix="bench-parse-"))
    if args.baseline:
        try:
            busy_before = wait_quiet(args.wait_quiet)
            print(compare_to_baseline(tmp, sizes, args.runs, Path(args.baseline).resolve(), busy_before))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return
    try:
        busy_before = wait_quiet(args.wait_quiet)
        load_before = os.getloadavg()
        results = [bench_size(tmp, n, args.runs, args.naive_runs, args.naive_max) for n in sizes]
        load_after = os.getloadavg()
        print("## Log parsing (`moeconsole parse`)\n")
        print(f"Command: `.venv/bin/python bench/bench_parse.py --sizes {args.sizes} --runs {args.runs} "
              f"--naive-runs {args.naive_runs} --naive-max {args.naive_max}` "
              f"(from the repository root). Machine: {os.cpu_count()} cores, shared with other work: "
              f"{busy_before * 100:.0f}% busy just before timing, load average {load_before[0]:.2f} before and "
              f"{load_after[0]:.2f} after.\n")
        print("Input: generated ms-swift 4.x logs (transformers 5.x string values, tqdm bar + clearing "
              "spaces + `\\r` before every dict line, a save line every 100 steps). Every command is a "
              "whole subprocess (start-up included), timed with wait4; `--json` and the naive script "
              "write to /dev/null. Times: median (min-max) of the runs; lines/s = metric lines / median "
              "wall time.\n")
        print("| steps (log size) | command | runs | wall | CPU (user+sys) | metric lines/s | vs naive |")
        print("|---|---|---:|---:|---:|---:|---:|")
        for r in results:
            naive_wall = r["naive"][0]["wall"]
            for key, label in (("json", "`moeconsole parse FILE --json`"),
                               ("summary", "`moeconsole parse FILE` (summary + monitors)"),
                               ("grep", "`grep -c loss FILE`"),
                               ("naive", "naive per-line `ast.literal_eval` + `json.dumps` script")):
                med, runs = r[key]
                rate = r["steps"] / med["wall"]
                print(f"| {r['steps']:,} ({r['mb']:.0f} MB) | {label} | {len(runs)} | {spread(runs, 'wall')} | "
                      f"{spread(runs, 'cpu')} | {rate / 1e6:.2f} M | {naive_wall / med['wall']:.1f}x |")
        print()
        for r in (r for r in results if r["steps"] >= 1_000_000):   # start-up dominates smaller logs
            rate = r["steps"] / r["json"][0]["wall"]
            print(f"- Goal, at least 1M metric lines/s for `parse --json` as a whole command: {r['steps']:,} steps at "
                  f"{rate / 1e6:.2f}M lines/s ({'met' if rate >= 1e6 else 'NOT met'}).")
        for r in results:
            others = ", ".join(f"{x['others']:.2f}" for x in r["json"][1])
            print(f"- {r['steps']:,} steps: log generated in {r['gen_s']:.1f} s; CPU-seconds used by "
                  f"other processes during each `--json` run: {others}; peak RSS of `--json` "
                  f"{r['json'][0]['rss_kib'] / 1024:.0f} MiB, of the summary "
                  f"{r['summary'][0]['rss_kib'] / 1024:.0f} MiB.")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
