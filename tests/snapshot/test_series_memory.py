"""The chart series' memory over a long run (issue 37): a series at its bound is halved in the
arrays it holds, and a chart's reads copy the stored arrays (8 bytes a bucket) instead of making
a Python float (and a list slot: 32 bytes) per bucket. What the charts draw is the same as the
halving that made new arrays and the reads that made lists drew (``CopyingSeries``)."""
from __future__ import annotations

import json
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
        n = self._len     # the stored buckets (the arrays beyond them are room: ``Series._room``)
        xs, ys, ms = self._x[:n], self._y[:n], self._m[:n]
        self._x = array("d", xs[0::2])
        self._y = array("d", [_bmax(a, b) for a, b in zip(ys[0::2], ys[1::2])])
        self._m = array("d", [_bmean(a, b) for a, b in zip(ms[0::2], ms[1::2])])
        if len(ys) % 2:
            self._y.append(ys[-1])
            self._m.append(ms[-1])
        self._len = len(self._x)
        self.stride *= 2

    def points(self) -> tuple[list[float], list[float]]:
        xs, ys = self._x.tolist(), self._y.tolist()
        n = self._len
        xs, ys = xs[:n], ys[:n]
        if self._pend_n:
            xs.append(self._pend_x)
            ys.append(self._pend_y)
        return xs, ys

    def means(self) -> tuple[list[float], list[float]]:
        xs, ms = self._x.tolist(), self._m.tolist()
        n = self._len
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
        assert a._len == b._len < limit and repr(a.to_doc()) == repr(b.to_doc())
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
    assert s.stride == 2 and s._len == DEFAULT_LIMIT // 2
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


def _homes(s: Series) -> list[tuple[int, int]]:
    """Where each of the series' arrays lives and how many buckets it has room for."""
    return [a.buffer_info() for a in (s._x, s._y, s._m)]


@pytest.mark.parametrize("feed", ["append", "extend", "extend_array", "from_doc"])
def test_a_bounded_series_makes_its_arrays_once_at_the_bound(feed):
    """Grown a bucket at a time, each of a series' arrays was moved by realloc dozens of times on
    its way to the bound, and every move left a hole in the C heap that the console's RSS kept
    (issue 37: the heap climbed over a run's first hours). The arrays are made at the bound with
    the first bucket and stay where they are through every halving, whichever way the points
    come (one at a time, lists, a history read's columns, a series.json); what is stored is
    what appending one point at a time stores."""
    import numpy as np
    limit = 256
    rnd = random.Random(7)
    values = [_value(rnd, i) for i in range(4 * limit + 5)]
    reference = Series(limit)
    for i, v in enumerate(values):
        reference.append(float(i), v)
    if feed == "from_doc":
        start = Series(limit)
        for i, v in enumerate(values[:limit // 3]):
            start.append(float(i), v)
        s = Series.from_doc(start.to_doc(), limit)
        first = limit // 3
    else:
        s = Series(limit)
        s.append(0.0, values[0])
        first = 1
    homes = _homes(s)
    assert [room for _, room in homes] == [limit] * 3
    i = first
    while i < len(values):
        k = 1 if feed in ("append", "from_doc") else rnd.choice([1, 5, 63, 64, 300])
        xs, ys = [float(j) for j in range(i, min(i + k, len(values)))], values[i:i + k]
        if feed == "extend_array":
            s.extend_array(np.array(xs), np.array(ys))
        elif k == 1:
            s.append(xs[0], ys[0])
        else:
            s.extend(xs, ys)
        assert _homes(s) == homes, f"an array moved at point {i} ({s.stride} points a bucket)"
        i += len(xs)
    assert s.stride == reference.stride >= 4
    assert json.dumps(s.to_doc()) == json.dumps(reference.to_doc())
    assert _drawn(s) == _drawn(reference)


def test_an_unbounded_series_keeps_every_point():
    """``limit=None`` (run comparison's exact statistics) still keeps every point as given."""
    s = Series(limit=None)
    for i in range(5000):
        s.append(float(i), float(i % 13))
    s.extend([float(i) for i in range(5000, 9000)], [1.5] * 4000)
    xs, ys = s.points()
    assert xs == [float(i) for i in range(9000)] and ys == [float(i % 13) for i in range(5000)] + [1.5] * 4000
    assert s.stride == 1 and json.loads(json.dumps(s.to_doc()))["x"] == xs
