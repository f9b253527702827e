"""Recipes: what to launch (argv, never a shell string), its environment, and how to supervise it.

A recipe is YAML. Loading checks every key and type and reports the first problem as one line
naming the file, the place and the problem. Values may use placeholders filled at launch:
``{python}`` (the runner's interpreter), ``{run_dir}``, ``{run_id}``, ``{attempt}``,
``{recipe_dir}``; environment values may reference the caller's environment as ``${NAME}``
(the way to pass secrets without writing them into the run directory).
"""
from __future__ import annotations

import copy
import difflib
from dataclasses import fields as dataclass_fields
import hashlib
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from runner.core import bounds
from runner.recipes import cmdline
from runner.rundir import secrets as secret_text
from runner.recipes.cmdline import set_flag
from runner.core.errors import InputError, shown
from runner.rundir import yamlio

if TYPE_CHECKING:
    from runner.core.memory import MemorySettings

# Defaults from the design. Tests and the demo recipe shorten them.
DEFAULTS: dict[str, Any] = {
    "name": None,
    "description": "",
    "command": None,
    "env": {},
    "workdir": None,
    "engine": "local",
    "restart": {},  # validated by runner.core.policy.RestartSettings.from_recipe
    "cooldown": {"floor_s": 10.0, "ceiling_s": 90.0, "gpu_mem_tolerance_mib": 1024.0, "poll_s": 0.5},
    "kill": {"grace_s": 60.0},
    "heartbeat": {"timeout_s": 1800.0, "stale_state_s": 30.0},
    "checkpoints": {"dir": None, "settle_s": 2.0, "verify": True, "pause_after_bad_saves": 2},
    "resume": {"arg": None, "args": None, "drift": "refuse"},
    "swift": {"version": None, "python": None, "validated_max_length": None, "dataset_samples": None, "pins": None},
    "markers": {"init_done": None},
    "alerts": {},  # validated by runner.core.monitors.Thresholds.from_recipe
    "memory": {},  # validated by runner.core.memory.MemorySettings.from_recipe
    "gpus": {"devices": None, "memory_capacity_gib": None},
    "preflight": {"on_busy": "wait", "port": None},
    "cost_per_hour": None,
    "lint": {"ignore": []},
    # Operations, validated by their own modules (runner/ops, runner/checkpoints/sync.py).
    "metrics": {},
    "notify": {},
    "sync": {},
    "slurm": {},  # engine: slurm; validated by runner.process.engines.slurm.SlurmSettings
}

_SECTION_TYPES: dict[str, dict[str, tuple[type, ...]]] = {
    "cooldown": {"floor_s": (int, float), "ceiling_s": (int, float), "gpu_mem_tolerance_mib": (int, float),
                 "poll_s": (int, float)},
    "kill": {"grace_s": (int, float)},
    "heartbeat": {"timeout_s": (int, float), "stale_state_s": (int, float), "startup_s": (int, float, type(None))},
    "checkpoints": {"dir": (str, type(None)), "settle_s": (int, float), "verify": (bool,),
                    "pause_after_bad_saves": (int,)},
    "resume": {"arg": (str, type(None)), "args": (list, type(None)), "drift": (str,)},
    "swift": {"version": (str, type(None)), "python": (str, type(None)), "validated_max_length": (int, type(None)),
              "dataset_samples": (int, type(None)), "pins": (dict, type(None))},
    "markers": {"init_done": (str, type(None))},
    "gpus": {"devices": (list, type(None)), "memory_capacity_gib": (int, float, type(None))},
    "preflight": {"on_busy": (str,), "port": (int, type(None))},
    "lint": {"ignore": (list,)},
}
_CHOICES = {("resume", "drift"): ("refuse", "warn", "allow"),
            ("preflight", "on_busy"): ("wait", "kill", "refuse"),
            ("engine",): ("local", "slurm")}
_TOP_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,), "description": (str,), "command": (list,), "env": (dict,), "workdir": (str, type(None)),
    "engine": (str,), "restart": (dict,), "alerts": (dict,), "memory": (dict,), "cost_per_hour": (int, float, type(None)),
    "metrics": (dict,), "notify": (dict,), "sync": (dict,), "slurm": (dict,),
}

REDACTED = "<redacted>"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class RecipeError(InputError):
    """A recipe value the runner cannot use: where it is and what is wrong, so the message can
    name the file (or the ``--set`` that gave the value)."""

    def __init__(self, src: Path | str, place: str, problem: str) -> None:
        self.src, self.place, self.problem = str(src), place, problem
        super().__init__(f"{src}: {place}: {problem}" if place else f"{src}: {problem}")


# The range of every number in the sections above (runner.core.bounds owns the rule and the
# messages). Any other ``*_s`` key is a duration (bounds.SECONDS); every number must be finite.
_GIB = bounds.Range(0.0, float(1 << 20), lo_open=True, unit="GiB")
_RANGES: dict[tuple[str, str], bounds.Range] = {
    ("cooldown", "floor_s"): bounds.SECONDS, ("cooldown", "ceiling_s"): bounds.SECONDS,
    ("cooldown", "gpu_mem_tolerance_mib"): bounds.Range(0.0, float(1 << 30), unit="MiB"),
    ("cooldown", "poll_s"): bounds.Range(0.0, bounds.HOUR, lo_open=True),
    ("kill", "grace_s"): bounds.GRACE, ("heartbeat", "timeout_s"): bounds.POSITIVE_SECONDS,
    ("heartbeat", "stale_state_s"): bounds.POSITIVE_SECONDS, ("heartbeat", "startup_s"): bounds.SECONDS,
    ("checkpoints", "settle_s"): bounds.SECONDS, ("gpus", "memory_capacity_gib"): _GIB,
    ("checkpoints", "pause_after_bad_saves"): bounds.Range(0, 1 << 20, integer=True, unit="count"),
    ("preflight", "port"): bounds.PORT,
    ("swift", "validated_max_length"): bounds.Range(1, 1 << 30, integer=True, unit="count"),
    ("swift", "dataset_samples"): bounds.Range(1, 1 << 50, integer=True, unit="count"),
}
_RANGES[("", "cost_per_hour")] = bounds.Range(0.0, 1e9, unit="money per hour")
_ANY_NUMBER = bounds.Range(-1e300, 1e300, unit="any size")
_NAME_OK = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}\Z")


def _type_name(types: tuple[type, ...]) -> str:
    names = {int: "a number", float: "a number", str: "a string", list: "a list", dict: "a mapping",
             bool: "true/false", type(None): "null"}
    return " or ".join(dict.fromkeys(names[t] for t in types))


def _check_type(src: Path | str, place: str, value: Any, types: tuple[type, ...]) -> None:
    if isinstance(value, bool) and bool not in types:
        raise RecipeError(src, place, f"expected {_type_name(types)}, got {shown(value)}")
    if not isinstance(value, types):
        raise RecipeError(src, place, f"expected {_type_name(types)}, got {type(value).__name__} {shown(value)}")


def _check_number(src: Path | str, section: str, key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    place = f"{section}.{key}" if section else key
    rng = _RANGES.get((section, key)) or (bounds.SECONDS if key.endswith("_s") else _ANY_NUMBER)
    try:
        bounds.check(value, rng, place)
    except bounds.OutOfRange as exc:
        raise RecipeError(src, place, str(exc).partition(": ")[2]) from None


def _check_text(src: Path | str, place: str, value: str) -> None:
    if "\0" in value:
        raise RecipeError(src, place, "holds a NUL byte, which no command or environment can carry")


def _suggest(word: str, known: list[str] | tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, list(known), n=3, cutoff=0.6)
    return f"did you mean {' or '.join(close)}?" if close else f"known: {', '.join(known)}"


def validate(raw: Any, src: Path | str = "<recipe>") -> dict:
    """Check a parsed recipe against the schema and return it merged with the defaults. Every
    value the runner cannot use is refused here, with the file, the place and the problem."""
    if not isinstance(raw, dict):
        raise RecipeError(src, "", f"a recipe must be a YAML mapping, got {type(raw).__name__}")
    for key in raw:
        if key not in DEFAULTS:
            raise RecipeError(src, str(key), f"unknown key ({_suggest(str(key), list(DEFAULTS))})")
    for key, types in _TOP_TYPES.items():
        if key in raw and raw[key] is not None:
            _check_type(src, key, raw[key], types)
    if "command" not in raw or raw["command"] is None:
        raise RecipeError(src, "command", "missing; give the command as a list of arguments")
    cmd = raw["command"]
    if not cmd:
        raise RecipeError(src, "command", "empty list")
    for i, arg in enumerate(cmd):
        if isinstance(arg, bool) or not isinstance(arg, (str, int, float)):
            raise RecipeError(src, f"command[{i}]", f"expected a string, got {shown(arg)}")
        _check_text(src, f"command[{i}]", str(arg))
    for k, v in (raw.get("env") or {}).items():
        if not isinstance(k, str) or not k:
            raise RecipeError(src, f"env.{k}", "environment names must be non-empty strings")
        if "=" in k or "\0" in k:
            raise RecipeError(src, f"env.{k}", "an environment name cannot contain '=' or a NUL byte")
        if isinstance(v, (dict, list, bool)) or v is None:
            raise RecipeError(src, f"env.{k}", f"expected a string value, got {shown(v)}")
        _check_text(src, f"env.{k}", str(v))
    name = raw.get("name")
    if name is not None and not _NAME_OK.match(name):
        raise RecipeError(src, "name", f"{shown(name)}: use letters, digits and . _ + - (at most 64; it names run directories)")
    for key in ("workdir", "description"):
        if isinstance(raw.get(key), str):
            _check_text(src, key, raw[key])
    out = copy.deepcopy(DEFAULTS)
    for key, value in raw.items():
        if key in _SECTION_TYPES:
            if value is None:
                continue
            _check_type(src, key, value, (dict,))
            for sk, sv in value.items():
                if sk not in _SECTION_TYPES[key]:
                    raise RecipeError(src, f"{key}.{sk}", f"unknown key ({_suggest(str(sk), list(_SECTION_TYPES[key]))})")
                _check_type(src, f"{key}.{sk}", sv, _SECTION_TYPES[key][sk])
                _check_number(src, key, sk, sv)
                if isinstance(sv, str):
                    _check_text(src, f"{key}.{sk}", sv)
                choices = _CHOICES.get((key, sk))
                if choices and sv not in choices:
                    raise RecipeError(src, f"{key}.{sk}", f"must be one of {', '.join(choices)}, got {shown(sv)}")
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    if out["engine"] not in _CHOICES[("engine",)]:
        raise RecipeError(src, "engine", f"must be one of {', '.join(_CHOICES[('engine',)])}, got {shown(out['engine'])}")
    if out["cooldown"]["ceiling_s"] < out["cooldown"]["floor_s"]:
        raise RecipeError(src, "cooldown.ceiling_s", f"must be >= cooldown.floor_s "
                          f"({out['cooldown']['ceiling_s']:g} < {out['cooldown']['floor_s']:g})")
    devices = out["gpus"]["devices"]
    if devices is not None and (not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in devices)
                                or len(set(devices)) != len(devices)):
        raise RecipeError(src, "gpus.devices", f"must be distinct GPU indexes (0, 1, ...), got {shown(devices)}")
    if not all(isinstance(x, str) for x in out["lint"]["ignore"]):
        raise RecipeError(src, "lint.ignore", "must be a list of rule names")
    arg = out["resume"]["arg"]
    if arg is not None and not arg.startswith("-"):
        raise RecipeError(src, "resume.arg", f"must be a flag such as --resume_from_checkpoint, got {shown(arg)}")
    if out.get("cost_per_hour") is not None:
        _check_number(src, "", "cost_per_hour", out["cost_per_hour"])
    if out["swift"]["pins"] is not None:
        from runner.recipes.doctor import parse_pins
        try:
            parse_pins(out["swift"]["pins"])
        except ValueError as exc:
            raise RecipeError(src, "swift.pins", str(exc)) from None
    out["command"] = [str(a) for a in cmd]
    out["env"] = {str(k): str(v) for k, v in (out.get("env") or {}).items()}
    _check_demo_faults(src, out["command"])
    # Sections validated by their own modules, so their rules live next to their use.
    from runner.core.policy import RestartSettings
    from runner.core.monitors import Thresholds
    for section, check in (("restart", RestartSettings.from_recipe), ("alerts", Thresholds.from_recipe)):
        try:
            check(out[section])
        except InputError as exc:
            text = str(exc)
            place, _, problem = text.partition(": ")
            if not place.startswith(section):
                place, problem = section, text
            raise RecipeError(src, place, problem) from None
    try:
        memory_settings(out)
    except InputError as exc:
        place, _, problem = str(exc).partition(": ")
        raise RecipeError(src, place, problem) from None
    from runner.checkpoints.sync import SyncSettings
    from runner.ops.notify import NotifySettings
    from runner.ops.sidecars import MetricsSettings
    for section, ops_check in (("metrics", MetricsSettings.from_recipe), ("notify", NotifySettings.from_recipe),
                               ("sync", SyncSettings.from_recipe)):
        try:
            ops_check(out[section])
        except ValueError as exc:
            raise RecipeError(src, section, str(exc)) from None
    from runner.process.slurm.settings import SlurmSettings
    try:
        SlurmSettings.from_recipe(out["slurm"])
    except ValueError as exc:
        place, _, problem = str(exc).partition(": ")
        raise RecipeError(src, place, problem) from None
    return out


def memory_settings(recipe: dict) -> "MemorySettings":
    """The run's memory settings: the recipe's ``memory:`` section with the capacity and the
    devices of ``gpus:`` and the CUDA_VISIBLE_DEVICES of ``env:``."""
    from runner.core.memory import MemorySettings
    g = recipe.get("gpus") or {}
    return MemorySettings.from_recipe(recipe.get("memory") or {}, capacity_gib=g.get("memory_capacity_gib"),
                                      devices=g.get("devices"), env=recipe.get("env") or {})


def _check_demo_faults(src: Path | str, argv: list[str]) -> None:
    """The demo trainer's ``--fault`` specs are checked before anything starts (a typo would
    otherwise make three attempts fail with a usage error)."""
    if "runner.demo.train" not in argv:
        return
    from runner.demo.faultspec import parse_fault
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


_OPS_KEYS = {"metrics": ("port", "addr", "textfile", "interval_s"),
             "notify": ("command", "webhook", "on", "min_interval_s", "timeout_s"),
             "sync": ("dest", "keep_last", "full", "retry_s")}


def _known_subkeys(section: str) -> list[str] | None:
    """The keys a section accepts (None: any key, as in ``env``)."""
    if section in _SECTION_TYPES:
        return list(_SECTION_TYPES[section])
    if section == "restart":
        from runner.core.policy import RestartSettings
        return [f.name for f in dataclass_fields(RestartSettings)]
    if section == "alerts":
        from runner.core.monitors import Thresholds
        return [f.name for f in dataclass_fields(Thresholds)]
    if section == "memory":
        from runner.core.memory import MemorySettings
        return list(MemorySettings.KEYS)
    if section in _OPS_KEYS:
        return list(_OPS_KEYS[section])
    if section == "slurm":
        from runner.process.slurm.settings import SlurmSettings
        return [f.name for f in dataclass_fields(SlurmSettings)]
    return None


def apply_overrides(raw: dict, overrides: list[str], src: str = "--set") -> dict:
    """``key.sub=value`` sets a recipe value; ``args.flag=value`` sets ``--flag value`` in the
    command where it stands (``runner.recipes.cmdline.set_flag``: a missing flag goes to its own part of
    the command, a launcher's before the script). Keys are checked against the
    schema (with near-miss suggestions) and a key given twice is refused, so what runs is
    exactly what was typed."""
    raw = copy.deepcopy(raw)
    seen: dict[str, str] = {}
    for given in overrides:
        item = given if len(given) <= 120 else given[:117] + "..."  # messages stay one readable line
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
            if "\0" in text:
                raise InputError(f"{src} {item}: holds a NUL byte")
            if not isinstance(raw.get("command") or [], list):
                raise InputError(f"{src} {item}: the recipe's command is not a list, so it takes no --flag")
            cmd = [str(a) for a in raw.get("command") or []]
            raw["command"] = set_flag(cmd, "--" + parts[1], text)
            continue
        if parts[0] not in DEFAULTS:
            raise InputError(f"{src} {item}: unknown key {parts[0]!r} ({_suggest(parts[0], list(DEFAULTS) + ['args'])})")
        if len(parts) > 1:
            known = _known_subkeys(parts[0])
            if known is not None and (len(parts) != 2 or parts[1] not in known):
                raise InputError(f"{src} {item}: unknown key {key!r} ({_suggest(key, [f'{parts[0]}.{k}' for k in known])})")
        elif isinstance(DEFAULTS[parts[0]], dict):
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


def load(path: str | Path, overrides: list[str] | None = None) -> dict:
    """Read, override and validate a recipe file. Every failure is an InputError (exit 2): a
    missing, unreadable, oversized or non-regular file, YAML we do not accept (a duplicated
    key, nesting or numbers beyond sense), a value the runner cannot use."""
    path = Path(path)
    try:
        raw = yamlio.load_file(path, what="recipe file")
    except yamlio.YamlError as exc:
        raise InputError(str(exc)) from None
    if raw is None:
        raise InputError(f"{path}: empty recipe")
    if overrides:
        if not isinstance(raw, dict):
            raise InputError(f"{path}: a recipe must be a YAML mapping")
        raw = apply_overrides(raw, overrides)
    try:
        recipe = validate(raw, path)
    except RecipeError as exc:
        given = _override_for(exc.place, overrides or [])
        if given is not None:
            raise InputError(f"--set {given if len(given) <= 120 else given[:117] + '...'}: {exc.problem}") from None
        raise
    recipe["name"] = recipe["name"] or path.stem
    recipe["_recipe_dir"] = str(path.resolve().parent)
    return recipe


def read_saved(run_dir: str | Path) -> tuple[dict, str | None]:
    """A run's ``recipe.yaml`` as written at launch (secrets already masked), for readers that
    show or compare it: (the mapping, None), or ({}, why it cannot be read)."""
    path = Path(run_dir) / "recipe.yaml"
    try:
        raw = yamlio.load_file(path, what="run recipe")
    except yamlio.YamlError as exc:
        return {}, str(exc)
    if not isinstance(raw, dict):
        return {}, f"{path}: not a mapping"
    return raw, None


def _override_for(place: str, overrides: list[str]) -> str | None:
    """The ``--set`` item that gave the value at ``place`` (``command[i]`` comes from args.*)."""
    for item in overrides:
        key = item.split("=", 1)[0]
        if key == place or key.startswith(place + ".") or (place.startswith("command") and key.startswith("args.")):
            return item
    return None


def recipe_hash(recipe: dict) -> str:
    """Identity of what is trained: argv and environment, secrets excluded, placeholders unfilled
    (so two runs of one recipe hash alike). Resume arguments are added later and not hashed."""
    env = {k: masked_env_value(k, v) for k, v in sorted(recipe.get("env", {}).items())
           if not secret_text.is_secret_name(k)}
    blob = json.dumps({"command": masked_command(recipe["command"]), "env": env}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def fill(text: str, values: dict[str, str]) -> str:
    """Fill ``{name}`` placeholders we know; leave other braces (e.g. JSON args) alone."""
    def sub(m: re.Match) -> str:
        return values.get(m.group(1), m.group(0))
    return re.sub(r"\{([a-z_]+)\}", sub, text)


def resolve_env(recipe_env: dict[str, str], caller_env: dict[str, str] | None = None) -> dict[str, str]:
    caller = os.environ if caller_env is None else caller_env
    return {k: _ENV_REF.sub(lambda m: caller.get(m.group(1), ""), v) for k, v in recipe_env.items()}


def launch_argv(recipe: dict, values: dict[str, str]) -> list[str]:
    values = {"python": sys.executable, **values}
    return [fill(a, values) for a in recipe["command"]]


def attempt_argv(recipe: dict, values: dict[str, str], *, resume_from: str | None = None,
                 port: int | None = None) -> list[str]:
    """The argv of an attempt exactly as the runner runs it: placeholders filled, the resume
    arguments for ``resume_from`` set, the rendezvous port moved to ``port``. ``lint`` checks
    what this returns, so it checks what will run."""
    from runner.recipes.resume import resume_argv
    argv = launch_argv(recipe, values)
    if resume_from:
        argv = resume_argv(argv, recipe["resume"], resume_from)
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


def redact_argv(argv: list[str], secrets: Sequence[str] = ()) -> list[str]:
    """Argv safe to show: values of secret-looking flags and known secret values masked."""
    return secret_text.Redactor(secrets).redact_argv(argv)


def for_run_dir(recipe: dict) -> dict:
    """The recipe as written to ``recipe.yaml``: literal secrets (secret-named env values, secret
    flags' values, tokens and URL passwords anywhere in the command or the environment)
    replaced; :func:`secrets_doc` holds them for ``secrets.json`` (mode 0600)."""
    r = {k: v for k, v in recipe.items() if not k.startswith("_")}
    r["env"] = {k: masked_env_value(k, v) for k, v in recipe.get("env", {}).items()}
    r["command"] = masked_command(recipe["command"])
    return r


def secrets_doc(recipe: dict) -> dict | None:
    """What ``secrets.json`` holds so the runner can launch what recipe.yaml no longer shows:
    every environment value and argument that ``for_run_dir`` changed, as it was."""
    env = {k: v for k, v in recipe.get("env", {}).items() if masked_env_value(k, v) != v}
    cmd = [str(a) for a in recipe["command"]]
    argv = {str(i): cmd[i] for i, shown in enumerate(masked_command(cmd)) if shown != cmd[i]}
    if not env and not argv:
        return None
    return {"v": 1, "env": env, "argv": argv}


def restore_secrets(recipe: dict, doc: Any) -> dict:
    """recipe.yaml's recipe with the values of ``secrets.json`` put back (also reads the older
    flat ``{NAME: value}`` form)."""
    if not isinstance(doc, dict):
        return recipe
    env_part = doc.get("env") if "v" in doc else doc
    argv_part = doc.get("argv") if "v" in doc else None
    out = dict(recipe)
    if isinstance(env_part, dict):
        out["env"] = {**recipe.get("env", {}), **{k: str(v) for k, v in env_part.items() if isinstance(k, str)}}
    if isinstance(argv_part, dict):
        cmd = list(recipe["command"])
        for i, value in argv_part.items():
            if str(i).isdigit() and int(i) < len(cmd):
                cmd[int(i)] = str(value)
        out["command"] = cmd
    return out


def dump_yaml(recipe: dict) -> str:
    return yamlio.dumps(recipe)
