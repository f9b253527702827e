"""The full-log view: the whole train.log (any size) with follow and search.

Lines are read on demand through ``LogFile`` (a byte-offset index), so a multi-gigabyte log
opens at once; indexing and search run in thread workers. Follow mode keeps the end in view.
"""
from __future__ import annotations

from pathlib import Path

from rich.segment import Segment
from rich.style import Style
from textual import work
from textual.app import ComposeResult
from textual.geometry import Size
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Footer, Static

from console import keys
from console.logfile import LogFile
from runner.rundir.secrets import Redactor


class LogView(ScrollView, can_focus=True):
    COMPONENT_CLASSES = {"logview--match", "logview--current"}

    def __init__(self, log: LogFile, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.log_file = log
        self.needle = ""
        self.current: int | None = None
        self._cache: dict[int, str] = {}

    def set_line_count(self, n: int) -> None:
        self._cache.clear()
        self.virtual_size = Size(self.size.width, n)
        self.refresh()

    def _line(self, index: int) -> str:
        if index not in self._cache:
            height = max(1, self.size.height)
            start = max(0, index - height)
            lines = self.log_file.lines(start, height * 3)
            if len(self._cache) > 4096:
                self._cache.clear()
            for i, text in enumerate(lines):
                self._cache[start + i] = text
        return self._cache.get(index, "")

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.size.width
        base = self.rich_style
        if index >= self.virtual_size.height:
            return Strip.blank(width, base)
        text = self._line(index)
        number = f"{index + 1:>7} "
        segs = [Segment(number, base + Style(dim=True))]
        style = base
        if self.current == index:
            style = base + self.get_component_rich_style("logview--current", partial=True)
        if self.needle and self.needle.lower() in text.lower():
            segs += _highlight(text, self.needle, style, base + self.get_component_rich_style("logview--match",
                                                                                               partial=True))
        else:
            segs.append(Segment(text, style))
        return Strip(segs).crop(0, width).extend_cell_length(width, base)

    def visible_text(self) -> list[str]:
        """The lines on screen as plain text (tests)."""
        top = self.scroll_offset.y
        return [self._line(i) for i in range(top, min(top + self.size.height, self.virtual_size.height))]


def _highlight(text: str, needle: str, style: Style, match: Style) -> list[Segment]:
    out, low, nl, pos = [], text.lower(), needle.lower(), 0
    while True:
        i = low.find(nl, pos)
        if i < 0:
            out.append(Segment(text[pos:], style))
            return out
        out += [Segment(text[pos:i], style), Segment(text[i:i + len(nl)], match)]
        pos = i + len(nl)


class LogScreen(Screen):
    BINDINGS = keys.bindings(keys.LOG_KEYS)

    def __init__(self, path: Path, *, title: str = "", interval: float = 1.0) -> None:
        super().__init__()
        self.path = Path(path)
        self.title_text = title or str(path)
        self.interval = interval
        self.log_file = LogFile(self.path, redact=Redactor.for_run_dir(self.path.parent).redact)
        self.follow = True
        self.needle = ""

    def compose(self) -> ComposeResult:
        yield Static("", id="log-title")
        yield LogView(self.log_file, id="logview")
        yield Footer()

    def on_mount(self) -> None:
        self._update_title()
        self.query_one(LogView).focus()
        self._index()
        self.set_interval(self.interval, self._tick)

    def _tick(self) -> None:
        self._index()
        self._keep_following()

    def _keep_following(self) -> None:
        """While following, stay on the last line: a scroll made before the first layout (or a
        resize) would otherwise leave the view short of the end until the file grows again."""
        view = self.query_one(LogView)
        if self.follow and view.scroll_offset.y < view.max_scroll_y:
            view.scroll_end(animate=False, immediate=True)

    def on_resize(self) -> None:
        self.call_after_refresh(self._keep_following)

    def _update_title(self) -> None:
        n = len(self.log_file)
        search = f"  search '{self.needle}'" if self.needle else ""
        follow = "following" if self.follow else "paused (f to follow)"
        self.query_one("#log-title", Static).update(f"{self.title_text}  {n:,} lines  {follow}{search}")

    @work(thread=True, exclusive=True, group="log-index")
    def _index(self) -> None:
        if self.log_file.refresh():
            self.app.call_from_thread(self._indexed)

    def _indexed(self) -> None:
        view = self.query_one(LogView)
        view.set_line_count(len(self.log_file))
        if self.follow:
            self.call_after_refresh(self._keep_following)
        self._update_title()

    def action_follow(self) -> None:
        self.follow = not self.follow
        if self.follow:
            self.query_one(LogView).scroll_end(animate=False)
        self._update_title()

    def action_top(self) -> None:
        self.follow = False
        self.query_one(LogView).scroll_home(animate=False)
        self._update_title()

    def action_bottom(self) -> None:
        self.query_one(LogView).scroll_end(animate=False)

    def action_search(self) -> None:
        from console.screens.dialogs import PromptScreen

        def got(value: str | None) -> None:
            if value:
                self.needle = value
                self.query_one(LogView).needle = value
                view = self.query_one(LogView)
                self._find(value, view.scroll_offset.y, False)
        self.app.push_screen(PromptScreen("Search the log (plain text, case-insensitive):", self.needle), got)

    def action_next_match(self) -> None:
        view = self.query_one(LogView)
        if self.needle:
            start = (view.current + 1) if view.current is not None else view.scroll_offset.y
            self._find(self.needle, start, False)

    def action_prev_match(self) -> None:
        view = self.query_one(LogView)
        if self.needle:
            start = view.current if view.current is not None else view.scroll_offset.y
            self._find(self.needle, start, True)

    @work(thread=True, exclusive=True, group="log-search")
    def _find(self, needle: str, start: int, backwards: bool) -> None:
        line = self.log_file.search(needle, start, backwards=backwards)
        self.app.call_from_thread(self._found, needle, line)

    def _found(self, needle: str, line: int | None) -> None:
        view = self.query_one(LogView)
        if line is None:
            self.notify(f"'{needle}' not found", severity="warning")
            return
        self.follow = False
        view.current = line
        view.scroll_to(y=max(0, line - view.size.height // 2), animate=False, immediate=True)
        view.refresh()
        self._update_title()

    def action_help(self) -> None:
        from console.screens.dialogs import HelpScreen
        self.app.push_screen(HelpScreen("Log view"))

    def action_back(self) -> None:
        self.app.pop_screen()
