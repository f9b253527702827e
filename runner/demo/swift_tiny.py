"""Build, fully offline, the tiny Qwen3-MoE model and chat dataset that
``recipes/swift-tiny-cpu.yaml`` fine-tunes with the real ms-swift on CPU.

    python -m moeconsole.runner.demo.swift_tiny --out DIR [--force]

creates ``DIR/data.jsonl`` (chat samples cut from the demo corpus) and ``DIR/model/``
(``config.json`` for ``Qwen3MoeForCausalLM``: hidden 64, 2 layers, 8 experts, top-2; random
weights as ``model.safetensors``; a byte-level BPE tokenizer trained on the dataset text, with a
ChatML chat template). Nothing is downloaded. Run it with an interpreter that has torch,
transformers and tokenizers (the ms-swift venv, see scripts/swift-env.sh); they are imported only
when building, so importing this module costs nothing.

Idempotent: a complete build whose stamp matches this builder is kept; ``--force`` rebuilds.
Everything is written to a temporary directory first and renamed into place, so an interrupted
build never leaves a half model behind. Exit status: 0 built or kept, 2 bad arguments or an
unwritable/unusable output directory (one line on stderr).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Sequence

CORPUS_PATH = Path(__file__).with_name("corpus.txt")
PROG = "moeconsole.runner.demo.swift_tiny"
# Bump when the model, tokenizer or dataset this builder makes changes: older builds are redone.
BUILD_VERSION = 1
STAMP_NAME = "moeconsole-swift-tiny.json"
SEED = 1234

# The shape the recipe and docs promise (docs/swift-recipe.md).
MODEL_SHAPE = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "num_experts": 8,
    "num_experts_per_tok": 2,
    "decoder_sparse_step": 1,
    "max_position_embeddings": 1024,
}
VOCAB_SIZE = 1024
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# ChatML, the layout of ms-swift's qwen3_nothinking template (transformers uses it for inference).
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
PROMPTS = ("Continue the passage: {}", "What comes after this sentence? {}", "Go on: {}")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


# ---------------------------------------------------------------- dataset (pure, no torch)

def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs, each joined onto one line."""
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]


def sentences(paragraph: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(paragraph) if s.strip()]


def chat_samples(text: str) -> list[dict]:
    """One chat sample per pair of neighbouring sentences: the user gives a sentence, the
    assistant continues with the next one. Deterministic for a given text."""
    out: list[dict] = []
    for p in paragraphs(text):
        sents = sentences(p)
        for i in range(len(sents) - 1):
            prompt = PROMPTS[len(out) % len(PROMPTS)].format(sents[i])
            out.append({"messages": [{"role": "user", "content": prompt},
                                     {"role": "assistant", "content": sents[i + 1]}]})
    return out


def dataset_text(samples: list[dict]) -> list[str]:
    """The strings the tokenizer is trained on: every message as the chat template shows it."""
    return [f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for s in samples for m in s["messages"]]


# ---------------------------------------------------------------- build (imports torch/transformers)

def build_tokenizer(texts: list[str]):
    """A byte-level BPE trained on ``texts``, wrapped as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, special_tokens=SPECIAL_TOKENS, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   unk_token=None, bos_token=None, clean_up_tokenization_spaces=False)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_model(tokenizer):
    """A randomly initialised (seeded) Qwen3-MoE causal LM sized for the tokenizer."""
    import torch
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    torch.manual_seed(SEED)
    config = Qwen3MoeConfig(vocab_size=len(tokenizer), tie_word_embeddings=False,
                            bos_token_id=None, eos_token_id=tokenizer.eos_token_id,
                            pad_token_id=tokenizer.pad_token_id, torch_dtype="float32",
                            **MODEL_SHAPE)
    config.architectures = ["Qwen3MoeForCausalLM"]
    return Qwen3MoeForCausalLM(config).to(torch.float32)


def stamp(samples: int, vocab: int) -> dict:
    return {"v": 1, "builder": PROG, "build_version": BUILD_VERSION, "samples": samples, "vocab_size": vocab,
            **MODEL_SHAPE}


def is_complete(out: Path) -> bool:
    """A finished build of this builder version: data, config, weights, tokenizer and stamp."""
    model = out / "model"
    try:
        record = json.loads((model / STAMP_NAME).read_text())
    except (OSError, ValueError):
        return False
    needed = [out / "data.jsonl", model / "config.json", model / "model.safetensors", model / "tokenizer.json"]
    return isinstance(record, dict) and record.get("build_version") == BUILD_VERSION and all(
        p.is_file() and p.stat().st_size > 0 for p in needed)


def build_tiny_model(out: Path, corpus: Path = CORPUS_PATH) -> dict:
    """Write DIR/data.jsonl and DIR/model/ (replacing older ones) and return the stamp."""
    samples = chat_samples(corpus.read_text(encoding="utf-8"))
    tokenizer = build_tokenizer(dataset_text(samples))
    model = build_model(tokenizer)
    info = stamp(len(samples), len(tokenizer))
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=out))
    try:
        with open(tmp / "data.jsonl", "w", encoding="utf-8") as f:
            for s in samples:
                f.write(json.dumps(s, ensure_ascii=False) + "\n")
        model_dir = tmp / "model"
        model.save_pretrained(model_dir, safe_serialization=True)
        tokenizer.save_pretrained(model_dir)
        (model_dir / STAMP_NAME).write_text(json.dumps(info, indent=1) + "\n")
        for name in ("model", "data.jsonl"):
            target = out / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
        os.replace(model_dir, out / "model")     # the stamp moves last with its model
        os.replace(tmp / "data.jsonl", out / "data.jsonl")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return info


def build_modules_missing_here() -> list[str]:
    """The build's third-party modules that this interpreter (the one running the build) cannot import."""
    import importlib.util
    return [m for m in ("torch", "transformers", "tokenizers") if importlib.util.find_spec(m) is None]


def main(argv: Sequence[str] | None = None) -> int:
    p = _Parser(prog=PROG, description="Build the tiny Qwen3-MoE model and chat dataset for the ms-swift CPU recipe.")
    p.add_argument("--out", required=True, help="directory that gets model/ and data.jsonl")
    p.add_argument("--force", action="store_true", help="rebuild even if a complete build is there")
    args = p.parse_args(argv)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        sys.stderr.write(f"{PROG}: {out} exists and is not a directory\n")
        return 2
    if is_complete(out) and not args.force:
        print(f"kept {out}/model and {out}/data.jsonl (complete build {BUILD_VERSION})")
        return 0
    missing = build_modules_missing_here()
    if missing:
        sys.stderr.write(f"{PROG}: needs {', '.join(missing)} (not importable here); run it with "
                         f".venv-swift/bin/python from the repo root (scripts/swift-env.sh creates it)\n")
        return 2
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        sys.stderr.write(f"{PROG}: cannot create {out}: {exc.strerror or exc}\n")
        return 2
    if not os.access(out, os.W_OK):
        sys.stderr.write(f"{PROG}: {out} is not writable\n")
        return 2
    info = build_tiny_model(out)
    print(f"built {out}/model (Qwen3MoeForCausalLM, vocab {info['vocab_size']}) and "
          f"{out}/data.jsonl ({info['samples']} samples)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
