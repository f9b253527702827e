"""state.json as a console's polls read it (``RunWatcher``): parsed again only when the file
changed or its parse is a refresh tick old, and every change shown at the next poll (a file
replaced, a file rewritten in place at the same size, a runner that stopped writing it) or, when
the stat cannot tell it (the same inode, size and mtime), within a tick."""
from __future__ import annotations

import os
import time

from moeconsole.runner.core import bounds
from moeconsole.runner.rundir import rundir, runfiles
from moeconsole.runner.rundir.snapshot import RunWatcher
from tests.waiting import until


def _run(tmp_path, status: str = "running") -> rundir.RunDir:
    run = rundir.create(tmp_path / "runs", "state")
    run.write_state({"status": status, "name": "state", "attempt": 1, "stale_after_s": 30.0})
    return run


def _counting_parses(monkeypatch) -> list[str]:
    parsed: list[str] = []
    real = runfiles.load_state

    def counted(path):
        parsed.append(str(path))
        return real(path)
    monkeypatch.setattr(runfiles, "load_state", counted)
    return parsed


def _parses_allowed(started: float, changes: int = 0) -> int:
    """The first parse, one per change, and one per refresh tick since ``started`` (a busy machine
    can stretch a few polls past a tick)."""
    return 1 + changes + int((time.monotonic() - started) / bounds.REFRESH_S)


def test_polls_woken_by_other_files_do_not_parse_an_unchanged_state_json_again(tmp_path, monkeypatch):
    run = _run(tmp_path)
    parsed = _counting_parses(monkeypatch)
    started = time.monotonic()
    watcher = RunWatcher(run)
    for i in range(3):   # the log written between polls, as a running job does (each write wakes a console)
        with open(run.log, "a") as f:
            f.write(f"line {i}\n")
        snap = watcher.poll(with_gpu=False)
        assert snap.log_tail[-1] == f"line {i}" and snap.run["status_word"] == "RUNNING"
    assert 1 <= len(parsed) <= _parses_allowed(started) < 4


def test_a_state_json_replaced_is_shown_at_the_next_poll(tmp_path, monkeypatch):
    run = _run(tmp_path)
    parsed = _counting_parses(monkeypatch)
    started = time.monotonic()
    watcher = RunWatcher(run)
    assert watcher.poll(with_gpu=False).run["status_word"] == "RUNNING"
    run.write_state({"status": "paused", "name": "state", "attempt": 1, "stale_after_s": 30.0})  # a rename over it
    assert watcher.poll(with_gpu=False).run["status_word"] == "PAUSED"
    assert 2 <= len(parsed) <= _parses_allowed(started, changes=1)


def test_a_state_json_rewritten_in_place_at_the_same_size_is_shown_at_the_next_poll(tmp_path):
    run = _run(tmp_path, "paused")
    watcher = RunWatcher(run)
    assert watcher.poll(with_gpu=False).run["status_word"] == "PAUSED"
    before = os.stat(run.state)
    data = run.state.read_bytes()
    assert data.count(b'"paused"') == 1
    with open(run.state, "r+b") as f:   # the same inode, the same size: only its mtime tells
        f.write(data.replace(b'"paused"', b'"failed"'))
    # a write a clock tick later (the kernel stamps mtime with a coarse clock: two writes within
    # one tick share it, and a file rewritten so is told only by its next change)
    os.utime(run.state, ns=(before.st_atime_ns, before.st_mtime_ns + 10_000_000))
    after = os.stat(run.state)
    assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)
    assert watcher.poll(with_gpu=False).run["status_word"] == "FAILED"


def test_a_runner_that_stops_writing_state_json_goes_stale_though_the_file_is_not_read_again(tmp_path,
                                                                                              monkeypatch):
    run = _run(tmp_path)
    parsed = _counting_parses(monkeypatch)
    started = time.monotonic()
    watcher = RunWatcher(run)
    assert watcher.poll(with_gpu=False).run["stale"] is False
    later = time.time() + 60.0   # past stale_after_s (30 s) since the runner last wrote it
    monkeypatch.setattr(time, "time", lambda: later)
    snap = watcher.poll(with_gpu=False)
    monkeypatch.undo()
    assert snap.run["stale"] is True and snap.run["status_word"].startswith("RUNNING? (")
    assert 1 <= len(parsed) <= _parses_allowed(started) < 3


def _rewrite_unseen(path, old: bytes, new: bytes) -> None:
    """``path`` rewritten in place with ``new`` for ``old`` (the same length) and its mtime set back:
    what a stat cannot tell from the file read before (a freed inode given to the next new file,
    A -> B -> C, with C of A's size in A's coarse mtime tick)."""
    before = os.stat(path)
    data = path.read_bytes()
    assert len(old) == len(new) and data.count(old) == 1
    with open(path, "r+b") as f:
        f.write(data.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)


def test_a_state_json_changed_where_its_stat_cannot_tell_is_shown_within_a_refresh_tick(tmp_path):
    run = _run(tmp_path, "paused")   # an ended or paused run: its runner never writes it again
    watcher = RunWatcher(run)
    assert watcher.poll(with_gpu=False).run["status_word"] == "PAUSED"
    _rewrite_unseen(run.state, b'"paused"', b'"failed"')
    until(lambda: watcher.poll(with_gpu=False).run["status_word"] == "FAILED",
          what="the rewritten state.json shown once a refresh tick passed")


def test_a_state_json_that_could_not_be_read_is_read_again_once_it_can_be(tmp_path):
    run = _run(tmp_path, "paused")
    good = run.state.read_bytes()
    broken = good.replace(b"{", b"[", 1)   # what the console cannot use: one clear problem, not a status
    run.state.write_bytes(broken)
    watcher = RunWatcher(run)
    assert watcher.poll(with_gpu=False).run["status_word"] != "PAUSED"
    _rewrite_unseen(run.state, broken[:1], good[:1])   # mended (as a chmod does: its mtime unchanged)
    until(lambda: watcher.poll(with_gpu=False).run["status_word"] == "PAUSED",
          what="the mended state.json read again")


def test_a_log_changed_where_its_stat_cannot_tell_shows_its_new_tail_within_a_refresh_tick(tmp_path):
    """The log tail's cache had the same blind spot as state.json's: a log replaced by a new file
    with the freed inode, the old size and mtime tick (ext4 gives a freed inode to the next new
    file), or rewritten in place so, showed the old file's last lines until the log next grew (a
    finished run's: for good)."""
    run = _run(tmp_path, "paused")
    run.log.write_text("step 1\nthe old last line\n")
    watcher = RunWatcher(run)
    assert watcher.poll(with_gpu=False).log_tail[-1] == "the old last line"
    _rewrite_unseen(run.log, b"the old last line", b"the new last line")
    until(lambda: watcher.poll(with_gpu=False).log_tail[-1] == "the new last line", 30,
          what="the rewritten log's tail shown once a refresh tick passed")


def test_a_log_quiet_between_its_bursts_is_not_read_again_each_tick(tmp_path, monkeypatch):
    """A log quiet between two steps (a 1,024-rank job prints its lines every few seconds) is
    looked at each refresh tick by the bytes that end it, not read again whole (its 64 KiB tail,
    split and masked, cost a 1,024-GPU console more than its 128 nodes)."""
    from moeconsole.runner.rundir import snapshot
    run = _run(tmp_path)
    run.log.write_text("".join(f"step {i} loss 1.0\n" for i in range(200)))
    reads = []
    real = snapshot._tail_with_offsets
    monkeypatch.setattr(snapshot, "_tail_with_offsets", lambda *a, **k: (reads.append(1), real(*a, **k))[1])
    watcher = RunWatcher(run)
    assert watcher.poll(with_gpu=False).log_tail[-1] == "step 199 loss 1.0"
    ticks = watcher._tail[1]
    until(lambda: (watcher.poll(with_gpu=False), watcher._tail[1] > ticks)[1], 30, what="a refresh tick's look")
    assert reads == [1], "the same log, ending as it did: current without reading its tail again"
    with open(run.log, "a") as f:
        f.write("step 200 loss 0.9\n")
    assert watcher.poll(with_gpu=False).log_tail[-1] == "step 200 loss 0.9" and reads == [1, 1]
