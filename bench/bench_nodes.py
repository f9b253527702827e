"""A 128-node run's per-node work in a console, in process, this tree against a baseline
revision side by side (each measure run by both trees in turn, round after round, on the same
files): what ``bench_scale.py`` cannot resolve at the process level on a busy machine.

- read: a ``NodeReader`` as a console's run screen reads (``whole`` False) reading all 128
  agent files again and judging the nodes again (as when each file changed), per file;
- lines: the GPU panel's summary lines (160 columns, 16 lines, as the panel draws them:
  ``node_summary_lines``, or ``summary_lines(node_groups(...))`` in a tree without it) once a
  second, the ages moving on and half the nodes read again (a new GPU dict), per draw;
- second: a second of the run screen's node reading as the live 1,024-GPU run makes it
  (``bench_scale.py``, counted there: a console's timer reads once a second, every agent file
  changed each second but read every 2 s at 128 nodes, so a read of all 128 files every other
  second and a read of none between; the runner rewrites ``ranks.json`` every 4 s, one step of
  the job), then the panel's summary lines of what it read, per second (each read a second);
- collections: that second again with the attached console's collector (its start frozen,
  ``lean.settle_after_first_frame``): how many passes of the cyclic collector (any
  generation) the node reading and the summary lines set off, per second. The containers a
  read makes set that pace; in the console the passes are paid wherever they fire.

The agent files are the real format: ``bench/sim_agents.py`` over the fake NVML library;
``ranks.json`` the runner's own (``ranktimes.save_rank_times``) with 1,024 ranks, node 101's slower.

    .venv/bin/python bench/bench_nodes.py --baseline REV [--rounds 7]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_ingest import export  # noqa: E402

MEASURE = """
import copy, sys, time
from pathlib import Path
from moeconsole.runner.rundir import rundir
from moeconsole.runner.rundir.snapshot import NodeReader
from moeconsole.console.widgets.gpu_panel import node_groups, summary_lines
try:  # the panel's own call past its lines (a tree without it: every node's group)
    from moeconsole.console.widgets.gpu_panel import node_summary_lines as draw
except ImportError:
    draw = lambda nodes, gpu, host, width, budget: summary_lines(node_groups(nodes, gpu, host), width, budget)
reader = NodeReader(rundir.RunDir(Path(sys.argv[1])))
reader.whole = False  # as a console's run screen reads (a tree without glances ignores it)
what = sys.argv[2]
if what == "read":
    now = time.time()
    reader.read(now)
    c0 = time.process_time()
    for _ in range(20):
        reader._files, reader._judged = {}, None  # every file changed: read again and judged again
        reader.read(now)
    print((time.process_time() - c0) / 20 / 128 * 1e6)
elif what in ("second", "collections"):
    import gc, json, os, re
    ranks_path = Path(sys.argv[1]) / "ranks.json"
    doc = json.loads(ranks_path.read_text())
    agents = {f: f.read_text() for f in sorted((Path(sys.argv[1]) / "telemetry").glob("*.json"))}
    stamp = re.compile(r'^ "t": [0-9.]+,$', re.M)  # the file's time (the agent's format: json indent 1)

    def write(path, text):  # as the agent and the runner write (a new file renamed into place)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)

    def agents_write(t):
        for f, text in agents.items():
            write(f, stamp.sub(f' "t": {t},', text, count=1))
    now = time.time()
    agents_write(now)
    draw(reader.read(now), None, "here", 160, 16)
    used = 0.0
    passes = [0]
    if what == "collections":  # the attached console's collector: its start frozen (``attach``'s policy)
        from moeconsole.console import lean
        try:
            lean.settle_after_first_frame(True)
            lean.settle_after_first_frame()
        except AttributeError:  # a tree of the thresholds' policy
            gc.collect()
            gc.freeze()
            gc.set_threshold(gc.get_threshold()[0], *lean.AFTER_FREEZE_THRESHOLDS)
        gc.callbacks.append(lambda phase, info: passes.__setitem__(0, passes[0] + (phase == "start")))
    for k in range(1, 81):
        t = now + k
        if k % 2 == 0:  # every agent's file written again (not timed); at 128 nodes read every 2 s
            agents_write(t - 0.5)
        if k % 4 == 0:  # the runner's flush after a step: every rank's new step time (not timed)
            for r, e in doc["ranks"].items():
                e["step_time_s"] = round(e["step_time_s"] * (1 + ((k + int(r)) % 5 - 2) / 1000), 4)
            write(ranks_path, json.dumps(doc))
        c0 = time.process_time()
        draw(reader.read(t), None, "here", 160, 16)
        used += time.process_time() - c0
    print(passes[0] / 80 if what == "collections" else used / 80 * 1e3)  # 80 reads, one a second
else:
    nodes = reader.read(time.time())
    frames = []
    for k in range(40):
        frame = []
        for i, n in enumerate(nodes):
            m = {**n, "age_s": (n["age_s"] or 0) + k}
            if i % 2 == k % 2:
                m["gpu"] = copy.deepcopy(n["gpu"])
            frame.append(m)
        frames.append(tuple(frame))
    c0 = time.process_time()
    for f in frames * 5:
        draw(f, None, "here", 160, 16)
    print((time.process_time() - c0) / 200 * 1e3)
"""


def agent_files(work: Path) -> Path:
    from tests.fakes.nvml import build_fake_nvml, fake_env, write_scenario
    run = work / "run"
    (run / "telemetry").mkdir(parents=True)
    env = fake_env(build_fake_nvml(work / "nvml"), write_scenario(work / "scenario.txt", 8))
    env["PYTHONPATH"] = str(REPO)
    p = subprocess.Popen([sys.executable, str(REPO / "bench" / "sim_agents.py"), str(run), "--nodes", "128",
                          "--full-mem", "17", "--idle", "42"], env=env)
    try:
        deadline = time.monotonic() + 120
        while len(list((run / "telemetry").glob("*.json"))) < 128:
            if time.monotonic() > deadline:
                raise SystemExit("the simulated agents wrote no 128 files in 120 s")
            time.sleep(0.2)
    finally:
        p.terminate()
        p.wait(timeout=30)
    from moeconsole.runner.rundir import rundir, ranktimes
    book = ranktimes.RankTimes()  # the runner's ranks.json of the job: 1,024 ranks, node 101 slower
    book.feed([{"step": 9, "step_time_s": 4.0 * (1.3 if r // 8 == 101 else 1.0) * (1 + (r % 7) / 700),
                "extra": {"rank": r}} for r in range(1024)], now=time.time())
    ranktimes.save_rank_times(rundir.RunDir(run), book)
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="main", help="a git revision measured side by side (default main)")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcnodes-") as tmp:
        work = Path(tmp)
        run = agent_files(work)
        trees = {"this code": REPO, f"baseline {args.baseline}": export(args.baseline, work / "baseline")}
        got: dict[str, dict[str, list[float]]] = {w: {t: [] for t in trees}
                                                  for w in ("read", "lines", "second", "collections")}
        for _ in range(args.rounds):
            for what in got:
                for name, tree in trees.items():
                    # cwd: ``-c`` puts the working directory first on sys.path, before PYTHONPATH
                    out = subprocess.run([sys.executable, "-c", MEASURE, str(run), what], env={"PYTHONPATH": str(tree)},
                                         cwd=str(tree), capture_output=True, text=True, timeout=300, check=True)
                    got[what][name].append(float(out.stdout.strip()))
    base = f"baseline {args.baseline}"
    print(f"## Per-node work of a 128-node console, in process, side by side with {args.baseline}\n")
    print(f"Command: `.venv/bin/python bench/bench_nodes.py --baseline {args.baseline} --rounds {args.rounds}` "
          f"(1-minute load average {__import__('os').getloadavg()[0]:.1f} at the end)\n")
    print("| measure | this code, median (range) | baseline, median (range) | this / baseline round by round |")
    print("|---|---|---|---|")
    for what, label, unit in (("read", "an agent file read as the run screen reads it", "µs"),
                              ("lines", "the GPU panel's summary lines of 128 nodes, one draw", "ms"),
                              ("second", "a second of the run screen's node reading and summary lines", "ms"),
                              ("collections", "the collector's passes in that second, under the console's policy",
                               "a second")):
        a, b = got[what]["this code"], got[what][base]
        r = [x / y for x, y in zip(a, b)]
        print(f"| {label} | {statistics.median(a):.3g} {unit} ({min(a):.3g}-{max(a):.3g}) | "
              f"{statistics.median(b):.3g} {unit} ({min(b):.3g}-{max(b):.3g}) | "
              f"{statistics.median(r):.2f}x ({min(r):.2f}-{max(r):.2f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
