"""When the training was held still: the one record of those intervals, on the monotonic clock.

A training stopped (SIGSTOP, a debugger), frozen by its cgroup (`docker pause`, `systemctl
freeze`) or in a batch job the scheduler suspended (`scontrol suspend`, ``PreemptMode=SUSPEND``)
trains no step while held, but the time goes on: the step that spans the hold, and a trainer's
own average over it (ms-swift's ``train_speed(s/it)`` is ``elapsed / (global_step - start_step)``
since the trainer started, swift/trainers/patcher.py ``add_train_message`` l.17-30 in ms-swift
4.6), carry the held seconds. The runner owns the intervals (``IngestPipe.held_spans``: it opens
one when it finds the training held, from the training's last output, and closes it when the
training runs again) and passes them, with the time the records were read, into the pure monitor
functions (``Monitors.observe_arrays``), which excuse the held time (docs/monitors.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

SPANS_KEPT = 64   # the newest intervals kept: the monitors ask only since the last record read


@dataclass
class HeldSpans:
    """The attempt's held intervals ``(start, end)`` in ``time.monotonic()`` seconds, oldest
    first; the last one's end is None while the training is held still."""
    spans: list[tuple[float, float | None]] = field(default_factory=list)

    @property
    def open(self) -> bool:
        return bool(self.spans) and self.spans[-1][1] is None

    def begin(self, at: float) -> None:
        """Held since ``at`` (no-op while an interval is open; never before the last one's end)."""
        if self.open:
            return
        if self.spans:
            at = max(at, float(self.spans[-1][1] or at))
        self.spans.append((at, None))
        del self.spans[:-SPANS_KEPT]

    def end(self, at: float) -> None:
        """Running again at ``at`` (no-op when nothing is open)."""
        if self.open:
            start = self.spans[-1][0]
            self.spans[-1] = (start, max(start, at))

    def within(self, since: float, until: float, after: float = float("-inf")) -> float:
        """Seconds held in ``(since, until]`` (an interval still open counts up to ``until``), of
        the intervals that began after ``after`` only (the one hold a record already spanned is
        not counted again for the next: its tail, while it stays open a little after the output
        came back)."""
        total = 0.0
        for start, end in self.spans:
            if start <= after:
                continue
            hi = min(until, until if end is None else end)
            total += max(0.0, hi - max(since, start))
        return total

    def began(self, until: float) -> float:
        """When the newest interval begun by ``until`` began (-inf: none): the hold a record read
        at ``until`` spans, once it is excused."""
        return max((start for start, _ in self.spans if start <= until), default=float("-inf"))


    def move_start(self, at: float) -> None:
        """The open interval begins at ``at`` instead (no earlier than it began): output written before the
        hold was found was read after it (``reading_holds``' log size), so the hold began after that output."""
        if self.open:
            start = self.spans[-1][0]
            self.spans[-1] = (max(start, at), None)


class LogMark(NamedTuple):
    """The job's log as it was when Slurm was asked: the file the path named (device, inode) and its size."""
    dev: int
    ino: int
    size: int


def size_when_asked(mark: LogMark | None, read: tuple[int, int] | None) -> int | None:
    """The size ``mark`` took when it is of the file the runner reads (``read``: the tailer's (device, inode)),
    else None (``reading_holds`` goes by the times). The tailer keeps reading the job's file however its name
    moves (logrotate's rename-and-create, ingest/tail.py), and slurmstepd keeps writing its ``--output`` fd: the
    path then names a new file, whose size says nothing of what the job wrote (review R48 D2)."""
    if mark is None or read is None or (mark.dev, mark.ino) != tuple(read):
        return None
    return mark.size


def reading_holds(held: bool, asked_at: float, last_output: float, asked_size: int | None = None,
                  read_to: int | None = None) -> bool:
    """Does a scheduler's reading of the job (``held``: Slurm said ``SUSPENDED``/``STOPPED``), asked at
    ``asked_at``, prove a hold since the training's last output read at ``last_output`` (same clock)? Only a
    held reading asked after that output: the job printed nothing since, and was held then. One asked before
    it is stale (its answer came after the output: the job ran again meanwhile, R38 D1), and a second held
    reading in a row is a new hold once output came between them: the gang scheduler's time slices
    (``PreemptMode=SUSPEND,GANG``: suspended, a slice run, suspended again, and squeue, asked each
    ``poll_s``, may read SUSPENDED each time, never RUNNING).

    Since round 19 (review R45 D6), where the job's log's size when Slurm was asked is known (``asked_size``) and
    ``read_to`` is how far the runner has read that log: a held reading proves a hold since the last output
    when every byte read was written by then (``read_to <= asked_size``): when the output was written, not when
    the runner read it. Output written just before a suspension and read after the question (a busy runner,
    a shared filesystem's late size) no longer makes a true SUSPENDED stale, and a late answer after the job
    ran again is still stale: it printed past the size. No clock is compared (a log on an NFS or Lustre
    server carries the server's clock in its mtime). Without a size: the times, as before."""
    if asked_size is not None and read_to is not None:
        return held and read_to <= asked_size
    return held and asked_at > last_output
