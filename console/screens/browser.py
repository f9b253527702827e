"""The run browser: every run from the SQLite index, sortable and filterable; open one, mark two
to compare, or open a log/directory not made by moeconsole."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Static

from moeconsole.console.widgets.footer import KeyFooter
from moeconsole.console import format as fmt
from moeconsole.console import keys, runcolumns
from moeconsole.console.screens.messages import OpenPath, OpenRun
from moeconsole.runner.core import bounds
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.core.when import phrase_words, since_cutoff
from moeconsole.runner.rundir import rundir, store

# The columns shown are chosen for the width by ``moeconsole.console.runcolumns`` (the rule
# `runs ls` uses): status, name, step, loss, alerts, age first, then what fits whole. Sorting
# cycles through every column of the index, shown or not (the title says which).
COLUMNS = tuple((key, label) for key, label, _, _ in runcolumns.RUN_COLUMNS if key != "age")
SORT_KEY = {"display_name": "name"}  # the index sorts by the stored column
STATUS_FILTER = "status:"
SINCE_FILTER = "since:"   # the date words of `runs ls --since` (``core.when``)
SCROLLBAR = 2
CHROME_LINES = 5   # the title (two lines at 80 columns), the table's header, the footer


def parse_filter(text: str) -> tuple[str | None, str | None, str | None]:
    """'status:failed since:2d llama' -> (status, name substring, since word). ``since:`` takes
    the words that continue its time phrase (``core.when.phrase_words``): 'since:2026-11-20 14:30'
    and 'since:2 days llama' read as the date and time, and as "2 days" and a name (review R44)."""
    status, since, words = None, None, []
    split = text.split()
    i = 0
    while i < len(split):
        word = split[i]
        i += 1
        if word.lower().startswith(STATUS_FILTER):
            status = word[len(STATUS_FILTER):].lower() or None
        elif word.lower().startswith(SINCE_FILTER):
            first = word[len(SINCE_FILTER):]
            if not first:
                since = None
                continue
            n = phrase_words([first, *split[i:]])
            since = " ".join([first, *split[i:i + n - 1]])
            i += n - 1
        else:
            words.append(word)
    return status, (" ".join(words) or None), since


def since_of(text: str) -> float | None:
    """The filter's ``since:`` as a moment (``core.when.since_cutoff``; InputError when unreadable)."""
    word = parse_filter(text)[2]
    return None if word is None else since_cutoff(word, time.time(), what=SINCE_FILTER.rstrip(":"))


_BROWSER_KEY_BY_ACTION = {k.action: k for k in keys.BROWSER_KEYS}


class BrowserScreen(Screen):
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(keys.BROWSER_KEYS)
    COMPONENT_CLASSES = set(fmt.STATUS_STYLES)

    def __init__(self, base: Path, *, scratch: Callable[[], Path] | None = None,
                 clock: Callable[[], float] | None = None) -> None:
        """``scratch``: where logs not made by moeconsole are read (for comparing them);
        ``clock``: the wall clock of the age column (tests pin it)."""
        super().__init__()
        self.base = Path(base)
        self.clock = clock or time.time
        self.scratch = scratch
        self.rows: list[dict] = []
        self.marked: list[str] = []
        self.sort_index = [k for k, _ in COLUMNS].index("started_at")
        self.descending = True
        self.filter_text = ""
        self._conditions: frozenset[str] = frozenset()   # ``keys.browser_conditions``
        self._drawn: tuple | None = None   # ((columns, run ids, marks), cells) as last drawn
        self._every: list[str] = []   # the id of every run under the directory (``runcolumns.short_ids``)
        # the last whole read: ((filter, order, descending), listing_seen, index_seen) and its rows
        self._read: tuple[tuple, list[dict]] | None = None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys as data (``moeconsole.console.keys``): open, mark, compare and sort only while
        runs are listed, filter while there are runs to filter (or a filter to change)."""
        key = _BROWSER_KEY_BY_ACTION.get(action)
        return key is None or keys.applies(key, self._conditions)

    def compose(self) -> ComposeResult:
        yield Static("", id="browser-title", markup=False)   # a path, the filter typed: never markup
        yield DataTable(id="runs", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.focus()
        if self._behind():   # escape goes back from the start, before the first list is read
            self._conditions = keys.browser_conditions(rows=False, filtered=False, behind=True)
            self.refresh_bindings()
        self.action_reload()
        # the list follows the runs as they go (a run started, one that ended, a step): it had stayed
        # as first read until a key reloaded it, a RUNNING row beside a run long SUCCEEDED
        self.set_interval(getattr(self.app, "interval", bounds.REFRESH_S), self._follow)

    def _follow(self) -> None:
        """Follow the runs while this screen is the one shown (a run screen or a prompt over it:
        nothing to redraw): the index is read again only when it or the run directories changed
        (``store.listing_seen``, ``store.index_seen``), else only the live runs' rows."""
        if self.is_current:
            key = COLUMNS[self.sort_index][0]
            self._load(self.filter_text, SORT_KEY.get(key, key), self.descending, force=False)

    def _behind(self) -> bool:
        """A screen of the console is under this one (a run it was opened from): escape goes back."""
        stack = self.app.screen_stack
        return self in stack and stack.index(self) > 1

    # ---- data ---------------------------------------------------------------------------
    def action_reload(self) -> None:
        """Read the index now (F5, a sort, a filter)."""
        key = COLUMNS[self.sort_index][0]
        self._load(self.filter_text, SORT_KEY.get(key, key), self.descending, force=True)

    @work(thread=True, exclusive=True, group="browser-load")
    def _load(self, filter_text: str, order: str, descending: bool, *, force: bool) -> None:
        asked = (filter_text, order, descending)
        seen = store.listing_seen(self.base)   # before the read: a change during it is read next time
        if not force and self._read is not None and self._read[0] == (asked, seen, store.index_seen(self.base)):
            # nothing changed but the live runs (a step, a loss, a runner gone): their rows alone
            # are read again (the whole index had been, at every refresh: 35 ms at 500 runs on an
            # idle machine, 140 ms on a busy one; bench/bench_browser.py)
            again = store.refresh_listed(self._read[1], order)
            if again is not None:
                self.app.call_from_thread(self._show, again, again=False)
                return
        status, name, _ = parse_filter(filter_text)
        try:
            since = since_of(filter_text)
        except InputError:   # refused when typed (``action_filter``): never kept
            since = None
        self._read = None   # read again next time unless this read is whole
        try:
            # the look at the index its rows go with (``store.listing``): one taken after the read
            # had taken in a runner's commit the rows missed, and a run just started or restarted
            # stayed out of the list until F5 (review R37)
            rows, index = store.listing(self.base, status=status, name_like=name, order=order,
                                        descending=descending, since=since)
        except Exception as exc:  # an unreadable index: say so, keep the screen
            self.app.call_from_thread(self.notify, f"cannot read the run index: {exc}", severity="error")
            rows = []
        else:
            self._read = ((asked, seen, index), rows)
        # the short ids are told apart among every run `attach` finds under the directory, not
        # the filtered rows (``runcolumns.short_ids``)
        self._every = [r.run_id for r in rundir.list_run_dirs(self.base)]
        self.app.call_from_thread(self._show, rows, again=False)

    def _show(self, rows: list[dict], *, again: bool = True) -> None:
        """Lay the table out for ``rows``; ``again`` False (a reload): only when they changed."""
        table = self.query_one(DataTable)
        before = self.rows[table.cursor_row]["id"] if self.rows and 0 <= table.cursor_row < len(self.rows) else None
        self.rows = rows
        conditions = keys.browser_conditions(rows=bool(rows), filtered=bool(self.filter_text),
                                             behind=self._behind())
        if conditions != self._conditions:
            self._conditions = conditions
            self.refresh_bindings()   # the footer offers only the keys that act on something
        ids = [row["id"] for row in rows]
        keep = ids.index(before) if before in ids else table.cursor_row   # the run it was on, where it moved
        # Widths from the content, set explicitly: the same table on every redraw, however
        # busy the machine (auto widths are settled later, after the first paint). The status
        # cell has the mark (*) before it.
        cols, cells = runcolumns.run_table(rows, self.table_width(), self.clock(), extra={"status": 1},
                                           every=self._every)
        shape = (cols, tuple(ids), tuple(self.marked))
        if not again and self._drawn is not None and shape == self._drawn[0]:
            # the same columns, runs and marks (a reload: a step, a loss, the AGE of a live run that
            # ticks every second): only the cells that changed are written, in place. The whole
            # table had been cleared and every row added again at each period while a run was live
            # (500 runs: a key took a second, a mouse-wheel scroll snapped back to the cursor).
            old = self._drawn[1]
            for key, _, width in cols:
                for i, row in enumerate(rows):
                    if cells[key][i] != old[key][i]:
                        table.update_cell(row["id"], key, self._cell(key, row, cells[key][i], width))
            self._drawn = (shape, cells)
            self._update_title()
            return   # the table as it is, its cursor, its scroll
        self._drawn = (shape, cells)
        scroll = (table.scroll_x, table.scroll_y)
        table.clear(columns=True)
        for key, label, width in cols:
            table.add_column(label, key=key, width=width)
        for i, row in enumerate(rows):
            table.add_row(*(self._cell(key, row, cells[key][i], width) for key, _, width in cols), key=row["id"])
        if rows:
            # a reload keeps what the user scrolled to (the cursor is kept on its run); a key's
            # redraw (a sort, a filter) brings the cursor into view
            table.move_cursor(row=min(max(keep, 0), len(rows) - 1), scroll=again)
            if not again:
                table.scroll_to(*scroll, animate=False, immediate=True)
        self._update_title()

    def _cell(self, key: str, row: dict, text: str, width: int) -> Text:
        """One cell as the table draws it: the status with its mark (*) and colour, a name cut to
        its column, any other as it is; as Text, never markup (a name's ``[a3f2]`` is no style tag)."""
        if key == "status":
            mark = "*" if row["id"] in self.marked else " "
            style = self.get_component_rich_style(fmt.run_status_style(row), partial=True)
            return Text(mark) + Text(text, style=style)
        return Text(runcolumns.cut_name(text, width) if key == "display_name" else text)

    def table_width(self) -> int:
        """The columns the table may fill: the screen's width less the table's edges and a
        vertical scrollbar when the rows need one (a DataTable pads each cell by one on either side: ``runcolumns.GAP``
        between cells, one at each edge)."""
        width, height = self.size if self.size.width else self.app.size
        scrollbar = SCROLLBAR if len(self.rows) > height - CHROME_LINES else 0  # only when the rows overflow
        return max(20, width - 2 - scrollbar)

    def on_resize(self) -> None:
        if self.rows:
            self._show(self.rows)

    def _update_title(self) -> None:
        key, label = COLUMNS[self.sort_index]
        parts = [f"runs under {self.base}: {len(self.rows)}",
                 f"sorted by {label.lower()} {'desc' if self.descending else 'asc'}"]
        if self.filter_text:
            parts.append(f"filter '{self.filter_text}'")
        if self.marked:
            parts.append("marked: " + ", ".join(self.marked))
        elif self.rows:
            parts.append(f"enter opens, space marks runs to compare ({keys.key_for(keys.BROWSER_KEYS, 'compare')})")
        if not self.rows and not self.filter_text:
            parts.append(f"(no runs yet: {rundir.NO_RUNS_NEXT}; or o to open a log)")
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
                try:
                    since_of(value)
                except InputError as exc:   # one line; the filter stays as it was
                    self.notify(str(exc), severity="error")
                    return
                self.filter_text = value.strip()
                self.action_reload()
        self.app.push_screen(PromptScreen("Filter runs (name or id words; status:failed; since:2d):",
                                          self.filter_text), got)

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
            reload = keys.key_for(keys.BROWSER_KEYS, "reload")
            self.notify(f"{path}: the run directory is gone ({reload} reloads the index)", severity="error")
            return
        closed = store.unreadable_problem(rundir.RunDir(path))
        if closed:   # another user's run: not an empty run screen that looks like a run with no data
            self.notify(f"{row['id']}: {closed}", severity="error")
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

    def action_quit_first(self) -> None:   # escape on the first screen: nothing to go back to
        self.app.exit(0)
