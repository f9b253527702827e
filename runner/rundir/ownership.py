"""Whether a live runner's run is still its own (hostile rounds 29 and 30).

A runner whose machine could not write to the shared run directory for longer than ``stale_after_s``
(a node cut off from the filesystem, a runner stopped) may find its run taken over when it comes back:
a `restart` on another machine started the next attempt under a runner there, or a `kill
--machine-gone` there recorded the run killed (``rundir.taken_over_by`` reads that from state.json).
From then on nothing of the run is this runner's to write.

``Ownership`` is the one place that question is asked and remembered. Its askers do not call each
other: the journal asks before it writes records (what waits is dropped, never written, once the run
is lost), the supervisor's state write asks before state.json, and the loop asks at the top of every
turn and decides to stand down. Each ask within ``every_s`` of the last look is answered from memory
(no stat per record); a loss, once seen, is kept.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from moeconsole.runner.rundir import rundir

OWNER_CHECK_S = 1.0   # how often state.json is looked at for a takeover from another machine (one stat)


class Ownership:
    """This runner's claim on its run: its runner record (``claim``), when state.json was last looked
    at, and the machine that took the run over once a look saw it (``lost_to``)."""

    def __init__(self, every_s: float = OWNER_CHECK_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self.clock = clock
        self.mine: Mapping[str, Any] | None = None   # the runner record it wrote (``rundir.runner_record`` + start_time)
        self.looked = clock()                        # the last look, on the monotonic clock
        self.lost_to: str | None = None              # the machine the run is now another's on (kept once seen)

    def claim(self, record: Mapping[str, Any]) -> None:
        """The runner record this runner wrote into state.json: a takeover is a later write by another
        machine (``rundir.taken_over_by``)."""
        self.mine = dict(record)

    def still_ours(self, here: rundir.RunDir, *, now: bool = False) -> bool:
        """False once the run is another machine's. Looks at ``here``'s state.json (one stat while it
        is the file this runner wrote last: ``RunDir.state_taken_over``) when ``every_s`` passed since
        the last look, or at once with ``now`` (before state.json itself is written); else answers
        from the last look. Without a claim (a runner not started yet), the run is its own."""
        if self.lost_to is not None:
            return False
        t = self.clock()
        if not now and t - self.looked < self.every_s:
            return True
        self.looked = t
        if self.mine is None:
            return True
        self.lost_to = here.state_taken_over(self.mine)
        return self.lost_to is None
