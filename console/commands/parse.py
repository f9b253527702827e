"""``moeconsole parse LOGFILE [--json [--eval]] [--no-monitors] [--crash] [--log-format SPEC] [--explain]``:
any training log -> metric records.

Without --json: a short summary (formats found, steps, loss, grad norm, memory, evaluations,
alerts, lines not understood). With --json: one NDJSON metric record per line, ``{"v": 1, ...}``;
with --json --eval: the evaluation results instead (never training steps).
With --crash: the crash class of the log's last lines (what the runner would decide after the
attempt ended; ``-`` reads a pasted crash text from stdin), --json for the verdict as JSON.
Exit 2 (one line on stderr) when the file cannot be read. When the reader of the output goes
away (``parse --json | head``) the command ends quietly, by SIGPIPE as command-line tools do.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

from moeconsole.runner.core.crash import classify
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.ingest.files import LOG, TRAINER_STATE, iter_batches, resolve_log, trainer_state_events
from moeconsole.runner.ingest.ndjson import write_ndjson
from moeconsole.runner.ingest.parser import RECORD
from moeconsole.runner.ingest.records import eval_record
from moeconsole.runner.ingest.explain import explain_path
from moeconsole.runner.ingest.summary import render_summary, summarize_path
from moeconsole.runner.ingest.userformat import parse_line_format
from moeconsole.runner.rundir.jsonio import dumps
from moeconsole.runner.rundir.secrets import Redactor, mask_lines
from moeconsole.runner.supervisor.ingest_pipe import LOG_TAIL_KEEP


# A parse that takes longer than this draws a progress bar on stderr (when it is a terminal).
PROGRESS_AFTER_S = float(os.environ.get("MOECONSOLE_PROGRESS_AFTER_S", "1.0"))


class TerminalProgress:
    """A one-line progress bar on a terminal, drawn only once the work has taken longer than
    ``after`` seconds (a quick parse prints nothing extra), at most 10 times a second, and wiped
    when done so the summary (or the NDJSON on stdout) is all that stays."""

    def __init__(self, stream: Any, after: float = PROGRESS_AFTER_S, width: int = 30) -> None:
        self.stream, self.after, self.width = stream, after, width
        self.t0 = time.monotonic()
        self.shown = False
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.t0 < self.after or now - self._last < 0.1:
            return
        self._last = now
        frac = min(1.0, done / total) if total else 0.0
        full = int(frac * self.width)
        self.stream.write(f"\rparse {'#' * full}{'.' * (self.width - full)} {frac * 100:3.0f}% "
                          f"{done / 1e6:,.0f}/{total / 1e6:,.0f} MB {now - self.t0:.0f}s")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _progress() -> TerminalProgress | None:
    try:
        return TerminalProgress(sys.stderr) if sys.stderr.isatty() else None
    except (AttributeError, ValueError):
        return None


# The bytes read from the end of a log for --crash: enough for LOG_TAIL_KEEP long lines.
CRASH_TAIL_BYTES = 8 * 1024 * 1024


def run(args: Any) -> int:
    path = args.logfile
    if getattr(args, "crash", False):
        return _print_crash(path, as_json=getattr(args, "json", False))
    spec = getattr(args, "log_format", None)
    line_format = parse_line_format(spec) if spec is not None else None   # a bad spec: one line, exit 2
    if getattr(args, "explain", False):
        sys.stdout.write(_redactor(resolve_log(path)[0]).redact(explain_path(path, line_format)))
        return 0
    progress = _progress()
    try:
        if getattr(args, "json", False):
            if getattr(args, "eval", False):
                _print_evals(path, line_format)
            else:
                _print_records(path, progress, line_format)
            return 0
        monitors = not getattr(args, "no_monitors", False)
        summary, stats = summarize_path(path, monitors=monitors, report=progress, line_format=line_format)
    finally:
        if progress is not None:
            progress.close()
    text = render_summary(path, summary, stats, monitors_on=monitors)
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


def _print_records(path: str, progress: TerminalProgress | None = None, line_format: Any = None) -> None:
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
            write_ndjson(str(real), _Masking(out, known), workers=1, report=progress,  # type: ignore[arg-type]
                         line_format=line_format)
        else:
            write_ndjson(str(real), out, report=progress, line_format=line_format)
    except OSError as exc:
        raise InputError(f"{real}: {exc.strerror or exc}") from None
    out.flush()


def _print_evals(path: str, line_format: Any = None) -> None:
    """Evaluation results as NDJSON (``evals.jsonl``'s schema without the runner's stamp)."""
    known = _redactor(Path(resolve_log(path)[0])).values
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    out = sys.stdout.buffer
    for batch, _ in iter_batches(path, line_format=line_format):
        lines = [(dumps({"v": 1, **eval_record(m)}) + "\n").encode() for _, m in batch.marks
                 if m.get("kind") == "eval"]
        if lines:
            out.write(b"".join(mask_lines(lines, known)))
    out.flush()


def _print_crash(path: str, as_json: bool) -> int:
    """The verdict the runner's classifier gives the log's last lines (the same ``classify``, hence
    the same text normalisation), with no exit status known; secrets masked."""
    if path == "-":
        data = sys.stdin.buffer.read()
        redactor = Redactor([])     # token-shaped values and secret-named assignments only
    else:
        real, kind = resolve_log(path)
        if kind != LOG:
            raise InputError(f"{real}: --crash reads a log, not {real.name}")
        try:
            with open(real, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - CRASH_TAIL_BYTES))
                data = f.read()
        except OSError as exc:
            raise InputError(f"{real}: {exc.strerror or exc}") from None
        redactor = _redactor(real)
    lines = data.split(b"\n")[-LOG_TAIL_KEEP:]
    verdict = classify(None, [line.decode("utf-8", "replace") for line in lines])
    if as_json:
        text = dumps(verdict.to_dict())
    else:
        out = [f"crash class: {verdict.cls} ({'retryable' if verdict.retryable else 'not retryable'}, "
               f"recovery {verdict.recovery})", f"summary: {verdict.summary}"]
        if verdict.hint:
            out.append(f"hint: {verdict.hint}")
        out += ["evidence:"] + [f"  {line}" for line in verdict.evidence]
        text = "\n".join(out)
    sys.stdout.write(redactor.redact(text) + "\n")
    return 0
