"""The steps ms-swift trains after its last logging step: the run ends at the step ms-swift
reached, not at the last one that printed a dict (real ms-swift 4.6 on CPU, a few steps)."""
from __future__ import annotations

import json

from tests.swift.swift_helpers import cli, require_swift, start


def test_a_run_whose_last_step_logs_no_dict_ends_at_the_step_ms_swift_reached(swift_runs, tiny):
    """5 steps logged every 2: ms-swift prints dicts at steps 1, 2, 4 (the first step too), trains
    step 5 without one, saves checkpoint-5 and ends with its summary dict (`'global_step/max_steps':
    '5/5'`). Before, the run succeeded "at step 4 of 5" (state.json, the success event, --json)."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=5", "args.logging_steps=2", "args.save_steps=5")
    state = run.wait(lambda s: s.get("status") == "succeeded", "status succeeded")
    assert [m["step"] for m in run.metrics()] == [1, 2, 4]          # nothing invented for step 5
    assert (state["step"], state["max_steps"]) == (5, 5)
    assert state["history"][-1]["last_step"] == 5
    assert run.events("success")[-1]["step"] == 5
    assert [e["step"] for e in run.ok_checkpoints()] == [5]
    proc = cli(swift_runs, "--json", run.id, "--once")
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)["run"]
    assert (shown["step"], shown["max_steps"]) == (5, 5)



def test_a_run_shorter_than_its_logging_interval_ends_at_the_summarys_step(swift_runs, tiny):
    """3 steps logged every 5 without the first step (`--logging_first_step false`): ms-swift prints no step
    dict at all, saves checkpoint-3 and ends with its summary (`'global_step/max_steps': '3/3'`). Before, the run
    succeeded with no step and no total anywhere (state.json, the success event, `runs show`'s `steps —`,
    --json), beside the verified checkpoint-3 it resumes from."""
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=3", "args.logging_steps=5", "args.logging_first_step=false",
                "args.save_steps=100")
    state = run.wait(lambda s: s.get("status") == "succeeded", "status succeeded")
    assert "'global_step/max_steps': '3/3'" in run.log()
    assert run.metrics() == []                                       # nothing invented
    assert (state["step"], state["max_steps"]) == (3, 3)
    assert state["history"][-1]["last_step"] == 3
    assert run.events("success")[-1]["step"] == 3
    assert [e["step"] for e in run.ok_checkpoints()] == [3]
    shown = json.loads(cli(swift_runs, "--json", run.id, "--once").stdout)["run"]
    assert (shown["step"], shown["max_steps"]) == (3, 3)
    show = cli(swift_runs, "runs", "show", run.id).stdout
    assert "steps     —" not in show, show
