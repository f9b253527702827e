"""LoRA adapters: do the saved tensors look like real LoRA pairs of the configured rank?

PEFT saves ``<module>.lora_A.weight`` (shape ``[r, in]``) and ``<module>.lora_B.weight``
(shape ``[out, r]``); embeddings use ``lora_embedding_A``/``lora_embedding_B``. LoRA on a 3-D
expert parameter (``target_parameters``) stacks the experts on the rank axis, so that axis is
``r * num_experts``: we accept any multiple of ``r`` there. ``rank_pattern`` overrides ``r``
per module, matched the way PEFT matches it (the key is a regex on the module name's tail).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from moeconsole.runner.checkpoints.safetensors_file import TensorEntry

_LORA = re.compile(r"^(?P<module>.+?)\.lora_(?:embedding_)?(?P<ab>[AB])(?:\.(?P<rest>.+))?$")


@dataclass(frozen=True)
class LoraSummary:
    pairs: int
    ranks: tuple[int, ...]                 # distinct ranks seen
    problems: tuple[str, ...]              # empty when the adapter is consistent


def _rank_axis(ab: str, shape: tuple[int, ...]) -> int | None:
    if len(shape) < 2:
        return None
    return shape[0] if ab == "A" else shape[1]


def expected_rank(module: str, config: dict) -> int | None:
    """The rank PEFT would give ``module`` under ``config`` (``rank_pattern`` first, then ``r``)."""
    pattern = config.get("rank_pattern") or {}
    if isinstance(pattern, dict):
        for key, value in pattern.items():
            try:
                if re.match(rf"(.*\.)?({key})$", module) and isinstance(value, int):
                    return value
            except re.error:
                continue
    r = config.get("r")
    return r if isinstance(r, int) and not isinstance(r, bool) and r > 0 else None


def _module_name(name: str) -> str:
    """The module a saved LoRA tensor belongs to, as PEFT's rank_pattern sees it."""
    m = _LORA.match(name)
    module = m.group("module") if m else name
    return module.removeprefix("base_model.model.")


def check_lora(entries: Iterable[TensorEntry], config: dict | None) -> LoraSummary:
    """Pair lora_A with lora_B per module; check the rank axes agree with each other and ``r``."""
    halves: dict[tuple[str, str], dict[str, TensorEntry]] = {}
    others = 0
    for e in entries:
        m = _LORA.match(e.name)
        if not m:
            others += 1
            continue
        key = (m.group("module"), m.group("rest") or "")
        halves.setdefault(key, {})[m.group("ab")] = e
    problems: list[str] = []
    if not halves:
        problems.append(f"none of the {others} tensors is a LoRA lora_A/lora_B weight")
        return LoraSummary(0, (), tuple(problems))
    ranks: set[int] = set()
    pairs = 0
    for (module, _rest), pair in sorted(halves.items()):
        if set(pair) != {"A", "B"}:
            have = next(iter(pair))
            miss = "B" if have == "A" else "A"
            problems.append(f"{module} has lora_{have} but no lora_{miss}")
            continue
        pairs += 1
        ra = _rank_axis("A", pair["A"].shape)
        rb = _rank_axis("B", pair["B"].shape)
        if ra is None or rb is None:
            problems.append(f"{module}: LoRA weights must be at least 2-D (shapes {list(pair['A'].shape)}, "
                            f"{list(pair['B'].shape)})")
            continue
        if ra != rb:
            problems.append(f"{module}: lora_A rank axis {ra} != lora_B rank axis {rb}")
            continue
        ranks.add(ra)
        want = expected_rank(_module_name(pair["A"].name), config or {})
        if want is not None and (ra == 0 or ra % want):
            problems.append(f"{module}: rank {ra} does not match the adapter config's r={want}")
    return LoraSummary(pairs, tuple(sorted(ranks)), tuple(problems))
