"""Opening a big past log in a real terminal: `moeconsole attach LOG` against toolong (`tl LOG`).

Run from the repository root:

    .venv/bin/python bench/bench_open.py [--steps 1000000] [--runs 3] [--tl PATH] [--baseline DIR]

It writes the ms-swift log of bench_parse (transformers 5.x dicts behind tqdm redraws, a save every
100 steps; 1M steps is about 420 MB), then opens it, alternately, with `moeconsole attach LOG` and
with toolong, each in its own tmux server (140x40), reading the screen every 20 ms with
capture-pane. Marks, from the moment the command is started:

- first text: the first character of the log (or, for moeconsole, of its run screen) on screen;
- newest steps: moeconsole's status line shows the newest step (``step 1,000,000/1,000,000``) with
  its loss chart; toolong shows the end of the file (its ``TAIL`` mode, once it has scanned it);
- whole history: moeconsole's progress bar is gone (every step read, the chart covers the run);
  toolong has finished scanning (the same moment as its tail);
- peak RSS of the process (VmHWM from /proc), read just before it is quit.

toolong is installed (``pip install toolong``) in a separate virtualenv, never in the project's;
``--tl`` names its ``tl`` script (default: /tmp/tl-venv/bin/tl, created when missing). Prints a
Markdown section with medians and min-max. ``--baseline DIR``: a checkout of older code (e.g.
``git archive main | tar -x -C DIR``) opened the same way in the same rounds, so before and after
are measured against toolong in one run; each run also gives the whole history as a ratio of
toolong's scan in the same round.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from bench_parse import wait_quiet, write_swift_log  # noqa: E402

PY = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable
POLL_S = 0.02


class Tmux:
    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.name, *args], capture_output=True, text=True, timeout=20).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "b")


def _hwm_mib(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def measure(cmd: str, newest, history, first, quit_keys: list[str], timeout: float = 300.0) -> dict:
    """Times (s from start) of the first text, the newest steps and the whole history; peak RSS."""
    tmux = Tmux(f"bench-open-{os.getpid()}-{time.monotonic_ns()}")
    out: dict = {}
    try:
        t0 = time.perf_counter()
        tmux("-f", "/dev/null", "new-session", "-d", "-s", "b", "-x", "140", "-y", "40", f"exec {cmd}")
        pid = int(tmux("display-message", "-p", "-t", "b", "#{pane_pid}").strip() or 0)
        deadline = t0 + timeout
        while time.perf_counter() < deadline:
            screen = tmux.screen()
            now = time.perf_counter() - t0
            if "first_s" not in out and first(screen):
                out["first_s"] = now
            if "newest_s" not in out and newest(screen):
                out["newest_s"] = now
            if "newest_s" in out and history(screen, out):
                out["history_s"] = now
                break
            time.sleep(POLL_S)
        time.sleep(0.5)
        out["rss_mib"] = _hwm_mib(pid)
        for key in quit_keys:
            tmux("send-keys", "-t", "b", key)
    finally:
        tmux("kill-server")
    return out


def moeconsole_marks(steps: int):
    want = f"step {steps:,}/{steps:,}"

    def first(screen: str) -> bool:
        return "IMPORTED" in screen

    def newest(screen: str) -> bool:
        return want in screen and "loss" in screen

    def history(screen: str, out: dict) -> bool:
        if "reading history" in screen:
            out["saw_progress"] = True
        return "reading history" not in screen and want in screen

    return first, newest, history


def toolong_marks():
    def first(screen: str) -> bool:
        return "{'loss'" in screen or "[INFO" in screen

    def newest(screen: str) -> bool:
        return "TAIL" in screen

    def history(screen: str, out: dict) -> bool:
        return "TAIL" in screen and "Scanning" not in screen

    return first, newest, history


def ensure_toolong(tl: str) -> str:
    if Path(tl).exists():
        return tl
    venv = Path(tl).parent.parent
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "toolong"], check=True)
    return tl


def spread(xs: list[float]) -> str:
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tl", default="/tmp/tl-venv/bin/tl")
    ap.add_argument("--baseline", default=None, help="a checkout of older code, measured in the same rounds")
    args = ap.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("bench_open needs tmux")
    tl = ensure_toolong(args.tl)
    tmp = Path(tempfile.mkdtemp(prefix="bench-open-"))
    try:
        log = tmp / "train.log"
        lines = write_swift_log(log, args.steps)
        size_mb = log.stat().st_size / 1e6
        runs_dir = tmp / "runs"
        def mc_cmd(tree: Path, runs: Path) -> str:
            # run from the tree: ``python -m`` puts the working directory before PYTHONPATH (from
            # this repository a baseline would import this code)
            return (f"env -C {shlex.quote(str(tree))} PYTHONPATH={shlex.quote(str(tree))} {shlex.quote(PY)} "
                    f"-m moeconsole.console.cli attach "
                    f"{shlex.quote(str(log))} --runs-dir {shlex.quote(str(runs))}")
        tl_cmd = f"{shlex.quote(tl)} {shlex.quote(str(log))}"
        results: dict[str, list[dict]] = {"moeconsole": [], "toolong": []}
        if args.baseline:
            results = {"moeconsole": [], "moeconsole (baseline)": [], "toolong": []}
        t_start = time.time()
        busy: list[float] = []
        for _ in range(args.runs):
            busy.append(wait_quiet(120))   # other people's work shares these cores: wait for a lull
            results["moeconsole"].append(measure(mc_cmd(REPO, runs_dir / "this"),
                                                 *_ordered(moeconsole_marks(args.steps)), ["q"]))
            if args.baseline:
                busy.append(wait_quiet(120))
                results["moeconsole (baseline)"].append(measure(mc_cmd(Path(args.baseline), runs_dir / "baseline"),
                                                                *_ordered(moeconsole_marks(args.steps)), ["q"]))
            busy.append(wait_quiet(120))
            results["toolong"].append(measure(tl_cmd, *_ordered(toolong_marks()), ["C-q", "C-c"]))
        took = time.time() - t_start
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("# Opening a big past log\n")
    print(f"Machine: {os.uname().machine}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
          f"1-minute load average {os.getloadavg()[0]:.2f} at the end. {args.runs} runs of each, "
          f"alternating, {took:.0f} s; before each run the bench waits (up to 120 s) for 3 s with the "
          f"machine at most 10% busy (busy before the runs: median {statistics.median(busy) * 100:.0f}%, "
          f"max {max(busy) * 100:.0f}%).\n")
    print(f"The log: ms-swift 4.x output of {args.steps:,} steps ({lines:,} lines, {size_mb:.0f} MB: "
          f"transformers 5.x dicts behind tqdm redraws, a save every 100 steps). Each tool in its own "
          f"tmux server (140x40), the screen read every {POLL_S * 1000:.0f} ms; times from starting "
          f"the command, medians (min-max).\n")
    print("| tool | first text s | newest steps s | whole history s | peak RSS MiB |")
    print("|---|---:|---:|---:|---:|")
    for tool, rs in results.items():
        print(f"| {tool} | {spread([r.get('first_s') for r in rs])} | {spread([r.get('newest_s') for r in rs])} "
              f"| {spread([r.get('history_s') for r in rs])} | {spread([r.get('rss_mib') for r in rs])} |")
    mc, tlr = results["moeconsole"], results["toolong"]
    try:
        ratio = statistics.median([r["newest_s"] for r in tlr]) / statistics.median([r["newest_s"] for r in mc])
        print(f"\nNewest steps on screen: moeconsole {ratio:.1f}x sooner than toolong shows the end of "
              f"the file. moeconsole's progress bar was seen in {sum(1 for r in mc if r.get('saw_progress'))} "
              f"of {len(mc)} runs.")
    except (KeyError, ZeroDivisionError, statistics.StatisticsError):
        print("\nA tool did not reach a mark in time (see '-' above).")
    for tool in results:
        if tool == "toolong":
            continue
        ratios = [r["history_s"] / t["history_s"] for r, t in zip(results[tool], tlr)
                  if r.get("history_s") and t.get("history_s")]
        if ratios:
            print(f"\nWhole history, {tool}: {statistics.median(ratios):.2f}x toolong's scan of the same round "
                  f"(median; {', '.join(f'{x:.2f}' for x in ratios)}).")
    print("\nWhat the marks mean: moeconsole shows the newest steps (status line and loss chart) from "
          "the last 64 KiB of the file (then its last 512 KiB), then reads the whole history in a background thread "
          "(`moeconsole.runner.ingest.history`, the bulk engine in 2 MiB chunks) with a progress bar in the "
          "status line; toolong indexes every line break before it can show the end of the file.")


def _ordered(marks):
    first, newest, history = marks
    return newest, history, first


if __name__ == "__main__":
    main()
