"""A hostile cluster: admins and the scheduler act on the run's job behind the user's back
(suspend, requeue, hold, preemption, a controller restarted). Each on the real local cluster
(scripts/slurm-local.sh) through `moeconsole run --detach`; skipped, with the reason, without it.

Slurm's words used here: job states from squeue(1) "JOB STATE CODES" (SUSPENDED, PREEMPTED,
TIMEOUT), the pending reason JobHeldAdmin from src/common/job_state_reason.c, and
"Requested operation is presently disabled" (slurm_strerror(ESLURM_DISABLED)), what
`scontrol requeue` answers for a job submitted with --no-requeue (src/slurmctld/job_mgr.c,
_job_requeue_op, refuses a job whose requeue flag is off; measured on Slurm 22.05)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.slurm.test_slurm_cluster import _cluster_up, cluster_nodes
from tests.slurm.test_slurm_engine import (_demo, _jobs, newest_verified_before_restart,  # noqa: F401 (slurm: the fixture)
                                           slurm)
from tests.waiting import until

pytestmark = pytest.mark.skipif(_cluster_up() is not None, reason=str(_cluster_up()))

REPO = Path(__file__).resolve().parents[2]


def _scontrol(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=60)


def _snap(h, run) -> dict:
    return json.loads(h.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)["run"]


def _job_state(run) -> str | None:
    return (run.state().get("job") or {}).get("state")


def _log_quiet_for(run, seconds: float) -> bool:
    """train.log has not grown for ``seconds`` (the job is held still)."""
    return time.time() - (run.path / "train.log").stat().st_mtime > seconds


def test_an_admin_suspend_reads_suspended_not_hung_then_the_run_goes_on(slurm):
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(40, 4, 0.3), heartbeat={"timeout_s": 3},
                                   slurm={"poll_s": 0.5}))
    st = run.wait(lambda s: (s.get("step") or 0) >= 4 and _job_state(run) == "RUNNING", timeout=120,
                  what="the job running and stepping")
    job_id = st["job"]["job_id"]
    done = _scontrol("suspend", job_id)
    assert done.returncode == 0, done.stderr
    run.wait(lambda s: (s.get("job") or {}).get("state") == "SUSPENDED", timeout=60, what="the run reading SUSPENDED")
    until(lambda: _log_quiet_for(run, 5), timeout=60, what="the suspended job silent past the 3 s heartbeat")
    snap = _snap(slurm, run)
    assert snap["status_word"] == "SUSPENDED" and snap["eta_s"] is None, snap
    assert snap["status"] == "running"
    assert not [a for a in run.events("alert") if a.get("rule") == "hang"], "a suspended job is not hung"
    step = run.state().get("step") or 0
    assert _scontrol("resume", job_id).returncode == 0
    run.wait(lambda s: (s.get("step") or 0) > step + 1, timeout=120, what="steps after the resume")
    st = run.wait_status("succeeded", "failed", timeout=180)
    assert st["status"] == "succeeded", st
    assert [j["job_id"] for j in _jobs(run)] == [job_id], "the same job went on: nothing resubmitted"
    assert not [a for a in run.events("alert") if a.get("rule") == "hang"]


def test_an_admin_requeue_is_refused_for_the_runs_job_and_a_hold_is_shown_then_released(slurm, tmp_path):
    # Every node held by an exclusive job, so the run's job waits in the queue where a hold takes.
    blocker = subprocess.run(["sbatch", "--parsable", "--exclusive", f"--nodes={len(cluster_nodes())}",
                              f"--output={tmp_path}/blocker.out", "--wrap", "sleep 300"],
                             capture_output=True, text=True, timeout=60)
    assert blocker.returncode == 0, blocker.stderr
    blocker_id = blocker.stdout.strip().split(";")[0]
    slurm.extra_jobs.append(blocker_id)
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(24, 4, 0.2), heartbeat={"timeout_s": 3},
                                   slurm={"poll_s": 0.3, "sbatch": ["--exclusive"]}))
    st = run.wait(lambda s: (s.get("job") or {}).get("state") == "PENDING", timeout=60, what="the job pending")
    job_id = st["job"]["job_id"]
    assert _scontrol("hold", job_id).returncode == 0
    run.wait(lambda s: (s.get("job") or {}).get("reason") == "JobHeldAdmin", timeout=60, what="JobHeldAdmin")
    snap = _snap(slurm, run)
    assert snap["status_word"] == "PENDING (JobHeldAdmin)" and snap["eta_s"] is None, snap
    alert = until(lambda: [a for a in run.events("alert") if a.get("rule") == "slurm_pending"], timeout=60,
                  what="the held job's slurm_pending alert")[-1]
    assert alert["values"]["reason"] == "JobHeldAdmin" and job_id in alert["message"], alert
    assert _scontrol("release", job_id).returncode == 0
    subprocess.run(["scancel", blocker_id], capture_output=True, timeout=60)
    run.wait(lambda s: (s.get("step") or 0) >= 3 and _job_state(run) == "RUNNING", timeout=120,
             what="the released job running")
    until(lambda: [a for a in run.events("alert") if a.get("rule") == "slurm_pending" and a.get("resolved")],
          timeout=60, what="the hold's alert ended once the job runs")
    # Running now: an admin's requeue would start the same script again with the old resume
    # point; the job was submitted --no-requeue, so Slurm refuses it and the run goes on.
    for verb in ("requeue", "requeuehold"):
        refused = _scontrol(verb, job_id)
        assert refused.returncode != 0 and "presently disabled" in refused.stderr, (verb, refused.stderr)
    st = run.wait_status("succeeded", "failed", timeout=180)
    assert st["status"] == "succeeded", st
    assert [j["job_id"] for j in _jobs(run)] == [job_id], "one job: no double job, no resubmission"
    assert not [a for a in run.events("alert") if a.get("rule") == "hang"], "queue and hold time are not a hang"


def submit_urgent(slurm, tmp_path: Path, seconds: int, *sbatch: str) -> None:
    """An urgent job (the `urgent` partition, higher PriorityTier) on every node, which preempts the
    run's job; cancelled by the fixture at the end."""
    urgent = subprocess.run(["sbatch", "--parsable", "--partition=urgent", *sbatch, f"--nodes={len(cluster_nodes())}",
                             f"--output={tmp_path}/urgent.out", "--wrap", f"sleep {seconds}"],
                            capture_output=True, text=True, timeout=60)
    assert urgent.returncode == 0, urgent.stderr
    slurm.extra_jobs.append(urgent.stdout.strip().split(";")[0])


def _partition_tier(name: str) -> int | None:
    out = _scontrol("show", "partition", name, "-o").stdout
    for tok in out.split():
        if tok.startswith("PriorityTier="):
            return int(tok.split("=", 1)[1])
    return None


def test_a_higher_tier_job_preempts_the_run_which_resubmits_from_the_newest_verified_checkpoint(slurm, tmp_path):
    tier = _partition_tier("urgent")
    if tier is None or tier <= (_partition_tier("debug") or 0):
        pytest.skip("no preempting partition 'urgent': scripts/slurm-local.sh start makes one (PriorityTier=10)")
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(36, 4, 0.3), heartbeat={"timeout_s": 60},
                                   slurm={"poll_s": 0.3, "sbatch": ["--exclusive"]}))
    st = run.wait(lambda s: (s.get("step") or 0) >= 9 and _job_state(run) == "RUNNING", timeout=120,
                  what="the job past its second checkpoint")
    first = st["job"]["job_id"]
    submit_urgent(slurm, tmp_path, 5, "--exclusive")
    st = run.wait_status("succeeded", "failed", timeout=300)
    assert st["status"] == "succeeded", st
    jobs = _jobs(run)
    assert jobs[0]["job_id"] == first and jobs[0]["state"] == "PREEMPTED" and jobs[0]["exit_code"] == 0, jobs[0]
    assert [j["state"] for j in jobs[1:]] == ["COMPLETED"], "one new job, not Slurm's requeue beside it"
    crash = run.crash(1)
    assert crash["class"] == "preempted" and crash["recovery"] == "restart", crash
    resumed = run.events("attempt_start")[1]["resumed_from"]
    assert resumed == newest_verified_before_restart(run), resumed
    assert "DUE TO PREEMPTION" in "\n".join(crash["evidence"]), crash["evidence"]
    shown = slurm.cli("runs", "show", run.id, check=True).stdout
    assert f"attempt 1  job {first}  PREEMPTED" in shown, shown


@pytest.fixture
def controller():
    """Stops and starts the local cluster's slurmctld alone (scripts/slurm-local.sh controller),
    its jobs left running on the nodes; started again at the end whatever happened."""
    local = Path(os.environ.get("SLURM_LOCAL_DIR", "/tmp/moeconsole-slurm"))
    if not (local / "run" / "slurmctld.pid").exists():
        pytest.skip("the local cluster's slurmctld is not this script's (no pid file)")
    script = [str(REPO / "scripts" / "slurm-local.sh"), "controller"]

    def run(verb: str) -> None:
        done = subprocess.run([*script, verb], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr

    try:
        yield run
    finally:
        subprocess.run([*script, "start"], capture_output=True, timeout=120)


def test_a_controller_restart_keeps_the_job_its_state_and_its_reason(slurm, controller):
    # (controller after slurm: the controller is back before slurm's teardown cancels the jobs)
    # Held from submission (sbatch --hold: JobHeldUser, a reason that never clears by waiting),
    # so the word and the alert that must survive the outage are Slurm's own.
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(16, 4, 0.2), heartbeat={"timeout_s": 3},
                                   slurm={"poll_s": 0.3, "sbatch": ["--hold"]}))
    st = run.wait(lambda s: (s.get("job") or {}).get("reason") == "JobHeldUser", timeout=60, what="JobHeldUser")
    job_id = st["job"]["job_id"]
    until(lambda: [a for a in run.events("alert") if a.get("rule") == "slurm_pending"], timeout=60,
          what="the held job's slurm_pending alert")
    controller("stop")
    # squeue fails while the controller is away: the run says so, and keeps its job and its word.
    st = run.wait(lambda s: (s.get("job") or {}).get("slurm_error"), timeout=120, what="the outage seen")
    assert st["status"] == "running" and st["job"]["job_id"] == job_id and st["job"]["ended_at"] is None, st["job"]
    snap = _snap(slurm, run)
    assert snap["status_word"] == "PENDING (JobHeldUser)", snap
    assert "slurm" in snap["job"]["slurm_error"].lower() or "controller" in snap["job"]["slurm_error"], snap["job"]
    controller("start")
    st = run.wait(lambda s: not (s.get("job") or {}).get("slurm_error"), timeout=120, what="Slurm answering again")
    st = run.wait(lambda s: (s.get("job") or {}).get("source") == "squeue", timeout=60, what="squeue asked again")
    assert st["job"]["state"] == "PENDING" and st["job"]["reason"] == "JobHeldUser", st["job"]
    assert _snap(slurm, run)["status_word"] == "PENDING (JobHeldUser)"
    pending = [a for a in run.events("alert") if a.get("rule") == "slurm_pending"]
    assert not [a for a in pending if a.get("resolved")], "the reason never cleared: its alert stays open"
    # A controller just back refuses updates for a moment ("Job update not available right now,
    # the DB index is being set, try again in a bit"): the admin tries again.
    until(lambda: _scontrol("release", job_id).returncode == 0, timeout=120, what="the job released")
    st = run.wait_status("succeeded", "failed", timeout=180)
    assert st["status"] == "succeeded", st
    assert [j["job_id"] for j in _jobs(run)] == [job_id], "the same job: no false end, nothing submitted twice"
    assert not [a for a in run.events("alert") if a.get("rule") == "hang"]


def test_a_runner_started_while_the_controller_is_away_adopts_the_running_job(slurm, controller):
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(40, 4, 0.3), heartbeat={"timeout_s": 60},
                                   slurm={"poll_s": 0.3}))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3 and _job_state(run) == "RUNNING", timeout=120,
                  what="the job running")
    job_id = st["job"]["job_id"]
    os.kill(st["runner"]["pid"], signal.SIGKILL)
    controller("stop")
    t0 = time.monotonic()
    # squeue cannot answer; accounting (slurmdbd) still knows the job runs: followed, not resubmitted
    assert slurm.cli("supervise", run.id, timeout=300).returncode == 0
    st = run.wait(lambda s: (s.get("runner") or {}).get("pid") not in (None, st["runner"]["pid"])
                  and any(e["type"] == "adopt" for e in run.events()), timeout=180, what="the job adopted")
    adopted_in = time.monotonic() - t0
    assert next(e for e in run.events() if e["type"] == "adopt")["job_id"] == job_id
    assert st["status"] == "running" and st["job"]["job_id"] == job_id, st["job"]
    controller("start")
    st = run.wait_status("succeeded", "failed", timeout=240)
    assert st["status"] == "succeeded", st
    assert [j["job_id"] for j in _jobs(run)] == [job_id], "the same job: nothing submitted twice"
    assert adopted_in < 90, f"adopted {adopted_in:.0f}s after the runner started: accounting was asked at once"
