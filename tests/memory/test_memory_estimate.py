"""The static memory per GPU before launch, from config.json and the recipe's command: counts
checked by hand on tiny configs, the 397B recipe's table, and ``moeconsole lint``'s output."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from moeconsole.runner.core.errors import InputError
from moeconsole.runner.recipes import memory_estimate as me

REPO = Path(__file__).resolve().parents[2]
GIB = 1024 ** 3
CONFIG_397B = REPO / "recipes" / "models" / "qwen3.5-397b-a17b.config.json"
RECIPE_46 = REPO / "recipes" / "qwen3.5-397b-a17b-8xh200-swift4.6.yaml"

DENSE = {"model_type": "llama", "hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
         "num_key_value_heads": 1, "head_dim": 4, "intermediate_size": 16, "vocab_size": 10,
         "tie_word_embeddings": False}
# per layer: q 8x8 + k 8x4 + v 8x4 + o 8x8 = 192; gate/up 8x32 + down 16x8 = 384; 2 norms 16 -> 592
DENSE_TOTAL = 2 * 592 + 10 * 8 + 10 * 8 + 8


def test_a_dense_model_counted_by_hand():
    shape = me.model_shape(DENSE)
    assert shape.total == DENSE_TOTAL == 1352
    est = me.estimate_memory(DENSE, {"tuner_type": "full"}, world=1)
    gib = {r.part.split(" (")[0]: r.gib * GIB for r in est.rows}
    assert gib["base weights"] == 1352 * 2
    assert gib["gradients"] == 1352 * 4
    assert gib["optimizer state"] == 1352 * 12                 # fp32 master + two moments, on the GPU


def test_tied_embeddings_and_qk_norm():
    tied = dict(DENSE, tie_word_embeddings=True)
    assert me.model_shape(tied).total == DENSE_TOTAL - 80
    assert me.model_shape(dict(DENSE, model_type="qwen3")).total == DENSE_TOTAL + 2 * 2 * 4   # q/k norms


def test_experts_are_split_by_ep_and_the_rest_replicated():
    moe = dict(DENSE, model_type="qwen3_moe", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=4)
    shape = me.model_shape(moe)
    experts = 4 * 3 * 8 * 4                          # per layer
    dense = 192 + 16 + 8 * 4 + 2 * 4                 # attention, norms, router, qwen3's q/k norms
    assert shape.expert_per_layer == [experts, experts] and shape.dense_per_layer == [dense, dense]
    assert shape.active == 2 * dense + 2 * experts // 2 + 80 + 80 + 8
    est = me.estimate_memory(moe, {"tuner_type": "full", "expert_model_parallel_size": "2"}, world=2)
    base = est.rows[0]
    assert base.params == 2 * dense + 168 + 2 * experts // 2
    assert "/ (EP 2 x ETP 1)" in base.arithmetic
    # optimizer: dense sharded over DP 2, experts over expert-DP 1
    assert est.rows[-1].params == (2 * dense + 168) // 2 + 2 * experts // 2


def test_lora_on_megatron_all_linear_counts_fused_modules_and_experts():
    moe = dict(DENSE, model_type="qwen3_moe", num_experts=4, moe_intermediate_size=4)
    est = me.estimate_memory(moe, {"tuner_type": "lora", "lora_rank": "2", "expert_model_parallel_size": "2"}, world=2)
    lora = est.rows[1]
    attn = 2 * ((8 + 8 + 4 + 4) + (8 + 8))                     # r x (in + out): linear_qkv (fused), linear_proj
    experts = 4 * 2 * ((8 + 8) + (4 + 8))                       # per expert: fc1 (gate+up) and fc2
    assert lora.part == "LoRA r=2 all-linear"
    assert lora.params == 2 * attn + 2 * experts // 2
    assert est.rows[2].params == lora.params                    # gradients of exactly those
    # Hugging Face / peft: separate q, k, v; q_proj v_proj is two pairs per layer, in fp32
    hf = me.estimate_memory(moe, {"lora_rank": "2", "target_modules": "q_proj v_proj"}, world=1, megatron=False)
    assert hf.rows[1].params == 2 * 2 * ((8 + 8) + (8 + 4)) and hf.rows[1].bytes_per_param == 4
    # ... and all-linear reaches no expert there (transformers 5 keeps them as 3-D parameters)
    hf_all = me.estimate_memory(moe, {"lora_rank": "2"}, world=1, megatron=False)
    assert hf_all.rows[1].params == 2 * 2 * ((8 + 8) + (8 + 4) + (8 + 4) + (8 + 8))
    assert hf_all.rows[-1].bytes_per_param == 8          # AdamW's two fp32 moments, no master copy
    odd = me.estimate_memory(moe, {"tuner_type": "lora", "target_modules": "mystery"}, world=1)
    assert any("mystery" in n for n in odd.notes)


def test_optimizer_offload_fraction():
    full = me.estimate_memory(DENSE, {"tuner_type": "full", "optimizer_cpu_offload": "true",
                               "optimizer_offload_fraction": "0.75"}, world=1)
    assert full.rows[-1].gib * GIB == pytest.approx(1352 * 12 * 0.25)
    assert "25% on the GPU" in full.rows[-1].part


def test_a_hybrid_linear_attention_layer():
    cfg = {"model_type": "qwen3_next", "hidden_size": 8, "num_hidden_layers": 4, "num_attention_heads": 2,
           "num_key_value_heads": 1, "head_dim": 4, "vocab_size": 10, "intermediate_size": 16,
           "full_attention_interval": 4, "linear_num_key_heads": 1, "linear_num_value_heads": 2,
           "linear_key_head_dim": 2, "linear_value_head_dim": 3, "linear_conv_kernel_dim": 4}
    shape = me.model_shape(cfg)
    kd, vd, nv = 2, 6, 2
    linear = 8 * (2 * kd + vd) + 8 * vd + 8 * nv + 8 * nv + vd * 8 + (2 * kd + vd) * 4 + 2 * nv + 3 + 16 + 384
    full = 8 * 16 + 32 + 32 + 64 + 16 + 2 * 4 + 384            # gated q (x2), qk norms
    assert shape.dense_per_layer == [linear, linear, linear, full]


def test_missing_fields_are_named():
    with pytest.raises(InputError, match="hidden_size"):
        me.model_shape({"model_type": "x", "num_hidden_layers": 2, "vocab_size": 3, "num_attention_heads": 1})


def test_the_397b_model_and_its_table_against_the_record():
    """397B parameters with 17B active, as the name says. Under EP 8 every GPU holds 1/8 of the
    experts and ALL of the rest: 109 GiB of bf16 weights, more than 397B x 2 B / 8 = 92.4 GiB,
    and twice the record's "base shards ~50 GiB"."""
    cfg = me.load_config(CONFIG_397B)
    shape = me.model_shape(cfg)
    assert 396.0e9 < shape.total < 398.0e9
    assert 17.0e9 < shape.active < 17.6e9
    assert 397e9 * 2 / 8 / GIB == pytest.approx(92.4, abs=0.1)
    record = {"tuner_type": "lora", "lora_rank": "32", "target_modules": "all-linear",
              "expert_model_parallel_size": "8", "optimizer_cpu_offload": "true",
              "optimizer_offload_fraction": "1.0", "torch_dtype": "bfloat16"}
    est = me.estimate_memory(cfg, record, world=8)
    rows = {r.part.split(" ")[0]: r for r in est.rows}
    assert rows["base"].gib == pytest.approx(109.1, abs=0.1) and rows["base"].gib > 2 * 50
    assert rows["LoRA"].gib == pytest.approx(2.75, abs=0.01)          # the record: ~3.8
    assert rows["gradients"].gib == pytest.approx(5.50, abs=0.01)     # fp32 main grads; the record: ~4.1 with misc
    assert rows["optimizer"].gib == 0.0
    assert est.per_gpu_gib == pytest.approx(117.35, abs=0.01)
    # measured 132.91 GiB per GPU leaves ~15.6 GiB for activations + workspace, not the record's 25 + 50
    assert 132.91 - est.per_gpu_gib == pytest.approx(15.56, abs=0.01)


def lint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "lint", *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_lint_prints_the_table_with_its_arithmetic():
    proc = lint(str(RECIPE_46))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "static memory per GPU (qwen3_5_moe_text: 396.80B parameters, 17.35B active; 8 GPUs, TP 1 PP 1 EP 8" in out
    assert "386.55B experts / (EP 8 x ETP 1)" in out
    assert "total static" in out and "memory_left_for_activations" in out
    doc = json.loads(lint(str(RECIPE_46), "--json").stdout)
    assert doc["memory"]["per_gpu_gib"] == pytest.approx(sum(r["gib"] for r in doc["memory"]["rows"]))
    assert doc["memory"]["layout"]["ep"] == 8


def test_lint_says_when_the_config_is_missing_or_the_model_does_not_fit(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({"name": "t", "command": ["torchrun", "--nproc_per_node", "1", "train.py"],
                                      "gpus": {"memory_capacity_gib": 0.000001},
                                      "memory": {"model_config": "nowhere.json"}}))
    proc = lint(str(recipe))
    assert proc.returncode == 0 and "memory_config_unreadable" in proc.stdout and "no such file" in proc.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(dict(DENSE, num_key_value_heads=[1])))
    proc = lint(str(recipe), "--model-config", str(bad))
    assert proc.returncode == 0 and "memory_config_unreadable" in proc.stdout and "cannot use" in proc.stdout
    assert "Traceback" not in proc.stderr
    (tmp_path / "config.json").write_text(json.dumps(DENSE))
    proc = lint(str(recipe), "--model-config", str(tmp_path))
    assert "memory_static_over_capacity" in proc.stdout
    assert "total static" in proc.stdout


def test_old_memory_alert_keys_are_a_lint_warning(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(yaml.safe_dump({"name": "t", "command": ["python", "x.py"],
                                      "alerts": {"mem_headroom_warn_gib": 6.0}}))
    proc = lint(str(recipe))
    assert "alerts_memory_key_moved: alerts.mem_headroom_warn_gib is no longer read: memory alerts follow " \
           "memory.min_headroom" in proc.stdout
