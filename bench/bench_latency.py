"""Benchmark: line written -> visible on screen. Prints a Markdown section.

    .venv/bin/python bench/bench_latency.py [--seconds 30] [--rate 5] [--phases quiet,loaded]

A live demo-like run (a writer process plays the runner: state.json with its live PID, one
metric record, naming its line's offset as the runner's do, and one log line per step) is shown
by real terminal apps, each in its own pseudo-terminal (160x48): ``moeconsole attach RUN`` (its
log tail pane), and in the same run ``tail -F train.log`` and toolong (``tl train.log``, when
installed: ``make bench`` puts it in ``.venv-bench``). This process appends a log line carrying a
unique mark at a steady rate and reads every pty; the latency of a mark is the time from its write
to its first appearance in an app's output (escape sequences stripped). p50 / p99 / max per app,
in the same run. The second phase repeats it with both cores kept busy (stress-ng), as on a
loaded training host.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_ui import spawn_in_pty  # noqa: E402
from benchlib import end_processes  # noqa: E402

CSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]")
MARK = re.compile(rb"mk(\d{6})z")
# The console shows a metric line of the log as a table row: "  step  loss  —  —".
ROW = re.compile(rb"(?m)^[ \t]*(\d+)[ \t]+\d+(?:\.\d+)?[ \t]+\xe2\x80\x94")
GOTO = re.compile(rb"\x1b\[[0-9;]*[Hf]")

STATE_KEEPER = """
import json, os, sys, time
run = sys.argv[1]
start = time.time()
while True:
    tmp = os.path.join(run, ".state.tmp")
    with open(tmp, "w") as f:
        json.dump({"v": 1, "run_id": os.path.basename(run), "name": "latency", "status": "running",
                   "attempt": 1, "restarts": 0, "step": 0, "max_steps": 100000, "started_at": start,
                   "runner": {"pid": os.getpid(), "host": os.uname().nodename}, "pids": []}, f)
    os.replace(tmp, os.path.join(run, "state.json"))
    time.sleep(1.0)
"""


def toolong_cmd() -> list[str] | None:
    for cand in (REPO / ".venv-bench" / "bin" / "tl", shutil.which("tl")):
        if cand and Path(cand).exists():
            return [str(cand)]
    return None


def reader(name: str, fd: int, seen: dict[str, dict[int, float]], stop: threading.Event) -> None:
    """Read the app's terminal; note when each mark first shows (escape sequences stripped, a
    rolling tail kept so a mark split across two reads is still found)."""
    buf = b""
    while not stop.is_set():
        try:
            data = os.read(fd, 65536)
        except OSError:
            return
        if not data:
            return
        now = time.monotonic()
        buf = (buf + data)[-4096:]
        text = CSI.sub(b"", GOTO.sub(b"\n", buf)).replace(b"\r", b"\n")
        for pattern in (MARK, ROW):
            for m in pattern.finditer(text):
                seen[name].setdefault(int(m.group(1)), now)


def summarise(lat: list[float]) -> str:
    if not lat:
        return "| — | — | — | 0 |"
    s = sorted(lat)
    p99 = s[min(len(s) - 1, int(round(0.99 * (len(s) - 1))))]
    return f"| {statistics.median(s) * 1000:.0f} ms | {p99 * 1000:.0f} ms | {s[-1] * 1000:.0f} ms | {len(s)} |"


def load_processes() -> tuple[list[subprocess.Popen], str]:
    """Both cores kept busy, as on a loaded training host: stress-ng when installed, else one
    busy Python loop per core."""
    n = os.cpu_count() or 2
    if shutil.which("stress-ng"):
        return [subprocess.Popen(["stress-ng", "--cpu", str(n), "--quiet"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL, start_new_session=True)], f"stress-ng --cpu {n}"
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)], \
        f"{n} busy Python loops"


def measure(seconds: float, rate: float, warmup: float, loaded: bool) -> tuple[dict, dict, bool, str]:
    """(seen, written, toolong present, load description) for one phase."""
    work = Path(tempfile.mkdtemp(prefix="mclat-"))
    procs: list[subprocess.Popen] = []
    load: list[subprocess.Popen] = []
    what = "quiet"
    stop = threading.Event()
    seen: dict[str, dict[int, float]] = {}
    written: dict[int, float] = {}
    tl = toolong_cmd()
    try:
        base = work / "runs"
        run = base / "20260101-000000-latency-0001"
        (run / "crashes").mkdir(parents=True)
        (run / "exits").mkdir()
        log = run / "train.log"
        log.write_text("")
        (run / "metrics.jsonl").write_text("")
        env = {**os.environ, "TERM": "xterm-256color", "PYTHONPATH": str(REPO), "TEXTUAL_ANIMATIONS": "none"}
        env.pop("NO_COLOR", None)
        keeper = subprocess.Popen([sys.executable, "-c", STATE_KEEPER, str(run)], env=env)
        procs.append(keeper)
        deadline = time.time() + 10
        while not (run / "state.json").exists() and time.time() < deadline:
            time.sleep(0.05)
        apps = {"moeconsole attach": [sys.executable, "-m", "moeconsole.console.cli", "attach", run.name, "--runs-dir",
                                      str(base)],
                "tail -F": ["tail", "-n", "0", "-F", str(log)]}
        if tl:
            apps["toolong"] = [*tl, str(log)]
        for name, argv in apps.items():
            p, fd = spawn_in_pty(argv, env, 160, 48)
            procs.append(p)
            seen[name] = {}
            threading.Thread(target=reader, args=(name, fd, seen, stop), daemon=True).start()
        time.sleep(warmup)
        if loaded:
            load, what = load_processes()
            time.sleep(1.0)
        period = 1.0 / rate
        n = 0
        t_end = time.monotonic() + seconds
        next_t = time.monotonic()
        with open(log, "ab") as f, open(run / "metrics.jsonl", "a") as mf:
            while time.monotonic() < t_end:
                n += 1
                loss = 2.0 + 1.0 / n
                # the record names its log line by offset, as the runner's do (log_at): the tail
                # shows the line's columns from it
                mf.write(json.dumps({"v": 1, "t": time.time(), "attempt": 1, "step": n, "loss": loss,
                                     "log_at": f.tell()}) + "\n")
                mf.flush()
                f.write(f"{{'loss': {loss:.4f}, 'step': {n}, 'note': 'mk{n:06d}z'}}\n".encode())
                f.flush()
                written[n] = time.monotonic()
                next_t += period
                time.sleep(max(0.0, next_t - time.monotonic()))
        time.sleep(2.0)
        for name, p in zip(apps, procs[1:]):
            if p.poll() is not None:
                raise SystemExit(f"{name} exited early with {p.returncode}")
    finally:
        stop.set()
        end_processes(load)
        end_processes(procs)
        shutil.rmtree(work, ignore_errors=True)
    return seen, written, bool(tl), what


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rate", type=float, default=5.0, help="lines per second")
    ap.add_argument("--warmup", type=float, default=6.0)
    ap.add_argument("--phases", default="quiet,loaded", help="quiet, loaded (both cores busy) or both")
    args = ap.parse_args()
    print("# Line written -> on screen\n")
    for phase in [p.strip() for p in args.phases.split(",") if p.strip()]:
        seen, written, tl, what = measure(args.seconds, args.rate, args.warmup, phase == "loaded")
        print(f"**{phase}** ({what}): {len(written)} log lines written at {args.rate:g}/s over {args.seconds:g} s "
              "to a live run's train.log; latency from the write to the line's first appearance in each app's "
              "pseudo-terminal output, all apps in the same run." + ("" if tl else " toolong not installed: row left out.")
              + "\n")
        print("| app | p50 | p99 | max | lines seen |")
        print("|---|---:|---:|---:|---:|")
        for name in seen:
            lat = [seen[name][i] - t for i, t in written.items() if i in seen[name]]
            print(f"| {name} {summarise(lat)}")
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
