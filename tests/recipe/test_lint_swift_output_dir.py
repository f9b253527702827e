"""`moeconsole run -- swift sft ... --output_dir out` watched no save, and lint's warning said
`--set checkpoints.dir=DIR`: a newcomer had to know that DIR is the --output_dir they had just
typed. The warning names it, with ms-swift's resume flag."""
from __future__ import annotations

from moeconsole.runner.recipes import lint
from moeconsole.runner.recipes.recipe import from_command


def _warning(argv: list[str], *sets: str) -> str:
    found = [p for p in lint.check_checkpoints(from_command(argv, list(sets))) if p["rule"] == "no_checkpoint_dir"]
    assert len(found) == 1, found
    return found[0]["message"]


def test_an_ms_swift_command_names_its_output_dir_and_resume_flag():
    msg = _warning(["swift", "sft", "--model", "m", "--output_dir", "out/qwen", "--max_steps", "10"])
    assert "ms-swift saves under --output_dir out/qwen, which is not watched" in msg, msg
    assert "`--set checkpoints.dir=out/qwen` `--set resume.arg=--resume_from_checkpoint` on `run`" in msg, msg
    # the form with `=`, and a resume flag already set: only the directory
    msg = _warning(["swift", "sft", "--output_dir=out/b"], "resume.arg=--resume_from_checkpoint")
    assert "`--set checkpoints.dir=out/b` on `run`" in msg and "resume.arg" not in msg, msg


def test_another_command_or_no_output_dir_keeps_the_general_words():
    for argv in (["python", "train.py", "--output_dir", "out"], ["swift", "sft", "--model", "m"]):
        msg = _warning(argv)
        assert "--set checkpoints.dir=DIR" in msg and "ms-swift saves" not in msg, msg
