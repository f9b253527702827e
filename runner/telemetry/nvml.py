"""The NVML backend: every NVML call behind one wrapper that degrades field by field.

Each field is read through a chain of NVML symbols, newest first (e.g. the ``_v3`` process
query, then ``_v2``). A symbol the driver lacks (``NVMLError`` with FUNCTION_NOT_FOUND) is
remembered and skipped from then on; any other error makes just that field ``None`` with a
short reason. Names and UUIDs never change, so they are read once. The calls themselves are
``nvmllib``'s (pynvml's functions for the symbols read here, without the rest of its binding).
"""
from __future__ import annotations

import functools
import threading
import time
from pathlib import Path
from typing import Any, Callable

from moeconsole.runner.telemetry.gpu import GpuInfo, GpuProcess, GpuSnapshot, unavailable

LIBRARY_NAME = "libnvidia-ml.so.1"
MIB = 1024.0 * 1024.0

# NVML return codes (nvml.h); kept here so reasons read well without the library loaded.
_NOT_SUPPORTED = 3
_NO_PERMISSION = 4
_NOT_FOUND = 6
_DRIVER_NOT_LOADED = 9
_LIBRARY_NOT_FOUND = 12
_FUNCTION_NOT_FOUND = 13
_GPU_IS_LOST = 15
_LIB_RM_VERSION_MISMATCH = 18

_INIT_REASONS = {
    _LIBRARY_NOT_FOUND: f"NVIDIA driver library {LIBRARY_NAME} not found (no NVIDIA driver installed)",
    _DRIVER_NOT_LOADED: "NVIDIA driver not loaded",
    _NO_PERMISSION: "no permission to use NVML",
    _LIB_RM_VERSION_MISMATCH: "NVML library and kernel driver versions differ (driver updated without reboot?)",
    _FUNCTION_NOT_FOUND: "NVML library too old (init function missing)",
}

# NVML cannot start because no NVIDIA driver is there at all (not because it may not be asked):
# no CUDA device either (the driver ships libcuda with libnvidia-ml)
NO_DRIVER_REASONS = frozenset({_INIT_REASONS[_LIBRARY_NOT_FOUND], _INIT_REASONS[_DRIVER_NOT_LOADED]})

_FIELD_REASONS = {
    _FUNCTION_NOT_FOUND: "not in this driver",
    _NOT_SUPPORTED: "not supported",
    _NO_PERMISSION: "no permission",
    _GPU_IS_LOST: "GPU lost",
}


class NvmlUnavailable(Exception):
    """NVML cannot be used at all; the message is the user-facing reason."""


def _use_library_file(lib_path: Path | str) -> None:
    """Use this library file instead of asking the dynamic loader."""
    from moeconsole.runner.telemetry import nvmllib
    path = Path(lib_path)
    if path.is_dir():
        path = path / LIBRARY_NAME
    try:
        nvmllib.load_library(str(path))
    except OSError as exc:
        raise NvmlUnavailable(f"cannot load {path}: {exc}") from None
    except ValueError as exc:
        raise NvmlUnavailable(str(exc)) from None


def _proc_util(util_of: dict[int, tuple[float, float]] | None, pid: int) -> tuple[float | None, float | None]:
    """A listed process's (SM %, memory %): 0 without a sample in the last second (it ran no
    kernel: nvitop shows 0 too), None when the driver cannot give samples at all."""
    if util_of is None:
        return None, None
    return util_of.get(pid, (0.0, 0.0))


def _error_code(exc: BaseException) -> int:
    """NVML's return code of an NVMLError (-1 when the exception carries none)."""
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else -1


class NvmlBackend:
    name = "nvml"

    def __init__(self, lib_path: Path | str | None = None) -> None:
        from moeconsole.runner.telemetry import nvmllib
        self._nv = nvmllib
        if lib_path is not None:
            _use_library_file(lib_path)
        try:
            nvmllib.nvmlInit()
        except nvmllib.NVMLError as exc:
            raise NvmlUnavailable(_INIT_REASONS.get(_error_code(exc), f"NVML init failed: {exc}")) from None
        except OSError as exc:
            raise NvmlUnavailable(f"NVML init failed: {exc}") from None
        self._lock = threading.Lock()
        self._open = True
        self._missing: set[str] = set()
        self._handles: dict[int, Any] = {}
        self._static: dict[int, tuple[str | None, str | None]] = {}
        self._driver, _ = self._first([("nvmlSystemGetDriverVersion", nvmllib.nvmlSystemGetDriverVersion)])

    # -- the one wrapper ------------------------------------------------------------------
    def _first(self, ways: list[tuple[str, Callable[[], Any]]]) -> tuple[Any, str | None]:
        """The first way that works: (value, None); else (None, reason of the last failure)."""
        reason = "not in this driver"
        for symbol, call in ways:
            if symbol in self._missing:
                continue
            try:
                return call(), None
            except self._nv.NVMLError as exc:
                code = _error_code(exc)
                if code == _FUNCTION_NOT_FOUND:
                    self._missing.add(symbol)
                reason = _FIELD_REASONS.get(code) or str(exc)
            except Exception as exc:  # a ctypes-level surprise must not cost the snapshot
                reason = f"{type(exc).__name__}: {exc}"
        return None, reason

    # -- fields ---------------------------------------------------------------------------
    def _memory(self, h: Any) -> tuple[Any, str | None]:
        nv = self._nv
        ways = []
        if hasattr(nv, "nvmlMemory_v2"):  # v2: "used" excludes driver-reserved memory
            ways.append(("nvmlDeviceGetMemoryInfo_v2", lambda: nv.nvmlDeviceGetMemoryInfo(h, version=nv.nvmlMemory_v2)))
        ways.append(("nvmlDeviceGetMemoryInfo", lambda: nv.nvmlDeviceGetMemoryInfo(h)))
        return self._first(ways)

    def _temperature(self, h: Any) -> tuple[Any, str | None]:
        nv = self._nv
        ways = []
        if hasattr(nv, "nvmlDeviceGetTemperatureV"):
            ways.append(("nvmlDeviceGetTemperatureV", lambda: nv.nvmlDeviceGetTemperatureV(h, nv.NVML_TEMPERATURE_GPU)))
        ways.append(("nvmlDeviceGetTemperature", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)))
        return self._first(ways)

    def _processes(self, h: Any) -> tuple[Any, str | None]:
        nv = self._nv
        ways = [(f"nvmlDeviceGetComputeRunningProcesses_{v}", getattr(nv, f"nvmlDeviceGetComputeRunningProcesses_{v}"))
                for v in ("v3", "v2") if hasattr(nv, f"nvmlDeviceGetComputeRunningProcesses_{v}")]
        calls: list[tuple[str, Callable[[], Any]]] = [(sym, functools.partial(fn, h)) for sym, fn in ways]
        return self._first(calls)

    def _process_util(self, h: Any) -> tuple[dict[int, tuple[float, float]] | None, str | None]:
        """pid -> (SM %, memory %) from the newest utilisation sample of the last second (as
        nvitop asks: samples newer than now - 1 s, the newest per pid winning). NOT_FOUND is an
        answer, not a failure: no process ran a kernel in that second."""
        nv = self._nv
        symbol = "nvmlDeviceGetProcessUtilization"
        if symbol in self._missing or not hasattr(nv, symbol):
            return None, "not in this driver"
        since = int(time.time() * 1_000_000) - 1_000_000
        try:
            samples = nv.nvmlDeviceGetProcessUtilization(h, since)
        except nv.NVMLError as exc:
            code = _error_code(exc)
            if code == _NOT_FOUND:
                return {}, None
            if code == _FUNCTION_NOT_FOUND:
                self._missing.add(symbol)
            return None, _FIELD_REASONS.get(code) or str(exc)
        except Exception as exc:  # a ctypes-level surprise must not cost the snapshot
            return None, f"{type(exc).__name__}: {exc}"
        out: dict[int, tuple[float, float]] = {}
        for sample in sorted(samples, key=lambda x: x.timeStamp):
            out[int(sample.pid)] = (float(sample.smUtil), float(sample.memUtil))
        return out, None

    def _static_info(self, index: int, h: Any, na: dict[str, str]) -> tuple[str | None, str | None]:
        if index in self._static:
            return self._static[index]
        nv = self._nv
        name, why_name = self._first([("nvmlDeviceGetName", lambda: nv.nvmlDeviceGetName(h))])
        uuid, why_uuid = self._first([("nvmlDeviceGetUUID", lambda: nv.nvmlDeviceGetUUID(h))])
        if why_name is None and why_uuid is None:
            self._static[index] = (name, uuid)
        if why_name:
            na["name"] = why_name
        if why_uuid:
            na["uuid"] = why_uuid
        return name, uuid

    def _gpu(self, index: int) -> GpuInfo:
        nv = self._nv
        h = self._handles.get(index)
        if h is None:
            h, why = self._first([("nvmlDeviceGetHandleByIndex_v2", lambda: nv.nvmlDeviceGetHandleByIndex(index))])
            if h is None:
                fields = ("name", "uuid", "util_pct", "mem_used_mib", "mem_total_mib", "temp_c", "power_w",
                          "power_limit_w", "sm_clock_mhz", "mem_clock_mhz", "processes")
                return GpuInfo(index=index, na={f: f"no handle: {why}" for f in fields})
            self._handles[index] = h
        na: dict[str, str] = {}
        name, uuid = self._static_info(index, h, na)
        util, why = self._first([("nvmlDeviceGetUtilizationRates", lambda: nv.nvmlDeviceGetUtilizationRates(h))])
        if why:
            na["util_pct"] = why
        mem, why = self._memory(h)
        if why:
            na["mem_used_mib"] = na["mem_total_mib"] = why
        temp, why = self._temperature(h)
        if why:
            na["temp_c"] = why
        power, why = self._first([("nvmlDeviceGetPowerUsage", lambda: nv.nvmlDeviceGetPowerUsage(h))])
        if why:
            na["power_w"] = why
        limit, why = self._first([
            ("nvmlDeviceGetEnforcedPowerLimit", lambda: nv.nvmlDeviceGetEnforcedPowerLimit(h)),
            ("nvmlDeviceGetPowerManagementLimit", lambda: nv.nvmlDeviceGetPowerManagementLimit(h)),
        ])
        if why:
            na["power_limit_w"] = why
        sm, why = self._first([("nvmlDeviceGetClockInfo", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM))])
        if why:
            na["sm_clock_mhz"] = why
        memclk, why = self._first([("nvmlDeviceGetClockInfo", lambda: nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_MEM))])
        if why:
            na["mem_clock_mhz"] = why
        procs, why = self._processes(h)
        if why:
            na["processes"] = why
        util_of: dict[int, tuple[float, float]] | None = {}
        if procs:
            util_of, why = self._process_util(h)
            if why:
                na["process_util"] = why
        return GpuInfo(
            index=index, name=name, uuid=uuid,
            util_pct=None if util is None else float(util.gpu),
            mem_used_mib=None if mem is None else mem.used / MIB,
            mem_total_mib=None if mem is None else mem.total / MIB,
            temp_c=None if temp is None else float(temp),
            power_w=None if power is None else power / 1000.0,
            power_limit_w=None if limit is None else limit / 1000.0,
            sm_clock_mhz=None if sm is None else float(sm),
            mem_clock_mhz=None if memclk is None else float(memclk),
            processes=None if procs is None else tuple(
                GpuProcess(int(p.pid), None if p.usedGpuMemory is None else p.usedGpuMemory / MIB,
                           *(_proc_util(util_of, int(p.pid)))) for p in procs),
            na=na,
        )

    # -- protocol -------------------------------------------------------------------------
    def snapshot(self) -> GpuSnapshot:
        with self._lock:
            if not self._open:
                return unavailable("NVML backend closed", backend=self.name, driver=self._driver)
            count, why = self._first([("nvmlDeviceGetCount_v2", self._nv.nvmlDeviceGetCount)])
            if count is None:
                return unavailable(f"NVML cannot count GPUs: {why}", backend=self.name, driver=self._driver)
            if count == 0:
                return unavailable("NVML reports no GPU", backend=self.name, driver=self._driver)
            taken_at = time.time()
            gpus = tuple(self._gpu(i) for i in range(count))
            return GpuSnapshot(available=True, backend=self.name, reason=None, driver=self._driver,
                               taken_at=taken_at, gpus=gpus)

    def close(self) -> None:
        with self._lock:
            if not self._open:
                return
            self._open = False
            try:
                self._nv.nvmlShutdown()
            except Exception:
                pass  # a driver that vanished cannot be shut down; nothing to release
