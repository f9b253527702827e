"""Recipes: what to launch (argv, never a shell string), its environment, and how to supervise it.

A recipe is YAML. Loading checks every key and type and reports the first problem as one line
naming the file, the place and the problem. Values may use placeholders filled at launch:
``{python}`` (the runner's interpreter), ``{run_dir}``, ``{run_id}``, ``{attempt}``,
``{recipe_dir}``; environment values may reference the caller's environment as ``${NAME}``
(the way to pass secrets without writing them into the run directory).
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

import msgspec

from moeconsole.runner.core import schema, shellwords
from moeconsole.runner.core.units import clip
from moeconsole.runner.recipes import cmdline
from moeconsole.runner.rundir import secrets as secret_text
from moeconsole.runner.recipes.cmdline import set_flag
from moeconsole.runner.core.errors import InputError, shown, utf8_path
from moeconsole.runner.rundir import yamlio

if TYPE_CHECKING:
    from moeconsole.runner.core.memory import MemorySettings
    from moeconsole.runner.recipes import model

REDACTED = "<redacted>"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# An environment variable's name as POSIX spells a portable one: a space, a newline or '=' in a
# name cannot be exported through a shell or a batch script, and is a typo anyway.
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# The name of a flag in ``--set args.NAME=value``: ``--NAME`` is set, so NAME has no leading dash,
# no space and no '=' (``args.x y=1`` and ``args.--x=1`` are typos, never a flag).
ARG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*\Z")


class RecipeError(InputError):
    """A recipe value the runner cannot use: where it is and what is wrong, so the message can
    name the file (or the ``--set`` that gave the value)."""

    def __init__(self, src: Path | str, place: str, problem: str, meant: str | None = None) -> None:
        self.src, self.place, self.problem = str(src), place, problem
        self.meant = meant   # an unknown key: the one it was surely meant to be (``lint --fix`` renames it)
        self.across: tuple[str, ...] = ()   # a rule across keys: the other keys it names (schema.SettingsError)
        # the next step for a key `lint --fix` renames (it had said only "did you mean X?", and a
        # newcomer edited the file by hand not knowing --fix does it; ``lint.fix``)
        fix = f"; `moeconsole lint --fix {shellwords.quote(str(src))}` renames it" if meant and os.path.isfile(src) else ""
        super().__init__((f"{src}: {place}: {problem}" if place else f"{src}: {problem}") + fix)


def _free(raw: dict, place: str, meant: str | None) -> str | None:
    """``meant`` (the key an unknown key at ``place`` was surely meant to be) when the mapping
    as written holds no such key yet, else None: ``lint --fix`` renames to it, and a key given
    twice is refused (``yamlio``), so `command:` beside a mistyped `comand:` had been promised a
    rename that `lint --fix` then refused, the file left as it was (reviewed R37). The written
    mapping, a key given as null too (``validate`` drops those before the model sees them)."""
    section: Any = raw
    for name in place.split(".")[:-1]:
        section = section.get(name) if isinstance(section, dict) else None
    return None if meant is None or (isinstance(section, dict) and meant in section) else meant


def _check_text(src: Path | str, place: str, value: str) -> None:
    if "\0" in value:
        raise RecipeError(src, place, "holds a NUL byte, which no command or environment can carry")


def validate(raw: Any, src: Path | str = "<recipe>", launch: "model.Launch | None" = None) -> "model.RunRecipe":
    """Check a parsed recipe against the model (moeconsole.runner.recipes.model) and return it as
    the model callers read, defaults filled in. Every value the runner cannot use is refused
    here, with the file, the place and the problem."""
    if not isinstance(raw, dict):
        raise RecipeError(src, "", f"a recipe must be a YAML mapping, got {type(raw).__name__}")
    from moeconsole.runner.recipes import model
    from moeconsole.runner.core.monitors import current_alerts
    data = {k: v for k, v in raw.items() if v is not None}   # a key given as null: its default
    if "alerts" in data:     # the memory keys of older recipes load; lint says where they went
        data["alerts"] = current_alerts(data["alerts"])
    try:
        recipe = model.run_recipe(schema.convert(data, model.Recipe), launch,
                                  written={s: raw.get(s) or {} for s in model.OWNED_ELSEWHERE})
    except schema.SettingsError as exc:
        problem = exc.problem
        if exc.place == "command" and problem == "missing":
            problem = "missing; give the command as a list of arguments"
        refused = RecipeError(src, exc.place, problem, _free(raw, exc.place, exc.meant))
        refused.across = exc.across   # a rule across keys: the others it names (every_problem)
        raise refused from None
    for i, arg in enumerate(recipe.command):
        _check_text(src, f"command[{i}]", arg)
    for k, v in recipe.env.items():
        if not ENV_NAME.match(k):
            raise RecipeError(src, f"env.{k}" if k.isprintable() else f"env.{k!r}",
                              "an environment name must be letters, digits and '_' (not starting with a digit): "
                              "no space, newline or '='")
        _check_text(src, f"env.{k}", v)
    args = recipe.resume.args
    if args is not None and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
        raise RecipeError(src, "resume.args", "must be a list of strings (one argument each, quoted: \"false\")")
    if recipe.swift.pins is not None:
        from moeconsole.runner.recipes.doctor import parse_pins
        try:
            parse_pins(recipe.swift.pins)
        except ValueError as exc:
            raise RecipeError(src, "swift.pins", str(exc)) from None
    _check_demo_faults(src, recipe.command)
    try:
        memory_settings(recipe)      # sizes given as text (min_headroom: 1GiB)
    except InputError as exc:
        place, _, problem = str(exc).partition(": ")
        raise RecipeError(src, place, problem) from None
    return recipe


def memory_settings(recipe: "model.Recipe") -> "MemorySettings":
    """The run's memory settings: the recipe's ``memory:`` section with the capacity and the
    devices of ``gpus:`` and the CUDA_VISIBLE_DEVICES of ``env:``."""
    from moeconsole.runner.core.memory import MemorySettings
    return MemorySettings.from_recipe(recipe.memory, capacity_gib=recipe.gpus.memory_capacity_gib,
                                      devices=recipe.gpus.devices, env={k: str(v) for k, v in recipe.env.items()})


def _check_demo_faults(src: Path | str, argv: list[str]) -> None:
    """The demo trainer's ``--fault`` specs are checked before anything starts (a typo would
    otherwise make three attempts fail with a usage error)."""
    if "moeconsole.runner.demo.train" not in argv:
        return
    from moeconsole.runner.demo.faultspec import parse_fault
    for i, a in enumerate(argv):
        value = argv[i + 1] if a == "--fault" and i + 1 < len(argv) else a.split("=", 1)[1] if a.startswith("--fault=") else None
        if value is None:
            continue
        try:
            parse_fault(value)
        except ValueError as exc:
            raise RecipeError(src, "args.fault", str(exc).replace("invalid --fault ", "")) from None


def _parse_scalar(text: str) -> Any:
    return yamlio.scalar(text)


def apply_overrides(raw: dict, overrides: list[str], src: str = "--set") -> dict:
    """``key.sub=value`` sets a recipe value; ``args.flag=value`` sets ``--flag value`` in the
    command where it stands (``moeconsole.runner.recipes.cmdline.set_flag``: a missing flag goes to its own part of
    the command, a launcher's before the script). Keys are checked against the
    schema (with near-miss suggestions) and a key given twice is refused, so what runs is
    exactly what was typed."""
    from moeconsole.runner.recipes import model
    raw = copy.deepcopy(raw)
    seen: dict[str, str] = {}
    for given in overrides:
        item = clip(given, 120)  # messages stay one readable line
        utf8_path(given, src)  # lands in recipe.yaml, state.json, the records and the command: UTF-8 text as held
        if "=" not in given:
            raise InputError(f"{src} {item}: expected KEY=VALUE")
        key, text = given.split("=", 1)
        if key in seen:
            raise InputError(f"{src} {key}: given twice ({shown(seen[key])} and {shown(text)}); give it once")
        seen[key] = text
        parts = key.split(".")
        if any(not p for p in parts):
            raise InputError(f"{src} {item}: empty part in key {key!r}")
        if parts[0] == "args":
            if len(parts) != 2:
                raise InputError(f"{src} {item}: args takes one flag name (args.max_steps=100)")
            if not ARG_NAME.match(parts[1]):
                raise InputError(f"{src} {shown(item)}: {parts[1]!r} is not a flag name: letters, digits, '_' and '-', "
                                 "without the leading dashes (args.max_steps=100 sets --max_steps)")
            if "\0" in text:
                raise InputError(f"{src} {item}: holds a NUL byte")
            if not isinstance(raw.get("command") or [], list):
                raise InputError(f"{src} {item}: the recipe's command is not a list, so it takes no --flag")
            cmd = [str(a) for a in raw.get("command") or []]
            raw["command"] = set_flag(cmd, "--" + parts[1], text)
            continue
        if parts[0] not in model.KEYS:
            given_command = raw.get("command")
            command = given_command if isinstance(given_command, list) else []
            if len(parts) == 1 and f"--{key}" in (str(a).split("=", 1)[0] for a in command):
                # a flag of the command typed without `args.` (`--set max_steps=100`)
                raise InputError(f"{src} {item}: unknown key {key!r} (did you mean args.{key}? "
                                 f"args.NAME=VALUE sets the command's --NAME)")
            raise InputError(f"{src} {item}: unknown key {parts[0]!r} ({schema.did_you_mean(parts[0], model.KEYS + ('args',))})")
        if len(parts) > 1:
            section = model.section_model(parts[0])
            known = schema.field_names(section) if section is not None else None
            if known is not None and (len(parts) != 2 or parts[1] not in known):
                raise InputError(f"{src} {item}: unknown key {key!r} ({schema.did_you_mean(key, [f'{parts[0]}.{k}' for k in known])})")
        elif model.is_section(parts[0]):
            raise InputError(f"{src} {item}: {parts[0]} is a section; set one of its keys ({parts[0]}.KEY=VALUE)")
        node = raw
        for p in parts[:-1]:
            nxt = node.get(p)
            if nxt is None:
                nxt = node[p] = {}
            if not isinstance(nxt, dict):
                raise InputError(f"{src} {item}: {p!r} is not a section")
            node = nxt
        node[parts[-1]] = text if parts[0] == "env" else _parse_scalar(text)
    return raw


def load(path: str | Path, overrides: list[str] | None = None) -> "model.RunRecipe":
    """Read, override and validate a recipe file. Every failure is an InputError (exit 2): a
    missing, unreadable, oversized or non-regular file, YAML we do not accept (a duplicated
    key, nesting or numbers beyond sense), a value the runner cannot use."""
    path = Path(path)
    try:
        raw = yamlio.load_yaml_file(path, what="recipe file")
    except yamlio.YamlError as exc:
        raise InputError(f"{exc}{_near_recipe(path)}") from None
    return from_raw(raw, path, overrides)


def from_raw(raw: Any, path: str | Path, overrides: list[str] | None = None) -> "model.RunRecipe":
    """``load`` of a recipe file's parsed YAML ``raw`` (``lint --fix`` checks its edited text
    before writing it): the overrides applied, validated, named after the file when unnamed."""
    path = Path(path)
    if raw is None:
        raise InputError(f"{path}: empty recipe")
    if overrides:
        if not isinstance(raw, dict):
            raise InputError(f"{path}: a recipe must be a YAML mapping")
        raw = apply_overrides(raw, overrides)
    from moeconsole.runner.recipes import model
    try:
        recipe = validate(raw, path, model.Launch(recipe_dir=str(path.resolve().parent)))
    except RecipeError as exc:
        raise _as_override_error(exc, overrides) from None
    return recipe if recipe.name else model.run_recipe(recipe, name=model.stem_name(path.stem))


MAX_PROBLEMS = 20   # recipe problems `lint` lists at once (each found by validating again)


class Problems(NamedTuple):
    """What ``every_problem`` found, and whether that is every problem of the recipe."""
    found: list[InputError]
    whole: bool   # False: the list was cut (MAX_PROBLEMS, or a refused value that cannot be set aside)


def every_problem(path: str | Path, overrides: list[str] | None = None) -> Problems:
    """Every problem ``load`` would refuse the recipe for, not only the first: ``validate`` stops
    at one (a newcomer's recipe with three mistakes took three rounds of `lint`, and `lint --fix`
    renamed none while another one stood). Each is found by validating again without the value
    refused last (its key dropped from the file and from ``overrides``, which are applied again on
    each pass: the default stands in). A rule across keys (``SettingsError.across``) broken only
    because a default stands in for a refused value is not the user's: it is not listed, and the
    rule's own keys are set aside too so the search goes on (``floor_s: 2s`` with ``ceiling_s: 8``
    had said "ceiling_s: must be >= cooldown.floor_s (8 < 10)", 10 the default: review R51). The
    list is cut (``whole`` False) after MAX_PROBLEMS, or at a value that cannot be set aside
    (``command[1]``, a required key's "missing", a bad ``--set`` item). Empty when it loads."""
    import copy
    found: list[InputError] = []
    try:
        raw = yamlio.load_yaml_file(Path(path), what="recipe file")
    except yamlio.YamlError as exc:
        return Problems([InputError(f"{exc}{_near_recipe(Path(path))}")], True)
    given = list(overrides or [])
    dropped: set[str] = set()
    while True:   # each pass drops at least one key of the file or one --set item, or returns
        try:   # the overrides applied here, so that a value they gave is refused with its place
            from_raw(apply_overrides(raw, given) if given and isinstance(raw, dict) else copy.deepcopy(raw), path)
            return Problems(found, True)
        except RecipeError as exc:
            involved = {exc.place, *exc.across}
            if exc.across and involved & dropped:   # broken by a default that stood in: not the user's
                rest = [p for p in involved - dropped if _set_aside(raw, given, p)]
                if not rest:
                    return Problems(found, False)
                dropped |= involved
                continue
            if exc.place in dropped or len(found) == MAX_PROBLEMS:
                return Problems(found, False)   # a required key's "missing" is what dropping it says
            found.append(_as_override_error(exc, given))
            if not isinstance(raw, dict) or not _set_aside(raw, given, exc.place):
                return Problems(found, not exc.place)   # no place: the file as a whole, nothing more to check
            dropped.add(exc.place)
        except InputError as exc:   # a --set item refused before validation (unknown key, no '='): set it aside
            bad = _bad_override(raw, given)
            if bad is not None and _refused_by_another(raw, given, bad):
                given.remove(bad)   # `--set command=5 --set args.x=1`: command=5 is the one problem, listed next pass
                continue
            found.append(exc)
            if bad is None or len(found) == MAX_PROBLEMS:
                return Problems(found, bad is None and len(found) == 1)   # not a mapping: nothing else to check
            given.remove(bad)


def _bad_override(raw: Any, given: list[str]) -> str | None:
    """The first ``--set`` item of ``given`` that ``apply_overrides`` refuses on ``raw``, if any."""
    if not isinstance(raw, dict):
        return None
    for i, item in enumerate(given):
        try:
            apply_overrides(raw, given[:i + 1])
        except InputError:
            return item
    return None


def _refused_by_another(raw: Any, given: list[str], bad: str) -> bool:
    """Whether the ``--set`` item ``bad`` is refused only because an earlier item of ``given`` gave
    a value that is itself refused (``args.x=1`` after ``command=5``): taken alone it applies."""
    import copy
    earlier = given[:given.index(bad)]
    try:
        apply_overrides(raw, [bad])
    except InputError:
        return False
    try:
        from_raw(apply_overrides(raw, earlier) if earlier else copy.deepcopy(raw), "recipe")
    except (RecipeError, InputError):
        return True
    return False


def _set_aside(raw: Any, given: list[str], place: str) -> bool:
    """``raw`` and the ``--set`` items ``given`` without the value at ``place`` (both edited in
    place): whether there was one. The command (``command``, ``command[2]``, a demo ``args.fault``)
    is required, so a stand-in takes its place: the rest of the recipe is still checked."""
    if place == "command" or place.startswith(("command[", "args.")):
        given_command = [item for item in given if item.split("=", 1)[0] == "command"]
        for argv in given_command:   # a refused `--set command=...` would stand again on the next pass
            given.remove(argv)
        if not isinstance(raw, dict) or (raw.get("command") == _STAND_IN and not given_command):
            return False
        raw["command"] = list(_STAND_IN)
        return True
    item = _override_for(place, given)
    if item is not None:
        given.remove(item)
    return (isinstance(raw, dict) and _drop(raw, place)) or item is not None


_STAND_IN = ["command-set-aside"]   # every_problem's command in place of a refused one (never run)


def _drop(raw: dict, place: str) -> bool:
    """``raw`` without the key at ``place`` (``restart.max_restart``; ``command[2]``, ``env.'A B'``
    and the like are not dropped): whether there was one."""
    names = place.split(".")
    section: Any = raw
    for name in names[:-1]:
        section = section.get(name) if isinstance(section, dict) else None
    if not isinstance(section, dict) or names[-1] not in section:
        return False
    del section[names[-1]]
    return True


def _as_override_error(exc: RecipeError, overrides: list[str] | None) -> InputError:
    """A refused value said as the ``--set`` that gave it, when one did; else the error itself."""
    given = _override_for(exc.place, overrides or [])
    if given is None:
        return exc
    given = given.replace("\n", "\\n")  # one line, whatever the name held
    return InputError(f"--set {clip(given, 120)}: {exc.problem}")


def current_dir(there: str) -> str:
    """The directory the command is typed in, where what it starts would run. One deleted under the
    shell (an output directory cleaned while the shell stood in it, an unmounted filesystem) is
    one InputError saying so, ``there`` naming what would have started in it: `run` (its
    command) and `doctor` (the probe of the training's Python, whose torch import dies there with
    "Intel oneMKL FATAL ERROR: Cannot load libtorch_cpu.so") ask this one rule."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise InputError(f"the current directory no longer exists (deleted after your shell entered it); "
                         f"{there}: cd to a directory and start it again") from None


def name_of_command(argv: Sequence[str]) -> str:
    """The run name of a bare command (``run -- python my_train.py``): the stem of the first
    script it names (``my_train``; under torchrun the training script, not torchrun), else the
    module of ``-m`` (``pkg.train`` -> ``train``), else the program (``python3 -c ...`` ->
    ``python3``); made a valid name (letters, digits, ``. _ + -``, at most 64)."""
    words = list(argv)
    stem = ""
    for i, word in enumerate(words):
        if word.endswith((".py", ".sh")) and not word.startswith("-"):
            stem = Path(word).stem
            break
        if word == "-m" and i + 1 < len(words) and words[i + 1] not in ("torch.distributed.run",):
            stem = words[i + 1].rpartition(".")[2]
            break
    if not stem and words:
        stem = Path(words[0]).name
    stem = re.sub(r"[^A-Za-z0-9._+-]+", "-", stem).lstrip("._+-")[:64]
    return stem or "command"


def from_command(argv: Sequence[str], overrides: list[str] | None = None) -> "model.RunRecipe":
    """A recipe for a bare command (``moeconsole run -- python my_train.py``): the command as
    given, run in the current directory, named after its script (``name_of_command``), every other
    key at its default; ``--set`` applies as to a file. An InputError (exit 2) like ``load``."""
    if not argv:
        raise InputError("run --: no command after --; write it as `moeconsole run -- python my_train.py`")
    src = "the command after --"
    # its words go into every record of the run (recipe.yaml, the attempt's line in train.log, its event): a
    # byte that is not UTF-8 is refused in one line as a --set value is (``errors.utf8_text``; round 20: the
    # runner died at the launch, the run left "COOLDOWN? (runner gone)"). A word in UTF-8 that this Python holds
    # as escapes (an ASCII locale, PYTHONUTF8=0) is refused too, naming the setting (``errors.utf8_path``, the
    # rule for text the process must hand to the OS): decoded, exec could not encode it (review R58: the runner
    # died in ``subprocess._fork_exec`` with a UnicodeEncodeError)
    argv = [utf8_path(a, f"the command's word {i}" if i else "the command") for i, a in enumerate(argv)]
    raw: dict = {"name": name_of_command(argv), "command": list(argv)}
    if overrides:
        raw = apply_overrides(raw, overrides)
    from moeconsole.runner.recipes import model
    try:
        here = os.getcwd()
    except FileNotFoundError:   # a deleted directory: launch.create_run says so before anything is made
        here = ""
    try:
        return validate(raw, src, model.Launch(recipe_dir=here))
    except RecipeError as exc:
        raise _as_override_error(exc, overrides) from None


def _near_recipe(path: Path) -> str:
    """For a recipe path that is not there: the recipe of its directory it was probably meant to
    be (`recipes/tiny-moe.yaml` -> `recipes/tiny-moe-cpu.yaml`), else the recipes its directory
    holds, with a shipped recipe of that name beside them, or that shipped recipe alone where the
    directory holds none (`moeconsole run tiny-moe-cpu` from the checkout's root named none)."""
    try:
        if path.exists():
            return ""
        known = (sorted(p.name for p in path.parent.iterdir() if p.suffix in YAML_SUFFIXES and p.is_file())
                 if path.parent.is_dir() else [])
    except OSError:
        return ""
    close = schema.near_misses(path.name, known, 1)
    if close:
        return f" (did you mean {path.parent / close[0]}?)"
    shipped = _shipped_recipe(path.name) if path.parent == Path(".") else None
    if not known:
        return f" (did you mean {shipped}?)" if shipped is not None else ""
    # the directory's own recipes first: a shipped recipe is named beside them, never instead
    # (in a project holding qwen-sft.yaml, `run torchrun` named only the shipped torchrun-cpu.yaml)
    beside = f"; or the shipped {shipped}?" if shipped is not None else ""
    return f" (recipes in {path.parent}: {', '.join(known[:8])}{', ...' if len(known) > 8 else ''}{beside})"


YAML_SUFFIXES = (".yaml", ".yml")


def _shipped_recipe(name: str) -> str | None:
    """The shipped recipe (``moeconsole.recipes_dir()``) a name means: the same name with or
    without ``.yaml``, or its one near miss by name (``.yaml`` aside: it made `nosuch.yaml` near
    `tiny-moe-slurm.yaml`); shown relative to this directory when it lies under it."""
    import moeconsole
    root = moeconsole.recipes_dir().resolve()
    try:
        shipped = {p.stem: p for p in sorted(root.iterdir()) if p.suffix in YAML_SUFFIXES and p.is_file()}
    except OSError:
        return None
    stem = Path(name).stem if name.endswith(YAML_SUFFIXES) else name
    close = [stem] if stem in shipped else schema.near_misses(stem, shipped, 1)
    if not close:
        return None
    found = shipped[close[0]]
    try:
        return str(found.relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(found)


def read_saved(run_dir: str | Path, text: str | None = None) -> tuple[dict, str | None]:
    """A run's ``recipe.yaml`` as written at launch (secrets already masked), for readers that
    show or compare it: (the mapping, None), or ({}, why it cannot be read). ``text``: the
    file's text, already read (``yamlio.read_text``)."""
    path = Path(run_dir) / "recipe.yaml"
    try:
        raw = yamlio.load_yaml_file(path, what="run recipe") if text is None else yamlio.loads_yaml(text, str(path))
    except yamlio.YamlError as exc:
        return {}, str(exc)
    if not isinstance(raw, dict):
        return {}, f"{path}: not a mapping"
    return raw, None


def saved_recipe(run_dir: str | Path, text: str | None = None) -> "model.RunRecipe":
    """A run's ``recipe.yaml`` as the model (secrets as written there: masked), with where it
    was launched (``_launch``); InputError naming the file when it cannot be used. ``text``:
    the file's text, already read."""
    from moeconsole.runner.recipes import model
    raw, problem = read_saved(run_dir, text)
    if problem:
        raise InputError(f"cannot use the run's recipe: {problem}")
    given = raw.pop("_launch", None)
    try:
        launch = msgspec.convert(given, model.Launch) if isinstance(given, dict) else model.Launch()
    except msgspec.ValidationError:
        launch = model.Launch()
    return validate(raw, Path(run_dir) / "recipe.yaml", launch)


def _override_for(place: str, overrides: list[str]) -> str | None:
    """The ``--set`` item that gave the value at ``place`` (``command[i]`` comes from args.*)."""
    for item in overrides:
        key = item.split("=", 1)[0]
        if not key.isprintable() and "." in key:  # the place quotes such a name: env.'A\nB'
            section, _, name = key.partition(".")
            key = f"{section}.{name!r}"
        if key == place or key.startswith(place + ".") or (place.startswith("command") and key.startswith("args.")):
            return item
    return None


def _command_hash(env: dict[str, str], command: list[str]) -> str:
    """The 16-hex sha256 of a command and its environment, secrets masked or left out: what ``recipe_hash`` and
    ``node_recipe_hash`` each hash."""
    env = {k: masked_env_value(k, v) for k, v in sorted(env.items()) if not secret_text.is_secret_name(k)}
    blob = json.dumps({"command": masked_command(command), "env": env}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def recipe_hash(recipe: "model.RunRecipe") -> str:
    """Identity of what is trained: argv and environment, secrets excluded, placeholders unfilled
    (so two runs of one recipe hash alike). Resume arguments are added later and not hashed. The
    node rank is not hashed (``cmdline.world_command``): every node's runner of one multi-node world
    trains the same thing, and stamps the world's saves alike (one output dir on shared storage).
    It names what a save holds; which run is this node's is ``node_recipe_hash``."""
    world_env, command = cmdline.world_command(recipe.env, list(recipe.command))
    return _command_hash(world_env, command)


def node_recipe_hash(recipe: "model.RunRecipe") -> str:
    """Identity of one node's run of the recipe: ``recipe_hash`` with the node rank as written (review R48 D1).
    Two nodes of one world differ here and only here, so a service manager's lookup of "this recipe's run"
    (``ops.service.choose``) never takes another node's run up. It is the formula every run created before
    round 19 was stamped with (state.json's ``recipe_hash``), so such a run is still found after an upgrade,
    and keeps that stamp (``run_stamp``)."""
    return _command_hash(dict(recipe.env), list(recipe.command))


def run_stamp(recipe: "model.RunRecipe", recorded: object) -> str:
    """The hash a run's saves are stamped with and checked against: the one state.json records when it is
    this recipe's node hash (a run created before round 19, whose saves carry it: taken up after an upgrade,
    it reads its own saves as its own, never as drift), else ``recipe_hash``."""
    return recorded if isinstance(recorded, str) and recorded == node_recipe_hash(recipe) else recipe_hash(recipe)


def fill(text: str, values: dict[str, str]) -> str:
    """Fill ``{name}`` placeholders we know; leave other braces (e.g. JSON args) alone."""
    def sub(m: re.Match) -> str:
        return values.get(m.group(1), m.group(0))
    return re.sub(r"\{([a-z_]+)\}", sub, text)


def resolve_env(recipe_env: dict[str, str], caller_env: dict[str, str] | None = None) -> dict[str, str]:
    caller = os.environ if caller_env is None else caller_env
    return {k: _ENV_REF.sub(lambda m: caller.get(m.group(1), ""), v) for k, v in recipe_env.items()}


def launch_argv(recipe: "model.RunRecipe", values: dict[str, str]) -> list[str]:
    values = {"python": sys.executable, **values}
    return [fill(a, values) for a in recipe.command]


def attempt_argv(recipe: "model.RunRecipe", values: dict[str, str], *, resume_from: str | None = None,
                 port: int | None = None) -> list[str]:
    """The argv of an attempt exactly as the runner runs it: placeholders filled, the resume
    arguments for ``resume_from`` set, the rendezvous port moved to ``port``. ``lint`` checks
    what this returns, so it checks what will run."""
    from moeconsole.runner.recipes.resume import resume_argv
    argv = launch_argv(recipe, values)
    if resume_from:
        argv = resume_argv(argv, recipe.resume, resume_from)
    if port is not None:
        argv = cmdline.with_port(argv, port)
    return argv


def masked_command(argv: list[str]) -> list[str]:
    """The command as recipe.yaml shows it (and the hash sees it): a secret flag's value, a
    token-shaped value and a URL's password replaced by ``<redacted>``."""
    argv = [str(a) for a in argv]
    hidden = secret_text.secret_positions(argv)
    for i, arg in enumerate(argv):
        value = hidden.get(i)
        if value is not None:
            if value and not _ENV_REF.fullmatch(value):
                argv[i] = arg[: len(arg) - len(value)] + REDACTED
        else:
            argv[i] = secret_text.mask_values(arg, REDACTED)
    return argv


def masked_env_value(name: str, value: str) -> str:
    """An environment value as recipe.yaml shows it: a secret-named one replaced (unless it is a
    ``${NAME}`` reference), tokens and URL passwords inside any other masked."""
    if _ENV_REF.fullmatch(value):
        return value
    return REDACTED if secret_text.is_secret_name(name) else secret_text.mask_values(value, REDACTED)


def secret_values(env: dict[str, str], argv: Sequence[str] = ()) -> list[str]:
    """Values that must never be written anywhere: secret-named env values, secret flags' values."""
    values = [v for k, v in env.items() if secret_text.is_secret_name(k)] + \
        list(secret_text.secret_positions(list(argv)).values())
    return secret_text.Redactor(values).values


def redact(text: str, secrets: Sequence[str]) -> str:
    """Known secret values and anything shaped like a token, masked."""
    return secret_text.Redactor(secrets).redact(text)


def for_run_dir(recipe: "model.RunRecipe") -> dict[str, Any]:
    """The recipe as written to ``recipe.yaml`` (through the model's encoder): literal secrets
    (secret-named env values, secret flags' values, tokens and URL passwords anywhere in the
    command or the environment) replaced; :func:`secrets_doc` holds them for ``secrets.json``
    (mode 0600). A section another module owns (``model.OWNED_ELSEWHERE``) shows what the
    recipe wrote in it (that module's model holds the defaults); ``_launch`` comes last."""
    from moeconsole.runner.recipes import model
    r: dict[str, Any] = msgspec.to_builtins(recipe)
    del r["_written"]
    for name in model.OWNED_ELSEWHERE:
        r[name] = _as_written(name, getattr(recipe, name), recipe.written.get(name), r[name])
    r["env"] = {k: masked_env_value(k, v) for k, v in recipe.env.items()}
    r["command"] = masked_command(recipe.command)
    r["_launch"] = r.pop("_launch")
    return r


def _as_written(name: str, section: msgspec.Struct, written: Any, encoded: dict[str, Any]) -> Any:
    """An owned section for recipe.yaml: as the recipe wrote it when that still is this section,
    else the keys whose values differ from the section's defaults."""
    from moeconsole.runner.core.monitors import current_alerts
    try:
        given = current_alerts(written) if name == "alerts" else written
        if written is not None and msgspec.convert(given, type(section)) == section:
            return written
    except msgspec.ValidationError:
        pass
    defaults = msgspec.to_builtins(type(section)())
    return {k: v for k, v in encoded.items() if k not in defaults or v != defaults[k]}


def secrets_doc(recipe: "model.RunRecipe") -> dict | None:
    """What ``secrets.json`` holds so the runner can launch what recipe.yaml no longer shows:
    every environment value and argument that ``for_run_dir`` changed, as it was."""
    env = {k: v for k, v in recipe.env.items() if masked_env_value(k, v) != v}
    cmd = list(recipe.command)
    argv = {str(i): cmd[i] for i, shown in enumerate(masked_command(cmd)) if shown != cmd[i]}
    if not env and not argv:
        return None
    return {"v": 1, "env": env, "argv": argv}


def restore_secrets(recipe: "model.RunRecipe", doc: Any) -> "model.RunRecipe":
    """recipe.yaml's recipe with the values of ``secrets.json`` put back (also reads the older
    flat ``{NAME: value}`` form)."""
    from moeconsole.runner.recipes import model
    if not isinstance(doc, dict):
        return recipe
    env_part = doc.get("env") if "v" in doc else doc
    argv_part = doc.get("argv") if "v" in doc else None
    env, cmd = recipe.env, recipe.command
    if isinstance(env_part, dict):
        env = {**recipe.env, **{k: str(v) for k, v in env_part.items() if isinstance(k, str)}}
    if isinstance(argv_part, dict):
        cmd = list(recipe.command)
        for i, value in argv_part.items():
            if str(i).isdigit() and int(i) < len(cmd):
                cmd[int(i)] = str(value)
    return model.run_recipe(recipe, env=env, command=cmd)


def dump_yaml(doc: dict[str, Any]) -> str:
    """``for_run_dir``'s document as YAML text."""
    return yamlio.yaml_text(doc)


if TYPE_CHECKING:
    # Checked by mypy (``make typecheck``), never run: what loads a recipe hands out the model,
    # never a mapping read by string keys (tests/recipe/test_recipe_typed.py guards the readers).
    from typing import assert_type
    assert_type(load(""), model.RunRecipe)
    assert_type(validate({}), model.RunRecipe)
    assert_type(saved_recipe(""), model.RunRecipe)
    assert_type(restore_secrets(saved_recipe(""), None), model.RunRecipe)
