"""One GPU as one line of text, the same in ``moeconsole gpus`` and in the console's GPU view
(``g``): index, name, utilisation, memory used/total in MiB, temperature, power draw/limit and
the SM/memory clocks, nvidia-smi's order. A reading the driver could not give is the one
missing-value mark (``units.NA``). UI-free: the CLI imports it without Textual.

It reads a GPU as a document (``GpuInfo.to_dict()``, the ``gpus`` of ``Snapshot.gpu`` and of an
agent's file), so a live reading and another node's file are drawn by the same function."""
from __future__ import annotations

from typing import Mapping

from moeconsole.runner.core.units import NA, number

NAME_W = 22

GPU_HEADER = (f"{'GPU':>3}  {'Name':<{NAME_W}} {'Util':>4}  {'Memory MiB':>15}  {'Temp':>4}  {'Power W':>9}  "
              f"{'SM/Mem MHz':>11}")


def pair(a: float | None, b: float | None, spec: str = ".0f") -> str:
    """``used / total`` with the missing-value mark for either."""
    return f"{number(a, spec)} / {number(b, spec)}"


def gpu_row(g: Mapping) -> str:
    """One GPU under ``GPU_HEADER``."""
    name = str(g.get("name") or NA)[:NAME_W]
    util, temp = g.get("util_pct"), g.get("temp_c")
    util_t = NA if util is None else f"{number(util)}%"
    temp_t = NA if temp is None else f"{number(temp)}C"
    index = g.get("index")
    return (f"{NA if index is None else index:>3}  {name:<{NAME_W}} {util_t:>4}  "
            f"{pair(g.get('mem_used_mib'), g.get('mem_total_mib')):>15}  {temp_t:>4}  "
            f"{pair(g.get('power_w'), g.get('power_limit_w')):>9}  "
            f"{pair(g.get('sm_clock_mhz'), g.get('mem_clock_mhz')):>11}")
