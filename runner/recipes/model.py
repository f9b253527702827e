"""The recipe as a declarative model: one msgspec Struct per section, with its keys, types,
defaults, choices (``Literal``) and ranges (``moeconsole.runner.core.bounds`` through
``moeconsole.runner.core.schema``). Unknown keys are refused with "did you mean", NaN and infinity never
pass a range. Sections whose settings another module uses are that module's model
(``restart``: moeconsole.runner.core.policy, ``alerts``: moeconsole.runner.core.monitors, ``memory``:
moeconsole.runner.core.memory, ``metrics``/``notify``: moeconsole.runner.ops, ``sync``: moeconsole.runner.checkpoints.sync,
``slurm``: moeconsole.runner.process.slurm.settings), so each rule lives next to its use.

``moeconsole.runner.recipes.recipe.validate`` converts a parsed recipe with ``Recipe`` and hands callers
a ``RunRecipe``: the same model, its command and environment as text, and where it was loaded
from (``_launch`` in a run's recipe.yaml). Callers read attributes (``recipe.cooldown.floor_s``);
the dict form exists only at the edges (``--set`` before validation, recipe.yaml on write).
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

import msgspec
from msgspec.structs import force_setattr

from moeconsole.runner.checkpoints.sync import SyncSettings
from moeconsole.runner.core import bounds, schema
from moeconsole.runner.core.memory import MemorySection
from moeconsole.runner.core.monitors import Thresholds
from moeconsole.runner.core.policy import RestartSettings
from moeconsole.runner.ops.notify import NotifySettings
from moeconsole.runner.ops.sidecars import MetricsSettings
from moeconsole.runner.process.slurm.settings import SlurmSettings

_MIB = bounds.Range(0.0, float(1 << 30), unit="MiB")
_POLL = bounds.Range(0.0, bounds.HOUR, lo_open=True)
_MARGIN = bounds.Range(1.0, 100.0, unit="factor")
_GIB = bounds.Range(0.0, float(1 << 20), lo_open=True, unit="GiB")
_BAD_SAVES = bounds.Range(0, 1 << 20, integer=True, unit="count")
_MAX_LENGTH = bounds.Range(1, 1 << 30, integer=True, unit="count")
_SAMPLES = bounds.Range(1, 1 << 50, integer=True, unit="count")
_GPU_INDEX = bounds.Range(0, 1 << 16, integer=True, unit="count")
_COST = bounds.Range(0.0, 1e9, unit="money per hour")
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$"
_NAME = schema.text(NAME_PATTERN,
                    "ASCII letters, digits and . _ + - (at most 64; it names run directories; "
                    "`--name NAME` on `run` or `demo` names a run in any script)")


def stem_name(stem: str) -> str:
    """The recipe name a file with no ``name:`` gets from its stem: the stem when it is a name,
    else its ASCII slug as a run id holds it (``rundir.id_slug``: ``my run`` is ``my-run``, ``实验``
    is ``h5e4285``). The stem went in unchecked and the runner refused the run's recipe.yaml: a
    FAILED run per try, ``--name`` no help (review R70)."""
    if re.fullmatch(NAME_PATTERN, stem):
        return stem
    from moeconsole.runner.rundir.rundir import id_slug
    slug = id_slug(stem).lstrip("._+-")[:64]
    return slug if re.fullmatch(NAME_PATTERN, slug) else "recipe"


_FLAG = schema.text(r"^-[^\x00]*$", "a flag such as --resume_from_checkpoint")

Text = schema.NoNul


class Cooldown(schema.Section, frozen=True):
    """Between attempts: wait at least ``floor_s``, at most ``ceiling_s`` for the GPUs to free."""
    floor_s: schema.Seconds = 10.0
    ceiling_s: schema.Seconds = 90.0
    gpu_mem_tolerance_mib: Annotated[float, schema.within(_MIB)] = 1024.0
    poll_s: Annotated[float, schema.within(_POLL)] = 0.5
    # after a disk_full crash: wait (past the ceiling) until the output's filesystem has this much free,
    # and disk_margin x the largest checkpoint seen (moeconsole.runner.checkpoints.diskroom.room_needed)
    disk_free_min_mib: Annotated[float, schema.within(_MIB)] = 1024.0
    disk_margin: Annotated[float, schema.within(_MARGIN)] = 1.2

    def __post_init__(self) -> None:
        if self.ceiling_s < self.floor_s:
            raise ValueError(f"ceiling_s: must be >= cooldown.floor_s ({self.ceiling_s:g} < {self.floor_s:g})")


class KillSettings(schema.Section, frozen=True):
    grace_s: schema.Grace = 60.0     # SIGTERM -> SIGKILL


class Heartbeat(schema.Section, frozen=True):
    timeout_s: schema.PositiveSeconds = 1800.0
    stale_state_s: schema.PositiveSeconds = 30.0
    startup_s: schema.Seconds | None = None   # silence allowed before the first step


class Checkpoints(schema.Section, frozen=True):
    dir: Text | None = None
    settle_s: schema.Seconds = 2.0
    verify: bool = True
    pause_after_bad_saves: Annotated[int, schema.within(_BAD_SAVES)] = 2


class Resume(schema.Section, frozen=True):
    arg: Annotated[str, _FLAG] | None = None
    args: list[Any] | None = None    # checked by moeconsole.runner.recipes.resume (lint names each problem)
    drift: Literal["refuse", "warn", "allow"] = "refuse"


class Swift(schema.Section, frozen=True):
    version: Text | None = None
    python: Text | None = None
    validated_max_length: Annotated[int, schema.within(_MAX_LENGTH)] | None = None
    dataset_samples: Annotated[int, schema.within(_SAMPLES)] | None = None
    pins: dict[str, Any] | None = None   # checked by moeconsole.runner.recipes.doctor.parse_pins


class Markers(schema.Section, frozen=True):
    init_done: Text | None = None


class Gpus(schema.Section, frozen=True):
    devices: list[Annotated[int, schema.within(_GPU_INDEX)]] | None = None
    memory_capacity_gib: Annotated[float, schema.within(_GIB)] | None = None

    def __post_init__(self) -> None:
        if self.devices is not None and len(set(self.devices)) != len(self.devices):
            raise ValueError(f"devices: must be distinct GPU indexes (0, 1, ...), got {self.devices!r}")


class Preflight(schema.Section, frozen=True):
    on_busy: Literal["wait", "kill", "refuse"] = "wait"
    port: schema.Port | None = None


class Lint(schema.Section, frozen=True):
    ignore: list[str] = []


Arg = str | int | float   # a command argument as YAML gives it (numbers become text)


class Recipe(schema.Section, frozen=True):
    """A whole recipe (docs/recipes.md)."""
    command: Annotated[Sequence[Arg], schema.described("a list of arguments (an argv, never a shell string)")]
    name: Annotated[str, _NAME] | None = None
    description: Text = ""
    # How to install what the command runs on a machine that lacks it: named by lint (and run's
    # pre-flight) when the command's executable is missing there.
    setup: Text = ""
    env: Mapping[str, Arg] = {}
    workdir: Text | None = None
    engine: Literal["local", "slurm"] = "local"
    restart: RestartSettings = RestartSettings()
    cooldown: Cooldown = Cooldown()
    kill: KillSettings = KillSettings()
    heartbeat: Heartbeat = Heartbeat()
    checkpoints: Checkpoints = Checkpoints()
    resume: Resume = Resume()
    swift: Swift = Swift()
    markers: Markers = Markers()
    alerts: Thresholds = Thresholds()
    memory: MemorySection = MemorySection()
    gpus: Gpus = Gpus()
    preflight: Preflight = Preflight()
    cost_per_hour: Annotated[float, schema.within(_COST)] | None = None
    lint: Lint = Lint()
    metrics: MetricsSettings = MetricsSettings()
    notify: NotifySettings = NotifySettings()
    sync: SyncSettings = SyncSettings()
    slurm: SlurmSettings = SlurmSettings()
    # the training log's line format when no reader knows it (moeconsole.runner.ingest.userformat)
    log_format: str | None = None

    def __post_init__(self) -> None:
        if not self.command:
            raise ValueError("command: empty list")
        if self.log_format is not None:
            from moeconsole.runner.ingest.userformat import LineFormatError, parse_line_format
            try:
                parse_line_format(self.log_format)
            except LineFormatError as exc:
                raise ValueError(str(exc)) from None
        force_setattr(self, "command", [str(a) for a in self.command])
        force_setattr(self, "env", {k: str(v) for k, v in self.env.items()})


class Launch(schema.Section, frozen=True):
    """Where a recipe was loaded from and launched: not a key of a recipe file; a run's
    recipe.yaml keeps it as ``_launch`` (``{recipe_dir}`` and relative paths resolve against it)."""
    recipe_dir: str = ""
    cwd: str | None = None


class RunRecipe(Recipe, frozen=True):
    """A recipe as the runner and the console use it (what ``recipes.load`` returns): every
    section its model, the command and the environment as text, and where it came from."""
    command: list[str]
    env: dict[str, str] = {}
    launch: Launch = msgspec.field(default_factory=Launch, name="_launch")
    # The sections of OWNED_ELSEWHERE as the recipe file wrote them: what recipe.yaml shows
    # (``recipes.for_run_dir``) and lint reports on (the memory keys of an old ``alerts:``);
    # no setting is read from here.
    written: dict[str, Any] = msgspec.field(default_factory=dict, name="_written")


def run_recipe(recipe: Recipe, launch: Launch | None = None, **changes: Any) -> RunRecipe:
    """``recipe`` (already validated) as a RunRecipe, with ``changes`` applied."""
    fields = {f: getattr(recipe, f) for f in Recipe.__struct_fields__}
    if isinstance(recipe, RunRecipe):
        fields.update(launch=recipe.launch, written=recipe.written)
    if launch is not None:
        fields["launch"] = launch
    return RunRecipe(**{**fields, **changes})


KEYS: tuple[str, ...] = tuple(schema.field_names(Recipe))
# Sections another module builds its settings from (restart: the policy, alerts: the monitors,
# ...): recipe.yaml shows the keys the recipe set in them (their values differ from the owner's
# defaults), as the recipe wrote them.
OWNED_ELSEWHERE = ("restart", "alerts", "memory", "metrics", "notify", "sync", "slurm")


def section_model(key: str) -> type | None:
    """The model of section ``key`` (None: not a section of fixed keys, as ``env``)."""
    info = msgspec.inspect.type_info(Recipe)
    assert isinstance(info, msgspec.inspect.StructType)
    for f in info.fields:
        if f.encode_name == key and isinstance(f.type, msgspec.inspect.StructType):
            return f.type.cls
    return None


def is_section(key: str) -> bool:
    """A key that holds a mapping (``kill``, ``env``): ``--set kill=3`` is refused."""
    info = msgspec.inspect.type_info(Recipe)
    assert isinstance(info, msgspec.inspect.StructType)
    return any(f.encode_name == key and isinstance(f.type, (msgspec.inspect.StructType, msgspec.inspect.DictType))
               for f in info.fields)
