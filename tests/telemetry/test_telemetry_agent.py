"""``moeconsole agent``: a real subprocess writing telemetry into a real run directory."""
from __future__ import annotations

import json
import signal
import socket
import subprocess

import pytest

from moeconsole.runner.rundir import rundir
from tests.fakes.nvml import FakeGpu, write_scenario
from tests.telemetry.telemetry_helpers import PY, REPO, base_env, run_cli
from tests.waiting import until

WAIT_S = 30.0


def _wait_for(pred, what: str, timeout: float = WAIT_S):
    return until(pred, timeout, what=what)


def _read(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


@pytest.fixture
def live_run(tmp_path):
    base = tmp_path / "runs"
    run = rundir.create(base, "agent-test")
    run.write_state({"status": rundir.RUNNING})
    return base, run


def _start_agent(env, base, run, interval="0.1"):
    return subprocess.Popen([PY, "-m", "moeconsole.console.cli", "agent", run.run_id, "--interval", interval,
                             "--runs-dir", str(base)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_agent_writes_live_values_and_stops_when_run_ends(nvml_env, scenario, live_run):
    base, run = live_run
    write_scenario(scenario, [FakeGpu(util_pct=10)] * 8)
    agent = _start_agent(nvml_env, base, run)
    try:
        out = run.telemetry / f"{socket.gethostname()}.json"
        rec = _wait_for(lambda: _read(out), "the first telemetry file")
        assert rec["v"] == 1 and rec["t"] > 0 and rec["host"]["hostname"] == socket.gethostname()
        assert rec["gpu"]["available"] is True and len(rec["gpu"]["gpus"]) == 8
        assert rec["gpu"]["gpus"][0]["util_pct"] == 10
        write_scenario(scenario, [FakeGpu(util_pct=77)] * 8)  # the driver's picture changes
        _wait_for(lambda: (_read(out) or {}).get("gpu", {}).get("gpus", [{}])[0].get("util_pct") == 77,
                  "the new utilisation in the file")
        run.write_state({"status": rundir.SUCCEEDED})
        assert agent.wait(timeout=WAIT_S) == 0
        assert agent.stderr.read() == ""
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        agent.stdout.close()
        agent.stderr.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_agent_exits_0_on_signal(sig, live_run):
    base, run = live_run
    agent = _start_agent(base_env(), base, run, interval="5")
    try:
        out = run.telemetry / f"{socket.gethostname()}.json"
        rec = _wait_for(lambda: _read(out), "the first telemetry file")
        assert rec["gpu"]["available"] is False and rec["gpu"]["reason"]  # no GPU here: still written
        agent.send_signal(sig)
        assert agent.wait(timeout=WAIT_S) == 0
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        agent.stdout.close()
        agent.stderr.close()


def test_agent_unknown_run_is_one_line_exit_2(tmp_path):
    (tmp_path / "runs").mkdir()
    done = run_cli(["agent", "nope", "--runs-dir", str(tmp_path / "runs")], base_env())
    assert done.returncode == 2
    assert done.stderr.strip().startswith("moeconsole: no run matches 'nope'")
    assert len(done.stderr.strip().splitlines()) == 1


def test_agent_bad_interval(live_run):
    base, run = live_run
    done = run_cli(["agent", run.run_id, "--interval", "0", "--runs-dir", str(base)], base_env())
    assert done.returncode == 2
    assert done.stderr.strip() == ("moeconsole agent: error: argument --interval: must be a finite number of "
                                   "seconds >= 0.05 and <= 86400 (1 day), got 0.0")
