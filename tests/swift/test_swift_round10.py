"""Round 10 of the real ms-swift 4.6 audit: what the runner read wrong of how a real run ended.

transformers' ``EarlyStoppingCallback`` stopping within the run's last logging interval: logged, evaluated and
saved every 4 steps with patience 1 and a learning rate of 0, it stops at step 8 of 10 (``'global_step/max_steps':
'8/10'``). 8 of 10 is within one logging interval (4) of the total, and the runner read it as a run that reached its
total: plain ``SUCCEEDED``, without reading the save that says what stopped it
(runner/supervisor/judge.py read the saves only when ``ending.short_end`` already called the end short). Measured
before: ``SUCCEEDED`` with no ``stopped_by``; now ``SUCCEEDED (stopped by transformers EarlyStoppingCallback at
step 8 of 10)``, read from checkpoint-8/trainer_state.json as in test_swift_callback_stops.py.

``--save_strategy no``: the Trainer saves nothing during the run and ms-swift nothing at its end (its save at
max_steps is skipped for it, swift/trainers/patcher.py l.70): ``output/v0-<time>/`` holds no ``checkpoint-N/``,
the run ends ``UNSAVED`` and a crash restarts from step 0. ``lint`` said nothing of it (0 warnings); now the
warning ``swift_saves_nothing`` says so before the run (runner/recipes/swift/lint.py ``rule_saves_nothing``)."""
from __future__ import annotations

import json
from pathlib import Path

from tests.swift.swift_helpers import RECIPE, cli, require_swift, start
from tests.swift.test_swift_callback_stops import PLUGIN


def test_an_early_stop_within_the_last_logging_interval_is_named_from_its_save(swift_runs, tiny, tmp_path: Path):
    require_swift()
    plugin = tmp_path / "early_stopping_plugin.py"
    plugin.write_text(PLUGIN.format(patience=1))
    run = start(swift_runs, tiny, "args.max_steps=10", "args.eval_steps=4", "args.save_steps=4",
                "args.logging_steps=4", "args.split_dataset_ratio=0.1", "args.learning_rate=0",
                "args.load_best_model_at_end=true", "args.metric_for_best_model=loss",
                f"args.external_plugins={plugin}", "args.callbacks=hf_early_stopping")
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved"), "the end")
    assert "'global_step/max_steps': '8/10'" in run.log()     # what ms-swift said: it stopped at 8 of 10
    word = "SUCCEEDED (stopped by transformers EarlyStoppingCallback at step 8 of 10)"
    assert state["status"] == "succeeded" and state.get("ended_short") is None, state
    stopped = state.get("stopped_by") or {}
    assert {k: stopped.get(k) for k in ("by", "step", "max_steps")} == \
        {"by": "transformers EarlyStoppingCallback", "step": 8, "max_steps": 10}, state
    assert stopped["line"].startswith("checkpoint-8/trainer_state.json: EarlyStoppingCallback's "), stopped
    (success,) = run.events("success")
    assert success.get("stopped_by") == "transformers EarlyStoppingCallback" and not success.get("short"), success
    shown = json.loads(cli(swift_runs, "--json", run.id, "--once").stdout)["run"]
    assert (shown["status_word"], shown["next_command"]) == (word, None)


def test_save_strategy_no_saves_nothing_and_lint_says_so_first(swift_runs, tiny):
    require_swift()
    linted = cli(None, "lint", str(RECIPE), "--set", "args.save_strategy=no")
    (warned,) = [ln for ln in linted.stdout.splitlines() if "swift_saves_nothing" in ln]
    assert warned.startswith("warning swift_saves_nothing: --save_strategy no: the Trainer saves no checkpoint"), warned
    assert "the run ends UNSAVED" in warned, warned
    for other in ("epoch",):     # a refusal: a strategy that saves
        assert "swift_saves_nothing" not in cli(None, "lint", str(RECIPE), "--set", f"args.save_strategy={other}").stdout
    run = start(swift_runs, tiny, "args.save_strategy=no", "args.max_steps=4")
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved", "failed"), "the end")
    assert (state["status"], state["step"], state["max_steps"]) == ("unsaved", 4, 4), state
    assert not list(run.path.glob("output/v0-*/checkpoint-*")), list(run.path.glob("output/v0-*/*"))
    assert state["pause_reason"].startswith("training finished (exit 0) but no checkpoint was saved under "), state


# A crash in the training's end, after its save at the total: a callback whose on_train_end raises once (what a
# failed push, an OOM loading the best model or a preemption there does). transformers 5.19 resumes a save at
# max_steps by training one step past it (trainer.py: the loop's stop check, DefaultFlowCallback.on_step_end
# l.591-592, runs only after a step), so the automatic restart trained step 7 of 6 and saved checkpoint-7.
END_CRASH = """import os
from transformers import TrainerCallback
from swift.callbacks import callbacks_map


class CrashAtEnd(TrainerCallback):
    def __init__(self, args=None, trainer=None):
        pass

    def on_train_end(self, args, state, control, **kwargs):
        marker = {marker!r}
        if not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError("crashed in the training's end, after its last save")


callbacks_map['crash_at_end'] = CrashAtEnd
"""


def test_a_crash_after_the_save_at_the_total_is_not_restarted_past_it(swift_runs, tiny, tmp_path: Path):
    require_swift()
    plugin = tmp_path / "crash_at_end.py"
    plugin.write_text(END_CRASH.format(marker=str(tmp_path / "crashed-once")))
    run = start(swift_runs, tiny, "args.max_steps=6", "args.save_steps=3", f"args.external_plugins={plugin}",
                "args.callbacks=crash_at_end")
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved", "failed", "paused"),
                                  "the end")
    assert "RuntimeError: crashed in the training's end, after its last save" in run.log()
    assert state["status"] == "paused" and state["attempt"] == 1, state
    assert not list(run.path.glob("output/v*/checkpoint-7")), "restarted past its total"
    (crash,) = run.events("crash")
    assert crash["decision"] == "pause", crash
    reason = state["pause_reason"]
    assert "checkpoint-6 holds step 6 of 6" in reason and "one step past it" in reason, reason
    shown = json.loads(cli(swift_runs, "--json", run.id, "--once").stdout)["run"]
    assert shown["status_word"].startswith("PAUSED"), shown["status_word"]
