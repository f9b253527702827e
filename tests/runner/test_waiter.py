"""The waiter records how the command ended and ends the same way (real processes, real files)."""
from __future__ import annotations

import json
import signal
import subprocess
import sys

from moeconsole.runner.process.engines.local import waiter_argv


def _run(tmp_path, argv, timeout=60):
    record = tmp_path / "attempt-1.json"
    proc = subprocess.run(waiter_argv(record, argv), capture_output=True, text=True, timeout=timeout)
    return proc, (json.loads(record.read_text()) if record.exists() else None), record


def test_exit_code_is_recorded_and_mirrored(tmp_path):
    proc, rec, record = _run(tmp_path, [sys.executable, "-c", "import sys; print('hi'); sys.exit(3)"])
    assert proc.returncode == 3 and proc.stdout == "hi\n"
    assert rec["returncode"] == 3 and rec["signal"] is None and rec["error"] is None
    assert oct(record.stat().st_mode & 0o777) == "0o600"


def test_death_by_signal_is_recorded_and_mirrored(tmp_path):
    proc, rec, _ = _run(tmp_path, [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert proc.returncode == -signal.SIGKILL
    assert rec["returncode"] == -9 and rec["signal"] == 9


def test_a_command_that_cannot_start_says_why(tmp_path):
    proc, rec, _ = _run(tmp_path, ["/nonexistent/trainer", "--x"])
    assert proc.returncode == 127
    assert "cannot start '/nonexistent/trainer'" in rec["error"] and "cannot start" in proc.stderr


def test_the_waiter_outlives_sigterm_and_the_command_gets_its_own_session(tmp_path):
    record = tmp_path / "attempt-1.json"
    script = "import os, sys, time\nprint(os.getsid(0) == os.getpid(), flush=True)\ntime.sleep(60)\n"
    proc = subprocess.Popen(waiter_argv(record, [sys.executable, "-c", script]), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "True", "the command leads a session of its own"
        proc.send_signal(signal.SIGTERM)  # ignored by the waiter: it must live to write the record
        import psutil
        child = psutil.Process(proc.pid).children()[0]
        child.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == -signal.SIGTERM
        assert json.loads(record.read_text())["returncode"] == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
