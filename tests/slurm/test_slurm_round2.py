"""Slurm round 2: a suspended job's held time is no slowdown; an admin's requeue of the run's job
(the requeue flag turned on behind `--no-requeue`), `requeuehold` and `release`; a preemption with
a `GraceTime`. Each on the real local cluster (scripts/slurm-local.sh start --nodes 3) through
`moeconsole run --detach`; skipped, with the reason, without it. Every job submitted is cancelled."""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.slurm.test_slurm_admin import _job_state, _log_quiet_for, _scontrol, _snap, submit_urgent
from tests.slurm.test_slurm_cluster import _cluster_up
from tests.slurm.test_slurm_engine import _demo, _jobs, newest_verified_before_restart, slurm  # noqa: F401 (slurm: the fixture)
from tests.waiting import until

pytestmark = pytest.mark.skipif(_cluster_up() is not None, reason=str(_cluster_up()))

def test_a_suspended_jobs_held_time_is_no_throughput_drop_after_the_resume(slurm):
    """`scontrol suspend` then `resume`: the first step after it took the suspension's time, and
    the demo's own average s/it (ms-swift's ``train_speed(s/it)``) carried it on: a
    `throughput_drop` WARN followed every resume (the known mislabel of round 1). The runner
    knows when the job was SUSPENDED (squeue): that time is excused."""
    # Not hung is test_slurm_admin's (a 3 s heartbeat); here a generous one, and a drop of 3x: a hold
    # of 30 s by step 40 makes the average after it 4x its median and more (before: a WARN), while a
    # loaded machine's noise (a 0.9 s step among 0.4 s ones, measured) stays under it
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(70, 1000, 0.2), heartbeat={"timeout_s": 60},
                                   alerts={"throughput_drop_frac": 0.34}, slurm={"poll_s": 0.5}))
    st = run.wait(lambda s: (s.get("step") or 0) >= 20 and _job_state(run) == "RUNNING", timeout=180,
                  what="the job running and stepping")
    job_id = st["job"]["job_id"]
    assert _scontrol("suspend", job_id).returncode == 0
    run.wait(lambda s: (s.get("job") or {}).get("state") == "SUSPENDED", timeout=60, what="the run reading SUSPENDED")
    until(lambda: _log_quiet_for(run, 30), timeout=120, what="the suspended job silent for 30 s")
    assert _snap(slurm, run)["status_word"] == "SUSPENDED"
    assert _scontrol("resume", job_id).returncode == 0
    st = run.wait_status("succeeded", "failed", timeout=300)
    assert st["status"] == "succeeded", st
    assert [j["job_id"] for j in _jobs(run)] == [job_id]
    drops = [a for a in run.events("alert") if a.get("rule") == "throughput_drop"]
    assert not drops, drops
    shown = json.loads(slurm.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)["run"]
    assert not [g for g in shown.get("alert_groups") or [] if g.get("rule") == "throughput_drop"]


def _requeued_run(slurm, verb: str):
    """A run past its third save whose job an admin requeues (`verb`: requeue or requeuehold),
    its requeue flag first turned on behind our --no-requeue (`scontrol update JobId=N Requeue=1`)."""
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(50, 5, 0.3), heartbeat={"timeout_s": 60},
                                   slurm={"poll_s": 0.5}))
    st = run.wait(lambda s: (s.get("step") or 0) >= 16 and _job_state(run) == "RUNNING", timeout=180,
                  what="the job past its third save")
    job_id = st["job"]["job_id"]
    done = _scontrol("update", f"JobId={job_id}", "Requeue=1")
    assert done.returncode == 0, done.stderr
    done = _scontrol(verb, job_id)
    assert done.returncode == 0, done.stderr
    return run, job_id


def _first_start_only_once(run) -> None:
    """The old script never started again: the training's first step is in train.log once."""
    assert (run.path / "train.log").read_text(errors="replace").count("'global_step/max_steps': '1/50'") == 1


def test_an_admin_requeue_behind_no_requeue_is_a_new_attempt_from_the_newest_verified_checkpoint(slurm):
    """Before: Slurm started the same job id again (after its BeginTime delay) with the script's old
    resume point, the training from step 1 in the same attempt, its later checkpoints overwritten,
    nothing said. Now the requeue ends the attempt: the job cancelled, a new one from the newest
    verified checkpoint."""
    run, job_id = _requeued_run(slurm, "requeue")
    st = run.wait_status("succeeded", "failed", timeout=300)
    assert st["status"] == "succeeded", st
    jobs = _jobs(run)
    assert [j["job_id"] for j in jobs][0] == job_id and len(jobs) == 2 and jobs[1]["job_id"] != job_id, jobs
    assert jobs[0]["state"] == "REQUEUED" and jobs[1]["state"] == "COMPLETED", jobs
    crash = run.crash(1)
    assert crash["class"] == "preempted" and crash["recovery"] == "restart", crash
    assert "scontrol requeue" in crash["summary"], crash
    assert run.events("attempt_start")[1]["resumed_from"] == newest_verified_before_restart(run)
    until(lambda: "CANCELLED" in _sacct_state(job_id) or not _squeue_state(job_id), timeout=60,
          what="the requeued job cancelled")
    _first_start_only_once(run)
    shown = slurm.cli("runs", "show", run.id, check=True).stdout
    assert f"attempt 1  job {job_id}  REQUEUED" in shown, shown


def test_an_admin_requeuehold_resubmits_held_and_release_lets_it_resume(slurm):
    run, job_id = _requeued_run(slurm, "requeuehold")
    st = run.wait(lambda s: s.get("attempt") == 2 and (s.get("job") or {}).get("reason") in ("JobHeldUser", "JobHeldAdmin"),
                  timeout=120, what="the new job submitted held")
    new_id = st["job"]["job_id"]
    assert new_id != job_id
    assert _snap(slurm, run)["status_word"].startswith("PENDING (JobHeld"), _snap(slurm, run)
    until(lambda: "CANCELLED" in _sacct_state(job_id) or not _squeue_state(job_id), timeout=60,
          what="the requeued job cancelled")
    assert run.crash(1)["class"] == "preempted" and "requeuehold" in run.crash(1)["summary"]
    assert _scontrol("release", new_id).returncode == 0
    st = run.wait_status("succeeded", "failed", timeout=300)
    assert st["status"] == "succeeded", st
    assert [j["state"] for j in _jobs(run)] == ["REQUEUE_HOLD", "COMPLETED"], _jobs(run)
    assert run.events("attempt_start")[1]["resumed_from"] == newest_verified_before_restart(run)
    _first_start_only_once(run)


def _squeue_state(job_id: str) -> str:
    return subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True,
                          timeout=60).stdout.strip()


def _sacct_state(job_id: str) -> str:
    return subprocess.run(["sacct", "-n", "-X", "-j", job_id, "-o", "State"], capture_output=True, text=True,
                          timeout=60).stdout.strip()


def _partition(name: str, key: str) -> str | None:
    for tok in _scontrol("show", "partition", name, "-o").stdout.split():
        if tok.startswith(f"{key}="):
            return tok.split("=", 1)[1]
    return None


@pytest.fixture
def grace():
    """The debug partition's GraceTime set for the test, put back after it."""
    before = _partition("debug", "GraceTime")
    tier, base = _partition("urgent", "PriorityTier"), _partition("debug", "PriorityTier")
    if before is None or tier is None or int(tier) <= int(base or 0):
        pytest.skip("no preempting partition 'urgent' above 'debug': scripts/slurm-local.sh start makes one")

    def set_to(seconds: int) -> None:
        done = _scontrol("update", "PartitionName=debug", f"GraceTime={seconds}")
        assert done.returncode == 0, done.stderr
    try:
        yield set_to
    finally:
        _scontrol("update", "PartitionName=debug", f"GraceTime={before}")


def test_a_preemption_with_grace_time_saves_in_the_grace_and_the_next_job_resumes_from_that_save(slurm, grace, tmp_path):
    """`GraceTime=30` on the preempted job's partition: Slurm sends the job's tasks SIGTERM, and
    SIGKILL only once the grace is over. A training that saves on SIGTERM (the demo's
    --enable_jit_checkpoint, as transformers' JITCheckpointCallback) saves there and exits 0; the
    run reads `preempted` and the new job resumes from the save made in the grace, not from the
    last periodic one."""
    grace(30)
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(60, 10, 0.3, "--enable_jit_checkpoint"),
                                   heartbeat={"timeout_s": 60}, slurm={"poll_s": 0.3, "sbatch": ["--exclusive"]}))
    st = run.wait(lambda s: (s.get("step") or 0) >= 14 and _job_state(run) == "RUNNING", timeout=180,
                  what="the job past its first save")
    first = st["job"]["job_id"]
    submit_urgent(slurm, tmp_path, 5, "--exclusive")
    st = run.wait_status("succeeded", "failed", timeout=400)
    assert st["status"] == "succeeded", st
    # The training ended itself within the grace (exit 0): Slurm records COMPLETED, not PREEMPTED,
    # and slurmstepd says nothing; the training's own words say it handled a SIGTERM (core/ending.py)
    jobs = _jobs(run)
    assert jobs[0]["job_id"] == first and jobs[0]["state"] == "COMPLETED" and jobs[0]["exit_code"] == 0, jobs[0]
    crash = run.crash(1)
    assert crash["class"] == "preempted" and crash["recovery"] == "restart", crash
    assert "handled a SIGTERM this runner did not send" in crash["summary"], crash
    log = (run.path / "train.log").read_text(errors="replace")
    assert "SIGTERM received, will request JIT checkpoint after 3s" in log
    saved_at = int(log.split("Saving JIT checkpoint at step ", 1)[1].split()[0])
    assert saved_at >= 14, saved_at
    resumed = run.events("attempt_start")[1]["resumed_from"]
    assert resumed.endswith(f"checkpoint-{saved_at}") and resumed == newest_verified_before_restart(run), resumed


def _preempt_mode() -> str:
    out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=60).stdout
    return next((line.split("=", 1)[1].strip() for line in out.splitlines() if line.startswith("PreemptMode")), "")


def test_a_preemption_by_suspension_reads_suspended_not_hung_and_trains_on(slurm, tmp_path):
    """`PreemptMode=SUSPEND,GANG`: an urgent job that needs the run's CPUs suspends its job (Slurm's
    SUSPENDED, SIGSTOP under proctrack/linuxproc) and the job resumes once the urgent one ends. The
    run reads SUSPENDED, not hung; the same job trains on to the end; no speed alert."""
    if "SUSPEND" not in _preempt_mode():
        pytest.skip("the local cluster preempts by REQUEUE: start it with "
                    "SLURM_LOCAL_PREEMPT_MODE=SUSPEND,GANG scripts/slurm-local.sh start --nodes 3")
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(60, 1000, 0.3), heartbeat={"timeout_s": 10},
                                   alerts={"throughput_drop_frac": 0.25}, slurm={"poll_s": 0.5}))
    st = run.wait(lambda s: (s.get("step") or 0) >= 10 and _job_state(run) == "RUNNING", timeout=180,
                  what="the job running")
    job_id = st["job"]["job_id"]
    cpus = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    submit_urgent(slurm, tmp_path, 30, f"--cpus-per-task={cpus}")
    run.wait(lambda s: (s.get("job") or {}).get("state") == "SUSPENDED", timeout=120, what="the job suspended")
    until(lambda: _log_quiet_for(run, 12), timeout=90, what="the suspended job silent past the 10 s heartbeat")
    snap = _snap(slurm, run)
    assert snap["status_word"] == "SUSPENDED" and snap["status"] == "running" and snap["eta_s"] is None, snap
    st = run.wait_status("succeeded", "failed", timeout=400)
    assert st["status"] == "succeeded", st
    assert [j["job_id"] for j in _jobs(run)] == [job_id], "the same job resumed: nothing resubmitted"
    alerts = [a for a in run.events("alert") if a.get("rule") in ("hang", "throughput_drop")]
    assert not alerts, alerts
