"""Round 11 of the real ms-swift 4.6 audit: what the runner read wrong of how a real run ended.

transformers' ``EarlyStoppingCallback`` under ``--save_total_limit 1 --load_best_model_at_end true``: the save of
the step it stopped at is deleted at the end (trainer.py ``_finalize_training``, 5.19 l.2005-2011: with
``save_total_limit == 1`` every save but the best goes), so the proof ``test_swift_callback_stops.py`` reads (the
stop save's patience counter) is gone. Learning rate 0, evaluated and saved every 2 steps, patience 2: the eval loss
never beats step 2's, the callback stops at step 6 of 30 (``'global_step/max_steps': '6/30'``) and only
``checkpoint-2`` (the best) is left. Measured before: ``ENDED SHORT (step 6 of 30)`` with ``moeconsole restart
--force`` offered. What is left says it: checkpoint-2/trainer_state.json holds the callback's patience (2), its
threshold (0) and counter (0) at step 2 and the Trainer's ``best_metric``; the evaluations after it (the run's
``evals.jsonl``, what ms-swift printed) did not beat it at steps 4 and 6, so the counter reached 2 at step 6, the
step the training stopped at (``ending.early_stop_replayed``)."""
from __future__ import annotations

import json
from pathlib import Path

from moeconsole.runner.rundir import rundir
from tests.swift.swift_helpers import cli, require_swift, start
from tests.swift.test_swift_callback_stops import PLUGIN


def test_an_early_stop_whose_save_was_deleted_is_named_from_the_kept_save(swift_runs, tiny, tmp_path: Path):
    require_swift()
    plugin = tmp_path / "early_stopping_plugin.py"
    plugin.write_text(PLUGIN.format(patience=2))
    run = start(swift_runs, tiny, "args.max_steps=30", "args.eval_steps=2", "args.save_steps=2",
                "args.save_total_limit=1", "args.split_dataset_ratio=0.1", "args.learning_rate=0",
                "args.load_best_model_at_end=true", "args.metric_for_best_model=loss",
                f"args.external_plugins={plugin}", "args.callbacks=hf_early_stopping")
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved", "failed"), "the end")
    assert "'global_step/max_steps': '6/30'" in run.log()     # what ms-swift said: it stopped at 6 of 30
    kept = sorted(p.name for p in run.path.glob("output/v0-*/checkpoint-*"))
    assert kept == ["checkpoint-2"], kept                      # the stop's save (checkpoint-6) was deleted
    word = "SUCCEEDED (stopped by transformers EarlyStoppingCallback at step 6 of 30)"
    assert state["status"] == "succeeded" and state.get("ended_short") is None, state
    stopped = state.get("stopped_by") or {}
    assert {k: stopped.get(k) for k in ("by", "step", "max_steps")} == \
        {"by": "transformers EarlyStoppingCallback", "step": 6, "max_steps": 30}, state
    assert stopped["line"].startswith("checkpoint-2/trainer_state.json: EarlyStoppingCallback's "
                                      "early_stopping_patience 2"), stopped
    assert "steps 4, 6" in stopped["line"], stopped
    shown = json.loads(cli(swift_runs, "--json", run.id, "--once").stdout)["run"]
    assert (shown["status_word"], shown["next_command"]) == (word, None)


def test_a_manual_restart_from_the_save_at_the_total_trains_no_step_past_it(swift_runs, tiny, tmp_path: Path):
    """Round 10 pauses the automatic restart of a crash in the training's end (the save it would resume from holds
    the total). ``moeconsole restart`` of that pause resumed from it all the same: measured before, ms-swift trained
    ``'global_step/max_steps': '5/4'`` (``remaining_time`` "23h 59m 57s"), saved ``v1-*/checkpoint-5`` and the run
    SUCCEEDED at step 5 of 4. Now ``restart`` refuses it, "nothing left to train" (``ending.resume_at_total_refusal``,
    asked by ``launch.restart_at_total_refusal``), and the run stays paused; the runner asks the same before it launches."""
    require_swift()
    from tests.swift.test_swift_round10 import END_CRASH
    plugin = tmp_path / "crash_at_end.py"
    plugin.write_text(END_CRASH.format(marker=str(tmp_path / "crashed-once")))
    run = start(swift_runs, tiny, "args.max_steps=4", "args.save_steps=2", f"args.external_plugins={plugin}",
                "args.callbacks=crash_at_end")
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved", "failed", "paused"),
                                  "the pause")
    assert state["status"] == "paused" and state["attempt"] == 1, state
    asked = cli(swift_runs, "restart", run.id)
    typed = rundir.command_ref(swift_runs, run.id)[1]
    assert (asked.returncode, asked.stderr.strip()) == (2, (
        f"moeconsole: {run.id}: nothing left to train: checkpoint-4 holds step 4 of 4 (its trainer_state.json); not "
        "restarted, as transformers resumes a save at its max_steps by training one step past it (step 5 of 4, a "
        "learning rate from the schedule's end). The trained result is checkpoint-4. To train on, raise --max_steps "
        f"in a new run; to redo the end, resume an earlier save: moeconsole restart {typed} --from checkpoint-N")), \
        (asked.returncode, asked.stderr)
    state = run.state()
    assert not list(run.path.glob("output/v*/checkpoint-5")), "restarted past its total"
    assert (state["status"], state["attempt"], state["step"]) == ("paused", 1, 4), state
    assert "5/4" not in run.log()
    # a refusal: an earlier save chosen is resumed as any other (steps 3 and 4 again)
    assert cli(swift_runs, "restart", run.id, "--from", "checkpoint-2").returncode == 0
    state = run.wait_while_moving(lambda s: s.get("status") in ("succeeded", "unsaved", "failed")
                                  or (s.get("status") == "paused" and s.get("attempt") == 2), "the resumed end")
    assert (state["status"], state["attempt"], state["step"]) == ("succeeded", 2, 4), state


def test_sighup_to_the_trainer_alone_is_said_through_ms_swifts_exit_255(swift_runs, tiny):
    """SIGHUP to the trainer alone (swift/cli/sft.py; the wrapper is not signalled): the trainer dies with nothing
    printed, and ms-swift's ``swift`` exits 255 (swift/cli/main.py 4.6.0 l.100-102: ``sys.exit(result.returncode)``
    with subprocess.run's -1). Measured before (round 10): crash ``unknown`` "exited with code 255", nothing said of
    the trainer or the signal. 255 alone stays a plain code (``crash.decode_exit``: a program's ``exit(-1)``);
    with ms-swift's trainer among the attempt's programs and nothing raised, the summary says what it means."""
    import os
    import signal
    from tests.swift.swift_helpers import trainer_pid
    require_swift()
    run = start(swift_runs, tiny, "args.max_steps=400", "args.save_steps=2")
    run.wait_while_moving(lambda s: (s.get("step") or 0) >= 3 and trainer_pid(run) is not None, "step 3")
    pid = trainer_pid(run)
    assert pid is not None
    os.kill(pid, signal.SIGHUP)
    run.wait_while_moving(lambda s: bool(run.events("crash")), "the crash")
    (crash,) = run.events("crash")[:1]
    assert (crash["class"], crash["exit_code"], crash["signal"]) == ("unknown", 255, None), crash
    assert crash["summary"] == (
        "exited with code 255: ms-swift's swift exits with its trainer's status, and 255 is the trainer's -1: "
        "ended by SIGHUP (or its own exit(-1)), with nothing printed"), crash
    assert crash["decision"] == "restart", crash
    cli(swift_runs, "kill", run.id)
