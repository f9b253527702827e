"""ms-swift's command line as its parser sees it, from the shipped flag tables.

ms-swift parses with transformers' ``HfArgumentParser`` (an ``argparse`` parser with
``allow_abbrev`` on). For each dataclass field it registers ``--name``, ``--name-with-dashes``
when the name has ``_``, and for a bool defaulting to true also ``--no_name``/``--no-name``.
argparse then accepts any unique prefix of those strings (``--use_megatron`` silently becomes
``--use_megatron_fsdp``), exits 2 on an ambiguous one (``--save``), and ms-swift raises
``ValueError: remaining_argv: [...]`` for anything left unknown.
"""
from __future__ import annotations

import gzip
import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

FLAGS_DIR = Path(__file__).resolve().parent / "flags"
TABLE_SUFFIX = ".json.gz"
_TABLE_NAME = re.compile(r"^ms-swift-(\d+)\.(\d+)\.(\d+)(\S*)\.json\.gz$")


def table_name(version: str) -> str:
    """The shipped file of one version's table: ``ms-swift-4.6.0.json.gz``."""
    return f"ms-swift-{version}{TABLE_SUFFIX}"


def read_table_file(path: str | Path) -> dict[str, Any]:
    """A table as written by ``write_table_file`` (gzip'd JSON; plain JSON for a path not ending in ``.gz``)."""
    data = Path(path).read_bytes()
    return json.loads(gzip.decompress(data) if str(path).endswith(".gz") else data)


def write_table_file(path: str | Path, table: dict[str, Any]) -> None:
    """Write a table atomically. The shipped ones are gzip'd (16 releases' tables are 5.8 MB of JSON,
    0.5 MB compressed) with no name or time in the gzip header, so the same table gives the same bytes."""
    path = Path(path)
    text = (json.dumps(table, indent=1, sort_keys=False) + "\n").encode()
    data = gzip.compress(text, compresslevel=9, mtime=0) if str(path).endswith(".gz") else text
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


@dataclass(frozen=True)
class Table:
    """One generated table: the fields each command parses, for one ms-swift version."""
    version: str
    source: str
    commands: dict[str, dict[str, Any]]
    path: Path

    def fields(self, command: str) -> dict[str, dict] | None:
        c = self.commands.get(command)
        return None if c is None else c["fields"]

    def partial(self, command: str) -> list[str]:
        """Bases of the command's argument class that the table could not read (outside ms-swift)."""
        c = self.commands.get(command)
        return list(c.get("unresolved_bases", [])) if c else []


_VERSION_RE = re.compile(r"^\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+|x))?(?:[.-]?(dev|a|b|rc)[.-]?(\d*))?", re.I)
_PRE_RANK = {"dev": 0, "a": 1, "b": 2, "rc": 3}


def _version_parts(v: str) -> tuple[tuple[int, int, int], int, tuple[int, int, int]]:
    """(release numbers, how many of them the string names, (0 pre-release / 1 release, rank, number))."""
    m = _VERSION_RE.match(v)
    if not m:
        return (0, 0, 0), 0, (1, 0, 0)
    named = [x for x in m.group(1, 2, 3) if x is not None and x.isdigit()]
    nums = tuple(int(x) for x in named) + (0,) * (3 - len(named))
    pre = m.group(4)
    tail = (1, 0, 0) if pre is None else (0, _PRE_RANK[pre.lower()], int(m.group(5) or 0))
    return (nums[0], nums[1], nums[2]), len(named), tail


def version_key(v: str) -> tuple:
    """Release order of an ms-swift version (PEP 440 for the forms ms-swift uses). A build of
    ms-swift's main branch is ``4.6.0.dev0`` (its swift/version.py), older than the ``4.6.0``
    release and a different set of flags; ``4.6`` and ``4.6.x`` name the release line."""
    nums, _, tail = _version_parts(v)
    return (*nums, *tail)


def is_prerelease(v: str) -> bool:
    """``4.6.0.dev0``, ``4.6.0rc1``: a build before its release, whose flags are not the release's."""
    return _version_parts(v)[2][0] == 0


def same_swift(wanted: str, installed: str) -> bool:
    """Does the installed ms-swift match the version a recipe names (``swift.version``)? ``4.6`` and
    ``4.6.x`` are any 4.6 release, ``4.6.0`` that release. A pre-release (``4.6.0.dev0``, a build of
    ms-swift's main branch) matches only itself: it lacks flags the release has and types some
    differently (docs/swift-recipe.md). The one rule for ``lint`` and ``doctor``."""
    w_nums, named, w_tail = _version_parts(wanted)
    h_nums, _, h_tail = _version_parts(installed)
    if w_nums[:named] != h_nums[:named]:
        return False
    if w_tail[0] == 0 or h_tail[0] == 0:
        return named == 3 and w_nums == h_nums and w_tail == h_tail
    return True


def prerelease_note(wanted: str, installed: str) -> str:
    """What a swift_version_mismatch adds when one side is a pre-release ("" otherwise)."""
    pre = next((v for v in (installed, wanted) if is_prerelease(v)), None)
    if pre is None:
        return ""
    release = ".".join(str(n) for n in _version_parts(pre)[0])
    return f" ({pre} is a build before the {release} release, ms-swift's main branch: not the release's flags)"


@lru_cache(maxsize=None)
def shipped_tables(flags_dir: str = str(FLAGS_DIR)) -> tuple[tuple[str, str], ...]:
    """(version, path) of every shipped table, oldest first."""
    out = []
    for p in Path(flags_dir).glob("ms-swift-*" + TABLE_SUFFIX):
        if _TABLE_NAME.match(p.name):
            out.append((p.name[len("ms-swift-"):-len(TABLE_SUFFIX)], str(p)))
    return tuple(sorted(out, key=lambda vp: version_key(vp[0])))


def tabled_releases(flags_dir: str = str(FLAGS_DIR)) -> str:
    """The shipped tables in words, one entry per release line: ``4.2.0-4.2.3, ..., 4.6.0.dev0, 4.6.0``."""
    lines: dict[tuple[int, int], list[str]] = {}
    for v, _ in shipped_tables(flags_dir):
        lines.setdefault(_version_parts(v)[0][:2], []).append(v)
    out = []
    for versions in lines.values():
        pre = [v for v in versions if is_prerelease(v)]
        rel = [v for v in versions if not is_prerelease(v)]
        out += pre + ([f"{rel[0]}-{rel[-1]}" if len(rel) > 1 else rel[0]] if rel else [])
    return ", ".join(out)


@lru_cache(maxsize=None)
def load_table(path: str) -> Table:
    raw = read_table_file(path)
    return Table(version=raw["ms_swift_version"], source=raw.get("source", ""), commands=raw["commands"],
                 path=Path(path))


def names_line(version: str) -> bool:
    """``4.5``, ``4.5.x``: any release of the 4.5 line, not one release (``4.5.0``, ``4.6.0.dev0``)."""
    return _version_parts(version)[1] < 3 and not is_prerelease(version)


def _line_releases(version: str, flags_dir: str) -> list[tuple[str, str]]:
    """(version, path) of the shipped release tables (no pre-release) of ``version``'s line, oldest first."""
    want = version_key(version)[:2]
    return [(v, p) for v, p in shipped_tables(flags_dir) if version_key(v)[:2] == want and not is_prerelease(v)]


def missing_in_line(version: str | None, command: str, names: list[str],
                    flags_dir: str = str(FLAGS_DIR)) -> dict[str, list[str]]:
    """For a ``version`` naming a line (``4.5``), the older releases of that line whose ``command``
    lacks each field of ``names`` (the newest release's table, which lint checks a line against, has
    it; ms-swift 4.5.0 raises ``ValueError: remaining_argv`` for 4.5.3's ``--muon_lr``). {} otherwise."""
    if not version or not names_line(version):
        return {}
    out: dict[str, list[str]] = {}
    for v, p in _line_releases(version, flags_dir)[:-1]:
        fields = load_table(p).fields(command) or {}
        for n in names:
            if n not in fields:
                out.setdefault(n, []).append(v)
    return out


def pick(version: str | None, flags_dir: str = str(FLAGS_DIR)) -> tuple[Table | None, str]:
    """The table for ``version`` ("4.6", "4.2.0", "4.6.x", "4.6.0.dev0"): a release, the version
    closest at or below it in its major.minor (a pre-release sorts before its release, so
    ``4.6.0.dev0`` gets the main-branch table and ``4.6.0`` the release's); a line (``4.5``,
    ``4.5.x``), its newest release's table (the flags of any of its releases; ``missing_in_line``
    says which of them an older patch lacks). Without a version, the newest table.
    Returns (table, how it was chosen)."""
    tables = shipped_tables(flags_dir)
    if not tables:
        return None, "no flag tables are shipped"
    if not version:
        v, p = tables[-1]
        return load_table(p), f"no ms-swift version named; checked against {v}, the newest table"
    want = version_key(version)        # "4.6" / "4.6.0": the release, after any build before it
    same_minor = [(v, p) for v, p in tables if version_key(v)[:2] == want[:2]]
    if not same_minor:
        known = ", ".join(v for v, _ in tables)
        return None, f"no flag table for ms-swift {version} (tables: {known})"
    releases = _line_releases(version, flags_dir) if names_line(version) else []
    if len(releases) > 1:
        v, p = releases[-1]
        return load_table(p), (f"checked against the ms-swift {v} flag table, the newest of the {version} line "
                               f"({releases[0][0]}-{v})")
    at_or_below = [(v, p) for v, p in same_minor if version_key(v) <= want] or same_minor
    v, p = at_or_below[-1]
    return load_table(p), f"checked against the ms-swift {v} flag table"


def is_bool(spec: dict) -> bool:
    return spec.get("type", "").replace(" ", "") in ("bool", "Optional[bool]")


def takes_bare(spec: dict) -> bool:
    """Can the flag be given without a value (meaning true)? transformers' ``HfArgumentParser``
    (hf_argparser.py ``_parse_dataclass_field``) adds ``nargs="?", const=True`` for ``bool``, and
    for ``Optional[bool]`` only when the field has a default other than None: a bare
    ``--merge_lora`` (``Optional[bool] = None``) makes argparse exit 2, "expected one argument"."""
    if not is_bool(spec):
        return False
    return spec.get("type", "").replace(" ", "") == "bool" or spec.get("default") is not None


def option_strings(fields: dict[str, dict]) -> dict[str, str]:
    """Every option string the parser registers -> the field it sets."""
    out: dict[str, str] = {}
    for name, spec in fields.items():
        out[f"--{name}"] = name
        if "_" in name:
            out[f"--{name.replace('_', '-')}"] = name
        if is_bool(spec) and spec.get("default") is True:
            out[f"--no_{name}"] = name
            out[f"--no-{name.replace('_', '-')}"] = name
    return out


@dataclass
class Resolved:
    """What the parser makes of one ``--flag`` token."""
    token: str          # as written, without any ``=value``
    index: int          # position in argv
    status: str         # exact | abbreviated | ambiguous | unknown
    dest: str | None = None
    candidates: list[str] = field(default_factory=list)


def resolve_flags(argv: list[str], fields: dict[str, dict]) -> list[Resolved]:
    """Each ``--flag`` of ``argv`` (the arguments after the subcommand) as argparse resolves it."""
    opts = option_strings(fields)
    by_len = sorted(opts)
    out = []
    for i, tok in enumerate(argv):
        if not tok.startswith("--") or tok == "--":
            continue
        name = tok.split("=", 1)[0]
        if name in opts:
            out.append(Resolved(name, i, "exact", opts[name]))
            continue
        matches = [o for o in by_len if o.startswith(name)]
        targets = sorted({opts[o] for o in matches})
        if len(targets) == 1:
            out.append(Resolved(name, i, "abbreviated", targets[0], [m for m in matches]))
        elif targets:
            out.append(Resolved(name, i, "ambiguous", None, sorted(f"--{t}" for t in targets)))
        else:
            out.append(Resolved(name, i, "unknown"))
    return out


def values_of(argv: list[str], index: int) -> list[str]:
    """The value tokens that follow the flag at ``index`` (up to the next ``--flag``)."""
    tok = argv[index]
    if "=" in tok:
        return [tok.split("=", 1)[1]]
    vals = []
    for a in argv[index + 1:]:
        if a.startswith("--"):
            break
        vals.append(a)
    return vals


# HfArgumentParser's string_to_bool (transformers hf_argparser.py), which ms-swift's and
# Megatron-SWIFT's arguments go through
_TRUE = frozenset({"true", "yes", "t", "y", "1"})
_FALSE = frozenset({"false", "no", "f", "n", "0"})


def truthy(vals: list[str] | None) -> bool:
    """A boolean flag's values as HfArgumentParser takes them: a bare ``--flag`` is True, ``--flag
    false`` False; an absent flag (None) is False."""
    return vals is not None and (not vals or vals[0].lower() in _TRUE)


def _converts(kind: type, text: str) -> bool:
    try:
        kind(text)
    except (ValueError, TypeError):
        return False
    return True


def type_problem(spec: dict, vals: list[str]) -> str | None:
    """A value the field's type conversion would reject, as argparse would say it (None if fine)."""
    t = spec.get("type", "").replace(" ", "")
    inner = re.sub(r"^Optional\[(.*)\]$", r"\1", t)
    if is_bool(spec):
        if len(vals) > 1:
            return f"takes one value, got {len(vals)}"
        if not vals and not takes_bare(spec):
            return ("needs a value (true/false): an Optional[bool] with no default takes no bare flag, "
                    "argparse exits 2 (expected one argument)")
        if vals and vals[0].lower() not in _TRUE | _FALSE:
            return f"expects true/false, got {vals[0]!r}"
        return None
    is_list = inner.startswith(("List[", "list["))
    if not vals and not is_list:
        return "expects a value"
    if len(vals) > 1 and not is_list:
        return f"takes one value, got {len(vals)} ({' '.join(vals)})"
    base = re.sub(r"^(List|list)\[(.*)\]$", r"\2", inner)
    for v in vals:
        # argparse converts with the field's own type (HfArgumentParser ``kwargs["type"] = field.type``,
        # transformers 5.19 hf_argparser.py l.221, l.228; argparse ``_get_value`` calls ``type_func(arg_string)``),
        # so what Python's int() takes is taken: ``1_000``, `` 512``, ``+8``. A pattern of digits refused them.
        if base == "int" and not _converts(int, v):
            return f"expects an integer, got {v!r}"
        if base == "float" and not _converts(float, v):
            return f"expects a number, got {v!r}"
        choices = spec.get("choices")
        if choices and v not in [str(c) for c in choices]:
            return f"must be one of {', '.join(str(c) for c in choices)}, got {v!r}"
    return None


# ms-swift's commands on the transformers Trainer (SwiftMixin, swift/trainers/mixin.py; ``megatron ...``
# and ``swift export``/``infer`` are not): its ``checkpoint-N/`` is a ``Trainer._save_checkpoint``.
TRAINER_COMMANDS = frozenset({"swift sft", "swift pt", "swift rlhf"})


def saves_through_trainer(argv: list[str]) -> bool:
    """Does this command's training save through transformers' ``Trainer._save_checkpoint``
    (weights first, trainer_state.json last)? The one rule the runner's checkpoint keeper, the
    restart plan and ``verify RUN`` ask, so the first save of such a run, cut before its
    trainer_state.json, is incomplete (``discover.trainer_writes_state``)."""
    return command_of(argv)[0] in TRAINER_COMMANDS


# Any other command (``python train.py`` of one's own on ``transformers.Trainer``) says it in its log:
# the Trainer's opening block (a log-format fact: ``ingest.formats.trainer_banner`` and
# ``trainer_params``), which the parser marks and the runner records in state.json.
TRAINER_LOGGED = "trainer_logged"   # state.json: the run's log showed the Trainer's block (the runner sets it)


def run_saves_through_trainer(argv: list[str], state: Mapping[str, Any]) -> bool:
    """Does this run save through transformers' Trainer: its command says so
    (``saves_through_trainer``), or its log showed the Trainer's opening block (the runner records
    ``TRAINER_LOGGED`` in state.json when the parser marks it)? The one question the runner's
    keeper, the restart plan and ``verify RUN`` ask."""
    return saves_through_trainer(argv) or bool(state.get(TRAINER_LOGGED))


def command_of(argv: list[str]) -> tuple[str | None, int]:
    """("megatron sft", index of the first argument after it) for an ms-swift launch, else (None, 0).
    Recognises ``megatron sft``, ``swift sft`` and the CLI modules run by python/torchrun."""
    for i, a in enumerate(argv):
        base = os.path.basename(a)
        if base in ("megatron", "swift") and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
            return f"{base} {argv[i + 1].replace('_', '-')}", i + 2
        m = re.search(r"swift[/.]cli[/.](_megatron[/.])?(sft|pt|rlhf|export)(\.py)?$", a)
        if m:
            return ("megatron " if m.group(1) else "swift ") + m.group(2), i + 1
    return None, 0


# The subcommands each entry point routes (``ROUTE_MAPPING``: swift/cli/main.py l.14-27 for ``swift``,
# swift/cli/_megatron/main.py l.6-11 for ``megatron``; the same in every release from 4.2.0 to 4.6.0).
# ``cli_main`` turns ``_`` into ``-`` (main.py l.89) and looks the word up (l.91): any other word stops it
# with ``KeyError: '<word>'`` before anything starts.
ROUTES = {
    "swift": frozenset({"pt", "sft", "infer", "merge-lora", "web-ui", "deploy", "rollout", "rlhf", "sample",
                        "export", "eval", "app"}),
    "megatron": frozenset({"pt", "sft", "rlhf", "export"}),
}


def unknown_subcommand(command: str | None) -> str | None:
    """The subcommand word of ``swift X``/``megatron X`` (``command_of``) that its entry point does not route, or None."""
    program, _, word = (command or "").partition(" ")
    return word if program in ROUTES and word and word not in ROUTES[program] else None


# ms-swift's ``swift`` and ``megatron`` entry points read a first argument ending in .json, .yaml
# or .yml as a file of arguments (swift/cli/main.py ``parse_yaml_args``, the same from 4.2.0 to
# 4.6.0 l.38-72, called by ``cli_main`` l.92 before it starts the trainer): each key becomes
# ``--key`` followed by the value (a list: its items, a dict: its JSON, else ``str(value)``),
# spliced in where the file was, so flags after the file win (argparse keeps the last); its
# ``ENV`` mapping sets the variables the environment lacks (``NPROC_PER_NODE`` there starts
# torchrun). The trainer scripts run directly (``python swift/cli/sft.py``) read no such file.
CONFIG_SUFFIXES = (".json", ".yaml", ".yml")


@dataclass(frozen=True)
class ConfigFile:
    """An ms-swift config file a command names, as the entry point splices it in."""
    path: str                                   # as the command names it
    flags: tuple[str, ...] = ()                 # the argv it stands for
    env: dict[str, str] = field(default_factory=dict)   # its ENV section
    error: str | None = None                    # why it could not be read here


def config_file(argv: list[str], start: int, cwd: str | None) -> ConfigFile | None:
    """The config file of an ms-swift command whose arguments begin at ``start`` (``command_of``),
    read the way ``parse_yaml_args`` reads it; a relative path is taken from ``cwd``, the directory
    the command runs in (None: unknown). None when the command names no config file. YAML is read
    as ms-swift reads it, PyYAML's ``yaml.safe_load`` (main.py l.45-47: YAML 1.1), so each flag gets
    the text ms-swift's ``str(value)`` gives (l.69): ``check_model: off`` is ``--check_model False``
    and ``lora_rank: 1_6`` is ``--lora_rank 16``. Read as YAML 1.2 (moeconsole's recipes), ``off``
    stayed the text ``off`` and lint refused what ms-swift runs (``expects true/false``)."""
    from moeconsole.runner.rundir import yamlio

    if not 2 <= start < len(argv) or os.path.basename(argv[start - 2]) not in ("swift", "megatron"):
        return None
    first = argv[start]
    if not first.endswith(CONFIG_SUFFIXES) or first.startswith("-"):
        return None
    if "{" in first:
        return ConfigFile(first, error="its path is only known at run time")
    if not os.path.isabs(first):
        if cwd is None:
            return ConfigFile(first, error="a relative path, and the directory the command runs in is not known")
        first_path = os.path.join(cwd, first)
    else:
        first_path = first
    try:
        text = yamlio.read_text(first_path, what="ms-swift config file")
        data = json.loads(text) if first.endswith(".json") else yamlio.loads_yaml(text, first_path, as_pyyaml=True)
    except (yamlio.YamlError, ValueError) as exc:
        return ConfigFile(first, error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    if not isinstance(data, dict):
        return ConfigFile(first, error="not a mapping of argument names to values (ms-swift stops at start-up)")
    env = data.pop("ENV", None)
    flags: list[str] = []
    for key, value in data.items():
        flags.append(f"--{key}")
        if isinstance(value, list):
            flags += [str(item) for item in value]
        else:
            flags.append(json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else str(value))
    return ConfigFile(first, tuple(flags), {str(k): str(v) for k, v in env.items()} if isinstance(env, dict) else {})


def expanded_argv(argv: list[str], start: int, cwd: str | None) -> tuple[list[str], ConfigFile | None]:
    """``argv`` with its config file replaced by the flags it holds (``config_file``), as the trainer
    receives it; unchanged when there is none or it cannot be read."""
    cfg = config_file(argv, start, cwd)
    if cfg is None or cfg.error:
        return list(argv), cfg
    return [*argv[:start], *cfg.flags, *argv[start + 1:]], cfg


def trainer_argv(argv: list[str], cwd: str | None) -> list[str]:
    """The command line an ms-swift command's trainer parses: ``argv`` with the config file it names
    spliced in (``expanded_argv``); any other command unchanged. What a rule about the trainer's
    flags (a resume mode, ``--finetune``) must read, since those flags may sit in the file."""
    _, start = command_of(argv)
    return expanded_argv(argv, start, cwd)[0] if start else list(argv)


# How each release's entry point treats a config file's ENV (swift/cli/main.py of each wheel, compared
# release by release from 4.2.0 to 4.6.0):
# - 4.2.0, 4.2.1: ``cli_main`` calls ``get_torchrun_args()`` before ``parse_yaml_args`` (l.89-90), so
#   ``NPROC_PER_NODE``/``NNODES`` in the ENV start no torchrun (one process), and the ENV overwrites the
#   environment (l.56 ``os.environ[k] = str(v)``) for the trainer.
# - 4.2.2 and later: ``parse_yaml_args`` first (4.6.0 l.92-93), and the ENV sets only the names the
#   environment lacks (4.6.0 l.55-59: a variable already set wins, with a warning when they differ).
# - 4.3.0 alone: that warning's ``logger`` is not defined (the import was dropped; 4.3.1 put it back),
#   so an ENV value that differs from a variable already set stops the entry point with
#   ``NameError: name 'logger' is not defined`` (4.3.0 l.55) before anything starts.
ENV_AFTER_TORCHRUN = ((4, 2, 0), (4, 2, 2))     # [from, to): the ENV is read after torchrun's arguments
ENV_WARNING_NAMEERROR = (4, 3, 0)


def _release(version: str | None) -> tuple[int, int, int] | None:
    """The one release ``version`` names (``4.2.1``), or None for a line (``4.2``), a pre-release or none."""
    if not version or names_line(version) or is_prerelease(version):
        return None
    return _version_parts(version)[0]


def config_env_starts_torchrun(version: str | None) -> bool:
    """Does a config file's ENV reach the entry point's torchrun decision in this ms-swift release?
    (False for 4.2.0 and 4.2.1, ``ENV_AFTER_TORCHRUN``; True otherwise, a line or no version included.)"""
    rel = _release(version)
    return rel is None or not ENV_AFTER_TORCHRUN[0] <= rel < ENV_AFTER_TORCHRUN[1]


def env_clash_nameerror(version: str | None) -> bool:
    """Does this release stop with ``NameError`` when a config file's ENV differs from a variable already set?"""
    return _release(version) == ENV_WARNING_NAMEERROR


def with_config_env(env: dict[str, str], cfg: ConfigFile | None, version: str | None = None) -> dict[str, str]:
    """The environment the ms-swift entry point decides torchrun's processes by: ``env`` plus the config
    file's ENV for the names ``env`` lacks (``parse_yaml_args``: a variable already set wins); ``env``
    alone for a release that reads the file after that decision (4.2.0, 4.2.1: ``config_env_starts_torchrun``)."""
    if cfg is None or not config_env_starts_torchrun(version):
        return dict(env)
    return {**cfg.env, **env}
