"""Recipe lint for the checkpoint stub trap of ms-swift Megatron.

The 397B record's LoRA run, launched with ``--save_safetensors true --no_save_optim true`` and
``--merge_lora false``, saved 39 KB ``adapter_model.safetensors`` files with no tensors, for 36
hours. What ms-swift's source says about that combination:

- ``merge_lora`` is ``Optional[bool] = None`` and an omitted one follows ``save_safetensors``
  (``MegatronArguments.__post_init__``: 4.2.0 megatron_args.py l.706-707, 4.6.0 l.923-924), and
  ``save_safetensors`` defaults to true: leaving ``--merge_lora`` out merges, so it is no trap.
- With ``--merge_lora false``, 4.2.0's ``MegatronTrainer.save_checkpoint`` (trainers/base.py)
  writes the adapter through mcore-bridge (``save_weights(peft_format=True)``) and 4.6.0 does the
  same; the stubs the record saw came from that path on its 4.2 stack, so on 4.2 (or an unknown
  version) an explicit ``false`` is a warning that cites the record. From 4.6 on it is not
  reported (4.6 also writes the adapter when merging, ``_support_hf_grouped_lora``).
"""
from __future__ import annotations

import os
import re

RULE = "swift_megatron_stub_trap"
_TRAINING_SUBCOMMANDS = frozenset({"sft", "pt", "rlhf"})
# python -m swift.cli._megatron.sft, .../swift/cli/_megatron/sft.py, swift/cli/megatron_sft.py, ...
_MODULE = re.compile(r"swift[./\\]cli[./\\]_?megatron(?:[./\\_](?P<sub>\w+))?")
_TRUE = frozenset({"true", "1", "yes", "y", "on"})
_FALSE = frozenset({"false", "0", "no", "n", "off"})
_DEFAULTS = {"save_safetensors": True, "no_save_optim": False, "merge_lora": None}


def is_swift_megatron_launch(argv: list[str]) -> bool:
    """``megatron sft|pt|rlhf ...`` (ms-swift's ``megatron`` entry point), ``swift ... megatron``,
    or the swift Megatron CLI module run by python or torchrun."""
    names = [os.path.basename(a) for a in argv]
    for i, name in enumerate(names):
        if name == "megatron" and i + 1 < len(argv) and argv[i + 1] in _TRAINING_SUBCOMMANDS:
            return True
        if name == "swift" and "megatron" in argv[i + 1:i + 3]:
            return True
        m = _MODULE.search(argv[i])
        if m and (m.group("sub") or "main").split(".")[0] not in ("export", "app", "infer"):
            return True
    return False


def _norm_flag(token: str) -> str | None:
    if not token.startswith("--"):
        return None
    return token[2:].split("=", 1)[0].replace("-", "_")


def flag_values(argv: list[str], names: set[str]) -> dict[str, bool | None]:
    """The last value given for each boolean flag: True/False, or None when set to something
    unreadable. A flag given bare (``--no_save_optim``) means true, as argparse's nargs='?' does."""
    values: dict[str, bool | None] = {}
    for i, token in enumerate(argv):
        name = _norm_flag(token)
        if name not in names:
            continue
        if "=" in token:
            raw = token.split("=", 1)[1]
        elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            raw = argv[i + 1]
        else:
            values[name] = True
            continue
        low = raw.strip().lower()
        values[name] = True if low in _TRUE else False if low in _FALSE else None
    return values


def swift_stub_trap(argv: list[str], env: dict[str, str] | None = None, *, version: str | None = None) -> list[dict]:
    """Lint findings for the stub trap; empty when ``argv`` is not an ms-swift Megatron launch
    or does not combine the flags. ``env`` is accepted for symmetry with other rules; ms-swift
    reads these settings from the command line only.

    ``version``: the ms-swift version targeted (``None``: unknown, judged as 4.2)."""
    del env
    if not is_swift_megatron_launch(argv):
        return []
    if version is not None and not version.startswith(("4.0", "4.1", "4.2", "3.")):
        return []
    given = flag_values(argv, set(_DEFAULTS))
    if _tuner(argv) == "full":
        return []       # merge_lora only matters for LoRA
    save_st = given.get("save_safetensors", _DEFAULTS["save_safetensors"])
    no_optim = given.get("no_save_optim", _DEFAULTS["no_save_optim"])
    # An omitted --merge_lora follows --save_safetensors (megatron_args.py 4.2.0 l.706-707).
    merge = given["merge_lora"] if "merge_lora" in given else save_st
    if save_st is True and no_optim is True and merge is False:
        how_save = "save_safetensors true" + ("" if "save_safetensors" in given else " (the default)")
        return [{"level": "warning", "rule": RULE,
                 "message": (f"ms-swift Megatron with {how_save}, no_save_optim true and merge_lora false: the "
                             "397B record's 4.2 run with exactly this saved 39 KB adapter_model.safetensors stubs "
                             "(no tensors) for 36 hours; keep --merge_lora true, as the record did afterwards "
                             "(moeconsole verifies every save and alerts on a stub)")}]
    return []


def _tuner(argv: list[str]) -> str | None:
    for i, token in enumerate(argv):
        name = _norm_flag(token)
        if name in ("tuner_type", "train_type"):
            if "=" in token:
                return token.split("=", 1)[1].strip().lower()
            if i + 1 < len(argv):
                return argv[i + 1].strip().lower()
    return None
