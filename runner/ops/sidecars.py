"""What a runner does for operations besides supervising: the metrics exporter process,
notifications and checkpoint sync. One object, a handful of calls from the runner's loop, none
of which blocks it: every slow thing (HTTP, copying, a notification command) is a child process.

    ops = OpsSidecars.from_recipe(recipe, run_dir, run_id, recipe_hash=...)
    ops.start()                      # when the runner starts (spawns the exporter if asked)
    ops.on_event(ev)                 # every event the runner writes (notifications)
    ops.on_checkpoint(ev)            # a checkpoint verdict (sync of the good ones)
    for ev in ops.poll(now): ...     # each loop turn: results to record as events
    ops.state(now)                   # the ``sync`` block of state.json
    ops.close()
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Mapping

from moeconsole.runner.process import pyexec
from moeconsole.runner.checkpoints.sync import CheckpointSyncer, SyncSettings
from moeconsole.runner.ops.notify import Notifier, NotifySettings
from moeconsole.runner.core import bounds, schema
from moeconsole.runner.rundir import jsonio

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import Recipe

EXPORTER_RESPAWN_S = 5.0


class MetricsSettings(schema.Section, frozen=True):
    """The recipe's ``metrics:`` section: the Prometheus exporter's port (0: any free one) and/or
    a node_exporter textfile."""
    port: schema.PortOrAny | None = None
    addr: Annotated[str, schema.text(r"^\S+$", "an address to bind (default 127.0.0.1)")] = "127.0.0.1"
    textfile: Annotated[str, schema.text(r"^[^\x00]*\.prom$",
                                         "a path ending in .prom (node_exporter reads only those)")] | None = None
    interval_s: Annotated[float, schema.within(bounds.Range(0.0, bounds.DAY, lo_open=True))] = 15.0

    @property
    def enabled(self) -> bool:
        return self.port is not None or bool(self.textfile)

    @classmethod
    def from_recipe(cls, section: Any) -> "MetricsSettings":
        """SettingsError (a ValueError) naming the key."""
        return schema.convert({} if section is None else section, cls, "metrics")


class OpsSidecars:
    def __init__(self, metrics: MetricsSettings, notify: NotifySettings, sync: SyncSettings, run_dir: Path,
                 run_id: str, *, recipe_hash: str | None = None, python: str = sys.executable,
                 env: Mapping[str, str] | None = None) -> None:
        self.metrics = metrics
        self.run_dir = run_dir
        self.python = python
        self.notifier = Notifier(notify, run_dir, run_id, env=env, python=python) if notify.enabled else None
        self.syncer = CheckpointSyncer(sync, run_dir, python=python, recipe_hash=recipe_hash) if sync.enabled else None
        self.exporter: subprocess.Popen | None = None
        self._exporter_started = 0.0
        self._exporter_said: str | None = None   # the failure alerted and not yet resolved (``_exporter_failed``)
        self._exporter_log_from = 0              # exporter.log's size when the current exporter started
        self._exporter_fails: list[str] = []     # the lines of this runner's exporters that failed in a row

    @classmethod
    def from_recipe(cls, recipe: "Recipe", run_dir: Path, run_id: str, **kw: Any) -> "OpsSidecars":
        return cls(recipe.metrics, recipe.notify, recipe.sync, run_dir, run_id, **kw)

    def start(self) -> None:
        if self.metrics.enabled:
            self._spawn_exporter()

    def _spawn_exporter(self) -> None:
        argv = [*pyexec.module_argv("moeconsole.runner.ops.exporter", python=self.python), str(self.run_dir), "--addr", self.metrics.addr,
                "--interval", str(self.metrics.interval_s), "--parent-pid", str(os.getpid())]
        if self.metrics.port is not None:
            argv += ["--port", str(self.metrics.port)]
        if self.metrics.textfile:
            argv += ["--textfile", self.metrics.textfile]
        from moeconsole.runner.ops.exporter import EXPORTER_LOG
        log = os.open(self.run_dir / EXPORTER_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            self._exporter_log_from = os.fstat(log).st_size   # what this exporter says comes after
            self.exporter = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True)
        finally:
            os.close(log)
        self._exporter_started = time.monotonic()

    def on_event(self, ev: Mapping[str, Any]) -> None:
        """Every event the runner writes: notifications, and a checkpoint's verdict to the sync."""
        if self.notifier is not None:
            self.notifier.on_event(ev)
        if ev.get("type") == "checkpoint":
            self.on_checkpoint(ev)

    def on_checkpoint(self, ev: Mapping[str, Any]) -> None:
        if self.syncer is not None and ev.get("ok") is True and ev.get("path"):
            t = ev.get("t")
            self.syncer.offer(str(ev["path"]), float(t) if isinstance(t, (int, float)) else time.time())

    def poll(self, now: float) -> list[dict[str, Any]]:
        """Results to record as events; restarts an exporter that died (for example because the
        previous runner's exporter still held the port for a moment)."""
        events: list[dict[str, Any]] = []
        if self.metrics.enabled and self.exporter is not None:
            if self.exporter.poll() is not None:
                if time.monotonic() - self._exporter_started >= EXPORTER_RESPAWN_S:
                    events.extend(self._exporter_failed())
                    self._spawn_exporter()
            elif (self._exporter_said is not None or self._exporter_fails) and (bound := self._served()) is not None:
                self._exporter_fails = []
                if self._exporter_said is not None:   # the port came free: the alert's episode ends
                    self._exporter_said = None
                    events.append({"type": "alert", "level": "info", "rule": "metrics_not_served",
                                   "cause": "metrics_not_served", "resolved": True,
                                   "message": "metrics served again: listening on "
                                               f"{bound.get('addr')}:{bound.get('port')}"})
        return events + (self.syncer.poll(now) if self.syncer is not None else [])

    def _exporter_failed(self) -> list[dict[str, Any]]:
        """A warning alert when this runner's exporter could not listen (its port held by another
        process: on a shared node two users' recipes with one ``metrics.port``): it had said so only
        in exporter.log, every 5 s, while the user's Prometheus read the other process's metrics
        (newcomer round 8). Judged on the exporter that just ended (the line it wrote, past where
        exporter.log stood when it started: never an earlier runner's line), and raised once two
        tries in a row failed so: a port the previous runner's exporter held for a moment is no
        alert (review R70). An episode (``cause``): resolved once served."""
        from moeconsole.runner.ops.exporter import CANNOT_LISTEN, EXPORTER_LOG
        # not its exit status: the runner reaps its children itself (Popen.returncode may read 0)
        try:
            with open(self.run_dir / EXPORTER_LOG, "rb") as f:
                f.seek(self._exporter_log_from)
                said = f.read(4096).decode("utf-8", "replace").splitlines()
        except OSError:
            said = []
        line = next((ln for ln in said if ln.startswith(CANNOT_LISTEN)), None)
        if line is None:
            self._exporter_fails = []
            return []
        self._exporter_fails.append(line)
        if len(self._exporter_fails) < 2 or line == self._exporter_said:
            return []
        self._exporter_said = line
        return [{"type": "alert", "level": "warning", "rule": "metrics_not_served", "cause": "metrics_not_served",
                 "message": f"metrics not served: {line.removeprefix('exporter: ')}"}]

    def _served(self) -> dict[str, Any] | None:
        """exporter.json when the current exporter wrote it (it does once it listens), else None."""
        from moeconsole.runner.ops.exporter import EXPORTER_FILE
        bound = jsonio.read_json(self.run_dir / EXPORTER_FILE, {})
        served = isinstance(bound, dict) and self.exporter is not None and bound.get("pid") == self.exporter.pid
        return bound if served else None

    def pids(self) -> set[int]:
        """Live helper processes (the runner keeps them out of the attempt's process tree)."""
        procs: list[subprocess.Popen | None] = [self.exporter]
        if self.syncer is not None:
            procs.append(self.syncer.proc)
        if self.notifier is not None:
            procs.extend(self.notifier.children)
        return {p.pid for p in procs if p is not None and p.poll() is None}

    def syncing(self) -> bool:
        """A checkpoint still waits for (or is in) its copy."""
        return self.syncer is not None and (self.syncer.proc is not None or self.syncer.status.pending is not None)

    def state(self, now: float) -> dict[str, Any] | None:
        return self.syncer.status.to_dict(now) if self.syncer is not None else None

    def close(self) -> None:
        """The exporter ends with its runner (it watches our pid); end it now instead of later."""
        if self.exporter is not None and self.exporter.poll() is None:
            self.exporter.terminate()
            try:
                self.exporter.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.exporter.kill()
                self.exporter.wait()
