"""Every metric a run's log carries, as the chart picker lists it and the charts draw it.

UI-free: a metric is a key into a snapshot's series (``Snapshot.series`` for the five chart
series, ``other_series`` for lr, epoch and the records' numeric extras, ``eval_series`` and
``eval_values`` for evaluations). The picker (``c`` on the run screen, ``c`` in a comparison)
lists them with how many points each has and its newest value; a chosen key draws the same
whatever screen shows it.

Keys: the record field names (``loss``, ``grad_norm``, ``mem_gib``, ``step_time_s``,
``tokens_per_s``, ``lr``, ``epoch``), an extra by the name the trainer printed
(``token_acc``, ``load_balancing_loss``), ``eval:loss`` for the evaluation loss and
``eval:<name>`` for any other number of the evaluations (``eval:eval_token_acc``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from moeconsole.console import format as fmt
from moeconsole.runner.core.series import Series
from moeconsole.runner.rundir.seriesfile import TIME_KEY

EVAL_PREFIX = "eval:"
EVAL_LOSS = "eval:loss"
DEFAULT_CHARTS = ("loss", "grad_norm", "mem_gib")
MAX_CHARTS = 8   # chosen at most; the run screen shows as many as its width holds

LABELS = {
    "loss": "loss", "grad_norm": "grad norm", "mem_gib": "memory (GiB)", "step_time_s": "step time (s)",
    "tokens_per_s": "tokens/s", "lr": "learning rate", "epoch": "epoch", EVAL_LOSS: "eval loss",
}
# Quantities whose axis starts at zero: their noise is not a sawtooth (0.26-0.28 GiB drawn
# from the floor to the ceiling of the chart), and a drop to zero is seen as one.
ZERO_BASED_KEYS = frozenset({"mem_gib", "tokens_per_s", "step_time_s"})
_ZERO_WORDS = ("mem", "memory", "gib", "mib", "(gb)", "(mb)")


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    points: int
    last: float | None
    group: str   # "train", "other" (lr, epoch, extras), "eval"

    def row(self) -> tuple[str, str, str]:
        """(label, points, last value) as the picker shows them."""
        return self.label, f"{self.points:,}", fmt.num(self.last)


def label(key: str) -> str:
    """The words a chart's title and the picker use for a metric key."""
    if key in LABELS:
        return LABELS[key]
    if key.startswith(EVAL_PREFIX):
        return f"eval {key[len(EVAL_PREFIX):]}"
    return key


def zero_based(key: str) -> bool:
    """Memory and throughput start at zero; everything else is drawn from its own minimum."""
    if key in ZERO_BASED_KEYS:
        return True
    low = key.lower()
    return any(w in low for w in _ZERO_WORDS) and "loss" not in low


def _is_eval_loss_name(name: str) -> bool:
    """An evaluation value that is the evaluation loss itself (``eval_loss``, ``val_loss``): it
    is listed once, as ``eval:loss``."""
    from moeconsole.runner.ingest.records import eval_key
    parts = eval_key(name)
    return (parts is not None and parts[1] == "loss") or name in ("loss", "lm loss value")


def series_of(snap: Any, key: str) -> Series | None:
    """The series of ``key`` in a snapshot (None: the run has no such metric)."""
    if key == EVAL_LOSS:
        s = snap.eval_series
        return s if s.n else None
    if key.startswith(EVAL_PREFIX):
        return snap.eval_values.get(key[len(EVAL_PREFIX):])
    if key in snap.series:
        return snap.series[key]
    return snap.other_series.get(key)


def catalogue(snap: Any) -> list[Metric]:
    """Every metric of the run with at least one point: the training series first (in the
    record's order), then lr, epoch and the extras (by name), then the evaluations."""
    out: list[Metric] = []

    def add(key: str, s: Series | None, group: str) -> None:
        if s is not None and s.n:
            out.append(Metric(key, label(key), s.n, s.last(), group))

    for key, s in snap.series.items():
        add(key, s, "train")
    other: Mapping[str, Series] = snap.other_series
    for key in ("lr", "epoch"):
        add(key, other.get(key), "other")
    for key in sorted(k for k in other if k not in ("lr", "epoch", TIME_KEY)):
        add(key, other[key], "other")
    add(EVAL_LOSS, snap.eval_series, "eval")
    for name in sorted(snap.eval_values):
        if not _is_eval_loss_name(name):
            add(EVAL_PREFIX + name, snap.eval_values[name], "eval")
    return out


def matches(metric: Metric, text: str) -> bool:
    """The picker's ``/`` filter: every word in the key or the label (case-insensitive)."""
    hay = f"{metric.key} {metric.label}".lower()
    return all(w in hay for w in text.lower().split())


def default_charts(snap: Any) -> list[str]:
    """What the run screen charts when nobody chose: loss, grad norm, memory, and the
    evaluation loss once the run has evaluations."""
    keys = list(DEFAULT_CHARTS)
    if snap is not None and snap.eval_series.n:
        keys.append(EVAL_LOSS)
    return keys


def clean_choice(keys: Iterable[Any]) -> list[str]:
    """A chart choice as saved: unique strings, at most MAX_CHARTS, order kept."""
    out: list[str] = []
    for k in keys:
        if isinstance(k, str) and k and k not in out and len(k) <= 80:
            out.append(k)
    return out[:MAX_CHARTS]


def by_time(s: Series, times: Series | None, t0: float | None) -> Series | None:
    """``s`` with each point placed at the seconds since ``t0`` its step was logged (the wall
    time of each step, ``other_series["t"]``, interpolated between its buckets); None without
    times (a log opened from elsewhere has none)."""
    if times is None or not times.n:
        return None
    tx, ty = times.points()
    pairs = [(x, y) for x, y in zip(tx, ty) if y - y == 0]
    if not pairs:
        return None
    tx, ty = [p[0] for p in pairs], [p[1] for p in pairs]
    start = t0 if t0 is not None else ty[0]
    from bisect import bisect_left
    out = Series(limit=None)
    xs, ys = s.points()
    for x, y in zip(xs, ys):
        i = bisect_left(tx, x)
        if i <= 0:
            t = ty[0]
        elif i >= len(tx):
            t = ty[-1]
        else:
            a, b = tx[i - 1], tx[i]
            t = ty[i - 1] + (ty[i] - ty[i - 1]) * ((x - a) / (b - a) if b > a else 0.0)
        out.append(max(0.0, t - start), y)
    return out
