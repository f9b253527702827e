"""Multi-process data parallelism for the demo under torchrun: gloo on CPU, batch sharded by rank,
LoRA gradients and step metrics all-reduced so every rank takes the same optimizer step."""
from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch is imported only once arguments are known to be good
    import torch


@dataclass(frozen=True)
class World:
    rank: int = 0
    local_rank: int = 0
    size: int = 1

    @property
    def distributed(self) -> bool:
        return self.size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> "World":
        """torchrun's RANK / LOCAL_RANK / WORLD_SIZE; ValueError when garbled."""
        env = environ if environ is not None else os.environ
        try:
            size = int(env.get("WORLD_SIZE", "1"))
            rank = int(env.get("RANK", "0"))
            local_rank = int(env.get("LOCAL_RANK", str(rank)))
        except ValueError:
            raise ValueError("WORLD_SIZE, RANK and LOCAL_RANK must be integers") from None
        if size < 1 or not 0 <= rank < size:
            raise ValueError(f"RANK {rank} is outside WORLD_SIZE {size}")
        return cls(rank=rank, local_rank=local_rank, size=size)


def init(world: World, timeout_s: float = 1800.0) -> None:
    """Join the gloo group via torchrun's MASTER_ADDR/MASTER_PORT (env://)."""
    import torch.distributed as dist

    dist.init_process_group("gloo", rank=world.rank, world_size=world.size,
                            timeout=timedelta(seconds=timeout_s))


def shutdown(world: World) -> None:
    if world.distributed:
        import torch.distributed as dist

        if dist.is_initialized():
            dist.destroy_process_group()


def average_gradients(params: "list[torch.nn.Parameter]", world: World) -> None:
    """One flat all-reduce of every LoRA gradient, divided by the world size (the DDP mean)."""
    if not world.distributed:
        return
    import torch
    import torch.distributed as dist

    grads = [p.grad for p in params if p.grad is not None]
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= world.size
    offset = 0
    for g in grads:
        n = g.numel()
        g.copy_(flat[offset: offset + n].view_as(g))
        offset += n


def sum_across_ranks(values: "torch.Tensor", world: World) -> "torch.Tensor":
    if world.distributed:
        import torch.distributed as dist

        dist.all_reduce(values)
    return values
