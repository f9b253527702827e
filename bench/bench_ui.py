"""Benchmark of the attached console: CPU share and RSS over 60 s, and chart redraw time.

Run from the repository root:  .venv/bin/python bench/bench_ui.py [--seconds 60] [--baseline REV]
(``--baseline REV``: two more consoles, run screen and GPU view, from ``git archive REV``, measured
in the same run: before/after a change on the same machine load; ``--seconds N`` past 120: a long
run, with each app's RSS minute by minute, min/median/max, and per five minutes, so "holds for
hours" is measured; ``--steps-per-second N``: the writer appends N steps each second, in one batch,
so what depends on the steps seen (the chart series and their halving at 2,048 buckets, the log
tail, the metric records) reaches in M minutes where a run at a step a second is after N*M
minutes; the 1 Hz refresh and the 30 s trims still run at their wall-time rate; the consoles
start from .pyc files, written first, as an installed console does; ``--source-only``: without
them, each start compiling the console's modules, as this bench measured until 2026-11-29 evening)
nvitop comes from a separate environment (never the project's):
    python3 -m venv .venv-bench && .venv-bench/bin/pip install nvitop
(``--nvitop PATH`` points elsewhere; without it the nvitop row is left out).

1. A writer process appends one training step per second to a run directory (metrics, log,
   state) and keeps state.json's runner PID alive. Two real Textual apps run at the same
   time, each in its own pseudo-terminal (160x48, TERM=xterm-256color), with the fake NVML
   library serving 8 GPUs polled at 1 Hz:
   - the console: ``moeconsole attach RUN`` (snapshot poll, GPU telemetry and blocker scan,
     charts, GPU rows, events, log tail) with the panels of issue 27 on: four charts chosen for
     the recipe (loss, grad norm, memory and the token accuracy the log carries) with EMA
     smoothing over the raw line, the run's rank named on each GPU (NVML process lists with
     per-process utilisation, matched to the run's tracked PIDs), and the host line (CPU, RAM,
     the output directory's disk I/O);
   - a second console with its GPU view open (``g``: per GPU the run's ranks and the other
     processes, the GPU history the runner recorded);
   - the baseline: a minimal, naive Textual app that each second re-reads the metrics, redraws
     one chart (a Static) and rebuilds one 8-row DataTable from NVML;
   - the peer: ``nvitop --monitor full --interval 1`` on the same fake NVML library (loaded
     through LD_LIBRARY_PATH, as the console loads it).
   Their CPU time (psutil, user+system) and RSS are sampled once a second.
2. Chart redraw with 1,000,000 points of history: ``render_chart`` (downsample + braille rows)
   at the chart sizes of an 80x24 and a 160x48 terminal, against drawing every point.

Prints a Markdown section; medians, p99 and ratios against the baseline of the same run.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import platform
import pty
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchlib import end_processes  # noqa: E402

WRITER = textwrap.dedent('''
    import json, math, os, sys, time
    run = sys.argv[1]
    step = 0
    def put_state(step):
        tmp = os.path.join(run, ".state.tmp")
        with open(tmp, "w") as f:
            json.dump({"v": 1, "run_id": os.path.basename(run), "name": "bench", "status": "running",
                       "attempt": 1, "restarts": 0, "max_restarts": 5, "step": step, "max_steps": MAX_STEPS,
                       "started_at": START, "mem_capacity_gib": 140.4, "cost_per_hour": 70.0,
                       "runner": {"pid": os.getpid(), "host": os.uname().nodename},
                       "pids": [{"pid": os.getpid(), "start_time": 0.0, "role": "leader"}]}, f)
        os.replace(tmp, os.path.join(run, "state.json"))
    START = time.time()
    PER_SECOND = int(sys.argv[2]) if len(sys.argv) > 2 else 1   # steps written each second
    MAX_STEPS = 100000 * PER_SECOND
    while True:
        for _ in range(PER_SECOND):
            step += 1
            rec = {"v": 1, "t": time.time(), "attempt": 1, "step": step, "max_steps": MAX_STEPS,
                   "loss": 2.0 * math.exp(-step / 500) + 0.5, "grad_norm": 1.0 + 0.1 * (step % 7),
                   "lr": 1e-4, "mem_gib": 120.0 + (step % 5), "tokens_per_s": 5000.0, "step_time_s": 1.0,
                   "extra": {"token_acc": 0.5 + 0.4 * (1 - math.exp(-step / 300)), "load_balancing_loss": 1.0 + 0.01 * (step % 3)}}
            # as the runner does: the log line, then its record naming the line's offset (log_at)
            with open(os.path.join(run, "train.log"), "a") as f:
                rec["log_at"] = f.tell()
                f.write(f"step {step}/{MAX_STEPS} loss {rec['loss']:.4f} grad_norm {rec['grad_norm']:.3f}\\n")
            with open(os.path.join(run, "metrics.jsonl"), "a") as f:
                f.write(json.dumps(rec) + "\\n")
        put_state(step)
        time.sleep(1.0)
''')

NAIVE_APP = textwrap.dedent('''
    """A minimal, naive Textual app: every second re-read the metrics, redraw one chart, rebuild
    one table from NVML. The baseline the console is measured against."""
    import json, sys
    import pynvml
    from textual.app import App
    from textual.widgets import DataTable, Static

    BLOCKS = " ▁▂▃▄▅▆▇█"

    class Naive(App):
        def compose(self):
            yield Static(id="chart")
            yield DataTable(id="table")

        def on_mount(self):
            pynvml.nvmlInit()
            t = self.query_one(DataTable)
            t.add_columns("GPU", "util %", "mem used MiB", "mem total MiB", "temp C")
            self.set_interval(1.0, self.tick)

        def tick(self):
            losses = []
            with open(sys.argv[1] + "/metrics.jsonl") as f:
                for line in f:
                    losses.append(json.loads(line)["loss"])
            width, height = 120, 12
            pts = losses[-width:]
            lo, hi = min(pts), max(pts)
            rows = []
            for r in range(height):
                row = ""
                for v in pts:
                    level = (v - lo) / ((hi - lo) or 1) * height
                    row += "█" if level >= height - r else " "
                rows.append(row)
            self.query_one("#chart", Static).update("\\n".join(rows))
            t = self.query_one(DataTable)
            t.clear()
            for i in range(pynvml.nvmlDeviceGetCount()):
                h = pynvml.nvmlDeviceGetHandleByIndex(i)
                m = pynvml.nvmlDeviceGetMemoryInfo(h)
                t.add_row(str(i), str(pynvml.nvmlDeviceGetUtilizationRates(h).gpu), str(m.used >> 20),
                          str(m.total >> 20), str(pynvml.nvmlDeviceGetTemperature(h, 0)))

    Naive().run()
''')


def spawn_in_pty(argv: list[str], env: dict, cols: int, rows: int, cwd: Path = REPO) -> tuple[subprocess.Popen, int]:
    """Start ``argv`` on a new pseudo-terminal of the given size; returns (process, master fd).
    ``cwd``: the tree ``python -m`` imports from (it puts the working directory first)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
                            start_new_session=True, close_fds=True)
    os.close(slave)
    return proc, master


def drain(fd: int, stop: threading.Event) -> None:
    """Read the terminal output as a terminal would, so the app never blocks on a full pty."""
    while not stop.is_set():
        try:
            if not os.read(fd, 65536):
                return
        except OSError:
            return


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def rss_by_minute(rss: list[float]) -> list[tuple[float, float, float]]:
    """One-a-second RSS samples -> (min, median, max) of each whole or last partial minute."""
    return [(min(part), statistics.median(part), max(part))
            for part in (rss[i:i + 60] for i in range(0, len(rss), 60))]


def thread_times(p: psutil.Process) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of ``p`` so far, by thread ID."""
    try:
        return {t.id: t.user_time + t.system_time for t in p.threads()}
    except psutil.Error:
        return {}


def thread_split(before: dict[int, float], after: dict[int, float], main: int, wall: float) -> dict[str, float]:
    """Where one process's CPU went over a window: its main thread (``main``: its PID) and its
    busiest other thread (a console's poll thread), shares of a core; ``others`` the rest."""
    used = {tid: t - before.get(tid, 0.0) for tid, t in after.items()}
    main_used = used.pop(main, 0.0)
    busiest = max(used.values(), default=0.0)
    return {"main": 100.0 * main_used / wall, "busiest": 100.0 * busiest / wall,
            "others": 100.0 * (sum(used.values()) - busiest) / wall}


def measure(procs: dict[str, psutil.Process], seconds: float, warmup: float,
            threads: tuple[str, ...] = ()) -> dict[str, dict]:
    """CPU share and RSS of each process over ``seconds`` after ``warmup``; for the processes
    named in ``threads`` also ``thread_split`` (``"threads"``)."""
    time.sleep(warmup)
    first_threads = {k: thread_times(procs[k]) for k in threads}
    first = {k: p.cpu_times() for k, p in procs.items()}
    last = dict(first)
    per_second: dict[str, list[float]] = {k: [] for k in procs}
    rss: dict[str, list[float]] = {k: [] for k in procs}
    t0 = prev = time.monotonic()
    while time.monotonic() - t0 < seconds:
        time.sleep(1.0)
        now = time.monotonic()
        for k, p in procs.items():
            ct = p.cpu_times()
            used = (ct.user + ct.system) - (last[k].user + last[k].system)
            per_second[k].append(100.0 * used / (now - prev))
            last[k] = ct
            rss[k].append(p.memory_info().rss / 2**20)
        prev = now
    wall = time.monotonic() - t0
    last_threads = {k: thread_times(procs[k]) for k in threads}
    out = {}
    for k in procs:
        total = (last[k].user + last[k].system) - (first[k].user + first[k].system)
        out[k] = {"cpu_share": 100.0 * total / wall, "cpu_median": statistics.median(per_second[k]),
                  "cpu_p99": pct(per_second[k], 99), "rss_median": statistics.median(rss[k]),
                  "rss_max": max(rss[k]), "per_second": per_second[k], "rss_minutes": rss_by_minute(rss[k])}
        if k in threads:
            out[k]["threads"] = thread_split(first_threads[k], last_threads[k], procs[k].pid, wall)
    return out


def compile_tree(tree: Path) -> None:
    """Write the .pyc files of ``tree``'s package, as ``pip install`` does: a console started from
    a tree without them compiles every module of its own at each start, and the compiler's
    garbage stays in glibc's heap and pymalloc's arenas (2.2 MiB more resident memory after the
    imports, docs/benchmarks-ui.md). compileall does not follow the package's links to its
    subpackages: each is compiled where it is."""
    pkg = tree / "moeconsole"
    dirs = [pkg] + sorted({p.resolve() for p in pkg.iterdir() if p.is_dir() and p.name != "__pycache__"})
    subprocess.run([sys.executable, "-m", "compileall", "-q", *map(str, dirs)], check=True, stdout=subprocess.DEVNULL)


def drop_bytecode(tree: Path) -> None:
    """Remove the .pyc files of ``tree``'s package (``--source-only``: every start compiles them)."""
    pkg = tree / "moeconsole"
    for top in [pkg] + sorted({p.resolve() for p in pkg.iterdir() if p.is_dir() and p.name != "__pycache__"}):
        for cache in top.rglob("__pycache__"):
            shutil.rmtree(cache, ignore_errors=True)


def bench_attached(seconds: float, nvitop: str | None = None, baseline: Path | None = None,
                   steps_per_second: int = 1, bytecode: bool = True) -> tuple[dict, dict]:
    from tests.fakes.nvml import build_fake_nvml, fake_env, write_scenario
    work = Path(tempfile.mkdtemp(prefix="mcbench-"))
    procs: list[subprocess.Popen] = []
    stop = threading.Event()
    try:
        base = work / "runs"
        run = base / "20260101-000000-bench-0001"
        (run / "crashes").mkdir(parents=True)
        libdir = build_fake_nvml(work / "nvml")
        scenario = write_scenario(work / "scenario.txt", 8)
        env = fake_env(libdir, scenario)
        env.update(TERM="xterm-256color", PYTHONPATH=str(REPO), TEXTUAL_ANIMATIONS="none")
        env.pop("NO_COLOR", None)
        if bytecode:   # the consoles start from .pyc files, as every installed console does
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            for tree in [REPO] + ([baseline] if baseline is not None else []):
                compile_tree(tree)
        else:   # as before: each start compiles the console's own modules
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            for tree in [REPO] + ([baseline] if baseline is not None else []):
                drop_bytecode(tree)
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(run), str(steps_per_second)],
                                  env={**env, "RANK": "0"})
        procs.append(writer)
        deadline = time.time() + 10
        while not (run / "state.json").exists() and time.time() < deadline:
            time.sleep(0.05)
        # the writer stands for the run's rank 0 on every GPU, beside a foreign process on GPU 3
        from tests.fakes.nvml import FakeGpu, FakeProc
        write_scenario(scenario, [FakeGpu(util_pct=90, mem_base_used_mib=1024) for _ in range(8)],
                       [FakeProc(i, writer.pid, 100_000, sm_pct=88, mem_pct=40) for i in range(8)]
                       + [FakeProc(3, os.getpid(), 2_000, sm_pct=1)])
        # four charts for the recipe, smoothed (what `c` and `e` leave in chart-prefs.json)
        (base / "chart-prefs.json").write_text(json.dumps({"v": 1, "recipes": {"bench": {
            "charts": ["loss", "grad_norm", "mem_gib", "token_acc"], "smooth": 0.9, "log": False, "t": 0}}}))
        naive_py = work / "naive_app.py"
        naive_py.write_text(NAIVE_APP)
        ui, ui_fd = spawn_in_pty([sys.executable, "-m", "moeconsole.console.cli", "attach", run.name, "--runs-dir", str(base)],
                                 env, 160, 48)
        gpus, gpus_fd = spawn_in_pty([sys.executable, "-m", "moeconsole.console.cli", "attach", run.name, "--runs-dir",
                                      str(base)], env, 160, 48)
        naive, naive_fd = spawn_in_pty([sys.executable, str(naive_py), str(run)], env, 160, 48)
        procs += [ui, gpus, naive]
        fds = [ui_fd, gpus_fd, naive_fd]
        watched = {"console": psutil.Process(ui.pid), "gpus": psutil.Process(gpus.pid),
                   "naive": psutil.Process(naive.pid)}
        started = [("console", ui), ("console GPU view", gpus), ("naive", naive)]
        g_fds = [gpus_fd]
        if baseline is not None:   # the same two consoles from the baseline's code, in the same run
            benv = {**env, "PYTHONPATH": str(baseline)}
            argv = [sys.executable, "-m", "moeconsole.console.cli", "attach", run.name, "--runs-dir", str(base)]
            b_ui, b_ui_fd = spawn_in_pty(argv, benv, 160, 48, cwd=baseline)
            b_gpus, b_gpus_fd = spawn_in_pty(argv, benv, 160, 48, cwd=baseline)
            procs += [b_ui, b_gpus]
            fds += [b_ui_fd, b_gpus_fd]
            g_fds.append(b_gpus_fd)
            watched.update({"base console": psutil.Process(b_ui.pid), "base gpus": psutil.Process(b_gpus.pid)})
            started += [("baseline console", b_ui), ("baseline console GPU view", b_gpus)]
        if nvitop:
            peer, peer_fd = spawn_in_pty([nvitop, "--monitor", "full", "--interval", "1"], env, 160, 48)
            procs.append(peer)
            fds.append(peer_fd)
            watched["nvitop"] = psutil.Process(peer.pid)
            started.append(("nvitop", peer))
        for fd in fds:
            threading.Thread(target=drain, args=(fd, stop), daemon=True).start()
        time.sleep(4.0)
        for fd in g_fds:
            os.write(fd, b"g")   # the second console (and the baseline's) opens its GPU view
        result = measure(watched, seconds, warmup=4.0)
        for name, p in started:
            if p.poll() is not None:
                raise SystemExit(f"the {name} app exited early with {p.returncode}")
        steps = sum(1 for _ in open(run / "metrics.jsonl"))
        return result, {"steps_written": steps}
    finally:
        stop.set()
        end_processes(procs)
        shutil.rmtree(work, ignore_errors=True)


def naive_full_render(x: np.ndarray, y: np.ndarray, width: int, height: int) -> list[str]:
    """Baseline: every point of the history mapped to a braille dot (no downsampling)."""
    px_w, px_h = width * 2, height * 4
    fin = np.isfinite(y)
    xs, ys = x[fin], y[fin]
    cols = np.clip(((xs - xs.min()) / max(1.0, xs.max() - xs.min()) * (px_w - 1)).astype(np.int64), 0, px_w - 1)
    rows = np.clip(((ys.max() - ys) / ((ys.max() - ys.min()) or 1.0) * (px_h - 1)).astype(np.int64), 0, px_h - 1)
    bits = np.array([[0x01, 0x02, 0x04, 0x40], [0x08, 0x10, 0x20, 0x80]], dtype=np.uint16)
    grid = np.zeros((height, width), dtype=np.uint16)
    np.bitwise_or.at(grid, (rows // 4, cols // 2), bits[cols % 2, rows % 4])
    return ["".join(chr(0x2800 + int(v)) for v in row) for row in grid]


def bench_chart(repeats: int = 60) -> list[dict]:
    from moeconsole.console.chart import Marker, render_chart
    from moeconsole.runner.core.series import Series
    n = 1_000_000
    s = Series()
    rng = np.random.default_rng(0)
    ys = 2.0 * np.exp(-np.arange(n) / 2e5) + 0.5 + 0.05 * rng.standard_normal(n)
    ys[n // 3] = 40.0
    for i, v in enumerate(ys.tolist()):
        s.append(i, v)
    markers = [Marker(float(k), "ckpt") for k in range(0, n, 50_000)] + [Marker(600_000.0, "restart")]
    from moeconsole.console.chart import ChartOptions
    out = []
    smooth = ChartOptions(smooth=0.9, log=True)
    for label, (w, h), opts in (("80x24 terminal (26x8 chart)", (26, 8), ChartOptions()),
                                ("160x48 terminal (53x14 chart)", (53, 14), ChartOptions()),
                                ("160x48, EMA 0.9 over the raw line, log axis", (53, 14), smooth)):
        ours, base = [], []
        for _ in range(repeats):
            t = time.perf_counter()
            render_chart([s], w, h, title="loss", markers=markers, options=opts)
            ours.append((time.perf_counter() - t) * 1000)
        for _ in range(max(5, repeats // 6)):
            t = time.perf_counter()
            naive_full_render(np.arange(n, dtype=np.float64), ys, w - 7, h - 2)
            base.append((time.perf_counter() - t) * 1000)
        out.append({"size": label, "median": statistics.median(ours), "p99": pct(ours, 99),
                    "base_median": statistics.median(base), "base_p99": pct(base, 99)})
    return out


def print_rss_series(rows: list[tuple[str, dict]]) -> None:
    """RSS over a long run: min/median/max of the first and last minutes, and every tenth
    minute between, for each app (MiB), and the climb from the first to the last minute."""
    print("#### RSS minute by minute (min / median / max, MiB)\n")
    minutes = len(rows[0][1]["rss_minutes"])
    shown = sorted({0, 1, 2, 4, minutes - 1} | set(range(9, minutes, 10)))
    shown = [m for m in shown if 0 <= m < minutes]
    print("| app | " + " | ".join(f"minute {m + 1}" for m in shown) + " | last - first median |")
    print("|---|" + "---|" * len(shown) + "---|")
    for name, r in rows:
        cells = [r["rss_minutes"][m] for m in shown]
        climb = r["rss_minutes"][-1][1] - r["rss_minutes"][0][1]
        print(f"| {name} | " + " | ".join(f"{lo:.1f} / {mid:.1f} / {hi:.1f}" for lo, mid, hi in cells)
              + f" | {climb:+.2f} |")
    print()


def print_rss_by_five_minutes(rows: list[tuple[str, dict]], steps_per_second: int) -> None:
    """RSS min / median / max of every five minutes, each app a column; with the steps written
    by then (and, for an accelerated run, the time a run at a step a second takes to get there)."""
    print("#### RSS per five minutes (min / median / max, MiB)\n")
    per = [r["rss_minutes"] for _, r in rows]
    fast = steps_per_second != 1   # an accelerated run: where a run at a step a second would be
    print("| minutes | steps by then | " + ("at 1 step/s | " if fast else "") + " | ".join(name for name, _ in rows) + " |")
    print("|---|---|" + ("---|" if fast else "") + "---|" * len(rows))
    for start in range(0, len(per[0]), 5):
        end = min(start + 5, len(per[0]))
        steps = end * 60 * steps_per_second
        cells = []
        for minutes in per:
            part = minutes[start:end]
            cells.append(f"{min(p[0] for p in part):.1f} / {statistics.median(p[1] for p in part):.1f} / "
                         f"{max(p[2] for p in part):.1f}")
        print(f"| {start}-{end} | {steps:,} | " + (f"{steps / 3600:.1f} h | " if fast else "") + " | ".join(cells) + " |")
    print()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--nvitop", default=str(REPO / ".venv-bench" / "bin" / "nvitop"),
                    help="the nvitop executable (from its own environment)")
    ap.add_argument("--no-chart", action="store_true", help="skip the chart redraw part")
    ap.add_argument("--baseline", help="git revision whose consoles run beside this code's, in the same run")
    ap.add_argument("--steps-per-second", type=int, default=1,
                    help="steps the writer appends each second, in one batch (a long run accelerated: "
                         "N steps a second for M minutes is what a run at a step a second shows after "
                         "N*M minutes, as far as the step-driven state goes)")
    ap.add_argument("--source-only", action="store_true",
                    help="start the consoles without .pyc files (each start compiles its own modules), "
                         "as this bench did before 2026-11-29 21:30 with PYTHONDONTWRITEBYTECODE set")
    args = ap.parse_args()
    import textual
    chart = [] if args.no_chart else bench_chart()
    nvitop = args.nvitop if args.nvitop and Path(args.nvitop).is_file() else None
    if nvitop is None:
        print(f"(nvitop not found at {args.nvitop}: its row is left out)", file=sys.stderr)
    baseline = None
    if args.baseline:
        from bench.bench_ingest import export
        baseline = export(args.baseline, Path(tempfile.mkdtemp(prefix="mcbench-ui-base-")) / "tree")
    try:
        attached, info = bench_attached(args.seconds, nvitop, baseline, args.steps_per_second,
                                        bytecode=not args.source_only)
    finally:
        if baseline is not None:
            shutil.rmtree(baseline.parent, ignore_errors=True)
    c, g, b = attached["console"], attached["gpus"], attached["naive"]
    n = attached.get("nvitop")
    print("## Console (UI) benchmarks\n")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"Textual {textual.__version__}. Command: `.venv/bin/python bench/bench_ui.py"
          f"{'' if args.seconds == 60 else f' --seconds {args.seconds:g}'}"
          f"{f' --baseline {args.baseline}' if args.baseline else ''}"
          f"{f' --steps-per-second {args.steps_per_second}' if args.steps_per_second != 1 else ''}"
          f"{' --source-only' if args.source_only else ''}`\n")
    print(f"### Attached UI over {args.seconds:g} s at {args.steps_per_second} step/s, 8 GPUs (fake NVML) polled at 1 Hz, 160x48 pty\n")
    print(f"{info['steps_written']} steps written during the run; all apps measured at the same time.\n")
    print("| app | CPU share | CPU/s median | CPU/s p99 | RSS median | RSS max |")
    print("|---|---|---|---|---|---|")
    rows = [("moeconsole attach (4 charts with EMA, ranks per GPU, host line)", c),
            ("moeconsole attach, GPU view open (g)", g), ("naive Textual app (baseline)", b)]
    if baseline is not None:
        rows += [(f"baseline ({args.baseline}) attach", attached["base console"]),
                 (f"baseline ({args.baseline}) attach, GPU view open (g)", attached["base gpus"])]
    if n:
        rows.append(("nvitop --monitor full --interval 1 (peer)", n))
    for name, r in rows:
        print(f"| {name} | {r['cpu_share']:.2f}% | {r['cpu_median']:.2f}% | {r['cpu_p99']:.2f}% | "
              f"{r['rss_median']:.1f} MiB | {r['rss_max']:.1f} MiB |")
    ratio = c["cpu_share"] / b["cpu_share"] if b["cpu_share"] else float("nan")
    print(f"\nCPU ratio console/naive Textual app: {ratio:.2f}x.")
    if baseline is not None:
        for label, now, before in (("run screen", c, attached["base console"]), ("GPU view", g, attached["base gpus"])):
            print(f"This code against {args.baseline}, {label}: RSS median {now['rss_median']:.1f} vs "
                  f"{before['rss_median']:.1f} MiB ({now['rss_median'] - before['rss_median']:+.1f} MiB), CPU share "
                  f"{now['cpu_share']:.2f}% vs {before['cpu_share']:.2f}%.")
    if n:
        for label, r in (("run screen", c), ("GPU view", g)):
            cpu_ok = r["cpu_share"] <= n["cpu_share"]
            print(f"Against nvitop, {label}: CPU {r['cpu_share'] / n['cpu_share']:.2f}x (goal at most 1x: "
                  f"{'met' if cpu_ok else 'NOT met'}), RSS {r['rss_median']:.1f} vs {n['rss_median']:.1f} MiB "
                  f"(goal at most 40 MiB: {'met' if r['rss_max'] <= 40 else 'NOT met'}, by the maximum; the naive "
                  f"Textual app {b['rss_median']:.1f} MiB).")
        print()
    if args.seconds > 120:   # a long run: does the RSS hold, minute by minute?
        print_rss_series(rows)
        print_rss_by_five_minutes(rows, args.steps_per_second)
    if not chart:
        return 0
    print("### Chart redraw with 1,000,000 points of history\n")
    print("`render_chart` = downsample to the pixel width (bucket max) + braille rows + markers (21 markers). "
          "Baseline: every point mapped to a dot, no downsampling.\n")
    print("| chart | median | p99 | baseline median | baseline p99 | speed-up |")
    print("|---|---|---|---|---|---|")
    for r in chart:
        print(f"| {r['size']} | {r['median']:.2f} ms | {r['p99']:.2f} ms | {r['base_median']:.2f} ms | "
              f"{r['base_p99']:.2f} ms | {r['base_median'] / r['median']:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
