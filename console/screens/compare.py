"""Two runs side by side: loss curves overlaid (• A, × B, ◆ both), the stats table (final/min
loss, peak memory, mean tokens/s and step time) and the recipe differences. Same data as
``moeconsole runs diff A B``, from ``runner.rundir.rundiff``."""
from __future__ import annotations

from pathlib import Path

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from console import format as fmt
from console import keys
from console.widgets.chart import ChartView


def stats_table(d: dict) -> Table:
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    for name in ("", "A •", "B ×", "B - A"):
        table.add_column(name, no_wrap=True)
    for row in fmt.diff_rows(d):
        table.add_row(*row)
    return table


def recipe_table(diffs: list[dict]) -> Table | Text:
    from runner.rundir.rundiff import format_value
    if not diffs:
        return Text("recipe differences: none")
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False,
                  title=f"recipe differences ({len(diffs)})", title_justify="left")
    table.add_column("key", no_wrap=True)
    table.add_column("A", overflow="fold")
    table.add_column("B", overflow="fold")
    for x in diffs:
        table.add_row(x["key"], format_value(x["a"]), format_value(x["b"]))
    return table


class CompareScreen(Screen):
    BINDINGS = keys.bindings(keys.COMPARE_KEYS)

    def __init__(self, a: str | Path, b: str | Path, base: Path | None = None) -> None:
        super().__init__()
        self.a, self.b, self.base = str(a), str(b), base
        self.result: dict | None = None

    def compose(self) -> ComposeResult:
        yield Static("comparing…", id="compare-title")
        yield ChartView("loss", id="compare-chart")
        with VerticalScroll(id="compare-body"):
            yield Static("", id="compare-stats")
            yield Static("", id="compare-recipe")
        yield Footer()

    def on_mount(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="compare")
    def _load(self) -> None:
        from runner.rundir import rundiff
        try:
            comparison = rundiff.compare(self.a, self.b, self.base)
            d = comparison.to_dict()
        except Exception as exc:  # InputError or unreadable data: say so on the screen
            self.app.call_from_thread(self._failed, str(exc))
            return
        self.app.call_from_thread(self._show, comparison, d)

    def _failed(self, message: str) -> None:
        self.query_one("#compare-title", Static).update(f"cannot compare: {message}")

    def _show(self, comparison, d: dict) -> None:
        self.result = d
        self.query_one("#compare-title", Static).update(
            f"A • {d['a']['label']}  ({d['a']['path']})\nB × {d['b']['label']}  ({d['b']['path']})   ◆ both")
        chart = self.query_one(ChartView)
        chart.set_data([comparison.a.series["loss"], comparison.b.series["loss"]],
                       heading=f"loss  A • {fmt.num(d['a']['final_loss'])}  B × {fmt.num(d['b']['final_loss'])}",
                       key=("compare", self.a, self.b))
        self.query_one("#compare-stats", Static).update(stats_table(d))
        self.query_one("#compare-recipe", Static).update(recipe_table(d["recipe_diff"]))

    def action_help(self) -> None:
        from console.screens.dialogs import HelpScreen
        self.app.push_screen(HelpScreen("Compare"))

    def action_back(self) -> None:
        self.app.pop_screen()
