"""What wakes the runner's loop: one ``select`` over the signal wakeup pipe (SIGCHLD: a child
of ours ended), the control server's descriptor, and an adopted leader's pidfd. An exit or a
request is seen at once, never after a poll interval; without either the loop wakes at the
next deadline it was given."""
from __future__ import annotations

import os
import selectors
import signal
from typing import Any, Callable

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# The longest the runner's loop waits for a wakeup (the log tail's cadence while running): the one
# owner of the loop's tick (``supervisor`` waits at most this; ``ingest_pipe.RUNNER_AWAY_S`` is ten)
LOOP_TICK_S = 0.1


class Wakeups:
    def __init__(self, control_fd: int, on_stop: Callable[[], Any], diag: Callable[[str], None]) -> None:
        """``on_stop()``: SIGTERM, SIGINT or SIGHUP reached the runner; it exits and leaves the
        training running (a new runner adopts it)."""
        self.sel = selectors.DefaultSelector()
        self.rfd, self.wfd = os.pipe()
        os.set_blocking(self.rfd, False)
        os.set_blocking(self.wfd, False)
        signal.set_wakeup_fd(self.wfd)
        signal.signal(signal.SIGCHLD, lambda *_: None)

        def stop(signum: int, _frame: Any) -> None:
            on_stop()
            diag(f"runner got {signal.Signals(signum).name}; leaving training running")
        for s in STOP_SIGNALS:
            signal.signal(s, stop)
        self.sel.register(self.rfd, selectors.EVENT_READ, "wake")
        self.sel.register(control_fd, selectors.EVENT_READ, "control")
        self.pidfd: int | None = None

    def wait(self, timeout: float, pidfd: int | None) -> set[str]:
        """Sleep until something is ready or ``timeout``: {"control", "pidfd", "wake"} of what
        was. ``pidfd``: the adopted leader's (watched until it fires once; the caller closes it)."""
        if pidfd is not None and pidfd != self.pidfd:
            self.sel.register(pidfd, selectors.EVENT_READ, "pidfd")
            self.pidfd = pidfd
        ready: set[str] = set()
        for key, _ in self.sel.select(timeout=timeout):
            ready.add(key.data)
            if key.data == "wake":
                try:
                    while os.read(self.rfd, 512):
                        pass
                except BlockingIOError:
                    pass
            elif key.data == "pidfd" and self.pidfd is not None:
                self.sel.unregister(self.pidfd)
                self.pidfd = None
        return ready

    def close(self) -> None:
        self.sel.close()
