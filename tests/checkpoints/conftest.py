"""Builders for real checkpoints on disk: files written by the safetensors library (numpy and
torch front ends), real 39 KB stubs, sharded sets with an index, Megatron saves written by
torch.distributed.checkpoint, and the ms-swift checkpoint-N layout the demo trainer uses."""
from __future__ import annotations

import json
import struct
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
if str(REPO) not in sys.path:       # `.venv/bin/pytest` (unlike `python -m pytest`) does not add the cwd
    sys.path.insert(0, str(REPO))
STUB_SIZE = 39 * 1024


def lora_tensors(r: int = 8, layers: int = 2, hidden: int = 32, seed: int = 0,
                 modules=("q_proj", "k_proj", "v_proj", "o_proj")) -> dict[str, np.ndarray]:
    """A PEFT-named LoRA state dict: lora_A [r, in], lora_B [out, r] per module."""
    rng = np.random.default_rng(seed)
    out = {}
    for layer in range(layers):
        for m in modules:
            base = f"base_model.model.model.layers.{layer}.self_attn.{m}"
            out[f"{base}.lora_A.weight"] = rng.standard_normal((r, hidden)).astype(np.float32)
            out[f"{base}.lora_B.weight"] = rng.standard_normal((hidden, r)).astype(np.float32) * 0.01
    return out


def write_adapter(d: Path, tensors: dict | None = None, *, r: int = 8, config: dict | None = None,
                  with_config: bool = True, extras: bool = True) -> Path:
    """An ms-swift/HF checkpoint-N dir with a LoRA adapter (safetensors.numpy.save_file)."""
    from safetensors.numpy import save_file

    d.mkdir(parents=True, exist_ok=True)
    save_file(tensors if tensors is not None else lora_tensors(r=r), str(d / "adapter_model.safetensors"),
              metadata={"format": "pt"})
    if with_config:
        cfg = {"peft_type": "LORA", "r": r, "lora_alpha": 32, "target_modules": ["q_proj", "k_proj"]}
        cfg.update(config or {})
        (d / "adapter_config.json").write_text(json.dumps(cfg))
    if extras:
        (d / "args.json").write_text(json.dumps({"tuner_type": "lora", "lora_rank": r}))
    return d


def write_demo_checkpoint(d: Path, step: int, *, grad_norms: list[float] | None = None, seed: int = 0) -> Path:
    """The demo trainer's / ms-swift's checkpoint-N layout, written with torch like a trainer does."""
    import torch
    from safetensors.torch import save_file

    d.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(seed)
    tensors = {}
    for layer in range(2):
        for m in ("q_proj", "v_proj"):
            base = f"base_model.model.model.layers.{layer}.self_attn.{m}"
            tensors[f"{base}.lora_A.weight"] = torch.randn(4, 16, generator=g)
            tensors[f"{base}.lora_B.weight"] = torch.randn(16, 4, generator=g) * 0.01
    save_file(tensors, str(d / "adapter_model.safetensors"), metadata={"format": "pt"})
    (d / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA", "r": 4, "lora_alpha": 8}))
    (d / "args.json").write_text(json.dumps({"tuner_type": "lora"}))
    torch.save({"state": {}, "param_groups": []}, d / "optimizer.pt")
    history = [{"step": i + 1, "loss": 1.0, "grad_norm": gn} for i, gn in enumerate(grad_norms or [])]
    (d / "trainer_state.json").write_text(json.dumps({"global_step": step, "log_history": history}))
    return d


def write_stub(path: Path, *, metadata: bool = True, pad_to: int = STUB_SIZE, pad_in_header: bool = False) -> Path:
    """A safetensors file with no tensors, padded to ~39 KB like the real incident: the header is
    ``{}`` or only ``__metadata__``; the padding sits in the header (spaces) or after it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = json.dumps({"__metadata__": {"format": "pt"}} if metadata else {}).encode()
    if pad_in_header:
        header += b" " * (pad_to - 8 - len(header))
        path.write_bytes(struct.pack("<Q", len(header)) + header)
    else:
        body = struct.pack("<Q", len(header)) + header
        path.write_bytes(body + b"\0" * (pad_to - len(body)))
    return path


def raw_safetensors(path: Path, header: dict | bytes, data: bytes = b"", *, length: int | None = None) -> Path:
    """A file built byte by byte, for the malformed cases the library would refuse to write."""
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(raw) if length is None else length
    path.write_bytes(struct.pack("<Q", n) + raw + data)
    return path


def write_sharded(d: Path, *, shards: int = 3, per_shard: int = 2, config: bool = True, seed: int = 0) -> Path:
    """HF sharded weights: model-0000X-of-0000Y.safetensors + model.safetensors.index.json."""
    from safetensors.numpy import save_file

    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    weight_map = {}
    total = 0
    for i in range(1, shards + 1):
        name = f"model-{i:05d}-of-{shards:05d}.safetensors"
        tensors = {f"model.layers.{(i - 1) * per_shard + j}.mlp.weight": rng.standard_normal((8, 8)).astype(np.float32)
                   for j in range(per_shard)}
        save_file(tensors, str(d / name), metadata={"format": "pt"})
        for t, arr in tensors.items():
            weight_map[t] = name
            total += arr.nbytes
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total},
                                                                "weight_map": weight_map}))
    if config:
        (d / "config.json").write_text(json.dumps({"model_type": "qwen3_moe", "hidden_size": 8}))
    return d


def write_megatron_iter(save_dir: Path, iteration: int, *, tracker: bool = True, seed: int = 0) -> Path:
    """A real torch_dist Megatron iteration dir: torch.distributed.checkpoint.save writes the
    .distcp shards and .metadata; Megatron's metadata.json and common.pt beside them."""
    import torch
    import torch.distributed.checkpoint as dcp

    d = save_dir / f"iter_{iteration:07d}"
    d.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(seed)
    state = {f"decoder.layers.{i}.mlp.linear_fc1.weight": torch.randn(16, 8, generator=g) for i in range(3)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # "torch.distributed is ... uninitialized": single process on purpose
        dcp.save(state, checkpoint_id=str(d), no_dist=True)
    (d / "metadata.json").write_text(json.dumps({"sharded_backend": "torch_dist", "sharded_backend_version": 1,
                                                 "common_backend": "torch"}))
    torch.save({"iteration": iteration, "args": None}, d / "common.pt")
    if tracker:
        (save_dir / "latest_checkpointed_iteration.txt").write_text(str(iteration))
    return d


def swift_common(ck: Path, n: int) -> Path:
    """What ms-swift's save_mcore_checkpoint writes with models=[] (``--save_safetensors true
    --no_save_optim true``): iter_N/common.pt, the tracker, and the args.json copied first."""
    import torch

    d = ck / f"iter_{n:07d}"
    d.mkdir(parents=True, exist_ok=True)
    torch.save({"iteration": n, "args": None}, d / "common.pt")
    (ck / "latest_checkpointed_iteration.txt").write_text(str(n))
    (ck / "args.json").write_text(json.dumps({"tuner_type": "lora", "model": "Qwen/Qwen3.5-397B-A17B"}))
    return ck


def merged_tensors(n: int, shard: int = 0) -> dict:
    rng = np.random.default_rng(n * 10 + shard)
    return {f"model.layers.{shard}.mlp.experts.{e}.down_proj.weight": rng.standard_normal((4, 8)).astype(np.float32)
            for e in range(4)}


def merged_started(d: Path, n: int, *, shards_done: int = 1, total: int = 2) -> Path:
    """checkpoint-N-merged/ part-way through ms-swift's merged save: the metadata copied from
    checkpoint-N/, then shards under mcore-bridge's temporary ``-of-?????`` names."""
    from safetensors.numpy import save_file

    d.mkdir(parents=True, exist_ok=True)
    swift_common(d, n)
    for i in range(shards_done):
        save_file(merged_tensors(n, i), str(d / f"model-{i + 1:05d}-of-?????.safetensors"), metadata={"format": "pt"})
    return d


def merged_finished(d: Path, n: int, *, total: int = 2) -> Path:
    """The rest of the merged save: the remaining shards, the rename to -of-0000T, the index,
    then config.json (StreamingSafetensorSaver.finalize, then ms-swift's save_weights)."""
    from safetensors.numpy import save_file

    for i in range(total):
        tmp = d / f"model-{i + 1:05d}-of-?????.safetensors"
        if not tmp.exists():
            save_file(merged_tensors(n, i), str(tmp), metadata={"format": "pt"})
    weight_map = {}
    for i in range(total):
        final = f"model-{i + 1:05d}-of-{total:05d}.safetensors"
        (d / f"model-{i + 1:05d}-of-?????.safetensors").rename(d / final)
        weight_map.update({k: final for k in merged_tensors(n, i)})
    (d / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 0},
                                                                "weight_map": weight_map}))
    (d / "config.json").write_text(json.dumps({"model_type": "qwen3_5_moe"}))
    return d


def merged_model(d: Path, n: int, *, stub: bool = False) -> Path:
    """checkpoint-N-merged/ complete: a full model (safetensors + config.json) and the copied metadata."""
    from safetensors.numpy import save_file

    d.mkdir(parents=True, exist_ok=True)
    if stub:
        write_stub(d / "model.safetensors")
    else:
        save_file({**merged_tensors(n, 0), **merged_tensors(n, 1)}, str(d / "model.safetensors"),
                  metadata={"format": "pt"})
    (d / "config.json").write_text(json.dumps({"model_type": "qwen3_5_moe"}))
    swift_common(d, n)
    return d


def dcp_index_bytes(n: int, files: int = 8) -> tuple[bytes, dict[str, int]]:
    """torch's own ``.metadata`` pickle for ``n`` bf16 expert tensors over ``files`` shards, built
    with torch's classes as ``FileSystemWriter.finish`` pickles them (torch/distributed/checkpoint/
    filesystem.py: ``pickle.dump(metadata, metadata_file)``), and each shard's length."""
    import pickle

    import torch
    from torch.distributed.checkpoint.filesystem import _StorageInfo
    from torch.distributed.checkpoint.metadata import (ChunkStorageMetadata, Metadata, MetadataIndex,
                                                       TensorProperties, TensorStorageMetadata)
    sdm, storage, ends = {}, {}, {}
    props = TensorProperties(dtype=torch.bfloat16)
    for i in range(n):
        fqn = f"decoder.layers.{i // 128}.mlp.experts.local_experts.{i % 128}.linear_fc1.weight"
        sdm[fqn] = TensorStorageMetadata(props, torch.Size([4, 4]),
                                         [ChunkStorageMetadata(torch.Size([0, 0]), torch.Size([4, 4]))])
        f = f"__{i % files}_0.distcp"
        storage[MetadataIndex(fqn, (0, 0))] = _StorageInfo(f, ends.get(f, 0), 32)
        ends[f] = ends.get(f, 0) + 32
    return pickle.dumps(Metadata(sdm, storage_data=storage)), ends


def write_megatron_legacy(save_dir: Path, iteration: int, *, ranks: int = 2, tracker: bool = True) -> Path:
    import torch

    d = save_dir / f"iter_{iteration:07d}"
    for r in range(ranks):
        (d / f"mp_rank_{r:02d}").mkdir(parents=True, exist_ok=True)
        torch.save({"model": {"w": torch.ones(2)}, "iteration": iteration}, d / f"mp_rank_{r:02d}" / "model_optim_rng.pt")
    if tracker:
        (save_dir / "latest_checkpointed_iteration.txt").write_text(str(iteration))
    return d


@pytest.fixture
def mk():
    """The builders, as one namespace."""
    return SimpleNamespace(lora_tensors=lora_tensors, adapter=write_adapter, demo=write_demo_checkpoint,
                           stub=write_stub, raw=raw_safetensors, sharded=write_sharded,
                           megatron=write_megatron_iter, megatron_legacy=write_megatron_legacy)


def delete_when_read(ck: Path):
    """Delete checkpoint ``ck`` the moment a verifier reads its adapter_config.json, as ms-swift's
    ``--save_total_limit`` rotation does (``shutil.rmtree(checkpoint, ignore_errors=True)``, 4.6.0
    swift/trainers/mixin.py:507, swift/megatron/trainers/base.py:918; transformers 5.19.0
    trainer_utils.py ``rotate_checkpoints``). The config becomes a named pipe: the verifier (which
    reads it after the weights' headers, before trainer_state.json) waits there until a thread has
    opened the other end; the thread then deletes the checkpoint and only then hands over the
    config, so the verifier goes on over a directory that is gone. Returns (thread, done), ``done``
    holding "deleted" once it did."""
    import errno
    import os
    import shutil
    import threading
    import time

    config = (ck / "adapter_config.json").read_bytes()
    (ck / "adapter_config.json").unlink()
    os.mkfifo(ck / "adapter_config.json")
    done: list[str] = []

    def rotate() -> None:
        deadline = time.monotonic() + 60
        while True:     # opening the write end succeeds once the verifier holds the read end
            try:
                fd = os.open(ck / "adapter_config.json", os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as exc:
                if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                    done.append(f"no reader: {exc}")
                    return
                time.sleep(0.01)
        shutil.rmtree(ck, ignore_errors=True)
        os.write(fd, config)
        os.close(fd)
        done.append("deleted")

    thread = threading.Thread(target=rotate, daemon=True)
    thread.start()
    return thread, done
