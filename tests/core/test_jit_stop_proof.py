"""The proof of a SIGTERM a JIT checkpoint handled, read from its save (runner/core/ending.py
``stop_saved_mid_step``, runner/checkpoints/discover.py ``stop_requested_at``): no ms-swift needed.
The trainer_state.json below has the shape transformers 5 writes (``_save_checkpoint``,
``TrainerControl.state()``), its values those of the measured ms-swift run (JIT save at 5, summary 6/400)."""
from __future__ import annotations

import json

import pytest

from moeconsole.runner.checkpoints.discover import stop_requested_at, stop_save
from moeconsole.runner.core.ending import StopSave, short_end


def _state(step: int, stop: bool | None) -> dict:
    control = {"args": {"should_training_stop": stop, "should_epoch_stop": False, "should_save": False,
                        "should_evaluate": False, "should_log": False}, "attributes": {}}
    return {"global_step": step, "max_steps": 400, "save_steps": 4,
            "stateful_callbacks": {"TrainerControl": control} if stop is not None else {}}


@pytest.mark.parametrize("stop, want", [(True, 5), (False, None), (None, None)])
def test_a_save_made_with_the_stop_requested_names_its_step(tmp_path, stop, want):
    (tmp_path / "trainer_state.json").write_text(json.dumps(_state(5, stop)))
    assert stop_requested_at(tmp_path) == want


def test_no_or_broken_trainer_state_proves_nothing(tmp_path):
    assert stop_requested_at(tmp_path) is None
    (tmp_path / "trainer_state.json").write_text("{not json")
    assert stop_requested_at(tmp_path) is None


def test_a_stop_save_before_the_last_step_is_the_proof():
    """Before: `ENDED SHORT (step 6 of 400)`, 'nothing proves the SIGTERM' at ms-swift's log level."""
    end = short_end(6, 400, ["{'train_runtime': '3.1', 'global_step/max_steps': '6/400'}"], 1, stop_saves=[5])
    assert end is not None and end.sigterm_line is not None and "checkpoint-5" in end.sigterm_line


@pytest.mark.parametrize("stop_saves", [[], [6], [8]])
def test_a_stop_save_at_the_last_step_proves_nothing(stop_saves):
    """Early stopping, --max_epochs and the JIT's own on_step_end save at the step the loop stops at."""
    end = short_end(6, 400, [], 1, stop_saves=stop_saves)
    assert end is not None and end.sigterm_line is None


# transformers' EarlyStoppingCallback state as ``_save_checkpoint`` writes it beside the TrainerControl's
# (trainer_callback.py l.775-784; the measured ms-swift run: patience 1, stopped at step 4 of 30).
def _early(counter: object, patience: object) -> dict:
    return {"args": {"early_stopping_patience": patience, "early_stopping_threshold": 0.0},
            "attributes": {"early_stopping_patience_counter": counter}}


@pytest.mark.parametrize("saved, want", [
    (_early(1, 1), (1, 1)), (_early(3, 2), (3, 2)), ([_early(0, 3), _early(2, 2)], (2, 2)),
    (_early(0, 1), None), (_early(True, 1), None), (_early("1", 1), None), ({"args": {}}, None), (None, None)])
def test_a_stop_save_names_the_early_stopping_callback_only_when_its_patience_was_reached(tmp_path, saved, want):
    state = _state(4, True)
    if saved is not None:
        state["stateful_callbacks"]["EarlyStoppingCallback"] = saved
    d = tmp_path / "checkpoint-4"
    d.mkdir()
    (d / "trainer_state.json").write_text(json.dumps(state))
    got = stop_save(d)
    assert got is not None and (got.step, got.name, got.early_stopping) == (4, "checkpoint-4", want)


def test_an_early_stopping_save_at_the_last_step_is_a_stop_on_purpose():
    """Before: `ENDED SHORT (step 4 of 30)` with `restart --force` offered."""
    end = short_end(4, 30, [], 1, stop_saves=[StopSave(2, "checkpoint-2"), StopSave(4, "checkpoint-4", (1, 1))])
    assert end is not None and end.stopped_by == "transformers EarlyStoppingCallback" and end.sigterm_line is None
    assert end.stop_line is not None and end.stop_line.startswith("checkpoint-4/trainer_state.json: ")


@pytest.mark.parametrize("saves", [[StopSave(4, "checkpoint-4", (1, 1))], [StopSave(6, "checkpoint-6")]])
def test_an_early_stopping_save_not_at_the_last_step_or_without_the_patience_reached_proves_no_early_stop(saves):
    end = short_end(6, 30, [], 1, stop_saves=saves)
    assert end is not None and end.stopped_by is None


# ms-swift's --callbacks graceful_exit: the save it makes on a signal says nothing of the stop (the callback asks
# after the save); the run's args.json, copied into the save, names the callback (measured: checkpoint-5, 5/400).
@pytest.mark.parametrize("callbacks, stop, want", [
    (["graceful_exit"], False, (5, False, True)), (["graceful_exit"], True, (5, True, True)),
    ([], True, (5, True, False)), (["lisa"], False, None), ("graceful_exit", False, None), (None, False, None)])
def test_a_save_of_a_run_with_graceful_exit_is_read_as_one(tmp_path, callbacks, stop, want):
    d = tmp_path / "checkpoint-5"
    d.mkdir()
    (d / "trainer_state.json").write_text(json.dumps(_state(5, stop)))
    if callbacks is not None:
        (d / "args.json").write_text(json.dumps({"callbacks": callbacks, "save_steps": 100}))
    got = stop_save(d)
    assert (None if got is None else (got.step, got.asked, got.graceful_exit)) == want
    assert stop_requested_at(d) == (5 if stop else None)


def test_a_graceful_exit_save_at_the_last_step_is_the_proof_of_a_handled_signal():
    """Before: `ENDED SHORT (step 5 of 400)`, no restart."""
    end = short_end(5, 400, [], 1, stop_saves=[StopSave(5, "checkpoint-5", asked=False, graceful_exit=True)])
    assert end is not None and end.stopped_by is None and end.sigterm_line is not None
    assert end.sigterm_line.startswith("checkpoint-5 was saved at step 5, where the training stopped, by ms-swift's "
                                       "graceful_exit callback")


def test_a_graceful_exit_with_its_stop_file_there_is_a_stop_on_purpose():
    end = short_end(5, 400, [], 1, stop_saves=[StopSave(5, "checkpoint-5", asked=False, graceful_exit=True,
                                                        stop_file=True)])
    assert end is not None and end.stopped_by == "ms-swift graceful_exit (/tmp/stop)" and end.sigterm_line is None


@pytest.mark.parametrize("saves", [[StopSave(4, "checkpoint-4", asked=False, graceful_exit=True)],
                                   [StopSave(4, "checkpoint-4", asked=False)]])
def test_a_graceful_exit_save_before_the_last_step_proves_nothing(saves):
    """Not at the step it stopped at: not the callback's stop; and a save that did not ask to stop is never the
    JIT's mid-step proof."""
    end = short_end(6, 400, [], 1, stop_saves=saves)
    assert end is not None and end.sigterm_line is None and end.stopped_by is None
