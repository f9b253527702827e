"""Following a growing file: offsets, truncation, replacement, and live delivery."""
from __future__ import annotations

import os
import threading
import time

import pytest

from runner.ingest import FileTailer, LiveTail
from tests.ingest import ingest_samples as S

WAIT = float(os.environ.get("MOECONSOLE_TEST_WAIT", "10"))


def wait_for(cond, timeout: float = WAIT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.01)
    return cond()


def append(path, text: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


# ----------------------------------------------------------------------------- FileTailer

def test_tailer_reads_appended_bytes_by_offset(tmp_path):
    log = tmp_path / "train.log"
    t = FileTailer(log)
    assert t.read_new() == b""                  # not there yet
    append(log, "one\n")
    assert t.read_new() == b"one\n"
    assert t.read_new() == b""
    append(log, "two\nthr")
    assert t.read_new() == b"two\nthr" and t.offset == 11 and t.resets == 0


def test_tailer_start_offset_and_read_cap(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"0123456789")
    t = FileTailer(log, start_offset=4, max_read=3)
    assert [t.read_new(), t.read_new(), t.read_new()] == [b"456", b"789", b""]


def test_tailer_truncation_restarts_from_zero(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"a" * 100)
    t = FileTailer(log)
    assert len(t.read_new()) == 100
    with open(log, "r+b") as f:
        f.truncate(0)
    append(log, "new\n")
    assert t.read_new() == b"new\n" and t.resets == 1


def test_tailer_replacement_drains_the_old_file_first(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"old-1\n")
    t = FileTailer(log)
    assert t.read_new() == b"old-1\n"
    append(log, "old-2\n")                       # written before the swap, not read yet
    fresh = tmp_path / "fresh.log"
    fresh.write_bytes(b"new-1\n")
    os.replace(fresh, log)
    assert t.read_new() == b"old-2\n" and t.resets == 0
    assert t.read_new() == b"new-1\n" and t.resets == 1


def test_tailer_new_file_after_delete(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"first run\n")
    t = FileTailer(log)
    t.read_new()
    log.unlink()
    assert t.read_new() == b""
    log.write_bytes(b"second\n")
    assert t.read_new() == b"second\n" and t.resets == 1


def test_tailer_on_a_shorter_file_than_the_start_offset(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"abc")
    t = FileTailer(log, start_offset=100)
    assert t.read_new() == b"abc" and t.resets == 1


# ----------------------------------------------------------------------------- LiveTail

class Collector:
    def __init__(self):
        self.lock = threading.Lock()
        self.order: list[tuple[str, object]] = []

    def records(self, recs):
        with self.lock:
            self.order += [("r", r["step"]) for r in recs]

    def marks(self, marks):
        with self.lock:
            self.order += [("m", m["kind"]) for m in marks]

    def steps(self) -> list[int]:
        with self.lock:
            return [v for k, v in self.order if k == "r"]


def test_live_tail_delivers_records_and_marks_in_order(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("")
    c = Collector()
    tail = LiveTail(log, c.records, poll_interval=0.2, on_marks=c.marks)
    tail.start()
    try:
        for s in range(1, 6):
            append(log, S.tqdm_write(S.swift_hf_dict(s, 10, 1.0, 0.5), s, 10) + "\n")
        append(log, "[INFO:swift] Saving model checkpoint to /o/checkpoint-5\n")
        append(log, S.swift_hf_dict(6, 10, 1.0, 0.5))   # no newline yet: not delivered
        assert wait_for(lambda: len(c.order) >= 6)
        time.sleep(0.3)
        assert c.order == [("r", 1), ("r", 2), ("r", 3), ("r", 4), ("r", 5), ("m", "checkpoint_saved")]
        append(log, "\n")
        assert wait_for(lambda: c.steps()[-1:] == [6])
    finally:
        tail.stop()
    assert not tail._thread.is_alive()


def test_live_tail_follows_a_replaced_file(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(S.kv_line(1, 1.0, 0.5, 1.0, 10) + "\n" + S.kv_line(2, 1.0, 0.5, 1.0, 10))
    c = Collector()
    with LiveTail(log, c.records, poll_interval=0.2):
        assert wait_for(lambda: c.steps() == [1])
        fresh = tmp_path / "next.log"
        fresh.write_text(S.kv_line(7, 1.0, 0.5, 1.0, 10) + "\n")
        os.replace(fresh, log)
        # the old file's unfinished last line is read as it stands, then the new file
        assert wait_for(lambda: c.steps() == [1, 2, 7])


def test_live_tail_works_without_notifications(tmp_path):
    """The directory does not exist when the tail starts: the poll finds the file."""
    log = tmp_path / "later" / "train.log"
    c = Collector()
    tail = LiveTail(log, c.records, poll_interval=0.05).start()
    try:
        log.parent.mkdir()
        log.write_text(S.kv_line(3, 1.0, 0.5, 1.0, 10) + "\n")
        assert wait_for(lambda: c.steps() == [3])
    finally:
        tail.stop()


def test_a_failing_subscriber_does_not_stop_the_tail(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("")
    c = Collector()
    calls = []

    def bad(recs):
        calls.append(len(recs))
        raise RuntimeError("subscriber bug")

    tail = LiveTail(log, bad, poll_interval=0.05)
    tail.subscribe(c.records)
    with tail:
        append(log, S.kv_line(1, 1.0, 0.5, 1.0, 10) + "\n")
        assert wait_for(lambda: c.steps() == [1])
        append(log, S.kv_line(2, 1.0, 0.5, 1.0, 10) + "\n")
        assert wait_for(lambda: c.steps() == [1, 2])
    assert len(calls) == 2


@pytest.mark.parametrize("start", [0, 1])
def test_live_tail_start_offset(tmp_path, start):
    log = tmp_path / "train.log"
    first = S.kv_line(1, 1.0, 0.5, 1.0, 10) + "\n"
    log.write_text(first + S.kv_line(2, 1.0, 0.5, 1.0, 10) + "\n")
    c = Collector()
    with LiveTail(log, c.records, poll_interval=0.05, start_offset=len(first) * start) as tail:
        assert wait_for(lambda: c.steps()[-1:] == [2])
        assert tail.offset == log.stat().st_size
    assert c.steps() == ([1, 2] if start == 0 else [2])
