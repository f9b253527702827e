"""Does a GRPO run learn anything? Not while every group's rewards are equal.

GRPO scores each prompt's ``num_generations`` completions and trains on each completion's
advantage over its group: its reward less the group's mean, over the group's std
(ms-swift 4.6 swift/rl_core/advantage.py ``compute_advantages``, l.20; trl 0.29 grpo_trainer.py
l.1907-1909). A group whose rewards are all equal has advantage 0 for every completion, so it
adds nothing to the policy-gradient loss; when every group of every batch is so, loss and grad
norm are 0 (only a KL term, ``beta``, can move the weights, back toward the reference model) and
the run spends its steps learning nothing, then succeeds as if all were well.

The trainers log it: ``frac_reward_zero_std`` is the share of a batch's groups whose rewards have
std 0 (``torch.isclose(std, 0)``: ms-swift swift/rl_core/advantage.py l.459-462, logged by
swift/rlhf_trainers/grpo_trainer.py l.427 and l.480; trl grpo_trainer.py l.1910, l.1946), and a
logged dict holds its mean over the logging window (``sum(val) / len(val)``, ms-swift
grpo_trainer.py l.1869; trl grpo_trainer.py l.2302). So a logged 1 means every group of every batch
since the previous dict was flat; one value below 1 is a group that taught something. The
``eval_`` copy (an evaluation, grpo_trainer.py l.1876-1877) trains nothing and is not read.
``reward_std`` is no substitute: with ``--scale_rewards none`` it is the groups' mean std, but
with ``batch`` the batch's std (advantage.py l.452-457).

One warning per stretch of such steps in an attempt, ``reward_no_signal``, once the stretch
covers ``reward_flat_steps`` optimizer steps (a dict covers the steps since the previous dict of
its attempt; the attempt's first dict, its own step only): a hard batch or two of a healthy run
(binary rewards that every completion misses) is no alarm; a stretch of them is. A warning, never
a kill: the fix is the user's (a reward that tells these completions apart, more generations per
prompt, a higher temperature, or ms-swift's ``--dynamic_sample true``, which resamples flat groups,
grpo_trainer.py l.640-676). A dict with a value below 1 closes the stretch; a later stretch warns
again.

A flat reward is no alarm when something else trains the model, and the dict says so (``_taught``;
reviewed, R57: a healthy on-policy distillation run got the warning at every step). ms-swift 4.6's GRPO
with a ``--teacher_model`` logs ``teacher_kl`` for each batch (grpo_trainer.py l.295-303) and, unless
``--advantage_reweight rlsd`` (which logs ``rlsd_lambda``, l.259-276, and only rescales the group
advantage, advantage.py ``apply_rlsd_reweight`` l.294-340: 0 stays 0), the teacher trains the student
on its own: OPD-RL adds ``teacher_kl_coef`` times the teacher's log-ratio to every token's advantage
(l.282-295, advantage.py l.288-290; with no ``--reward_funcs`` the rewards are flat at every step by
design), SDAR (``--sdar_loss_coef``) adds a distillation loss and logs ``sdar/loss`` (l.1137-1151,
advantage.py l.414-417). CHORD (``chord_sft_dataset``) mixes an SFT loss into the GRPO loss
(rlhf_trainers/utils.py l.1633-1675) and logs nothing of it; but without ``--beta`` the trainers log
no ``kl`` (grpo_trainer.py l.1258-1260, l.1812-1814; trl l.2069), and then the policy gradient of flat
groups is exactly 0, so a grad norm above 0 is another loss term at work (CHORD's, an OPD-RL teacher's).
With a ``kl`` the KL term alone gives a grad norm, so there only the teacher's keys say.

Pure: records in, alert dicts out (the shape of moeconsole.runner.core.monitors').
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from moeconsole.runner.core.monitors import Thresholds, fmt_num
from moeconsole.runner.core.numbers import as_float

RULE = "reward_no_signal"
KEY = "frac_reward_zero_std"      # trl's and ms-swift's name (the record's ``extra``)
FLAT = 1.0 - 1e-9                 # a logged mean this close to 1: every group of the window was flat
# what the warning shows beside the fraction, when the dict has it (the trainer's own numbers)
_SHOWN = ("reward", "reward_std")


def _taught(rec: dict, extra: dict) -> bool:
    """Does something besides the (flat) reward train the model this window? (the module's doc)"""
    if "kl" not in extra:                           # beta 0: the only gradient is another loss term's
        g = as_float(rec.get("grad_norm"))
        if g is not None and math.isfinite(g):
            return g > 0
    if "sdar/loss" in extra:                        # SDAR's distillation loss
        return True
    return "teacher_kl" in extra and "rlsd_lambda" not in extra   # OPD-RL's teacher term in the advantage


def _flat_value(rec: dict) -> float | None:
    """The record's ``frac_reward_zero_std`` (None: not a GRPO training dict)."""
    extra = rec.get("extra")
    if not isinstance(extra, dict):
        return None
    v = as_float(extra.get(KEY))
    return v if v is not None and math.isfinite(v) else None


class RewardWatch:
    """Feed a run's records in order (``observe``); ``steps`` is ``reward_flat_steps`` (default:
    ``Thresholds``')."""

    # What a log must hold for this watch to say anything (``record_watches.RecordWatches.can_speak``).
    NEEDS_KEYS: tuple[str, ...] = (KEY,)
    NEEDS_ATTEMPTS = False

    def __init__(self, steps: int | None = None) -> None:
        self.steps = max(1, int(Thresholds().reward_flat_steps if steps is None else steps))
        self._attempt: Any = None
        self._prev_step: int | None = None    # the attempt's previous GRPO dict's step
        self._start: int | None = None        # the open flat stretch: the step before its first dict
        self._covered = 0                     # ... and the optimizer steps it covers
        self._said = False                    # ... warned already

    def _new_attempt(self, attempt: Any) -> None:
        self._attempt = attempt
        self._prev_step = None
        self._start, self._covered, self._said = None, 0, False

    def observe(self, records: Iterable[dict], attempt: Any = None) -> list[dict]:
        """Alerts for these records (``attempt``: theirs, else each record's own ``attempt``)."""
        out: list[dict] = []
        for rec in records:
            if not isinstance(rec, dict):
                continue
            frac = _flat_value(rec)
            step = rec.get("step")
            if frac is None or not isinstance(step, int) or isinstance(step, bool):
                continue
            att = attempt if attempt is not None else rec.get("attempt")
            if att != self._attempt or (self._prev_step is not None and step < self._prev_step):
                self._new_attempt(att)      # a new attempt, or a resume from an older save
            if step == self._prev_step:
                continue                    # another rank's copy of the same dict
            prev, self._prev_step = self._prev_step, step
            if frac < FLAT or _taught(rec, rec["extra"]):
                self._start, self._covered, self._said = None, 0, False
                continue
            if self._start is None:
                self._start = prev if prev is not None else step - 1
            self._covered = step - self._start
            if not self._said and self._covered >= self.steps:
                self._said = True
                out.append(self._alert(rec, step, att))
        return out

    def _alert(self, rec: dict, step: int, attempt: Any) -> dict:
        extra = rec.get("extra") or {}
        first = (self._start or 0) + 1
        shown = {k: as_float(extra.get(k)) for k in _SHOWN}
        for k in ("loss", "grad_norm"):
            shown[k] = as_float(rec.get(k))
        said = ", ".join(f"{k} {fmt_num(v)}" for k, v in shown.items() if v is not None)
        return {"level": "warning", "rule": RULE, "step": step,
                "message": (f"GRPO learns nothing: every group's rewards were equal at steps {first}-{step} "
                            f"({KEY} 1{'; ' + said if said else ''}): no completion is better than its group, "
                            "the advantage is 0 and so is the policy gradient. Give the reward a way to tell the "
                            "completions apart (check the reward function on them), or more generations per prompt "
                            "(--num_generations), a higher --temperature, or --dynamic_sample true (resamples "
                            "flat groups)"),
                "values": {KEY: 1.0, "first_step": first, "steps": self._covered, "attempt": attempt,
                           **{k: v for k, v in shown.items() if v is not None}}}
