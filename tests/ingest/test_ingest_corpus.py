"""Real public training logs, never written for this project, read as a user gets them
(``parse``'s pipe): every record and evaluation equal to the values written by hand from the
text (tests/ingest/corpus/expected.json cites each log's source)."""
from __future__ import annotations

import pytest

from tests.ingest.corpus_check import differences, expected

CASES = expected()


@pytest.mark.parametrize("name", sorted(CASES))
def test_real_log_is_read_exactly(name):
    assert differences(name, CASES[name]) == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_runner_reads_each_real_log_as_parse_does_however_the_slices_are_cut(name):
    """The runner's live reader on random slices (1 byte to 4 KiB) gives the records and marks
    `parse` gives: the learner's state (epoch restarts, step blocks, bar counts) never depends
    on where a read ends."""
    import random

    from moeconsole.runner.ingest import marks_from_path, records_from_path
    from moeconsole.runner.ingest.live import LiveReader
    from tests.ingest.corpus_check import CORPUS
    path = CORPUS / f"{name}.log"
    want, _ = records_from_path(path)
    want_marks = [m["kind"] for m in marks_from_path(path)]
    data = path.read_bytes()
    rnd = random.Random(name)
    reader = LiveReader()
    events, pos = [], 0
    while pos < len(data):
        n = rnd.choice((1, 7, 64, 4096))
        events += reader.feed(data[pos:pos + n])
        pos += n
    batch = reader.pipe.finish(True)
    got = [obj for kind, obj in events if kind == "record"] + list(batch.records or [])
    marks = [obj["kind"] for kind, obj in events if kind == "mark"] + [m["kind"] for _, m in batch.marks]
    key = lambda r: (r["step"], r["loss"], r["src"])  # noqa: E731
    assert [key(r) for r in got] == [key(r) for r in want] and marks == want_marks
