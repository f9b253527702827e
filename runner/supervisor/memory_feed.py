"""The runner's side of GPU memory: it feeds ``moeconsole.runner.core.memory.MemoryWatch`` from the log's
records and from NVML, and after a CUDA OOM asks ``moeconsole.runner.core.oom`` for the verdict. Only
orchestration: every number comes from those pure modules.
"""
from __future__ import annotations

import math
import subprocess
import time
from typing import TYPE_CHECKING, Any, Callable, Collection, Mapping, Sequence

from moeconsole.runner.core.memory import MemoryWatch, physical_gpu, readings_from_nvml
from moeconsole.runner.core.oom import explain_oom, merge_messages, torch_size_text
from moeconsole.runner.core.memory import Reading
from moeconsole.runner.core.numbers import as_float
from moeconsole.runner.ingest.records import (MEM_ALLOCATED, MEM_DEVICE_USED, MEM_MAX_ALLOCATED, MEM_MAX_RESERVED, MEM_RESERVED,
                                   MEMORY_FIELDS, MEMORY_SRCS)
from moeconsole.runner.recipes import recipe as recipes

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import RunRecipe

OOM_CLASSES = ("cuda_oom", "gpu_busy_at_init")


class MemoryFeed:
    def __init__(self, recipe: "RunRecipe", diag: Callable[[str], None]) -> None:
        self.recipe = recipe
        self.diag = diag
        self.settings = recipes.memory_settings(recipe)
        self.watch = MemoryWatch(self.settings, clock=time.monotonic)   # its history trimmed by a duration
        self.watch.static = self._static()

    def _static(self) -> dict | None:
        """lint's static estimate per GPU, when the recipe's model config.json is readable here."""
        from moeconsole.runner.recipes.lint import static_memory
        try:
            est = static_memory(self.recipe)
        except Exception as exc:  # an estimate is a help: a config it cannot read must not stop the runner
            self.diag(f"no static memory estimate: {exc}")
            return None
        if est is None:
            return None
        return {"per_gpu_gib": est.per_gpu_gib, "rows": [{"part": r.part, "gib": r.gib} for r in est.rows]}

    def new_attempt(self) -> None:
        self.watch.new_attempt()

    def on_rows(self, records: Sequence[Any], kept: Sequence[int], steps: Sequence[int],
                mem: Sequence[float], has_mem: Sequence[bool], t: float) -> None:
        """The kept rows of a batch: a parser record is read whole (memory reports name their
        rank), a template row (a dict line the bulk reader matched) by its ``mem_gib`` column."""
        col_steps: list[int] = []
        col_peaks: list[float] = []
        for j, i in enumerate(kept):
            rec = records[i]
            if type(rec) is bytes:
                if has_mem[j]:
                    col_steps.append(int(steps[j]))
                    col_peaks.append(float(mem[j]))
                continue
            if col_steps:   # keep the file's order: the template rows before this record first
                self.watch.observe_log_peaks(col_steps, col_peaks, t)
                col_steps, col_peaks = [], []
            r = reading_from_record(rec, t)
            if r is not None:
                self.watch.observe(r)
        if col_steps:
            self.watch.observe_log_peaks(col_steps, col_peaks, t)

    def on_gpus(self, gpu: dict | None, step: int | None, own_pids: Collection[int], t: float) -> None:
        for r in readings_from_nvml(gpu, step=step, t=t, own_pids=own_pids, devices=self.settings.devices):
            self.watch.observe(r)

    def alerts(self, max_steps: int | None, step_time_s: float | None) -> list[dict]:
        self.watch.max_steps = max_steps
        if step_time_s is not None and math.isfinite(step_time_s) and step_time_s > 0:
            self.watch.step_time_s = step_time_s
        return self.watch.alerts()

    def _track_for(self, gpu: int | None) -> int | None:
        """The failing GPU's readings; without them the run-wide ones (a log's max over ranks),
        else the tightest GPU's."""
        if gpu in self.watch.tracks or (gpu is None and None in self.watch.tracks):
            return gpu
        if None in self.watch.tracks:
            return None
        envs = self.watch.envelopes()
        return envs[0].gpu if envs else gpu

    def state(self) -> dict:
        return self.watch.to_dict()

    def explain(self, verdict: Any, *, prove_foreign: Callable[[dict[str, str]], dict[str, str]],
                last_step: int | None,
                attempt_start_step: int | None, env: dict[str, str], python: str | None) -> dict | None:
        """The crash report's ``memory`` section for a CUDA OOM: the failing GPU's last minutes,
        the failed allocation, the verdict and its evidence. None for other crash classes.
        ``prove_foreign`` keeps the message's PIDs proven to be other processes'
        (``moeconsole.runner.core.crash.foreign_holders``)."""
        if verdict.cls not in OOM_CLASSES:
            return None
        msg = merge_messages(list(verdict.evidence))
        gpu = physical_gpu(msg.gpu, self.settings.visible) if msg is not None and msg.gpu is not None else None
        gpu_key = self._track_for(gpu)
        history = self.watch.history(gpu_key)
        trend = self.watch.trend_of(gpu_key)
        envelope = next((e for e in self.watch.envelopes() if e.gpu == gpu_key), None)
        others = dict(msg.others) if msg is not None else {}
        proven = prove_foreign({str(pid): torch_size_text(g) for pid, g in others.items()})
        foreign_gib = {pid: g for pid, g in others.items() if str(pid) in proven}
        torch_version = torch_version_of(python)
        ex = explain_oom(msg, gpu=gpu if gpu is not None else gpu_key, trend=trend, history=history,
                         foreign_pids=foreign_gib, torch_version=torch_version, transients=self.settings.transients,
                         oom_step=last_step, attempt_start_step=attempt_start_step, env=env)
        return {**ex.to_dict(), "failed_allocation": msg.to_dict() if msg else None, "torch": torch_version,
                "envelope": envelope.to_dict() if envelope else None, "history_gpu": gpu_key,
                "history": history[-300:]}


def torch_version_of(python: str | None) -> str | None:
    """The torch version the training imports: the runner's own, or that of the recipe's
    ``swift.python`` (read from its package metadata, without importing torch)."""
    if not python:
        from importlib import metadata
        try:
            return metadata.version("torch")
        except metadata.PackageNotFoundError:
            return None
    try:
        done = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


# ---- records as memory readings ----------------------------------------------------------
# A memory report record (``records.MEMORY_SRCS``: Megatron's ``report_memory``, DeepSpeed's lines;
# or any record whose trainer prints allocator figures) carries allocated / reserved and their peaks
# under the ``records.MEMORY_FIELDS`` names, with the rank the line names in ``extra.rank``. Any other
# record's ``mem_gib`` (ms-swift's ``memory(GiB)``, torch's max reserved) is one peak for the run, or
# for the rank its line was prefixed with.

def _extra_rank(extra: Mapping[str, Any]) -> int | None:
    r = as_float(extra.get("rank"))
    return int(r) if r is not None and r >= 0 and r == int(r) else None


def reading_from_record(rec: Mapping[str, Any], t: float | None = None) -> Reading | None:
    """The memory a record tells, or None when it tells none."""
    step = rec.get("step")
    if not isinstance(step, int) or isinstance(step, bool):
        return None
    extra = rec.get("extra") if isinstance(rec.get("extra"), Mapping) else {}
    assert isinstance(extra, Mapping)
    src = str(rec.get("src") or "log")
    if src in MEMORY_SRCS or any(k in extra for k in MEMORY_FIELDS):
        # a memory report, or a trainer's line that gives allocator figures beside its metrics
        vals = {k: as_float(extra.get(k)) for k in (MEM_ALLOCATED, MEM_MAX_ALLOCATED, MEM_RESERVED, MEM_MAX_RESERVED,
                                                      MEM_DEVICE_USED)}
        peak = as_float(rec.get("mem_gib"))
        if all(v is None for v in vals.values()) and peak is None:
            return None
        return Reading(src if src in MEMORY_SRCS else "log", step=step, t=t, rank=_extra_rank(extra), peak_gib=peak,
                       used_gib=vals[MEM_DEVICE_USED],
                       allocated_gib=vals[MEM_ALLOCATED], reserved_gib=vals[MEM_RESERVED],
                       max_allocated_gib=vals[MEM_MAX_ALLOCATED], max_reserved_gib=vals[MEM_MAX_RESERVED])
    peak = as_float(rec.get("mem_gib"))
    if peak is None or peak != peak or peak in (float("inf"), float("-inf")) or peak <= 0:
        return None
    return Reading("log", step=step, t=t, rank=_extra_rank(extra), peak_gib=peak)
