"""The ms-swift Megatron stub-trap lint rule."""
from __future__ import annotations

import pytest

from moeconsole.runner.checkpoints.lint_rules import swift_stub_trap

BASE = ["megatron", "sft", "--model", "Qwen/Qwen3-30B-A3B", "--tuner_type", "lora", "--output_dir", "out"]


def _flag(argv, **flags):
    out = list(argv)
    for k, v in flags.items():
        out += [f"--{k}", v]
    return out


@pytest.mark.parametrize("argv", [
    _flag(BASE, save_safetensors="True", no_save_optim="True", merge_lora="false"),
    BASE + ["--save_safetensors=true", "--no_save_optim=true", "--merge_lora=false"],
    BASE + ["--save-safetensors", "true", "--no-save-optim", "true", "--merge-lora", "false"],
    BASE + ["--no_save_optim", "--merge_lora", "false"],          # save_safetensors defaults to true
    _flag(BASE, no_save_optim="1", merge_lora="0"),
    ["torchrun", "--nproc_per_node", "8", "/opt/swift/cli/_megatron/sft.py", "--save_safetensors", "true",
     "--no_save_optim", "true", "--train_type", "lora", "--merge_lora", "false"],
    ["python", "-m", "swift.cli._megatron.sft", "--no_save_optim", "true", "--merge_lora", "false"],
    ["env", "NPROC_PER_NODE=8", "/usr/local/bin/megatron", "rlhf", "--no_save_optim", "true", "--merge_lora", "no"],
    _flag(BASE, merge_lora="true", no_save_optim="true") + ["--merge_lora", "false"],   # the last value wins
])
def test_the_records_combination_is_a_warning_citing_it(argv):
    (finding,) = swift_stub_trap(argv, {})
    assert finding["level"] == "warning" and finding["rule"] == "swift_megatron_stub_trap"
    assert "39 KB" in finding["message"] and "record" in finding["message"] and "--merge_lora true" in finding["message"]


@pytest.mark.parametrize("argv", [
    # An omitted --merge_lora follows --save_safetensors (4.2.0 megatron_args.py l.706-707): it merges.
    _flag(BASE, save_safetensors="true", no_save_optim="true"),
    BASE + ["--no_save_optim"],
    _flag(BASE, save_safetensors="true", no_save_optim="true", merge_lora="true"),
    BASE + ["--save_safetensors", "true", "--no_save_optim", "true", "--merge_lora=True"],
    _flag(BASE, save_safetensors="false", no_save_optim="true", merge_lora="false"),
    _flag(BASE, save_safetensors="true", no_save_optim="false", merge_lora="false"),
    _flag(BASE, save_safetensors="true"),
    _flag(["megatron", "sft", "--tuner_type", "full"], no_save_optim="true", merge_lora="false"),
    _flag(["megatron", "export", "--to_hf", "true"], no_save_optim="true", merge_lora="false"),
    _flag(["swift", "sft", "--tuner_type", "lora"], save_safetensors="true", no_save_optim="true"),
    _flag(["python", "train.py"], save_safetensors="true", no_save_optim="true", merge_lora="false"),
])
def test_safe_or_other_launches_pass(argv):
    assert swift_stub_trap(argv, None) == []


def test_message_says_which_flags_caused_it():
    (f,) = swift_stub_trap(_flag(BASE, no_save_optim="true", merge_lora="false"))
    assert "save_safetensors true (the default)" in f["message"] and "merge_lora false" in f["message"]


def test_no_trap_on_46():
    argv = _flag(BASE, save_safetensors="true", no_save_optim="true", merge_lora="false")
    assert swift_stub_trap(argv, None, version="4.6.0") == []        # 4.6 saves the adapter itself
    assert swift_stub_trap(argv, None, version="4.2.0") != []        # where the record's stubs came from
