"""Benchmark of a 128-node, 1,024-GPU job played into one run directory.

Run from the repository root:  .venv/bin/python bench/bench_scale.py [--seconds 60] [--step-s 4]
nvitop comes from its own environment (``make bench`` builds ``.venv-bench``).

What plays the job (one machine cannot hold it, so its outputs are simulated, not its shape):
- ``bench/sim_job.py`` is the recipe's command under a real runner (``moeconsole run --detach``):
  every one of the 1,024 ranks prints its Megatron-LM iteration line each step behind
  torchrun's ``[rankN]:`` prefix (1,024 lines, about 330 KB, every ``--step-s`` seconds), plus
  start-up warnings from every rank. Node 101's ranks are 1.3x slower (a straggler).
- ``bench/sim_agents.py`` writes the 128 nodes' agent files (``telemetry/<host>.json``, the
  agent's own format, each node's 8 GPUs from the real NVML backend over the fake NVML library,
  its 8 ranks) every second. Node 17 has a GPU at 97.5% memory, node 42 idles.
- Beside it, an 8-GPU run (one step a second, the UI benchmark's writer) is the reference.

Measured over the same window, all at once on this machine:
1. the runner of the 1,024-GPU run: CPU, RSS, ingest lag (``state.json`` ``ingest.lag_bytes``
   each second), steps and ranks kept;
2. ``moeconsole attach`` (160x48 pty, local fake NVML with 8 GPUs) on each run, and
   ``nvitop --monitor full --interval 1`` on the same 8 fake GPUs: CPU share and RSS, and where
   each console's CPU went (its main thread, the Textual screen; its busiest other thread, the
   poll thread that reads the run directory; the rest; ``bench_ui.thread_split``);
3. after the window: ``moeconsole --json RUN --once --no-gpu`` wall time (a new process each
   call) and ``RunWatcher.poll`` in-process time, on both runs;
4. what the GPU panel and ``--json`` list first (the worst nodes).

Prints a Markdown section; medians, p99 and ratios against the 8-GPU run and nvitop. The CPU
ratios are also taken window by window (``--window`` seconds, every process over the same
window): their median and range say how much of a ratio is the shared machine's noise.
``--baseline REV`` attaches that git revision's console (``git archive``) to both runs too, in
the same window: the change measured against the code before it, on the same load.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_ui import WRITER, measure, spawn_in_pty  # noqa: E402
from benchlib import end_processes, p99, timings  # noqa: E402
from bench_ingest import export  # noqa: E402

NODES, GPUS = 128, 8
FULL_MEM, IDLE, SLOW = 17, 42, 101


def recipe(path: Path, step_s: float) -> Path:
    slow = f"{SLOW * GPUS}-{SLOW * GPUS + GPUS - 1}"
    doc = {"name": "scale1024", "command": ["{python}", str(REPO / "bench" / "sim_job.py"), "--ranks",
                                            str(NODES * GPUS), "--step-s", str(step_s), "--slow-ranks", slow],
           "heartbeat": {"timeout_s": 600}, "restart": {"max_restarts": 0}, "cooldown": {"floor_s": 0}}
    path.write_text(yaml.safe_dump(doc))
    return path


def cli(base: Path, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(base)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def json_latency(base: Path, run: str, env: dict, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        done = cli(base, "--json", run, "--once", "--no-gpu", env=env)
        out.append(time.perf_counter() - t0)
        if done.returncode != 0:
            raise SystemExit(f"--json failed: {done.stderr}")
    return out


def panel_lines(base: Path, run: Path, env: dict) -> tuple[list[str], dict]:
    """The GPU panel at 160x48 and the snapshot's first nodes, in this process (Pilot)."""
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.console.widgets.gpu_panel import GpuPanel
    from moeconsole.runner.rundir import rundir

    async def go() -> tuple[list[str], dict]:
        app = MoeConsole(base, rundir.RunDir(run), interval=0.5, gpu=False)
        async with app.run_test(size=(160, 48)) as pilot:
            deadline = time.monotonic() + 30
            while not (isinstance(app.screen, RunScreen) and app.screen.snapshot is not None):
                assert time.monotonic() < deadline
                await pilot.pause(0.1)
            await pilot.pause(1.0)
            panel = app.screen.query_one(GpuPanel)
            return list(panel.plain_lines), app.screen.snapshot.to_dict()
    return asyncio.run(go())


def runner_only(base: Path, work: Path, env: dict, step_s: float, seconds: float) -> dict:
    """The runner alone on the same job at a faster step (headroom): CPU, ingest lag, lines/s."""
    started = cli(base, "run", str(recipe(work / "stress.yaml", step_s)), "--detach", env=env)
    if started.returncode != 0:
        raise SystemExit(f"run failed: {started.stderr}")
    run = base / started.stdout.split()[0]
    try:
        proc = psutil.Process(json.loads((run / "state.json").read_text())["runner"]["pid"])
        time.sleep(5)
        c0, t0, size0 = proc.cpu_times(), time.monotonic(), (run / "train.log").stat().st_size
        lags = []
        while time.monotonic() - t0 < seconds:
            time.sleep(1.0)
            try:
                lags.append(int(json.loads((run / "state.json").read_text())["ingest"]["lag_bytes"]))
            except (OSError, ValueError, KeyError, TypeError):
                pass
        c1, wall = proc.cpu_times(), time.monotonic() - t0
        size = (run / "train.log").stat().st_size - size0
        return {"cpu": 100 * ((c1.user + c1.system) - (c0.user + c0.system)) / wall, "lag_max": max(lags or [0]),
                "lag_median": statistics.median(lags) if lags else 0, "kib_s": size / wall / 1024,
                "lines_s": NODES * GPUS / step_s}
    finally:
        cli(base, "kill", run.name, env=env)


# The node reading of a console's timer poll, alone, on the live run (PYTHONPATH picks the tree):
# NodeReader.read once a second, as a console's run screen reads (``whole`` False: a tree
# without glances ignores it), then the GPU panel's summary lines of those nodes (160 columns,
# 16 lines); prints the CPU (thread time) of each per second of wall time, in ms.
NODE_READ = """
import sys, time
from pathlib import Path
from moeconsole.runner.rundir import rundir
from moeconsole.runner.rundir.snapshot import NodeReader
from moeconsole.console.widgets.gpu_panel import node_groups, summary_lines
try:  # the panel's own call past its lines (a tree without it: every node's group)
    from moeconsole.console.widgets.gpu_panel import node_summary_lines as draw
except ImportError:
    draw = lambda nodes, gpu, host, width, budget: summary_lines(node_groups(nodes, gpu, host), width, budget)
reader = NodeReader(rundir.RunDir(Path(sys.argv[1])))
reader.whole = False
draw(reader.read(time.time()), None, "here", 160, 16)
seconds = float(sys.argv[2])
used = drawn = 0.0
t0 = next_at = time.monotonic()
while time.monotonic() - t0 < seconds:
    next_at += 1.0
    time.sleep(max(0.0, next_at - time.monotonic()))
    c0 = time.thread_time()
    nodes = reader.read(time.time())
    c1 = time.thread_time()
    draw(nodes, None, "here", 160, 16)
    used += c1 - c0
    drawn += time.thread_time() - c1
wall = time.monotonic() - t0
print(used / wall * 1000, drawn / wall * 1000)
"""


def node_read_cost(trees: dict[str, Path], run: Path, env: dict, seconds: float,
                   rounds: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """``NODE_READ`` of every tree at the same time (same files, same load), ``rounds`` times:
    the node reading's and the summary lines' ms of CPU per second, per round."""
    out: dict[str, list[float]] = {name: [] for name in trees}
    lines: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(rounds):
        running = {name: subprocess.Popen([sys.executable, "-c", NODE_READ, str(run), str(seconds)],
                                          env={**env, "PYTHONPATH": str(tree)}, cwd=str(tree),  # -c puts the cwd first
                                          stdout=subprocess.PIPE, text=True)
                   for name, tree in trees.items()}
        for name, p in running.items():
            got, _ = p.communicate(timeout=seconds + 120)
            read_ms, lines_ms = got.split()
            out[name].append(float(read_ms))
            lines[name].append(float(lines_ms))
    return out, lines


def count_output(fd: int, stop: threading.Event, reads: list[tuple[float, int]]) -> None:
    """``bench_ui.drain`` (the terminal read as a terminal would), noting when and how many bytes."""
    while not stop.is_set():
        try:
            got = os.read(fd, 65536)
        except OSError:
            return
        if not got:
            return
        reads.append((time.monotonic(), len(got)))


def window_shares(per_second: list[float], window: int) -> list[float]:
    """The mean CPU share of each whole window of ``window`` one-second samples."""
    return [sum(per_second[i:i + window]) / window for i in range(0, len(per_second) - window + 1, window)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--step-s", type=float, default=4.0, help="the simulated job's step time")
    ap.add_argument("--nvitop", default=str(REPO / ".venv-bench" / "bin" / "nvitop"))
    ap.add_argument("--json-runs", type=int, default=15)
    ap.add_argument("--stress-step-s", type=float, default=0.4, help="the runner alone at this step time (0: skip)")
    ap.add_argument("--window", type=float, default=10.0, help="seconds per window of the windowed CPU ratios")
    ap.add_argument("--baseline", help="a git revision whose console is attached too, in the same run")
    ap.add_argument("--profile", help="run the 1,024-GPU console under cProfile (bench/profiled.py), stats to this file")
    args = ap.parse_args()
    from tests.fakes.nvml import build_fake_nvml, fake_env, write_scenario
    from moeconsole.runner.rundir import rundir
    from moeconsole.runner.rundir.snapshot import RunWatcher
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="mcscale-"))
    procs: list[subprocess.Popen] = []
    stop = threading.Event()
    runner_pid = None
    try:
        base = work / "runs"
        base.mkdir()
        libdir = build_fake_nvml(work / "nvml")
        env = fake_env(libdir, write_scenario(work / "scenario.txt", 8))
        env.update(TERM="xterm-256color", PYTHONPATH=str(REPO), TEXTUAL_ANIMATIONS="none")
        env.pop("NO_COLOR", None)
        env.pop("MOECONSOLE_RUNS_DIR", None)
        started = cli(base, "run", str(recipe(work / "scale.yaml", args.step_s)), "--detach", env=env)
        if started.returncode != 0:
            raise SystemExit(f"run failed: {started.stderr}")
        big = base / started.stdout.split()[0]
        runner_pid = json.loads((big / "state.json").read_text())["runner"]["pid"]
        agents = subprocess.Popen([sys.executable, str(REPO / "bench" / "sim_agents.py"), str(big), "--nodes",
                                   str(NODES), "--full-mem", str(FULL_MEM), "--idle", str(IDLE)], env=env)
        procs.append(agents)
        small = base / "20260101-000000-bench8-0001"
        (small / "crashes").mkdir(parents=True)
        procs.append(subprocess.Popen([sys.executable, "-c", WRITER, str(small)], env=env))
        deadline = time.time() + 60
        while time.time() < deadline and not ((small / "state.json").exists()
                                              and len(list((big / "telemetry").glob("*.json"))) == NODES
                                              and (big / "ranks.json").exists()):
            time.sleep(0.2)
        profiled = [str(REPO / "bench" / "profiled.py"), str(Path(args.profile).resolve())] if args.profile else []
        ui_big, fd1 = spawn_in_pty([sys.executable, *profiled, "-m", "moeconsole.console.cli", "attach", big.name,
                                    "--runs-dir", str(base)], env, 160, 48)
        ui_small, fd2 = spawn_in_pty([sys.executable, "-m", "moeconsole.console.cli", "attach", small.name, "--runs-dir",
                                      str(base)], env, 160, 48)
        procs += [ui_big, ui_small]
        fds = [fd1, fd2]
        watched = {"ui1024": psutil.Process(ui_big.pid), "ui8": psutil.Process(ui_small.pid),
                   "runner": psutil.Process(runner_pid), "agents": psutil.Process(agents.pid)}
        if args.baseline:
            tree = export(args.baseline, work / "baseline")
            benv = {**env, "PYTHONPATH": str(tree)}
            for name, run in (("base1024", big), ("base8", small)):
                # cwd: ``-m`` puts the working directory first on sys.path, before PYTHONPATH
                p, fd = spawn_in_pty([sys.executable, "-m", "moeconsole.console.cli", "attach", run.name, "--runs-dir",
                                      str(base)], benv, 160, 48, cwd=tree)
                procs.append(p)
                fds.append(fd)
                watched[name] = psutil.Process(p.pid)
        nvitop = args.nvitop if Path(args.nvitop).is_file() else None
        if nvitop:
            peer, fd3 = spawn_in_pty([nvitop, "--monitor", "full", "--interval", "1"], env, 160, 48)
            procs.append(peer)
            fds.append(fd3)
            watched["nvitop"] = psutil.Process(peer.pid)
        else:
            print(f"(nvitop not found at {args.nvitop}: its row is left out)", file=sys.stderr)
        shown: dict[str, list[tuple[float, int]]] = {}  # console -> (when, bytes) of each read of its terminal
        for name, fd in zip(("ui1024", "ui8", *(("base1024", "base8") if args.baseline else ()), "nvitop"), fds):
            threading.Thread(target=count_output, args=(fd, stop, shown.setdefault(name, [])), daemon=True).start()
        lags: list[int] = []

        def sample_lag() -> None:
            while not stop.is_set():
                try:
                    lags.append(int(json.loads((big / "state.json").read_text())["ingest"]["lag_bytes"]))
                except (OSError, ValueError, KeyError, TypeError):
                    pass
                time.sleep(1.0)
        threading.Thread(target=sample_lag, daemon=True).start()
        log_before = (big / "train.log").stat().st_size
        window_from = time.monotonic() + 8.0
        cpu = measure(watched, args.seconds, warmup=8.0,
                      threads=tuple(k for k in ("ui1024", "ui8", "base1024", "base8") if k in watched))
        window = (window_from, time.monotonic())
        out_bps = {name: sum(n for t, n in reads if window[0] <= t <= window[1]) / (window[1] - window[0])
                   for name, reads in shown.items()}
        log_bytes = (big / "train.log").stat().st_size - log_before
        for name, p in (("ui1024", ui_big), ("ui8", ui_small)):
            if p.poll() is not None:
                raise SystemExit(f"the {name} console exited early with {p.returncode}")
        state = json.loads((big / "state.json").read_text())
        lines = (big / "train.log").read_bytes().count(b"\n")
        ranks = json.loads((big / "ranks.json").read_text())["ranks"]
        steps_kept = sum(1 for _ in open(big / "metrics.jsonl"))
        jl_big = json_latency(base, big.name, env, args.json_runs)
        jl_small = json_latency(base, small.name, env, args.json_runs)
        w_big, w_small = RunWatcher(rundir.RunDir(big)), RunWatcher(rundir.RunDir(small))
        poll_big = timings(lambda: w_big.poll(with_gpu=False), 20)
        poll_small = timings(lambda: w_small.poll(with_gpu=False), 20)
        node_trees = {"this code": REPO, **({f"baseline {args.baseline}": tree} if args.baseline else {})}
        node_cost, lines_cost = node_read_cost(node_trees, big, env, 15.0, 5)
        panel, snap = panel_lines(base, big, env)
        stop.set()
        end_processes(procs)
        procs = []
        cli(base, "kill", big.name, env=env)  # the stress run has the machine to itself
        stress = runner_only(base, work, env, args.stress_step_s, 30.0) if args.stress_step_s else None
    finally:
        stop.set()
        if runner_pid and psutil.pid_exists(runner_pid):
            subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "kill", str(big.name), "--runs-dir", str(base)],
                           cwd=REPO, env=env, capture_output=True, timeout=120)
        end_processes(procs)
        shutil.rmtree(work, ignore_errors=True)

    ms = lambda xs: f"{statistics.median(xs) * 1000:.0f} / {p99(xs) * 1000:.0f}"  # noqa: E731
    print("## Scale: a 128-node, 1,024-GPU job played into one run directory\n")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"1-minute load average {load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end. "
          f"Command: `.venv/bin/python bench/bench_scale.py"
          f"{'' if args.seconds == 60 else f' --seconds {args.seconds:g}'}"
          f"{'' if args.step_s == 4 else f' --step-s {args.step_s:g}'}"
          f"{f' --baseline {args.baseline}' if args.baseline else ''}`\n")
    print(f"The job: {NODES * GPUS} ranks each printing a Megatron iteration line every {args.step_s:g} s "
          f"({NODES * GPUS / args.step_s:.0f} lines/s, {log_bytes / args.seconds / 1024:.0f} KiB/s measured over the "
          f"window), {NODES} agent files rewritten every second. Everything below ran at the same time.\n")
    print("### The runner keeps up\n")
    r = cpu["runner"]
    print(f"| runner of the 1,024-GPU run | CPU share | CPU/s p99 | RSS median | ingest lag median / max |")
    print("|---|---|---|---|---|")
    print(f"| `python -m moeconsole.runner.supervisor` | {r['cpu_share']:.2f}% | {r['cpu_p99']:.2f}% | {r['rss_median']:.1f} MiB | "
          f"{statistics.median(lags) if lags else float('nan'):.0f} / {max(lags) if lags else float('nan'):.0f} bytes |")
    print(f"\nAt the end: {lines:,} log lines read, {steps_kept} steps in metrics.jsonl (one per step; "
          f"the rank that printed it first), {len(ranks)} ranks with their latest step time in ranks.json, "
          f"`state.json` ingest offset {state['ingest']['offset']:,} of {state['ingest']['size']:,} bytes. "
          f"The agents' simulator used {cpu['agents']['cpu_share']:.1f}% of a core.\n")
    if stress:
        print(f"Headroom: the runner alone on the same job at one step every {args.stress_step_s:g} s "
              f"({stress['lines_s']:.0f} lines/s, {stress['kib_s']:.0f} KiB/s) over 30 s: CPU {stress['cpu']:.1f}% "
              f"of a core, ingest lag median {stress['lag_median']:.0f} / max {stress['lag_max']:,} bytes.\n")
    print("### Attached UI and --json\n")
    print("| | CPU share | CPU/s p99 | RSS median |")
    print("|---|---|---|---|")
    rows = [("`moeconsole attach` 1,024 GPUs (128 nodes)", cpu["ui1024"]), ("`moeconsole attach` 8 GPUs", cpu["ui8"])]
    if args.baseline:
        rows += [(f"baseline {args.baseline}: `attach` 1,024 GPUs", cpu["base1024"]),
                 (f"baseline {args.baseline}: `attach` 8 GPUs", cpu["base8"])]
    if "nvitop" in cpu:
        rows.append(("`nvitop --monitor full --interval 1`, 8 GPUs (peer)", cpu["nvitop"]))
    for name, c in rows:
        print(f"| {name} | {c['cpu_share']:.2f}% | {c['cpu_p99']:.2f}% | {c['rss_median']:.1f} MiB |")
    print("\nTerminal output over the same window (bytes a second each wrote to its pty): "
          + "; ".join(f"{name} {bps:,.0f}" for name, bps in (
              [("1,024 GPUs", out_bps["ui1024"]), ("8 GPUs", out_bps["ui8"])]
              + ([(f"baseline {args.baseline} 1,024 GPUs", out_bps["base1024"]),
                  (f"baseline {args.baseline} 8 GPUs", out_bps["base8"])] if args.baseline else [])
              + ([("nvitop", out_bps["nvitop"])] if "nvitop" in out_bps else [])))
          + (f"; this code / baseline at 1,024 GPUs {out_bps['ui1024'] / out_bps['base1024']:.2f}x"
             if args.baseline and out_bps.get("base1024") else "") + ".")
    print("\nWhere each console's CPU went (thread CPU over the same window, shares of a core): "
          + "; ".join(f"{name} main thread {s['main']:.2f}%, poll thread (its busiest other) {s['busiest']:.2f}%, "
                      f"the rest {s['others']:.2f}%"
                      for name, key in (("1,024 GPUs", "ui1024"), ("8 GPUs", "ui8"),
                                        (f"baseline {args.baseline} 1,024 GPUs", "base1024"),
                                        (f"baseline {args.baseline} 8 GPUs", "base8"))
                      if (s := cpu.get(key, {}).get("threads"))) + ".")
    if "nvitop" in cpu:
        n8 = cpu["nvitop"]["cpu_share"]
        r8, r1024 = cpu["ui8"]["cpu_share"] / n8, cpu["ui1024"]["cpu_share"] / n8
        print(f"\nAgainst nvitop at 8 GPUs: console at 8 GPUs {r8:.2f}x (goal at most 1x: "
              f"{'met' if r8 <= 1 else 'NOT met'}); console at 1,024 GPUs {r1024:.2f}x (goal at most 1.5x: "
              f"{'met' if r1024 <= 1.5 else 'NOT met'}).")
    anchor = "nvitop" if "nvitop" in cpu else "ui8"
    w = max(1, int(args.window))
    print(f"\nWindow by window ({w} s windows, all processes over the same seconds; median and range of the "
          f"ratios against {'nvitop at 8 GPUs' if anchor == 'nvitop' else 'the 8-GPU console'}):\n")
    print("| console | CPU share, median of windows (range) | ratio, median of windows (range) |")
    print("|---|---|---|")
    windowed = [("1,024 GPUs", "ui1024"), ("8 GPUs", "ui8")] + \
        ([(f"baseline {args.baseline}, 1,024 GPUs", "base1024"), (f"baseline {args.baseline}, 8 GPUs", "base8")]
         if args.baseline else [])
    for name, key in windowed:
        shares = window_shares(cpu[key]["per_second"], w)
        ratios = [a / b for a, b in zip(shares, window_shares(cpu[anchor]["per_second"], w)) if b > 0]
        print(f"| {name} | {statistics.median(shares):.2f}% ({min(shares):.2f}-{max(shares):.2f}) | "
              f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) |" if ratios else
              f"| {name} | {statistics.median(shares):.2f}% | n/a |")
    if args.baseline:
        pairs = [("1,024 GPUs", "ui1024", "base1024"), ("8 GPUs", "ui8", "base8")]
        print("\n" + "; ".join(
            f"this code / baseline, {name}: {cpu[a]['cpu_share'] / cpu[b]['cpu_share']:.2f}x over the whole window, "
            f"{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f}) window by window"
            for name, a, b in pairs
            if (r := [x / y for x, y in zip(window_shares(cpu[a]["per_second"], w), window_shares(cpu[b]["per_second"], w))
                      if y > 0])) + ".")
    print(f"\n| | 1,024 GPUs median / p99 ms | 8 GPUs median / p99 ms | ratio of medians |")
    print("|---|---|---|---|")
    print(f"| `moeconsole --json RUN --once --no-gpu` (new process, {args.json_runs} calls) | {ms(jl_big)} | "
          f"{ms(jl_small)} | {statistics.median(jl_big) / statistics.median(jl_small):.2f}x |")
    print(f"| `RunWatcher.poll` in process (20 polls: {NODES} agent files + ranks.json) | {ms(poll_big)} | "
          f"{ms(poll_small)} | {statistics.median(poll_big) / statistics.median(poll_small):.1f}x |")
    def same_rounds(cost: dict[str, list[float]]) -> str:
        """Median (range) of each tree, and of this code / baseline round by round."""
        text = "; ".join(f"{name} {statistics.median(xs):.2f} ms ({min(xs):.2f}-{max(xs):.2f})" for name, xs in cost.items())
        if args.baseline:
            ratios = [a / b for a, b in zip(cost["this code"], cost[f"baseline {args.baseline}"]) if b]
            if ratios:
                text += (f"; this code / baseline {statistics.median(ratios):.2f}x round by round "
                         f"({min(ratios):.2f}-{max(ratios):.2f})")
        return text
    print(f"\nThe node reading of a console's timer poll alone (`NodeReader.read` once a second on the live run, "
          f"as the run screen reads them, 15 s, 5 rounds{', the trees side by side' if args.baseline else ''}): "
          f"CPU per second of wall time, {same_rounds(node_cost)}.")
    print(f"\nThe GPU panel's summary lines of those nodes (160 columns, 16 lines, as the panel draws them, after each "
          f"read, the same processes): CPU per second of wall time, {same_rounds(lines_cost)}.")
    print("\nThe 8-GPU console is the reference for the 1,024-GPU one in the same run (same machine load); "
          "the 8-GPU goal against nvitop itself is tracked by `bench/bench_ui.py` (docs/benchmarks-ui.md). "
          "On a busy machine both consoles and nvitop move by a few tenths of a percent of a core.")
    print("\n### What the console shows first\n")
    first = [(n["host"], n["health"]["problems"], n["health"]["why"]) for n in snap["nodes"][:4]]
    print(f"`--json` `nodes`, first four of {len(snap['nodes'])} "
          f"({sum(len(n['gpu']['gpus']) for n in snap['nodes'])} GPUs): "
          + "; ".join(f"{h} {p} {w}" for h, p, w in first) + "\n")
    print("The GPU panel at 160x48 (one summary line per node, worst first; the rest counted):\n")
    print("    " + "\n    ".join(panel) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
