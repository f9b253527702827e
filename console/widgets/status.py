"""StatusLine: run name, state word (with a colour, never only a colour), steps, ETA, attempt,
auto-restarts used/cap, cost, and what a cooldown waits on."""
from __future__ import annotations

from moeconsole.console import format as fmt
from moeconsole.console.widgets.lines import LinesView


class StatusLine(LinesView):
    COMPONENT_CLASSES = set(fmt.STATUS_STYLES) | {"status--name", "status--readonly", "status--critical", "status--crash",
                                                  "status--waiting"}
    OVERFLOW = "ellipsis"

    def __init__(self, *, readonly: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.readonly = readonly
        self.plain_lines: list[str] = []

    def show_run(self, run: dict, **shown) -> None:
        """``shown``: what ``format.status_lines`` takes besides the run (quiet time, an active
        critical alert, whether to name the last good checkpoint, the clock)."""
        lines = fmt.status_lines(run, readonly=self.readonly, width=self.size.width or None, **shown)
        if self.set_lines(lines):  # only the line that changed is drawn again (fixed height)
            self.plain_lines = [fmt.plain(line) for line in lines]
