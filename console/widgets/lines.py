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

from typing import ClassVar, Iterable, Sequence

from rich.cells import cell_len
from rich.console import OverflowMethod
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.style import Style
from textual.visual import Visual, visualize
from textual.widget import Widget

from moeconsole.runner.core.units import clip

Pieces = Sequence[tuple[str, str]]
Line = tuple[tuple[str, str], ...]
# One line laid out at a width: (x, text, piece style key) per segment.
Layout = list[tuple[int, str, str]]
OFFSET_STYLES_MAX = 8192


def changed_columns(old: Line, new: Line, width: int) -> tuple[int, int] | None:
    """The columns [x0, x1) of a line at ``width`` that differ between two versions of it (a
    summary line's age: one cell), or None when it cannot tell (not plain one-cell text): the
    rest of the line is left as it is on the screen, not written to the terminal again."""
    if not all(t.isascii() and t.isprintable() for t, _ in (*old, *new)):
        return None
    n = min(len(old), len(new))
    i = x0 = 0
    while i < n and old[i] == new[i]:
        x0 += len(old[i][0])
        i += 1
    if i < n and old[i][1] == new[i][1]:  # within the first piece that differs, its common start
        a, b = old[i][0], new[i][0]
        k = 0
        while k < min(len(a), len(b)) and a[k] == b[k]:
            k += 1
        x0 += k
    old_w, new_w = sum(len(t) for t, _ in old), sum(len(t) for t, _ in new)
    x1 = max(old_w, new_w)
    if old_w == new_w:  # nothing moved: the common end stays too
        j = 0
        while j < n - i and old[-1 - j] == new[-1 - j]:
            x1 -= len(old[-1 - j][0])
            j += 1
        if j < n - i and old[-1 - j][1] == new[-1 - j][1]:
            a, b = old[-1 - j][0], new[-1 - j][0]
            k = 0
            while k < min(len(a), len(b)) and a[-1 - k] == b[-1 - k] and x1 - k > x0:
                k += 1
            x1 -= k
    if x1 > width:  # cut at the width (its ellipsis in the last column)
        x0, x1 = min(x0, width - 1), width
    return (x0, x1) if x0 < x1 else None


class BoxedLines(Widget):
    """A Line-API widget whose screen lines are made here for a plain box: the widget's left
    and right padding, its background and the app's line filters are put around each line
    that changed (a line is "changed" when render_line returns a new Strip), as Textual's
    styles cache would, and kept until the line or the box changes. Anything else (a border,
    an outline, a tint, a hatch, vertical padding, opacity) goes through the styles cache,
    which makes 4 strips and reads a dozen style rules for every line it draws."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._final: dict[int, tuple[Strip, Strip]] = {}  # y: (line, the line as on screen)
        self._box_drawn: tuple | None = None  # what is around the lines of _final

    def render_lines(self, crop: Region) -> list[Strip]:
        box = self._box()
        if box is None:
            return super().render_lines(crop)
        if box != self._box_drawn:
            self._box_drawn = box
            self._final.clear()
        width, content_width, content_height, inner, pad_left, pad_right, background, filters = box
        final = self._final
        strips: list[Strip] = []
        for y in crop.line_range:
            line = self.render_line(y) if y < content_height else Strip.blank(content_width, inner)
            done = final.get(y)
            if done is not None and done[0] is line:
                strips.append(done[1])
                continue
            strip = line.adjust_cell_length(content_width, inner)
            if pad_left or pad_right:
                strip = Strip(_padded(strip, pad_left, pad_right, inner), width)
            else:
                strip = Strip(strip, width)
            for line_filter in filters:
                strip = strip.apply_filter(line_filter, background)
            final[y] = (line, strip)
            strips.append(strip)
        if crop.column_span != (0, width):
            x1, x2 = crop.column_span
            strips = [strip.crop(x1, x2) for strip in strips]
        return strips

    def _box(self) -> tuple | None:
        """What the styles cache would put around a content line, if it is only padding on the
        left and right and a background; None for anything else."""
        styles = self.styles
        if self.BLANK or self._border_title is not None or self._border_subtitle is not None:
            return None
        if any(edge[0] for edge in styles.border) or any(edge[0] for edge in styles.outline):
            return None
        padding = styles.padding
        if padding.top or padding.bottom or styles.tint.a or styles.text_opacity != 1.0 or self.opacity != 1.0:
            return None
        if styles.has_rule("hatch") and styles.hatch != "none":
            return None
        if self.auto_links:
            hover = self.hover_style
            if hover._link_id and hover._meta and "@click" in hover.meta:
                return None
        base_background, background = self.background_colors
        inner = Style(background=base_background + background).rich_style
        content = self.content_region
        return (self.region.width, content.width, content.height, inner, padding.left, padding.right, background,
                tuple(self.get_line_filters()))


class LinesView(BoxedLines):
    """Lines of (text, style-name) pieces; style names are the widget's component classes."""

    DEFAULT_CSS = """
    LinesView {
        height: auto;
    }
    """
    OVERFLOW: ClassVar[OverflowMethod] = "crop"  # the rich Text overflow of render() (what the CSS text-overflow says wins)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._lines: tuple[Line, ...] = ()
        self._rows: dict[int, Strip] = {}  # drawn lines by y, for the current lines
        self._layouts: dict[Line, Layout | None] = {}  # None: drawn by the Content pipeline
        self._piece_styles: dict[str, tuple[str, Style]] = {}  # by component class
        self._offset_styles: dict[tuple[str, int, int], RichStyle] = {}  # by (piece style, x, y)
        self._frame: tuple[bool, int, Style] | None = None  # set while render_lines runs
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
            fast = self._fast()  # one line one line, left-aligned: a column of text is a column on the screen
            self.refresh(*[Region(x0, y, x1 - x0, 1) if fast and y < len(old) and y < len(new)
                           and (span := changed_columns(old[y], new[y], width)) and (x0 := span[0]) < (x1 := span[1])
                           else Region(0, y, width, 1) for y in changed])
        else:
            self.refresh()
        return True

    # ---- drawing ----------------------------------------------------------------------------
    def _line_text(self, line: Line) -> Text:
        text = Text(no_wrap=True, overflow=self.OVERFLOW)
        for piece, style in line:
            text.append(piece, self.get_component_rich_style(style, partial=True) if style else "")
        return text

    def render(self) -> Text:
        """All lines as one Text: what a Static of this content holds (the Content pipeline
        draws it for a text selection; it gives the height of an auto-height pane)."""
        if self._text is None:
            text = Text(no_wrap=True, overflow=self.OVERFLOW)
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

    def _piece_style(self, name: str) -> tuple[str, Style]:
        """(key, style) of a piece: the style Content.render gives it (the widget's style, then
        the piece's); key "" for a piece without a style of its own."""
        if name not in self._piece_styles:
            base = self.visual_style
            rich = self.get_component_rich_style(name, partial=True) if name else None
            if rich:
                self._piece_styles[name] = (name, base + (base + Style.from_rich_style(rich, self.app.ansi_theme)))
            else:
                self._piece_styles[name] = ("", base + base)
        return self._piece_styles[name]

    def _layout(self, line: Line, width: int) -> Layout | None:
        """A line's segments as the Content pipeline makes them, or None if it is not plain
        single-cell text, or empty (then the pipeline draws it)."""
        plain = "".join(piece for piece, _ in line)
        if not (plain and plain.isprintable() and cell_len(plain) == len(plain)):
            return None
        # Spans as rich Text and Content.from_rich_text make them: a piece with a style (that
        # is not empty) is a span of its own; pieces without one run together.
        spans: list[tuple[int, int, str]] = []
        x = 0
        for piece, name in line:
            if not piece:
                continue
            key = self._piece_style(name)[0] if name else ""
            if not key and spans and not spans[-1][2] and spans[-1][1] == x:
                spans[-1] = (spans[-1][0], x + len(piece), "")
            else:
                spans.append((x, x + len(piece), key))
            x += len(piece)
        text = plain
        if len(plain) > width:  # Content.truncate: the spans cut at the new end
            ellipsis = self.styles.text_overflow == "ellipsis"
            text = clip(plain, width) if ellipsis else plain[:width]
            end = len(text)
            spans = [(a, min(b, end), k) for a, b, k in spans if a < end]
        return [(a, text[a:b], key) for a, b, key in spans]

    def _offset_style(self, key: str, x: int, y: int) -> RichStyle:
        """The piece style with its text-selection offset; one object per place, so a line
        drawn again at the same place reuses it (and the ANSI codes cached on it)."""
        styles = self._offset_styles
        style = styles.get((key, x, y))
        if style is None:
            if len(styles) >= OFFSET_STYLES_MAX:
                styles.clear()
            style = styles[key, x, y] = self._piece_style(key)[1].rich_style_with_offset(x, y)
        return style

    def _draw_row(self, y: int, width: int) -> Strip:
        line = self._lines[y]
        if line in self._layouts:
            layout = self._layouts[line]
        else:
            layout = self._layouts[line] = self._layout(line, width) if self._fast() else None
        self.draws += 1
        if layout is None:  # the Content pipeline, the line at its place (its offsets)
            text = Text("\n" * y, no_wrap=True, overflow=self.OVERFLOW)
            text.append_text(self._line_text(line))
            visual = visualize(self, text, markup=False)
            strips = Visual.to_strips(self, visual, width, y + 1, self.visual_style)
            return strips[y] if len(strips) > y else Strip.blank(width, self.visual_style.rich_style)
        offset_style = self._offset_style
        return Strip([Segment(text, offset_style(key, x, y)) for x, text, key in layout],
                     sum(len(text) for _, text, _ in layout))

    def render_lines(self, crop: Region) -> list[Strip]:
        # What every line of this render shares, looked up once.
        self._frame = (self.text_selection is None, self.size.width, self.visual_style)
        try:
            if not self._frame[0]:  # a text selection: Textual's styles cache, as for a Static
                return Widget.render_lines(self, crop)
            return super().render_lines(crop)
        finally:
            self._frame = None

    def render_line(self, y: int) -> Strip:
        unselected, width, visual_style = self._frame or (self.text_selection is None, self.size.width,
                                                          self.visual_style)
        if not unselected:
            return super().render_line(y)  # the whole text, as a Static draws a selection
        if (width, visual_style) != self._drawn_for:
            self._drawn_for = (width, visual_style)
            self._forget_drawn()
        if not (width and 0 <= y < len(self._lines)):
            return Strip.blank(width, visual_style.rich_style)
        strip = self._rows.get(y)
        if strip is None:
            strip = self._rows[y] = self._draw_row(y, width)
        return strip

    def _forget_drawn(self) -> None:
        self._rows.clear()
        self._layouts.clear()
        self._piece_styles.clear()
        self._offset_styles.clear()

    def notify_style_update(self) -> None:
        """New CSS (a theme, a breakpoint class): every line is drawn again."""
        super().notify_style_update()
        self._forget_drawn()
        self._text = None


def _padded(segments: Iterable[Segment], pad_left: int, pad_right: int, style: RichStyle) -> list[Segment]:
    """The line with ``pad_left`` / ``pad_right`` blank cells of ``style`` around it (what Textual
    puts around a widget's content for its ``padding``)."""
    line = list(segments)
    if pad_left:
        line.insert(0, Segment(" " * pad_left, style))
    if pad_right:
        line.append(Segment(" " * pad_right, style))
    return line
