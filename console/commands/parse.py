"""``moeconsole parse LOGFILE [--json [--eval]] [--no-monitors]``: any training log -> metric records.

Without --json: a short summary (formats found, steps, loss, grad norm, memory, evaluations,
alerts, lines not understood). With --json: one NDJSON metric record per line, ``{"v": 1, ...}``;
with --json --eval: the evaluation results instead (never training steps).
Exit 2 (one line on stderr) when the file cannot be read. When the reader of the output goes
away (``parse --json | head``) the command ends quietly, by SIGPIPE as command-line tools do.
"""
from __future__ import annotations

import signal
import sys
from typing import Any

from runner.errors import InputError
from runner.ingest.files import LOG, TRAINER_STATE, iter_batches, resolve_log, trainer_state_events
from runner.ingest.ndjson import write_ndjson
from runner.ingest.parser import RECORD
from runner.ingest.records import eval_record
from runner.ingest.summary import render, summarize_path
from runner.jsonio import dumps


def run(args: Any) -> int:
    path = args.logfile
    if getattr(args, "json", False):
        if getattr(args, "eval", False):
            _print_evals(path)
        else:
            _print_records(path)
        return 0
    monitors = not getattr(args, "no_monitors", False)
    summary, stats = summarize_path(path, monitors=monitors)
    sys.stdout.write(render(path, summary, stats, monitors_on=monitors) + "\n")
    return 0


def _print_records(path: str) -> None:
    """Stream records as NDJSON; memory stays flat whatever the file size."""
    real, kind = resolve_log(path)
    # a closed pipe ends the command quietly (no "Broken pipe" traceback), like grep or cat
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    out = sys.stdout.buffer
    if kind == TRAINER_STATE:
        events, _ = trainer_state_events(real)
        out.write(b"".join((dumps({"v": 1, **obj}) + "\n").encode()
                           for ev_kind, obj in events if ev_kind == RECORD))
        out.flush()
        return
    assert kind == LOG
    try:
        write_ndjson(str(real), out)
    except OSError as exc:
        raise InputError(f"{real}: {exc.strerror or exc}") from None
    out.flush()


def _print_evals(path: str) -> None:
    """Evaluation results as NDJSON (``evals.jsonl``'s schema without the runner's stamp)."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    out = sys.stdout.buffer
    for batch, _ in iter_batches(path):
        lines = [(dumps({"v": 1, **eval_record(m)}) + "\n").encode() for _, m in batch.marks
                 if m.get("kind") == "eval"]
        if lines:
            out.write(b"".join(lines))
    out.flush()
