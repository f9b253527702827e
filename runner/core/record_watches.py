"""The monitors that read a run's record dicts (a key the columns do not hold: ``learning_rate`` over
attempts, GRPO's ``frac_reward_zero_std``): the one list of them, run by the live runner on each batch
it writes (``supervisor.ingest_pipe``) and by ``moeconsole parse`` on a log read after the fact
(``ingest.summary``), so a log gives the same warnings however it is read.

Each watch is pure and ordered: ``observe(records, attempt)`` -> alert dicts (moeconsole.runner.core.monitors'
shape), its state carried from one call to the next.
"""
from __future__ import annotations

from typing import Any

from moeconsole.runner.core.monitors import Thresholds
from moeconsole.runner.core.reward_watch import KEY as REWARD_KEY, RewardWatch
from moeconsole.runner.core.schedule_watch import ScheduleWatch


# What a log must hold for a watch to say anything: ``moeconsole parse`` reads the records' dicts (five
# times the cost of its columns on a long log) only where one can. The reward watch reads only records
# holding its key (``reward_watch._flat_value``); the schedule watch compares a resumed attempt's learning
# rates with the earlier attempts' (``ScheduleWatch._new_attempt``), so it needs a second attempt, which a
# log read after the fact shows by the runner's attempt markers (the reader's to find: ``ingest.summary``).
NEEDS_KEYS: tuple[str, ...] = (REWARD_KEY,)
NEEDS_ATTEMPTS = True


class RecordWatches:
    """Every record watch, in the order their alerts are said: a resume that restarted the LR schedule
    (``core.schedule_watch``), GRPO that learns nothing (``core.reward_watch``)."""

    def __init__(self, thresholds: Thresholds | None = None) -> None:
        t = thresholds or Thresholds()
        self.schedule = ScheduleWatch()
        self.rewards = RewardWatch(t.reward_flat_steps)
        self.watches: tuple[ScheduleWatch | RewardWatch, ...] = (self.schedule, self.rewards)

    def observe(self, records: list[dict], attempt: Any = None) -> list[dict]:
        """The alerts of these records (in order, ``attempt``: theirs), every watch's in turn."""
        return [a for w in self.watches for a in w.observe(records, attempt)]

