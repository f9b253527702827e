"""Fixtures for the console tests: run directories written file by file the way the runner
writes them, and a real control-socket server (a thread in this process) that records what
the UI sends."""
from __future__ import annotations

import math
import os
import select
import shutil
import socket
import tempfile
import threading
from pathlib import Path

import sys

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # plain `pytest` (not `python -m pytest`) does not add the repo
    sys.path.insert(0, str(REPO))

from moeconsole.runner.supervisor import control  # noqa: E402
from moeconsole.runner.rundir import jsonio, rundir

T0 = 1_700_000_000.0


@pytest.fixture
def base():
    """A short runs directory (UNIX socket paths must stay under 108 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="mcui-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def write_run(base: Path, run_id: str = "20240101-000000-demo-0001", *, name: str = "demo",
              status: str = "running", steps: int = 60, max_steps: int | None = 100, attempt: int = 2,
              restarts: int = 1, max_restarts: int = 5, runner_pid: int | None = None,
              pids: list[dict] | None = None, nan_at: int | None = None, restart_at: int | None = 30,
              checkpoints: tuple[tuple[int, bool], ...] = ((20, True), (40, False)),
              crash: dict | None = None, recipe: dict | None = None, cost_per_hour: float | None = None,
              ended: bool | None = None, mem_capacity_gib: float | None = 80.0, log_lines: int = 30,
              loss_scale: float = 1.0, mem_base: float = 60.0, step_time: float = 0.5,
              started: bool = True) -> rundir.RunDir:
    """A run directory as the runner leaves it: state.json, metrics.jsonl, events.jsonl,
    crashes/attempt-N.json, train.log, recipe.yaml. Times are fixed, so screens are stable."""
    run = rundir.RunDir(base / run_id)
    (run.path / "crashes").mkdir(parents=True, exist_ok=True)
    ended = status in rundir.TERMINAL if ended is None else ended
    end_t = T0 + steps * step_time + 10
    state = {
        "v": 1, "run_id": run_id, "name": name, "status": status, "attempt": attempt, "restarts": restarts,
        "max_restarts": max_restarts, "step": steps, "max_steps": max_steps, "started_at": T0 if started else None,
        "ended_at": end_t if (ended and started) else None, "recipe_hash": "abc123def4567890",
        "pids": pids or [], "pgid": (pids[0]["pid"] if pids else None), "mem_capacity_gib": mem_capacity_gib,
        "cost_per_hour": cost_per_hour, "port": 29500,
        "runner": {"pid": runner_pid, "host": rundir.hostname()} if runner_pid else {},
    }
    if crash:
        state["last_crash"] = {"class": crash["class"]}
    if checkpoints:     # the directory the runner watches, and the resume point it wrote (the newest ok save)
        state["checkpoint_root"] = str(run.path / "ckpt")
        good = [ck for ck, ok in checkpoints if ok and ck <= steps]
        for ck in good:     # the saves are on disk (their files are not looked at: state.json names the point)
            (run.path / f"ckpt/checkpoint-{ck}").mkdir(parents=True, exist_ok=True)
        state["resume_point"] = ({"path": str(run.path / f"ckpt/checkpoint-{max(good)}"), "step": max(good)}
                                 if good else None)
    jsonio.atomic_write_json(run.state, state)
    recipe = recipe or {"name": name, "command": ["{python}", "-m", "moeconsole.runner.demo.train", "--steps", str(max_steps)],
                        "env": {"DTYPE": "bf16"}, "kill": {"grace_s": 7.0},
                        "cooldown": {"floor_s": 2.0, "ceiling_s": 30.0}}
    run.recipe.write_text(yaml.safe_dump(recipe))
    events = [{"v": 1, "t": T0, "type": "status", "status": "running", "reason": "started"},
              {"v": 1, "t": T0 + 1, "type": "attempt_start", "attempt": 1, "argv": ["python"], "resumed_from": None}]
    lines = []
    for step in range(1, steps + 1):
        t = T0 + step * step_time
        if restart_at and step == restart_at + 1:
            events.append({"v": 1, "t": t, "type": "attempt_end", "attempt": 1, "exit_code": 1, "signal": None})
            events.append({"v": 1, "t": t, "type": "attempt_start", "attempt": 2, "argv": ["python"],
                           "resumed_from": "checkpoint-20"})
        loss = loss_scale * (2.0 * math.exp(-step / 30) + 0.5)
        if nan_at and step == nan_at:
            loss = float("nan")
        rec = {"v": 1, "t": t, "attempt": 1 if (not restart_at or step <= restart_at) else 2, "step": step,
               "max_steps": max_steps, "loss": loss, "grad_norm": 1.0 + (5.0 if step == 25 else 0.1 * (step % 3)),
               "lr": 1e-4, "mem_gib": mem_base + (step % 5), "tokens_per_s": 1000.0 + step, "step_time_s": step_time,
               "epoch": step / 100, "extra": {}, "src": "demo"}
        jsonio.append_jsonl(run.metrics, rec)
        for ck_step, ok in checkpoints:
            if step == ck_step:
                events.append({"v": 1, "t": t, "type": "checkpoint", "path": str(run.path / f"ckpt/checkpoint-{ck_step}"),
                               "step": ck_step, "verdict": "ok" if ok else "empty_stub", "ok": ok,
                               "reason": "" if ok else "empty header (39 KB)", "suspect": False,
                               "tensors": 16 if ok else 0})
                if not ok:
                    events.append({"v": 1, "t": t, "type": "alert", "level": "critical",
                                   "rule": "checkpoint_bad", "step": ck_step,
                                   "message": f"checkpoint checkpoint-{ck_step} is empty_stub: adapter_model."
                                              "safetensors holds no tensors (empty header, 39936 bytes)"})
        if log_lines and step > steps - log_lines:
            lines.append(f"step {step}/{max_steps} loss {loss:.4f}")
    if crash:
        rep = {"v": 1, "attempt": 1, "t": T0 + 20, "exit_code": 1, "signal": None, "summary": "CUDA out of memory",
               "evidence": ["torch.OutOfMemoryError: CUDA out of memory."], "recovery": "restart",
               "hint": "lower the micro-batch size, or set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", **crash}
        jsonio.atomic_write_json(run.crash_report(1), rep)
        events.append({"v": 1, "t": T0 + 20, "type": "crash", "attempt": 1, "class": rep["class"],
                       "summary": rep["summary"], "recovery": rep["recovery"]})
    for ev in events:
        jsonio.append_jsonl(run.events, ev)
    run.log.write_text("=== moeconsole: attempt 1 start\n" + "\n".join(lines) + ("\n" if lines else ""))
    return run


@pytest.fixture
def make_run():
    return write_run


class FakeRunner:
    """A real control socket served by a thread: records requests, answers ok."""

    def __init__(self, sock_path: Path, answer: dict | None = None) -> None:
        self.sock_path = sock_path
        self.answer = answer or {"ok": True, "message": "accepted"}
        self.requests: list[dict] = []
        self._stop = threading.Event()
        self._server = control.listen(sock_path)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            ready, _, _ = select.select([self._server], [], [], 0.05)
            if not ready:
                continue
            try:
                conn, _ = self._server.accept()
            except (BlockingIOError, OSError):
                continue
            conn.setblocking(True)
            req = control.read_request(conn)
            if req is not None:
                self.requests.append(req)
            control.reply(conn, {**self.answer, "cmd": (req or {}).get("cmd")})

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self._server.close()
        try:
            os.unlink(self.sock_path)
        except OSError:
            pass


@pytest.fixture
def fake_runner():
    runners: list[FakeRunner] = []

    def start(run: rundir.RunDir, answer: dict | None = None) -> FakeRunner:
        r = FakeRunner(run.sock, answer)
        runners.append(r)
        return r
    try:
        yield start
    finally:
        for r in runners:
            r.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
