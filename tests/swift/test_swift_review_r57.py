"""Review R57, finding 3: ``lint``'s ms-swift probe imports with the environment the run's command gets,
built by the launcher's own builder (``pyexec.command_env``), not a copy of its own. The copy filled
``{recipe_dir}`` in the recipe's ``env`` values, which the runner never does (docs/recipes.md: env takes
``${NAME}`` only): a recipe with ``env: PYTHONPATH: "{recipe_dir}/deps"`` and msgspec in deps linted clean
while its run failed at start-up with ``ModuleNotFoundError: No module named 'msgspec'``."""
from __future__ import annotations

import subprocess

import pytest

from tests.swift.swift_helpers import SWIFT_PYTHON, cli, require_swift
from tests.swift.test_swift_grpo_round5 import GRPO, msgspec_dir, prompts, rlhf_recipe


@pytest.fixture
def grpo_lint(tiny, tmp_path):
    require_swift()
    if subprocess.run([str(SWIFT_PYTHON), "-c", "import msgspec"], capture_output=True, timeout=120).returncode == 0:
        pytest.skip(".venv-swift has msgspec: nothing is missing")
    recipe = rlhf_recipe(tmp_path)
    sets = [a for o in (f"args.model={tiny / 'model'}", f"args.dataset={prompts(tiny, tmp_path)}", *GRPO,
                        "args.reward_funcs=format") for a in ("--set", o)]
    deps = msgspec_dir(tmp_path)
    assert deps.parent == recipe.parent     # {recipe_dir}/msgspec-path holds msgspec

    def lint(pythonpath: str) -> list[str]:
        out = cli(None, "lint", str(recipe), *sets, "--set", f"env.PYTHONPATH={pythonpath}")
        return [ln for ln in out.stdout.splitlines() if "swift_missing_module" in ln]
    return lint, deps


def test_lint_does_not_fill_recipe_dir_in_env_that_the_run_does_not_fill(grpo_lint):
    lint, _ = grpo_lint
    (said,) = lint("{recipe_dir}/msgspec-path")      # the run gets the text as written: no msgspec there
    assert "'msgspec'" in said and "pip install msgspec" in said


def test_lint_resolves_env_references_as_the_run_does(grpo_lint, monkeypatch):
    lint, deps = grpo_lint
    monkeypatch.setenv("R57_DEPS", str(deps))
    assert lint("${R57_DEPS}") == []                  # ${NAME} from the caller: the run imports msgspec from it
    assert lint(str(deps)) == []
