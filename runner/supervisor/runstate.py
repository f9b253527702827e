"""The runner's side of ``state.json``: the fields its parts set, written with the lifecycle's
status through the file's model (``moeconsole.runner.core.state.StateFile``, via the journal).

The status is not a field here: it lives in the lifecycle alone (``moeconsole.runner.core.lifecycle.Life``,
changed only by ``step``) and is added when the file is written and when ``status`` answers,
so the file can never say one status while the runner acts on another. Writing is throttled:
a changed state at most every ``STATE_FLUSH_S``, an unchanged one every ``STATE_HEARTBEAT_S``
(readers judge a runner stale by the file's age), and at once when forced (a status change).
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable

from moeconsole.runner.core.state import Status
from moeconsole.runner.rundir.journal import Journal

STATE_FLUSH_S = 1.0
STATE_HEARTBEAT_S = 2.0    # state.json is rewritten at least this often while the runner lives


class RunState:
    def __init__(self, journal: Journal, fields: dict[str, Any], status: Callable[[], Status]) -> None:
        """``fields``: the state as loaded (without its status); ``status()``: the lifecycle's."""
        fields.pop("status", None)
        self.journal = journal
        self.fields = fields
        self.status = status
        self.dirty = True
        self.last_write = -math.inf  # monotonic: never written

    # ---- typed reading ------------------------------------------------------------------------
    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)

    @property
    def attempt(self) -> int:
        """The current attempt's number (0 before the first)."""
        return int(self.fields.get("attempt") or 0)

    @property
    def step(self) -> int | None:
        """The newest training step written for the run."""
        step = self.fields.get("step")
        return step if isinstance(step, int) else None

    def as_dict(self) -> dict[str, Any]:
        """state.json as written and as ``status`` answers: the fields and the status."""
        return {**self.fields, "status": self.status()}

    # ---- writing ------------------------------------------------------------------------------
    def set(self, **fields: Any) -> None:
        self.fields.update(fields)
        self.dirty = True

    def setdefault(self, key: str, value: Any) -> None:
        if key not in self.fields:
            self.set(**{key: value})

    def due(self, force: bool = False) -> bool:
        """Time to write (and the journal's records are flushed first)."""
        now = time.monotonic()  # a duration: a wall-clock step never stops the state file
        retry = bool(self.journal.pending or self.journal.error)
        changed = (self.dirty or retry) and now - self.last_write >= STATE_FLUSH_S
        return force or changed or now - self.last_write >= STATE_HEARTBEAT_S

    def write(self) -> None:
        self.last_write = time.monotonic()
        if self.journal.write_state(self.as_dict()):
            self.dirty = False

    def alert(self, level: str, rule: str, message: str, **values: Any) -> None:
        """An alert event at the run's current step and attempt."""
        self.journal.event("alert", level=level, rule=rule, step=self.fields.get("step"), message=message,
                           values=values, attempt=self.fields.get("attempt"))
