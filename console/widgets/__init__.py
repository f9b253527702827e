"""Widgets of the console, grouped by domain. Each renders part of a Snapshot and redraws only
when its own slice of the data changed."""
from __future__ import annotations

from rich.text import Text
from textual.geometry import Region
from textual.widget import Widget


def styled_text(widget: Widget, lines: list, overflow: str = "crop") -> Text:
    """Lines of (text, style-name) pieces as one Text, styles resolved from the widget's TCSS
    component classes (``format`` names them; the words carry the meaning alone)."""
    text = Text(no_wrap=True, overflow=overflow)
    for i, line in enumerate(lines):
        if i:
            text.append("\n")
        for piece, style in line:
            text.append(piece, widget.get_component_rich_style(style, partial=True) if style else "")
    return text


def row_regions(ys: list[int], width: int) -> list[Region]:
    """Rows to repaint (ascending line numbers) as one region per run of consecutive rows."""
    regions: list[Region] = []
    start = prev = ys[0]
    for y in ys[1:]:
        if y != prev + 1:
            regions.append(Region(0, start, width, prev - start + 1))
            start = y
        prev = y
    regions.append(Region(0, start, width, prev - start + 1))
    return regions
