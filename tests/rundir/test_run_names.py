"""The names runs of one recipe are told apart by: recipe values that set them apart, never the
prose keys (`description`, `setup`) nor where they were launched from."""
from __future__ import annotations

from moeconsole.runner.rundir.rundiff import flatten_recipe
from moeconsole.runner.rundir.store import distinguishing_names, value_texts


def test_a_setup_key_that_only_one_run_has_does_not_name_the_runs():
    """A run made before recipes had `setup` beside one that wrote `setup: ''` (the newcomer's
    compare screen showed "tiny-moe-cpu --max_steps=3000 setup="): only the flag that differs."""
    older = {"name": "tiny-moe-cpu", "command": ["{python}", "train.py", "--max_steps", "400"], "description": "d"}
    newer = {**older, "command": ["{python}", "train.py", "--max_steps", "3000"], "setup": "", "description": "e"}
    names = distinguishing_names(["tiny-moe-cpu", "tiny-moe-cpu"],
                                 [value_texts(flatten_recipe(r)) for r in (older, newer)])
    assert names == ["tiny-moe-cpu --max_steps=400", "tiny-moe-cpu --max_steps=3000"], names
