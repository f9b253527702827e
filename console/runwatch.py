"""When to look at a run again, and the poll loop itself: the console's polling without any UI
(as toolong's ``watcher.py``; no Textual import here).

``Poller.run`` is the run screen's poll thread: it reads a snapshot (``RunSource.poll``: GPU
telemetry on the timer, not on every file change), hands it to ``deliver`` as a ``Polled`` (the
screen keeps it in ``Waiting``, where a newer one replaces it, and is told once: a slow or
stalled UI drops stale snapshots instead of queueing them), then asks ``RunWatch.wait_next`` and polls again when it returns: at the next tick (``interval``), at once after ``poke()`` (a request the user
just sent), or when the run directory changes (``moeconsole.runner.rundir.dirwatch``, coalesced: a log
written a thousand lines a second is still read in a few polls). It never blocks for longer than
a quarter second without looking at ``cancelled()``, since a thread cannot be force-cancelled
and the app's exit waits for it.
"""
from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moeconsole.runner.rundir import dirwatch, jsonio, rundir

if TYPE_CHECKING:
    from moeconsole.console.source import RunSource
    from moeconsole.runner.rundir.snapshot import Snapshot

WATCH_GAP_S = 0.05  # a change in the run directory polls at once, but not more often than this
CANCEL_CHECK_S = 0.25


class RunWatch:
    def __init__(self, run_dir: Path, interval: float) -> None:
        self.interval = interval
        # poke() writes here; the file watch wakes the poller when the run directory changes
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._run_dir = run_dir
        self._quiet_names = quiet_names(rundir.RunDir(Path(run_dir)))
        self._watch: dirwatch.DirWatch | None = None   # made by start(), on the poll thread
        self._watch_started = False
        self._polled_at = float("-inf")

    def start(self) -> None:
        """Watch the run directory from now on (once). The poller calls it after the first
        frame and before the poll it guards, so no change is missed and the watcher's setup stays
        off the first paint."""
        if not self._watch_started:
            self._watch_started = True
            self._watch = dirwatch.watch(self._run_dir)

    def wait_next(self, cancelled: Callable[[], bool]) -> bool:
        """Sleep until the next tick, a ``poke()``, a change in the run directory, or
        cancellation. True when a file change (not the timer or a request) ended the wait."""
        self.start()
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
                if self._watch.drain(self.wakes_poll):
                    gap = WATCH_GAP_S - (time.monotonic() - self._polled_at)
                    if gap > 0:
                        time.sleep(gap)
                    self._watch.drain()
                elif self._wake_r not in ready:
                    continue   # only files a poll woken now would not read changed: wait on
            # A request (poke) is answered by a full poll, also when it came in during the
            # coalescing gap; it is drained only here, so none is ever lost to a file wake-up.
            requested = self._wake_r in ready or bool(select.select([self._wake_r], [], [], 0)[0])
            if requested:
                _drain_fd(self._wake_r)
            return not requested
        return False

    def wakes_poll(self, name: str) -> bool:
        """Whether a change to the file ``name`` of the run directory needs a poll at once:
        not an atomic write's temp file (``jsonio.is_temp_name``: what it holds shows when it is
        renamed over its real name, a change of its own), nor one of ``quiet_names``."""
        return not (name in self._quiet_names or jsonio.is_temp_name(name))

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


def quiet_names(run: rundir.RunDir) -> frozenset[str]:
    """The files of a run directory whose change a poll woken at once would not read:
    ``ranks.json`` (the nodes' step times: with GPU telemetry on, read by the timer's poll alone,
    which reads the agents' files, and a poll woken by a file leaves the nodes as they were;
    with it off, every poll reads them (``RunSource.poll``), and a change of ranks.json alone
    is shown at the next tick or the next other change), ``series.json`` (the
    chart book, read once as the screen opens; then metrics.jsonl feeds it) and
    ``gpu-history.json`` (the GPU view reads it on its own timer). The runner of a 1,024-rank
    run rewrites ranks.json and series.json at its flushes, and each atomic write made two
    wake-ups (its temp file, then its rename): polls that read and drew the same run again."""
    return frozenset({run.rank_times.name, run.series.name, run.gpu_history.name})


@dataclass(frozen=True)
class Polled:
    """One poll's result: a snapshot, or why reading the run failed."""
    snapshot: Snapshot | None
    error: str | None = None
    last_output_t: float | None = None   # when the training last showed life (wall time)
    heartbeat_s: float | None = None     # the recipe's hang limit, once the run has been quiet
    files_only: bool = False             # the first frame: no GPU reading or process scan yet
    line_format: Any = None              # the log's declared line format (read once, after the first frame)


class Waiting:
    """The polls waiting for the screen, filled by the poll thread and taken by the screen: the
    newest snapshot and the newest failed read since the screen last took them, no more. A
    screen that does not get a turn (a terminal that stopped reading its output: Ctrl-S, a
    stalled SSH connection) held a message per poll before, each with its snapshot's records
    and process lists (about 17 KB each in bench_ui's setup, 8 GPUs, traced), one a second for as long as it stalled; now at
    most two polls, however long. ``put`` says whether the screen must be told (nothing was
    waiting: one message per turn of the screen)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._polled: Polled | None = None
        self._failed: Polled | None = None

    def put(self, polled: Polled) -> bool:
        with self._lock:
            empty = self._polled is None and self._failed is None
            if polled.snapshot is None and polled.error is not None:
                self._failed = polled
            else:
                self._polled = polled
            return empty

    def take(self) -> list[Polled]:
        """The failed read (to be said) then the newest snapshot; empties the slots."""
        with self._lock:
            out = [p for p in (self._failed, self._polled) if p is not None]
            self._polled = self._failed = None
            return out


class Poller:
    """The poll loop of one run, UI-free: ``run(deliver, cancelled)`` on a thread."""

    def __init__(self, source: RunSource, watch: RunWatch, *, quiet_shown_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        self.source = source
        self.watch = watch
        self.quiet_shown_s = quiet_shown_s
        self.clock = clock
        self.heartbeat_s: float | None = None
        self.line_format: Any = None
        self._format_read = False
        self._gpu_at = float("-inf")

    def poll(self, full: bool, files_only: bool = False) -> Polled:
        """One snapshot (``full``: GPU telemetry too; ``files_only``: from the run's files alone,
        the first frame); a bad file becomes an error, never an exception."""
        try:
            if full and not files_only:
                self._gpu_at = time.monotonic()
            snap = self.source.poll(telemetry=full, files_only=files_only)
            last_output = self.source.last_output_t(snap)
            if self.heartbeat_s is None and not files_only and last_output is not None and \
                    self.clock() - last_output >= self.quiet_shown_s:
                # the hang limit is shown beside the quiet time only: the recipe (and its YAML
                # reader) is read once the run has been quiet, not on every attach, and never for
                # the first frame (the recipe's model imports the run policy's modules, numpy
                # and YAML: about 0.2 s of CPU, more than the rest of the poll and the paint's
                # layout together); the poll after it, at once, brings the limit
                self.heartbeat_s = self.source.heartbeat_s()
            if not files_only and not self._format_read:
                self._format_read = True
                self.line_format = self.source.line_format()
            return Polled(snap, last_output_t=last_output, heartbeat_s=self.heartbeat_s, files_only=files_only,
                          line_format=self.line_format)
        except Exception as exc:  # a bad file must not kill the poller: show it and go on
            return Polled(None, f"{type(exc).__name__}: {exc}", heartbeat_s=self.heartbeat_s)

    def run(self, deliver: Callable[[Polled], object], cancelled: Callable[[], bool],
            painted: Callable[[float], object] | None = None, first: FirstPoll | None = None) -> None:
        """Poll until ``cancelled()``: at once, then at each tick, poke or file change. The first
        frame comes from the run's files alone and the full poll follows at once (a first paint
        never waits on NVML, the process scan, the directory watch's start or the recipe's hang
        limit). ``painted(timeout)``: waits until the first frame is on screen (at most
        ``timeout`` s, the poll interval); the full poll waits for it, so that its work does not
        share the interpreter with the first frame's layout and paint. A poll woken by a file
        change between two ticks skips the GPU telemetry (shown again from the last full poll).
        ``first``: the first frame's poll, already started (``FirstPoll``); delivered here unless
        the screen took it. Closes the watch at the end."""
        full = True
        try:
            if not cancelled():
                if first is None:
                    deliver(self.poll(full, files_only=True))
                else:
                    while not first.wait(CANCEL_CHECK_S):
                        if cancelled():
                            return
                    polled = first.take()
                    if polled is not None:
                        deliver(polled)
                if painted is not None:
                    painted(self.watch.interval)
            self.watch.start()   # after the first frame, before the poll that reads what it would report
            while not cancelled():
                deliver(self.poll(full))
                woken_by_file = self.watch.wait_next(cancelled)
                full = not woken_by_file or time.monotonic() - self._gpu_at >= 0.75 * self.watch.interval
        finally:
            self.watch.close()


class FirstPoll:
    """The first frame's poll (the run's files alone, ``Poller.poll(files_only=True)``) on a thread
    of its own, started as the run screen is composed: its result is there when the screen mounts,
    so the screen's first layout and paint show the run. Without it the screen was laid out and
    painted empty first, then again when the poll's message came (docs/benchmarks-paint.md). Taken
    once: by the screen at mount, or by the poll thread when it was not ready by then."""

    def __init__(self, poller: Poller) -> None:
        self._poller = poller
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._taken = False
        self._polled: Polled | None = None
        threading.Thread(target=self._run, name="moeconsole-first-poll", daemon=True).start()

    def _run(self) -> None:
        try:
            self._polled = self._poller.poll(True, files_only=True)   # a bad file is a Polled error
        finally:
            self._done.set()

    def wait(self, timeout: float) -> bool:
        """True once the poll is done (within ``timeout`` seconds)."""
        return self._done.wait(timeout)

    def take(self) -> Polled | None:
        """The poll's result, the first time it is asked for once done; None after that (or
        before it is done)."""
        with self._lock:
            if self._taken or not self._done.is_set():
                return None
            self._taken = True
            polled, self._polled = self._polled, None   # not kept for the screen's whole life
            return polled


def _drain_fd(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass
    except (BlockingIOError, OSError):
        pass
