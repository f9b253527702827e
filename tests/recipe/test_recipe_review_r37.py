"""Review R37 of newcomer round 3: a mistyped key's line promised "`moeconsole lint --fix` renames
it" when the key it was meant to be is in the file already (`command:` and `comand:`); `lint --fix`
then refused ("key 'command' given twice") and left the file as it was. The promise is made only
for a rename `lint --fix` makes."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO), "MOECONSOLE_RUNS_DIR": str(tmp_path / "runs")}
    return subprocess.run([sys.executable, "-m", "moeconsole", *args], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=120)


def test_no_lint_fix_is_promised_for_a_key_whose_right_spelling_is_given_already(tmp_path):
    for i, text in enumerate((
            "name: x\ncommand: [python3, t.py]\ncomand: [python3, u.py]\n",
            "name: x\ncommand:\ncomand: [python3, u.py]\n",              # given, as null
            "name: x\ncommand: [python3, t.py]\nrestart:\n  max_restarts: 2\n  max_restart: 3\n")):
        recipe = tmp_path / f"r{i}.yaml"
        recipe.write_text(text)
        out = _cli(tmp_path, "lint", str(recipe))
        assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
        line = out.stderr.splitlines()[0]   # the null command is a problem of its own (recipe.every_problem)
        assert "unknown key (did you mean" in line and "lint --fix" not in out.stderr, out.stderr
        fix = _cli(tmp_path, "lint", "--fix", str(recipe))
        assert fix.returncode == 2 and "given twice" not in fix.stderr, fix.stderr
        assert recipe.read_text() == text


def test_lint_fix_is_still_promised_and_renames_when_the_right_key_is_free(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: x\ncomand: [python3, t.py]\nrestart:\n  max_restart: 3\n")
    out = _cli(tmp_path, "lint", str(recipe))
    assert out.returncode == 2 and "`moeconsole lint --fix" in out.stderr, out.stderr
    assert _cli(tmp_path, "lint", "--fix", str(recipe)).returncode == 0
    assert "command: [python3, t.py]" in recipe.read_text() and "max_restarts: 3" in recipe.read_text()
