"""GPU telemetry as immutable snapshots behind a small backend protocol.

The UI, ``moeconsole gpus --json``, the node agent and the runner's pre-flight all read the
same :class:`GpuSnapshot`, so they cannot disagree. A value the driver cannot give is
``None`` (shown as N/A, ``null`` in JSON) with a short reason in ``na``; no driver at all is a
snapshot with ``available=False`` and a reason, never an exception.

Backends: NVML now (:mod:`moeconsole.runner.telemetry.nvml`); another vendor (AMD amdsmi) can be added
by implementing :class:`GpuBackend` and teaching :func:`get_backend` to pick it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol, runtime_checkable


@dataclass(frozen=True)
class GpuProcess:
    """A compute process on one GPU as the driver lists it (the PID may belong to another
    PID namespace when the driver runs outside a container). ``sm_pct``/``mem_pct``: its share
    of the GPU's SM and memory-controller time in the last second (nvitop's per-process
    utilisation); None when the driver cannot say."""
    pid: int
    used_mib: float | None
    sm_pct: float | None = None
    mem_pct: float | None = None

    def to_dict(self) -> dict:
        return {"pid": self.pid, "used_mib": self.used_mib, "sm_pct": self.sm_pct, "mem_pct": self.mem_pct}


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str | None = None
    uuid: str | None = None
    util_pct: float | None = None
    mem_used_mib: float | None = None
    mem_total_mib: float | None = None
    temp_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    # None when the process query itself is unavailable (not the same as "no processes").
    processes: tuple[GpuProcess, ...] | None = None
    # field name -> why it is unavailable ("not in this driver", "not supported", ...)
    na: Mapping[str, str] = field(default_factory=dict)

    @property
    def mem_free_mib(self) -> float | None:
        if self.mem_used_mib is None or self.mem_total_mib is None:
            return None
        return self.mem_total_mib - self.mem_used_mib

    def to_dict(self) -> dict:
        return {
            "index": self.index, "name": self.name, "uuid": self.uuid, "util_pct": self.util_pct,
            "mem_used_mib": self.mem_used_mib, "mem_total_mib": self.mem_total_mib,
            "temp_c": self.temp_c, "power_w": self.power_w, "power_limit_w": self.power_limit_w,
            "sm_clock_mhz": self.sm_clock_mhz, "mem_clock_mhz": self.mem_clock_mhz,
            "processes": None if self.processes is None else [p.to_dict() for p in self.processes],
            "na": dict(self.na),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "GpuInfo":
        procs = d.get("processes")
        return cls(
            index=int(d["index"]), name=d.get("name"), uuid=d.get("uuid"), util_pct=d.get("util_pct"),
            mem_used_mib=d.get("mem_used_mib"), mem_total_mib=d.get("mem_total_mib"),
            temp_c=d.get("temp_c"), power_w=d.get("power_w"), power_limit_w=d.get("power_limit_w"),
            sm_clock_mhz=d.get("sm_clock_mhz"), mem_clock_mhz=d.get("mem_clock_mhz"),
            processes=None if procs is None else tuple(
                GpuProcess(int(p["pid"]), p.get("used_mib"), p.get("sm_pct"), p.get("mem_pct")) for p in procs),
            na=dict(d.get("na") or {}),
        )


@dataclass(frozen=True)
class GpuSnapshot:
    available: bool
    backend: str                      # "nvml" | "none"
    reason: str | None                # why not available
    driver: str | None
    taken_at: float
    gpus: tuple[GpuInfo, ...] = ()

    def gpu(self, index: int) -> GpuInfo | None:
        for g in self.gpus:
            if g.index == index:
                return g
        return None

    def pid_usage(self) -> dict[int, dict[int, float | None]]:
        """pid -> {gpu index: MiB used there} over every GPU whose process list is known."""
        usage: dict[int, dict[int, float | None]] = {}
        for g in self.gpus:
            for p in g.processes or ():
                usage.setdefault(p.pid, {})[g.index] = p.used_mib
        return usage

    def to_dict(self) -> dict:
        return {
            "available": self.available, "backend": self.backend, "reason": self.reason,
            "driver": self.driver, "taken_at": self.taken_at,
            "gpus": [g.to_dict() for g in self.gpus],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "GpuSnapshot":
        """Read back a snapshot written by ``to_dict`` (e.g. another node's agent file)."""
        return cls(
            available=bool(d.get("available")), backend=str(d.get("backend") or "none"),
            reason=d.get("reason"), driver=d.get("driver"), taken_at=float(d.get("taken_at") or 0.0),
            gpus=tuple(GpuInfo.from_dict(g) for g in d.get("gpus") or ()),
        )


def unavailable(reason: str, backend: str = "none", driver: str | None = None) -> GpuSnapshot:
    return GpuSnapshot(available=False, backend=backend, reason=reason, driver=driver, taken_at=time.time())


@runtime_checkable
class GpuBackend(Protocol):
    name: str

    def snapshot(self) -> GpuSnapshot: ...

    def close(self) -> None: ...


class NoGpuBackend:
    """The backend when no vendor library works: every snapshot says why, nothing raises."""
    name = "none"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def snapshot(self) -> GpuSnapshot:
        return unavailable(self.reason)

    def close(self) -> None:
        pass


# The device nodes of a GPU driver torch could train on without NVIDIA's: AMD's ROCm (``/dev/kfd``)
GPU_DEVICE_NODES = ("/dev/nvidiactl", "/dev/kfd")


def no_gpu_here(backend: Any, nodes: tuple[str, ...] = GPU_DEVICE_NODES) -> bool:
    """This machine has no GPU a training could use: NVML did not start because no NVIDIA driver is
    installed or loaded (``nvml.NO_DRIVER_REASONS``; not a refusal such as "no permission"), and no
    GPU driver's device node is there. A run's processes then count no GPU (``gpus_of_command``):
    its attempts cost hours on CPU, not GPU-hours (newcomer round 13: `torchrun --nproc_per_node 2`
    on a laptop was "2 GPUs")."""
    from moeconsole.runner.telemetry.nvml import NO_DRIVER_REASONS
    if getattr(backend, "name", None) != "none" or getattr(backend, "reason", None) not in NO_DRIVER_REASONS:
        return False
    return not any(Path(node).exists() for node in nodes)


def no_gpu_reason(backend: Any) -> str | None:
    """Why no training here can see a GPU (``no_gpu_here``: the backend's reason, e.g. NVML's library
    not found), else None: what the runner's pre-flight (``ConditionsCheck.no_gpu``) and lint say."""
    return str(getattr(backend, "reason", "") or "no NVIDIA driver") if no_gpu_here(backend) else None


def no_gpu_words(devices: Any, why: str) -> str:
    """What a recipe naming GPUs means on a machine without any (``no_gpu_here``): the runner's
    ``no_gpu_here`` warning (``Supervisor._say_no_gpu``) and lint's (``lint.check_gpu_here``) in one
    sentence, the GPUs counted and named and the way out."""
    devices = list(devices)
    shown = ",".join(map(str, devices))
    return (f"the recipe uses {len(devices)} GPU{'s' if len(devices) != 1 else ''} ({shown}), and this machine has "
            f"no GPU ({why}): attempts start without waiting for GPU memory, and the training sees no GPU; run it "
            f"on a GPU node, or set gpus.devices to [] for a run on CPU")


def get_backend(lib_path: Path | str | None = None) -> GpuBackend:
    """NVML if it loads and initialises, else a :class:`NoGpuBackend` carrying the reason.

    ``lib_path`` (a ``libnvidia-ml.so.1`` file or its directory) selects a specific library
    in this process; by default the dynamic loader finds the driver's."""
    from moeconsole.runner.telemetry.nvml import NvmlBackend, NvmlUnavailable

    try:
        return NvmlBackend(lib_path)
    except NvmlUnavailable as exc:
        return NoGpuBackend(str(exc))
