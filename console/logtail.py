"""The log tail's rendering: metric lines (any format ``moeconsole.runner.ingest`` reads: ms-swift dicts,
Megatron, key=value) become aligned columns of step, loss, grad norm and lr under one header
line; every other line is shown as it is. Pure; the parse of each distinct line is cached (the
tail repeats itself every poll)."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from moeconsole.console import format as fmt
from moeconsole.runner.ingest.parser import LogParser

CACHE_LINES = 512
HEADER = ("step", "loss", "grad norm", "lr")


def parse_metric(line: str, line_format: Any = None) -> tuple[str, str, str, str] | None:
    """The four cells of a metric line, or None for any other line (``line_format``: the log's
    declared line format, ``moeconsole.runner.ingest.userformat``, as the runner reads it)."""
    # A fresh parser per line: the tail is a window, so no state may leak between lines.
    try:
        events = LogParser(line_format=line_format).process_line(line.encode("utf-8", "replace"))
    except Exception:  # a line the parser chokes on is still worth showing as it is
        return None
    rec = next((r for kind, r in events if kind == "record"), None)
    if rec is None or rec.get("step") is None or rec.get("loss") is None:
        return None
    step = fmt.intc(rec["step"]) + (f"/{fmt.intc(rec['max_steps'])}" if rec.get("max_steps") else "")
    return step, fmt.num(rec.get("loss")), fmt.num(rec.get("grad_norm")), fmt.num(rec.get("lr"), 3)


def align(rows: list[str | tuple[str, ...]]) -> list[str]:
    """Metric rows (cell tuples) as right-aligned columns under a header; strings as they are."""
    cells = [r for r in rows if isinstance(r, tuple)]
    if not cells:
        return [str(r) for r in rows]
    widths = [max(len(HEADER[i]), *(len(c[i]) for c in cells)) for i in range(len(HEADER))]

    def line(c: tuple[str, ...]) -> str:
        return "  ".join(v.rjust(w) for v, w in zip(c, widths)).rstrip()
    return [line(HEADER)] + [line(r) if isinstance(r, tuple) else r for r in rows]


class MetricColumns:
    """Log lines -> display lines; remembers the parse of the last ``CACHE_LINES`` lines."""

    def __init__(self, line_format: Any = None) -> None:
        self.line_format = line_format
        self._cache: OrderedDict[str, tuple[str, ...] | str] = OrderedDict()

    def cell(self, line: str) -> tuple[str, ...] | str:
        shown = self._cache.get(line)
        if shown is None:
            shown = parse_metric(line, self.line_format) or line.expandtabs(4)
            self._cache[line] = shown
            if len(self._cache) > CACHE_LINES:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(line)
        return shown

    def rows(self, lines, height: int | None = None) -> list[str]:
        """The newest lines that fit in ``height`` (one goes to the header if any metric shows)."""
        lines = list(lines)
        if height is not None:
            lines = lines[-height:]
        cells = [self.cell(line) for line in lines]
        if height is not None and len(cells) >= height and any(isinstance(c, tuple) for c in cells):
            cells = cells[1:]
        return align(cells)
