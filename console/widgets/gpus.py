"""GpuPanel: one compact row per GPU in the nvidia-smi grammar (index, utilisation bar, memory
bar against capacity, temperature, power, a utilisation sparkline). Rows flow into two or more
columns when the panel is wide, so eight GPUs fit an 80x24 terminal in four lines."""
from __future__ import annotations

import collections

from rich.text import Text
from textual.widgets import Static

from console import format as fmt

SPARK = "▁▂▃▄▅▆▇█"
EIGHTHS = " ▏▎▍▌▋▊▉█"
HISTORY = 60


def bar(frac: float | None, width: int) -> str:
    """[████▌     ] with eighth-block resolution; '?' fill when unknown."""
    if frac is None:
        return "[" + "?" * width + "]"
    frac = min(1.0, max(0.0, frac))
    eighths = int(round(frac * width * 8))
    full, part = divmod(eighths, 8)
    body = "█" * full + (EIGHTHS[part] if part and full < width else "")
    return "[" + body.ljust(width) + "]"


def sparkline(values: list[float], width: int) -> str:
    vals = values[-width:]
    return "".join(SPARK[min(7, max(0, int(v / 100 * 7.999)))] for v in vals).ljust(width)


def _gib(mib: float | None) -> str:
    return "?" if mib is None else f"{mib / 1024:.1f}"


def gpu_row(g: dict, width: int, history: list[float] | None = None) -> list[tuple[str, str]]:
    """One GPU as (text, style) pieces fitting ``width`` cells; fields drop from the right."""
    util = g.get("util_pct")
    used, total = g.get("mem_used_mib"), g.get("mem_total_mib")
    mem_frac = (used / total) if (used is not None and total) else None
    mem_style = "gpu--crit" if (mem_frac or 0) >= 0.95 else ("gpu--warn" if (mem_frac or 0) >= 0.85 else "gpu--ok")
    temp = g.get("temp_c")
    temp_style = "gpu--crit" if (temp or 0) >= 85 else ("gpu--warn" if (temp or 0) >= 75 else "")
    bw = 10 if width >= 60 else 6
    pieces: list[tuple[str, str]] = [
        (f"{g.get('index', '?'):>2} ", "gpu--index"),
        (bar(None if util is None else util / 100, bw), "gpu--util"),
        (f"{'?' if util is None else int(util):>3}% ", ""),
        (bar(mem_frac, bw), mem_style),
        (f"{_gib(used):>5}/{_gib(total)}G", mem_style),
        ("!" if (mem_frac or 0) >= 0.95 else " ", mem_style),
    ]
    extra: list[tuple[str, str]] = [
        (f" {'?' if temp is None else int(temp)}C", temp_style),
        (f" {'?' if g.get('power_w') is None else int(g['power_w'])}/"
         f"{'?' if g.get('power_limit_w') is None else int(g['power_limit_w'])}W", ""),
    ]
    procs = g.get("processes")
    extra.append((f" {'?' if procs is None else len(procs)}p", "gpu--dim"))
    used_w = sum(len(t) for t, _ in pieces)
    for piece in extra:
        if used_w + len(piece[0]) > width:
            break
        pieces.append(piece)
        used_w += len(piece[0])
    if history and width - used_w >= 12:
        spark_w = min(len(history), width - used_w - 1, 30)
        pieces.append((" " + sparkline(history, spark_w), "gpu--spark"))
    return pieces


class GpuPanel(Static):
    COMPONENT_CLASSES = {"gpu--index", "gpu--util", "gpu--ok", "gpu--warn", "gpu--crit", "gpu--dim",
                         "gpu--spark", "gpu--title"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._gpu: dict | None = None
        self._history: dict[int, collections.deque[float]] = {}
        self._shown: object = None
        self.plain_lines: list[str] = []

    def show_gpu(self, gpu: dict | None) -> None:
        if gpu is not self._gpu and gpu is not None:
            for g in gpu.get("gpus") or ():
                if g.get("util_pct") is not None:
                    self._history.setdefault(g["index"], collections.deque(maxlen=HISTORY)).append(g["util_pct"])
        self._gpu = gpu
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        width = self.content_size.width or 80
        gpu = self._gpu
        lines: list[list[tuple[str, str]]] = []
        if gpu is None:
            lines.append([("GPUs: no telemetry (not polled)", "gpu--dim")])
        elif not gpu.get("available"):
            lines.append([(f"GPUs: not available: {gpu.get('reason') or 'unknown reason'}", "gpu--dim")])
        else:
            gpus = gpu.get("gpus") or []
            cols = max(1, min(len(gpus) or 1, width // 62 if width >= 124 else (2 if width >= 76 else 1)))
            col_w = (width - (cols - 1) * 2) // cols
            rows = [gpu_row(g, col_w, list(self._history.get(g.get("index"), ()))) for g in gpus]
            per_col = -(-len(rows) // cols) if rows else 0
            for r in range(per_col):
                line: list[tuple[str, str]] = []
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
            if not gpus:
                lines.append([("GPUs: none visible", "gpu--dim")])
        key = (width, repr(lines))
        if key == self._shown:
            return
        self._shown = key
        self.plain_lines = [fmt.plain(line) for line in lines]
        text = Text(no_wrap=True, overflow="crop")
        for i, line in enumerate(lines):
            if i:
                text.append("\n")
            for piece, style in line:
                text.append(piece, self.get_component_rich_style(style, partial=True) if style else "")
        self.update(text)
