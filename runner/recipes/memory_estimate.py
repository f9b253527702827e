"""The static part of a GPU's memory before launch, from the model's ``config.json`` and the
recipe's command: base weights under expert / tensor / pipeline parallelism, LoRA parameters for
the rank and targets, gradients of the trainable parameters, optimizer state on the GPU or
offloaded. Activations are not guessed: the runner measures the envelope and shows measured -
static as "activations + workspace".

``estimate_memory(config, flags, world)`` is pure (plain dicts in, an :class:`Estimate` out, every row
with its arithmetic); ``load_config`` and ``for_recipe`` find and read the files.

What is counted, per decoder layer (Hugging Face config names; ``text_config`` of a VLM):

- attention: ``q`` (x2 with an output gate: Qwen3-Next / Qwen3.5), ``k``, ``v``, ``o`` from
  ``num_attention_heads``, ``num_key_value_heads``, ``head_dim``;
- linear attention (``layer_types`` / ``full_attention_interval``: Gated DeltaNet layers):
  ``in_proj_qkv``, ``in_proj_z``, ``in_proj_b``, ``in_proj_a``, ``out_proj``, the short conv;
- MLP: dense (``intermediate_size``), or MoE: ``num_experts`` (``num_local_experts``,
  ``n_routed_experts``) x 3 x hidden x ``moe_intermediate_size``, the router, the shared expert
  (``shared_expert_intermediate_size`` or ``n_shared_experts`` x ``moe_intermediate_size``); dense
  layers from ``mlp_only_layers``, ``decoder_sparse_step``, ``first_k_dense_replace``;
- embeddings, the LM head (unless tied), norms; a ``vision_config`` tower (frozen).

Not counted: multi-token-prediction layers (only loaded when the command asks for them), biases
other than attention's, buffers.

Parallel layout (Megatron-Core, what ``megatron sft`` runs): experts are split by EP x ETP,
everything else by TP and replicated across data-parallel ranks; PP splits the layers (the
heaviest stage is counted). The distributed optimizer shards its state over the data-parallel
ranks of each parameter (world / (TP x PP x CP) for dense, world / (EP x ETP x PP) for experts).
ms-swift 4.6's ``megatron sft`` defaults are the reference (``swift/megatron/arguments/
megatron_args.py``): tuner_type full, lora_rank 8, target_modules all-linear (every linear but
the output layer, experts included), freeze_vit true, use_distributed_optimizer true,
main_grads_dtype / main_params_dtype / exp_avg_dtype / exp_avg_sq_dtype fp32,
optimizer_offload_fraction 1.0 when optimizer_cpu_offload is on.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from moeconsole.runner.core.errors import InputError

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import RunRecipe

GIB = 1024 ** 3
DTYPE_BYTES = {"bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2, "float32": 4, "fp32": 4,
               "float": 4, "fp8": 1, "float8": 1}
# The linear modules LoRA can target, as parts of a layer; the names recipes use for them
# (Megatron's fused modules and Hugging Face's separate ones) and the parts each covers.
TARGET_PARTS = {
    "linear_qkv": ("q", "k", "v"), "qkv_proj": ("q", "k", "v"), "query_key_value": ("q", "k", "v"),
    "c_attn": ("q", "k", "v"), "q_proj": ("q",), "k_proj": ("k",), "v_proj": ("v",),
    "linear_proj": ("o",), "o_proj": ("o",), "dense": ("o",),
    "in_proj": ("lin_qkv", "lin_z", "lin_b", "lin_a"), "in_proj_qkv": ("lin_qkv",), "in_proj_z": ("lin_z",),
    "in_proj_b": ("lin_b",), "in_proj_a": ("lin_a",), "in_proj_qkvz": ("lin_qkv", "lin_z"),
    "in_proj_ba": ("lin_b", "lin_a"), "out_proj": ("lin_out",),
    "linear_fc1": ("gate", "up"), "gate_up_proj": ("gate", "up"), "gate_proj": ("gate",), "w1": ("gate",),
    "up_proj": ("up",), "w3": ("up",), "linear_fc2": ("down",), "down_proj": ("down",), "w2": ("down",),
}
ALL_PARTS = ("q", "k", "v", "o", "lin_qkv", "lin_z", "lin_b", "lin_a", "lin_out", "gate", "up", "down")


def _get(cfg: Mapping[str, Any], *names: str, default: Any = None) -> Any:
    for n in names:
        if cfg.get(n) is not None:
            return cfg[n]
    return default


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The language model's part of a config (a VLM nests it under ``text_config``)."""
    tc = config.get("text_config")
    return tc if isinstance(tc, Mapping) else config


@dataclass(frozen=True)
class ModelShape:
    """Parameter counts of one model, by where they live (counts, not bytes)."""

    model_type: str
    layers: int
    dense_per_layer: list[int]        # attention + norms + dense MLP / shared expert / router, per layer
    expert_per_layer: list[int]       # routed experts, per layer
    embedding: int
    lm_head: int
    final_norm: int
    vision: int
    experts: int
    active_experts: int | None
    # the linear modules of each layer as (in, ((part, out), ...), experts or 0): a fused module
    # (Megatron's linear_qkv, linear_fc1, in_proj) is one entry with several parts
    linears: list[list[tuple[int, tuple[tuple[str, int], ...], int]]] = field(repr=False)

    @property
    def total(self) -> int:
        return sum(self.dense_per_layer) + sum(self.expert_per_layer) + self.embedding + self.lm_head \
            + self.final_norm + self.vision

    @property
    def active(self) -> int | None:
        """Parameters one token passes through (routed experts at top-k), the model name's "A17B"."""
        if not self.experts or not self.active_experts:
            return None
        routed = sum(self.expert_per_layer) * self.active_experts // self.experts
        return sum(self.dense_per_layer) + routed + self.embedding + self.lm_head + self.final_norm


def model_shape(config: Mapping[str, Any]) -> ModelShape:
    """Count the parameters of a decoder LM (see the module docstring); InputError names a
    missing field."""
    c = text_config(config)
    mt = str(c.get("model_type") or config.get("model_type") or "unknown")

    def need(*names: str) -> int:
        v = _get(c, *names)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0:
            raise InputError(f"config.json: {names[0]} is missing or not a positive number (model_type {mt})")
        return int(v)

    h, n_layers, vocab = need("hidden_size", "d_model", "n_embd"), need("num_hidden_layers", "n_layer", "num_layers"), \
        need("vocab_size")
    nh = need("num_attention_heads", "n_head")
    nkv = int(_get(c, "num_key_value_heads", "num_query_groups", default=nh))
    hd = int(_get(c, "head_dim", "kv_channels", default=h // nh))
    gate = bool(_get(c, "attn_output_gate", default=mt.startswith(("qwen3_next", "qwen3_5"))))
    bias = bool(_get(c, "attention_bias", "qkv_bias", default=False))
    qk_norm = mt.startswith(("qwen3", "olmo2"))
    experts = int(_get(c, "num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts", default=0) or 0)
    topk = _get(c, "num_experts_per_tok", "moe_router_topk", "top_k", default=None)
    inter = int(_get(c, "intermediate_size", "ffn_hidden_size", default=0) or 0)
    moe_inter = int(_get(c, "moe_intermediate_size", "moe_ffn_hidden_size", default=inter) or 0)
    shared = int(_get(c, "shared_expert_intermediate_size", default=0) or 0)
    if not shared and _get(c, "n_shared_experts") and moe_inter:
        shared = int(c["n_shared_experts"]) * moe_inter
    types = c.get("layer_types")
    if not isinstance(types, list) or len(types) != n_layers:
        interval = _get(c, "full_attention_interval")
        if interval and _get(c, "linear_num_value_heads"):
            types = ["full_attention" if (i + 1) % int(interval) == 0 else "linear_attention" for i in range(n_layers)]
        else:
            types = ["full_attention"] * n_layers
    dense_layers = set(int(i) for i in (c.get("mlp_only_layers") or []))
    step = int(_get(c, "decoder_sparse_step", default=1) or 1)
    first_dense = int(_get(c, "first_k_dense_replace", default=0) or 0)
    dense_per, expert_per, linears = [], [], []
    for i in range(n_layers):
        mods: list[tuple[int, tuple[tuple[str, int], ...], int]] = []
        count = 2 * h                                               # input and post-attention norms
        if types[i] == "linear_attention":
            kd = need("linear_num_key_heads") * need("linear_key_head_dim")
            nv = need("linear_num_value_heads")
            vd = nv * need("linear_value_head_dim")
            kernel = int(_get(c, "linear_conv_kernel_dim", default=4))
            mods += [(h, (("lin_qkv", 2 * kd + vd), ("lin_z", vd), ("lin_b", nv), ("lin_a", nv)), 0),
                     (vd, (("lin_out", h),), 0)]
            count += (2 * kd + vd) * kernel + 2 * nv + int(need("linear_value_head_dim"))
        else:
            q_out = nh * hd * (2 if gate else 1)
            mods += [(h, (("q", q_out), ("k", nkv * hd), ("v", nkv * hd)), 0), (nh * hd, (("o", h),), 0)]
            if bias:
                count += q_out + 2 * nkv * hd
            if qk_norm:
                count += 2 * hd
        moe = experts > 0 and i not in dense_layers and i >= first_dense and (i + 1) % step == 0
        exp = 0
        if moe:
            mods += [(h, (("gate", moe_inter), ("up", moe_inter)), experts), (moe_inter, (("down", h),), experts)]
            exp = experts * 3 * h * moe_inter
            count += h * experts                                    # router
            if shared:
                mods += [(h, (("gate", shared), ("up", shared)), 0), (shared, (("down", h),), 0)]
                count += h                                          # the shared expert's gate
        elif inter:
            mods += [(h, (("gate", inter), ("up", inter)), 0), (inter, (("down", h),), 0)]
        count += sum(fan_in * sum(o for _, o in parts) for fan_in, parts, per_expert in mods if per_expert == 0)
        dense_per.append(count)
        expert_per.append(exp)
        linears.append(mods)
    tied = bool(_get(c, "tie_word_embeddings", default=config.get("tie_word_embeddings", False)))
    return ModelShape(model_type=mt, layers=n_layers, dense_per_layer=dense_per, expert_per_layer=expert_per,
                      embedding=vocab * h, lm_head=0 if tied else vocab * h, final_norm=h,
                      vision=_vision_params(config.get("vision_config")), experts=experts,
                      active_experts=int(topk) if topk else None, linears=linears)


def _vision_params(v: Any) -> int:
    """A ViT tower's parameters (Qwen-VL style: blocks, patch embedding, positions, merger)."""
    if not isinstance(v, Mapping):
        return 0
    d = int(v.get("hidden_size") or v.get("embed_dim") or 0)
    depth = int(v.get("depth") or v.get("num_hidden_layers") or 0)
    if not d or not depth:
        return 0
    i = int(v.get("intermediate_size") or 4 * d)
    block = 3 * d * d + 3 * d + d * d + d + d * i + i + i * d + d + 4 * d
    p, tp, ch = int(v.get("patch_size") or 14), int(v.get("temporal_patch_size") or 1), int(v.get("in_channels") or 3)
    merge = int(v.get("spatial_merge_size") or 1)
    out = int(v.get("out_hidden_size") or d)
    merged = d * merge * merge
    merger = 2 * d + merged * merged + merged + merged * out + out
    pos = int(v.get("num_position_embeddings") or 0) * d
    return depth * block + ch * tp * p * p * d + d + pos + merger


# --------------------------------------------------------------------------- the recipe's side

def _flag_value(flags: Mapping[str, str], name: str, default: Any = None) -> Any:
    for key in (name, name.replace("_", "-")):
        if key in flags:
            return flags[key]
    return default


def _flag_int(flags: Mapping[str, str], name: str, default: int) -> int:
    raw = _flag_value(flags, name)
    try:
        return int(raw) if raw is not None else default
    except ValueError:
        raise InputError(f"--{name} {raw!r}: expected a whole number") from None


def _flag_float(flags: Mapping[str, str], name: str, default: float) -> float:
    raw = _flag_value(flags, name)
    try:
        return float(raw) if raw is not None else default
    except ValueError:
        raise InputError(f"--{name} {raw!r}: expected a number") from None


def _bool(flags: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _flag_value(flags, name)
    if raw is None:
        return default
    return str(raw).lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Layout:
    """How the command lays the model out and trains it (the flags' values, defaults filled)."""

    world: int
    tp: int
    pp: int
    ep: int
    etp: int
    cp: int
    dtype_bytes: int
    tuner: str                    # lora | full
    lora_rank: int
    targets: tuple[str, ...]      # the parts (ALL_PARTS) LoRA targets
    target_names: tuple[str, ...]  # as the command names them
    fused: bool                   # Megatron's fused modules (one LoRA pair per fused module)
    unknown_targets: tuple[str, ...]
    distributed_optimizer: bool
    offload_fraction: float       # of the optimizer state kept on the CPU
    grad_bytes: int
    master_bytes: int
    moment_bytes: int
    lora_bytes: int               # one LoRA parameter (the model's dtype on Megatron, fp32 under peft)

    @property
    def dp(self) -> int:
        return max(1, self.world // max(1, self.tp * self.pp * self.cp))

    @property
    def edp(self) -> int:
        return max(1, self.world // max(1, self.ep * self.etp * self.pp))


def parallel_layout(flags: Mapping[str, str], world: int | None, config: Mapping[str, Any] | None = None, *,
           megatron: bool = True) -> Layout:
    """The layout from ``megatron sft`` / Megatron-LM flags (dashes or underscores). ``megatron``
    False: a Hugging Face / peft run (separate q/k/v and gate/up modules; experts fused into 3-D
    parameters, as transformers 5 builds MoE blocks, are no linear for all-linear)."""
    tp, pp = _flag_int(flags, "tensor_model_parallel_size", 1), _flag_int(flags, "pipeline_model_parallel_size", 1)
    ep, cp = _flag_int(flags, "expert_model_parallel_size", 1), _flag_int(flags, "context_parallel_size", 1)
    etp = _flag_int(flags, "expert_tensor_parallel_size", 1)
    w = world or max(tp * pp * cp, ep * etp * pp)
    dtype = str(_flag_value(flags, "torch_dtype") or (text_config(config or {}).get("torch_dtype"))
                or (config or {}).get("torch_dtype") or (config or {}).get("dtype") or "bfloat16")
    if _bool(flags, "bf16", False):
        dtype = "bfloat16"
    nbytes = DTYPE_BYTES.get(dtype.replace("torch.", "").lower(), 2)
    names = str(_flag_value(flags, "target_modules") or _flag_value(flags, "lora_target_modules") or "all-linear").split()
    parts: list[str] = []
    unknown: list[str] = []
    for name in names:
        if name == "all-linear":
            parts += list(ALL_PARTS)
        elif name in TARGET_PARTS:
            parts += list(TARGET_PARTS[name])
        else:
            unknown.append(name)
    offload = _flag_float(flags, "optimizer_offload_fraction", 1.0) if _bool(flags, "optimizer_cpu_offload", False) else 0.0
    dt = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
    if megatron:
        tuner = str(_flag_value(flags, "tuner_type") or _flag_value(flags, "train_type") or "full").lower()
        grad, master = dt.get(str(_flag_value(flags, "main_grads_dtype", "fp32")), 4), \
            dt.get(str(_flag_value(flags, "main_params_dtype", "fp32")), 4)
        moments = dt.get(str(_flag_value(flags, "exp_avg_dtype", "fp32")), 4) + dt.get(str(_flag_value(flags, "exp_avg_sq_dtype",
                                                                                                "fp32")), 4)
        distributed = _bool(flags, "use_distributed_optimizer", True)
    else:
        # Hugging Face Trainer + peft: adapters in fp32 (peft's autocast_adapter_dtype), their
        # gradients fp32, AdamW's two fp32 moments and no separate master copy; DDP keeps the
        # optimizer whole on every GPU (DeepSpeed ZeRO would shard it: not modelled).
        tuner = str(_flag_value(flags, "tuner_type") or _flag_value(flags, "train_type") or "lora").lower()
        grad, master, moments, distributed = 4, 0, 8, False
    tuner = "lora" if tuner.startswith("lora") else tuner
    return Layout(world=w, tp=tp, pp=pp, ep=ep, etp=etp, cp=cp, dtype_bytes=nbytes, tuner=tuner,
                  lora_rank=_flag_int(flags, "lora_rank", 8), targets=tuple(dict.fromkeys(parts)), target_names=tuple(names),
                  fused=megatron, unknown_targets=tuple(unknown), distributed_optimizer=distributed,
                  offload_fraction=min(1.0, max(0.0, offload)), grad_bytes=grad, master_bytes=master,
                  moment_bytes=moments, lora_bytes=nbytes if megatron else 4)


def is_megatron(argv: list[str], flags: Mapping[str, str]) -> bool:
    """ms-swift's ``megatron sft`` (or ``swift ... --use_megatron``), or Megatron-LM itself."""
    heads = [os.path.basename(a) for a in argv[:3]]
    return "megatron" in heads or _bool(flags, "use_megatron", False) or any(
        a.endswith("pretrain_gpt.py") for a in argv) or any(k.startswith("tensor-model-parallel") for k in flags)


# ------------------------------------------------------------------------------ the estimate

@dataclass(frozen=True)
class Row:
    part: str
    params: int                # on one GPU (the heaviest)
    bytes_per_param: float
    gib: float
    arithmetic: str


@dataclass(frozen=True)
class Estimate:
    model_type: str
    total_params: int
    active_params: int | None
    layout: Layout
    rows: tuple[Row, ...]
    notes: tuple[str, ...]

    @property
    def per_gpu_gib(self) -> float:
        return sum(r.gib for r in self.rows)

    def to_dict(self) -> dict:
        lo = self.layout
        return {"model_type": self.model_type, "total_params": self.total_params, "active_params": self.active_params,
                "layout": {"world": lo.world, "tp": lo.tp, "pp": lo.pp, "ep": lo.ep, "etp": lo.etp, "cp": lo.cp,
                           "dp": lo.dp, "expert_dp": lo.edp, "dtype_bytes": lo.dtype_bytes, "tuner": lo.tuner,
                           "lora_rank": lo.lora_rank, "targets": list(lo.targets),
                           "distributed_optimizer": lo.distributed_optimizer,
                           "optimizer_offload_fraction": lo.offload_fraction},
                "rows": [{"part": r.part, "params": r.params, "bytes_per_param": r.bytes_per_param, "gib": r.gib,
                          "arithmetic": r.arithmetic} for r in self.rows],
                "per_gpu_gib": self.per_gpu_gib, "notes": list(self.notes)}


def _b(n: float) -> str:
    """A parameter count for the arithmetic column: 46.4B, 91.2M."""
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.2f}{unit}"
    return f"{n:.0f}"


def _layer_lora_params(mods: list[tuple[int, tuple[tuple[str, int], ...], int]], lo: Layout) -> tuple[int, int]:
    """LoRA parameters of one layer, (dense, experts): r x (in + out) per targeted module. A fused
    module (Megatron) carries one pair over all its parts; separate modules (Hugging Face) one
    pair each; experts fused into 3-D parameters are not targeted without Megatron."""
    r, dense, experts = lo.lora_rank, 0, 0
    for fan_in, parts, per_expert in mods:
        hit = [out for part, out in parts if part in lo.targets]
        if not hit:
            continue
        if per_expert and not lo.fused:
            continue
        n = r * (fan_in + sum(out for _, out in parts)) if lo.fused else sum(r * (fan_in + out) for out in hit)
        if per_expert:
            experts += per_expert * n
        else:
            dense += n
    return dense, experts


def lora_params_total(config: Mapping[str, Any], flags: Mapping[str, str], *, megatron: bool = True) -> int:
    """Every LoRA parameter the model trains (all layers, all experts, not split over GPUs): the
    count a full-state save and the optimizer hold. InputError names a config field it lacks."""
    shape = model_shape(config)
    lo = parallel_layout(flags, None, config, megatron=megatron)
    return sum(d + e for d, e in (_layer_lora_params(mods, lo) for mods in shape.linears))


def estimate_memory(config: Mapping[str, Any], flags: Mapping[str, str], world: int | None = None, *,
             megatron: bool = True) -> Estimate:
    """The static memory of the heaviest GPU (see the module docstring)."""
    shape = model_shape(config)
    lo = parallel_layout(flags, world, config, megatron=megatron)
    notes: list[str] = []
    L, pp = shape.layers, max(1, lo.pp)
    per_stage = math.ceil(L / pp)
    # the heaviest stage: its layers' share, plus the embedding (first) or the head (last)
    dense_layers = sum(sorted(shape.dense_per_layer, reverse=True)[:per_stage])
    expert_layers = sum(sorted(shape.expert_per_layer, reverse=True)[:per_stage])
    ends = shape.embedding + shape.lm_head if pp == 1 else max(shape.embedding + shape.vision, shape.lm_head)
    vision = shape.vision if pp == 1 else 0
    dense = (dense_layers + ends + shape.final_norm) / lo.tp
    experts_here = expert_layers / (lo.ep * lo.etp)
    base = dense + experts_here + vision
    rows = [Row("base weights", int(base), lo.dtype_bytes, base * lo.dtype_bytes / GIB,
                f"({_b(dense_layers)} layers + {_b(ends)} embeddings/head) / TP {lo.tp} + {_b(expert_layers)} experts / "
                f"(EP {lo.ep} x ETP {lo.etp})" + (f" + {_b(vision)} vision" if vision else "")
                + (f"; {per_stage} of {L} layers per stage (PP {pp})" if pp > 1 else "")
                + f" = {_b(base)} x {lo.dtype_bytes} B")]
    if lo.tuner == "lora":
        r = lo.lora_rank
        per_layer = [_layer_lora_params(mods, lo) for mods in shape.linears]
        heaviest = sorted(per_layer, key=lambda d_e: -(d_e[0] + d_e[1]))[:per_stage]
        lora_dense, lora_exp = sum(d for d, _ in heaviest), sum(e for _, e in heaviest)
        trainable_dense, trainable_exp = lora_dense / lo.tp, lora_exp / (lo.ep * lo.etp)
        trainable = trainable_dense + trainable_exp
        rows.append(Row(f"LoRA r={r} {' '.join(lo.target_names)}", int(trainable), lo.lora_bytes,
                        trainable * lo.lora_bytes / GIB,
                        f"r x (in + out) per target: {_b(lora_dense)} / TP {lo.tp} + {_b(lora_exp)} experts / "
                        f"(EP {lo.ep} x ETP {lo.etp}) = {_b(trainable)} x {lo.lora_bytes} B"))
        if lo.unknown_targets:
            notes.append(f"LoRA targets not counted (unknown module names): {', '.join(lo.unknown_targets)}")
    else:
        trainable_dense, trainable_exp, trainable = dense, experts_here, base
        if vision:
            notes.append("full fine-tuning: the vision tower counted as trainable too (ms-swift's freeze_vit "
                         "default keeps it frozen)")
    rows.append(Row("gradients (main_grad buffer)", int(trainable), lo.grad_bytes, trainable * lo.grad_bytes / GIB,
                    f"{_b(trainable)} trainable x {lo.grad_bytes} B"))
    shard_dense = lo.dp if lo.distributed_optimizer else 1
    shard_exp = lo.edp if lo.distributed_optimizer else 1
    state_bytes = lo.master_bytes + lo.moment_bytes
    sharded = trainable_dense / shard_dense + trainable_exp / shard_exp
    on_gpu = 1.0 - lo.offload_fraction
    where = "on the GPU" if on_gpu == 1.0 else ("offloaded to the CPU" if on_gpu == 0.0
                                                else f"{on_gpu:.0%} on the GPU")
    rows.append(Row(f"optimizer state ({where})", int(sharded * on_gpu), state_bytes,
                    sharded * state_bytes * on_gpu / GIB,
                    f"({_b(trainable_dense)} / DP {shard_dense} + {_b(trainable_exp)} / expert-DP {shard_exp}) x "
                    f"{state_bytes} B ({'fp32 master + ' if lo.master_bytes else ''}2 moments) x {on_gpu:g} on GPU"))
    notes.append("activations and workspace (CUDA context, NCCL buffers, kernels' scratch) are measured, "
                 "not estimated: after the first steps the console shows measured - static")
    return Estimate(shape.model_type, shape.total, shape.active, lo, tuple(rows), tuple(notes))


def render_estimate(est: Estimate) -> list[str]:
    """The table ``moeconsole lint`` prints."""
    lo = est.layout
    active = f", {_b(est.active_params)} active" if est.active_params else ""
    head = [f"static memory per GPU ({est.model_type}: {_b(est.total_params)} parameters{active}; "
            f"{lo.world} GPUs, TP {lo.tp} PP {lo.pp} EP {lo.ep} ETP {lo.etp} CP {lo.cp}, DP {lo.dp}, "
            f"expert-DP {lo.edp})"]
    w = max(len(r.part) for r in est.rows)
    lines = [f"  {r.part:<{w}}  {r.gib:8.2f} GiB  {r.arithmetic}" for r in est.rows]
    lines.append(f"  {'total static':<{w}}  {est.per_gpu_gib:8.2f} GiB")
    return head + lines + [f"  note: {n}" for n in est.notes]


# ----------------------------------------------------------------------------------- files

def load_config(path: str | os.PathLike) -> dict:
    """A model's config.json (a file, or the directory holding it); InputError says why not."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    try:
        raw = json.loads(p.read_text())
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot read: {exc}") from None
    except ValueError as exc:
        raise InputError(f"{p}: not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise InputError(f"{p}: expected a JSON object")
    return raw


def declared_config(recipe: "RunRecipe") -> str | None:
    """The recipe's ``memory.model_config`` (relative to the recipe's directory), or None."""
    rdir = recipe.launch.recipe_dir
    given = recipe.memory.model_config
    if not given:
        return None
    p = str(given).replace("{recipe_dir}", rdir)
    return p if os.path.isabs(p) or not rdir else os.path.join(rdir, p)


def config_path(recipe: "RunRecipe", flags: Mapping[str, str]) -> str | None:
    """Where the model's config.json is: the recipe's ``memory.model_config``, else the command's
    ``--model`` as a local directory or a download in the Hugging Face / ModelScope cache."""
    given = declared_config(recipe)
    if given:
        return given
    from moeconsole.runner.recipes.swift.sizes import find_model_config
    found = find_model_config(str(_flag_value(flags, "model") or _flag_value(flags, "load") or "") or None)
    return str(found.parent) if found is not None else None


def on_cpu(argv: list[str], env: Mapping[str, str]) -> bool:
    """Does transformers' Trainer run this command on CPU whatever GPUs there are? ``--use_cpu``
    (true, or bare) or ``ACCELERATE_USE_CPU`` in its environment: transformers 5.19 training_args.py
    l.1282 (the field), l.1844 (``use_cpu or ACCELERATE_USE_CPU``: accelerate's ``cpu=True``) and l.1886
    (``torch.device("cpu")``); ms-swift passes its own ``--use_cpu`` on to it (the field is
    TrainingArguments'). The last ``--use_cpu`` wins, as argparse takes it."""
    from moeconsole.runner.recipes.swift import flags as swift_flags
    at = [i for i, a in enumerate(argv) if a == "--use_cpu" or a.startswith("--use_cpu=")]
    if at and swift_flags.truthy(swift_flags.values_of(argv, at[-1])):
        return True
    return swift_flags.truthy([env["ACCELERATE_USE_CPU"]]) if env.get("ACCELERATE_USE_CPU") else False


def gpus_of_command(recipe: "RunRecipe", log_found_no_gpu: bool = False, no_gpu_here: bool = False) -> int | None:
    """GPUs the command uses: 0 for a run on CPU (``on_cpu``), else the processes torchrun starts
    for it (``cmdline.world_size``, the one rule: which flags torchrun reads is its to say), else
    gpus.devices; None when the recipe does not say.

    ``log_found_no_gpu``: the attempt's log says ms-swift's default device map found no GPU
    (``ingest.formats.swift_loads_on_cpu``): 0 as well, unless the command gives its own ``--device_map``
    (then the line says what the user asked for, not what torch found, and the Trainer still moves the
    model to its own device: transformers trainer.py ``place_model_on_device``). Every spelling argparse
    takes counts (``--device-map`` too, hf_argparser.py l.151-153, and an abbreviation): the flag as
    ms-swift's parser resolves it (``swift.lint.parse_command``, ``swift.flags.resolve_flags``).

    ``no_gpu_here``: the machine has no GPU at all (``telemetry.gpu.no_gpu_here``): 0, whatever
    torchrun starts (its processes train on CPU)."""
    if no_gpu_here:
        return 0
    from moeconsole.runner.recipes import cmdline
    from moeconsole.runner.recipes.swift.lint import swift_launch_env, parse_command, swift_launch
    env = swift_launch_env(recipe)
    argv = swift_launch(recipe)[0]
    if on_cpu(argv, env):
        return 0
    if log_found_no_gpu:
        cmd = parse_command(recipe)
        given = "device_map" in cmd.values if cmd is not None else \
            any(a.startswith("--") and cmdline.canon(a) == "device_map" for a in argv)
        if not given:
            return 0
    world = cmdline.world_size(env, list(recipe.command))
    if world is not None:
        return world
    devices = recipe.gpus.devices
    return len(devices) if devices else None
