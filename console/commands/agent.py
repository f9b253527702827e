"""``moeconsole agent RUN [--interval S]``: the per-node telemetry agent.

Every interval it replaces ``<run_dir>/telemetry/<hostname>.json`` atomically with
``{"v":1, "t", "host", "gpu", "ranks", "processes", "interval_s", ...}``, so a console on any
node sharing the run directory sees every node's GPUs, which ranks run there (``RANK`` in the
environment of the run's processes on this node) and, from ``t``, the agent's heartbeat. It stops, exit 0, when the run's state is terminal or on
SIGTERM/SIGINT.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.rundir.paths import runs_base
from moeconsole.runner.telemetry.gpu import get_backend
from moeconsole.runner.telemetry.host import host_snapshot
from moeconsole.runner.telemetry.ranks import scan_node_ranks

_SLICE_S = 0.1  # how often a sleeping agent looks at its stop flag


def telemetry_path(run: rundir.RunDir, host: str | None = None) -> Path:
    return run.telemetry / f"{host or rundir.hostname()}.json"


def record(gpu: dict, host: dict, interval: float, node_view: dict, *, t: float | None = None,
           pid: int | None = None) -> dict:
    """One telemetry file's content (the format every reader of ``telemetry/*.json`` expects)."""
    return {"v": jsonio.SCHEMA_VERSION, "t": time.time() if t is None else t, "host": host, "gpu": gpu,
            "agent_pid": os.getpid() if pid is None else pid, "interval_s": interval, **node_view}


def _record(backend, interval: float, run_id: str) -> dict:
    return record(backend.snapshot().to_dict(), host_snapshot(), interval, scan_node_ranks(run_id))


def run(args) -> int:
    interval = float(args.interval)  # already in bounds.INTERVAL (the parser checks it)
    run_dir = rundir.resolve(runs_base(getattr(args, "runs_dir", None)), args.run)
    rundir.make_private_dir(run_dir.telemetry, exist_ok=True)
    out = telemetry_path(run_dir)

    stop = {"signal": None}

    def _on_signal(signum, _frame):
        stop["signal"] = signum

    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)

    backend = get_backend()
    try:
        while stop["signal"] is None:
            started = time.monotonic()
            jsonio.atomic_write_json(out, _record(backend, interval, run_dir.run_id))
            if run_dir.read_state().get("status") in rundir.TERMINAL:
                break
            while stop["signal"] is None and time.monotonic() - started < interval:
                time.sleep(min(_SLICE_S, max(0.0, interval - (time.monotonic() - started))))
    finally:
        backend.close()
    return 0
