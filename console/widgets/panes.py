"""Text panes of the run screen: events/alerts/checkpoints/crashes, the log tail, and the
zombie/blocker table (a selectable list: ``z`` acts on its cursor row)."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable, Static

from console import format as fmt


def _text(lines: list[tuple[str, str]], widget: Static) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    for i, (line, style) in enumerate(lines):
        if i:
            text.append("\n")
        text.append(line, widget.get_component_rich_style(style, partial=True) if style else "")
    return text


def event_pane_lines(checkpoints, crashes, events, limit: int) -> list[tuple[str, str]]:
    """Newest first: latest checkpoint verdicts and crashes, then alerts and events; after
    them every crash and every checkpoint of the run (the pane scrolls)."""
    checkpoints, crashes = list(checkpoints), list(crashes)
    lines: list[tuple[str, str]] = []
    for ck in checkpoints[:2]:
        lines.append(fmt.checkpoint_line(ck))
    for c in crashes[-2:][::-1]:
        lines.append(("crash " + fmt.crash_line(c), "event--crit"))
    shown = 0
    for ev in reversed(list(events)):
        if ev.get("type") == "checkpoint":
            continue
        lines.append(fmt.event_line(ev))
        shown += 1
        if shown >= limit:
            break
    if not lines:
        lines.append(("no events yet", "event--dim"))
    if len(crashes) > 2:
        lines.append((f"── all crashes ({len(crashes)}) ──", "event--dim"))
        lines += [("crash " + fmt.crash_line(c), "event--crit") for c in crashes[::-1]]
    if len(checkpoints) > 2:
        lines.append((f"── all checkpoints ({len(checkpoints)}) ──", "event--dim"))
        lines += [fmt.checkpoint_line(ck) for ck in checkpoints]
    return lines


class EventPane(Static):
    COMPONENT_CLASSES = {"event--crit", "event--warn", "event--ok", "event--dim"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._shown: object = None
        self.plain_lines: list[str] = []

    def show(self, checkpoints, crashes, events) -> None:
        lines = event_pane_lines(checkpoints, crashes, events, limit=40)
        if lines == self._shown:
            return
        self._shown = lines
        self.plain_lines = [t for t, _ in lines]
        self.update(_text(lines, self))


class LogTail(Static):
    """The last lines of train.log that fit, oldest at the top (a following tail)."""

    COMPONENT_CLASSES = {"event--dim"}

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self._lines: tuple[str, ...] = ()
        self._shown: object = None
        self.plain_lines: list[str] = []

    def show(self, lines: tuple[str, ...]) -> None:
        self._lines = lines
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        h = max(1, self.content_size.height or 10)
        lines = list(self._lines[-h:]) or ["(train.log is empty)"]
        key = (h, tuple(lines))
        if key == self._shown:
            return
        self._shown = key
        self.plain_lines = lines
        self.update(_text([(line.expandtabs(4), "") for line in lines], self))


# Processes of the run itself are listed by the telemetry layer too; they are not zombies.
SHOWN_NOT_BLOCKING = frozenset({"run_tree"})
BLOCKER_COLUMNS = ("PID", "WHY", "GPU MiB", "USER", "AGE", "COMMAND")


class BlockerTable(DataTable):
    """Zombies and blockers: foreign GPU processes, orphans of the run, port holders."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_cursor=True)
        self.blockers: list[dict] = []
        self._shown: object = None

    def on_mount(self) -> None:
        self.add_columns(*BLOCKER_COLUMNS)

    def show(self, blockers) -> None:
        rows = [b for b in blockers if isinstance(b, dict) and b.get("pid") is not None
                and set(b.get("labels") or ()) - SHOWN_NOT_BLOCKING]
        key = tuple((b.get("pid"), b.get("start_time"), b.get("gpu_mem_mib"), tuple(b.get("labels") or ()))
                    for b in rows)
        if key == self._shown:
            return
        self._shown = key
        keep = self.cursor_row
        self.blockers = rows
        self.clear()
        for b in rows:
            self.add_row(str(b["pid"]), ",".join(b.get("labels") or ()) or fmt.NA,
                         fmt.intc(b.get("gpu_mem_mib")) if b.get("gpu_mem_mib") else fmt.NA,
                         str(b.get("user") or "?"), fmt.duration(b.get("age_s")), fmt.blocker_cmd(b, 60))
        if rows:
            self.move_cursor(row=min(keep, len(rows) - 1))

    def selected(self) -> dict | None:
        if not self.blockers:
            return None
        return self.blockers[min(max(self.cursor_row, 0), len(self.blockers) - 1)]
