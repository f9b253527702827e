"""``gpu-history.json``: the GPUs and the host over the whole run, recorded by the runner.

A console shows a sparkline of utilisation since it attached; a user who attaches after a
night of training wants the night. The runner samples NVML while an attempt runs (the same
samples that feed the memory envelope) and keeps, per GPU, its utilisation and memory used, and
the host's CPU and RAM, as bounded series over wall time (``Series``: at most ``LIMIT`` buckets,
each the max of its samples, so a saturation or a peak is never averaged away). The file is
replaced atomically every ``SAVE_S`` seconds; a new runner continues the one it finds.

Times are seconds since ``t0`` (the first sample), which keeps the file small.
"""
from __future__ import annotations

from typing import Any, Mapping

from moeconsole.runner.core.numbers import finite_float
from moeconsole.runner.core.series import Series
from moeconsole.runner.rundir import jsonio, rundir

SCHEMA = 1
LIMIT = 256      # buckets per series: a week of 2 s samples is ~300k points
MAX_GPUS = 64
SAVE_S = 10.0


class GpuHistory:
    def __init__(self) -> None:
        self.t0: float | None = None
        self.t_last: float | None = None
        self.samples = 0
        self.host = ""
        self.gpus: dict[str, dict[str, Series]] = {}   # GPU index -> {"util", "mem_gib"}
        self.cpu = Series(LIMIT)                       # host CPU % (all cores)
        self.ram = Series(LIMIT)                       # host RAM used, GiB
        self.mem_total_gib: dict[str, float] = {}      # GPU index -> capacity
        self.ram_total_gib: float | None = None
        self.changed = False

    def feed(self, gpu: Mapping | None, host: Mapping | None, t: float) -> None:
        """One sample: a ``GpuSnapshot.to_dict()`` (unavailable GPUs add nothing) and the host's
        ``{cpu_pct, ram_used_gib, ram_total_gib, hostname}``."""
        if self.t0 is None:
            self.t0 = t
        x = round(t - self.t0, 1)
        self.t_last = t
        self.samples += 1
        self.changed = True
        if gpu and gpu.get("available"):
            for g in gpu.get("gpus") or ():
                if not isinstance(g, Mapping) or not isinstance(g.get("index"), int):
                    continue
                key = str(g["index"])
                series = self.gpus.get(key)
                if series is None:
                    if len(self.gpus) >= MAX_GPUS:
                        continue
                    series = self.gpus[key] = {"util": Series(LIMIT), "mem_gib": Series(LIMIT)}
                util, used, total = finite_float(g.get("util_pct")), finite_float(g.get("mem_used_mib")), finite_float(g.get("mem_total_mib"))
                if util is not None:
                    series["util"].append(x, util)
                if used is not None:
                    series["mem_gib"].append(x, round(used / 1024, 3))
                if total is not None:
                    self.mem_total_gib[key] = round(total / 1024, 3)
        if host:
            self.host = str(host.get("hostname") or self.host)
            cpu, ram = finite_float(host.get("cpu_pct")), finite_float(host.get("ram_used_gib"))
            if cpu is not None:
                self.cpu.append(x, round(cpu, 1))
            if ram is not None:
                self.ram.append(x, round(ram, 3))
            total = finite_float(host.get("ram_total_gib"))
            if total is not None:
                self.ram_total_gib = round(total, 3)

    def to_doc(self) -> dict:
        return {"v": SCHEMA, "t0": self.t0, "t_last": self.t_last, "samples": self.samples, "host": self.host,
                "gpus": {k: {name: s.to_doc() for name, s in v.items()} for k, v in self.gpus.items()},
                "mem_total_gib": dict(self.mem_total_gib), "cpu": self.cpu.to_doc(), "ram_gib": self.ram.to_doc(),
                "ram_total_gib": self.ram_total_gib}

    @classmethod
    def from_doc(cls, doc: Any) -> "GpuHistory | None":
        if not isinstance(doc, dict) or doc.get("v") != SCHEMA:
            return None
        h = cls()
        try:
            h.t0 = finite_float(doc.get("t0"))
            h.t_last = finite_float(doc.get("t_last"))
            h.samples = int(doc.get("samples") or 0)
            h.host = str(doc.get("host") or "")
            for key, series in (doc.get("gpus") or {}).items():
                h.gpus[str(key)] = {"util": Series.from_doc(series["util"], LIMIT),
                                    "mem_gib": Series.from_doc(series["mem_gib"], LIMIT)}
            h.mem_total_gib = {str(k): float(v) for k, v in (doc.get("mem_total_gib") or {}).items()}
            h.cpu = Series.from_doc(doc["cpu"], LIMIT)
            h.ram = Series.from_doc(doc["ram_gib"], LIMIT)
            h.ram_total_gib = finite_float(doc.get("ram_total_gib"))
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            return None
        return h

    def span_s(self) -> float:
        """Seconds from the first sample to the newest."""
        return 0.0 if self.t0 is None or self.t_last is None else self.t_last - self.t0


def save_history(run: rundir.RunDir, history: GpuHistory) -> None:
    jsonio.atomic_write_json(run.gpu_history, history.to_doc())
    history.changed = False


def load_history(run: rundir.RunDir) -> GpuHistory | None:
    """The run's recorded history (None: none yet, or the file is unreadable)."""
    return GpuHistory.from_doc(jsonio.read_json(run.gpu_history))
