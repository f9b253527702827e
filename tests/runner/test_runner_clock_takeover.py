"""A takeover from a machine whose clock is behind (rounds 29-30 left it): state.json's ``updated_at`` is the
writer's clock, the runner's start time its own. A login node an hour behind the GPU node wrote its
`kill --machine-gone` or `restart` "before" the node's runner started, so the time rule alone took the write
for an old copy put back, and the runner, back, wrote `running` over the user's kill and trained on. The
writer now names the runner record it replaced (``took_over``), and a runner named there stands down.
Real CLI, real runner, real processes and files."""
from __future__ import annotations

import json
import os
import signal
import time

from moeconsole.runner.process import proctree
from moeconsole.runner.rundir import jsonio, rundir
from tests.runner.test_runner_world28 import _elsewhere_run
from tests.runner.test_runner_world29 import _assert_stood_down, _events, _other_machine, _partitioned_run
from tests.waiting import until


def test_a_runner_back_stands_down_when_the_kill_came_from_a_machine_whose_clock_is_an_hour_behind(harness):
    run, runner_pid, pids = _partitioned_run(harness)
    os.kill(runner_pid, signal.SIGSTOP)
    try:
        there = rundir.RunDir(run.path)
        state = there.read_state()
        mine = state["runner"]
        # what `kill --machine-gone` on the login node writes (``killrun.end_elsewhere``), stamped by its clock
        there.write_state({**state, "status": "killed", "pids": [], "groups": [], "ended_at": time.time() - 3600,
                           "runner": {**rundir.client_record(mine), **_other_machine(pid=None)}})
        jsonio.atomic_write_json(there.state, {**there.read_state(), "updated_at": mine["start_time"] - 3600})
        written = there.state.read_bytes()
    finally:
        os.kill(runner_pid, signal.SIGCONT)
    _assert_stood_down(there, runner_pid, pids, written)


def test_refusal_a_state_json_put_back_from_before_this_runner_naming_another_runner_leaves_it_supervising(harness):
    """A copy of state.json restored by hand, older than the runner, whose record replaced another runner:
    not a takeover of this one (the time rule, as before)."""
    run, runner_pid, pids = _partitioned_run(harness)
    there = rundir.RunDir(run.path)
    old = there.read_state()
    earlier = {**old["runner"], "start_time": old["runner"]["start_time"] - 900}   # a runner before this one
    os.kill(runner_pid, signal.SIGSTOP)
    try:
        there.write_state({**old, "runner": {**_other_machine(pid=4242, start_time=old["runner"]["start_time"] - 600),
                                             **rundir.replacing(earlier)}})
        jsonio.atomic_write_json(there.state, {**there.read_state(), "updated_at": old["runner"]["start_time"] - 60})
    finally:
        os.kill(runner_pid, signal.SIGCONT)
    try:
        back = until(lambda: (s := there.read_state()).get("runner", {}).get("pid") == runner_pid and s, timeout=30,
                     what="the runner writing its state again")
        assert back["status"] == "running" and all(proctree.start_time(p) for p in pids), back
        assert not [e for e in _events(there) if e["type"] == "stood_down"]
    finally:
        out = harness.cli("kill", run.id)
    assert out.returncode == 0, out.stderr


def test_kill_machine_gone_and_the_restart_after_it_name_the_runner_they_replaced(harness):
    """The records the login node writes carry the gpu-07 runner they replaced: `kill --machine-gone`'s, and
    the runner a `restart` starts here after it; gpu-07's runner, back with a clock an hour ahead of
    theirs, reads itself named in either and stands down."""
    run = _elsewhere_run(harness.runs_dir, "20261204-080000-demo-0c31", written_ago=3600.0)
    gpu07 = run.read_state()["runner"]
    out = harness.cli("kill", run.run_id, "--machine-gone")
    assert out.returncode == 0, out.stderr
    killed = run.read_state()
    assert rundir.taken_over_by({**killed, "updated_at": gpu07["start_time"] - 3600}, gpu07) == rundir.hostname()
    resumed = harness.cli("restart", run.run_id)
    assert resumed.returncode == 0, resumed.stderr
    try:
        st = until(lambda: (s := run.read_state()).get("status") == "running"
                   and (s.get("runner") or {}).get("pid") not in (None, gpu07["pid"]) and s, timeout=120,
                   what="the next attempt running under a runner here")
        assert rundir.taken_over_by({**st, "updated_at": gpu07["start_time"] - 3600}, gpu07) == rundir.hostname()
        assert json.loads(run.state.read_text())["runner"]["took_over"]["host"] == "gpu-07"
    finally:
        done = harness.cli("kill", run.run_id)
    assert done.returncode == 0, done.stderr


# gpu-07's runner, alive, its clock an hour behind this machine's: it rewrites state.json every second,
# each stamp an hour old by this machine's clock (a stand-in for a runner there writing over a shared filesystem)
BEHIND_WRITER = """
import json, os, sys, time
path = sys.argv[1]
while True:
    with open(path) as f:
        state = json.load(f)
    state["updated_at"] = time.time() - 3600
    with open(path + ".w", "w") as f:
        json.dump(state, f)
    os.replace(path + ".w", path)
    time.sleep(1.0)
"""


def _behind_writer(run):
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, "-c", BEHIND_WRITER, str(run.state)])
    first = run.state.read_bytes()
    until(lambda: run.state.read_bytes() != first, timeout=30, what="gpu-07's runner writing")
    return proc


def test_a_live_runner_whose_clock_is_behind_is_neither_taken_over_nor_killed_as_gone(harness):
    """Its stamps say state.json has been silent an hour: before, `restart` here took the run over (a runner
    here, the next attempt here; gpu-07's runner, seeing it, stood down and ended a live training) and
    `kill --machine-gone` recorded a live run killed. Both now watch state.json here for three of the
    runner's rewrites first: it changes, so both refuse, say the clocks differ, and write nothing."""
    run = _elsewhere_run(harness.runs_dir, "20261204-080000-demo-0c32", written_ago=3600.0)
    attempt = run.read_state()["attempt"]
    writer = _behind_writer(run)
    try:
        for cmd in (["restart", run.run_id], ["kill", run.run_id, "--machine-gone"]):
            out = harness.cli(*cmd)
            assert out.returncode == 2 and "Traceback" not in out.stderr, (cmd, out.stdout, out.stderr)
            assert "making sure its runner on gpu-07 is silent" in out.stderr, out.stderr
            assert "its runner on gpu-07 still writes state.json" in out.stderr, out.stderr
            assert "the two clocks differ" in out.stderr and "nothing was done" in out.stderr, out.stderr
        st = run.read_state()
        assert st["status"] == "running" and st["runner"]["host"] == "gpu-07" and st["attempt"] == attempt, st
        assert not run.runner_log.exists()   # no runner was started here
        assert not [e for e in _events(run) if e["type"] in ("kill", "kill_done")]
    finally:
        writer.kill()
        writer.wait()
