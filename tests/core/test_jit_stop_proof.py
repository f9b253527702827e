"""The proof of a SIGTERM a JIT checkpoint handled, read from its save (runner/core/ending.py
``stop_saved_mid_step``, runner/checkpoints/discover.py ``stop_requested_at``): no ms-swift needed.
The trainer_state.json below has the shape transformers 5 writes (``_save_checkpoint``,
``TrainerControl.state()``), its values those of the measured ms-swift run (JIT save at 5, summary 6/400)."""
from __future__ import annotations

import json

import pytest

from moeconsole.runner.checkpoints.discover import stop_requested_at
from moeconsole.runner.core.ending import short_end


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
