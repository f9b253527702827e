"""Shared by the chart tests: a series from plain lists, and the plot area of rendered rows."""
from __future__ import annotations

from moeconsole.runner.core.series import Series


def series(xs, ys) -> Series:
    s = Series()
    for x, y in zip(xs, ys):
        s.append(x, y)
    return s


def plot_cols(rows: list[str]) -> list[str]:
    """The plot area (without the y-label column) of the plot rows."""
    return [r[7:] for r in rows[1:-1]]
