"""Newcomer round 12: `moeconsole lint recipes/swift-tiny-cpu.yaml` said "checked with ms-swift 4.6's own `swift sft`
parser (recipes/../.venv-swift/bin/python)": the recipe's `{recipe_dir}/..` written out as it was filled. The training
Python is named in its short form where that is the same file, and kept as written where it is not (a `..` after a
symlinked directory names another place)."""
from __future__ import annotations

import os
from pathlib import Path

from moeconsole.runner.recipes import recipe as recipe_mod
from moeconsole.runner.recipes.swift.lint import training_python


def _recipe(tmp_path: Path, python: str) -> Path:
    path = tmp_path / "recipes" / "r.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"name: r\ncommand: [swift, sft, --model, m]\nswift:\n  python: \"{python}\"\n")
    return path


def _python(at: Path) -> Path:
    at.mkdir(parents=True)
    (at / "python").write_text("#!/bin/sh\n")
    (at / "python").chmod(0o755)
    return at / "python"


def test_the_training_python_is_named_without_the_recipe_dirs_dotdot(tmp_path):
    _python(tmp_path / ".venv-swift" / "bin")
    got = training_python(recipe_mod.load(_recipe(tmp_path, "{recipe_dir}/../.venv-swift/bin/python")))
    assert got == str(tmp_path / ".venv-swift" / "bin" / "python"), got


def test_a_dotdot_after_a_symlinked_directory_is_kept_as_written(tmp_path):
    """recipes/link -> elsewhere/deep: `{recipe_dir}/link/../env` is elsewhere/env for the kernel, not recipes/env."""
    (tmp_path / "elsewhere" / "deep").mkdir(parents=True)
    _python(tmp_path / "elsewhere" / "env")
    path = _recipe(tmp_path, "{recipe_dir}/link/../env/python")
    os.symlink(tmp_path / "elsewhere" / "deep", tmp_path / "recipes" / "link")
    got = training_python(recipe_mod.load(path))
    assert got is not None and got.endswith("link/../env/python") and os.path.isfile(got), got
