"""Widgets of the console, grouped by domain. Each renders part of a Snapshot and redraws only
when its own slice of the data changed."""
from __future__ import annotations

from rich.text import Text
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
