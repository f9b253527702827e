"""GpuPanel: one compact row per GPU in the nvidia-smi grammar (index, utilisation bar, memory
bar against capacity, temperature, power, a utilisation sparkline). Rows flow into two or more
columns when the panel is wide, so eight GPUs fit an 80x24 terminal in four lines.

A multi-node run adds the nodes whose ``moeconsole agent`` writes into the run directory
(``Snapshot.nodes``, worst first: see ``moeconsole.runner.core.nodehealth``): one group per node, its host name
heading its GPU rows, then what is wrong with it (a GPU nearly out of memory, utilisation far
below the other nodes', a straggler's step time), its agent's heartbeat and the ranks running
there. When the rows of every node do not fit the panel, each node shrinks to one summary line
and the worst ones are listed; the rest are counted. A node whose agent went silent says
STALE and how long ago it last wrote, in words."""
from __future__ import annotations

import collections
import math
from dataclasses import dataclass

from moeconsole.console import format as fmt
from moeconsole.console.widgets.lines import LinesView
from moeconsole.runner.rundir import rundir
from moeconsole.runner.core.nodehealth import MEM_CRIT_FRAC, MEM_WARN_FRAC, node_ranks
from moeconsole.runner.core.numbers import finite_float
from moeconsole.runner.core.units import NA, byte_rate, clip, gib_compact, gib_of_mib, number, whole

SPARK = "▁▂▃▄▅▆▇█"
EIGHTHS = " ▏▎▍▌▋▊▉█"
HISTORY = 60
HOST_LABEL_MAX = 28
FALLBACK_LINES = 10  # when the panel's max-height is not a number of cells

Pieces = list[tuple[str, str]]


def bar(frac: float | None, width: int) -> str:
    """[████▌     ] with eighth-block resolution; filled with the missing-value mark when unknown."""
    if frac is None:
        return "[" + NA * width + "]"
    frac = min(1.0, max(0.0, frac))
    eighths = int(round(frac * width * 8))
    full, part = divmod(eighths, 8)
    body = "█" * full + (EIGHTHS[part] if part and full < width else "")
    return "[" + body.ljust(width) + "]"


def percent_sparkline(values: list[float], width: int) -> str:
    """Utilisation readings (finite floats: ``GpuPanel._record`` keeps only what ``finite_float``
    reads) as eighth-block cells."""
    vals = values[-width:]
    return "".join(SPARK[min(7, max(0, int(v / 100 * 7.999)))] for v in vals).ljust(width)


def gpu_row_pieces(g: dict, width: int, history: list[float] | None = None) -> Pieces:
    """One GPU as (text, style) pieces fitting ``width`` cells; fields drop from the right. Every
    value read by ``finite_float`` (as the node's judgement and summary line read them): an odd
    one (a bool, NaN, an int too large for a float, a list) shows as unknown, never stops the
    panel; a number in a string is a number."""
    util = finite_float(g.get("util_pct"))
    used, total = finite_float(g.get("mem_used_mib")), finite_float(g.get("mem_total_mib"))
    mem_frac = (used / total) if (used is not None and total) else None
    mem_style = "gpu--crit" if (mem_frac or 0) >= MEM_CRIT_FRAC else ("gpu--warn" if (mem_frac or 0) >= MEM_WARN_FRAC else "gpu--ok")
    temp = finite_float(g.get("temp_c"))
    temp_style = "gpu--crit" if (temp or 0) >= 85 else ("gpu--warn" if (temp or 0) >= 75 else "")
    bw = 10 if width >= 60 else 6
    pieces: Pieces = [
        (f"{whole(g.get('index')):>2} ", "gpu--index"),
        (bar(None if util is None else util / 100, bw), "gpu--util"),
        (f"{whole(util):>3}% ", ""),
        (bar(mem_frac, bw), mem_style),
        (f"{gib_of_mib(used):>5}/{gib_of_mib(total)}G", mem_style),
        ("!" if (mem_frac or 0) >= MEM_CRIT_FRAC else " ", mem_style),
    ]
    extra: Pieces = [
        (f" {whole(temp)}C", temp_style),
        (f" {whole(g.get('power_w'))}/{whole(g.get('power_limit_w'))}W", ""),
    ]
    extra.append((" " + procs_words(g.get("processes")), "gpu--dim"))
    used_w = sum(len(t) for t, _ in pieces)
    for piece in extra:
        if used_w + len(piece[0]) > width:
            break
        pieces.append(piece)
        used_w += len(piece[0])
    if history and width - used_w >= 12:
        spark_w = min(len(history), width - used_w - 1, 30)
        pieces.append((" " + percent_sparkline(history, spark_w), "gpu--spark"))
    return pieces


def procs_words(procs: list | None) -> str:
    """The processes on a GPU in a few characters: the run's rank there and how many others
    (``r3``, ``r3+1p``, ``r0,1``), else the count (``2p``); ``?p`` when the driver cannot list them
    (or another agent version wrote something else than a list)."""
    if not isinstance(procs, list):
        return "?p"
    ranks = sorted({p["run"]["rank"] for p in procs if isinstance(p, dict) and isinstance(p.get("run"), dict)
                    and isinstance(p["run"].get("rank"), int)})
    own = sum(1 for p in procs if isinstance(p, dict) and isinstance(p.get("run"), dict))
    others = len(procs) - own
    if not own:
        return f"{len(procs)}p"
    text = "r" + ",".join(map(str, ranks[:3])) + ("…" if len(ranks) > 3 else "") if ranks else "run"
    return text + (f"+{others}p" if others else "")


def host_words(host: dict | None, width: int) -> str:
    """This host in one line: CPU, RAM (where an optimizer offloaded to the host lives) and the
    output directory's disk I/O and free space, shortened to ``width``."""
    if not host:
        return ""
    cpu, cores = host.get("cpu_pct"), host.get("cpu_count")
    used, total = host.get("ram_used_gib"), host.get("ram_total_gib")
    io = host.get("io") or {}
    cpu_t = f"cpu {NA if cpu is None else f'{number(cpu)}%'}" + (f" of {cores}" if cores else "")
    ram_t = f"ram {number(used, '.1f')}/{number(total)}G"
    if used is not None and total:
        ram_t += f" ({used / total * 100:.0f}%)"
    free = io.get("free_gib")
    free_t = f"{gib_compact(free)} free" if free is not None else ""
    if io.get("read_bps") is not None or io.get("write_bps") is not None:
        io_t = f"r {byte_rate(io.get('read_bps'))} w {byte_rate(io.get('write_bps'))}"
    elif io.get("why") and "block device" in str(io.get("why")):
        io_t = f"I/O {NA}"
    else:
        io_t = "I/O …"
    path = str(io.get("path") or "")
    dev = f" ({io['device']})" if io.get("device") else ""
    candidates = [
        f"host {host.get('hostname') or NA} · {cpu_t} · {ram_t} · out {path}{dev}: {io_t}, {free_t}",
        f"host {cpu_t} · {ram_t} · out {_short_path(path)}: {io_t}, {free_t}",
        f"{cpu_t} · {ram_t} · out {io_t}, {free_t}",
        f"{cpu_t} · {ram_t} · {io_t}",
        f"{cpu_t} · {ram_t}",
    ]
    # narrower than the shortest: cut with its mark (a 50-column pane showed "w 92." for "w 92.4K/s")
    return next((c for c in candidates if len(c) <= width), clip(candidates[-1], width))


def _short_path(path: str) -> str:
    return path if len(path) <= 24 else "…" + path[-23:]


def gpu_columns(count: int, width: int) -> int:
    """How many columns ``count`` GPU rows flow into at ``width`` cells."""
    return max(1, min(count or 1, width // 62 if width >= 124 else (2 if width >= 76 else 1)))


def gpu_row_count(group: "NodeGroup", width: int) -> int:
    """How many lines a node's GPU rows take under its heading (0 without GPU data)."""
    if not (group.gpu and group.gpu.get("available")):
        return 0
    n = len(_gpu_dicts(group.gpu))
    return -(-n // gpu_columns(n, width)) if n else 0


def gpu_lines(gpus: list[dict], width: int, history_of) -> list[Pieces]:
    """GPU rows flowed into columns (two on 80 columns, more from 124), filled column by column."""
    cols = gpu_columns(len(gpus), width)
    col_w = (width - (cols - 1) * 2) // cols
    rows = [gpu_row_pieces(g, col_w, history_of(g.get("index"))) for g in gpus]
    per_col = -(-len(rows) // cols) if rows else 0
    lines: list[Pieces] = []
    for r in range(per_col):
        line: Pieces = []
        for c in range(cols):
            i = c * per_col + r
            if i >= len(rows):
                break
            if c:
                line.append(("  ", ""))
            cell = rows[i]
            pad = col_w - sum(len(t) for t, _ in cell)
            line += cell + ([(" " * pad, "")] if pad > 0 and c < cols - 1 else [])
        lines.append(line)
    return lines


# ---- nodes ------------------------------------------------------------------------------------

def _gpu_dicts(gpu: dict) -> list[dict]:
    """The GPU dicts of a snapshot, skipping anything else a foreign agent file may hold."""
    gpus = gpu.get("gpus")
    return [g for g in gpus if isinstance(g, dict)] if isinstance(gpus, list) else []


@dataclass(slots=True)
class NodeGroup:
    """One node as the panel shows it: the live local snapshot or an agent's file."""

    host: str
    gpu: dict | None
    local: bool = False
    live: bool = False
    stale: bool = False
    age_s: float | None = None
    ranks: tuple[int, ...] = ()       # the ranks its agent found running there
    agent: bool = False               # an agent file stands behind it (it has a heartbeat)
    why: tuple[str, ...] = ()         # its problems in words (moeconsole.runner.core.nodehealth): "0.4G free", "step 6.1s (1.3x)"
    critical: bool = False            # one of them is a GPU nearly out of memory
    glance: bool = False              # its file read only for the summary line (no rows: ``NodeReader.whole``)


def _file_gpu(node: dict) -> dict | None:
    """A node's GPUs as its agent file has them (None: another version's file)."""
    gpu = node.get("gpu")
    return gpu if isinstance(gpu, dict) else None


def _file_why(node: dict) -> tuple[str, ...]:
    """A node's problems in words, as judged (``health.why``)."""
    health = node.get("health")
    return tuple(str(w) for w in health.get("why") or ()) if isinstance(health, dict) else ()


def node_groups(nodes: tuple[dict, ...] | list[dict], local_gpu: dict | None, local_host: str) -> list[NodeGroup]:
    """Every node once, in the order of ``Snapshot.nodes``: the local host's agent file is
    replaced by the live local snapshot (unless that one has no GPUs and the file has), and the
    local node comes first when it has no agent file."""
    groups: list[NodeGroup] = []
    local_seen = False
    for node in nodes:
        host = str(node.get("host") or NA)
        local = host == local_host
        gpu = _file_gpu(node)
        age = node.get("age_s")
        ranks = node_rank_numbers(node)
        health = node.get("health")
        why = _file_why(node)
        critical = isinstance(health, dict) and "mem" in (health.get("problems") or ())
        from_file = NodeGroup(host, gpu, local=local, stale=bool(node.get("stale")),
                              age_s=finite_float(age), ranks=ranks, agent=True,
                              why=why, critical=critical, glance=bool(node.get("glance")))
        if local and not local_seen and local_gpu is not None:
            local_seen = True
            file_better = not local_gpu.get("available") and bool(gpu and gpu.get("available"))
            groups.append(from_file if file_better else
                          NodeGroup(host, local_gpu, local=True, live=True, age_s=from_file.age_s, ranks=ranks,
                                    agent=True, why=why, critical=critical))
        else:
            groups.append(from_file)
    if local_gpu is not None and not local_seen:
        groups.insert(0, NodeGroup(local_host, local_gpu, local=True, live=True))
    return groups


_RANKS_SEEN: dict[str, tuple[object, tuple[int, ...]]] = {}  # host -> (its ranks list, their numbers)


def node_rank_numbers(node: dict) -> tuple[int, ...]:
    """The ranks an agent file lists (``Snapshot.nodes[i]["ranks"]``), sorted, unique: the ranks
    the node's judgement reads (``nodehealth.node_ranks``, the one rule). Kept per host while
    the entry holds the very same list (a node's reader keeps it until the agent's file changes;
    a glance hands the last list over while the ranks read the same), never on equality of two
    lists (``[{"rank": 1.0}] == [{"rank": 1}]``, yet only the second is a rank)."""
    host, ranks = str(node.get("host")), node.get("ranks")
    seen = _RANKS_SEEN.get(host)
    if seen is not None and seen[0] is ranks:
        return seen[1]
    got = tuple(sorted(set(node_ranks(node))))
    if len(_RANKS_SEEN) > 4096:
        _RANKS_SEEN.clear()
    _RANKS_SEEN[host] = (ranks, got)
    return got


def ranks_words(ranks: tuple[int, ...], *, short: bool = False) -> str:
    """``rank 3``, ``ranks 0-7``, ``ranks 0-3,8`` (short: ``r3``, ``r0-7``); ``no ranks`` when
    none runs there."""
    if not ranks:
        return "no ranks"
    spans: list[str] = []
    start = prev = ranks[0]
    for r in (*ranks[1:], None):
        if r is not None and r == prev + 1:
            prev = r
            continue
        spans.append(str(start) if start == prev else f"{start}-{prev}")
        if r is not None:
            start = prev = r
    text = ",".join(spans)
    if len(text) > 24:  # scattered ranks: the first ones and how many
        text = text[:20].rsplit(",", 1)[0] + f",… ({len(ranks)})"
    return ("r" if short else "rank " if len(ranks) == 1 else "ranks ") + text


def heartbeat_words(group: "NodeGroup", *, short: bool = False) -> str:
    """The agent's heartbeat: how long ago it last wrote (``agent 2s ago``; short ``agent 2s``)."""
    age = group.age_s
    if age is None or not math.isfinite(age):
        return "agent ?"
    words = f"{max(0, int(age))}s" if age < 120 else age_words(age)
    return f"agent {words}" if short else f"agent {words} ago"


def age_words(seconds: float | None) -> str:
    """How long ago, in words: 45 seconds, 1 minute, 3 hours, 2 days."""
    if seconds is None or not math.isfinite(seconds):
        return "an unknown time"
    s = max(0, int(seconds))
    unit, size = next((u, n) for u, n in (("day", 86400), ("hour", 3600), ("minute", 60), ("second", 1))
                      if s >= n or u == "second")
    count = s // size
    return f"{count} {unit}{'' if count == 1 else 's'}"


def stale_node_words(group: NodeGroup, *, short: bool = False) -> str:
    """STALE and how long the node's agent has been silent, in words."""
    if group.age_s is None:
        return "STALE: no time in its agent file" if not short else "STALE, no time"
    age = age_words(group.age_s)
    return f"STALE {age} ago" if short else f"STALE: last update {age} ago"


def _gib_sum(mib: float) -> str:
    gib = mib / 1024
    return f"{gib:.0f}" if gib >= 100 else f"{gib:.1f}"


def node_stats(gpu: dict) -> dict:
    """A node's GPUs in a few numbers: count, memory used/total (MiB), max util, hottest temp.
    Each value read as the node's judgement reads it (``finite_float``: a bool, NaN, infinity
    or an int too large for a float is no value, a number in a string is one); unknown values
    are left out of sums and maxima (None when no GPU reports them)."""
    gpus = _gpu_dicts(gpu)

    def known(key: str) -> list[float]:
        return [v for g in gpus if (v := finite_float(g.get(key))) is not None]
    used, total = known("mem_used_mib"), known("mem_total_mib")
    util, temp = known("util_pct"), known("temp_c")
    return {"count": len(gpus), "mem_used_mib": sum(used) if used else None,
            "mem_total_mib": sum(total) if total else None,
            "util_max": max(util) if util else None, "temp_max": max(temp) if temp else None}


def host_label(group: NodeGroup) -> str:
    host = clip(group.host, HOST_LABEL_MAX)
    return host + (" (this node)" if group.local else "")


_STATS_SEEN: dict[int, tuple[dict, Pieces, Pieces]] = {}


def _stat_fields(gpu: dict, *, short: bool) -> Pieces:
    """A node's GPU numbers as the pieces of its summary line (long or short words). Kept per
    GPU snapshot (the very same dict: a node's reader keeps it until the agent's file changes),
    so a 128-node panel works them out once per change of a node's file, not once a second;
    the live local snapshot is a new dict each poll, so it is worked out each time."""
    seen = _STATS_SEEN.get(id(gpu))
    if seen is None or seen[0] is not gpu:
        if len(_STATS_SEEN) > 4096:
            _STATS_SEEN.clear()
        stats = node_stats(gpu)   # once for both wordings
        seen = _STATS_SEEN[id(gpu)] = (gpu, _stat_pieces(stats, short=False), _stat_pieces(stats, short=True))
    return seen[2] if short else seen[1]


def _stat_pieces(s: dict, *, short: bool) -> Pieces:
    """``node_stats`` ``s`` as the pieces of a summary line (long or short words)."""
    n = s["count"]
    used = NA if s["mem_used_mib"] is None else _gib_sum(s["mem_used_mib"])
    total = NA if s["mem_total_mib"] is None else _gib_sum(s["mem_total_mib"])
    return [
        (f"  {n} GPU{'' if n == 1 else 's'}", ""),
        (f"  {'' if short else 'mem '}{used}/{total}G", ""),
        (f"  max util {whole(s['util_max'])}%", ""),
        (f"  hottest {whole(s['temp_max'])}C", ""),
    ]


def _summary_layout(group: NodeGroup, width: int, label_w: int, short: bool) -> tuple[Pieces, bool]:
    """One layout of a summary line, and whether every field fitted ``width``."""
    pieces: Pieces = [(host_label(group).ljust(label_w), "gpu--title")]
    if group.stale:
        pieces.append(("  " + stale_node_words(group, short=short), "gpu--stale"))
    if group.why:  # what makes it one of the worst nodes, right after its name
        pieces.append(("  " + ", ".join(group.why), "gpu--crit" if group.critical else "gpu--warn"))
    if group.agent and not group.stale:  # a silent agent's ranks are old news: STALE says it
        pieces.append(("  " + heartbeat_words(group, short=short), "gpu--dim"))
        pieces.append(("  " + ranks_words(group.ranks, short=short), ""))
    gpu = group.gpu
    if gpu is None:
        return pieces + [("  no GPU data in its agent file", "gpu--dim")], True
    if not gpu.get("available"):
        return pieces + [(f"  GPUs not available: {gpu.get('reason') or 'unknown reason'}", "gpu--dim")], True
    used_w = sum(len(t) for t, _ in pieces)
    for piece in _stat_fields(gpu, short=short):
        if used_w + len(piece[0]) > width:
            return pieces, False
        pieces.append(piece)
        used_w += len(piece[0])
    return pieces, True


def summary_block(groups: list[NodeGroup], width: int) -> list[Pieces]:
    """A block of summary lines, one per group: aligned hosts and long words if every line then
    fits ``width``, else short words, else unaligned hosts. One choice for the whole block, so
    its lines read alike; each line is built once for the layout chosen (not again after the
    choice)."""
    label_w = min(max((len(host_label(g)) for g in groups), default=0), HOST_LABEL_MAX + 12)
    layouts = ((label_w, False), (label_w, True), (0, True))
    for pad, short in layouts[:-1]:
        lines: list[Pieces] = []
        for g in groups:
            line, fits = _summary_layout(g, width, pad, short)
            if not fits:
                break
            lines.append(line)
        else:
            return lines
    pad, short = layouts[-1]
    return [_summary_layout(g, width, pad, short)[0] for g in groups]


def node_summary(group: NodeGroup, width: int, label_w: int = 0, short: bool = False) -> Pieces:
    """A node in one line: host, STALE and its age (never dropped), then GPU count, memory
    used/total, max utilisation and hottest temperature, dropped from the right if too long."""
    return _summary_layout(group, width, label_w, short)[0]


def _is_problem(stale: bool, gpu: dict | None, why: object) -> bool:
    """Listed first when the nodes are counted: stale, no GPU data, or judged one of the worst
    (``why``: its problems in words, any non-empty sequence of them)."""
    return stale or gpu is None or not gpu.get("available") or bool(why)


def _group_is_problem(group: NodeGroup) -> bool:
    return _is_problem(group.stale, group.gpu, group.why)


def summary_lines(groups: list[NodeGroup], width: int, budget: int) -> list[Pieces]:
    """One line per node; past ``budget`` lines, stale and GPU-less nodes are listed first and
    the rest are counted on a last line."""
    if len(groups) <= budget:
        return summary_block(groups, width)
    keep = max(0, budget - 1)
    ordered = sorted(groups, key=lambda g: not _group_is_problem(g))  # stable: problems first, order kept
    shown, hidden = ordered[:keep], ordered[keep:]
    return _counted(shown, len(hidden), sum(1 for g in hidden if g.stale), width)


def _counted(shown: list[NodeGroup], hidden: int, stale: int, width: int) -> list[Pieces]:
    more = f"+{hidden} more node{'' if hidden == 1 else 's'}"
    more += f" ({stale} STALE)" if stale else ""
    return summary_block(shown, width) + [[(more + "; moeconsole --json lists all",
                                            "gpu--stale" if stale else "gpu--dim")]]


def node_summary_lines(nodes: tuple[dict, ...] | list[dict], local_gpu: dict | None, local_host: str,
                       width: int, budget: int) -> list[Pieces]:
    """``summary_lines(node_groups(nodes, local_gpu, local_host), width, budget)``, with only
    the groups shown built: past ``budget`` the others are only counted (and their stale ones),
    from their files' fields. A 128-node run screen shows 15 nodes; it builds 15 groups a
    second, not 129."""
    local_live = local_gpu is not None and all(str(n.get("host") or NA) != local_host for n in nodes)
    if len(nodes) + local_live <= budget:
        return summary_lines(node_groups(nodes, local_gpu, local_host), width, budget)
    # (problem, stale, its group when built, else its node) in node_groups' order
    items: list[tuple[bool, bool, NodeGroup | dict]] = []
    if local_live:
        live = NodeGroup(local_host, local_gpu, local=True, live=True)
        items.append((_group_is_problem(live), False, live))
    local_open = local_gpu is not None
    for node in nodes:
        if local_open and str(node.get("host") or NA) == local_host:  # the live snapshot may replace its file
            local_open = False
            group = node_groups([node], local_gpu, local_host)[0]
            items.append((_group_is_problem(group), group.stale, group))
        else:
            stale = bool(node.get("stale"))
            health = node.get("health")  # its words are made only for the nodes shown (``_file_why``)
            items.append((_is_problem(stale, _file_gpu(node), health.get("why") if isinstance(health, dict) else None),
                          stale, node))
    keep = max(0, budget - 1)
    # problems first, each part in its order (what ``sorted`` on ``not problem`` gives, with no key calls)
    ordered = [item for item in items if item[0]] + [item for item in items if not item[0]]
    shown = [made if isinstance(made, NodeGroup) else node_groups([made], None, local_host)[0]
             for _, _, made in ordered[:keep]]
    hidden = ordered[keep:]
    return _counted(shown, len(hidden), sum(1 for item in hidden if item[1]), width)


def _dimmed(line: Pieces) -> Pieces:
    return [(t, "gpu--dim") for t, _ in line]


class GpuPanel(LinesView):
    COMPONENT_CLASSES = {"gpu--index", "gpu--util", "gpu--ok", "gpu--warn", "gpu--crit", "gpu--dim",
                         "gpu--spark", "gpu--title", "gpu--stale"}

    def __init__(self, *, id: str | None = None, local_host: str | None = None) -> None:
        super().__init__(id=id)
        self.local_host = local_host or rundir.hostname()
        self._gpu: dict | None = None
        self._agent_nodes: tuple[dict, ...] = ()
        self._history: dict[str, dict[int, collections.deque[float]]] = {}  # host -> GPU index -> utilisation
        self._node_t: dict[str, float | None] = {}
        self._shown: object = None
        self._budget_used: int | None = None
        self.plain_lines: list[str] = []
        self.summarised = False  # True when the nodes are shown as one summary line each

    def show_gpu(self, gpu: dict | None, nodes: tuple[dict, ...] | list[dict] = ()) -> None:
        """The local live snapshot (``Snapshot.gpu``) and the agents' nodes (``Snapshot.nodes``).
        The very same objects as last time (a poll woken by a log write between two timer polls)
        change nothing: the nodes are not looked at."""
        if self._shown is not None and gpu is self._gpu and \
                (nodes is self._agent_nodes or (not nodes and not self._agent_nodes)):
            return
        if gpu is not self._gpu and gpu is not None:
            self._record(self.local_host, gpu)
        history = self._history
        for node in nodes:
            host = str(node.get("host") or NA)
            if host == self.local_host and gpu is not None:  # replaced by the live snapshot
                continue
            if node.get("glance"):
                # read for its summary line only: its rows (and their sparklines) are never
                # drawn from it, so no history is kept for it; what a whole read left is dropped
                history.pop(host, None)
                self._node_t.pop(host, None)
                continue
            if node.get("t") != self._node_t.get(host) and not node.get("stale"):
                self._node_t[host] = node.get("t")
                self._record(host, node["gpu"] if isinstance(node.get("gpu"), dict) else {})
        self._gpu = gpu
        self._agent_nodes = tuple(nodes)
        self._draw()

    def _record(self, host: str, gpu: dict) -> None:
        history = self._history.get(host)
        for g in _gpu_dicts(gpu):
            util, index = finite_float(g.get("util_pct")), g.get("index")  # the one reader: no bool, no 10**400
            if util is not None and index is not None:
                if history is None:
                    history = self._history[host] = {}
                kept = history.get(index)
                if kept is None:  # (not setdefault: that builds a deque for every reading)
                    kept = history[index] = collections.deque(maxlen=HISTORY)
                kept.append(util)

    def history_count(self) -> int:
        """How many GPUs' utilisation histories the panel holds (what its sparklines draw from)."""
        return sum(len(per_gpu) for per_gpu in self._history.values())

    def on_resize(self) -> None:
        self._draw()

    def notify_style_update(self) -> None:
        """The screen's breakpoints change the panel's max-height: redraw if the room changed."""
        super().notify_style_update()
        if self.is_mounted and self._budget_used is not None and self._line_budget() != self._budget_used:
            self.call_later(self._draw)

    def _line_budget(self) -> int:
        max_height = self.styles.max_height
        cells = max_height.cells if max_height is not None else None
        return max(1, cells) if cells else FALLBACK_LINES

    def _history_of(self, host: str):
        per_gpu = self._history.get(host) or {}
        return lambda index: list(per_gpu.get(index, ()))

    def _single_lines(self, gpu: dict | None, width: int) -> list[Pieces]:
        """The panel of a one-node run: the local snapshot's rows, no heading."""
        if gpu is None:
            return [[("GPUs: no telemetry (not polled)", "gpu--dim")]]
        if not gpu.get("available"):
            return [[(f"GPUs: not available: {gpu.get('reason') or 'unknown reason'}", "gpu--dim")]]
        gpus = gpu.get("gpus") or []
        if not gpus:
            return [[("GPUs: none visible", "gpu--dim")]]
        return gpu_lines(gpus, width, self._history_of(self.local_host))

    def _node_lines(self, groups: list[NodeGroup], width: int, budget: int) -> tuple[list[Pieces], bool]:
        """Every node's heading and rows if they fit ``budget`` lines, else one summary line each
        (counted first: a 128-node run never builds the rows it cannot show; more nodes than
        lines need no count)."""
        if len(groups) > budget or any(g.glance for g in groups) or \
                sum(1 + gpu_row_count(g, width) for g in groups) > budget:
            return summary_lines(groups, width, budget), True
        full: list[Pieces] = []
        for g, heading in zip(groups, summary_block(groups, width)):
            full.append(heading)
            if g.gpu and g.gpu.get("available"):
                rows = gpu_lines(_gpu_dicts(g.gpu), width, self._history_of(g.host))
                full += [_dimmed(r) for r in rows] if g.stale else rows
        if len(full) <= budget:
            return full, False
        return summary_lines(groups, width, budget), True

    def _draw(self) -> None:
        width = self.content_size.width or 80
        nodes = self._agent_nodes
        groups = None if len(nodes) > 1 else node_groups(nodes, self._gpu, self.local_host)  # 2 nodes: several
        multi = groups is None or not (len(groups) == 0 or (len(groups) == 1 and groups[0].live))
        self.set_class(multi, "-nodes")  # applies the CSS now: the budget below sees it
        budget = self._budget_used = self._line_budget()
        if multi and len(nodes) > budget:  # one summary line each, and only the lines shown are built
            lines, self.summarised = node_summary_lines(nodes, self._gpu, self.local_host, width, budget), True
        elif multi:
            groups = groups if groups is not None else node_groups(nodes, self._gpu, self.local_host)
            lines, self.summarised = self._node_lines(groups, width, budget)
        else:
            lines, self.summarised = self._single_lines(self._gpu, width), False
        key = (width, repr(lines))
        if key == self._shown:
            return
        self._shown = key
        # Only the rows that changed are drawn again; a new layout only when the number of
        # lines changes (the height is auto).
        self.plain_lines = [fmt.plain(line) for line in lines]
        self.set_lines(lines)
