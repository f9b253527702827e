"""A genuine tiny Mixture-of-Experts causal LM with LoRA adapters, small enough for one CPU core.

Byte-level tokens (vocab 256). Each layer: causal self-attention, then a sparse MoE feed-forward
block (``experts`` routed SwiGLU experts, top-``top_k`` routing with renormalised weights, plus
one always-on shared expert). Every linear layer except the router is a ``LoRALinear``: its base
weight is frozen and drawn from the seed (a stand-in for pretrained weights), and only the
low-rank ``lora_A``/``lora_B`` pair is trained, as in a peft LoRA fine-tune.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

VOCAB_SIZE = 256
LORA_PREFIX = "base_model.model."
TARGET_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"]

# A hook that may rewrite router logits (used by the ``recompute`` fault to make the
# recomputation route differently from the original forward, as non-deterministic routing does).
RouterHook = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class ModelConfig:
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    expert_hidden: int = 128
    experts: int = 8
    top_k: int = 2
    shared_expert_hidden: int = 128
    max_seq_len: int = 64
    lora_rank: int = 8
    lora_alpha: int = 16
    vocab_size: int = VOCAB_SIZE

    def as_dict(self) -> dict:
        return asdict(self)


class LoRALinear(nn.Module):
    """y = x W^T + (alpha/r) * x A^T B^T with W frozen; B starts at zero so step 0 is the base model."""

    def __init__(self, in_features: int, out_features: int, rank: int, alpha: int,
                 gen: torch.Generator, base_std: float | None = None) -> None:
        super().__init__()
        std = base_std if base_std is not None else 1.0 / math.sqrt(in_features)
        self.weight = nn.Parameter(torch.randn(out_features, in_features, generator=gen) * std,
                                   requires_grad=False)
        bound = 1.0 / math.sqrt(in_features)  # peft's kaiming_uniform(a=sqrt(5)) bound
        self.lora_A = nn.Parameter((torch.rand(rank, in_features, generator=gen) * 2 - 1) * bound)
        self.lora_B = nn.Parameter(torch.zeros(out_features, rank))
        self.scaling = alpha / rank

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight) + F.linear(F.linear(x, self.lora_A), self.lora_B) * self.scaling


def rms_norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


class Attention(nn.Module):
    def __init__(self, cfg: ModelConfig, gen: torch.Generator) -> None:
        super().__init__()
        d, r, a = cfg.hidden_size, cfg.lora_rank, cfg.lora_alpha
        self.num_heads = cfg.num_heads
        self.q_proj = LoRALinear(d, d, r, a, gen)
        self.k_proj = LoRALinear(d, d, r, a, gen)
        self.v_proj = LoRALinear(d, d, r, a, gen)
        self.o_proj = LoRALinear(d, d, r, a, gen)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.num_heads

        def heads(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, h, d // h).transpose(1, 2)

        out = F.scaled_dot_product_attention(heads(self.q_proj(x)), heads(self.k_proj(x)),
                                             heads(self.v_proj(x)), is_causal=True)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, d))


class Expert(nn.Module):
    """SwiGLU feed-forward: down(silu(gate(x)) * up(x))."""

    def __init__(self, d: int, hidden: int, cfg: ModelConfig, gen: torch.Generator) -> None:
        super().__init__()
        r, a = cfg.lora_rank, cfg.lora_alpha
        self.gate_proj = LoRALinear(d, hidden, r, a, gen)
        self.up_proj = LoRALinear(d, hidden, r, a, gen)
        self.down_proj = LoRALinear(hidden, d, r, a, gen)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class SparseMoE(nn.Module):
    """Top-k routed experts plus one shared expert; the router itself stays frozen."""

    def __init__(self, cfg: ModelConfig, gen: torch.Generator) -> None:
        super().__init__()
        d = cfg.hidden_size
        self.top_k = cfg.top_k
        self.router = nn.Parameter(torch.randn(cfg.experts, d, generator=gen) / math.sqrt(d),
                                   requires_grad=False)
        self.experts = nn.ModuleList(Expert(d, cfg.expert_hidden, cfg, gen) for _ in range(cfg.experts))
        self.shared_expert = Expert(d, cfg.shared_expert_hidden, cfg, gen)
        self.router_hook: RouterHook | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        logits = F.linear(flat, self.router)
        if self.router_hook is not None:
            logits = self.router_hook(logits)
        weights, chosen = logits.softmax(-1).topk(self.top_k, dim=-1)
        weights = weights / weights.sum(-1, keepdim=True)
        out = self.shared_expert(flat)
        for e, expert in enumerate(self.experts):
            token, slot = (chosen == e).nonzero(as_tuple=True)
            if token.numel() == 0:
                continue
            routed = expert(flat.index_select(0, token)) * weights[token, slot].unsqueeze(-1)
            out = out.index_add(0, token, routed)
        return out.view(shape)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, gen: torch.Generator) -> None:
        super().__init__()
        self.attn = Attention(cfg, gen)
        self.mlp = SparseMoE(cfg, gen)
        self.checkpoint_mlp = False  # activation checkpointing of the MoE block (recompute fault)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(rms_norm(x))
        if self.checkpoint_mlp:
            from torch.utils.checkpoint import checkpoint  # imports torch._dynamo: only when used
            return x + checkpoint(self.mlp, rms_norm(x), use_reentrant=False)
        return x + self.mlp(rms_norm(x))


def sinusoidal_positions(length: int, dim: int) -> torch.Tensor:
    pos = torch.arange(length, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(length, dim)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)
    return table


class TinyMoELM(nn.Module):
    def __init__(self, cfg: ModelConfig, seed: int) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.cfg = cfg
        self.embed = nn.Parameter(torch.randn(cfg.vocab_size, cfg.hidden_size, generator=gen),
                                  requires_grad=False)
        self.register_buffer("positions", sinusoidal_positions(cfg.max_seq_len, cfg.hidden_size),
                             persistent=False)
        self.layers = nn.ModuleList(Block(cfg, gen) for _ in range(cfg.num_layers))
        # A near-zero base head: the untrained model predicts ~uniform bytes (loss ~ ln 256).
        self.lm_head = LoRALinear(cfg.hidden_size, cfg.vocab_size, cfg.lora_rank, cfg.lora_alpha,
                                  gen, base_std=0.02)

    def block(self, i: int) -> Block:
        """Layer ``i`` as its own type (``nn.ModuleList`` indexing is typed loosely)."""
        layer = self.layers[i]
        assert isinstance(layer, Block)
        return layer

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = self.get_buffer("positions")
        x = self.embed[tokens] + positions[: tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(rms_norm(x))


def lora_modules(model: nn.Module) -> Iterator[tuple[str, LoRALinear]]:
    for name, module in model.named_modules():
        if isinstance(module, LoRALinear):
            yield name, module


def lora_parameters(model: nn.Module) -> list[nn.Parameter]:
    """The trainable parameters, in a fixed order (the optimizer state depends on it)."""
    params: list[nn.Parameter] = []
    for _, module in lora_modules(model):
        params += [module.lora_A, module.lora_B]
    return params


def lora_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """peft-style adapter tensors: ``base_model.model.<module>.lora_{A,B}.weight``."""
    out: dict[str, torch.Tensor] = {}
    for name, module in lora_modules(model):
        out[f"{LORA_PREFIX}{name}.lora_A.weight"] = module.lora_A.detach().clone().contiguous()
        out[f"{LORA_PREFIX}{name}.lora_B.weight"] = module.lora_B.detach().clone().contiguous()
    return out


def load_lora_state_dict(model: nn.Module, tensors: dict[str, torch.Tensor]) -> None:
    """Copy adapter tensors in; raise ValueError naming the first missing or mis-shaped one."""
    expected = lora_state_dict(model)
    missing = sorted(set(expected) - set(tensors))
    if missing:
        raise ValueError(f"{len(missing)} adapter tensors missing, e.g. {missing[0]}")
    unexpected = sorted(set(tensors) - set(expected))
    if unexpected:
        raise ValueError(f"unexpected adapter tensor {unexpected[0]}")
    for key, value in tensors.items():
        if value.shape != expected[key].shape:
            raise ValueError(f"{key} has shape {tuple(value.shape)}, expected {tuple(expected[key].shape)}")
    with torch.no_grad():
        for name, module in lora_modules(model):
            module.lora_A.copy_(tensors[f"{LORA_PREFIX}{name}.lora_A.weight"])
            module.lora_B.copy_(tensors[f"{LORA_PREFIX}{name}.lora_B.weight"])


def parameter_counts(model: nn.Module) -> tuple[int, int]:
    """(trainable, total) element counts, as peft's print_trainable_parameters reports them."""
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return trainable, total
