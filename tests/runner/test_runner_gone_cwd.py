"""`moeconsole run` from a directory deleted under the shell (the output dir someone cleaned
while you stood in it): one line that says so, exit 2, nothing made under the runs directory.
It had said "cannot create a run directory under BASE: No such file or directory", blaming a
runs directory that was fine. Real processes: a shell that enters the directory and removes it."""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_run_from_a_deleted_working_directory_says_so_and_makes_nothing(tmp_path):
    base = tmp_path / "runs"
    base.mkdir(mode=0o700)
    gone = tmp_path / "gone"
    gone.mkdir()
    cli = " ".join(shlex.quote(a) for a in [sys.executable, "-m", "moeconsole.console.cli", "run",
                                            str(REPO / "recipes" / "tiny-moe-cpu.yaml"), "--detach",
                                            "--runs-dir", str(base)])
    done = subprocess.run(["sh", "-c", f"cd {shlex.quote(str(gone))} && rmdir {shlex.quote(str(gone))} && exec {cli}"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "the current directory no longer exists" in done.stderr, done.stderr
    assert "cannot create a run directory" not in done.stderr, done.stderr
    assert [p.name for p in base.iterdir() if p.name != "index.sqlite"] == []
