"""LinesView: a pane of text lines drawn with the Line API, for the panes that change every
second (status line, GPU rows, log tail).

A Static renders all of its text again on every update (Textual's Content pipeline: split,
wrap, truncate, styles per span), and the screen repaints every one of its lines. Here an
update repaints only the lines that changed, a line is drawn only when it changed, and the
layout changes only when the number of lines does (a pane whose height is auto).

The screen is the same as a Static's, segment for segment: a line is drawn with the same
styles the Content pipeline gives it (the widget's style, then the piece's component style,
and the text-selection offset of every segment), and truncated the same way. A line that is
not plain single-cell text (tabs, control codes, wide characters) and a text selection are
drawn by the Content pipeline itself."""
from __future__ import annotations

from typing import Sequence

from rich.cells import cell_len
from rich.segment import Segment
from rich.text import Text
from textual.strip import Strip
from textual.style import Style
from textual.visual import Visual, visualize
from textual.widget import Widget

from console.widgets import row_regions

Pieces = Sequence[tuple[str, str]]
Line = tuple[tuple[str, str], ...]
# One line laid out at a width: (x, text, style) per segment, before the selection offsets.
Layout = list[tuple[int, str, Style]]


class LinesView(Widget):
    """Lines of (text, style-name) pieces; style names are the widget's component classes."""

    DEFAULT_CSS = """
    LinesView {
        height: auto;
    }
    """
    OVERFLOW = "crop"  # the rich Text overflow of render() (what the CSS text-overflow says wins)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: tuple[Line, ...] = ()
        self._rows: dict[int, Strip] = {}  # drawn lines by y, for the current lines
        self._layouts: dict[Line, Layout | None] = {}  # None: drawn by the Content pipeline
        self._piece_styles: dict[str, Style | None] = {}  # by component class, as the layouts
        self._drawn_for: tuple[int, object] | None = None  # (width, visual style) of the above
        self._text: Text | None = None
        self.draws = 0  # lines drawn (the tests read it: an unchanged line is not drawn again)

    @property
    def lines(self) -> tuple[Line, ...]:
        return self._lines

    def set_lines(self, lines: Sequence[Pieces]) -> bool:
        """New content; repaints only the lines that changed. Returns True if any did."""
        new = tuple(tuple(line) for line in lines)
        old = self._lines
        if new == old:
            return False
        self._lines = new
        self._text = None
        changed = [y for y in range(max(len(new), len(old)))
                   if y >= len(new) or y >= len(old) or new[y] != old[y]]
        for y in changed:
            self._rows.pop(y, None)
        if len(self._layouts) > 2 * len(new) + 16:
            keep = set(new)
            self._layouts = {k: v for k, v in self._layouts.items() if k in keep}
        if not self.is_mounted:
            return True
        height = self.styles.height
        if len(new) != len(old) and (height is None or height.is_auto):
            self.refresh(layout=True)  # the height follows the lines: a new layout
            return True
        width = self.size.width
        if width and len(changed) < len(new):
            self.refresh(*row_regions(changed, width))
        else:
            self.refresh()
        return True

    # ---- drawing ----------------------------------------------------------------------------
    def _line_text(self, line: Line) -> Text:
        text = Text(no_wrap=True, overflow=self.OVERFLOW)  # type: ignore[arg-type]
        for piece, style in line:
            text.append(piece, self.get_component_rich_style(style, partial=True) if style else "")
        return text

    def render(self) -> Text:
        """All lines as one Text: what a Static of this content holds (the Content pipeline
        draws it for a text selection; it gives the height of an auto-height pane)."""
        if self._text is None:
            text = Text(no_wrap=True, overflow=self.OVERFLOW)  # type: ignore[arg-type]
            for i, line in enumerate(self._lines):
                if i:
                    text.append("\n")
                text.append_text(self._line_text(line))
            self._text = text
        return self._text

    def _fast(self) -> bool:
        """Whether these CSS rules leave one line one line, as ``_layout`` draws it."""
        styles = self.styles
        return (styles.text_wrap == "nowrap" and styles.text_overflow in ("ellipsis", "clip")
                and styles.text_align in ("left", "start") and not styles.line_pad)

    def _layout(self, line: Line, width: int) -> Layout | None:
        """A line's segments as the Content pipeline makes them, or None if it is not plain
        single-cell text, or empty (then the pipeline draws it)."""
        plain = "".join(piece for piece, _ in line)
        if not (plain and plain.isprintable() and cell_len(plain) == len(plain)):
            return None
        ansi_theme = self.app.ansi_theme
        base = self.visual_style
        # Spans as rich Text and Content.from_rich_text make them: a piece with a style (that
        # is not empty) is a span of its own; pieces without one run together.
        spans: list[tuple[int, int, Style | None]] = []
        x = 0
        piece_styles = self._piece_styles
        for piece, name in line:
            if not piece:
                continue
            if name not in piece_styles:
                rich = self.get_component_rich_style(name, partial=True) if name else None
                piece_styles[name] = Style.from_rich_style(rich, ansi_theme) if rich else None
            style = piece_styles[name]
            if style is None and spans and spans[-1][2] is None and spans[-1][1] == x:
                spans[-1] = (spans[-1][0], x + len(piece), None)
            else:
                spans.append((x, x + len(piece), style))
            x += len(piece)
        text = plain
        if len(plain) > width:  # Content.truncate: the spans cut at the new end
            ellipsis = self.styles.text_overflow == "ellipsis"
            text = plain[: width - 1] + "…" if ellipsis else plain[:width]
            end = len(text)
            spans = [(a, min(b, end), s) for a, b, s in spans if a < end]
        layout: Layout = []
        plain_style = base + base  # Content.render: the widget's style, then each span's
        for a, b, style in spans:
            layout.append((a, text[a:b], plain_style if style is None else base + (base + style)))
        return layout

    def _draw_row(self, y: int, width: int) -> Strip:
        line = self._lines[y]
        if line in self._layouts:
            layout = self._layouts[line]
        else:
            layout = self._layouts[line] = self._layout(line, width) if self._fast() else None
        self.draws += 1
        if layout is None:  # the Content pipeline, the line at its place (its offsets)
            text = Text("\n" * y, no_wrap=True, overflow=self.OVERFLOW)  # type: ignore[arg-type]
            text.append_text(self._line_text(line))
            visual = visualize(self, text, markup=False)
            strips = Visual.to_strips(self, visual, width, y + 1, self.visual_style)
            return strips[y] if len(strips) > y else Strip.blank(width, self.visual_style.rich_style)
        return Strip([Segment(text, style.rich_style_with_offset(x, y)) for x, text, style in layout],
                     sum(len(text) for _, text, _ in layout))

    def render_line(self, y: int) -> Strip:
        if self.text_selection is not None:
            return super().render_line(y)  # the whole text, as a Static draws a selection
        width = self.size.width
        if (width, self.visual_style) != self._drawn_for:
            self._drawn_for = (width, self.visual_style)
            self._rows.clear()
            self._layouts.clear()
            self._piece_styles.clear()
        if not (width and 0 <= y < len(self._lines)):
            return Strip.blank(width, self.visual_style.rich_style)
        strip = self._rows.get(y)
        if strip is None:
            strip = self._rows[y] = self._draw_row(y, width)
        return strip

    def notify_style_update(self) -> None:
        """New CSS (a theme, a breakpoint class): every line is drawn again."""
        super().notify_style_update()
        self._rows.clear()
        self._layouts.clear()
        self._piece_styles.clear()
        self._text = None
