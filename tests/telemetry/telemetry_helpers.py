"""Helpers for the telemetry tests: the real CLI in a subprocess, scripted flows in a fresh
interpreter, and real processes that play zombies (each ended by PID + start time)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.waiting import reached

REPO = Path(__file__).resolve().parents[2]
PY = sys.executable
FLOWS = Path(__file__).with_name("telemetry_flows.py")
CLI_TIMEOUT_S = float(os.environ.get("MOECONSOLE_TEST_CLI_TIMEOUT", "60"))
SLEEP = "import time\nwhile True: time.sleep(60)"
LISTEN = ("import socket, time\n"
          "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
          "print(s.getsockname()[1], flush=True)\n"
          "while True: time.sleep(60)\n")


def base_env(**extra: str) -> dict[str, str]:
    """Our environment without run markers or a scenario, with the repo importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [env.get("PYTHONPATH")] if p])
    for k in ("MOECONSOLE_RUN_ID", "MOECONSOLE_RUN_DIR", "FAKE_NVML_SCENARIO"):
        env.pop(k, None)
    env.update(extra)
    return env


def run_cli(args: list[str], env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([PY, "-m", "moeconsole.console.cli", *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=CLI_TIMEOUT_S, input=stdin)


def gpus_json(env: dict[str, str], *extra: str) -> dict:
    done = run_cli(["gpus", "--json", *extra], env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)


def run_flow(env: dict[str, str], *args: str) -> dict:
    """Run a step of ``telemetry_flows.py`` in a fresh interpreter; its last stdout line is JSON."""
    done = subprocess.run([PY, str(FLOWS), *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=CLI_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def by_pid(blockers: list[dict], pid: int) -> dict | None:
    return next((b for b in blockers if b["pid"] == pid), None)


def alive(pid: int, created: float | None = None) -> bool:
    try:
        p = psutil.Process(pid)
        if created is not None and abs(p.create_time() - created) >= 0.05:
            return False
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class Spawner:
    """Starts real processes and guarantees each is gone at teardown (by PID + start time)."""

    def __init__(self) -> None:
        self.started: dict[int, float] = {}
        self.popens: list[subprocess.Popen] = []

    def track(self, pid: int) -> psutil.Process:
        p = psutil.Process(pid)
        self.started[pid] = p.create_time()
        return p

    def popen(self, code: str = SLEEP, *, env: dict[str, str] | None = None, ready: bool = False,
              user: int | None = None, argv: list[str] | None = None) -> subprocess.Popen:
        """A child running ``code``; with ``ready`` wait for its first stdout line (in ``.ready_line``)."""
        p = subprocess.Popen(argv or [PY, "-c", code], env=env or base_env(), cwd="/", text=True, user=user,
                             stdout=subprocess.PIPE if ready else subprocess.DEVNULL)
        self.popens.append(p)
        self.track(p.pid)
        if ready:
            p.ready_line = p.stdout.readline().strip()  # type: ignore[attr-defined]
        return p

    def orphan(self, env: dict[str, str] | None = None) -> psutil.Process:
        """A sleeper whose parent has already exited (a leftover of an earlier attempt)."""
        code = ("import subprocess, sys\n"
                f"p = subprocess.Popen([sys.executable, '-c', {SLEEP!r}], start_new_session=True,"
                " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
                "print(p.pid, flush=True)\n")
        done = subprocess.run([PY, "-c", code], env=env or base_env(), capture_output=True, text=True,
                              timeout=CLI_TIMEOUT_S)
        return self.track(int(done.stdout.strip()))

    def end_all(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid, created in self.started.items():
                try:
                    p = psutil.Process(pid)
                    if abs(p.create_time() - created) < 0.05:
                        p.send_signal(sig)
                except psutil.NoSuchProcess:
                    pass
            # each signal its time to act, then the next one
            reached(lambda: not any(alive(pid, c) for pid, c in self.started.items()), timeout=5)
        for p in self.popens:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            if p.stdout:
                p.stdout.close()
