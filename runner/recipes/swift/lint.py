"""Lint for ms-swift commands: flags checked against the targeted version's own argument
classes (its parser in the training environment when installed there, else the shipped flag
table), renamed flags with their replacements, and the arithmetic of the run (warmup, steps
the epochs can reach, sequence parallel, length envelope, merged-save disk cost, fused experts).

Each rule is a small function over a ``SwiftCommand``; problems are ``lint.Problem`` dicts.
"""
from __future__ import annotations

import math
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from runner.recipes.swift import flags as swift_flags
from runner.recipes.swift.probe import ProbeResult, probe

# Flags of older ms-swift / Megatron-LM spellings that the 4.x argument classes do not have,
# with what to write instead (None: drop it, and the note says what replaces it).
RENAMES: dict[str, tuple[str | None, str]] = {
    "train_type": ("tuner_type", "renamed to --tuner_type"),
    "lora_target_modules": ("target_modules", "renamed to --target_modules"),
    "use_megatron": (None, "ms-swift's Megatron entry point is `megatron sft`, not a flag of `swift sft`"),
    "megatron_use_mcore": (None, "ms-swift 4.x Megatron always runs on Megatron-Core: drop it"),
    "save": ("output_dir", "checkpoints go to <output_dir>/v<N>-<time>/checkpoint-<N>/: use --output_dir"),
    "load": (None, "resume with resume.args (--adapters <checkpoint-N> --finetune false ...), not --load"),
    "log_interval": ("logging_steps", "renamed to --logging_steps"),
    "save_interval": ("save_steps", "renamed to --save_steps"),
    "eval_interval": ("eval_steps", "renamed to --eval_steps"),
    "num_workers": ("dataloader_num_workers", "renamed to --dataloader_num_workers"),
    "max_epochs": ("num_train_epochs", "renamed to --num_train_epochs"),
}
MEGATRON_ONLY = ("expert_model_parallel_size", "tensor_model_parallel_size", "pipeline_model_parallel_size",
                 "micro_batch_size", "global_batch_size", "recompute_granularity", "train_iters", "sequence_parallel")
RESUME_TEMPLATES = {
    # trainers/base.py _load_iteration (4.2.0 and 4.6): the iteration is read from the tracker of
    # adapters[0] (LoRA) or model, and only with --finetune false.
    "4.6": ["--adapters", "{checkpoint}", "--finetune", "false", "--no_load_optim", "true", "--no_load_rng", "true"],
    "4.2": ["--model", "{checkpoint}-merged", "--finetune", "false", "--no_load_optim", "true", "--no_load_rng", "true"],
}
_BYTES = {"bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "float32": 4, "fp32": 4}


def _p(level: str, rule: str, message: str) -> dict:
    return {"level": level, "rule": rule, "message": message}


@dataclass
class SwiftCommand:
    """An ms-swift command line as lint sees it."""
    argv: list[str]
    command: str                # "megatron sft", "swift sft", ...
    start: int                  # index of the first argument after the subcommand
    table: swift_flags.Table | None
    how: str                    # which table / parser was used, in words
    checked_as: str = ""        # the command whose flags apply: `swift sft --use_megatron` is `megatron sft`
    values: dict[str, list[str]] = field(default_factory=dict)   # field -> value tokens (last wins)

    @property
    def megatron(self) -> bool:
        return self.checked_as.startswith("megatron ")

    def get(self, name: str, default: str | None = None) -> str | None:
        v = self.values.get(name)
        return v[0] if v else default

    def num(self, name: str) -> float | None:
        try:
            value = self.get(name)
            return float(value) if value is not None else None
        except ValueError:
            return None

    def flag(self, name: str) -> bool | None:
        if name not in self.values:
            return None
        return _truthy(self.values[name])


def _truthy(vals: list[str] | None) -> bool:
    return bool(vals is not None and (not vals or vals[0].lower() in ("true", "1", "yes", "y", "t")))


def parse_command(recipe: dict) -> SwiftCommand | None:
    argv = [str(a) for a in recipe["command"]]
    command, start = swift_flags.command_of(argv)
    if command is None:
        return None
    version = (recipe.get("swift") or {}).get("version")
    table, how = swift_flags.pick(version)
    cmd = SwiftCommand(argv, command, start, table, how, checked_as=command)
    given = {a[2:].split("=", 1)[0].replace("-", "_") for a in argv[start:] if a.startswith("--")}
    if command == "swift sft" and given & {"use_megatron", "megatron_use_mcore", *MEGATRON_ONLY}:
        cmd.checked_as = "megatron sft"
    fields = table.fields(cmd.checked_as) if table else None
    for r in swift_flags.resolve(argv[start:], fields or {}):
        name = r.dest or r.token[2:].replace("-", "_")
        cmd.values[name] = swift_flags.values_of(argv[start:], r.index)
    return cmd


def check(recipe: dict, *, probe_parser: bool = True) -> list[dict]:
    cmd = parse_command(recipe)
    if cmd is None:
        return []
    out = _check_flags(recipe, cmd) if probe_parser else _from_table(cmd)
    for rule in (rule_entry_point, rule_warmup, rule_reachable_steps, rule_sequence_parallel, rule_envelope,
                 rule_merged_disk, rule_fused_experts, rule_stub_trap, rule_resume):
        out += rule(recipe, cmd)
    return out


# ---- flags ---------------------------------------------------------------------------------
def _replacement(name: str, fields: dict | None) -> str:
    new, note = RENAMES.get(name, (None, ""))
    if new and fields is not None and new not in fields:
        return note + f" (but --{new} is not there either)"
    return note


def _check_flags(recipe: dict, cmd: SwiftCommand) -> list[dict]:
    python = (recipe.get("swift") or {}).get("python")
    if python:
        from runner.recipes.recipe import fill
        python = os.path.expanduser(fill(python, {"recipe_dir": recipe.get("_recipe_dir", "")}))
        if os.path.isdir(python):
            python = os.path.join(python, "bin", "python")
        if os.path.isfile(python):
            res = probe(python, cmd.checked_as, cmd.argv[cmd.start:], env=_probe_env())
            if not res.failed and not res.import_error:
                return _from_probe(cmd, res)
            why = res.failed or res.import_error
            out = [_p("info", "swift_parser_unavailable", f"ms-swift's own parser could not be used with {python} "
                                                          f"({why}); {cmd.how}")]
            return out + _from_table(cmd, announce=False)
    return _from_table(cmd)


def _probe_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CUDA_", "NCCL_"))}
    env.update(CUDA_VISIBLE_DEVICES="", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def _from_probe(cmd: SwiftCommand, res: ProbeResult) -> list[dict]:
    where = f"ms-swift {res.version}'s own `{cmd.checked_as}` parser ({res.python})"
    out = [_p("info", "swift_checked_with", f"checked with {where}")]
    fields = cmd.table.fields(cmd.command) if cmd.table else None
    for f in res.flags:
        name = f["token"][2:].replace("-", "_")
        if f["status"] == "unknown":
            out.append(_p("error", "swift_unknown_flag", f"{f['token']}: ms-swift {res.version} `{cmd.command}` has no "
                                                          f"such flag (ValueError: remaining_argv)"
                                                          + (f"; {_replacement(name, fields)}" if name in RENAMES else "")))
        elif f["status"] == "ambiguous":
            out.append(_p("error", "swift_ambiguous_flag", f"{f['token']}: {f.get('message', 'ambiguous')} "
                                                            "(argparse exits 2)"
                                                            + (f"; {_replacement(name, fields)}" if name in RENAMES else "")))
        elif f["status"] == "abbreviated":
            out.append(_p("error", "swift_abbreviated_flag", f"{f['token']} is silently taken as {f['option']} by "
                                                              f"ms-swift {res.version}'s parser"
                                                              + (f"; {_replacement(name, fields)}" if name in RENAMES else "")))
    if res.error:
        out.append(_p("error", "swift_bad_value", f"ms-swift {res.version}'s parser: {res.error}"))
    return out


def _from_table(cmd: SwiftCommand, announce: bool = True) -> list[dict]:
    if cmd.table is None:
        return [_p("warning", "swift_no_flag_table", f"{cmd.how}: flags not checked")]
    fields = cmd.table.fields(cmd.checked_as)
    if fields is None:
        return [_p("info", "swift_no_flag_table", f"no flag table for `{cmd.checked_as}` in ms-swift {cmd.table.version}")]
    v = cmd.table.version
    partial = cmd.table.partial(cmd.checked_as)
    as_ = f" as `{cmd.checked_as}`" if cmd.checked_as != cmd.command else ""
    out = [_p("info", "swift_checked_with", cmd.how + as_ + (f" (`{cmd.command}` fields of ms-swift's own classes; "
                                                             f"{', '.join(partial)} not in the table)" if partial else ""))]
    if not announce:
        out = []
    args = cmd.argv[cmd.start:]
    for r in swift_flags.resolve(args, fields):
        name = r.token[2:].replace("-", "_")
        fix = f"; {_replacement(name, fields)}" if name in RENAMES else ""
        if r.status == "unknown":
            if partial and name not in RENAMES:
                continue    # may be a transformers TrainingArguments field the table cannot see
            out.append(_p("error", "swift_unknown_flag", f"{r.token}: ms-swift {v} `{cmd.checked_as}` has no such flag "
                                                          f"(ValueError: remaining_argv){fix}"))
        elif r.status == "ambiguous":
            shown = ", ".join(r.candidates[:6]) + (", ..." if len(r.candidates) > 6 else "")
            out.append(_p("error", "swift_ambiguous_flag", f"{r.token}: ambiguous prefix in ms-swift {v} "
                                                            f"`{cmd.checked_as}` (argparse exits 2): could be {shown}{fix}"))
        elif r.status == "abbreviated":
            out.append(_p("error", "swift_abbreviated_flag", f"{r.token} is silently taken as --{r.dest} by ms-swift "
                                                              f"{v} `{cmd.checked_as}` (argparse prefix match){fix}"))
        elif r.dest is not None:
            problem = swift_flags.type_problem(fields[r.dest], swift_flags.values_of(args, r.index))
            if problem:
                out.append(_p("error", "swift_bad_value", f"{r.token} {problem}"))
    return out


# ---- the run's arithmetic ------------------------------------------------------------------
def rule_entry_point(recipe: dict, cmd: SwiftCommand) -> list[dict]:
    if cmd.command != "swift sft":
        return []
    given = [a[2:].split("=", 1)[0].replace("-", "_") for a in cmd.argv[cmd.start:] if a.startswith("--")]
    megatron_flags = [f for f in given if f in ("use_megatron", "megatron_use_mcore", *MEGATRON_ONLY)]
    if megatron_flags:
        shown = ", ".join(f"--{f}" for f in megatron_flags[:4])
        return [_p("error", "swift_megatron_entry_point", f"`swift sft` with Megatron flags ({shown}): ms-swift runs "
                                                          "Megatron training as `megatron sft` (lint --fix rewrites it)")]
    return []


def rule_warmup(recipe: dict, cmd: SwiftCommand) -> list[dict]:
    total = cmd.num("train_iters") if cmd.megatron else cmd.num("max_steps")
    warm = cmd.num("lr_warmup_iters") if cmd.megatron else cmd.num("warmup_steps")
    frac = cmd.num("lr_warmup_fraction") if cmd.megatron else cmd.num("warmup_ratio")
    if frac is not None and frac > 1:
        return [_p("error", "swift_warmup_too_long", f"warmup fraction {frac:g} > 1: the learning rate never "
                                                     "reaches its peak")]
    if total and warm and warm >= total:
        return [_p("error", "swift_warmup_too_long", f"warmup {warm:.0f} iterations >= the run's {total:.0f}: the "
                                                     f"learning rate never reaches {cmd.get('lr') or cmd.get('learning_rate') or 'its peak'}")]
    return []


def _dataset_samples(recipe: dict, cmd: SwiftCommand) -> int | None:
    given = (recipe.get("swift") or {}).get("dataset_samples")
    if given:
        return int(given)
    total = 0
    for d in cmd.values.get("dataset", []):
        path = Path(os.path.expanduser(d.split("#", 1)[0]))
        if "{" in d or not path.is_file() or path.suffix not in (".jsonl", ".json", ".csv"):
            return None
        if path.stat().st_size > (2 << 30):
            return None
        with open(path, "rb") as f:
            total += sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    return total or None


def rule_reachable_steps(recipe: dict, cmd: SwiftCommand) -> list[dict]:
    epochs = cmd.num("num_train_epochs")
    iters = cmd.num("train_iters") if cmd.megatron else cmd.num("max_steps")
    if not (epochs and iters):
        return []
    samples = _dataset_samples(recipe, cmd)
    gbs = cmd.num("global_batch_size") if cmd.megatron else None
    if cmd.megatron and gbs is None:
        gbs = 16.0      # MegatronArguments.global_batch_size default
    if not (samples and gbs):
        return []
    per_epoch = math.ceil(samples / gbs)
    reachable = int(epochs) * per_epoch
    if iters <= reachable:
        return []
    packed = " (packing merges samples into rows, so the epochs give even fewer)" if cmd.flag("packing") else ""
    return [_p("warning", "swift_steps_unreachable",
               f"train_iters {iters:.0f} needs {iters * gbs:,.0f} samples, but {int(epochs)} epoch(s) of {samples:,} "
               f"samples at global batch {gbs:.0f} give at most {reachable:,} iterations{packed}")]


def rule_sequence_parallel(recipe: dict, cmd: SwiftCommand) -> list[dict]:
    if not cmd.megatron or not cmd.flag("sequence_parallel"):
        return []
    tp = cmd.num("tensor_model_parallel_size") or 1
    if tp <= 1:
        return [_p("warning", "swift_sp_without_tp", "sequence_parallel true with tensor_model_parallel_size 1: "
                                                     "Megatron's sequence parallelism splits activations across the "
                                                     "TP group, so with TP=1 it does nothing (Megatron turns it off)")]
    return []


def rule_envelope(recipe: dict, cmd: SwiftCommand) -> list[dict]:
    limit = (recipe.get("swift") or {}).get("validated_max_length")
    length = cmd.num("max_length")
    if limit and length and length > limit:
        cap = recipe.get("gpus", {}).get("memory_capacity_gib")
        on = f" on {cap} GiB GPUs" if cap else ""
        return [_p("warning", "swift_length_over_envelope",
                   f"max_length {length:.0f} > {limit}, the longest this recipe was validated at{on}: activation "
                   f"memory grows with length, expect OOM (swift.validated_max_length)")]
    return []


def model_params_billion(model: str | None) -> float | None:
    """Total parameters from a model name ("Qwen3.5-397B-A17B" -> 397)."""
    if not model:
        return None
    m = re.search(r"(?<![\d.])(\d+(?:\.\d+)?)[Bb](?![a-z])", os.path.basename(model.rstrip("/")))
    return float(m.group(1)) if m else None


def merge_lora_effective(cmd: SwiftCommand) -> bool:
    """megatron_args.py (4.2.0 and 4.6): ``if self.merge_lora is None: self.merge_lora = self.save_safetensors``."""
    merge = cmd.flag("merge_lora")
    if merge is None:
        save_st = cmd.flag("save_safetensors")
        return True if save_st is None else save_st
    return merge


def _free_bytes(path: str) -> tuple[str, int] | None:
    p = Path(os.path.expanduser(path))
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return str(p), shutil.disk_usage(p).free
    except OSError:
        return None


def _tb(n: float) -> str:
    return f"{n / 1e12:.1f} TB" if n >= 1e12 else f"{n / 1e9:.0f} GB"


def rule_merged_disk(recipe: dict, cmd: SwiftCommand) -> list[dict]:
    tuner = (cmd.get("tuner_type") or cmd.get("train_type") or ("full" if cmd.megatron else "lora")).lower()
    if not cmd.megatron or tuner != "lora" or not merge_lora_effective(cmd):
        return []
    params = model_params_billion(cmd.get("model"))
    if not params:
        return [_p("info", "swift_merged_save_disk", "merge_lora is on: every save also writes a full merged model "
                                                     "(checkpoint-N-merged/); size unknown from the model name")]
    per_byte = _BYTES.get((cmd.get("torch_dtype") or "bfloat16").lower(), 2)
    per_save = params * 1e9 * per_byte
    iters = cmd.num("train_iters")
    every = cmd.num("save_steps") or 500
    saves = math.ceil(iters / every) if iters else None
    limit = cmd.num("save_total_limit")
    kept = int(min(limit, saves) if limit and saves else limit or saves or 1)
    # Rotation runs after a save: while it is written, save_total_limit + 1 saves are on disk.
    peak = kept + 1 if limit and saves and saves > limit else kept
    need = peak * per_save
    how = ("" if cmd.flag("merge_lora") else " (merge_lora not given: it follows save_safetensors, true)")
    msg = (f"merge_lora true{how} writes a full merged model at every save: ~{_tb(per_save)} each for a "
           f"{params:g}B model in {cmd.get('torch_dtype') or 'bf16'}; {kept} kept"
           f"{' (save_total_limit)' if limit else ' (no save_total_limit)'}"
           f"{f', {peak} on disk while the next is written' if peak > kept else ''} = ~{_tb(need)}")
    where = cmd.get("output_dir") or cmd.get("save")
    free = _free_bytes(where) if where and "{" not in where else None
    if free:
        msg += f"; {free[0]} has {_tb(free[1])} free here"
        if need > free[1]:
            return [_p("warning", "swift_merged_save_disk", msg + ": the disk fills before the run ends (set "
                                                                  "--merge_lora false to save only the adapter)")]
    return [_p("info" if limit else "warning", "swift_merged_save_disk", msg)]


def rule_fused_experts(recipe: dict, cmd: SwiftCommand) -> list[dict]:
    if cmd.megatron or cmd.command != "swift sft":
        return []
    targets = cmd.values.get("target_modules") or cmd.values.get("lora_target_modules") or ["all-linear"]
    model = cmd.get("model") or ""
    moe = re.search(r"moe|-A\d+(\.\d+)?B|\d+x\d+B", model, re.I)
    if "all-linear" in targets and moe and "target_parameters" not in cmd.values:
        return [_p("warning", "swift_all_linear_misses_experts",
                   f"{model}: on the transformers path `all-linear` reaches only the attention projections of an "
                   "MoE whose experts are fused 3-D parameters; add --target_parameters mlp.experts.gate_up_proj "
                   "mlp.experts.down_proj (and --lora_dropout 0). On `megatron sft` ms-swift covers the experts.")]
    return []


def rule_stub_trap(recipe: dict, cmd: SwiftCommand) -> list[dict]:
    from runner.checkpoints.lint_rules import swift_stub_trap
    version = cmd.table.version if cmd.table else None
    return swift_stub_trap(cmd.argv, recipe.get("env"), version=version)


def rule_resume(recipe: dict, cmd: SwiftCommand) -> list[dict]:
    from runner.recipes.resume import template_problems
    resume = recipe.get("resume") or {}
    out = [_p("error", "resume_template", m) for m in template_problems(resume)]
    if cmd.megatron and resume.get("arg") in ("--load", "--save"):
        out.append(_p("error", "swift_resume_arg", f"resume.arg {resume['arg']}: ms-swift 4.x Megatron has no such flag; "
                                                   f"use resume.args: [{', '.join(suggested_resume(cmd))}]"))
    return out


def suggested_resume(cmd: SwiftCommand) -> list[str]:
    v = cmd.table.version if cmd.table else "4.6"
    return list(RESUME_TEMPLATES["4.2" if v.startswith("4.2") else "4.6"])


# ---- lint --fix ----------------------------------------------------------------------------
def fix_recipe(recipe_raw: dict, recipe: dict) -> tuple[dict, list[str]]:
    """A corrected copy of the raw recipe mapping and what was changed, in words."""
    cmd = parse_command(recipe)
    if cmd is None or cmd.table is None:
        return recipe_raw, []
    fields = cmd.table.fields(cmd.checked_as) or {}
    argv = [str(a) for a in recipe_raw["command"]]
    changes: list[str] = []
    out: list[str] = []
    i = 0
    to_megatron = cmd.command == "swift sft" and cmd.checked_as == "megatron sft"
    while i < len(argv):
        a = argv[i]
        if i == cmd.start - 1 and to_megatron and os.path.basename(argv[i - 1]) == "swift":
            out[-1] = argv[i - 1][: -len("swift")] + "megatron"
            out.append(a)
            changes.append("`swift sft --use_megatron true` -> `megatron sft`")
            i += 1
            continue
        if i >= cmd.start and a.startswith("--"):
            name = a[2:].split("=", 1)[0].replace("-", "_")
            vals = swift_flags.values_of(argv, i)
            span = 1 + (0 if "=" in a else len(vals))
            resolved = swift_flags.resolve([a], fields)[0]
            if resolved.status != "exact" and name in RENAMES:
                new = RENAMES[name][0]
                if new and new in fields:
                    out += [f"--{new}", *vals]
                    changes.append(f"--{name} -> --{new}")
                else:
                    changes.append(f"dropped --{name} {' '.join(vals)}".rstrip())
                i += span
                continue
            if resolved.status == "abbreviated" and resolved.dest:
                out += [f"--{resolved.dest}", *vals]
                changes.append(f"{a.split('=', 1)[0]} -> --{resolved.dest} (what the parser took it as)")
                i += span
                continue
        out.append(a)
        i += 1
    fixed = dict(recipe_raw)
    fixed["command"] = out
    resume = dict(recipe_raw.get("resume") or {})
    if cmd.megatron and (resume.get("arg") in ("--load", "--save", None) and not resume.get("args")):
        resume.pop("arg", None)
        resume["args"] = suggested_resume(cmd)
        fixed["resume"] = resume
        changes.append(f"resume.args: {' '.join(resume['args'])}")
    return fixed, changes
