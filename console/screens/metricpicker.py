"""The metric picker: every metric the log carries, filtered with ``/``, chosen with the keyboard.

On the run screen (``c``) it chooses the charts: space marks or unmarks a metric (the charts
follow the order of marking, the number in the first column), Enter applies, ``0`` goes back to
the defaults. In a comparison (``c``) it picks the one metric the runs are overlaid on: Enter on
a row. Esc leaves without a change."""
from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Input, Static

from moeconsole.console.widgets.footer import KeyFooter
from moeconsole.console import keys
from moeconsole.console.metrics import MAX_CHARTS, Metric, matches


class MetricPicker(ModalScreen[list[str] | None]):
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(keys.PICKER_METRIC_KEYS)

    def __init__(self, metrics: list[Metric], chosen: list[str], *, multi: bool = True, title: str = "") -> None:
        super().__init__()
        self.metrics = metrics
        self.chosen = list(chosen)
        self.multi = multi
        self.title_text = title or ("Charts: space marks, enter shows them" if multi else "Metric to compare")
        self.filter_text = ""
        self.shown: list[Metric] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="picker"):
            yield Static("", id="picker-title", markup=False)   # the filter typed: never markup
            yield Input(placeholder="filter: words of the metric's name", id="picker-filter")
            yield DataTable(id="picker-table", cursor_type="row", zebra_stripes=True)
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#picker-filter", Input).display = False
        table = self.query_one(DataTable)
        table.add_column("#", key="mark", width=3)
        table.add_column("metric", key="metric")
        table.add_column("points", key="points")
        table.add_column("last", key="last")
        self._fill()
        table.focus()

    def _fill(self) -> None:
        table = self.query_one(DataTable)
        keep = self.shown[table.cursor_row].key if self.shown and 0 <= table.cursor_row < len(self.shown) else None
        self.shown = [m for m in self.metrics if matches(m, self.filter_text)]
        table.clear()
        for m in self.shown:
            name, points, last = m.row()
            # a metric's name is the log's own key: plain text, never markup (`reward[/x]`)
            table.add_row(self._mark(m), Text(name if m.label == m.key else f"{name} ({m.key})"), Text(points),
                          Text(last), key=m.key)
        if keep is not None:
            for i, m in enumerate(self.shown):
                if m.key == keep:
                    table.move_cursor(row=i)
        self._title()

    def _mark(self, m: Metric) -> Text:
        if m.key in self.chosen:
            return Text(str(self.chosen.index(m.key) + 1) if self.multi else "*", style="bold")
        return Text("·" if self.multi else " ")

    def _title(self) -> None:
        parts = [self.title_text, f"{len(self.shown)} of {len(self.metrics)} metrics"]
        if self.filter_text:
            parts.append(f"filter '{self.filter_text}'")
        if self.multi:
            parts.append(f"charted: {', '.join(self.chosen) if self.chosen else 'the defaults'}")
        self.query_one("#picker-title", Static).update("  ·  ".join(parts))

    def _current(self) -> Metric | None:
        table = self.query_one(DataTable)
        if not self.shown:
            return None
        return self.shown[min(max(table.cursor_row, 0), len(self.shown) - 1)]

    # ---- keys --------------------------------------------------------------------------------
    def action_mark_metric(self) -> None:
        m = self._current()
        if m is None:
            return
        if not self.multi:
            self.chosen = [m.key]
        elif m.key in self.chosen:
            self.chosen.remove(m.key)
        elif len(self.chosen) >= MAX_CHARTS:
            self.notify(f"at most {MAX_CHARTS} charts: unmark one first", severity="warning")
            return
        else:
            self.chosen.append(m.key)
        table = self.query_one(DataTable)
        for other in self.shown:
            table.update_cell(other.key, "mark", self._mark(other))
        self._title()

    def action_apply(self) -> None:
        if not self.multi:
            m = self._current()
            self.dismiss([m.key] if m is not None else None)
            return
        self.dismiss(list(self.chosen))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_apply()

    def action_defaults(self) -> None:
        if self.multi:
            self.dismiss([])

    def action_filter(self) -> None:
        box = self.query_one("#picker-filter", Input)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self._fill()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one(DataTable).focus()

    def action_cancel(self) -> None:
        box = self.query_one("#picker-filter", Input)
        if box.has_focus:   # Esc in the filter: back to the list (the filter stays)
            if not box.value:
                box.display = False
            self.query_one(DataTable).focus()
            return
        self.dismiss(None)
