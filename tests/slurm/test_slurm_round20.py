"""Round 20 (Slurm) on the real local cluster (scripts/slurm-local.sh start --nodes 3): a runner that
died while sbatch ran, adopted while the controller (and accounting) are away; the scheduler restarted
under a run. Skipped, with the reason, without the cluster."""
from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest

from tests.slurm.test_slurm_admin import controller  # noqa: F401 (the fixture)
from tests.slurm.test_slurm_cluster import _cluster_up
from tests.slurm.test_slurm_engine import (_demo, _jobs, accounting_down, newest_verified_before_restart,  # noqa: F401
                                           slurm)

pytestmark = pytest.mark.skipif(_cluster_up() is not None, reason=str(_cluster_up()))


def _lose_the_sbatch_answer(run) -> None:
    """As if the runner had died while sbatch ran: its record (written before sbatch) and state.json know
    the job's name, not its id."""
    rec_path = run.path / "jobs" / "attempt-1.json"
    rec = json.loads(rec_path.read_text())
    assert rec["job_name"] == f"moeconsole-{run.id}-1"
    rec.update(job_id="", state="SUBMITTING", source="sbatch")
    rec_path.write_text(json.dumps(rec))
    state_path = run.path / "state.json"
    st = json.loads(state_path.read_text())
    st["job"] = {**st["job"], "job_id": "", "state": "SUBMITTING", "source": "sbatch"}
    state_path.write_text(json.dumps(st))


def test_a_lost_sbatch_answer_is_found_by_name_once_slurm_answers_never_submitted_twice(
        slurm, controller, accounting_down):
    """The controller and slurmdbd both away when the runner starts again: neither can name the job. Before
    round 20 the runner waited on squeue and sacct in turn (~9 s on the controller's MessageTimeout), then took
    "no answer" for "no job": the attempt ended unwatched, was judged, and once the controller was back a
    second job trained beside the first. Now it is adopted at once as what is known (submitted, id not known
    yet, Slurm not answering), looked for in the background, and followed once the controller names it."""
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(60, 4, 0.3), heartbeat={"timeout_s": 120},
                                   slurm={"poll_s": 0.3}))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3 and (s.get("job") or {}).get("state") == "RUNNING",
                  timeout=120, what="the job running")
    job_id = st["job"]["job_id"]
    slurm.extra_jobs.append(job_id)   # cancelled at the end whatever the record says
    os.kill(st["runner"]["pid"], signal.SIGKILL)
    _lose_the_sbatch_answer(run)
    controller("stop")
    out = slurm.cli("supervise", run.id, timeout=300)
    assert out.returncode == 0, (out.stdout, out.stderr)
    run.wait(lambda s: any(e["type"] in ("adopt", "crash") for e in run.events()), timeout=180,
             what="the attempt adopted (or judged)")
    assert not run.events("crash"), f"taken for ended while Slurm was away: {run.events('crash')}"
    adopt = run.events("adopt")[0]
    assert adopt["attempt"] == 1 and "job_id" not in adopt, adopt   # its id is not known yet, and not claimed
    # what is known meanwhile: the run goes on, its job submitted under a name, its id being looked for
    st = run.wait(lambda s: "by name" in ((s.get("job") or {}).get("slurm_error") or ""), timeout=120,
                  what="the search said in the job record")
    assert st["status"] == "running" and st["job"]["job_id"] == "", st["job"]
    assert f"moeconsole-{run.id}-1" in st["job"]["slurm_error"], st["job"]
    controller("start")
    st = run.wait(lambda s: (s.get("job") or {}).get("job_id") == job_id, timeout=180, what="the job found by name")
    found = [e for e in run.events("job_submitted") if e.get("found_by_name")]
    assert [e["job_id"] for e in found] == [job_id], run.events("job_submitted")
    st = run.wait_status("succeeded", "failed", timeout=300)
    assert st["status"] == "succeeded", st
    assert [j["job_id"] for j in _jobs(run)] == [job_id], "the same job: nothing submitted beside it"
    assert not run.events("crash")


def cut_time_limit(job_id: str) -> None:
    """The running job's limit cut to 2 minutes past the minutes it has run (a limit already past would end it
    TIMEOUT in the very sweep that signals it): its time left, 60-120 s, is under a ``--signal=SIG@40``'s 40 s +
    PERIODIC_TIMEOUT by the next sweep or the one after, so the warning comes within a minute from now."""
    used = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%M"], capture_output=True, text=True, timeout=60)
    *_, minutes, _seconds = [0, 0, *map(int, used.stdout.strip().replace("-", ":").split(":"))]
    cut = subprocess.run(["scontrol", "update", f"JobId={job_id}", f"TimeLimit={minutes + 2}"],
                         capture_output=True, text=True, timeout=60)
    assert cut.returncode == 0, cut.stderr


def test_the_time_limits_warning_signal_ending_a_training_is_the_time_limit_resumed_from_the_verified_save(slurm):
    """``--signal=USR1@40`` (sbatch(1)): Slurm sends the job's steps SIGUSR1 ahead of its time limit, at the first
    sweep where the time left is under 40 s + PERIODIC_TIMEOUT (src/slurmctld/job_mgr.c l.19512; on a 1-minute
    limit, at once). A training that does not handle it dies of it (SIGUSR1's default action): Slurm records
    FAILED, exit 10:0, and srun says ``task 0: User defined signal 1`` (measured on 22.05). That is the time
    limit, not a crash of the training: resubmitted from the newest verified save, the hint naming the signal.

    Round 21: submitted with a 10-minute limit (the signal far off) and cut to 2 minutes past the time it has run (``scontrol update
    TimeLimit=``, as a user may shorten their own job) only once a save is verified: the signal comes at the
    next sweep after that, never before the first verified save, however loaded the machine (CI's ``max() arg is
    an empty sequence``: the signal of a 1-minute limit came before the first save was verified)."""
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(4000, 4, 0.3), heartbeat={"timeout_s": 120},
                                   slurm={"poll_s": 0.5, "time": "10", "sbatch": ["--signal=USR1@40"]},
                                   restart={"max_restarts": 1}))
    st = run.wait(lambda s: (s.get("job") or {}).get("state") == "RUNNING", timeout=180, what="the job running")
    run.wait(lambda s: any(e.get("ok") for e in run.events("checkpoint")), timeout=180, what="a verified save")
    assert not run.events("crash"), run.events("crash")
    cut_time_limit(st["job"]["job_id"])
    st = run.wait(lambda s: len(run.events("crash")) >= 1, timeout=240, what="the first job's end judged")
    crash = run.crash(1)
    assert crash["class"] == "time_limit" and crash["recovery"] == "restart", crash
    assert "SIGUSR1" in crash["summary"] and "--signal=USR1@40" in crash["summary"], crash
    first = _jobs(run)[0]
    assert first["state"] == "FAILED", first
    start = run.wait(lambda s: len(run.events("attempt_start")) >= 2, timeout=120, what="the second job")
    resumed = run.events("attempt_start")[1]["resumed_from"]
    assert resumed == newest_verified_before_restart(run), resumed


def test_a_node_an_admin_sets_down_under_the_job_is_a_node_failure_resumed_from_the_verified_save(slurm):
    """``scontrol update NodeName=N State=DOWN`` under a running job: Slurm kills it (``NODE_FAIL``, exit 0:0;
    srun's ``Node failure on node2``, slurmstepd's ``... DUE TO NODE FAILURE``; measured on 22.05). The node's
    failure, not the training's: resubmitted from the newest verified save (the local cluster's slurmd puts the
    node back in service at once, so the new job may run there again)."""
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(60, 4, 0.3), heartbeat={"timeout_s": 120},
                                   slurm={"poll_s": 0.5}, restart={"max_restarts": 1}))
    st = run.wait(lambda s: (s.get("step") or 0) >= 6 and (s.get("job") or {}).get("state") == "RUNNING",
                  timeout=120, what="the job running past a save")
    run.wait(lambda s: any(e.get("ok") for e in run.events("checkpoint")), timeout=120, what="a verified save")
    node = st["job"]["nodes"][0]
    try:
        done = subprocess.run(["scontrol", "update", f"NodeName={node}", "State=DOWN", "Reason=moeconsole-test"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        run.wait(lambda s: len(run.events("crash")) >= 1, timeout=180, what="the first job's end judged")
    finally:
        subprocess.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"], capture_output=True, timeout=60)
    crash = run.crash(1)
    assert crash["class"] == "node_fail" and crash["recovery"] == "restart", crash
    assert node in crash["summary"], crash
    assert _jobs(run)[0]["state"] == "NODE_FAIL"
    run.wait(lambda s: len(run.events("attempt_start")) >= 2, timeout=120, what="the second job")
    assert run.events("attempt_start")[1]["resumed_from"] == newest_verified_before_restart(run)
    st = run.wait_status("succeeded", "failed", timeout=300)
    assert st["status"] == "succeeded", st


def test_a_save_made_in_the_time_limits_grace_is_verified_and_the_next_job_resumes_from_it(slurm):
    """At the time limit Slurm sends the steps SIGTERM, then SIGKILL after KillWait (slurm.conf(5); 5 s on the
    local cluster). A training that saves on SIGTERM (the demo's ``--enable_jit_checkpoint``, as transformers'
    JITCheckpointCallback) saves in that grace: the job is still TIMEOUT, the run's class ``time_limit``, and the
    next job resumes from that save once verified, not from an older one (no periodic save before it here)."""
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(100000, 5000, 0.1, "--enable_jit_checkpoint"),
                                   slurm={"poll_s": 0.5, "time": "1"}, heartbeat={"timeout_s": 300},
                                   restart={"max_restarts": 1}))
    run.wait(lambda s: len(run.events("attempt_start")) >= 2, timeout=300, what="a second attempt")
    crash = run.crash(1)
    assert crash["class"] == "time_limit" and crash["recovery"] == "restart", crash
    assert _jobs(run)[0]["state"] == "TIMEOUT", _jobs(run)[0]
    saves = [e for e in run.events("checkpoint") if e.get("ok")]
    assert saves, f"the save made in the grace was verified: {run.events('checkpoint')}"
    resumed = run.events("attempt_start")[1]["resumed_from"]
    assert resumed and resumed == newest_verified_before_restart(run) == saves[-1]["path"], (resumed, saves)
    assert slurm.cli("kill", run.id, timeout=180).returncode == 0
    run.wait_status("killed", timeout=120)


def test_a_requeue_met_by_a_controller_restart_leaves_one_job_cancelled_and_one_resumed(slurm, controller):
    """An admin's requeue (the requeue flag turned on behind --no-requeue), then slurmctld restarted before the
    runner could act (the runner held still with SIGSTOP meanwhile, so the order is certain). The runner sees the
    requeue only once the controller is back, when it may refuse updates a moment ("Job update not available
    right now, the DB index is being set"): the requeued job's scancel is sent again until it takes, and only
    then is the new job submitted. Before round 20 a failed scancel was dropped: the requeued job stayed queued,
    to start its old script again beside the new job once its BeginTime came."""
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(50, 5, 0.3), heartbeat={"timeout_s": 120},
                                   slurm={"poll_s": 0.5}))
    st = run.wait(lambda s: (s.get("step") or 0) >= 12 and (s.get("job") or {}).get("state") == "RUNNING",
                  timeout=180, what="the job past its second save")
    job_id, runner = st["job"]["job_id"], st["runner"]["pid"]
    os.kill(runner, signal.SIGSTOP)
    try:
        for args in (["update", f"JobId={job_id}", "Requeue=1"], ["requeue", job_id]):
            done = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=60)
            assert done.returncode == 0, done.stderr
        controller("stop")
    finally:
        os.kill(runner, signal.SIGCONT)
    controller("start")
    st = run.wait_status("succeeded", "failed", timeout=400)
    assert st["status"] == "succeeded", st
    jobs = _jobs(run)
    assert [j["job_id"] for j in jobs][0] == job_id and len(jobs) == 2, jobs
    assert jobs[0]["state"] == "REQUEUED" and jobs[1]["state"] == "COMPLETED", jobs
    gone = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True, timeout=60)
    assert gone.stdout.strip() in ("", "COMPLETING"), f"the requeued job is still queued: {gone.stdout}"
    log = (run.path / "train.log").read_text(errors="replace")
    assert log.count("'global_step/max_steps': '1/50'") == 1, "the old script never started again"
    assert run.crash(1)["class"] == "preempted"
