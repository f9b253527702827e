"""Each metric record is stamped with the byte offset of the train.log line it came from
(``log_at``): the live reader on any slicing, the history reader in chunks, and the line parser
reading the lines one by one all name the same line; a record a later line releases (a progress
bar's last count, a step block, a dict cut by a newline) names the line it was read from."""
from __future__ import annotations

import json

import pytest

from moeconsole.runner.ingest import LogParser
from moeconsole.runner.ingest.history import HistoryFold, scan_history
from moeconsole.runner.ingest.live import LiveReader
from moeconsole.runner.rundir import seriesfile
from tests.ingest.test_ingest_bulk import write_mixed
from tests.ingest.test_ingest_live import random_cuts


def by_lines(data: bytes) -> list[tuple[int, int | None]]:
    """(offset of the line, step) of every record of the complete lines, the parser reading one
    line at a time, each record placed at the line it came from (``LogParser.origins``): the
    reference."""
    parser = LogParser()
    out = []
    at = 0
    line_at = {}
    for n, line in enumerate(data.split(b"\n")[:-1], start=1):
        line_at[n] = at
        recs = [rec for kind, rec in parser.process_line(line) if kind == "record"]
        assert len(parser.origins) == len(recs)
        out += [(line_at[o], rec.get("step")) for o, rec in zip(parser.origins, recs)]
        at += len(line) + 1
    return out


def live_offsets(data: bytes, cuts: list[int]) -> list[tuple[int, int | None]]:
    reader = LiveReader()
    out = []
    for a, b in zip(cuts, cuts[1:]):
        for batch in reader.feed_batches(data[a:b], a):
            assert batch.at is not None and len(batch.at) == len(batch)
            out += list(zip(batch.at.tolist(), batch.steps.tolist()))
    return out


@pytest.mark.parametrize("seed,mean", [(1, 256 * 1024), (2, 4096), (3, 97)])
def test_live_records_name_the_line_that_completed_them(tmp_path, seed, mean):
    path = tmp_path / "train.log"
    write_mixed(path, n=2500, seed=seed)
    data = path.read_bytes()
    want = by_lines(data)
    got = live_offsets(data, random_cuts(len(data), seed, mean))
    assert len(want) > 2500
    assert got == want
    assert all(at == 0 or data[at - 1:at] == b"\n" for at, _ in got)
    # the line names the record's step (a few records infer theirs: a dict without one)
    named = sum(str(step).encode() in data[at:data.index(b"\n", at)] for at, step in got)
    assert named > 0.95 * len(got)


def test_history_stamps_the_same_offsets_as_the_runner(tmp_path):
    """An imported log's metrics.jsonl (the history reader, in chunks) carries the offsets the
    live reader gives the same records."""
    path = tmp_path / "train.log"
    write_mixed(path, n=2500, seed=4)
    data = path.read_bytes()
    live = live_offsets(data, random_cuts(len(data), 4, 4096))
    fold = HistoryFold(tmp_path / "metrics.jsonl", tmp_path / "evals.jsonl")
    scan_history(str(path), fold.feed, chunk=64 << 10)
    recs = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_bytes().splitlines()]
    stamped = [(seriesfile.log_at(r), r.get("step")) for r in recs]
    assert stamped[:len(live)] == live
    # the end of the log: its last line read without a newline names that line
    last_line = data.rfind(b"\n") + 1
    assert stamped[len(live):] and all(at in (last_line, None) for at, _ in stamped[len(live):])


RELEASED_LATER = (b"start\n"
                  b"Train:  10%|#   | 10/100 [00:01<00:09, 9.0it/s, loss=2.5]\n"
                  b"Saving checkpoint to /o/c-10\n"
                  b"Step 20/100\n"
                  b"    loss: 2.25\n"
                  b"    lr: 0.0001\n"
                  b"Saving checkpoint to /o/c-20\n"
                  b"{'loss': 0.5, 'grad_norm': 0.25, 'learning_rate': 1e-05,\n"
                  b"'epoch': 0.5}\n"
                  b"done\n")


@pytest.mark.parametrize("cut", [len(RELEASED_LATER), 1, 7])
def test_a_record_released_by_a_later_line_names_its_own_line(cut):
    """A bar's last count is given when the next line comes, a step block when a line that is not
    its own ends it, a cut dict with its last piece: each names the line it was read from (the
    console shows it there), never the line that released it (a save message)."""
    got = live_offsets(RELEASED_LATER, list(range(0, len(RELEASED_LATER), cut)) + [len(RELEASED_LATER)])
    lines = [RELEASED_LATER[at:RELEASED_LATER.index(b"\n", at)] for at, _ in got]
    assert [step for _, step in got] == [10, 20, 21]
    assert lines[0].startswith(b"Train:") and lines[1] == b"Step 20/100" and lines[2].startswith(b"{'loss': 0.5")


def test_a_record_reads_without_the_stamp():
    """Records written before the stamp (older run directories) still read: no line."""
    assert seriesfile.log_at({"step": 3, "loss": 1.0}) is None
    assert seriesfile.log_at({"step": 3, seriesfile.LOG_AT: 120}) == 120
    assert seriesfile.with_log_at(b'{"v":1,"step":3}\n', 120) == b'{"v":1,"step":3,"log_at":120}\n'
    assert seriesfile.with_log_at(b'{"v":1,"step":3}\n', -1) == b'{"v":1,"step":3}\n'
