"""The full-log view: the whole train.log (any size) with follow and search.

Lines are read on demand through ``LogFile`` (a byte-offset index), so a multi-gigabyte log
opens at once; indexing and search run in thread workers. Follow mode keeps the end in view.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, ClassVar

from rich.cells import cell_len, chop_cells
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.geometry import Size
from textual.message import Message
from textual.screen import Screen
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Static

from moeconsole.console.widgets.footer import KeyFooter
from moeconsole.console import keys
from moeconsole.console.logfile import LogFile
from moeconsole.runner.rundir.secrets import Redactor


GUTTER = 8  # "   1234 ": the line number, kept in place when the text scrolls sideways


class LogView(ScrollView, can_focus=True):
    """The log as numbered lines. Long lines either scroll sideways (the default: the line
    numbers stay, left/right pan, the view is as wide as the widest line read so far) or wrap
    (``w``): a line takes as many rows as it needs, continuation rows marked with ``↪``."""

    COMPONENT_CLASSES = {"logview--match", "logview--current"}
    # left/right and Home/End from the log view's key table (a ScrollView binds them to 1-cell
    # steps and to a scroll that keeps following the end: textual/containers.py ScrollableContainer)
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(tuple(k for k in keys.LOG_KEYS
                                                                if k.action in ("pan_left", "pan_right", "top", "bottom")))

    def __init__(self, log: LogFile, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.log_file: Any = log   # a LogFile, or a ranks view (moeconsole.console.ranklog) with labels
        self.label_w = 0           # the rank column's width (0: no rank column)
        self._labels: dict[int, str] = {}
        self.needle = ""
        self.current: int | None = None
        self.wrap = False
        self.following = True  # the screen's follow mode: wrapped rows are laid out from the end
        self._cache: dict[int, str] = {}
        self._widest = 0
        self._rows_key: tuple | None = None
        self._rows: list[tuple[int, str, bool]] = []  # wrap mode: (line, text of the row, first row of the line)

    def set_source(self, log: Any) -> None:
        """Show another log (the plain train.log, or the ranks merged): line numbers are its own."""
        self.log_file = log
        self.label_w = 7 if hasattr(log, "labels") else 0
        self.current = None
        self._widest = 0
        self.set_line_count(len(log))

    @property
    def number_w(self) -> int:
        return GUTTER + self.label_w

    def set_line_count(self, n: int) -> None:
        self._cache.clear()
        self._labels.clear()
        self._rows_key = None
        self._size_to(n)
        self.refresh()

    @property
    def text_width(self) -> int:
        """Columns for text: the view without the scrollbar and the line numbers."""
        return max(8, self.scrollable_content_region.width - self.number_w)

    def _size_to(self, n: int) -> None:
        # wrapped, nothing is wider than the view: no sideways range (and no horizontal scrollbar)
        self.virtual_size = Size(1 if self.wrap else self.number_w + self._widest, n)

    def set_wrap(self, wrap: bool) -> None:
        self.wrap = wrap
        self._rows_key = None
        self._size_to(self.virtual_size.height)
        if wrap:
            self.scroll_to(x=0, animate=False, immediate=True)
        self.refresh()

    class Panned(Message):
        """The view scrolled sideways (the screen's title says which columns show)."""

    def pan(self, direction: int) -> None:
        """Sideways by a third of the text width (no-wrap mode)."""
        if self.wrap:
            self.notify("lines are wrapped: w to scroll sideways instead")
            return
        step = max(8, self.text_width // 3)
        self.scroll_to(x=max(0, min(self.max_scroll_x, self.scroll_offset.x + direction * step)), animate=False,
                       immediate=True)
        self.post_message(self.Panned())

    def reveal(self, index: int) -> None:
        """Line ``index``'s first match of the needle in view sideways (no-wrap mode): a match past
        the right edge pans there, a third of the text width left of it, as ``pan`` steps (newcomer
        round 15: at 80 columns `/elapsed_time` put the found line in the middle, its match cut off
        behind the `…`); a match that shows from column 1 scrolls back there."""
        if self.wrap or not self.needle:
            return
        text = self._line(index)
        at = text.lower().find(self.needle.lower())
        if at < 0:
            return
        start, end = cell_len(text[:at]), cell_len(text[:at + len(self.needle)])
        width = self.text_width
        x = self.scroll_offset.x
        if start >= x and end <= x + width - 1:      # the last column is the cut's `…`
            return
        x = 0 if end <= width - 1 else max(0, start - width // 3)
        self._widest = max(self._widest, cell_len(text))
        self._size_to(self.virtual_size.height)
        self.scroll_to(x=x, animate=False, immediate=True)
        self.post_message(self.Panned())

    def action_pan_left(self) -> None:
        self.pan(-1)

    def action_pan_right(self) -> None:
        self.pan(1)

    def action_top(self) -> None:   # the screen's: it stops following too
        getattr(self.screen, "action_top", lambda: self.scroll_home(animate=False))()

    def action_bottom(self) -> None:
        getattr(self.screen, "action_bottom", lambda: self.scroll_end(animate=False))()

    def _line(self, index: int) -> str:
        if index not in self._cache:
            height = max(1, self.size.height)
            start = max(0, index - height)
            lines = self.log_file.lines(start, height * 3)
            if len(self._cache) > 4096:
                self._cache.clear()
                self._labels.clear()
            for i, text in enumerate(lines):
                self._cache[start + i] = text
            if self.label_w:
                for i, label in enumerate(self.log_file.labels(start, len(lines))):
                    self._labels[start + i] = label
            widest = max((cell_len(t) for t in lines), default=0)
            if widest > self._widest:  # a longer line than any so far: the sideways range grows
                self._widest = widest
                if not self.wrap:
                    self.call_later(self._size_to, self.virtual_size.height)
        return self._cache.get(index, "")

    # ---- wrapped rows ---------------------------------------------------------------------
    def _wrapped(self) -> list[tuple[int, str, bool]]:
        """The rows on screen in wrap mode: from the top line down, or, when following the end,
        from the last line up so the end is always in view."""
        n, height = self.virtual_size.height, max(1, self.size.height)
        width = self.text_width
        at_end = self.following and self.scroll_offset.y >= self.max_scroll_y
        key = (self.scroll_offset.y, width, height, n, at_end, len(self._cache))
        if key == self._rows_key:
            return self._rows
        rows: list[tuple[int, str, bool]] = []
        if at_end:
            index = n - 1
            while index >= 0 and len(rows) < height:
                rows[:0] = _chop(index, self._line(index), width)
                index -= 1
            rows = rows[-height:]
        else:
            index = self.scroll_offset.y
            while index < n and len(rows) < height:
                rows += _chop(index, self._line(index), width)
                index += 1
            rows = rows[:height]
        self._rows_key, self._rows = key, rows
        return rows

    # ---- drawing ----------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        if self.wrap:
            rows = self._wrapped()
            if y >= len(rows):
                return Strip.blank(width, base)
            index, text, first = rows[y]
            number = (f"{index + 1:>7} " if first else "      ↪ ") + self._label_cell(index, first)
            return self._draw(index, number, text, 0, self.text_width).extend_cell_length(width, base)
        index = self.scroll_offset.y + y
        if index >= self.virtual_size.height:
            return Strip.blank(width, base)
        text = self._line(index)
        return self._draw(index, f"{index + 1:>7} " + self._label_cell(index, True), text, self.scroll_offset.x,
                          self.text_width).extend_cell_length(width, base)

    def _label_cell(self, index: int, first: bool) -> str:
        """The rank column (ranks view): ``r3``, ``n1/r3!`` (stderr), blank for a line without one."""
        if not self.label_w:
            return ""
        label = self._labels.get(index, "") if first else ""
        return label[: self.label_w - 1].ljust(self.label_w - 1) + " "

    def _draw(self, index: int, number: str, text: str, x: int, text_width: int) -> Strip:
        base = self.rich_style
        style = base
        if self.current == index:
            style = base + self.get_component_rich_style("logview--current", partial=True)
        if self.needle and self.needle.lower() in text.lower():
            segs = _highlight(text, self.needle, style, base + self.get_component_rich_style("logview--match",
                                                                                              partial=True))
        else:
            segs = [Segment(text, style)]
        body = Strip(segs).crop(x, x + max(0, text_width))
        if not self.wrap:
            body = _cut_marked(body, cell_len(text), x, text_width, base + Style(dim=True))
        return Strip([Segment(number, base + Style(dim=True)), *body])

    def visible_text(self) -> list[str]:
        """The text on screen, one entry per row (tests): whole lines, or the wrapped rows."""
        if self.wrap:
            return [text for _, text, _ in self._wrapped()]
        top = self.scroll_offset.y
        return [self._line(i) for i in range(top, min(top + self.size.height, self.virtual_size.height))]


def _cut_marked(body: Strip, length: int, x: int, width: int, style: Style) -> Strip:
    """A line cut by the view's edges (no-wrap mode) says so: ``…`` in the last column while more
    of it lies to the right, in the first while some lies to the left (``→``/``←`` reach it);
    the line that fits is drawn as it is."""
    if width < 2:
        return body
    right, left = length > x + width, x > 0 and length > 0
    if not (right or left):
        return body
    cells = body.cell_length
    start, end = (1 if left else 0), (width - 1 if right else cells)
    mark = Segment("…", style)
    return Strip([*([mark] if left else []), *body.crop(start, max(start, end)), *([mark] if right else [])])


def _chop(index: int, text: str, width: int) -> list[tuple[int, str, bool]]:
    parts = chop_cells(text, width) if cell_len(text) > width else [text]
    return [(index, part, i == 0) for i, part in enumerate(parts or [""])]


def _highlight(text: str, needle: str, style: Style, match: Style) -> list[Segment]:
    out, low, nl, pos = [], text.lower(), needle.lower(), 0
    while True:
        i = low.find(nl, pos)
        if i < 0:
            out.append(Segment(text[pos:], style))
            return out
        out += [Segment(text[pos:i], style), Segment(text[i:i + len(nl)], match)]
        pos = i + len(nl)


def follow_words(follow: bool, over: bool) -> str:
    """The log title's word for the follow mode: "following" only while lines may still come (a run
    that is over writes none; f then goes to the end and stays there)."""
    if over:
        return "at the end, the run is over" if follow else "paused (f: to the end)"
    return "following" if follow else "paused (f to follow)"


class LogScreen(Screen):
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings(keys.LOG_KEYS)

    def __init__(self, path: Path, *, title: str = "", interval: float = 1.0,
                 over: Callable[[], bool] = lambda: False) -> None:
        super().__init__()
        self.path = Path(path)
        # whether the run is over (the run screen's snapshot answers): its log will not grow, so the
        # title does not say "following" (newcomer round 12 saw it on a finished run)
        self.over = over
        self._said_over = False
        self.title_text = title or str(path)
        self.interval = interval
        self.log_file = LogFile(self.path, redact=Redactor.for_run_dir(self.path.parent).redact)
        self.follow = True
        self.needle = ""
        self.match_count: int | None = None   # occurrences of the needle in train.log
        self.ranks: Any = None      # the ranks view, made at the first R
        self.ranks_mode = False

    def compose(self) -> ComposeResult:
        yield Static("", id="log-title")
        yield LogView(self.log_file, id="logview")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._update_title()
        self.query_one(LogView).focus()
        self._index()
        self.set_interval(self.interval, self._tick)

    def _tick(self) -> None:
        self._index()
        self._keep_following()
        if self.over() != self._said_over:   # the run ended with the view open
            self._update_title()

    def _keep_following(self) -> None:
        """While following, stay on the last line: a scroll made before the first layout (or a
        resize) would otherwise leave the view short of the end until the file grows again."""
        view = self.query_one(LogView)
        if self.follow and view.scroll_offset.y < view.max_scroll_y:
            view.scroll_end(animate=False, immediate=True)

    def on_resize(self) -> None:
        self.call_after_refresh(self._keep_following)

    def _update_title(self) -> None:
        n = len(self.query_one(LogView).log_file)
        search = ""
        if self.needle:
            count = "" if self.match_count is None else f": {self.match_count:,} in the file"
            search = f"  search '{self.needle}'{count} (n/N)"
        if self.ranks_mode and self.ranks is not None:
            search += f"  ranks: {self.ranks.describe} (R: the plain log)"
        self._said_over = self.over()
        follow = follow_words(self.follow, self._said_over)
        view = self.query_one(LogView)
        lines = "wrapped" if view.wrap else (f"columns {view.scroll_offset.x + 1}+" if view.scroll_offset.x else "")
        lines = f"  {lines}" if lines else ""
        self.query_one("#log-title", Static).update(Text(f"{self.title_text}  {n:,} lines  {follow}{lines}{search}"))

    def action_wrap(self) -> None:
        view = self.query_one(LogView)
        view.set_wrap(not view.wrap)
        self.call_after_refresh(self._keep_following)
        self._update_title()

    def on_log_view_panned(self, _message: LogView.Panned) -> None:
        self._update_title()

    @work(thread=True, exclusive=True, group="log-index")
    def _index(self) -> None:
        source = self.query_one(LogView).log_file
        if source.refresh():
            self.app.call_from_thread(self._indexed)

    def _indexed(self) -> None:
        view = self.query_one(LogView)
        view.set_line_count(len(view.log_file))
        if self.follow:
            self.call_after_refresh(self._keep_following)
        self._update_title()

    def action_follow(self) -> None:
        self.follow = not self.follow
        self.query_one(LogView).following = self.follow
        if self.follow:
            self.query_one(LogView).scroll_end(animate=False)
        self._update_title()

    def action_top(self) -> None:
        self.follow = False
        self.query_one(LogView).following = False
        self.query_one(LogView).scroll_home(animate=False)
        self._update_title()

    def action_bottom(self) -> None:
        self.query_one(LogView).scroll_end(animate=False)

    def action_search(self) -> None:
        from moeconsole.console.screens.dialogs import PromptScreen

        def got(value: str | None) -> None:
            if value:
                self.needle = value
                self.match_count = None
                self._count(value)
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
        source = self.query_one(LogView).log_file
        line = source.search(needle, start, backwards=backwards)
        self.app.call_from_thread(self._found, needle, line)

    @work(thread=True, exclusive=True, group="log-count")
    def _count(self, needle: str) -> None:
        """How many times the needle occurs in the whole file (the title says it)."""
        count = self.log_file.count(needle)
        self.app.call_from_thread(self._counted, needle, count)

    def _counted(self, needle: str, count: int | None) -> None:
        if needle == self.needle:
            self.match_count = count
            self._update_title()

    def _found(self, needle: str, line: int | None) -> None:
        view = self.query_one(LogView)
        if line is None:
            self.notify(f"'{needle}' not found", severity="warning")
            return
        self.follow = view.following = False
        view.current = line
        view.scroll_to(y=max(0, line - view.size.height // 2), animate=False, immediate=True)
        view.reveal(line)
        view.refresh()
        self._update_title()

    def action_ranks(self) -> None:
        """R: the ranks of a multi-node run merged by time, each line with its rank (or back)."""
        view = self.query_one(LogView)
        if self.ranks_mode:
            self.ranks_mode = False
            view.set_source(self.log_file)
        else:
            if self.ranks is None:
                from moeconsole.console.ranklog import open_ranks
                from moeconsole.console.source import read_recipe
                run_dir = self.path.parent
                self.ranks = open_ranks(read_recipe(run_dir / "recipe.yaml"), run_dir, self.log_file,
                                        redact=self.log_file.redact)
            self.ranks_mode = True
            view.set_source(self.ranks)
            self.notify(self.ranks.describe)
        self._index()
        if self.follow:
            self.call_after_refresh(self._keep_following)
        self._update_title()

    def action_help(self) -> None:
        from moeconsole.console.screens.dialogs import HelpScreen
        self.app.push_screen(HelpScreen("Log view"))

    def action_back(self) -> None:
        self.app.pop_screen()
