"""Divergence monitors: pure rules over the stream of metric records.

Every rule works on numpy arrays of one batch of records and carries its state to the next
batch, so the same code serves a live run (a batch of one record) and a million-step log (big
batches): results do not depend on how the stream is cut into batches (tests check this bit
for bit). Each alert is a dict::

    {"level": "warning"|"critical", "rule": ..., "step": int|None, "message": str, "values": {...}}

Rules (thresholds in ``Thresholds``; docs/monitors.md explains each):

- ``non_finite``: loss or grad norm is NaN/inf (critical; once per run of such steps).
- ``grad_norm_spike``: grad norm against the EMA *from before* the step (alpha 0.01), warning
  above 10x, critical above 100x. A grad norm of exactly 0 (no gradient) is left out. The EMA starts
  at the median of the attempt's first ``grad_warmup`` grad norms (the warm-up, in which nothing
  fires), never at the first alone: a near-zero first gradient (a student that starts at its
  teacher, a LoRA B = 0 start) would make every normal one after it a "spike" for hundreds of steps.
  Comparing with the old EMA is what keeps critical reachable:
  an EMA that already includes a spike g is at least alpha*g, capping the ratio at 1/alpha.
- ``loss_spike``: mean of the last few losses above 2x the mean of the window before them.
- ``throughput_drop``: tokens/s (or, without tokens/s, the step time) much worse than the
  median of the recent window.
- ``step_time_unstable``: coefficient of variation of the step time over the recent window.

Memory (headroom against each GPU's capacity, a growing envelope and its OOM forecast) is not a
rule here: ``moeconsole.runner.core.memory`` owns it, per GPU, with NVML beside the log.
- ``checkpoint_in_excursion``: a checkpoint saved while a grad-norm excursion (or a non-finite
  loss/grad norm) is active; reported by ``Monitors.on_checkpoint``.

Held time (``moeconsole.runner.core.held``): a live runner passes the attempt's held intervals
(stopped, frozen, its batch job suspended) and the time the batch was read. The speed rules
(``throughput_drop``, ``step_time_unstable``) then leave out the record of each speed field that
spans a hold (its value carries the held seconds), and when that record shows the step times are
the trainer's own average since it started (ms-swift's ``train_speed(s/it)``), read every later
average as the time of the steps since the one before (``_HeldExcuse``). A real slowdown after the hold still
alerts. A log read without a runner has no held intervals: nothing is excused.

A restart (the step goes back) or ``reset()`` starts every window afresh, so resuming from an
older checkpoint never compares the new attempt with the old one. Records that repeat the
step of the previous record of the same field (two ranks printing the same line) are skipped.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any, Iterable

import numpy as np

from moeconsole.runner.core.columns import COLUMN_FIELDS, records_to_columns
from moeconsole.runner.core import bounds, schema
from moeconsole.runner.core.held import HeldSpans
from moeconsole.runner.core.numbers import median

WARNING, CRITICAL = "warning", "critical"

RULE_ORDER = ("non_finite", "grad_norm_spike", "loss_spike", "throughput_drop",
              "step_time_unstable", "checkpoint_in_excursion")
MONITORED_FIELDS = COLUMN_FIELDS  # the monitors read every column

_EMA_BLOCK = 1024  # EMA is evaluated in blocks: weights (1-a)^-k stay below ~3e4 for a=0.01


# alerts: keys of older recipes whose job moeconsole.runner.core.memory took over (recipe ``memory:``).
MOVED_TO_MEMORY = {
    "mem_capacity_gib": "gpus.memory_capacity_gib",
    "mem_headroom_warn_gib": "memory.min_headroom", "mem_headroom_crit_gib": "memory.min_headroom",
    "mem_warmup": "memory.warmup_steps", "mem_growth_gib": "the memory forecast (memory.horizon_steps)",
    "mem_growth_frac": "the memory forecast (memory.horizon_steps)",
}


_THRESHOLD = bounds.Range(0.0, 1e12, unit="threshold")
Threshold = Annotated[float, schema.within(_THRESHOLD)]
_FRACTION = bounds.Range(0.0, 0.999, lo_open=True, unit="fraction")  # 1 would divide by 0 in the EMA


class Thresholds(schema.Section, frozen=True):
    """Alert thresholds. Defaults follow the design; a recipe's ``alerts:`` section overrides.
    Factors and fractions are finite numbers >= 0, windows and warm-ups whole numbers."""
    ema_alpha: Annotated[float, schema.within(_FRACTION)] = 0.01
    grad_warn_x: Threshold = 10.0
    grad_crit_x: Threshold = 100.0
    grad_warmup: schema.Count = 5           # grad norms seen (per attempt) before the spike rule may fire; their median seeds the EMA
    loss_spike_x: Threshold = 2.0
    loss_smooth: schema.PositiveCount = 10  # the smoothed loss is the mean of this many last losses
    loss_window: schema.PositiveCount = 100  # ... compared with the mean of up to this many before them
    loss_min_history: schema.Count = 20
    throughput_drop_frac: Annotated[float, schema.within(_FRACTION)] = 0.5  # tokens/s below this fraction of the recent median
    throughput_window: schema.PositiveCount = 50
    throughput_min_history: schema.Count = 10
    step_time_cv_max: Threshold = 0.3
    step_time_window: schema.PositiveCount = 50
    reward_flat_steps: schema.PositiveCount = 5  # GRPO: steps of every group's rewards equal before a warning (core.reward_watch)

    def __post_init__(self) -> None:
        if self.grad_crit_x < self.grad_warn_x:
            raise ValueError(f"grad_crit_x: must not be below grad_warn_x ({self.grad_crit_x:g} < {self.grad_warn_x:g})")

    @classmethod
    def from_recipe(cls, alerts: Any) -> "Thresholds":
        """Thresholds from a recipe's ``alerts:`` mapping; SettingsError naming the key. The
        memory keys of older recipes (``MOVED_TO_MEMORY``) are still accepted and ignored (lint
        says where they went), so old run directories load."""
        return schema.convert(current_alerts(alerts), cls, "alerts")


def current_alerts(alerts: Any) -> Any:
    """An ``alerts:`` section without the keys that moved to ``memory:`` (None: empty)."""
    if alerts is None:
        return {}
    return {k: v for k, v in alerts.items() if k not in MOVED_TO_MEMORY} if isinstance(alerts, dict) else alerts


# ----------------------------------------------------------------------------- helpers

def fmt_num(x: float | None) -> str:
    """A number for a one-line message: 4 significant digits, nan/inf spelled out."""
    if x is None:
        return "-"
    if not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if x != 0 and (abs(x) >= 1e6 or abs(x) < 1e-3):
        return f"{x:.3e}"
    return f"{x:.4g}"


def _excursions(levels: np.ndarray, prev_max: int) -> tuple[list[tuple[int, int]], int]:
    """Where an alert fires in a series of levels (0 none, 1 warning, 2 critical): on entering
    an excursion (a run of non-zero levels) and when it escalates to critical. Returns
    [(position, level)] and the max level of the excursion still open at the end."""
    fired: list[tuple[int, int]] = []
    cur = prev_max
    nz = np.flatnonzero(levels)
    last = -2 if prev_max == 0 else -1   # position -1 means "just before this batch"
    for pos in nz.tolist():
        lvl = int(levels[pos])
        if pos != last + 1:
            cur = 0
        if lvl > cur:
            fired.append((pos, lvl))
            cur = lvl
        last = pos
    if len(levels) and (len(nz) == 0 or nz[-1] != len(levels) - 1):
        cur = 0
    return fired, cur


def _entries(flags: np.ndarray, prev: bool) -> np.ndarray:
    """Positions where a run of True starts (the rule starts firing)."""
    if not len(flags):
        return np.empty(0, dtype=np.int64)
    before = np.concatenate(([prev], flags[:-1]))
    return np.flatnonzero(flags & ~before)


def _cumsum_from(last: float | None, x: np.ndarray) -> np.ndarray:
    """Sequential running sum continuing from ``last``: identical to one cumsum over the
    whole series, whatever the batch boundaries."""
    if last is None:
        return np.cumsum(x)
    return np.cumsum(np.concatenate(([last], x)))[1:]


def _prev_window_extreme(full: np.ndarray, start: int, window: int, use_max: bool) -> np.ndarray:
    """For each position p >= start of ``full``: max (or min) of full[max(0,p-window):p].

    Van Herk/Gil-Werman: block-wise prefix and suffix extremes, O(n) whatever the window."""
    n = len(full)
    if n <= start:
        return np.empty(0)
    acc = np.maximum.accumulate if use_max else np.minimum.accumulate
    pick = np.maximum if use_max else np.minimum
    w = window
    # window of p is padded[p : p+w] with w neutral values in front
    padded = np.concatenate((np.full(w, -np.inf if use_max else np.inf), full))
    nb = -(-len(padded) // w)
    blocks = np.concatenate((padded, np.full(nb * w - len(padded), -np.inf if use_max else np.inf))).reshape(nb, w)
    prefix = acc(blocks, axis=1).ravel()
    suffix = acc(blocks[:, ::-1], axis=1)[:, ::-1].ravel()
    q = np.arange(start, n)
    return pick(suffix[q], prefix[q + w - 1])


def _alert(level: str, rule: str, step: int | None, message: str, values: dict) -> dict:
    return {"level": level, "rule": rule, "step": step, "message": message, "values": values}


# ----------------------------------------------------------------------------- rules

class _NonFinite:
    def __init__(self, name: str):
        self.name = name
        self.active = False
        self.before = False
        self.flags = np.zeros(0, dtype=bool)

    def process(self, steps: np.ndarray, x: np.ndarray) -> list[tuple[int, dict]]:
        nf = ~np.isfinite(x)
        self.before, self.flags = self.active, nf
        out = []
        for pos in _entries(nf, self.active).tolist():
            v = float(x[pos])
            out.append((pos, _alert(CRITICAL, "non_finite", int(steps[pos]),
                                    f"{self.name} is {fmt_num(v)} at step {int(steps[pos])}",
                                    {self.name: v})))
        if len(nf):
            self.active = bool(nf[-1])
        return out


class _GradSpike:
    """EMA of finite grad norms; each value is compared with the EMA before it.

    The EMA is computed in closed form per block of _EMA_BLOCK values,
    ema_k = D^(k+1) E + a D^k C_k with D = 1-a, E the EMA before the block and
    C_k = sum_{j<=k} g_j D^-j, so a million values cost a few numpy passes and the result
    is the same for any batching."""

    def __init__(self, t: Thresholds):
        self.t = t
        a = t.ema_alpha
        d = 1.0 - a
        ks = np.arange(_EMA_BLOCK + 1, dtype=np.float64)
        self.dpow = np.power(d, ks)                  # D^k, k = 0..B
        self.adpow = a * self.dpow                   # a D^k
        self.dinv = np.power(d, -ks[:_EMA_BLOCK])    # D^-k, k = 0..B-1
        self.n = 0            # finite values seen this attempt
        self.block_e = 0.0    # EMA before the current block
        self.block_c: float | None = None  # running C of the current block
        self.block_o = 0      # values already in the current block
        self.ema: float | None = None
        self.warm: list[float] = []   # the warm-up's grad norms, until they seed the EMA
        self.exc = 0          # level of the open excursion (0 none)
        self.last: dict = {}
        self.levels = np.zeros(0, dtype=np.int8)   # per value of the last batch
        self.ratio = self.prev = self.g = np.zeros(0)
        self.before: tuple[int, dict] = (0, {})

    def _emas(self, g: np.ndarray) -> np.ndarray:
        """EMA after each value of g: NaN through the warm-up, whose median then seeds it (the
        ``grad_warmup`` first values of the attempt; the first alone when the warm-up is 0)."""
        out = np.empty(len(g))
        i = 0
        if self.ema is None and len(g):
            need = max(1, self.t.grad_warmup)
            i = min(need - len(self.warm), len(g))
            self.warm.extend(g[:i].tolist())
            out[:i] = np.nan
            if len(self.warm) == need:
                out[i - 1] = self.ema = self.block_e = float(np.median(self.warm))
                self.block_c, self.block_o = None, 0
        B = _EMA_BLOCK
        while i < len(g):
            o = self.block_o
            take = min(B - o, len(g) - i)
            if o == 0 and take == B:
                # whole blocks at once: C per row, then E from block to block
                nb = (len(g) - i) // B
                rows = g[i:i + nb * B].reshape(nb, B) * self.dinv
                cm = np.cumsum(rows, axis=1)
                es = np.empty(nb)
                e = self.block_e
                for b in range(nb):
                    es[b] = e
                    e = float(self.dpow[B] * e + self.adpow[B - 1] * cm[b, B - 1])
                emas = self.dpow[1:][None, :] * es[:, None] + self.adpow[:B][None, :] * cm
                out[i:i + nb * B] = emas.ravel()
                self.block_e = e
                self.block_c, self.block_o = None, 0
                i += nb * B
                continue
            seg = g[i:i + take] * self.dinv[o:o + take]
            c = _cumsum_from(self.block_c, seg)
            emas = self.dpow[o + 1:o + take + 1] * self.block_e + self.adpow[o:o + take] * c
            out[i:i + take] = emas
            if o + take == B:
                self.block_e = float(emas[-1])
                self.block_c, self.block_o = None, 0
            else:
                self.block_c, self.block_o = float(c[-1]), o + take
            i += take
        return out

    def process(self, steps: np.ndarray, g: np.ndarray) -> list[tuple[int, dict]]:
        self.before = (self.exc, self.last)
        if not len(g):
            self.levels, self.ratio, self.prev, self.g = np.zeros(0, dtype=np.int8), g, g, g
            return []
        ema_before = self.ema
        first_n = self.n
        emas = self._emas(g)
        prev = np.concatenate(([np.nan if ema_before is None else ema_before], emas[:-1]))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(prev > 0, g / prev, np.nan)
        levels = np.zeros(len(g), dtype=np.int8)
        levels[ratio > self.t.grad_warn_x] = 1
        levels[ratio > self.t.grad_crit_x] = 2
        warm = self.t.grad_warmup - first_n
        if warm > 0:
            levels[:warm] = 0
        fired, self.exc = _excursions(levels, self.exc)
        self.n = first_n + len(g)
        if self.ema is not None:          # None: still in the warm-up
            self.ema = float(emas[-1])
        self.levels, self.ratio, self.prev, self.g = levels, ratio, prev, g
        self.last = self.values_at(len(g) - 1)
        out = []
        for pos, lvl in fired:
            r, gv, ev = float(ratio[pos]), float(g[pos]), float(prev[pos])
            limit = self.t.grad_crit_x if lvl == 2 else self.t.grad_warn_x
            out.append((pos, _alert(CRITICAL if lvl == 2 else WARNING, "grad_norm_spike", int(steps[pos]),
                                    f"grad norm {fmt_num(gv)} is {fmt_num(r)}x its EMA {fmt_num(ev)} "
                                    f"(limit {fmt_num(limit)}x) at step {int(steps[pos])}",
                                    {"grad_norm": gv, "ema": ev, "ratio": r})))
        return out

    def values_at(self, pos: int) -> dict:
        return {"grad_norm": float(self.g[pos]), "ema": float(self.prev[pos]), "ratio": float(self.ratio[pos])}


class _LossSpike:
    def __init__(self, t: Thresholds):
        self.t = t
        self.n = 0
        self.cs_tail = np.empty(0)
        self.active = False

    def process(self, steps: np.ndarray, x: np.ndarray) -> list[tuple[int, dict]]:
        if not len(x):
            return []
        s, w, t = self.t.loss_smooth, self.t.loss_window, self.t
        last = float(self.cs_tail[-1]) if len(self.cs_tail) else None
        cs_new = _cumsum_from(last, x)
        cs = np.concatenate((self.cs_tail, cs_new))
        base = self.n - len(self.cs_tail)            # absolute index of cs[0]
        i = np.arange(self.n, self.n + len(x))        # absolute indices of the new values

        cz = np.concatenate(([0.0], cs))             # cz[1 + j - base] = cumsum at absolute j

        def at(abs_idx: np.ndarray) -> np.ndarray:    # (garbage where not eligible, masked later)
            return cz[np.maximum(abs_idx - base + 1, 0)]

        n_before = i - s + 1                           # values before the smoothing window
        count_b = np.minimum(w, n_before)
        eligible = n_before >= max(t.loss_min_history, 1)
        smoothed = (at(i) - at(i - s)) / s
        with np.errstate(divide="ignore", invalid="ignore"):
            baseline = (at(i - s) - at(i - s - count_b)) / np.maximum(count_b, 1)
        alert = eligible & (baseline > 0) & (smoothed > t.loss_spike_x * baseline)
        out = []
        for pos in _entries(alert, self.active).tolist():
            sm, bl = float(smoothed[pos]), float(baseline[pos])
            out.append((pos, _alert(WARNING, "loss_spike", int(steps[pos]),
                                    f"smoothed loss {fmt_num(sm)} is {fmt_num(sm / bl)}x its recent average "
                                    f"{fmt_num(bl)} at step {int(steps[pos])}",
                                    {"loss": float(x[pos]), "smoothed": sm, "average": bl})))
        self.active = bool(alert[-1])
        self.n += len(x)
        self.cs_tail = cs[-(s + w + 1):]
        return out


class _RollingMedianDrop:
    """A value much worse than the median of the window before it: ``low`` mode for rates
    (value < frac * median), ``high`` mode for durations (frac * value > median)."""

    def __init__(self, t: Thresholds, name: str, high: bool):
        self.t = t
        self.name = name
        self.high = high
        self.tail = np.empty(0)
        self.n = 0
        self.active = False

    def process(self, steps: np.ndarray, x: np.ndarray) -> list[tuple[int, dict]]:
        if not len(x):
            return []
        W, frac = self.t.throughput_window, self.t.throughput_drop_frac
        full = np.concatenate((self.tail, x))
        start = len(self.tail)
        count = np.minimum(W, self.n + np.arange(len(x)))
        eligible = count >= max(self.t.throughput_min_history, 1)
        if self.high:
            bound = _prev_window_extreme(full, start, W, use_max=False)
            cand = eligible & (frac * x > bound)
        else:
            bound = _prev_window_extreme(full, start, W, use_max=True)
            cand = eligible & (x < frac * bound)
        alert = np.zeros(len(x), dtype=bool)
        medians: dict[int, float] = {}
        for pos in np.flatnonzero(cand).tolist():
            p = start + pos
            med = median(full[max(0, p - W):p])
            v = float(x[pos])
            if (frac * v > med) if self.high else (v < frac * med):
                alert[pos] = True
                medians[pos] = med
        out = []
        for pos in _entries(alert, self.active).tolist():
            v, med = float(x[pos]), medians[pos]
            st = int(steps[pos])
            if self.high:
                msg = (f"step time {fmt_num(v)} s is over {fmt_num(1 / frac)}x the recent median "
                       f"{fmt_num(med)} s at step {st}")
            else:
                msg = (f"tokens/s {fmt_num(v)} fell below {fmt_num(frac * 100)}% of the recent median "
                       f"{fmt_num(med)} at step {st}")
            out.append((pos, _alert(WARNING, "throughput_drop", st, msg, {self.name: v, "median": med})))
        self.active = bool(alert[-1])
        self.n += len(x)
        self.tail = full[-W:]
        return out


class _StepTimeCV:
    def __init__(self, t: Thresholds):
        self.t = t
        self.n = 0
        self.tail1 = np.empty(0)
        self.tail2 = np.empty(0)
        self.active = False

    def process(self, steps: np.ndarray, x: np.ndarray) -> list[tuple[int, dict]]:
        if not len(x):
            return []
        W = self.t.step_time_window
        c1 = np.concatenate((self.tail1, _cumsum_from(float(self.tail1[-1]) if len(self.tail1) else None, x)))
        c2 = np.concatenate((self.tail2, _cumsum_from(float(self.tail2[-1]) if len(self.tail2) else None, x * x)))
        base = self.n - len(self.tail1)
        i = np.arange(self.n, self.n + len(x))

        z1, z2 = np.concatenate(([0.0], c1)), np.concatenate(([0.0], c2))

        def at(c: np.ndarray, abs_idx: np.ndarray) -> np.ndarray:
            return c[np.maximum(abs_idx - base + 1, 0)]

        eligible = i >= W - 1
        s1 = at(z1, i) - at(z1, i - W)
        s2 = at(z2, i) - at(z2, i - W)
        mean = s1 / W
        var = np.maximum(s2 / W - mean * mean, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            cv = np.where(mean > 0, np.sqrt(var) / mean, 0.0)
        alert = eligible & (cv > self.t.step_time_cv_max)
        out = []
        for pos in _entries(alert, self.active).tolist():
            c, m = float(cv[pos]), float(mean[pos])
            out.append((pos, _alert(WARNING, "step_time_unstable", int(steps[pos]),
                                    f"step time varies: CV {fmt_num(c)} over the last {W} steps "
                                    f"(mean {fmt_num(m)} s) at step {int(steps[pos])}",
                                    {"step_time_s": float(x[pos]), "cv": c, "mean": m})))
        self.active = bool(alert[-1])
        self.n += len(x)
        self.tail1, self.tail2 = c1[-(W + 1):], c2[-(W + 1):]
        return out


class _HeldExcuse:
    """The held time in one attempt's speed records (``tokens_per_s``, ``step_time_s``).

    A record read after a hold whose field's previous record was read before it spans the hold:
    its value (the step's time, or the logging window's average) carries the held seconds, so it
    is left out of the speed rules, alert and window alike. Which kind of step time the trainer
    prints shows in that record: a per-step or per-window time carries all ``H`` held seconds over
    the ``n - p`` steps since the previous record (``p``), a trainer's average since its start
    (``s0``) carries them over ``n - s0`` steps (ms-swift's ``train_speed(s/it)`` =
    ``elapsed / (global_step - start_step)``, swift/trainers/patcher.py l.17-30, and its Megatron
    print callback, swift/megatron/callbacks/print.py l.58-65; the demo trainer's too). The nearer
    of the two says it. An average since the start keeps carrying the held seconds, and drifts
    too slowly to show a slowdown at all, so from then on the rules read each of its records as
    the time of the steps since the one before (``v_n (n - s0) - v_p (p - s0)`` over ``n - p``,
    the seconds since the start differenced, as records.swift_rate_step_time reads ms-swift
    3.x's rate): no held second in it, and a real slowdown after the resume shows at once. ``s0``
    is the attempt's first step with a step time less its logging gap (the trainer logs
    ``logging_steps`` after where it started). Rates are only left out at the spanning record."""

    def __init__(self) -> None:
        self.read_at: dict[str, float] = {}             # field -> when its last record was read (monotonic)
        self.last: dict[str, tuple[int, float]] = {}    # field -> (step, value) of its last record, as printed
        self.first: int | None = None   # the attempt's first step with a step time
        self.gap: int | None = None     # the step gap between its first two
        self.cumulative = False         # proven: the step times are the trainer's average since its start
        self.excused: dict[str, float] = {}  # field -> when the newest hold one of its records spanned began

    def apply(self, fname: str, steps: np.ndarray, x: np.ndarray, held: HeldSpans | None,
              at: float | None) -> tuple[np.ndarray, np.ndarray]:
        """(which records the speed rules read, their values) of one field's records of a batch."""
        keep = np.ones(len(x), dtype=bool)
        if not len(x):
            return keep, x
        timed = fname == "step_time_s"
        if timed and self.first is None:
            self.first = int(steps[0])
        if timed and self.gap is None and self.first is not None:
            first = self.first
            after = [int(s) for s in steps.tolist() if s > first]
            self.gap = after[0] - first if after else None
        since = self.read_at.get(fname)
        spanned = 0.0
        if held is not None and at is not None and since is not None:
            # each hold is spanned by one record of the field, once: not again by the next record
            # read while its interval is still open (a Slurm job's, closed at the next squeue poll)
            spanned = held.within(since, at, after=self.excused.get(fname, -math.inf))
            if spanned > 0:
                self.excused[fname] = held.began(at)
        last = self.last.get(fname)
        if spanned > 0:
            keep[0] = False
            if timed and last is not None and not self.cumulative and self.first is not None:
                n, (p, vp), s0 = int(steps[0]), last, self.first - (self.gap or 1)
                if s0 < p < n:   # the two readings differ only after the attempt's first record
                    self.cumulative = _held_in_average(float(x[0]), vp, n, p, s0, spanned)
        read = x
        if timed and self.cumulative and last is not None and self.first is not None:
            s0 = self.first - (self.gap or 1)
            st = np.concatenate(([last[0]], steps)).astype(np.float64)
            since_start = np.concatenate(([last[1]], x)) * (st - s0)   # the seconds since the trainer started
            gaps = np.diff(st)
            with np.errstate(divide="ignore", invalid="ignore"):
                read = np.where(gaps > 0, np.diff(since_start) / gaps, x)
            read = np.maximum(read, np.finfo(np.float64).tiny)
        if at is not None:
            self.read_at[fname] = at
        self.last[fname] = (int(steps[-1]), float(x[-1]))
        return keep, read


def _held_in_average(x: float, vp: float, n: int, p: int, s0: int, spanned: float) -> bool:
    """Whether the step time ``x`` of step ``n``, the first record after a hold, is proven to be
    the trainer's average since its start ``s0`` (the previous record: step ``p``, ``vp``), the
    held interval spanning ``spanned`` seconds between their reads.

    The interval opens at the training's last output read, so ``spanned`` is the held seconds
    plus the training's normal work before it stopped (up to one logging window, unknown). A
    per-step or per-window time covers the wall time between the two prints, held seconds and
    that work alike, ``x (n - p)`` is about ``spanned``; an average since the start spreads the
    held seconds over ``n - s0`` steps. Proven only when the value holds at most half the
    spanned seconds over its own steps and is nearer the average's prediction than the window's;
    otherwise (a short hold, shorter than a few logging windows) the record is read as printed,
    as before holds were excused: an average then carries at most a few windows' worth of time
    spread over all its steps, which no speed rule takes for a slowdown."""
    window, average = vp + spanned / (n - p), vp + spanned / (n - s0)
    return x * (n - p) <= spanned / 2 and abs(x - average) < abs(x - window)


@dataclass
class _Attempt:
    """Rule state for one attempt (reset by a restart)."""
    t: Thresholds
    last_step_by_field: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        t = self.t
        self.nf_loss = _NonFinite("loss")
        self.nf_grad = _NonFinite("grad_norm")
        self.grad = _GradSpike(t)
        self.loss = _LossSpike(t)
        self.tps = _RollingMedianDrop(t, "tokens_per_s", high=False)
        self.slow = _RollingMedianDrop(t, "step_time_s", high=True)
        self.cv = _StepTimeCV(t)
        self.held = _HeldExcuse()


class Monitors:
    """All rules over one run's record stream. Feed records with ``observe`` (one) or
    ``observe_records`` / ``observe_arrays`` (many); results are the same either way."""

    def __init__(self, thresholds: Thresholds | None = None):
        self.thresholds = thresholds or Thresholds()
        self.restarts = 0
        self._last_step: int | None = None
        self._a = _Attempt(self.thresholds)
        self._idx: dict[str, np.ndarray] = {}

    def reset(self) -> None:
        """Start every window afresh (a new attempt)."""
        self._a = _Attempt(self.thresholds)
        self._last_step = None

    @property
    def in_excursion(self) -> bool:
        a = self._a
        return a.grad.exc > 0 or a.nf_grad.active or a.nf_loss.active

    def observe(self, record: dict) -> list[dict]:
        return self.observe_records([record])

    def observe_records(self, records: list[dict]) -> list[dict]:
        steps, values, present = records_to_columns(records)
        return [a for _, a in self.observe_arrays(steps, values, present)]

    def observe_arrays(self, steps: np.ndarray, values: dict[str, np.ndarray],
                       present: dict[str, np.ndarray],
                       checkpoints: list[tuple[int, int | None, str | None]] | None = None,
                       held: HeldSpans | None = None, at: float | None = None,
                       ) -> list[tuple[int, dict]]:
        """Alerts for a batch as (index in the batch, alert), in stream order. ``values[f]``
        is float64 (anything where absent), ``present[f]`` says where field f exists.
        ``checkpoints`` are (c, step, path): a checkpoint saved after the first c records
        of the batch; its alert (if any) is reported at index c, before record c's.
        ``held``: the attempt's held intervals and ``at`` when the batch was read (both
        ``time.monotonic()``; a live runner's): the held time is excused (``_HeldExcuse``)."""
        steps = np.asarray(steps, dtype=np.int64)
        n = len(steps)
        cps = sorted(checkpoints or [], key=lambda cp: cp[0])
        out: list[tuple[int, int, dict]] = []
        for c, step, path in (cp for cp in cps if cp[0] <= 0 or n == 0):
            out.extend((c, -1, a) for a in self.on_checkpoint(step, path))
        if n == 0:
            return [(i, al) for i, _, al in out]
        restart_first = self._last_step is not None and int(steps[0]) < self._last_step
        inner = (np.flatnonzero(steps[1:] < steps[:-1]) + 1).tolist()
        bounds = [0] + inner + [n]
        for k in range(len(bounds) - 1):
            a, b = bounds[k], bounds[k + 1]
            if k > 0 or restart_first:
                self.restarts += 1
                self.reset()
            out.extend(self._segment(steps, values, present, a, b, held, at))
            seg_cps = [cp for cp in cps if a < cp[0] <= b]
            if seg_cps:
                out.extend(self._checkpoints_at(seg_cps))
            self._last_step = int(steps[b - 1])
        out.sort(key=lambda r: (r[0], r[1]))
        return [(i, al) for i, _, al in out]

    def _checkpoints_at(self, cps: list[tuple[int, int | None, str | None]]) -> list[tuple[int, int, dict]]:
        """on_checkpoint as it would have answered right after record c-1 of this segment,
        for each checkpoint (c, step, path); vectorised, since saves can be frequent."""
        a = self._a
        cs = np.array([cp[0] for cp in cps], dtype=np.int64)

        def state(rule_idx: np.ndarray, flags: np.ndarray, before: Any) -> tuple[np.ndarray, np.ndarray]:
            i = np.searchsorted(rule_idx, cs) - 1
            got = np.where(i >= 0, flags[np.maximum(i, 0)] if len(flags) else before, before)
            return i, got.astype(bool)

        _, nf_loss = state(self._idx["loss_nf"], a.nf_loss.flags, a.nf_loss.before)
        _, nf_grad = state(self._idx["grad_nf"], a.nf_grad.flags, a.nf_grad.before)
        gi, level = state(self._idx["grad"], a.grad.levels > 0, a.grad.before[0] > 0)
        out: list = []
        for j in np.flatnonzero(nf_loss | nf_grad | level).tolist():
            c, step, path = cps[j]
            last = a.grad.values_at(int(gi[j])) if gi[j] >= 0 else a.grad.before[1]
            out.extend((c, -1, al) for al in _checkpoint_alert(step, path, bool(level[j]), bool(nf_loss[j]),
                                                               bool(nf_grad[j]), last))
        return out

    def _kept(self, fname: str, steps: np.ndarray, present: dict, a: int, b: int) -> np.ndarray:
        """Indices in [a, b) where the field exists and its step differs from the previous one."""
        pres = present.get(fname)
        if pres is None:
            return np.empty(0, dtype=np.int64)
        idx = np.flatnonzero(pres[a:b]) + a
        if not len(idx):
            return idx
        s = steps[idx]
        last = self._a.last_step_by_field.get(fname)
        before = np.concatenate(([s[0] - 1 if last is None else last], s[:-1]))
        idx = idx[s != before]
        if len(idx):
            self._a.last_step_by_field[fname] = int(steps[idx[-1]])
        return idx

    def _segment(self, steps, values, present, a, b, held: HeldSpans | None = None,
                 read_at: float | None = None) -> list[tuple[int, int, dict]]:
        at = self._a
        out: list[tuple[int, int, dict]] = []

        def emit(rule_idx: np.ndarray, results: list[tuple[int, dict]]) -> None:
            for pos, alert in results:
                out.append((int(rule_idx[pos]), RULE_ORDER.index(alert["rule"]), alert))

        kept = {f: self._kept(f, steps, present, a, b) for f in MONITORED_FIELDS}
        for fname, rule in (("loss", at.nf_loss), ("grad_norm", at.nf_grad)):
            idx = kept[fname]
            emit(idx, rule.process(steps[idx], values[fname][idx]))
        idx = kept["grad_norm"]
        # a grad norm of exactly 0 is no gradient at all (a GRPO batch whose every group scored alike, a
        # distillation whose student is its teacher, a skipped update), not its scale: it neither seeds
        # the EMA nor counts toward the warm-up, or the first real gradient after it reads as a spike
        g = values["grad_norm"][idx]
        idx = idx[np.isfinite(g) & (g != 0)]
        emit(idx, at.grad.process(steps[idx], values["grad_norm"][idx]))
        self._idx = {"loss_nf": kept["loss"], "grad_nf": kept["grad_norm"], "grad": idx}
        idx = kept["loss"]
        idx = idx[np.isfinite(values["loss"][idx])]
        emit(idx, at.loss.process(steps[idx], values["loss"][idx]))
        idx = kept["tokens_per_s"]
        x = values["tokens_per_s"][idx]
        idx = idx[np.isfinite(x) & (x > 0)]
        use, tps = at.held.apply("tokens_per_s", steps[idx], values["tokens_per_s"][idx], held, read_at)
        emit(idx[use], at.tps.process(steps[idx[use]], tps[use]))
        st_idx = kept["step_time_s"]
        x = values["step_time_s"][st_idx]
        st_idx = st_idx[np.isfinite(x) & (x > 0)]
        use, st = at.held.apply("step_time_s", steps[st_idx], values["step_time_s"][st_idx], held, read_at)
        st_idx, st = st_idx[use], st[use]
        tps_present = present.get("tokens_per_s")
        slow = np.ones(len(st_idx), dtype=bool) if tps_present is None else ~tps_present[st_idx]
        emit(st_idx[slow], at.slow.process(steps[st_idx[slow]], st[slow]))
        emit(st_idx, at.cv.process(steps[st_idx], st))
        return out

    def on_checkpoint(self, step: int | None, path: str | None) -> list[dict]:
        """A checkpoint was saved: suspect if a grad-norm excursion or a non-finite value is on."""
        a = self._a
        return _checkpoint_alert(step, path, a.grad.exc > 0, a.nf_loss.active, a.nf_grad.active, a.grad.last)


def _checkpoint_alert(step: int | None, path: str | None, in_excursion: bool, nf_loss: bool,
                      nf_grad: bool, last: dict) -> list[dict]:
    where = path or "(unnamed)"
    if nf_loss or nf_grad:
        return [_alert(CRITICAL, "checkpoint_in_excursion", step,
                       f"checkpoint {where} saved while loss/grad norm is non-finite",
                       {"loss_non_finite": nf_loss, "grad_norm_non_finite": nf_grad})]
    if not in_excursion:
        return []
    return [_alert(WARNING, "checkpoint_in_excursion", step,
                   f"checkpoint {where} saved during a grad-norm excursion "
                   f"(grad norm {fmt_num(last.get('grad_norm'))} = {fmt_num(last.get('ratio'))}x its EMA)",
                   dict(last))]
