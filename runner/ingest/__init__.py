"""Log ingestion: any training log (live or past) to metric records and marks.

UI-free; used by the runner (live tailing), ``moeconsole parse`` and the run browser.
See docs/parsing.md for the formats and the rules a line is read by.

- ``LogParser``: incremental bytes -> records (+ marks), the reference behaviour.
- ``records_from_path`` / ``iter_batches``: past logs (log file, logging.jsonl,
  trainer_state.json, directories), using the bulk fast path.
- ``FileTailer`` / ``LiveTail``: a growing file, by offset, with notifications.
- ``Summary`` / ``summarize_path``: what ``moeconsole parse`` prints.
"""
from runner.ingest.files import iter_batches, marks_from_path, records_from_path, resolve_log
from runner.ingest.parser import LogParser, ParseStats
from runner.ingest.summary import Summary, feed_batch, summarize_path
from runner.ingest.tail import FileTailer, LiveTail

__all__ = ["LogParser", "ParseStats", "records_from_path", "marks_from_path", "iter_batches",
           "resolve_log", "FileTailer", "LiveTail", "Summary", "feed_batch", "summarize_path"]
