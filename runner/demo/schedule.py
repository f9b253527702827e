"""When the demo trainer logs and saves: the HF/ms-swift step rules, shared by the argument
checks (which run before torch is imported) and the training loop."""
from __future__ import annotations


def is_save_step(step: int, save_steps: int, max_steps: int) -> bool:
    """HF saves every ``save_steps`` and at the end of training."""
    return step % save_steps == 0 or step == max_steps


def is_log_step(step: int, logging_steps: int, max_steps: int) -> bool:
    """ms-swift logs the first step and every ``logging_steps``; the demo also logs the last."""
    return step == 1 or step % logging_steps == 0 or step == max_steps
