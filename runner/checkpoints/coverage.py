"""Does a LoRA adapter hold the tensors its own config and the model say it should?

A save can be a well-formed safetensors file of consistent LoRA pairs and still miss most of
the adapter: an export that dropped the expert LoRA keeps the attention pairs (a few MB) of an
adapter that should hold billions of parameters. From ``adapter_config.json`` (``r``,
``target_modules``) and the model's ``config.json`` (layers, attention and linear-attention
sizes, experts: ``moeconsole.runner.recipes.memory_estimate.model_shape``, the one model of a model's
linear modules) we count the LoRA parameters PEFT's format holds, per group of modules, and
compare them with the saved tensors.

The PEFT format is the one mcore-bridge writes for ``megatron sft`` (``GPTBridge._set_module`` /
``_set_mlp_state``, mcore_bridge/bridge/gpt_bridge.py 1.6.5 l.560-600 and l.1065-1125): one
``lora_A``/``lora_B`` pair per Hugging Face module (Megatron's fused ``linear_qkv`` and
``linear_fc1`` split into ``q_proj``/``k_proj``/``v_proj`` and ``gate_proj``/``up_proj``, or
``gate_up_proj``), and every routed expert its own pair under ``mlp.experts.<i>.``. So a module
of fan-in ``in`` and fan-out ``out`` holds ``r x (in + out)`` parameters, times the experts.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from moeconsole.runner.checkpoints.safetensors_file import TensorEntry

# A save holding less than this share of a group's expected LoRA parameters is missing that group
# (the tolerance covers counting details: biases, a model variant's head sizes).
COVERAGE_FLOOR = 0.5
GROUPS = ("attention", "linear attention", "MLP / shared expert", "routed experts")
_PART_GROUP = {"q": "attention", "k": "attention", "v": "attention", "o": "attention",
               "lin_qkv": "linear attention", "lin_z": "linear attention", "lin_b": "linear attention",
               "lin_a": "linear attention", "lin_out": "linear attention"}
_LORA_NAME = re.compile(r"^(?P<module>.+?)\.lora_(?:embedding_)?[AB](?:\.|$)")
_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")


@dataclass
class Coverage:
    expected: dict[str, int] = field(default_factory=dict)     # group -> LoRA parameters expected
    saved: dict[str, int] = field(default_factory=dict)        # group -> LoRA parameters saved
    layers_expected: dict[str, set[int]] = field(default_factory=dict)
    layers_saved: dict[str, set[int]] = field(default_factory=dict)
    skipped: str | None = None                                 # why coverage could not be checked

    @property
    def expected_total(self) -> int:
        return sum(self.expected.values())

    @property
    def saved_total(self) -> int:
        return sum(self.saved.values())

    def missing(self) -> list[str]:
        """One phrase per group far short of what it should hold."""
        out = []
        for g in GROUPS:
            want, have = self.expected.get(g, 0), self.saved.get(g, 0)
            if want and have < COVERAGE_FLOOR * want:
                lacking = sorted(self.layers_expected.get(g, set()) - self.layers_saved.get(g, set()))
                where = (f" (no pairs in {len(lacking)} of {len(self.layers_expected.get(g, set()))} layers: "
                         f"{_ranges(lacking)})" if lacking else "")
                out.append(f"{g}: {_count(have)} of ~{_count(want)} parameters{where}")
        return out


def _count(n: float) -> str:
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.0f}"


def _ranges(xs: list[int]) -> str:
    parts: list[str] = []
    for x in xs:
        if parts and parts[-1].split("-")[-1] == str(x - 1):
            parts[-1] = f"{parts[-1].split('-')[0]}-{x}"
        else:
            parts.append(str(x))
    shown = ", ".join(parts[:6])
    return shown + (" ..." if len(parts) > 6 else "")


def target_parts(target_modules: Any) -> set[str] | None:
    """The parts of a layer (memory_estimate.ALL_PARTS) that PEFT's ``target_modules`` names;
    None for a regex or names we cannot map (coverage is then not checked)."""
    from moeconsole.runner.recipes.memory_estimate import ALL_PARTS, TARGET_PARTS
    if target_modules in ("all-linear", ["all-linear"]):
        return set(ALL_PARTS)
    if not isinstance(target_modules, list) or not target_modules:
        return None
    parts: set[str] = set()
    for name in target_modules:
        tail = str(name).rsplit(".", 1)[-1]
        if tail == "all-linear":
            parts |= set(ALL_PARTS)
        elif tail in TARGET_PARTS:
            parts |= set(TARGET_PARTS[tail])
    return parts or None


def _group(part: str, experts: int) -> str:
    if experts:
        return "routed experts"
    return _PART_GROUP.get(part, "MLP / shared expert")


def expected_lora(model_config: Mapping[str, Any], adapter_config: Mapping[str, Any]) -> Coverage:
    """The LoRA parameters PEFT's format holds for this model and adapter config, per group."""
    from moeconsole.runner.core.errors import InputError
    from moeconsole.runner.recipes.memory_estimate import model_shape
    cov = Coverage()
    r = adapter_config.get("r")
    parts = target_parts(adapter_config.get("target_modules"))
    if not isinstance(r, int) or isinstance(r, bool) or r <= 0:
        cov.skipped = "adapter_config.json has no rank r"
        return cov
    if parts is None:
        cov.skipped = f"target_modules {adapter_config.get('target_modules')!r} cannot be mapped to the model's modules"
        return cov
    try:
        shape = model_shape(model_config)
    except InputError as exc:
        cov.skipped = str(exc)
        return cov
    for layer, mods in enumerate(shape.linears):
        for fan_in, outs, experts in mods:
            for part, out in outs:
                if part not in parts:
                    continue
                g = _group(part, experts)
                cov.expected[g] = cov.expected.get(g, 0) + r * (fan_in + out) * max(1, experts)
                cov.layers_expected.setdefault(g, set()).add(layer)
    return cov


def _saved_group(module: str) -> str | None:
    from moeconsole.runner.recipes.memory_estimate import TARGET_PARTS
    tail = module.rsplit(".", 1)[-1]
    parts = TARGET_PARTS.get(tail)
    if not parts:
        return None
    if re.search(r"\.experts\.\d+\.|\.experts\.(gate_up_proj|down_proj)$", module) and "shared_expert" not in module:
        return "routed experts"
    return _group(parts[0], 0)


def lora_coverage(entries: Iterable[TensorEntry], adapter_config: Mapping[str, Any],
                  model_config: Mapping[str, Any]) -> Coverage:
    """Expected against saved LoRA parameters, per group of modules."""
    cov = expected_lora(model_config, adapter_config)
    if cov.skipped:
        return cov
    for e in entries:
        m = _LORA_NAME.match(e.name)
        if not m:
            continue
        g = _saved_group(m.group("module"))
        if g is None:
            continue
        cov.saved[g] = cov.saved.get(g, 0) + e.numel
        layer = _LAYER.search(e.name)
        if layer:
            cov.layers_saved.setdefault(g, set()).add(int(layer.group(1)))
    return cov
