"""The recipe's ``slurm:`` section, checked when the recipe loads (stdlib only: ``lint`` and
``--set`` use it without the engine)."""
from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, Mapping

from runner.process.slurm.text import check_sbatch_option, check_time_limit
from runner.core import bounds
from runner.core.errors import shown


@dataclass(frozen=True)
class SlurmSettings:
    """The recipe's ``slurm:`` section."""
    nodes: int = 1
    gpus_per_node: int | None = None
    ntasks_per_node: int = 1
    time: str | None = None          # the job's time limit (MM, HH:MM:SS, D-HH:MM:SS)
    partition: str | None = None
    account: str | None = None
    sbatch: tuple[str, ...] = ()     # more options, each "--flag" or "--flag=value"
    srun: tuple[str, ...] = ()       # options for the training step's srun
    poll_s: float = 2.0              # how often Slurm is asked about the job
    agents: bool = False             # one `moeconsole agent` per node, for the GPU panel
    rendezvous_port: int | None = None   # multi-node: the training runs under runner.process.slurm.nodestep
    rendezvous_wait_s: float = 600.0     # how long the first node waits for a held port

    @classmethod
    def from_recipe(cls, section: Mapping[str, Any] | None) -> "SlurmSettings":
        section = dict(section or {})
        known = {f.name for f in fields(cls)}
        for key in section:
            if key not in known:
                raise ValueError(f"slurm.{key}: unknown key (known: {', '.join(sorted(known))})")
        out: dict[str, Any] = {}
        for key in ("nodes", "ntasks_per_node", "gpus_per_node"):
            v = section.get(key)
            if v is None:
                continue
            try:
                out[key] = bounds.check(v, bounds.POSITIVE_COUNT, f"slurm.{key}")
            except bounds.OutOfRange as exc:
                raise ValueError(str(exc)) from None
        for key in ("partition", "account"):
            v = section.get(key)
            if v is None:
                continue
            if not isinstance(v, str) or not re.fullmatch(r"[A-Za-z0-9._,+-]+", v):
                raise ValueError(f"slurm.{key}: must be a Slurm name (letters, digits, . _ , + -), got {shown(v)}")
            out[key] = v
        t = section.get("time")
        if t is not None:
            t = str(t)
            try:
                check_time_limit(t)
            except ValueError as exc:
                raise ValueError(f"slurm.time: {exc}") from None
            out["time"] = t
        for key in ("sbatch", "srun"):
            v = section.get(key)
            if v is None:
                continue
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                raise ValueError(f"slurm.{key}: must be a list of options such as --qos=high")
            for opt in v:
                try:
                    check_sbatch_option(opt)
                except ValueError as exc:
                    raise ValueError(f"slurm.{key}: {exc}") from None
            out[key] = tuple(v)
        p = section.get("poll_s")
        if p is not None:
            if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.05 <= p <= 600:
                raise ValueError(f"slurm.poll_s: must be seconds between 0.05 and 600, got {shown(p)}")
            out["poll_s"] = float(p)
        a = section.get("agents")
        if a is not None:
            if not isinstance(a, bool):
                raise ValueError(f"slurm.agents: must be true or false, got {shown(a)}")
            out["agents"] = a
        port = section.get("rendezvous_port")
        if port is not None:
            if isinstance(port, bool) or not isinstance(port, int) or not 1024 <= port <= 65535:
                raise ValueError(f"slurm.rendezvous_port: must be a port number from 1024 to 65535, got {port!r}")
            out["rendezvous_port"] = port
        w = section.get("rendezvous_wait_s")
        if w is not None:
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w <= 86400:
                raise ValueError(f"slurm.rendezvous_wait_s: must be seconds between 0 and 86400, got {w!r}")
            out["rendezvous_wait_s"] = float(w)
        return cls(**out)
