"""Helpers to drive the shipped ms-swift recipe through the real CLI, the real runner and the
real ms-swift (installed in .venv-swift by scripts/swift-env.sh).

MOECONSOLE_SWIFT_TEST_TIMEOUT (seconds, default 240) bounds every wait: ms-swift starts in about
7 s on an idle 2-core machine, several times that when the machine is busy."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.waiting import reached, until

REPO = Path(__file__).resolve().parents[2]
SWIFT_VENV = REPO / ".venv-swift"
SWIFT_EXE = SWIFT_VENV / "bin" / "swift"
SWIFT_PYTHON = SWIFT_VENV / "bin" / "python"
RECIPE = REPO / "recipes" / "swift-tiny-cpu.yaml"
TIMEOUT = float(os.environ.get("MOECONSOLE_SWIFT_TEST_TIMEOUT", "240"))


def require_swift() -> None:
    if not (SWIFT_EXE.is_file() and SWIFT_PYTHON.is_file()):
        pytest.skip(f"ms-swift environment {SWIFT_VENV} not found: create it with scripts/swift-env.sh")


def cli(runs_dir: Path | None, *args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    """``moeconsole ARGS`` from the main environment, as a user runs it from the repo root."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    extra = ["--runs-dir", str(runs_dir)] if runs_dir is not None else []
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, *extra], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO)


def trainer_pid(run: "Run") -> int | None:
    """The run's trainer (swift/cli/sft.py, the wrapper's child): the process a preemption signals."""
    for p in run.state().get("pids") or []:
        try:
            if any(a.endswith("swift/cli/sft.py") for a in psutil.Process(p["pid"]).cmdline()):
                return int(p["pid"])
        except (psutil.Error, KeyError, TypeError):
            continue
    return None


class Run:
    """A run directory as the tests read it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.id = path.name

    def state(self) -> dict:
        try:
            return json.loads((self.path / "state.json").read_text())
        except (OSError, ValueError):
            return {}

    def events(self, type_: str | None = None) -> list[dict]:
        try:
            lines = (self.path / "events.jsonl").read_text().splitlines()
        except OSError:
            return []
        return [e for e in map(json.loads, lines) if type_ is None or e.get("type") == type_]

    def metrics(self, attempt: int | None = None) -> list[dict]:
        try:
            lines = (self.path / "metrics.jsonl").read_text().splitlines()
        except OSError:
            return []
        return [m for m in map(json.loads, lines) if attempt is None or m.get("attempt") == attempt]

    def ok_checkpoints(self) -> list[dict]:
        return [e for e in self.events("checkpoint") if e.get("ok") and e.get("verdict") == "ok"]

    def wait(self, pred, what: str, timeout: float = TIMEOUT) -> dict:
        class Over(Exception):
            """The run ended: what we wait for will not happen any more."""

        def reached() -> dict | None:
            st = self.state()
            if pred(st):
                return st
            if st.get("status") in ("failed", "paused", "killed", "succeeded"):
                raise Over
            return None
        try:
            return until(reached, timeout, what=what, interval=0.1)
        except (AssertionError, Over):
            pass
        log = (self.path / "train.log").read_bytes()[-3000:].decode(errors="replace")
        raise AssertionError(f"no {what} within {timeout:g}s; state={self.state()}\ntrain.log tail:\n{log}")


    def log(self) -> str:
        try:
            return (self.path / "train.log").read_bytes().decode(errors="replace")
        except OSError:
            return ""

    def wait_while_moving(self, pred, what: str, stall: float = TIMEOUT, cap: float = 3600.0) -> dict:
        """``wait`` for ``pred`` as long as the run keeps moving: its train.log grows or its state changes
        (steps, status, attempt) at least every ``stall`` seconds; fails at the first such stall or after
        ``cap`` seconds in all. A run that trains slowly on a loaded machine is waited for; one that is
        stuck is not."""
        import time
        deadline = time.monotonic() + cap
        seen: tuple = ()
        while True:
            try:
                return self.wait(pred, what, timeout=min(stall, max(deadline - time.monotonic(), 1.0)))
            except AssertionError:
                st = self.state()
                now = (len(self.log()), st.get("step"), st.get("status"), st.get("attempt"), st.get("rendezvous"))
                if now == seen or time.monotonic() >= deadline or st.get("status") in \
                        ("failed", "paused", "killed", "succeeded"):
                    raise
                seen = now


def start(runs_dir: Path, tiny: Path, *overrides: str) -> Run:
    """``moeconsole run recipes/swift-tiny-cpu.yaml --detach`` on the model and data in ``tiny``
    (unless ``overrides`` set them)."""
    given = {o.split("=", 1)[0] for o in overrides}
    tiny_sets = [f"args.{k}={tiny / v}" for k, v in (("model", "model"), ("dataset", "data.jsonl"))
                 if f"args.{k}" not in given]
    proc = cli(runs_dir, "run", str(RECIPE), "--detach", *(a for o in tiny_sets + list(overrides) for a in ("--set", o)))
    assert proc.returncode == 0, f"moeconsole run exited {proc.returncode}: {proc.stderr}"
    return Run(runs_dir / proc.stdout.strip().splitlines()[0])


def start_node(runs_dir: Path, tiny: Path, rank: int, port: int) -> Run:
    """Node ``rank`` of a two-node ms-swift run on loopback (``NNODES=2``, one process each, its own
    runs directory's output: no shared storage), rendezvous at ``127.0.0.1:port``, a save every 4 steps."""
    return start(runs_dir, tiny, "env.NPROC_PER_NODE=1", "env.NNODES=2", f"env.NODE_RANK={rank}",
                 "env.MASTER_ADDR=127.0.0.1", f"env.MASTER_PORT={port}", "args.use_cpu=true",
                 "args.max_steps=2000", "args.save_steps=4")


def running(pid: int, created: float) -> bool:
    """Is ``pid`` still the process that started at ``created``, and not a zombie?"""
    try:
        p = psutil.Process(pid)
        return abs(p.create_time() - created) < 0.05 and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def processes_of(runs_dir: Path) -> dict[int, float]:
    """Every live process of ours tied to ``runs_dir`` (runners by command line, training by the
    run marker in its environment)."""
    found: dict[int, float] = {}
    for p in psutil.process_iter(["uids", "cmdline"]):
        try:
            if p.pid == os.getpid() or p.info["uids"] is None or p.info["uids"].real != os.getuid():
                continue
            if str(runs_dir) in " ".join(p.info["cmdline"] or []) or \
                    p.environ().get("MOECONSOLE_RUN_DIR", "").startswith(str(runs_dir)):
                found[p.pid] = p.create_time()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return found


def end_by_pid(procs: dict[int, float]) -> None:
    """SIGTERM, then SIGKILL, each process by PID (only while its start time still matches)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid, created in procs.items():
            if running(pid, created):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        reached(lambda: not any(running(p, c) for p, c in procs.items()), timeout=5)  # else the next signal
