"""LoRA coverage: an adapter far short of what its adapter_config.json and the model's config.json
call for is bad (``lora_coverage``), naming the groups of modules it lacks. Real safetensors files
for a tiny MoE (Qwen3-MoE shape), named the way mcore-bridge exports a ``megatron sft`` LoRA
(one pair per Hugging Face module, every routed expert its own pair under ``mlp.experts.<i>.``)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from moeconsole.runner.checkpoints.verify import verify_checkpoint

REPO = Path(__file__).resolve().parents[2]
H, LAYERS, EXPERTS, MOE_I, HEADS, KV, HD, R = 64, 2, 4, 32, 4, 2, 16, 8
TINY_MOE = {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"], "hidden_size": H,
            "num_hidden_layers": LAYERS, "num_attention_heads": HEADS, "num_key_value_heads": KV, "head_dim": HD,
            "vocab_size": 256, "intermediate_size": 128, "moe_intermediate_size": MOE_I, "num_experts": EXPERTS,
            "num_experts_per_tok": 2, "decoder_sparse_step": 1, "mlp_only_layers": [], "tie_word_embeddings": False}


def _pair(out: dict, module: str, fan_in: int, fan_out: int, rng) -> None:
    out[f"base_model.model.{module}.lora_A.weight"] = rng.standard_normal((R, fan_in)).astype(np.float32)
    out[f"base_model.model.{module}.lora_B.weight"] = rng.standard_normal((fan_out, R)).astype(np.float32)


def moe_adapter_tensors(*, experts: bool = True) -> dict:
    rng = np.random.default_rng(0)
    out: dict = {}
    for i in range(LAYERS):
        attn = f"model.layers.{i}.self_attn"
        _pair(out, f"{attn}.q_proj", H, HEADS * HD, rng)
        _pair(out, f"{attn}.k_proj", H, KV * HD, rng)
        _pair(out, f"{attn}.v_proj", H, KV * HD, rng)
        _pair(out, f"{attn}.o_proj", HEADS * HD, H, rng)
        if experts:
            for e in range(EXPERTS):
                ex = f"model.layers.{i}.mlp.experts.{e}"
                _pair(out, f"{ex}.gate_proj", H, MOE_I, rng)
                _pair(out, f"{ex}.up_proj", H, MOE_I, rng)
                _pair(out, f"{ex}.down_proj", MOE_I, H, rng)
    return out


def write_moe_checkpoint(tmp: Path, *, experts: bool = True, tensors: dict | None = None) -> Path:
    from safetensors.numpy import save_file

    model = tmp / "tiny-moe"
    model.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text(json.dumps(TINY_MOE))
    ck = tmp / "out" / "checkpoint-100"
    ck.mkdir(parents=True)
    save_file(tensors if tensors is not None else moe_adapter_tensors(experts=experts),
              str(ck / "adapter_model.safetensors"), metadata={"format": "pt"})
    (ck / "adapter_config.json").write_text(json.dumps({
        "peft_type": "LORA", "r": R, "lora_alpha": 16, "base_model_name_or_path": str(model),
        "target_modules": ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]}))
    return ck


def test_full_moe_adapter_is_ok_with_its_coverage(tmp_path):
    v = verify_checkpoint(write_moe_checkpoint(tmp_path))
    assert v.ok, v.problems
    assert "100% of the expected LoRA parameters" in v.reason


def test_adapter_that_dropped_the_expert_lora_is_bad_naming_what_is_missing(tmp_path):
    ck = write_moe_checkpoint(tmp_path, experts=False)
    proc = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "verify", str(ck)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = proc.stdout.splitlines()[0]
    assert line.startswith("LORA_COVERAGE"), line
    assert "routed experts: 0 of ~" in line and "no pairs in 2 of 2 layers: 0-1" in line
    expert_params = LAYERS * EXPERTS * R * ((H + MOE_I) * 2 + (MOE_I + H))
    attn_params = LAYERS * R * ((H + HEADS * HD) + 2 * (H + KV * HD) + (HEADS * HD + H))
    assert f"~{expert_params + attn_params:,} LoRA parameters" in line


def test_two_q_proj_pairs_for_an_all_linear_adapter_are_bad(tmp_path):
    """The issue's case: two q_proj pairs pass every pair/rank check, but hold a sliver of the adapter."""
    rng = np.random.default_rng(1)
    tensors: dict = {}
    for i in range(LAYERS):
        _pair(tensors, f"model.layers.{i}.self_attn.q_proj", H, HEADS * HD, rng)
    ck = write_moe_checkpoint(tmp_path, tensors=tensors)
    cfg = json.loads((ck / "adapter_config.json").read_text())
    cfg["target_modules"] = "all-linear"
    (ck / "adapter_config.json").write_text(json.dumps(cfg))
    v = verify_checkpoint(ck)
    assert (v.ok, v.verdict) == (False, "lora_coverage")
    missing = v.reason.split("missing: ", 1)[1]
    assert "attention: 2.05K of ~7.17K parameters" in missing and "routed experts: 0 of ~" in missing


def test_without_the_model_config_coverage_is_a_note(tmp_path):
    ck = write_moe_checkpoint(tmp_path, experts=False)
    (tmp_path / "tiny-moe" / "config.json").unlink()
    v = verify_checkpoint(ck)
    assert v.ok and any("LoRA coverage not checked" in n for n in v.notes)
