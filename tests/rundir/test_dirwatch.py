"""The one file watcher: a change in the run directory makes its descriptor readable."""
from __future__ import annotations

import os
import select
import threading
import time

from runner.rundir import dirwatch


def readable(fd, timeout: float) -> bool:
    return bool(select.select([fd], [], [], timeout)[0])


def test_an_append_and_a_replace_wake_the_reader(tmp_path):
    w = dirwatch.watch(tmp_path)
    assert w is not None
    try:
        assert not readable(w, 0.2)
        with open(tmp_path / "train.log", "a") as f:
            f.write("step 1\n")
        assert readable(w, 30.0)
        w.drain()
        assert not readable(w, 0.2)
        (tmp_path / "state.json.tmp").write_text("{}")
        os.replace(tmp_path / "state.json.tmp", tmp_path / "state.json")
        assert readable(w, 30.0)
    finally:
        w.close()


def test_reading_a_file_does_not_wake_the_reader(tmp_path):
    (tmp_path / "train.log").write_text("x\n")
    w = dirwatch.watch(tmp_path)
    assert w is not None
    try:
        w.drain()
        (tmp_path / "train.log").read_text()
        assert not readable(w, 0.5)
    finally:
        w.close()


def test_close_ends_the_observer_threads(tmp_path):
    before = threading.active_count()
    w = dirwatch.watch(tmp_path)
    assert w is not None and threading.active_count() > before
    w.close()
    deadline = time.monotonic() + 30
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == before


def test_turned_off_by_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(dirwatch.WATCH_ENV, "0")
    assert dirwatch.watch(tmp_path) is None
