"""One GPU as one line of text, the same in ``moeconsole gpus`` and in the console's GPU view
(``g``): index, name, utilisation, memory used/total in MiB, temperature, power draw/limit and
the SM/memory clocks, nvidia-smi's order. A reading the driver could not give is the one
missing-value mark (``units.NA``). UI-free: the CLI imports it without Textual.

It reads a GPU as a document (``GpuInfo.to_dict()``, the ``gpus`` of ``Snapshot.gpu`` and of an
agent's file), so a live reading and another node's file are drawn by the same function.

Where the full line does not fit (the GPU view on an 80-column terminal), ``fit`` narrows the
name column to the longest name, then leaves out the clocks, and only then cuts names: a line is
never cut mid-number at the screen's edge."""
from __future__ import annotations

from typing import Iterable, Mapping

from moeconsole.runner.core.units import NA, number, whole

NAME_W = 22
MIN_NAME_W = 4


def header(name_w: int = NAME_W, clocks: bool = True) -> str:
    """The column heads over ``gpu_row`` lines of the same ``name_w`` and ``clocks``."""
    return (f"{'GPU':>3}  {'Name':<{name_w}} {'Util':>4}  {'Memory MiB':>15}  {'Temp':>4}  {'Power W':>9}"
            + (f"  {'SM/Mem MHz':>11}" if clocks else ""))


GPU_HEADER = header()


def pair(a: float | None, b: float | None, spec: str = ".0f") -> str:
    """``used / total`` with the missing-value mark for either."""
    return f"{number(a, spec)} / {number(b, spec)}"


def _gpu_name(g: Mapping) -> str:
    return str(g.get("name") or NA)


def fit(gpus: Iterable[Mapping], width: int) -> tuple[int, bool]:
    """(name width, clocks shown) for lines of at most ``width`` characters: the full line when it
    fits; else the name column as wide as the longest name; else without the clocks; else the
    names cut to what is left (never under ``MIN_NAME_W``)."""
    if len(header()) <= width:
        return NAME_W, True
    longest = max(MIN_NAME_W, min(NAME_W, max((len(_gpu_name(g)) for g in gpus), default=MIN_NAME_W)))
    if len(header(longest)) <= width:
        return longest, True
    if len(header(longest, False)) <= width:
        return longest, False
    return max(MIN_NAME_W, longest - (len(header(longest, False)) - width)), False


def gpu_row(g: Mapping, name_w: int = NAME_W, clocks: bool = True) -> str:
    """One GPU under ``header(name_w, clocks)`` (``GPU_HEADER`` by default)."""
    name = _gpu_name(g)[:name_w]
    util, temp = g.get("util_pct"), g.get("temp_c")
    util_t = NA if util is None else f"{number(util)}%"
    temp_t = NA if temp is None else f"{number(temp)}C"
    return (f"{whole(g.get('index')):>3}  {name:<{name_w}} {util_t:>4}  "
            f"{pair(g.get('mem_used_mib'), g.get('mem_total_mib')):>15}  {temp_t:>4}  "
            f"{pair(g.get('power_w'), g.get('power_limit_w')):>9}"
            + (f"  {pair(g.get('sm_clock_mhz'), g.get('mem_clock_mhz')):>11}" if clocks else ""))
