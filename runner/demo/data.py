"""The demo's training data: the shipped prose corpus as byte tokens, and the batch for a step.

The batch is a pure function of (seed, step), not of a data-loader's position, so a run that
resumes at step N sees exactly the batches an uninterrupted run would have seen."""
from __future__ import annotations

from pathlib import Path

import torch

CORPUS_PATH = Path(__file__).with_name("corpus.txt")


def load_corpus(path: Path = CORPUS_PATH) -> torch.Tensor:
    """The corpus as a 1-D int64 tensor of byte values (vocab 256)."""
    data = path.read_bytes()
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).to(torch.int64)


def batch_for_step(corpus: torch.Tensor, seed: int, step: int, batch_size: int,
                   seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(inputs, labels) of shape (batch_size, seq_len): random windows, labels shifted by one."""
    gen = torch.Generator().manual_seed(seed * 1_000_003 + step)
    starts = torch.randint(0, corpus.numel() - seq_len - 1, (batch_size,), generator=gen)
    windows = torch.stack([corpus[s: s + seq_len + 1] for s in starts.tolist()])
    return windows[:, :-1], windows[:, 1:]


def shard(batch: torch.Tensor, rank: int, world_size: int) -> torch.Tensor:
    """This rank's contiguous slice of the global batch (batch_size divisible by world_size)."""
    per_rank = batch.shape[0] // world_size
    return batch[rank * per_rank: (rank + 1) * per_rank]


def epoch_at(step: int, batch_size: int, seq_len: int, corpus_tokens: int) -> float:
    """Tokens consumed after ``step`` steps, in passes over the corpus."""
    return step * batch_size * seq_len / corpus_tokens
