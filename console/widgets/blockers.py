"""The run screen's zombie/blocker table (a selectable list: ``z`` acts on its cursor row).

A module of its own: the table is a Textual DataTable (about 0.2 MiB of the console's memory to
import), mounted by the run screen only when the first zombie or blocker is there to list
(``panes.shown_blockers``); most runs never have one."""
from __future__ import annotations

from rich.text import Text
from textual.widgets import DataTable

from moeconsole.console import format as fmt
from moeconsole.console import runcolumns
from moeconsole.console.widgets.panes import shown_blockers

BLOCKER_COLUMNS = ("PID", "WHY", "GPU MiB", "USER", "AGE", "COMMAND")
# The columns kept whole where the pane is narrow (80 columns: a 38-cell pane), by the run lists'
# rule (``runcolumns.fit_columns``) with the table's own priority: the PID and why first, then the
# command (the one column cut, at least ``runcolumns.NAME_MIN``), the GPU memory, the age, the
# user; a column is shown whole or not at all.
BLOCKER_PRIORITY = ("PID", "WHY", "name", "GPU MiB", "AGE", "USER")
COMMAND_MAX = 60


def blocker_cells(b: dict) -> tuple[str, ...]:
    """One listed process's cells, in ``BLOCKER_COLUMNS`` order (the command up to ``COMMAND_MAX``)."""
    return (str(b["pid"]), ",".join(b.get("labels") or ()) or fmt.NA,
            fmt.intc(b.get("gpu_mem_mib")) if b.get("gpu_mem_mib") else fmt.NA,
            str(b.get("user") or fmt.NA), fmt.duration(b.get("age_s")), fmt.blocker_cmd(b, COMMAND_MAX))


def fitted_columns(rows: list[tuple[str, ...]], width: int | None) -> list[tuple[int, int]]:
    """(index in ``BLOCKER_COLUMNS``, width) of the columns shown at ``width`` cells, in the table's order."""
    needs = [max([len(head)] + [len(r[i]) for r in rows]) for i, head in enumerate(BLOCKER_COLUMNS)]
    columns = [runcolumns.Column(head, needs[i], "name" if head == "COMMAND" else head)
               for i, head in enumerate(BLOCKER_COLUMNS)]
    keys, name_w = runcolumns.fit_columns(columns, width, priority=BLOCKER_PRIORITY)
    return [(i, name_w if head == "COMMAND" and width is not None else needs[i])
            for i, head in enumerate(BLOCKER_COLUMNS) if head in keys]


class BlockerTable(DataTable):
    """Zombies and blockers: foreign GPU processes, orphans of the run, port holders."""

    def __init__(self, blockers: list[dict], *, id: str | None = None) -> None:
        """``blockers``: the snapshot's first list with a process to show (drawn at the mount)."""
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_cursor=True)
        self._given = blockers           # the list last given (``show``): drawn at the mount and at a resize
        self.blockers: list[dict] = []   # the rows drawn (``z`` acts on the cursor's): from the mount on
        self._shown: object = None
        self._columns = False            # rows only after the columns (at the mount)

    def on_mount(self) -> None:
        self._columns = True
        self.show(self._given)

    def on_resize(self) -> None:
        if self._columns:
            self._shown = None   # the columns that fit the new width
            self.show(self._given)

    def show(self, blockers) -> None:
        self._given = blockers
        if not self._columns:   # a snapshot before the mount: the mount draws it
            return
        rows = shown_blockers(blockers)
        # the age as shown is part of what is shown: a leftover alive 67 s never reads "17s"
        width = self.size.width or None
        key = (width, tuple((b.get("pid"), b.get("start_time"), b.get("gpu_mem_mib"), tuple(b.get("labels") or ()),
                             fmt.duration(b.get("age_s"))) for b in rows))
        if key == self._shown:
            return
        self._shown = key
        keep = self.cursor_row
        self.blockers = rows
        cells = [blocker_cells(b) for b in rows]
        # the pane's width less the cell padding at its edges and a vertical scrollbar when the rows
        # overflow (max-height)
        room = None if width is None else width - 2 - (1 if len(rows) + 1 > max(self.size.height, 1) else 0)
        fitted = fitted_columns(cells, room)
        self.clear(columns=True)
        for i, w in fitted:
            # Text, not str: DataTable reads a str as Rich markup with emoji codes (a command's
            # "[rank0]" vanished, ":fire:" became an emoji) and loads Rich's emoji table to do it
            self.add_column(Text(BLOCKER_COLUMNS[i]), key=BLOCKER_COLUMNS[i], width=w)
        for row in cells:   # the command whole in its cell (the column's width cuts what is drawn)
            self.add_row(*(Text(row[i]) for i, _w in fitted))
        if rows:
            self.move_cursor(row=min(keep, len(rows) - 1))

    def selected(self) -> dict | None:
        if not self.blockers:
            return None
        return self.blockers[min(max(self.cursor_row, 0), len(self.blockers) - 1)]
