"""The snapshot model: one immutable picture of a run, built only from its run directory
(plus live GPU telemetry). The Textual UI renders it and ``--json`` serialises the very same
object, so the two cannot disagree.

``RunWatcher`` reads the run directory incrementally (byte offsets into the append-only
files), so polling a run with a million steps costs only what is new since the last poll.
"""
from __future__ import annotations

import collections
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from runner import jsonio, rundir, runfiles, seriesfile
from runner.secrets import Redactor
from runner.series import Series, to_pairs
from runner.seriesfile import CHART_KEYS
EVENT_KEEP = 200
LOG_TAIL_LINES = 40
LOG_TAIL_BYTES = 64 * 1024


@dataclass(frozen=True)
class Snapshot:
    """Everything a screen or a script needs about a run at one moment."""

    taken_at: float
    run: dict
    last_metrics: dict | None
    series: dict[str, Series] = field(repr=False)
    events: tuple[dict, ...]
    alerts: tuple[dict, ...]
    crashes: tuple[dict, ...]
    checkpoints: tuple[dict, ...]
    restarts_at: tuple[int, ...]
    gpu: dict | None
    blockers: tuple[dict, ...]
    log_tail: tuple[str, ...]
    nodes: tuple[dict, ...] = ()

    def to_dict(self, series_points: int = 120, events: int = 20) -> dict:
        return {
            "v": jsonio.SCHEMA_VERSION,
            "t": self.taken_at,
            "run": self.run,
            "last_metrics": self.last_metrics,
            "series": {k: to_pairs(*s.downsample(series_points)) for k, s in self.series.items()},
            "events": list(self.events[-events:]),
            "alerts": list(self.alerts[-events:]),
            "crashes": list(self.crashes),
            "checkpoints": list(self.checkpoints),
            "restarts_at": list(self.restarts_at),
            "gpu": self.gpu,
            "blockers": list(self.blockers),
            "log_tail": list(self.log_tail),
            "nodes": list(self.nodes),
        }


def status_word(run: dict) -> str:
    """The status as the UI shows it: RUNNING, COOLDOWN 42s, PAUSED, ... (also in JSON)."""
    if run.get("damaged") and not run.get("status"):
        return "DAMAGED"
    status = (run.get("status") or "unknown").upper()
    if run.get("stale"):
        return f"{status}? (runner gone)"
    cd = run.get("cooldown") or {}
    if status == "COOLDOWN" and cd.get("remaining_s") is not None:
        return f"COOLDOWN {int(math.ceil(cd['remaining_s']))}s"
    job = run.get("job") or {}
    if status == "RUNNING" and job.get("state") and job.get("ended_at") is None and job["state"] != "RUNNING":
        # Submitted but not (yet) running: Slurm's word and why, e.g. PENDING (Resources).
        return f"{job['state']} ({job['reason']})" if job.get("reason") else str(job["state"])
    return status


def _tail_lines(path: Path, n: int = LOG_TAIL_LINES, max_bytes: int = LOG_TAIL_BYTES,
                redactor: Redactor | None = None) -> tuple[str, ...]:
    """Last complete lines of a log, secrets masked; progress-bar carriage returns keep only the
    newest redraw."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read()
    except OSError:
        return ()
    lines = data.decode("utf-8", "replace").split("\n")
    if size > max_bytes:
        lines = lines[1:]
    out = []
    for line in lines[-(n + 1):]:
        line = line.rstrip("\r").rsplit("\r", 1)[-1]
        out.append((redactor.redact(line) if redactor else line)[:500])
    while out and not out[-1]:
        out.pop()
    return tuple(out[-n:])


class RunWatcher:
    """Turns a run directory into Snapshots, reading only what is new each poll."""

    def __init__(self, run: rundir.RunDir, *,
                 telemetry: Callable[[dict], tuple[dict | None, list[dict]]] | None = None,
                 full: bool = False) -> None:
        """``full``: every metric point, read from metrics.jsonl (run comparison statistics);
        otherwise the bounded chart series, started from the runner's ``series.json``."""
        self.run = run
        self.telemetry = telemetry
        self.full = full
        self.book: seriesfile.SeriesBook | None = None
        self._events_off = 0
        self.events: collections.deque[dict] = collections.deque(maxlen=EVENT_KEEP)
        self.alerts: collections.deque[dict] = collections.deque(maxlen=EVENT_KEEP)
        self.checkpoints: dict[str, dict] = {}
        self._crash_cache: dict[str, dict] = {}
        self.redactor = Redactor.for_run_dir(run.path)

    def _read_metrics(self) -> seriesfile.SeriesBook:
        if self.book is None:
            self.book = seriesfile.SeriesBook(limit=None) if self.full else seriesfile.load(self.run)
        self.book.feed_file(self.run)
        return self.book

    def _read_events(self) -> None:
        for off, ev in jsonio.iter_jsonl(self.run.events, self._events_off):
            self._events_off = off
            self.events.append(ev)
            kind = ev.get("type")
            if kind == "alert":
                self.alerts.append(ev)
            elif kind == "checkpoint" and ev.get("path"):
                self.checkpoints[ev["path"]] = {k: ev.get(k) for k in
                                                ("path", "step", "verdict", "ok", "reason", "suspect", "tensors", "t")}

    def _crashes(self) -> tuple[dict, ...]:
        out = []
        try:
            names = sorted(os.listdir(self.run.crashes), key=lambda s: int(s.split("-")[1].split(".")[0])
                           if s.startswith("attempt-") else 0)
        except (OSError, ValueError, IndexError):
            names = []
        for name in names:
            if name not in self._crash_cache:
                report, problem = runfiles.read(self.run.crashes / name, runfiles.CrashReport)
                if report is None and problem is None:
                    continue
                if report is None:  # a damaged report says so instead of showing garbage
                    number = name.split("-", 1)[-1].split(".")[0]
                    self._crash_cache[name] = {"attempt": int(number) if number.isdigit() else None,
                                               "class": "damaged", "exit_code": None, "signal": None,
                                               "summary": problem, "evidence": [], "t": None, "recovery": None}
                else:
                    rep = runfiles.as_dict(report)
                    self._crash_cache[name] = {k: rep.get(k) for k in
                                               ("attempt", "class", "exit_code", "signal", "summary", "evidence",
                                                "t", "recovery")}
            out.append(self._crash_cache[name])
        return tuple(out)

    def _run_info(self, state: dict, now: float, book: seriesfile.SeriesBook, problem: str | None = None) -> dict:
        runner = state.get("runner") or {}
        runner_pid = runner.get("pid")
        status = state.get("status")
        alive = isinstance(runner_pid, int) and runner.get("host") == rundir.hostname() and rundir.pid_alive(runner_pid)
        live = status in rundir.LIVE
        updated, limit = state.get("updated_at"), state.get("stale_after_s")
        state_age = now - updated if isinstance(updated, (int, float)) else None
        # A runner that lives but no longer moves its state (stuck, or a disk that refuses
        # writes) is as stale as a dead one.
        frozen = live and state_age is not None and isinstance(limit, (int, float)) and state_age > limit
        stale = (live and runner.get("host") == rundir.hostname() and not alive) or frozen
        cd = state.get("cooldown")
        if cd and status == rundir.COOLDOWN:
            cd = {**cd, "remaining_s": max(0.0, (cd.get("until") or now) - now)}
        step = state.get("step")
        max_steps = state.get("max_steps")
        lm = book.last_metrics or {}
        step_time = _recent_step_time(book.series["step_time_s"], state)
        eta = None
        job = state.get("job") or None
        queued = bool(job and job.get("ended_at") is None and job.get("state") not in (None, "RUNNING"))
        if step is not None and max_steps and step_time and live and not queued:
            eta = max(0, max_steps - step) * step_time
        started = state.get("started_at")
        ended = state.get("ended_at")
        elapsed = ((ended or now) - started) if started else None
        cost = state.get("cost_per_hour")
        return {
            "id": self.run.run_id,
            "name": state.get("name") or self.run.run_id,
            "dir": str(self.run.path),
            "status": status,
            "status_word": "",
            "damaged": problem,  # why state.json could not be used (missing, corrupt, wrongly typed)
            "stale": stale,
            "runner_pid": runner_pid,
            "runner_alive": alive,
            "attempt": state.get("attempt"),
            "restarts": state.get("restarts", 0),
            "max_restarts": state.get("max_restarts"),
            "step": step,
            "max_steps": max_steps if max_steps is not None else lm.get("max_steps"),
            "step_time_s": step_time,
            "eta_s": eta,
            "elapsed_s": elapsed,
            "cost_per_hour": cost,
            "cost_so_far": (elapsed / 3600 * cost) if (cost and elapsed) else None,
            "cost_projected": ((elapsed + (eta or 0)) / 3600 * cost) if (cost and elapsed) else None,
            "recipe_hash": state.get("recipe_hash"),
            "pids": state.get("pids") or [],
            "pgid": state.get("pgid"),
            "cooldown": cd if status == rundir.COOLDOWN else None,
            "pause_reason": state.get("pause_reason"),
            "last_crash": state.get("last_crash"),
            "exit_code": state.get("exit_code"),
            "started_at": started,
            "ended_at": ended,
            "port": state.get("port"),
            "checkpoint_root": state.get("checkpoint_root"),
            "mem_capacity_gib": state.get("mem_capacity_gib"),
            "metric_count": book.metric_count,
            "state_age_s": state_age,
            "storage": state.get("storage"),
            "ingest": state.get("ingest"),
            "sync": state.get("sync"),
            "engine": state.get("engine") or "local",
            "job": job,  # a batch engine's job of this attempt: id, state, pending reason, nodes
        }

    def poll(self, *, with_gpu: bool = True) -> Snapshot:
        now = time.time()
        loaded = self.run.load_state()
        state = loaded.state
        book = self._read_metrics()
        self._read_events()
        run = self._run_info(state, now, book, loaded.problem)
        run["status_word"] = status_word(run)
        gpu: dict | None = None
        blockers: list[dict] = []
        if with_gpu and self.telemetry:
            gpu, blockers = self.telemetry(state)
        return Snapshot(
            taken_at=now,
            run=run,
            last_metrics=book.last_metrics,
            series=book.series,
            events=tuple(self.events),
            alerts=tuple(self.alerts),
            crashes=self._crashes(),
            checkpoints=tuple(sorted(self.checkpoints.values(), key=lambda c: (c.get("step") or -1), reverse=True)),
            restarts_at=tuple(book.restarts_at),
            gpu=gpu,
            blockers=tuple(blockers),
            log_tail=_tail_lines(self.run.log, redactor=self.redactor),
            nodes=read_nodes(self.run, now),
        )


NODE_STALE_S = 10.0


def read_nodes(run: rundir.RunDir, now: float) -> tuple[dict, ...]:
    """Per-node GPU telemetry written by ``moeconsole agent`` into ``telemetry/<host>.json``
    (multi-node runs on shared storage). An agent silent for NODE_STALE_S is marked stale."""
    try:
        names = sorted(n for n in os.listdir(run.telemetry) if n.endswith(".json"))
    except OSError:
        return ()
    out = []
    for name in names:
        doc = jsonio.read_json(run.telemetry / name)
        if not isinstance(doc, dict):
            continue
        t = doc.get("t")
        age = (now - t) if isinstance(t, (int, float)) else None
        host: dict = doc["host"] if isinstance(doc.get("host"), dict) else {}
        out.append({"host": host.get("hostname") or name[:-5], "t": t, "age_s": age,
                    "stale": age is None or age > NODE_STALE_S, "gpu": doc.get("gpu"), "host_stats": host})
    return tuple(out)


def _recent_step_time(series: Series, state: dict, window: int = 20) -> float | None:
    """Median of the last step times: robust to one slow step (a save)."""
    if series.n:
        recent = [v for v in series.recent(window) if math.isfinite(v)]
        if recent:
            recent.sort()
            return recent[len(recent) // 2]
    return state.get("step_time_s")


class LiveTelemetry:
    """GPU telemetry plus the blockers of a run (foreign GPU processes, orphans, port holders).
    A missing driver is a state in the GPU dict, not an error."""

    def __init__(self) -> None:
        from runner.telemetry.gpu import get_backend
        self.backend = get_backend()

    def __call__(self, state: dict) -> tuple[dict | None, list[dict]]:
        from runner.telemetry.procs import find_blockers
        snap = self.backend.snapshot()
        tracked = {int(p["pid"]): float(p.get("start_time") or 0) for p in state.get("pids") or []}
        try:
            blockers = [b.to_dict() for b in find_blockers(
                snap, run_id=state.get("run_id"), tracked=tracked or None,
                port=state.get("port"), run_tree=set(tracked))]
        except Exception as exc:  # a process scan racing with exits must not break the screen
            blockers = [{"error": str(exc)}]
        return snap.to_dict(), blockers
