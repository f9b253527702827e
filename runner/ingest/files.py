"""Past logs on disk: which file to read for a path, and its records.

A path may be a log file, an ms-swift ``logging.jsonl``, a Hugging Face
``trainer_state.json``, or a directory: an ms-swift output dir (its newest ``v*/`` run,
``logging.jsonl``), a checkpoint dir (``trainer_state.json``), a Trainer's output dir (its newest
``checkpoint-N/trainer_state.json``), a run directory (``train.log``).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from moeconsole.runner.core.errors import InputError
from moeconsole.runner.rundir import jsonio
from moeconsole.runner.core.bounds import is_step
from moeconsole.runner.ingest.parser import MARK, RECORD, ParseStats
from moeconsole.runner.ingest.records import classify_mapping, mark_from_mapping, record_from_mapping

if TYPE_CHECKING:   # the batches (numpy) are imported where a whole file is read, not to find a log
    from moeconsole.runner.ingest.batch import Batch

LOG, TRAINER_STATE = "log", "trainer_state"
_SWIFT_RUN_RE = re.compile(r"^v(\d+)-(\d{8}-\d{6})?")
_MAX_NESTED = 1000   # model dirs looked into below an output dir


def resolve_log(path: str | os.PathLike) -> tuple[Path, str]:
    """(file to read, LOG or TRAINER_STATE); InputError when there is nothing readable."""
    p = Path(path).expanduser()
    if not p.exists():
        raise InputError(f"{p}: no such file or directory")
    if p.is_dir():
        return _from_dir(p)
    if not p.is_file():
        raise InputError(f"{p}: not a regular file")
    if not os.access(p, os.R_OK):
        raise InputError(f"{p}: permission denied")
    if p.name == "trainer_state.json" or (p.suffix == ".json" and _looks_like_trainer_state(p)):
        return p, TRAINER_STATE
    return p, LOG


def _from_dir(d: Path) -> tuple[Path, str]:
    if (d / "logging.jsonl").is_file():
        return d / "logging.jsonl", LOG
    newest = newest_swift_run(d)
    if newest is not None:
        return newest / "logging.jsonl", LOG
    if (d / "trainer_state.json").is_file():
        return d / "trainer_state.json", TRAINER_STATE
    saved = newest_trainer_save(d)
    if saved is not None:
        return saved / "trainer_state.json", TRAINER_STATE
    if (d / "train.log").is_file():
        return d / "train.log", LOG
    raise InputError(f"{d}: no log found (looked for logging.jsonl, v*/logging.jsonl, */v*/logging.jsonl, "
                     "trainer_state.json, checkpoint-N/trainer_state.json, train.log)")


def newest_trainer_save(d: Path) -> Path | None:
    """The newest ``checkpoint-N/`` of a Trainer's output dir that holds a trainer_state.json, else
    None. The Trainer writes trainer_state.json into each save (transformers 5.19.0 trainer.py
    ``_save_checkpoint``: ``self.state.save_to_json``), its ``log_history`` the whole run up to
    that step; into the output dir itself only when the script calls ``save_state()``."""
    from moeconsole.runner.checkpoints.discover import CHECKPOINT_DIR
    try:
        saves = [(int(m.group(1)), c) for c in d.iterdir()
                 if (m := CHECKPOINT_DIR.match(c.name)) and not m.group(2) and (c / "trainer_state.json").is_file()]
    except OSError:
        return None
    return max(saves)[1] if saves else None


def _swift_runs(d: Path) -> list[tuple[str, int, Path]]:
    """(start time as named, N, dir) of each ``v<N>-<YYYYMMDD-HHMMSS>/`` run in ``d`` that holds a
    ``logging.jsonl``."""
    runs = []
    try:
        children = list(d.iterdir())
    except OSError:
        return []
    for c in children:
        m = _SWIFT_RUN_RE.match(c.name)
        if m and c.is_dir() and (c / "logging.jsonl").is_file():
            runs.append((m.group(2) or "", int(m.group(1)), c))
    return runs


def newest_swift_run(d: Path) -> Path | None:
    """The newest ms-swift run directory in an output dir: its ``v<N>-<time>/`` with the highest N
    (``add_version_to_work_dir`` numbers them one past the highest there), else, one level down,
    the newest by the time in its name. ms-swift 2.x appends the model type to ``--output_dir``
    (``<output_dir>/<model_type>/v0-<time>/``, ``<model_type>-tp1-pp1`` for Megatron; 2.6.1
    swift/llm/utils/argument.py l.1160-1165), and 3.x/4.x do the same with the model's name when
    ``--output_dir`` is left unset (``output/<model_suffix>/v0-<time>/``): the directory a user
    hands us is then the one above."""
    runs = _swift_runs(d)
    if runs:
        return max(runs, key=lambda r: r[1])[2]
    nested: list[tuple[str, int, Path]] = []
    try:
        children = [c for c in d.iterdir() if c.is_dir() and not c.name.startswith(".")]
    except OSError:
        return None
    for c in children[:_MAX_NESTED]:
        nested.extend(_swift_runs(c))
    return max(nested, key=lambda r: (r[0], r[1]))[2] if nested else None


def _looks_like_trainer_state(p: Path) -> bool:
    try:
        with open(p, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"log_history"' in head


def trainer_state_events(p: Path) -> tuple[list[tuple[str, dict]], ParseStats]:
    """Records (src "hf_state") and marks from ``log_history``."""
    try:
        state = jsonio.loads(p.read_bytes().decode("utf-8", "replace"))
    except OSError as exc:
        raise InputError(f"{p}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError(f"{p}: not valid JSON ({exc})") from None
    history = state.get("log_history") if isinstance(state, dict) else None
    if not isinstance(history, list):
        raise InputError(f"{p}: no log_history (not a trainer_state.json)")
    stats = ParseStats()
    events: list[tuple[str, dict]] = []
    max_steps = state.get("max_steps") if is_step(state.get("max_steps")) else None
    for i, entry in enumerate(history, 1):
        stats.lines += 1
        if not isinstance(entry, dict):
            stats.unparsed_lines += 1
            continue
        kind = classify_mapping(entry)
        rec = record_from_mapping(entry, "hf_state")
        if rec is not None and not (is_step(rec["step"]) and (rec["max_steps"] is None or is_step(rec["max_steps"]))):
            stats.out_of_range_lines += 1   # a step out of range: skipped and counted, as the parser does
            stats.unparsed_lines += 1
            continue
        if kind == "metric" and rec is not None:
            if rec["max_steps"] is None:
                rec["max_steps"] = max_steps
            events.append((RECORD, rec))
            stats.metric_lines += 1
            stats.formats["hf_state"] += 1
        elif kind in ("eval", "summary", "final"):
            mark = mark_from_mapping(kind, entry, rec["step"] if rec else None)
            mark["line"] = i
            events.append((MARK, mark))
            stats.mark_lines += 1
        else:
            stats.unparsed_lines += 1
    return events, stats


def iter_batches(path: str | os.PathLike, want_records: bool = False,
                 line_format: Any = None) -> Iterator[tuple["Batch", ParseStats]]:
    """Record batches of any supported path, in order; the last stats are the totals.
    ``line_format``: a user's declared line format (``moeconsole.runner.ingest.userformat``)."""
    from moeconsole.runner.ingest.batch import batch_from_events
    from moeconsole.runner.ingest.bulk import scan_file
    real, kind = resolve_log(path)
    if kind == TRAINER_STATE:
        events, stats = trainer_state_events(real)
        yield batch_from_events(events, want_records), stats
        return
    try:
        yield from scan_file(str(real), want_records=want_records, line_format=line_format)
    except OSError as exc:
        raise InputError(f"{real}: {exc.strerror or exc}") from None


def fold_path(path: str | os.PathLike, init: Callable[[], Any], step: Callable[[Any, "Batch"], None],
              workers: int = 2, report: Callable[[int, int], None] | None = None,
              line_format: Any = None, want_records: bool = False) -> tuple[Any, ParseStats]:
    """``fold_file`` for any supported path (two processes for a big log file); ``report(done,
    total)`` as the reading goes; ``want_records``: the batches carry their records (``Batch.records``)."""
    from moeconsole.runner.ingest.batch import batch_from_events
    from moeconsole.runner.ingest.bulk import fold_file
    real, kind = resolve_log(path)
    if kind == TRAINER_STATE:
        events, stats = trainer_state_events(real)
        state = init()
        step(state, batch_from_events(events, want_records))
        return state, stats
    try:
        return fold_file(str(real), init, step, want_records=want_records, workers=workers, report=report,
                         line_format=line_format)
    except OSError as exc:
        raise InputError(f"{real}: {exc.strerror or exc}") from None


def records_from_path(path: str | os.PathLike) -> tuple[list[dict], ParseStats]:
    """All metric records of a log, logging.jsonl, trainer_state.json or directory."""
    from moeconsole.runner.ingest.batch import concat_batches
    batches, stats = [], ParseStats()
    for batch, stats in iter_batches(path, want_records=True):
        batches.append(batch)
    if not batches:
        return [], stats
    merged = concat_batches(batches)
    return list(merged.records or []), stats


def marks_from_path(path: str | os.PathLike) -> list[dict]:
    """Checkpoint saves, attempt markers, eval results of a past log, in order."""
    return [m for batch, _ in iter_batches(path, want_records=False) for _, m in batch.marks]
