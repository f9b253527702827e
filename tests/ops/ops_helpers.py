"""Small helpers the ops tests share: wait on a condition, read a JSON file that may not be
there yet, end a process by its PID."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable


def wait_for(pred: Callable[[], Any], timeout: float = 60.0, what: str = "condition") -> Any:
    deadline = time.time() + timeout
    while time.time() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def end(proc: subprocess.Popen) -> None:
    """SIGTERM, then SIGKILL if it does not go; always reaped."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
