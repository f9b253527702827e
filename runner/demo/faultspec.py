"""``--fault`` values: parsing and selection, without torch (so bad flags fail fast).

A fault is written ``KIND@STEP[#ATTEMPT][:rank=R|:rank=all]``:

- ``STEP``: the training step during which it fires. The start-up kinds ``gpu_busy``, ``port``,
  ``driver_old``, ``hub_gated`` and ``hub_rate_limit`` ignore it and may omit it.
- ``#ATTEMPT``: it fires only when ``MOECONSOLE_ATTEMPT`` equals this (default 1), so a run that
  the supervisor restarts and resumes does not crash the same way again.
- ``:rank=``: which torchrun rank it fires on (default rank 0; ``all`` for every rank).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Iterable, Mapping

KINDS = ("oom", "gpu_busy", "nccl", "port", "nan", "hang", "segv", "bus", "sigkill", "stub",
         "cuda_fault", "recompute", "spike", "enospc", "driver_old", "hub_gated", "hub_rate_limit")
STARTUP_KINDS = frozenset({"gpu_busy", "port", "driver_old", "hub_gated", "hub_rate_limit"})
ALL_RANKS = -1

_FAULT_RE = re.compile(
    r"^(?P<kind>[a-z_]+)(?:@(?P<step>\d+))?(?:#(?P<attempt>\d+))?(?::rank=(?P<rank>\d+|all))?$")


@dataclass(frozen=True)
class Fault:
    kind: str
    step: int
    attempt: int = 1
    rank: int = 0  # ALL_RANKS for every rank

    def applies_to(self, attempt: int, rank: int) -> bool:
        return self.attempt == attempt and self.rank in (rank, ALL_RANKS)


def parse_fault(text: str) -> Fault:
    """Parse one ``--fault`` value; ValueError with a one-line reason if it is malformed."""
    m = _FAULT_RE.match(text.strip())
    if not m:
        raise ValueError(f"invalid --fault {text!r}: expected KIND@STEP[#ATTEMPT][:rank=R|all]")
    kind = m["kind"]
    if kind not in KINDS:
        raise ValueError(f"invalid --fault {text!r}: unknown kind {kind!r} (one of {', '.join(KINDS)})")
    if kind in STARTUP_KINDS:
        step = 0
    elif m["step"] is None:
        raise ValueError(f"invalid --fault {text!r}: {kind} needs a step, e.g. {kind}@5")
    else:
        step = int(m["step"])
        if step < 1:
            raise ValueError(f"invalid --fault {text!r}: steps start at 1")
    attempt = int(m["attempt"]) if m["attempt"] is not None else 1
    if attempt < 1:
        raise ValueError(f"invalid --fault {text!r}: attempts start at 1")
    rank = ALL_RANKS if m["rank"] == "all" else int(m["rank"] or 0)
    return Fault(kind, step, attempt, rank)


def attempt_from_env(environ: Mapping[str, str] | None = None) -> int:
    """The supervisor's attempt number (MOECONSOLE_ATTEMPT, default 1); ValueError if garbled."""
    raw = (environ if environ is not None else os.environ).get("MOECONSOLE_ATTEMPT", "1")
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"MOECONSOLE_ATTEMPT must be a positive integer, got {raw!r}")
    return value


class FaultPlan:
    """The faults that fire in this process (this attempt, this rank), looked up by kind and step."""

    def __init__(self, faults: Iterable[Fault], attempt: int, rank: int) -> None:
        self._armed = frozenset((f.kind, f.step) for f in faults if f.applies_to(attempt, rank))

    def fires(self, kind: str, step: int = 0) -> bool:
        return (kind, step) in self._armed

    def __bool__(self) -> bool:
        return bool(self._armed)
