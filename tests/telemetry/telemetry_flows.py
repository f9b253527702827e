"""Telemetry flows run in a fresh interpreter, so the NVML binding loads the fake library the
test chose (it loads its library once per process). Each prints one JSON line.

    telemetry_flows.py clear PID [--run-id R] [--grace S] [--tolerance MIB]
    telemetry_flows.py launch --policy P [--devices 0,1] [--port N] [--run-id R] [--timeout S]
    telemetry_flows.py inproc LIBDIR
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from moeconsole.runner.telemetry.gpu import get_backend  # noqa: E402
from moeconsole.runner.telemetry.preflight import clear_for_launch  # noqa: E402
from moeconsole.runner.telemetry.kill import kill_checked, wait_gpu_released  # noqa: E402
from moeconsole.runner.telemetry.procs import find_blockers  # noqa: E402


def _devices(text: str | None) -> list[int] | None:
    return None if not text else [int(x) for x in text.split(",")]


def clear(a: argparse.Namespace) -> dict:
    """Find the process as a blocker, kill it by the checked rules, wait for its memory."""
    backend = get_backend()
    before = backend.snapshot()
    found = {p.pid: p for p in find_blockers(before, run_id=a.run_id)}
    target = found[a.pid]
    result = kill_checked(a.pid, target.start_time, grace_s=a.grace)
    released, seconds = wait_gpu_released(backend, {a.pid}, devices=list(target.gpus),
                                          tolerance_mib=a.tolerance, timeout_s=a.timeout, poll_s=0.05)
    after = backend.snapshot()
    backend.close()
    return {"found": target.to_dict(), "kill": result.to_dict(), "released": released, "seconds": seconds,
            "mem_before": [g.mem_used_mib for g in before.gpus], "mem_after": [g.mem_used_mib for g in after.gpus],
            "procs_after": [[p.pid for p in g.processes or ()] for g in after.gpus]}


def launch(a: argparse.Namespace) -> dict:
    backend = get_backend()
    res = clear_for_launch(backend, policy=a.policy, devices=_devices(a.devices), tolerance_mib=a.tolerance,
                           port=a.port, run_id=a.run_id, timeout_s=a.timeout, poll_s=0.1, grace_s=a.grace)
    backend.close()
    return res.to_dict()


def inproc(a: argparse.Namespace) -> dict:
    backend = get_backend(lib_path=a.libdir)
    snap = backend.snapshot().to_dict()
    backend.close()
    return {**snap, "modules": sorted(m for m in sys.modules if m.split(".")[0] == "pynvml")}


def main() -> None:
    top = argparse.ArgumentParser()
    sub = top.add_subparsers(dest="flow", required=True)
    p = sub.add_parser("clear")
    p.add_argument("pid", type=int)
    p.add_argument("--run-id")
    p.add_argument("--grace", type=float, default=5.0)
    p.add_argument("--tolerance", type=float, default=1024.0)
    p.add_argument("--timeout", type=float, default=30.0)
    p = sub.add_parser("launch")
    p.add_argument("--policy", required=True)
    p.add_argument("--devices")
    p.add_argument("--port", type=int)
    p.add_argument("--run-id")
    p.add_argument("--tolerance", type=float, default=1024.0)
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--grace", type=float, default=5.0)
    p = sub.add_parser("inproc")
    p.add_argument("libdir")
    a = top.parse_args()
    out = {"clear": clear, "launch": launch, "inproc": inproc}[a.flow](a)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
