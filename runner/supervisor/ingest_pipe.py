"""The runner's ingest pipe: ``train.log`` slice by slice into the run's records.

The runner's loop reads the log a sub-slice at a time (``read``: ``INGEST_SUBSLICE_BYTES``, up
to ``INGEST_SLICE_BYTES`` per loop turn) and serves the control socket between sub-slices itself,
so a flood of lines never makes a kill wait. Each sub-slice goes to the
ingest package (``moeconsole.runner.ingest.live``: batches of records, save marks and eval marks) and
carries each batch on: the rows to write (``rows_to_write``: a step is written once; an inferred
step never shadows a real one) into ``metrics.jsonl`` in one append, evaluations into
``evals.jsonl``, the monitors and the chart book (``series.json``) from the batch's columns,
the ranks' step times (``ranks.json``), the memory watch, and every save judged where it stands
among the steps (at verification the excursion may be over).

The pipe owns the attempt's progress as the log shows it (step, loss, step time, the last
output) and the hang clock built on it, on the monotonic clock (a wall-clock step is no
silence). It calls nobody back: each ``read`` *returns* what happened (``Ingested``: the state
fields that changed, the saves seen, a divergence), and the runner's loop applies it through the
lifecycle.
"""
from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import msgspec
import numpy as np

from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.core import readctx
from moeconsole.runner.core.held import HeldSpans, LogMark, reading_holds, size_when_asked
from moeconsole.runner.core.monitors import Monitors, Thresholds
from moeconsole.runner.core.readctx import ReadingContext
from moeconsole.runner.core.record_watches import RecordWatches
from moeconsole.runner.core.state import QUIET_SHOWN_S
from moeconsole.runner.ingest.live import LiveReader, TailLines, Written, metric_lines, newest_record, rows_to_write
from moeconsole.runner.ingest import formats
from moeconsole.runner.ingest.records import eval_record, step_numbered
from moeconsole.runner.ingest.tail import FileTailer
from moeconsole.runner.rundir import jsonio, ranktimes, rundir, seriesfile
from moeconsole.runner.rundir.journal import Journal
from moeconsole.runner.rundir.secrets import Redactor
from moeconsole.runner.supervisor.memory_feed import MemoryFeed
from moeconsole.runner.supervisor.wakeups import LOOP_TICK_S

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import Heartbeat

T = TypeVar("T")   # what ``IngestPipe.own_work``'s work returns
INGEST_SLICE_BYTES = 1024 * 1024  # log bytes parsed per loop turn: the state file never waits longer
INGEST_SUBSLICE_BYTES = 256 * 1024  # ... read in pieces this big, the control socket served between them
# More log than one sub-slice unread: the runner is catching up (state.json's ``ingest.catching_up``;
# the run screen and ``--json`` say so). Less is the ordinary distance between two loop turns.
CATCHING_UP_BYTES = INGEST_SUBSLICE_BYTES
# Tests only: seconds the loop waits between sub-slices while the log is behind (0: the next one at
# once), so a backlog lasts long enough to be seen without a timed test.
INGEST_PACE_ENV = "MOECONSOLE_INGEST_PACE_S"
LOG_TAIL_KEEP = 2000       # lines kept for crash classification
STARTUP_DEFAULT_S = 1800.0  # heartbeat allowance before the first step when the recipe names none
# A gap longer than this between two of the runner's clock reads on the hang clock (its look at the
# log, its hang check, its loop starting to wait: ``IngestPipe.look``/``hang``/``watched``; the loop
# waits at most a loop tick, ``wakeups.LOOP_TICK_S``) is the runner's own absence: stopped, frozen
# with its cgroup, starved. The silence it did not watch is not counted on the hang clock; its own
# slow work, a gap on every turn, is. Ten ticks (1 s).
RUNNER_AWAY_S = 10 * LOOP_TICK_S
# A gap is the runner's absence unless each of this many loop turns before it had one too: then the
# runner is slow on every turn (a stalled disk, a starved machine), and crediting it would hide a
# hang for as long as the slowness lasts: it delays a hang by at most this many gaps. Work that is
# slow on some turns only is timed where it runs and never credited (``IngestPipe.own_work``: the
# GPU memory sample, review R43).
SLOW_TURNS = 2
# While the training is held still (``IngestPipe.held``), whether it still is is asked this often:
# a thaw or a `kill -CONT` clears state.json's ``held`` within it, output or not.
HELD_RECHECK_S = 1.0
SERIES_SAVE_S = 3.0        # series.json (the bounded chart series) at most this often; readers add the rest
PROGRESS_FIELDS = ("step", "max_steps", "last_loss", "min_loss", "step_time_s", "step_numbered")


@dataclass
class Ingested:
    """What reading the log brought, for the runner's loop to apply (``IngestPipe.read``)."""
    read: bool = False        # new bytes were there
    more: bool = False        # a whole sub-slice was read: more is waiting
    progress: dict[str, Any] = field(default_factory=dict)  # state.json's progress fields that changed
    saves: list[tuple[str | None, bool]] = field(default_factory=list)  # (path, suspect) saves the log showed
    divergence: str | None = None  # a non-finite loss (the first one's message): the lifecycle stops the attempt
    divergence_step: int | None = None  # ... its step: where the divergence began
    trainer: bool = False     # the log showed transformers' Trainer opening its loop (a ``trainer_loop`` mark)

    def add(self, other: "Ingested") -> "Ingested":
        """This result followed by ``other`` (several reads as one)."""
        self.read, self.more = self.read or other.read, other.more
        self.progress.update(other.progress)
        self.saves += other.saves
        self.trainer = self.trainer or other.trainer
        if self.divergence is None:
            self.divergence, self.divergence_step = other.divergence, other.divergence_step
        return self


class IngestPipe:
    def __init__(self, run: rundir.RunDir, journal: Journal, redactor: Redactor, memory: MemoryFeed,
                 thresholds: Thresholds, *, start_offset: int, attempt: int, progress: dict[str, Any],
                 diag: Callable[[str], None], line_format: Any = None, start_seen: str | None = None,
                 start_context: dict | None = None) -> None:
        """``progress``: the state's progress fields so far (a new runner continues the minimum
        loss); ``line_format``: the recipe's declared ``log_format``; ``start_seen``: the digest
        of the bytes before ``start_offset`` the state saved with it (``Journal.log_seen``);
        ``start_context``: the reading context saved with it (``Journal.log_context``), read on
        with when the log is read from that offset (not from its start: a log rewritten meanwhile)."""
        self.run = run
        self.journal = journal
        self.redactor = redactor
        self.memory = memory
        self.thresholds = thresholds
        self.diag = diag
        self.attempt = attempt
        self.progress = {k: progress.get(k) for k in PROGRESS_FIELDS}
        # pinned: the file the training writes is read, however train.log is renamed or replaced
        self.tailer = FileTailer(run.log, start_offset=start_offset, max_read=INGEST_SUBSLICE_BYTES, pinned=True,
                                 seen=start_seen)
        # the reading context the offset was saved with (core.readctx), for a log read on from there
        context = _context(start_context) if self.tailer.offset == start_offset > 0 else None
        journal.mark(self.tailer.offset, start_seen, start_context if context is not None else None)
        self._marked: tuple[int, int, str | None] = (-1, -1, None)   # (offset, tailer resets, digest) last marked
        self._context_at: tuple[int, ...] | None = None   # (mark, bytes fed, resets, lines, records) of the context saved
        self._context_saved: dict | None = None
        # the ingest pipe (moeconsole.runner.ingest) on each slice of train.log, with the recipe's log_format
        self.reader = LiveReader(diagnostics=diag, line_format=line_format)
        self.reader.restore_context(context)
        self.log_tail = TailLines(LOG_TAIL_KEEP)  # for crash classification: bytes, decoded when judged
        self.monitors = Monitors(thresholds)
        # the monitors of the record dicts (LR schedule restarted, GRPO's flat rewards): core.record_watches,
        # the one list ``parse`` runs too
        self.watches = RecordWatches(thresholds)
        # The charts of the whole run in bounded memory, saved as series.json for every reader.
        self.book = seriesfile.load_book(run)
        self._book_saved = (self.book.metric_count, self.book.offset)
        self._book_saved_at = 0.0
        self._series_failed_at: float | None = None   # the last failed save (monotonic), None: saved
        self.rank_times = ranktimes.RankTimes()
        self.written = Written(None, None)  # the attempt's last step written (an inferred one never shadows a real)
        self.log_every: int | None = None   # the gap between the attempt's last two steps written (its logging cadence)
        self.steps_seen = 0
        self.stopped_said: list[int] = []  # the stopped processes the last ``stopped`` alert named
        self.no_ddp = formats.NotDistributedWatch()   # transformers' no-DDP warning (once an attempt)
        self.on_cpu = False   # the attempt's log says it found no GPU (``formats.swift_loads_on_cpu``)
        # the training held still (state.json's ``held``: ``HeldRec``'s fields), None while it runs
        self.held: dict[str, Any] | None = None
        self._held_checked = -math.inf  # monotonic: when ``held`` was last asked again
        self._ask_held = False  # a takeover: ``held`` asked at the first tick (the old runner's fact)
        self.job_held = False   # the attempt's batch job suspended (Slurm's state, ``slurm.text.HELD_STATES``)
        self._job_said_at = -math.inf   # when the last reading of Slurm's state taken was asked (squeue, each ``poll_s``)
        self._job_held_size: int | None = None   # the job's log's size when the reading holding it was asked
        # when the training was held still (``held`` or ``job_held``): the one record of it the
        # monitors excuse (``core.held``); an interval starts at the training's last output
        self.held_spans = HeldSpans()
        self.lagging = False  # the last read filled a whole sub-slice: more is waiting
        self.bytes_read = self.lines_read = 0  # by this runner: the mean line length estimates the lines behind
        self._got = Ingested()  # what the read under way brought
        now = time.monotonic()  # the hang clock: monotonic, never the wall clock
        self.last_output = now
        self.last_progress = now
        self.last_data = now  # monotonic: when the training's output was last read (a hold starts after it)
        self.last_look = now  # the runner's last clock read on the hang clock (a look, a hang check, a wait)
        self._turn = 0        # the runner's loop turns (``watched``: one a turn)
        self._gap_turns: set[int] = set()   # the recent turns that had a gap over RUNNER_AWAY_S

    # ---- attempts ---------------------------------------------------------------------------
    def launched(self, attempt: int) -> None:
        """A new attempt: fresh monitors, counters and log tail."""
        self.attempt = attempt
        self.monitors = Monitors(self.thresholds)
        if not self.watches.observed:   # a runner that adopted the run: the earlier attempts' records, once
            self.watches.seed(rec for _, rec in jsonio.iter_jsonl(self.run.metrics))
        self.memory.new_attempt()
        self.log_tail.clear()
        self.written = Written(None, None)
        self.log_every = None
        self.steps_seen = 0
        self.stopped_said = []
        self.no_ddp.new_attempt()
        self.on_cpu = False
        self.held = None
        self.job_held, self._job_said_at, self._job_held_size = False, -math.inf, None
        self.held_spans = HeldSpans()
        self.last_output = self.last_progress = self.last_data = time.monotonic()

    def follow(self, log_fd: int) -> None:
        """The new attempt writes the file ``log_fd`` is open on: read that one from now on (a
        train.log renamed away meanwhile, as logrotate does, left the last attempt's file behind)."""
        try:
            switched = self.tailer.follow(log_fd)
        except OSError as exc:  # no /proc: the path is read, as the tailer opens it
            self.diag(f"cannot read the new attempt's log through its descriptor: {exc}")
            return
        if switched:
            self.reader.reset_partial()

    def continued(self, attempt: int, *, watched: bool = False) -> None:
        """An attempt a previous runner started (adopted, or ended while unsupervised): its
        newest step in metrics.jsonl is where writing goes on. ``watched``: adopted live, so
        its hang clock starts now."""
        self.attempt = attempt
        last = self.book.last_metrics  # the book ends where the file ends
        step = last["step"] if last is not None and last.get("attempt") == attempt else None
        self.written = Written(step, step)
        if watched:
            self.steps_seen = 0
            self.last_output = self.last_progress = time.monotonic()
            # the previous runner may have left the training held still: asked at once, not after
            # the start-up allowance the hang clock now gives it
            self._ask_held = True

    # ---- reading ------------------------------------------------------------------------------
    @property
    def offset(self) -> int:
        return self.tailer.offset

    def read(self) -> Ingested:
        """One sub-slice of the log through the pipe: what it brought (``read`` False when
        nothing new was there; ``more`` True when more is waiting)."""
        self._got = got = Ingested()
        self.look(time.monotonic())
        resets, problem = self.tailer.resets, self.tailer.problem
        data = self.tailer.read_new()
        if self.tailer.problem != problem and self.tailer.problem:   # train.log is a FIFO, a device...
            self.journal.event("alert", level="critical", rule="storage", attempt=self.attempt,
                               message=f"{self.tailer.problem}; " + (
                                   "the training's output is still read from the file it writes" if self.tailer.reading
                                   else "the log is read again once it is a regular file"))
        if self.tailer.resets != resets:
            self.reader.reset_partial()  # truncated or replaced: the old unfinished line is gone
            if self.bytes_read == 0:     # ... and a context restored was the old text's: read it afresh
                self.reader.restore_context(ReadingContext())
                self._context_at = None
        self.lagging = got.more = len(data) >= self.tailer.max_read
        if not data:
            self._mark()
            return got
        got.read = True
        self.bytes_read += len(data)
        self.lines_read += data.count(b"\n")
        self.last_output = self.last_data = time.monotonic()
        self.stopped_said = []   # it ran again: a later stop or freeze of the same processes is said again
        self.held = None
        # output: the job runs again, whatever the last squeue poll (up to ``poll_s`` old) said
        # (R38 D1: held open until then, the next record was excused and judged again); but not output
        # written before the question that found it held (its log's size then): read late, the hold
        # began after it (round 19)
        size = self._job_held_size
        self.job_held = self.job_held and size is not None and self.tailer.offset <= size
        if self.job_held:
            self.held_spans.move_start(self.last_data)
        self._held_spans(self.last_data)
        self.log_tail.add(data)
        for batch in self.reader.feed_batches(data, self.tailer.offset - len(data)):
            self._on_batch(batch)
        self._mark()   # state.json's log_offset, once these records are written
        return got

    def _mark(self) -> None:
        """state.json's ``log_offset`` (once the records queued are written): where a restarted or
        adopting runner reads on. Never past a record not given yet: the start of the unfinished
        line, or of a line whose record waits for a later one (``LiveReader.resume_offset``); with
        the digest of the bytes before it (a log rewritten meanwhile is read from its start)."""
        at = self.reader.resume_offset(self.tailer.offset)
        if self._marked[:2] != (at, self.tailer.resets):
            self._marked = (at, self.tailer.resets, self.tailer.digest_before(at))
        # the context changes with the bytes read (a bar's redraws are no new line) and the records
        # given (an attempt's end releases what waited): a poll that read nothing keeps the one
        # saved (building it hashes up to MAX_SHAPES shapes and their prefixes)
        key = (at, self.tailer.offset, self.tailer.resets, self.reader.parser.stats.lines,
               self.reader.parser.records_emitted)
        if key != self._context_at:
            self._context_at, self._context_saved = key, _saved(self.reader.context(), self.redactor)
        self.journal.mark(at, self._marked[2], self._context_saved)

    def catch_up(self) -> Ingested:
        """The rest of the log (the attempt has ended: nothing waits for the loop)."""
        got = Ingested()
        for _ in range(10_000):
            step = self.read()
            got.add(step)
            if not step.read:
                break
        self._got = got
        return got.add(self.attempt_over())

    def attempt_over(self) -> Ingested:
        """The attempt's log is read to its end: what waited for a next line that will not come (a
        bar's last count, a held dict), recorded now. The mark moves past it behind those records:
        a runner killed before they are written reads that line again."""
        self._got = got = Ingested()
        for batch in self.reader.attempt_over():
            self._on_batch(batch)
        self._mark()
        return got

    def unmasked_tail(self) -> list[str]:
        """The attempt's last log lines, secrets NOT masked yet: only for the judge, which masks them off the
        loop (``judging.Judging``, with the run's redactor) before classifying and reporting them."""
        return self.log_tail.text()

    def lag(self) -> dict[str, Any]:
        """state.json's ``ingest``: how far the reading is behind the log (the file's size against
        the runner's offset): bytes, the lines they hold estimated from the mean length of the
        lines read so far, and whether that is more than one read (``catching_up``)."""
        try:
            size = os.stat(self.run.log).st_size
        except OSError:
            size = self.tailer.offset
        behind = max(0, size - self.tailer.offset)
        per_line = self.bytes_read / self.lines_read if self.lines_read else None
        lines = math.ceil(behind / per_line) if per_line else (1 if behind else 0)
        return {"offset": self.tailer.offset, "size": size, "lag_bytes": behind, "lines_behind": lines,
                "catching_up": behind > CATCHING_UP_BYTES}

    def look(self, now: float) -> None:
        """A look at the log at ``now`` (monotonic): the runner is here (``_present``)."""
        self._present(now)

    def watched(self, now: float) -> None:
        """The runner's loop is about to wait for its next tick at ``now`` (one call a turn): the
        runner is here, and a new turn begins."""
        self._present(now)
        self._turn += 1

    def own_work(self, clock: Callable[[], float], work: Callable[[], T]) -> T:
        """``work()``, the runner's own work that may take seconds (the GPU memory sample: NVML, one
        synchronous call, takes seconds on a GPU whose driver is faulting), timed by ``clock``
        (``time.monotonic``): the gap before it is judged as any other (``_present``), the time it
        took is watched time, never the runner's absence. Review R43: the sample runs after the hang
        check on one turn in about twenty (``MEMORY_SAMPLE_S``), so the turns before it had no gap and
        ``SLOW_TURNS`` never named it slowness: each slow sample was credited, and a training hung
        under a 600 s heartbeat was called hung after 2315 s with 1.5 s samples, 6002 s with 1.89 s
        (601 s before round 16). A freeze that lands inside the work is not credited (it cannot be
        told from the work being slow): left, the work being milliseconds on a healthy GPU."""
        self._present(clock())
        try:
            return work()
        finally:
            self.last_look = max(self.last_look, clock())

    def _present(self, now: float) -> bool:
        """The runner reads the hang clock at ``now``: the one owner of its absence. A gap over
        ``RUNNER_AWAY_S`` since its last read (whichever read it was: the look after the wait, the
        hang check after the look, the wait after the hang check) is time it did not watch (SIGSTOP,
        a cgroup freeze of the runner and its training together, a starved machine): what the
        training did meanwhile is in the log it reads now, and the gap moves the hang clock on, so a
        training frozen with it is not called hung after the thaw, wherever in its loop the freeze
        landed (round 16: a freeze after the hang check was erased by the next ``watched``, and
        the thawed run read ``hang`` at a quiet of exactly the freeze's length). A gap on a turn
        whose ``SLOW_TURNS`` turns before each had one is the runner's own slowness: not credited,
        so slow work delays a hang, never hides it. True when credited."""
        away = now - self.last_look
        self.last_look = max(self.last_look, now)
        if away <= RUNNER_AWAY_S:
            return False
        turn = self._turn
        self._gap_turns = {t for t in self._gap_turns if t >= turn - SLOW_TURNS}
        slow = all(turn - k in self._gap_turns for k in range(1, SLOW_TURNS + 1))
        self._gap_turns.add(turn)
        if slow:
            return False
        self._credit(away, now)
        return True

    def _credit(self, away: float, now: float) -> None:
        """``away`` seconds the runner did not watch moved off the hang clock (never past now)."""
        self.last_output = min(now, self.last_output + away)
        self.last_progress = min(now, self.last_progress + away)

    def quiet(self, now: float) -> float:
        """Seconds without log output and without step progress (the hang clock; ``now`` is
        ``time.monotonic()``)."""
        return now - max(self.last_output, self.last_progress)

    def hang(self, now: float, heartbeat: "Heartbeat", *, pending: bool = False,
             why: Callable[[], str | None] = lambda: None,
             stopped: Callable[[], list[int]] = lambda: [],
             frozen: Callable[[], dict[int, str]] = lambda: {}) -> lc.Hang | None:
        """The attempt hangs: no log output and no step progress for longer than the heartbeat
        allows (alerted here; the lifecycle kills it). ``now``: ``time.monotonic()``.
        ``pending``: a batch job waits in the queue, so silence is expected and the hang clock
        starts later. ``why()``: asked once a hang is called, what explains the silence (said
        in the alert). ``stopped()``: asked then too, the training's processes that are stopped
        (SIGSTOP, a debugger): a stopped training is not hung, the hang clock starts again and
        waits for it to be continued (said once per set of stopped processes). ``frozen()``:
        asked when none is stopped, the ones their cgroup's freezer holds (each with its cgroup):
        frozen is not hung either, and waits the same."""
        if pending:
            self.last_output = self.last_progress = now
            return None
        if self._present(now):
            return None   # away since the look (frozen amid the tick's work): judged at the next look
        limit = heartbeat_limit(heartbeat, steps_seen=self.steps_seen)
        quiet = self.quiet(now)
        if quiet <= limit:
            # asked while held (thawed or continued, silent or not: said at once), at a takeover, and
            # once the silence is long enough for the views to show it (``QUIET_SHOWN_S``, or the
            # limit when shorter): a run held still reads held then, not after the heartbeat limit.
            # At most every ``HELD_RECHECK_S``: a read of /proc per tracked process.
            if self.held is not None or self._ask_held or quiet >= min(QUIET_SHOWN_S, limit):
                was = self.held
                if self._ask_held:
                    self._ask_held, self._held_checked = False, -math.inf
                self.recheck_held(now, stopped, frozen)
                if was is not None and self.held is None:
                    # held until now: the silence counts from here, not from the clock's last restart
                    # while held (a training thawed late in that window was killed as hung at once)
                    self.stopped_said = []
                    self.last_output = max(self.last_output, now)
            return None
        held = stopped()
        cold = {} if held else frozen()
        self._hold(held, cold)
        self._held_checked = now
        if held or cold:
            self.last_output = self.last_progress = now
            said = held or sorted(cold)
            if said != self.stopped_said:
                self.stopped_said = said
                pids = " ".join(map(str, said))
                if held:
                    told = (f"the training is stopped (a SIGSTOP or a debugger: PID {pids}), not hung; the hang "
                           f"clock waits until it runs again (kill -CONT {pids})")
                else:
                    told = (f"the training is frozen by its cgroup {', '.join(sorted(set(cold.values())))} "
                            f"(docker pause, systemctl freeze, a batch system's suspend: PID {pids}), not hung; "
                            f"the hang clock waits until the cgroup is thawed (kill -CONT does not wake a frozen "
                            f"process)")
                self.journal.event("alert", level="warning", rule="stopped", step=self.progress.get("step"),
                                   message=f"no log output for {quiet:.0f}s: {told}",
                                   values={"pids": said, "quiet_s": round(quiet, 1),
                                           **({"cgroups": sorted(set(cold.values()))} if cold else {})},
                                   attempt=self.attempt)
            return None
        self.stopped_said = []
        phase = "before the first step" if not self.steps_seen else "between steps"
        cause = why()
        self.journal.event("alert", level="critical", rule="hang", step=self.progress.get("step"),
                           message=f"no log output and no step progress for {quiet:.0f}s {phase}"
                                   f"{f' ({cause})' if cause else ''}: killing the tree",
                           values={"quiet_s": round(quiet, 1), "timeout_s": limit}, attempt=self.attempt)
        return lc.Hang(quiet, limit)

    def recheck_held(self, now: float, stopped: Callable[[], list[int]], frozen: Callable[[], dict[int, str]]) -> None:
        """``held`` asked again, at most every ``HELD_RECHECK_S``: while it is set (a thaw, a
        `kill -CONT`), and while the runner kills the attempt (a frozen process takes no signal,
        SIGKILL included, until it is thawed: the kill waits on the freeze, and the views say so)."""
        if now - self._held_checked < HELD_RECHECK_S:
            return
        self._held_checked = now
        still = stopped()
        self._hold(still, {} if still else frozen())

    def _hold(self, stopped: list[int], frozen: dict[int, str]) -> None:
        """``held`` from the processes found stopped and those their cgroup freezes (None: neither)."""
        if stopped:
            self.held = {"how": "stopped", "pids": sorted(stopped), "cgroups": [], "pgid": _one_group(stopped)}
        elif frozen:
            self.held = {"how": "frozen", "pids": sorted(frozen), "cgroups": sorted(set(frozen.values()))}
        else:
            self.held = None
        self._held_spans(time.monotonic())

    def job_suspended(self, held: bool, asked_at: float, asked: LogMark | None = None) -> None:
        """The attempt's batch job is (or is no longer) held still by its scheduler (Slurm's
        ``SUSPENDED``, read from squeue each poll), as Slurm said at ``asked_at`` (monotonic: when
        the question was asked). Each reading counts once; a held one only when asked after the
        training's last output (``held.reading_holds``: output read after a resume has already closed
        the hold a late answer still says, and a held reading after output is a new hold). ``asked_size``: the
        job's log's size when it was asked: since round 19 the reading is judged by what the job had
        written then, not by when the runner read it (``reading_holds``); since review R48 D2 only when the
        file asked of is the one the tailer reads (``held.size_when_asked``: after logrotate's rename-and-create
        the path names a new, empty file), else by the times."""
        asked_size = size_when_asked(asked, self.tailer.ident)
        if asked_at == self._job_said_at:
            return
        self._job_said_at = asked_at
        holds = reading_holds(held, asked_at, self.last_data, asked_size,
                              self.tailer.offset if asked_size is not None else None)
        if holds:
            self._job_held_size = asked_size
        if (held and not holds) or holds == self.job_held:
            return   # stale (the training printed after the question was asked), or no change
        self.job_held = holds
        self._held_spans(time.monotonic())

    def _held_spans(self, now: float) -> None:
        """``held_spans`` after ``held`` or ``job_held`` changed at ``now``: an interval opens at
        the training's last output read (it printed nothing since: the hold is found a while
        after it began) and closes when neither holds it any more."""
        if self.held is not None or self.job_held:
            self.held_spans.begin(self.last_data)
        else:
            self.held_spans.end(now)

    # ---- one batch ----------------------------------------------------------------------------
    def _on_batch(self, batch: Any) -> None:
        """A batch of the log: its records written (``_write``), then the step its end-of-training
        summary names (``_summary_step``)."""
        self._write(batch)
        self._summary_step(batch)

    def _summary_step(self, batch: Any) -> None:
        """The step an end-of-training summary names, when it is past the last step logged: the
        steps after the last logging step are trained but print no dict of their own
        (transformers logs every ``logging_steps``, its DefaultFlowCallback, and stops at
        ``max_steps``), and ms-swift's summary carries the train message's ``global_step/max_steps``
        (swift/trainers/patcher.py ``add_train_message`` l.17-30, on every dict it logs): with
        ``--logging_steps 3`` and 14 steps the last dict is step 12, the summary ``'14/14'``. The
        attempt's step moves there (state.json, its ``last_step``, the success event; checkpoint-14
        is saved), no metric record is invented for it. Only this attempt's steps count (``written``).
        An attempt that logged no step at all (``--max_steps 3 --logging_steps 5 --logging_first_step
        false``: transformers logs at ``global_step % logging_steps == 0`` and at step 1 only with
        ``logging_first_step``, trainer_callback.py DefaultFlowCallback.on_step_end) ends at its summary's
        step too, past the run's step so far, and its total is the summary's when no dict gave one."""
        ended = [m for _, m in batch.marks if m.get("kind") == "train_summary"
                 and isinstance(m.get("step"), int) and not isinstance(m.get("step"), bool)]
        if not ended:
            return
        step, its_total = ended[-1]["step"], ended[-1].get("max_steps")
        its_total = its_total if isinstance(its_total, int) and not isinstance(its_total, bool) else None
        before = self.written.step if self.written.step is not None else self.progress.get("step")
        total = self.progress.get("max_steps") or its_total
        if (before is not None and not before < step) or (total is not None and step > total) \
                or (self.written.step is None and total is None):
            return
        self.written = Written(step, self.written.real)   # the attempt's newest step (its end)
        fields = {"step": step, "step_numbered": False}
        if not self.progress.get("max_steps") and its_total:
            fields["max_steps"] = its_total
        self.progress.update(fields)
        self._got.progress.update(fields)

    def _write(self, batch: Any) -> None:
        """A batch of the log (a slice's records and save marks): written in one append, the
        monitors and charts fed once from the batch's columns. A template row is its JSON line
        (bytes), written as is; only the parser's records are dicts."""
        saves = [(before, mark.get("step"), mark.get("path")) for before, mark in batch.marks
                 if mark.get("kind") == "checkpoint_saved"]
        self.rank_times.feed(batch.records)
        if any(mark.get("kind") == "trainer_loop" for _, mark in batch.marks):
            self._got.trainer = True
        if any(mark.get("kind") == "device_cpu" for _, mark in batch.marks):
            self.on_cpu = True
        if any(mark.get("kind") == "not_distributed" and self.no_ddp.feed(mark) for _, mark in batch.marks):
            self.journal.event("alert", level="warning", rule="not_distributed", step=self.progress.get("step"),
                               message=formats.NOT_DISTRIBUTED_SAID, values={}, attempt=self.attempt)
        evals = [mark for _, mark in batch.marks if mark.get("kind") == "eval"]
        if evals:   # evaluation results: their own file, never a training step
            stamp_e = {"v": jsonio.SCHEMA_VERSION, "t": time.time(), "attempt": self.attempt}
            self.journal.evals([{**stamp_e, **eval_record(m)} for m in evals])
        all_steps = np.asarray(batch.steps)
        kept, counted, written = rows_to_write(batch.records, all_steps.tolist(), self.written)
        if not kept:
            self._judge_saves(saves, None)
            return
        now = time.time()  # the records' time stamp (written), never a duration
        stamp = {"v": jsonio.SCHEMA_VERSION, "t": now, "attempt": self.attempt}
        records = self.redactor.mask_rows(batch.records, kept)  # the run's own secrets, printed back
        self.journal.metrics(*metric_lines(records, kept, stamp, batch.at))  # type: ignore[arg-type]
        rows = np.asarray(kept)
        steps = all_steps[rows]
        values = {f: batch.values[f][rows] for f in batch.values}
        present = {f: batch.present[f][rows] for f in batch.present}
        # the kept rows as dicts, decoded once for the batch (a template row is its JSON line):
        # the chart book's other numbers and the schedule watch read the same list
        dicts = seriesfile.as_dicts([records[i] for i in kept])
        self.book.feed_arrays(steps.astype(np.float64), values, present, newest_record(records, kept, stamp),
                              records=dicts)
        if counted:
            # the last logging interval (``ending.short_end``): the gap between the last two steps written
            # (the batch's last few steps suffice, the step before the batch only where they are all of it)
            before = [self.written.step] if self.written.step is not None and len(counted) <= 4 else []
            logged = before + all_steps[counted[-4:]].tolist()
            gaps = [b - a for a, b in zip(logged, logged[1:]) if b > a]
            if gaps:
                self.log_every = int(gaps[-1])
            self.written = written
            self.steps_seen += len(counted)
            self.last_progress = time.monotonic()
            fields = self._progress(batch, values, present, np.searchsorted(rows, np.asarray(counted)))
            # the newest step's provenance (``records.step_numbered``): a log entry's number, or a step
            fields["step_numbered"] = step_numbered(batch.records[counted[-1]])
            self.progress.update(fields)
            self._got.progress.update(fields)
        at = [(int(np.searchsorted(rows, c)), step, path) for c, step, path in saves]
        alerts = self.monitors.observe_arrays(steps, values, present, at, held=self.held_spans, at=time.monotonic())
        self._judge_saves(at, alerts)
        for _, a in alerts:
            self.journal.event("alert", attempt=self.attempt, **a)
            if a.get("level") == "critical" and a.get("rule") == "non_finite" and self._got.divergence is None:
                self._got.divergence = str(a.get("message", ""))
                step = a.get("step")
                self._got.divergence_step = step if isinstance(step, int) and not isinstance(step, bool) else None
        for a in self.watches.observe(dicts, self.attempt):
            self.journal.event("alert", attempt=self.attempt, **a)
        self.memory.on_rows(batch.records, kept, steps.tolist(), values["mem_gib"].tolist(),
                            present["mem_gib"].tolist(), now)
        self.memory_alerts()

    def _progress(self, batch: Any, values: dict[str, Any], present: dict[str, Any], idx: Any) -> dict[str, Any]:
        """state.json's progress fields from the new steps of a batch (rows ``idx``)."""
        fields: dict[str, Any] = {"step": self.written.step}
        if batch.max_steps:
            fields["max_steps"] = batch.max_steps
        loss = values["loss"][idx]
        finite = loss[present["loss"][idx] & np.isfinite(loss)]
        if finite.size:
            low, before = float(finite.min()), self.progress.get("min_loss")
            fields["last_loss"] = float(finite[-1])
            fields["min_loss"] = low if before is None else min(low, before)
        has_t = present["step_time_s"][idx]
        if has_t.any():
            fields["step_time_s"] = float(values["step_time_s"][idx][has_t][-1])
        return fields

    def _judge_saves(self, saves: list[tuple[int, int | None, str | None]],
                     alerts: list[tuple[int, dict[str, Any]]] | None) -> None:
        """Checkpoint saves seen in the log, (records before it, step, path): suspect when the
        monitors flagged the save at its place among the records. ``alerts`` None: the batch
        had no records to write, so each save is judged on the monitors' state now."""
        for c, step, path in saves:
            if alerts is None:
                flagged = self.monitors.on_checkpoint(step, path)
                for a in flagged:
                    self.journal.event("alert", attempt=self.attempt, **a)
            else:
                flagged = [a for i, a in alerts if i == c and a.get("rule") == "checkpoint_in_excursion"
                           and a.get("step") == step]
            self._got.saves.append((path, bool(flagged)))

    def memory_alerts(self) -> None:
        """The memory watch's news (one alert per cause: opened, updated, resolved)."""
        recent = [v for v in self.book.series["step_time_s"].recent(20) if math.isfinite(v) and v > 0]
        step_time = sorted(recent)[len(recent) // 2] if recent else self.progress.get("step_time_s")
        for a in self.memory.alerts(self.progress.get("max_steps"), step_time):
            self.journal.event("alert", attempt=self.attempt, **a)

    # ---- saving -------------------------------------------------------------------------------
    def save(self, force: bool = False) -> None:
        """series.json, when it has news and every fed record is on disk (its offset must be
        the exact length of metrics.jsonl it describes), and ranks.json when it changed."""
        self._save_series(force)
        if self.rank_times.changed:
            try:
                ranktimes.save_rank_times(self.journal.here, self.rank_times)
            except OSError as exc:
                self.diag(f"ranks.json not written: {exc}")

    def _save_series(self, force: bool) -> None:
        now = time.monotonic()
        if self.journal.pending or not (force or now - self._book_saved_at >= SERIES_SAVE_S):
            return
        if self._series_failed_at is not None and now - self._series_failed_at < SERIES_SAVE_S:
            return   # a failed save is tried again at the usual cadence, forced or not
        try:
            self.book.offset = os.stat(self.journal.here.metrics).st_size
        except OSError:
            return
        if (self.book.metric_count, self.book.offset) == self._book_saved:
            return
        try:
            seriesfile.save_book(self.journal.here, self.book)
        except OSError as exc:
            # a cache (readers build the series from metrics.jsonl past it): said once, not at every
            # try (a filesystem out of inodes refuses its temp file for as long as it lasts)
            if self._series_failed_at is None:
                self.diag(f"series.json not written: {exc}; tried again every {SERIES_SAVE_S:.0f}s")
            self._series_failed_at = now
            return
        if self._series_failed_at is not None:
            self.diag("series.json written again")
        self._series_failed_at = None
        self._book_saved = (self.book.metric_count, self.book.offset)
        self._book_saved_at = now


def _context(saved: Any) -> ReadingContext | None:
    """The reading context state.json saved (``log_context``), None when there is none or it is
    not one this runner reads (another version: read on without it, as before contexts)."""
    if saved is None:
        return None
    try:
        ctx = msgspec.convert(saved, ReadingContext)
    except msgspec.ValidationError:
        return None
    version = ctx.v if isinstance(saved, dict) and "v" in saved else readctx.UNWRITTEN_VERSION
    return ctx if version in readctx.CONTEXT_READS else None


def _saved(ctx: ReadingContext, redactor: Redactor) -> dict | None:
    """The reading context as state.json saves it, checked against the bounds ``ReadingContext``
    declares (a bar's count past 2**63): None when it does not fit (a new runner reads on from
    the offset without one) rather than a context no runner reads, or the one of an earlier mark.
    A header with a name the run's redactor masks (a secret's value, a token) is left out whole."""
    saved = {"v": ctx.v, **msgspec.to_builtins(ctx)}   # the version always (omit_defaults drops it)
    for field, with_it in readctx.NAMED.items():
        names = saved.get(field)
        if names is not None and any(redactor.redact(str(n)) != n for n in names):
            for key in (field, *with_it):
                saved.pop(key, None)
    try:
        msgspec.convert(saved, ReadingContext)
    except msgspec.ValidationError:
        return None
    return saved


def _one_group(pids: list[int]) -> int | None:
    """The process group every one of ``pids`` is in, when they share one (None otherwise, or when
    one is gone): ``held_words`` then says ``kill -CONT -- -PGID`` for the run's own group."""
    try:
        groups = {os.getpgid(p) for p in pids}
    except OSError:
        return None
    return groups.pop() if len(groups) == 1 else None


def heartbeat_limit(heartbeat: "Heartbeat", *, steps_seen: int) -> float:
    """How long an attempt may be silent: ``startup_s`` until its first step (loading a large
    model prints little for a long time), ``timeout_s`` between steps. Without ``startup_s`` the
    start-up allowance is the larger of ``timeout_s`` and STARTUP_DEFAULT_S."""
    timeout = float(heartbeat.timeout_s)
    if steps_seen:
        return timeout
    startup = heartbeat.startup_s
    return float(startup) if startup is not None else max(timeout, STARTUP_DEFAULT_S)
