"""Benchmark: the runner (the supervisor of training runs). Prints a Markdown section.

    .venv/bin/python bench/bench_runner.py [--deaths N] [--kill-reps N] [--grace G]
                                                      [--cpu-seconds S]

Everything goes through the real CLI (``python -m moeconsole.console.cli run ... --detach``, ``kill``), the
real detached runner and real processes; times are taken from the outside.

1. Exit detection. One run whose command is a tiny script: it prints a step line, sleeps a
   random 0.1-1.1 s, records ``time.time()`` in a file, and dies (odd attempts by SIGKILL to
   itself, even attempts by ``os._exit(1)``). The recipe restarts it at once (cooldown floor 0,
   tiny backoff, no crash cap), so one run gives N deaths. Each death time is compared with the
   runner's ``attempt_end.detected_at``, the ``t`` of the ``attempt_end`` and ``crash`` events,
   and the next ``attempt_start``. Baseline, measured on the same deaths: a naive supervisor
   thread in this process that learns each leader PID from ``attempt_start`` events and checks
   every leader with ``sleep(1)`` between checks (gone or zombie = dead).
2. Clean kill of a 3-process tree (the leader spawns 2 children; all in the leader's process
   group): once with a tree that exits on SIGTERM, once with one that ignores it (must take the
   grace plus a small epsilon). Timed from the invocation of ``moeconsole kill RUN --grace G`` to
   the ``kill_done`` event, from the runner's ``kill`` event to ``kill_done``, and the CLI's wall
   time. Every PID of the tree is checked to be gone afterwards.
3. CPU and memory of the runner while it supervises the demo (recipes/tiny-moe-cpu.yaml,
   --step_delay 0.15, checkpoints every 25 steps) for S seconds, from psutil ``cpu_times`` deltas.
   Baselines over the same window on the same log: ``tail -F train.log > /dev/null`` and a
   minimal Python follower that reads new bytes every 100 ms (the runner's tail cadence).

Temp directories only. Every process started (runners, training trees, baselines) is ended by
PID in a ``finally``, found through the run directories' state files and the run's environment
marker, even when a measurement fails.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
PY = sys.executable

from moeconsole.runner.process import proctree  # noqa: E402  (after the path insert)
from moeconsole.runner.supervisor.supervisor import LOOP_TICK_S  # noqa: E402

DIE_SCRIPT = textwrap.dedent("""\
    import os, random, sys, time
    attempt = int(os.environ["MOECONSOLE_ATTEMPT"])
    n, lo, hi, out = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    print("{'loss': '1.0', 'global_step/max_steps': '%d/%d'}" % (attempt, n + 1), flush=True)
    if attempt > n:
        sys.exit(0)
    time.sleep(random.Random(attempt).uniform(lo, hi))
    kind = "sigkill" if attempt % 2 else "exit1"
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    t = time.time()
    os.write(fd, ("%d %d %s %r\\n" % (attempt, os.getpid(), kind, t)).encode())
    if kind == "sigkill":
        os.kill(os.getpid(), 9)
    os._exit(1)
    """)

TREE_SCRIPT = textwrap.dedent("""\
    import os, signal, subprocess, sys, time
    mode = sys.argv[1]
    if mode == "ignore":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    if sys.argv[2:] != ["child"]:
        kids = [subprocess.Popen([sys.executable, __file__, mode, "child"]) for _ in range(2)]
        print("{'loss': '1.0', 'global_step/max_steps': '1/100'}", flush=True)
    while True:
        time.sleep(1)
    """)

BASE_POLICY = {
    "env": {"OMP_NUM_THREADS": "1"},
    "heartbeat": {"timeout_s": 600},
    "lint": {"ignore": ["no_checkpoint_dir"]},
}


# ---- small helpers ----------------------------------------------------------------------

def p99(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.99 * (len(s) - 1))))]


def ms(x: float) -> str:
    return f"{x * 1000:.1f}"


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOECONSOLE_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return env


def cli(*args: str, runs_dir: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    proc = subprocess.run([PY, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(runs_dir)], capture_output=True,
                          text=True, timeout=timeout, env=cli_env(), cwd=REPO)
    if proc.returncode != 0:
        raise RuntimeError(f"moeconsole {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc


def write_recipe(path: Path, recipe: dict) -> Path:
    import yaml
    path.write_text(yaml.safe_dump(recipe))
    return path


def start_run(recipe: Path, runs_dir: Path) -> Path:
    proc = cli("run", str(recipe), "--detach", runs_dir=runs_dir)
    return runs_dir / proc.stdout.strip().splitlines()[0]


def read_state(run: Path) -> dict:
    try:
        return json.loads((run / "state.json").read_text())
    except (OSError, ValueError):
        return {}


def read_events(run: Path, type_: str | None = None) -> list[dict]:
    out = []
    try:
        text = (run / "events.jsonl").read_text()
    except OSError:
        return out
    for line in text.splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if type_ is None or ev.get("type") == type_:
            out.append(ev)
    return out


def wait_for(pred, timeout: float, what: str, run: Path | None = None, every: float = 0.02):
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(every)
    extra = ""
    if run is not None:
        extra = f"; state status={read_state(run).get('status')}; runner.log: " + \
                _tail_text(run / "runner.log")
    raise RuntimeError(f"timed out after {timeout:g}s waiting for {what}{extra}")


def _tail_text(path: Path, n: int = 600) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return "(none)"


def gone(pid: int, created: float) -> bool:
    return not proctree.same_process(pid, created)


# ---- cleanup: end by PID everything we started ------------------------------------------

class Reaper:
    """Knows every runs directory and every baseline process this benchmark started."""

    def __init__(self) -> None:
        self.runs_dirs: list[Path] = []
        self.procs: list[subprocess.Popen] = []

    def kill_all(self) -> list[int]:
        killed: list[int] = []
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                killed.append(proc.pid)
            proc.wait()
        for base in self.runs_dirs:
            if not base.is_dir():
                continue
            for run in base.iterdir():
                if run.is_dir():
                    killed += self._end_run(run)
        return killed

    @staticmethod
    def _end_run(run: Path) -> list[int]:
        """Runner first (so it cannot relaunch), then the tree it tracked, then anything that
        carries this run's environment marker (orphans): each PID checked by start time."""
        state = read_state(run)
        targets: list[tuple[int, float]] = []
        r = state.get("runner") or {}
        if r.get("pid") and r.get("start_time"):
            targets.append((int(r["pid"]), float(r["start_time"])))
        targets += [(int(p["pid"]), float(p["start_time"])) for p in state.get("pids") or []]
        killed = []
        for pid, created in targets:
            if proctree.same_process(pid, created):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        for pid, created in proctree.marked_processes(run.name).items():
            if proctree.same_process(pid, created):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        return killed


# ---- 1. exit detection ------------------------------------------------------------------

class NaivePoller(threading.Thread):
    """The baseline supervisor: ``while True: check every leader; sleep(1)``. It learns leader
    PIDs from ``attempt_start`` events (a launcher would know them from its own Popen)."""

    def __init__(self, events: Path) -> None:
        super().__init__(daemon=True)
        self.events = events
        self.offset = 0
        self.partial = b""
        self.watched: dict[int, float | None] = {}
        self.detected: dict[int, float] = {}
        self.halt = threading.Event()

    def _new_leaders(self) -> list[int]:
        try:
            with open(self.events, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        self.offset += len(data)
        lines = (self.partial + data).split(b"\n")
        self.partial = lines.pop()
        pids = []
        for line in lines:
            ev = json.loads(line)
            # the training command itself (``pid`` is the runner's waiter that wraps it)
            leader = ev.get("command_pid") or ev.get("pid")
            if ev.get("type") == "attempt_start" and leader:
                pids.append(int(leader))
        return pids

    def run(self) -> None:
        while not self.halt.is_set():
            for pid in self._new_leaders():
                self.watched[pid] = proctree.start_time(pid)
            now = time.time()
            for pid, created in list(self.watched.items()):
                if created is None or gone(pid, created):
                    self.detected[pid] = now
                    del self.watched[pid]
            time.sleep(1.0)


def bench_detection(work: Path, runs_dir: Path, deaths: int) -> dict:
    script = work / "die.py"
    script.write_text(DIE_SCRIPT)
    deaths_file = work / "deaths.txt"
    recipe = write_recipe(work / "detect.yaml", {
        "name": "bench-detect",
        "command": ["{python}", str(script), str(deaths), "0.1", "1.1", str(deaths_file)],
        "restart": {"max_restarts": deaths + 10, "backoff_initial_s": 0.01, "backoff_max_s": 0.05,
                    "max_crashes_per_window": 100_000, "crash_window_s": 3600},
        "cooldown": {"floor_s": 0.0, "ceiling_s": 10.0, "poll_s": 0.02},
        "kill": {"grace_s": 2},
        **BASE_POLICY,
    })
    t0 = time.time()
    run = start_run(recipe, runs_dir)
    poller = NaivePoller(run / "events.jsonl")
    poller.start()
    try:
        state = wait_for(lambda: read_state(run) if read_state(run).get("status") in ("succeeded", "failed",
                                                                                         "killed", "paused")
                         else None, timeout=30 + deaths * 3, what="the death loop to finish", run=run, every=0.2)
        time.sleep(1.5)  # let the naive poller take its last look
    finally:
        poller.halt.set()
        poller.join(timeout=3)
    wall = time.time() - t0
    if state.get("status") != "succeeded":
        raise RuntimeError(f"death loop ended {state.get('status')}: {state.get('pause_reason')}")

    recorded = {}
    for line in deaths_file.read_text().splitlines():
        attempt, pid, kind, t = line.split()
        recorded[int(attempt)] = (int(pid), kind, float(t))
    ends = {e["attempt"]: e for e in read_events(run, "attempt_end")}
    crashes = {e["attempt"]: e for e in read_events(run, "crash")}
    starts = {e["attempt"]: e for e in read_events(run, "attempt_start")}
    rows: dict[str, dict[str, list[float]]] = {k: {"sigkill": [], "exit1": []} for k in
                                                ("naive", "detected_at", "attempt_end", "crash", "relaunch")}
    classes: dict[str, set] = {"sigkill": set(), "exit1": set()}
    for attempt, (pid, kind, t_death) in sorted(recorded.items()):
        end, crash = ends[attempt], crashes[attempt]
        rows["detected_at"][kind].append(end["detected_at"] - t_death)
        rows["attempt_end"][kind].append(end["t"] - t_death)
        rows["crash"][kind].append(crash["t"] - t_death)
        classes[kind].add(crash["class"])
        if attempt + 1 in starts:
            rows["relaunch"][kind].append(starts[attempt + 1]["t"] - t_death)
        if pid in poller.detected:
            rows["naive"][kind].append(poller.detected[pid] - t_death)
    return {"rows": rows, "n": len(recorded), "wall": wall, "classes": classes,
            "naive_missed": len(recorded) - sum(len(v) for v in rows["naive"].values())}


# ---- 2. clean kill ----------------------------------------------------------------------

def bench_kill(work: Path, runs_dir: Path, mode: str, reps: int, grace: float) -> dict:
    script = work / "tree.py"
    script.write_text(TREE_SCRIPT)
    recipe = write_recipe(work / f"kill-{mode}.yaml", {
        "name": f"bench-kill-{mode}",
        "command": ["{python}", str(script), mode],
        "restart": {"max_restarts": 0},
        "cooldown": {"floor_s": 0.0, "ceiling_s": 10.0, "poll_s": 0.05},
        "kill": {"grace_s": 60},  # the CLI's --grace overrides it
        **BASE_POLICY,
    })
    out: dict[str, list] = {"from_cli": [], "runner": [], "cli_wall": [], "request": [], "escalated": [],
                            "survivors": [], "escalate_late": [], "after_escalate": []}
    for _ in range(reps):
        run = start_run(recipe, runs_dir)

        def tree_up():
            st = read_state(run)
            pids = st.get("pids") or []
            # the command and its two children (the attempt's waiter is tracked beside them)
            live = [p for p in pids if p.get("role") != "waiter" and proctree.same_process(p["pid"], p["start_time"])]
            return st if st.get("status") == "running" and len(live) == 3 else None

        st = wait_for(tree_up, 20, "3 tracked processes", run)
        tree = [(p["pid"], p["start_time"]) for p in st["pids"]]
        time.sleep(0.3)  # every process is past its signal set-up and asleep
        t0 = time.time()
        cli("kill", run.name, "--grace", f"{grace:g}", runs_dir=runs_dir, timeout=grace + 60)
        t1 = time.time()
        done = wait_for(lambda: read_events(run, "kill_done"), 10, "kill_done", run)[0]
        kill_ev = read_events(run, "kill")[0]
        out["from_cli"].append(done["t"] - t0)
        out["runner"].append(done["t"] - kill_ev["t"])
        out["request"].append(kill_ev["t"] - t0)
        out["cli_wall"].append(t1 - t0)
        out["escalated"].append(bool(done.get("escalated")))
        out["survivors"].append(sum(1 for pid, created in tree if not gone(pid, created)))
        esc = read_events(run, "kill_escalate")
        if esc:
            out["escalate_late"].append(esc[0]["t"] - kill_ev["t"] - grace)
            out["after_escalate"].append(done["t"] - esc[0]["t"])
        runner = read_state(run).get("runner") or {}
        wait_for(lambda: gone(runner["pid"], runner["start_time"]), 10, "the runner to exit", run)
    return out


# ---- 3. CPU and memory while supervising the demo ---------------------------------------

FOLLOWER = textwrap.dedent("""\
    import sys, time
    with open(sys.argv[1], "rb") as f:
        while True:
            f.read()
            time.sleep(0.1)
    """)


def cpu_s(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def bench_cpu(work: Path, runs_dir: Path, seconds: float, reaper: Reaper) -> dict:
    run = start_run(REPO / "recipes" / "tiny-moe-cpu.yaml", runs_dir)
    wait_for(lambda: (run / "metrics.jsonl").stat().st_size > 0, 60, "the first demo step", run)
    st = read_state(run)
    runner = psutil.Process(st["runner"]["pid"])
    leader_pid = next(p["pid"] for p in st["pids"] if p["role"] == "leader")
    trainer = psutil.Process(leader_pid)
    log = run / "train.log"
    tail = subprocess.Popen(["tail", "-F", str(log)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    reaper.procs.append(tail)
    follower = subprocess.Popen([PY, "-c", FOLLOWER, str(log)], stdout=subprocess.DEVNULL)
    reaper.procs.append(follower)
    time.sleep(1.0)  # both baselines past their start-up
    procs = {"runner": runner, "tail": psutil.Process(tail.pid), "follower": psutil.Process(follower.pid),
             "trainer": trainer}
    steps0 = len((run / "metrics.jsonl").read_text().splitlines())
    start = {k: cpu_s(p) for k, p in procs.items()}
    t0, wall0 = time.monotonic(), time.time()
    rss: dict[str, list[float]] = {k: [] for k in procs}
    while time.monotonic() - t0 < seconds:
        for k, p in procs.items():
            rss[k].append(p.memory_info().rss / 2**20)
        time.sleep(1.0)
    wall = time.monotonic() - t0
    end = {k: cpu_s(p) for k, p in procs.items()}
    steps = len((run / "metrics.jsonl").read_text().splitlines()) - steps0
    status = read_state(run).get("status")
    checkpoints = [e for e in read_events(run, "checkpoint") if e["t"] >= wall0]
    if status != "running":
        raise RuntimeError(f"the demo run was {status} at the end of the window; the measurement is void")
    for proc in (tail, follower):
        proc.kill()
        proc.wait()
    cli("kill", run.name, "--grace", "5", runs_dir=runs_dir, timeout=70)
    return {"wall": wall, "cpu": {k: end[k] - start[k] for k in procs}, "rss": rss, "steps": steps,
            "checkpoints": len(checkpoints)}


# ---- report -----------------------------------------------------------------------------

def kill_table(args, kills: dict) -> list[str]:
    lines = [f"### Clean kill of a 3-process tree (`moeconsole kill RUN --grace {args.grace:g}`, "
             f"{args.kill_reps} runs each)", "",
             "| tree | from `kill` invocation to `kill_done` median / p99 ms | runner: `kill` event to "
             "`kill_done` median / p99 ms | CLI wall median / p99 ms | CLI start to runner `kill` "
             "event median ms | escalated to SIGKILL | survivors |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    labels = {"handle": "exits on SIGTERM", "ignore": "ignores SIGTERM"}
    for mode, k in kills.items():
        lines.append(f"| {labels[mode]} | {ms(statistics.median(k['from_cli']))} / {ms(p99(k['from_cli']))} | "
                     f"{ms(statistics.median(k['runner']))} / {ms(p99(k['runner']))} | "
                     f"{ms(statistics.median(k['cli_wall']))} / {ms(p99(k['cli_wall']))} | "
                     f"{ms(statistics.median(k['request']))} | {sum(k['escalated'])}/{len(k['escalated'])} | "
                     f"{sum(k['survivors'])} |")
    ig = kills.get("ignore")
    if ig:
        eps = [x - args.grace for x in ig["runner"]]
        lines += ["", f"Epsilon over the {args.grace:g} s grace (runner `kill` -> `kill_done` minus grace, "
                      f"SIGTERM-ignoring tree): median {ms(statistics.median(eps))} ms, p99 {ms(p99(eps))} ms, "
                      f"min {ms(min(eps))} ms, max {ms(max(eps))} ms."]
        if ig["escalate_late"]:
            lines.append(f"Of which: SIGKILL sent after the grace expired (`kill_escalate` minus grace) median "
                         f"{ms(statistics.median(ig['escalate_late']))} ms, max {ms(max(ig['escalate_late']))} ms; "
                         f"`kill_escalate` -> `kill_done` median {ms(statistics.median(ig['after_escalate']))} ms, "
                         f"max {ms(max(ig['after_escalate']))} ms.")
        if "handle" in kills:
            ratio = statistics.median(ig["runner"]) / statistics.median(kills["handle"]["runner"])
            lines.append(f"Ratio ignoring / handling tree (runner time, medians): {ratio:.0f}x.")
    lines.append("")
    return lines


def notes(det: dict | None, kills: dict, cpu: dict | None) -> list[str]:
    """What the numbers say, with the figures of this run filled in."""
    out = ["### Reading the numbers", ""]
    tick = f"{LOOP_TICK_S * 1000:.0f} ms"
    if det:
        r = det["rows"]
        seen = statistics.median(r["detected_at"]["sigkill"] + r["detected_at"]["exit1"])
        relaunch = statistics.median(r["relaunch"]["sigkill"] + r["relaunch"]["exit1"])
        out.append(f"- Exit detection is event-driven (SIGCHLD through the signal wakeup fd wakes the runner's "
                   f"`select`): {ms(seen)} ms median from death to `detected_at`, against about half the poll "
                   f"interval for a poll loop. The `crash` event adds classification, the crash report and a "
                   f"state flush.")
        out.append(f"- Relaunch with cooldown floor 0 took {ms(relaunch)} ms median: the backoff (at most 50 ms "
                   f"in this recipe), the launch conditions (a scan of every process for the run's marker, a "
                   f"bind of the port) and the spawn. The runner's `select` wakes at the cooldown's earliest "
                   f"restart time, so no loop tick ({tick}) is added.")
    ig = kills.get("ignore")
    if ig and ig["escalate_late"]:
        out.append(f"- The epsilon over the grace: SIGKILL went out {ms(statistics.median(ig['escalate_late']))} ms "
                   f"(median) after the grace (the runner's `select` wakes at the kill deadline), then reaping and "
                   f"the environment-marker scan that proves no process survived took "
                   f"{ms(statistics.median(ig['after_escalate']))} ms.")
    if kills.get("handle"):
        k = kills["handle"]
        out.append(f"- Of the {ms(statistics.median(k['from_cli']))} ms from invoking `moeconsole kill` to "
                   f"`kill_done` for a tree that exits on SIGTERM, {ms(statistics.median(k['request']))} ms is "
                   f"the CLI starting and reaching the runner; the CLI then notices the final state by polling "
                   f"state.json every 50 ms.")
    if cpu:
        c = cpu["cpu"]
        out.append(f"- The runner used {100 * c['runner'] / cpu['wall']:.2f}% of one core and "
                   f"{statistics.median(cpu['rss']['runner']):.0f} MiB while supervising the demo: it reads the "
                   f"log every {tick}, parses steps into metrics and monitors, refreshes the process tree with "
                   f"psutil every 0.5 s, polls the checkpoint directory every second, verifies each new "
                   f"checkpoint and rewrites state.json (fsync + rename) about once a second.")
    return out + [""]


def report(args, det: dict | None, kills: dict, cpu: dict | None, total: float) -> str:
    lines = ["## Runner", "",
             f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
             f"1-minute load average {args.load_start:.2f} at the start, {os.getloadavg()[0]:.2f} at the end. "
             f"Total bench time {total:.0f} s.", "",
             "Command (from the repository root):", "",
             f"    .venv/bin/python bench/bench_runner.py --deaths {args.deaths} "
             f"--kill-reps {args.kill_reps} --grace {args.grace:g} --cpu-seconds {args.cpu_seconds:g}"
             + "".join(f" --skip {k}" for k in args.skip), ""]
    if det:
        r = det["rows"]
        lines += [f"### Exit detection ({det['n']} deaths in one run, {det['wall']:.0f} s; "
                  f"odd attempts SIGKILL themselves, even ones `os._exit(1)`)", "",
                  "Latency from the death (the dying process's own `time.time()` just before "
                  "`kill`/`_exit`) to each mark:", "",
                  "| mark | median ms (all) | p99 ms (all) | max ms | median SIGKILL | median exit 1 |",
                  "|---|---:|---:|---:|---:|---:|"]
        names = [("naive", "naive `sleep(1)` poll of the leader PID (baseline)"),
                 ("detected_at", "runner `attempt_end.detected_at`"),
                 ("attempt_end", "`attempt_end` event written"),
                 ("crash", "`crash` event written (classified, report on disk)"),
                 ("relaunch", "next `attempt_start` (cooldown floor 0, backoff <= 0.05 s)")]
        for key, label in names:
            both = r[key]["sigkill"] + r[key]["exit1"]
            if not both:
                continue
            lines.append(f"| {label} | {ms(statistics.median(both))} | {ms(p99(both))} | {ms(max(both))} | "
                         f"{ms(statistics.median(r[key]['sigkill']))} | {ms(statistics.median(r[key]['exit1']))} |")
        naive = r["naive"]["sigkill"] + r["naive"]["exit1"]
        crash = r["crash"]["sigkill"] + r["crash"]["exit1"]
        seen = r["detected_at"]["sigkill"] + r["detected_at"]["exit1"]
        ratios = (f"naive poll / runner detection = {statistics.median(naive) / statistics.median(seen):.0f}x; "
                  f"naive poll / crash event = {statistics.median(naive) / statistics.median(crash):.1f}x"
                  if naive and seen and crash else "not computed (a row has no data)")
        lines += ["",
                  f"Ratios (medians): {ratios}. Crash classes: SIGKILL -> "
                  f"{', '.join(sorted(det['classes']['sigkill']))}; exit 1 -> "
                  f"{', '.join(sorted(det['classes']['exit1']))}. Deaths the naive poller missed: "
                  f"{det['naive_missed']}.", ""]
    if kills:
        lines += kill_table(args, kills)
    if cpu:
        w = cpu["wall"]
        lines += [f"### CPU and memory while supervising the demo ({w:.0f} s window, recipes/tiny-moe-cpu.yaml, "
                  f"{cpu['steps']} steps and {cpu['checkpoints']} checkpoint verifications in the window)", "",
                  "| process | CPU s | share of one core | RSS median MiB | RSS max MiB |",
                  "|---|---:|---:|---:|---:|"]
        labels = {"tail": "`tail -F train.log > /dev/null` (baseline)",
                  "follower": "Python loop reading new bytes every 100 ms (baseline)",
                  "runner": "runner (`python -m moeconsole.runner.supervisor`)",
                  "trainer": "the demo trainer itself (for scale)"}
        for k in ("tail", "follower", "runner", "trainer"):
            lines.append(f"| {labels[k]} | {cpu['cpu'][k]:.2f} | {100 * cpu['cpu'][k] / w:.2f}% | "
                         f"{statistics.median(cpu['rss'][k]):.1f} | {max(cpu['rss'][k]):.1f} |")
        c = cpu["cpu"]
        tail_ratio = (f"{c['runner'] / c['tail']:.0f}x" if c["tail"] >= 0.02 else
                      f"n/a (tail used {c['tail']:.2f} s, below the 10 ms tick resolution x2)")
        lines += ["", f"Ratios: runner / Python 100 ms follower = {c['runner'] / max(c['follower'], 0.01):.1f}x; "
                      f"runner / tail -F = {tail_ratio}; runner / trainer = "
                      f"{c['runner'] / max(c['trainer'], 0.01):.3f}.", ""]
    lines += notes(det, kills, cpu)
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deaths", type=int, default=120, help="deaths in the exit detection run")
    ap.add_argument("--kill-reps", type=int, default=10, help="runs killed per tree kind")
    ap.add_argument("--grace", type=float, default=2.0, help="kill grace in seconds")
    ap.add_argument("--cpu-seconds", type=float, default=60.0, help="CPU measurement window")
    ap.add_argument("--skip", action="append", default=[], choices=["detect", "kill", "cpu"])
    args = ap.parse_args()
    args.load_start = os.getloadavg()[0]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the cleanup below
    reaper = Reaper()
    t_start = time.time()
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as tmp:
        work = Path(tmp)
        try:
            det = kills = cpu = None
            kills = {}
            if "detect" not in args.skip:
                runs = work / "runs-detect"
                reaper.runs_dirs.append(runs)
                det = bench_detection(work, runs, args.deaths)
            if "kill" not in args.skip:
                runs = work / "runs-kill"
                reaper.runs_dirs.append(runs)
                for mode in ("handle", "ignore"):
                    kills[mode] = bench_kill(work, runs, mode, args.kill_reps, args.grace)
            if "cpu" not in args.skip:
                runs = work / "runs-cpu"
                reaper.runs_dirs.append(runs)
                cpu = bench_cpu(work, runs, args.cpu_seconds, reaper)
        finally:
            leftover = reaper.kill_all()
            if leftover:
                sys.stderr.write(f"bench_runner: ended leftover processes {leftover}\n")
    print(report(args, det, kills, cpu, time.time() - t_start))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
