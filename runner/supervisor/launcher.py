"""Starting an attempt: its argv, environment, working directory, port and resume point, and
the checks before the first one (recipe drift) and before every one (can its log be written?).

The runner decides *when* to launch (the lifecycle's ``Launch`` effect); this module knows
*what* to launch and starts it through the recipe's engine (``moeconsole.runner.process.engines``). It
never raises for a run directory that refuses the log: the answer is the lifecycle's next
event (wait and retry, or fail when the directory is gone).
"""
from __future__ import annotations

import functools
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.core.units import clip
from moeconsole.runner.process import pyexec
from moeconsole.runner.process.attempt import Attempt, Engine, LaunchSpec
from moeconsole.runner.process.waiter import process_limit_said
from moeconsole.runner.recipes import recipe as recipes
from moeconsole.runner.recipes.runargs import placeholders, trainer_argv_of, workdir
from moeconsole.runner.recipes.versions import package_versions
from moeconsole.runner.rundir import jsonio, rundir
from moeconsole.runner.rundir.journal import Journal
from moeconsole.runner.rundir.secrets import Redactor

if TYPE_CHECKING:
    from moeconsole.runner.recipes.model import RunRecipe

STORAGE_RETRY_S = 5.0      # a launch the run directory refused is tried again after this long
DRIFT_KEYS_SHOWN = 6


@dataclass(frozen=True)
class LaunchedAttempt:
    """An attempt that started, and what its ``attempt_start`` event and the state record."""
    attempt: Attempt
    resumed_from: str | None
    port: int | None
    event: dict[str, Any] = field(default_factory=dict)


class Launcher:
    def __init__(self, run: rundir.RunDir, recipe: RunRecipe, *, recipe_hash: str, env: dict[str, str],
                 redactor: Redactor, engine: Engine, journal: Journal, alert: Callable[..., None],
                 diag: Callable[[str], None], base_env: dict[str, str] | None = None) -> None:
        """``env``: the recipe's environment resolved (secrets included); ``base_env``: the
        environment the run was started with, under the recipe's (``environ.json``; this process's
        own when None); ``alert(level, rule, message, **values)``: the runner's alert."""
        self.run = run
        self.base_env = base_env
        self.recipe = recipe
        self.hash = recipe_hash
        self.env = env
        self.redactor = redactor
        self.engine = engine
        self.journal = journal
        self.alert = alert
        self.diag = diag
        self.port_override: int | None = None  # a new rendezvous port after the old one stayed busy
        self._storage_alerted: str | None = None  # the storage problem that holds launches back, once alerted

    # ---- what the recipe says -----------------------------------------------------------------
    def placeholders(self, attempt: int) -> dict[str, str]:
        return placeholders(self.run, self.recipe, attempt)

    def count_start(self, attempt: int, resume_from: str | None) -> int | None:
        """The step attempt ``attempt``'s own step count starts from when it resumes from
        ``resume_from`` (``step_count.count_start`` on the argv it runs: 0 when its trainer counts from
        step 1 again, None for a fresh start). A new runner taking the attempt over asks the same."""
        from moeconsole.runner.recipes.step_count import count_start
        if not isinstance(resume_from, str) or not resume_from:
            return None
        return count_start(trainer_argv_of(self.run, self.recipe, attempt, resume_from), resume_from,
                           self.recipe.swift.version)

    def partial_resume(self, attempt: int, resume_from: str | None, state: Mapping[str, Any]) -> str | None:
        """What attempt ``attempt`` does not restore when it resumes from ``resume_from``
        (``step_count.partial_resume`` on the argv it runs; a Trainer's save by
        ``flags.run_saves_through_trainer`` with the run's ``state``), or None."""
        from moeconsole.runner.recipes.step_count import partial_resume
        from moeconsole.runner.recipes.swift.flags import run_saves_through_trainer
        if not isinstance(resume_from, str) or not resume_from:
            return None
        argv = trainer_argv_of(self.run, self.recipe, attempt, resume_from)
        return partial_resume(argv, resume_from, self.recipe.swift.version,
                              trainer=run_saves_through_trainer(argv, state))

    def fill(self, text: str, attempt: int) -> str:
        return recipes.fill(text, self.placeholders(attempt))

    def port(self) -> int | None:
        """The rendezvous port: a new one we chose, else the recipe's, MASTER_PORT, --master_port."""
        if self.port_override:
            return self.port_override
        p = self.recipe.preflight.port
        if p:
            return int(p)
        env_port = self.env.get("MASTER_PORT")
        if env_port and env_port.isdigit():
            return int(env_port)
        argv = self.recipe.command
        for i, a in enumerate(argv):
            for flag in ("--master_port", "--master-port"):
                if a == flag and i + 1 < len(argv) and argv[i + 1].isdigit():
                    return int(argv[i + 1])
                if a.startswith(flag + "=") and a.split("=", 1)[1].isdigit():
                    return int(a.split("=", 1)[1])
        return None

    @functools.cached_property
    def node_rank(self) -> str | None:
        """This node's rank as the command's launcher starts it (``cmdline.node_rank``): the recipe and its
        environment are the runner's for its whole life, so read once (not at each pre-flight look)."""
        from moeconsole.runner.recipes.cmdline import node_rank
        env = {**(os.environ if self.base_env is None else self.base_env), **self.env}
        return node_rank(env, recipes.launch_argv(self.recipe, self.placeholders(1)))

    @functools.cached_property
    def joins_another_node(self) -> bool:
        """This node connects to a rendezvous another node hosts (its node rank is not 0:
        ``cmdline.joins_another_nodes_rendezvous``), as the command starts it."""
        from moeconsole.runner.recipes.cmdline import joins_another_nodes_rendezvous
        env = {**(os.environ if self.base_env is None else self.base_env), **self.env}
        return joins_another_nodes_rendezvous(env, recipes.launch_argv(self.recipe, self.placeholders(1)))

    def port_to_free(self) -> int | None:
        """The rendezvous port this node binds, which the pre-flight waits to be free: none on a
        node that joins another node's rendezvous, where a busy port is the store it connects to."""
        return None if self.joins_another_node else self.port()

    def new_port(self) -> tuple[int | None, int]:
        """Move the rendezvous to a free port (the old one stayed busy): (old, new)."""
        old = self.port()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port_override = s.getsockname()[1]
        return old, self.port_override

    def python(self, attempt: int) -> str | None:
        """The interpreter the command runs (the crash classes' dependency hints)."""
        from moeconsole.runner.core.crash import interpreter_of
        return interpreter_of(recipes.launch_argv(self.recipe, self.placeholders(attempt)))

    def workdir(self, attempt: int) -> str:
        return workdir(self.run, self.recipe, attempt)

    def past_the_ceiling(self, launch: lc.Launch, attempt: int) -> None:
        """A launch at the cooldown's ceiling: say what still waits, and move the rendezvous
        to a free port when the old one stayed busy."""
        if launch.ceiling_alert:
            waiting = list(launch.ceiling_alert)
            what = "; ".join(waiting)
            self.alert("warning", "cooldown_ceiling", f"cooldown ceiling reached: launched anyway, still waiting on "
                       f"{what}", waiting_on=waiting,
                       headline=f"launched anyway at the cooldown ceiling, still waiting on {what}")
        if launch.new_port:
            old, new = self.new_port()
            self.journal.event("port_change", old=old, new=new, attempt=attempt)

    @property
    def resumes(self) -> bool:
        return bool(self.recipe.resume.arg or self.recipe.resume.args)

    # ---- the run directory --------------------------------------------------------------------
    def open_log(self, attempt: int) -> int | lc.LifecycleEvent:
        """The log's descriptor for attempt ``attempt``, or the lifecycle's answer when the run
        directory cannot take it or the command's working directory is gone (wait and retry;
        fail when the run directory is gone)."""
        renamed = self._renamed() or self._workdir_gone(attempt)
        if renamed is not None:
            return lc.Judged("restart", f"{renamed}: waiting to launch", STORAGE_RETRY_S, STORAGE_RETRY_S)
        try:
            return jsonio.open_append(self.run.log)
        except OSError as exc:
            self.journal.failed(exc)
            if not self.run.path.is_dir():
                return lc.Judged("fail", f"the run directory {self.run.path} is gone: nothing can be launched")
            reason = self._storage_alert(exc)
            return lc.Judged("restart", f"{reason}: waiting to launch", STORAGE_RETRY_S, STORAGE_RETRY_S)

    def unwritable(self, attempt: int) -> str | None:
        """Why attempt ``attempt`` cannot be launched yet for want of a directory (its log's, the
        command's working directory: a cooldown condition), else None."""
        renamed = self._renamed() or self._workdir_gone(attempt)
        if renamed is not None:
            return renamed
        try:
            os.close(jsonio.open_append(self.run.log))
        except OSError as exc:
            return self._storage_alert(exc)
        return None

    def log_refused(self) -> str | None:
        """Why train.log cannot be written now (its error's words: "Read-only file system"), else None:
        what a judged attempt that could say nothing more wanted (``crash.log_refused_verdict``). Opened as it
        is, never made: a log gone (the run directory renamed, the training's output made a directory at the
        old name) is no refusal, and nothing may appear at a path the run left."""
        if self.journal.moved_to is not None:
            return None
        try:
            os.close(jsonio.open_overwrite(self.run.log))   # opened for writing, nothing written
        except FileNotFoundError:
            return None
        except OSError as exc:
            return exc.strerror or str(exc)
        return None

    def _renamed(self) -> str | None:
        """The run directory renamed under the live run (``Journal.moved_to``): the next attempt
        waits until it is renamed back, never launched under the old name (the command's paths
        name it; the training's output may have made it a directory again) nor failed as if the
        directory were gone. The rename's own critical alert already said so."""
        moved = self.journal.moved_to
        if moved is None:
            return None
        return f"the run directory was renamed to {moved}: rename it back to {self.run.path} to launch"

    def _workdir_gone(self, attempt: int) -> str | None:
        """The directory the command runs in (``workdir``, else where ``run`` was typed) is not a
        directory now: deleted, its filesystem unmounted, a stale NFS handle. The attempt waits
        until it is back, said once in a critical alert; it had been launched into it and failed
        the run as "cannot start '.../python': No such file or directory", restarts left unused.
        Only for a command run here: a batch job's directory is the compute node's to see."""
        if self.engine.name != "local":
            return None
        workdir = self.workdir(attempt)
        try:
            if os.path.isdir(workdir):
                return None
        except (OSError, ValueError):
            pass
        reason = f"the working directory {workdir} of the command is gone"
        if self._storage_alerted != reason:
            self._storage_alerted = reason
            self.alert("critical", "storage", f"{reason} (deleted, or its filesystem unmounted): the next attempt "
                       f"waits until it is there again (make it again, or mount it)", path=workdir)
        return reason

    def _storage_alert(self, exc: OSError) -> str:
        """One critical alert per storage problem that holds a launch back."""
        reason = f"run directory not writable ({exc.strerror or exc})"
        if self._storage_alerted != reason:
            self._storage_alerted = reason
            self.alert("critical", "storage", f"{reason}: the next attempt waits until its log can be written")
        return reason

    # ---- starting -----------------------------------------------------------------------------
    def start(self, attempt: int, log_fd: int, *, resume_from: str | None, next_env: dict[str, str]) -> LaunchedAttempt | str:
        """Start attempt ``attempt`` with output to ``log_fd``; the error in one line (also
        written to the log and as the attempt's ``attempt_start`` event) when nothing started."""
        argv = recipes.attempt_argv(self.recipe, self.placeholders(attempt), resume_from=resume_from,
                                    port=self.port_override)
        port = self.port()
        env = pyexec.recipe_command_env(os.environ if self.base_env is None else self.base_env, argv, self.env)
        if self.port_override:
            env["MASTER_PORT"] = str(self.port_override)
        env.update(next_env)
        env.update({"MOECONSOLE_RUN_ID": self.run.run_id, "MOECONSOLE_RUN_DIR": str(self.run.path),
                    "MOECONSOLE_ATTEMPT": str(attempt), "MOECONSOLE_RECIPE_HASH": self.hash,
                    "PYTHONUNBUFFERED": "1"})
        workdir = self.workdir(attempt)
        shown = self.redactor.redact_argv(argv)
        self._log(f"\n{rundir.attempt_marker_line(attempt, time.strftime('%Y-%m-%dT%H:%M:%S'), shown)}\n")
        try:
            started = self.engine.start(LaunchSpec(attempt, argv, env, workdir), log_fd)
        except OSError as exc:
            said = process_limit_said(exc)   # the waiter could not be forked: `ulimit -u` named
            return self.refuse(attempt, f"cannot start {argv[0]!r}: {exc.strerror or exc}" + (f": {said}" if said else ""),
                               resume_from=resume_from, shown=shown)
        self._storage_alerted = None
        event = {"attempt": attempt, "argv": shown, "resumed_from": resume_from,
                 "pid": started.leader_pid,  # the waiter (the attempt's root), None for a batch job
                 "command_pid": next((t["pid"] for t in started.tracked() if t.get("role") == "leader"), None),
                 "port": port, "env_overrides": next_env, "versions": package_versions(), "engine": self.engine.name}
        return LaunchedAttempt(started, resume_from, port, event)

    def refuse(self, attempt: int, msg: str, *, resume_from: str | None, shown: list[str] | None = None) -> str:
        """Attempt ``attempt`` does not start: ``msg`` in the log and as its ``attempt_start`` event's error."""
        self._log(f"moeconsole: {msg}\n")
        self.journal.event("attempt_start", attempt=attempt, argv=shown, resumed_from=resume_from, error=msg)
        return msg

    def _log(self, text: str) -> None:
        try:
            jsonio.append_bytes(self.run.log, text.encode())
        except OSError as exc:
            self.journal.failed(exc)

    # ---- recipe drift -------------------------------------------------------------------------
    def drift_check(self, checkpoints: Any, *, allowed: bool) -> tuple[str | None, dict[str, Any]]:
        """A first attempt that would resume from a checkpoint saved under another recipe hash:
        (the refusal under ``resume.drift: refuse``, else None; the state fields to set:
        ``no_resume`` under warn, ``allow_drift`` under allow)."""
        if not self.resumes:
            return None, {}
        found = checkpoints.drifted()
        if not found:
            return None, {}
        path, other = found
        mode = "allow" if allowed else self.recipe.resume.drift
        changed = self._drift_changes(path)
        self.journal.event("drift", checkpoint=str(path), checkpoint_hash=other, recipe_hash=self.hash, policy=mode,
                           changed=changed)
        if mode == "refuse":
            n = DRIFT_KEYS_SHOWN
            what = "; changed: " + ", ".join(
                f"{c['key']} {_clipped_text(c['a'])} -> {_clipped_text(c['b'])}" for c in changed[:n]) if changed else ""
            more = f" and {len(changed) - n} more" if len(changed) > n else ""
            msg = (f"recipe drift: {path} was saved by recipe {other}, this recipe is {self.hash}{what}{more}; "
                   f"refusing to resume (use --allow-drift, or resume.drift: warn to start fresh)")
            self.alert("critical", "recipe_drift", msg, checkpoint=str(path))
            return msg, {}
        if mode == "warn":
            self.alert("warning", "recipe_drift", f"recipe drift: starting fresh instead of resuming {path}")
            return None, {"no_resume": True}
        self.alert("warning", "recipe_drift", f"recipe drift allowed: resuming {path}")
        return None, {"allow_drift": True}

    def _drift_changes(self, checkpoint: Path) -> list[dict[str, Any]]:
        """The hashed recipe keys that differ from the run that saved ``checkpoint`` (named in
        its sidecar; found beside this run or above the checkpoint), secrets masked."""
        from moeconsole.runner.checkpoints.sidecar import read_sidecar
        from moeconsole.runner.rundir.rundiff import drift_keys
        saved_by = str((read_sidecar(checkpoint) or {}).get("run_id") or "")
        candidates = [self.run.path.parent / saved_by] if saved_by else []
        candidates += [p for p in checkpoint.parents if p.name == saved_by or (p / "recipe.yaml").is_file()][:1]
        ours = {"command": recipes.masked_command(self.recipe.command),
                "env": recipes.for_run_dir(self.recipe)["env"]}
        for where in candidates:
            if where.is_dir() and rundir.is_run_dir(where) and where != self.run.path:
                try:
                    return drift_keys(where, ours)
                except Exception as exc:  # naming the keys is a courtesy; the refusal stands
                    self.diag(f"cannot diff against {where}: {exc}")
        return []


def _clipped_text(v: Any, n: int = 24) -> str:
    text = "(none)" if v is None else str(v)
    return clip(text, n)
