"""A real ms-swift 4.6 training that stops itself early on purpose reads as finished, the stop
named, never ``ENDED SHORT`` nor a restart (runner/core/ending.py ``STOPPED_ITSELF``):

- ``--max_epochs 1`` of ``--num_train_epochs 3`` (swift/trainers/patcher.py
  ``DefaultFlowCallbackNew.on_epoch_end``): 215 rows in batches of 8 are 27 steps an epoch, 81 in all;
  it saves checkpoint-27 and stops, printing ``[INFO:swift] Training has reached `max_epochs`...``;
- ``--early_stop_interval 1`` with an eval split and a learning rate of 0 (the eval loss cannot improve;
  swift/callbacks/early_stop.py ``EarlyStopCallback.on_save``): saves at 3 and 6, stops at 6 of 30,
  printing ``[INFO:swift] Training stop because of eval metric is stable at step 6``.

Before, both were ``succeeded`` with ``ended_short``, ``ENDED SHORT (step 27 of 81)``, a pause reason asking
whether a SIGTERM stopped it and a ``restart --force`` offered (measured on the code before this test)."""
from __future__ import annotations

import json

import pytest

from tests.swift.swift_helpers import cli, require_swift, start

CASES = {
    "max_epochs": (("args.max_steps=-1", "args.num_train_epochs=3", "args.max_epochs=1", "args.save_steps=100"),
                   "ms-swift --max_epochs", 27, 81, [27]),
    "early_stop_interval": (("args.max_steps=30", "args.save_steps=3", "args.split_dataset_ratio=0.1",
                             "args.early_stop_interval=1", "args.learning_rate=0"),
                            "ms-swift --early_stop_interval", 6, 30, [3, 6]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_training_that_stops_itself_on_purpose_succeeded_and_names_the_stop(swift_runs, tiny, case):
    require_swift()
    overrides, by, step, total, saves = CASES[case]
    run = start(swift_runs, tiny, *overrides)
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved"), "the end")
    word = f"SUCCEEDED (stopped by {by} at step {step} of {total})"
    assert state["status"] == "succeeded" and state["attempt"] == 1, state
    assert (state["step"], state["max_steps"]) == (step, total)
    assert state.get("ended_short") is None and not state.get("pause_reason"), state
    assert {k: state["stopped_by"][k] for k in ("by", "step", "max_steps")} == {"by": by, "step": step,
                                                                                "max_steps": total}
    assert state["stopped_by"]["line"].startswith("[INFO:swift] Training ")
    (success,) = run.events("success")
    assert success["stopped_by"] == by and not success.get("short"), success
    assert run.events("crash") == [] and run.events("restart") == []
    assert [e["step"] for e in run.ok_checkpoints()] == saves
    shown = json.loads(cli(swift_runs, "--json", run.id, "--once").stdout)["run"]
    assert (shown["status_word"], shown["next_command"]) == (word, None)
    show = cli(swift_runs, "runs", "show", run.id)
    assert show.returncode == 0 and word in show.stdout.splitlines()[0] and "ENDED SHORT" not in show.stdout, show.stdout
    listed = cli(swift_runs, "runs", "ls")
    line = next(ln for ln in listed.stdout.splitlines() if run.id in ln)
    assert "ENDED SHORT" not in line and "SUCCEEDED" in line and "stopped by" in line, line
