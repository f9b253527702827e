"""StatusLine: run name, state word (with a colour, never only a colour), steps, ETA, attempt,
restarts used/cap, cost, and what a cooldown waits on."""
from __future__ import annotations

from console import format as fmt
from console.widgets.lines import LinesView


class StatusLine(LinesView):
    COMPONENT_CLASSES = set(fmt.STATUS_STYLES) | {"status--name", "status--readonly", "status--critical"}
    OVERFLOW = "ellipsis"

    def __init__(self, *, readonly: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.readonly = readonly
        self.plain_lines: list[str] = []

    def show_run(self, run: dict, *, quiet_s: float | None = None, heartbeat_s: float | None = None) -> None:
        lines = fmt.status_lines(run, readonly=self.readonly, quiet_s=quiet_s, heartbeat_s=heartbeat_s)
        if self.set_lines(lines):  # only the line that changed is drawn again (fixed height)
            self.plain_lines = [fmt.plain(line) for line in lines]
