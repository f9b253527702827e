"""The chart series' memory over a long run (issue 37): a series at its bound is halved in the
arrays it holds, and a chart's reads copy the stored arrays (8 bytes a bucket) instead of making
a Python float (and a list slot: 32 bytes) per bucket. What the charts draw is the same as the
halving that made new arrays and the reads that made lists drew (``CopyingSeries``)."""
from __future__ import annotations

import math
import random
import tracemalloc
from array import array

import pytest

from moeconsole.console.chart import ChartOptions, Marker, render_chart
from moeconsole.runner.core.series import (DEFAULT_LIMIT, Series, _bmax, _bmean, reduce_max,
                                           reduce_mean)


class CopyingSeries(Series):
    """The series as it was before the halving kept its arrays (b0f4bdf, runner/core/series.py
    ``Series._halve``, ``points``, ``means``, ``downsample``, ``downsample_means``, copied as they
    were): three new arrays made beside the old ones, and every read a pair of lists. Without
    ``downsample_ema`` and ``step_span`` the chart takes its path of then (``means`` + ``ema``,
    ``downsample(1 << 30)`` for the zoom arrows)."""

    downsample_ema = None   # type: ignore[assignment]
    step_span = None        # type: ignore[assignment]

    def _halve(self) -> None:
        xs, ys, ms = self._x, self._y, self._m
        self._x = array("d", xs[0::2])
        self._y = array("d", [_bmax(a, b) for a, b in zip(ys[0::2], ys[1::2])])
        self._m = array("d", [_bmean(a, b) for a, b in zip(ms[0::2], ms[1::2])])
        if len(ys) % 2:
            self._y.append(ys[-1])
            self._m.append(ms[-1])
        self.stride *= 2

    def points(self) -> tuple[list[float], list[float]]:
        xs, ys = self._x.tolist(), self._y.tolist()
        n = min(len(xs), len(ys))
        xs, ys = xs[:n], ys[:n]
        if self._pend_n:
            xs.append(self._pend_x)
            ys.append(self._pend_y)
        return xs, ys

    def means(self) -> tuple[list[float], list[float]]:
        xs, ms = self._x.tolist(), self._m.tolist()
        n = min(len(xs), len(ms))
        xs, ms = xs[:n], ms[:n]
        if self._pend_n:
            xs.append(self._pend_x)
            ms.append(self._pend_s / self._pend_c if self._pend_c else math.nan)
        return xs, ms

    def downsample(self, points, lo=None, hi=None):  # type: ignore[no-untyped-def]
        from moeconsole.runner.core.series import in_range
        xs, ys = self.points()
        if lo is not None or hi is not None:
            xs, ys = in_range(xs, ys, lo, hi)
        return reduce_max(xs, ys, points)

    def downsample_means(self, points, lo=None, hi=None):  # type: ignore[no-untyped-def]
        from moeconsole.runner.core.series import in_range
        xs, ms = self.means()
        if lo is not None or hi is not None:
            xs, ms = in_range(xs, ms, lo, hi)
        return reduce_mean(xs, ms, points)


def _value(rnd: random.Random, i: int) -> float:
    if rnd.random() < 0.01:
        return rnd.choice([math.nan, math.inf, -math.inf, 1e9])
    return 2.0 * math.exp(-i / 3000) + 0.5 + 0.05 * rnd.random()


def _drawn(s: Series) -> list:
    """What the console's charts draw of a series: the raw line with its EMA, on a linear and a
    log axis, the whole run and a zoomed range, with markers (and the zoom arrows)."""
    span = (s.x[0], s.x[-1]) if s.n else (0.0, 1.0)
    mid = (span[0] + span[1]) / 2
    markers = [Marker(span[0], "restart"), Marker(mid, "ckpt")]
    return [render_chart([s], 53, 14, title="loss", markers=markers, options=options)
            for options in (ChartOptions(), ChartOptions(smooth=0.9), ChartOptions(smooth=0.6, log=True),
                            ChartOptions(smooth=0.9, xrange=(mid, span[1])))]


def test_a_halved_series_draws_what_the_copying_halving_drew():
    """Across several halvings (at 64 buckets and at the default 2,048), with NaN, inf and
    spikes, and an odd number of buckets halved (a series.json written with another bound): the
    chart rows, the points, the bucket means and series.json are those of the series that made
    new arrays at each halving and lists at each read."""
    rnd = random.Random(37)
    for limit, total, every in ((64, 3000, 41), (DEFAULT_LIMIT, 3 * DEFAULT_LIMIT + 5, 997)):
        ours, theirs = Series(limit), CopyingSeries(limit)
        for i in range(total):
            v = _value(rnd, i)
            ours.append(float(i), v)
            theirs.append(float(i), v)
            if i % every == 0 or i == total - 1:
                assert ours.points() == theirs.points() or _same_with_nan(ours.points(), theirs.points())
                assert [v.hex() for v in ours.means()[1]] == [v.hex() for v in theirs.means()[1]]
                assert _drawn(ours) == _drawn(theirs), f"step {i}, {ours.stride} steps a bucket"
                assert repr(ours.to_doc()) == repr(theirs.to_doc())
                xs = theirs.points()[0]
                assert ours.step_span() == (xs[0], xs[-1]), "the zoom's range: the first and last step"
        assert ours.stride >= 4 and Series(limit).step_span() is None
        # a series.json of an odd number of buckets past the bound: halved on reading
        doc = ours.to_doc()
        doc["x"], doc["y"], doc["m"] = doc["x"] * 3, doc["y"] * 3, doc["m"] * 3
        doc["x"], doc["y"], doc["m"] = doc["x"][:limit + 3], doc["y"][:limit + 3], doc["m"][:limit + 3]
        doc["x"] = [float(i) for i in range(len(doc["x"]))]
        a, b = Series.from_doc(doc, limit), CopyingSeries.from_doc(doc, limit)
        assert len(a._x) == len(b._x) < limit and repr(a.to_doc()) == repr(b.to_doc())
        assert _drawn(a) == _drawn(b)


def _same_with_nan(a: tuple[list[float], list[float]], b: tuple[list[float], list[float]]) -> bool:
    return a[0] == b[0] and [v.hex() for v in a[1]] == [v.hex() for v in b[1]]


def _full_series(limit: int = DEFAULT_LIMIT) -> Series:
    s = Series(limit)
    for i in range(limit - 1):   # one bucket short of the bound: the most a series holds
        s.append(float(i), 2.0 * math.exp(-i / 500) + 0.5)
    return s


@pytest.fixture
def traced():
    """tracemalloc on from before the series is made (so its arrays are traced), the peak of a
    call measured above what was allocated before it."""
    tracemalloc.start()

    def peak(call) -> int:  # noqa: ANN001
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - before
    try:
        yield peak
    finally:
        tracemalloc.stop()


def test_the_halving_never_holds_a_second_copy_of_the_series(traced):
    """At its bound a series is halved; the new halves were made beside the old arrays (and each
    value a Python float on the way): 67 KB allocated at once for a series of 48 KB. Now at most
    the halves themselves are made (three arrays of half the bound) before they go in place."""
    s = _full_series()
    full = 3 * 8 * DEFAULT_LIMIT                  # steps, maxima, means: 8 bytes a bucket each
    peak = traced(lambda: s.append(float(DEFAULT_LIMIT), 1.0))
    assert s.stride == 2 and len(s._x) == DEFAULT_LIMIT // 2
    assert peak < full * 0.6, f"the halving allocated {peak} bytes at once; the series holds {full}"


def test_a_charts_reads_make_no_python_float_per_bucket(traced):
    """A chart reads each of its series several times a refresh (the line, its means for the
    EMA, the extent for the zoom arrows); each read made two lists of Python floats of every
    bucket (32 bytes a bucket with its list slot). Now a read copies the stored arrays (8 bytes a
    bucket) and makes floats only for the points drawn."""
    s = _full_series()
    one_list = 32 * (DEFAULT_LIMIT - 1)
    assert traced(lambda: s.downsample(106)) < one_list
    assert traced(lambda: s.downsample_means(106)) < one_list
    assert traced(lambda: render_chart([s], 53, 14, title="loss", options=ChartOptions(smooth=0.9))) < 2 * one_list
