"""How to get the merged model of a ``megatron sft`` LoRA run that saves adapters only.

With ``--merge_lora false`` (the 4.6 recipes) every save is the adapter; the merged Hugging Face
model is made afterwards by ms-swift's own export, from the sources (ms-swift 4.6.0):

- ``megatron export`` parses ``MegatronExportArguments`` (swift/megatron/arguments/export_args.py):
  ``--to_hf true`` converts to Hugging Face weights, ``--merge_lora`` defaults to ``to_hf``
  (l.55-56) and is given explicitly here; without ``--output_dir`` the result goes to
  ``<checkpoint>-hf`` beside the checkpoint (``_init_output_dir``, l.26-35), and an existing one
  is refused unless ``--exist_ok true`` (l.37-38).
- ``--adapters <checkpoint-N>``: ``BaseArguments._init_ckpt_dir`` loads the run's arguments (the
  base ``--model``, LoRA settings) from the checkpoint's args.json; ``convert_mcore2hf``
  (swift/megatron/pipelines/export/export.py l.30-67) builds the Megatron model, loads the base
  weights and the adapter (``bridge.load_weights(peft_format=True)``), merges
  (``merge_and_unload``) and saves safetensors through mcore-bridge.
- It builds the same Megatron model as training, so it is launched the same way: the run's
  ``NPROC_PER_NODE`` and its model-parallel sizes (a 397B MoE needs its experts split over the GPUs).
"""
from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import RunRecipe

PARALLEL = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "expert_model_parallel_size",
            "expert_tensor_parallel_size", "context_parallel_size")
LAUNCH_ENV = ("NPROC_PER_NODE", "NNODES", "CUDA_VISIBLE_DEVICES")


def merge_export(recipe: "RunRecipe", checkpoint: str) -> dict[str, Any] | None:
    """The ``megatron export`` that merges ``checkpoint``'s LoRA into a full Hugging Face model, for a
    ``megatron sft`` LoRA recipe whose saves are adapters only; None otherwise (a full fine-tune,
    or a merging run whose saves already have ``checkpoint-N-merged/``)."""
    from moeconsole.runner.recipes.swift.lint import merge_lora_effective, parse_command
    try:
        cmd = parse_command(recipe)
    except (KeyError, TypeError):
        return None
    if cmd is None or not cmd.megatron or cmd.command not in ("megatron sft", "swift sft"):
        return None
    tuner = (cmd.get("tuner_type") or cmd.get("train_type") or "full").lower()
    if not tuner.startswith("lora") or merge_lora_effective(cmd):
        return None
    argv = list(recipe.command)
    head = argv[: cmd.start - 1] if cmd.command.startswith("megatron ") else ["megatron"]
    out = [*head, "export", "--adapters", checkpoint, "--to_hf", "true", "--merge_lora", "true"]
    for name in PARALLEL:
        value = cmd.get(name)
        if value is not None:
            out += [f"--{name}", value]
    env = {k: v for k, v in cmd.env.items() if k in LAUNCH_ENV}     # a config file's ENV too (swift_launch)
    line = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in env.items()), shlex.join(out)])
    return {"checkpoint": checkpoint, "command": out, "env": env, "shell": line,
            "writes": checkpoint.rstrip("/") + "-hf",
            "source": "ms-swift MegatronExportArguments (swift/megatron/arguments/export_args.py) and "
                      "convert_mcore2hf (swift/megatron/pipelines/export/export.py)"}
