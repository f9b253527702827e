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


import pytest  # noqa: E402

from moeconsole.runner.recipes.step_count import count_start  # noqa: E402

SWIFT = ["/v/bin/swift", "sft", "--model", "M", "--resume_from_checkpoint", "/o/v0-20260101-000000/checkpoint-6"]
MEGATRON = ["megatron", "sft", "--model", "M", "--tuner_type", "lora", "--adapters", "/o/v0/checkpoint-6"]
MEGATRON_LM = ["python", "pretrain_gpt.py", "--load", "/s", "--save", "/s", "--ckpt-step", "6"]


@pytest.mark.parametrize("argv,start", [
    # ms-swift on the transformers Trainer: only --resume_only_model with --ignore_data_skip drops
    # resume_from_checkpoint (swift/trainers/mixin.py 4.6.0 l.149-152); either alone keeps global_step
    (SWIFT, 6),
    (SWIFT + ["--resume_only_model", "true"], 6),
    (SWIFT + ["--ignore_data_skip", "true"], 6),
    (SWIFT + ["--resume_only_model", "true", "--ignore_data_skip", "true"], 0),
    (SWIFT + ["--resume-only-model", "--ignore_data_skip=True"], 0),           # HfArgumentParser spellings
    (SWIFT + ["--resume_only_model", "true", "--ignore_data_skip", "false"], 6),
    (["/v/bin/swift", "sft", "--model", "M", "--adapters", "/o/v0/checkpoint-6"], 0),   # no resume_from_checkpoint
    # Megatron-SWIFT: only --finetune false reads the iteration (finetune defaults to true)
    (MEGATRON, 0),
    (MEGATRON + ["--finetune", "true"], 0),
    (MEGATRON + ["--finetune", "false"], 6),
    (MEGATRON + ["--finetune", "false", "--no_load_optim", "true", "--no_load_rng", "true"], 6),
    (MEGATRON + ["--no_finetune"], 6),
    (MEGATRON + ["--finetune", "false", "--mcore_model", "/base"], 0),     # the base loads as a fine-tune
    (MEGATRON + ["--finetune", "false", "--mcore_model", "/base", "--mcore_adapter", "/o/v0/checkpoint-6"], 6),
    # Megatron-LM: --finetune sets the iteration to 0; --no-load-optim keeps it
    (MEGATRON_LM, 6),
    (MEGATRON_LM + ["--no-load-optim"], 6),
    (MEGATRON_LM + ["--finetune"], 0),
])
def test_where_a_resumed_attempts_step_count_starts(argv, start):
    checkpoint = "/o/v0-20260101-000000/checkpoint-6" if "/s" not in argv else "/s/iter_0000006"
    assert count_start(argv, checkpoint) == start


def test_a_fresh_start_has_no_count_start():
    assert count_start(SWIFT + ["--resume_only_model", "true", "--ignore_data_skip", "true"], None) is None


@pytest.mark.parametrize("version,start", [("3.6.4", 0), ("3.6", 0), ("2.6.1", 0), ("3.7.0", 6), ("4.6.0", 6), (None, 6)])
def test_resume_only_model_alone_restarts_the_count_before_ms_swift_3_7(version, start):
    """3.0.0-3.6.4 swift/llm/train/tuner.py l.383-384 (2.6.1 trainers/mixin.py l.484-488) drop
    resume_from_checkpoint for --resume_only_model alone; 3.7.0 on only with --ignore_data_skip."""
    argv = SWIFT + ["--resume_only_model", "true"]
    assert count_start(argv, "/o/v0-20260101-000000/checkpoint-6", version) == start
