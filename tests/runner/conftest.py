"""A harness for driving the real CLI, the real runner and the real demo trainer."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Callable, Iterator

import pytest
import yaml

from tests.conftest import tmpfs
from tests.waiting import until

REPO = Path(__file__).resolve().parents[2]


# A recipe that saves nothing and never resumes: judged without checkpoints.
NO_SAVES = {"checkpoints": {"dir": None}, "resume": {"arg": None}}


# Takes every byte the filesystem frees, as long as it runs (a checkpoint writer filling the disk).
FILLER = textwrap.dedent("""
    import os, sys, time
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    open(sys.argv[2], "w").close()
    chunk = 4096
    while True:
        try:
            os.write(fd, b"\\0" * chunk)
            chunk = 4096
        except OSError:
            chunk = max(1, chunk // 2)
            if chunk == 1:
                time.sleep(0.002)
""")


@pytest.fixture
def small_runs_disk(runs_dir):
    with tmpfs(runs_dir, "size=2m,mode=0700", end_runs=True):
        yield runs_dir


def preallocate(path) -> None:
    """Room kept for ``path`` to grow into on a disk that will be full (``fallocate -n``: the
    file's size stays, its next pages are already the file's): the training's log lines still
    go in while every other write is refused."""
    done = subprocess.run(["fallocate", "-n", "-l", "262144", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot preallocate on this tmpfs: {done.stderr.strip()}")


def ticker(steps: int, delay: float) -> list[str]:
    """A command printing ms-swift-shaped steps 1..steps, ``delay`` seconds apart."""
    return ["{python}", "-c", (
        "import time\n"
        f"for i in range(1, {steps + 1}):\n"
        f"    print(\"{{'loss': '1.0', 'global_step/max_steps': '%d/{steps}'}}\" % i, flush=True)\n"
        f"    time.sleep({delay})\n")]


def phased_steps(first: int, burst: int, last: int) -> str:
    """A training script printing JSON steps ``first``..``burst - 1``, then (once the file
    ``argv[1]`` exists) ``burst``..``last`` in one burst, then waiting for the file ``argv[2]``."""
    return (
        "import os, sys, time\n"
        "def wait(path):\n"
        "    while not os.path.exists(path):\n"
        "        time.sleep(0.05)\n"
        f"for i in range({first}, {burst}):\n"
        "    print('{\"step\": %d, \"loss\": %r}' % (i, 1.0 / (i + 1)), flush=True)\n"
        "wait(sys.argv[1])\n"
        f"for i in range({burst}, {last + 1}):\n"
        "    print('{\"step\": %d, \"loss\": %r}' % (i, 1.0 / (i + 1)), flush=True)\n"
        "wait(sys.argv[2])\n")


def base_recipe(**over) -> dict:
    """The demo recipe with every wait shrunk so a crash-and-restart takes about a second."""
    r = {
        "name": "t",
        "command": ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
                    "--max_steps", "12", "--save_steps", "4", "--step_delay", "0.0"],
        "env": {"OMP_NUM_THREADS": "1"},
        "restart": {"max_restarts": 5, "backoff_initial_s": 0.1, "backoff_max_s": 0.5,
                    "max_crashes_per_window": 60, "crash_window_s": 3600},
        "cooldown": {"floor_s": 0.0, "ceiling_s": 5.0, "poll_s": 0.05},
        "kill": {"grace_s": 3},
        "heartbeat": {"timeout_s": 60},
        "checkpoints": {"dir": "{run_dir}/output", "settle_s": 0.2},
        "resume": {"arg": "--resume_from_checkpoint"},
    }
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(r.get(k), dict):
            r[k] = {**r[k], **v}
        else:
            r[k] = v
    return r


class Harness:
    def __init__(self, tmp: Path, runs_dir: Path) -> None:
        self.tmp = tmp
        self.runs_dir = runs_dir
        self._n = 0

    def recipe(self, **over) -> Path:
        self._n += 1
        path = self.tmp / f"recipe{self._n}.yaml"
        path.write_text(yaml.safe_dump(base_recipe(**over)))
        return path

    def cli(self, *args: str, timeout: float = 120, check: bool = False) -> subprocess.CompletedProcess:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        env.pop("MOECONSOLE_RUNS_DIR", None)
        proc = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(self.runs_dir)]
                              if args and args[0] not in ("parse", "lint", "doctor") else
                              [sys.executable, "-m", "moeconsole.console.cli", *args],
                              capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
        if check and proc.returncode != 0:
            raise AssertionError(f"moeconsole {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
        return proc

    def start(self, recipe: Path, *extra: str, refused: bool = False) -> "Run":
        """``run --detach``; exit 0 when the run started, 1 (with the reason) when it was refused.

        A run that started and was already over when ``run`` looked (a fast failure, an unsaved
        finish on a busy machine) also exits 1, naming how it ended: that is a start, not a refusal."""
        proc = self.cli("run", str(recipe), "--detach", *extra)
        ended_fast = (proc.returncode == 1 and not refused and proc.stdout.strip()
                      and (" ended " in proc.stderr or "finished but is UNSAVED" in proc.stderr))
        if not ended_fast and (proc.returncode != (1 if refused else 0) or not proc.stdout.strip()):
            raise AssertionError(f"moeconsole run exited {proc.returncode} (expected {int(refused)}): {proc.stderr}")
        run = Run(self.runs_dir / proc.stdout.strip().splitlines()[0])
        run.start_stderr = proc.stderr
        return run

    def start_node(self, command: list[str], port: int) -> "Run":
        """One node of a torchrun world on loopback under its own runner (``command`` names its
        ``--node_rank``; ``port`` the master port its pre-flight knows): torchrun's elastic agent
        ends fast on a lost peer, the heartbeat is long for two busy cores, cooldowns are short."""
        return self.start(self.recipe(command=command, env={"OMP_NUM_THREADS": "1", "TORCH_ELASTIC_SHUTDOWN_TIMEOUT": "3"},
                                      preflight={"port": port}, heartbeat={"timeout_s": 300},
                                      cooldown={"floor_s": 0, "ceiling_s": 1.0}))

    @contextlib.contextmanager
    def torchrun_world(self, command_of: "Callable[[int], list[str]]", port: int) -> "Iterator[list[Run]]":
        """Two torchrun nodes on loopback, each under its own runner (``command_of(rank)``): node 1
        starts once node 0's torchrun holds the master port; both runs are killed at the end."""
        from moeconsole.runner.telemetry.preflight import port_free
        nodes = [self.start_node(command_of(0), port)]
        try:
            until(lambda: not port_free(port), timeout=120, what="node 0's torchrun holding the master port")
            nodes.append(self.start_node(command_of(1), port))
            yield nodes
        finally:
            for run in nodes:
                self.cli("kill", run.id)


class Run:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.id = path.name
        self.start_stderr = ""

    def state(self) -> dict:
        try:
            return json.loads((self.path / "state.json").read_text())
        except (OSError, ValueError):
            return {}

    def events(self, type_: str | None = None) -> list[dict]:
        out = []
        try:
            lines = (self.path / "events.jsonl").read_text().splitlines()
        except OSError:
            return out
        for line in lines:
            ev = json.loads(line)
            if type_ is None or ev.get("type") == type_:
                out.append(ev)
        return out

    def metrics(self) -> list[dict]:
        try:
            return [json.loads(l) for l in (self.path / "metrics.jsonl").read_text().splitlines()]
        except OSError:
            return []

    def crash(self, attempt: int) -> dict:
        return json.loads((self.path / "crashes" / f"attempt-{attempt}.json").read_text())

    def wait(self, pred, timeout: float = 60, what: str = "condition") -> dict:
        def reached() -> dict | None:
            st = self.state()
            return st if pred(st) else None
        try:
            return until(reached, timeout, what=what)
        except AssertionError:
            pass
        raise AssertionError(f"timed out waiting for {what}; state={self.state()}\n"
                             f"runner.log: {(self.path / 'runner.log').read_text()[-2000:]}")

    def wait_status(self, *statuses: str, timeout: float = 60) -> dict:
        return self.wait(lambda s: s.get("status") in statuses, timeout, f"status in {statuses}")


def port_holder(tmp_path: Path) -> tuple[subprocess.Popen, int]:
    """A process listening on a free port for 5 minutes (the test kills it): a port that stays
    busy past any cooldown ceiling."""
    ready = tmp_path / "port"
    holder = subprocess.Popen([sys.executable, "-c", (
        "import socket, sys, time\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
        f"open({str(ready)!r}, 'w').write(str(s.getsockname()[1]))\n"
        "time.sleep(300)\n")])
    until(lambda: ready.exists() and ready.read_text(), timeout=20, what="the port holder's port")
    return holder, int(ready.read_text())


@pytest.fixture
def harness(tmp_path, runs_dir):
    return Harness(tmp_path, runs_dir)
