"""Fixtures for the demo trainer's tests: a launcher whose processes are all ended by PID."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # `.venv/bin/pytest` (unlike `python -m pytest`) does not add the repo
    sys.path.insert(0, str(REPO))

from tests.demo.demo_helpers import DemoLauncher  # noqa: E402


@pytest.fixture
def demo(tmp_path):
    launcher = DemoLauncher(tmp_path)
    try:
        yield launcher
    finally:
        launcher.close()


@pytest.fixture(scope="module")
def module_demo(tmp_path_factory):
    launcher = DemoLauncher(tmp_path_factory.mktemp("demo"))
    try:
        yield launcher
    finally:
        launcher.close()
