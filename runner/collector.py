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
from collections.abc import Iterator
from contextlib import contextmanager

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
