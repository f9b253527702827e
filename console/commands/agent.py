"""``moeconsole agent RUN [--interval S]``: the per-node telemetry agent.

Every interval it replaces ``<run_dir>/telemetry/<hostname>.json`` atomically with
``{"v":1, "t", "host", "gpu", ...}``, so a console on any node sharing the run directory
sees every node's GPUs. It stops, exit 0, when the run's state is terminal or on
SIGTERM/SIGINT.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from runner import jsonio, rundir
from runner.paths import runs_base
from runner.telemetry.gpu import get_backend
from runner.telemetry.host import host_snapshot

_SLICE_S = 0.1  # how often a sleeping agent looks at its stop flag


def telemetry_path(run: rundir.RunDir, host: str | None = None) -> Path:
    return run.telemetry / f"{host or rundir.hostname()}.json"


def _record(backend, interval: float) -> dict:
    return {"v": jsonio.SCHEMA_VERSION, "t": time.time(), "host": host_snapshot(),
            "gpu": backend.snapshot().to_dict(), "agent_pid": os.getpid(), "interval_s": interval}


def run(args) -> int:
    interval = float(args.interval)  # already in bounds.INTERVAL (the parser checks it)
    run_dir = rundir.resolve(runs_base(getattr(args, "runs_dir", None)), args.run)
    run_dir.telemetry.mkdir(parents=True, exist_ok=True)
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
            jsonio.atomic_write_json(out, _record(backend, interval))
            if run_dir.read_state().get("status") in rundir.TERMINAL:
                break
            while stop["signal"] is None and time.monotonic() - started < interval:
                time.sleep(min(_SLICE_S, max(0.0, interval - (time.monotonic() - started))))
    finally:
        backend.close()
    return 0
