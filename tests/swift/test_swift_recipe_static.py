"""The shipped recipe as a file: it loads, lints clean, and points where scripts/swift-env.sh
puts ms-swift, the model and the data. No ms-swift needed."""
from __future__ import annotations

import re
from pathlib import Path

from moeconsole.runner.recipes import recipe as recipes
from tests.swift.swift_helpers import RECIPE, REPO, cli

SETUP = REPO / "scripts" / "swift-env.sh"


def filled(argv: list[str], flag: str, values: dict[str, str]) -> str:
    return recipes.fill(argv[argv.index(flag) + 1], values)


def test_the_recipe_lints_clean_except_for_a_missing_swift_env():
    proc = cli(None, "lint", str(RECIPE))
    out = proc.stdout + proc.stderr
    if (REPO / ".venv-swift" / "bin" / "swift").exists():
        assert proc.returncode == 0, out
        assert "0 error(s), 0 warning(s)" in out
    else:
        # Lint says so (a warning: `run`'s pre-flight makes it an error), instead of a run that fails to start.
        assert proc.returncode == 0, out
        assert "warning executable_missing" in out and ".venv-swift/bin/swift" in out
        assert "set it up: make swift-env in the checkout" in out   # the next step, from the recipe's `setup`
        assert "0 error(s), 1 warning(s)" in out


def test_the_recipe_runs_what_the_setup_script_creates():
    recipe = recipes.load(RECIPE)
    values = {"recipe_dir": recipe.launch.recipe_dir, "run_dir": "/R"}
    script = SETUP.read_text()
    venv = re.search(r"^VENV=(\S+)$", script, re.M).group(1)
    data = re.search(r"-m moeconsole\.runner\.demo\.swift_tiny --out (\S+)", script).group(1)
    argv = recipe.command
    assert Path(recipes.fill(argv[0], values)).resolve() == REPO / venv / "bin" / "swift"
    assert Path(filled(argv, "--model", values)).resolve() == REPO / data / "model"
    assert Path(filled(argv, "--dataset", values)).resolve() == REPO / data / "data.jsonl"
    # ms-swift 4.6 flags (swift.md): --tuner_type, a template, no hub check, no dataloader workers.
    for flag, value in (("--tuner_type", "lora"), ("--template", "qwen3_nothinking"), ("--check_model", "false"),
                        ("--dataloader_num_workers", "0"), ("--logging_steps", "1")):
        assert filled(argv, flag, values) == value
    assert "--train_type" not in argv
    assert filled(argv, "--output_dir", values) == "/R/output"
    assert recipes.fill(recipe.checkpoints.dir or "", values) == "/R/output"
    assert recipe.resume.arg == "--resume_from_checkpoint"


def test_an_output_dir_outside_checkpoints_dir_is_a_lint_error(tmp_path):
    """ms-swift saves under its --output_dir; a checkpoints.dir elsewhere finds no save (the run ends
    `unsaved`, no resume point): an error naming the --set that fixes it. The same dir, or a parent
    of it (discovery looks below), is fine."""
    out = tmp_path / "out"
    proc = cli(None, "lint", str(RECIPE), "--set", f"args.output_dir={out}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "swift_output_elsewhere" in proc.stdout and f"--set checkpoints.dir={out}" in proc.stdout
    for ck in (out, tmp_path):
        proc = cli(None, "lint", str(RECIPE), "--set", f"args.output_dir={out}", "--set", f"checkpoints.dir={ck}")
        assert "swift_output_elsewhere" not in proc.stdout + proc.stderr, proc.stdout
