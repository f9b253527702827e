"""Bounded numeric series for whole-run charts, in plain Python (no numpy on the console's path).

A run may log millions of steps, but a chart is a few hundred pixels wide. ``Series`` keeps at
most ``limit`` points: when full, neighbouring pairs merge into one bucket (first step, max value),
so memory, append and every read stay O(limit) whatever the run's length. Max, not mean: a spike
or a NaN is the thing a user must not miss, and it survives every merge. Beside the max, each
bucket keeps the mean of its finite values: what a smoothed line (``ema``) is drawn from, so a
spike survives in the raw line but does not drag the smoothed one. The newest raw values, the
exact last value and the finite extremes are kept beside the buckets.

``limit=None`` keeps every point (run comparison statistics need the exact values).
"""
from __future__ import annotations

import collections
import math
from array import array
from functools import reduce
from itertools import compress, islice
from operator import add
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Sequence

if TYPE_CHECKING:
    import numpy as np

DEFAULT_LIMIT = 2048
RECENT_KEEP = 64
# a shorter batch costs ``extend_array`` more in numpy calls than it saves (``extend`` takes it)
ARRAY_MIN = 64


def _bmean(a: float, b: float) -> float:
    """The mean of two bucket means of equal weight; a bucket without finite values (NaN) does
    not count."""
    if a - a != 0:
        return b
    if b - b != 0:
        return a
    return (a + b) / 2


def _bmax(a: float, b: float) -> float:
    """Max that keeps NaN (a NaN bucket must stay visible)."""
    if a != a or b != b:
        return math.nan
    return a if a >= b else b


class Series:
    """Step/value pairs, bucketed when longer than ``limit``; NaN marks a non-finite value."""

    def __init__(self, limit: int | None = DEFAULT_LIMIT) -> None:
        self.limit = None if limit is None else max(2, int(limit) & ~1)
        # the stored buckets are the first ``_len`` of each array; a bounded series' arrays are
        # made at the bound at its first bucket and never move (``_room``)
        self._x = array("d")
        self._y = array("d")
        self._m = array("d")     # the mean of each bucket's finite values (NaN: none)
        self._len = 0
        self.stride = 1          # raw points per stored bucket
        self._pend_x = 0.0       # the bucket being filled once stride > 1
        self._pend_y = 0.0
        self._pend_n = 0
        self._pend_s = 0.0       # sum and count of its finite values
        self._pend_c = 0
        self.n = 0               # points appended in all
        self.last_x: float | None = None
        self._last: float | None = None
        self._recent: collections.deque[float] = collections.deque(maxlen=RECENT_KEEP)
        self._min: tuple[float, float] | None = None  # (value, step) of the smallest finite value
        self._max: float | None = None

    def append(self, x: float, y: float | None) -> None:
        y = math.nan if y is None else float(y)
        x = float(x)
        self.n += 1
        self.last_x, self._last = x, y
        self._recent.append(y)
        if math.isfinite(y):
            if self._min is None or y < self._min[0]:
                self._min = (y, x)
            if self._max is None or y > self._max:
                self._max = y
        fin = y - y == 0
        if self.stride == 1:
            self._store(x, y, y if fin else math.nan)
        else:
            if self._pend_n == 0:
                self._pend_x, self._pend_y = x, y
                self._pend_s, self._pend_c = 0.0, 0
            else:
                self._pend_y = _bmax(self._pend_y, y)
            if fin:
                self._pend_s += y
                self._pend_c += 1
            self._pend_n += 1
            if self._pend_n < self.stride:
                return
            self._store(self._pend_x, self._pend_y, self._pend_s / self._pend_c if self._pend_c else math.nan)
            self._pend_n = 0
        if self.limit is not None and self._len >= self.limit:
            self._halve()

    def _room(self, more: int) -> None:
        """Room in the arrays for ``more`` buckets beyond the stored ones. A bounded series' arrays
        are made at their bound at once (8 bytes a bucket, 48 KB for the three arrays of a chart
        series) and never grow again: grown one bucket at a time, each array was moved by
        ``realloc`` dozens of times on its way to the bound, and every move left a hole in the
        C heap that the console's RSS kept (issue 37). Unbounded series double."""
        need = self._len + more
        have = len(self._x)
        if need <= have:
            return
        size = max(need, self.limit or 0, 2 * have)
        if not have:   # made at their size (``extend`` would give each a sixteenth more)
            self._x, self._y, self._m = (array("d", [0.0]) * size for _ in range(3))
            return
        pad = array("d", [0.0]) * (size - have)
        for a in (self._x, self._y, self._m):
            a.extend(pad)

    def _store(self, x: float, y: float, m: float) -> None:
        """One bucket after the stored ones; counted once its three values are in (a reader on
        the drawing thread reads the first ``_len``)."""
        i = self._len
        if i == len(self._x):
            self._room(1)
        self._x[i], self._y[i], self._m[i] = x, y, m
        self._len = i + 1

    def _store_many(self, xs: Sequence[float] | bytes, ys: Sequence[float] | bytes,
                    ms: Sequence[float] | bytes) -> None:
        """``_store`` of a run of buckets: lists of floats or the bytes of float64 arrays."""
        k = len(xs) // 8 if isinstance(xs, bytes) else len(xs)
        if not k:
            return
        i = self._len
        self._room(k)
        for a, vs in ((self._x, xs), (self._y, ys), (self._m, ms)):
            if isinstance(vs, bytes):   # copied in place, no array made on the way
                with memoryview(a) as view:
                    view[i:i + k] = memoryview(vs).cast("d")
            else:
                a[i:i + k] = vs if isinstance(vs, array) else array("d", vs)
        self._len = i + k

    def extend(self, xs: Sequence[float], ys: Sequence[float]) -> None:
        """``append`` of many points (NaN for missing values), with the same result: whole
        buckets are reduced by the C ``max`` instead of one call per point."""
        n = len(xs)
        if not n:
            return
        xs = [float(x) for x in xs] if type(xs) is not list or type(xs[0]) is not float else xs
        ys = ys if type(ys) is list else list(ys)
        self.n += n
        self.last_x, self._last = xs[-1], ys[-1]
        self._recent.extend(ys[-RECENT_KEEP:])
        total = sum(ys)
        all_finite = total - total == 0  # a NaN or an inf makes the sum NaN or inf
        if all_finite:
            low = min(ys)
            self._note_range(low, max(ys), lambda: xs[ys.index(low)])
        else:
            finite = [y for y in ys if y - y == 0]  # y - y is NaN for NaN and inf
            if finite:
                low = min(finite)   # ``ys.index``: the first, as no NaN equals ``low``
                self._note_range(low, max(finite), lambda: xs[ys.index(low)])
        i = 0
        while i < n:
            if self.stride == 1:
                take = n - i if self.limit is None else min(n - i, self.limit - self._len)
                part = ys[i:i + take]
                self._store_many(xs[i:i + take], part,
                                 part if all_finite else [v if v - v == 0 else math.nan for v in part])
                i += take
            else:
                i += self._fill(xs[i], ys[i:i + self.stride - self._pend_n], all_finite)
                if self._pend_n:
                    continue
            if self.limit is not None and self._len >= self.limit:
                self._halve()

    def _note_range(self, low: float, high: float, step_of_low: Callable[[], float]) -> None:
        """A batch's smallest and largest finite values into the series' extremes (``extend``,
        ``extend_array``); ``step_of_low()``, the step of ``low``'s first point in the batch (as
        ``append`` keeps the first of equal minima: a log whose steps start again after a restart
        has its tied minimum at the step it met first, not at the smallest step), is only asked
        when ``low`` is the new minimum."""
        if self._min is None or low < self._min[0]:
            self._min = (low, step_of_low())
        if self._max is None or high > self._max:
            self._max = high

    def _fill(self, x0: float, chunk: list[float], all_finite: bool) -> int:
        """At most the rest of the bucket being filled (stride > 1), ``x0`` the step of the
        chunk's first value; the bucket is stored when full. Returns the values taken."""
        top = max(chunk) if all_finite or not any(v != v for v in chunk) else math.nan
        if self._pend_n == 0:
            self._pend_x, self._pend_y = x0, top
            self._pend_s, self._pend_c = 0.0, 0
        else:
            self._pend_y = _bmax(self._pend_y, top)
        acc, cnt = self._pend_s, self._pend_c
        if all_finite:   # one value at a time, as ``append`` adds them (same rounding), in C
            acc = reduce(add, chunk, acc)
            cnt += len(chunk)
        else:
            for v in chunk:
                if v - v == 0:
                    acc += v
                    cnt += 1
        self._pend_s, self._pend_c = acc, cnt
        self._pend_n += len(chunk)
        if self._pend_n >= self.stride:
            self._store(self._pend_x, self._pend_y, self._pend_s / self._pend_c if self._pend_c else math.nan)
            self._pend_n = 0
        return len(chunk)

    def extend_array(self, xs: "np.ndarray", ys: "np.ndarray") -> None:
        """``extend`` of float64 columns (a history read's batches), with the same result: the
        same buckets, each bucket's max and its finite values summed one at a time in the same
        order (``np.add.accumulate`` is a sequential sum), so the same rounding. The batch's whole
        buckets are reduced as the rows of a (buckets, stride) array, a few numpy passes for all
        of them instead of a Python slice, ``max`` and ``reduce`` per bucket; the bucket being
        filled and the batch's tail go through ``extend``'s own steps. A batch holding a
        negative zero goes through ``extend``: numpy and Python order 0.0 and -0.0 differently
        in a max or a min, and a sum started at 0.0 drops a first -0.0's sign."""
        import numpy as np
        n = len(ys)
        if n < ARRAY_MIN or np.signbit(ys[ys == 0]).any() or np.signbit(xs[xs == 0]).any():
            self.extend(xs.tolist(), ys.tolist())
            return
        xs = np.asarray(xs, dtype=np.float64)
        ys = np.asarray(ys, dtype=np.float64)
        self.n += n
        self.last_x, self._last = float(xs[-1]), float(ys[-1])
        self._recent.extend(ys[-RECENT_KEEP:].tolist())
        fin = np.isfinite(ys)
        all_finite = bool(fin.all())
        if all_finite or fin.any():
            vals = ys if all_finite else ys[fin]
            low = float(vals.min())
            self._note_range(low, float(vals.max()), lambda: float(xs[int(np.argmax(ys == low))]))
        i = 0
        while i < n:
            if self.stride == 1:
                take = n - i if self.limit is None else min(n - i, self.limit - self._len)
                part = ys[i:i + take]
                self._store_many(xs[i:i + take].tobytes(), part.tobytes(),
                                 (part if all_finite else np.where(fin[i:i + take], part, np.nan)).tobytes())
                i += take
            else:
                stride = self.stride
                whole = (n - i) // stride
                if self.limit is not None:
                    whole = min(whole, self.limit - self._len)
                if self._pend_n or whole <= 0:
                    take = min(stride - self._pend_n, n - i)
                    i += self._fill(float(xs[i]), ys[i:i + take].tolist(), all_finite)
                    if self._pend_n:
                        continue
                else:
                    end = i + whole * stride
                    block = ys[i:end].reshape(whole, stride)
                    ok = fin[i:end].reshape(whole, stride)
                    with np.errstate(over="ignore", invalid="ignore"):   # as Python's float sums
                        sums = np.add.accumulate(block if all_finite else np.where(ok, block, 0.0), axis=1)[:, -1]
                    counts = ok.sum(axis=1)
                    means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
                    firsts, tops = xs[i:end:stride], block.max(axis=1)
                    self._store_many(firsts.tobytes(), tops.tobytes(), means.tobytes())
                    # the last bucket stays in the fields it was filled in, as ``_fill`` leaves them
                    self._pend_x, self._pend_y = float(firsts[-1]), float(tops[-1])
                    self._pend_s, self._pend_c = float(sums[-1]), int(counts[-1])
                    i = end
            if self.limit is not None and self._len >= self.limit:
                self._halve()

    def _halve(self) -> None:
        """Neighbouring pairs of buckets merged into one (first step, max, mean of means), in the
        arrays the series already holds: the new halves are made as arrays (8 bytes a bucket,
        no Python float kept per bucket, the old values read in place) and copied over the old arrays' first halves, which are
        then cut (``_halve_keeps_the_arrays``). Making three new arrays beside the old ones (as
        this did before) held both copies at once, at every series' bound."""
        xs, ys, ms = self._x, self._y, self._m
        n = self._len
        half = (n + 1) // 2
        top = array("d", map(_bmax, islice(ys, 0, n, 2), islice(ys, 1, n, 2)))
        mean = array("d", map(_bmean, islice(ms, 0, n, 2), islice(ms, 1, n, 2)))
        if n % 2:
            top.append(ys[n - 1])
            mean.append(ms[n - 1])
        # one C call each from here, none resizing an array (``_room``): a reader on the
        # drawing thread sees each array whole
        xs[:half] = xs[0:2 * half:2]
        ys[:half] = top
        ms[:half] = mean
        self._len = half
        self.stride *= 2

    def _stored(self, values: array, pending: float) -> tuple[array, array]:
        """The stored buckets' steps and ``values`` (``_y`` or ``_m``) with the bucket being
        filled (``pending``: its value), as arrays: a chart's read copies 8 bytes a bucket and
        makes no Python float per bucket (a float and a list slot are 32 bytes, and the four
        charts read every series several times a refresh). Steps and values of equal length:
        a reader on another thread (the console draws while its poll thread feeds the series)
        may catch an append between its step and its value."""
        n = self._len
        xs, vs = self._x[:n], values[:n]
        if self._pend_n:
            xs.append(self._pend_x)
            vs.append(pending)
        return xs, vs

    def _pending_mean(self) -> float:
        return self._pend_s / self._pend_c if self._pend_c else math.nan

    def points(self) -> tuple[list[float], list[float]]:
        """Every stored bucket plus the one being filled (so the newest step is always drawn)."""
        xs, ys = self._stored(self._y, self._pend_y)
        return xs.tolist(), ys.tolist()

    def means(self) -> tuple[list[float], list[float]]:
        """``points`` with each bucket's mean of finite values instead of its max (NaN: the
        bucket held no finite value)."""
        xs, ms = self._stored(self._m, self._pending_mean())
        return xs.tolist(), ms.tolist()

    def step_span(self) -> tuple[float, float] | None:
        """The first and the last stored step (the bucket being filled included); None when
        empty. What a chart's zoom and its arrows need, without reading every bucket."""
        n = self._len
        if not n and not self._pend_n:
            return None
        first = self._x[0] if n else self._pend_x
        return first, (self._pend_x if self._pend_n else self._x[n - 1])

    @property
    def x(self) -> list[float]:
        return self.points()[0]

    @property
    def y(self) -> list[float]:
        return self.points()[1]

    def last(self) -> float | None:
        return self._last

    def recent(self, k: int) -> list[float]:
        """The newest ``k`` raw values (k <= RECENT_KEEP), oldest first."""
        return list(self._recent)[-k:] if k > 0 else []

    def finite_min(self) -> tuple[float, float] | None:
        """(value, step) of the smallest finite value ever appended."""
        return self._min

    def finite_max(self) -> float | None:
        return self._max

    def downsample(self, points: int, lo: float | None = None, hi: float | None = None) -> tuple[list[float], list[float]]:
        """At most ``points`` (x, y) pairs: equal buckets over the stored ones, each keeping its
        first step and its max value (NaN wins). ``lo``/``hi``: only the buckets whose step lies
        in that range (a zoomed chart)."""
        xs, ys = self._stored(self._y, self._pend_y)
        if lo is not None or hi is not None:
            return _lists(reduce_max(*in_range(xs, ys, lo, hi), points))
        return _lists(reduce_max(xs, ys, points))

    def downsample_means(self, points: int, lo: float | None = None, hi: float | None = None
                         ) -> tuple[list[float], list[float]]:
        """``downsample`` of the bucket means (what a smoothed line is drawn from)."""
        xs, ms = self._stored(self._m, self._pending_mean())
        if lo is not None or hi is not None:
            return _lists(reduce_mean(*in_range(xs, ms, lo, hi), points))
        return _lists(reduce_mean(xs, ms, points))

    def downsample_ema(self, weight: float, points: int, lo: float | None = None, hi: float | None = None
                       ) -> tuple[list[float], list[float]]:
        """The ``ema`` of the bucket means over the whole run, cut to ``lo``..``hi`` and reduced
        to ``points`` (the smoothed line of a chart), the average kept in an array."""
        xs, ms = self._stored(self._m, self._pending_mean())
        ys = array("d", _ema_values(ms, weight))
        if lo is not None or hi is not None:
            return _lists(reduce_mean(*in_range(xs, ys, lo, hi), points))
        return _lists(reduce_mean(xs, ys, points))

    # ---- a compact, JSON-friendly form (series.json) ------------------------------------
    def to_doc(self) -> dict:
        n = self._len
        xs, ys = self._x[:n].tolist(), self._y[:n].tolist()
        return {"stride": self.stride, "n": self.n, "x": xs, "y": [_json_num(v) for v in ys],
                "m": [_json_num(v) for v in self._m[:n].tolist()],
                "pend": [self._pend_x, _json_num(self._pend_y), self._pend_n, self._pend_s, self._pend_c],
                "last": [self.last_x, _json_num(self._last) if self._last is not None else None],
                "recent": [_json_num(v) for v in self._recent],
                "min": list(self._min) if self._min else None, "max": self._max}

    @classmethod
    def from_doc(cls, doc: dict, limit: int | None = DEFAULT_LIMIT) -> "Series":
        """The inverse of ``to_doc``; raises ValueError/TypeError/KeyError on a malformed doc."""
        s = cls(limit)
        xs = [float(v) for v in doc["x"]]
        ys = [_json_float(v) for v in doc["y"]]
        if len(xs) != len(ys):
            raise ValueError("x and y differ in length")
        # a doc written before bucket means were kept: the max stands in for the mean
        ms = [_json_float(v) for v in doc["m"]] if "m" in doc else [v if v - v == 0 else math.nan for v in ys]
        if len(ms) != len(ys):
            raise ValueError("m and y differ in length")
        s._store_many(xs, ys, ms)
        s.stride = max(1, int(doc["stride"]))
        s.n = int(doc["n"])
        pend = doc["pend"]
        px, py, pn = pend[:3]
        s._pend_x, s._pend_y, s._pend_n = float(px), _json_float(py), int(pn)
        if len(pend) >= 5:
            s._pend_s, s._pend_c = float(pend[3]), int(pend[4])
        elif s._pend_n and s._pend_y - s._pend_y == 0:
            s._pend_s, s._pend_c = s._pend_y, 1
        lx, lv = doc["last"]
        s.last_x = None if lx is None else float(lx)
        s._last = None if lv is None else _json_float(lv)
        s._recent.extend(_json_float(v) for v in doc["recent"])
        s._min = (float(doc["min"][0]), float(doc["min"][1])) if doc.get("min") else None
        s._max = None if doc.get("max") is None else float(doc["max"])
        while s.limit is not None and s._len >= s.limit:
            s._halve()
        return s


def _json_num(v: float) -> float | str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def _json_float(v) -> float:
    return float(v)  # float("nan") / float("inf") read the string forms back


def to_pairs(x: Iterable[float], y: Iterable[float]) -> list[list]:
    """JSON-friendly [[step, value], ...]; non-finite as strings like the metrics schema."""
    return [[int(a), _json_num(b)] for a, b in zip(x, y)]


def in_range(xs: Sequence[float], ys: Sequence[float], lo: float | None, hi: float | None
             ) -> tuple[list[float], list[float]]:
    """The points whose step lies in [lo, hi] (either end open when None)."""
    a = -math.inf if lo is None else lo
    b = math.inf if hi is None else hi
    keep = [a <= x <= b for x in xs]
    return list(compress(xs, keep)), list(compress(ys, keep))


def _lists(pairs: tuple[Sequence[float], Sequence[float]]) -> tuple[list[float], list[float]]:
    """``reduce_max``/``reduce_mean``'s answer as lists (they hand short arrays back as given)."""
    xs, ys = pairs
    return (xs if type(xs) is list else list(xs)), (ys if type(ys) is list else list(ys))


def _runs(m: int, points: int) -> Iterator[tuple[int, int]]:
    """``points`` runs of neighbours covering ``m`` values as evenly as integers allow: (lo, hi)."""
    for b in range(points):
        yield b * m // points, (b + 1) * m // points


def reduce_max(xs: Sequence[float], ys: Sequence[float], points: int) -> tuple[Sequence[float], Sequence[float]]:
    """At most ``points`` pairs: equal runs of neighbours, each its first step and its max (NaN
    wins: a non-finite value is never hidden by its neighbours)."""
    if len(xs) <= points or points <= 0:
        return xs, ys
    ox, oy = [], []
    for lo, hi in _runs(len(xs), points):
        v = ys[lo]
        for w in ys[lo + 1:hi]:
            if v != v:
                break
            v = _bmax(v, w)
        ox.append(xs[lo])
        oy.append(v)
    return ox, oy


def reduce_mean(xs: Sequence[float], ys: Sequence[float], points: int) -> tuple[Sequence[float], Sequence[float]]:
    """``reduce_max`` with the mean of the finite values of each run (NaN: none)."""
    if len(xs) <= points or points <= 0:
        return xs, ys
    ox, oy = [], []
    for lo, hi in _runs(len(xs), points):
        fin = [v for v in ys[lo:hi] if v - v == 0]
        ox.append(xs[lo])
        oy.append(math.fsum(fin) / len(fin) if fin else math.nan)
    return ox, oy


def ema(ys: Sequence[float], weight: float) -> list[float]:
    """The exponential moving average TensorBoard's smoothing slider draws: each value is
    ``weight`` of the previous average plus ``1 - weight`` of itself, debiased at the start
    (so the first value is itself, not a fraction of it). A non-finite value is skipped: it
    stays non-finite in the output and does not enter the average. ``weight`` 0 is the data."""
    return list(_ema_values(ys, weight))


def _ema_values(ys: Iterable[float], weight: float) -> Iterator[float]:
    """``ema``, one value at a time (``Series.downsample_ema`` keeps them in an array)."""
    weight = min(max(float(weight), 0.0), 0.9999)
    last, k = 0.0, 0
    for v in ys:
        if v - v != 0:
            yield v
            continue
        last = last * weight + (1 - weight) * v
        k += 1
        yield last / (1 - weight ** k) if weight else last
