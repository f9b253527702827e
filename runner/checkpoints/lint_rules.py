"""Recipe lint for the checkpoint stub trap of ms-swift Megatron.

An ms-swift Megatron LoRA run launched with ``--save_safetensors true --no_save_optim true``
but without ``--merge_lora true`` saved 39 KB safetensors files with no tensors, for 36 hours.
ms-swift's own example (examples/megatron/mcore_bridge/lora/moe.sh) uses exactly that
combination with ``--merge_lora false``. In the ms-swift source we read, ``save_safetensors``
defaults to true in Megatron mode, so leaving it out counts as true; ``merge_lora`` must be
given as true explicitly to pass.
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

    ``version``: the ms-swift version targeted. The trap is 4.2's (where the stubs were seen);
    from 4.6 on, ``save_checkpoint`` writes the LoRA adapter through the bridge whenever it does
    not merge, and an omitted ``--merge_lora`` follows ``--save_safetensors``, so there is no
    trap (a merged save's disk cost is a separate rule). ``None``: unknown, judged as 4.2."""
    del env
    if not is_swift_megatron_launch(argv):
        return []
    if version is not None and not version.startswith(("4.0", "4.1", "4.2", "3.")):
        return []
    given = flag_values(argv, set(_DEFAULTS))
    tuner = _tuner(argv)
    if tuner == "full":
        return []       # merge_lora only matters for LoRA
    save_st = given.get("save_safetensors", _DEFAULTS["save_safetensors"])
    no_optim = given.get("no_save_optim", _DEFAULTS["no_save_optim"])
    merge = given.get("merge_lora", _DEFAULTS["merge_lora"])
    if save_st is True and no_optim is True and merge is not True:
        how_save = "save_safetensors true" + ("" if "save_safetensors" in given else " (the default)")
        how_merge = "merge_lora false" if merge is False else "merge_lora not set to true"
        return [{"level": "error", "rule": RULE,
                 "message": (f"ms-swift Megatron with {how_save}, no_save_optim true and {how_merge} saved "
                             "empty safetensors stubs (no tensors) in a past run; add --merge_lora true "
                             "(or drop --no_save_optim) so checkpoints hold weights")}]
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
