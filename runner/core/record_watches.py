"""The monitors that read a run's record dicts (a key the columns do not hold: ``learning_rate`` over
attempts, GRPO's ``frac_reward_zero_std``): the one list of them, run by the live runner on each batch
it writes (``supervisor.ingest_pipe``) and by ``moeconsole parse`` on a log read after the fact
(``ingest.summary``), so a log gives the same warnings however it is read.

Each watch is pure and ordered: ``observe(records, attempt)`` -> alert dicts (moeconsole.runner.core.monitors'
shape), its state carried from one call to the next.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from moeconsole.runner.core.monitors import Thresholds
from moeconsole.runner.core.reward_watch import RewardWatch
from moeconsole.runner.core.schedule_watch import ScheduleWatch


class RecordWatches:
    """Every record watch, in the order their alerts are said: a resume that restarted the LR schedule
    (``core.schedule_watch``), GRPO that learns nothing (``core.reward_watch``). Each watch declares what a
    log must hold for it to speak (``NEEDS_KEYS``: a key of the records; ``NEEDS_ATTEMPTS``: a second
    attempt); ``moeconsole parse`` reads the records' dicts (five times the cost of its columns on a long
    log) only where one can, by ``can_speak``."""

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        t = thresholds or Thresholds()
        self.schedule = ScheduleWatch()
        self.rewards = RewardWatch(t.reward_flat_steps)
        self.watches: tuple[ScheduleWatch | RewardWatch, ...] = (self.schedule, self.rewards)
        self.observed = False   # any record given yet (a runner that adopted a run seeds them once: ``seed``)

    @property
    def needs_keys(self) -> tuple[str, ...]:
        return tuple(k for w in self.watches for k in w.NEEDS_KEYS)

    @property
    def needs_attempts(self) -> bool:
        return any(w.NEEDS_ATTEMPTS for w in self.watches)

    def can_speak(self, has_key: Callable[[str], bool], attempts: int) -> bool:
        """Can a log say anything to a watch: it holds a key one reads (``has_key``), or ``attempts`` (the
        attempts it shows: markers, steps going back) are two or more for one that needs them?"""
        return any(has_key(k) for k in self.needs_keys) or (self.needs_attempts and attempts >= 2)

    def observe(self, records: list[dict], attempt: Any = None) -> list[dict]:
        """The alerts of these records (in order, ``attempt``: theirs), every watch's in turn."""
        self.observed = self.observed or bool(records)
        return [a for w in self.watches for a in w.observe(records, attempt)]

    def seed(self, records: Iterable[dict], chunk: int = 4096) -> None:
        """Earlier records (a runner that adopted the run: metrics.jsonl, each with its ``attempt``) given
        to every watch, their alerts already said by the runner that read them."""
        batch: list[dict] = []
        for rec in records:
            batch.append(rec)
            if len(batch) >= chunk:
                self.observe(batch)
                batch = []
        if batch:
            self.observe(batch)
