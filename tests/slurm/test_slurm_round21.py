"""Round 21 (Slurm) on the real local cluster (scripts/slurm-local.sh start --nodes 3): a training that handles
the time limit's warning signal, saves and exits 0 before its steps are done. Skipped, with the reason, without
the cluster."""
from __future__ import annotations

import subprocess

import pytest

from tests.slurm.test_slurm_cluster import _cluster_up
from tests.slurm.test_slurm_engine import _demo, _jobs, newest_verified_before_restart, slurm  # noqa: F401
from tests.slurm.test_slurm_round20 import cut_time_limit

pytestmark = pytest.mark.skipif(_cluster_up() is not None, reason=str(_cluster_up()))


def test_a_training_that_saves_and_exits_0_on_the_time_limits_warning_is_the_time_limit_resumed(slurm):
    """``--signal=USR1@40`` and a training that handles it as PyTorch Lightning's SLURM auto-requeue does (save,
    then ``scontrol requeue $SLURM_JOB_ID``) and then exits 0, saying nothing of the signal. Under the runner's
    ``--no-requeue`` Slurm refuses the requeue (job_mgr.c ``_job_requeue_op``: "Requested operation is presently
    disabled", scontrol's exit 1; measured on 22.05) and the job ends COMPLETED 0:0 short of its steps. Before
    round 21 the run read ``succeeded`` (only a "short of its total" reason): the rest of the training was lost
    unless the user noticed. Now the job's run time against its limit shows the warning came: the time limit,
    resumed from the save the handler made."""
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(4000, 4, 0.3, "--save_on_signal", "USR1",
                                                                  "--requeue_on_signal"),
                                   heartbeat={"timeout_s": 120}, restart={"max_restarts": 1},
                                   slurm={"poll_s": 0.5, "time": "10", "sbatch": ["--signal=USR1@40"]}))
    st = run.wait(lambda s: (s.get("job") or {}).get("state") == "RUNNING", timeout=180, what="the job running")
    run.wait(lambda s: any(e.get("ok") for e in run.events("checkpoint")), timeout=180, what="a verified save")
    cut_time_limit(st["job"]["job_id"])
    run.wait(lambda s: len(run.events("attempt_start")) >= 2 or s.get("status") in ("succeeded", "failed"),
             timeout=300, what="the first job's end judged")
    assert not run.events("success"), f"read as a success: {run.state().get('status')}, {run.events('success')}"
    first = _jobs(run)[0]
    assert (first["state"], first["exit_code"]) == ("COMPLETED", 0), first
    log = (run.path / "train.log").read_text(errors="replace")
    assert f"Requeuing SLURM job {first['job_id']} failed with error code 1" in log, "Slurm refused the requeue"
    crash = run.crash(1)
    assert crash["class"] == "time_limit" and crash["recovery"] == "restart", crash
    assert "--signal=USR1@40" in crash["summary"] and "short of its total" in crash["summary"], crash
    saves = [e for e in run.events("checkpoint") if e.get("ok")]
    resumed = run.events("attempt_start")[1]["resumed_from"]
    assert resumed == newest_verified_before_restart(run) == saves[-1]["path"], (resumed, saves)
    assert slurm.cli("kill", run.id, timeout=180).returncode == 0
    run.wait_status("killed", timeout=120)


def test_an_array_asked_for_by_the_users_shell_is_never_submitted(slurm):
    """sbatch reads ``SBATCH_ARRAY_INX`` (its ``--array``, src/sbatch/opt.c env_vars[] l.185) after the script's
    #SBATCH lines. Left in the user's shell, it made the run a job array: two copies of the training into one run
    directory and log, listed by squeue and sacct as ``ID_0``/``ID_1``, never as the id sbatch printed, which the
    runner follows (measured on 22.05). Now it is dropped from sbatch's environment: one job, one training."""
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(12, 4, 0.1), env={"SBATCH_ARRAY_INX": "0-1"},
                                   slurm={"poll_s": 0.5}))
    st = run.wait_status("succeeded", "failed", timeout=300)
    (job,) = _jobs(run)
    rows = subprocess.run(["sacct", "-n", "-P", "-X", "-j", job["job_id"], "-o", "JobID"], capture_output=True,
                          text=True, timeout=60).stdout.split()
    assert rows == [job["job_id"]], f"an array was submitted: {rows}"
    assert st["status"] == "succeeded", st
    log = (run.path / "train.log").read_text(errors="replace")
    assert log.count("'global_step/max_steps': '1/12'") == 1, "the training started once"
