"""Every crash class of the design, injected into the real demo trainer, classified by the real
runner and recovered the way the design says."""
from __future__ import annotations

import os

import pytest

from moeconsole.runner.process.proctree import marked_processes
from tests.waiting import until


def _demo(*faults: str, max_steps: int = 12, save_steps: int = 4) -> list[str]:
    cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output",
           "--max_steps", str(max_steps), "--save_steps", str(save_steps)]
    for f in faults:
        cmd += ["--fault", f]
    return cmd


RESTARTED = [
    ("oom@6", "cuda_oom"),
    ("nccl@6", "nccl_error"),
    ("port@0", "port_in_use"),
    ("segv@6", "segfault"),
    ("sigkill@6", "killed_oom"),
    ("gpu_busy@0", "gpu_busy_at_init"),
]


@pytest.mark.parametrize("fault,cls", RESTARTED)
def test_retryable_crash_is_classified_and_run_recovers(harness, fault, cls):
    run = harness.start(harness.recipe(command=_demo(fault)))
    st = run.wait_status("succeeded", "failed", "paused", timeout=120)
    assert st["status"] == "succeeded", st
    report = run.crash(1)
    assert report["class"] == cls
    assert report["evidence"] or report["signal"], "the verdict names what decided it"
    assert len(report["log_tail"]) > 0
    assert st["attempt"] == 2 and st["restarts"] == 1
    starts = run.events("attempt_start")
    if fault.endswith("@6"):
        # Resumed from the newest verified checkpoint, and steps continue from it.
        assert os.path.basename(starts[1]["resumed_from"]) == "checkpoint-4"
        a2 = [m["step"] for m in run.metrics() if m["attempt"] == 2]
        assert a2 == list(range(5, 13))
    assert not marked_processes(run.id)


def test_cuda_fault_restarts_with_launch_blocking(harness):
    run = harness.start(harness.recipe(command=_demo("cuda_fault@6")))
    run.wait_status("succeeded", "failed", "paused", timeout=120)
    assert run.crash(1)["class"] == "cuda_fault"
    assert run.events("attempt_start")[1]["env_overrides"] == {"CUDA_LAUNCH_BLOCKING": "1"}


@pytest.mark.parametrize("fault,cls,status", [
    ("bus@6", "bus_error", "failed"),
    ("recompute@6", "recompute_mismatch", "failed"),
])
def test_fatal_crash_is_not_restarted(harness, fault, cls, status):
    run = harness.start(harness.recipe(command=_demo(fault)))
    st = run.wait_status("succeeded", "failed", "paused", timeout=90)
    assert st["status"] == status and st["attempt"] == 1
    assert run.crash(1)["class"] == cls
    assert not marked_processes(run.id)


def test_nan_loss_stops_the_run_and_pauses_it(harness):
    run = harness.start(harness.recipe(command=_demo("nan@6", max_steps=400)))
    st = run.wait_status("paused", "failed", "succeeded", timeout=90)
    assert st["status"] == "paused"
    report = run.crash(1)
    assert report["class"] == "divergence"
    alerts = [a for a in run.events("alert") if a["rule"] == "non_finite"]
    assert alerts and alerts[0]["level"] == "critical" and alerts[0]["step"] == 6
    assert run.events("kill")[0]["reason"] == "divergence"
    assert st["step"] < 20, "the runner stopped the run at once, not at the end"
    assert not marked_processes(run.id)
    # A new runner for a paused run keeps it paused: the user decides.
    os.kill(st["runner"]["pid"], 9)
    out = harness.cli("supervise", run.id, check=True)
    assert "paused" in out.stdout
    # Two state writes by the new runner: its loop has turned past any decision to relaunch.
    first = run.state()["updated_at"]
    st = until(lambda: (s := run.state())["updated_at"] > first and s, what="the new runner's next state write")
    assert st["status"] == "paused" and st["attempt"] == 1
    out = harness.cli("kill", run.id, check=True)
    assert "killed" in out.stdout


def test_hang_is_detected_by_heartbeat_and_restarted(harness):
    # The start-up allowance covers a slow import on a busy machine; the step timeout the hang.
    run = harness.start(harness.recipe(command=_demo("hang@6"), heartbeat={"timeout_s": 1.5, "startup_s": 120}))
    st = run.wait_status("succeeded", "failed", "paused", timeout=120)
    assert st["status"] == "succeeded"
    assert run.crash(1)["class"] == "hang"
    assert [a for a in run.events("alert") if a["rule"] == "hang"]


def test_empty_checkpoint_stub_is_a_critical_alert_and_never_resumed(harness):
    run = harness.start(harness.recipe(command=_demo("stub@8", "oom@10")))
    st = run.wait_status("succeeded", "failed", "paused", timeout=120)
    assert st["status"] == "succeeded"
    bad = [a for a in run.events("alert") if a["rule"] == "checkpoint_bad"]
    assert len(bad) == 1 and bad[0]["level"] == "critical" and "checkpoint-8" in bad[0]["message"]
    ck8 = [e for e in run.events("checkpoint") if e["path"].endswith("checkpoint-8")]
    assert ck8[0]["verdict"] == "empty_stub" and ck8[0]["ok"] is False
    assert os.path.basename(run.events("attempt_start")[1]["resumed_from"]) == "checkpoint-4"


def test_restart_cap_fails_the_run(harness):
    # at steps 2 and 9 in turn: the same crash at the same step twice would pause the run (test_runner_repeat.py)
    faults = [f"oom@{2 if a % 2 else 9}#{a}" for a in range(1, 5)]
    run = harness.start(harness.recipe(command=_demo(*faults), restart={"max_restarts": 2},
                                       checkpoints={"dir": None}, resume={"arg": None}))
    st = run.wait_status("failed", "succeeded", "paused", timeout=120)
    assert st["status"] == "failed" and st["attempt"] == 3
    assert [a for a in run.events("alert") if a["rule"] == "restart_policy"]


def test_checkpoint_saved_during_a_grad_norm_spike_is_suspect(harness):
    run = harness.start(harness.recipe(command=_demo("spike@16", max_steps=20, save_steps=4)))
    st = run.wait_status("succeeded", "failed", "paused", timeout=90)
    assert st["status"] == "succeeded"
    spikes = [a for a in run.events("alert") if a["rule"] == "grad_norm_spike"]
    assert spikes and spikes[0]["step"] == 16 and spikes[0]["level"] == "critical"
    cks = {os.path.basename(e["path"]): e for e in run.events("checkpoint")}
    assert cks["checkpoint-16"]["suspect"] is True and cks["checkpoint-16"]["ok"] is True
    assert cks["checkpoint-12"]["suspect"] is False and cks["checkpoint-20"]["suspect"] is False
    assert [a for a in run.events("alert") if a["rule"] == "checkpoint_in_excursion"]
