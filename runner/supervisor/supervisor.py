"""The runner: a detached, headless supervisor of one run.

It launches each attempt of the training command in a session of its own with output going
straight to ``train.log``, tracks the whole process tree, tails the log into metrics and
monitors, verifies checkpoints as they land, and on exit classifies the crash and applies the
recovery: cooldown (a wait for conditions), restart from the newest good checkpoint, pause, or
fail. Clients steer it over the control socket. Killing the runner never kills training: a new
runner adopts the live attempt (PID + start time).

Everything happens in one thread around one ``select``: SIGCHLD (via the signal wakeup fd),
a pidfd for an adopted leader, and the control socket wake it at once, so exit detection does not
wait for a poll interval.
"""
from __future__ import annotations

import argparse
import math
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
import traceback
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from runner.supervisor import control
from runner.rundir import gpuhistory, jsonio, ranktimes, rundir, runfiles, seriesfile, store
from runner.process import proctree
from runner.recipes import recipe as recipes
from runner.core import lifecycle as lc
from runner.process.attempt import ExitStatus, LaunchSpec
from runner.process.engines.local import LocalEngine
from runner.process.slurm import client as slurm_client
from runner.ingest.live import LiveReader, LogTail, metric_lines, newest_record, rows_to_write, Written
from runner.ingest.records import eval_record
from runner.rundir.journal import Journal
from runner.core.crash import own_pid_set
from runner.core import bounds
from runner.supervisor.controlserver import ControlServer
from runner.ops.sidecars import OpsSidecars
from runner.rundir.secrets import Redactor
from runner.recipes.versions import package_versions
from runner.core.errors import InputError
from runner.core.state import Status
from runner.rundir.rundir import COOLDOWN, FAILED, PAUSED, RUNNING, STARTING, STOPPING, UNSAVED

LOOP_TICK_S = 0.1          # log tail cadence while running
TREE_REFRESH_S = 0.5
CHECKPOINT_POLL_S = 1.0
STATE_FLUSH_S = 1.0
STATE_HEARTBEAT_S = 2.0    # state.json is rewritten at least this often while the runner lives
SERIES_SAVE_S = 3.0        # series.json (the bounded chart series) at most this often; readers add the rest
STARTUP_DEFAULT_S = 1800.0  # heartbeat allowance before the first step when the recipe names none
CATCH_UP_TURN_S = 0.05     # after the leader's exit, log reading per loop turn before control is served
INGEST_SLICE_BYTES = 1024 * 1024  # log bytes parsed per loop turn: the state file never waits longer
INGEST_SUBSLICE_BYTES = 256 * 1024  # ... read in pieces this big, the control socket served between them
LOG_TAIL_KEEP = 2000       # lines kept for crash classification
CRASH_REPORT_TAIL = 200
OPS_POLL_S = 0.5           # checkpoint sync results, a dead metrics exporter
SYNC_FINAL_WAIT_S = 1800.0  # after the run ends: how long the last checkpoint's sync may take
MEMORY_SAMPLE_S = 2.0      # NVML memory of the run's GPUs for the envelope, while an attempt runs
STORAGE_RETRY_S = 5.0      # a launch the run directory refused is tried again after this long


class Supervisor:
    def __init__(self, run: rundir.RunDir, *, restart: bool = False) -> None:
        self.run = run
        self.journal = Journal(run, self._diag)
        self.restart_requested_at_start = restart
        secrets_doc = runfiles.read_secrets(run.path)
        self.recipe = recipes.restore_secrets(_load_run_recipe(run),
                                              runfiles.as_dict(secrets_doc) if secrets_doc else None)
        self.hash = recipes.recipe_hash(self.recipe)
        self.env_resolved = recipes.resolve_env(self.recipe["env"])
        self.secrets = recipes.secret_values(self.env_resolved, self.recipe["command"])
        self.redactor = Redactor(self.secrets)
        self.engine = _engine(run, self.recipe)  # runs the attempts (runner.process.attempt)
        loaded = run.load_state()
        self.state: dict = dict(loaded.state)
        if loaded.problem:
            self._diag(f"{loaded.problem}: rebuilding the run's state from its records")
            self.state = recover_state(run, self.state, loaded.problem)
            if Status.parse(self.state.get("status")) is None:
                # Nothing says where the run stands: starting it again could repeat a finished run.
                raise InputError(f"{run.run_id}: {loaded.problem}, and events.jsonl does not say where the run "
                                 f"stands; no runner takes it over (the run directory is left as it is)")
        self.tree = proctree.ProcessTree(run.run_id)
        self.own_pids: set[int] = set()
        self.proc: subprocess.Popen | None = None
        self.leader_rc: int | None = None
        self.adopted = False
        self.pidfd: int | None = None
        status = Status.parse(self.state.get("status")) or Status.STARTING
        self.life = lc.Life(status)  # the lifecycle's own state; every decision goes through lc.step
        self._start_leader: dict | None = None
        self._last_signalled: list[int] = []
        self.stop = False
        self.dirty = True
        self.last_flush = 0.0
        self.history: list = []
        self.log_tail = LogTail(LOG_TAIL_KEEP)  # for crash classification: bytes, decoded when judged
        self.next_env: dict[str, str] = {}
        self.port_override: int | None = None
        self._timers: dict[str, float] = {}
        # Per-attempt progress, reset at each launch or adoption (set here so a runner that only
        # judges an attempt that ended unsupervised has them too).
        now = time.time()
        self.attempt_started = now
        self.last_output = now
        self.last_progress = now
        self.exit_seen_at = now
        self.attempt_steps = 0
        self.last_step_written: int | None = None
        self.last_real_step: int | None = None  # an inferred step never makes a real record a duplicate
        self.resumed_step: int | None = None
        self._blockers: list = []
        self.exit_status: ExitStatus | None = None
        self.attempt: Any = None  # the current attempt (runner.process.attempt.Attempt), once launched or adopted
        self.lagging = False  # the last log read filled a whole slice: more is waiting
        self.finishing_until: float | None = None  # the run is over; exit at this monotonic time at the latest
        self.draining = False  # the leader exited; its log is read to the end before it is judged
        self.terminations: dict[int, tuple] = {}  # pid -> (Termination, event fields): blockers, kill_pid
        self._bad_saves_reason = ""  # why the run is being paused for bad saves (the pause names it)
        self._storage_alerted: str | None = None  # the storage problem that holds launches back, once alerted
        self._init_components()

    # ---- components -------------------------------------------------------------------
    def _init_components(self) -> None:
        from runner.checkpoints.keeper import CheckpointKeeper
        from runner.ingest.tail import FileTailer
        from runner.core.monitors import Monitors, Thresholds
        from runner.core.policy import RestartSettings
        self.settings = RestartSettings.from_recipe(self.recipe["restart"])
        self.thresholds = Thresholds.from_recipe(self.recipe["alerts"])
        from runner.supervisor.memory_feed import MemoryFeed
        self.memory = MemoryFeed(self.recipe, self._diag)  # the envelope per GPU, its forecast, OOM verdicts
        self.Monitors = Monitors
        self.monitors = Monitors(self.thresholds)
        self.reader = LiveReader()  # the bulk engine on each slice of train.log
        # The charts of the whole run in bounded memory, saved as series.json for every reader.
        self.book = seriesfile.load(self.run)
        self.rank_times = ranktimes.RankTimes()
        # the GPUs and the host over the whole run (gpu-history.json), continued by a new runner
        from runner.telemetry.host import CpuMeter
        self.gpu_history = gpuhistory.load(self.run) or gpuhistory.GpuHistory()
        self.cpu_meter = CpuMeter()
        self._history_saved_at = 0.0
        self._book_saved = (self.book.metric_count, self.book.offset)
        self._book_saved_at = 0.0
        self.tailer = FileTailer(self.run.log, start_offset=int(self.state.get("log_offset") or 0),
                                 max_read=INGEST_SUBSLICE_BYTES)
        self.gpu_backend = None
        try:
            from runner.telemetry.gpu import get_backend
            self.gpu_backend = get_backend()
        except Exception as exc:  # telemetry must never stop supervision
            self._diag(f"GPU telemetry unavailable: {exc}")
        root = self.recipe["checkpoints"].get("dir")
        self.ckpt_root = Path(self._fill(root)).resolve() if root else None
        ck = self.recipe["checkpoints"]
        self.checkpoints = CheckpointKeeper(self.journal, self.ckpt_root, recipe_hash=self.hash,
                                            settle_s=float(ck["settle_s"]), verify=bool(ck.get("verify", True)),
                                            verified=self.state.get("verified") or [],
                                            bad_saves=self.state.get("bad_saves"), diag=self._diag)

    def _fill(self, text: str) -> str:
        return recipes.fill(text, self._placeholders())

    def _placeholders(self) -> dict[str, str]:
        return {"run_dir": str(self.run.path), "run_id": self.run.run_id,
                "attempt": str(self.state.get("attempt") or 0), "recipe_dir": self.recipe.get("_recipe_dir", ""),
                "python": sys.executable}

    def _diag(self, msg: str) -> None:
        try:  # runner.log shares the run's disk: a full disk must not end the runner
            sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {msg}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass

    # ---- state ------------------------------------------------------------------------
    def set(self, **fields) -> None:
        self.state.update(fields)
        self.dirty = True

    def flush_state(self, force: bool = False) -> None:
        now = time.time()
        retry = bool(self.journal.pending or self.journal.error)
        due = (self.dirty or retry) and now - self.last_flush >= STATE_FLUSH_S
        if not (force or due or now - self.last_flush >= STATE_HEARTBEAT_S):
            return
        self.journal.flush()
        self.state["pids"] = self.tree.to_list() if not self.leader_exited or self.kill else []
        cd = self.cooldown
        self.state["pgid"] = self.tree.pgid
        self.state["log_offset"] = self.tailer.offset
        self.state["cooldown"] = ({"until": _wall(cd.earliest), "ceiling_at": _wall(cd.ceiling_at),
                                   "waiting_on": list(cd.waiting_on), "reason": cd.reason} if cd else None)
        self.state["storage"] = self.journal.storage
        self.state["stale_after_s"] = float(self.recipe["heartbeat"]["stale_state_s"])
        self.state["ingest"] = self._ingest_lag()
        self.state["memory"] = self.memory.state()
        self.last_flush = now
        self._save_series(force)  # first: a reader that sees the final state sees the final charts
        if self.journal.write_state(self.state):
            self.dirty = False
        if self.rank_times.changed:
            try:
                ranktimes.save(self.run, self.rank_times)
            except OSError as exc:
                self._diag(f"ranks.json not written: {exc}")
        if self.gpu_history.changed and (force or time.monotonic() - self._history_saved_at >= gpuhistory.SAVE_S):
            self._history_saved_at = time.monotonic()
            try:
                gpuhistory.save(self.run, self.gpu_history)
            except OSError as exc:
                self._diag(f"gpu-history.json not written: {exc}")

    def _save_series(self, force: bool = False) -> None:
        """series.json, when it has news and every fed record is on disk (its offset must be
        the exact length of metrics.jsonl it describes)."""
        now = time.monotonic()
        if self.journal.pending or not (force or now - self._book_saved_at >= SERIES_SAVE_S):
            return
        try:
            self.book.offset = os.stat(self.run.metrics).st_size
        except OSError:
            return
        if (self.book.metric_count, self.book.offset) == self._book_saved:
            return
        try:
            seriesfile.save(self.run, self.book)
        except OSError as exc:
            self._diag(f"series.json not written: {exc}")
            return
        self._book_saved = (self.book.metric_count, self.book.offset)
        self._book_saved_at = now

    def set_status(self, status: str, reason: str = "") -> None:
        if self.state.get("status") == status:
            return
        if status in rundir.TERMINAL:
            # Saves the watcher had not settled yet are verified before anyone sees the end.
            try:
                self.checkpoints.sweep(self.monitors.on_checkpoint, self.state.get("attempt"))
                self._checkpoint_state()
            except Exception as exc:
                self._diag(f"final checkpoint sweep failed: {exc}")
            ops = getattr(self, "ops", None)
            if ops is not None:  # the sweep may have offered the last save to the sync: say so now
                self._poll_ops(time.time())
            self.set(ended_at=time.time())
        self.set(status=status)
        self.life = replace(self.life, status=Status(status))
        self.journal.event("status", status=status, reason=reason, attempt=self.state.get("attempt"))
        self.flush_state(force=True)
        self._index()

    def _index(self) -> None:
        try:
            conn = store.connect(self.run.path.parent)
            try:
                row = store.row_from_state(self.run, self.state, self.monitor_summary)
                store.upsert(conn, row)
            finally:
                conn.close()
        except Exception as exc:  # the index is a cache; never let it stop supervision
            self._diag(f"index update failed: {exc}")

    @property
    def monitor_summary(self) -> dict:
        return {"last_loss": self.state.get("last_loss"), "min_loss": self.state.get("min_loss")}

    def alert(self, level: str, rule: str, message: str, **values) -> None:
        self.journal.event("alert", level=level, rule=rule, step=self.state.get("step"), message=message,
                       values=values, attempt=self.state.get("attempt"))

    # ---- startup ----------------------------------------------------------------------
    def start(self) -> None:
        me = {"pid": os.getpid(), "start_time": proctree.start_time(os.getpid()), "host": rundir.hostname()}
        self.sock = control.listen(self.run.sock)
        self.control = ControlServer(self.sock, self.handle, lambda: self.flush_state(force=True), self._diag)
        self.ops = OpsSidecars.from_recipe(self.recipe, self.run.path, self.run.run_id, recipe_hash=self.hash,
                                           env={**os.environ, **self.env_resolved})
        self.journal.listeners.append(self._on_event_for_ops)
        self.tree.set_sidecars(self.ops.pids)
        self.ops.start()
        self.set(runner=me, run_id=self.run.run_id, name=self.recipe["name"], recipe_hash=self.hash,
                 max_restarts=self.settings.max_restarts, cost_per_hour=self.recipe.get("cost_per_hour"),
                 mem_capacity_gib=self.recipe["gpus"].get("memory_capacity_gib"),
                 checkpoint_root=str(self.ckpt_root) if self.ckpt_root else None,
                 port=self._port())
        self.state.setdefault("started_at", time.time())
        self.state["engine"] = self.engine.name
        self.state.setdefault("attempt", 0)
        self.state.setdefault("restarts", 0)
        self.history = [_attempt_record(a) for a in self.state.get("history", [])]
        status = self.state.get("status")
        pids = self.state.get("pids") or []
        leader = next((p for p in pids if p.get("role") in ("waiter", "leader")), None)
        alive = bool(status in rundir.LIVE and status != STARTING
                     and self.engine.attempt_alive(int(self.state.get("attempt") or 0), pids))
        known = bool(leader or self.state.get("attempt"))
        drift = None
        if not alive and status in (STARTING, None):
            drift = self._drift_check()
        elif not alive and status in (RUNNING, STOPPING) and known:
            # The runner died and the training died while nobody watched: the waiter's exit record
            # says how it ended; without one the log is the only witness. The attempt is taken
            # over as if it had ended right at adoption: its log is read by the loop, a slice per
            # turn (control is served meanwhile), then it is judged.
            self._diag("previous attempt ended while unsupervised; reading its log, then judging it")
            self.last_step_written = self.last_real_step = self._last_written_step(self.state.get("attempt"))
            alive = True
        elif status == PAUSED and not self.restart_requested_at_start:
            self._diag("run is paused; waiting for resume, restart or kill")  # the user decides, not a new runner
        elif status in rundir.TERMINAL and self.restart_requested_at_start:
            self.set(ended_at=None)
        self._start_leader = leader or {}
        self.apply(lc.Started(leader_alive=alive, leader_known=known,
                              restart_requested=self.restart_requested_at_start, drift_refused=drift))
        self.flush_state(force=True)

    # ---- the lifecycle: events in, effects out ----------------------------------------------
    @property
    def kill(self) -> lc.Kill | None:
        return self.life.kill

    @property
    def cooldown(self) -> lc.Cooldown | None:
        return self.life.cooldown

    @property
    def leader_exited(self) -> bool:
        return self.life.exited

    def _lifecycle_settings(self) -> lc.Settings:
        cd = self.recipe["cooldown"]
        return lc.Settings(grace_s=self._grace(None), floor_s=bounds.sane_seconds(cd["floor_s"], 0.0),
                           ceiling_s=bounds.sane_seconds(cd["ceiling_s"], 0.0))

    def apply(self, event: lc.Event) -> dict | None:
        """Feed one event to the lifecycle and carry out its effects (which may raise the next
        event: judging an attempt answers with the policy's decision). Returns a control reply."""
        answer = None
        queue: list[lc.Event] = [event]
        while queue:
            ev = queue.pop(0)
            self.life, effects = lc.step(self.life, ev, time.monotonic(), self._lifecycle_settings())
            for eff in effects:
                if isinstance(eff, lc.Reply):
                    answer = eff.answer
                    continue
                follow = self._execute(eff)
                if follow is not None:
                    queue.append(follow)
        self.dirty = True
        return answer

    def _execute(self, eff: lc.Effect) -> lc.Event | None:
        attempt = self.state.get("attempt")
        if isinstance(eff, lc.SetStatus):
            if eff.status in (FAILED, PAUSED, UNSAVED):
                self.set(pause_reason=eff.reason)
            self.set_status(eff.status, eff.reason)
        elif isinstance(eff, lc.SignalTree):
            self._signal_tree(eff)
        elif isinstance(eff, lc.Record):
            self._record(eff)
        elif isinstance(eff, lc.Adopt):
            assert self._start_leader is not None
            self._adopt(self._start_leader)
        elif isinstance(eff, lc.Launch):
            if eff.ceiling_alert:
                self.alert("warning", "cooldown_ceiling", f"cooldown ceiling reached; still waiting on: "
                           f"{'; '.join(eff.ceiling_alert)}; launching anyway", waiting_on=list(eff.ceiling_alert))
            if eff.new_port:
                port = self._port()
                self.port_override = _free_port()
                self.journal.event("port_change", old=port, new=self.port_override, attempt=attempt)
            return self._launch()
        elif isinstance(eff, lc.JudgeAttempt):
            return self._finish_attempt(eff.kill_reason, eff.now_restart)
        elif isinstance(eff, lc.KillBlockers):
            self._kill_blockers()
        return None

    def _signal_tree(self, eff: lc.SignalTree) -> None:
        if eff.sig == "TERM":
            self.tree.refresh()
            self._last_signalled = self.tree.signal(signal.SIGTERM)
            self._note_job()
            return
        if eff.why == "marked processes outside the tree":
            targets = self.tree.survivors(scan_markers=True)
        else:
            self.tree.refresh()
            targets = self.tree.survivors()
        sent = self.tree.signal(signal.SIGKILL, targets)
        self.journal.event("kill_escalate", pids=sent or sorted(targets), why=eff.why,
                           attempt=self.state.get("attempt"))

    def _record(self, eff: lc.Record) -> None:
        attempt = self.state.get("attempt")
        f = dict(eff.fields)
        if eff.type == "kill":
            self.journal.event("kill", reason=f["reason"], requested_by=f["requested_by"], pids=self._last_signalled,
                               grace_s=f["grace_s"], attempt=attempt)
        elif eff.type == "attempt_end":
            from runner.core.crash import decode_exit
            code, sig = decode_exit(self.leader_rc)
            self.journal.event("attempt_end", attempt=attempt, returncode=self.leader_rc, exit_code=code,
                               signal=sig, detected_at=self.exit_seen_at)
        elif eff.type == "alert":
            alive = sorted(self.tree.survivors())
            left = alive or self.tree.blocking()
            self.alert(f["level"], f["rule"], f"{f['message']}: {left}", pids=alive)
        elif eff.type == "cooldown":
            self.journal.event("cooldown", attempt=attempt, until=_wall(f["until"]), ceiling_at=_wall(f["ceiling_at"]),
                               reason=f["reason"])
            self._timers["cooldown"] = 0.0
        else:
            self.journal.event(eff.type, attempt=attempt, **f)

    def _recorded_exit(self) -> int | None:
        """The return code the attempt's waiter recorded, if it did."""
        self.exit_status = self.engine.exit_status(int(self.state.get("attempt") or 0))
        return self.exit_status.returncode if self.exit_status else None

    def _adopt(self, leader: dict) -> None:
        attempt = self.engine.adopt(int(self.state.get("attempt") or 0), self.state.get("pids") or [])
        self.adopted = True
        if attempt is None:  # ended between the check and now: judged like any exit
            self.tree.leader = None
            self._on_leader_exit(None)
            return
        self.attempt = attempt
        self.tree = attempt.tree
        self.tree.set_sidecars(self.ops.pids)
        self.pidfd = attempt.wait_fd()
        self._note_job()
        self.last_output = time.time()
        self.last_progress = time.time()
        self.attempt_steps = 0
        self.last_step_written = self.last_real_step = self._last_written_step(self.state.get("attempt"))
        self.journal.event("adopt", attempt=self.state.get("attempt"), pids=list(self.tree.procs),
                           **({"job_id": attempt.job_id} if hasattr(attempt, "job_id") else {}))
        self._diag(f"adopted attempt {self.state.get('attempt')} leader pid "
                   f"{self.tree.leader.pid if self.tree.leader else None}")
        if self.state.get("status") == STOPPING:
            self.set(status=RUNNING)
        # The log written while no runner watched is read by the loop, a slice per turn.

    def _last_written_step(self, attempt) -> int | None:
        """The attempt's newest step in metrics.jsonl (the book ends where the file ends)."""
        last = self.book.last_metrics
        return last["step"] if last is not None and last.get("attempt") == attempt else None

    def _drift_check(self) -> str | None:
        """A first attempt that would resume from a checkpoint saved under another recipe hash:
        the refusal message under ``resume.drift: refuse``, else None (warn/allow noted)."""
        if not (self.recipe["resume"].get("arg") or self.recipe["resume"].get("args")):
            return None
        found = self.checkpoints.drifted()
        if not found:
            return None
        path, other = found
        mode = "allow" if self.state.get("allow_drift") else self.recipe["resume"].get("drift", "refuse")
        changed = self._drift_changes(path)
        self.journal.event("drift", checkpoint=str(path), checkpoint_hash=other, recipe_hash=self.hash, policy=mode,
                           changed=changed)
        if mode == "refuse":
            what = "; changed: " + ", ".join(
                f"{c['key']} {_short(c['a'])} -> {_short(c['b'])}" for c in changed[:6]) if changed else ""
            more = f" and {len(changed) - 6} more" if len(changed) > 6 else ""
            msg = (f"recipe drift: {path} was saved by recipe {other}, this recipe is {self.hash}{what}{more}; "
                   f"refusing to resume (use --allow-drift, or resume.drift: warn to start fresh)")
            self.alert("critical", "recipe_drift", msg, checkpoint=str(path))
            return msg
        if mode == "warn":
            self.alert("warning", "recipe_drift", f"recipe drift: starting fresh instead of resuming {path}")
            self.set(no_resume=True)
        else:
            self.alert("warning", "recipe_drift", f"recipe drift allowed: resuming {path}")
            self.set(allow_drift=True)
        return None

    def _drift_changes(self, checkpoint: Path) -> list[dict]:
        """The hashed recipe keys that differ from the run that saved ``checkpoint`` (named in
        its sidecar; found beside this run or above the checkpoint), secrets masked."""
        from runner.checkpoints.sidecar import read_sidecar
        from runner.rundir.rundiff import drift_keys
        saved_by = str((read_sidecar(checkpoint) or {}).get("run_id") or "")
        candidates = [self.run.path.parent / saved_by] if saved_by else []
        candidates += [p for p in checkpoint.parents if p.name == saved_by or (p / "recipe.yaml").is_file()][:1]
        ours = {"command": recipes.masked_command(self.recipe["command"]),
                "env": recipes.for_run_dir(self.recipe)["env"]}
        for where in candidates:
            if where.is_dir() and rundir.is_run_dir(where) and where != self.run.path:
                try:
                    return drift_keys(where, ours)
                except Exception as exc:  # naming the keys is a courtesy; the refusal stands
                    self._diag(f"cannot diff against {where}: {exc}")
        return []

    # ---- launching --------------------------------------------------------------------
    def _port(self) -> int | None:
        if self.port_override:
            return self.port_override
        p = self.recipe["preflight"].get("port")
        if p:
            return int(p)
        env_port = self.env_resolved.get("MASTER_PORT")
        if env_port and env_port.isdigit():
            return int(env_port)
        argv = self.recipe["command"]
        for i, a in enumerate(argv):
            for flag in ("--master_port", "--master-port"):
                if a == flag and i + 1 < len(argv) and argv[i + 1].isdigit():
                    return int(argv[i + 1])
                if a.startswith(flag + "=") and a.split("=", 1)[1].isdigit():
                    return int(a.split("=", 1)[1])
        return None

    def _resume_checkpoint(self) -> str | None:
        if not (self.recipe["resume"].get("arg") or self.recipe["resume"].get("args")) or self.state.get("no_resume"):
            return None
        return self.checkpoints.resume_point(allow_drift=bool(self.state.get("allow_drift")))

    def _launch(self) -> lc.Event | None:
        """Start the next attempt. Its output goes to train.log: when the run directory cannot
        take it (read-only, full, deleted), nothing starts and the answer is the lifecycle's
        next event (wait and retry, or fail when the directory is gone), never an exception."""
        try:
            log_fd = jsonio.open_append(self.run.log)
        except OSError as exc:
            return self._launch_blocked(exc)
        try:
            self._launch_with(log_fd)
        finally:
            os.close(log_fd)
        return None

    def _launch_blocked(self, exc: OSError) -> lc.Event:
        self.journal.failed(exc)
        if not self.run.path.is_dir():
            return lc.Judged("fail", f"the run directory {self.run.path} is gone: nothing can be launched")
        reason = f"run directory not writable ({exc.strerror or exc})"
        self._storage_alert(reason)
        return lc.Judged("restart", f"{reason}: waiting to launch", STORAGE_RETRY_S, STORAGE_RETRY_S)

    def _storage_alert(self, reason: str) -> None:
        """One critical alert per storage problem that holds a launch back."""
        if self._storage_alerted != reason:
            self._storage_alerted = reason
            self.alert("critical", "storage", f"{reason}: the next attempt waits until its log can be written")

    def _log_unwritable(self) -> str | None:
        """Why the next attempt's log cannot be opened (a cooldown condition), else None."""
        try:
            os.close(jsonio.open_append(self.run.log))
        except OSError as exc:
            reason = f"run directory not writable ({exc.strerror or exc})"
            self._storage_alert(reason)
            return reason
        return None

    def _launch_with(self, log_fd: int) -> None:
        attempt = int(self.state.get("attempt") or 0) + 1
        self.set(attempt=attempt)
        resumed_from = self._resume_checkpoint()
        argv = recipes.attempt_argv(self.recipe, self._placeholders(), resume_from=resumed_from,
                                    port=self.port_override)
        port = self._port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MOECONSOLE_")}
        env.update(self.env_resolved)
        if self.port_override:
            env["MASTER_PORT"] = str(self.port_override)
        env.update(self.next_env)
        env.update({"MOECONSOLE_RUN_ID": self.run.run_id, "MOECONSOLE_RUN_DIR": str(self.run.path),
                    "MOECONSOLE_ATTEMPT": str(attempt), "MOECONSOLE_RECIPE_HASH": self.hash,
                    "PYTHONUNBUFFERED": "1"})
        workdir = self._fill(self.recipe["workdir"]) if self.recipe.get("workdir") else self.recipe.get(
            "_launch_cwd") or str(self.run.path)
        shown = self.redactor.redact_argv(argv)
        marker = rundir.ATTEMPT_MARKER.format(attempt=attempt)
        try:
            jsonio.append_bytes(self.run.log,
                                f"\n{marker} {time.strftime('%Y-%m-%dT%H:%M:%S')} argv={' '.join(shown)}\n".encode())
        except OSError as exc:
            self.journal.failed(exc)
        try:
            started = self.engine.start(LaunchSpec(attempt, argv, env, workdir), log_fd)
        except OSError as exc:
            msg = f"cannot start {argv[0]!r}: {exc.strerror or exc}"
            try:
                jsonio.append_bytes(self.run.log, f"moeconsole: {msg}\n".encode())
            except OSError as write_exc:
                self.journal.failed(write_exc)
            self.journal.event("attempt_start", attempt=attempt, argv=shown, resumed_from=resumed_from, error=msg)
            self.set(pause_reason=msg, exit_code=None)
            self.set_status(FAILED, msg)
            return
        self._storage_alerted = None
        self.attempt, self.proc, self.tree = started, started.proc, started.tree
        self.own_pids = own_pid_set(self.tree.procs)
        self.tree.set_sidecars(self.ops.pids)
        self.adopted = False
        self.leader_rc = None
        self.exit_status = None
        self.monitors = self.Monitors(self.thresholds)
        self.memory.new_attempt()
        now = time.time()
        self.attempt_started = now
        self.last_output = now
        self.last_progress = now
        self.attempt_steps = 0
        self.last_step_written = self.last_real_step = None
        self.log_tail.clear()
        self.resumed_step = _step_of(resumed_from)
        self.set(pause_reason=None, exit_code=None, step_at_attempt_start=self.state.get("step"),
                 resumed_from=resumed_from, port=port, attempt_started_at=now)
        self.journal.event("attempt_start", attempt=attempt, argv=shown, resumed_from=resumed_from,
                           pid=started.proc.pid if started.proc else None,
                           command_pid=next((t.pid for t in self.tree.procs.values() if t.role == "leader"), None),
                           port=port, env_overrides=self.next_env, versions=package_versions(),
                           engine=self.engine.name)
        self._note_job()
        self.next_env = {}
        self.set_status(RUNNING, f"attempt {attempt} started")
        self.flush_state(force=True)

    # ---- the loop ---------------------------------------------------------------------
    def loop(self) -> None:
        sel = selectors.DefaultSelector()
        rfd, wfd = os.pipe()
        os.set_blocking(rfd, False)
        os.set_blocking(wfd, False)
        signal.set_wakeup_fd(wfd)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(s, self._on_runner_signal)
        sel.register(rfd, selectors.EVENT_READ, "wake")
        sel.register(self.control.fileno(), selectors.EVENT_READ, "control")
        pidfd_registered = None
        while not self.stop and not self._over():
            if self.pidfd is not None and pidfd_registered != self.pidfd:
                sel.register(self.pidfd, selectors.EVENT_READ, "pidfd")
                pidfd_registered = self.pidfd
            for key, _ in sel.select(timeout=self._next_wakeup()):
                if key.data == "wake":
                    try:
                        while os.read(rfd, 512):
                            pass
                    except BlockingIOError:
                        pass
                elif key.data == "control":
                    self.control.serve()
                elif key.data == "pidfd" and self.pidfd is not None:
                    sel.unregister(self.pidfd)
                    os.close(self.pidfd)
                    self.pidfd = pidfd_registered = None
                    self._on_leader_exit(None)
            self.control.serve()  # expire slow clients (and anything that arrived meanwhile)
            if self.finishing_until is None:
                self.tick()
            elif self._every("finishing", OPS_POLL_S):
                self._poll_ops(time.time())
                self.flush_state()
        if not self.stop and self.state.get("status") in rundir.TERMINAL:
            self._poll_ops(time.time())
        self.flush_state(force=True)
        self.control.close()
        sel.close()

    def _over(self) -> bool:
        """The run has ended and the last good checkpoint has reached persistent storage (or
        ``SYNC_FINAL_WAIT_S`` passed). Until then the loop keeps serving control: ``status``
        answers, commands are refused with the reason."""
        if self.state.get("status") not in rundir.TERMINAL:
            return False
        if self.finishing_until is None:
            if not self.ops.syncing():
                return True
            self.finishing_until = time.monotonic() + SYNC_FINAL_WAIT_S
            self._diag("run over; waiting for the last checkpoint's sync before exiting")
        return not self.ops.syncing() or time.monotonic() >= self.finishing_until

    def _next_wakeup(self) -> float:
        """The log tick, or sooner when a kill deadline or the cooldown's earliest restart is due."""
        if self.finishing_until is not None:
            return OPS_POLL_S
        if self.lagging:
            return 0.0  # more log waits: next slice at once (after the fds are served)
        due = [LOOP_TICK_S]
        expiry = self.control.next_expiry()
        if expiry is not None:
            due.append(expiry)
        mono = time.monotonic()
        if self.kill and not self.kill.escalated and self.kill.deadline > mono:
            due.append(self.kill.deadline - mono)
        if self.cooldown and self.cooldown.earliest > mono:
            due.append(self.cooldown.earliest - mono)
        return max(0.001, min(due))

    def _on_runner_signal(self, signum, _frame) -> None:
        # Stopping the runner leaves training alive: a new runner adopts it.
        self.stop = True
        self._diag(f"runner got {proctree.describe_signal(signum)}; leaving training running")

    def tick(self) -> None:
        now = time.time()
        reaped = proctree.reap_children()
        slurm_client.deliver(reaped)  # the Slurm engine's sbatch/squeue/scancel children
        for pid, status in reaped.items():
            if self.tree.leader and pid == self.tree.leader.pid and not self.adopted:
                if self.proc is not None:
                    self.proc.returncode = proctree.returncode_from_status(status)
                self._on_leader_exit(proctree.returncode_from_status(status))
        if self.attempt is not None and self.attempt.polled and self.life.attempt_live and not self.draining:
            rc = self.attempt.poll({})
            self._note_job()
            if rc is not False:
                self._on_leader_exit(rc)
        if self.life.attempt_live and self.tree.leader and self.pidfd is None and \
                (self.adopted or not getattr(self.attempt, "polled", True)) and self._every("leader_check", 0.5) \
                and not proctree.same_process(self.tree.leader.pid, self.tree.leader.start_time):
            # An adopted leader is nobody's child here; our own child that vanished without our
            # waitpid seeing it (reaped elsewhere) must not leave the run "running" forever.
            self._on_leader_exit(self._recorded_exit() if not self.adopted else None)
        if self.draining:
            self._drain_then_judge()
        else:
            self._ingest_turn()
        if self.state.get("status") in (RUNNING, STOPPING) and self._every("tree", TREE_REFRESH_S):
            self.tree.refresh()
            # Every PID the attempt has in any namespace, read while alive: an OOM message that
            # names one of them names us, not a foreign process holding the GPU.
            self.own_pids |= own_pid_set(self.tree.procs)
            self.dirty = True
        if self.checkpoints.active and self._every("ckpt", CHECKPOINT_POLL_S):
            if self.checkpoints.poll(self.monitors.on_checkpoint, self.state.get("attempt")):
                self._checkpoint_state()
        if self.state.get("status") == RUNNING and not self.kill and self.life.attempt_live:
            self._heartbeat(now)
            if self.gpu_backend is not None and self._every("memory", MEMORY_SAMPLE_S):
                self._sample_gpu_memory(now)
        if self.terminations:
            self._progress_terminations()
        if self.kill:
            self.apply(lc.Tick())
            self.tree.refresh()
            alive = self.tree.alive()
            hidden = not alive and not self.life.attempt_live and self.tree.alive(scan_markers=True)
            self.apply(lc.TreeProbe(alive=alive, hidden=hidden))
        elif self.leader_exited:
            self.tree.refresh()
            self.apply(lc.TreeProbe(alive=self.tree.alive()))
        mono = time.monotonic()
        if self.cooldown and self.state.get("status") == COOLDOWN and (
                self._every("cooldown", float(self.recipe["cooldown"]["poll_s"]))
                or (mono >= self.cooldown.earliest and not self.cooldown.waiting_on)):
            self._probe_conditions()
        if self._every("ops", OPS_POLL_S):
            self._poll_ops(now)
        self.flush_state()

    def _poll_ops(self, now: float) -> None:
        """Record what the ops helpers finished (sync results) and the sync state."""
        for ev in self.ops.poll(now):
            kind = ev.pop("type")
            self.journal.event(kind, attempt=self.state.get("attempt"), **ev)
        sync = self.ops.state(now)
        if sync is not None and sync != self.state.get("sync"):
            self.set(sync=sync)

    def _on_event_for_ops(self, ev: dict) -> None:
        self.ops.on_event(ev)
        if ev.get("type") == "checkpoint":
            self.ops.on_checkpoint(ev)

    def _every(self, name: str, period: float) -> bool:
        now = time.monotonic()
        if now - self._timers.get(name, 0.0) >= period:
            self._timers[name] = now
            return True
        return False

    # ---- log ingestion ----------------------------------------------------------------
    def _catch_up_log(self) -> None:
        for _ in range(10_000):
            if not self._read_log():
                break

    def _ingest_turn(self) -> None:
        """Up to INGEST_SLICE_BYTES of the log, a sub-slice at a time, answering the control
        socket between sub-slices: a flood of log lines never makes a kill or a status wait
        for more than one sub-slice."""
        for _ in range(INGEST_SLICE_BYTES // INGEST_SUBSLICE_BYTES):
            if not self._read_log() or not self.lagging:
                return
            self.control.serve()

    def _read_log(self) -> bool:
        resets = self.tailer.resets
        data = self.tailer.read_new()
        if self.tailer.resets != resets:
            self.reader.reset_partial()  # truncated or replaced: the old unfinished line is gone
        self.lagging = len(data) >= self.tailer.max_read
        if not data:
            return False
        self.last_output = time.time()
        self.log_tail.add(data)
        for batch in self.reader.feed_batches(data):
            self._on_batch(batch)
        return True

    def _on_batch(self, batch) -> None:
        """A batch of the log (a slice's records and save marks): written in one append, the
        monitors and charts fed once from the batch's columns. A template row is its JSON line
        (bytes), written as is; only the parser's records are dicts. A save is judged where it
        stands among the steps (at verification the excursion may be over)."""
        saves = [(before, mark.get("step"), mark.get("path")) for before, mark in batch.marks
                 if mark.get("kind") == "checkpoint_saved"]
        self.rank_times.feed(batch.records)
        evals = [mark for _, mark in batch.marks if mark.get("kind") == "eval"]
        if evals:   # evaluation results: their own file, never a training step
            stamp_e = {"v": jsonio.SCHEMA_VERSION, "t": time.time(), "attempt": self.state.get("attempt")}
            self.journal.evals([{**stamp_e, **eval_record(m)} for m in evals])
        all_steps = np.asarray(batch.steps)
        kept, counted, written = rows_to_write(batch.records, all_steps.tolist(),
                                               Written(self.last_step_written, self.last_real_step))
        if not kept:
            self._judge_saves(saves, None)
            return
        attempt = self.state.get("attempt")
        now = time.time()
        stamp = {"v": jsonio.SCHEMA_VERSION, "t": now, "attempt": attempt}
        records = self.redactor.mask_rows(batch.records, kept)  # the run's own secrets, printed back
        self.journal.metrics(*metric_lines(records, kept, stamp))  # type: ignore[arg-type]
        rows = np.asarray(kept)
        steps = all_steps[rows]
        values = {f: batch.values[f][rows] for f in batch.values}
        present = {f: batch.present[f][rows] for f in batch.present}
        self.book.feed_columns(steps.astype(float).tolist(), {f: v.tolist() for f, v in values.items()},
                               {f: p.tolist() for f, p in present.items()},
                               newest_record(records, kept, stamp), records=[records[i] for i in kept])
        if counted:
            self.last_step_written, self.last_real_step = written.step, written.real
            self.attempt_steps += len(counted)
            self.last_progress = now
            self.set(**self._progress(batch, values, present, np.searchsorted(rows, np.asarray(counted))))
        at = [(int(np.searchsorted(rows, c)), step, path) for c, step, path in saves]
        alerts = self.monitors.observe_arrays(steps, values, present, at)
        self._judge_saves(at, alerts)
        for _, a in alerts:
            self.journal.event("alert", attempt=attempt, **a)
            if a.get("level") == "critical" and a.get("rule") == "non_finite":
                self.apply(lc.Divergence(a.get("message", "")))
        self.memory.on_rows(batch.records, kept, steps.tolist(), values["mem_gib"].tolist(),
                            present["mem_gib"].tolist(), now)
        self._memory_alerts()

    def _memory_alerts(self) -> None:
        """The memory watch's news (one alert per cause: opened, updated, resolved)."""
        recent = [v for v in self.book.series["step_time_s"].recent(20) if math.isfinite(v) and v > 0]
        step_time = sorted(recent)[len(recent) // 2] if recent else self.state.get("step_time_s")
        for a in self.memory.alerts(self.state.get("max_steps"), step_time):
            self.journal.event("alert", attempt=self.state.get("attempt"), **a)

    def _sample_gpu_memory(self, now: float) -> None:
        """NVML's view of the run's GPUs into the memory envelope (a step's peak is the highest
        sample during it)."""
        gpu = self._gpu_state()
        from runner.telemetry.host import ram_now
        self.gpu_history.feed(gpu, {"cpu_pct": self.cpu_meter.sample(), **ram_now()}, now)
        if gpu and gpu.get("available"):
            self.memory.on_gpus(gpu, self.last_step_written, self.own_pids | set(self.tree.procs), now)
            self._memory_alerts()

    def _progress(self, batch, values: dict, present: dict, idx) -> dict:
        """state.json's progress fields from the new steps of a batch (rows ``idx``)."""
        fields: dict = {"step": self.last_step_written}
        if batch.max_steps:
            fields["max_steps"] = batch.max_steps
        loss = values["loss"][idx]
        finite = loss[present["loss"][idx] & np.isfinite(loss)]
        if finite.size:
            low, before = float(finite.min()), self.state.get("min_loss")
            fields["last_loss"] = float(finite[-1])
            fields["min_loss"] = low if before is None else min(low, before)
        has_t = present["step_time_s"][idx]
        if has_t.any():
            fields["step_time_s"] = float(values["step_time_s"][idx][has_t][-1])
        return fields

    def _judge_saves(self, saves: list[tuple[int, int | None, str | None]],
                     alerts: list[tuple[int, dict]] | None) -> None:
        """Checkpoint saves seen in the log, (records before it, step, path): suspect when the
        monitors flagged the save at its place among the records. ``alerts`` None: the batch
        had no records to write, so each save is judged on the monitors' state now."""
        for c, step, path in saves:
            if alerts is None:
                flagged = self.monitors.on_checkpoint(step, path)
                for a in flagged:
                    self.journal.event("alert", attempt=self.state.get("attempt"), **a)
            else:
                flagged = [a for i, a in alerts if i == c and a.get("rule") == "checkpoint_in_excursion"
                           and a.get("step") == step]
            self.checkpoints.note_saved(path, bool(flagged))
        if saves:
            self._timers["ckpt"] = 0.0  # look now

    def _ingest_lag(self) -> dict:
        try:
            size = os.stat(self.run.log).st_size
        except OSError:
            size = self.tailer.offset
        return {"offset": self.tailer.offset, "size": size, "lag_bytes": max(0, size - self.tailer.offset)}

    def _attempt_tail(self) -> list[str]:
        """The attempt's last log lines, secrets masked (classification and crash reports)."""
        return [self.redactor.redact(line) for line in self.log_tail.text()]

    # ---- heartbeat --------------------------------------------------------------------
    def _note_job(self) -> None:
        """A batch job's state (pending reason, nodes) into state.json when it changes; its id,
        once sbatch gives it, into events.jsonl."""
        view = getattr(self.attempt, "view", None)
        if view is None:
            return
        job = view()
        if job == self.state.get("job"):
            return
        before = self.state.get("job") or {}
        if job.get("job_id") and (before.get("job_id") != job["job_id"] or before.get("attempt") != job.get("attempt")) \
                and not self.adopted:
            self.journal.event("job_submitted", attempt=job.get("attempt"), engine=job.get("engine"),
                               job_id=job["job_id"], state=job.get("state"))
        self.set(job=job)

    def _heartbeat(self, now: float) -> None:
        if getattr(self.attempt, "pending", False):
            # Queued by the batch system: silence is expected until the job runs.
            self.last_output = self.last_progress = self.attempt_started = now
            return
        timeout = heartbeat_limit(self.recipe["heartbeat"], steps_seen=self.attempt_steps)
        quiet = now - max(self.last_output, self.last_progress)
        if quiet > timeout:
            phase = "before the first step" if not self.attempt_steps else "between steps"
            self.alert("critical", "hang", f"no log output and no step progress for {quiet:.0f}s {phase}: "
                       f"killing the tree", quiet_s=round(quiet, 1), timeout_s=timeout)
            self.apply(lc.Hang(quiet, timeout))

    # ---- checkpoints ------------------------------------------------------------------
    def _checkpoint_state(self) -> None:
        self.set(verified=list(self.checkpoints.verified), last_checkpoint=self.checkpoints.last,
                 bad_saves=self.checkpoints.bad_saves)
        self._pause_on_bad_saves()

    def _pause_on_bad_saves(self) -> None:
        """``checkpoints.pause_after_bad_saves`` saves in a row failed verification: the attempt
        is stopped and the run paused, naming the last good checkpoint (the resume point)."""
        limit = int(self.recipe["checkpoints"].get("pause_after_bad_saves") or 0)
        bad = self.checkpoints.bad_in_a_row
        if not limit or len(bad) < limit or self.kill or not self.life.attempt_live \
                or self.state.get("status") != RUNNING:
            return
        from runner.checkpoints.keeper import describe_good
        good = self.checkpoints.last_good()
        if self.checkpoints.streak_broken_by(good):
            return  # a newer save is good: the watcher records it at its next poll
        names = ", ".join(Path(p).name for p in bad[-limit:])
        self._bad_saves_reason = (f"{len(bad)} bad saves in a row ({names}); "
                                  f"{describe_good(good)}; "
                                  f"paused by checkpoints.pause_after_bad_saves={limit}")
        self.alert("critical", "bad_saves", self._bad_saves_reason, paths=list(bad))
        self.apply(lc.BadSaves(self._bad_saves_reason))

    # ---- killing ----------------------------------------------------------------------
    # ---- exits and recovery -----------------------------------------------------------
    def _on_leader_exit(self, rc: int | None) -> None:
        if not self.life.attempt_live or self.draining:
            return
        self.exit_seen_at = time.time()
        recorded = self._recorded_exit()
        if rc is None:  # not our child (adopted): the waiter wrote down how it ended
            rc = recorded
        self.leader_rc = rc
        self.draining = True
        self._drain_then_judge()

    def _drain_then_judge(self) -> None:
        """The ended attempt is judged once its whole log is read (the crash text is at the end).
        A backlog is read for CATCH_UP_TURN_S per loop turn, so status, kill and the state file
        keep being served while millions of lines are caught up."""
        deadline = time.monotonic() + CATCH_UP_TURN_S
        while self._read_log() and self.lagging and time.monotonic() < deadline:
            self.control.serve()
        if self.lagging:
            return  # more waits: the next loop turn comes back here
        self.draining = False
        self.apply(lc.LeaderExit(self.leader_rc))

    def _finish_attempt(self, kill_reason: str | None = None, now_restart: bool = False) -> lc.Judged:
        """Judge the ended attempt: verify its last saves, classify the crash, write its report,
        ask the restart policy. The answer goes back to the lifecycle."""
        from runner.core.crash import classify, classify_job_state, decode_exit, interpreter_of, live_pid_set
        from runner.core.policy import AttemptRecord, decide
        self.tree.leader = None
        self._catch_up_log()
        # Nothing of this attempt writes any more: verify its last saves now, before the next
        # attempt can overwrite them (a stub at step 8 replaced by a good save is still reported).
        self.checkpoints.sweep(self.monitors.on_checkpoint, self.state.get("attempt"))
        self._checkpoint_state()
        rc = self.leader_rc
        attempt = int(self.state.get("attempt") or 0)
        now = time.time()
        last_step = self.state.get("step")
        self.history.append(AttemptRecord(attempt=attempt, started_at=self.state.get("attempt_started_at") or now,
                                          ended_at=now, resumed_step=self.resumed_step, last_step=last_step, crash_class=None))
        # A batch job's own end (TIMEOUT, NODE_FAIL, ...) outranks its exit code (TIMEOUT is 0:0).
        job_state = self.exit_status.job_state if self.exit_status else None
        job_verdict = classify_job_state(job_state, self._attempt_tail(),
                                         self.exit_status.failed_nodes if self.exit_status else ()) \
            if kill_reason is None else None
        if rc == 0 and kill_reason in (None, "cleanup") and job_verdict is None:
            self.set(exit_code=0)
            self._store_history()
            saved = self.checkpoints.final_check()
            if not saved.ok:  # a lost run is never called a success
                self.alert("critical", "unsaved", f"training finished but {saved.reason}", last_good=saved.last_good)
                self.journal.event("unsaved", attempt=attempt, step=last_step, reason=saved.reason,
                                   last_good=saved.last_good)
                return lc.Judged("unsaved", f"training finished (exit 0) but {saved.reason}")
            self.journal.event("success", attempt=attempt, step=last_step)
            return lc.Judged("succeed", "training finished (exit 0)")
        if kill_reason == "bad_saves":
            self._store_history()
            return lc.Judged("pause", self._bad_saves_reason or "bad saves in a row")
        exec_error = self.exit_status.error if self.exit_status and rc is not None else None
        if exec_error and kill_reason is None:
            # The command could not even be started: retrying the same argv cannot help.
            self.set(exit_code=None)
            self._store_history()
            return lc.Judged("fail", exec_error)
        if kill_reason == "restart":
            self.journal.event("restart", attempt=attempt, requested_by="user")
            self._store_history()
            return lc.Judged("restart", "restart requested", 0.0, 0.0 if now_restart else None)
        tail = self._attempt_tail()
        verdict = job_verdict or classify(rc, tail, user_kill=kill_reason == "user", hang=kill_reason == "hang",
                           steps_seen=self.attempt_steps, foreign_gpu_memory=self._foreign_gpu_memory(),
                           divergence=kill_reason == "divergence", attempt=attempt,
                           own_pids=self.own_pids, live_pids=live_pid_set(),
                           python=interpreter_of(recipes.launch_argv(self.recipe, self._placeholders())))
        code, sig = decode_exit(rc)
        self.history[-1] = AttemptRecord(**{**self.history[-1].__dict__, "crash_class": verdict.cls})
        report = {"v": jsonio.SCHEMA_VERSION, "t": now, "run_id": self.run.run_id, "attempt": attempt,
                  "class": verdict.cls, "exit_code": code, "returncode": rc, "signal": sig,
                  "signal_name": proctree.describe_signal(sig) if sig else None,
                  "summary": verdict.summary, "evidence": list(verdict.evidence), "recovery": verdict.recovery,
                  "retryable": verdict.retryable, "hint": verdict.hint, "steps_seen": self.attempt_steps,
                  "last_step": last_step, "resumed_from": self.state.get("resumed_from"),
                  "log_tail": tail[-CRASH_REPORT_TAIL:], "gpu": self._gpu_state(),
                  "detected_after_s": round(now - getattr(self, "exit_seen_at", now), 3),
                  "job": self.state.get("job")}
        memory = self._explain_oom(verdict, last_step)
        if memory is not None:
            report["memory"] = memory
            self.history[-1] = AttemptRecord(**{**self.history[-1].__dict__, "memory_verdict": memory["verdict"]})
        try:
            report = runfiles.crash_report(report)  # the model every reader holds the file to
        except ValueError as exc:  # msgspec.ValidationError: a bug, never a lost report
            self._diag(f"crash report does not fit its model ({exc}); written as it is")
        self.journal.write_json(self.run.crash_report(attempt), report)
        floor = float(self.recipe["cooldown"]["floor_s"]) * float(verdict.cooldown_scale or 1.0)
        decision = decide(verdict, self.history, self.settings, now, floor_s=floor)
        self.journal.event("crash", attempt=attempt, **{"class": verdict.cls}, summary=verdict.summary,
                       recovery=verdict.recovery, exit_code=code, signal=sig, decision=decision.action,
                       reason=decision.reason,
                       **({"memory_verdict": memory["verdict"], "memory_summary": memory["summary"]} if memory else {}))
        self.set(last_crash={"class": verdict.cls, "attempt": attempt, "summary": verdict.summary},
                 exit_code=code)
        self._store_history()
        if decision.alert:
            self.alert(decision.alert, "restart_policy", decision.reason, crash_class=verdict.cls)
        if decision.action == "restart":
            self.next_env = dict(verdict.env)
            self.set(restarts=int(self.state.get("restarts") or 0) + 1)
            return lc.Judged("restart", f"{verdict.cls}: {decision.reason}", decision.delay_s, floor)
        if decision.action in ("pause", "stop"):
            return lc.Judged(decision.action, decision.reason)
        return lc.Judged("fail", decision.reason)

    def _explain_oom(self, verdict, last_step: int | None) -> dict | None:
        """A CUDA OOM's memory verdict (the crash report's ``memory``), or None."""
        from runner.core.crash import foreign_holders, live_pid_set
        try:
            return self.memory.explain(
                verdict, prove_foreign=lambda named: foreign_holders(named, self.own_pids, live_pid_set()),
                last_step=last_step, attempt_start_step=self.resumed_step or 0, env=self.env_resolved,
                python=(self.recipe.get("swift") or {}).get("python"))
        except Exception as exc:  # the verdict is an explanation: it must never stop the judging
            self._diag("memory verdict failed:\n" + traceback.format_exc())
            return {"verdict": "unknown", "summary": f"no memory verdict: {exc}", "evidence": [], "advice": "",
                    "restart": "unknown"}

    def _store_history(self) -> None:
        self.set(history=[h.__dict__ for h in self.history[-50:]])

    def _gpu_state(self) -> dict | None:
        if not self.gpu_backend:
            return None
        try:
            return self.gpu_backend.snapshot().to_dict()
        except Exception as exc:
            return {"available": False, "reason": str(exc)}

    def _foreign_gpu_memory(self) -> bool:
        gpu = self._gpu_state()
        if not gpu or not gpu.get("available"):
            return False
        listed = [p["pid"] for g in gpu.get("gpus", []) for p in g.get("processes") or [] if p.get("pid")]
        return bool(proctree.foreign_pids(listed, set(self.tree.procs), self.run.run_id))

    # ---- cooldown ---------------------------------------------------------------------
    def _conditions(self) -> list[str]:
        """What still keeps us from launching: survivors of this run, the port (and whoever holds
        it), GPU memory and foreign processes on the GPUs the recipe uses. Leftovers of other runs
        that hold neither a GPU of ours nor the port do not block this one."""
        from runner.telemetry.preflight import gpu_problems, port_free, preflight
        from runner.telemetry.procs import PORT_HOLDER
        waiting: list[str] = []
        unwritable = self._log_unwritable()
        if unwritable:
            waiting.append(unwritable)
        survivors = self.tree.survivors(scan_markers=True)
        if survivors:
            waiting.append(f"survivors of this run: PIDs {sorted(survivors)[:8]}")
        waiting += self.tree.blocking()
        port = self._port()
        if port and not port_free(port):
            waiting.append(f"port {port} busy")
        self._blockers = []
        devices = self.recipe["gpus"].get("devices") or []
        if not (port or devices):
            return waiting
        tolerance = float(self.recipe["cooldown"]["gpu_mem_tolerance_mib"])
        try:
            res = preflight(self.gpu_backend, devices=devices, tolerance_mib=tolerance, port=port,
                            run_id=self.run.run_id, exclude_pids={os.getpid()})
        except Exception as exc:  # a scan racing with exits must not stop supervision
            self._diag(f"pre-flight check failed: {exc}")
            return waiting
        self._blockers = [b for b in res.blockers if PORT_HOLDER in b.labels or (devices and b.gpus)]
        if devices:
            waiting += gpu_problems(res.gpu, devices, tolerance)
        waiting += [b.describe() for b in self._blockers]
        return waiting

    def _probe_conditions(self) -> None:
        waiting = self._conditions()
        port = self._port()
        port_busy = bool(port) and any(w.startswith(f"port {port}") for w in waiting)
        self.apply(lc.ConditionsProbe(tuple(waiting), self.recipe["preflight"]["on_busy"], port_busy=port_busy,
                                      blockers=bool(self._blockers)))

    def _kill_blockers(self) -> None:
        for b in self._blockers:
            if "foreign_gpu" in b.labels or "orphan" in b.labels or "port_holder" in b.labels:
                self._terminate(b.pid, b.start_time, self._grace(None), labels=list(b.labels))
        self._blockers = []

    def _grace(self, asked) -> float:
        return bounds.sane_seconds(asked, bounds.sane_seconds(self.recipe["kill"]["grace_s"], 10.0, bounds.GRACE),
                                   bounds.GRACE)

    def _terminate(self, pid: int, start_time: float | None, grace_s: float, **fields):
        """End a process that is not part of the attempt (a blocker, a user's pick) with the same
        checked SIGTERM -> deadline -> SIGKILL as everything else, driven by ``tick``: never waits."""
        from runner.telemetry.kill import KillResult, start_termination
        if pid in self.terminations:
            return self.terminations[pid][0]
        term = start_termination(pid, start_time, grace_s=grace_s)
        if isinstance(term, KillResult):
            self.journal.event("blocker_kill", pid=pid, result=term.to_dict(), **fields)
            return term
        self.terminations[pid] = (term, fields)
        return term

    def _progress_terminations(self) -> None:
        for pid, (term, fields) in list(self.terminations.items()):
            res = term.step()
            if res is not None:
                del self.terminations[pid]
                self.journal.event("blocker_kill", pid=pid, result=res.to_dict(), **fields)

    # ---- control requests -------------------------------------------------------------
    def handle(self, req: dict) -> dict:
        cmd = req.get("cmd")
        status = self.state.get("status")
        if cmd == "status":
            return {"ok": True, "state": self.state}
        if self.finishing_until is not None and cmd != "verify":
            left = max(0.0, self.finishing_until - time.monotonic())
            return {"ok": False, "message": f"the run is over ({status}); its runner exits once the last "
                                            f"checkpoint's copy to persistent storage ends (at most {left:.0f} s "
                                            f"more): try {cmd} again then"}
        if cmd in ("kill", "restart", "resume"):
            self._last_signalled = []
            answer = self.apply(lc.Control(cmd, grace_s=req.get("grace_s"), now=bool(req.get("now")),
                                           by=str(req.get("by", "client"))))
            answer = dict(answer or {"ok": False, "message": f"{cmd}: nothing to do while {status}"})
            answer.setdefault("pids", self._last_signalled or sorted(self.tree.procs) if self.kill else [])
            if cmd == "kill" and self._last_signalled:
                answer["message"] = (f"SIGTERM sent to {self._last_signalled}; SIGKILL in "
                                     f"{answer.get('grace_s', 0):g}s for anything left")
            return answer
        if cmd == "verify":
            return self.checkpoints.verify_latest()
        if cmd == "kill_pid":
            from runner.telemetry.kill import KillResult
            pid, st = req.get("pid"), req.get("start_time")
            if not isinstance(pid, int) or isinstance(pid, bool) or not isinstance(st, (int, float)):
                return {"ok": False, "message": "kill_pid needs an integer pid and its start_time"}
            grace = self._grace(req.get("grace_s"))
            term = self._terminate(pid, float(st), grace, requested_by=req.get("by", "client"))
            if isinstance(term, KillResult):
                return {"ok": term.ok, "message": term.reason, "result": term.to_dict()}
            return {"ok": True, "message": f"SIGTERM sent to PID {pid}; SIGKILL in {grace:g}s if it is still there "
                                           f"(the outcome is recorded as a blocker_kill event)",
                    "result": {"pid": pid, "ok": True, "action": "signalled", "reason": "under way", "seconds": 0.0}}
        return {"ok": False, "message": f"unknown command {cmd!r} (known: {', '.join(control.COMMANDS)})"}

    # ---- shutdown ---------------------------------------------------------------------
    def close(self) -> None:
        ops = getattr(self, "ops", None)
        if ops is not None:
            ops.close()
        try:
            self.sock.close()
            if self.state.get("status") in rundir.TERMINAL:
                os.unlink(self.run.sock)
        except OSError:
            pass
        self._index()


def heartbeat_limit(heartbeat: dict, *, steps_seen: int) -> float:
    """How long an attempt may be silent: ``startup_s`` until its first step (loading a large
    model prints little for a long time), ``timeout_s`` between steps. Without ``startup_s`` the
    start-up allowance is the larger of ``timeout_s`` and STARTUP_DEFAULT_S."""
    timeout = float(heartbeat["timeout_s"])
    if steps_seen:
        return timeout
    startup = heartbeat.get("startup_s")
    return float(startup) if startup is not None else max(timeout, STARTUP_DEFAULT_S)


def recover_state(run: rundir.RunDir, partial: dict, problem: str) -> dict:
    """``state.json`` is missing or damaged: rebuild what a runner needs from the append-only
    records (status and attempt from events, progress from metrics, the ingest offset from the
    attempt's marker in the log, the attempt's waiter from its run marker)."""
    state = dict(partial)
    status, attempt, waiter, restarts = None, 0, None, 0
    for _, ev in jsonio.iter_jsonl(run.events):
        kind = ev.get("type")
        if kind == "status" and Status.parse(ev.get("status")):
            status = Status(ev["status"])
        elif kind == "attempt_start" and isinstance(ev.get("attempt"), int):
            attempt, waiter = ev["attempt"], ev.get("pid")
            status = status if status in rundir.TERMINAL else RUNNING
        elif kind == "crash" and ev.get("decision") == "restart":
            restarts += 1
        elif kind == "drift" and ev.get("policy") == "allow":
            state["allow_drift"] = True
    if status is None:
        return state
    state.update(status=status, attempt=attempt, restarts=restarts, recovered_from=problem)
    last = None
    for _, rec in jsonio.iter_jsonl(run.metrics):
        if rec.get("attempt") == attempt and isinstance(rec.get("step"), int):
            last = rec
    if last:
        state.update(step=last["step"], max_steps=last.get("max_steps"))
    state["log_offset"] = _marker_offset(run.log, attempt)
    if isinstance(waiter, int) and waiter in proctree.marked_processes(run.run_id):
        state["pids"] = [{"pid": waiter, "start_time": proctree.start_time(waiter), "role": "waiter"}]
    else:
        state["pids"] = []
    return state


def _marker_offset(log: Path, attempt: int) -> int:
    """Where attempt ``attempt`` starts in ``train.log`` (0 when its marker is not found)."""
    marker = rundir.ATTEMPT_MARKER.format(attempt=attempt).encode()
    offset = found = 0
    try:
        with open(log, "rb") as f:
            for line in f:
                if line.startswith(marker):
                    found = offset
                offset += len(line)
    except OSError:
        return 0
    return found


def _attempt_record(d: dict):
    from runner.core.policy import AttemptRecord
    return AttemptRecord(attempt=int(d.get("attempt") or 0), started_at=float(d.get("started_at") or 0.0),
                         ended_at=float(d.get("ended_at") or 0.0), resumed_step=d.get("resumed_step"),
                         last_step=d.get("last_step"), crash_class=d.get("crash_class"),
                         memory_verdict=d.get("memory_verdict"))


def _step_of(path: str | None) -> int | None:
    if not path:
        return None
    tail = Path(path).name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


def _wall(mono: float) -> float:
    """A monotonic deadline as the wall-clock time readers show."""
    return time.time() + (mono - time.monotonic())


def _short(v: Any, n: int = 24) -> str:
    text = "(none)" if v is None else str(v)
    return text if len(text) <= n else text[: n - 1] + "…"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _engine(run: rundir.RunDir, recipe: dict):
    """The recipe's engine: ``local`` runs the command here, ``slurm`` submits a batch job."""
    if recipe.get("engine") == "slurm":
        from runner.process.engines.slurm import SlurmEngine
        return SlurmEngine(run, recipe)
    return LocalEngine(run)


def _load_run_recipe(run: rundir.RunDir) -> dict:
    raw, problem = recipes.read_saved(run.path)
    if problem:
        raise InputError(f"cannot use the run's recipe: {problem}")
    launch = raw.pop("_launch", {})
    launch = launch if isinstance(launch, dict) else {}
    recipe = recipes.validate(raw, run.recipe)
    recipe["_recipe_dir"] = launch.get("recipe_dir", "")
    recipe["_launch_cwd"] = launch.get("cwd")
    return recipe


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="moeconsole-runner")
    ap.add_argument("run_dir")
    ap.add_argument("--restart", action="store_true", help="start the next attempt of a finished run")
    args = ap.parse_args(argv)
    run = rundir.RunDir(Path(args.run_dir).resolve())
    proctree.set_child_subreaper()
    try:
        lock_fd = rundir.lock_runner(run)  # held (open) until this process ends
        sup = Supervisor(run, restart=args.restart)
        sup.start()
    except InputError as exc:
        sys.stderr.write(f"moeconsole runner: {exc}\n")
        return 2
    try:
        sup.loop()
    finally:
        sup.close()
        os.close(lock_fd)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
