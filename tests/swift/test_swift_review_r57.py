"""Review R57, finding 3: ``lint``'s ms-swift probe imports with the environment the run's command gets,
built by the launcher's own builder (``pyexec.recipe_command_env``), not a copy of its own. The copy filled
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


# An ms-swift with another layout, as the probe's own code (``-c``, module ``__main__``) sees it: no
# swift.trainers.trainer_factory to import (ms-swift's own modules still load theirs: the parser needs them).
BLOCK = '''import builtins

_real = builtins.__import__


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if name == "swift.trainers.trainer_factory" and (globals or {}).get("__name__") == "__main__":
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    return _real(name, globals, locals, fromlist, level)


builtins.__import__ = _import
'''


def test_an_ms_swift_without_the_trainer_factory_is_no_module_to_install(tmp_path):
    """Finding 4: the probe's ``except ModuleNotFoundError`` covered the factory's own import, so an ms-swift
    without it was reported as needing module ``swift.trainers.trainer_factory`` ("pip install ms-swift")."""
    require_swift()
    import os

    from moeconsole.runner.recipes.swift.probe import probe
    (tmp_path / "sitecustomize.py").write_text(BLOCK)
    argv = ["--rlhf_type", "grpo", "--model", "m", "--dataset", "d.jsonl"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    env.pop("PYTHONPATH", None)
    gone = probe(str(SWIFT_PYTHON), "swift rlhf", argv, env={**env, "PYTHONPATH": str(tmp_path)})
    assert gone.version and gone.failed is None and gone.import_error is None
    assert gone.missing_module is None, gone.missing_module
    # the trainer's own import still names what it lacks (ms-swift 4.6.0's GRPOTrainer: msgspec)
    if subprocess.run([str(SWIFT_PYTHON), "-c", "import msgspec"], capture_output=True, env=env,
                      timeout=120).returncode != 0:
        here = probe(str(SWIFT_PYTHON), "swift rlhf", argv, env=env)
        assert here.missing_module and here.missing_module["module"] == "msgspec", here.missing_module
