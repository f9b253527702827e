"""The cyclic garbage collector paused while a reader builds and drops objects by the hundred
thousand that hold no cycles (``collector_paused``).

The collector is the process's, not a thread's: Python counts the containers made since its
last pass and runs one after every 700, over all of them. A reader that makes a tuple per line
and frees them a block later (the bulk history reader: 5,000 rows of 13 values per 2 MiB block;
a checkpoint index's entries) pays for passes that never find garbage, only the refcounts free
it. Paused, nothing it makes waits: what holds no cycle is freed when its last reference goes,
as before.
"""
from __future__ import annotations

import gc
import threading
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")

_pause_lock = threading.Lock()
_pause_depth = 0             # readers in progress under one pause (threads of the console or the runner)
_pause_restore = False       # whether the collector was on when the first of them began


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector, which is the process's, not the thread's: while a reader
    runs, every thread goes without automatic collection (explicit ``gc.collect()`` still
    works). Readers that overlap share one pause: it begins with the first and ends with the
    last, and then the collector is as it was before the first (on only if it was on; one
    already off is left off). Without the count, the first reader to end turned the collector
    back on under a reader still running in another thread."""
    global _pause_depth, _pause_restore
    with _pause_lock:
        if _pause_depth == 0:
            _pause_restore = gc.isenabled()
            gc.disable()
        _pause_depth += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pause_depth -= 1
            if _pause_depth == 0 and _pause_restore:
                gc.enable()


def paused_each(items: Iterable[T]) -> Generator[T, None, None]:
    """``items``, each one made and then worked on by the loop that takes it with the collector
    paused (``collector_paused``), and the collector as it was between two: a reader in a thread
    of a process that has other work (the console's UI) pauses the collector for its own bulk
    work only, not for every thread for the whole read. What the other threads made meanwhile is
    counted as usual: the first of them to allocate once the collector is on again runs the
    pass that is due."""
    it = iter(items)
    while True:
        with collector_paused():
            try:
                item = next(it)
            except StopIteration:
                return
            yield item   # the loop's body runs here, paused; closing this generator ends the pause
