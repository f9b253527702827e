"""When to look at a run again: the console's poll timing, without any UI (as toolong's
``watcher.py``).

The run screen's poll thread asks ``RunWatch.wait_next`` after each snapshot and polls again
when it returns: at the next tick (``interval``), at once after ``poke()`` (a request the user
just sent), or when the run directory changes (``moeconsole.runner.rundir.dirwatch``, coalesced: a log
written a thousand lines a second is still read in a few polls). It never blocks for longer than
a quarter second without looking at ``cancelled()``, since a thread cannot be force-cancelled
and the app's exit waits for it.
"""
from __future__ import annotations

import os
import select
import time
from collections.abc import Callable
from pathlib import Path

from moeconsole.runner.rundir import dirwatch

WATCH_GAP_S = 0.05  # a change in the run directory polls at once, but not more often than this
CANCEL_CHECK_S = 0.25


class RunWatch:
    def __init__(self, run_dir: Path, interval: float) -> None:
        self.interval = interval
        # poke() writes here; the file watch wakes the poller when the run directory changes
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._watch = dirwatch.watch(run_dir)
        self._polled_at = float("-inf")

    def wait_next(self, cancelled: Callable[[], bool]) -> bool:
        """Sleep until the next tick, a ``poke()``, a change in the run directory, or
        cancellation. True when a file change (not the timer or a request) ended the wait."""
        self._polled_at = time.monotonic()
        deadline = self._polled_at + self.interval
        fds = [self._wake_r] + ([self._watch] if self._watch is not None else [])
        while not cancelled():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select(fds, [], [], min(CANCEL_CHECK_S, left))
            if not ready:
                continue
            if self._watch is not None and self._watch in ready:
                gap = WATCH_GAP_S - (time.monotonic() - self._polled_at)
                if gap > 0:
                    time.sleep(gap)
                self._watch.drain()
            # A request (poke) is answered by a full poll, also when it came in during the
            # coalescing gap; it is drained only here, so none is ever lost to a file wake-up.
            requested = self._wake_r in ready or bool(select.select([self._wake_r], [], [], 0)[0])
            if requested:
                _drain_fd(self._wake_r)
            return not requested
        return False

    def poke(self) -> None:
        """Poll at once (after a request), instead of at the next tick. Safe from any thread."""
        try:
            if self._wake_w >= 0:
                os.write(self._wake_w, b"w")
        except (BlockingIOError, OSError):
            pass  # a wake-up is already pending

    def close(self) -> None:
        """Called by the poll thread as it ends (never while it selects on them)."""
        r, w, self._wake_r, self._wake_w = self._wake_r, self._wake_w, -1, -1
        for fd in (r, w):
            if fd >= 0:
                os.close(fd)
        if self._watch is not None:
            self._watch.close()
            self._watch = None


def _drain_fd(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except (BlockingIOError, OSError):
        pass
