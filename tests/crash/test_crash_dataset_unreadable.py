"""Data the datasets library cannot read ends the start the same way on every restart (runner/core/crash.py
``dataset_unreadable``): ``DatasetGenerationError`` (datasets 4.8.4 builder.py l.1915-1922) raised from the file's
own text or columns is ``config_error``, said in datasets' line naming the file when it printed one.

The tails are the measured ones, their frames shortened: ms-swift 4.6.0 on a JSONL line cut in half
(tests/swift/test_swift_bad_data.py runs it for real), and ``datasets.load_dataset('json', ...)`` of two files whose
columns differ. Before: ``unknown`` ("ValueError: Trailing data at position 358"), restarted."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify, dataset_unreadable

SITE = "/work/main/.venv-swift/lib/python3.11/site-packages"
SAID = ("Failed to load JSON from file '/data/train.jsonl' with error <class 'pyarrow.lib.ArrowInvalid'>: "
        "JSON parse error: Invalid encoding in string. in row 100")
SWIFT_JSON = [
    f"Generating train split: 0 examples [00:00, ? examples/s]{SAID}",
    "Generating train split: 0 examples [00:00, ? examples/s]",
    "Traceback (most recent call last):",
    f'  File "{SITE}/datasets/packaged_modules/json/json.py", line 246, in _generate_tables',
    "    df = pandas_read_json(f)",
    f'  File "{SITE}/pandas/io/json/_json.py", line 1837, in _parse',
    "ValueError: Trailing data at position 358",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    f'  File "{SITE}/datasets/builder.py", line 1872, in _prepare_split_single',
    '  File "pyarrow/error.pxi", line 92, in pyarrow.lib.check_status',
    "pyarrow.lib.ArrowInvalid: JSON parse error: Invalid encoding in string. in row 100",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    f'  File "{SITE}/swift/cli/sft.py", line 20, in <module>',
    f'  File "{SITE}/swift/pipelines/train/sft.py", line 110, in _prepare_dataset',
    f'  File "{SITE}/swift/dataset/loader.py", line 59, in _load_dataset_path',
    f'  File "{SITE}/datasets/builder.py", line 1922, in _prepare_split_single',
    '    raise DatasetGenerationError("An error occurred while generating the dataset") from e',
    "datasets.exceptions.DatasetGenerationError: An error occurred while generating the dataset",
]
CAST = [
    "Generating train split: 3 examples [00:00, 1467.91 examples/s]",
    "Traceback (most recent call last):",
    f'  File "{SITE}/datasets/table.py", line 2218, in cast_table_to_schema',
    "datasets.table.CastError: Couldn't cast",
    "a: int64",
    "c: string",
    "to",
    "{'a': Value('int64'), 'b': Value('string')}",
    "because column names don't match",
    "",
    "The above exception was the direct cause of the following exception:",
    "",
    "Traceback (most recent call last):",
    f'  File "{SITE}/datasets/builder.py", line 1922, in _prepare_split_single',
    "datasets.exceptions.DatasetGenerationError: An error occurred while generating the dataset",
]


def test_a_data_file_ms_swift_could_not_read_is_a_config_error_naming_the_file():
    v = classify(1, SWIFT_JSON, steps_seen=0, attempt=1)
    assert (v.cls, v.retryable, v.recovery) == ("config_error", False, "fail")
    assert v.summary == f"configuration error (exit 1): the training's data could not be read: {SAID}"
    assert v.evidence[:2] == (SAID, "pyarrow.lib.ArrowInvalid: JSON parse error: Invalid encoding in string. in row 100")
    assert "fix the data file" in (v.hint or "")


def test_files_whose_columns_differ_are_one_too_said_in_the_cast_error():
    v = classify(1, CAST, steps_seen=0)
    assert v.cls == "config_error"
    assert v.summary == "configuration error (exit 1): the training's data could not be read: " \
                        "datasets.table.CastError: Couldn't cast"


@pytest.mark.parametrize("cause", ["OSError: [Errno 5] Input/output error",
                                   "ConnectionError: Couldn't reach 'org/data' on the Hub (ReadTimeout)"])
def test_a_generation_error_from_the_disk_or_the_network_is_not_the_datas(cause):
    tail = [*CAST[:3], cause, *CAST[9:]]
    assert classify(1, tail, steps_seen=0).cls != "config_error"


@pytest.mark.parametrize("kw", [{"steps_seen": 12, "attempt": 1}, {"steps_seen": 0, "attempt": 2}])
def test_only_a_first_start_that_logged_no_step_is_refused_so(kw):
    """As ms-swift's other start-up refusals (the setup rule): a restart's own start, or a run that trained, may
    have met something passing."""
    assert classify(1, SWIFT_JSON, **kw).cls != "config_error"


def test_an_exception_after_it_decides_instead():
    tail = [*SWIFT_JSON, "Traceback (most recent call last):", '  File "x.py", line 1, in <module>',
            "RuntimeError: CUDA error: an illegal memory access was encountered"]
    assert classify(1, tail, steps_seen=0).cls != "config_error"


@pytest.mark.parametrize("raised, cause, want", [
    ("datasets.exceptions.DatasetGenerationError: An error occurred while generating the dataset",
     "pyarrow.lib.ArrowInvalid: Parquet magic bytes not found in footer.", True),
    ("datasets.exceptions.DatasetGenerationError: An error occurred while generating the dataset",
     "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)", True),
    ("datasets.exceptions.DatasetGenerationError: An error occurred while generating the dataset",
     "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte", True),
    ("datasets.exceptions.DatasetGenerationCastError: An error occurred while generating the dataset", None, True),
    ("datasets.exceptions.DatasetGenerationError: An error occurred while generating the dataset",
     "OSError: [Errno 28] No space left on device", False),
    ("datasets.exceptions.DatasetGenerationError: An error occurred while generating the dataset", None, False),
    ("ValueError: Trailing data at position 358", None, False),
])
def test_the_rule(raised, cause, want):
    assert dataset_unreadable(raised, cause) is want
