"""ChartView: a whole-run line chart drawn with the Line API from ``moeconsole.console.chart``.

The rendered rows are cached and rebuilt only when the data key (series length, last value,
markers) or the size changes, so a 1 Hz poll of an idle run costs nothing to draw."""
from __future__ import annotations

from typing import Callable, Sequence

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.message import Message
from textual.strip import Strip

from moeconsole.console.format import short
from moeconsole.console.chart import DEFAULT_OPTIONS, ChartOptions, Downsampled, Frame, Marker, render_chart_frame
from moeconsole.console.widgets import row_regions
from moeconsole.console.widgets.lines import BoxedLines


class ChartView(BoxedLines):
    """A chart that also answers the mouse where the terminal sends it: the wheel zooms in or out
    around the step under the pointer, a drag across the plot zooms to the steps it spans (the
    screen decides what a zoom does: ``ZoomAround``, ``ZoomTo``)."""

    COMPONENT_CLASSES = {
        "chart--title", "chart--axis", "chart--line", "chart--line-b", "chart--line-c", "chart--line-d",
        "chart--both", "chart--restart", "chart--ckpt", "chart--bad", "chart--cap", "chart--raw",
    }

    class ZoomAround(Message):
        """The wheel over the plot: zoom in (factor < 1) or out around ``step``."""
        def __init__(self, chart: "ChartView", step: float, factor: float) -> None:
            super().__init__()
            self.chart, self.step, self.factor = chart, step, factor

    class ZoomTo(Message):
        """A drag across the plot: show the steps from ``lo`` to ``hi``."""
        def __init__(self, chart: "ChartView", lo: float, hi: float) -> None:
            super().__init__()
            self.chart, self.lo, self.hi = chart, lo, hi

    def __init__(self, title: str = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.title = title
        self._series: Sequence[Downsampled] = ()
        self._markers: Sequence[Marker] = ()
        self._cap: float | None = None
        self._cap_label = "cap"
        self._options: ChartOptions = DEFAULT_OPTIONS
        self._x_label: Callable[[float], str] = short
        self.frame: Frame | None = None     # where the last drawing put the data (for the mouse)
        self._drag_from: float | None = None
        self._heading: str | Sequence[str] = title
        self._data_key: object = None
        self._cache_key: tuple[object, int, int] | None = None  # (data key, width, height) last drawn
        self._strips: list[Strip] = []
        self._styles: dict[str, Style] = {}  # by component class ("" the widget's own), until new CSS
        self.draws = 0  # how many times the rows were rebuilt (the benchmark reads it)

    def set_data(self, series: Sequence[Downsampled], *, heading: str | Sequence[str] | None = None,
                 markers: Sequence[Marker] = (), cap: float | None = None, cap_label: str = "cap",
                 key: object = None, options: ChartOptions = DEFAULT_OPTIONS,
                 x_label: Callable[[float], str] = short) -> bool:
        """New data; redraws only if ``key`` (anything comparable) changed. Returns True if so.
        The options are part of what is drawn: the caller puts them into ``key``."""
        if key is not None and key == self._data_key:
            return False
        self._series, self._markers, self._cap, self._cap_label = series, markers, cap, cap_label
        self._options = options
        self._x_label = x_label
        self._heading = heading if heading is not None else self.title
        self._data_key = key
        old, drawn_at = self._strips, self._cache_key
        self._cache_key = None
        size = self.content_size
        if key is None or not self.is_mounted or drawn_at is None or drawn_at[1:] != (size.width, size.height):
            self.refresh()
            return True
        # Redraw now and repaint only the rows that changed: on a long run a new step moves
        # the title and a row or two, not the whole chart.
        new = self._rows()
        changed = []
        for y, row in enumerate(new):
            if y < len(old) and row == old[y]:
                new[y] = old[y]  # the same row keeps its strip (and the screen line made of it)
            else:
                changed.append(y)
        if len(new) != len(old) or len(changed) == len(new):
            self.refresh()
        elif changed:
            self.refresh(*row_regions(changed, size.width))
        return True

    def text_rows(self) -> list[str]:
        """What the chart shows, as plain text (tests)."""
        return ["".join(seg.text for seg in strip) for strip in self._rows()]

    def _rows(self) -> list[Strip]:
        size = self.content_size
        key = (self._data_key, size.width, size.height) if self._data_key is not None else None
        if key is not None and key == self._cache_key:
            return self._strips
        rows, self.frame = render_chart_frame(self._series, size.width, size.height, title=self._heading,
                                              markers=self._markers, cap=self._cap, cap_label=self._cap_label,
                                              options=self._options, x_label=self._x_label)
        styles = self._styles
        if not styles:
            styles[""] = self.rich_style

        def style(name: str) -> Style:
            if name not in styles:
                styles[name] = styles[""] + self.get_component_rich_style(name, partial=True)
            return styles[name]

        self._strips = [Strip([Segment(text, style(name)) for text, name in row]).adjust_cell_length(size.width)
                        for row in rows]
        self._cache_key = key
        self.draws += 1
        return self._strips

    def render_line(self, y: int) -> Strip:
        rows = self._rows()
        return rows[y] if 0 <= y < len(rows) else Strip.blank(self.content_size.width, self.rich_style)

    def on_resize(self) -> None:
        self._cache_key = None

    def notify_style_update(self) -> None:
        """New CSS (a theme, a breakpoint class): the styles are looked up again."""
        super().notify_style_update()
        self._styles.clear()
        self._cache_key = None

    # ---- the mouse (where the terminal sends it; every zoom also has a key) -------------------
    def _step_at(self, x: int) -> float | None:
        frame = self.frame
        return None if frame is None else frame.step_at(x)

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        step = self._step_at(event.x)
        if step is not None:
            event.stop()
            self.post_message(self.ZoomAround(self, step, 0.5))

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        step = self._step_at(event.x)
        if step is not None:
            event.stop()
            self.post_message(self.ZoomAround(self, step, 2.0))

    def on_mouse_down(self, event: events.MouseDown) -> None:
        self._drag_from = self._step_at(event.x)
        if self._drag_from is not None:
            self.capture_mouse()

    def on_mouse_up(self, event: events.MouseUp) -> None:
        start, self._drag_from = self._drag_from, None
        self.release_mouse()
        frame = self.frame
        if start is None or frame is None:
            return
        column = min(max(event.x, frame.plot_left), frame.plot_left + frame.plot_w - 1)
        end = frame.step_at(column)
        if end is None or abs(column - (frame.plot_left + (start - frame.x0) / max(frame.x1 - frame.x0, 1e-12)
                                        * frame.plot_w)) < 2:
            return   # a click, not a drag
        lo, hi = sorted((start, end))
        self.post_message(self.ZoomTo(self, lo, hi))
