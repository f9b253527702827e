"""GPU memory as the console shows it: the tightest GPU first, its numbers, its trend.

Pure text from the ``memory`` block of a snapshot's run (``state.json``'s, written by the
runner from ``moeconsole.runner.core.memory``); the run screen's memory chart, ``runs receipt`` and tests
read the same functions. Sizes in GiB with two decimals.
"""
from __future__ import annotations

from typing import Any, Mapping

from moeconsole.runner.core.numbers import as_float
from moeconsole.runner.core.units import NA


def gib_digits(x: Any) -> str:
    v = as_float(x)
    return NA if v is None else f"{v:.2f}"


def tightest(memory: Mapping[str, Any] | None) -> dict | None:
    """The GPU with the least effective headroom (the runner sorts them so)."""
    gpus = (memory or {}).get("gpus") or []
    return gpus[0] if gpus and isinstance(gpus[0], dict) else None


def trend_words(g: Mapping[str, Any], *, short: bool = False) -> str:
    """``stable``, ``+12.0 MiB/step, OOM in ~340 steps (~1.7 h)``, or ``trend —`` (too few steps)."""
    tr, fc = g.get("trend") or {}, g.get("forecast") or {}
    state = tr.get("state")
    if state == "stable":
        return "stable"
    if state != "growing":
        return f"trend {NA}"
    rate = as_float(tr.get("mib_per_step")) or 0.0
    text = f"+{rate:.1f} MiB/step"
    steps = fc.get("oom_in_steps")
    if steps is None:
        return text
    if short:
        return f"OOM ~{steps:,} steps"
    secs = as_float(fc.get("oom_in_s"))
    if secs is None:
        return f"{text}, OOM in ~{steps:,} steps"
    from moeconsole.runner.core.memory import duration_text   # only with a forecast: the module is ~1.7 MiB
    return f"{text}, OOM in ~{steps:,} steps ({duration_text(secs)})"


def peaks(memory: Mapping[str, Any] | None) -> list[tuple[int, float]]:
    """The tightest GPU's per-step peaks as the runner measured them (``[[step, GiB], ...]`` in
    the state: NVML's samples when the log prints no memory), as (step, GiB) pairs."""
    out = []
    for pair in (tightest(memory) or {}).get("peaks") or ():
        if isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], int):
            v = as_float(pair[1])
            if v is not None:
                out.append((pair[0], v))
    return out


def heading(memory: Mapping[str, Any] | None, *, nvml: bool = False) -> tuple[str, ...] | None:
    """The memory chart's heading, widest first (the chart picks what fits); None without a
    GPU to show. Without a known capacity (no NVML, no ``gpus.memory_capacity_gib``) there is no
    headroom to show: the heading is the peak and its trend. ``nvml``: the chart draws the
    runner's NVML samples (the log has no memory field), and every width says so."""
    g = tightest(memory)
    if g is None:
        return None
    label = str(g.get("label") or f"GPU {NA}")
    # "all": the run-wide track (a trainer's max over its GPUs); never a bare "max" beside a headroom;
    # "log (no GPU)": that track where NVML sees no GPU, never "all" GPUs of a machine that has none
    short_label = (label.replace("GPU ", "GPU") if label.startswith("GPU ")
                   else "log (no GPU)" if g.get("no_gpu") else "all")
    if nvml:
        label, short_label = f"{label} NVML", f"{short_label} nvml"
    peak, cap = g.get("device_peak_gib"), g.get("capacity_gib")
    eff, minimum = g.get("effective_headroom_gib"), g.get("min_headroom_gib")
    low = "" if g.get("ok") is not False else " LOW"
    act = as_float(g.get("activations_workspace_gib"))
    act_text = f" · activations + workspace {act:.2f} GiB" if act is not None else ""
    if as_float(cap) is None or as_float(eff) is None:
        if as_float(peak) is None:
            return None   # nothing to say beyond the chart's own last value
        return (f"memory {label} peak {gib_digits(peak)} GiB, capacity unknown · {trend_words(g)}{act_text}",
                # every width names the chart's quantity: "all GPUs (max) peak 0.55G" alone did not
                f"mem {label} peak {gib_digits(peak)}G · {trend_words(g, short=True)}",
                f"mem {short_label} peak {gib_digits(peak)}G · {trend_words(g, short=True)}",
                f"mem {short_label} peak {gib_digits(peak)}G",
                # 80 columns: "mem log (no GPU) peak 0.2…" had cut the number
                *((f"mem peak {gib_digits(peak)}G, no GPU", f"mem {gib_digits(peak)}G, no GPU")
                  if g.get("no_gpu") else ()))
    full = (f"memory {label} {gib_digits(peak)}/{gib_digits(cap)} GiB · effective headroom {gib_digits(eff)} GiB{low} "
            f"(min {gib_digits(minimum)}) · {trend_words(g)}{act_text}")
    mid = f"{label} {gib_digits(peak)}/{gib_digits(cap)}G eff {gib_digits(eff)}G{low} · {trend_words(g, short=True)}"
    # every width says which number it is: the peak, the (effective) headroom
    small = f"mem {short_label} peak {gib_digits(peak)}G headroom {gib_digits(eff)}G{low} · {trend_words(g, short=True)}"
    return (full, mid, small, f"mem {short_label} peak {gib_digits(peak)}G headroom {gib_digits(eff)}G{low}",
            f"mem {short_label} headroom {gib_digits(eff)}G{low}", f"{'nvml' if nvml else 'mem'} headroom {gib_digits(eff)}G{low}")


def heading_key(memory: Mapping[str, Any] | None) -> tuple:
    """What the heading depends on (the chart redraws only when it changes)."""
    g = tightest(memory) or {}
    return tuple(str(x) for x in (g.get("gpu"), g.get("device_peak_gib"), g.get("capacity_gib"),
                                  g.get("effective_headroom_gib"), trend_words(g), g.get("activations_workspace_gib")))
