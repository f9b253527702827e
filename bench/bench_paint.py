"""First paint in a real terminal: `moeconsole attach RUN` and `moeconsole attach LOG` (a small log)
against nvitop's first frame and a baseline revision, in the same run.

    .venv/bin/python bench/bench_paint.py [--baseline REV] [--runs 5] [--nvitop PATH]

Each command starts in its own tmux server (140x40) on 8 fake GPUs (tests/fakes' NVML library);
the screen is read every 10 ms with capture-pane. The mark is the moment the user sees the data:
- `attach RUN` (a running run of 60 of 100 steps): the status line shows `step 60/100`;
- `attach LOG` (ms-swift output of 3,000 steps, 0.8 MB): the status line shows `step 3,000/3,000`;
- `nvitop` (anchor): its first GPU row (`140.4GiB`).
Times from starting the command, and the CPU seconds the process had used when the mark showed
(all its threads, from /proc: a figure the machine's load moves far less than the wall time);
medians (min-max) and each median over nvitop's. Rounds
alternate the order; before each, the bench waits (up to 30 s) for 3 s with the machine at most
10% busy. ``--baseline`` runs the same commands from ``git archive REV`` (before/after in one run).

    .venv/bin/python bench/bench_paint.py --at-frame [--baseline REV] [--runs 5]

The CPU at the moment the run screen's first frame is drawn, read in the process
(``bench/paint_probe.py`` hooks ``RunScreen._first_frame_drawn``): the look at the terminal above
comes late on a loaded machine and then also counts the work that follows the frame (the full
poll, the key footer), which a change that moves work after the frame makes look worse.

    .venv/bin/python bench/bench_paint.py --tail-lines [--lines 20000]

The log tail's cost per new line, in this process: a metric line parsed by the one line parser
(a log without a runner; before the runner's records named their lines, every run's tail) against
the same line shown from the runner's record of it (``LineRecords`` fed the record, the cells made
from it). Each line is new (a live tail's lines are; the parse cache only helps a line seen before).
"""
from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from bench_open import Tmux  # noqa: E402
from bench_parse import wait_quiet  # noqa: E402

POLL_S = 0.01
PY = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (all its threads), from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def first_seen(cmd: str, mark: str, timeout: float = 30.0) -> tuple[float | None, float | None]:
    """(seconds from starting ``cmd`` until ``mark`` is on its screen, the CPU seconds the
    command's process had used by then); (None, None) when not within timeout. The CPU figure
    moves little with the machine's load, the wall time a lot."""
    tmux = Tmux(f"bench-paint-{os.getpid()}-{time.monotonic_ns()}")
    try:
        t0 = time.perf_counter()
        tmux("-f", "/dev/null", "new-session", "-d", "-s", "b", "-x", "140", "-y", "40", f"exec {cmd}")
        pid = None
        while time.perf_counter() - t0 < timeout:
            if pid is None:
                shown = tmux("display-message", "-p", "-t", "b", "#{pane_pid}").strip()
                pid = int(shown) if shown.isdigit() else None
            if mark in tmux.screen():
                wall = time.perf_counter() - t0
                return wall, (cpu_seconds(pid) if pid is not None else None)
            time.sleep(POLL_S)
        return None, None
    finally:
        tmux("send-keys", "-t", "b", "q")
        time.sleep(0.2)
        tmux("kill-server")


def at_frame(cmd: str, out: Path, timeout: float = 30.0) -> tuple[float | None, float | None, float | None]:
    """``cmd`` (``paint_probe.py``'s) in a terminal until the run screen's first frame: (the
    process's CPU seconds then, its main thread's, seconds from the interpreter's start); Nones
    when it did not come within timeout."""
    import json
    out.unlink(missing_ok=True)
    tmux = Tmux(f"bench-paint-{os.getpid()}-{time.monotonic_ns()}")
    try:
        t0 = time.perf_counter()
        tmux("-f", "/dev/null", "new-session", "-d", "-s", "b", "-x", "140", "-y", "40", f"exec {cmd}")
        while time.perf_counter() - t0 < timeout:
            if out.exists():
                got = json.loads(out.read_text())
                return got["cpu"], got["main"], got["wall"]
            time.sleep(POLL_S)
        return None, None, None
    finally:
        tmux("kill-server")


def spread(xs: list) -> str:
    xs = [x for x in xs if x is not None]
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})" if xs else "-"


def tail_cost(n: int) -> None:
    """Microseconds per new log-tail line: parsed, against shown from the runner's record."""
    import json
    from moeconsole.console.logtail import MetricColumns
    from moeconsole.runner.ingest.live import LiveReader
    from moeconsole.runner.rundir.seriesfile import LineRecords, with_log_at
    from tests.ingest.ingest_samples import megatron_line, swift_hf_dict
    cases = {"ms-swift dict": [swift_hf_dict(i, n, 2.0 - i / n, 0.8) for i in range(1, n + 1)],
             "Megatron": [megatron_line(i, n, 2.0 - i / n, 0.8) for i in range(1, n + 1)]}
    print("### Log tail: the cost of a new line, parsed or from the runner's record\n")
    print(f"Command: `.venv/bin/python bench/bench_paint.py --tail-lines --lines {n}`. {n:,} distinct lines of "
          "each format; microseconds per line shown anew (each line new, 40 at a time: a full tail pane), and "
          "per poll that adds one line under 39 shown before; best of 3.\n")
    print("| lines | parsed (no runner) | from the record | parsed / record |")
    print("|---|---:|---:|---:|")
    for name, lines in cases.items():
        data = "".join(line + "\n" for line in lines).encode()
        recs, at = [], 0
        for batch in LiveReader().feed_batches(data, 0):   # the runner's records, stamped as it writes them
            assert batch.records is not None and batch.at is not None
            for rec, off in zip(batch.records, batch.at.tolist()):
                raw = rec if isinstance(rec, bytes) else (json.dumps({"v": 1, **rec}) + "\n").encode()
                recs.append(json.loads(with_log_at(raw, off)))
        offsets = []
        for line in lines:
            offsets.append(at)
            at += len(line.encode()) + 1
        assert len(recs) == len(lines)
        best_p = best_r = float("inf")
        for _ in range(3):
            cols = MetricColumns()
            t0 = time.perf_counter()
            for i in range(0, n, 40):
                cols.rows(lines[i:i + 40], 40)
            best_p = min(best_p, (time.perf_counter() - t0) / n * 1e6)
            book, cols = LineRecords(keep=n), MetricColumns()
            t0 = time.perf_counter()
            for i in range(0, n, 40):
                for rec in recs[i:i + 40]:
                    book.feed(rec)
                shown = book.of(offsets[i:i + 40])
                cols.rows(lines[i:i + 40], 40, shown)
            best_r = min(best_r, (time.perf_counter() - t0) / n * 1e6)
        print(f"| {name}, each line new | {best_p:.1f} µs | {best_r:.1f} µs | {best_p / best_r:.1f}x |")
        # a live tail: each poll one new line at the bottom, the 39 above it shown before
        m = min(n, 4000)
        best_p = best_r = float("inf")
        for _ in range(3):
            cols = MetricColumns()
            t0 = time.perf_counter()
            for i in range(40, m):
                cols.rows(lines[i - 40:i], 40)
            best_p = min(best_p, (time.perf_counter() - t0) / (m - 40) * 1e6)
            book, cols = LineRecords(keep=n), MetricColumns()
            for rec in recs[:40]:
                book.feed(rec)
            t0 = time.perf_counter()
            for i in range(40, m):
                book.feed(recs[i - 1])
                cols.rows(lines[i - 40:i], 40, book.of(offsets[i - 40:i]))
            best_r = min(best_r, (time.perf_counter() - t0) / (m - 40) * 1e6)
        print(f"| {name}, a poll with one new line (40 shown) | {best_p:.1f} µs | {best_r:.1f} µs | "
              f"{best_p / best_r:.1f}x |")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", help="git revision to compare against (its code, exported)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--nvitop", default=str(REPO / ".venv-bench" / "bin" / "nvitop"))
    ap.add_argument("--tail-lines", action="store_true", help="only the log tail's cost per line")
    ap.add_argument("--lines", type=int, default=20000)
    ap.add_argument("--at-frame", action="store_true",
                    help="the CPU at the run screen's first frame, read in the process (paint_probe.py)")
    args = ap.parse_args()
    if args.tail_lines:
        tail_cost(args.lines)
        return 0
    from bench.bench_ingest import export
    from tests.console.conftest import write_run
    from tests.fakes.nvml import build_fake_nvml, fake_env, write_scenario
    from tests.ingest.test_ingest_history import swift_log
    work = Path(tempfile.mkdtemp(prefix="mcbench-paint-"))
    base = work / "runs"
    base.mkdir()
    run_id = "20260101-000000-bench-0001"
    write_run(base, run_id, status="running", runner_pid=os.getpid())
    log = work / "train.log"
    swift_log(log, 3000)
    env = fake_env(build_fake_nvml(work / "nvml"), write_scenario(work / "scenario.txt", 8))
    envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()
                    if k in ("LD_LIBRARY_PATH", "FAKE_NVML_SCENARIO"))
    trees = [("this code", REPO)]
    if args.baseline:
        trees.append((f"baseline ({args.baseline})", export(args.baseline, work / "baseline")))
    if args.at_frame:
        return at_frame_rounds(trees, envs, base, run_id, log, work, args.runs)
    cases: list[tuple[str, str, str]] = []
    for name, tree in trees:
        # -u PYTHONDONTWRITEBYTECODE: the warm-up writes the .pyc files every user has (else each
        # run compiles every module of the tree: the baseline's export has none)
        cli = f"env -u MOECONSOLE_RUNS_DIR -u PYTHONDONTWRITEBYTECODE {envs} PYTHONPATH={shlex.quote(str(tree))} {shlex.quote(PY)} -P -m moeconsole"
        cases.append((f"`attach RUN`, {name}", f"{cli} attach {run_id} --runs-dir {shlex.quote(str(base))}",
                      "step 60/100"))
        cases.append((f"`attach LOG` (3,000 steps), {name}", f"{cli} attach {shlex.quote(str(log))} --runs-dir "
                      f"{shlex.quote(str(base))}", "step 3,000/3,000"))
    nvitop = args.nvitop if Path(args.nvitop).is_file() else None
    if nvitop:
        cases.append(("`nvitop` (anchor)", f"env TERM=xterm-256color {envs} {shlex.quote(nvitop)}", "140.4GiB"))
    else:
        print(f"(nvitop not found at {args.nvitop}: `make bench` builds .venv-bench; its row is left out)",
              file=sys.stderr)
    for _, cmd, mark in cases:   # warm the page cache and the .pyc files
        first_seen(cmd, mark)
    times: dict[str, list] = {c[0]: [] for c in cases}
    cpus: dict[str, list] = {c[0]: [] for c in cases}
    busy: list[float] = []
    load_before = os.getloadavg()[0]
    t_start = time.time()
    for r in range(args.runs):
        for label, cmd, mark in (cases if r % 2 == 0 else cases[::-1]):
            busy.append(wait_quiet(30))
            wall, cpu = first_seen(cmd, mark)
            times[label].append(wall)
            cpus[label].append(cpu)
    took = time.time() - t_start
    cmdline = " ".join(["bench/bench_paint.py", "--runs", str(args.runs)] +
                       (["--baseline", args.baseline] if args.baseline else []))
    print("### First paint: attaching to a run or a small log, against nvitop's first frame\n")
    print(f"Command: `.venv/bin/python {cmdline}` ({took:.0f} s). 8 fake GPUs (tests/fakes NVML), each command in "
          f"its own tmux server (140x40), the screen read every {POLL_S * 1000:.0f} ms; {args.runs} rounds, order "
          f"alternating; busy before the runs: median {statistics.median(busy) * 100:.0f}%, max "
          f"{max(busy) * 100:.0f}%; load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after. "
          f"Seconds from the start of the command to the data on screen, and the CPU seconds its process "
          f"had used by then (all threads, /proc), median (min-max).\n")
    anchor = statistics.median([x for x in times[cases[-1][0]] if x is not None]) if nvitop else None
    cpu_anchor = statistics.median([x for x in cpus[cases[-1][0]] if x is not None] or [0.0]) if nvitop else None
    print("| command | first paint s | vs nvitop's first frame | CPU s by first paint | CPU vs nvitop's |")
    print("|---|---|---|---|---|")
    for label, xs in times.items():
        ok = [x for x in xs if x is not None]
        ratio = f"{statistics.median(ok) / anchor:.2f}x" if anchor and ok else "-"
        cpu_ok = [x for x in cpus[label] if x is not None]
        cpu_ratio = f"{statistics.median(cpu_ok) / cpu_anchor:.2f}x" if cpu_anchor and cpu_ok else "-"
        print(f"| {label} | {spread(xs)} | {ratio} | {spread(cpus[label])} | {cpu_ratio} |")
    print("\nMarks: `step 60/100` on the run screen's status line; `step 3,000/3,000` for the log (its newest "
          "steps, read from its last 64 KiB); nvitop's first GPU row. Goal: within 0.5 s on an idle machine.")
    return 0


def at_frame_rounds(trees: list[tuple[str, Path]], envs: str, base: Path, run_id: str, log: Path, work: Path,
                    runs: int) -> int:
    """``--at-frame``: each tree's ``attach RUN`` and ``attach LOG`` to the run screen's first
    frame, the CPU read in the process at that moment (``paint_probe.py``); rounds alternate."""
    probe = REPO / "bench" / "paint_probe.py"
    out = work / "frame.json"
    cases = []
    for name, tree in trees:
        cli = (f"env -u MOECONSOLE_RUNS_DIR -u PYTHONDONTWRITEBYTECODE {envs} PYTHONPATH={shlex.quote(str(tree))} "
               f"{shlex.quote(PY)} -P {shlex.quote(str(probe))} {shlex.quote(str(out))}")
        cases.append((f"`attach RUN`, {name}", f"{cli} attach {run_id} --runs-dir {shlex.quote(str(base))}"))
        cases.append((f"`attach LOG` (3,000 steps), {name}",
                      f"{cli} attach {shlex.quote(str(log))} --runs-dir {shlex.quote(str(base))}"))
    for _, cmd in cases:   # warm the page cache and the .pyc files
        at_frame(cmd, out)
    got: dict[str, list[tuple]] = {c[0]: [] for c in cases}
    busy: list[float] = []
    load_before = os.getloadavg()[0]
    t_start = time.time()
    for r in range(runs):
        for label, cmd in (cases if r % 2 == 0 else cases[::-1]):
            busy.append(wait_quiet(30))
            got[label].append(at_frame(cmd, out))
    took = time.time() - t_start
    print("### At the first frame: the CPU the process had used when the run screen drew it\n")
    print(f"Command: `.venv/bin/python bench/bench_paint.py --at-frame --runs {runs}"
          f"{' --baseline ' + trees[1][0].split('(')[1].rstrip(')') if len(trees) > 1 else ''}` ({took:.0f} s). "
          f"Each command in its own tmux server (140x40) through `bench/paint_probe.py`, which writes the process's "
          f"CPU seconds (all threads), its main thread's and the seconds since the probe's first line (after "
          f"the interpreter's start-up) at the "
          f"moment the run screen's first frame is drawn (`RunScreen._first_frame_drawn`), then ends it; "
          f"{runs} rounds, order alternating; busy before the runs: median {statistics.median(busy) * 100:.0f}%, "
          f"max {max(busy) * 100:.0f}%; load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after. "
          f"Median (min-max).\n")
    print("| command | CPU s at the first frame | main thread CPU s | s since the probe's start | CPU vs the first tree's |")
    print("|---|---|---|---|---|")
    firsts: dict[str, float] = {}
    for label, xs in got.items():
        cpu = [x[0] for x in xs if x[0] is not None]
        kind = label.split(",")[0]
        med = statistics.median(cpu) if cpu else None
        if med is not None and kind not in firsts:
            firsts[kind] = med
        ratio = f"{med / firsts[kind]:.2f}x" if med is not None and firsts.get(kind) else "-"
        print(f"| {label} | {spread(cpu)} | {spread([x[1] for x in xs])} | {spread([x[2] for x in xs])} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
