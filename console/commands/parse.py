"""``moeconsole parse LOGFILE [--json] [--no-monitors]``: any training log -> metric records.

Without --json: a short summary (formats found, steps, loss, grad norm, memory, alerts,
lines not understood). With --json: one NDJSON metric record per line, ``{"v": 1, ...}``.
Exit 2 (one line on stderr) when the file cannot be read. When the reader of the output goes
away (``parse --json | head``) the command ends quietly, by SIGPIPE as command-line tools do.
"""
from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any, BinaryIO

from runner.errors import InputError
from runner.ingest.files import LOG, TRAINER_STATE, resolve_log, trainer_state_events
from runner.ingest.ndjson import write_ndjson
from runner.ingest.parser import RECORD
from runner.ingest.summary import render, summarize_path
from runner.jsonio import dumps
from runner.secrets import Redactor, mask_lines


def run(args: Any) -> int:
    path = args.logfile
    if getattr(args, "json", False):
        _print_records(path)
        return 0
    monitors = not getattr(args, "no_monitors", False)
    summary, stats = summarize_path(path, monitors=monitors)
    text = render(path, summary, stats, monitors_on=monitors)
    sys.stdout.write(_redactor(resolve_log(path)[0]).redact(text) + "\n")  # quoted lines may hold secrets
    return 0


def _redactor(log: Path) -> Redactor:
    """The run's own secrets when the log sits in a run directory (its secrets.json), else the
    token shapes and secret-named values every redactor masks."""
    return Redactor.for_run_dir(log.parent)


class _Masking:
    """An NDJSON sink that masks a run's known secret values in the records it passes on."""

    def __init__(self, out: BinaryIO, known: list[str]) -> None:
        self.out, self.known = out, known

    def write(self, data: bytes) -> int:
        self.out.write(b"".join(mask_lines(data.splitlines(keepends=True), self.known)))
        return len(data)

    def flush(self) -> None:
        self.out.flush()


def _print_records(path: str) -> None:
    """Stream records as NDJSON; memory stays flat whatever the file size. Tokens and
    secret-named values are masked by the ingest itself; a run's own secret values (a log in
    a run directory) by a masking sink."""
    real, kind = resolve_log(path)
    known = _redactor(Path(real)).values
    # a closed pipe ends the command quietly (no "Broken pipe" traceback), like grep or cat
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    out = sys.stdout.buffer
    if kind == TRAINER_STATE:
        events, _ = trainer_state_events(real)
        out.write(b"".join(mask_lines([(dumps({"v": 1, **obj}) + "\n").encode()
                                       for ev_kind, obj in events if ev_kind == RECORD], known)))
        out.flush()
        return
    assert kind == LOG
    try:
        if known:
            write_ndjson(str(real), _Masking(out, known), workers=1)  # type: ignore[arg-type]
        else:
            write_ndjson(str(real), out)
    except OSError as exc:
        raise InputError(f"{real}: {exc.strerror or exc}") from None
    out.flush()
