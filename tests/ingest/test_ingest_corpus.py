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
