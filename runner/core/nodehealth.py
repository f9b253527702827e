"""Which nodes of a multi-node run need a look first: the rule behind the order of
``Snapshot.nodes`` (so ``--json`` and the UI list them alike).

A node is judged from what its agent wrote (its GPUs) and from its ranks' step times (the
``ranks.json`` the runner keeps from rank-prefixed log lines). Problems, worst first:

1. ``stale``: the agent went silent (or wrote no GPU data): nothing else it says is current;
2. ``mem``: a GPU at or above ``MEM_CRIT_FRAC`` of its memory (least free memory first);
3. ``util``: the node's mean utilisation far below the other nodes' (a node idling while the
   job runs: lowest first);
4. ``slow``: a straggler, its ranks' step time well above the median node's (slowest first).

Then the nodes with nothing to report, by name. A node keeps its place while its flags do not
change, so the list does not shuffle between polls.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

from moeconsole.runner.core.numbers import finite_float, median

MEM_WARN_FRAC = 0.85          # memory used / total: shown in warning colour
MEM_CRIT_FRAC = 0.95          # shown critical; a node with such a GPU is listed first
LOW_UTIL_RATIO = 0.5          # mean utilisation below half the median node's ...
LOW_UTIL_MIN_MEDIAN = 20.0    # ... while the median node is busy at all (percent)
STRAGGLER_RATIO = 1.15        # step time at least 15% above the median node's
MIN_PEERS = 3                 # fewer nodes than this: no median to compare with

PROBLEMS = ("stale", "mem", "util", "slow")


def gpu_figures(gpu: Mapping[str, Any] | None) -> dict:
    """A node's GPUs in the numbers the rule needs: least free memory (MiB) and the fraction
    used on that GPU, the highest used fraction, mean and lowest utilisation. Worked out once
    per change of an agent's file (``snapshot.NodeReader``; a 128-node console: 64 a second);
    each value read by ``finite_float``, the reader of every value an agent file carries."""
    gpus = gpu.get("gpus") if isinstance(gpu, Mapping) else None
    count = 0
    frees: list[float] = []
    fracs: list[float] = []
    utils: list[float] = []
    for g in (gpus if isinstance(gpus, list) else ()):
        if not isinstance(g, dict):
            continue
        count += 1
        used, total, util = finite_float(g.get("mem_used_mib")), finite_float(g.get("mem_total_mib")), \
            finite_float(g.get("util_pct"))
        if used is not None and total:
            frees.append(total - used)
            fracs.append(used / total)
        if util is not None:
            utils.append(util)
    return {"gpus": count, "min_free_mib": min(frees, default=None), "max_mem_frac": max(fracs, default=None),
            "mean_util_pct": sum(utils) / len(utils) if utils else None, "min_util_pct": min(utils, default=None)}


def node_step_time(ranks: Iterable[int], rank_times: Mapping[int, Mapping[str, Any]]) -> float | None:
    """A node's step time from ``ranks.json``'s entries (``slowest``)."""
    return slowest((rank_times.get(r) or {}).get("step_time_s") for r in ranks)


def slowest(step_times: Iterable[Any]) -> float | None:
    """A node is as slow as its slowest rank: the largest of its ranks' latest step times (as
    ``ranks.json`` has them; a missing or non-finite one is left out)."""
    times = [t for x in step_times if (t := finite_float(x)) is not None]
    return max(times) if times else None


def node_ranks(node: Mapping[str, Any]) -> list[int]:
    """The ranks a node's agent found running there (``Snapshot.nodes[i]["ranks"]``): the one
    rule for which ranks a node runs, read by its judgement and by its row (``gpu_panel``). A
    rank is an int as the agent writes it (``telemetry.ranks.scan_node_ranks``); a bool is not
    one (``numbers``: "a bool is not a number here", else ``true`` would take rank 1's step
    time), nor a float or a string another version wrote."""
    ranks = node.get("ranks")
    return [r["rank"] for r in ranks if isinstance(r, dict) and type(r.get("rank")) is int] \
        if isinstance(ranks, list) else []


def node_figures(node: Mapping[str, Any], rank_times: Mapping[int, Mapping[str, Any]]) -> dict:
    """One node's numbers for the rule: its GPUs' (``gpu_figures``) and its step time."""
    f = gpu_figures(node.get("gpu") if node.get("gpu") else None)
    f["step_time_s"] = node_step_time(node_ranks(node), rank_times)
    return f


def assess_nodes(nodes: list[dict], rank_times: Mapping[int, Mapping[str, Any]] | None = None,
                 figures: list[dict] | None = None) -> list[dict]:
    """Each node dict with ``health`` added (figures, ``problems`` and ``why`` in words), ordered
    worst first (see the module's docstring). ``nodes``: ``Snapshot.nodes`` entries.
    ``figures``: each node's ``node_figures``, when the caller kept them from the last time its
    file and ``ranks.json`` were read (a 128-node console judges again whenever one file changed;
    only that file's figures are new)."""
    rank_times = rank_times or {}
    figs = figures if figures is not None else [node_figures(n, rank_times) for n in nodes]  # read, never changed
    live = [f for n, f in zip(nodes, figs) if not n.get("stale")]
    utils = [u for f in live if (u := f["mean_util_pct"]) is not None]
    steps = [s for f in live if (s := f["step_time_s"]) is not None]
    med_util = median(utils) if len(utils) >= MIN_PEERS else None
    med_step = median(steps) if len(steps) >= MIN_PEERS else None
    out = []
    for n, f in zip(nodes, figs):
        problems: list[str] = []
        why: list[str] = []
        if n.get("stale"):
            problems.append("stale")
        if f["max_mem_frac"] is not None and f["max_mem_frac"] >= MEM_CRIT_FRAC:
            problems.append("mem")
            why.append(f"{f['min_free_mib'] / 1024:.1f}G free")
        if (med_util is not None and med_util >= LOW_UTIL_MIN_MEDIAN and f["mean_util_pct"] is not None
                and f["mean_util_pct"] < LOW_UTIL_RATIO * med_util):
            problems.append("util")
            why.append(f"util {f['mean_util_pct']:.0f}% vs {med_util:.0f}%")
        if med_step and f["step_time_s"] is not None and f["step_time_s"] >= STRAGGLER_RATIO * med_step:
            problems.append("slow")
            why.append(f"step {f['step_time_s']:.2f}s ({f['step_time_s'] / med_step:.2f}x)")
        out.append({**n, "health": {**f, "median_step_time_s": med_step, "median_util_pct": med_util,
                                    "problems": problems, "why": why}})
    out.sort(key=_order)
    return out


def _order(node: dict) -> tuple:
    h = node["health"]
    problems = h["problems"]
    if not problems:
        return (len(PROBLEMS), 0.0, str(node.get("host")))
    first = min(PROBLEMS.index(p) for p in problems)
    worse = {"stale": 0.0, "mem": h["min_free_mib"] or 0.0, "util": h["mean_util_pct"] or 0.0,
             "slow": -(h["step_time_s"] or 0.0)}[PROBLEMS[first]]
    return (first, worse, str(node.get("host")))
