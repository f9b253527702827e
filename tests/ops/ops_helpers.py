"""Small helpers the ops tests share: wait on a condition, read a JSON file that may not be
there yet, end a process by its PID."""
from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any
from tests.waiting import until as wait_for  # noqa: F401  (the ops tests' name for it)


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
