"""The runner's state writer (runner/supervisor/runstate.py): one status, the lifecycle's, in
every state.json it writes and in every ``status`` answer; the file read back through its model."""
from __future__ import annotations

import json

from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.core.state import Status, StateFile
from moeconsole.runner.rundir import runfiles
from moeconsole.runner.rundir.journal import Journal
from moeconsole.runner.rundir.rundir import RunDir
from moeconsole.runner.supervisor.runstate import RunState


def test_the_status_is_the_lifecycles_and_never_a_stored_copy(tmp_path):
    run_dir = tmp_path / "r1"
    run_dir.mkdir()
    run = RunDir(run_dir)
    life = lc.Life(Status.RUNNING, attempt_live=True)
    state = RunState(Journal(run), {"status": "cooldown", "attempt": 2, "step": 40}, lambda: life.status)
    assert state.get("status") is None  # the loaded copy is dropped: the lifecycle holds it
    assert (state.attempt, state.step) == (2, 40)
    state.set(step=41)
    assert state.dirty and state.due()
    state.write()
    on_disk = json.loads(run.state.read_text())
    assert on_disk["status"] == "running" and on_disk["step"] == 41 and not state.dirty
    model, problem = runfiles.read(run.state, StateFile)
    assert problem is None and model is not None and model.status == Status.RUNNING
    life = lc.step(life, lc.Control("kill"), 0.0, lc.Settings(5.0, 0.0, 10.0))[0]
    assert state.as_dict()["status"] == Status.STOPPING  # the next write and answer follow at once
    state.write()
    assert json.loads(run.state.read_text())["status"] == "stopping"


def test_typed_readings_of_a_state_without_them():
    state = RunState(Journal.__new__(Journal), {"step": "x"}, lambda: Status.STARTING, diag=lambda msg: None)
    assert state.attempt == 0 and state.step is None


def test_a_wrong_value_is_refused_where_it_is_set_and_the_state_keeps_being_written(tmp_path):
    """The state is the file's typed model in memory: a value of the wrong type (or a key the
    file does not have) is refused by ``set`` with one line naming it, and every later write
    still happens. Before, the state was a dict checked only when written: one bad value made
    every later state.json write fail, so the run soon looked stale to every reader."""
    run_dir = tmp_path / "r1"
    run_dir.mkdir()
    run = RunDir(run_dir)
    said: list[str] = []
    state = RunState(Journal(run, diag=said.append), {"attempt": 1}, lambda: Status.RUNNING, diag=said.append)
    state.set(step=12, last_loss=1.5)
    state.set(step="twelve", pids=[{"pid": "not a pid"}], stepp=3)
    assert len(said) == 3 and "'step'" in said[0] and "'pids'" in said[1] and "'stepp'" in said[2]
    state.set(max_steps=100)
    state.write()
    on_disk = json.loads(run.state.read_text())
    assert not state.dirty and (on_disk["step"], on_disk["max_steps"], on_disk["last_loss"]) == (12, 100, 1.5)
    assert "stepp" not in on_disk and "pids" not in on_disk
    assert isinstance(state.record, StateFile) and state.step == 12 and state.get("max_steps") == 100


def test_reading_a_run_file_takes_memory_for_the_file_not_for_its_bound(tmp_path):
    """The console reads state.json at every poll (once a second). The read asked for the bound
    plus one byte, and Python makes a buffer of what is asked before it reads: 16 MiB at every
    poll for a file of a few KiB (issue 37). Now the buffer is the file's size; the file reads
    the same, and one past the bound is still refused."""
    import tracemalloc
    run = RunDir(tmp_path)
    state = RunState(Journal(run), {"attempt": 1, "step": 40}, lambda: Status.RUNNING)
    state.write()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        model, problem = runfiles.read(run.state, StateFile)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert problem is None and model is not None and (model.status, model.step) == (Status.RUNNING, 40)
    assert peak < 256 * 1024, f"reading a {run.state.stat().st_size}-byte state.json took {peak} bytes"
    env = tmp_path / "environ.json"
    env.write_bytes(b'{"v": 1, "env": {"K": "v"}}')
    assert runfiles.read(env, runfiles.LaunchEnv) == (runfiles.LaunchEnv(env={"K": "v"}), None)
    # a reader ignores keys it does not know, but a file without the environment is damaged: every
    # attempt would start from an empty one
    env.write_bytes(b'{"K": "v"}')
    got, problem = runfiles.read(env, runfiles.LaunchEnv)
    assert got is None and problem is not None and "env" in problem, problem
    env.write_bytes(b'{"v": 1, "env": {"K": "' + b"x" * runfiles.MAX_FILE_BYTES + b'"}}')
    assert runfiles.read(env, runfiles.LaunchEnv) == (None, "environ.json: larger than 16 MiB")
