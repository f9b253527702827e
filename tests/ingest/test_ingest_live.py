"""The runner's live reader (the bulk engine on arbitrary slices) gives exactly the events the
line parser gives: records and marks in file order, however the bytes arrive."""
from __future__ import annotations

import random

import pytest

from runner.ingest import LogParser
from runner.ingest.live import LiveReader
from tests.ingest.test_ingest_bulk import write_mixed


def by_parser(data: bytes, cuts: list[int]) -> list:
    p = LogParser()
    events = []
    for a, b in zip(cuts, cuts[1:]):
        events += p.feed_events(data[a:b]) + p.release_events()
    return events + p.flush_events()


def by_live(data: bytes, cuts: list[int]) -> tuple[list, LiveReader]:
    r = LiveReader()
    events = []
    for a, b in zip(cuts, cuts[1:]):
        events += r.feed(data[a:b])
    return events + r.parser.flush_events(), r


@pytest.mark.parametrize("seed,mean", [(1, 256 * 1024), (2, 4096), (3, 97)])
def test_live_slices_give_the_parsers_events(tmp_path, seed, mean):
    path = tmp_path / "train.log"
    write_mixed(path, n=2500, seed=seed)
    data = path.read_bytes()
    rnd = random.Random(seed)
    cuts = [0]
    while cuts[-1] < len(data):
        cuts.append(min(len(data), cuts[-1] + max(1, int(rnd.expovariate(1 / mean)))))
    want = by_parser(data, cuts)
    got, reader = by_live(data, cuts)
    assert [k for k, _ in got] == [k for k, _ in want]
    assert got == want
    assert sum(1 for k, _ in got if k == "record") > 2500
    if mean > 100_000:
        assert reader.scanner.fast_lines > 2000, "big slices take the template route"


def test_template_rows_carry_the_exact_json_line_the_runner_writes(tmp_path):
    """The runner writes a template row's JSON line instead of encoding its dict: the line must
    be byte for byte what encoding gives (metrics.jsonl cannot tell the two paths apart)."""
    from runner import jsonio
    from runner.ingest.live import JsonRecord
    path = tmp_path / "train.log"
    write_mixed(path, n=2000, seed=9)
    data = path.read_bytes()
    got, _ = by_live(data, list(range(0, len(data), 50_000)) + [len(data)])
    rows = [r for k, r in got if k == "record" and isinstance(r, JsonRecord)]
    assert len(rows) > 1000
    for rec in rows:
        assert rec.raw == (jsonio.dumps({"v": 1, **rec}) + "\n").encode()
