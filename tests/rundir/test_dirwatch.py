"""The one file watcher: a change in the run directory makes its descriptor readable. Each
behaviour holds for both ways of watching: the kernel's inotify descriptor (Linux, what
``watch`` gives) and watchdog's observer (elsewhere)."""
from __future__ import annotations

import os
import select
import sys
import threading
import time

import pytest

from moeconsole.runner.rundir import dirwatch
from tests.waiting import reached



@pytest.fixture(params=["watch", "watchdog"])
def make(request):
    return dirwatch.watch if request.param == "watch" else dirwatch._watchdog_watch


def readable(fd, timeout: float) -> bool:
    return bool(select.select([fd], [], [], timeout)[0])


def settle(w, quiet: float = 0.3, deadline_s: float = 30.0) -> None:
    """Drain until no wake-up came for ``quiet`` seconds: one write is several events (modify,
    close) that the observer thread may deliver after the first byte was read. Never quiet within
    the deadline means the watch wakes with nothing changing, which fails the test."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        w.drain()
        if not readable(w, quiet):
            return
    raise AssertionError("the watch kept waking with nothing changing")


def test_an_append_and_a_replace_wake_the_reader(tmp_path, make):
    w = make(tmp_path)
    assert w is not None
    try:
        assert not readable(w, 0.2)
        with open(tmp_path / "train.log", "a") as f:
            f.write("step 1\n")
        assert readable(w, 30.0)
        settle(w)
        (tmp_path / "state.json.tmp").write_text("{}")
        os.replace(tmp_path / "state.json.tmp", tmp_path / "state.json")
        assert readable(w, 30.0)
    finally:
        w.close()


def test_reading_a_file_does_not_wake_the_reader(tmp_path, make):
    (tmp_path / "train.log").write_text("x\n")
    w = make(tmp_path)
    assert w is not None
    try:
        settle(w)
        (tmp_path / "train.log").read_text()
        assert not readable(w, 0.5)
    finally:
        w.close()


def test_close_ends_the_observer_threads_and_releases_the_descriptor(tmp_path, make):
    before = threading.active_count()
    w = make(tmp_path)
    assert w is not None
    fd = w.fileno()
    if make is dirwatch.watch and sys.platform.startswith("linux"):
        # the kernel queues the changes: no thread of ours wakes for them (each thread also
        # costs the console a malloc arena and its stack)
        assert threading.active_count() == before
    w.close()
    reached(lambda: threading.active_count() <= before, timeout=30)
    assert threading.active_count() == before
    with pytest.raises(OSError):
        os.fstat(fd)


def test_turned_off_by_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv(dirwatch.WATCH_ENV, "0")
    assert dirwatch.watch(tmp_path) is None


def test_a_directory_that_is_not_there_is_polled_not_watched(tmp_path, make):
    assert make(tmp_path / "gone") is None


def test_readers_and_directory_fsyncs_never_reach_the_watcher(tmp_path, make):
    """A 128-node run's directory is opened hundreds of times a second by readers (every poll of
    every console) and by agents (``os.listdir``/fsync of ``telemetry/``): those opens and
    closes without a write are not asked of the kernel, so the watcher's threads never see
    them; a write still wakes the reader."""
    (tmp_path / "state.json").write_text("{}")
    (tmp_path / "telemetry").mkdir()
    (tmp_path / "telemetry" / "node-0.json").write_text("{}")
    w = make(tmp_path)
    assert w is not None
    try:
        settle(w)
        before = w.delivered
        for _ in range(100):
            (tmp_path / "state.json").read_bytes()
            os.listdir(tmp_path / "telemetry")
            fd = os.open(tmp_path / "telemetry", os.O_RDONLY)  # an atomic writer's directory fsync
            os.fsync(fd)
            os.close(fd)
        with open(tmp_path / "train.log", "a") as f:  # delivered after every event above
            f.write("step 1\n")
        assert readable(w, 30.0)
        settle(w)
        # the append alone: created, modified, closed (and its directory's change), not 400 reads
        assert w.delivered - before < 10, w.delivered - before
    finally:
        w.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify names each file; watchdog's wake-ups do not")
def test_drain_says_whether_a_wanted_file_changed(tmp_path):
    w = dirwatch.watch(tmp_path)
    assert w is not None
    try:
        (tmp_path / "a.json").write_text("{}")
        assert readable(w, 30)
        assert w.drain(lambda name: name == "b.json") is False
        (tmp_path / "a.json").write_text("{}")
        (tmp_path / "b.json").write_text("{}")
        assert readable(w, 30)
        assert w.drain(lambda name: name == "b.json") is True
        (tmp_path / "a.json").write_text("{}")
        assert readable(w, 30) and w.drain() is True, "no filter: every change is wanted"
    finally:
        w.close()


def test_an_atomic_writes_temp_file_is_told_by_its_name():
    from moeconsole.runner.rundir import jsonio
    assert jsonio.is_temp_name(jsonio.temp_name("state.json"))
    assert jsonio.is_temp_name(jsonio.temp_name("gpu-node-017.json"))
    for name in ("state.json", ".state.json", ".hidden", ".state.json.zz", ".a.1234abcd5", "x.1234abcd", ".1234abcd"):
        assert not jsonio.is_temp_name(name), name
