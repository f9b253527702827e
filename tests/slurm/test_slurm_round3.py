"""Slurm round 3: a job requeued while no runner watched it (the runner killed, then an admin's requeue
behind `--no-requeue`), found by the runner started again. On the real local cluster
(scripts/slurm-local.sh start --nodes 3) through `moeconsole run --detach`; skipped, with the reason,
without it. Every job submitted is cancelled (the `slurm` fixture)."""
from __future__ import annotations

import os
import signal

import psutil
import pytest

from tests.slurm.test_slurm_admin import _scontrol
from tests.slurm.test_slurm_cluster import _cluster_up
from tests.slurm.test_slurm_engine import _demo, _jobs, _squeue, newest_verified_before_restart, slurm  # noqa: F401
from tests.slurm.test_slurm_round2 import _first_start_only_once, _sacct_state, _squeue_state
from tests.waiting import until

pytestmark = pytest.mark.skipif(_cluster_up() is not None, reason=str(_cluster_up()))


@pytest.mark.parametrize("found", ["pending", "running"])
def test_a_job_requeued_while_no_runner_watched_is_read_requeued_and_resubmitted_once(slurm, found):
    """Before: the runner started again adopted the requeued job as a queued one; once Slurm ran it again
    (`found` running: already so, after its BeginTime), the script trained from its old resume point (step 1
    here) in the same
    attempt, its later saves overwritten, nothing said. Now the adoption reads Slurm's restart count
    (`Restarts=1`): the attempt ends `REQUEUED`, the job is cancelled, and one new job resumes from the
    newest verified checkpoint."""
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(50, 5, 0.3), heartbeat={"timeout_s": 60},
                                   slurm={"poll_s": 0.5}))
    st = run.wait(lambda s: (s.get("step") or 0) >= 16 and (s.get("job") or {}).get("state") == "RUNNING",
                  timeout=180, what="the job past its third save")
    job_id, runner = st["job"]["job_id"], st["runner"]["pid"]
    os.kill(runner, signal.SIGKILL)
    until(lambda: not psutil.pid_exists(runner) or psutil.Process(runner).status() == psutil.STATUS_ZOMBIE,
          what="the runner gone")
    assert _scontrol("update", f"JobId={job_id}", "Requeue=1").returncode == 0
    done = _scontrol("requeue", job_id)
    assert done.returncode == 0, done.stderr
    until(lambda: _squeue(job_id) == "PENDING", timeout=60, what="the job queued again")
    if found == "running":
        # Slurm starts it again itself once its BeginTime (about two minutes) is past. Not `scontrol update
        # StartTime=now`: issued while the node still ends the first start, the second is refused there
        # ("Job N already killed, do not launch batch job", slurmd) and the job FAILED (measured)
        until(lambda: _squeue(job_id) == "RUNNING", timeout=400, what="the requeued job running again")
    assert slurm.cli("supervise", run.id, timeout=300).returncode == 0
    st = run.wait_status("succeeded", "failed", timeout=300)
    assert st["status"] == "succeeded", st
    jobs = _jobs(run)
    # one job at a time, the requeued one never followed again (a later attempt may be another's
    # preemption on a shared cluster: `urgent` jobs of other tests)
    assert jobs[0]["job_id"] == job_id and job_id not in [j["job_id"] for j in jobs[1:]] and len(jobs) >= 2, jobs
    assert jobs[0]["state"] == "REQUEUED" and jobs[0].get("restarts") == 1 and jobs[-1]["state"] == "COMPLETED", jobs
    crash = run.crash(1)
    assert crash["class"] == "preempted" and crash["recovery"] == "restart", crash
    assert run.events("attempt_start")[1]["resumed_from"] == newest_verified_before_restart(run)
    until(lambda: "CANCELLED" in _sacct_state(job_id) or not _squeue_state(job_id), timeout=60,
          what="the requeued job cancelled")
    if found == "pending":
        _first_start_only_once(run)
    shown = slurm.cli("runs", "show", run.id, check=True).stdout
    assert f"attempt 1  job {job_id}  REQUEUED" in shown, shown
