"""Build the fake ``libnvidia-ml.so.1`` and write the scenarios it serves.

The NVML binding (runner/telemetry/nvmllib, as pynvml) loads the driver library once per
process with ``CDLL("libnvidia-ml.so.1")``, so a test points ``LD_LIBRARY_PATH`` at the directory :func:`build_fake_nvml` returns before the
process starts (see :func:`fake_env`), or hands the library path to the NVML backend
in-process. The fake re-reads the scenario file whenever it changes, so a test can change
values while the process under test runs; write it with :func:`write_scenario` (atomic).
"""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

SOURCE = Path(__file__).with_name("fake_nvml.c")
SCENARIO_ENV = "FAKE_NVML_SCENARIO"
LIBRARY_NAME = "libnvidia-ml.so.1"
MIB = 1024 * 1024

# NVML return codes a scenario may inject.
NOT_SUPPORTED = 3
NO_PERMISSION = 4
DRIVER_NOT_LOADED = 9
GPU_IS_LOST = 15

_EXPORT_RE = re.compile(r"^(?:nvmlReturn_t|const char \*)\s*(nvml\w+)\(", re.MULTILINE)


def exported_symbols() -> list[str]:
    """The NVML symbols the fake defines, read from its source."""
    return _EXPORT_RE.findall(SOURCE.read_text())


def default_cache_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"moeconsole-fake-nvml-{os.getuid()}"


def build_fake_nvml(dest_dir: Path | str | None = None, *, omit: Iterable[str] = ()) -> Path:
    """Compile the fake (once per source + ``omit`` set) and return the directory holding
    ``libnvidia-ml.so.1``. Symbols in ``omit`` are left out of the dynamic symbol table,
    the way an older driver simply lacks a newer function."""
    omit = sorted(set(omit))
    unknown = set(omit) - set(exported_symbols())
    if unknown:
        raise ValueError(f"fake NVML does not define {sorted(unknown)}")
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source + "\0".join(omit).encode()).hexdigest()[:16]
    libdir = Path(dest_dir or default_cache_dir()) / f"fake-nvml-{digest}"
    lib = libdir / LIBRARY_NAME
    if lib.is_file():
        return libdir
    libdir.mkdir(parents=True, exist_ok=True)
    keep = [s for s in exported_symbols() if s not in omit]
    script = libdir / f"exports.{os.getpid()}.map"
    script.write_text("{\n  global:\n" + "".join(f"    {s};\n" for s in keep) + "  local: *;\n};\n")
    tmp = libdir / f".{LIBRARY_NAME}.{os.getpid()}.tmp"
    cmd = ["gcc", "-shared", "-fPIC", "-O2", "-Wall", "-o", str(tmp), str(SOURCE),
           f"-Wl,--version-script={script}", f"-Wl,-soname,{LIBRARY_NAME}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"building the fake NVML failed:\n{done.stderr}")
        os.replace(tmp, lib)
    finally:
        script.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
    return libdir


@dataclass
class FakeGpu:
    """One GPU as the fake reports it; memory in MiB, power in W, like a user reads it."""
    name: str = "NVIDIA H200"
    uuid: str | None = None
    util_pct: int = 0
    mem_util_pct: int = 0
    mem_total_mib: float = 143771
    mem_base_used_mib: float = 0.5
    mem_reserved_mib: float = 0
    temp_c: int = 34
    power_w: float = 75.5
    power_limit_w: float = 700.0
    sm_clock_mhz: int = 1980
    mem_clock_mhz: int = 3201
    errors: dict[str, int] = field(default_factory=dict)  # NVML symbol -> return code


@dataclass
class FakeProc:
    """A process the fake lists on ``gpu`` while it is alive (or always, if ``persist``);
    ``sm_pct``/``mem_pct``: its utilisation sample (nvmlDeviceGetProcessUtilization), none when
    None (a process that ran no kernel lately)."""
    gpu: int
    pid: int
    used_mib: float
    persist: bool = False
    sm_pct: int | None = None
    mem_pct: int = 0


def _gpu_lines(index: int, g: FakeGpu) -> list[str]:
    uuid = g.uuid or f"GPU-{index:08x}-fake-4e1d-9c2b-{index:012x}"
    values = {
        "name": g.name, "uuid": uuid, "util_gpu": g.util_pct, "util_mem": g.mem_util_pct,
        "mem_total": int(g.mem_total_mib * MIB), "mem_base_used": int(g.mem_base_used_mib * MIB),
        "mem_reserved": int(g.mem_reserved_mib * MIB), "temp": g.temp_c,
        "power_mw": int(round(g.power_w * 1000)), "power_limit_mw": int(round(g.power_limit_w * 1000)),
        "sm_clock": g.sm_clock_mhz, "mem_clock": g.mem_clock_mhz,
    }
    lines = [f"gpu\t{index}\t{k}\t{v}" for k, v in values.items()]
    lines += [f"error\t{index}\t{sym}\t{code}" for sym, code in g.errors.items()]
    return lines


def _as_gpu(g: FakeGpu | Mapping) -> FakeGpu:
    return g if isinstance(g, FakeGpu) else FakeGpu(**g)


def _as_proc(p: FakeProc | Mapping) -> FakeProc:
    return p if isinstance(p, FakeProc) else FakeProc(**p)


def write_scenario(path: Path | str, gpus: int | Iterable[FakeGpu | Mapping] = 8,
                   processes: Iterable[FakeProc | Mapping] = (), missing: Iterable[str] = (), *,
                   driver: str = "550.54.15", init_error: int = 0,
                   call_log: Path | str | None = None) -> Path:
    """Write (atomically) the scenario the fake serves. ``gpus`` is a count of default
    H200s or a list of :class:`FakeGpu`/dicts; ``missing`` names NVML symbols that answer
    NVML_ERROR_FUNCTION_NOT_FOUND; ``init_error`` makes init fail (9 = driver not loaded)."""
    path = Path(path)
    gpu_list = [FakeGpu() for _ in range(gpus)] if isinstance(gpus, int) else [_as_gpu(g) for g in gpus]
    lines = ["# fake NVML scenario", f"driver\t{driver}"]
    if init_error:
        lines.append(f"init_error\t{init_error}")
    if call_log:
        lines.append(f"call_log\t{call_log}")
    lines += [f"missing\t{name}" for name in missing]
    for i, g in enumerate(gpu_list):
        lines += _gpu_lines(i, g)
    for p in map(_as_proc, processes):
        lines.append(f"proc\t{p.gpu}\t{p.pid}\t{int(p.used_mib * MIB)}" + ("\tpersist" if p.persist else ""))
        if p.sm_pct is not None:
            lines.append(f"putil\t{p.gpu}\t{p.pid}\t{int(p.sm_pct)}\t{int(p.mem_pct)}")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path


def fake_env(libdir: Path | str, scenario: Path | str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment for a child process that will load the fake instead of a driver."""
    env = dict(os.environ if base is None else base)
    env["LD_LIBRARY_PATH"] = os.pathsep.join([str(libdir)] + [p for p in [env.get("LD_LIBRARY_PATH")] if p])
    env[SCENARIO_ENV] = str(scenario)
    return env
