"""The GPU view (``g`` on the run screen): nvitop's process view for the run's own ranks, and
the GPUs over the whole run.

Per GPU: utilisation, memory, temperature and power, then the processes on it: the run's ranks
first (rank, role, PID, the GPU memory it holds, its SM share of the last second), then every
other process by memory (``other``: not the run's, a blocker candidate). The run's processes
are the runner's tracked PIDs (``moeconsole.runner.telemetry.gpuranks``); another node's come from its
agent's file. Under it, the history the runner recorded (``gpu-history.json``): per GPU a
sparkline of utilisation and of memory over the whole run, and the host's CPU and RAM. The host
line says CPU, RAM and the output directory's disk I/O now.

It reads what the run screen polls (no second poller) and the history file every few seconds.
"""
from __future__ import annotations

import math
import time
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from moeconsole.console import format as fmt
from moeconsole.console import gpurows, keys
from moeconsole.console.widgets.keybar import KeyBar
from moeconsole.console.widgets.lines import LinesView, Pieces
from moeconsole.console.widgets.gpu_panel import SPARK, host_words
from moeconsole.runner.core import units
from moeconsole.runner.core.series import Series
from moeconsole.runner.rundir import gpuhistory, rundir
from moeconsole.runner.telemetry.gpuranks import annotate_from_ranks, run_rows

HISTORY_READ_S = 5.0


def _pct(v: float | None) -> str:
    return units.NA if v is None else f"{units.number(v)}%"


def process_words(row: dict) -> str:
    """The process in words: ``rank 3 (leader)``, ``run (waiter)``, ``other``."""
    if not row["own"]:
        return "other"
    role = f" ({row['role']})" if row.get("role") and row["role"] not in ("child", "rank") else ""
    if row["rank"] is None:
        return f"run{role}"
    local = f", local {row['local_rank']}" if row.get("local_rank") is not None and row["local_rank"] != row["rank"] else ""
    return f"rank {row['rank']}{local}{role}"


# Each GPU's line is `moeconsole gpus`'s (gpurows.gpu_row); the processes on it follow, indented.
PROC_INDENT = " " * 5
PROC_WHO_W = 28
PROC_HEADER = f"{PROC_INDENT}{'process':<{PROC_WHO_W}} {'PID':>8}  {'GPU mem':>8}  {'SM':>5}"


def proc_line(r: dict) -> Pieces:
    """One process under its GPU: who it is, its PID, the GPU memory it holds, its SM share."""
    text = (f"{PROC_INDENT}{process_words(r):<{PROC_WHO_W}} {r['pid']!s:>8}  {units.gib_of_mib(r['used_mib'], 'G'):>8}  "
            f"{_pct(r['sm_pct']):>5}")
    return [(text, "gpuview--own" if r["own"] else "gpuview--other")]


def _said(text: str, width: int | None) -> list[Pieces]:
    """A sentence in the GPU view, wrapped at word ends to ``width`` (a 50-column pane cut
    "GPUs not available: NVIDIA driver" there, with no mark and the reason lost)."""
    if not width or len(text) <= width:
        return [[(text, "")]]
    import textwrap
    return [[(line, "")] for line in textwrap.wrap(text, width, break_on_hyphens=False)]


def node_lines(gpu: dict | None, title: str, width: int | None = None) -> list[Pieces]:
    """A node in the GPU view: its title, the header, then each GPU's line (as ``moeconsole
    gpus`` prints it, fitted to ``width`` by ``gpurows.fit``: never cut mid-number at the edge)
    and the processes on it, the run's ranks first (nvitop's process view)."""
    head: Pieces = [(title, "gpuview--title")]
    if gpu is None:
        return _said(f"{title}: no telemetry (a finished run is not polled)", width)
    if not gpu.get("available"):
        return _said(f"{title}: GPUs not available: {gpu.get('reason') or 'unknown reason'}", width)
    gpus = [g for g in gpu.get("gpus") or () if isinstance(g, dict)]
    name_w, clocks = gpurows.fit(gpus, width) if width else (gpurows.NAME_W, True)
    lines: list[Pieces] = [head, [(gpurows.header(name_w, clocks), "gpuview--head")], [(PROC_HEADER, "gpuview--head")]]
    rows = run_rows(gpu)
    for g in gpus:
        lines.append([(gpurows.gpu_row(g, name_w, clocks), "")])
        mine = [r for r in rows if r["gpu"] == g.get("index")]
        if not mine:
            lines.append([(PROC_INDENT + ("(cannot list processes)" if g.get("processes") is None else "no process"),
                           "gpuview--other")])
        lines += [proc_line(r) for r in mine]
    return lines


class GpuLines(LinesView):
    """The GPU view's nodes, GPUs and processes: a line is drawn again only when it changed."""
    COMPONENT_CLASSES = {"gpuview--title", "gpuview--head", "gpuview--own", "gpuview--other"}
    DEFAULT_CSS = """
    GpuLines > .gpuview--title { text-style: bold; }
    GpuLines > .gpuview--head { text-style: bold; }
    GpuLines > .gpuview--own { text-style: bold; }
    GpuLines > .gpuview--other { text-style: dim; }
    """


def spark(s: Series, width: int, top: float | None, *, mean: bool = False) -> str:
    """A series over the whole run as ``width`` sparkline cells, scaled to ``top`` (100 % for
    utilisation, the capacity for memory); blank without data. Each cell is the max of its part
    (a memory peak is never averaged away), or with ``mean`` its mean (a utilisation dip, a
    stall or a save, is not hidden by the busy samples around it)."""
    if width <= 0:
        return ""
    xs, ys = s.downsample_means(width) if mean else s.downsample(width)
    if not ys:
        return " " * width
    finite = [v for v in ys if math.isfinite(v)]
    top = top or (max(finite) if finite else 1.0) or 1.0
    cells = "".join(SPARK[min(7, max(0, int(v / top * 7.999)))] if math.isfinite(v) else "!" for v in ys)
    return cells.ljust(width)


def history_lines(h: gpuhistory.GpuHistory | None, width: int) -> list[str]:
    """The recorded history as text lines: a heading with its span, then per GPU utilisation and
    memory sparklines with their mean/max, then the host's CPU and RAM."""
    if h is None or not h.samples:
        return ["history: none recorded yet (the runner samples the GPUs every 2 s while the training runs; "
                "gpu-history.json)"]
    lines = [f"history of the whole run: {fmt.duration(h.span_s())} from "
             f"{time.strftime('%H:%M', time.localtime(h.t0 or 0))}, {h.samples:,} samples by the runner"
             + (f" on {h.host}" if h.host else "")]
    spark_w = max(8, (width - 44) // 2)
    for key in sorted(h.gpus, key=lambda k: int(k) if k.isdigit() else 0):
        util, mem = h.gpus[key]["util"], h.gpus[key]["mem_gib"]
        uy = [v for v in util.means()[1] if math.isfinite(v)]
        mean = f"{sum(uy) / len(uy):.0f}%" if uy else fmt.NA
        cap = h.mem_total_gib.get(key)
        peak = mem.finite_max()
        peak_t = fmt.NA if peak is None else f"{peak:.1f}" + (f"/{cap:.0f}G" if cap else "G")
        lines.append(f"{key:>3} util {spark(util, spark_w, 100.0, mean=True)} avg {mean:>4}  "
                     f"mem {spark(mem, spark_w, cap)} peak {peak_t}")
    cpu_y = [v for v in h.cpu.means()[1] if math.isfinite(v)]
    ram_peak = h.ram.finite_max()
    lines.append(f"host cpu {spark(h.cpu, spark_w, 100.0, mean=True)} avg {(f'{sum(cpu_y) / len(cpu_y):.0f}%' if cpu_y else fmt.NA):>4}  "
                 f"ram {spark(h.ram, spark_w, h.ram_total_gib)} peak "
                 + (fmt.NA if ram_peak is None else f"{ram_peak:.1f}" + (f"/{h.ram_total_gib:.0f}G" if h.ram_total_gib else "G")))
    return lines


class GpuScreen(Screen):
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(keys.GPU_KEYS)

    def __init__(self, source, run_screen) -> None:
        super().__init__()
        self.source = source
        self.run_screen = run_screen
        self.history: gpuhistory.GpuHistory | None = None
        self._history_at = -math.inf
        self._title_drawn = self._host_drawn = ""
        self._history_drawn: object = None
        self._history_stamp: object = None
        # per node: what its lines were made from, and the lines (a node that did not change
        # since the last second is not laid out again; at 128 nodes most did not)
        self._node_lines: dict[str, tuple[object, list[Pieces]]] = {}
        self.history_text = ""

    def compose(self) -> ComposeResult:
        yield Static("", id="gpu-title")
        yield Static("", id="gpu-host")
        with VerticalScroll(id="gpu-body"):
            yield GpuLines(id="gpu-procs")
            yield Static("", id="gpu-history")
        yield KeyBar()   # the key footer in one widget (Textual's Footer: a widget per key)

    def on_mount(self) -> None:
        self.source.whole_nodes(True)  # each node's rows: the whole agent files from the next poll
        self._read_history()
        self.refresh_view()
        self.set_interval(1.0, self.refresh_view)

    @work(thread=True, exclusive=True, group="gpu-history")
    def _read_history(self) -> None:
        """gpu-history.json again when the runner replaced it (every 10 s while it trains)."""
        try:
            st = self.source.run.gpu_history.stat()
            stamp: object = (st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = None
        if stamp == self._history_stamp and self.history is not None:
            return
        self._history_stamp = stamp
        history = gpuhistory.load_history(self.source.run)
        self.app.call_from_thread(self._got_history, history)

    def _got_history(self, history: gpuhistory.GpuHistory | None) -> None:
        self.history = history
        self._history_at = time.monotonic()
        self._history_drawn = None
        self.refresh_view()

    def refresh_view(self) -> None:
        """Redraw what changed since the last second: the title, the host line, the process table
        (only when the GPUs' numbers moved), the history (only when the runner wrote it again)."""
        if time.monotonic() - self._history_at >= HISTORY_READ_S:
            self._history_at = time.monotonic()
            self._read_history()
        snap = self.run_screen.snapshot
        width = max(40, self.size.width - 2)
        run = snap.run if snap is not None else {}
        local = rundir.hostname()
        title = (f"GPUs of {run.get('name') or self.source.run.run_id}  ·  {run.get('status_word') or ''}  ·  "
                 f"the run's ranks first on each GPU, other processes after  ·  q back")
        if title != self._title_drawn:
            self._title_drawn = title
            self.query_one("#gpu-title", Static).update(Text(title, style="bold"))
        host = snap.host if snap is not None else None
        host_line = host_words(host, width) if host else "host: not polled (a finished run)"
        if host_line != self._host_drawn:
            # one line, cut to the width: no layout (only its cells are drawn again)
            self.query_one("#gpu-host", Static).update(Text(host_line), layout=not self._host_drawn)
            self._host_drawn = host_line
        self._draw_nodes(snap, local)
        if (id(self.history), width) != self._history_drawn:
            self._history_drawn = (id(self.history), width)
            self.history_text = "\n".join(history_lines(self.history, width))
            self.query_one("#gpu-history", Static).update(Text("\n" + self.history_text))

    def _lines_of(self, name: str, key: object, make) -> list[Pieces]:
        got = self._node_lines.get(name)
        if got is None or got[0] != key:
            got = (key, make())
            self._node_lines[name] = got
        return got[1]

    def _draw_nodes(self, snap, local: str) -> None:
        """This node's live reading, then every other node's agent file; a node's lines are made
        again only when its reading changed (its numbers here, its file's time for an agent)."""
        gpu = snap.gpu if snap is not None else None
        title = f"{local} (this node)"
        width = self._lines_width()
        key: object = (title, width, None if gpu is None else (gpu.get("available"), gpu.get("reason"), gpu.get("gpus")))  # not its time
        lines = list(self._lines_of(local, key, lambda: node_lines(gpu, title, width)))
        seen = {local}
        for node in (snap.nodes if snap is not None else ()):
            host_name = str(node.get("host") or fmt.NA)
            if host_name == local:
                continue
            seen.add(host_name)
            node_gpu = node.get("gpu") if isinstance(node.get("gpu"), dict) else None
            node_title = host_name + (" (STALE)" if node.get("stale") else "")
            lines.append([])
            if node.get("glance"):  # read for the run screen's summary line: its whole file comes next poll
                lines.append([(node_title, "gpuview--title"), ("  reading its agent file", "")])
                continue
            node_key = (node_title, width, node.get("t"), node_gpu is None)
            lines += self._lines_of(host_name, node_key, lambda: node_lines(
                annotate_from_ranks(node_gpu, node.get("ranks") or []), node_title, width))
        for gone in set(self._node_lines) - seen:
            del self._node_lines[gone]
        self.query_one("#gpu-procs", GpuLines).set_lines(lines)

    def _lines_width(self) -> int | None:
        """The columns the GPU lines get (the body less its scrollbar); None before the layout."""
        width = self.query_one("#gpu-procs", GpuLines).content_size.width
        return width or None

    def on_resize(self) -> None:
        self.refresh_view()

    @property
    def procs_text(self) -> str:
        """What the process lines show, as plain text (tests)."""
        return "\n".join("".join(text for text, _ in line) for line in self.query_one("#gpu-procs", GpuLines).lines)

    def action_help(self) -> None:
        from moeconsole.console.screens.dialogs import HelpScreen
        self.app.push_screen(HelpScreen("GPU view"))

    def on_unmount(self) -> None:
        self.source.whole_nodes(False)

    def action_back(self) -> None:
        self.app.pop_screen()
