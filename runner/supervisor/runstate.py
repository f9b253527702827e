"""The runner's side of ``state.json``: the fields its parts set, held as the file's model
(``moeconsole.runner.core.state.StateFile``, a typed struct) and written with the lifecycle's
status through the journal.

Every value is converted to its field's type when it is set: a key the model does not have, or
a value of the wrong type, is refused there with one diagnostic line (the writer's bug is named
where it happens), and the other fields are kept and written as before. Before, the state was
a dict checked only when the file was written, so one bad value stopped every later write.

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

import msgspec

from moeconsole.runner.core.state import STATE_HEARTBEAT_S, UNSET, StateError, StateFile, Status, finite_state
from moeconsole.runner.rundir.journal import Journal

STATE_FLUSH_S = 1.0

# state.json's key -> (the model's attribute, its type)
_FIELDS: dict[str, tuple[str, Any]] = {f.encode_name: (f.name, f.type) for f in msgspec.structs.fields(StateFile)}


class RunState:
    def __init__(self, journal: Journal, fields: dict[str, Any], status: Callable[[], Status],
                 diag: Callable[[str], None] | None = None) -> None:
        """``fields``: the state as loaded (its status is dropped); ``status()``: the lifecycle's;
        ``diag``: where a refused value is reported (the runner's log)."""
        self.journal = journal
        self.status = status
        self.diag = diag or journal.diag
        self.record = StateFile()
        # a newer runner's keys are not this record's: the file keeps them (``RunDir.write_state``)
        self._put({k: v for k, v in fields.items() if k in _FIELDS and k != "status"})
        self.dirty = True
        self.last_write = -math.inf  # monotonic: never written

    # ---- typed reading ------------------------------------------------------------------------
    def get(self, key: str, default: Any = None) -> Any:
        """A field as plain JSON types (``default`` when it is not set)."""
        value = getattr(self.record, _FIELDS[key][0])
        return default if value is UNSET else msgspec.to_builtins(value)

    @property
    def attempt(self) -> int:
        """The current attempt's number (0 before the first)."""
        attempt = self.record.attempt
        return attempt if isinstance(attempt, int) else 0

    @property
    def step(self) -> int | None:
        """The newest training step written for the run."""
        step = self.record.step
        return step if isinstance(step, int) else None

    def as_dict(self) -> dict[str, Any]:
        """state.json as written and as ``status`` answers: the fields and the status."""
        return {**msgspec.to_builtins(self.record), "status": self.status()}

    # ---- writing ------------------------------------------------------------------------------
    def set(self, **fields: Any) -> None:
        self._put(fields)
        self.dirty = True

    def refresh(self, **fields: Any) -> None:
        """Fields read live before each write (PIDs, offsets, lag): they do not make a write due."""
        self._put(fields)

    def setdefault(self, key: str, value: Any) -> None:
        if getattr(self.record, _FIELDS[key][0]) is UNSET:
            self.set(**{key: value})

    def _put(self, fields: dict[str, Any]) -> None:
        for key, value in fields.items():
            try:
                name, typ = _FIELDS[key]
            except KeyError:
                self.diag(f"state not written: {key!r} is not a field of state.json")
                continue
            try:
                setattr(self.record, name, msgspec.convert(finite_state(value), typ, strict=False))
            except msgspec.ValidationError as exc:
                self.diag(str(StateError(f"state field {key!r} not written: {exc}")))

    def due(self, force: bool = False) -> bool:
        """Time to write (and the journal's records are flushed first)."""
        now = time.monotonic()  # a duration: a wall-clock step never stops the state file
        retry = self.journal.unwritten or self.journal.error is not None
        changed = (self.dirty or retry) and now - self.last_write >= STATE_FLUSH_S
        return force or changed or now - self.last_write >= STATE_HEARTBEAT_S

    def write(self) -> None:
        self.last_write = time.monotonic()
        if self.journal.write_state(self.as_dict()):
            self.dirty = False

    def alert(self, level: str, rule: str, message: str, **values: Any) -> None:
        """An alert event at the run's current step and attempt."""
        self.journal.event("alert", level=level, rule=rule, step=self.step, message=message,
                           values=values, attempt=self.get("attempt"))
