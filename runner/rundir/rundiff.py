"""Compare two runs: loss curves, final/min loss, peak memory, throughput, recipe differences.

UI-free: the run browser's compare screen and ``moeconsole runs diff A B [--json]`` both use
``compare``. A side is a moeconsole run directory, or a directory/log not made by moeconsole
(a swift output dir, a Megatron log, a logging.jsonl) read through ``moeconsole.runner.ingest``.
Typical use: the same recipe in BF16, FP8 and NVFP4, told apart by their recipe differences.
"""
from __future__ import annotations

import math
import shlex
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable


from moeconsole.runner.core.numbers import as_float
from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.checkpoints.discover import SWIFT_ARGS_FILES
from moeconsole.runner.rundir.secrets import mask_field
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.core.series import Series, to_pairs
from moeconsole.runner.rundir.snapshot import CHART_KEYS, RunWatcher

STAT_KEYS = ("steps", "final_loss", "min_loss", "min_loss_step", "peak_mem_gib", "mean_tokens_per_s",
             "mean_step_time_s", "median_step_time_s", "attempts", "restarts", "status", "duration_s")
# Stats where smaller is better (for the "better" column); others are informational.
LOWER_IS_BETTER = {"final_loss": True, "min_loss": True, "peak_mem_gib": True, "mean_step_time_s": True,
                   "median_step_time_s": True, "mean_tokens_per_s": False}


@dataclass
class RunSide:
    """One side of a comparison: its identity, whole-run series and the recipe as a flat dict."""

    label: str
    path: str
    series: dict[str, Series]
    info: dict = field(default_factory=dict)
    recipe: dict[str, Any] = field(default_factory=dict)

    def stats(self) -> dict:
        return side_stats(self.series, self.info)


def _finite_values(values: list[float]) -> list[float]:
    return [v for v in values if math.isfinite(v)]


def _mean(vals: list[float]) -> float:
    return math.fsum(vals) / len(vals)


def side_stats(series: dict[str, Series], info: dict) -> dict:
    """Final/min loss, peak memory, mean tokens/s and step time over all logged steps."""
    loss = series.get("loss") or Series(limit=None)
    mem = series.get("mem_gib") or Series(limit=None)
    tps = series.get("tokens_per_s") or Series(limit=None)
    st = series.get("step_time_s") or Series(limit=None)
    out: dict[str, Any] = {k: None for k in STAT_KEYS}
    steps = [int(s.last_x) for s in series.values() if s.last_x is not None]
    out["steps"] = info.get("step") if info.get("step") is not None else (max(steps) if steps else None)
    if loss.n:
        out["final_loss"] = loss.last()
    lowest = loss.finite_min()
    if lowest is not None:
        out["min_loss"], out["min_loss_step"] = lowest[0], int(lowest[1])
    out["peak_mem_gib"] = mem.finite_max()
    for key, s, fn in (("mean_tokens_per_s", tps, _mean), ("mean_step_time_s", st, _mean),
                       ("median_step_time_s", st, statistics.median)):
        vals = _finite_values(s.y)
        if vals:
            out[key] = float(fn(vals))
    for key in ("attempts", "restarts", "status", "duration_s"):
        out[key] = info.get(key)
    out["status_word"] = info.get("status_word")   # the run screen's word (``snapshot.status_word``)
    return out


def argv_options(argv: Iterable[Any]) -> dict[str, Any]:
    """``--flag value`` / ``--flag=value`` / bare ``--switch`` into a dict; other words by position.

    Lets a recipe diff say ``--fp8_recipe: (absent) -> blockwise`` instead of two long argv lists."""
    words = [str(a) for a in argv]
    out: dict[str, Any] = {}
    i = pos = 0
    while i < len(words):
        w = words[i]
        if w.startswith("-") and len(w) > 1 and not _is_number_text(w):
            if "=" in w:
                k, v = w.split("=", 1)
                out[k] = v
            elif i + 1 < len(words) and not (words[i + 1].startswith("-") and not _is_number_text(words[i + 1])):
                out[w] = words[i + 1]
                i += 1
            else:
                out[w] = True
        else:
            out[f"[{pos}]"] = w
            pos += 1
        i += 1
    return out


def _is_number_text(w: str) -> bool:
    try:
        float(w)
        return True
    except ValueError:
        return False


def flatten_recipe(recipe: Any, prefix: str = "") -> dict[str, Any]:
    """Nested recipe -> {"kill.grace_s": 60, "command --fp8": "e4m3", "env.NCCL_DEBUG": "INFO"}."""
    out: dict[str, Any] = {}
    if isinstance(recipe, dict):
        for k, v in recipe.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if k == "command" and not prefix and isinstance(v, list):
                for fk, fv in argv_options(v).items():
                    out[f"command {fk}"] = fv
            elif isinstance(v, dict) and v:
                out.update(flatten_recipe(v, key))
            else:
                out[key] = v
    else:
        out[prefix or "value"] = recipe
    return out


def recipe_differences(a: dict[str, Any], b: dict[str, Any]) -> list[dict]:
    """Keys whose values differ, with both values (None when absent on one side)."""
    diffs = []
    for d in recipe_differences_n([a, b]):
        va, vb = d["values"]
        diffs.append({"key": d["key"], "a": va, "b": vb,
                      "only": "a" if d["absent"] == [False, True] else ("b" if d["absent"] == [True, False] else None)})
    return diffs


def recipe_differences_n(recipes: list[dict[str, Any]]) -> list[dict]:
    """Keys whose values are not the same in every recipe (flattened by ``flatten_recipe``):
    ``{key, values: [value per recipe, None when absent], absent: [bool per recipe]}``, by key.
    Two recipes give ``runs diff``'s table; any number give the comparison screen's."""
    absent = object()
    diffs = []
    for key in sorted(set().union(*recipes) if recipes else ()):
        vals = [r.get(key, absent) for r in recipes]
        if any(v != vals[0] for v in vals[1:]):
            diffs.append({"key": key, "values": [None if v is absent else v for v in vals],
                          "absent": [v is absent for v in vals]})
    return diffs


def drift_keys(saved_by: Path, ours: dict) -> list[dict]:
    """What changed in the recipe's hashed part (command and environment) between the run dir
    ``saved_by`` (which wrote a checkpoint) and ``ours`` (that part of the recipe that would
    resume it, secrets masked): the keys ``runs diff`` shows, as {key, a (then), b (now)}.
    Empty when that run is not found."""
    then = flat_recipe(saved_by)
    if not then:
        return []
    now = flatten_recipe({"command": ours.get("command") or [], "env": ours.get("env") or {}})
    hashed = lambda k: k.startswith("command") or k.startswith("env.")  # noqa: E731
    return recipe_differences({k: v for k, v in then.items() if hashed(k)}, {k: v for k, v in now.items() if hashed(k)})


def flat_recipe(path: Path) -> dict:
    """The flattened recipe of a run dir (recipe.yaml), else of a swift output dir (``args.json`` /
    2.x ``sft_args.json``: the recipe of a foreign run)."""
    rec = path / "recipe.yaml"
    if rec.is_file():
        from moeconsole.runner.recipes.recipe import read_saved
        data, _ = read_saved(path)
        return flatten_recipe(data) if data else {}
    for candidate in (path / name for name in SWIFT_ARGS_FILES):
        data = jsonio.read_json(candidate)
        if isinstance(data, dict):
            # ms-swift writes every argument, ``hub_token`` too (2.6.1 sft_args.json; args.json)
            return {k: mask_field(k.rsplit(".", 1)[-1], v) for k, v in flatten_recipe(data).items()}
    return {}


def load_side(ref: str | Path, base: Path | None = None) -> RunSide:
    """A run by id/prefix/path under ``base``, or any foreign log or directory."""
    path = Path(ref).expanduser()
    run: rundir.RunDir | None = None
    if path.is_dir() and rundir.is_run_dir(path):
        run = rundir.RunDir(path.resolve())
    elif not path.exists() and base is not None:
        run = rundir.resolve(base, str(ref))
    if run is not None:
        snap = RunWatcher(run, full=True).poll(with_gpu=False)
        info = dict(snap.run)
        info["attempts"] = info.get("attempt")
        info["duration_s"] = info.get("elapsed_s")
        return RunSide(label=info.get("name") or run.run_id, path=str(run.path), series=dict(snap.series),
                       info=info, recipe=flat_recipe(run.path))
    if not path.exists():
        raise InputError(f"{ref}: no such run or path")
    return _load_foreign(path)


def _load_foreign(path: Path) -> RunSide:
    try:
        from moeconsole.runner.ingest.files import records_from_path
    except ImportError:
        raise InputError(f"{path}: reading logs not made by moeconsole needs moeconsole.runner.ingest") from None
    series = {k: Series(limit=None) for k in CHART_KEYS}  # exact statistics: every point
    last_step = None
    for rec in records_from_path(path)[0]:
        step = rec.get("step")
        if not isinstance(step, int):
            continue
        last_step = step
        for key in CHART_KEYS:
            v = as_float(rec.get(key))
            if v is not None:
                series[key].append(step, v)
    if last_step is None:
        raise InputError(f"{path}: no training steps found")
    folder = path if path.is_dir() else path.parent
    if not any((folder / name).is_file() for name in SWIFT_ARGS_FILES):  # kept in the newest v*/ run
        from moeconsole.runner.ingest.files import resolve_log
        folder = resolve_log(path)[0].parent
    return RunSide(label=path.name, path=str(path), series=series,
                   info={"step": last_step, "status": "foreign"}, recipe=flat_recipe(folder))


@dataclass
class Comparison:
    a: RunSide
    b: RunSide

    def stats(self) -> tuple[dict, dict]:
        return self.a.stats(), self.b.stats()

    def recipe_diff(self) -> list[dict]:
        return recipe_differences(self.a.recipe, self.b.recipe)

    def to_dict(self, points: int = 200) -> dict:
        sa, sb = self.stats()
        return {
            "v": jsonio.SCHEMA_VERSION,
            "a": {"label": self.a.label, "path": self.a.path, **sa},
            "b": {"label": self.b.label, "path": self.b.path, **sb},
            "delta": stat_deltas(sa, sb),
            "recipe_diff": self.recipe_diff(),
            "loss": {side: to_pairs(*s.series.get("loss", Series(limit=None)).downsample(points))
                     for side, s in (("a", self.a), ("b", self.b))},
        }


def stat_deltas(sa: dict, sb: dict) -> dict:
    """b relative to a for the numeric stats: absolute and percent difference, and which is better."""
    out = {}
    for key, lower_better in LOWER_IS_BETTER.items():
        va, vb = sa.get(key), sb.get(key)
        if not (isinstance(va, (int, float)) and isinstance(vb, (int, float))):
            continue
        if not (math.isfinite(va) and math.isfinite(vb)):
            continue
        pct = (vb - va) / abs(va) * 100 if va else None
        better = None if va == vb else ("a" if (va < vb) == lower_better else "b")
        out[key] = {"diff": vb - va, "pct": pct, "better": better}
    return out


def compare(a: str | Path, b: str | Path, base: Path | None = None) -> Comparison:
    return Comparison(load_side(a, base), load_side(b, base))


def format_value(v: Any) -> str:
    """A recipe value as one short line."""
    if v is None:
        return "(absent)"
    if isinstance(v, (list, tuple)):
        return shlex.join(str(x) for x in v)
    return str(v)
