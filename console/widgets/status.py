"""StatusLine: run name, state word (with a colour, never only a colour), steps, ETA, attempt,
restarts used/cap, cost, and what a cooldown waits on."""
from __future__ import annotations

from textual.widgets import Static

from console import format as fmt
from console.widgets import styled_text


class StatusLine(Static):
    COMPONENT_CLASSES = {
        "status--name", "status--running", "status--cooldown", "status--paused", "status--failed",
        "status--killed", "status--succeeded", "status--other", "status--readonly",
    }

    def __init__(self, *, readonly: bool = False, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.readonly = readonly
        self._shown: object = None
        self.plain_lines: list[str] = []

    def show_run(self, run: dict, *, quiet_s: float | None = None, heartbeat_s: float | None = None) -> None:
        lines = fmt.status_lines(run, readonly=self.readonly, quiet_s=quiet_s, heartbeat_s=heartbeat_s)
        if lines == self._shown:
            return
        self._shown = lines
        self.plain_lines = [fmt.plain(line) for line in lines]
        self.update(styled_text(self, lines, overflow="ellipsis"), layout=False)  # fixed height
