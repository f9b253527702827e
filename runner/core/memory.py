"""GPU memory: the envelope of each GPU, its headroom and the parts of it, the trend of the
per-step peak and the forecast of an OOM, with one alert per cause.

Pure: ``MemoryWatch`` is fed :class:`Reading` values (NVML samples, the trainer's own memory
lines) and answers with plain data; the runner feeds it and writes what it says into
``state.json`` (``memory``), the crash report and ``events.jsonl``. Tests drive it with plain
values. docs/memory.md explains every number.

The parts of one GPU's memory at its steady peak (GiB)::

    capacity = steady peak + fragmentation + declared transients + effective headroom

- *device peak*: the per-step peak the sources report (NVML ``used``, torch's max reserved
  through Megatron's report or ms-swift's ``memory(GiB)``), robustly: the median of the last
  ``window`` per-step peaks, so a rare spike does not move it (while it grows: its trend line
  at the newest step);
- *fragmentation*: what torch's caching allocator holds reserved but unallocated (reserved -
  allocated), when a source gives both; it is free for small blocks only and not given back;
- *steady peak*: the device peak without that cache (tensors, CUDA context, NCCL buffers); when
  fragmentation is unknown the steady peak still contains it;
- *declared transients*: the recipe's ``memory.transients`` (one kernel's workspace, an NCCL
  buffer resize), which come on top of the steady peak now and then;
- *effective headroom*: what is left, checked against ``memory.min_headroom``.

The trend is read from the per-step peaks after a warm-up: at lags L (8, 32, 128 steps) the
per-step slopes between points L apart over the last 3L points; the series grows at a lag when
at least three quarters of those slopes are positive (a spike touches two of them, a step change
L of 2L: neither is growth), and the slope is their median. The forecast divides what is left
below capacity minus the declared transients by that slope.
"""
from __future__ import annotations

import collections
import math
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Iterable, Mapping, Sequence

from moeconsole.runner.core import bounds, schema
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.core.numbers import as_float

SCHEMA = 1
MIB = 1.0 / 1024.0              # one MiB in GiB
DEFAULT_MIN_HEADROOM_GIB = 500 * MIB
TREND_LAGS = (8, 32, 128)
GROWTH_QUANTILE = 0.25          # growing when this quantile of the slopes is above zero
SIGNIFICANCE = 6.0              # ... and the slope is this many standard errors above zero
RESOLUTION_GIB = 0.01           # the coarsest a source prints (ms-swift's memory(GiB) has 2 decimals)
KEEP_STEPS = 3 * max(TREND_LAGS) + 1
HISTORY_MAX = 2000              # per-GPU samples kept for a crash report (also bounded in time)
UPDATE_FRACTION = 0.25          # an alert's numbers moved this much (relative): worth an update
UPDATE_HEADROOM_GIB = 0.25      # ... or the tightest headroom moved this much
RESOLVE_MARGIN_GIB = 0.1        # a headroom alert ends once this far above the minimum
RUN_WIDE = None                 # the key of readings that name no GPU (the max over the run's GPUs)
NO_GPU_LABEL = "log (no GPU seen)"  # the run-wide track where NVML sees no GPU (``GpuEnvelope.label``)
PEAKS_SHOWN = 128               # the tightest GPU's newest per-step peaks in the state (a chart's data)

_SIZE_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?\d+)?)\s*([KMGT]i?B|B|bytes)?\s*$")
_SIZE_GIB = {"B": 1 / 1024 ** 3, "bytes": 1 / 1024 ** 3, "KiB": 1 / 1024 ** 2, "KB": 1 / 1024 ** 2,
             "MiB": 1 / 1024, "MB": 1 / 1024, "GiB": 1.0, "GB": 1.0, "TiB": 1024.0, "TB": 1024.0}


def parse_size_gib(value: Any, place: str) -> float:
    """A memory size from a recipe, in GiB: ``266MiB``, ``0.5 GiB``, ``512 MB`` (MB read as MiB
    and GB as GiB, as PyTorch and Megatron print them), or a bare number of GiB."""
    if isinstance(value, bool):
        raise InputError(f"{place}: expected a size such as 266MiB or 1.5GiB, got {value!r}")
    if isinstance(value, (int, float)):
        x = float(value)
    elif isinstance(value, str):
        m = _SIZE_RE.match(value)
        if not m:
            raise InputError(f"{place}: expected a size such as 266MiB or 1.5GiB, got {value!r}")
        x = float(m.group(1)) * _SIZE_GIB[m.group(2) or "GiB"]
    else:
        raise InputError(f"{place}: expected a size such as 266MiB or 1.5GiB, got {value!r}")
    if not math.isfinite(x) or x < 0:
        raise InputError(f"{place}: must be a finite size >= 0, got {value!r}")
    return x


def gib_text(x: float | None) -> str:
    """A size for a message: GiB with two decimals, or MiB below one GiB."""
    if x is None or not math.isfinite(x):
        return "?"
    if abs(x) < 1.0:
        return f"{x * 1024:.0f} MiB"
    return f"{x:.2f} GiB"


def mib_rate_text(gib_per_step: float) -> str:
    mib = gib_per_step * 1024
    return f"{mib:.1f} MiB/step" if abs(mib) < 100 else f"{mib:.0f} MiB/step"


def duration_text(seconds: float | None) -> str:
    """~40 s, ~12 min, ~3.4 h, ~2.1 d (a forecast is never more precise than that)."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    if seconds < 90:
        return f"~{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"~{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"~{seconds / 3600:.1f} h"
    return f"~{seconds / 86400:.1f} d"


# ------------------------------------------------------------------------- the allocator's env

ALLOC_CONF_RENAMED_IN = (2, 9)
ALLOC_CONF_NEW, ALLOC_CONF_OLD = "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"


def version_tuple(v: str | None) -> tuple[int, ...]:
    """'2.9.1+cu128' -> (2, 9, 1), '2.10.0a0' -> (2, 10, 0); () when unknown. The local part
    after '+' is ignored; each dotted part counts by its digits."""
    out: list[int] = []
    for part in (v or "").split("+")[0].split("."):
        digits = "".join(ch for ch in part if ch.isdigit())
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def alloc_conf_env(torch_version: str | None) -> str | None:
    """The environment variable the caching allocator's settings go in for this torch:
    ``PYTORCH_ALLOC_CONF`` from torch 2.9 (the old name is deprecated there),
    ``PYTORCH_CUDA_ALLOC_CONF`` before; None when the version is unknown."""
    vt = version_tuple(torch_version)
    if not vt:
        return None
    return ALLOC_CONF_NEW if vt >= ALLOC_CONF_RENAMED_IN else ALLOC_CONF_OLD


def alloc_conf_advice(torch_version: str | None, setting: str = "expandable_segments:True") -> str:
    """``NAME=setting`` for the run's torch, or both names with the version rule when unknown."""
    name = alloc_conf_env(torch_version)
    if name:
        return f"{name}={setting}"
    major, minor = ALLOC_CONF_RENAMED_IN
    return f"{ALLOC_CONF_NEW}={setting} (torch >= {major}.{minor}; {ALLOC_CONF_OLD} before)"


# ------------------------------------------------------------------------------ settings

SIZE_GIB = bounds.Range(0.0, float(1 << 20), unit="GiB")
Size = Annotated[float, schema.within(SIZE_GIB)] | Annotated[
    str, schema.text(_SIZE_RE.pattern, "a size such as 266MiB or 1.5GiB")]


class MemorySection(schema.Section, frozen=True):
    """The recipe's ``memory:`` section as written (sizes as text or GiB); ``MemorySettings`` is
    what the runner uses, with the sizes in GiB and the devices of ``gpus:``."""

    min_headroom: Size = DEFAULT_MIN_HEADROOM_GIB
    transients: dict[str, Size] | None = None   # name: size (fla_gdn_bwd: 266MiB)
    window: schema.PositiveCount = 64           # per-step peaks the device peak is the median of
    warmup_steps: schema.Count = 20             # first steps of an attempt left out of the trend
    horizon_steps: schema.Count = 20000         # a forecast further out than this (or than the
                                                # run's last step) is no alert
    critical_s: schema.Seconds = 1800.0         # an OOM expected sooner than this is critical
    critical_steps: schema.Count = 50           # ... or within this many steps
    min_update_steps: schema.Count = 10         # an alert's update is at least this many steps apart
    confirm_steps: schema.Count = 8             # a condition holds this long before its alert opens
    resolve_steps: schema.Count = 32            # ... and is gone this long before it is resolved
    history_s: schema.Seconds = 600.0           # per-GPU memory kept for a crash report
    model_config: schema.PathText | None = None  # config.json for lint's static estimate


_D = MemorySection()


@dataclass(frozen=True)
class MemorySettings:
    """The recipe's ``memory:`` section, plus the capacity and devices from ``gpus:``. The
    defaults are ``MemorySection``'s (one owner)."""

    capacity_gib: float | None = None          # gpus.memory_capacity_gib: used when NVML cannot say
    min_headroom_gib: float = DEFAULT_MIN_HEADROOM_GIB
    transients: tuple[tuple[str, float], ...] = ()   # (name, GiB)
    window: int = _D.window
    warmup_steps: int = _D.warmup_steps
    horizon_steps: int = _D.horizon_steps
    critical_s: float = _D.critical_s
    critical_steps: int = _D.critical_steps
    min_update_steps: int = _D.min_update_steps
    confirm_steps: int = _D.confirm_steps
    resolve_steps: int = _D.resolve_steps
    history_s: float = _D.history_s
    devices: tuple[int, ...] | None = None     # the run's physical GPUs (NVML indexes)
    visible: tuple[int, ...] | None = None     # CUDA_VISIBLE_DEVICES as physical indexes
    model_config: str | None = None            # config.json for lint's static estimate

    @property
    def transients_gib(self) -> float:
        return sum(v for _, v in self.transients)

    @classmethod
    def from_recipe(cls, section: Any, *, capacity_gib: float | None = None,
                    devices: Iterable[int] | None = None, env: Mapping[str, str] | None = None
                    ) -> "MemorySettings":
        """Validate a recipe's ``memory:`` mapping (``MemorySection``); InputError names the key
        ("memory.x: ...")."""
        sec = schema.convert({} if section is None else section, MemorySection, "memory")
        visible = visible_devices((env or {}).get("CUDA_VISIBLE_DEVICES"))
        devs = tuple(int(d) for d in devices) if devices else None
        return cls(capacity_gib=None if capacity_gib is None else float(capacity_gib),
                   min_headroom_gib=parse_size_gib(sec.min_headroom, "memory.min_headroom"),
                   transients=tuple((k, parse_size_gib(v, f"memory.transients.{k}"))
                                    for k, v in (sec.transients or {}).items()),
                   window=sec.window, warmup_steps=sec.warmup_steps, horizon_steps=sec.horizon_steps,
                   critical_s=sec.critical_s, critical_steps=sec.critical_steps,
                   min_update_steps=sec.min_update_steps, confirm_steps=sec.confirm_steps,
                   resolve_steps=sec.resolve_steps, history_s=sec.history_s, model_config=sec.model_config,
                   devices=devs or visible, visible=visible)


def visible_devices(text: str | None) -> tuple[int, ...] | None:
    """``CUDA_VISIBLE_DEVICES`` as physical GPU indexes; None when unset or not plain indexes
    (UUIDs, MIG names)."""
    if not text or not text.strip():
        return None
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


def physical_gpu(local_index: int, visible: tuple[int, ...] | None) -> int:
    """The NVML index of CUDA device ``local_index`` of a process (a rank's local rank, the GPU a
    torch OOM message names): its place in CUDA_VISIBLE_DEVICES, else itself."""
    if visible and local_index < len(visible):
        return visible[local_index]
    return local_index


def gpu_of_rank(rank: int, visible: tuple[int, ...] | None, per_node: int | None = None) -> int:
    """The GPU a global rank drives, assuming one GPU per rank and ranks filling a node in order
    (torchrun's and Slurm's default): local rank = rank mod ranks per node."""
    n = per_node or (len(visible) if visible else None)
    local = rank % n if n else rank
    return physical_gpu(local, visible)


# ------------------------------------------------------------------------------- readings

@dataclass(frozen=True)
class Reading:
    """One observation of one GPU's memory (GiB). ``gpu`` None with ``rank`` None: a number a
    trainer prints for the whole run (ms-swift's ``memory(GiB)`` is the max over its model-
    parallel group, Hugging Face's over the process's devices)."""

    source: str                       # "nvml", "megatron_mem", "deepspeed_mem", "log"
    step: int | None = None
    t: float | None = None
    gpu: int | None = None            # physical GPU index
    rank: int | None = None           # a global rank (mapped to a GPU with the visible devices)
    used_gib: float | None = None     # NVML: memory in use on the device (all processes)
    peak_gib: float | None = None     # the step's peak as the source gives it (memory(GiB))
    allocated_gib: float | None = None
    reserved_gib: float | None = None
    max_allocated_gib: float | None = None
    max_reserved_gib: float | None = None
    total_gib: float | None = None    # NVML: the device's capacity
    foreign_gib: float | None = None  # NVML: memory of processes that are not the run's

    def top(self) -> float | None:
        """The highest the device got in this reading (its contribution to the step's peak)."""
        vals = [v for v in (self.used_gib, self.peak_gib, self.max_reserved_gib, self.reserved_gib,
                            self.max_allocated_gib, self.allocated_gib) if v is not None and math.isfinite(v)]
        return max(vals) if vals else None

    def cache_gib(self) -> float | None:
        """Reserved but unallocated (the caching allocator's free blocks), when both are known."""
        if self.reserved_gib is not None and self.allocated_gib is not None:
            return max(0.0, self.reserved_gib - self.allocated_gib)
        if self.max_reserved_gib is not None and self.max_allocated_gib is not None:
            return max(0.0, self.max_reserved_gib - self.max_allocated_gib)
        return None


def readings_from_nvml(gpu: Mapping[str, Any] | None, *, step: int | None, t: float | None,
                       own_pids: Iterable[int] = (), devices: tuple[int, ...] | None = None) -> list[Reading]:
    """NVML samples (a ``GpuSnapshot.to_dict()``) as readings of the run's GPUs; memory of listed
    processes that are not the run's is ``foreign_gib``."""
    if not gpu or not gpu.get("available"):
        return []
    own = {int(p) for p in own_pids}
    out = []
    for g in gpu.get("gpus") or ():
        idx = g.get("index")
        if not isinstance(idx, int) or (devices is not None and idx not in devices):
            continue
        used, total = as_float(g.get("mem_used_mib")), as_float(g.get("mem_total_mib"))
        if used is None and total is None:
            continue
        procs = g.get("processes")
        foreign = None
        if procs is not None:
            foreign = sum(as_float(p.get("used_mib")) or 0.0 for p in procs if int(p.get("pid") or 0) not in own) * MIB
        out.append(Reading("nvml", step=step, t=t, gpu=idx, used_gib=None if used is None else used * MIB,
                           total_gib=None if total is None else total * MIB, foreign_gib=foreign))
    return out


# --------------------------------------------------------------------------------- trend

@dataclass(frozen=True)
class Trend:
    """The per-step peak's direction: ``growing`` (with its slope), ``stable``, or ``unknown``
    (fewer steps after the warm-up than the shortest lag needs)."""

    state: str
    gib_per_step: float | None = None
    level_gib: float | None = None     # the trend line at the newest step
    lag: int | None = None             # the lag that decided
    steps: int = 0                     # per-step peaks it looked at

    def to_dict(self) -> dict:
        return {"state": self.state, "gib_per_step": self.gib_per_step,
                "mib_per_step": None if self.gib_per_step is None else self.gib_per_step * 1024,
                "level_gib": self.level_gib, "lag": self.lag, "steps": self.steps}


def _quantile(sorted_vals: list[float], q: float) -> float:
    pos = q * (len(sorted_vals) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def trend(steps: list[int], peaks: list[float], lags: tuple[int, ...] = TREND_LAGS) -> Trend:
    """The robust trend of per-step peaks (see the module docstring). ``steps`` increase.

    At each lag L with at least 3L points: the slopes between the 2L pairs of points L apart
    among the last 3L (one step change moves L of them, half). Growing at L when three quarters of them are positive *and* their median slope is
    more than ``SIGNIFICANCE`` standard errors above zero, the error estimated from the median
    absolute deviation around that line (never below the sources' ``RESOLUTION_GIB``): jitter that
    happens to lean upwards is not a leak. The longest lag that says growing gives the slope;
    none: stable."""
    n = len(peaks)
    decided: Trend | None = None
    evaluated = False
    for lag in sorted(lags):
        m = 3 * lag
        if n < m:
            continue       # a part-filled window would let one step change fill 3/4 of the pairs
        xs, ys = steps[n - m:], peaks[n - m:]
        slopes = sorted((ys[i] - ys[i - lag]) / max(1, xs[i] - xs[i - lag]) for i in range(lag, m))
        evaluated = True
        if _quantile(slopes, GROWTH_QUANTILE) <= 0:
            continue
        slope = _quantile(slopes, 0.5)
        intercepts = sorted(y - slope * x for x, y in zip(xs, ys))
        mid = _quantile(intercepts, 0.5)
        sigma = max(1.4826 * _quantile(sorted(abs(c - mid) for c in intercepts), 0.5), RESOLUTION_GIB)
        if slope * (xs[-1] - xs[0]) * math.sqrt(m / 12.0) <= SIGNIFICANCE * sigma:
            continue
        decided = Trend("growing", slope, mid + slope * xs[-1], lag, n)
    if decided is not None:
        return decided
    if evaluated:
        level = _quantile(sorted(peaks[-min(n, 64):]), 0.5)
        return Trend("stable", 0.0, level, None, n)
    return Trend("unknown", None, None, None, n)


@dataclass(frozen=True)
class Forecast:
    """When the growing per-step peak reaches the capacity minus the declared transients."""

    steps: int | None                  # steps from the newest one (None: no capacity or not growing)
    at_step: int | None
    seconds: float | None
    room_gib: float | None             # what was left below capacity - transients

    def to_dict(self) -> dict:
        return {"oom_in_steps": self.steps, "oom_at_step": self.at_step, "oom_in_s": self.seconds,
                "room_gib": self.room_gib}


def forecast(tr: Trend, last_step: int | None, capacity_gib: float | None, transients_gib: float,
             step_time_s: float | None) -> Forecast:
    if tr.state != "growing" or not tr.gib_per_step or tr.level_gib is None or capacity_gib is None:
        return Forecast(None, None, None, None)
    room = capacity_gib - transients_gib - tr.level_gib
    k = max(0, int(math.ceil(room / tr.gib_per_step)))
    secs = k * step_time_s if step_time_s else None
    return Forecast(k, None if last_step is None else last_step + k, secs, room)


# ------------------------------------------------------------------------------ envelope

@dataclass
class _Track:
    """One GPU (or the run-wide max): per-step peaks, the newest parts, a timed history."""

    key: int | None
    cur_step: int | None = None
    cur_peak: float | None = None
    cur_t: float | None = None
    steps: collections.deque = field(default_factory=lambda: collections.deque(maxlen=KEEP_STEPS))
    peaks: collections.deque = field(default_factory=lambda: collections.deque(maxlen=KEEP_STEPS))
    times: collections.deque = field(default_factory=lambda: collections.deque(maxlen=KEEP_STEPS))
    seen_steps: int = 0                    # finished steps this attempt (warm-up counts too)
    used: float | None = None
    total: float | None = None
    allocated: float | None = None
    reserved: float | None = None
    cache: float | None = None
    foreign: float | None = None
    sources: set = field(default_factory=set)
    history: collections.deque = field(default_factory=lambda: collections.deque(maxlen=HISTORY_MAX))
    history_at: collections.deque = field(default_factory=lambda: collections.deque(maxlen=HISTORY_MAX))  # its trim clock
    read: Trend = field(default_factory=lambda: Trend("unknown"))
    stale: bool = False

    @property
    def trend(self) -> Trend:
        if self.stale:
            self.read, self.stale = trend(list(self.steps), list(self.peaks)), False
        return self.read

    def restart(self) -> None:
        self.cur_step = self.cur_peak = self.cur_t = None
        self.steps.clear()
        self.peaks.clear()
        self.times.clear()
        self.seen_steps = 0
        self.read, self.stale = Trend("unknown"), False
        self.cache = self.allocated = self.reserved = None


@dataclass(frozen=True)
class GpuEnvelope:
    """One GPU's memory now (GiB); ``gpu`` None is the run-wide max a log gave without a rank."""

    gpu: int | None
    capacity_gib: float | None
    capacity_source: str | None        # "nvml" | "recipe"
    device_peak_gib: float | None      # median of the recent per-step peaks
    max_gib: float | None              # the highest recent per-step peak
    max_step: int | None
    used_gib: float | None             # NVML now
    allocated_gib: float | None
    reserved_gib: float | None
    fragmentation_gib: float | None
    steady_peak_gib: float | None
    transients_gib: float
    headroom_gib: float | None         # capacity - device peak
    effective_headroom_gib: float | None
    min_headroom_gib: float
    foreign_gib: float | None
    step: int | None
    sources: tuple[str, ...]
    trend: Trend
    forecast: Forecast
    no_gpu: bool = False               # NVML sees no GPU on this machine (``MemoryWatch.no_gpu``)

    @property
    def label(self) -> str:
        """What the envelope measures, as every view names it (the chart's heading, ``--json``'s
        ``label``). The run-wide track is the trainer's max over its GPUs; on a machine where
        NVML sees no GPU (the demo on a laptop) it is whatever the log's memory figure measures
        there (the demo's: its process's resident memory), never "all GPUs"."""
        if self.gpu is not None:
            return f"GPU {self.gpu}"
        return NO_GPU_LABEL if self.no_gpu else "all GPUs (max)"

    @property
    def ok(self) -> bool | None:
        if self.effective_headroom_gib is None:
            return None
        return self.effective_headroom_gib >= self.min_headroom_gib

    def to_dict(self) -> dict:
        return {"gpu": self.gpu, "label": self.label, "no_gpu": self.no_gpu, "capacity_gib": self.capacity_gib,
                "capacity_source": self.capacity_source, "device_peak_gib": self.device_peak_gib,
                "max_gib": self.max_gib, "max_step": self.max_step, "used_gib": self.used_gib,
                "allocated_gib": self.allocated_gib, "reserved_gib": self.reserved_gib,
                "fragmentation_gib": self.fragmentation_gib, "steady_peak_gib": self.steady_peak_gib,
                "transients_gib": self.transients_gib, "headroom_gib": self.headroom_gib,
                "effective_headroom_gib": self.effective_headroom_gib, "min_headroom_gib": self.min_headroom_gib,
                "ok": self.ok, "foreign_gib": self.foreign_gib, "step": self.step, "sources": list(self.sources),
                "trend": self.trend.to_dict(), "forecast": self.forecast.to_dict()}


def _tightness(e: GpuEnvelope) -> tuple:
    eff = e.effective_headroom_gib
    k = e.forecast.steps
    return (eff is None, eff if eff is not None else math.inf, k is None, k if k is not None else 0,
            -1 if e.gpu is None else e.gpu)


@dataclass
class _Episode:
    """One cause's alert: the condition's streak before it opens or closes, and what was last told."""

    since: int | None = None          # the step the condition (alert or all clear) began
    is_open: bool = False
    opened_step: int | None = None
    level: str = ""
    told_step: int | None = None
    told: float | None = None         # the number the last event carried (OOM step, headroom)
    gpu: int | None = None
    updates: int = 0
    clear_since: int | None = None
    now: str = ""                     # the message as it reads at the last evaluation (state.json)


class MemoryWatch:
    """The memory of one run's GPUs. ``observe`` readings, then ``envelopes()`` (tightest first),
    ``alerts()`` (new alert events), ``to_dict()`` (``state.json``'s ``memory``) and
    ``history(gpu)`` (for a crash report)."""

    def __init__(self, settings: MemorySettings | None = None, *, max_steps: int | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        """``clock``: what the history kept for a crash report is trimmed by (``history_s``): the
        runner gives ``time.monotonic`` (a step of the wall clock, NTP or ``date -s``, never
        empties it or keeps it past its span); without one, the readings' own ``t`` (simulated
        time)."""
        self.settings = settings or MemorySettings()
        self.clock = clock
        self.max_steps = max_steps
        self.step_time_s: float | None = None
        self.tracks: dict[int | None, _Track] = {}
        self.last_step: int | None = None
        self.static: dict | None = None          # lint's static estimate (per GPU), when known
        self.no_gpu = False   # NVML answered that it sees no GPU here: the log's figure is not a GPU's
        self._open: dict[str, _Episode] = {}

    # -- input ---------------------------------------------------------------------------
    def new_attempt(self) -> None:
        """A restart: the envelope and the trend start afresh (the history stays), and so do the
        alerts: the attempt's end closed its episodes (``attempt_end`` resolves them for every
        reader, moeconsole.runner.rundir.alertgroups), a new attempt opens its own, and nothing is said to
        be "stable again" about an attempt that has no data yet."""
        for tr in self.tracks.values():
            tr.restart()
        self.last_step = None
        self._open = {}

    def _track(self, key: int | None) -> _Track:
        tr = self.tracks.get(key)
        if tr is None:
            tr = self.tracks[key] = _Track(key)
        return tr

    def _at_step(self, tr: _Track, step: int, top: float | None, t: float | None) -> None:
        """A value of ``step``: a later step finishes the one before, an earlier one is a restart."""
        if tr.cur_step is not None and step < tr.cur_step:
            tr.restart()     # the step went back: a new attempt resumed from an older step
        if tr.cur_step is not None and step > tr.cur_step:
            self._finish(tr)
        if tr.cur_step != step:
            tr.cur_step, tr.cur_peak, tr.cur_t = step, None, t
        if top is not None:
            tr.cur_peak = top if tr.cur_peak is None else max(tr.cur_peak, top)
        if self.last_step is None or step > self.last_step:
            self.last_step = step

    def _remember(self, tr: _Track, t: float | None, item: dict) -> None:
        at = self.clock() if self.clock is not None else t
        tr.history.append(item)
        tr.history_at.append(at)
        if at is not None:
            while tr.history and tr.history_at[0] is not None and at - tr.history_at[0] > self.settings.history_s:
                tr.history.popleft()
                tr.history_at.popleft()

    def observe(self, r: Reading) -> None:
        s = self.settings
        key = r.gpu
        if key is None and r.rank is not None:
            key = gpu_of_rank(r.rank, s.visible)
        if r.source == "nvml" and s.devices is not None and key not in s.devices:
            return
        tr = self._track(key)
        top = r.top()
        if r.step is not None:
            self._at_step(tr, r.step, top, r.t)
        tr.sources.add(r.source)
        if r.used_gib is not None:
            tr.used = r.used_gib
        if r.total_gib is not None:
            tr.total = r.total_gib
        if r.foreign_gib is not None:
            tr.foreign = r.foreign_gib
        if r.allocated_gib is not None or r.max_allocated_gib is not None:
            tr.allocated = r.allocated_gib if r.allocated_gib is not None else r.max_allocated_gib
        if r.reserved_gib is not None or r.max_reserved_gib is not None:
            tr.reserved = r.reserved_gib if r.reserved_gib is not None else r.max_reserved_gib
        cache = r.cache_gib()
        if cache is not None:
            tr.cache = cache
        if r.t is not None or r.step is not None:
            self._remember(tr, r.t, {"t": r.t, "step": r.step, "source": r.source, "used_gib": r.used_gib,
                                     "peak_gib": top, "allocated_gib": r.allocated_gib,
                                     "reserved_gib": r.reserved_gib, "foreign_gib": r.foreign_gib})

    def observe_log_peaks(self, steps: Sequence[int], peaks: Sequence[float], t: float | None) -> None:
        """Many rank-less peaks of one batch (a trainer's ``memory(GiB)`` column): the same as
        ``observe(Reading("log", step=s, t=t, peak_gib=p))`` for each finite positive p, in a
        fraction of the time (the live runner feeds thousands of rows per log slice)."""
        tr = self._track(RUN_WIDE)
        kept = [(int(st), float(p)) for st, p in zip(steps, peaks) if p == p and 0 < p < math.inf]
        if not kept:
            return
        for st, p in kept:
            self._at_step(tr, st, p, t)
        tr.sources.add("log")
        for st, p in kept[-HISTORY_MAX:]:
            self._remember(tr, t, {"t": t, "step": st, "source": "log", "used_gib": None, "peak_gib": p,
                                   "allocated_gib": None, "reserved_gib": None, "foreign_gib": None})

    def _finish(self, tr: _Track) -> None:
        """The track's current step is over: its peak joins the series, the trend is read again."""
        tr.seen_steps += 1
        if tr.cur_peak is None or tr.cur_step is None:
            return
        if tr.seen_steps <= self.settings.warmup_steps:
            return
        tr.steps.append(tr.cur_step)
        tr.peaks.append(tr.cur_peak)
        tr.times.append(tr.cur_t)
        tr.stale = True     # read again when asked (once per batch, not once per step)

    # -- output --------------------------------------------------------------------------
    def capacity(self, tr: _Track) -> tuple[float | None, str | None]:
        """NVML's total for the GPU (the run-wide track: the smallest of the run's), else the
        recipe's ``gpus.memory_capacity_gib``."""
        if tr.total is not None:
            return tr.total, "nvml"
        if tr.key is RUN_WIDE:
            totals = [t.total for k, t in self.tracks.items() if k is not RUN_WIDE and t.total is not None]
            if totals:
                return min(totals), "nvml"
        if self.settings.capacity_gib is not None:
            return self.settings.capacity_gib, "recipe"
        return None, None

    def envelope(self, tr: _Track) -> GpuEnvelope:
        s = self.settings
        cap, cap_src = self.capacity(tr)
        recent = list(tr.peaks)[-s.window:]
        if tr.cur_peak is not None and (not tr.steps or tr.cur_step != tr.steps[-1]):
            recent = recent + [tr.cur_peak]
        peak = _quantile(sorted(recent), 0.5) if recent else (tr.used if tr.used is not None else None)
        if tr.trend.state == "growing" and tr.trend.level_gib is not None:
            peak = tr.trend.level_gib      # a growing envelope is where its trend line is now
        top = max(recent) if recent else None
        top_step = None
        if top is not None:
            pairs = list(zip(list(tr.steps)[-s.window:], list(tr.peaks)[-s.window:]))
            if tr.cur_peak is not None and tr.cur_step is not None:
                pairs.append((tr.cur_step, tr.cur_peak))
            top_step = next((st for st, v in reversed(pairs) if v == top), None)
        frag = tr.cache
        steady = None if peak is None else (peak - frag if frag is not None and frag <= peak else peak)
        trans = s.transients_gib
        head = eff = None
        if cap is not None and peak is not None and steady is not None:
            head = cap - peak
            # capacity = steady + fragmentation + transients + effective (the parts never overlap:
            # the steady peak is the device peak without the allocator's cache)
            eff = cap - steady - (peak - steady) - trans
        fc = forecast(tr.trend, tr.steps[-1] if tr.steps else tr.cur_step, cap, trans, self.step_time_s)
        return GpuEnvelope(gpu=tr.key, capacity_gib=cap, capacity_source=cap_src, device_peak_gib=peak,
                           max_gib=top, max_step=top_step, used_gib=tr.used, allocated_gib=tr.allocated,
                           reserved_gib=tr.reserved, fragmentation_gib=frag, steady_peak_gib=steady,
                           transients_gib=trans, headroom_gib=head, effective_headroom_gib=eff,
                           min_headroom_gib=s.min_headroom_gib, foreign_gib=tr.foreign,
                           step=tr.cur_step, sources=tuple(sorted(tr.sources)), trend=tr.trend, forecast=fc,
                           no_gpu=self.no_gpu and not any(k is not RUN_WIDE for k in self.tracks))

    def envelopes(self) -> list[GpuEnvelope]:
        """Every GPU with something known, tightest first (least effective headroom, then the
        soonest forecast OOM)."""
        envs = [self.envelope(tr) for tr in self.tracks.values()
                if tr.cur_peak is not None or tr.used is not None or tr.peaks]
        return sorted(envs, key=_tightness)

    def peaks(self, gpu: int | None, keep: int = PEAKS_SHOWN) -> list[list[float]]:
        """``[[step, peak GiB], ...]``: the newest ``keep`` finished per-step peaks of a GPU (after
        the warm-up, this attempt), then the step in progress."""
        tr = self.tracks.get(gpu)
        if tr is None:
            return []
        out = [[st, round(p, 3)] for st, p in zip(tr.steps, tr.peaks)]
        if tr.cur_step is not None and tr.cur_peak is not None and (not tr.steps or tr.cur_step != tr.steps[-1]):
            out.append([tr.cur_step, round(tr.cur_peak, 3)])
        return out[-keep:]

    def history(self, gpu: int | None) -> list[dict]:
        tr = self.tracks.get(gpu)
        return list(tr.history) if tr else []

    def trend_of(self, gpu: int | None) -> Trend | None:
        tr = self.tracks.get(gpu)
        return tr.trend if tr else None

    def to_dict(self) -> dict:
        s = self.settings
        envs = self.envelopes()
        gpus = [e.to_dict() for e in envs]
        static = self.static
        if envs:   # the tightest GPU's per-step peaks: a memory chart for a log with no memory field
            gpus[0]["peaks"] = self.peaks(envs[0].gpu)
        for d in gpus:
            per = (static or {}).get("per_gpu_gib")
            d["static_gib"] = per
            d["activations_workspace_gib"] = (d["steady_peak_gib"] - per
                                              if per is not None and d["steady_peak_gib"] is not None else None)
        return {"v": SCHEMA, "min_headroom_gib": s.min_headroom_gib,
                "transients": {k: v for k, v in s.transients}, "transients_gib": s.transients_gib,
                "step_time_s": self.step_time_s, "step": self.last_step, "gpus": gpus,
                "tightest": gpus[0]["gpu"] if gpus else None, "static": static,
                "alerts": {k: {"level": e.level, "opened_step": e.opened_step, "gpu": e.gpu, "message": e.now}
                           for k, e in self._open.items() if e.is_open}}

    # -- alerts --------------------------------------------------------------------------
    def alerts(self) -> list[dict]:
        """New alert events since the last call, one cause each (``mem_forecast``,
        ``mem_headroom``): opened once its condition has held ``confirm_steps`` steps, updated
        when its numbers move (a forecast OOM step by more than a quarter of the steps left, a
        headroom by ``UPDATE_HEADROOM_GIB``) or its level or GPU changes, resolved once the
        condition has been gone ``resolve_steps`` steps. Every event carries ``cause``,
        ``opened_step`` and ``update`` (0 when opened); a resolution has level ``info``."""
        envs = self.envelopes()
        return self._forecast_alert(envs) + self._headroom_alert(envs)

    def _remaining(self) -> int | None:
        if self.max_steps and self.last_step is not None:
            return max(0, self.max_steps - self.last_step)
        return None

    def _forecast_alert(self, envs: list[GpuEnvelope]) -> list[dict]:
        s = self.settings
        growing = [e for e in envs if e.trend.state == "growing"]
        with_k = sorted((e for e in growing if e.forecast.steps is not None), key=lambda e: e.forecast.steps or 0)
        worst = with_k[0] if with_k else (max(growing, key=lambda e: e.trend.gib_per_step or 0) if growing else None)
        if worst is None:
            return self._condition("mem_forecast", None, "memory stable again", {}, None, None)
        fc, tr = worst.forecast, worst.trend
        rate = mib_rate_text(tr.gib_per_step or 0.0)
        values = {"gpu": worst.gpu, "gib_per_step": tr.gib_per_step, "level_gib": tr.level_gib,
                  "oom_in_steps": fc.steps, "oom_at_step": fc.at_step, "oom_in_s": fc.seconds,
                  "capacity_gib": worst.capacity_gib, "transients_gib": worst.transients_gib}
        if fc.steps is None:
            message = (f"memory on {worst.label} is growing {rate}, now {gib_text(tr.level_gib)}; no capacity "
                       f"is known, so no OOM forecast")
            return self._condition("mem_forecast", "warning", message, values, None, worst.gpu)
        remaining = self._remaining()
        if fc.steps > s.horizon_steps or (remaining is not None and fc.steps > remaining):
            end = f"the run's last step ({self.max_steps:,})" if remaining is not None and fc.steps > remaining \
                else f"{s.horizon_steps:,} steps"
            return self._condition("mem_forecast", None, f"memory still growing {rate} on {worst.label}, but "
                                   f"the forecast OOM (~{fc.steps:,} steps) is beyond {end}", values, None, None)
        crit = fc.steps <= s.critical_steps or (fc.seconds is not None and fc.seconds <= s.critical_s)
        when = f"OOM in ~{fc.steps:,} steps" + (f" ({duration_text(fc.seconds)})" if fc.seconds else "")
        trans = f" - {gib_text(worst.transients_gib)} declared transients" if worst.transients_gib else ""
        message = (f"{when} on {worst.label}: memory growing {rate}, now {gib_text(tr.level_gib)}; "
                   f"{gib_text(fc.room_gib)} left below {gib_text(worst.capacity_gib)} capacity{trans}")
        return self._condition("mem_forecast", "critical" if crit else "warning", message, values,
                               float(fc.at_step) if fc.at_step is not None else None, worst.gpu,
                               moved=lambda told, now: abs(now - told) > UPDATE_FRACTION * max(fc.steps or 0, 4))

    def _headroom_alert(self, envs: list[GpuEnvelope]) -> list[dict]:
        s = self.settings
        known = [e for e in envs if e.effective_headroom_gib is not None]
        if not known:
            return []
        e = known[0]
        eff = e.effective_headroom_gib
        assert eff is not None
        ep = self._open.get("mem_headroom")
        threshold = s.min_headroom_gib + (RESOLVE_MARGIN_GIB if ep is not None and ep.is_open else 0.0)
        if eff >= threshold:
            return self._condition("mem_headroom", None, f"effective headroom back to {gib_text(eff)} on {e.label}",
                                   {"gpu": e.gpu, "effective_headroom_gib": eff}, None, None)
        below = [x for x in known if not x.ok]
        parts = [f"steady peak {gib_text(e.steady_peak_gib)}"]
        if e.fragmentation_gib is not None and e.steady_peak_gib != e.device_peak_gib:
            parts.append(f"fragmentation {gib_text(e.fragmentation_gib)}")
        if e.transients_gib:
            parts.append(f"transients {gib_text(e.transients_gib)}")
        others = f"; {len(below) - 1} more GPU(s) below the minimum" if len(below) > 1 else ""
        message = (f"effective headroom {gib_text(eff)} on {e.label}, below the minimum "
                   f"{gib_text(s.min_headroom_gib)}: {gib_text(e.capacity_gib)} capacity - "
                   f"{' - '.join(parts)}{others}")
        values = {"gpu": e.gpu, "effective_headroom_gib": eff, "headroom_gib": e.headroom_gib,
                  "steady_peak_gib": e.steady_peak_gib, "fragmentation_gib": e.fragmentation_gib,
                  "transients_gib": e.transients_gib, "capacity_gib": e.capacity_gib,
                  "min_headroom_gib": s.min_headroom_gib, "gpus_below": [x.gpu for x in below]}
        return self._condition("mem_headroom", "critical" if eff < 0 else "warning", message, values, eff, e.gpu,
                               moved=lambda told, now: abs(now - told) >= UPDATE_HEADROOM_GIB)

    def _condition(self, cause: str, level: str | None, message: str, values: dict, number: float | None,
                   gpu: int | None, moved=None) -> list[dict]:
        """One evaluation of a cause: ``level`` None means all clear."""
        s = self.settings
        step = self.last_step if self.last_step is not None else 0
        ep = self._open.setdefault(cause, _Episode())
        if level is None:
            ep.since = None
            if not ep.is_open:
                return []
            if ep.clear_since is None:
                ep.clear_since = step
            if step - ep.clear_since < s.resolve_steps:
                return []
            ep.is_open, ep.clear_since = False, None
            ev = _event("info", cause, self.last_step, message, values, opened_step=ep.opened_step,
                        update=ep.updates + 1)
            ev["resolved"] = True
            return [ev]
        ep.clear_since = None
        ep.now = message  # an open alert's line reads the numbers of now (moeconsole.runner.rundir.alertgroups.current)
        if not ep.is_open:
            if ep.since is None:
                ep.since = step
            if step - ep.since < s.confirm_steps and level != "critical":
                return []
            ep.is_open, ep.opened_step, ep.level, ep.told_step, ep.told, ep.gpu, ep.updates = (
                True, self.last_step, level, step, number, gpu, 0)
            return [_event(level, cause, self.last_step, message, values, opened_step=ep.opened_step, update=0)]
        spaced = ep.told_step is None or step - ep.told_step >= s.min_update_steps
        shifted = number is not None and ep.told is not None and moved is not None and moved(ep.told, number)
        if level != ep.level or gpu != ep.gpu or (shifted and spaced):
            escalated = level == "critical" and ep.level != "critical"
            ep.updates += 1
            ep.level, ep.told_step, ep.told, ep.gpu = level, step, number, gpu
            return [_event(level, cause, self.last_step, message, values, opened_step=ep.opened_step,
                           update=ep.updates, escalated=escalated)]
        return []


def _event(level: str, cause: str, step: int | None, message: str, values: dict, *, opened_step: int | None,
           update: int, escalated: bool = False) -> dict:
    ev = {"level": level, "rule": cause, "step": step, "message": message, "values": values,
          "cause": cause, "opened_step": opened_step, "update": update}
    if escalated:
        ev["escalated"] = True
    return ev
