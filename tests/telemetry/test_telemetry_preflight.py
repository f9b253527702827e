"""Pre-flight and the launch policies (wait / kill / refuse) with real processes."""
from __future__ import annotations

import pytest

from moeconsole.runner.telemetry.gpu import NoGpuBackend
from moeconsole.runner.telemetry.preflight import preflight
from tests.fakes.nvml import FakeProc, write_scenario
from tests.telemetry.telemetry_helpers import LISTEN, alive, run_flow


def test_refuse_names_each_problem_and_touches_nothing(nvml_env, scenario, spawn):
    server = spawn.popen()
    write_scenario(scenario, 8, [FakeProc(0, server.pid, 20480)])
    res = run_flow(nvml_env, "launch", "--policy", "refuse", "--devices", "0,1", "--run-id", "r1")
    assert res["ok"] is False and res["killed"] == []
    assert res["message"].startswith("refusing to launch: ")
    problems = res["final"]["problems"]
    assert "GPU 0: 20480 MiB used, above the 1024 MiB tolerance" in problems
    assert any(p.startswith(f"foreign GPU process: PID {server.pid} (") for p in problems)
    assert res["final"]["gpu_waiting"] is True and res["final"]["port_waiting"] is False
    assert alive(server.pid)


def test_stranger_on_a_gpu_the_recipe_does_not_use_is_no_blocker(nvml_env, scenario, spawn):
    server = spawn.popen()
    write_scenario(scenario, 8, [FakeProc(5, server.pid, 60000)])
    res = run_flow(nvml_env, "launch", "--policy", "refuse", "--devices", "0,1,2,3", "--run-id", "r1")
    assert res["ok"] is True and res["message"] == "clear"


def test_kill_policy_clears_the_gpu_then_launch_is_clear(nvml_env, scenario, spawn):
    server = spawn.popen()
    write_scenario(scenario, 8, [FakeProc(0, server.pid, 20480), FakeProc(1, server.pid, 20480)])
    res = run_flow(nvml_env, "launch", "--policy", "kill", "--devices", "0,1", "--run-id", "r1")
    assert res["ok"] is True, res["message"]
    assert [(k["pid"], k["action"]) for k in res["killed"]] == [(server.pid, "terminated")]
    assert server.wait(timeout=10) is not None


def test_wait_policy_gives_up_at_the_ceiling_with_the_reason(nvml_env, scenario, spawn):
    server = spawn.popen()
    write_scenario(scenario, 2, [FakeProc(1, server.pid, 8000)])
    res = run_flow(nvml_env, "launch", "--policy", "wait", "--devices", "1", "--timeout", "0.5")
    assert res["ok"] is False and res["message"].startswith("still not clear after 0.5 s: ")
    assert alive(server.pid)


def test_wait_policy_ends_when_the_stranger_leaves(nvml_env, scenario, spawn):
    brief = spawn.popen("import time; time.sleep(1.0)")
    write_scenario(scenario, 2, [FakeProc(0, brief.pid, 8000)])
    res = run_flow(nvml_env, "launch", "--policy", "wait", "--devices", "0", "--timeout", "30")
    assert res["ok"] is True and res["killed"] == []
    assert res["waited_s"] > 0


def test_port_holder_blocks_with_port_waiting(nvml_env, scenario, spawn):
    holder = spawn.popen(LISTEN, ready=True)
    port = holder.ready_line
    write_scenario(scenario, 1)
    res = run_flow(nvml_env, "launch", "--policy", "refuse", "--port", port, "--run-id", "r1")
    assert res["ok"] is False and res["final"]["port_waiting"] is True
    assert any(p.startswith(f"holds port {port}: PID {holder.pid} ") for p in res["final"]["problems"])
    res = run_flow(nvml_env, "launch", "--policy", "kill", "--port", port, "--run-id", "r1")
    assert res["ok"] is True and res["killed"][0]["pid"] == holder.pid


def test_recipe_wanting_gpus_on_a_node_without_driver():
    res = preflight(NoGpuBackend("NVIDIA driver not loaded"), devices=[0, 1], tolerance_mib=1024, port=None,
                    run_id=None)
    assert res.ok is False
    assert res.problems == ["no NVIDIA GPU on this machine for the recipe's GPU 0,1: NVIDIA driver not loaded"]


def test_cpu_recipe_without_driver_is_clear():
    res = preflight(NoGpuBackend("NVIDIA driver not loaded"), devices=None, tolerance_mib=1024, port=None,
                    run_id="cpu-run")
    assert res.ok is True and res.summary() == "clear"


def test_unknown_policy_is_rejected():
    from moeconsole.runner.telemetry.preflight import clear_for_launch
    with pytest.raises(ValueError, match="unknown pre-flight policy"):
        clear_for_launch(None, policy="hope", devices=None, tolerance_mib=1, port=None, run_id=None)
