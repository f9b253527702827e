"""GPU and host telemetry, blocker processes, safe kills and launch pre-flight.

UI-free: the Textual app, ``moeconsole gpus``, the node agent and the runner all read the
same snapshots. Modules: ``gpu`` (snapshot types, backend protocol, ``get_backend``),
``nvml`` (the NVML backend), ``host`` (CPU/RAM/load), ``procs`` (labelling processes),
``kill`` (checked kills, waiting for GPU memory), ``preflight`` (launch conditions).
Secrets in command lines are masked by :mod:`moeconsole.runner.rundir.secrets`.
"""
from __future__ import annotations

import importlib

# typing is not imported at run time: this package is the first thing the command line imports
# (``cpustat``, before anything heavy); mypy reads a module-level TYPE_CHECKING as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Each name is imported from its module on first use (PEP 562): a reader of GPU snapshots (the
# attached console) does not load the launch pre-flight and what it needs.
_HOME = {
    "GpuBackend": "gpu", "GpuInfo": "gpu", "GpuProcess": "gpu", "GpuSnapshot": "gpu", "NoGpuBackend": "gpu",
    "get_backend": "gpu", "host_snapshot": "host", "KillResult": "kill", "kill_checked": "kill",
    "wait_gpu_released": "kill", "ClearResult": "preflight", "PreflightResult": "preflight",
    "clear_for_launch": "preflight", "port_free": "preflight", "preflight": "preflight", "ProcInfo": "procs",
    "find_blockers": "procs",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"moeconsole.runner.telemetry.{_HOME[name]}"), name)
    raise AttributeError(f"module 'moeconsole.runner.telemetry' has no attribute {name!r}")


__all__ = [
    "GpuBackend", "GpuInfo", "GpuProcess", "GpuSnapshot", "NoGpuBackend", "get_backend", "host_snapshot",
    "KillResult", "kill_checked", "wait_gpu_released", "ClearResult", "PreflightResult", "clear_for_launch",
    "port_free", "preflight", "ProcInfo", "find_blockers",
]
