"""The log tail's rendering: metric lines (any format ``runner.ingest`` reads: ms-swift dicts,
Megatron, key=value) become aligned columns of step, loss, grad norm and lr; every other line
is shown as it is. Pure; the parse of each distinct line is cached (the tail repeats itself)."""
from __future__ import annotations

from collections import OrderedDict

from console import format as fmt
from runner.ingest.parser import LogParser

CACHE_LINES = 512


class MetricColumns:
    """Turns log lines into display lines; remembers the last ``CACHE_LINES`` lines it parsed."""

    def __init__(self) -> None:
        self._cache: OrderedDict[str, str] = OrderedDict()

    def row(self, line: str) -> str:
        shown = self._cache.get(line)
        if shown is None:
            shown = self._render(line)
            self._cache[line] = shown
            if len(self._cache) > CACHE_LINES:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(line)
        return shown

    def rows(self, lines) -> list[str]:
        return [self.row(line) for line in lines]

    @staticmethod
    def _render(line: str) -> str:
        # A fresh parser per line: the tail is a window, so no state may leak between lines.
        try:
            events = LogParser().process_line(line.encode("utf-8", "replace"))
        except Exception:  # a line the parser chokes on is still worth showing as it is
            events = []
        rec = next((r for kind, r in events if kind == "record"), None)
        if rec is None or rec.get("step") is None or rec.get("loss") is None:
            return line.expandtabs(4)
        return metric_row(rec)


def metric_row(rec: dict) -> str:
    """step 1,230/10,000  loss   1.9210  grad norm   0.6100  lr 9.90e-05 (fixed widths)."""
    step = fmt.intc(rec.get("step"))
    if rec.get("max_steps"):
        step += f"/{fmt.intc(rec['max_steps'])}"
    return (f"step {step:>13}  loss {fmt.num(rec.get('loss')):>8}  "
            f"grad norm {fmt.num(rec.get('grad_norm')):>8}  lr {fmt.num(rec.get('lr'), 3):>8}")
