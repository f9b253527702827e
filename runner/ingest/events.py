"""What reading a line gives: a metric record or a mark (a save, an evaluation, an attempt
marker, a summary), as ``(kind, object)`` events in file order.

The kinds are named here, below every stage of the pipe, so the stage that collects events
into batches (``moeconsole.runner.ingest.batch``) does not import the line parser that makes them.
"""
from __future__ import annotations

RECORD, MARK = "record", "mark"
LogEvent = tuple[str, dict]
