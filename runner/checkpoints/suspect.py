"""Was a checkpoint saved while the grad norm was in an excursion? Then it is suspect.

The rule is the design's grad-norm monitor: an exponential moving average (alpha 0.01) of the
grad norm; each logged value is compared with the EMA from *before* it, then folded in. A value
above ``ratio`` times that EMA, or a non-finite one, is an excursion. The save is suspect when
the last grad norm logged at or before its step was one.

Sources, in the order the runner and ``verify`` use them: the sidecar the runner wrote (its
live monitor decided), the run's ``metrics.jsonl``, and the ``log_history`` HF/ms-swift store
in ``trainer_state.json`` inside the checkpoint.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

from runner import jsonio

EMA_ALPHA = 0.01
EXCURSION_RATIO = 10.0


def _as_float(x: object) -> float | None:
    if isinstance(x, bool) or x is None:
        return None
    try:
        return float(x)  # type: ignore[arg-type]  # also reads "nan"/"inf" strings as jsonio writes them
    except (TypeError, ValueError):
        return None


def excursion_at(points: Iterable[tuple[int, float]], step: int, *, alpha: float = EMA_ALPHA,
                 ratio: float = EXCURSION_RATIO) -> str | None:
    """Reason string if the last grad norm at or before ``step`` was an excursion, else None.

    ``points`` are (step, grad_norm) pairs in any order."""
    ema: float | None = None
    verdict: str | None = None
    for s, g in sorted(points, key=lambda p: p[0]):
        if s > step:
            break
        if not math.isfinite(g):
            verdict = f"grad norm was {g} at step {s}"
            continue
        if ema is not None and ema > 0 and g > ratio * ema:
            verdict = f"grad norm {g:.4g} at step {s} was {g / ema:.0f}x its moving average {ema:.4g}"
        else:
            verdict = None
        ema = g if ema is None else (1 - alpha) * ema + alpha * g
    return verdict


def points_from_records(records: Iterable[dict]) -> list[tuple[int, float]]:
    """(step, grad_norm) from metric records or HF log_history entries."""
    out = []
    for rec in records:
        step, g = rec.get("step"), _as_float(rec.get("grad_norm"))
        if isinstance(step, int) and not isinstance(step, bool) and g is not None:
            out.append((step, g))
    return out


def points_from_trainer_state(ckpt_dir: Path) -> list[tuple[int, float]]:
    try:
        history = jsonio.load_file(ckpt_dir / "trainer_state.json").get("log_history")
    except (OSError, ValueError, AttributeError):
        return []
    return points_from_records(h for h in history if isinstance(h, dict)) if isinstance(history, list) else []
