"""Which rank of the run holds each GPU process: nvitop's process view, for the run's own ranks.

NVML lists the processes on each GPU by PID with their memory (and, from the per-process
utilisation samples, their SM share). The runner tracks every process of the attempt by PID and
start time (``state.json``'s ``pids``, with their role: waiter, leader, child); a tracked PID is
the run's, and its environment says which rank it is (``RANK``/``LOCAL_RANK``, set by torchrun
and every launcher that follows it). Everything else on the GPU is someone else's.

A PID NVML reports from another PID namespace (a driver outside the container) matches no
tracked PID and is shown as another process: it cannot be proven to be the run's.
"""
from __future__ import annotations

from typing import Callable, Mapping

from moeconsole.runner.core.numbers import finite_float
from moeconsole.runner.telemetry.ranks import rank_entry, read_env

EnvReader = Callable[[int], Mapping[str, str] | None]


class RankFinder:
    """Annotates a GPU snapshot's processes with the run's ranks; a PID's rank is read once per
    (PID, start time): a process's rank never changes, and a reused PID has another start time."""

    def __init__(self, env_of: EnvReader = read_env) -> None:
        self.env_of = env_of
        self._ranks: dict[tuple[int, float], tuple[int | None, int | None]] = {}

    def _rank(self, pid: int, start_time: float) -> tuple[int | None, int | None]:
        key = (pid, start_time)
        got = self._ranks.get(key)
        if got is None:
            env = self.env_of(pid) or {}
            entry = rank_entry(pid, "", env)
            got = (entry["rank"], entry["local_rank"])
            if len(self._ranks) > 4096:
                self._ranks.clear()
            self._ranks[key] = got
        return got

    def annotate(self, gpu: dict | None, state: Mapping) -> dict | None:
        """``gpu`` (a ``GpuSnapshot.to_dict()``) with each process's ``run``: ``{"rank",
        "local_rank", "role"}`` for a process of the run, None for any other."""
        if not gpu or not gpu.get("available"):
            return gpu
        tracked: dict[int, tuple[str, float]] = {}
        for p in state.get("pids") or ():
            if isinstance(p, Mapping) and isinstance(p.get("pid"), int):
                tracked[p["pid"]] = (str(p.get("role") or "child"), float(p.get("start_time") or 0.0))
        gpus = []
        for g in gpu.get("gpus") or ():
            procs = g.get("processes")
            if procs:
                procs = [{**p, "run": self._run_of(p, tracked)} for p in procs]
                g = {**g, "processes": procs}
            gpus.append(g)
        return {**gpu, "gpus": gpus}

    def _run_of(self, proc: Mapping, tracked: dict[int, tuple[str, float]]) -> dict | None:
        pid = proc.get("pid")
        if not isinstance(pid, int) or pid not in tracked:
            return None
        role, start = tracked[pid]
        rank, local_rank = self._rank(pid, start)
        return {"rank": rank, "local_rank": local_rank, "role": role}


def run_rows(gpu: dict | None) -> list[dict]:
    """One row per process per GPU, the run's ranks first on each GPU (by rank), then the others
    by memory: ``{gpu, pid, used_mib, sm_pct, mem_pct, rank, local_rank, role, own}``."""
    rows: list[dict] = []
    if not gpu or not gpu.get("available"):
        return rows
    for g in _listed(gpu.get("gpus")):
        mine: list[dict] = []
        others: list[dict] = []
        for p in _listed(g.get("processes")):
            run = p.get("run") if isinstance(p.get("run"), dict) else None
            row = {"gpu": g.get("index"), "pid": p.get("pid"), "used_mib": p.get("used_mib"),
                   "sm_pct": p.get("sm_pct"), "mem_pct": p.get("mem_pct"), "own": run is not None,
                   "rank": (run or {}).get("rank"), "local_rank": (run or {}).get("local_rank"),
                   "role": (run or {}).get("role")}
            (mine if run is not None else others).append(row)
        # ordered by what ``finite_float`` reads (the one reader of an agent's values): an odd
        # rank, PID or memory sorts as none, never fails the view
        mine.sort(key=lambda r: (finite_float(r["rank"]) is None, finite_float(r["rank"]) or 0.0, finite_float(r["pid"]) or 0.0))
        others.sort(key=lambda r: -(finite_float(r["used_mib"]) or 0.0))
        rows += mine + others
    return rows


def _listed(items: object) -> list[dict]:
    """The dicts of a list an agent file holds (its GPUs, a GPU's processes); nothing when
    another version (or a broken agent) wrote something else there."""
    return [x for x in items if isinstance(x, dict)] if isinstance(items, list) else []


def annotate_from_ranks(gpu: dict | None, ranks: list[dict]) -> dict | None:
    """An agent's GPU snapshot with its processes' ranks from the same file's ``ranks`` (the
    run's processes on that node, found by the run marker in their environment). Only the GPU
    and process dicts in lists are kept: an odd shape is no GPU, not a failed view."""
    if not gpu or not gpu.get("available"):
        return gpu
    by_pid = {r["pid"]: r for r in ranks if isinstance(r, dict) and type(r.get("pid")) is int}
    gpus = []
    for g in _listed(gpu.get("gpus")):
        procs = g.get("processes")
        if procs:
            procs = [{**p, "run": ({"rank": by_pid[p["pid"]].get("rank"), "local_rank": by_pid[p["pid"]].get("local_rank"),
                                    "role": "rank"} if type(p.get("pid")) is int and p["pid"] in by_pid else p.get("run"))}
                     for p in _listed(procs)] if isinstance(procs, list) else None
            g = {**g, "processes": procs}
        gpus.append(g)
    return {**gpu, "gpus": gpus}
