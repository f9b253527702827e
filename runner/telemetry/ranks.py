"""The run's processes on this node and the ranks they are, for the per-node agent.

A worker started by torchrun (or any launcher that follows its convention) has ``RANK``,
``LOCAL_RANK`` and ``WORLD_SIZE`` in its environment; every process of a run has the run's
marker (``MOECONSOLE_RUN_ID``) because the job's environment carries it. A task Slurm started
has ``SLURMD_NODENAME``: the node it runs on. Nodes that share one process table (several
slurmd on one machine, as ``scripts/slurm-local.sh start --nodes N`` makes) are told apart by
it, so an agent reports its own node's processes only.
"""
from __future__ import annotations

import os
from typing import Iterable, Mapping

from moeconsole.runner.telemetry.procs import RUN_ID_ENV

_KEYS = (RUN_ID_ENV, "RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURMD_NODENAME")
NODE_ENV = "SLURMD_NODENAME"


def _parse_int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def rank_entry(pid: int, name: str, env: Mapping[str, str]) -> dict:
    """One process as the agent reports it: pid, command name, and its ranks when it has them."""
    return {"pid": pid, "name": name, "rank": _parse_int(env.get("RANK")), "local_rank": _parse_int(env.get("LOCAL_RANK")),
            "world_size": _parse_int(env.get("WORLD_SIZE"))}


def node_view(procs: Iterable[tuple[int, str, Mapping[str, str]]], run_id: str, node: str | None,
              skip: Iterable[int] = ()) -> dict:
    """``{"ranks": [...], "processes": N}`` from (pid, name, environment) triples: the processes
    carrying ``run_id`` on ``node`` (a process that names another node in ``SLURMD_NODENAME``
    is on that node), ranks sorted by rank; ``processes`` counts them all (launchers, shells,
    srun) but the ``skip`` pids (the agent itself)."""
    skipped = set(skip)
    ranks: list[dict] = []
    count = 0
    for pid, name, env in procs:
        if pid in skipped or env.get(RUN_ID_ENV) != run_id:
            continue
        where = env.get(NODE_ENV)
        if node is not None and where is not None and where != node:
            continue
        count += 1
        entry = rank_entry(pid, name, env)
        if entry["rank"] is not None:
            ranks.append(entry)
    ranks.sort(key=lambda e: (e["rank"], e["pid"]))
    return {"ranks": ranks, "processes": count}


def read_env(pid: int) -> dict[str, str] | None:
    """The run marker, rank and node variables of a process's environment (None: unreadable)."""
    return _environ(pid)


def _environ(pid: int) -> dict[str, str] | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            block = f.read()
    except OSError:
        return None
    out: dict[str, str] = {}
    for item in block.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep and key.decode("ascii", "replace") in _KEYS:
            out[key.decode()] = value.decode("utf-8", "replace")
    return out


def _processes_with_run_env() -> Iterable[tuple[int, str, dict[str, str]]]:
    me, root = os.getuid(), os.geteuid() == 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        try:
            if not root and os.stat(f"/proc/{name}").st_uid != me:
                continue
            with open(f"/proc/{name}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        env = _environ(pid)
        if env and env.get(RUN_ID_ENV):
            yield pid, comm, env


def scan_node_ranks(run_id: str, node: str | None = None) -> dict:
    """This node's view of the run (see ``node_view``); ``node`` defaults to the Slurm node this
    process runs on, if any."""
    if node is None:
        node = os.environ.get(NODE_ENV)
    return node_view(_processes_with_run_env(), run_id, node, skip=(os.getpid(),))
