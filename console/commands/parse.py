"""``moeconsole parse LOGFILE [--json] [--no-monitors]``: any training log -> metric records.

Without --json: a short summary (formats found, steps, loss, grad norm, memory, alerts,
lines not understood). With --json: one NDJSON metric record per line, ``{"v": 1, ...}``.
Exit 2 (one line on stderr) when the file cannot be read.
"""
from __future__ import annotations

import sys
from typing import Any

from runner.errors import InputError
from runner.ingest.files import LOG, TRAINER_STATE, resolve_log, trainer_state_events
from runner.ingest.parser import RECORD, LogParser
from runner.ingest.summary import render, summarize_path
from runner.jsonio import dumps

READ_SIZE = 4 << 20


def run(args: Any) -> int:
    path = args.logfile
    if getattr(args, "json", False):
        _print_records(path)
        return 0
    monitors = not getattr(args, "no_monitors", False)
    summary, stats = summarize_path(path, monitors=monitors)
    sys.stdout.write(render(path, summary, stats, monitors_on=monitors) + "\n")
    return 0


def _print_records(path: str) -> None:
    """Stream records as NDJSON; memory stays flat whatever the file size."""
    real, kind = resolve_log(path)
    out = sys.stdout
    if kind == TRAINER_STATE:
        events, _ = trainer_state_events(real)
        for ev_kind, obj in events:
            if ev_kind == RECORD:
                out.write(dumps({"v": 1, **obj}) + "\n")
        return
    assert kind == LOG
    parser = LogParser()
    try:
        with open(real, "rb") as f:
            while True:
                chunk = f.read(READ_SIZE)
                if not chunk:
                    break
                _write(out, parser.feed(chunk))
    except OSError as exc:
        raise InputError(f"{real}: {exc.strerror or exc}") from None
    _write(out, parser.flush())


def _write(out: Any, records: list[dict]) -> None:
    if records:
        out.write("".join(dumps({"v": 1, **r}) + "\n" for r in records))
