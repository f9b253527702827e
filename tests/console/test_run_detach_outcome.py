"""What `run --detach` says of a start whose outcome is not plain (review R74): a runner that died before the
run was over, a verdict still being written when the wait ends. Real run directories, the real runner lock."""
from __future__ import annotations

import os
import time

from moeconsole.console.commands import run as run_cmd
from moeconsole.runner.rundir import rundir


def test_a_start_whose_runner_died_says_so_and_names_supervise(tmp_path, capsys):
    """The runner died (the OOM killer, a SIGKILL) while the first attempt's crash was judged: state.json
    says RUNNING and nothing supervises the run. It had been reported "started ... under a detached
    runner", exit 0."""
    base = tmp_path / "runs"
    base.mkdir()
    run = rundir.create(base, "gone")
    run.write_state({"status": "running", "name": "gone", "attempt": 1, "stale_after_s": 30.0,
                     "runner": {"pid": 4_194_000, "start_time": 1.0, "host": rundir.hostname()},
                     "judging": {"attempt": 1, "since": time.time()}})
    code = run_cmd.report_start(run, settle_s=0.2)
    err = capsys.readouterr().err
    assert code == 1, err
    assert "under a detached runner" not in err, err
    assert "runner has ended" in err and "moeconsole supervise" in err, err


def test_a_verdict_still_pending_is_waited_for_once_and_said_once(tmp_path, capsys, monkeypatch):
    """Two waits had each kept their own clock: a verdict still pending was waited for twice as long as
    said, and "waiting for ..." printed twice."""
    base = tmp_path / "runs"
    base.mkdir()
    run = rundir.create(base, "once")
    fd = rundir.lock_runner(run)   # a live runner: this process holds its lock
    try:
        run.write_state({"status": "running", "name": "once", "attempt": 1, "stale_after_s": 30.0,
                         "judging": {"attempt": 1, "since": time.time()}})
        monkeypatch.setattr(run_cmd, "VERDICT_WAIT_S", 1.5)
        monkeypatch.setattr(run_cmd, "SETTLE_S", 0.3)
        code = run_cmd.report_start(run, settle_s=0.3)
    finally:
        os.close(fd)
    err = capsys.readouterr().err
    assert err.count("waiting for the verdict") == 1, err
    assert code == 0 and "started (attempt 1 ended, judging its crash)" in err, err
