"""A training that stops itself early on purpose and says so reads as finished, the stop named
(runner/core/ending.py ``STOPPED_ITSELF``, runner/supervisor/judge.py): no ms-swift needed. The lines
are the ones the programs print: ms-swift 4.6 (swift/trainers/patcher.py ``DefaultFlowCallbackNew.on_epoch_end``,
swift/callbacks/early_stop.py ``EarlyStopCallback.on_save``; as captured from a real run, after tqdm's
bar in the same line of the file) and Megatron-LM (training.py ``checkpoint_and_decide_exit``, printed
by ``print_datetime`` as ``[<words>] datetime: <time> ``). Before, each read ``ENDED SHORT``."""
from __future__ import annotations

import pytest

from moeconsole.runner.checkpoints.keeper import SaveCheck
from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.core.ending import short_end
from moeconsole.runner.core.policy import RestartSettings
from moeconsole.runner.rundir.snapshot import next_command, status_word
from moeconsole.runner.supervisor.judge import EndedAttempt, judge

MAX_EPOCHS = ("Train:  33%|███▎      | 27/81 [00:02<00:04, 13.39it/s]Train:  33%|███▎      | 27/81 [00:02<00:04, "
              "13.39it/s][INFO:swift] Training has reached `max_epochs`. The model will be saved and the training "
              "will be exited.")
EARLY_STOP = "[INFO:swift] Training stop because of eval metric is stable at step 6"
EXIT_INTERVAL = "[exiting program at iteration 100] datetime: 2026-12-04 02:00:07.737670 "
EXIT_DURATION = "[exiting program after 240.0137 minutes] datetime: 2026-12-04 02:00:07.737670 "
SUMMARY = "{'train_runtime': '2.191', 'epoch': '1', 'global_step/max_steps': '27/81'}"
AFTER = ["[INFO:swift] Saving model checkpoint to /out/v0-1/checkpoint-27", SUMMARY,
         "[INFO:swift] last_model_checkpoint: /out/v0-1/checkpoint-27", "[INFO:swift] End time of running main: x"]


@pytest.mark.parametrize("line, by", [
    (MAX_EPOCHS, "ms-swift --max_epochs"),
    (EARLY_STOP, "ms-swift --early_stop_interval"),
    (EXIT_INTERVAL, "Megatron --exit-interval"),
    (EXIT_DURATION, "Megatron --exit-duration-in-mins"),
    ("[rank0]: " + EXIT_INTERVAL, "Megatron --exit-interval"),
])
def test_the_trainings_own_stop_line_names_what_stopped_it(line, by):
    end = short_end(27, 81, [line, *AFTER], log_every=1)
    assert end is not None and end.sigterm_line is None
    assert end.stopped_by == by and end.stop_line is not None and end.stop_line in line
    assert not end.stop_line.startswith("Train:")          # the bar before it is not its words


def test_the_stop_line_counts_within_the_last_logging_interval():
    """Logged every 10 steps, stopped at 27 of 30 by --max_epochs: its own word says it stopped."""
    assert short_end(27, 30, [MAX_EPOCHS, *AFTER], log_every=10).stopped_by == "ms-swift --max_epochs"


def test_a_stop_line_at_the_total_is_a_plain_end():
    assert short_end(81, 81, [MAX_EPOCHS, *AFTER], log_every=1) is None


@pytest.mark.parametrize("line", [
    "Training has reached `max_epochs`. The model will be saved and the training will be exited.",  # not its logger's
    "hint: Training stop because of eval metric is stable at step 6 means --early_stop_interval",
    "see 'exiting program at iteration 100' in the docs",
    "[exiting program after receiving SIGTERM.] datetime: 2026-12-04 02:00:07.737670 ",   # a SIGTERM, below
])
def test_words_that_only_quote_a_stop_name_nothing(line):
    end = short_end(27, 81, [line, *AFTER], log_every=1)
    assert end is not None and end.stopped_by is None


def test_megatrons_exit_signal_handler_is_a_sigterm_it_handled():
    line = "[exiting program after receiving SIGTERM.] datetime: 2026-12-04 02:00:07.737670 "
    end = short_end(100, 1000, [line], log_every=10)
    assert end is not None and end.sigterm_line == line.strip() and end.stopped_by is None


def test_the_newest_word_decides():
    """A JIT SIGTERM line after a stop line of an earlier epoch's end cannot happen in one attempt; the
    newest line is read, as the tail's newest SIGTERM line was before."""
    jit = "[INFO:transformers.trainer_jit_checkpoint] Saving JIT checkpoint at step 27"
    assert short_end(27, 81, [MAX_EPOCHS, jit], log_every=1).sigterm_line == jit
    assert short_end(27, 81, [jit, MAX_EPOCHS], log_every=1).stopped_by == "ms-swift --max_epochs"


def _judge(tail: list[str], last_step: int = 27, max_steps: int = 81):
    e = EndedAttempt(run_id="r1", attempt=1, returncode=0, ended_at=1000.0, started_at=900.0, steps_seen=27,
                     last_step=last_step, max_steps=max_steps, log_every=1, tail=tail)
    return judge(e, [], RestartSettings(max_restarts=3, backoff_initial_s=1.0, backoff_max_s=8.0), floor_s=2.0,
                 saved=lambda: SaveCheck(True))


def test_the_judge_calls_a_self_stopped_training_a_success_naming_the_stop():
    out = _judge(["{'loss': '6.8', 'global_step/max_steps': '27/81'}", MAX_EPOCHS, *AFTER])
    assert out.judged == lc.Judged("succeed", "training finished (exit 0), stopped by ms-swift --max_epochs at "
                                               "step 27 of 81")
    assert out.report is None and out.verdict is None
    assert "ended_short" not in out.state and "pause_reason" not in out.state
    stopped = out.state["stopped_by"]
    assert (stopped["by"], stopped["step"], stopped["max_steps"]) == ("ms-swift --max_epochs", 27, 81)
    assert stopped["line"].startswith("[INFO:swift] Training has reached `max_epochs`")
    (kind, event), = out.events
    assert kind == "success" and event["stopped_by"] == "ms-swift --max_epochs" and not event.get("short")


def test_without_its_line_the_judge_still_says_ended_short():
    out = _judge(["{'loss': '6.8', 'global_step/max_steps': '27/81'}", *AFTER])
    assert out.state["ended_short"] == {"step": 27, "max_steps": 81} and "stopped_by" not in out.state


def test_the_status_word_names_the_stop_and_offers_no_restart():
    run = {"id": "r1", "status": "succeeded",
           "stopped_by": {"by": "ms-swift --early_stop_interval", "step": 6, "max_steps": 30}}
    assert status_word(run) == "SUCCEEDED (stopped by ms-swift --early_stop_interval at step 6 of 30)"
    assert next_command(run) is None
