"""Open a log or directory not made by moeconsole (a swift output dir, a Megatron log, a
logging.jsonl) the same way as a run: its records are ingested into a scratch run directory
(metrics.jsonl, evals.jsonl, events.jsonl with checkpoint verdicts, train.log linked to the
original log), which the ordinary run screen then shows. The original files are only read.

A big log is not read before the screen opens: ``start_import`` reads its last bytes (the newest
steps, shown at once), then ``Import`` reads the whole history in a thread, in bounded memory,
writing the scratch directory as it goes and saying how far it got (``state.json``'s
``import``); the run screen shows the newest steps and a progress bar meanwhile, and the whole
run once the history is in.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

from moeconsole.runner.ingest.records import step_numbered
from moeconsole.runner.rundir import jsonio, rundir, seriesfile
from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.core.errors import InputError

IMPORTED = lc.imported()  # the status of an imported run: the lifecycle decides it, as every status
# How often the import's progress goes into state.json (for other processes: this console shows
# it from memory): once a second, as often as a console refreshes; each write is an fsync, which
# on a busy disk stalled the reading thread (61 writes, 0.7 s of an 18 s history read at 4 Hz).
STATE_EVERY_S = 1.0


class Import:
    """The reading of one foreign log into its scratch run directory."""

    def __init__(self, run: rundir.RunDir, log: Path, source: Path, kind: str, line_format: Any = None) -> None:
        self.run, self.log, self.source, self.kind = run, log, source, kind
        self.line_format = line_format   # ``attach PATH --log-format``: the declared line format
        self.size = max(1, log.stat().st_size)
        self.stop = threading.Event()
        self.offset = 0
        self.records = 0
        self.done = False
        self.error: str | None = None
        self.tail_book = seriesfile.SeriesBook()   # the newest steps, shown while the history is read
        self.tail_from = 0   # the log's offset ``tail_book`` was read from (0: the whole log)
        self.window = 0      # the most of the log's end ``tail_book`` was asked to read (bytes)
        self.book = seriesfile.SeriesBook()        # the whole history (used once done)
        self._state: dict = {}
        self._thread: threading.Thread | None = None
        self.started_at: float | None = None   # time.monotonic() when the history read started
        self._state_at = 0.0
        self.fold: Any = None   # the history read so far (``HistoryFold``: rows, steps, grad norms)
        # how the history is read (``read_history``): None = its defaults (two processes for a big
        # dict log when a second core is free); tests and benches set them
        self.workers: int | None = None
        self.split_min_bytes: int | None = None
        self.processes = 1   # how many read it (2: the first part by a started process)
        self._part_thread: threading.Thread | None = None
        self._early: Any = None   # the started process, started before the read (``start_part``)
        self._early_lock = threading.Lock()

    # ---- what the screen reads -----------------------------------------------------------
    def current_book(self) -> seriesfile.SeriesBook:
        return self.book if self.done else self.tail_book

    def status(self) -> dict:
        return {"progress": 1.0 if self.done else min(1.0, self.offset / self.size), "done": self.done,
                "records": self.records, "bytes": self.size, "error": self.error}

    # ---- the work --------------------------------------------------------------------------
    def read_newest(self) -> None:
        """The last part of the log, read now (a few ms whatever the file's size): its last
        ``FIRST_TAIL_BYTES``, the newest step and max steps and a chart's width of the newest
        points (the screen paints them at once); its last ``TAIL_BYTES`` at once when those hold
        no record (a log ending in long lines that are not steps) or records without a step of
        their own (Hugging Face dicts, numbered from the window's first record: the step shown
        until the history is in is the one the wider window gives). The thread that reads the
        history widens it first (``_widen``)."""
        from moeconsole.runner.ingest.files import LOG
        from moeconsole.runner.ingest.history import FIRST_TAIL_BYTES, TAIL_BYTES
        if self.kind != LOG:
            return
        self.tail_book, self.tail_from = self._read_tail(FIRST_TAIL_BYTES)
        self.window = FIRST_TAIL_BYTES
        newest = self.tail_book.last_metrics
        if self.tail_from > 0 and (newest is None or (newest.get("extra") or {}).get("step_inferred")):
            self.tail_book, self.tail_from = self._read_tail(TAIL_BYTES)
            self.window = TAIL_BYTES
        self._write_state(self.tail_book.last_metrics)

    def _read_tail(self, max_bytes: int) -> tuple[seriesfile.SeriesBook, int]:
        """(a chart book of the log's last ``max_bytes``, the offset it was read from)."""
        from moeconsole.runner.ingest.history import read_tail
        records, marks, start = read_tail(str(self.log), max_bytes, line_format=self.line_format)
        return seriesfile.SeriesBook.from_records(records, marks), start

    def _widen(self) -> None:
        """Before a big log's history: its newest steps from its last ``TAIL_BYTES`` (1,400-2,000
        steps of an ms-swift log in about 10 ms of CPU: ``history.tail_book``, the history's
        bulk reader, on this thread, which imports numpy for the history anyway), swapped in
        whole for the first window's
        (the screen never shows half a book; the newest step is the same). A log of at most
        ``WIDEN_MIN_BYTES`` goes straight to its history, which takes little longer."""
        from moeconsole.runner.ingest.files import LOG
        from moeconsole.runner.ingest.history import TAIL_BYTES, WIDEN_MIN_BYTES
        if self.kind != LOG or self.tail_from <= 0 or self.size <= WIDEN_MIN_BYTES or self.stop.is_set():
            return
        if self.window >= TAIL_BYTES:   # already that wide (``read_newest``'s fallback)
            return
        from moeconsole.runner.ingest.history import tail_book
        book, start = tail_book(str(self.log), TAIL_BYTES, line_format=self.line_format)   # the same book, read in bulk
        if self.stop.is_set():
            return
        self.tail_book, self.tail_from, self.window = book, start, TAIL_BYTES
        self._write_state(book.last_metrics)   # the screen polls on the change

    def start_part(self) -> None:
        """Start the history's second reading process now (once), before the screen's first
        frame: a process of its own, it costs the frame a fork/exec, and it plans its part and
        reads it while the screen opens (``history.start_part``); ``start`` takes it over. Only
        a log the history may read in two (``split_worth``, the history's own rule), and only when
        a second core is free (``second_core_free``, sampled on a thread of its own). One started
        with the process for this log (``prestart_history``) is taken instead, its decision with
        it, or ended when this log is not to be read in two."""
        from moeconsole.runner.ingest.files import LOG
        from moeconsole.runner.ingest.spawned import split_worth
        if self._part_thread is not None:
            return
        if self.kind != LOG or not split_worth(self.size, line_format=self.line_format, workers=self.workers,
                                               split_min_bytes=self.split_min_bytes):
            prestarted = take_prestarted(self.log, self.size)   # one started with the process is not wanted
            if prestarted is not None and prestarted[0] is not None:
                prestarted[0].close()
            return
        self._part_thread = threading.Thread(target=self._start_part, name="moeconsole-import-part", daemon=True)
        self._part_thread.start()

    def _start_part(self) -> None:
        from moeconsole.runner.ingest.spawned import second_core_free
        prestarted = take_prestarted(self.log, self.size)
        if self.stop.is_set():
            if prestarted is not None and prestarted[0] is not None:
                prestarted[0].close()
            return
        if prestarted is not None and prestarted[0] is not None:   # started with the process (``prestart_history``)
            early = prestarted[0]
        else:   # none started for this log, or its decision was one process (which holds unless two are asked for)
            if self.workers is None and (prestarted is not None or not second_core_free()):
                return
            from moeconsole.runner.ingest.spawned import start_part
            try:
                early = start_part(str(self.log), self.run.metrics, self.run.evals,
                                   split_min_bytes=self.split_min_bytes)
            except OSError:   # the history read starts its own then
                return
        with self._early_lock:
            if self.stop.is_set():
                early.close()
            else:
                self._early = early

    def _take_early(self) -> Any:
        if self._part_thread is not None:
            self._part_thread.join()
        with self._early_lock:
            early, self._early = self._early, None
        return early

    def start(self) -> None:
        """Read the history on a thread of its own (once; a second call does nothing)."""
        if self._thread is not None:
            return
        self.started_at = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="moeconsole-import", daemon=True)
        self._thread.start()

    def cancel(self, wait: float = 5.0) -> None:
        self.stop.set()
        if self._thread is not None:
            self._thread.join(wait)
        if self._thread is None:   # the history never started: its early process ends here
            early = self._take_early()
            if early is not None:
                early.close()

    def wait(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            self._widen()
            self._read_history()
            if not self.records and not self.stop.is_set():
                self.error = "no training steps found"
        except Exception as exc:  # an unreadable file: said on screen, never a crash of the UI
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            early = self._take_early()   # not taken by a read that failed before it began
            if early is not None:
                early.close()
            if not self.stop.is_set() and self.error is None:
                self._finish()
            self.done = self.error is None and not self.stop.is_set()
            self._write_state(self.book.last_metrics if self.done else self.tail_book.last_metrics)

    def _read_history(self) -> None:
        from moeconsole.runner.ingest.files import TRAINER_STATE, trainer_state_events
        from moeconsole.runner.ingest.history import HistoryFold, read_history
        from moeconsole.runner.ingest.bulk import batch_from_events
        fold = HistoryFold(self.run.metrics, self.run.evals)
        if self.kind == TRAINER_STATE:
            events, _ = trainer_state_events(self.log)
            fold.feed(batch_from_events(events, True))
            self._adopt(fold)
            return

        def progress(offset: int) -> None:
            self.offset = offset
            now = time.monotonic()
            if now - self._state_at >= STATE_EVERY_S:
                self._state_at = now
                self._write_state(self.tail_book.last_metrics)
        self.fold = fold
        fold, stats = read_history(str(self.log), fold, progress=progress, stop=self.stop, line_format=self.line_format,
                                   workers=self.workers, split_min_bytes=self.split_min_bytes, early=self._take_early())
        self.processes = stats.processes
        self._adopt(fold)

    def _adopt(self, fold) -> None:
        self.fold = fold
        self.book = fold.book
        self.records = fold.records

    def _finish(self) -> None:
        """The history is in: the chart book for the next opening, checkpoint verdicts."""
        self.offset = self.size
        try:
            self.book.offset = self.run.metrics.stat().st_size
        except OSError:
            self.book.offset = 0
        try:
            self.book.evals_offset = self.run.evals.stat().st_size
        except OSError:
            self.book.evals_offset = 0
        seriesfile.save_book(self.run, self.book)
        root = self.source if self.source.is_dir() else self.source.parent
        try:
            names = os.listdir(root)
        except OSError:
            names = []
        if self.source.is_dir() or any(n.startswith(("checkpoint-", "iter_")) for n in names):
            fold = self.fold
            _record_checkpoints(self.run, root, lambda: list(zip(fold.steps, fold.grads)))

    def _write_state(self, last: dict | None) -> None:
        last = last or {}
        self._state.update({
            "run_id": self.run.run_id, "name": f"{self.source.name} (imported)", "status": lc.imported(),
            "step": last.get("step"), "max_steps": last.get("max_steps"),
            "step_numbered": step_numbered(last),   # a log of step-less dicts: its entries, numbered
            "source_path": str(self.source), "imported_at": self._state.get("imported_at") or time.time(),
            "import": self.status(),
        })
        try:
            self.run.write_state(dict(self._state))
        except OSError as exc:
            self.error = self.error or f"cannot write {self.run.path}: {exc.strerror or exc}"


# ``attach LOG``: the history's second reading process, started as the console's process starts
# (``prestart_history``), by the log's real path: (the thread that decides and starts it, what it
# started: [EarlyPart] or [None], the log's size then)
_PRESTARTED: dict[str, tuple[threading.Thread, list, int]] = {}
_PRESTARTED_AT_EXIT: list = []


def prestart_history(path: Path) -> None:
    """Start the history's second reading process of a big log now, as ``attach LOG``'s process
    starts, before the UI's modules are imported (about 0.5 s of one core, the other idle till
    then): the same decision as ``Import.start_part`` (``split_worth``, then ``second_core_free``
    sampled on a thread of its own, which then starts it), its part folded into files of its own
    (``history.start_part`` without a run directory, which does not exist yet). The log's
    ``Import`` takes it over (``take_prestarted``); one never taken is ended at exit."""
    import atexit
    from moeconsole.runner.ingest.spawned import split_worth
    try:
        real, size = os.path.realpath(path), path.stat().st_size
    except OSError:
        return
    if real in _PRESTARTED or not path.is_file() or not split_worth(size, line_format=None, workers=None,
                                                                    split_min_bytes=None):
        return
    box: list = []

    def start() -> None:
        from moeconsole.runner.ingest.spawned import second_core_free
        early = None
        if second_core_free():
            from moeconsole.runner.ingest.spawned import start_part   # no parser, no numpy: the UI imports meanwhile
            try:
                early = start_part(real, None, None)
            except OSError:   # the history read starts its own then
                early = None
        box.append(early)
    thread = threading.Thread(target=start, name="moeconsole-import-prestart", daemon=True)
    if not _PRESTARTED_AT_EXIT:
        _PRESTARTED_AT_EXIT.append(atexit.register(end_prestarted))
    _PRESTARTED[real] = (thread, box, size)
    thread.start()


def take_prestarted(log: Path, size: int) -> tuple[Any] | None:
    """(the ``EarlyPart`` started for ``log`` by ``prestart_history``, or None if it decided not
    to) once its decision is made; None when none was started for it (or the log changed size)."""
    entry = _PRESTARTED.pop(os.path.realpath(log), None)
    if entry is None:
        return None
    thread, box, then = entry
    thread.join()
    early = box[0] if box else None
    if then != size:   # not the log it was started for
        if early is not None:
            early.close()
        return None
    return (early,)


def end_prestarted() -> None:
    """End the processes ``prestart_history`` started that no ``Import`` took (at exit)."""
    while _PRESTARTED:
        _, (thread, box, _) = _PRESTARTED.popitem()
        thread.join()
        if box and box[0] is not None:
            box[0].close()


def start_import(path: Path, scratch: Path, line_format: Any = None) -> tuple[rundir.RunDir, Import | None]:
    """A RunDir for ``path`` at once: the path itself if it is a moeconsole run dir (no import),
    else a scratch directory holding the newest steps, whose ``Import`` reads the rest in the
    background once started. Raises InputError when nothing can be read."""
    path = path.expanduser()
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    if path.is_dir() and rundir.is_run_dir(path):
        return rundir.RunDir(path.resolve()), None
    try:
        from moeconsole.runner.ingest.files import resolve_log
    except ImportError:
        raise InputError("reading logs not made by moeconsole needs moeconsole.runner.ingest (not installed)") from None
    log, kind = resolve_log(path)
    key = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:8]
    run = rundir.RunDir(scratch / f"imported-{path.name}-{key}")
    rundir.make_private_dirs(run.path)
    rundir.make_private_dir(run.path / "crashes", exist_ok=True)
    for f in (run.metrics, run.evals, run.events, run.series):
        f.unlink(missing_ok=True)
    if run.log.is_symlink() or run.log.exists():
        run.log.unlink()
    os.symlink(log.resolve(), run.log)
    job = Import(run, log, path.resolve(), kind, line_format)
    job.read_newest()
    return run, job


def open_path(path: Path, scratch: Path) -> rundir.RunDir:
    """``start_import`` read to the end before returning (scripts and tests)."""
    run, job = start_import(path, scratch)
    if job is None:
        return run
    job.start()
    job.wait()
    if job.error:
        raise InputError(f"{path}: {job.error}")
    if not job.records:
        raise InputError(f"{path}: no training steps found")
    return run


def _record_checkpoints(run: rundir.RunDir, root: Path, points_of: Callable[[], list[tuple[int, float]]]) -> None:
    """Verify (headers only) the checkpoints found beside the log and record the verdicts
    (``points_of``: the (step, grad norm) pairs, built only when there are checkpoints)."""
    try:
        from moeconsole.runner.checkpoints.discover import find_checkpoints
        from moeconsole.runner.checkpoints.verify import verify_found
        from moeconsole.runner.checkpoints.watch import signature, vanished
    except ImportError:
        return
    try:
        found = find_checkpoints(root)
    except OSError:
        return
    points = points_of() if found else []
    for ckpt in found[:50]:
        try:
            before = signature(ckpt.path)
            verdict = verify_found(ckpt, grad_norms=points)
            if vanished(ckpt.path, before):
                continue    # a live run's trainer deleted it meanwhile (--save_total_limit): no verdict
        except Exception:  # one unreadable checkpoint must not hide the others
            continue
        run.event("checkpoint", **verdict.to_dict())
