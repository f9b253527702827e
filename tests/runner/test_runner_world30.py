"""The supervised run in a hostile world, round 30 (docs/reliability.md): records a runner appends in its
first moments back, after another machine took its run over. A real run directory and a real Supervisor;
asserts on the run's own records, what every view reads."""
from __future__ import annotations

import json
import os
import time
import uuid

from moeconsole.runner.process import proctree
from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.supervisor.supervisor import Supervisor
from tests.runner.test_seam_units import made  # noqa: F401  (the fixture)


def _lines(path) -> list[dict]:
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()] if path.exists() else []


def test_records_of_a_runner_back_after_a_takeover_are_never_written(made):  # noqa: F811
    """Round 29 left it: a runner stopped in the middle of a turn (its node cut off from the shared
    filesystem) while the login node recorded the run killed (`kill --machine-gone`) came back and appended
    that turn's records, the metrics of the log it read while away, to metrics.jsonl and events.jsonl of the
    killed run, before its once-a-second look stood it down. Its first record back now looks first: nothing
    of it is written, the one `stood_down` event is. Refusal: within the second of its last look, and with
    state.json its own, records are written as before."""
    run, _ = made()
    sup = Supervisor(run)
    try:
        # the runner record ``Supervisor.start`` writes (this process stands for the runner)
        me = {**rundir.runner_record(run.path), "start_time": proctree.start_time(os.getpid())}
        sup.owner.claim(me)
        sup.state.set(runner=me)
        sup.flush_state(force=True)
        sup.journal.metrics([{"step": 1, "loss": 1.0, "t": time.time()}])
        sup.owner.looked = time.monotonic() - 60.0   # its state.json is its own: a look finds nothing
        sup.journal.metrics([{"step": 2, "loss": 0.9, "t": time.time()}])
        assert [r["step"] for r in _lines(run.metrics)] == [1, 2]
        # away (stopped) a minute; meanwhile the login node recorded the run killed
        there = rundir.RunDir(run.path)
        there.write_state({**there.read_state(), "status": "killed", "pids": [], "groups": [], "ended_at": time.time(),
                           "runner": {"pid": None, "host": "login-1", "boot_id": str(uuid.uuid4()),
                                      "pidns": 4026531999}})
        killed = run.state.read_bytes()
        sup.owner.looked = time.monotonic() - 60.0
        sup.journal.metrics([{"step": 3, "loss": 0.8, "t": time.time()}])
        sup.journal.event("checkpoint_seen", step=3)
        sup.flush_state(force=True)   # nor state.json: it is theirs
        # the loop stands down at its next turn (the stood_down event: test_runner_world29, a real runner)
        assert sup.owner.lost_to == "login-1"
    finally:
        sup.dirguard.close()
    assert [r["step"] for r in _lines(run.metrics)] == [1, 2]
    events = _lines(run.events)
    assert not [e for e in events if e["type"] == "checkpoint_seen"], events
    assert run.state.read_bytes() == killed and jsonio.read_json(run.state)["status"] == "killed"
