"""A run receipt: one schema-versioned summary of a run that people attach to a report.

Built only from the run directory (recipe, state, metrics, events, crash reports) plus a fresh
verification of each checkpoint the run saved, so it can be made for any past run, and again
later with the same result. Secrets never enter it: the recipe and argv come from the run
directory, where they are already masked.
"""
from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


from moeconsole.runner.core.numbers import as_float, finite_float, run_cost
from moeconsole.runner.core.oom import crash_hint
from moeconsole.runner.rundir import jsonio, rundir

RECEIPT_VERSION = 1
ALERT_LIST_MAX = 50


@dataclass
class Envelope:
    """min / median / max of one series, and where it started and ended."""
    first: float | None = None
    last: float | None = None
    min: float | None = None
    min_step: int | None = None
    median: float | None = None
    max: float | None = None
    max_step: int | None = None
    nonfinite: int = 0
    count: int = 0


@dataclass
class CheckpointLine:
    path: str
    step: int | None
    verdict: str
    ok: bool
    suspect: bool
    tensors: int | None                # None: not counted (a legacy Megatron save, an index not read)
    header_sha256: str | None          # verify's header_digest: every weight file's size and header, cheap identity
    sha256: str | None = None          # content digest, with --full only


@dataclass
class Receipt:
    v: int
    kind: str
    generated_at: float
    run: dict[str, Any]
    recipe: dict[str, Any]
    environment: dict[str, Any]
    steps: dict[str, Any]
    loss: Envelope
    grad_norm: Envelope
    mem_gib: Envelope
    step_time_s: Envelope
    tokens_per_s: Envelope
    cost: dict[str, Any]
    crashes: list[dict[str, Any]]
    checkpoints: list[CheckpointLine]
    alerts: dict[str, Any]
    loss_curve: list[list[float]] = field(default_factory=list)   # downsampled (step, loss)
    restarts_at: list[int] = field(default_factory=list)          # first step of each later attempt
    memory: dict[str, Any] = field(default_factory=dict)          # per-GPU envelope, static estimate, OOM verdicts
    export: dict[str, Any] | None = None      # how to get the merged model (runner/recipes/swift/export.py)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class _SeriesStats:
    """Streaming envelope: exact min/max/first/last, median from all finite values."""

    def __init__(self) -> None:
        self.env = Envelope()
        self.values: list[float] = []

    def add(self, step: int, v: Any) -> None:
        x = as_float(v)
        if x is None:
            return
        e = self.env
        e.count += 1
        if not math.isfinite(x):
            e.nonfinite += 1
            e.last = x
            return
        if e.first is None:
            e.first = x
        e.last = x
        self.values.append(x)
        if e.min is None or x < e.min:
            e.min, e.min_step = x, step
        if e.max is None or x > e.max:
            e.max, e.max_step = x, step

    def done(self) -> Envelope:
        if self.values:
            vals = sorted(self.values)
            self.env.median = vals[len(vals) // 2]
        return self.env


def _evenly_spaced(points: list[tuple[int, float]], n: int = 400) -> list[list[float]]:
    if len(points) <= n:
        return [[float(s), v] for s, v in points]
    stride = len(points) / n
    return [[float(points[int(i * stride)][0]), points[int(i * stride)][1]] for i in range(n)] + \
        [[float(points[-1][0]), points[-1][1]]]


def recipe_section(run: rundir.RunDir, state: dict) -> dict[str, Any]:
    """The recipe as launched, secrets masked again on the way out (a recipe.yaml written
    before URL passwords were masked in it still shows none): the receipt's recipe, and the
    command `runs show` prints."""
    from moeconsole.runner.recipes import recipe as recipes
    from moeconsole.runner.rundir.secrets import Redactor
    raw, _ = recipes.read_saved(run.path)
    redactor = Redactor.for_run_dir(run.path)
    command = raw.get("command")
    if isinstance(command, list):
        command = [redactor.redact(a) for a in recipes.masked_command([str(a) for a in command])]
    given = raw.get("env")
    env = {str(k): redactor.redact(recipes.masked_env_value(str(k), str(v)))
           for k, v in (given.items() if isinstance(given, dict) else [])}
    return {"name": raw.get("name") or state.get("name"), "hash": state.get("recipe_hash"),
            "command": command, "env": env, "engine": raw.get("engine", "local"),
            "description": redactor.redact(str(raw.get("description") or ""))}


def build_receipt(run: rundir.RunDir, *, full: bool = False, now: float | None = None) -> Receipt:
    """The receipt of one run. ``full`` also hashes every checkpoint's content (slow for big ones)."""
    from moeconsole.runner.checkpoints.verify import verify_checkpoint

    state = run.read_state() or {}
    events = jsonio.read_jsonl(run.events)
    stats = {k: _SeriesStats() for k in ("loss", "grad_norm", "mem_gib", "step_time_s", "tokens_per_s")}
    loss_points: list[tuple[int, float]] = []
    first_step = last_step = max_steps = None
    n_records = 0
    restarts_at: list[int] = []
    attempt = None
    for _, rec in jsonio.iter_jsonl(run.metrics):
        step = rec.get("step")
        if not isinstance(step, int):
            continue
        n_records += 1
        if attempt is not None and rec.get("attempt") != attempt:
            restarts_at.append(step)
        attempt = rec.get("attempt")
        first_step = step if first_step is None else min(first_step, step)
        last_step = step if last_step is None else max(last_step, step)
        if isinstance(rec.get("max_steps"), int):
            max_steps = rec["max_steps"]
        for key, st in stats.items():
            st.add(step, rec.get(key))
        loss = finite_float(rec.get("loss"))
        if loss is not None:
            loss_points.append((step, loss))

    versions: dict[str, Any] = {}
    for ev in events:
        if ev.get("type") == "attempt_start" and isinstance(ev.get("versions"), dict):
            versions = ev["versions"]
    crashes = []
    for ev in events:
        if ev.get("type") == "crash":
            report = jsonio.read_json(run.crash_report(ev["attempt"])) if isinstance(ev.get("attempt"), int) else None
            crashes.append({**{k: ev.get(k) for k in ("attempt", "class", "summary", "recovery", "decision",
                                                       "exit_code", "signal", "memory_verdict",
                                                       "memory_summary")},
                            "hint": crash_hint(report) if isinstance(report, dict) else None})
    ck_paths: dict[str, int | None] = {}
    for ev in events:
        if ev.get("type") == "checkpoint" and ev.get("path"):
            ck_paths[str(ev["path"])] = ev.get("step") if isinstance(ev.get("step"), int) else None
    checkpoints = []
    for path, step in sorted(ck_paths.items(), key=lambda kv: (kv[1] is None, kv[1] or 0, kv[0])):
        p = Path(path)
        if not p.exists():
            checkpoints.append(CheckpointLine(path, step, "missing", False, False, 0, None))
            continue
        v = verify_checkpoint(p, full=full, expected_recipe_hash=state.get("recipe_hash"))
        checkpoints.append(CheckpointLine(path, v.step if v.step is not None else step, v.verdict, v.ok, v.suspect,
                                          v.counts()["tensors"], v.header_sha256, (v.full or {}).get("hash") if full else None))
    # an alert that updates its numbers, or ends, is still the one alert (moeconsole.runner.core.memory)
    alerts = [ev for ev in events if ev.get("type") == "alert" and not (ev.get("update") or ev.get("resolved"))]
    from moeconsole.runner.rundir.alertgroups import AlertBook, crash_hints, read_acks
    groups = AlertBook().feed_all(events).groups(read_acks(run.path), crash_hints(crashes))
    by_rule: dict[str, int] = {}
    for a in alerts:
        key = f"{a.get('level')}:{a.get('rule')}"
        by_rule[key] = by_rule.get(key, 0) + 1
    now = time.time() if now is None else now
    # the start as the age is measured (a wall clock wrong at the start and corrected since)
    started, ended = rundir.start_shown(state, now), state.get("ended_at")
    elapsed = rundir.run_elapsed(state, now)
    price = state.get("cost_per_hour")
    step_env = stats["step_time_s"].done()
    status_word, waiting = _waiting(state, now)
    return Receipt(
        v=RECEIPT_VERSION, kind="moeconsole.receipt", generated_at=now,
        run={"id": run.run_id, "name": state.get("name"), "status": state.get("status"),
             "status_word": status_word, "waiting": waiting,
             "started_at": started, "ended_at": ended, "elapsed_s": elapsed, "attempts": state.get("attempt"),
             "restarts": state.get("restarts", 0), "pause_reason": state.get("pause_reason"),
             "bad_saves": (state.get("bad_saves") or {}).get("total", sum(1 for c in checkpoints if not c.ok))},
        recipe=recipe_section(run, state),
        environment={"versions": versions, "recorded_at_launch": bool(versions)},
        steps={"first": first_step, "last": last_step, "max_steps": max_steps, "records": n_records},
        loss=stats["loss"].done(), grad_norm=stats["grad_norm"].done(), mem_gib=stats["mem_gib"].done(),
        step_time_s=step_env, tokens_per_s=stats["tokens_per_s"].done(),
        cost={"per_hour": price, "total": run_cost(elapsed, price)},
        crashes=crashes, checkpoints=checkpoints,
        alerts={"total": len(alerts), "by_rule": by_rule,
                "groups": [g.to_dict() for g in groups],
                "open": sum(1 for g in groups if g.active),
                "recent": [{k: a.get(k) for k in ("t", "level", "rule", "step", "message")}
                           for a in alerts[-ALERT_LIST_MAX:]]},
        loss_curve=_evenly_spaced(loss_points), restarts_at=restarts_at,
        memory=_memory_section(state, crashes),
        export=_export_section(run, checkpoints),
    )


def _waiting(state: dict[str, Any], now: float) -> tuple[str, str | None]:
    """The status word and what the run waits on, in the status line's words (their one owner,
    ``moeconsole.runner.rundir.snapshot.state_words``)."""
    from moeconsole.runner.rundir.snapshot import state_words
    return state_words(state, now)


def _export_section(run: rundir.RunDir, checkpoints: list[CheckpointLine]) -> dict[str, Any] | None:
    """The ``megatron export`` that merges the newest verified adapter of an adapter-only LoRA run."""
    from moeconsole.runner.recipes import recipe as recipes
    from moeconsole.runner.recipes.swift.export import merge_export
    good = [c for c in checkpoints if c.ok and not c.path.rstrip("/").endswith("-merged")]
    if not good:
        return None
    from moeconsole.runner.core.errors import InputError
    try:
        recipe = recipes.saved_recipe(run.path)
    except InputError:
        return None
    newest = max(good, key=lambda c: (c.step is not None, c.step or 0))
    return merge_export(recipe, newest.path)


def _memory_section(state: dict, crashes: list[dict]) -> dict[str, Any]:
    """The memory envelope per GPU as the runner last wrote it (tightest first), the static
    estimate it was measured against, and the verdict of every CUDA OOM."""
    mem: dict = state["memory"] if isinstance(state.get("memory"), dict) else {}
    keep = ("gpu", "label", "capacity_gib", "capacity_source", "device_peak_gib", "max_gib", "steady_peak_gib",
            "fragmentation_gib", "transients_gib", "headroom_gib", "effective_headroom_gib", "min_headroom_gib",
            "ok", "static_gib", "activations_workspace_gib", "trend", "forecast")
    return {"gpus": [{k: g.get(k) for k in keep} for g in mem.get("gpus") or () if isinstance(g, dict)],
            "min_headroom_gib": mem.get("min_headroom_gib"), "transients": mem.get("transients") or {},
            "static": mem.get("static"),
            "ooms": [{k: c.get(k) for k in ("attempt", "class", "memory_verdict", "memory_summary")}
                     for c in crashes if c.get("memory_verdict")]}
