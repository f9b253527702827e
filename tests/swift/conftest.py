"""Fixtures for the ms-swift recipe tests (helpers in swift_helpers.py). Tests that need ms-swift
are skipped, with the reason, when .venv-swift (scripts/swift-env.sh) is missing."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.swift.swift_helpers import REPO, SWIFT_PYTHON, TIMEOUT, end_by_pid, processes_of, require_swift


@pytest.fixture(scope="session")
def tiny(tmp_path_factory) -> Path:
    """The tiny model and dataset, built once per session by the real builder in .venv-swift."""
    require_swift()
    out = tmp_path_factory.mktemp("swift-tiny")
    proc = subprocess.run([str(SWIFT_PYTHON), "-m", "moeconsole.runner.demo.swift_tiny", "--out", str(out)],
                          capture_output=True, text=True, timeout=TIMEOUT, cwd=REPO)
    assert proc.returncode == 0, f"swift_tiny build failed: {proc.stderr[-2000:]}"
    return out


@pytest.fixture(scope="module")
def swift_runs(tmp_path_factory):
    """A runs directory shared by a module's tests; whatever is left running is ended by PID."""
    d = tmp_path_factory.mktemp("swift-runs")
    yield d
    end_by_pid(processes_of(d))
