"""The run browser: every run from the SQLite index, sortable and filterable; open one, mark two
to compare, or open a log/directory not made by moeconsole."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from moeconsole.console import format as fmt
from moeconsole.console import keys
from moeconsole.console.screens.messages import OpenPath, OpenRun
from moeconsole.runner.rundir import rundir, store

# The full id comes second so no width cuts it; NAME is the display name (with the recipe
# values that tell runs of one name apart).
COLUMNS = (("status", "STATUS"), ("id", "ID"), ("display_name", "NAME"), ("started_at", "STARTED"),
           ("ended_at", "ENDED"), ("attempts", "ATT"), ("last_step", "STEPS"), ("crashes", "CRASHES"),
           ("last_crash_class", "LAST CRASH"), ("bad_saves", "BAD SAVES"), ("open_alerts", "ALERTS"),
           ("last_loss", "LAST LOSS"), ("min_loss", "MIN LOSS"), ("recipe_hash", "RECIPE"))
SORT_KEY = {"display_name": "name"}  # the index sorts by the stored column
NAME_MAX = 48
STATUS_FILTER = "status:"


def parse_filter(text: str) -> tuple[str | None, str | None]:
    """'status:failed llama' -> (status, name substring)."""
    status, words = None, []
    for word in text.split():
        if word.lower().startswith(STATUS_FILTER):
            status = word[len(STATUS_FILTER):].lower() or None
        else:
            words.append(word)
    return status, (" ".join(words) or None)


class BrowserScreen(Screen):
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(keys.BROWSER_KEYS)
    COMPONENT_CLASSES = set(fmt.STATUS_STYLES)

    def __init__(self, base: Path, *, scratch: Callable[[], Path] | None = None) -> None:
        """``scratch``: where logs not made by moeconsole are read (for comparing them)."""
        super().__init__()
        self.base = Path(base)
        self.scratch = scratch
        self.rows: list[dict] = []
        self.marked: list[str] = []
        self.sort_index = 3  # started_at
        self.descending = True
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        yield Static("", id="browser-title")
        yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.focus()
        self.action_reload()

    # ---- data ---------------------------------------------------------------------------
    def action_reload(self) -> None:
        key = COLUMNS[self.sort_index][0]
        self._load(self.filter_text, SORT_KEY.get(key, key), self.descending)

    @work(thread=True, exclusive=True, group="browser-load")
    def _load(self, filter_text: str, order: str, descending: bool) -> None:
        status, name = parse_filter(filter_text)
        try:
            rows = store.list_runs(self.base, status=status, name_like=name, order=order, descending=descending)
        except Exception as exc:  # an unreadable index: say so, keep the screen
            self.app.call_from_thread(self.notify, f"cannot read the run index: {exc}", severity="error")
            rows = []
        self.app.call_from_thread(self._show, rows)

    def _show(self, rows: list[dict]) -> None:
        self.rows = rows
        table = self.query_one(DataTable)
        keep = table.cursor_row
        texts = [[fmt.run_cell(key, row) for key, _ in COLUMNS] for row in rows]
        # Widths from the content, set explicitly: the same table on every redraw, however
        # busy the machine (auto widths are settled later, after the first paint).
        widths = [max([len(label)] + [len(t[i]) + (1 if key == "status" else 0) for t in texts])
                  for i, (key, label) in enumerate(COLUMNS)]
        widths[2] = min(widths[2], NAME_MAX)
        table.clear(columns=True)
        for (key, label), width in zip(COLUMNS, widths):
            table.add_column(label, key=key, width=width)
        for row, cells_text in zip(rows, texts):
            cells: list = []
            for (key, _), text in zip(COLUMNS, cells_text):
                if key == "status":
                    mark = "*" if row["id"] in self.marked else " "
                    style = self.get_component_rich_style(fmt.run_status_style(row), partial=True)
                    cells.append(Text(mark) + Text(text, style=style))
                else:
                    cells.append(text)
            table.add_row(*cells, key=row["id"])
        if rows:
            table.move_cursor(row=min(max(keep, 0), len(rows) - 1))
        self._update_title()

    def _update_title(self) -> None:
        key, label = COLUMNS[self.sort_index]
        parts = [f"runs under {self.base}: {len(self.rows)}",
                 f"sorted by {label.lower()} {'desc' if self.descending else 'asc'}"]
        if self.filter_text:
            parts.append(f"filter '{self.filter_text}'")
        if self.marked:
            parts.append("marked: " + ", ".join(self.marked))
        elif self.rows:
            parts.append("enter opens, space marks runs to compare (c)")
        if not self.rows and not self.filter_text:
            parts.append("(no runs yet: start one with `moeconsole run RECIPE`, or o to open a log)")
        self.query_one("#browser-title", Static).update("  ·  ".join(parts))

    def selected(self) -> dict | None:
        table = self.query_one(DataTable)
        if not self.rows:
            return None
        return self.rows[min(max(table.cursor_row, 0), len(self.rows) - 1)]

    # ---- actions ------------------------------------------------------------------------
    def action_sort(self) -> None:
        self.sort_index = (self.sort_index + 1) % len(COLUMNS)
        self.action_reload()

    def action_reverse(self) -> None:
        self.descending = not self.descending
        self.action_reload()

    def action_filter(self) -> None:
        from moeconsole.console.screens.dialogs import PromptScreen

        def got(value: str | None) -> None:
            if value is not None:
                self.filter_text = value.strip()
                self.action_reload()
        self.app.push_screen(PromptScreen("Filter runs (name or id words; status:failed):", self.filter_text), got)

    def action_mark(self) -> None:
        row = self.selected()
        if row is None:
            return
        from moeconsole.console.screens.compare import MAX_RUNS
        if row["id"] in self.marked:
            self.marked.remove(row["id"])
        elif len(self.marked) >= MAX_RUNS:
            self.notify(f"at most {MAX_RUNS} runs side by side: unmark one first", severity="warning")
            return
        else:
            self.marked = self.marked + [row["id"]]
        self._show(self.rows)

    def action_compare(self) -> None:
        ids = list(self.marked)
        row = self.selected()
        if len(ids) < 2 and row is not None and row["id"] not in ids:
            ids.append(row["id"])
        if len(ids) < 2:
            self.notify("mark the runs to compare with space (or one, and select another)", severity="warning")
            return
        by_id = {r["id"]: r for r in self.rows}
        refs = [(by_id.get(i) or {}).get("path") or i for i in ids]
        labels = [fmt.run_cell("display_name", by_id[i]) if i in by_id else i for i in ids]
        from moeconsole.console.screens.compare import CompareScreen
        self.app.push_screen(CompareScreen(refs, base=self.base, labels=labels, scratch=self.scratch))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on the focused table arrives as a selection (the table binds enter itself)."""
        event.stop()
        self.action_open_run()

    def action_open_run(self) -> None:
        row = self.selected()
        if row is None:
            return
        path = Path(row.get("path") or self.base / row["id"])
        if not path.is_dir():
            self.notify(f"{path}: the run directory is gone (g reloads the index)", severity="error")
            return
        self.post_message(OpenRun(rundir.RunDir(path)))

    def action_open_path(self) -> None:
        from moeconsole.console.screens.dialogs import PromptScreen

        def got(value: str | None) -> None:
            if value:
                self._open_foreign(value.strip())
        self.app.push_screen(PromptScreen("Open a log or directory (swift output dir, Megatron log, "
                                          "logging.jsonl, or a run dir):", placeholder="/path/to/log"), got)

    def _open_foreign(self, text: str) -> None:
        self.post_message(OpenPath(Path(text).expanduser()))

    def action_help(self) -> None:
        from moeconsole.console.screens.dialogs import HelpScreen
        self.app.push_screen(HelpScreen("Run browser"))

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.exit(0)

    def action_quit_app(self) -> None:
        self.app.exit(0)
