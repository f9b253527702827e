"""128 nodes' ``moeconsole agent`` files in one process: every node's GPUs from the real NVML
backend (the fake NVML library, 8 H200s), varied per node, written each interval into
``<run>/telemetry/<host>.json`` in the agent's own format (``moeconsole.console.commands.agent.record``)
with the node's ranks (8 per node). Planted problems: one node with a GPU nearly out of
memory, one node idling.

    python bench/sim_agents.py RUN_DIR --nodes 128 --interval 1 --full-mem 17 --idle 42
"""
from __future__ import annotations

import argparse
import random
import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from moeconsole.console.commands.agent import record  # noqa: E402
from moeconsole.runner.rundir import jsonio  # noqa: E402
from moeconsole.runner.telemetry.gpu import get_backend  # noqa: E402
from moeconsole.runner.telemetry.host import host_snapshot  # noqa: E402


def host_name(i: int) -> str:
    return f"gpu-node-{i:03d}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--nodes", type=int, default=128)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--full-mem", type=int, default=-1, help="node index with a GPU nearly out of memory")
    ap.add_argument("--idle", type=int, default=-1, help="node index whose GPUs idle")
    args = ap.parse_args()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    tel = args.run_dir / "telemetry"
    tel.mkdir(parents=True, exist_ok=True)
    backend = get_backend()
    rng = random.Random(1)
    host = host_snapshot()
    next_at = time.monotonic()
    while not stop:
        base = backend.snapshot().to_dict()  # one NVML sweep, as each agent makes on its node
        now = time.time()
        for i in range(args.nodes):
            gpu = {**base, "gpus": []}
            for g in base.get("gpus") or []:
                g = dict(g)
                total = g.get("mem_total_mib") or 143771.0
                g["mem_used_mib"] = total * (0.975 if (i == args.full_mem and g["index"] == 5) else 0.90) \
                    + rng.uniform(-300, 300)
                g["util_pct"] = 12 + rng.randint(0, 5) if i == args.idle else 92 + rng.randint(0, 7)
                g["temp_c"] = 60 + rng.randint(0, 12)
                g["power_w"] = 550.0 + rng.uniform(0, 100)
                gpu["gpus"].append(g)
            ranks = [{"pid": 10_000 + i * 16 + k, "name": "python", "rank": i * args.gpus + k, "local_rank": k,
                      "world_size": args.nodes * args.gpus} for k in range(args.gpus)]
            doc = record(gpu, {**host, "hostname": host_name(i)}, args.interval,
                         {"ranks": ranks, "processes": args.gpus + 2}, t=now, pid=20_000 + i)
            jsonio.atomic_write_json(tel / f"{host_name(i)}.json", doc)
        next_at += args.interval
        time.sleep(max(0.0, next_at - time.monotonic()))
    backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
