"""A resumed attempt's command line: the template replaces, never duplicates."""
from __future__ import annotations

from moeconsole.runner.recipes.model import Resume
from moeconsole.runner.recipes.resume import resume_argv, template_problems

T46 = Resume(args=["--adapters", "{checkpoint}", "--finetune", "false", "--no_load_optim", "true",
                   "--no_load_rng", "true"])


def test_template_replaces_every_spelling_of_its_flags():
    argv = ["megatron", "sft", "--model", "M", "--adapters", "old1", "old2", "--finetune=true",
            "--no-load-rng", "false", "--lr", "1e-4"]
    out = resume_argv(argv, T46, "/o/v0/checkpoint-300")
    assert out == ["megatron", "sft", "--model", "M", "--lr", "1e-4", "--adapters", "/o/v0/checkpoint-300",
                   "--finetune", "false", "--no_load_optim", "true", "--no_load_rng", "true"]
    # Resuming the resumed command gives the same command with the new checkpoint, not a longer one.
    again = resume_argv(out, T46, "/o/v1/checkpoint-600")
    assert len(again) == len(out) and again.count("--adapters") == 1 and "/o/v1/checkpoint-600" in again


def test_merged_template_and_step_placeholder():
    out = resume_argv(["megatron", "sft", "--model", "Qwen/Qwen3.5-397B-A17B"],
                      Resume(args=["--model", "{checkpoint}-merged", "--note", "{step}"]), "/c/checkpoint-0400")
    assert out == ["megatron", "sft", "--model", "/c/checkpoint-0400-merged", "--note", "400"]


def test_single_arg_still_works_and_nothing_set_changes_nothing():
    assert resume_argv(["t", "--resume_from_checkpoint", "a"], Resume(arg="--resume_from_checkpoint"), "b") == \
        ["t", "--resume_from_checkpoint", "b"]
    assert resume_argv(["t", "--x"], Resume(), "b") == ["t", "--x"]


def test_template_problems():
    assert template_problems(T46) == []
    assert any("{checkpoint}" in p for p in template_problems(Resume(args=["--finetune", "false"])))
    assert any("both" in p for p in template_problems(Resume(args=T46.args, arg="--load")))
    assert any("--flag" in p for p in template_problems(Resume(args=["x", "{checkpoint}"])))


def test_step_placeholder_is_the_one_rules_step(tmp_path):
    """``{step}`` is ``discover.step_of``'s: a Megatron ``--load`` dir by its tracker, a
    checkpoint named without a step by its trainer_state.json, as every other reader sees them."""
    import json
    lm = Resume(args=["--load", "{checkpoint}", "--ckpt-step", "{step}"])
    save = tmp_path / "save"
    (save / "iter_0000040").mkdir(parents=True)
    (save / "latest_checkpointed_iteration.txt").write_text("40\n")
    assert resume_argv(["p"], lm, str(save)) == ["p", "--load", str(save), "--ckpt-step", "40"]
    assert resume_argv(["p"], lm, str(save / "iter_0000040"))[-1] == "40"
    best = tmp_path / "best"
    best.mkdir()
    (best / "trainer_state.json").write_text(json.dumps({"global_step": 42}))
    assert resume_argv(["p"], lm, str(best))[-1] == "42"
    assert resume_argv(["p"], lm, str(tmp_path / "no-step-here"))[-1] == ""
