"""moeconsole.runner.demo.swift_tiny: the offline builder of the tiny Qwen3-MoE model and chat dataset."""
from __future__ import annotations

import importlib.util
import json
import math
import shutil
import subprocess
import sys

import pytest
from safetensors import safe_open

from moeconsole.runner.demo import swift_tiny
from tests.swift.swift_helpers import REPO, SWIFT_PYTHON, TIMEOUT, require_swift


def build(python: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([python, "-m", "moeconsole.runner.demo.swift_tiny", *args], capture_output=True, text=True,
                          timeout=TIMEOUT, cwd=REPO)


def test_each_sample_continues_a_corpus_sentence_with_the_next_one():
    text = swift_tiny.CORPUS_PATH.read_text()
    samples = swift_tiny.chat_samples(text)
    assert len(samples) > 100 and samples == swift_tiny.chat_samples(text)
    flat = " ".join(text.split())
    for s in samples:
        user, assistant = s["messages"]
        assert (user["role"], assistant["role"]) == ("user", "assistant")
        (sentence,) = [user["content"][len(p.format("")):] for p in swift_tiny.PROMPTS
                       if user["content"].startswith(p.format(""))]
        assert assistant["content"] and f"{sentence} {assistant['content']}" in flat


def test_an_output_path_that_is_a_file_is_one_line_and_exit_2(tmp_path):
    target = tmp_path / "afile"
    target.write_text("x")
    proc = build(sys.executable, "--out", str(target))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [f"moeconsole.runner.demo.swift_tiny: {target} exists and is not a directory"]


@pytest.mark.skipif(importlib.util.find_spec("transformers") is not None,
                    reason="transformers is importable here: the missing-module path cannot be seen")
def test_without_transformers_it_says_which_environment_to_use(tmp_path):
    out = tmp_path / "new"
    proc = build(sys.executable, "--out", str(out))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert "transformers" in proc.stderr and ".venv-swift/bin/python" in proc.stderr
    assert not out.exists()


def test_the_model_has_the_promised_shape_and_safetensors_weights(tiny):
    config = json.loads((tiny / "model" / "config.json").read_text())
    assert config["architectures"] == ["Qwen3MoeForCausalLM"] and config["model_type"] == "qwen3_moe"
    assert (config["hidden_size"], config["num_hidden_layers"], config["num_experts_per_tok"]) == (64, 2, 2)
    assert config.get("num_experts", config.get("num_local_experts")) == 8
    with safe_open(str(tiny / "model" / "model.safetensors"), "np") as f:
        shapes = {k: f.get_slice(k).get_shape() for k in f.keys()}
    # transformers 5 fuses the experts in memory but saves them one by one (the hub layout).
    for layer in range(2):
        experts = {k.split(".")[5] for k in shapes if k.startswith(f"model.layers.{layer}.mlp.experts.")}
        assert experts == {str(i) for i in range(8)}
    assert shapes["model.layers.0.mlp.experts.0.gate_proj.weight"] == [32, 64]     # moe_intermediate_size 32
    assert shapes["lm_head.weight"] == [config["vocab_size"], 64]
    lines = (tiny / "data.jsonl").read_text().splitlines()
    assert len(lines) == len(swift_tiny.chat_samples(swift_tiny.CORPUS_PATH.read_text()))


LOAD_CHECK = r"""
import json, sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
d = sys.argv[1]
tok = AutoTokenizer.from_pretrained(d)
model = AutoModelForCausalLM.from_pretrained(d)
sample = json.loads(open(sys.argv[2]).readline())
chat = tok.apply_chat_template(sample["messages"], tokenize=False)
ids = tok(chat, return_tensors="pt").input_ids
with torch.no_grad():
    loss = model(input_ids=ids, labels=ids).loss.item()
text = sample["messages"][1]["content"]
print(json.dumps({"chat": chat, "roundtrip": tok.decode(tok(text).input_ids) == text, "loss": loss,
                  "vocab": len(tok), "type": type(model).__name__, "im_end": tok.convert_tokens_to_ids("<|im_end|>"),
                  "eos": tok.eos_token_id}))
"""


def test_transformers_loads_it_and_the_tokenizer_has_a_chatml_template(tiny):
    proc = subprocess.run([str(SWIFT_PYTHON), "-c", LOAD_CHECK, str(tiny / "model"), str(tiny / "data.jsonl")],
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    sample = json.loads((tiny / "data.jsonl").read_text().splitlines()[0])
    user, assistant = (m["content"] for m in sample["messages"])
    assert got["chat"] == f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n{assistant}<|im_end|>\n"
    assert got["roundtrip"] and got["type"] == "Qwen3MoeForCausalLM" and got["eos"] == got["im_end"]
    # Random weights: about the loss of a uniform guess over the vocabulary.
    assert abs(got["loss"] - math.log(got["vocab"])) < 0.5


def test_a_complete_build_is_kept_and_force_rebuilds_the_same_bytes(tiny, tmp_path):
    require_swift()
    copy = tmp_path / "copy"
    shutil.copytree(tiny, copy)
    weights = copy / "model" / "model.safetensors"
    before = (weights.stat().st_mtime_ns, weights.read_bytes())
    proc = build(str(SWIFT_PYTHON), "--out", str(copy))
    assert proc.returncode == 0 and proc.stdout.startswith("kept ")
    assert weights.stat().st_mtime_ns == before[0]
    proc = build(str(SWIFT_PYTHON), "--out", str(copy), "--force")
    assert proc.returncode == 0 and proc.stdout.startswith("built ")
    assert weights.stat().st_mtime_ns != before[0] and weights.read_bytes() == before[1]
    assert sorted(p.name for p in copy.iterdir()) == ["data.jsonl", "model"]    # no temp dir left behind


def test_an_old_build_version_is_rebuilt(tiny, tmp_path):
    require_swift()
    copy = tmp_path / "copy"
    shutil.copytree(tiny, copy)
    stamp = copy / "model" / swift_tiny.STAMP_NAME
    stamp.write_text(json.dumps({**json.loads(stamp.read_text()), "build_version": 0}))
    proc = build(str(SWIFT_PYTHON), "--out", str(copy))
    assert proc.returncode == 0 and proc.stdout.startswith("built ")
    assert json.loads(stamp.read_text())["build_version"] == swift_tiny.BUILD_VERSION
