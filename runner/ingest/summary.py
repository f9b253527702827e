"""A short account of a parsed log: what ``moeconsole parse`` prints without --json.

Built from record batches (numpy columns), so a million steps cost a few array operations;
``Summary.add_records`` accepts plain records for the same result.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from moeconsole.runner.core.units import clip
from moeconsole.runner.core.memory import KEEP_STEPS, Trend, mib_rate_text, trend
from moeconsole.runner.core.columns import records_to_columns
from moeconsole.runner.core.monitors import Monitors, Thresholds, fmt_num
from moeconsole.runner.core.record_watches import RecordWatches
from moeconsole.runner.ingest import formats

MAX_LISTED_ALERTS = 10


@dataclass
class Summary:
    records: int = 0
    first_step: int | None = None
    last_step: int | None = None
    max_steps: int | None = None
    loss_first: tuple[float, int] | None = None    # (value, step)
    loss_last: tuple[float, int] | None = None
    loss_min: tuple[float, int] | None = None
    grad_max: tuple[float, int] | None = None
    mem_peak: tuple[float, int] | None = None
    non_finite: Counter = field(default_factory=Counter)   # field -> count of NaN/inf values
    checkpoints: int = 0
    last_checkpoint: str | None = None
    attempts: int = 0
    restarts: int = 0
    alert_counts: Counter = field(default_factory=Counter)  # (level, rule) -> count
    alerts: list = field(default_factory=list)              # the first few, in order
    mem_tail: list = field(default_factory=list)            # (step, peak) of the last steps, for the trend
    evals: int = 0                                          # evaluation results (never steps)
    eval_first: tuple[float, int] | None = None             # (eval loss, step)
    eval_last: tuple[float, int] | None = None
    eval_best: tuple[float, int] | None = None
    eval_split: str | None = None
    attempt: Any = None   # the newest attempt marker's attempt (None: none read yet)
    step_numbered: bool = False   # the newest record's step is a log entry's number (``records.step_numbered``)
    _prev_step: int | None = None
    _no_ddp: formats.NotDistributedWatch = field(default_factory=formats.NotDistributedWatch)  # as the runner's

    def add_arrays(self, steps: np.ndarray, values: dict[str, np.ndarray],
                   present: dict[str, np.ndarray], max_steps: int | None = None) -> None:
        n = len(steps)
        if n == 0:
            return
        self.records += n
        prev = np.concatenate(([steps[0] if self._prev_step is None else self._prev_step], steps[:-1]))
        self.restarts += int(np.count_nonzero(steps < prev))
        self._prev_step = int(steps[-1])
        if self.first_step is None:
            self.first_step = int(steps[0])
        self.last_step = int(steps[-1])
        if max_steps is not None:
            self.max_steps = int(max_steps)
        loss, has = values["loss"], present["loss"]
        idx = np.flatnonzero(has)
        if len(idx):
            if self.loss_first is None:
                self.loss_first = (float(loss[idx[0]]), int(steps[idx[0]]))
            self.loss_last = (float(loss[idx[-1]]), int(steps[idx[-1]]))
        self._extreme("loss_min", loss, has, steps, lowest=True)
        self._extreme("grad_max", values["grad_norm"], present["grad_norm"], steps, lowest=False)
        self._extreme("mem_peak", values["mem_gib"], present["mem_gib"], steps, lowest=False)
        self._memory_tail(steps, values["mem_gib"], present["mem_gib"])
        for f in ("loss", "grad_norm"):
            bad = int(np.count_nonzero(present[f] & ~np.isfinite(values[f])))
            if bad:
                self.non_finite[f] += bad

    def _memory_tail(self, steps: np.ndarray, mem: np.ndarray, has: np.ndarray) -> None:
        """The per-step memory peaks of the newest steps of the last attempt (a step going back
        starts afresh): what ``moeconsole.runner.core.memory.trend`` reads at the end."""
        idx = np.flatnonzero(has & np.isfinite(mem) & (mem > 0))
        if not len(idx):
            return
        s = steps[idx]
        prev = np.concatenate(([self.mem_tail[-1][0] if self.mem_tail else s[0]], s[:-1]))
        back = np.flatnonzero(s < prev)
        if len(back):
            self.mem_tail = []
            idx = idx[back[-1]:]
        for i in idx[-2 * KEEP_STEPS:].tolist():
            step, v = int(steps[i]), float(mem[i])
            if self.mem_tail and self.mem_tail[-1][0] == step:
                self.mem_tail[-1] = (step, max(v, self.mem_tail[-1][1]))
            else:
                self.mem_tail.append((step, v))
        del self.mem_tail[:-KEEP_STEPS]

    def memory_trend(self) -> Trend:
        return trend([st for st, _ in self.mem_tail], [v for _, v in self.mem_tail])

    def _extreme(self, name: str, x: np.ndarray, has: np.ndarray, steps: np.ndarray, lowest: bool) -> None:
        ok = has & np.isfinite(x)
        if not ok.any():
            return
        masked = np.where(ok, x, np.inf if lowest else -np.inf)
        i = int(np.argmin(masked) if lowest else np.argmax(masked))
        cur = getattr(self, name)
        v = float(x[i])
        if cur is None or (v < cur[0] if lowest else v > cur[0]):
            setattr(self, name, (v, int(steps[i])))

    def add_records(self, records: list[dict]) -> None:
        steps, values, present = records_to_columns(records)
        mx = next((r["max_steps"] for r in reversed(records) if r.get("max_steps") is not None), None)
        self.add_arrays(steps, values, present, mx)

    def add_mark(self, mark: dict) -> None:
        kind = mark.get("kind")
        if kind == "checkpoint_saved":
            self.checkpoints += 1
            self.last_checkpoint = mark.get("path") or self.last_checkpoint
        elif kind == "attempt_marker":
            self.attempts += 1
            self.attempt = mark.get("attempt")
            self._no_ddp.new_attempt()
        elif kind == "not_distributed" and self._no_ddp.feed(mark):
            # transformers' Trainer without DDP: every rank's step dicts are in the records (the runner keeps
            # the first of each step); said as the runner says it (ingest_pipe)
            self.add_alert({"level": "warning", "rule": "not_distributed", "step": None,
                            "message": formats.NOT_DISTRIBUTED_SAID})
        elif kind == "eval":
            self.evals += 1
            loss, step = mark.get("loss"), mark.get("step")
            self.eval_split = self.eval_split or mark.get("split")
            if isinstance(loss, float) and isinstance(step, int):
                point = (loss, step)
                self.eval_first = self.eval_first or point
                self.eval_last = point
                if math.isfinite(loss) and (self.eval_best is None or loss < self.eval_best[0]):
                    self.eval_best = point

    def add_alert(self, alert: dict) -> None:
        self.alert_counts[(alert["level"], alert["rule"])] += 1
        if len(self.alerts) < MAX_LISTED_ALERTS:
            self.alerts.append(alert)

    def to_dict(self) -> dict[str, Any]:
        def pair(p: tuple[float, int] | None) -> dict | None:
            return None if p is None else {"value": p[0], "step": p[1]}
        return {
            "records": self.records, "first_step": self.first_step, "last_step": self.last_step,
            "max_steps": self.max_steps, "loss_first": pair(self.loss_first),
            "loss_last": pair(self.loss_last), "loss_min": pair(self.loss_min),
            "grad_norm_max": pair(self.grad_max), "mem_gib_peak": pair(self.mem_peak),
            "non_finite": dict(self.non_finite), "checkpoints": self.checkpoints,
            "last_checkpoint": self.last_checkpoint, "attempts": self.attempts,
            "restarts": self.restarts, "step_numbered": self.step_numbered,
            "evals": self.evals, "eval_loss_first": pair(self.eval_first),
            "eval_loss_last": pair(self.eval_last), "eval_loss_min": pair(self.eval_best),
            "alerts": {f"{lvl}:{rule}": n for (lvl, rule), n in sorted(self.alert_counts.items())},
            "memory_trend": self.memory_trend().to_dict() if self.mem_tail else None,
        }


def _at(p: tuple[float, int] | None, unit: str = "") -> str:
    if p is None:
        return "-"
    return f"{fmt_num(p[0])}{unit} (step {p[1]:,})"


def _trend_clause(s: Summary) -> str:
    """'; stable over the last 385 steps' / '; growing 12.0 MiB/step over the last 385 steps'."""
    if not s.mem_tail:
        return ""
    tr = s.memory_trend()
    if tr.state == "unknown":
        return f"; too few steps ({tr.steps}) for a trend"
    what = f"growing {mib_rate_text(tr.gib_per_step or 0.0)}" if tr.state == "growing" else "stable"
    return f"; {what} over the last {tr.steps:,} steps"


def render_summary(path: str, summary: Summary, stats: Any, monitors_on: bool = True) -> str:
    """The text a user reads after ``moeconsole parse LOGFILE``."""
    s = summary
    lines = [str(path)]
    fmts = ", ".join(f"{name} ({n:,})" for name, n in stats.formats.most_common()) or "none recognised"
    lines.append(f"  formats      {fmts}")
    lines.append(f"  lines        {stats.lines:,} ({stats.metric_lines:,} metric, {stats.mark_lines:,} marks, "
                 f"{stats.unparsed_lines:,} not understood)")
    if s.records:
        total = f" of {s.max_steps:,}" if s.max_steps else ""
        restarts = f", {s.restarts} restart{'s' if s.restarts != 1 else ''}" if s.restarts else ""
        if s.step_numbered:   # never "steps": the trainer named none, the parser numbered its entries
            lines.append(f"  log entries  {s.first_step:,} -> {s.last_step:,}{total} ({s.records:,} records{restarts}; "
                         "the log names no step: numbered in order, not optimizer steps)")
        else:
            lines.append(f"  steps        {s.first_step:,} -> {s.last_step:,}{total} ({s.records:,} records{restarts})")
        lines.append(f"  loss         first {_at(s.loss_first)}, last {_at(s.loss_last)}, min {_at(s.loss_min)}")
        lines.append(f"  grad norm    max {_at(s.grad_max)}")
        lines.append(f"  memory       peak {_at(s.mem_peak, ' GiB')}{_trend_clause(s)}")
        if s.non_finite:
            nf = ", ".join(f"{f} {n:,}" for f, n in sorted(s.non_finite.items()))
            lines.append(f"  non-finite   {nf}")
    else:
        lines.append("  steps        no metric records found" + (
            "; if its lines hold metrics, declare their format: --log-format 'kv = STEPKEY' or a regular "
            "expression with (?P<step>...) (a recipe's log_format; docs/parsing.md)" if stats.lines else ""))
        # any line, not only those "not understood": lines of unnamed numbers (`#00045 1.0164 1.0e-04`) are
        # understood as carrying nothing, and the way to read them had not been said (newcomer round 6)
    if s.evals:
        what = f"{s.evals:,} ({s.eval_split or 'eval'})"
        if s.eval_last is not None:
            what += f"; loss first {_at(s.eval_first)}, last {_at(s.eval_last)}, min {_at(s.eval_best)}"
        lines.append(f"  evaluations  {what}")
    if s.checkpoints or s.attempts:
        ck = f"{s.checkpoints:,} saved" + (f", last {s.last_checkpoint}" if s.last_checkpoint else "")
        lines.append(f"  checkpoints  {ck}" + (f"; {s.attempts} attempt markers" if s.attempts else ""))
    if not monitors_on:
        lines.append("  alerts       (monitors off)")
    elif not s.alert_counts:
        lines.append("  alerts       none")
    else:
        counts = ", ".join(f"{n:,} {lvl} {rule}" for (lvl, rule), n in sorted(
            s.alert_counts.items(), key=lambda kv: (kv[0][0] != "critical", kv[0][1])))
        lines.append(f"  alerts       {counts}")
        for a in s.alerts:
            lines.append(f"    {a['level'].upper():8s} {a['rule']}: {a['message']}")
        shown = sum(s.alert_counts.values())
        if shown > len(s.alerts):
            lines.append(f"    ... {shown - len(s.alerts):,} more")
    if stats.unparsed_lines:
        extra = f" ({stats.suspect_lines:,} looked like metrics)" if stats.suspect_lines else ""
        if stats.out_of_range_lines:
            extra += f" ({stats.out_of_range_lines:,} with a step out of range, skipped)"
        lines.append(f"  not understood {stats.unparsed_lines:,} line(s){extra}; --explain lists each with the reason")
        for line_no, text in stats.examples:
            lines.append(f"    line {line_no:,}: {clip(text, 100)}")
    return "\n".join(lines)


def feed_batch(summary: Summary, monitors: Monitors | None, batch: Any, watches: RecordWatches | None = None) -> None:
    """One batch (moeconsole.runner.ingest.bulk.Batch) into the summary and the monitors.

    Attempt markers reset the monitors; checkpoint saves are checked against the state of
    the monitors at their place in the stream. ``watches``: the monitors of the record dicts
    (``core.record_watches``, the runner's own list), fed each part's records (a batch read in
    records mode) with its attempt, the attempt markers counted from the log's start."""
    summary.add_arrays(batch.steps, batch.values, batch.present, batch.max_steps)
    if batch.numbered is not None:
        summary.step_numbered = batch.numbered
    attempt = summary.attempt   # the attempt the batch's first records are of
    for _, mark in batch.marks:
        summary.add_mark(mark)
    if monitors is None:
        return
    # (first row, end row, saves, an attempt marker ends it, the attempt its records are of)
    parts: list[tuple[int, int, list, bool, Any]] = []
    start, cps = 0, []  # type: int, list
    for i, mark in batch.marks:
        if mark.get("kind") == "attempt_marker":
            parts.append((start, i, cps, True, attempt))
            start, cps, attempt = i, [], mark.get("attempt")
        elif mark.get("kind") == "checkpoint_saved":
            cps.append((i - start, mark.get("step"), mark.get("path")))
    parts.append((start, len(batch.steps), cps, False, attempt))
    for a, b, part_cps, then_reset, att in parts:
        sl = slice(a, b)
        alerts = monitors.observe_arrays(batch.steps[sl], {f: v[sl] for f, v in batch.values.items()},
                                         {f: p[sl] for f, p in batch.present.items()}, part_cps)
        for _, alert in alerts:
            summary.add_alert(alert)
        if watches is not None and batch.records is not None:
            from moeconsole.runner.rundir.seriesfile import as_dicts
            for alert in watches.observe(as_dicts(batch.records[a:b]), att):
                summary.add_alert(alert)
        if then_reset:
            monitors.reset()


def _watches_can_speak(path: Any, watches: RecordWatches) -> bool:
    """Does the log hold what a record watch reads (``RecordWatches.can_speak``: a key one reads, or two
    attempt markers)? A byte search of the file: a trainer_state.json is read in records mode always (its
    history is small). A step going back (a second attempt without markers) shows only once read: the
    columns' pass counts it (``Summary.restarts``) and ``summarize_path`` reads the records then."""
    import mmap
    from moeconsole.runner.ingest.files import TRAINER_STATE, resolve_log
    from moeconsole.runner.rundir.rundir import ATTEMPT_MARKER
    real, kind = resolve_log(path)
    if kind == TRAINER_STATE:
        return True
    marker = ATTEMPT_MARKER.split("{", 1)[0].encode()   # "=== moeconsole: attempt "
    try:
        with open(real, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            first = m.find(marker)
            markers = 0 if first < 0 else 1 if m.find(marker, first + 1) < 0 else 2
            return watches.can_speak(lambda k: m.find(k.encode()) >= 0, markers)
    except (OSError, ValueError):   # empty (mmap refuses it), unreadable: the reading says so
        return False


def summarize_path(path: Any, thresholds: Thresholds | None = None, monitors: bool = True,
                   workers: int = 2, report: Any = None, line_format: Any = None) -> tuple[Summary, Any]:
    """Summary (with the monitors' alerts unless ``monitors`` is False) and parse statistics
    of any supported path (see moeconsole.runner.ingest.files); a big log is read by two processes."""
    from moeconsole.runner.ingest.files import fold_path

    def init() -> tuple[Summary, Monitors | None, RecordWatches | None]:
        return Summary(), (Monitors(thresholds) if monitors else None), (RecordWatches(thresholds) if monitors else None)

    def step(state: tuple[Summary, Monitors | None, RecordWatches | None], batch: Any) -> None:
        feed_batch(state[0], state[1], batch, state[2])

    # the record watches read the records' dicts: read in records mode where one of them can speak
    records = monitors and _watches_can_speak(path, RecordWatches(thresholds))
    (summary, _, watches), stats = fold_path(path, init, step, workers=workers, report=report,
                                             line_format=line_format, want_records=records)
    if not records and watches is not None and watches.can_speak(lambda _k: False, 1 + summary.restarts):
        # a second attempt the bytes did not show (the step went back: no markers): read again, with the records
        (summary, _, _), stats = fold_path(path, init, step, workers=workers, report=report, line_format=line_format,
                                           want_records=True)
    return summary, stats
