"""Recipe checks before anything is launched: each a small function returning problems.

A problem is ``{"level": "error"|"warning"|"info", "rule": name, "message": one line}``.
Errors stop ``moeconsole run``; ``lint.ignore`` in the recipe silences rules by name.
"""
from __future__ import annotations

import importlib.util
import os
import re
import shutil
from typing import TYPE_CHECKING, Callable

from moeconsole.runner.recipes import cmdline, recipe as recipes
from moeconsole.runner.rundir.secrets import holds_token, is_secret_name

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import RunRecipe

Problem = dict


def problem(level: str, rule: str, message: str) -> Problem:
    """One lint or doctor finding (the module docstring's shape)."""
    return {"level": level, "rule": rule, "message": message}


def check_argv_shape(recipe: "RunRecipe") -> list[Problem]:
    cmd = recipe.command
    out = []
    if len(cmd) == 1 and " " in cmd[0].strip():
        out.append(problem("error", "shell_string", f"command is one string {cmd[0]!r}: give the arguments as a list "
                                               "(recipes never run through a shell)"))
    for i, a in enumerate(cmd[:-1]):
        if os.path.basename(a) in ("sh", "bash", "zsh", "dash") and cmd[i + 1] == "-c":
            out.append(problem("warning", "shell_wrapper", "command runs through a shell (-c): signals and exit "
                                                      "codes of the training pass through it"))
    return out


# What lint fills in to build the command the runner will run on a resumed attempt whose
# rendezvous port had to move (values are placeholders; only the shape of the command matters).
SAMPLE_CHECKPOINT = "<checkpoint>"
SAMPLE_PORT = 1


def launch_commands(recipe: "RunRecipe") -> dict[str, list[str]]:
    """The commands the runner will run for this recipe, built by the runner's own function
    (``recipe.attempt_argv``): ``first`` (the first attempt) and ``resumed`` (an attempt that
    resumes from a checkpoint after its rendezvous port had to move). Run-time placeholders
    (``{run_dir}``) stay unfilled."""
    values = {"recipe_dir": recipe.launch.recipe_dir}
    return {"first": recipes.attempt_argv(recipe, values),
            "resumed": recipes.attempt_argv(recipe, values, resume_from=SAMPLE_CHECKPOINT, port=SAMPLE_PORT)}


def check_command_layout(recipe: "RunRecipe") -> list[Problem]:
    """Launcher flags after the training script, in the commands the runner will run
    (:func:`launch_commands`): what lint passes is what runs."""
    when = {"first": "", "resumed": " once the runner resumes it or moves its rendezvous port"}
    out, seen = [], set()
    for name, argv in launch_commands(recipe).items():
        for line in cmdline.misplaced(argv):
            if line not in seen:
                seen.add(line)
                out.append(problem("error", "launcher_flag_after_script", f"{line}{when[name]}"))
    return out


def check_executable(recipe: "RunRecipe", *, preflight: bool = False) -> list[Problem]:
    """A missing executable is a warning here (the recipe may be linted on another machine
    than the one that runs it) and an error in ``run``'s pre-flight."""
    level = "error" if preflight else "warning"
    exe = recipe.command[0]
    if exe == "{python}":
        return _check_python_module(recipe, level) or _check_script(recipe, level)
    # Placeholders known before launch are filled; run-time ones ({run_dir}) cannot be checked.
    exe = recipes.fill(exe, {"recipe_dir": recipe.launch.recipe_dir})
    if "{" in exe:
        return []
    if os.sep in exe:
        return _check_path_executable(recipe, exe, level)
    if shutil.which(exe) is not None:
        return _check_script(recipe, level)
    what = f"{exe!r} is not an executable on PATH here"
    # the next step: the recipe's own `setup`, else the two ways out; a bare `python` (`run --
    # python train.py`, the README's example) where only `python3` is installed, as PEP 394 allows
    # a distribution to ship it (Debian, Ubuntu): that name
    fix = f"set it up: {recipe.setup}" if recipe.setup else "install it, or name it by its full path in command"
    if exe in ("python", "pip") and not recipe.setup and shutil.which(exe + "3"):
        fix = f"this machine has `{exe}3`: name that instead (`moeconsole run -- {exe}3 ...`, or `{exe}3` in command)"
    return [problem(level, "executable_missing", f"{what}; {fix}")]


def _check_path_executable(recipe: "RunRecipe", exe: str, level: str) -> list[Problem]:
    """A command whose program is a path (`./train.sh`, `/opt/x/bin/train`): a relative one is
    found where the command runs (``command_dir``: the recipe's ``workdir``, as the engine starts
    it with that ``cwd``, which POSIX ``subprocess`` searches for a relative program), not where
    lint runs (a recipe with ``workdir`` run from elsewhere had been refused: "not an executable
    file here"). What is wrong with it is said as what it is: no such file, a directory, a file
    without execute permission (each had read "install it, or name it by its full path", the
    path given full already: newcomer round 11)."""
    where = command_dir(recipe)
    if where is None and not os.path.isabs(exe):
        return []   # where it runs is known only at run time ({run_dir})
    path = exe if os.path.isabs(exe) else os.path.join(where or "", exe)
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return _check_script(recipe, level)
    from moeconsole.runner.core.shellwords import quote
    shown = repr(exe) if os.path.isabs(exe) else f"{exe!r} (in {where})"
    if not os.path.lexists(path):
        what = f"{shown}: no such file"
        fix = (f"set it up: {recipe.setup}" if recipe.setup else
               "fix its path in command" + ("" if os.path.isabs(exe) else
                                            " (a relative one is taken from workdir, else from where `run` is typed)"))
    elif os.path.isdir(path):
        what, fix = f"{shown} is a directory", "name the program in it"
    else:
        # a script without the x bit: the mode, or its interpreter first (a .py file is a Python script)
        interpreter = "python3" if exe.endswith(".py") else "bash" if exe.endswith(".sh") else "its interpreter"
        what = f"{shown} is a file without execute permission"
        fix = f"`chmod +x {quote(path)}`, or put {interpreter} before it in command"
    return [problem(level, "executable_missing", f"{what}; {fix}")]


def _check_script(recipe: "RunRecipe", level: str) -> list[Problem]:
    """The training script a Python or torchrun command names (``python my_train.py``,
    ``torchrun --nproc_per_node 2 train.py``) is a file where the command will run: the
    recipe's ``workdir``, else the directory ``run`` is typed in. A typo there failed every
    attempt with Python's "can't open file" (exit 2), each one restarted."""
    argv = recipe.command
    layout = cmdline.argv_layout(argv)
    if layout.script_at >= len(argv) or layout.insert_at != layout.script_at:   # `-m`, `--no-python`
        return []
    script = argv[layout.script_at]
    if not script.endswith(".py") or script.startswith("-"):
        return []
    script = recipes.fill(script, {"recipe_dir": recipe.launch.recipe_dir})
    where = command_dir(recipe)
    if "{" in script or where is None:   # run-time placeholders ({run_dir}) cannot be checked
        return []
    path = os.path.join(where, script)
    if os.path.isfile(path):
        return []
    return [problem(level, "script_missing",
                    f"the training script {script!r} is not a file in {where}; fix its path in the command "
                    f"(or set workdir to the directory that holds it)")]


def command_dir(recipe: "RunRecipe") -> str | None:
    """The directory the command will run in, as lint can know it: the recipe's ``workdir``, else
    the directory ``run`` is typed in (the launcher's ``launch.cwd``); None when it holds a run-time
    placeholder (``{run_dir}``) or the directory typed in is gone (``run`` says so itself)."""
    try:
        where = recipes.fill(recipe.workdir, {"recipe_dir": recipe.launch.recipe_dir}) if recipe.workdir \
            else (recipe.launch.cwd or os.getcwd())
    except FileNotFoundError:
        return None
    return None if "{" in where else where


def _check_python_module(recipe: "RunRecipe", level: str) -> list[Problem]:
    cmd = recipe.command
    i = 1  # past the interpreter's own flags (`-P`, `-u`, `-X opt`, `-W arg`) to its `-m`
    while i < len(cmd) and cmd[i].startswith("-") and cmd[i] != "-m":
        i += 2 if cmd[i] in ("-X", "-W") else 1
    if i + 1 < len(cmd) and cmd[i] == "-m":
        mod = cmd[i + 1]
        try:
            found = importlib.util.find_spec(mod) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return [problem(level, "module_missing", f"python module {mod!r} is not importable here")]
        return _check_requirements(mod, level)
    return []


def _check_requirements(mod: str, level: str) -> list[Problem]:
    """The modules one of our own workloads (``python -m moeconsole.runner.demo.train``) imports, declared as
    ``REQUIRES`` in its package, importable by this Python (``{python}`` is this interpreter).
    User modules are never imported here: that would run their code."""
    if not mod.startswith("moeconsole.runner."):
        return []
    import importlib
    import sys
    parts = mod.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            pkg = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        requires = getattr(pkg, "REQUIRES", None)
        if not requires:
            continue
        missing = []
        for name in requires:
            try:
                if importlib.util.find_spec(name) is None:
                    missing.append(name)
            except (ImportError, ValueError):
                missing.append(name)
        if missing:
            hint = getattr(pkg, "install_hint", None)
            how = hint(sys.executable) if hint else f"`{sys.executable} -m pip install {' '.join(missing)}`"
            return [problem(level, "missing_dependency",
                       f"{mod} needs {', '.join(missing)}, which {sys.executable} cannot import: {how}")]
        return []
    return []


def check_secrets(recipe: "RunRecipe") -> list[Problem]:
    out = []
    for k, v in recipe.env.items():
        if is_secret_name(k) and not re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}", v):
            out.append(problem("warning", "secret_literal", f"env.{k} holds a literal secret; write ${{{k}}} to take it "
                                                       "from your environment (it is kept out of logs either way)"))
    for a in recipe.command:
        if holds_token(a):
            out.append(problem("error", "secret_in_argv", "a token appears in the command line, where every process "
                                                     "listing shows it: pass it through env instead"))
            break
    return out


def check_checkpoints(recipe: "RunRecipe") -> list[Problem]:
    ck = recipe.checkpoints
    resumes = recipe.resume.arg or recipe.resume.args
    out = []
    if not ck.dir:
        saves_in = swift_output_dir(recipe)
        if saves_in is not None:   # the command says where: name it, and ms-swift's resume flag with it
            where = (f"ms-swift saves under --output_dir {saves_in}, which is not watched: "
                     f"`--set checkpoints.dir={saves_in}`" + ("" if resumes else " `--set resume.arg=--resume_from_checkpoint`")
                     + " on `run`, or `checkpoints: {dir: " + saves_in + "}` in a recipe")
        else:
            where = "where the training saves: `checkpoints: {dir: DIR}` in a recipe, `--set checkpoints.dir=DIR` on `run`"
        out.append(problem("warning", "no_checkpoint_dir", "checkpoints.dir is not set: saves are not verified and "
                                                      f"restarts cannot resume ({where})"))
        if resumes:
            out.append(problem("error", "resume_without_checkpoints", "resume is set but checkpoints.dir is not"))
    elif not resumes:
        out.append(problem("warning", "no_resume_arg", "resume.arg is not set: a restart starts from step 0 "
                                                  "unless the command resumes by itself (the flag it resumes "
                                                  "with: `resume: {arg: FLAG}` in a recipe, "
                                                  "`--set resume.arg=FLAG` on `run`)"))
    else:
        from moeconsole.runner.recipes.step_count import restarts_step_count
        from moeconsole.runner.recipes.swift.flags import trainer_argv
        why = restarts_step_count(trainer_argv(launch_commands(recipe)["resumed"], command_dir(recipe)),
                                  recipe.swift.version)
        if why:     # said once: not beside swift_resume_from_zero, which names this cause with its fix (lint_recipe)
            out.append(problem("info", "resume_counts_from_step_1",
                               f"a resumed attempt counts its steps from 1 again ({why}): its steps are its own, "
                               "the restart policy counts its progress from 0, and the newest save is the one "
                               "written last"))
    return out


def check_supervision(recipe: "RunRecipe") -> list[Problem]:
    out = []
    cd = recipe.cooldown
    if recipe.kill.grace_s < 5 and _is_distributed(recipe):
        out.append(problem("warning", "short_grace", f"kill.grace_s={recipe.kill.grace_s}: NCCL and CUDA need "
                                                "time to clean up; 30-60 s is usual on a GPU node"))
    if cd.ceiling_s == 0 and _is_distributed(recipe):
        out.append(problem("warning", "no_cooldown", "cooldown.ceiling_s=0: a relaunch can hit stale NCCL state or "
                                                "a port in TIME_WAIT"))
    return out


def _is_distributed(recipe: "RunRecipe") -> bool:
    joined = " ".join(recipe.command)
    return any(s in joined for s in ("torchrun", "torch.distributed.run", "NPROC_PER_NODE", "megatron")) or \
        "NPROC_PER_NODE" in recipe.env


def command_flags(argv: list[str]) -> dict[str, str]:
    """``--name value`` / ``--name=value`` / a bare ``--flag`` (true) of a command, by name."""
    flags: dict[str, str] = {}
    for i, a in enumerate(argv):
        if a.startswith("--"):
            if "=" in a:
                k, v = a[2:].split("=", 1)
            else:
                k = a[2:]
                v = argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") else "true"
            flags[k] = v
    return flags


def swift_output_dir(recipe: "RunRecipe") -> str | None:
    """The ``--output_dir`` an ms-swift command saves under (its config file's too), as written;
    None for another command or one that does not name it."""
    if not cmdline.is_swift_command(recipe.command):
        return None
    from moeconsole.runner.recipes.swift.lint import swift_launch
    return command_flags(swift_launch(recipe)[0]).get("output_dir") or None


def check_swift(recipe: "RunRecipe", *, preflight: bool = False) -> list[Problem]:
    """ms-swift commands (runner/recipes/swift/lint.py). ``run``'s pre-flight checks against the flag
    tables, and asks the training Python only whether it has the modules the command's trainer imports
    beyond ms-swift's requirements (``swift.lint.preflight_needs``); ms-swift's own parser is asked by ``lint``."""
    argv = recipe.command
    if not cmdline.is_swift_command(argv):
        return []
    from moeconsole.runner.recipes.swift.lint import check_swift_recipe, swift_launch
    out = check_swift_recipe(recipe, probe_parser=not preflight)
    argv = swift_launch(recipe)[0]
    flags = command_flags(argv)
    if "sft" in argv[:3] and "merge_lora" in flags and "megatron" not in " ".join(argv[:2]) \
            and "use_megatron" not in flags:
        out.append(problem("warning", "swift_merge_lora_sft", "--merge_lora is not a `swift sft` argument in 4.6; "
                                                         "merge with `swift export --merge_lora true` afterwards"))
    ck_dir = recipe.checkpoints.dir
    if "output_dir" in flags and ck_dir and ck_dir.rstrip("/") == flags["output_dir"].rstrip("/"):
        out.append(problem("info", "swift_versioned_output", "ms-swift writes into <output_dir>/v<N>-<time>/: "
                                                        "checkpoint discovery looks inside those"))
    elif "output_dir" in flags and ck_dir and saves_elsewhere(flags["output_dir"], ck_dir, command_dir(recipe)):
        out.append(problem("error", "swift_output_elsewhere",
                           f"ms-swift saves its checkpoints under --output_dir {flags['output_dir']} but "
                           f"checkpoints.dir is {ck_dir}: no save would be found, verified or resumed from "
                           f"(the run would end unsaved); set checkpoints.dir to it too "
                           f"(--set checkpoints.dir={flags['output_dir']})"))
    return out


def saves_elsewhere(output_dir: str, ck_dir: str, cwd: str | None) -> bool:
    """Does ms-swift save outside ``ck_dir`` (the recipe's checkpoints.dir), where the runner never
    looks? ms-swift makes ``--output_dir`` absolute from the directory it runs in and saves into it,
    or into a ``v<N>-<time>/`` under it (4.6.0 swift/arguments/sft_args.py l.379-383 and l.401-404;
    megatron: swift/megatron/arguments/sft_args.py l.18-24). Only a certain answer is True: a
    checkpoints.dir under the run directory (``{run_dir}``, made at launch) never holds a path
    given without it; an absolute checkpoints.dir may hold ``{run_dir}`` (a runs dir under it)."""
    def norm(path: str) -> str | None:
        if path.startswith("{") or os.path.isabs(path):
            return os.path.normpath(path)
        return os.path.normpath(os.path.join(cwd, path)) if cwd else None
    out, ck = norm(output_dir), norm(ck_dir)
    if out is None or ck is None or ("{" in out and "{" not in ck):
        return False
    return out != ck and not out.startswith(ck.rstrip("/") + "/")


def check_gpus(recipe: "RunRecipe") -> list[Problem]:
    g = recipe.gpus
    out = []
    from moeconsole.runner.recipes.swift.lint import swift_launch_env
    counts = cmdline.launch_counts(swift_launch_env(recipe), list(recipe.command))   # the one rule for what torchrun starts
    nproc = counts[0].strip() if counts else None
    if g.devices and nproc and nproc.isdigit() and int(nproc) != len(g.devices):
        out.append(problem("warning", "gpu_count_mismatch", f"{nproc} processes per node but gpus.devices lists "
                                                       f"{len(g.devices)} GPUs"))
    if _is_distributed(recipe) and not g.memory_capacity_gib:
        out.append(problem("info", "no_memory_capacity", "gpus.memory_capacity_gib is not set: memory headroom "
                                                    "alerts use the GPU's reported total"))
    return out


def check_gpu_here(recipe: "RunRecipe") -> list[Problem]:
    """The recipe names GPUs (``gpus.devices``) and this machine has none (``telemetry.gpu.no_gpu_here``:
    no NVIDIA driver, no GPU device node): the runner's own ``no_gpu_here`` warning, said before
    anything is launched (newcomer round 15: the 8xH200 recipe linted clean on a laptop, and only the
    run screen said the GPUs would never come). A warning: the recipe may be meant for another machine.
    A Slurm recipe's GPUs are the allocation's, on another node: not asked here."""
    devices = list(recipe.gpus.devices or ())
    if not devices or recipe.engine == "slurm":
        return []
    from moeconsole.runner.telemetry.gpu import get_backend, no_gpu_reason, no_gpu_words
    backend = get_backend()
    try:
        why = no_gpu_reason(backend)
    finally:
        backend.close()
    return [problem("warning", "no_gpu_here", no_gpu_words(devices, why))] if why else []


def check_engine(recipe: "RunRecipe", *, preflight: bool = False) -> list[Problem]:
    """A Slurm recipe needs Slurm's client commands where the runner runs; a slurm section under
    the local engine does nothing."""
    slurm = recipe.slurm
    if recipe.engine != "slurm":
        written = recipe.written.get("slurm")     # the keys the recipe set, as it wrote them
        return [problem("warning", "slurm_section_unused", "a slurm section is set but engine is local: "
                                                      "the command runs on this host")] if written else []
    out = []
    from moeconsole.runner.process.slurm.client import missing_commands
    missing = missing_commands()
    if missing:
        out.append(problem("error" if preflight else "warning", "slurm_missing",
                      f"engine: slurm but {', '.join(missing)} not found on PATH"))
    if not slurm.time:
        out.append(problem("info", "slurm_no_time", "slurm.time is not set: the partition's default time limit "
                                               "applies (a TIMEOUT resubmits from the last verified checkpoint)"))
    if not recipe.resume.arg and not recipe.resume.args:
        out.append(problem("warning", "slurm_no_resume", "no resume.arg: a job that hits its time limit or is "
                                                    "preempted restarts from step 0"))
    return out


def static_memory(recipe: "RunRecipe", model_config: str | None = None):
    """The static memory estimate (moeconsole.runner.recipes.memory_estimate) of the recipe's model, or None
    when no config.json is known; InputError when one is named but unreadable."""
    from moeconsole.runner.core.errors import InputError
    from moeconsole.runner.recipes import memory_estimate
    from moeconsole.runner.recipes.swift.lint import swift_launch
    flags = command_flags(swift_launch(recipe)[0])      # an ms-swift config file's flags included
    path = model_config or memory_estimate.config_path(recipe, flags)
    if not path:
        return None
    config = memory_estimate.load_config(path)
    try:
        return memory_estimate.estimate_memory(config, flags, memory_estimate.gpus_of_command(recipe) or None,
                                        megatron=memory_estimate.is_megatron(recipe.command, flags))
    except (TypeError, ValueError, KeyError, ZeroDivisionError) as exc:
        raise InputError(f"{path}: a config.json field this estimate cannot use: {exc}") from None


def check_memory(recipe: "RunRecipe") -> list[Problem]:
    """The static part of each GPU's memory against its capacity, and the memory keys that moved."""
    from moeconsole.runner.core.errors import InputError
    from moeconsole.runner.core.memory import gib_text
    from moeconsole.runner.core.monitors import MOVED_TO_MEMORY
    out = []
    written = recipe.written.get("alerts")     # the keys as the recipe wrote them
    for key in written if isinstance(written, dict) else ():
        if key in MOVED_TO_MEMORY:
            out.append(problem("warning", "alerts_memory_key_moved", f"alerts.{key} is no longer read: memory alerts "
                                                                f"follow {MOVED_TO_MEMORY[key]}"))
    try:
        est = static_memory(recipe)
    except InputError as exc:
        return out + [problem("warning", "memory_config_unreadable", f"static memory estimate: {exc}")]
    if est is None:
        if _is_distributed(recipe):
            out.append(problem("info", "memory_no_model_config", "no config.json for a static memory estimate: set "
                                                            "memory.model_config (or lint --model-config PATH)"))
        return out
    settings = recipes.memory_settings(recipe)
    cap = settings.capacity_gib
    if cap is None:
        return out
    left = cap - est.per_gpu_gib - settings.transients_gib - settings.min_headroom_gib
    if est.per_gpu_gib >= cap:
        out.append(problem("warning", "memory_static_over_capacity",
                      f"static memory {gib_text(est.per_gpu_gib)} per GPU is over the {gib_text(cap)} capacity "
                      f"before any activation: the model does not fit this layout"))
    else:
        out.append(problem("info", "memory_left_for_activations",
                      f"{gib_text(max(0.0, left))} per GPU left for activations + workspace: {gib_text(cap)} capacity "
                      f"- {gib_text(est.per_gpu_gib)} static - {gib_text(settings.transients_gib)} transients - "
                      f"{gib_text(settings.min_headroom_gib)} minimum headroom"))
    return out


CHECKS: tuple[Callable[..., list[Problem]], ...] = (
    check_argv_shape, check_command_layout, check_executable, check_secrets, check_checkpoints, check_supervision,
    check_swift, check_gpus, check_gpu_here, check_engine, check_memory,
)


def lint_recipe(recipe: "RunRecipe", *, preflight: bool = False) -> list[Problem]:
    """Every check's problems, errors first. ``preflight``: for ``run``, where what is missing on
    this machine (the executable, a module) is an error rather than a warning."""
    ignore = set(recipe.lint.ignore)
    problems: list[Problem] = []
    for check in CHECKS:
        found = check(recipe, preflight=preflight) if check in (check_executable, check_swift, check_engine) else check(recipe)
        problems += [p for p in found if p["rule"] not in ignore]
    if any(p["rule"] == "swift_resume_from_zero" for p in problems):
        # one cause, one finding: the error with its fix (runner/recipes/swift/lint.py) says why its
        # resumed attempts count from step 1 again; the recipe check's info would say it twice
        problems = [p for p in problems if p["rule"] != "resume_counts_from_step_1"]
    order = {"error": 0, "warning": 1, "info": 2}
    return sorted(problems, key=lambda p: order[p["level"]])
