"""Metric records as memory readings for ``runner.core.memory``.

A memory report record (``records.MEMORY_SRCS``: Megatron's ``report_memory``, DeepSpeed's lines;
or any record whose trainer prints allocator figures, e.g. torchtune's) carries allocated /
reserved and their peaks under the ``records.MEMORY_FIELDS`` names, with the rank the line names
in ``extra.rank`` (a report merged over ranks has none: it is the run-wide
maximum). Any other record's ``mem_gib`` (ms-swift's ``memory(GiB)``, torch's max reserved over
the model-parallel group; other trainers' peak memory) is one peak for the run, or for the rank
its line was prefixed with.
"""
from __future__ import annotations

from typing import Any, Mapping

from runner.core.memory import Reading
from runner.core.numbers import as_float
from runner.ingest.records import (MEM_ALLOCATED, MEM_DEVICE_USED, MEM_MAX_ALLOCATED, MEM_MAX_RESERVED, MEM_RESERVED,
                                   MEMORY_FIELDS, MEMORY_SRCS)


def _rank(extra: Mapping[str, Any]) -> int | None:
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
        return Reading(src if src in MEMORY_SRCS else "log", step=step, t=t, rank=_rank(extra), peak_gib=peak,
                       used_gib=vals[MEM_DEVICE_USED],
                       allocated_gib=vals[MEM_ALLOCATED], reserved_gib=vals[MEM_RESERVED],
                       max_allocated_gib=vals[MEM_MAX_ALLOCATED], max_reserved_gib=vals[MEM_MAX_RESERVED])
    peak = as_float(rec.get("mem_gib"))
    if peak is None or peak != peak or peak in (float("inf"), float("-inf")) or peak <= 0:
        return None
    return Reading("log", step=step, t=t, rank=_rank(extra), peak_gib=peak)
