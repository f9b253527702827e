"""The run's arithmetic for an ms-swift Megatron command: how many iterations ms-swift will derive,
how big a save is, how much a LoRA trains. Pure functions over numbers and small JSON files; lint
turns them into messages.

Sources (ms-swift 4.2.0 and 4.6.0 wheels, megatron-core 0.16.1):

- ``MegatronArguments.init_iters`` (swift/megatron/arguments/megatron_args.py, called from
  ``MegatronSft.run`` in swift/megatron/pipelines/train/sft.py once the dataset is built): with
  ``--num_train_epochs`` set and a sized dataset, ``train_iters`` is *replaced* by
  ``len(dataset) // (micro_batch * dp) * (micro_batch * dp) * epochs // global_batch``; with
  ``--packing`` the dataset's length is its number of packed rows, so the samples in the file
  give an upper bound.
- ``get_optimizer_param_scheduler`` (swift/megatron/utils/megatron_lm_utils.py): the scheduler
  counts samples; ``lr_decay_iters`` defaults to ``train_iters``; the warmup is
  ``lr_warmup_fraction * lr_decay_iters`` iterations when the fraction is set, else
  ``lr_warmup_iters``.
- A Megatron save with the optimizer (``--no_save_optim false``) holds, per trainable parameter,
  its bf16 weight in the torch_dist shards plus the distributed optimizer's fp32 main copy and two
  fp32 Adam moments (megatron-core's defaults, also under ``--use_precision_aware_optimizer``).
"""
from __future__ import annotations

import glob
import json
import math
import os
import re
from pathlib import Path

DTYPE_BYTES = {"bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "float32": 4, "fp32": 4}
OPTIMIZER_BYTES_PER_PARAM = 12      # fp32 main param + exp_avg + exp_avg_sq
SHARD_BYTES_PER_PARAM = 2           # the bf16 weight itself in iter_N/*.distcp


def model_params_billion(model: str | None) -> float | None:
    """Total parameters from a model name ("Qwen3.5-397B-A17B" -> 397)."""
    if not model:
        return None
    m = re.search(r"(?<![\d.])(\d+(?:\.\d+)?)[Bb](?![a-z])", os.path.basename(model.rstrip("/")))
    return float(m.group(1)) if m else None


def data_parallel_size(world: int | None, tp: float | None, pp: float | None, cp: float | None) -> int | None:
    """Megatron-Core's data-parallel size: world / (TP x PP x CP); expert parallelism splits the
    experts inside it and does not shrink it. ``world``: the processes torchrun starts
    (``cmdline.world_size``); None when that is not known."""
    if world is None:
        return None
    div = int(tp or 1) * int(pp or 1) * int(cp or 1)
    return world // div if div and world >= div else None


def derived_train_iters(samples: int, epochs: int, global_batch: int, micro_batch: int = 1,
                        dp: int | None = None) -> int:
    """``MegatronArguments.init_iters``: the iterations ms-swift sets from the dataset's length."""
    step = micro_batch * (dp or 1)
    usable = samples // step * step
    return usable * epochs // global_batch


def warmup_iters(*, warmup_iters: float | None, warmup_fraction: float | None,
                 decay_iters: float | None) -> float | None:
    """Warmup length in iterations (``get_optimizer_param_scheduler``); None if unknown."""
    if warmup_fraction is not None:
        return warmup_fraction * decay_iters if decay_iters else None
    return warmup_iters or 0.0


def find_model_config(model: str | None) -> Path | None:
    """The HF ``config.json`` of ``model`` on this machine: a local directory, or a download in
    the Hugging Face or ModelScope cache. None when it is nowhere here."""
    if not model or "{" in model:
        return None
    local = Path(os.path.expanduser(model))
    if (local / "config.json").is_file():
        return local / "config.json"
    if "/" not in model.strip("/") or model.startswith(("/", ".", "~")):
        return None
    org, name = model.strip("/").split("/", 1)
    hf_home = Path(os.environ.get("HF_HUB_CACHE") or Path(os.environ.get("HF_HOME", "~/.cache/huggingface")) / "hub")
    ms_home = Path(os.environ.get("MODELSCOPE_CACHE", "~/.cache/modelscope/hub"))
    candidates = sorted(glob.glob(str(hf_home.expanduser() / f"models--{org}--{name}" / "snapshots" / "*" / "config.json")))
    candidates += [str(p) for p in (ms_home.expanduser() / "models" / org / name / "config.json",
                                    ms_home.expanduser() / org / name / "config.json") if p.is_file()]
    return Path(candidates[-1]) if candidates else None


def lora_params(config: dict, rank: int) -> int | None:
    """Trainable parameters of an ``all-linear`` LoRA of ``rank`` on this HF config, counted by the
    one model of the parameters (``moeconsole.runner.recipes.memory_estimate``: Megatron's fused modules,
    the experts, linear-attention layers). None when the config lacks the sizes."""
    from moeconsole.runner.core.errors import InputError
    from moeconsole.runner.recipes.memory_estimate import lora_params_total
    try:
        return lora_params_total(config, {"tuner_type": "lora", "lora_rank": str(rank),
                                          "target_modules": "all-linear"}) or None
    except InputError:
        return None


def lora_params_of(model: str | None, rank: int, config: str | None = None) -> tuple[int, Path] | None:
    """(trainable LoRA parameters, the config.json they were counted from), when the model's
    config is on this machine: ``config`` (a config.json or its directory, e.g. the recipe's
    ``memory.model_config``), else the model's own."""
    path = Path(config) if config else find_model_config(model)
    if path is not None and path.is_dir():
        path = path / "config.json"
    if path is None:
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    n = lora_params(doc, rank) if isinstance(doc, dict) else None
    return (n, path) if n else None


def saves_on_disk(total_saves: int, kept: int | None, restarts: int) -> int:
    """How many saves can sit on disk at once. Rotation (``_rotate_checkpoints``, after each save)
    keeps ``kept`` per output directory, but every invocation writes into a new
    ``v<N>-<time>/`` (``add_version_to_work_dir``) that the next attempt's rotation never sees:
    each restart leaves its directory's saves behind. +1 while a save is written before rotation."""
    if not kept:
        return total_saves
    return min(total_saves, kept * (restarts + 1)) + (1 if total_saves > kept else 0)


def ceil_div(a: float, b: float) -> int:
    return int(math.ceil(a / b)) if b else 0
