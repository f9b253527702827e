"""A training data file the datasets library cannot read, with the real ms-swift 4.6 on CPU.

ms-swift loads a local ``.jsonl`` through ``datasets.load_dataset('json', ...)`` (swift/dataset/loader.py
l.59); a line cut in half makes pyarrow's reader fail (``ArrowInvalid: JSON parse error: ... in row 100``), the
JSON builder tries pandas on the whole file (``ValueError: Trailing data``), logs ``Failed to load JSON from file
'F' with error ...`` and re-raises (datasets/packaged_modules/json/json.py l.209-252), and ``_prepare_split_single``
raises ``DatasetGenerationError`` from it (datasets/builder.py l.1915-1922). Measured before: ``unknown``, "exited
with code 1: ValueError: Trailing data at position 358", restarted until "no step progress in 3 attempts" failed
it (three starts of the model; on a cluster, three loads of its weights). The file is the same on every restart:
``config_error``, failed at once, in datasets' own words naming the file (runner/core/crash.py
``dataset_unreadable``)."""
from __future__ import annotations

from pathlib import Path

from tests.swift.swift_helpers import require_swift, start


def test_a_data_file_with_a_broken_line_fails_at_once_naming_the_file(swift_runs, tiny, tmp_path: Path):
    require_swift()
    rows = (tiny / "data.jsonl").read_text().splitlines()
    bad = tmp_path / "broken.jsonl"
    bad.write_text("\n".join(rows[:100] + ['{"messages": [{"role": "user", "content": "cut'] + rows[100:]) + "\n")
    run = start(swift_runs, tiny, f"args.dataset={bad}", "args.max_steps=4")
    state = run.wait_while_moving(lambda s: s.get("status") in ("failed", "paused"), "the end")
    assert "datasets.exceptions.DatasetGenerationError" in run.log()     # what ms-swift's start-up raised
    assert state["status"] == "failed" and state["attempt"] == 1, state
    (crash,) = run.events("crash")
    assert crash["class"] == "config_error" and crash["decision"] == "fail", crash
    assert crash["summary"].startswith("configuration error (exit 1): the training's data could not be read: "
                                       f"Failed to load JSON from file '{bad}' with error "
                                       "<class 'pyarrow.lib.ArrowInvalid'>: JSON parse error: "), crash
    assert run.events("restart") == [] and run.metrics() == []
