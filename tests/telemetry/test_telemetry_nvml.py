"""The real NVML code path (runner/telemetry/nvmllib: ctypes calls into the driver library)
against the fake libnvidia-ml, through the real CLI."""
from __future__ import annotations

import ctypes.util
import json

import pytest

from tests.fakes.nvml import (DRIVER_NOT_LOADED, NOT_SUPPORTED, FakeGpu, FakeProc, build_fake_nvml, fake_env,
                              write_scenario)
from tests.telemetry.telemetry_helpers import base_env, by_pid, gpus_json, run_cli, run_flow


def _h200s(n: int = 8) -> list[FakeGpu]:
    """Eight GPUs whose every value differs, so a mixed-up index or unit shows."""
    return [FakeGpu(name="NVIDIA H200", uuid=f"GPU-{i:08x}-aaaa-bbbb-cccc-{i:012x}", util_pct=90 + i,
                    mem_util_pct=40 + i, mem_total_mib=143771, mem_base_used_mib=100 + i, temp_c=60 + i,
                    power_w=500.25 + i, power_limit_w=700, sm_clock_mhz=1980 - i, mem_clock_mhz=3201)
            for i in range(n)]


def test_eight_gpu_snapshot_reports_every_field(nvml_env, scenario, spawn):
    ranks = [spawn.popen() for _ in range(2)]
    write_scenario(scenario, _h200s(), [FakeProc(i, ranks[i % 2].pid, 1000 * (i + 1)) for i in range(8)],
                   driver="570.86.15")
    out = gpus_json(nvml_env, "--port", "0")
    gpu = out["gpu"]
    assert out["v"] == 1
    assert gpu["available"] is True and gpu["backend"] == "nvml" and gpu["reason"] is None
    assert gpu["driver"] == "570.86.15"
    assert [g["index"] for g in gpu["gpus"]] == list(range(8))
    g5 = gpu["gpus"][5]
    assert g5["name"] == "NVIDIA H200" and g5["uuid"] == "GPU-00000005-aaaa-bbbb-cccc-000000000005"
    assert g5["util_pct"] == 95 and g5["temp_c"] == 65
    assert g5["power_w"] == pytest.approx(505.25) and g5["power_limit_w"] == pytest.approx(700)
    assert g5["sm_clock_mhz"] == 1975 and g5["mem_clock_mhz"] == 3201
    assert g5["mem_total_mib"] == pytest.approx(143771)
    assert g5["mem_used_mib"] == pytest.approx(105 + 6000)   # base + the live process on it
    # no utilisation sample in the last second: 0 %, as nvitop shows an idle process
    assert g5["processes"] == [{"pid": ranks[1].pid, "used_mib": pytest.approx(6000), "sm_pct": 0.0, "mem_pct": 0.0}]
    assert g5["na"] == {}
    # Both "ranks" are strangers here (no run context): foreign GPU processes with their memory.
    r0 = by_pid(out["blockers"], ranks[0].pid)
    assert r0["labels"] == ["foreign_gpu"] and r0["blocker"] is True
    assert r0["gpus"] == [0, 2, 4, 6] and r0["gpu_mem_mib"] == pytest.approx(1000 + 3000 + 5000 + 7000)
    assert r0["user"] and r0["age_s"] >= 0 and "time.sleep" in r0["cmdline"]
    assert out["host"]["ram_total_gib"] > 0 and out["host"]["hostname"]


def test_human_table_shows_rows_like_nvidia_smi(nvml_env, scenario, spawn):
    rank = spawn.popen()
    write_scenario(scenario, _h200s(), [FakeProc(3, rank.pid, 40960)])
    done = run_cli(["gpus", "--port", "0"], nvml_env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "NVIDIA driver 550.54.15, 8 GPU(s)"
    row3 = next(line for line in lines if line.startswith("  3  "))
    assert row3.split() == ["3", "NVIDIA", "H200", "93%", "41063", "/", "143771", "63C", "503", "/", "700",
                            "1977", "/", "3201"]
    proc_row = next(line for line in lines if f" {rank.pid} " in line)
    assert proc_row.startswith("!") and "40960" in proc_row and "foreign_gpu" in proc_row
    assert any(line.startswith("Host ") for line in lines)


def test_driver_not_loaded_is_a_state_not_an_error(nvml_env, scenario):
    write_scenario(scenario, 8, init_error=DRIVER_NOT_LOADED)
    out = gpus_json(nvml_env, "--port", "0")
    assert out["gpu"]["available"] is False and out["gpu"]["backend"] == "none"
    assert out["gpu"]["reason"] == "NVIDIA driver not loaded" and out["gpu"]["gpus"] == []
    assert out["host"]["cpu_count"] >= 1  # everything else keeps working
    done = run_cli(["gpus", "--port", "0"], nvml_env)
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.splitlines()[0] == "No NVIDIA GPU: NVIDIA driver not loaded"


@pytest.mark.skipif(ctypes.util.find_library("nvidia-ml") is not None, reason="a real NVIDIA driver is installed")
def test_no_driver_library_at_all(tmp_path):
    env = base_env(LD_LIBRARY_PATH=str(tmp_path))
    out = gpus_json(env, "--port", "0")
    assert out["gpu"]["available"] is False
    assert "libnvidia-ml.so.1 not found" in out["gpu"]["reason"]
    done = run_cli(["gpus"], env)
    assert done.returncode == 0 and done.stdout.startswith("No NVIDIA GPU: ")


def test_missing_functions_become_na_field_by_field(nvml_env, scenario, spawn):
    rank = spawn.popen()
    write_scenario(scenario, 8, [FakeProc(0, rank.pid, 2048)],
                   missing=["nvmlDeviceGetPowerUsage", "nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperature"])
    out = gpus_json(nvml_env, "--port", "0")
    for g in out["gpu"]["gpus"]:
        assert g["power_w"] is None and g["temp_c"] is None
        assert g["na"]["power_w"] == "not in this driver" and g["na"]["temp_c"] == "not in this driver"
        assert g["power_limit_w"] == pytest.approx(700) and g["mem_total_mib"] == pytest.approx(143771)
    assert out["gpu"]["gpus"][0]["processes"] == [{"pid": rank.pid, "used_mib": pytest.approx(2048), "sm_pct": 0.0,
                                                   "mem_pct": 0.0}]
    table = run_cli(["gpus", "--port", "0"], nvml_env).stdout
    row0 = next(line for line in table.splitlines() if line.startswith("  0  "))
    assert "— / 700" in row0 and " — " in row0  # the one missing-value mark (moeconsole.runner.core.units.NA)


def test_per_gpu_error_only_blanks_that_gpu(nvml_env, scenario):
    gpus = _h200s()
    gpus[2].errors = {"nvmlDeviceGetUtilizationRates": NOT_SUPPORTED, "nvmlDeviceGetClockInfo": NOT_SUPPORTED}
    write_scenario(scenario, gpus)
    out = gpus_json(nvml_env, "--port", "0")
    g1, g2 = out["gpu"]["gpus"][1], out["gpu"]["gpus"][2]
    assert g2["util_pct"] is None and g2["sm_clock_mhz"] is None and g2["mem_clock_mhz"] is None
    assert g2["na"]["util_pct"] == "not supported"
    assert g2["temp_c"] == 62 and g1["util_pct"] == 91 and g1["sm_clock_mhz"] == 1979


def test_symbol_absent_from_library_falls_back_to_older_variant(tmp_path, spawn):
    """An older driver without the _v3 process query and the _v2 memory query: the backend
    uses _v2 processes and v1 memory, and stops asking for what is not there."""
    libdir = build_fake_nvml(tmp_path / "lib", omit=["nvmlDeviceGetComputeRunningProcesses_v3",
                                                     "nvmlDeviceGetMemoryInfo_v2"])
    scenario, calls = tmp_path / "sc.txt", tmp_path / "calls.log"
    rank = spawn.popen()
    write_scenario(scenario, [FakeGpu(mem_reserved_mib=300, mem_base_used_mib=0)] * 2,
                   [FakeProc(1, rank.pid, 5000)], call_log=calls)
    out = run_flow(fake_env(libdir, scenario, base_env()), "inproc", str(libdir))  # also: in-process lib_path
    assert out["available"] is True
    assert out["gpus"][1]["processes"] == [{"pid": rank.pid, "used_mib": pytest.approx(5000), "sm_pct": 0.0,
                                            "mem_pct": 0.0}]
    assert out["gpus"][1]["mem_used_mib"] == pytest.approx(5300)  # v1 counts reserved memory as used
    called = calls.read_text().split()
    assert "nvmlDeviceGetComputeRunningProcesses_v2" in called
    assert "nvmlDeviceGetComputeRunningProcesses_v3" not in called  # absent: never reached the library


def test_in_process_library_path_without_ld_library_path(fake_libdir, scenario, spawn):
    rank = spawn.popen()
    write_scenario(scenario, 2, [FakeProc(0, rank.pid, 1234)])
    env = base_env(FAKE_NVML_SCENARIO=str(scenario))
    env.pop("LD_LIBRARY_PATH", None)
    out = run_flow(env, "inproc", str(fake_libdir))
    assert out["backend"] == "nvml" and len(out["gpus"]) == 2
    assert out["gpus"][0]["processes"] == [{"pid": rank.pid, "used_mib": pytest.approx(1234), "sm_pct": 0.0,
                                            "mem_pct": 0.0}]
    # the few NVML symbols read need none of pynvml's whole binding (1.4 MiB of the console's RSS)
    assert out["modules"] == []


def test_process_list_is_read_live_and_memory_freed_when_process_exits(nvml_env, scenario, spawn):
    server = spawn.popen()
    write_scenario(scenario, 1, [FakeProc(0, server.pid, 30000)])
    first = gpus_json(nvml_env, "--port", "0")["gpu"]["gpus"][0]
    server.kill()
    server.wait()
    second = gpus_json(nvml_env, "--port", "0")["gpu"]["gpus"][0]
    assert first["processes"] == [{"pid": server.pid, "used_mib": pytest.approx(30000), "sm_pct": 0.0,
                                   "mem_pct": 0.0}]
    assert second["processes"] == [] and second["mem_used_mib"] == pytest.approx(0.5)


def test_json_is_one_object_with_schema_version(nvml_env, scenario):
    write_scenario(scenario, 1)
    done = run_cli(["gpus", "--json", "--port", "0"], nvml_env)
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1
    rec = json.loads(lines[0])
    assert set(rec) >= {"v", "host", "gpu", "blockers"}


def test_bad_port_is_one_line_exit_2(nvml_env, scenario):
    write_scenario(scenario, 1)
    done = run_cli(["gpus", "--port", "70000"], nvml_env)
    assert done.returncode == 2
    assert done.stderr.strip() == "moeconsole gpus: error: argument --port: must be a TCP port 0..65535, got 70000"


def test_each_process_has_its_own_utilisation_like_nvitop(nvml_env, scenario, spawn):
    """nvmlDeviceGetProcessUtilization: a process's SM and memory share of the last second; a
    process without a sample ran no kernel (0 %), a driver without the call gives N/A."""
    busy, idle = spawn.popen(), spawn.popen()
    write_scenario(scenario, 2, [FakeProc(0, busy.pid, 30000, sm_pct=97, mem_pct=41), FakeProc(0, idle.pid, 500),
                                 FakeProc(1, busy.pid, 100, sm_pct=3, mem_pct=1)])
    gpus = gpus_json(nvml_env, "--port", "0")["gpu"]["gpus"]
    procs = {p["pid"]: p for p in gpus[0]["processes"]}
    assert procs[busy.pid]["sm_pct"] == 97 and procs[busy.pid]["mem_pct"] == 41
    assert procs[idle.pid]["sm_pct"] == 0 and procs[idle.pid]["mem_pct"] == 0
    assert gpus[1]["processes"][0]["sm_pct"] == 3
    write_scenario(scenario, 2, [FakeProc(0, busy.pid, 30000, sm_pct=97)], missing=["nvmlDeviceGetProcessUtilization"])
    g0 = gpus_json(nvml_env, "--port", "0")["gpu"]["gpus"][0]
    assert g0["processes"][0]["sm_pct"] is None and g0["na"]["process_util"] == "not in this driver"
