"""`lint --fix` keeps what a person wrote: the recipe text is edited value by value (comments,
key order, line breaks and quoting stay), through the real CLI and on plain text."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from moeconsole.runner.recipes.recipe_edit import EditError, patch

REPO = Path(__file__).resolve().parents[2]

FLOW = """\
# header comment
name: x   # trailing comment
command: [megatron, sft,
          --model, Qwen/X,   # the model
          --train_type, lora, --lora_rank, "8",
          --save, /ckpt/out, --save_steps, "100"]
resume:
  arg: --load   # old resume
env: {A: "1"}
"""


def test_a_flow_list_keeps_its_lines_comments_and_quoting():
    new = yaml.safe_load(FLOW)
    new["command"] = ["megatron", "sft", "--model", "Qwen/X", "--tuner_type", "lora", "--lora_rank", "8",
                      "--output_dir", "/ckpt/out", "--save_steps", "100", "--finetune", "false"]
    new["resume"] = {"args": ["--adapters", "{checkpoint}"]}
    out = patch(FLOW, new)
    assert yaml.safe_load(out) == new
    lines = out.splitlines()
    assert lines[0] == "# header comment" and lines[1] == "name: x   # trailing comment"
    assert lines[3] == "          --model, Qwen/X,   # the model"
    assert lines[4] == '          --tuner_type, lora, --lora_rank, "8",'
    assert lines[5] == '          --output_dir, /ckpt/out, --save_steps, "100", --finetune, "false"]'
    assert "  args: [--adapters, \"{checkpoint}\"]" in lines and "# old resume" not in out
    assert lines[-1] == 'env: {A: "1"}'


def test_block_lists_and_mappings():
    text = "command:\n  - python   # interpreter\n  - train.py\n  - --old\n  - '1'\nkill:\n  grace_s: 10\n"
    new = {"command": ["python", "train.py", "--new", "1", "--extra"], "kill": {"grace_s": 30}, "name": "n"}
    out = patch(text, new)
    assert yaml.safe_load(out) == new
    assert "  - python   # interpreter\n" in out and "  - --new\n" in out and "  - '1'\n" in out
    assert "  grace_s: 30\n" in out and out.endswith("name: n\n")


def test_removing_keys_and_items_and_a_result_that_would_not_load_as_asked():
    text = "a: 1\nb: {x: 1, y: 2}\nc: [1, 2, 3]\n"
    out = patch(text, {"b": {"y": 2}, "c": [1, 3]})
    assert yaml.safe_load(out) == {"b": {"y": 2}, "c": [1, 3]} and out == "b: {y: 2}\nc: [1, 3]\n"
    with pytest.raises(EditError):
        patch("- just a list\n", {"a": 1})


def test_lint_fix_through_the_cli_keeps_the_recipe_as_written(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("# my recipe\n" + FLOW.split("\n", 1)[1].replace("env: {A: \"1\"}\n", "")
                 + "checkpoints: {dir: /ckpt/out}\nswift: {version: \"4.6.0\"}   # pinned\n"
                 + "lint: {ignore: [executable_missing]}\n")
    before = p.read_text()
    done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "lint", "--fix", str(p)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert "fixed: --train_type -> --tuner_type" in done.stderr, done.stderr
    after = p.read_text()
    assert (tmp_path / "r.yaml.bak").read_text() == before
    assert after.startswith("# my recipe\n# Corrected by `moeconsole lint --fix`: ")
    for kept in ("name: x   # trailing comment", "          --model, Qwen/X,   # the model",
                 'swift: {version: "4.6.0"}   # pinned'):
        assert kept in after, after
    assert "--tuner_type, lora, --lora_rank" in after


def _lint_fix(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "lint", "--fix", str(path)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_lint_fix_renames_a_mistyped_key_to_its_only_suggestion_and_says_so(tmp_path):
    """`lint --fix` refused the recipe with its own "did you mean max_restarts?" and changed
    nothing. It renames each key whose suggestion is the only near one, keeps the line and its
    comment, says what it changed, and the recipe then loads."""
    p = tmp_path / "r.yaml"
    p.write_text('# mine\nname: t\ncommand: ["python", "-c", "pass"]\nrestart:\n  max_restart: 3   # three\n'
                 "kil:\n  grace_s: 5\n")
    before = p.read_text()
    done = _lint_fix(p)
    assert done.returncode == 0, done.stderr
    assert "fixed: restart.max_restart: renamed to restart.max_restarts" in done.stderr, done.stderr
    assert "fixed: kil: renamed to kill" in done.stderr and "2 fix(es) written" in done.stderr, done.stderr
    after = p.read_text()
    assert "  max_restarts: 3   # three\n" in after and "kill:\n  grace_s: 5\n" in after, after
    assert yaml.safe_load(after)["restart"] == {"max_restarts": 3}
    assert (tmp_path / "r.yaml.bak").read_text() == before
    again = _lint_fix(p)
    assert again.returncode == 0 and "0 fix(es) written" in again.stderr, again.stderr


def test_lint_fix_leaves_a_key_with_two_near_suggestions_to_the_user(tmp_path):
    p = tmp_path / "r.yaml"
    text = 'name: t\ncommand: ["python", "-c", "pass"]\nheart:\n  timeout_s: 30\n'
    p.write_text(text)
    done = _lint_fix(p)
    assert done.returncode == 2 and "heart: unknown key (did you mean restart or heartbeat?)" in done.stderr
    assert p.read_text() == text and not (tmp_path / "r.yaml.bak").exists()
