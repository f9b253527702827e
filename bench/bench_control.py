"""Benchmark: the control socket under load. Prints a Markdown section.

    .venv/bin/python bench/bench_control.py [--clients 200] [--rate 200000] [--seconds 10] [--reps 3]

Everything through the real runner (``python -m moeconsole.console.cli run ... --detach``) and real sockets.

1. A crowd: ``--clients`` threads poll one live run's ``control.sock`` for ``status`` in a loop,
   released at the same instant; a second later ``moeconsole kill RUN`` is invoked into the
   crowd. Counted: status requests answered, refused while the runner lived (a full connection
   queue that the client's retry with backoff, ``moeconsole.runner.supervisor.control.send``, did not get past), and
   refused because the killed run's runner had exited; whether the kill got through (CLI exit
   0, run ``killed``) and the kill's wall time. Repeated ``--reps`` times.
   Baseline in the same run: the same crowd whose clients connect once, without the retry.
2. A live flood: the training command prints ms-swift metric lines at ``--rate`` lines/s for
   ``--seconds`` s (written in 2,000-line blocks on a steady clock); a client asks ``status``
   every 50 ms meanwhile. Reported: status latency p50 / p99 / max (goal: p99 under 250 ms), the
   lines written and the metric records the runner wrote (nothing may be lost), and how far
   ingestion trailed the log at the end of the flood. Baseline in the same run: the same polling
   of a run printing 10 lines/s.

Temp directories only; every process started is ended by PID in a ``finally``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from benchlib import p99  # noqa: E402
from moeconsole.runner.supervisor import control  # noqa: E402
from moeconsole.runner.process import proctree

PY = sys.executable

FLOOD = textwrap.dedent("""\
    import os, sys, time
    rate, seconds, block = float(sys.argv[1]), float(sys.argv[2]), 2000
    n = int(rate * seconds)
    # ms-swift prints the loss rounded to 8 places, as Python writes a float (no trailing zeros)
    losses = [repr(round(1.0 + ((i * 7919) % 997) / 997.0, 8)) for i in range(997)]
    line = ("{'loss': %s, 'grad_norm': 0.51, 'learning_rate': 1e-05, 'token_acc': 0.71, 'epoch': 0.1, "
            "'global_step/max_steps': '%d/" + str(n) + "', 'elapsed_time': '1m 2s', 'memory(GiB)': 35.1}\\n")
    out = sys.stdout.buffer
    t0 = time.monotonic()
    for start in range(1, n + 1, block):
        out.write("".join(line % (losses[i % 997], i) for i in range(start, min(n, start + block - 1) + 1)).encode())
        out.flush()
        due = t0 + min(start + block - 1, n) / rate
        pause = due - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    print("FLOOD_DONE %d %.3f" % (n, time.monotonic() - t0), flush=True)
    time.sleep(float(sys.argv[3]))
    """)

SLEEPER = "import time\nprint(\"{'loss': '1.0', 'global_step/max_steps': '1/100'}\", flush=True)\ntime.sleep(600)\n"

CROWD = textwrap.dedent("""\
    import sys, threading, time
    sys.path.insert(0, sys.argv[3])
    from moeconsole.runner.supervisor import control
    import json, socket
    n, seconds, retry = int(sys.argv[2]), float(sys.argv[4]), sys.argv[5] == "retry"

    def send_once(path, req, timeout):
        # the baseline client: one connect, a full queue is an error (no retry)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(path)
            s.sendall(json.dumps({"v": 1, **req}).encode() + b"\\n")
            return json.loads(control.recv_line(s))
        except OSError as exc:
            raise control.ControlError(f"control socket error: {exc}") from None
        finally:
            s.close()
    send = control.send if retry else send_once
    barrier = threading.Barrier(n)
    ok, fail = [], []

    def one():
        barrier.wait()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t = time.monotonic()
            try:
                answer = send(sys.argv[1], {"cmd": "status"}, timeout=30)
                ok.append(time.monotonic() - t)
                if answer.get("state", {}).get("status") not in ("running", "stopping"):
                    return  # the run is over: the crowd leaves
            except control.ControlError as exc:
                fail.append(str(exc))
                if "no runner" in str(exc):
                    return

    threads = [threading.Thread(target=one) for i in range(n)]
    for th in threads:
        th.start()
    print("GO", flush=True)
    for th in threads:
        th.join()
    print("\\n".join(["ok %.4f" % x for x in ok] + ["fail " + f for f in fail]), flush=True)
    """)


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if not k.startswith("MOECONSOLE_")}
    e["PYTHONPATH"] = str(REPO)
    return e


def start_run(tmp: Path, name: str, command: list[str], **extra) -> Path:
    tmp.mkdir(parents=True, exist_ok=True)
    recipe = tmp / f"{name}.json"
    recipe.write_text(json.dumps({"name": name, "command": command, "restart": {"max_restarts": 0},
                                  "cooldown": {"floor_s": 0, "ceiling_s": 5, "poll_s": 0.05},
                                  "kill": {"grace_s": 5}, "lint": {"ignore": ["no_checkpoint_dir"]}, **extra}))
    runs = tmp / "runs"
    out = subprocess.run([PY, "-m", "moeconsole.console.cli", "run", str(recipe), "--detach", "--runs-dir", str(runs)],
                         capture_output=True, text=True, env=env(), cwd=REPO, timeout=120)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    run = runs / out.stdout.strip().splitlines()[0]
    deadline = time.time() + 60
    while time.time() < deadline:
        st = _state(run)
        if st.get("status") == "running" and any(p.get("role") == "leader" for p in st.get("pids") or []):
            return run
        time.sleep(0.05)
    raise RuntimeError(f"{run} did not start: {_state(run)}")


def _state(run: Path) -> dict:
    try:
        raw = json.loads((run / "state.json").read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    return raw if isinstance(raw, dict) else {}


def end_run(run: Path) -> None:
    """Every process of the run, by PID and start time (runner, tree, marked processes); a
    damaged state.json (the campaign damages some) only loses the runner's PID."""
    procs = dict(proctree.marked_processes(run.name))
    r = _state(run).get("runner")
    if isinstance(r, dict) and isinstance(r.get("pid"), int) and isinstance(r.get("start_time"), (int, float)):
        procs[r["pid"]] = r["start_time"]
    for sig in (15, 9):
        for pid, created in procs.items():
            if proctree.same_process(pid, created):
                try:
                    os.kill(pid, sig)
                except OSError:
                    pass
        deadline = time.time() + 5
        while time.time() < deadline and any(proctree.same_process(p, c) for p, c in procs.items()):
            time.sleep(0.05)


def crowd(tmp: Path, clients: int, retry: bool = True) -> dict:
    """``clients`` threads of one process poll ``status`` in a loop, released at the same
    instant (a barrier); a second later ``moeconsole kill`` is invoked into the crowd."""
    run = start_run(tmp, "crowd", [PY, "-c", SLEEPER])
    try:
        proc = subprocess.Popen([PY, "-c", CROWD, str(run / "control.sock"), str(clients), str(REPO), "20",
                                 "retry" if retry else "once"],
                                stdout=subprocess.PIPE, text=True, env=env())
        assert proc.stdout is not None
        proc.stdout.readline()  # GO: the threads are released and poll status in a loop
        time.sleep(1.0)         # the crowd is at full strength when the kill starts
        t = time.monotonic()
        kill = subprocess.run([PY, "-m", "moeconsole.console.cli", "kill", run.name, "--grace", "2", "--runs-dir",
                               str(run.parent)], capture_output=True, text=True, env=env(), cwd=REPO, timeout=120)
        kill_s = time.monotonic() - t
        outs = proc.communicate(timeout=120)[0].splitlines()
        ok = [float(o.split()[1]) for o in outs if o.startswith("ok")]
        failed = [o.strip() for o in outs if not o.startswith("ok")]
        gone = [f for f in failed if any(w in f for w in ("no runner is listening", "reset by peer", "runner is exiting",
                                                           "Broken pipe"))]
        return {"clients": clients, "answered": len(ok), "failed": [f for f in failed if f not in gone],
                "after_exit": len(gone), "requests": len(outs),
                "kill_rc": kill.returncode, "kill_err": kill.stderr.strip()[-300:], "kill_s": kill_s,
                "status": _state(run).get("status"), "lat": ok}
    finally:
        end_run(run)


def flood(tmp: Path, rate: float, seconds: float) -> dict:
    tmp.mkdir(parents=True, exist_ok=True)
    script = tmp / "flood.py"
    script.write_text(FLOOD)
    run = start_run(tmp, "flood", [PY, str(script), str(rate), str(seconds), "30"])
    lat: list[float] = []
    errors = 0
    ahead = 0           # status answers naming a step whose record was not in metrics.jsonl yet
    behind_seen = 0     # the most lines behind an answer said while catching up (issue 32.9)
    try:
        t_end = None
        while True:
            t = time.monotonic()
            try:
                answer = control.send(run / "control.sock", {"cmd": "status"}, timeout=30)
                lat.append(time.monotonic() - t)
                st = answer.get("state") or {}
                step, written = st.get("step"), _newest_written(_log_tail(run / "metrics.jsonl"))
                if isinstance(step, int) and (written is None or written < step):
                    ahead += 1
                if (st.get("ingest") or {}).get("catching_up"):
                    behind_seen = max(behind_seen, int(st["ingest"].get("lines_behind") or 0))
            except control.ControlError:
                errors += 1
            if t_end is None and b"FLOOD_DONE" in _log_tail(run / "train.log"):
                t_end = time.monotonic()
            if t_end is not None:
                break
            time.sleep(max(0.0, 0.05 - (time.monotonic() - t)))
        lag = (_state(run).get("ingest") or {}).get("lag_bytes")
        n = int(rate * seconds)
        deadline = time.time() + 300
        while time.time() < deadline and _state(run).get("step", 0) < n:
            time.sleep(0.2)
        records = sum(1 for _ in open(run / "metrics.jsonl", "rb"))
        return {"rate": rate, "seconds": seconds, "lines": n, "records": records, "lat": lat, "errors": errors,
                "lag_at_end": lag, "ahead": ahead, "behind_seen": behind_seen}
    finally:
        end_run(run)


def _newest_written(tail: bytes) -> int | None:
    """The step of the last complete record in the tail of metrics.jsonl (a line still being
    written has no newline yet)."""
    end = tail.rfind(b"\n")
    if end < 0:
        return None
    try:
        return json.loads(tail[tail.rfind(b"\n", 0, end) + 1:end]).get("step")
    except ValueError:
        return None


def _log_tail(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 4096))
            return f.read()
    except OSError:
        return b""


def q(lat: list[float]) -> str:
    if not lat:
        return "— / — / —"
    return f"{statistics.median(lat) * 1000:.0f} / {p99(lat) * 1000:.0f} / {max(lat) * 1000:.0f}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--rate", type=float, default=200_000)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--skip-crowd", action="store_true")
    ap.add_argument("--skip-flood", action="store_true")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    crowds, floods, baselines, idles = [], [], [], []
    with tempfile.TemporaryDirectory(prefix="mcctl-") as d:
        tmp = Path(d)
        for i in range(args.reps):
            if not args.skip_crowd:
                crowds.append(crowd(tmp / f"c{i}", args.clients))
                baselines.append(crowd(tmp / f"b{i}", args.clients, retry=False))
            if not args.skip_flood:
                floods.append(flood(tmp / f"f{i}", args.rate, args.seconds))
                idles.append(flood(tmp / f"i{i}", 10.0, args.seconds))  # baseline: the same polling, no flood
    print("## Control socket under load\n")
    print(f"Command: `.venv/bin/python bench/bench_control.py --clients {args.clients} --rate {args.rate:g} "
          f"--seconds {args.seconds:g} --reps {args.reps}` (from the repository root). Machine: {os.cpu_count()} "
          f"cores, load average {load0:.2f} before, {os.getloadavg()[0]:.2f} after.\n")
    if crowds:
        print(f"### {args.clients} clients at once, `moeconsole kill` in the middle\n")
        print("| rep | status requests answered | refused, runner alive | refused, runner exited | kill exit | "
              "run after | kill wall s | status latency p50 / p99 / max ms |")
        print("|---:|---:|---:|---:|---:|---|---:|---|")
        rows = [(str(i), c) for i, c in enumerate(crowds, 1)]
        rows += [(f"baseline {i}: clients without retry", c) for i, c in enumerate(baselines, 1)]
        for label, c in rows:
            print(f"| {label} | {c['answered']}/{c['requests']} | {len(c['failed'])} | {c['after_exit']} | "
                  f"{c['kill_rc']} | {c['status']} | {c['kill_s']:.2f} | {q(c['lat'])} |")
        fails = [f for c in crowds for f in c["failed"]][:3]
        if fails:
            print("\nUnanswered: " + "; ".join(fails))
        print("\nThe kill is a `moeconsole kill` CLI (it retries a full queue); the baseline crowd's own clients "
              "connect once each, as clients did before the retry, so its refusals show how often the queue was full.")
        print()
    if floods:
        print(f"### A live flood of {args.rate:,.0f} lines/s for {args.seconds:g} s, `status` every 50 ms\n")
        print("| rep | lines | records written | status answers | status p50 / p99 / max ms | errors | "
              "lag at flood end |")
        print("|---:|---:|---:|---:|---|---:|---:|")
        flood_rows = [(str(i), f) for i, f in enumerate(floods, 1)]
        flood_rows += [(f"baseline {i}: 10 lines/s", f) for i, f in enumerate(idles, 1)]
        for label, f in flood_rows:
            print(f"| {label} | {f['lines']:,} | {f['records']:,} | {len(f['lat'])} | {q(f['lat'])} | {f['errors']} | "
                  f"{(f['lag_at_end'] or 0) / 1e6:.1f} MB |")
        all_lat = [x for f in floods for x in f["lat"]]
        idle_lat = [x for f in idles for x in f["lat"]]
        if idle_lat:
            print(f"\nBaseline (the same polling of a run printing 10 lines/s): p50 / p99 / max {q(idle_lat)} ms; "
                  f"flood / baseline p99: {p99(all_lat) / max(p99(idle_lat), 1e-6):.1f}x.")
        print(f"\nAll reps: status p50 / p99 / max {q(all_lat)} ms over {len(all_lat)} answers; goal p99 < 250 ms: "
              f"{'met' if all_lat and p99(all_lat) < 0.25 else 'NOT met'}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
