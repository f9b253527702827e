"""Fixtures for the telemetry tests: the fake NVML library, a scenario file per test, and
a spawner whose processes are all ended by PID at teardown."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # plain `pytest` (not `python -m pytest`) does not add the repo
    sys.path.insert(0, str(REPO))

from tests.fakes.nvml import build_fake_nvml, fake_env  # noqa: E402
from tests.telemetry.telemetry_helpers import Spawner, base_env  # noqa: E402


@pytest.fixture(scope="session")
def fake_libdir(tmp_path_factory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the fake NVML library")
    return build_fake_nvml(tmp_path_factory.mktemp("fake-nvml"))


@pytest.fixture
def scenario(tmp_path) -> Path:
    return tmp_path / "nvml-scenario.txt"


@pytest.fixture
def nvml_env(fake_libdir, scenario) -> dict[str, str]:
    """Environment for a child that loads the fake NVML serving ``scenario``."""
    return fake_env(fake_libdir, scenario, base_env())


@pytest.fixture
def spawn():
    s = Spawner()
    try:
        yield s
    finally:
        s.end_all()
