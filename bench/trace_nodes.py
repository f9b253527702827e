"""Where an attached 1,024-GPU console's node reading spends its time, and what the cyclic
collector costs it: the live job of ``bench_scale.py``, the console in this process.

Run from the repository root (``--tree DIR`` traces another checkout of the code):

    .venv/bin/python bench/trace_nodes.py [--seconds 30] [--thresholds 1,1]

It starts the 1,024-rank job under a real runner (``bench_scale.recipe``: ``sim_job.py``) and the
128 nodes' agents (``sim_agents.py``), then opens the console on it in this process (Pilot,
160x48), its garbage collector settled after the first frame as ``attach`` has it
(``lean.settle_after_first_frame``; ``--thresholds`` replaces ``AFTER_FREEZE_THRESHOLDS`` for the
run). Over ``--seconds`` (after 5 s of warm-up) it times, in thread CPU: ``NodeReader.read``
(the poll thread's node reading), ``_glance_entry`` (one agent file read and decoded for its
glance) and the glance decode alone; and with ``gc.callbacks`` every collection, by generation,
its thread CPU, and how many of them ran inside ``_glance_entry`` (a collection runs in whatever
code allocates when the young generation's count passes its threshold). Prints one block.
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--thresholds", help="gc thresholds after the freeze, e.g. 10,10 (default: lean's)")
    ap.add_argument("--tree", type=Path, default=REPO, help="the checkout whose console is traced")
    args = ap.parse_args()
    tree = args.tree.resolve()
    sys.path[:0] = [str(tree), str(REPO / "bench")]
    from bench_scale import FULL_MEM, IDLE, NODES, cli, recipe
    sys.path.insert(0, str(tree))  # (bench_scale puts its own checkout first)
    from tests.fakes.nvml import build_fake_nvml, fake_env, write_scenario
    work = Path(tempfile.mkdtemp(prefix="mctrace-"))
    base = work / "runs"
    base.mkdir()
    env = fake_env(build_fake_nvml(work / "nvml"), write_scenario(work / "scenario.txt", 8))
    env["PYTHONPATH"] = str(tree)
    env.pop("MOECONSOLE_RUNS_DIR", None)
    os.environ.update({k: v for k, v in env.items() if k != "PYTHONPATH"})  # the console's local GPUs: the fake library
    started = cli(base, "run", str(recipe(work / "scale.yaml", 4.0)), "--detach", env=env)
    if started.returncode != 0:
        raise SystemExit(f"run failed: {started.stderr}")
    big = base / started.stdout.split()[0]
    agents = subprocess.Popen([sys.executable, str(REPO / "bench" / "sim_agents.py"), str(big), "--nodes", str(NODES),
                               "--full-mem", str(FULL_MEM), "--idle", str(IDLE)], env=env)
    try:
        deadline = time.monotonic() + 120
        while not (len(list((big / "telemetry").glob("*.json"))) == NODES and (big / "ranks.json").exists()):
            if time.monotonic() > deadline:
                raise SystemExit("the job wrote no 128 agent files and ranks.json in 120 s")
            time.sleep(0.2)
        print(trace(base, big, args.seconds, args.thresholds))
    finally:
        cli(base, "kill", big.name, env=env)
        agents.terminate()
        agents.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    return 0


def trace(base: Path, big: Path, seconds: float, thresholds: str | None) -> str:
    from moeconsole.console import lean
    from moeconsole.console.app import MoeConsole
    from moeconsole.console.screens.run import RunScreen
    from moeconsole.runner.rundir import agentglance, rundir, snapshot
    lean.settle_after_first_frame(arm=True)
    if thresholds:
        lean.AFTER_FREEZE_THRESHOLDS = tuple(int(x) for x in thresholds.split(","))  # type: ignore[assignment]
    spent = {"read": [0.0, 0], "entry": [0.0, 0], "decode": [0.0, 0]}
    gens = {"all": [0, 0, 0], "in entry": [0, 0, 0]}
    gc_cpu = [0.0, 0.0, 0.0]
    inside = [False]
    began = [0.0]

    def timed(key: str, fn):
        def call(*a, **k):
            flag = key == "entry"
            if flag:
                inside[0] = True
            c0 = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                spent[key][0] += time.thread_time() - c0
                spent[key][1] += 1
                if flag:
                    inside[0] = False
        return call

    def on_gc(phase: str, info: dict) -> None:
        g = info["generation"]
        if phase == "start":
            began[0] = time.thread_time()
            gens["all"][g] += 1
            if inside[0]:
                gens["in entry"][g] += 1
        else:
            gc_cpu[g] += time.thread_time() - began[0]

    class Decoder:  # the glance decoder, timed
        def __init__(self, real) -> None:
            self.decode = timed("decode", real.decode)
    snapshot._glance_entry = timed("entry", snapshot._glance_entry)
    agentglance.DECODER = Decoder(agentglance.DECODER)
    snapshot.NodeReader.read = timed("read", snapshot.NodeReader.read)

    async def go() -> str:
        app = MoeConsole(base, rundir.RunDir(big))
        async with app.run_test(size=(160, 48)) as pilot:
            while not (isinstance(app.screen, RunScreen) and app.screen.snapshot is not None):
                await pilot.pause(0.1)
            await pilot.pause(5.0)
            for v in spent.values():
                v[:] = [0.0, 0]
            gc.callbacks.append(on_gc)
            p0, t0 = time.process_time(), time.monotonic()
            await pilot.pause(seconds)
            cpu, wall = time.process_time() - p0, time.monotonic() - t0
            gc.callbacks.remove(on_gc)
            out = [f"thresholds after the freeze {gc.get_threshold()}, {gc.get_freeze_count()} objects frozen, "
                   f"{len(gc.get_objects())} tracked outside; {wall:.0f} s, 1-minute load average {os.getloadavg()[0]:.1f}",
                   f"this process (console and its threads): {cpu / wall * 100:.2f}% of a core"]
            for key, label in (("read", "NodeReader.read"), ("entry", "_glance_entry (an agent file)"),
                               ("decode", "its glance decode")):
                t, n = spent[key]
                out.append(f"{label}: {n} calls, {t / max(n, 1) * 1e6:.1f} us each, {t / wall * 1e3:.2f} ms a second")
            out.append(f"collections by generation {gens['all']}, of them inside _glance_entry {gens['in entry']}; "
                       f"their CPU {sum(gc_cpu) / wall * 1e3:.2f} ms a second "
                       f"(by generation {', '.join(f'{c * 1e3:.1f}' for c in gc_cpu)} ms in all)")
            return "\n".join(out)
    return asyncio.run(go())


if __name__ == "__main__":
    sys.exit(main())
