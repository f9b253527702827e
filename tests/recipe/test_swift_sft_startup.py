"""ms-swift's `swift sft`/`pt`/`rlhf` start-up refusal of padding-free training, as `lint` mirrors it
(runner/recipes/swift/startup.py ``sft_startup_errors``; the real refusal is compared in
tests/swift/test_swift_startup_lint.py). Each case is a command a user writes; what lint says of it."""
from __future__ import annotations

import pytest

from moeconsole.runner.recipes.swift.startup import sft_startup_errors


def rules(command: str, **values) -> list[tuple[str, str]]:
    """What lint says of the command with ``values`` (a training dataset given unless they say otherwise)."""
    return [(e.rule, e.exc) for e in sft_startup_errors({"dataset": ["train.jsonl"], **values}.get, command)]


@pytest.mark.parametrize("command", ["swift sft", "swift pt", "swift rlhf"])
def test_packing_or_padding_free_without_flash_attention_is_refused(command):
    assert rules(command, packing=True) == [("swift_packing_needs_flash_attn", "ValueError")]
    assert rules(command, padding_free=True, attn_impl="sdpa") == [("swift_packing_needs_flash_attn", "ValueError")]
    [said] = sft_startup_errors({"padding_free": True, "dataset": ["d.jsonl"]}.get, command)
    assert said.message.startswith('The "padding_free" feature requires a flash attention implementation.')


@pytest.mark.parametrize("impl", ["flash_attn", "flash_attention_2", "flash_attention_3", "flash_attention_4"])
def test_a_flash_attention_implementation_is_accepted(impl):
    assert rules("swift sft", packing=True, attn_impl=impl) == []


def test_without_packing_nothing_is_checked():
    assert rules("swift sft", attn_impl=None) == []
    assert rules("swift rlhf", rlhf_type="rm") == []


@pytest.mark.parametrize("rlhf_type, refused", [(None, False), ("dpo", False), ("grpo", False), ("kto", False),
                                                ("gkd", False), ("rm", True), ("ppo", True), ("orpo", True)])
def test_rlhf_padding_free_only_for_the_modes_that_have_it(rlhf_type, refused):
    got = rules("swift rlhf", padding_free=True, attn_impl="flash_attn", rlhf_type=rlhf_type)
    assert got == ([("swift_packing_rlhf_type", "NotImplementedError")] if refused else [])


def test_megatron_commands_are_not_these_checks():
    assert rules("megatron sft", packing=True) == []


# The other model-free refusals of SftArguments.__post_init__ (ms-swift 4.2.0-4.6.0), in its order.

@pytest.mark.parametrize("command", ["swift sft", "swift pt", "swift rlhf"])
def test_no_training_dataset_is_refused_in_ms_swifts_words(command):
    [said] = sft_startup_errors({"dataset": [], "cached_dataset": []}.get, command)
    assert said.rule == "swift_no_dataset"
    assert said.message == "self.dataset: [], self.cached_dataset: []. Please input the training dataset."
    assert rules(command, dataset=[], cached_dataset=["cache/train"]) == []   # a cached dataset is one


def test_a_dataset_not_known_here_is_not_called_missing():
    """A config file lint could not read may hold --dataset: its absence is not claimed."""
    assert sft_startup_errors({"dataset": []}.get, "swift sft", values_known=False) == []


def test_lazy_tokenize_given_with_packing_or_streaming_is_refused_before_the_rest():
    assert rules("swift sft", lazy_tokenize=True, packing=True, attn_impl="flash_attn") == \
        [("swift_lazy_tokenize_packing", "ValueError")]
    assert rules("swift sft", lazy_tokenize=True, streaming=True) == [("swift_lazy_tokenize_streaming", "ValueError")]
    # packing first, as BaseArguments._init_lazy_tokenize raises; then the padding-free check, in order
    assert rules("swift sft", lazy_tokenize=True, packing=True, streaming=True)[:2] == \
        [("swift_lazy_tokenize_packing", "ValueError"), ("swift_packing_needs_flash_attn", "ValueError")]
    # its default None is decided from the model's type, not read here: nothing claimed
    assert rules("swift sft", lazy_tokenize=None, packing=True, attn_impl="flash_attn") == []
    assert rules("swift sft", lazy_tokenize=False, streaming=True) == []


def test_fsdp_beside_deepspeed_is_refused():
    assert rules("swift sft", fsdp="fsdp2", deepspeed="zero3") == [("swift_fsdp_with_deepspeed", "ValueError")]
    assert rules("swift sft", deepspeed="zero3", save_only_model=True) == []


@pytest.mark.parametrize("fsdp, refused", [
    ("fsdp2", True),                                                          # the preset: SHARDED_STATE_DICT
    ('{"fsdp": "full_shard auto_wrap", "fsdp_config": {}}', True),            # no state_dict_type: SHARDED
    ('{"fsdp_config": {"state_dict_type": "FULL_STATE_DICT"}}', False),
    ('{"fsdp_config": {"state_dict_type": "SHARDED_STATE_DICT"}}', True),
    ("/somewhere/my_fsdp.json", False),                                       # a file: read where the run starts
])
def test_save_only_model_under_a_sharded_fsdp_state_dict_is_refused(fsdp, refused):
    got = rules("swift sft", fsdp=fsdp, save_only_model=True)
    assert got == ([("swift_fsdp_sharded_save_only_model", "ValueError")] if refused else [])
    assert rules("swift sft", fsdp=fsdp, save_only_model=False) == []


# `swift rlhf`'s own refusals (RLHFArguments.__post_init__): GRPO's and the rollout's before the sft ones,
# the teacher's after.

def test_grpo_refusals_come_before_the_sft_ones_in_ms_swifts_order():
    got = rules("swift rlhf", rlhf_type="grpo", truncation_strategy="right", use_vllm=True, dataset=[])
    assert got == [("swift_grpo_truncation", "ValueError"), ("swift_vllm_mode_missing", "ValueError"),
                   ("swift_no_dataset", "ValueError")], got
    assert rules("swift rlhf", rlhf_type="grpo", cached_dataset=["c"])[0] == ("swift_grpo_cached_dataset", "ValueError")


def test_vllm_mode_beside_use_vllm_for_grpo_and_gkd_only():
    assert rules("swift rlhf", rlhf_type="gkd", vllm_mode="colocate") == [("swift_vllm_mode_without_vllm", "ValueError")]
    assert rules("swift rlhf", rlhf_type="grpo", use_vllm=True, vllm_mode="server") == []
    assert rules("swift rlhf", rlhf_type="dpo", use_vllm=True) == []           # dpo has no rollout
    assert rules("swift sft", use_vllm=True) == []


def test_one_generation_per_prompt_is_refused_for_grpo_without_a_teacher_from_4_5_3():
    def one(version, **more):
        return [e.rule for e in sft_startup_errors({"dataset": ["d"], "rlhf_type": "grpo", "num_generations": 1,
                                                    **more}.get, "swift rlhf", version=version)]
    assert one("4.6.0") == ["swift_grpo_one_generation"] and one("4.5.3") == ["swift_grpo_one_generation"]
    assert one("4.2.0") == []                                  # 4.2.0 has no such check
    assert one("4.6.0", teacher_model="T") == []               # OPD-RL: a teacher, one sample each
    [e] = sft_startup_errors({"dataset": ["d"], "rlhf_type": "grpo", "num_generations": 1}.get, "swift rlhf",
                             version="4.6.0")
    assert e.message == "num_generations must be greater than 1 for GRPO" and "rlhf_args.py l.410 (4.6.0)" in e.where
