"""The recipe stays typed: what loads a recipe returns the model (``RunRecipe``, checked by mypy
in ``runner/recipes/recipe.py``), and no code of the runner or the console reads a recipe by
string key (``recipe["cooldown"]``, ``recipe.get("env")``): a misspelt key there is a silent
default at run time, an attribute is a mypy error. The scan is of the source, as
tests/runner/test_runner_namespace.py scans imports."""
from __future__ import annotations

import ast
from pathlib import Path

import msgspec

from moeconsole.runner.recipes import model, recipe as recipes

REPO = Path(__file__).resolve().parents[2]
READ_METHODS = ("get", "pop", "setdefault")


def _is_recipe(node: ast.expr) -> bool:
    """``recipe``, ``run_recipe``, ``self.recipe``, ``self.source.recipe()``."""
    if isinstance(node, ast.Call):
        return _is_recipe(node.func)
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name == "recipe" or name.endswith("_recipe")


def _is_text(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def string_key_reads(root: Path) -> list[str]:
    """``file:line: code`` of every string-key read (or write) of a recipe under runner/ and console/."""
    found: list[tuple[str, int, str | None]] = []
    for top in ("runner", "console"):
        for path in sorted((root / top).rglob("*.py")):
            text = path.read_text()
            for node in ast.walk(ast.parse(text, str(path))):
                if isinstance(node, ast.Subscript) and _is_text(node.slice) and _is_recipe(node.value):
                    hit: ast.AST = node
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr in READ_METHODS and _is_recipe(node.func.value) \
                        and node.args and _is_text(node.args[0]):
                    hit = node
                else:
                    continue
                found.append((str(path.relative_to(root)), node.lineno, ast.get_source_segment(text, hit)))
    return [f"{where}:{line}: {code}" for where, line, code in sorted(found)]


def test_no_code_reads_a_recipe_by_string_key():
    reads = string_key_reads(REPO)
    assert reads == [], "read the model's attributes instead:\n" + "\n".join(reads)


def test_the_scan_sees_each_form_of_a_string_key_read(tmp_path):
    """The guard cannot pass by looking nowhere: each spelling the old code used is found."""
    (tmp_path / "runner").mkdir()
    (tmp_path / "console").mkdir()
    (tmp_path / "runner" / "a.py").write_text(
        'def f(recipe, self):\n'
        '    x = recipe["cooldown"]["floor_s"]\n'
        '    y = self.recipe.get("env") or {}\n'
        '    z = self.source.recipe().get("heartbeat")\n'
        '    run_recipe["name"] = "n"\n'
        '    ok = recipe.cooldown.floor_s, recipe.env.get("A"), records["x"]\n')
    assert [r.split(": ", 1)[0] for r in string_key_reads(tmp_path)] == \
        ["runner/a.py:2", "runner/a.py:3", "runner/a.py:4", "runner/a.py:5"]


def test_a_loaded_recipe_is_the_model_with_every_section_typed(tmp_path):
    """``load`` hands out ``RunRecipe``; every section of a recipe is a Struct of its own model,
    the owned-elsewhere ones (restart, alerts, memory, metrics, notify, sync, slurm) included."""
    path = tmp_path / "r.yaml"
    path.write_text("command: [python, -c, pass, 3]\nrestart: {max_restarts: 3}\nenv: {N: 2}\n")
    r = recipes.load(path)
    assert type(r) is model.RunRecipe
    assert r.command == ["python", "-c", "pass", "3"] and r.env == {"N": "2"}
    assert r.name == "r" and r.launch.recipe_dir == str(tmp_path.resolve())
    info = msgspec.inspect.type_info(model.Recipe)
    assert isinstance(info, msgspec.inspect.StructType)
    for field in info.fields:
        if model.section_model(field.encode_name) is not None:
            assert isinstance(getattr(r, field.name), msgspec.Struct), field.name
    assert r.restart.max_restarts == 3 and r.restart.backoff_initial_s > 0


def test_a_recipe_file_cannot_set_what_only_the_run_directory_records(tmp_path):
    """``_launch`` (and the as-written record) belong to a run's recipe.yaml, not to a recipe."""
    for key in ("_launch", "_written"):
        path = tmp_path / "r.yaml"
        path.write_text(f"command: [python]\n{key}: {{recipe_dir: /elsewhere}}\n")
        try:
            recipes.load(path)
        except recipes.InputError as exc:
            assert f"{key}: unknown key" in str(exc), str(exc)
        else:
            raise AssertionError(f"{key} was accepted in a recipe file")
