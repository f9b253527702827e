"""mypy's proof that both engines satisfy the attempt protocol (``moeconsole.runner.process.attempt``).

Checked by ``make typecheck`` (mypy covers this module); never run: nothing here executes. A
method missing from an engine, or with another signature, fails the type check here rather
than at the runner's first call.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moeconsole.runner.process.attempt import Attempt, Engine, NoAttempt, Processes
    from moeconsole.runner.process.engines.local import LocalAttempt, LocalEngine
    from moeconsole.runner.process.engines.slurm import SlurmAttempt, SlurmEngine

    def engines(local: LocalEngine, slurm: SlurmEngine) -> tuple[Engine, Engine]:
        return local, slurm

    def attempts(local: LocalAttempt, slurm: SlurmAttempt) -> tuple[Attempt, Attempt]:
        return local, slurm

    def no_attempt(none: NoAttempt) -> Processes:
        return none
