"""A training that exited 0 short of its known total: the one place that decides what the runner
can say about it, and the words it says.

transformers stops its loop before ``max_steps`` only when a callback sets
``control.should_training_stop`` (trainer.py's inner loop; ``DefaultFlowCallback`` sets it at
``global_step >= max_steps``, trainer_callback.py l.593). Two of transformers' own callbacks do so below
the total and both end with exit 0:

- ``EarlyStoppingCallback`` (trainer_callback.py, 5.19 l.711-790, l.773): after an evaluation that did not
  improve ``patience`` times. It logs nothing when it stops. A real success.
- ``JITCheckpointCallback`` (``--enable_jit_checkpoint``, trainer_jit_checkpoint.py, 5.19): its
  SIGTERM handler (l.31-36) logs "SIGTERM received, will request JIT checkpoint after 3s", arms a
  timer (l.38-40), and at the next step hook (l.99-119) the callback saves ``checkpoint-<global_step>``
  (l.42-72: "Saving JIT checkpoint at step N") and stops training; the process exits 0. A
  preemption (Kubernetes, Slurm's ``--signal``), not a success. Its lines are ``logger.info``, which
  ms-swift does not print at its default level.

ms-swift adds its own (``--max_epochs``, swift/trainers/patcher.py; ``--early_stop_interval``,
swift/callbacks/early_stop.py), and any script may stop where it likes. So the step short of the
total proves only that the training stopped itself early; it proves a SIGTERM only when the
training's own line says it handled one (``HANDLED_SIGTERM``). The runner did not send it: the judge
asks this only when no kill of the runner's ended the attempt.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

# The training's own words that it handled a SIGTERM and is saving before it stops
# (transformers 5.19 trainer_jit_checkpoint.py l.35, l.39, l.49).
HANDLED_SIGTERM = ("SIGTERM received, will request JIT checkpoint", "Kill wait period elapsed, requesting checkpoint",
                   "Saving JIT checkpoint at step")


@dataclass(frozen=True)
class ShortEnd:
    """An attempt that exited 0 at ``step`` of a known ``total`` > step; ``sigterm_line``: the
    training's own line saying it handled a SIGTERM (None: its log does not say why it stopped)."""
    step: int
    total: int
    sigterm_line: str | None = None

    @property
    def where(self) -> str:
        """"step 9 of 400"."""
        return f"step {self.step} of {self.total}"

    def summary(self) -> str:
        """The crash summary of a proven one (the training handled a SIGTERM the runner did not send)."""
        return (f"the training handled a SIGTERM this runner did not send (a preemption?): it saved and exited 0 "
                f"at {self.where}")

    def reason(self, run_id: str) -> str:
        """The status reason of an unproven one: it succeeded as far as the runner can tell, but ended
        short of its total, and the user is offered the resume."""
        return (f"training ended (exit 0) at {self.where}, short of its total: early stopping, or a SIGTERM it "
                f"handled by saving (transformers' --enable_jit_checkpoint)? If something stopped it, resume it: "
                f"moeconsole restart {run_id} --force")


def short_end(last_step: int | None, total: int | None, tail: Iterable[str],
              log_every: int | None = None) -> ShortEnd | None:
    """The attempt's end when its last logged step is short of the total its log gave (both known),
    else None. ``tail``: the attempt's last log lines. ``log_every``: the gap between its last two
    steps logged. The steps after the last logging step are trained but print nothing of their own
    (transformers logs at ``global_step % logging_steps == 0``, DefaultFlowCallback.on_step_end,
    trainer_callback.py, and stops at ``max_steps`` without a log of its own), so a run logged every
    10 steps that ends at 1,230 of 1,234 reached its total: short only by at least one interval
    (a proven SIGTERM of its own words still counts within it)."""
    if last_step is None or not total or last_step >= total:
        return None
    line = next((ln.strip() for ln in reversed(list(tail)) if any(w in ln for w in HANDLED_SIGTERM)), None)
    if line is None and log_every is not None and total - last_step < log_every:
        return None
    return ShortEnd(last_step, total, line)
