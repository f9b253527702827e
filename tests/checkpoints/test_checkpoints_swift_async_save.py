"""An ms-swift Megatron save whose model state is still to come: iter_N/ holds common.pt and the tracker
names it, but the shards its arguments save are not there yet (docs/megatron.md, "Audit against the
source"). ms-swift saves no model state into iter_N/ only with --save_safetensors true --no_save_optim true
(4.6.0 swift/megatron/trainers/base.py l.836-839); otherwise megatron-core writes common.pt first and the
shards after it (dist_checkpointing/serialization.py l.411), under --async_save in a background writer,
while the tracker is written at once (swift/megatron/utils/megatron_lm_utils.py l.378-384)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from moeconsole.runner.checkpoints.discover import find_checkpoints, save_underway
from moeconsole.runner.checkpoints.verify import verify_found


def swift_save(root: Path, step: int, *, args: dict | None) -> Path:
    import numpy as np
    import torch
    from safetensors.numpy import save_file
    ck = root / f"checkpoint-{step}"
    d = ck / f"iter_{step:07d}"
    d.mkdir(parents=True)
    if args is not None:
        (ck / "args.json").write_text(json.dumps(args))
    torch.save({"iteration": step}, d / "common.pt")
    (ck / "latest_checkpointed_iteration.txt").write_text(str(step))
    rng = np.random.default_rng(step)
    save_file({f"base_model.model.model.layers.0.self_attn.q_proj.lora_{x}.weight":
               rng.standard_normal((8, 16) if x == "A" else (16, 8)).astype(np.float32) for x in "AB"},
              str(ck / "adapter_model.safetensors"))
    (ck / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 8, "lora_alpha": 16,
                                                        "target_modules": ["q_proj"]}))
    return ck


@pytest.mark.parametrize("flags", [{"save_safetensors": True, "no_save_optim": False},      # the full-state recipe
                                   {"save_safetensors": False, "no_save_optim": True}])
def test_common_pt_alone_is_unfinished_when_the_arguments_save_model_state(tmp_path, flags):
    swift_save(tmp_path, 4, args={"async_save": True, "tuner_type": "lora", **flags})
    [found] = find_checkpoints(tmp_path)
    why = save_underway(found)
    assert why and "iter_0000004/ has common.pt but none of the model state" in why
    assert verify_found(found).verdict == "incomplete"


def test_refusal_the_metadata_only_save_is_finished(tmp_path):
    swift_save(tmp_path, 4, args={"save_safetensors": True, "no_save_optim": True, "tuner_type": "lora"})
    [found] = find_checkpoints(tmp_path)
    assert save_underway(found) is None and verify_found(found).verdict == "ok"


@pytest.mark.parametrize("args", [None, {"save_safetensors": "true", "no_save_optim": "false"}, ["not", "a", "dict"]])
def test_refusal_without_ms_swifts_megatron_arguments_nothing_is_assumed(tmp_path, args):
    ck = swift_save(tmp_path, 4, args=None)
    if args is not None:
        (ck / "args.json").write_text(json.dumps(args))
    [found] = find_checkpoints(tmp_path)
    assert save_underway(found) is None


def test_refusal_the_merged_copy_holds_common_pt_alone_by_design(tmp_path):
    from moeconsole.runner.checkpoints.megatron import check_iter_dir
    args = {"save_safetensors": True, "no_save_optim": False, "merge_lora": True}
    merged = swift_save(tmp_path, 4, args=args).with_name("checkpoint-4-merged")
    (merged / "iter_0000004").mkdir(parents=True)
    import torch
    torch.save({"iteration": 4}, merged / "iter_0000004" / "common.pt")
    (merged / "args.json").write_text(json.dumps(args))
    assert not check_iter_dir(merged / "iter_0000004").problems
