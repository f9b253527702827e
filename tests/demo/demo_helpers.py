"""Helpers for the demo trainer's tests: launch ``python -m moeconsole.runner.demo.train`` (or torchrun) as a
real process with its output in a file, as the runner does, parse what it printed, and end every
process a test started by its PID."""
from __future__ import annotations

import ast
import os
import signal
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from tests.waiting import reached as wait_for  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
TIMEOUT_S = float(os.environ.get("DEMO_TEST_TIMEOUT", "120"))

# Environment a demo run must not inherit from whoever runs the tests.
_SCRUB = ("MOECONSOLE_ATTEMPT", "MOECONSOLE_RECIPE_HASH", "WORLD_SIZE", "RANK", "LOCAL_RANK",
          "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_log(path: Path) -> str:
    """The file's text with its carriage returns intact (read_text would turn them into newlines)."""
    return path.read_bytes().decode("utf-8", errors="replace")


def dict_lines(text: str) -> list[dict]:
    """Every Python-repr dict the trainer printed (the part of a line after its last '\\r')."""
    out = []
    for line in text.split("\n"):
        tail = line.rsplit("\r", 1)[-1].strip()
        if tail.startswith("{") and tail.endswith("}"):
            out.append(ast.literal_eval(tail))
    return out


@dataclass
class Finished:
    returncode: int
    log: str
    output_dir: Path

    @property
    def steps(self) -> list[dict]:
        """The per-step dict lines, in order."""
        return [d for d in dict_lines(self.log) if "global_step/max_steps" in d]

    def step_numbers(self) -> list[int]:
        return [int(d["global_step/max_steps"].split("/")[0]) for d in self.steps]

    def last_line(self) -> str:
        lines = [ln.rsplit("\r", 1)[-1] for ln in self.log.split("\n")]
        return [ln for ln in lines if ln.strip()][-1]


class DemoLauncher:
    """Starts demo processes in a temp dir and guarantees they are gone afterwards."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[subprocess.Popen] = []
        self.count = 0

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
        env["PYTHONPATH"] = str(REPO)
        env.update(extra or {})
        return env

    def start(self, *args: str, env: dict[str, str] | None = None, nproc: int = 0,
              output_dir: Path | None = None) -> tuple[subprocess.Popen, Path, Path]:
        """Start the trainer (under torchrun when ``nproc``); stdout and stderr go to one log file."""
        self.count += 1
        output_dir = output_dir or self.workdir / f"out{self.count}"
        log_path = self.workdir / f"run{self.count}.log"
        cmd = [PYTHON]
        if nproc:
            cmd += ["-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
                    "--master_port", str(free_port())]
        cmd += ["-m", "moeconsole.runner.demo.train", "--output_dir", str(output_dir), *args]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(cmd, cwd=self.workdir, env=self.env(env), stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.procs.append(proc)
        return proc, log_path, output_dir

    def run(self, *args: str, env: dict[str, str] | None = None, nproc: int = 0,
            output_dir: Path | None = None, timeout: float = TIMEOUT_S) -> Finished:
        proc, log_path, out = self.start(*args, env=env, nproc=nproc, output_dir=output_dir)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.end(proc)
            pytest.fail(f"demo run did not finish in {timeout}s: {read_log(log_path)[-2000:]}")
        return Finished(proc.returncode, read_log(log_path), out)

    def end(self, proc: subprocess.Popen) -> None:
        """SIGKILL a process we started and every descendant of it, each by its PID."""
        if proc.poll() is not None:
            return
        try:
            family = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            family = []
        for pid in [proc.pid] + [p.pid for p in family]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        proc.wait(timeout=10)
        psutil.wait_procs(family, timeout=10)

    def close(self) -> None:
        for proc in self.procs:
            self.end(proc)


