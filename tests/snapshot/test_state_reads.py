"""state.json as a console's polls read it (``RunWatcher``): parsed again only when the file
changed, and every change shown at the next poll (a file replaced, a file rewritten in place
at the same size, a runner that stopped writing it)."""
from __future__ import annotations

import os
import time

from moeconsole.runner.rundir import rundir, runfiles
from moeconsole.runner.rundir.snapshot import RunWatcher


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


def test_polls_woken_by_other_files_do_not_parse_an_unchanged_state_json_again(tmp_path, monkeypatch):
    run = _run(tmp_path)
    parsed = _counting_parses(monkeypatch)
    watcher = RunWatcher(run)
    for i in range(3):   # the log written between polls, as a running job does (each write wakes a console)
        with open(run.log, "a") as f:
            f.write(f"line {i}\n")
        snap = watcher.poll(with_gpu=False)
        assert snap.log_tail[-1] == f"line {i}" and snap.run["status_word"] == "RUNNING"
    assert len(parsed) == 1


def test_a_state_json_replaced_is_shown_at_the_next_poll(tmp_path, monkeypatch):
    run = _run(tmp_path)
    parsed = _counting_parses(monkeypatch)
    watcher = RunWatcher(run)
    assert watcher.poll(with_gpu=False).run["status_word"] == "RUNNING"
    run.write_state({"status": "paused", "name": "state", "attempt": 1, "stale_after_s": 30.0})  # a rename over it
    assert watcher.poll(with_gpu=False).run["status_word"] == "PAUSED"
    assert len(parsed) == 2


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
    watcher = RunWatcher(run)
    assert watcher.poll(with_gpu=False).run["stale"] is False
    later = time.time() + 60.0   # past stale_after_s (30 s) since the runner last wrote it
    monkeypatch.setattr(time, "time", lambda: later)
    snap = watcher.poll(with_gpu=False)
    monkeypatch.undo()
    assert snap.run["stale"] is True and snap.run["status_word"].startswith("RUNNING? (")
    assert len(parsed) == 1
