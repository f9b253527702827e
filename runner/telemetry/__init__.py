"""GPU and host telemetry, blocker processes, safe kills and launch pre-flight.

UI-free: the Textual app, ``moeconsole gpus``, the node agent and the runner all read the
same snapshots. Modules: ``gpu`` (snapshot types, backend protocol, ``get_backend``),
``nvml`` (the NVML backend), ``host`` (CPU/RAM/load), ``procs`` (labelling processes),
``kill`` (checked kills, waiting for GPU memory), ``preflight`` (launch conditions).
Secrets in command lines are masked by :mod:`runner.rundir.secrets`.
"""
from runner.telemetry.gpu import GpuBackend, GpuInfo, GpuProcess, GpuSnapshot, NoGpuBackend, get_backend
from runner.telemetry.host import host_snapshot
from runner.telemetry.kill import KillResult, kill_checked, wait_gpu_released
from runner.telemetry.preflight import ClearResult, PreflightResult, clear_for_launch, port_free, preflight
from runner.telemetry.procs import ProcInfo, find_blockers

__all__ = [
    "GpuBackend", "GpuInfo", "GpuProcess", "GpuSnapshot", "NoGpuBackend", "get_backend", "host_snapshot",
    "KillResult", "kill_checked", "wait_gpu_released", "ClearResult", "PreflightResult", "clear_for_launch",
    "port_free", "preflight", "ProcInfo", "find_blockers",
]
