"""Was a checkpoint saved while the grad norm was in an excursion? Then it is suspect.

There is one grad-norm rule, the live monitor's (``moeconsole.runner.core.monitors``: the grad norm against
its EMA from before the step, after a warm-up, and any non-finite loss or grad norm); this module
only asks it after the fact. The grad norms up to the save's step are replayed through a fresh
``Monitors`` and the save is suspect when the monitor would have flagged it at that moment, so
``verify`` and the live runner can never disagree.

Sources, in the order the runner and ``verify`` use them: the sidecar the runner wrote (its
live monitor decided), the run's ``metrics.jsonl``, and the ``log_history`` HF/ms-swift store
in ``trainer_state.json`` inside the checkpoint.
"""
from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from moeconsole.runner.core.monitors import Monitors, Thresholds, fmt_num
from moeconsole.runner.core.numbers import as_float
from moeconsole.runner.rundir import jsonio


def excursion_at(points: Iterable[tuple[int, float]], step: int,
                 thresholds: Thresholds | None = None) -> str | None:
    """Reason string if a save at ``step`` would have been flagged by the live monitor, else None.

    ``points`` are (step, grad_norm) pairs in any order; the last value logged for a step wins
    (a resumed run logs a step again)."""
    by_step: dict[int, float] = {}
    for s, g in points:
        if s <= step:
            by_step[s] = g
    if not by_step:
        return None
    monitors = Monitors(thresholds)
    monitors.observe_records([{"step": s, "grad_norm": by_step[s]} for s in sorted(by_step)])
    alerts = monitors.on_checkpoint(step, None)
    if not alerts:
        return None
    values = alerts[0]["values"]
    last = max(by_step)
    if values.get("grad_norm_non_finite"):
        return f"grad norm was {fmt_num(by_step[last])} at step {last}"
    return (f"grad norm {fmt_num(values.get('grad_norm'))} at step {last} was {fmt_num(values.get('ratio'))}x "
            f"its moving average {fmt_num(values.get('ema'))}")


def points_from_records(records: Iterable[dict]) -> list[tuple[int, float]]:
    """(step, grad_norm) from metric records or HF log_history entries."""
    out = []
    for rec in records:
        step, g = rec.get("step"), as_float(rec.get("grad_norm"))
        if isinstance(step, int) and not isinstance(step, bool) and g is not None:
            out.append((step, g))
    return out


def points_from_trainer_state(ckpt_dir: Path) -> list[tuple[int, float]]:
    try:
        history = jsonio.load_file(ckpt_dir / "trainer_state.json").get("log_history")
    except (OSError, ValueError, AttributeError):
        return []
    return points_from_records(h for h in history if isinstance(h, dict)) if isinstance(history, list) else []
