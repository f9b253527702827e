"""Log ingestion: any training log (live or past) to metric records and marks.

UI-free; used by the runner (live tailing), ``moeconsole parse`` and the run browser.
See docs/parsing.md for the formats and the rules a line is read by.

One pipe, read in one direction (``moeconsole.runner.ingest.pipe``): bytes -> lines (``linebuf``: the
unfinished last line waits) -> records (each line read by the strategy of its family: the
learned template, ``template``, or the line parser, ``parser``) -> columns (``batch``: one
batch per read) -> the consumers (the runner's journal, monitors and chart book; ``parse``'s
summary). Ingest imports nothing from its consumers.

- ``LogParser``: incremental bytes -> records (+ marks), the reference behaviour.
- ``moeconsole.runner.ingest.live.LiveReader``: the runner's reader, a slice of ``train.log`` -> one batch.
- ``records_from_path`` / ``iter_batches``: past logs (log file, logging.jsonl,
  trainer_state.json, directories) through the pipe (``bulk``: big chunks, two processes).
- ``FileTailer``: a growing file, by offset.
- ``Summary`` / ``summarize_path``: what ``moeconsole parse`` prints.
- ``moeconsole.runner.ingest.ndjson.write_ndjson(path, out)``: a whole past log to NDJSON, fast.

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
        return getattr(importlib.import_module(f"moeconsole.runner.ingest.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'moeconsole.runner.ingest' has no attribute {name!r}")
