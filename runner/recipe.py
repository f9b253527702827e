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
from typing import Any

import yaml

from runner.errors import InputError

# Defaults from the design. Tests and the demo recipe shorten them.
DEFAULTS: dict[str, Any] = {
    "name": None,
    "description": "",
    "command": None,
    "env": {},
    "workdir": None,
    "engine": "local",
    "restart": {},  # validated by runner.policy.RestartSettings.from_recipe
    "cooldown": {"floor_s": 10.0, "ceiling_s": 90.0, "gpu_mem_tolerance_mib": 1024.0, "poll_s": 0.5},
    "kill": {"grace_s": 60.0},
    "heartbeat": {"timeout_s": 1800.0, "stale_state_s": 30.0},
    "checkpoints": {"dir": None, "settle_s": 2.0, "verify": True},
    "resume": {"arg": None, "drift": "refuse"},
    "markers": {"init_done": None},
    "alerts": {},  # validated by runner.monitors.Thresholds.from_recipe
    "gpus": {"devices": None, "memory_capacity_gib": None},
    "preflight": {"on_busy": "wait", "port": None},
    "cost_per_hour": None,
    "lint": {"ignore": []},
}

_SECTION_TYPES: dict[str, dict[str, tuple[type, ...]]] = {
    "cooldown": {"floor_s": (int, float), "ceiling_s": (int, float), "gpu_mem_tolerance_mib": (int, float),
                 "poll_s": (int, float)},
    "kill": {"grace_s": (int, float)},
    "heartbeat": {"timeout_s": (int, float), "stale_state_s": (int, float), "startup_s": (int, float, type(None))},
    "checkpoints": {"dir": (str, type(None)), "settle_s": (int, float), "verify": (bool,)},
    "resume": {"arg": (str, type(None)), "drift": (str,)},
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
    "engine": (str,), "restart": (dict,), "alerts": (dict,), "cost_per_hour": (int, float, type(None)),
}

SECRET_KEY = re.compile(r"(TOKEN|SECRET|PASSW|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIAL|AUTH)", re.I)
REDACTED = "<redacted>"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _where(path: Path | str, place: str) -> str:
    return f"{path}: {place}" if place else str(path)


def _type_name(types: tuple[type, ...]) -> str:
    names = {int: "a number", float: "a number", str: "a string", list: "a list", dict: "a mapping",
             bool: "true/false", type(None): "null"}
    return " or ".join(dict.fromkeys(names[t] for t in types))


def _check_type(src: Path | str, place: str, value: Any, types: tuple[type, ...]) -> None:
    if isinstance(value, bool) and bool not in types:
        raise InputError(f"{_where(src, place)}: expected {_type_name(types)}, got {value!r}")
    if not isinstance(value, types):
        raise InputError(f"{_where(src, place)}: expected {_type_name(types)}, got {type(value).__name__} {value!r}")


def validate(raw: Any, src: Path | str = "<recipe>") -> dict:
    """Check a parsed recipe against the schema and return it merged with the defaults."""
    if not isinstance(raw, dict):
        raise InputError(f"{src}: a recipe must be a YAML mapping, got {type(raw).__name__}")
    for key in raw:
        if key not in DEFAULTS:
            raise InputError(f"{_where(src, key)}: unknown key (known: {', '.join(DEFAULTS)})")
    for key, types in _TOP_TYPES.items():
        if key in raw and raw[key] is not None or key in ("command",):
            if key not in raw:
                continue
            _check_type(src, key, raw[key], types)
    if "command" not in raw or raw["command"] is None:
        raise InputError(f"{_where(src, 'command')}: missing; give the command as a list of arguments")
    cmd = raw["command"]
    if not cmd:
        raise InputError(f"{_where(src, 'command')}: empty list")
    for i, arg in enumerate(cmd):
        if isinstance(arg, bool) or not isinstance(arg, (str, int, float)):
            raise InputError(f"{_where(src, f'command[{i}]')}: expected a string, got {arg!r}")
    for k, v in (raw.get("env") or {}).items():
        if not isinstance(k, str) or isinstance(v, (dict, list)) or v is None:
            raise InputError(f"{_where(src, f'env.{k}')}: expected a string value, got {v!r}")
    out = copy.deepcopy(DEFAULTS)
    for key, value in raw.items():
        if key in _SECTION_TYPES:
            if value is None:
                continue
            _check_type(src, key, value, (dict,))
            for sk, sv in value.items():
                if sk not in _SECTION_TYPES[key]:
                    raise InputError(f"{_where(src, f'{key}.{sk}')}: unknown key "
                                     f"(known: {', '.join(_SECTION_TYPES[key])})")
                _check_type(src, f"{key}.{sk}", sv, _SECTION_TYPES[key][sk])
                choices = _CHOICES.get((key, sk))
                if choices and sv not in choices:
                    raise InputError(f"{_where(src, f'{key}.{sk}')}: must be one of {', '.join(choices)}, got {sv!r}")
            out[key] = {**out[key], **value}
        else:
            out[key] = value
    if out["engine"] not in _CHOICES[("engine",)]:
        raise InputError(f"{_where(src, 'engine')}: must be one of local, slurm, got {out['engine']!r}")
    for key in ("floor_s", "ceiling_s"):
        if out["cooldown"][key] < 0:
            raise InputError(f"{_where(src, f'cooldown.{key}')}: must be >= 0")
    if out["cooldown"]["ceiling_s"] < out["cooldown"]["floor_s"]:
        raise InputError(f"{_where(src, 'cooldown.ceiling_s')}: must be >= cooldown.floor_s")
    out["command"] = [str(a) for a in cmd]
    out["env"] = {str(k): str(v) for k, v in (out.get("env") or {}).items()}
    # Sections validated by their own modules, so their rules live next to their use.
    from runner.policy import RestartSettings
    from runner.monitors import Thresholds
    try:
        RestartSettings.from_recipe(out["restart"])
        Thresholds.from_recipe(out["alerts"])
    except InputError as exc:
        raise InputError(f"{src}: {exc}") from None
    return out


def _parse_scalar(text: str) -> Any:
    try:
        return yaml.safe_load(text) if text != "" else ""
    except yaml.YAMLError:
        return text


def apply_overrides(raw: dict, overrides: list[str], src: str = "--set") -> dict:
    """``key.sub=value`` sets a recipe value; ``args.flag=value`` sets ``--flag value`` in the
    command (replacing an existing ``--flag``, else appending)."""
    raw = copy.deepcopy(raw)
    for item in overrides:
        if "=" not in item:
            raise InputError(f"{src} {item!r}: expected KEY=VALUE")
        key, text = item.split("=", 1)
        parts = key.split(".")
        if parts[0] == "args" and len(parts) == 2:
            cmd = [str(a) for a in raw.get("command") or []]
            raw["command"] = set_flag(cmd, "--" + parts[1], text)
            continue
        if parts[0] not in DEFAULTS:
            raise InputError(f"{src} {item!r}: unknown key {parts[0]!r}")
        node = raw
        for p in parts[:-1]:
            nxt = node.get(p)
            if nxt is None:
                nxt = node[p] = {}
            if not isinstance(nxt, dict):
                raise InputError(f"{src} {item!r}: {p!r} is not a section")
            node = nxt
        node[parts[-1]] = text if parts[0] == "env" else _parse_scalar(text)
    return raw


def set_flag(argv: list[str], flag: str, value: str | None) -> list[str]:
    """Replace ``flag VALUE`` / ``flag=VALUE`` in argv, or append it. ``value=None`` removes it."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == flag:
            i += 2
            continue
        if a.startswith(flag + "="):
            i += 1
            continue
        out.append(a)
        i += 1
    if value is not None:
        out += [flag, value]
    return out


def load(path: str | Path, overrides: list[str] | None = None) -> dict:
    """Read, override and validate a recipe file. Every failure is an InputError (exit 2)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InputError(f"{path}: no such recipe file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read: {exc}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "?"
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{path}: {where}: invalid YAML: {problem}") from None
    if raw is None:
        raise InputError(f"{path}: empty recipe")
    if overrides:
        if not isinstance(raw, dict):
            raise InputError(f"{path}: a recipe must be a YAML mapping")
        raw = apply_overrides(raw, overrides)
    recipe = validate(raw, path)
    recipe["name"] = recipe["name"] or path.stem
    recipe["_recipe_dir"] = str(path.resolve().parent)
    return recipe


def recipe_hash(recipe: dict) -> str:
    """Identity of what is trained: argv and environment, secrets excluded, placeholders unfilled
    (so two runs of one recipe hash alike). Resume arguments are added later and not hashed."""
    env = {k: v for k, v in sorted(recipe.get("env", {}).items()) if not SECRET_KEY.search(k)}
    blob = json.dumps({"command": recipe["command"], "env": env}, sort_keys=True)
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


def secret_values(env: dict[str, str]) -> list[str]:
    """Values that must never be written anywhere (from secret-looking keys)."""
    return sorted({v for k, v in env.items() if SECRET_KEY.search(k) and len(v) >= 4}, key=len, reverse=True)


def redact(text: str, secrets: list[str]) -> str:
    for s in secrets:
        text = text.replace(s, "***")
    return text


_SECRET_FLAG = re.compile(r"^--?[\w-]*(token|secret|passw|api[_-]?key|access[_-]?key)[\w-]*$", re.I)


def redact_argv(argv: list[str], secrets: list[str] = ()) -> list[str]:
    """Argv safe to show: values of secret-looking flags and known secret values masked."""
    out: list[str] = []
    mask_next = False
    for a in argv:
        if mask_next:
            out.append("***")
            mask_next = False
            continue
        if "=" in a and _SECRET_FLAG.match(a.split("=", 1)[0]):
            out.append(a.split("=", 1)[0] + "=***")
            continue
        if _SECRET_FLAG.match(a):
            mask_next = True
        out.append(redact(a, list(secrets)))
    return out


def for_run_dir(recipe: dict) -> dict:
    """The recipe as written to ``recipe.yaml``: literal secret values replaced."""
    r = {k: v for k, v in recipe.items() if not k.startswith("_")}
    r["env"] = {k: (REDACTED if SECRET_KEY.search(k) and not _ENV_REF.fullmatch(v) else v)
                for k, v in recipe.get("env", {}).items()}
    return r


def dump_yaml(recipe: dict) -> str:
    return yaml.safe_dump(recipe, sort_keys=False, default_flow_style=None)
