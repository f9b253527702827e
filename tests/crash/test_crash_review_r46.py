"""Review R46 of crash batch 55: a quoted key's value is a record's data only when the key names a matcher or a data
field (``crash._DATA_KEY``: signature, regex, pattern, match, glob, needle, example), any other quoted key's value
(structlog's ``event``, Sentry's ``value``, GELF's ``short_message``, ...) is still the program's words; the guard holds
for a pretty-printed object's last member (no comma after it); an unquoted key (YAML, a JS object, a shell assignment)
is any setting's as before batch 55; nvidia-smi's device-handle line shortened by a report still tells a lost GPU;
``crash._SETTING_BEFORE`` costs a line's length whatever its runs of spaces."""
from __future__ import annotations

import json
import time

import pytest

from moeconsole.runner.core import crash
from moeconsole.runner.core.crash import classify

FAULT = "RuntimeError: CUDA error: an illegal memory access was encountered"
KEYS_THAT_DECIDE = ["event", "exc_value", "value", "title", "short_message", "full_message", "exception.message",
                    "error_message", "errorMessage", "reason", "detail", "text", "message", "log", "MESSAGE"]


def _cls(*lines: str, steps: int = 10) -> str:
    return classify(1, list(lines), steps_seen=steps).cls


# --- 1: any quoted key but a matcher's or a data field's keeps the program's words ---------------------------------


@pytest.mark.parametrize("key", KEYS_THAT_DECIDE)
@pytest.mark.parametrize("value, cls", [
    (FAULT, "cuda_fault"),
    ("CUDA error: out of memory", "cuda_oom"),
    ("RuntimeError: CUDA error: device-side assert triggered", "cuda_fault"),
    ("CUDA error: unspecified launch failure", "cuda_fault"),
    ("CUDA error: misaligned address", "cuda_fault"),
    ("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.20GiB.", "cuda_oom"),
    ("CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "cuda_oom"),
])
@pytest.mark.parametrize("tail", [",", ""])
def test_a_log_records_quoted_key_keeps_the_runtimes_words(key, value, cls, tail):
    assert _cls(f'    "{key}": "{value}"{tail}') == cls


def test_a_one_line_structlog_record_decides():
    assert _cls(json.dumps({"event": "RuntimeError: CUDA error: out of memory", "level": "error"})) == "cuda_oom"


@pytest.mark.parametrize("record", [
    # Sentry's event payload (develop.sentry.dev/sdk/event-payloads/exception), pretty-printed
    {"event_id": "9f2c", "level": "error", "exception": {"values": [{"type": "RuntimeError", "value": FAULT[14:]
                                                                     + "\nFor debugging consider passing "
                                                                       "CUDA_LAUNCH_BLOCKING=1.\n"}]}},
    # structlog's JSONRenderer with dict_tracebacks, as `jq .` prints it
    {"event": "train step failed", "level": "error", "step": 4812,
     "exception": [{"exc_type": "RuntimeError", "exc_value": FAULT[14:], "frames": []}]},
])
def test_a_pretty_printed_error_record_decides(record):
    assert _cls(*json.dumps(record, indent=2).splitlines()) == "cuda_fault"


@pytest.mark.parametrize("key", ["signature", "regex", "pattern", "match", "oom_regex", "errorPattern", "signatures",
                                 "patterns", "regexp", "glob", "needle", "example", "matcher"])
@pytest.mark.parametrize("value", [FAULT, "RuntimeError: MPS backend out of memory", "CUDA out of memory",
                                   "CUDA error: an illegal memory access was encountered"])
@pytest.mark.parametrize("tail", [",", ""])
def test_a_matchers_or_data_fields_value_is_data(key, value, tail):
    assert _cls(f'  "{key}": "{value}"{tail}') == "unknown"


def test_a_key_that_only_contains_a_matchers_word_is_no_matcher():
    # "mismatch" is no "match": the word must open the key or a compound's part
    assert _cls(f'  "mismatch": "{FAULT}",') == "cuda_fault"


# --- 2: the guard holds for a last member (no comma after it) ------------------------------------------------------


@pytest.mark.parametrize("line, cls", [
    ('  "regex": "RuntimeError: MPS backend out of memory"', "unknown"),
    ('    "pattern": "CUDA out of memory"', "unknown"),
    ('  "value": "CUDA error: an illegal memory access was encountered"', "cuda_fault"),
    ('  "value": "CUDA error: an illegal memory access was encountered",', "cuda_fault"),
    ('`"regex": "CUDA out of memory"`', "unknown"),
])
def test_the_guard_does_not_depend_on_a_trailing_comma(line, cls):
    assert _cls(line) == cls


def test_a_quoted_line_is_still_unwrapped():
    assert _cls('"RuntimeError: CUDA error: an illegal memory access was encountered"') == "cuda_fault"


# --- 3: an unquoted key is any setting's, as before batch 55 -------------------------------------------------------


@pytest.mark.parametrize("line", [
    '        message: "CUDA out of memory",',
    '  message: "CUDA out of memory. Try lowering the batch size."',
    '    msg: "CUDA out of memory"',
    '  log: "CUDA out of memory"',
    '  body: "CUDA out of memory"',
    'MESSAGE="CUDA out of memory"',
    'msg="CUDA out of memory"',
    '{message: "CUDA out of memory"}',
])
def test_an_unquoted_keys_value_is_a_setting(line):
    assert _cls(line) == "unknown"


def test_a_catalog_of_oom_strings_is_no_oom():
    catalog = ['  {', '    source: "torch",', '    message: "CUDA error: out of memory",', '    expect: "oom",',
               '  },', '  {', '    source: "ollama",', '    message: "CUDA out of memory",', '  },']
    assert _cls(*catalog) == "unknown"


# --- 4: nvidia-smi's device-handle line, shortened, tells a lost GPU -----------------------------------------------


LOST = "a GPU has fallen off the bus: it needs a reset"


@pytest.mark.parametrize("line", [
    "Training crashes with `CUDA error: unspecified launch failure` during the backward pass. The GPU then falls off"
    " the bus (`lspci` shows `rev ff`, `nvidia-smi` reports `Unable to determine the device handle ... Unknown Error`)"
    " and requires a reboot to recover.",
    "CUDA error: unspecified launch failure. nvidia-smi now says: Unable to determine the device handle … Unknown"
    " Error",
    "Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error",
    "Unable to determine the device handle for GPU0000:01:00.0: GPU is lost.  Reboot the system to recover this GPU",
])
def test_nvidia_smis_lost_device_fails_the_run(line):
    v = classify(1, [line], steps_seen=10)
    assert (v.cls, v.recovery, v.summary) == ("cuda_fault", "fail", LOST)


def test_the_device_handle_words_without_an_error_are_no_lost_gpu():
    v = classify(1, ["CUDA error: unspecified launch failure", "Unable to determine the device handle ... for now"],
                 steps_seen=10)
    assert v.recovery != "fail"


# --- 6: the setting's lead costs the line's length -----------------------------------------------------------------


@pytest.mark.parametrize("lead, trail", [(1500, 1500), (0, 60000), (60000, 0)])
def test_the_setting_lead_is_linear_in_spaces(lead, trail):
    line = " " * lead + "{" + " " * lead + "k:" + " " * trail + "CUDA out of memory"
    started = time.perf_counter()
    crash._SETTING_BEFORE.match(line)
    crash._SETTING_BEFORE.match(" " * lead + "k:" + " " * trail + "[" + " " * trail + "x")
    # linear: microseconds a space; the cubic lead took minutes here (review R46: 1000 and 1000 spaces took 24.7 s,
    # 2000 and 2000 took 239 s) and the quadratic one after the colon about 1.2 s for 6000 spaces
    assert time.perf_counter() - started < 30


def test_the_corpus_gpu_that_falls_off_the_bus_is_not_restarted():
    # 1197 (musubi-tuner #106): the label checks the class; the verdict must be the lost GPU's, not a restart
    from tests.crash.test_crash_public_corpus import CORPUS, load_case
    header, text = load_case(next(CORPUS.glob("1197-*.txt")))
    v = classify(1, text, steps_seen=int(header["steps_seen"]))
    assert (v.cls, v.recovery, v.summary) == ("cuda_fault", "fail", LOST)


@pytest.mark.parametrize("line, cls", [
    # an exception's head opening an unquoted key's value decides as before batch 55, unless the key names a matcher,
    # a data field, a marker or a trigger
    ("FailureReason: 'AlgorithmError: RuntimeError: CUDA error: an illegal memory access was encountered'",
     "cuda_fault"),
    ('  reason: "RuntimeError: CUDA error: an illegal memory access was encountered"', "cuda_fault"),
    ('  message: "RuntimeError: CUDA error: out of memory"', "cuda_oom"),
    ('retry_on: "RuntimeError: CUDA error: an illegal memory access was encountered"', "unknown"),
    ('restartOn: "RuntimeError: CUDA out of memory"', "unknown"),
    ('OOM_MARKER="torch.cuda.OutOfMemoryError: CUDA out of memory"', "unknown"),
    ('  pattern: "RuntimeError: CUDA error: an illegal memory access was encountered"', "unknown"),
    ('  oom_regex = "RuntimeError: CUDA out of memory"', "unknown"),
])
def test_an_exceptions_head_under_an_unquoted_key(line, cls):
    assert _cls(line) == cls
