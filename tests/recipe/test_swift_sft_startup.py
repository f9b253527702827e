"""ms-swift's `swift sft`/`pt`/`rlhf` start-up refusal of padding-free training, as `lint` mirrors it
(runner/recipes/swift/startup.py ``sft_startup_errors``; the real refusal is compared in
tests/swift/test_swift_startup_lint.py). Each case is a command a user writes; what lint says of it."""
from __future__ import annotations

import pytest

from moeconsole.runner.recipes.swift.startup import sft_startup_errors


def rules(command: str, **values) -> list[tuple[str, str]]:
    return [(e.rule, e.exc) for e in sft_startup_errors(values.get, command)]


@pytest.mark.parametrize("command", ["swift sft", "swift pt", "swift rlhf"])
def test_packing_or_padding_free_without_flash_attention_is_refused(command):
    assert rules(command, packing=True) == [("swift_packing_needs_flash_attn", "ValueError")]
    assert rules(command, padding_free=True, attn_impl="sdpa") == [("swift_packing_needs_flash_attn", "ValueError")]
    [said] = sft_startup_errors({"padding_free": True}.get, command)
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
