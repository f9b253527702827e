"""Recipes and ``--set`` items built to hurt (issue 32, items 14-16): an alias bomb, names no
environment can carry, a flag name that is not one, a nested ``resume.args``. Each is one line
on stderr and exit 2, through the real CLI, well inside its timeout; nothing starts."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HEAD = 'name: t\ncommand: [python, -c, "print(1)"]\n'


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=60, stdin=subprocess.DEVNULL, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def assert_one_line(p: subprocess.CompletedProcess, *words: str) -> None:
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2, p.stderr[-600:]
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr[-600:]
    for w in words:
        assert w in lines[0], lines[0]


def bomb(levels: int = 8, width: int = 10) -> str:
    """The billion laughs: each list holds ``width`` aliases of the one before."""
    out = f"    - &a0 [{','.join(['lol'] * width)}]\n"
    for i in range(1, levels + 1):
        out += f"    - &a{i} [{','.join([f'*a{i - 1}'] * width)}]\n"
    return out


BOMBS = {
    "resume.args": HEAD + "resume:\n  args:\n" + bomb(),
    "swift.pins": HEAD + "swift:\n  pins:\n" + bomb(),
    "env": HEAD + "env:\n  A: x\nx-anchors:\n" + bomb().replace("    - ", "  - ") + "env2: *a8\n",
    "many small aliases": HEAD + "resume:\n  args:\n    - &f --x\n" + "".join("    - *f\n" for _ in range(500)),
    "self reference": HEAD + "env: &e\n  A: *e\n",
}


@pytest.mark.parametrize("where", list(BOMBS))
@pytest.mark.parametrize("command", ["lint", "run"])
def test_an_alias_bomb_is_refused_at_once(tmp_path, where, command):
    recipe = tmp_path / "bomb.yaml"
    recipe.write_text(BOMBS[where])
    extra = ["--runs-dir", str(tmp_path / "runs"), "--detach"] if command == "run" else []
    p = cli(command, str(recipe), *extra, cwd=tmp_path)
    assert_one_line(p, "alias")
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").glob("2*"))


def test_a_recipe_with_a_few_aliases_still_reads(tmp_path):
    recipe = tmp_path / "ok.yaml"
    recipe.write_text(HEAD + "env: &e\n  A: x\nresume:\n  args: &r [--resume, '{checkpoint}']\n")
    p = cli("lint", str(recipe), cwd=tmp_path)
    assert "alias" not in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("body, sets, words", [
    (HEAD + "env:\n  'A B': x\n", [], ["env.A B", "environment name"]),
    (HEAD + 'env:\n  "A\\nB": x\n', [], ["environment name"]),
    (HEAD + "env:\n  'A=B': x\n", [], ["environment name"]),
    (HEAD, ["env.A B=x"], ["--set env.A B=x", "environment name"]),
    (HEAD, ["env.A\nB=x"], ["--set env.A\\nB=x", "environment name"]),
    (HEAD, ["args.x y=1"], ["'x y' is not a flag name"]),
    (HEAD, ["args.--x=1"], ["'--x' is not a flag name"]),
    (HEAD + "resume:\n  args: [[--a, '{checkpoint}']]\n", [], ["resume.args", "list of strings"]),
    (HEAD + "resume:\n  args: [--a, {x: 1}]\n", [], ["resume.args", "list of strings"]),
])
@pytest.mark.parametrize("command", ["lint", "run"])
def test_names_and_shapes_no_command_can_take_are_one_line_exit_2(tmp_path, body, sets, words, command):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(body)
    extra = ["--runs-dir", str(tmp_path / "runs"), "--detach"] if command == "run" else []
    p = cli(command, str(recipe), *[a for s in sets for a in ("--set", s)], *extra, cwd=tmp_path)
    assert_one_line(p, *words)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").glob("2*"))
