"""Prometheus metrics of a run: names and values on plain data, the real exporter process
scraped over loopback after a real supervised run with a crash, the textfile form, and the
shipped alert rules checked by promtool."""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from moeconsole.runner.ops.prometheus import MetricsView, metric_families
from moeconsole.runner.ops.tally import EventTally
from tests.fakes.nvml import FakeGpu, build_fake_nvml, fake_env, write_scenario
from tests.ops.ops_helpers import end, read_json, wait_for
from tests.runner.conftest import Harness

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "runner" / "ops" / "alert_rules.yml"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Exposition text -> {(sample name, sorted labels without run_id): value}."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            labels = tuple(sorted((k, v) for k, v in s.labels.items() if k != "run_id"))
            out[(s.name, labels)] = s.value
    return out


def render(view: MetricsView) -> str:
    class One:
        def collect(self):
            return metric_families(view)

    reg = CollectorRegistry(auto_describe=False)
    reg.register(One())  # type: ignore[arg-type]
    return generate_latest(reg).decode()


def test_tally_folds_events_and_active_alerts_reset_per_attempt():
    t = EventTally()
    for ev in [
        {"type": "attempt_start", "attempt": 1, "t": 10.0},
        {"type": "alert", "rule": "grad_norm_spike", "level": "warning"},
        {"type": "checkpoint", "step": 4, "ok": True, "verdict": "ok", "t": 20.0},
        {"type": "checkpoint", "step": 8, "ok": False, "verdict": "EMPTY_STUB", "t": 30.0},
        {"type": "crash", "class": "cuda_oom"},
        {"type": "attempt_start", "attempt": 2, "t": 40.0},
        {"type": "alert", "rule": "non_finite", "level": "critical"},
        {"type": "crash", "class": "cuda_oom"},
    ]:
        t.add(ev)
    assert t.attempt == 2 and t.attempt_started_at == 40.0
    assert t.crashes == {"cuda_oom": 2}
    assert t.checkpoints == {"ok": 1, "EMPTY_STUB": 1}
    assert (t.verified_step, t.verified_at) == (4, 20.0)   # the stub at 8 is not a good checkpoint
    assert t.alerts_total == {("grad_norm_spike", "warning"): 1, ("non_finite", "critical"): 1}
    assert t.alerts_active == {("non_finite", "critical"): 1}


def test_a_users_kill_is_not_counted_as_a_crash():
    """moeconsole_crashes_total feeds the crash-loop rule (alert_rules.yml): a user who kills and
    restarts a run four times in an hour did not make it crash."""
    t = EventTally()
    for ev in [{"type": "crash", "class": "cuda_oom", "attempt": 1}, {"type": "crash", "class": "user_kill", "attempt": 2},
               {"type": "crash", "class": "user_kill", "attempt": 3}]:
        t.add(ev)
    assert t.crashes == {"cuda_oom": 1}


def test_families_values_units_and_absent_fields():
    tally = EventTally()
    for ev in [{"type": "crash", "class": "nccl_error"}, {"type": "crash", "class": "nccl_error"},
               {"type": "checkpoint", "step": 100, "ok": True, "verdict": "ok", "t": 900.0}]:
        tally.add(ev)
    view = MetricsView(
        now=1000.0,
        run={"id": "r1", "name": "qwen", "status": "running", "attempt": 3, "restarts": 2, "step": 120,
             "max_steps": 4473, "step_time_s": 18.0, "mem_capacity_gib": 141.1, "elapsed_s": 5000.0,
             "recipe_hash": "abc"},
        last_metrics={"loss": "nan", "grad_norm": 2.5, "lr": 1e-4, "mem_gib": 133.0, "tokens_per_s": None},
        tally=tally,
        gpu={"gpus": [{"index": 0, "uuid": "GPU-0", "mem_used_mib": 1024.0, "mem_total_mib": 143771.0}]},
        state_updated_at=990.0,
    )
    s = samples(render(view))
    assert s[("moeconsole_run_status", (("status", "running"),))] == 1
    assert s[("moeconsole_run_status", (("status", "paused"),))] == 0
    assert s[("moeconsole_step", ())] == 120
    assert s[("moeconsole_restarts_total", ())] == 2
    assert s[("moeconsole_crashes_total", (("class", "nccl_error"),))] == 2
    assert math.isnan(s[("moeconsole_loss", ())])
    assert s[("moeconsole_nonfinite", ())] == 1
    assert s[("moeconsole_train_memory_bytes", ())] == 133.0 * 1024 ** 3
    assert s[("moeconsole_gpu_memory_capacity_bytes", ())] == pytest.approx(141.1 * 1024 ** 3)
    assert s[("moeconsole_gpu_memory_used_bytes", (("gpu", "0"), ("uuid", "GPU-0")))] == 1024 * 1024 ** 2
    assert s[("moeconsole_checkpoint_verified_step", ())] == 100
    assert s[("moeconsole_checkpoint_verified_age_seconds", ())] == 100.0
    assert s[("moeconsole_state_age_seconds", ())] == 10.0
    # unknown values are absent, never a made-up zero
    assert ("moeconsole_tokens_per_second", ()) not in s
    assert ("moeconsole_ingest_lag_bytes", ()) not in s


@pytest.fixture(scope="module")
def fake_libdir(tmp_path_factory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the fake NVML library")
    return build_fake_nvml(tmp_path_factory.mktemp("fake-nvml"))


def test_exporter_scraped_on_loopback_after_a_crash_and_restart(tmp_path, runs_dir, fake_libdir):
    h = Harness(tmp_path, runs_dir)
    recipe = h.recipe(command=["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
                               "--max_steps", "12", "--save_steps", "4", "--step_delay", "0.0",
                               "--fault", "segv@6#1"])
    run = h.start(recipe)
    run.wait_status("succeeded", "failed", "killed", timeout=240)

    scenario = write_scenario(tmp_path / "scn.txt", [FakeGpu(uuid="GPU-a", mem_base_used_mib=2048.0), FakeGpu(uuid="GPU-b")])
    env = fake_env(fake_libdir, scenario, {**os.environ, "PYTHONPATH": str(REPO)})
    proc = subprocess.Popen([sys.executable, "-m", "moeconsole.runner.ops.exporter", str(run.path), "--port", "0",
                           "--interval", "0.2", "--parent-pid", str(os.getpid())], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        bound = wait_for(lambda: read_json(run.path / "exporter.json"), 60, "exporter.json")
        assert bound["addr"] == "127.0.0.1" and bound["pid"] == proc.pid
        url = f"http://127.0.0.1:{bound['port']}/metrics"
        with urllib.request.urlopen(url, timeout=30) as resp:
            text = resp.read().decode()
    finally:
        end(proc)
    s = samples(text)
    assert s[("moeconsole_run_status", (("status", "succeeded"),))] == 1
    assert s[("moeconsole_step", ())] == 12
    assert s[("moeconsole_crashes_total", (("class", "segfault"),))] == 1
    assert s[("moeconsole_attempt", ())] == 2
    assert s[("moeconsole_checkpoint_verified_step", ())] == 12
    assert s[("moeconsole_checkpoints_total", (("verdict", "ok"),))] >= 3
    assert s[("moeconsole_gpu_memory_used_bytes", (("gpu", "0"), ("uuid", "GPU-a")))] == 2048 * 1024 ** 2
    assert s[("moeconsole_gpu_memory_total_bytes", (("gpu", "1"), ("uuid", "GPU-b")))] == 143771 * 1024 ** 2
    assert s[("moeconsole_run_stale", ())] == 0


def test_exporter_textfile_is_replaced_whole_and_exits_when_the_run_is_over(tmp_path, runs_dir):
    h = Harness(tmp_path, runs_dir)
    run = h.start(h.recipe())
    run.wait_status("succeeded", "failed", "killed", timeout=240)
    out = tmp_path / "node_exporter" / "moeconsole.prom"
    out.parent.mkdir()
    proc = subprocess.run([sys.executable, "-m", "moeconsole.runner.ops.exporter", str(run.path), "--textfile", str(out),
                           "--interval", "0.1", "--no-gpu"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    s = samples(out.read_text())
    assert s[("moeconsole_step", ())] == 12
    assert s[("moeconsole_run_status", (("status", "succeeded"),))] == 1
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp file left behind


def test_exporter_bad_input_is_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "moeconsole.runner.ops.exporter", str(tmp_path), "--port", "0"],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "not a run directory" in proc.stderr


needs_promtool = pytest.mark.skipif(shutil.which("promtool") is None,
                                    reason="promtool not installed (Debian package 'prometheus'; .ci/run installs it)")


@needs_promtool
def test_shipped_rules_pass_promtool_check():
    proc = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "7 rules found" in proc.stdout


@needs_promtool
def test_shipped_rules_fire_as_their_unit_tests_say():
    proc = subprocess.run(["promtool", "test", "rules", "alert_rules_test.yml"], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
