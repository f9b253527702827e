"""Memory under the real runner: a trainer double (tests/fakes/memtrain.py) prints ms-swift's and
Megatron's memory lines, shows its memory to the fake NVML and runs out of CUDA memory; what the
user sees is checked in state.json / ``--json``, events.jsonl, the crash reports and the receipt."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runner.conftest import Harness, Run

REPO = Path(__file__).resolve().parents[2]
FAKE = REPO / "tests" / "fakes" / "memtrain.py"
MIB = 1 / 1024


def recipe(env: dict[str, str], **over) -> dict:
    r = dict(command=["{python}", str(FAKE)],
             env={"OMP_NUM_THREADS": "1", "FAKE_STEP_S": "0.01", **env},
             checkpoints={"dir": None}, resume={"arg": None},
             gpus={"memory_capacity_gib": 80.0},
             memory={"transients": {"fla_gdn_bwd": "266MiB"}})
    r.update(over)
    return r


@pytest.fixture
def harness(tmp_path, runs_dir):
    return Harness(tmp_path, runs_dir)


def alerts(run: Run, rule: str) -> list[dict]:
    return [e for e in run.events("alert") if e.get("rule") == rule]


def snapshot(h: Harness, run: Run) -> dict:
    proc = h.cli("--json", run.id, "--once")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_leak_is_forecast_once_explained_after_the_oom_and_paused_when_it_repeats(harness):
    """Allocated grows 40 MiB/step from 60 GiB (+1 GiB cache): reserved passes 80 GiB at step 487 (the last logged one is 486)
    ; with the declared 266 MiB transient the forecast aims at capacity - 0.26 GiB."""
    env = {"FAKE_MEM_STEPS": "800", "FAKE_MEM_BASE_GIB": "60", "FAKE_MEM_CACHE_GIB": "1",
           "FAKE_MEM_LEAK_MIB": "40", "FAKE_MEM_CAPACITY_GIB": "80"}
    run = harness.start(harness.recipe(**recipe(env, restart={"max_restarts": 5, "backoff_initial_s": 0.1,
                                                               "backoff_max_s": 0.2, "max_crashes_per_window": 60})))
    st = run.wait_status("paused", "failed", "succeeded", timeout=240)
    assert st["status"] == "paused", st
    assert st["pause_reason"].startswith("paused: a memory leak ran out of CUDA memory at step 486 (attempt 2) "
                                         "and at step 486 (attempt 1)")
    assert st["attempt"] == 2

    fc = [e for e in alerts(run, "mem_forecast") if e["attempt"] == 1]
    opened = [e for e in fc if e["update"] == 0]
    assert len(opened) == 1, fc                           # one alert per cause ...
    assert all(e["opened_step"] == opened[0]["opened_step"] for e in fc)   # ... whose later events update it
    truth = (80.0 - 266 * MIB - 61.0) / (40 * MIB)        # reserved + transient reaches capacity
    assert abs(opened[0]["values"]["oom_at_step"] - truth) <= 0.1 * truth, (opened[0], truth)
    ahead = [e["values"] for e in fc if e["values"]["oom_in_steps"]]      # before the forecast step passed
    assert abs(ahead[-1]["oom_at_step"] - truth) <= 0.02 * truth, (ahead[-1], truth)
    assert opened[0]["message"].startswith("OOM in ~")

    report = run.crash(1)
    assert report["class"] == "cuda_oom"
    mem = report["memory"]
    assert mem["verdict"] == "leak" and mem["restart"] == "fails_again"
    assert "40.0 MiB/step" in mem["summary"]
    assert mem["failed_allocation"]["gpu"] == 0 and mem["failed_allocation"]["allocated_gib"] == pytest.approx(60 + 487 * 40 / 1024, abs=0.005)
    assert mem["history"] and mem["history"][-1]["step"] == 486
    crash_ev = run.events("crash")[0]
    assert crash_ev["memory_verdict"] == "leak"


def test_flat_envelope_with_rare_spikes_no_alert_and_stable(harness, tmp_path):
    """266 MiB spikes every 37 steps on a flat 70 GiB: ms-swift's running peak steps up once.
    With the model's config.json the envelope also says what activations + workspace take."""
    from moeconsole.runner.recipes import memory_estimate as me
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "qwen3_moe", "hidden_size": 4096, "num_hidden_layers": 48,
                                  "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
                                  "vocab_size": 151936, "num_experts": 128, "num_experts_per_tok": 8,
                                  "moe_intermediate_size": 768}))
    static = me.estimate_memory(me.load_config(config), {}, None, megatron=False).per_gpu_gib
    env = {"FAKE_MEM_STEPS": "400", "FAKE_MEM_BASE_GIB": "70", "FAKE_MEM_SPIKE_EVERY": "37",
           "FAKE_MEM_SPIKE_MIB": "266"}
    run = harness.start(harness.recipe(**recipe(env, memory={"transients": {"fla_gdn_bwd": "266MiB"},
                                                              "model_config": str(config)})))
    st = run.wait_status("succeeded", "failed", "paused", timeout=240)
    assert st["status"] == "succeeded", st
    assert alerts(run, "mem_forecast") == [] and alerts(run, "mem_headroom") == []
    (g,) = st["memory"]["gpus"]
    assert g["trend"]["state"] == "stable"
    assert g["device_peak_gib"] == pytest.approx(71.26, abs=0.01)    # 70 + 1 cache + the spike, kept by the peak
    assert g["effective_headroom_gib"] == pytest.approx(80.0 - 71.26 - 266 * MIB, abs=0.01)
    assert g["capacity_source"] == "recipe" and g["ok"] is True
    assert st["memory"]["static"]["per_gpu_gib"] == pytest.approx(static)
    assert g["activations_workspace_gib"] == pytest.approx(g["steady_peak_gib"] - static)


def test_a_transient_oom_restarts_and_a_step_change_after_it_is_no_leak(harness):
    """Attempt 1 is flat and runs out of memory on a 266 MiB allocation (the declared transient);
    attempt 2 runs 4 GiB higher (a step change after the restart) and finishes."""
    env = {"FAKE_MEM_STEPS": "300", "FAKE_MEM_BASE_GIB": "70", "FAKE_MEM_CACHE_GIB": "0.2",
           "FAKE_MEM_OOM_AT": "150@1", "FAKE_MEM_ATTEMPT_GIB": "2:4"}
    run = harness.start(harness.recipe(**recipe(env, restart={"max_restarts": 3, "backoff_initial_s": 0.1,
                                                               "backoff_max_s": 0.2})))
    st = run.wait_status("succeeded", "failed", "paused", timeout=240)
    assert st["status"] == "succeeded" and st["attempt"] == 2, st
    mem = run.crash(1)["memory"]
    assert mem["verdict"] == "transient" and mem["restart"] == "helps"
    assert "about the declared transient fla_gdn_bwd, 266 MiB" in mem["summary"]
    assert alerts(run, "mem_forecast") == []
    (g,) = st["memory"]["gpus"]
    assert g["device_peak_gib"] == pytest.approx(74.2, abs=0.01) and g["trend"]["state"] == "stable"


@pytest.fixture(scope="module")
def fake_libdir(tmp_path_factory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the fake NVML library")
    from tests.fakes.nvml import build_fake_nvml
    return build_fake_nvml(tmp_path_factory.mktemp("fake-nvml"))


def test_per_gpu_envelope_from_nvml_and_megatron_reports_then_fragmentation(harness, fake_libdir, tmp_path,
                                                                            monkeypatch):
    """Two GPUs behind the fake NVML (capacity from NVML, 79 GiB, not the recipe's 80), Megatron's
    per-rank report with 3 GiB reserved but unallocated; the OOM's verdict is fragmentation, with
    the allocator setting under the name this torch reads."""
    from tests.fakes.nvml import FakeGpu, fake_env, write_scenario
    scenario = write_scenario(tmp_path / "nvml.txt", [FakeGpu(mem_total_mib=79 * 1024) for _ in range(2)])
    for k, v in fake_env(fake_libdir, scenario, {}).items():
        monkeypatch.setenv(k, v)
    env = {"FAKE_MEM_STEPS": "400", "FAKE_MEM_BASE_GIB": "60", "FAKE_MEM_CACHE_GIB": "3",
           "FAKE_MEM_CAPACITY_GIB": "79", "FAKE_MEM_NVML": "1", "FAKE_MEM_REPORT": "1", "FAKE_MEM_GPUS": "2",
           "FAKE_MEM_OOM_AT": "300", "FAKE_STEP_S": "0.03"}
    run = harness.start(harness.recipe(**recipe(env, restart={"max_restarts": 0}, gpus={"memory_capacity_gib": 80.0,
                                                                                      "devices": [0, 1]})))
    seen = run.wait(lambda s: any(g.get("gpu") == 1 and g.get("used_gib") for g in (s.get("memory") or {})
                                  .get("gpus") or []), timeout=120, what="NVML readings of GPU 1")
    gpus = {g["gpu"]: g for g in seen["memory"]["gpus"]}
    assert gpus[1]["capacity_gib"] == 79.0 and gpus[1]["capacity_source"] == "nvml"
    assert "nvml" in gpus[1]["sources"]
    doc = snapshot(harness, run)
    assert doc["run"]["memory"]["gpus"], doc["run"]
    st = run.wait_status("failed", "paused", "succeeded", timeout=240)
    all_gpus = {g["gpu"]: g for g in st["memory"]["gpus"]}
    # each rank's report lands on its GPU and knows the cache: fragmentation 3 GiB, steady peak without it
    for gpu in (0, 1):
        assert "megatron_mem" in all_gpus[gpu]["sources"]
        assert all_gpus[gpu]["fragmentation_gib"] == pytest.approx(3.0)
        assert all_gpus[gpu]["steady_peak_gib"] == pytest.approx(all_gpus[gpu]["device_peak_gib"] - 3.0)
    mem = run.crash(1)["memory"]
    assert mem["verdict"] == "fragmentation"
    torch_version = subprocess.run([sys.executable, "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                                   capture_output=True, text=True).stdout.strip()
    assert mem["torch"] == torch_version
    assert mem["advice"] == (f"the next attempt runs with PYTORCH_ALLOC_CONF=expandable_segments:True (torch "
                             f"{torch_version}), set by the runner: the allocator can then use the memory it holds in pieces")
    assert st["next_env"] == {"PYTORCH_ALLOC_CONF": "expandable_segments:True"}   # kept for the user's restart
    assert mem["history_gpu"] == 0 and any(h["source"] == "nvml" for h in mem["history"])

    receipt = json.loads(harness.cli("runs", "receipt", run.id, "--json").stdout)
    assert receipt["memory"]["ooms"] == [{"attempt": 1, "class": "cuda_oom", "memory_verdict": "fragmentation",
                                          "memory_summary": mem["summary"]}]
    assert {g["gpu"] for g in receipt["memory"]["gpus"]} == {0, 1, None}
    md = harness.cli("runs", "receipt", run.id, "--md").stdout
    assert "## GPU memory" in md and "| GPU 0 |" in md and "fragmentation" in md


def test_on_a_machine_without_a_gpu_the_memory_chart_says_what_it_measures(harness):
    """The demo on a CPU-only machine: its log's memory(GiB) figure (the demo's resident memory)
    was charted as "mem all GPUs (max) peak ..." on a machine that has none. The run-wide track
    says it is the log's figure and that no GPU is seen, in --json and in every width of the
    chart's heading."""
    from moeconsole.console.memory import heading
    from moeconsole.runner.core.memory import NO_GPU_LABEL
    from moeconsole.runner.telemetry.gpu import get_backend
    if get_backend().name != "none":
        pytest.skip("this machine has NVML: the case is a machine without one")
    env = {"FAKE_MEM_STEPS": "40", "FAKE_MEM_BASE_GIB": "1"}
    run = harness.start(harness.recipe(**recipe(env, gpus={})))
    assert run.wait_status("succeeded", "failed", "unsaved", timeout=240)["status"] in ("succeeded", "unsaved")
    memory = snapshot(harness, run)["run"]["memory"]
    assert memory["gpus"][0]["label"] == NO_GPU_LABEL, memory["gpus"][0]
    titles = heading(memory)
    assert memory["gpus"][0]["no_gpu"] is True
    assert titles and all("no GPU" in t and "all GPUs" not in t and "mem all" not in t for t in titles), titles
