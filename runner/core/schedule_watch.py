"""Did a resumed attempt restart the learning-rate schedule? Then it re-runs the warmup.

ms-swift's ``--adapters/--model ... --finetune false`` resume continues the iteration but builds a
fresh LR scheduler at step 0, and so does transformers' resume from a ``--save_only_model true``
checkpoint (no scheduler.pt: trainer.py ``_load_optimizer_and_scheduler``); lint says so before
launch, ``swift_resume_restarts_schedule``. This watches the log for it actually happening: the
first learning rate a new attempt logs is the one the first attempt started with (the schedule's
step 0 again, while the iteration continued; without a warmup, only once the run had decayed off
it), or far below what the previous attempt had reached at that step. One warning per attempt,
``lr_schedule_restarted``, with what it costs: the warmup's steps (measured on the first attempt,
from its first logged step to the one where the learning rate stopped rising) run again at a
lower learning rate, and the decay starts over.

Pure: records in, alert dicts out (the same shape as moeconsole.runner.core.monitors').
"""
from __future__ import annotations

import bisect
import math
from collections.abc import Iterable
from typing import Any

from moeconsole.runner.core.monitors import fmt_num
from moeconsole.runner.core.numbers import as_float

RULE = "lr_schedule_restarted"
DROP = 0.5          # a resumed LR below this fraction of the one reached at that step is a restart
SAME = 1e-3         # relative tolerance for "the first attempt's first learning rate again"
MOVED = 1e-2        # ... which tells a restart without a warmup only once the run had left it by this fraction
KEEP = 4096         # (step, lr) points kept per history: past 2 x KEEP, every other one is dropped


def _thin(items: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """Every other point, the newest kept: the history stays bounded (one watch lives as long as
    the runner, a run can log millions of steps) with its resolution even over the run."""
    return items[len(items) - 1::-2][::-1] if len(items) > 2 * KEEP else items


class ScheduleWatch:
    # What a log must hold for this watch to say anything (``record_watches.RecordWatches.can_speak``):
    # no key of its own beyond ``lr``, but a second attempt: an attempt marker, or the step going back
    # within one (a resume from an earlier save logged into the same file: ``observe``).
    NEEDS_KEYS: tuple[str, ...] = ()
    NEEDS_ATTEMPTS = True

    def __init__(self) -> None:
        self._steps: list[int] = []                  # earlier attempts' (step, lr), sorted by step
        self._lrs: list[float] = []
        self._cur: dict[int, float] = {}
        self._attempt: Any = None
        self._checked = True
        self._first: tuple[int, float] | None = None     # the first attempt's first (step, lr)
        self._peak: tuple[int, float] | None = None      # ... and where its warmup ended
        self._warming = True
        self._last_step: int | None = None               # the newest record's step (a step going back: a resume)

    @property
    def seen(self) -> bool:
        """Has any learning rate been observed?"""
        return self._first is not None

    def _new_attempt(self, attempt: Any) -> None:
        if self._cur:
            merged = dict(zip(self._steps, self._lrs))
            merged.update(self._cur)
            kept = _thin(sorted(merged.items()))
            self._steps = [s for s, _ in kept]
            self._lrs = [lr for _, lr in kept]
        self._cur = {}
        self._attempt = attempt
        self._checked = False

    def _lr_before(self, step: int) -> tuple[int, float] | None:
        i = bisect.bisect_right(self._steps, step) - 1
        return (self._steps[i], self._lrs[i]) if i >= 0 else None

    def _came_back(self, first_lr: float) -> bool:
        """The earlier attempts' rate left the starting rate and came back to it on its own: a cyclic
        schedule (cosine with restarts, SGDR, a triangular cycle), whose resume at a cycle's start
        logs the starting rate again and restarts nothing."""
        left = False
        for lr in self._lrs:
            if abs(lr - first_lr) > MOVED * first_lr:
                left = True
            elif left and abs(lr - first_lr) <= SAME * first_lr:
                return True
        return False

    @property
    def warmup_steps(self) -> int | None:
        """Steps the first attempt's learning rate rose for (None: no warmup seen)."""
        if self._first is None or self._peak is None or self._peak[1] <= self._first[1]:
            return None
        return self._peak[0] - self._first[0] + 1

    def observe(self, records: Iterable[dict], attempt: Any = None) -> list[dict]:
        """Alerts for these records (``attempt``: theirs, else each record's own ``attempt``)."""
        out: list[dict] = []
        if attempt is not None and attempt == self._attempt and self._checked and self._first is not None \
                and (not self._warming or self._steps) and isinstance(records, list):
            # The attempt is checked and its warmup measured: each record only notes its learning
            # rate (a batch of a log flood in one comprehension, not a loop of checks)
            steps, lrs = [r.get("step") for r in records], [r.get("lr") for r in records]
            if set(map(type, steps)) <= {int} and set(map(type, lrs)) <= {float, type(None)} and steps \
                    and (self._last_step is None or steps[0] >= self._last_step) \
                    and all(a <= b for a, b in zip(steps, steps[1:])):   # no step going back among them
                self._last_step = steps[-1]
                self._cur.update((s, lr) for s, lr in zip(steps, lrs) if lr is not None and lr - lr == 0)
                while len(self._cur) > 2 * KEEP:   # bounded on this path too
                    self._cur = dict(_thin(list(self._cur.items())))
                return out
        for rec in records:
            step, lr = rec.get("step"), as_float(rec.get("lr"))
            if not isinstance(step, int) or isinstance(step, bool) or lr is None or not math.isfinite(lr):
                continue
            att = attempt if attempt is not None else rec.get("attempt")
            # a new attempt, or the step going back within one: a resume from an earlier save logged into
            # the same file (`swift sft ... >> train.log` twice), found as reward_watch finds it
            if att != self._attempt or (self._last_step is not None and step < self._last_step):
                self._new_attempt(att)
            self._last_step = step
            if self._first is None:
                self._first = self._peak = (step, lr)
            elif self._warming and not self._steps:
                if self._peak is not None and lr > self._peak[1]:
                    self._peak = (step, lr)
                else:
                    self._warming = False
            if not self._checked:
                self._checked = True
                alert = self._check(step, lr, att)
                if alert:
                    out.append(alert)
            self._cur[step] = lr
            if len(self._cur) > 2 * KEEP:
                self._cur = dict(_thin(list(self._cur.items())))
        return out

    def _check(self, step: int, lr: float, attempt: Any) -> dict | None:
        before = self._lr_before(step)
        if before is None or self._first is None:
            return None
        first_step, first_lr = self._first
        # The starting rate again: after a warmup (the rate rose from it), or, with no warmup (ms-swift's
        # default: warmup_ratio 0 and a cosine decay, swift/trainers/arguments.py l.148, l.220), once the
        # run had decayed off it; a constant schedule never leaves it, and a resume that continues the
        # decay logs the rate reached. Measured: 4.6.0 with --save_only_model true (no scheduler.pt), kill
        # at step 72 of 400, restart from checkpoint-70: 0.005 at step 71, where the run had 0.004621.
        moved = abs(before[1] - first_lr) > MOVED * first_lr
        again = step > first_step and first_lr > 0 and abs(lr - first_lr) <= SAME * first_lr \
            and (self.warmup_steps is not None or (moved and not self._came_back(first_lr)))
        dropped = before[1] > 0 and lr < DROP * before[1]
        if not (again or dropped):
            return None
        warm = self.warmup_steps
        cost = (f"it re-runs the {warm}-step warmup (steps {step}-{step + warm - 1} at a lower learning rate) and "
                "restarts the decay, which then ends before its floor" if warm else
                "the decay starts over (the first attempt logged no warmup)")
        return {"level": "warning", "rule": RULE, "step": step,
                "message": (f"{'attempt ' + str(attempt) if attempt is not None else 'the resume logged in the same file'} "
                            f"restarted the learning-rate schedule: {fmt_num(lr)} at step {step}, "
                            f"where the run had reached {fmt_num(before[1])} (step {before[0]})"
                            + (f", the first attempt's starting rate again" if again else "") + f"; {cost}. "
                            "A full-state resume keeps the schedule (ms-swift: saves with --save_only_model false; Megatron: "
                            "--mcore_adapter, --no_save_optim false)"),
                "values": {"lr": lr, "lr_before": before[1], "step_before": before[0], "warmup_steps": warm,
                           "attempt": attempt}}
