"""The run screen's zombie/blocker table (a selectable list: ``z`` acts on its cursor row).

A module of its own: the table is a Textual DataTable (about 0.2 MiB of the console's memory to
import), mounted by the run screen only when the first zombie or blocker is there to list
(``panes.shown_blockers``); most runs never have one."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from moeconsole.console import format as fmt
from moeconsole.console.widgets.panes import shown_blockers

BLOCKER_COLUMNS = ("PID", "WHY", "GPU MiB", "USER", "AGE", "COMMAND")


class BlockerTable(DataTable):
    """Zombies and blockers: foreign GPU processes, orphans of the run, port holders."""

    def __init__(self, blockers: list[dict], *, id: str | None = None) -> None:
        """``blockers``: the snapshot's first list with a process to show (drawn at the mount)."""
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_cursor=True)
        self._first = blockers
        self.blockers: list[dict] = []   # the rows drawn (``z`` acts on the cursor's): from the mount on
        self._shown: object = None
        self._columns = False            # rows only after the columns (at the mount)

    def on_mount(self) -> None:
        # Text, not str: DataTable reads a str as Rich markup with emoji codes (a command's
        # "[rank0]" vanished, ":fire:" became an emoji) and loads Rich's emoji table to do it
        self.add_columns(*(Text(c) for c in BLOCKER_COLUMNS))
        self._columns = True
        self.show(self._first)

    def show(self, blockers) -> None:
        rows = shown_blockers(blockers)
        if not self._columns:   # a snapshot before the mount: the mount draws it
            self._first = blockers
            return
        # the age as shown is part of what is shown: a leftover alive 67 s never reads "17s"
        key = tuple((b.get("pid"), b.get("start_time"), b.get("gpu_mem_mib"), tuple(b.get("labels") or ()),
                     fmt.duration(b.get("age_s"))) for b in rows)
        if key == self._shown:
            return
        self._shown = key
        keep = self.cursor_row
        self.blockers = rows
        self.clear()
        for b in rows:
            cells = (str(b["pid"]), ",".join(b.get("labels") or ()) or fmt.NA,
                     fmt.intc(b.get("gpu_mem_mib")) if b.get("gpu_mem_mib") else fmt.NA,
                     str(b.get("user") or fmt.NA), fmt.duration(b.get("age_s")), fmt.blocker_cmd(b, 60))
            self.add_row(*(Text(c) for c in cells))
        if rows:
            self.move_cursor(row=min(keep, len(rows) - 1))

    def selected(self) -> dict | None:
        if not self.blockers:
            return None
        return self.blockers[min(max(self.cursor_row, 0), len(self.blockers) - 1)]
