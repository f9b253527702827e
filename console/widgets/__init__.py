"""Widgets of the console, grouped by domain. Each renders part of a Snapshot and redraws only
when its own slice of the data changed."""
from __future__ import annotations

from textual.geometry import Region


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
