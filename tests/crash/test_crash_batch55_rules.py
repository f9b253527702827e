"""Batch 55's rule (tests/crash/public 1196-1215): a runtime's words held as a JSON record's value are the record's
data, not a run's output, as an unquoted key's quoted value already was a setting's (``crash._SETTING_BEFORE``: since
batch 55 the key may be quoted, as a JSON member's name is, RFC 8259 section 4), also behind an exception's head
(``crash._SETTING_VALUE_HEAD``); the names under which a log's own writer puts the line it logged stay the program's
words (torch elastic's error file ``message``, Python logging's ``msg``/``message``, Go slog's ``msg``, Docker's
json-file ``log``, Cloud Logging's ``textPayload``), as does an error-named key."""
from __future__ import annotations

import json

import pytest

from moeconsole.runner.core.crash import classify


def _cls(*lines: str, steps: int = 10) -> str:
    return classify(1, list(lines), steps_seen=steps).cls


# --- a record's data: an error index, a pattern list, a config in JSON ---------------------------------------------


@pytest.mark.parametrize("line", [
    # errorcanon's record (1212), its other keys, one line or indented
    '  "signature": "RuntimeError: MPS backend out of memory (MPS allocated: 2.00 GB, limit: 2.00 GB)",',
    '  "regex": "RuntimeError: MPS backend out of memory",',
    '{"signature": "torch.OutOfMemoryError: CUDA out of memory"}',
    '    "pattern": "CUDA out of memory",',
    # an unquoted key's value behind an exception's head (the value is the setting's, since batch 55)
    'retry_on: "RuntimeError: CUDA out of memory"',
    'OOM_MARKER="torch.cuda.OutOfMemoryError: CUDA out of memory"',
])
def test_an_oom_held_as_a_records_value_is_no_oom(line):
    assert _cls(line) == "unknown", line


@pytest.mark.parametrize("line", [
    '  "signature": "RuntimeError: CUDA error: an illegal memory access was encountered",',
    '  "example": "CUDA error: an illegal memory access was encountered",',
    'retry_on: "RuntimeError: CUDA error: an illegal memory access was encountered"',
])
def test_a_fault_held_as_a_records_value_is_no_fault(line):
    assert _cls(line) == "unknown", line


def test_the_error_index_record_of_batch_55_is_no_oom_whole():
    record = json.dumps({"id": "cuda/mps-memory-pressure",
                         "signature": "RuntimeError: MPS backend out of memory (MPS allocated: 2.00 GB, limit: 2.00 GB)",
                         "regex": "RuntimeError: MPS backend out of memory", "domain": "cuda"}, indent=2)
    assert _cls(*record.splitlines()) == "unknown"


# --- the log's own writers: the line they logged is the program's --------------------------------------------------


@pytest.mark.parametrize("line, cls", [
    # torch elastic's error file (error_handler.py record_exception)
    ('{"message": {"message": "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", '
     '"extraInfo": {"py_callstack": "Traceback", "timestamp": "1764500000"}}}', "cuda_oom"),
    ('    "message": "RuntimeError: CUDA error: an illegal memory access was encountered",', "cuda_fault"),
    # Docker's json-file driver
    ('{"log":"RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB\\n","stream":"stderr",'
     '"time":"2026-01-02T03:04:05Z"}', "cuda_oom"),
    # Cloud Logging's LogEntry (a Vertex AI job's exported log)
    (json.dumps({"textPayload": "RuntimeError: CUDA error: an illegal memory access was encountered"}), "cuda_fault"),
    # a JSON formatter's record, Go slog's text handler
    ('{"msg": "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"}', "cuda_oom"),
    ('msg="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"', "cuda_oom"),
    # torch's message rendered with its sizes is a message that happened, whatever key holds it (as a list's item
    # with a digit in it: crash._QUOTED_STRING's rule since batch 44)
    ('{"signature": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}', "cuda_oom"),
    # journald's JSON export (the kernel's OOM killer), OpenTelemetry's log record, a captured stream
    ('{"MESSAGE": "Out of memory: Killed process 41622 (python3) total-vm:98467844kB, anon-rss:62811780kB", '
     '"_TRANSPORT": "kernel"}', "killed_oom"),
    ('  "body": "RuntimeError: CUDA error: an illegal memory access was encountered",', "cuda_fault"),
    ('  "stderr": "RuntimeError: CUDA error: an illegal memory access was encountered",', "cuda_fault"),
    # an error-named key, as before
    ('  "error": "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",', "cuda_oom"),
    ("Error: 'CUDA out of memory', 'retrying with batch 8'", "cuda_oom"),
])
def test_a_logs_own_record_still_decides(line, cls):
    assert _cls(line) == cls, line


@pytest.mark.parametrize("line, cls", [
    # the runtime's own lines, no key before them
    ("RuntimeError: MPS backend out of memory (MPS allocated: 17.00 GB, other allocations: 1.00 GB, max allowed: "
     "18.13 GB). Tried to allocate 256.00 MiB on private pool.", "cuda_oom"),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_fault"),
    # a key and colon without a quoted value is a log's field, not a setting
    ("error: RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB", "cuda_oom"),
])
def test_a_runtimes_own_line_still_decides(line, cls):
    assert _cls(line) == cls, line
