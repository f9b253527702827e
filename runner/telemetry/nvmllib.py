"""The NVML calls the backend makes, straight through ctypes: the few symbols ``nvml.py`` reads.

NVIDIA's binding (nvidia-ml-py's ``pynvml``) defines every NVML function and struct of the
driver API at import (1.9 MiB of resident memory imported after the console's app; the attached
console measured 1.4 MiB smaller without it), and the console reads fifteen symbols (issue 37: the console beside nvitop on a training node). Each function here
is pynvml's own for that symbol (nvidia-ml-py 12.x ``pynvml.py``: ``nvmlInitWithFlags``,
``_nvmlGetFunctionPointer``, ``nvmlDeviceGetMemoryInfo``, ``nvmlDeviceGetTemperatureV1``,
``nvmlDeviceGetComputeRunningProcesses_v3``/``_v2``, ``nvmlDeviceGetProcessUtilization`` ...):
the same struct layouts (``nvml.h``), the same sizing calls and buffer sizes, the same error
(``NVMLError`` with the NVML return code in ``value``; a symbol the library lacks raises it
with ``FUNCTION_NOT_FOUND``). The library is loaded once per process, as pynvml does:
``libnvidia-ml.so.1`` through the dynamic loader, or a file named by the caller.
"""
from __future__ import annotations

import threading
from ctypes import CDLL, Structure, byref, c_char_p, c_int, c_uint, c_ulonglong, c_void_p, create_string_buffer
from typing import Any

LIBRARY_NAME = "libnvidia-ml.so.1"

SUCCESS = 0
ERROR_INSUFFICIENT_SIZE = 7
ERROR_LIBRARY_NOT_FOUND = 12
ERROR_FUNCTION_NOT_FOUND = 13
ERROR_UNINITIALIZED = 1

NVML_TEMPERATURE_GPU = 0   # nvmlTemperatureSensors_t
NVML_CLOCK_SM = 1          # nvmlClockType_t
NVML_CLOCK_MEM = 2
nvmlMemory_v2 = 0x02000028        # NVML_STRUCT_VERSION(Memory, 2): sizeof(nvmlMemory_v2_t) | 2 << 24
nvmlTemperature_v1 = 0x0100000C   # sizeof(nvmlTemperature_v1_t) | 1 << 24
VALUE_NOT_AVAILABLE_ULL = 0xFFFFFFFFFFFFFFFF   # usedGpuMemory the driver cannot give (WDDM)

_NAME_BUFFER = 96     # NVML_DEVICE_NAME_V2_BUFFER_SIZE
_UUID_BUFFER = 96     # NVML_DEVICE_UUID_V2_BUFFER_SIZE
_DRIVER_BUFFER = 80   # NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

# pynvml's words for the codes (NVMLError._errcode_to_string); others ask nvmlErrorString
_WORDS = {1: "Uninitialized", 2: "Invalid Argument", 3: "Not Supported", 4: "Insufficient Permissions",
          5: "Already Initialized", 6: "Not Found", 7: "Insufficient Size", 8: "Insufficient External Power",
          9: "Driver Not Loaded", 10: "Timeout", 11: "Interrupt Request Issue",
          12: "NVML Shared Library Not Found", 13: "Function Not Found", 14: "Corrupted infoROM",
          15: "GPU is lost", 16: "GPU requires restart", 17: "The operating system has blocked the request.",
          18: "RM has detected an NVML/RM version mismatch.", 20: "Insufficient Memory", 999: "Unknown Error"}


class NVMLError(Exception):
    """An NVML call's return code other than success (``value``), worded as pynvml words it."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        words = _WORDS.get(self.value)
        if words is None:
            try:
                text = _symbol("nvmlErrorString", c_char_p)(self.value)
                words = text.decode(errors="replace") if text else None
            except NVMLError:
                words = None
        return words or f"NVML Error with code {self.value}"


class c_nvmlMemory_t(Structure):
    _fields_ = [("total", c_ulonglong), ("free", c_ulonglong), ("used", c_ulonglong)]


class c_nvmlMemory_v2_t(Structure):
    _fields_ = [("version", c_uint), ("total", c_ulonglong), ("reserved", c_ulonglong), ("free", c_ulonglong),
                ("used", c_ulonglong)]


class c_nvmlUtilization_t(Structure):
    _fields_ = [("gpu", c_uint), ("memory", c_uint)]


class c_nvmlTemperature_v1_t(Structure):
    _fields_ = [("version", c_uint), ("sensorType", c_uint), ("temperature", c_int)]


class c_nvmlProcessInfo_v2_t(Structure):   # also the _v3 call's element (pynvml: c_nvmlProcessInfo_v3_t)
    _fields_ = [("pid", c_uint), ("usedGpuMemory", c_ulonglong), ("gpuInstanceId", c_uint),
                ("computeInstanceId", c_uint)]


class c_nvmlProcessUtilizationSample_t(Structure):
    _fields_ = [("pid", c_uint), ("timeStamp", c_ulonglong), ("smUtil", c_uint), ("memUtil", c_uint),
                ("encUtil", c_uint), ("decUtil", c_uint)]


class ProcessInfo:
    """One listed process (pynvml's friendly object): ``usedGpuMemory`` None where unknown."""
    __slots__ = ("pid", "usedGpuMemory", "gpuInstanceId", "computeInstanceId")

    def __init__(self, raw: c_nvmlProcessInfo_v2_t) -> None:
        self.pid = raw.pid
        self.usedGpuMemory = None if raw.usedGpuMemory == VALUE_NOT_AVAILABLE_ULL else raw.usedGpuMemory
        self.gpuInstanceId = raw.gpuInstanceId
        self.computeInstanceId = raw.computeInstanceId


_lock = threading.Lock()
_lib: CDLL | None = None
_symbols: dict[str, Any] = {}


def load_library(path: str | None = None) -> None:
    """Load the library once per process (``path``: that file, else the dynamic loader's
    ``libnvidia-ml.so.1``). Raises NVMLError(LIBRARY_NOT_FOUND) when the loader finds none,
    the loader's OSError when the named file cannot be loaded, and ValueError when another
    file is loaded already."""
    global _lib
    with _lock:
        if _lib is None:
            try:
                _lib = CDLL(path or LIBRARY_NAME)
            except OSError:
                if path is not None:
                    raise
                raise NVMLError(ERROR_LIBRARY_NOT_FOUND) from None
        elif path is not None and getattr(_lib, "_name", None) != path:
            raise ValueError(f"NVML already uses {getattr(_lib, '_name', '?')} in this process")


def loaded_path() -> str | None:
    return None if _lib is None else getattr(_lib, "_name", None)


def _symbol(name: str, restype: Any = c_int) -> Any:
    fn = _symbols.get(name)
    if fn is None:
        with _lock:
            if _lib is None:
                raise NVMLError(ERROR_UNINITIALIZED)
            try:
                fn = getattr(_lib, name)
            except AttributeError:
                raise NVMLError(ERROR_FUNCTION_NOT_FOUND) from None
            fn.restype = restype
            _symbols[name] = fn
    return fn


def _check_return(ret: int) -> None:
    if ret != SUCCESS:
        raise NVMLError(ret)


def nvmlInit() -> None:
    load_library()
    _check_return(_symbol("nvmlInitWithFlags")(c_uint(0)))


def nvmlShutdown() -> None:
    _check_return(_symbol("nvmlShutdown")())


def nvmlSystemGetDriverVersion() -> str:
    buf = create_string_buffer(_DRIVER_BUFFER)
    _check_return(_symbol("nvmlSystemGetDriverVersion")(buf, c_uint(_DRIVER_BUFFER)))
    return buf.value.decode()


def nvmlDeviceGetCount() -> int:
    count = c_uint()
    _check_return(_symbol("nvmlDeviceGetCount_v2")(byref(count)))
    return count.value


def nvmlDeviceGetHandleByIndex(index: int) -> c_void_p:
    device = c_void_p()
    _check_return(_symbol("nvmlDeviceGetHandleByIndex_v2")(c_uint(index), byref(device)))
    return device


def _string_query(symbol: str, handle: c_void_p, size: int) -> str:
    buf = create_string_buffer(size)
    _check_return(_symbol(symbol)(handle, buf, c_uint(size)))
    return buf.value.decode()


def nvmlDeviceGetName(handle: c_void_p) -> str:
    return _string_query("nvmlDeviceGetName", handle, _NAME_BUFFER)


def nvmlDeviceGetUUID(handle: c_void_p) -> str:
    return _string_query("nvmlDeviceGetUUID", handle, _UUID_BUFFER)


def nvmlDeviceGetUtilizationRates(handle: c_void_p) -> c_nvmlUtilization_t:
    util = c_nvmlUtilization_t()
    _check_return(_symbol("nvmlDeviceGetUtilizationRates")(handle, byref(util)))
    return util


def nvmlDeviceGetMemoryInfo(handle: c_void_p, version: int | None = None) -> Any:
    if not version:
        mem: Any = c_nvmlMemory_t()
        fn = _symbol("nvmlDeviceGetMemoryInfo")
    else:
        mem = c_nvmlMemory_v2_t()
        mem.version = version
        fn = _symbol("nvmlDeviceGetMemoryInfo_v2")
    _check_return(fn(handle, byref(mem)))
    return mem


def nvmlDeviceGetTemperatureV(handle: c_void_p, sensor: int) -> int:
    temp = c_nvmlTemperature_v1_t()
    temp.version = nvmlTemperature_v1
    temp.sensorType = sensor
    _check_return(_symbol("nvmlDeviceGetTemperatureV")(handle, byref(temp)))
    return temp.temperature


def nvmlDeviceGetTemperature(handle: c_void_p, sensor: int) -> int:
    temp = c_uint()
    _check_return(_symbol("nvmlDeviceGetTemperature")(handle, c_uint(sensor), byref(temp)))
    return temp.value


def _uint(symbol: str, handle: c_void_p) -> int:
    value = c_uint()
    _check_return(_symbol(symbol)(handle, byref(value)))
    return value.value


def nvmlDeviceGetPowerUsage(handle: c_void_p) -> int:
    return _uint("nvmlDeviceGetPowerUsage", handle)


def nvmlDeviceGetEnforcedPowerLimit(handle: c_void_p) -> int:
    return _uint("nvmlDeviceGetEnforcedPowerLimit", handle)


def nvmlDeviceGetPowerManagementLimit(handle: c_void_p) -> int:
    return _uint("nvmlDeviceGetPowerManagementLimit", handle)


def nvmlDeviceGetClockInfo(handle: c_void_p, clock: int) -> int:
    mhz = c_uint()
    _check_return(_symbol("nvmlDeviceGetClockInfo")(handle, c_uint(clock), byref(mhz)))
    return mhz.value


def _running_processes(symbol: str, handle: c_void_p) -> list[ProcessInfo]:
    """pynvml's two-call pattern: ask the count, then room for twice as many and five more."""
    fn = _symbol(symbol)
    count = c_uint(0)
    ret = fn(handle, byref(count), None)
    if ret == SUCCESS:
        return []
    if ret != ERROR_INSUFFICIENT_SIZE:
        raise NVMLError(ret)
    count.value = count.value * 2 + 5
    procs = (c_nvmlProcessInfo_v2_t * count.value)()
    _check_return(fn(handle, byref(count), procs))
    return [ProcessInfo(procs[i]) for i in range(count.value)]


def nvmlDeviceGetComputeRunningProcesses_v3(handle: c_void_p) -> list[ProcessInfo]:
    return _running_processes("nvmlDeviceGetComputeRunningProcesses_v3", handle)


def nvmlDeviceGetComputeRunningProcesses_v2(handle: c_void_p) -> list[ProcessInfo]:
    return _running_processes("nvmlDeviceGetComputeRunningProcesses_v2", handle)


def nvmlDeviceGetProcessUtilization(handle: c_void_p, since_us: int) -> list[c_nvmlProcessUtilizationSample_t]:
    """Samples newer than ``since_us`` (microseconds); pynvml raises the first call's code
    unless it asks for room (INSUFFICIENT_SIZE), NOT_FOUND when no process had a sample."""
    fn = _symbol("nvmlDeviceGetProcessUtilization")
    count = c_uint(0)
    stamp = c_ulonglong(since_us)
    ret = fn(handle, None, byref(count), stamp)
    if ret != ERROR_INSUFFICIENT_SIZE:
        raise NVMLError(ret)
    samples = (c_nvmlProcessUtilizationSample_t * count.value)()
    _check_return(fn(handle, samples, byref(count), stamp))
    return list(samples[0:count.value])
