"""A running tally of a run's events: the counts a dashboard needs that no single file holds.

Folded one event at a time from ``events.jsonl`` (append-only), so an exporter that lives for
days reads each event once. Pure: no files, no clock; tests feed it plain dicts.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from moeconsole.runner.core.policy import is_crash_class


@dataclass
class EventTally:
    """What the events of one run add up to."""

    attempt: int = 0
    attempt_started_at: float | None = None
    crashes: Counter[str] = field(default_factory=Counter)          # crash class -> count
    checkpoints: Counter[str] = field(default_factory=Counter)      # verdict -> count
    verified_step: int | None = None                                # newest checkpoint that verified ok
    verified_at: float | None = None
    alerts_total: Counter[tuple[str, str]] = field(default_factory=Counter)   # (rule, level) -> count
    alerts_active: Counter[tuple[str, str]] = field(default_factory=Counter)  # same, this attempt only
    events_seen: int = 0

    def add(self, ev: Mapping[str, Any]) -> None:
        self.events_seen += 1
        kind = ev.get("type")
        t = ev.get("t") if isinstance(ev.get("t"), (int, float)) else None
        if kind == "attempt_start":
            attempt = ev.get("attempt")
            self.attempt = attempt if isinstance(attempt, int) else self.attempt + 1
            self.attempt_started_at = t
            self.alerts_active.clear()
        elif kind == "crash":
            cls = str(ev.get("class") or "unknown")
            if is_crash_class(cls):  # a user's kill is no crash (the crash-loop rule counts these)
                self.crashes[cls] += 1
        elif kind == "checkpoint":
            verdict = str(ev.get("verdict") or "unknown")
            self.checkpoints[verdict] += 1
            step = ev.get("step")
            if ev.get("ok") is True and isinstance(step, int) and (self.verified_step is None
                                                                  or step >= self.verified_step):
                self.verified_step, self.verified_at = step, t
        elif kind == "alert":
            if ev.get("update") or ev.get("resolved"):
                return  # an alert that changes its numbers, or ends, is still the one alert
            key = (str(ev.get("rule") or "unknown"), str(ev.get("level") or "warning"))
            self.alerts_total[key] += 1
            self.alerts_active[key] += 1
