"""Each rank's latest step and step time, from the rank-prefixed lines of the log.

A multi-node job whose workers all print (torchrun ``--tee 3`` writes every worker's lines with
its ``[rankN]:`` prefix; ``srun --label`` puts the task number in front) tells the runner how
fast each rank goes. The main series keeps one record per step (the first rank to print it);
this book keeps, per rank, the last step it printed and the step time that line gave, and the
runner writes it to ``ranks.json`` (at most every state flush, only when it changed). The
snapshot joins it with the ranks each node's agent reports: a node is as slow as its slowest
rank, and the slowest nodes are the stragglers (``moeconsole.runner.core.nodehealth``).
"""
from __future__ import annotations

import math
import time
from typing import Any, Iterable

import msgspec

from moeconsole.runner.rundir import jsonio, rundir

SCHEMA = 1


class RankTimes:
    def __init__(self) -> None:
        self.ranks: dict[int, dict[str, Any]] = {}
        self.changed = False

    def feed(self, records: Iterable[Any], now: float | None = None) -> None:
        """The parser's records of a batch; template rows (bytes) carry no rank and are skipped."""
        stamp = time.time() if now is None else now
        for rec in records:
            if type(rec) is not dict:
                continue
            extra = rec.get("extra")
            rank = extra.get("rank") if isinstance(extra, dict) else None
            step = rec.get("step")
            if not isinstance(rank, int) or not isinstance(step, int):
                continue
            st = rec.get("step_time_s")
            entry = self.ranks.setdefault(rank, {"step": step, "step_time_s": None, "t": stamp})
            entry["step"], entry["t"] = step, stamp
            if isinstance(st, float) and math.isfinite(st):
                entry["step_time_s"] = st
            self.changed = True

    def to_doc(self) -> dict:
        return {"v": SCHEMA, "t": time.time(), "ranks": {str(r): e for r, e in sorted(self.ranks.items())}}


def save_rank_times(run: rundir.RunDir, book: RankTimes) -> None:
    jsonio.atomic_write_json(run.rank_times, book.to_doc())
    book.changed = False


def load_rank_times(run: rundir.RunDir) -> dict[int, dict[str, Any]]:
    """``ranks.json`` as {rank: {"step", "step_time_s", "t"}}; empty when missing or unreadable."""
    doc = jsonio.read_own_json(run.rank_times, default=None)
    ranks = doc.get("ranks") if isinstance(doc, dict) else None
    if not isinstance(ranks, dict):
        return {}
    return {int(k): v for k, v in ranks.items() if k.isdigit() and isinstance(v, dict)}


StepTimes = dict[int, Any]  # rank -> its latest step time as ranks.json has it (``step_time_s``; unchecked)


class _StepGlance(msgspec.Struct, gc=False):
    step_time_s: Any = None


class _StepsGlance(msgspec.Struct, gc=False):
    """``ranks.json`` with only each rank's step time: msgspec skips the rest unbuilt."""
    ranks: dict[int, _StepGlance] = {}


_STEPS = msgspec.json.Decoder(_StepsGlance)


def load_step_times(run: rundir.RunDir, size: int = 1 << 16) -> StepTimes:
    """Only each rank's ``step_time_s`` from ``ranks.json`` (what the node judgement uses), in
    a third of ``load_rank_times``' time: a 1,024-rank run's runner rewrites the file at
    every state flush (its ranks print all the time) and its console reads it each time. A
    file of other types (another version's) is read as ``load_rank_times`` reads it. Empty
    when missing or unreadable. ``size``: its size, when the caller's ``stat`` knows it."""
    try:
        data = jsonio.read_small(run.rank_times, size)
    except OSError:
        return {}
    try:
        return {r: e.step_time_s for r, e in _STEPS.decode(data).ranks.items() if r >= 0}
    except msgspec.ValidationError:
        return {r: e.get("step_time_s") for r, e in load_rank_times(run).items()}
    except (ValueError, RecursionError):  # not JSON (msgspec.DecodeError is a ValueError)
        return {}
