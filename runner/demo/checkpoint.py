"""Checkpoints of the demo trainer, laid out like an ms-swift/peft LoRA checkpoint.

``<output_dir>/checkpoint-N/`` holds adapter_model.safetensors (LoRA tensors only),
adapter_config.json, args.json, trainer_state.json, optimizer.pt and rng_state.pth. Every
checkpoint is written into a hidden temp dir beside it and renamed into place, so a
``checkpoint-N`` directory is always complete when it appears."""
from __future__ import annotations

import json
import os
import random
import shutil
import struct
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from moeconsole.runner.rundir import jsonio

ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
ARGS = "args.json"
TRAINER_STATE = "trainer_state.json"
OPTIMIZER = "optimizer.pt"
RNG_STATE = "rng_state.pth"
STUB_SIZE = 39 * 1024  # the size of the empty safetensors files in the real incident


class CheckpointLoadError(ValueError):
    """The checkpoint to resume from is missing, empty or does not fit this model."""


def checkpoint_dir(output_dir: Path, step: int) -> Path:
    return output_dir / f"checkpoint-{step}"


def write_empty_stub(path: Path, size: int = STUB_SIZE) -> None:
    """A safetensors file with an empty header (``{}``) space-padded to ``size`` bytes: valid
    framing, zero tensors, what a save that silently wrote nothing leaves behind."""
    header = b"{}".ljust(size - 8, b" ")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)))
        f.write(header)


def adapter_config(target_modules: list[str], rank: int, alpha: int, model_config: dict) -> dict:
    """peft's LoraConfig as it lands in adapter_config.json, plus the demo model's shape."""
    return {
        "alpha_pattern": {},
        "auto_mapping": None,
        "base_model_name_or_path": "moeconsole/tiny-moe-demo",
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
        "init_lora_weights": True,
        "layers_pattern": None,
        "layers_to_transform": None,
        "lora_alpha": alpha,
        "lora_dropout": 0.0,
        "modules_to_save": None,
        "peft_type": "LORA",
        "r": rank,
        "rank_pattern": {},
        "revision": None,
        "target_modules": sorted(target_modules),
        "task_type": "CAUSAL_LM",
        "use_dora": False,
        "use_rslora": False,
        "moeconsole_demo_model": model_config,
    }


def trainer_state(*, step: int, max_steps: int, epoch: float, logging_steps: int, save_steps: int,
                  batch_size: int, log_history: list[dict]) -> dict:
    """transformers' TrainerState fields (5.x), as ``save_to_json`` writes them."""
    return {
        "best_global_step": None,
        "best_metric": None,
        "best_model_checkpoint": None,
        "epoch": epoch,
        "eval_steps": 500,
        "global_step": step,
        "is_hyper_param_search": False,
        "is_local_process_zero": True,
        "is_world_process_zero": True,
        "log_history": log_history,
        "logging_steps": logging_steps,
        "max_steps": max_steps,
        "num_input_tokens_seen": 0,
        "num_train_epochs": 1,
        "save_steps": save_steps,
        "stateful_callbacks": {},
        "total_flos": 0.0,
        "train_batch_size": batch_size,
        "trial_name": None,
        "trial_params": None,
    }


def _write_json(path: Path, obj: Any, sort_keys: bool = False) -> None:
    # Like transformers/ms-swift: plain json.dumps, so a NaN loss is written as the token NaN.
    path.write_text(json.dumps(obj, indent=2, sort_keys=sort_keys) + "\n")


def save_checkpoint(output_dir: Path, step: int, *, tensors: dict[str, torch.Tensor], config: dict,
                    args: dict, state: dict, optimizer_state: dict, stub: bool = False) -> Path:
    """Write checkpoint-``step`` atomically (temp dir + rename); ``stub`` writes an empty
    adapter_model.safetensors instead of the tensors. Returns the final directory."""
    final = checkpoint_dir(output_dir, step)
    tmp = output_dir / f".{final.name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    if stub:
        write_empty_stub(tmp / ADAPTER_WEIGHTS)
    else:
        save_file(tensors, str(tmp / ADAPTER_WEIGHTS), metadata={"format": "pt"})
    _write_json(tmp / ADAPTER_CONFIG, config)
    _write_json(tmp / ARGS, args)
    _write_json(tmp / TRAINER_STATE, state, sort_keys=True)
    torch.save(optimizer_state, tmp / OPTIMIZER)
    torch.save({"python": random.getstate(), "cpu": torch.get_rng_state()}, tmp / RNG_STATE)
    jsonio.replace_dir(tmp, final)
    return final


def save_rng_share(output_dir: Path, step: int, process_index: int) -> Path:
    """Process ``process_index``'s RNG state into checkpoint-``step``/rng_state_{process_index}.pth (the dir made
    when missing: on a node of its own no other process writes it), atomically (temp file + rename)."""
    final = checkpoint_dir(output_dir, step)
    final.mkdir(parents=True, exist_ok=True)
    target = final / f"rng_state_{process_index}.pth"
    tmp = output_dir / f".{final.name}-{target.name}.tmp-{os.getpid()}"   # beside it: never a stray name in it
    torch.save({"python": random.getstate(), "cpu": torch.get_rng_state()}, tmp)
    os.replace(tmp, target)
    return target


def load_checkpoint(path: Path) -> tuple[dict[str, torch.Tensor], dict, dict]:
    """(adapter tensors, optimizer state, trainer state) of a checkpoint dir, or CheckpointLoadError.

    Also restores the RNG state saved with it."""
    if not path.is_dir():
        raise CheckpointLoadError(f"checkpoint directory not found: {path}")
    for name in (ADAPTER_WEIGHTS, TRAINER_STATE, OPTIMIZER):
        if not (path / name).is_file():
            raise CheckpointLoadError(f"checkpoint {path} has no {name}")
    try:
        tensors = load_file(str(path / ADAPTER_WEIGHTS))
    except Exception as exc:  # safetensors raises its own SafetensorError for bad framing
        raise CheckpointLoadError(f"cannot read {path / ADAPTER_WEIGHTS}: {exc}") from None
    if not tensors:
        raise CheckpointLoadError(f"{path / ADAPTER_WEIGHTS} holds no tensors (an empty stub)")
    try:
        state = json.loads((path / TRAINER_STATE).read_text())
        step = int(state["global_step"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise CheckpointLoadError(f"cannot read global_step from {path / TRAINER_STATE}: {exc}") from None
    if step < 0:
        raise CheckpointLoadError(f"{path / TRAINER_STATE} has a negative global_step")
    try:
        optimizer_state = torch.load(path / OPTIMIZER, weights_only=True)
    except Exception as exc:
        raise CheckpointLoadError(f"cannot read {path / OPTIMIZER}: {exc}") from None
    _restore_rng(path / RNG_STATE)
    return tensors, optimizer_state, state


def _restore_rng(path: Path) -> None:
    if not path.is_file():
        return
    try:
        rng = torch.load(path, weights_only=True)
    except Exception as exc:
        raise CheckpointLoadError(f"cannot read {path}: {exc}") from None
    if "python" in rng:
        random.setstate(rng["python"])
    if "cpu" in rng:
        torch.set_rng_state(rng["cpu"])
