"""Growable numeric series for whole-run charts: append in O(1), downsample to a width in O(width)
per read, so a 1M-step run draws as fast as a short one."""
from __future__ import annotations

import math

import numpy as np


class Series:
    """Parallel step/value arrays; NaN marks a missing value."""

    def __init__(self, capacity: int = 1024) -> None:
        self._x = np.empty(capacity, dtype=np.float64)
        self._y = np.empty(capacity, dtype=np.float64)
        self.n = 0

    def append(self, x: float, y: float | None) -> None:
        if self.n == len(self._x):
            self._x = np.concatenate([self._x, np.empty_like(self._x)])
            self._y = np.concatenate([self._y, np.empty_like(self._y)])
        self._x[self.n] = x
        self._y[self.n] = math.nan if y is None else y
        self.n += 1

    @property
    def x(self) -> np.ndarray:
        return self._x[: self.n]

    @property
    def y(self) -> np.ndarray:
        return self._y[: self.n]

    def last(self) -> float | None:
        return float(self._y[self.n - 1]) if self.n else None

    def downsample(self, points: int) -> tuple[np.ndarray, np.ndarray]:
        """At most ``points`` (x, y) pairs. Each bucket keeps its max, so spikes and NaN stay
        visible (a spike is the thing a user must not miss). Non-finite values survive as NaN/inf."""
        n = self.n
        if n <= points or points <= 0:
            return self.x.copy(), self.y.copy()
        edges = np.linspace(0, n, points + 1).astype(np.int64)
        x = self._x[edges[:-1]]
        y = np.maximum.reduceat(self._y[:n], edges[:-1])
        return x, y


def to_pairs(x: np.ndarray, y: np.ndarray) -> list[list]:
    """JSON-friendly [[step, value], ...]; non-finite as strings like the metrics schema."""
    out = []
    for a, b in zip(x.tolist(), y.tolist()):
        if math.isnan(b):
            v: float | str | None = "nan"
        elif math.isinf(b):
            v = "inf" if b > 0 else "-inf"
        else:
            v = b
        out.append([int(a), v])
    return out
