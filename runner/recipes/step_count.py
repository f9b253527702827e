"""Where a resumed attempt's own step count starts (pure): the checkpoint's step, or 0 when the
framework's resume mode loads the weights and counts from step 1 again. One rule
(``restarts_step_count``) that the runner's resume step, the restart policy's progress and the
step-time parser all ask; the argv is the attempt's as it runs (``recipe.attempt_argv``)."""
from __future__ import annotations

from pathlib import Path

from moeconsole.runner.checkpoints.discover import step_of
from moeconsole.runner.recipes.cmdline import canon, groups
from moeconsole.runner.recipes.swift.flags import command_of, truthy, version_key


def _settings(argv: list[str]) -> dict[str, list[str]]:
    """Flag (``cmdline.canon``) -> its values, the last spelling winning as argparse takes it."""
    out: dict[str, list[str]] = {}
    for g in groups(argv):
        if g[0].startswith("--") and g[0] != "--":
            out[canon(g[0])] = [g[0].split("=", 1)[1]] if "=" in g[0] else g[1:]
    return out


def _on(settings: dict[str, list[str]], name: str, default: bool) -> bool:
    """A boolean of HfArgumentParser: ``--x``, ``--x true``, ``--x=false``, or ``--no_x`` (the negation
    it adds for a field whose default is True)."""
    if name in settings:
        return truthy(settings[name])
    if f"no_{name}" in settings:
        return not truthy(settings[f"no_{name}"])
    return default


def swift_iteration_from_zero(settings: dict[str, list[str]]) -> bool:
    """A Megatron-SWIFT attempt with these flags starts at iteration 0 whatever it loads: only
    ``--finetune false`` reads the iteration (4.6.0 megatron/trainers/base.py ``_load_checkpoint``
    l.118-128; ``finetune`` defaults to True, megatron_args.py l.595). The one rule for this cause:
    ``restarts_step_count`` and lint's ``swift_resume_from_zero`` ask it."""
    return _on(settings, "finetune", True)


# What ``restarts_step_count`` says of that cause. Where lint's ``swift_resume_from_zero`` (an error,
# with its fix) names it, the recipe check's info does not say it a second time (``lint.lint_recipe``).
SWIFT_FROM_ZERO = "Megatron-SWIFT without --finetune false loads the weights and counts from iteration 1 again"


# The first ms-swift whose --resume_only_model keeps global_step unless --ignore_data_skip is also given.
ONLY_MODEL_KEEPS_STEP = "3.7.0"


def restarts_step_count(argv: list[str], swift_version: str | None = None) -> str | None:
    """Why an attempt run with ``argv`` counts its steps from 1 again whatever checkpoint it loads
    (None: its trainer goes on from the checkpoint's step). The one rule the restart policy's
    progress, the repeated-crash rule, the resume step shown and the step-time parser ask:

    - ms-swift on the transformers Trainer (``swift sft/pt/rlhf``): ``--resume_only_model true
      --ignore_data_skip true`` drops ``resume_from_checkpoint`` before ``Trainer.train`` (4.6.0
      swift/trainers/mixin.py l.149-152, the same since 3.7.0 l.121: the weights came in as
      ``--adapters``/``--model``, sft_args.py l.199-206), so ``global_step`` starts at 0. Before
      3.7 (``swift_version``, the recipe's ``swift.version``) ``--resume_only_model`` alone did it
      (3.0.0-3.6.4 swift/llm/train/tuner.py l.383-384; 2.6.1 trainers/mixin.py ``train`` l.484-488).
      Without ``--resume_from_checkpoint`` (a checkpoint given as ``--adapters``/``--model``)
      nothing restores it either. Otherwise the Trainer reads ``global_step`` from
      trainer_state.json and counts on.
    - Megatron-SWIFT (``megatron sft/pt/rlhf``): only ``--finetune false`` reads the iteration
      (4.6.0 megatron/trainers/base.py ``_load_checkpoint`` l.118-128; ``finetune`` defaults to
      True, megatron_args.py l.595); ``--mcore_model`` on a LoRA run without ``--mcore_adapter``
      loads the base with finetune forced and sets the iteration to 0 (utils/megatron_lm_utils.py
      l.476-480, l.567-568). ``--no_load_optim``/``--no_load_rng`` keep the iteration.
    - Megatron-LM and any other command: its ``--finetune`` switch sets the iteration to 0
      (megatron/training/checkpointing.py ``load_checkpoint``: ``if args.finetune or release:
      iteration = 0``); ``--no-load-optim`` keeps it."""
    command, start = command_of(argv)
    settings = _settings(argv[start:] if command else argv)
    if command is not None and command.startswith("swift "):
        if not settings.get("resume_from_checkpoint"):
            return f"`{command}` without --resume_from_checkpoint restores no global_step"
        if _on(settings, "resume_only_model", False):
            if _on(settings, "ignore_data_skip", False):
                return ("--resume_only_model with --ignore_data_skip: ms-swift loads the weights only and the "
                        "Trainer counts from step 1 again")
            if swift_version and version_key(swift_version) < version_key(ONLY_MODEL_KEEPS_STEP):
                return (f"--resume_only_model on ms-swift {swift_version} (before {ONLY_MODEL_KEEPS_STEP}): the "
                        "Trainer counts from step 1 again")
        return None
    if command is not None and command.startswith("megatron "):
        if swift_iteration_from_zero(settings):
            return SWIFT_FROM_ZERO
        if settings.get("mcore_model") and not settings.get("mcore_adapter") \
                and (settings.get("tuner_type") or ["full"])[0] != "full":
            return "--mcore_model on a LoRA run loads the base as a fine-tune: the iteration starts at 0 again"
        return None
    if "finetune" in settings and not settings["finetune"]:
        return "--finetune: Megatron-LM loads the weights and counts from iteration 1 again"
    return None


# transformers' Trainer loads the optimizer and the LR scheduler of a resume only when the checkpoint holds
# an optimizer file (optimizer.pt, optimizer.bin, or a directory named for it) and scheduler.pt, and says
# nothing otherwise (transformers 5.19.0 trainer.py ``_load_optimizer_and_scheduler`` l.3848-3885); a save
# made with ``--save_only_model true`` holds neither (``_save_checkpoint``, l.3356-3361). Under DeepSpeed the
# engine loads them from its ``global_step*`` directory instead (l.3853-3862): not judged here.
_OPTIMIZER_FILES = ("optimizer.pt", "optimizer.bin")


def _trainer_state_missing(checkpoint: Path, deepspeed: bool = False) -> str | None:
    """What a Trainer's resume from ``checkpoint`` finds no state for (``_OPTIMIZER_FILES`` above), or None:
    a whole save, not a Trainer's (no trainer_state.json), or a directory not readable here. Under DeepSpeed
    (``deepspeed``: the argv's ``--deepspeed``) the engine's ``global_step*/`` directory holds that state, and
    transformers 5.19.0 trainer.py l.1787-1791 calls ``deepspeed_load_checkpoint`` first, which raises
    "Can't find a valid checkpoint at ..." without it (integrations/deepspeed.py l.659-673): no fresh start,
    a failed one (review R72)."""
    try:
        if not (checkpoint / "trainer_state.json").is_file():
            return None
        names = {p.name: p.is_dir() for p in checkpoint.iterdir()}
    except OSError:
        return None
    if any(is_dir and name.startswith("global_step") for name, is_dir in names.items()):
        return None
    if deepspeed:
        return ("the save holds no DeepSpeed state (no global_step*/: saved with --save_only_model true): "
                "transformers' resume under --deepspeed fails with \"Can't find a valid checkpoint\"")
    optimizer = any(names.get(f) is False for f in _OPTIMIZER_FILES) or \
        any(is_dir and "optimizer" in name for name, is_dir in names.items())
    scheduler = names.get("scheduler.pt") is False
    if optimizer and scheduler:
        return None
    missing = " or ".join(n for n, there in (("optimizer.pt", optimizer), ("scheduler.pt", scheduler)) if not there)
    return (f"the save holds no {missing} (saved with --save_only_model true): the Trainer starts "
            + ("Adam's moments and the LR schedule" if not optimizer and not scheduler else
               "Adam's moments" if not optimizer else "the LR schedule") + " afresh")


# What a Megatron-SWIFT resume loads (``megatron_resume_loses``): the key every reader decides on.
MEGATRON_FROM_ZERO = "from_zero"      # --finetune left true: weights only, iteration 0, a fresh optimizer
MEGATRON_NO_STATE = "no_state"        # --adapters/--model --finetune false: iteration on, no optimizer/scheduler
MEGATRON_NO_OPTIM = "no_optim"        # --mcore_* --finetune false, with --no_load_optim or a --no_save_optim save


def megatron_resume_loses(settings: dict[str, list[str]]) -> str | None:
    """What a Megatron-SWIFT resume with these flags (``_settings``, or lint's resume values) does not
    restore, as a ``MEGATRON_*`` key, or None (a full resume: ``--mcore_adapter``/``--mcore_model`` with
    ``--finetune false``). ms-swift 4.6.0 megatron/trainers/base.py ``_load_checkpoint`` l.118-128: only
    ``--finetune false`` reads the iteration (``swift_iteration_from_zero``); the optimizer and the LR
    scheduler load only inside ``load_mcore_checkpoint`` (utils/megatron_lm_utils.py l.460-584), which runs
    for ``--mcore_adapter``/``--mcore_model``; ``save_mcore_checkpoint`` writes no optimizer under
    ``--no_save_optim`` (trainers/base.py). The one rule lint's ``rule_resume_semantics`` and
    ``partial_resume`` ask."""
    if swift_iteration_from_zero(settings):
        return MEGATRON_FROM_ZERO
    if not (settings.get("mcore_adapter") or settings.get("mcore_model")):
        return MEGATRON_NO_STATE
    if _on(settings, "no_save_optim", False) or _on(settings, "no_load_optim", False):
        return MEGATRON_NO_OPTIM
    return None


_MEGATRON_WORDS = {
    MEGATRON_FROM_ZERO: ("weights only (Megatron-SWIFT without --finetune false): the iteration starts at 0 again, "
                         "with a fresh optimizer and LR schedule"),
    MEGATRON_NO_STATE: ("the iteration and data position go on, but the optimizer and LR-scheduler state never load "
                        "without --mcore_adapter/--mcore_model: Adam's moments and the LR schedule start afresh"),
    MEGATRON_NO_OPTIM: ("no optimizer state (--no_save_optim saves or --no_load_optim): Adam's moments start afresh"),
}


def partial_resume(argv: list[str], checkpoint: str | None, swift_version: str | None = None, *,
                   trainer: bool = False) -> str | None:
    """What an attempt run with ``argv`` that resumes from ``checkpoint`` does not restore (None: a full
    resume, a fresh start, or not known). The one rule the attempt's ``attempt_start`` event and every view
    of it say:

    - ms-swift's ``--resume_only_model true`` (``swift sft/pt/rlhf``): the weights are loaded, the
      optimizer, the LR scheduler and the RNG state are not (4.6.0 swift/trainers/mixin.py
      ``_load_rng_state`` l.280-283, ``_load_optimizer_and_scheduler`` l.285-287); with
      ``--ignore_data_skip`` the step count starts at 1 again too (``restarts_step_count``).
    - ``swift sft/pt/rlhf`` resuming through ``--adapters``/``--model`` without ``--resume_from_checkpoint``:
      the weights only (sft_args.py l.199-206), no optimizer, scheduler or global_step (review R72).
    - Megatron-SWIFT (``megatron sft/pt/rlhf``): ``megatron_resume_loses`` (review R72: the project's own
      recipes resume with ``--adapters {checkpoint} --finetune false``).
    - a save without the optimizer and scheduler files (``_trainer_state_missing``) of a run that saves
      through transformers' Trainer (``trainer``: ``flags.run_saves_through_trainer``); another trainer
      (moeconsole's demo, a loop of one's own) keeps its state in files of its own."""
    if not checkpoint:
        return None
    command, start = command_of(argv)
    settings = _settings(argv[start:] if command else argv)
    if command is not None and command.startswith("megatron "):
        loses = megatron_resume_loses(settings)
        return _MEGATRON_WORDS[loses] if loses is not None else None
    if command is not None and command.startswith("swift "):
        if not settings.get("resume_from_checkpoint"):
            via = "--adapters" if settings.get("adapters") else "--model" if settings.get("model") else None
            if via is not None:
                return (f"weights only ({via} without --resume_from_checkpoint): ms-swift loads no optimizer, "
                        "LR schedule, RNG state or global_step, and the step count starts at 1 again")
        elif _on(settings, "resume_only_model", False):
            again = restarts_step_count(argv, swift_version)
            return ("weights only (--resume_only_model true): ms-swift loads no optimizer, LR schedule or RNG state"
                    + (", and the step count starts at 1 again" if again else ", the step count goes on"))
    if not trainer:
        return None
    return _trainer_state_missing(Path(checkpoint), deepspeed=bool(settings.get("deepspeed")))


def count_start(argv: list[str], checkpoint: str | None, swift_version: str | None = None) -> int | None:
    """The step an attempt's own step count starts from: None for a fresh start (no checkpoint),
    0 when its trainer counts from step 1 again (``restarts_step_count``), else the checkpoint's
    step (``discover.step_of``). What a resumed attempt must pass to have made progress."""
    if not checkpoint:
        return None
    if restarts_step_count(argv, swift_version) is not None:
        return 0
    return step_of(Path(checkpoint))
