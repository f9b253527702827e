"""What a run's command is for one attempt: the placeholders it fills, the directory it runs in,
and the flags its trainer parses. The launcher starts attempts with them; the checkpoints'
save order (``checkpoints.order``) asks the same argv whether resumes count from step 1 again."""
from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from moeconsole.runner.recipes import recipe as recipes

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import RunRecipe
    from moeconsole.runner.rundir.rundir import RunDir


def placeholders(run: RunDir, recipe: RunRecipe, attempt: int) -> dict[str, str]:
    return {"run_dir": str(run.path), "run_id": run.run_id, "attempt": str(attempt),
            "recipe_dir": recipe.launch.recipe_dir, "python": sys.executable}


def workdir(run: RunDir, recipe: RunRecipe, attempt: int) -> str:
    """The directory the command runs in: the recipe's ``workdir``, else where ``run`` was started."""
    return recipes.fill(recipe.workdir, placeholders(run, recipe, attempt)) if recipe.workdir else \
        recipe.launch.cwd or str(run.path)


def trainer_argv_of(run: RunDir, recipe: RunRecipe, attempt: int, resume_from: str) -> list[str]:
    """The flags a resumed attempt's trainer parses: its argv with an ms-swift config file's flags
    spliced in (``swift_flags.trainer_argv``), where a resume mode may be set."""
    from moeconsole.runner.recipes.swift.flags import trainer_argv
    return trainer_argv(recipes.attempt_argv(recipe, placeholders(run, recipe, attempt), resume_from=resume_from),
                        workdir(run, recipe, attempt))
