"""Waiting in tests: on a condition, with a generous deadline, never for a fixed time.

The suite runs on a shared two-core machine next to other work; a fixed sleep is either too short
there or wasted everywhere else. ``until`` polls a condition and returns its first truthy value;
``until_ui`` does the same between Textual Pilot turns. Both fail with what they waited for."""
from __future__ import annotations

import time
from typing import Any, Callable, TypeVar

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 60.0
POLL_S = 0.05


def until(cond: Callable[[], T], timeout: float = DEFAULT_TIMEOUT_S, what: str = "condition",
          interval: float = POLL_S) -> T:
    """``cond()``'s first truthy value; AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def reached(cond: Callable[[], Any], timeout: float = DEFAULT_TIMEOUT_S, interval: float = POLL_S) -> bool:
    """Whether ``cond()`` became truthy within ``timeout`` (for tests that assert on it themselves)."""
    try:
        until(cond, timeout, interval=interval)
    except AssertionError:
        return False
    return True


async def until_ui(pilot: Any, cond: Callable[[], T], timeout: float = 30.0, what: str = "condition") -> T:
    """``until`` between Pilot turns, so the app keeps processing messages while we wait."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await pilot.pause(POLL_S)


def gone(pid: int) -> bool:
    """Whether ``pid`` has ended (no such process, or a zombie its parent has not reaped yet)."""
    import psutil
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def sigkill(pid: int, timeout: float = DEFAULT_TIMEOUT_S, what: str = "the process gone") -> None:
    """SIGKILL ``pid`` and wait until it has ended (:func:`gone`)."""
    import os
    import signal
    os.kill(pid, signal.SIGKILL)
    until(lambda: gone(pid), timeout, what=what)
