"""The wheel a user installs (``pip install moeconsole`` / ``pipx``) runs its own commands and its
demo: built from this checkout, installed into a fresh venv outside it, used from a directory that
holds look-alike ``runner.py``/``runner/``/``console.py``/``moeconsole.py`` (scripts/wheel-check.sh
says each step). Needs the package index for the dependencies, as any pip install does."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO


def test_the_wheel_installs_and_runs_its_demo_outside_the_checkout(tmp_path):
    # Nothing of the checkout may leak in: no PYTHONPATH, no run markers, no runs directory.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("MOECONSOLE_")}
    proc = subprocess.run(["bash", str(REPO / "scripts" / "wheel-check.sh"), str(tmp_path / "w")],
                          capture_output=True, text=True, timeout=1500, env={**env, "PYTHON": sys.executable},
                          cwd=tmp_path)
    said = "\n".join(l for l in (proc.stdout + proc.stderr).splitlines() if not l.startswith("WARNING: Location"))
    assert proc.returncode == 0, said[-3000:]
    assert "wheel-check: ok" in said
