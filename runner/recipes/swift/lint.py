"""Lint for ms-swift commands: flags checked against the targeted version's own argument
classes (its parser in the training environment when installed there, else the shipped flag
table), renamed flags with their replacements, and the arithmetic of the run (warmup, steps
the epochs can reach, sequence parallel, length envelope, merged-save disk cost, fused experts).

Each rule is a small function over a ``SwiftCommand``; problems are ``lint.Problem`` dicts.
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from moeconsole.runner.recipes.lint import problem
from moeconsole.runner.recipes.swift import flags as swift_flags
from moeconsole.runner.core.units import disk_bytes
from moeconsole.runner.recipes.cmdline import world_size
from moeconsole.runner.recipes.swift import sizes
from moeconsole.runner.recipes.swift.probe import DEFAULT_RLHF_TYPE, ProbeResult, modules_missing_in, probe, trainer_needs
from moeconsole.runner.process import pyexec

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import RunRecipe

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
    # transformers' TrainingArguments names (`swift sft`) that the Megatron path spells its own way
    # (MegatronArguments in swift/megatron/arguments/megatron_args.py).
    "learning_rate": ("lr", "the Megatron path's learning rate is --lr"),
    "warmup_ratio": ("lr_warmup_fraction", "the Megatron path's warmup fraction is --lr_warmup_fraction"),
    "warmup_steps": ("lr_warmup_iters", "the Megatron path's warmup length is --lr_warmup_iters"),
}
MEGATRON_ONLY = ("expert_model_parallel_size", "tensor_model_parallel_size", "pipeline_model_parallel_size",
                 "micro_batch_size", "global_batch_size", "recompute_granularity", "train_iters", "sequence_parallel")
RESUME_TEMPLATES = {
    # BaseMegatronTrainer._load_checkpoint / _load_iteration (trainers/base.py, 4.2.0 and 4.6.0):
    # the iteration is read from the tracker of adapters[0] (LoRA) or model, and the consumed
    # samples from iter_N/common.pt, only with --finetune false. Nothing on this path loads
    # optimizer or scheduler state, so --no_load_optim/--no_load_rng would change nothing.
    "4.6": ["--adapters", "{checkpoint}", "--finetune", "false"],
    "4.2": ["--model", "{checkpoint}-merged", "--finetune", "false"],
}
# The full-state resume (4.6): load_mcore_checkpoint (utils/megatron_lm_utils.py) restores the
# adapter, the optimizer and the LR scheduler from iter_N/ when it was saved with --no_save_optim false.
FULL_STATE_RESUME = ["--mcore_adapter", "{checkpoint}", "--finetune", "false"]


@dataclass
class SwiftCommand:
    """An ms-swift command line as lint sees it."""
    argv: list[str]
    command: str                # "megatron sft", "swift sft", ...
    start: int                  # index of the first argument after the subcommand
    table: swift_flags.Table | None
    how: str                    # which table / parser was used, in words
    checked_as: str = ""        # the command whose flags apply: `swift sft --use_megatron` is `megatron sft`
    wanted: str | None = None   # the recipe's swift.version as written ("4.5" names a line, "4.5.2" a release)
    values: dict[str, list[str]] = field(default_factory=dict)   # field -> value tokens (last wins)
    config: swift_flags.ConfigFile | None = None   # the config file argv names (its flags are in argv)
    env: dict[str, str] = field(default_factory=dict)   # the recipe's env plus the config file's ENV

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
        return swift_flags.truthy(self.values[name])


def swift_launch(recipe: "RunRecipe") -> tuple[list[str], dict[str, str], swift_flags.ConfigFile | None]:
    """The command line and environment ms-swift's trainer gets from the recipe's command: a config
    file it names replaced by the flags it holds, its ENV added (``swift_flags.config_file``; a
    relative path from the directory the command runs in, ``{recipe_dir}`` filled)."""
    from moeconsole.runner.recipes.lint import command_dir
    from moeconsole.runner.recipes.recipe import fill

    argv = list(recipe.command)
    command, start = swift_flags.command_of(argv)
    if command is None:
        return argv, dict(recipe.env), None
    named = [*argv[:start], *(fill(a, {"recipe_dir": recipe.launch.recipe_dir}) for a in argv[start:start + 1])]
    expanded, cfg = swift_flags.expanded_argv(named + argv[start + 1:], start, command_dir(recipe))
    if cfg is None or cfg.error:
        return argv, dict(recipe.env), cfg
    version = str(recipe.swift.version) if recipe.swift.version else None
    return expanded, swift_flags.with_config_env(dict(recipe.env), cfg, version), cfg


def swift_launch_env(recipe: "RunRecipe") -> dict[str, str]:
    """The environment the recipe's command starts its processes with, as far as torchrun's counts
    go: ``recipe.env``, plus an ms-swift config file's ENV (``swift_launch``)."""
    return swift_launch(recipe)[1]


def parse_command(recipe: "RunRecipe") -> SwiftCommand | None:
    argv, env, cfg = swift_launch(recipe)
    command, start = swift_flags.command_of(argv)
    if command is None:
        return None
    version = recipe.swift.version
    table, how = swift_flags.pick(version)
    cmd = SwiftCommand(argv, command, start, table, how, checked_as=command,
                       wanted=str(version) if version else None, config=cfg, env=env)
    given = {a[2:].split("=", 1)[0].replace("-", "_") for a in argv[start:] if a.startswith("--")}
    if command == "swift sft" and given & {"use_megatron", "megatron_use_mcore", *MEGATRON_ONLY}:
        cmd.checked_as = "megatron sft"
    fields = table.fields(cmd.checked_as) if table else None
    for r in swift_flags.resolve_flags(argv[start:], fields or {}):
        name = r.dest or r.token[2:].replace("-", "_")
        cmd.values[name] = swift_flags.values_of(argv[start:], r.index)
    return cmd


def check_swift_recipe(recipe: "RunRecipe", *, probe_parser: bool = True) -> list[dict]:
    cmd = parse_command(recipe)
    if cmd is None:
        return []
    out = rule_config_file(cmd, recipe)
    out += _check_flags(recipe, cmd) if probe_parser else _from_table(cmd) + _needed_modules(recipe, cmd)
    for rule in (rule_entry_point, rule_startup, rule_warmup, rule_train_iters_ignored,
                 rule_sequence_parallel, rule_envelope, rule_merged_disk, rule_adapter_disk, rule_fused_experts, rule_stub_trap,
                 rule_resume, rule_resume_semantics, rule_resume_model_only, rule_saves_nothing):
        out += rule(recipe, cmd)
    return out


# ---- flags ---------------------------------------------------------------------------------
def rule_config_file(cmd: SwiftCommand, recipe: "RunRecipe | None" = None) -> list[dict]:
    """A config file ms-swift reads its arguments from (``swift sft train.yaml``): its flags are checked
    with the rest; one that cannot be read here leaves them unchecked. Its ENV as the named release's
    entry point treats it (``swift_flags.config_env_starts_torchrun``, ``env_clash_nameerror``)."""
    cfg = cmd.config
    if cfg is None:
        return []
    if cfg.error:
        return [problem("warning", "swift_config_unread",
                        f"ms-swift reads its arguments from {cfg.path}, which could not be read here ({cfg.error}): "
                        "the flags in it were not checked")]
    out = []
    set_env = dict(recipe.env) if recipe is not None else {}
    clash = sorted(k for k, v in cfg.env.items() if k in set_env and str(set_env[k]) != v)
    if clash and swift_flags.env_clash_nameerror(cmd.wanted):
        out.append(problem("error", "swift_config_env_nameerror",
                           f"{cfg.path}'s ENV sets {', '.join(f'{k}={cfg.env[k]}' for k in clash)} where the recipe's env "
                           f"sets {', '.join(f'{k}={set_env[k]}' for k in clash)}: ms-swift {cmd.wanted}'s entry point stops "
                           "at once with NameError: name 'logger' is not defined (swift/cli/main.py l.55, the warning "
                           "it means to give; fixed in 4.3.1). Give the value in one place, or use another release"))
    if cfg.env and not swift_flags.config_env_starts_torchrun(cmd.wanted):
        launch = sorted(k for k in cfg.env if k in ("NPROC_PER_NODE", "NNODES", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT"))
        if launch:
            out.append(problem("warning", "swift_config_env_ignored_by_torchrun",
                               f"{cfg.path}'s ENV sets {', '.join(launch)}, but ms-swift {cmd.wanted}'s entry point decides "
                               "torchrun's processes before it reads the file (swift/cli/main.py l.89-90; from 4.2.2 the "
                               "file comes first): " + ("no torchrun, one process" if not {"NPROC_PER_NODE", "NNODES"} & set(set_env)
                                                        else "torchrun as the recipe's env says")
                               + "; set them in the recipe's env"))
    where = ("where the environment does not" if swift_flags.config_env_starts_torchrun(cmd.wanted)
             else "over the environment's (this release's l.56)")
    return out + [problem("info", "swift_config_file",
                          f"{cfg.path}: {sum(1 for f in cfg.flags if f.startswith('--'))} argument(s) checked with the "
                          "command's (ms-swift splices them in where the file is named; flags after it win)"
                          + (f"; its ENV sets {', '.join(sorted(cfg.env))} {where}" if cfg.env else ""))]


def _replacement(name: str, fields: dict | None) -> str:
    new, note = RENAMES.get(name, (None, ""))
    if new and fields is not None and new not in fields:
        return note + f" (but --{new} is not there either)"
    return note


def parser_sees_more(recipe: "RunRecipe") -> bool:
    """``lint`` would ask ms-swift's own parser (the training Python is there) for flags that ``run``'s
    pre-flight, which reads only the flag table, lets pass unchecked: those of the argument classes the table
    could not read (``FlagTable.partial``: transformers' TrainingArguments). `run` says so when it refuses
    (newcomer round 12: it counted 1 lint error where `lint` counted 2, `--learning_rte` the other)."""
    cmd = parse_command(recipe)
    return bool(cmd is not None and cmd.table is not None and cmd.table.partial(cmd.checked_as)
                and training_python(recipe))


def named_python(recipe: "RunRecipe") -> str | None:
    """The file ``swift.python`` names (``{recipe_dir}`` and ``~`` filled; a directory: its bin/python),
    whether or not it is there; None: the recipe names none."""
    python = recipe.swift.python
    if not python:
        return None
    from moeconsole.runner.recipes.recipe import fill
    python = os.path.expanduser(fill(python, {"recipe_dir": recipe.launch.recipe_dir}))
    return os.path.join(python, "bin", "python") if os.path.isdir(python) else python


def training_python(recipe: "RunRecipe") -> str | None:
    """The training environment's Python the recipe names (``swift.python``: the file, or a venv's
    bin/python), when it is there; None: no probe can be asked."""
    python = named_python(recipe)
    if not python or not os.path.isfile(python):
        return None
    # as lint's lines name it: `.venv-swift/bin/python`, not `recipes/../.venv-swift/bin/python` from `{recipe_dir}/..`
    # (newcomer round 12), where the lexical form is the same file (a `..` after a symlink may not be)
    short = os.path.normpath(python)
    return short if short != python and os.path.isfile(short) and os.path.samefile(short, python) else python


def preflight_needs(recipe: "RunRecipe", cmd: SwiftCommand | None = None) -> tuple[str, str, tuple[str, ...]] | None:
    """What ``run``'s pre-flight asks the training Python before launching: (python, the trainer the
    command builds, the modules its import needs beyond ms-swift's: ``probe.TRAINER_NEEDS``, the one table
    lint reads too); None: nothing to ask (no such trainer, or no training Python named), no process started."""
    cmd = cmd or parse_command(recipe)
    need = trainer_needs(cmd.checked_as, cmd.get("rlhf_type")) if cmd else None
    python = training_python(recipe) if need else None
    return (python, *need) if python and need else None


def _needed_modules(recipe: "RunRecipe", cmd: SwiftCommand, version: str | None = None) -> list[dict]:
    """The modules of ``preflight_needs`` the training Python lacks, each an error (the run would fail at
    start-up): ``run``'s pre-flight, and ``lint``'s where its probe could not import the trainer itself
    (a `megatron` command without megatron-core here)."""
    need = preflight_needs(recipe, cmd)
    if need is None:
        return []
    python, trainer, modules = need
    lacking = modules_missing_in(python, modules, env=_probe_env(recipe, cmd.env)) or []
    return [_missing_module(cmd, ProbeResult(python=python, version=version, missing_module={
        "module": m, "trainer": trainer, "kind": cmd.get("rlhf_type") or DEFAULT_RLHF_TYPE})) for m in lacking[:1]]


def _check_flags(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    python = training_python(recipe)
    if python:
        res = probe(python, cmd.checked_as, cmd.argv[cmd.start:], env=_probe_env(recipe, cmd.env))
        mismatch = version_mismatch(recipe, res.version)
        if not res.failed and not res.import_error:
            # the trainer's own import named what it lacks, else the table's modules (one error is enough)
            return mismatch + _from_probe(cmd, res) + ([] if res.missing_module else _needed_modules(recipe, cmd, res.version))
        why = res.failed or res.import_error
        out = [problem("info", "swift_parser_unavailable", f"ms-swift's own parser could not be used with {python} "
                                                      f"({why}); {cmd.how}")]
        return mismatch + out + _from_table(cmd, announce=False) + _needed_modules(recipe, cmd)
    named = named_python(recipe)
    if named:
        # the recipe names a training Python that is not on this machine (a typo, or lint on a login node):
        # its ms-swift was not asked, which the table's line alone does not say (newcomer round 14)
        return [problem("info", "swift_python_absent", f"swift.python names {named}, which is not on this machine: "
                                                       "its ms-swift's own parser was not asked (lint where it is does)")] \
            + _from_table(cmd)
    return _from_table(cmd)


def version_mismatch(recipe: "RunRecipe", installed: str | None) -> list[dict]:
    """The recipe names one ms-swift (``swift.version``) and the training Python has another: its
    flags, defaults and save layout are the installed one's, not what the recipe was written for."""
    wanted = recipe.swift.version
    if not (wanted and installed) or swift_flags.same_swift(str(wanted), installed):
        return []
    return [problem("warning", "swift_version_mismatch", f"the recipe targets ms-swift {wanted} (swift.version) but the "
                                                    f"training Python has ms-swift {installed}: flags, defaults and "
                                                    "save layouts follow the installed one"
                                                    + swift_flags.prerelease_note(str(wanted), installed))]


def _probe_env(recipe: "RunRecipe", recipe_env: dict[str, str]) -> dict[str, str]:
    """The environment the run's command gets (``pyexec.recipe_command_env``, the launcher's own builder:
    the caller's environment, the recipe's ``env`` with ``${NAME}`` resolved and nothing else filled,
    as docs/recipes.md says; reviewed, R57: this once filled ``{recipe_dir}`` too, so lint passed a
    ``PYTHONPATH`` the run did not get), with no GPU and no network: the probe only parses flags."""
    from moeconsole.runner.process import pyexec
    from moeconsole.runner.recipes.recipe import launch_argv, resolve_env
    env = pyexec.recipe_command_env(os.environ, launch_argv(recipe, {}), resolve_env(recipe_env))
    env = {k: v for k, v in env.items() if not k.startswith(("CUDA_", "NCCL_"))}
    env.update(CUDA_VISIBLE_DEVICES="", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def _from_probe(cmd: SwiftCommand, res: ProbeResult) -> list[dict]:
    where = f"ms-swift {res.version}'s own `{cmd.checked_as}` parser ({res.python})"
    out = [problem("info", "swift_checked_with", f"checked with {where}")]
    fields = cmd.table.fields(cmd.command) if cmd.table else None
    for f in res.flags:
        name = f["token"][2:].replace("-", "_")
        if f["status"] == "unknown":
            out.append(problem("error", "swift_unknown_flag", f"{f['token']}: ms-swift {res.version} `{cmd.command}` has no "
                                                          f"such flag (ValueError: remaining_argv)"
                                                          + (f"; {_replacement(name, fields)}" if name in RENAMES else "")))
        elif f["status"] == "ambiguous":
            out.append(problem("error", "swift_ambiguous_flag", f"{f['token']}: {f.get('message', 'ambiguous')} "
                                                            "(argparse exits 2)"
                                                            + (f"; {_replacement(name, fields)}" if name in RENAMES else "")))
        elif f["status"] == "abbreviated":
            out.append(problem("error", "swift_abbreviated_flag", f"{f['token']} is silently taken as {f['option']} by "
                                                              f"ms-swift {res.version}'s parser"
                                                              + (f"; {_replacement(name, fields)}" if name in RENAMES else "")))
    if res.error:
        out.append(problem("error", "swift_bad_value", f"ms-swift {res.version}'s parser: {res.error}"))
    if res.unknown_choice:
        bad = res.unknown_choice
        out.append(problem("error", "swift_bad_value", f"{bad['flag']} {bad['value']}: not one of ms-swift {res.version}'s "
                                                       f"choices ({', '.join(map(str, bad['choices']))}); its parser takes "
                                                       f"any word, the run would fail after loading the model "
                                                       f"({bad['raised']})"))
    if res.missing_module:
        out.append(_missing_module(cmd, res))
    return out


def _missing_module(cmd: SwiftCommand, res: ProbeResult) -> dict:
    """The trainer class the command builds cannot be imported in the training's Python: the run would
    fail at start-up, after its model and data loaded (``missing_dependency``); said before anything starts."""
    from moeconsole.runner.core.crash import pip_install
    miss = res.missing_module or {}
    module, trainer, kind = str(miss.get("module")), miss.get("trainer"), miss.get("kind")
    by = f" (--rlhf_type {kind})" if cmd.checked_as.endswith(" rlhf") and kind else ""
    whose = f"ms-swift {res.version}'s" if res.version else "ms-swift's"
    return problem("error", "swift_missing_module",
                   f"`{cmd.checked_as}`{by} builds {whose} {trainer or 'trainer'}, whose import needs the "
                   f"Python module '{module}', not installed in {res.python}: the run would fail at start-up "
                   f"(ModuleNotFoundError); `{res.python} -m {pip_install(module)}` (or the recipe's env PYTHONPATH "
                   "naming a directory that holds it)")


def _from_table(cmd: SwiftCommand, announce: bool = True) -> list[dict]:
    if cmd.table is None:
        return [problem("warning", "swift_no_flag_table", f"{cmd.how}: flags not checked")]
    fields = cmd.table.fields(cmd.checked_as)
    if fields is None:
        return [problem("info", "swift_no_flag_table", f"no flag table for `{cmd.checked_as}` in ms-swift {cmd.table.version}")]
    v = cmd.table.version
    partial = cmd.table.partial(cmd.checked_as)
    as_ = f" as `{cmd.checked_as}`" if cmd.checked_as != cmd.command else ""
    out = [problem("info", "swift_checked_with", cmd.how + as_ + (f" (`{cmd.command}` fields of ms-swift's own classes; "
                                                             f"{', '.join(partial)} not in the table)" if partial else ""))]
    if not announce:
        out = []
    args = cmd.argv[cmd.start:]
    resolved = swift_flags.resolve_flags(args, fields)
    for r in resolved:
        name = r.token[2:].replace("-", "_")
        fix = f"; {_replacement(name, fields)}" if name in RENAMES else ""
        if r.status == "unknown":
            if partial and name not in RENAMES:
                continue    # may be a transformers TrainingArguments field the table cannot see
            out.append(problem("error", "swift_unknown_flag", f"{r.token}: ms-swift {v} `{cmd.checked_as}` has no such flag "
                                                          f"(ValueError: remaining_argv){fix}"))
        elif r.status == "ambiguous":
            shown = ", ".join(r.candidates[:6]) + (", ..." if len(r.candidates) > 6 else "")
            out.append(problem("error", "swift_ambiguous_flag", f"{r.token}: ambiguous prefix in ms-swift {v} "
                                                            f"`{cmd.checked_as}` (argparse exits 2): could be {shown}{fix}"))
        elif r.status == "abbreviated":
            out.append(problem("error", "swift_abbreviated_flag", f"{r.token} is silently taken as --{r.dest} by ms-swift "
                                                              f"{v} `{cmd.checked_as}` (argparse prefix match){fix}"))
        elif r.dest is not None:
            bad = swift_flags.type_problem(fields[r.dest], swift_flags.values_of(args, r.index))
            if bad:
                out.append(problem("error", "swift_bad_value", f"{r.token} {bad}"))
    return out + _not_in_line(cmd, resolved)


def _not_in_line(cmd: SwiftCommand, resolved: list[swift_flags.Resolved]) -> list[dict]:
    """``swift.version: 4.5`` is checked against the line's newest release (4.5.3): a flag it added
    is still unknown to 4.5.0-4.5.2, which end at start-up with ``ValueError: remaining_argv``."""
    given = {r.dest: r.token for r in resolved if r.dest is not None}
    missing = swift_flags.missing_in_line(cmd.wanted, cmd.checked_as, list(given))
    return [problem("warning", "swift_flag_not_in_line", f"{given[name]}: ms-swift {', '.join(versions)} `{cmd.checked_as}` "
                                                      f"has no such flag (ValueError: remaining_argv there); swift.version "
                                                      f"{cmd.wanted} names the whole line: name the release you run")
            for name, versions in missing.items()]


# ---- the run's arithmetic ------------------------------------------------------------------
def rule_entry_point(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    word = swift_flags.unknown_subcommand(cmd.command)
    if word is not None:
        program = cmd.command.split(" ", 1)[0]
        return [problem("error", "swift_unknown_command",
                        f"`{program} {word}`: ms-swift's `{program}` has no subcommand {word!r} and stops at once with "
                        f"KeyError: '{word}' (its ROUTE_MAPPING, swift/cli/main.py); it has "
                        f"{', '.join(sorted(swift_flags.ROUTES[program]))}")]
    if cmd.command != "swift sft":
        return []
    given = [a[2:].split("=", 1)[0].replace("-", "_") for a in cmd.argv[cmd.start:] if a.startswith("--")]
    megatron_flags = [f for f in given if f in ("use_megatron", "megatron_use_mcore", *MEGATRON_ONLY)]
    if megatron_flags:
        shown = ", ".join(f"--{f}" for f in megatron_flags[:4])
        return [problem("error", "swift_megatron_entry_point", f"`swift sft` with Megatron flags ({shown}): ms-swift runs "
                                                          "Megatron training as `megatron sft` (lint --fix rewrites it)")]
    return []


def rule_warmup(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    total = cmd.num("train_iters") if cmd.megatron else cmd.num("max_steps")
    if cmd.megatron and cmd.num("num_train_epochs"):
        total = None        # ms-swift replaces train_iters (rule_train_iters_ignored)
    warm = cmd.num("lr_warmup_iters") if cmd.megatron else cmd.num("warmup_steps")
    frac = cmd.num("lr_warmup_fraction") if cmd.megatron else cmd.num("warmup_ratio")
    if frac is not None and frac > 1:
        return [problem("error", "swift_warmup_too_long", f"warmup fraction {frac:g} > 1: the learning rate never "
                                                     "reaches its peak")]
    if total and warm and warm >= total:
        return [problem("error", "swift_warmup_too_long", f"warmup {warm:.0f} iterations >= the run's {total:.0f}: the "
                                                     f"learning rate never reaches {cmd.get('lr') or cmd.get('learning_rate') or 'its peak'}")]
    return []


def _dataset_samples(recipe: "RunRecipe", cmd: SwiftCommand) -> int | None:
    given = recipe.swift.dataset_samples
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


def _global_batch(cmd: SwiftCommand) -> float:
    return cmd.num("global_batch_size") or 16.0      # MegatronArguments.global_batch_size default


def train_iters_estimate(recipe: "RunRecipe", cmd: SwiftCommand) -> tuple[int | None, str]:
    """The iterations the run will have, and how that is known: ``--train_iters`` when no epochs
    are given, else what ms-swift derives (``MegatronArguments.init_iters``) from the dataset's
    samples, an upper bound under packing. (None, why) when it cannot be known before the run."""
    iters, epochs = cmd.num("train_iters"), cmd.num("num_train_epochs")
    if not epochs:
        return (int(iters), "--train_iters") if iters else (None, "neither --train_iters nor --num_train_epochs")
    samples = _dataset_samples(recipe, cmd)
    if not samples:
        return None, "derived by ms-swift from the dataset (its size is not known here: swift.dataset_samples)"
    dp = sizes.data_parallel_size(world_size(cmd.env, list(recipe.command)), cmd.num("tensor_model_parallel_size"),
                                  cmd.num("pipeline_model_parallel_size"), cmd.num("context_parallel_size"))
    n = sizes.derived_train_iters(samples, int(epochs), int(_global_batch(cmd)), int(cmd.num("micro_batch_size") or 1),
                                  dp)
    packed = "; fewer once packing merges samples into rows" if cmd.flag("packing") else ""
    return n, (f"{samples:,} samples x {int(epochs)} epoch(s) // global batch {_global_batch(cmd):.0f}{packed}")


def rule_train_iters_ignored(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    """``--train_iters`` beside ``--num_train_epochs`` is dead on the Megatron path: ``init_iters``
    overwrites it from the dataset once it is built (4.2.0 and 4.6.0)."""
    if not (cmd.megatron and cmd.num("train_iters") and cmd.num("num_train_epochs")):
        return []
    n, how = train_iters_estimate(recipe, cmd)
    derived = f": ~{n:,} iterations ({how})" if n else f" ({how})"
    return [problem("warning", "swift_train_iters_ignored",
               f"--train_iters {cmd.num('train_iters'):.0f} is ignored: with --num_train_epochs "
               f"{cmd.num('num_train_epochs'):.0f} ms-swift sets train_iters from the dataset "
               f"(MegatronArguments.init_iters){derived}; drop one of the two")]


def typed_value(spec: dict | None, vals: list[str] | None) -> Any:
    """A flag's value as ms-swift's parser types it (``vals`` None: the field's default)."""
    spec = spec or {}
    t = str(spec.get("type", "")).replace(" ", "")
    if vals is None:
        d = spec.get("default")
        return [] if isinstance(d, dict) and d.get("factory") == "list" else (None if isinstance(d, dict) else d)
    if t.startswith(("List[", "Optional[List[")):
        return list(vals)
    if not vals:
        return True if "bool" in t else None
    v = vals[0]
    if "bool" in t and "str" not in t:
        return swift_flags.truthy(vals)
    try:
        if re.sub(r"^Optional\[(.*)\]$", r"\1", t) == "int":
            return int(v)
        if re.sub(r"^Optional\[(.*)\]$", r"\1", t) == "float":
            return float(v)
    except ValueError:
        return None         # swift_bad_value reports it
    return None if v == "None" else v


def startup_getter(recipe: "RunRecipe", cmd: SwiftCommand, values: dict[str, list[str]] | None = None):
    """``get(field)`` over the command (or ``values``) with ms-swift's types and defaults."""
    fields = (cmd.table.fields(cmd.checked_as) if cmd.table else None) or {}
    vals = cmd.values if values is None else values
    return lambda name: typed_value(fields.get(name), vals.get(name))


def rule_startup(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    """ms-swift's start-up checks (runner/recipes/swift/startup.py, mirrored from
    MegatronArguments.__post_init__/_init_distributed with their lines, and for `swift sft`/`pt`/`rlhf`
    the model-free refusals of SftArguments.__post_init__: ``sft_startup_errors``)."""
    from moeconsole.runner.recipes.swift.startup import sft_startup_errors, startup_errors
    if cmd.table is None or not cmd.table.fields(cmd.checked_as):
        return []       # the checks are a release's, on values typed by its fields: none to mirror here
    if not cmd.megatron:
        return [problem("error", e.rule, f"{e.exc}: {e.message} (`{cmd.checked_as}` refuses this at start-up: {e.where})")
                for e in sft_startup_errors(startup_getter(recipe, cmd), cmd.checked_as,
                                            values_known=cmd.config is None or not cmd.config.error,
                                            version=cmd.table.version)]
    version = cmd.table.version
    world = world_size(cmd.env, list(recipe.command))
    # the training's environment: this shell's, as `run` from it passes it on, and the recipe's over it
    env = {**pyexec.user_env(os.environ), **cmd.env}
    out = [problem("error", e.rule, f"{e.exc}: {e.message} (`{cmd.checked_as}` refuses this at start-up: {e.where})")
           for e in startup_errors(startup_getter(recipe, cmd), world, version, env)]
    from moeconsole.runner.recipes.resume import resume_template
    resume = _resume_values(recipe, cmd) if resume_template(recipe.resume) else None
    if resume is not None:
        seen = {p["message"] for p in out}
        for e in startup_errors(startup_getter(recipe, cmd, resume), world, version, env):
            msg = f"{e.exc}: {e.message} (a resumed attempt: `{cmd.checked_as}` refuses this at start-up: {e.where})"
            if f"{e.exc}: {e.message} (`{cmd.checked_as}` refuses this at start-up: {e.where})" not in seen:
                out.append(problem("error", e.rule, msg))
    return out


def rule_sequence_parallel(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    if not cmd.megatron or not cmd.flag("sequence_parallel"):
        return []
    tp = cmd.num("tensor_model_parallel_size") or 1
    if tp <= 1:
        return [problem("warning", "swift_sp_without_tp", "sequence_parallel true with tensor_model_parallel_size 1: "
                                                     "Megatron's sequence parallelism splits activations across the "
                                                     "TP group, so with TP=1 it does nothing (Megatron turns it off)")]
    return []


def rule_envelope(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    limit = recipe.swift.validated_max_length
    length = cmd.num("max_length")
    if limit and length and length > limit:
        cap = recipe.gpus.memory_capacity_gib
        on = f" on {cap} GiB GPUs" if cap else ""
        return [problem("warning", "swift_length_over_envelope",
                   f"max_length {length:.0f} > {limit}, the longest this recipe was validated at{on}: activation "
                   f"memory grows with length, expect OOM (swift.validated_max_length)")]
    return []


model_params_billion = sizes.model_params_billion


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


def _max_restarts(recipe: "RunRecipe") -> int:
    return recipe.restart.max_restarts


def rule_merged_disk(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    tuner = (cmd.get("tuner_type") or cmd.get("train_type") or ("full" if cmd.megatron else "lora")).lower()
    if not cmd.megatron or tuner != "lora" or not merge_lora_effective(cmd):
        return []
    params = model_params_billion(cmd.get("model"))
    if not params:
        return [problem("info", "swift_merged_save_disk", "merge_lora is on: every save also writes a full merged model "
                                                     "(checkpoint-N-merged/); size unknown from the model name")]
    per_byte = sizes.DTYPE_BYTES.get((cmd.get("torch_dtype") or "bfloat16").lower(), 2)
    per_save = params * 1e9 * per_byte
    on_disk, kept = recipe_saves_on_disk(recipe, cmd)
    need = on_disk * per_save
    how = ("" if cmd.flag("merge_lora") else " (merge_lora not given: it follows save_safetensors, true)")
    msg = (f"merge_lora true{how} writes a full merged model at every save: ~{disk_bytes(per_save)} each for "
           f"a {params:g}B model in {cmd.get('torch_dtype') or 'bf16'}; {kept} = ~{disk_bytes(need)}")
    where = cmd.get("output_dir") or cmd.get("save")
    free = _free_bytes(where) if where and "{" not in where else None
    if free:
        msg += f"; {free[0]} has {disk_bytes(free[1])} free here"
        if need > free[1]:
            return [problem("warning", "swift_merged_save_disk", msg + ": the disk can fill before the run ends (set "
                                                                  "--merge_lora false to save only the adapter, or "
                                                                  "remove old attempts' v<N>-<time>/ once synced)")]
    return [problem("info" if cmd.num("save_total_limit") else "warning", "swift_merged_save_disk", msg)]


def recipe_saves_on_disk(recipe: "RunRecipe", cmd: SwiftCommand) -> tuple[int, str]:
    """How many saves can sit on disk at once over the whole run, and why, in words: every
    ``save_steps`` and one at the end; ``save_total_limit`` per output directory (rotation after
    each save, ``_rotate_checkpoints``); every restart a new ``v<N>-<time>/`` that later attempts
    never rotate (``add_version_to_work_dir``), up to ``restart.max_restarts``."""
    iters, _how = train_iters_estimate(recipe, cmd)
    every = cmd.num("save_steps") or 500
    saves = sizes.ceil_div(iters, every) + 1 if iters else None     # every save_steps, and one at the end
    limit = int(cmd.num("save_total_limit") or 0) or None
    restarts = _max_restarts(recipe) if limit and cmd.flag("add_version") is not False else 0
    on_disk = sizes.saves_on_disk(saves if saves else (limit or 1) * (restarts + 1) + 1, limit, restarts)
    if limit:
        kept = (f"{limit} kept per output directory (save_total_limit); rotation runs after each save, and every "
                f"restart writes into a new v<N>-<time>/ that later attempts never rotate: with up to {restarts} "
                f"restart(s) (restart.max_restarts) up to {on_disk} saves on disk" if restarts else
                f"{limit} kept (save_total_limit), {on_disk} on disk while the next is written")
    else:
        kept = f"{on_disk} saves, none removed (no save_total_limit)"
    return on_disk, kept


def rule_adapter_disk(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    """The whole run's disk for a LoRA run that saves its adapter (``--merge_lora false``, or 4.6,
    which writes the adapter beside a merged model): the safetensors adapter (the LoRA's parameters
    in the model's dtype) and, with ``--no_save_optim false``, the Megatron state of the full-state
    resume, per save x the saves on disk at once (``saves_on_disk``), against the free space of the
    output file system. The merged model is ``swift_merged_save_disk``'s."""
    tuner = (cmd.get("tuner_type") or cmd.get("train_type") or "full").lower()
    version = cmd.table.version if cmd.table else ""
    if not cmd.megatron or tuner != "lora" or (merge_lora_effective(cmd) and version.startswith("4.2")):
        return []
    rank = int(cmd.num("lora_rank") or 8)
    from moeconsole.runner.recipes.memory_estimate import declared_config
    counted = sizes.lora_params_of(cmd.get("model"), rank, declared_config(recipe))
    if counted is None:
        return [problem("info", "swift_save_disk", f"each save holds the LoRA adapter of {cmd.get('model')}; its size is "
                                              "unknown here (no config.json of the model on this machine: "
                                              "memory.model_config)")]
    n, _path = counted
    per_byte = sizes.DTYPE_BYTES.get((cmd.get("torch_dtype") or "bfloat16").lower(), 2)
    adapter = n * per_byte
    full_state = n * (sizes.SHARD_BYTES_PER_PARAM + sizes.OPTIMIZER_BYTES_PER_PARAM) \
        if cmd.flag("no_save_optim") is False else 0
    per_save = adapter + full_state
    on_disk, kept = recipe_saves_on_disk(recipe, cmd)
    need = on_disk * per_save
    parts = f"~{disk_bytes(adapter)} adapter ({n / 1e9:.2f}B LoRA parameters x {per_byte} B)"
    if full_state:
        parts += f" + ~{disk_bytes(full_state)} Megatron state for the full-state resume"
    msg = f"the whole run's saves: {parts} per save; {kept} = ~{disk_bytes(need)}"
    where = cmd.get("output_dir")
    free = _free_bytes(where) if where and "{" not in where else None
    if free:
        msg += f"; {free[0]} has {disk_bytes(free[1])} free here"
        if need > free[1]:
            return [problem("warning", "swift_save_disk", msg + ": the disk can fill before the run ends (a lower "
                                                           "save_total_limit or restart.max_restarts, or remove "
                                                           "old attempts' v<N>-<time>/ once synced)")]
    return [problem("info", "swift_save_disk", msg)]


def rule_fused_experts(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    if cmd.megatron or cmd.command != "swift sft":
        return []
    targets = cmd.values.get("target_modules") or cmd.values.get("lora_target_modules") or ["all-linear"]
    model = cmd.get("model") or ""
    moe = re.search(r"moe|-A\d+(\.\d+)?B|\d+x\d+B", model, re.I)
    if "all-linear" in targets and moe and "target_parameters" not in cmd.values:
        return [problem("warning", "swift_all_linear_misses_experts",
                   f"{model}: on the transformers path `all-linear` reaches only the attention projections of an "
                   "MoE whose experts are fused 3-D parameters; add --target_parameters mlp.experts.gate_up_proj "
                   "mlp.experts.down_proj (and --lora_dropout 0). On `megatron sft` ms-swift covers the experts.")]
    return []


def rule_stub_trap(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    from moeconsole.runner.checkpoints.lint_rules import swift_stub_trap
    version = cmd.table.version if cmd.table else None
    return swift_stub_trap(cmd.argv, recipe.env, version=version)


def rule_resume(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    from moeconsole.runner.recipes.resume import template_problems
    resume = recipe.resume
    out = [problem("error", "resume_template", m) for m in template_problems(resume)]
    if cmd.megatron and resume.arg in ("--load", "--save"):
        out.append(problem("error", "swift_resume_arg", f"resume.arg {resume.arg}: ms-swift 4.x Megatron has no such flag; "
                                                   f"use resume.args: [{', '.join(suggested_resume(cmd))}]"))
    return out


def _resume_values(recipe: "RunRecipe", cmd: SwiftCommand) -> dict[str, list[str]]:
    """Flag -> values of a resumed attempt's command line: the command's, with the template's
    flags in their place (runner/recipes/resume.py replaces every spelling of a template flag)."""
    from moeconsole.runner.recipes.resume import groups, resume_template
    out = dict(cmd.values)
    for g in groups(resume_template(recipe.resume) or []):
        if not g[0].startswith("--"):
            continue
        name = g[0][2:].split("=", 1)[0].replace("-", "_")
        vals = [g[0].split("=", 1)[1]] if "=" in g[0] else g[1:]
        if name.startswith("no_") and name[3:] in ("finetune",):
            name, vals = name[3:], ["false" if swift_flags.truthy(vals) else "true"]
        out[name] = vals
    return out


def _warmup_words(recipe: "RunRecipe", cmd: SwiftCommand) -> str:
    """The warmup, in iterations, as ``get_optimizer_param_scheduler`` builds it."""
    frac, iters_ = cmd.num("lr_warmup_fraction"), cmd.num("lr_warmup_iters")
    total, how = train_iters_estimate(recipe, cmd)
    decay = cmd.num("lr_decay_iters") or total
    n = sizes.warmup_iters(warmup_iters=iters_, warmup_fraction=frac, decay_iters=decay)
    if frac is not None:
        return (f"the warmup of {frac:g} x lr_decay_iters" + (f" (~{n:,.0f} of ~{decay:,.0f} iterations: {how})"
                                                             if n else f" ({how})"))
    if not n:
        return "no warmup (lr_warmup_iters 0), but the cosine still starts over from the peak"
    return f"the {n:,.0f}-iteration warmup (lr_warmup_iters)"


def rule_resume_semantics(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    """What a resumed attempt really continues (BaseMegatronTrainer._load_checkpoint, trainers/base.py,
    4.2.0 and 4.6.0): ``--finetune false`` restores the iteration (tracker) and the data position
    (consumed samples from iter_N/common.pt); the adapter loads through mcore-bridge; the optimizer
    and the LR scheduler load only inside ``load_mcore_checkpoint`` (``--mcore_adapter`` /
    ``--mcore_model``). Otherwise the scheduler, built by ``get_optimizer_param_scheduler``, starts
    at step 0 again."""
    from moeconsole.runner.recipes.resume import resume_template
    from moeconsole.runner.recipes.step_count import (MEGATRON_FROM_ZERO, MEGATRON_NO_STATE,
                                                      megatron_resume_loses)
    resume = recipe.resume
    if not cmd.megatron or resume_template(resume) is None or resume.arg in ("--load", "--save"):
        return []
    form = "resume.args" if resume.args else f"resume.arg {resume.arg}"
    v = _resume_values(recipe, cmd)
    first = lambda k: (v.get(k) or [""])[0]          # noqa: E731
    loses = megatron_resume_loses(v)   # the one rule of what this resume restores (partial_resume says it too)
    finetune = loses == MEGATRON_FROM_ZERO
    adapters, model = first("adapters"), first("model")
    mcore = None if loses == MEGATRON_NO_STATE else \
        "mcore_adapter" if v.get("mcore_adapter") else "mcore_model" if v.get("mcore_model") else None
    out: list[dict] = []
    if adapters.rstrip("/").endswith("-merged"):
        out.append(problem("error", "swift_resume_merged_as_adapter",
                      f"--adapters {adapters}: a -merged directory is a full merged model, and --adapters loads "
                      "LoRA weights (bridge.load_weights(peft_format=True)); resume from the adapter in "
                      "checkpoint-N/ (4.6) or give the merged model as --model (4.2)"))
    if finetune:
        out.append(problem("error", "swift_resume_from_zero",
                      f"{form} without --finetune false: ms-swift loads the weights but restarts at iteration 0, so "
                      "every restart trains from iteration 1 again (MegatronArguments.finetune defaults to true, "
                      "megatron_args.py 4.6.0 l.595 / 4.2.0 l.455; only `if not args.finetune` reads the iteration: "
                      "trainers/base.py _load_checkpoint 4.6.0 l.120-121 / 4.2.0 l.113-114); lint --fix adds "
                      "--finetune false"))
        return out
    if mcore:
        no_optim = cmd.flag("no_save_optim")
        if no_optim:
            out.append(problem("error", "swift_resume_needs_mcore_state",
                          f"--{mcore} resumes from the Megatron state in iter_N/, but the command saves with "
                          "--no_save_optim true, which writes only common.pt there: save with --no_save_optim false"))
        else:
            out.append(problem("info", "swift_full_state_resume", full_state_cost(recipe, cmd)))
        return out
    lost = ("the optimizer and LR-scheduler state never load on this path (only load_mcore_checkpoint does, with "
            "--mcore_adapter/--mcore_model), so the scheduler starts again at step 0: every resume re-runs "
            f"{_warmup_words(recipe, cmd)} and restarts the cosine, which then ends before reaching min_lr"
            + ("; --no_load_optim/--no_load_rng change nothing here" if {"no_load_optim", "no_load_rng"} & set(v) else ""))
    offer = full_state_offer(cmd)
    if model.rstrip("/").endswith("-merged") and not adapters:
        out.append(problem("warning", "swift_resume_restarts_schedule",
                      f"resume with --model {model} --finetune false continues the iteration and the data position, "
                      "but the merged model becomes the new base and a new LoRA starts on top of it (zero lora_B, "
                      f"fresh Adam moments); {lost}{offer}"))
    elif adapters or model:
        out.append(problem("warning", "swift_resume_restarts_schedule",
                      f"resume with --{'adapters' if adapters else 'model'} --finetune false continues the iteration "
                      f"and the data position and loads the {'LoRA weights' if adapters else 'weights'}, but {lost}"
                      f"{offer}"))
    return out


def rule_resume_model_only(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    """A resume on the HF path (``--resume_from_checkpoint``) of saves made with
    ``--save_only_model true``: the Trainer's ``_save_checkpoint`` then writes no optimizer.pt,
    scheduler.pt or rng state, and ``_load_optimizer_and_scheduler`` loads both only when the
    optimizer file and scheduler.pt exist, silently nothing otherwise (transformers 5.19.0
    trainer.py l.3864-3884). ms-swift's ``--resume_only_model true`` skips them on purpose
    (4.6.0 swift/trainers/mixin.py l.280-288). Either way global_step continues from
    trainer_state.json while Adam and the LR schedule start again at step 0."""
    from moeconsole.runner.recipes.resume import resume_template
    if cmd.megatron or resume_template(recipe.resume) is None:
        return []
    v = _resume_values(recipe, cmd)
    if "resume_from_checkpoint" not in v or not swift_flags.truthy(v.get("save_only_model")):
        return []
    return [problem("warning", "swift_resume_restarts_schedule",
               "the checkpoints are saved with --save_only_model true: they hold no optimizer.pt, scheduler.pt or "
               "rng state, and transformers loads the optimizer and the LR scheduler only when both files are "
               "there (trainer.py _load_optimizer_and_scheduler), silently nothing otherwise; so every resume "
               "continues global_step from trainer_state.json but restarts Adam's moments and the LR schedule "
               "at step 0 (the warmup runs again, then the whole decay); save with --save_only_model false for a run "
               "that is meant to resume")]


# load_mcore_checkpoint (swift/megatron/utils/megatron_lm_utils.py) restores the optimizer and the
# scheduler from iter_N/ when --mcore_adapter/--mcore_model is given with --finetune false: the same
# in 4.2.0 (l.362, scheduler at l.458) and 4.6.0 (l.460, scheduler at l.584); save_mcore_checkpoint
# writes them unless --no_save_optim (4.2.0 trainers/base.py l.731-743, the same in 4.6.0).
FULL_STATE_LINES = {"4.2": "4.2.0 utils/megatron_lm_utils.py l.362-458", "4.6": "4.6.0 utils/megatron_lm_utils.py l.460-584"}


def full_state_offer(cmd: SwiftCommand) -> str:
    """The full-state resume, offered on every ms-swift 4.x with the lines that implement it."""
    version = cmd.table.version if cmd.table else ""
    if not version.startswith("4.") or version.startswith(("4.0", "4.1")):
        return ""
    where = FULL_STATE_LINES["4.2" if version.startswith("4.2") else "4.6"]
    return (f". On {version} the full-state resume keeps both (load_mcore_checkpoint, {where}): save with "
            "--no_save_optim false and resume with --mcore_adapter {checkpoint} --finetune false")


def full_state_cost(recipe: "RunRecipe", cmd: SwiftCommand) -> str:
    """What the full-state resume costs on disk: the adapter's Megatron copy and its optimizer state
    in every checkpoint-N/iter_N/."""
    per_param = sizes.SHARD_BYTES_PER_PARAM + sizes.OPTIMIZER_BYTES_PER_PARAM
    head = ("full-state resume: --mcore_adapter restores the adapter, the optimizer and the LR scheduler from "
            "iter_N/ (load_mcore_checkpoint), so the schedule continues; the price is disk: each save adds "
            f"torch_dist shards of ~{per_param} bytes per trainable parameter (bf16 weight + fp32 main copy + 2 "
            "fp32 Adam moments), about 7x the adapter's safetensors")
    rank = int(cmd.num("lora_rank") or 8)
    from moeconsole.runner.recipes.memory_estimate import declared_config
    counted = sizes.lora_params_of(cmd.get("model"), rank, declared_config(recipe))
    limit = int(cmd.num("save_total_limit") or 0) or None
    if counted is None:
        return head + (f"; the LoRA size is unknown here (no config.json of {cmd.get('model')} on this machine)"
                       f"{f', x {limit} saves kept per output directory' if limit else ''}")
    n, path = counted
    per_save = n * per_param
    kept = f" x {limit + 1} on disk while one is written = ~{disk_bytes(per_save * (limit + 1))}" if limit else ""
    return head + (f"; rank {rank} on {cmd.get('model')} trains ~{n / 1e9:.2f}B parameters (from {path}): "
                   f"~{disk_bytes(per_save)} of optimizer state per save{kept}")


def rule_saves_nothing(recipe: "RunRecipe", cmd: SwiftCommand) -> list[dict]:
    """``--save_strategy no`` on transformers' Trainer (``swift sft``/``pt``/``rlhf``): no save during the run
    (DefaultFlowCallback saves on the ``steps`` and ``epoch`` strategies only, transformers 5.19.0
    trainer_callback.py l.583-589, l.602-604, l.617-619) and none at its end (ms-swift's own save at max_steps
    and at ``--max_epochs`` is skipped for it, 4.6.0 swift/trainers/patcher.py l.70, l.81). Measured with real
    ms-swift 4.6 (4 steps): ``output/v0-<time>/`` holds no ``checkpoint-N/``, and the run ends ``UNSAVED``
    (``training finished (exit 0) but no checkpoint was saved under ...``); a crash restarts from step 0."""
    if cmd.checked_as not in ("swift sft", "swift pt", "swift rlhf") or (cmd.get("save_strategy") or "").lower() != "no":
        return []
    return [problem("warning", "swift_saves_nothing",
               "--save_strategy no: the Trainer saves no checkpoint during the run and ms-swift none at its end "
               "(swift/trainers/patcher.py saves at max_steps only when save_strategy is not no), so the trained "
               "weights are not written, a crash restarts from step 0 with nothing to resume from, and the run ends "
               "UNSAVED; use --save_strategy steps with --save_steps N (or epoch)")]


def suggested_resume(cmd: SwiftCommand) -> list[str]:
    v = cmd.table.version if cmd.table else "4.6"
    return list(RESUME_TEMPLATES["4.2" if v.startswith("4.2") else "4.6"])


# ---- lint --fix ----------------------------------------------------------------------------
def fix_recipe(recipe_raw: dict, recipe: "RunRecipe") -> tuple[dict, list[str]]:
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
            resolved = swift_flags.resolve_flags([a], fields)[0]
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
    elif cmd.megatron and not any(p["rule"] == "resume_template" for p in rule_resume(recipe, cmd)) \
            and any(p["rule"] == "swift_resume_from_zero" for p in rule_resume_semantics(recipe, cmd)):
        # trainers/base.py _load_checkpoint: the iteration and data position continue only with
        # --finetune false (the older resume.arg form becomes resume.args to carry it).
        from moeconsole.runner.recipes.model import Resume
        from moeconsole.runner.recipes.resume import resume_template
        template = resume_template(Resume(arg=resume.get("arg"), args=resume.get("args"))) or []
        resume.pop("arg", None)
        resume["args"] = template + ["--finetune", "false"]
        fixed["resume"] = resume
        changes.append(f"resume.args: {' '.join(resume['args'])} (--finetune false: the iteration continues)")
    return fixed, changes
