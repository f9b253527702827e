"""Log ingestion: any training log (live or past) to metric records and marks.

UI-free; used by the runner (live tailing), ``moeconsole parse`` and the run browser.
See docs/parsing.md for the formats and the rules a line is read by.

- ``LogParser``: incremental bytes -> records (+ marks), the reference behaviour.
- ``records_from_path`` / ``iter_batches``: past logs (log file, logging.jsonl,
  trainer_state.json, directories), using the bulk fast path.
- ``FileTailer``: a growing file, by offset.
- ``Summary`` / ``summarize_path``: what ``moeconsole parse`` prints.

Batch APIs for a live reader (the runner can feed whatever a read returned, in one call, and
hand the monitors the whole run of records at once, instead of one record at a time):

- ``LogParser.feed(chunk) -> list[record]`` / ``feed_events(chunk) -> [(kind, obj)]`` take any
  number of bytes (a whole backlog too) and return the records (and marks) of every line the
  chunk completed, in file order; ``release_pending()`` once nothing more is waiting.
- ``runner.core.monitors.Monitors.observe_records(records) -> alerts`` runs the vectorised monitors
  on the batch; its alerts are the same as ``observe`` record by record (tested), at a fraction
  of the cost. Checkpoint marks go to ``Monitors.on_checkpoint`` between the records they
  followed (split the batch at a mark: ``records_before`` says where).
- ``runner.ingest.ndjson.write_ndjson(path, out)``: a whole past log to NDJSON, fast.

Names are imported on first use, so ``moeconsole parse`` does not pay for the tailing
machinery (threads, logging) and the runner does not pay for the bulk reader.
"""
from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "LogParser": "parser", "ParseStats": "parser",
    "records_from_path": "files", "marks_from_path": "files", "iter_batches": "files", "resolve_log": "files",
    "fold_path": "files",
    "FileTailer": "tail",
    "Summary": "summary", "feed_batch": "summary", "summarize_path": "summary",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"runner.ingest.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'runner.ingest' has no attribute {name!r}")
