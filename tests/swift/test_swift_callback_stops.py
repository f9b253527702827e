"""Trainer callbacks that stop a real ms-swift 4.6 training early, and say nothing in its log.

transformers' ``EarlyStoppingCallback`` (added the way ms-swift takes any callback: an ``--external_plugins``
file puts it into ``swift.callbacks.callbacks_map`` and ``--callbacks NAME`` builds it, swift/trainers/mixin.py
l.158-162) stops after ``early_stopping_patience`` evaluations that did not improve (trainer_callback.py
l.758-773) and logs nothing. With a learning rate of 0 the eval loss cannot improve: evaluated every 2 steps
with patience 1, it stops at step 4 of 30 and exits 0 with the summary ``'global_step/max_steps': '4/30'``.
Measured before: ``ENDED SHORT (step 4 of 30)``, the pause reason asking whether a SIGTERM stopped it and
``moeconsole restart --force`` offered. The save of step 4 says what stopped it: its trainer_state.json holds the
callback's ``early_stopping_patience_counter`` 1 of ``early_stopping_patience`` 1 beside ``should_training_stop:
true`` (runner/core/ending.py ``early_stopped``).

ms-swift's own ``--callbacks graceful_exit`` (swift/callbacks/deepspeed_elastic.py ``GracefulExitCallback``) takes
SIGTERM, SIGINT, SIGUSR1 and SIGUSR2 in the trainer (swift/utils/shutdown_manager.py), saves at the end of the step
that sees one and stops: exit 0, nothing printed. A SIGTERM to the trainer from outside (a preemption) at step 3 of
400, saves every 100: it saved ``checkpoint-5`` (with ``should_training_stop: false``: the callback asks after the
save) and the summary said ``5/400``. Measured before: ``ENDED SHORT (step 5 of 400)``, no restart. The save of the
last step of a run whose args.json names the callback is the proof now: ``preempted``, restarted from it
(``graceful_exit_at``)."""
from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.swift.swift_helpers import cli, require_swift, start, trainer_pid

PLUGIN = """from transformers import EarlyStoppingCallback
from swift.callbacks import callbacks_map
callbacks_map['hf_early_stopping'] = lambda args, trainer: EarlyStoppingCallback(early_stopping_patience={patience})
"""


def _early_stopping_run(swift_runs: Path, tiny: Path, tmp_path: Path, patience: int, save_steps: int):
    plugin = tmp_path / "early_stopping_plugin.py"
    plugin.write_text(PLUGIN.format(patience=patience))
    return start(swift_runs, tiny, "args.max_steps=30", "args.eval_steps=2", f"args.save_steps={save_steps}",
                 "args.split_dataset_ratio=0.1", "args.learning_rate=0", "args.load_best_model_at_end=true",
                 "args.metric_for_best_model=loss", f"args.external_plugins={plugin}",
                 "args.callbacks=hf_early_stopping")


def test_transformers_early_stopping_is_a_success_named_from_its_save(swift_runs, tiny, tmp_path):
    require_swift()
    run = _early_stopping_run(swift_runs, tiny, tmp_path, patience=1, save_steps=2)
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved"), "the end")
    assert "'global_step/max_steps': '4/30'" in run.log()     # what ms-swift said: it stopped at 4 of 30
    by, word = "transformers EarlyStoppingCallback", "SUCCEEDED (stopped by transformers EarlyStoppingCallback " \
                                                     "at step 4 of 30)"
    assert state["status"] == "succeeded" and state["attempt"] == 1, state
    assert state.get("ended_short") is None and not state.get("pause_reason"), state
    stopped = state["stopped_by"]
    assert {k: stopped[k] for k in ("by", "step", "max_steps")} == {"by": by, "step": 4, "max_steps": 30}
    assert stopped["line"] == ("checkpoint-4/trainer_state.json: EarlyStoppingCallback's early_stopping_patience_"
                               "counter 1 of early_stopping_patience 1, should_training_stop true at step 4")
    (success,) = run.events("success")
    assert success["stopped_by"] == by and not success.get("short"), success
    assert run.events("crash") == [] and run.events("restart") == []
    assert [e["step"] for e in run.ok_checkpoints()] == [2, 4]
    shown = json.loads(cli(swift_runs, "--json", run.id, "--once").stdout)["run"]
    assert (shown["status_word"], shown["next_command"]) == (word, None)
    show = cli(swift_runs, "runs", "show", run.id)
    assert show.returncode == 0 and word in show.stdout.splitlines()[0] and "ENDED SHORT" not in show.stdout, \
        show.stdout
    line = next(ln for ln in cli(swift_runs, "runs", "ls").stdout.splitlines() if run.id in ln)
    assert "ENDED SHORT" not in line and "stopped by" in line, line


def test_an_early_stop_at_an_evaluation_without_a_save_is_named_from_the_save_before_it(swift_runs, tiny, tmp_path):
    """Patience 2, evaluations every 2 steps, saves every 4: the stop comes at step 6, an evaluation with no save
    (transformers saves on its own cadence; ms-swift adds a save only at max_steps, swift/trainers/patcher.py
    l.63-72). checkpoint-4 holds the counter at 1 of 2, no stop. Until round 11 nothing read said what stopped it
    (``ENDED SHORT (step 6 of 30)``); now the stop is replayed from checkpoint-4's callback state over the
    evaluation ms-swift logged at step 6 (logging.jsonl; ``ending.early_stop_replayed``)."""
    require_swift()
    run = _early_stopping_run(swift_runs, tiny, tmp_path, patience=2, save_steps=4)
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved"), "the end")
    assert "'global_step/max_steps': '6/30'" in run.log()
    assert state["status"] == "succeeded" and state.get("ended_short") is None, state
    stopped = state["stopped_by"]
    assert {k: stopped[k] for k in ("by", "step", "max_steps")} == \
        {"by": "transformers EarlyStoppingCallback", "step": 6, "max_steps": 30}, stopped
    assert stopped["line"].startswith("checkpoint-4/trainer_state.json: EarlyStoppingCallback's early_stopping_"
                                      "patience 2 (threshold 0, counter 1 at step 4), and the evaluation at step 6 "
                                      "did not improve eval_loss on "), stopped
    assert [e["step"] for e in run.ok_checkpoints()] == [4]
    shown = json.loads(cli(swift_runs, "--json", run.id, "--once").stdout)["run"]
    assert shown["status_word"] == "SUCCEEDED (stopped by transformers EarlyStoppingCallback at step 6 of 30)"


def test_a_sigterm_ms_swifts_graceful_exit_handled_is_a_preemption_resumed_from_its_save(swift_runs, tiny):
    require_swift()
    if os.path.exists("/tmp/stop"):
        pytest.skip("/tmp/stop exists on this machine: graceful_exit would stop at the first step")
    run = start(swift_runs, tiny, "args.callbacks=graceful_exit", "args.max_steps=400", "args.save_steps=100")
    try:
        run.wait_while_moving(lambda s: (s.get("step") or 0) >= 3 and trainer_pid(run), "step 3")
        pid = trainer_pid(run)
        assert pid is not None
        os.kill(pid, signal.SIGTERM)     # from outside: not the runner's
        st = run.wait_while_moving(lambda s: s.get("attempt") == 2 or s.get("status") in ("succeeded", "failed",
                                                                                          "paused"), "attempt 1 judged")
        (logged,) = run.path.glob("output/v0-*/logging.jsonl")
        last = [d for d in map(json.loads, logged.read_text().splitlines()) if "global_step/max_steps" in d][-1]
        end_step = int(str(last["global_step/max_steps"]).split("/")[0])   # the summary's: the step it stopped at
        (saved,) = run.path.glob(f"output/v0-*/checkpoint-{end_step}")
        assert end_step < 400 and end_step % 100, end_step
        assert st.get("ended_short") is None and run.events("success") == [], st
        (crash,) = [c for c in run.events("crash") if c["attempt"] == 1]
        assert (crash["class"], crash["decision"]) == ("preempted", "restart"), crash
        assert f"at step {end_step} of 400" in crash["summary"], crash["summary"]
        report = json.loads((run.path / "crashes" / "attempt-1.json").read_text())
        assert any(e.startswith(f"checkpoint-{end_step} was saved at step {end_step}, where the training stopped, by "
                                "ms-swift's graceful_exit callback") for e in report["evidence"]), report["evidence"]
        (start2,) = [e for e in run.events("attempt_start") if e["attempt"] == 2]
        assert start2["resumed_from"] == str(saved), (start2, saved)
    finally:
        cli(swift_runs, "kill", run.id)
