"""The Slurm engine end to end: the real CLI and runner submitting the demo to a real Slurm
cluster on this machine, one node on loopback or the multi-node one (scripts/slurm-local.sh;
.ci/run installs and starts it). Skipped, with the reason, where no cluster answers."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from moeconsole.runner.process import proctree
from tests.runner.conftest import Harness, Run
from tests.slurm.test_slurm_cluster import _cluster_up, cluster_nodes
from tests.waiting import reached, until

pytestmark = pytest.mark.skipif(_cluster_up() is not None, reason=str(_cluster_up()))

FAST = {"slurm": {"poll_s": 0.2}, "heartbeat": {"timeout_s": 120}}


def _demo(steps: int = 12, save: int = 4, delay: float = 0.0, *extra: str) -> list[str]:
    return ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output", "--max_steps", str(steps),
            "--save_steps", str(save), "--step_delay", str(delay), *extra]


def _squeue(job: str) -> str:
    return subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True, text=True,
                          timeout=60).stdout.strip()


def _jobs(run: Run) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((run.path / "jobs").glob("attempt-*.json"))]


def newest_verified_before_restart(run: Run) -> str:
    """The newest checkpoint verified OK before the second attempt started: where it must resume."""
    second = run.events("attempt_start")[1]["t"]
    ok = [e for e in run.events("checkpoint") if e.get("ok") and e["t"] <= second]
    return max(ok, key=lambda e: e["step"])["path"]


@pytest.fixture
def slurm(tmp_path, runs_dir):
    """The harness, and at the end every job of every run here cancelled (by id)."""
    h = Harness(tmp_path, runs_dir)
    extra_jobs: list[str] = []
    h.extra_jobs = extra_jobs  # type: ignore[attr-defined]
    try:
        yield h
    finally:
        ids = extra_jobs + [json.loads(p.read_text())["job_id"] for p in runs_dir.glob("*/jobs/attempt-*.json")]
        for run in runs_dir.iterdir():
            st = Run(run).state()
            pid = (st.get("runner") or {}).get("pid")
            if isinstance(pid, int) and proctree.start_time(pid):
                os.kill(pid, signal.SIGTERM)  # the runner first: it must not resubmit
        def gone() -> bool:  # scancel again until they are: a controller just restarted refuses
            # updates for a moment ("the DB index is being set, try again in a bit")
            if ids and any(_squeue(j) for j in ids):
                subprocess.run(["scancel", *ids], capture_output=True, timeout=60)
                return False
            return True
        reached(gone, timeout=60, interval=0.5)


def test_submit_follow_to_success_with_job_in_json_and_runs_show(slurm):
    secret = "hf_SLURMSECRETVALUE1234567890"
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(12, 4), env={"HF_TOKEN": secret, "OMP_NUM_THREADS": "1"},
                                   **FAST))
    st = run.wait_status("succeeded", "failed", timeout=180)
    assert st["status"] == "succeeded", st
    assert st["engine"] == "slurm"
    (job,) = _jobs(run)
    assert job["job_id"] == st["job"]["job_id"] and job["state"] == "COMPLETED" and job["exit_code"] == 0
    assert len(job["nodes"]) == 1 and job["nodes"][0] in cluster_nodes() and job["source"] in ("sacct", "scontrol")
    assert run.events("attempt_start")[0]["engine"] == "slurm"
    (submitted,) = run.events("job_submitted")
    assert submitted["job_id"] == job["job_id"] and submitted["attempt"] == 1
    assert [m["step"] for m in run.metrics()] == list(range(1, 13)), "the job's output was tailed into metrics"
    script = (run.path / "jobs" / "attempt-1.sh").read_text()
    assert "exec srun --kill-on-bad-exit=1" in script and "OMP_NUM_THREADS" not in script, \
        "the training runs under srun; the environment travels through sbatch, not the file"
    snap = json.loads(slurm.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)
    assert snap["run"]["engine"] == "slurm" and snap["run"]["job"]["job_id"] == job["job_id"]
    shown = slurm.cli("runs", "show", run.id, check=True).stdout
    assert f"attempt 1  job {job['job_id']}  COMPLETED" in shown
    for path in run.path.rglob("*"):
        if path.is_file() and path.name != "secrets.json":
            assert secret.encode() not in path.read_bytes(), path


def test_pending_reason_shown_then_runs_when_the_node_frees(slurm, tmp_path):
    # Hold every node with an exclusive job, so ours waits for Resources.
    blocker = subprocess.run(["sbatch", "--parsable", "--exclusive", f"--nodes={len(cluster_nodes())}",
                              f"--output={tmp_path}/blocker.out",
                              "--wrap", "sleep 300"], capture_output=True, text=True, timeout=60)
    assert blocker.returncode == 0, blocker.stderr
    blocker_id = blocker.stdout.strip().split(";")[0]
    slurm.extra_jobs.append(blocker_id)
    until(lambda: _squeue(blocker_id) == "RUNNING", timeout=60, what="the blocking job to start", interval=0.2)
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(8, 4), heartbeat={"timeout_s": 2},
                                   slurm={"poll_s": 0.2, "sbatch": ["--exclusive"]}))
    st = run.wait(lambda s: (s.get("job") or {}).get("state") == "PENDING" and (s.get("job") or {}).get("reason"),
                  timeout=60, what="the job pending with a reason")
    reason = st["job"]["reason"]
    assert reason in ("Resources", "Priority"), reason
    snap = json.loads(slurm.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)
    assert snap["run"]["status_word"] == f"PENDING ({reason})" and snap["run"]["eta_s"] is None
    listed = slurm.cli("runs", "ls", check=True).stdout
    assert run.id in listed and "PENDING" in listed, listed
    time.sleep(3)  # longer than the 2 s heartbeat: queued silence is not a hang
    assert not [a for a in run.events("alert") if a.get("rule") == "hang"]
    assert run.state()["status"] == "running"
    subprocess.run(["scancel", blocker_id], capture_output=True, timeout=60)
    st = run.wait_status("succeeded", "failed", timeout=180)
    assert st["status"] == "succeeded", st


def test_clean_kill_term_then_scancel_leaves_no_survivor(slurm):
    # The step ignores SIGTERM: the grace runs out and a plain scancel ends the job.
    code = ("import signal, time\n"
            "signal.signal(signal.SIGTERM, lambda *a: print('got SIGTERM, ignoring it', flush=True))\n"
            "i = 0\n"
            "while True:\n"
            "    i += 1; print(f'step {i} loss 1.0', flush=True); time.sleep(0.1)\n")
    run = slurm.start(slurm.recipe(engine="slurm", command=["{python}", "-u", "-c", code], kill={"grace_s": 2},
                                   **FAST))
    run.wait(lambda s: (s.get("job") or {}).get("state") == "RUNNING", timeout=60, what="job running")
    until(lambda: "step 3 " in (run.path / "train.log").read_text(), timeout=60, what="output from the job")
    job_id = run.state()["job"]["job_id"]
    out = slurm.cli("kill", run.id, timeout=180)
    assert out.returncode == 0, out.stderr
    st = run.wait_status("killed", timeout=120)
    log = (run.path / "train.log").read_text()
    assert "got SIGTERM, ignoring it" in log, "scancel --signal=TERM reached the srun step"
    assert any(e["type"] == "kill_escalate" for e in run.events()), "TERM was ignored: escalated"
    assert _squeue(job_id) == "", "Slurm no longer runs the job"
    (job,) = _jobs(run)
    assert job["state"] in ("CANCELLED", "FAILED") and job["ended_at"]
    assert proctree.marked_processes(run.id) == {}, "no process of the run survives on this node"
    assert st["job"]["state"] == job["state"]


def test_crash_resubmits_from_the_verified_checkpoint(slurm):
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(12, 4, 0.0, "--fault", "segv@7#1"), **FAST))
    st = run.wait_status("succeeded", "failed", timeout=240)
    assert st["status"] == "succeeded", st
    jobs = _jobs(run)
    assert [j["attempt"] for j in jobs] == [1, 2] and jobs[0]["job_id"] != jobs[1]["job_id"]
    assert jobs[0]["state"] == "FAILED" and jobs[1]["state"] == "COMPLETED"
    crash = run.crash(1)
    assert crash["class"] == "segfault", crash
    assert crash["job"]["job_id"] == jobs[0]["job_id"]
    start2 = run.events("attempt_start")[1]
    assert start2["resumed_from"].endswith("checkpoint-4")
    assert [e["job_id"] for e in run.events("job_submitted")] == [jobs[0]["job_id"], jobs[1]["job_id"]]
    assert "--resume_from_checkpoint" in (run.path / "jobs" / "attempt-2.sh").read_text()
    shown = slurm.cli("runs", "show", run.id, check=True).stdout
    assert f"attempt 1  job {jobs[0]['job_id']}  FAILED" in shown and f"attempt 2  job {jobs[1]['job_id']}" in shown


def test_adoption_after_the_runner_is_sigkilled(slurm):
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(60, 20, 0.1), **FAST))
    st = run.wait(lambda s: (s.get("step") or 0) >= 5, timeout=120, what="5 steps")
    os.kill(st["runner"]["pid"], signal.SIGKILL)
    job_id = st["job"]["job_id"]
    until(lambda: not psutil.pid_exists(st["runner"]["pid"])
          or psutil.Process(st["runner"]["pid"]).status() == psutil.STATUS_ZOMBIE, what="the runner to be gone")
    assert _squeue(job_id) == "RUNNING", "killing the runner must not take the job down"
    out = slurm.cli("supervise", run.id, check=True)
    assert "running" in out.stdout
    st = run.wait_status("succeeded", "failed", timeout=180)
    assert st["status"] == "succeeded", st
    adopt = next(e for e in run.events() if e["type"] == "adopt")
    assert adopt["job_id"] == job_id
    assert len(_jobs(run)) == 1, "the live job was followed, not resubmitted"
    assert [m["step"] for m in run.metrics()] == list(range(1, 61))


@pytest.mark.skipif(os.environ.get("MOECONSOLE_SLURM_SLOW") == "0", reason="MOECONSOLE_SLURM_SLOW=0")
def test_time_limit_resubmits_from_the_verified_checkpoint(slurm):
    # Slurm's shortest limit is a minute, enforced on its own ~30 s sweep: this test takes 1-2 min.
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(100000, 10, 0.05),
                                   slurm={"poll_s": 0.5, "time": "1"}, heartbeat={"timeout_s": 300}))
    run.wait(lambda s: (s.get("attempt") or 0) >= 2, timeout=240, what="a second attempt")
    crash = run.crash(1)
    assert crash["class"] == "time_limit" and crash["recovery"] == "restart", crash
    assert "Slurm job state: TIMEOUT" in crash["evidence"]
    first = _jobs(run)[0]
    assert (first["state"], first["exit_code"], first["signal"]) == ("TIMEOUT", 0, None), \
        "TIMEOUT's exit is 0:0: the state, not the code, is the witness"
    start2 = run.events("attempt_start")[1]
    assert start2["resumed_from"] == newest_verified_before_restart(run), start2
    assert run.events("crash")[0]["decision"] == "restart"
    assert slurm.cli("kill", run.id, timeout=180).returncode == 0
    run.wait_status("killed", timeout=120)


def test_agents_report_every_node_of_the_job_into_the_run_directory(slurm):
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(40, 20, 0.1),
                                   slurm={"poll_s": 0.2, "agents": True}))
    script = (run.path / "jobs" / "attempt-1.sh").read_text()
    assert "agent" in script and script.index(" agent ") < script.index("exec srun")
    def agent_wrote() -> bool:
        assert run.state().get("status") != "failed", run.state()
        return bool(list((run.path / "telemetry").glob("*.json")))
    until(agent_wrote, timeout=120, what="an agent's telemetry")
    snap = json.loads(slurm.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)
    (node,) = snap["nodes"]
    assert node["host"] and node["gpu"]["available"] is False, "no GPU here: a clear state, not a crash"
    st = run.wait_status("succeeded", "failed", timeout=180)
    assert st["status"] == "succeeded", st
    until(lambda: not proctree.marked_processes(run.id), timeout=30, what="the agent step to end with the job",
          interval=0.2)


def test_restart_and_verify_work_as_for_a_local_run(slurm):
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(100000, 5, 0.05), **FAST))
    run.wait(lambda s: (s.get("step") or 0) >= 12 and s.get("verified"), timeout=120, what="a verified checkpoint")
    assert slurm.cli("verify", run.id, timeout=120).returncode == 0
    first = run.state()["job"]["job_id"]
    out = slurm.cli("restart", run.id, "--now", timeout=180)
    assert out.returncode == 0, out.stderr
    st = run.wait(lambda s: s.get("attempt") == 2 and (s.get("job") or {}).get("state") == "RUNNING",
                  timeout=120, what="attempt 2 running as a new job")
    assert st["job"]["job_id"] != first and _squeue(first) == ""
    jobs = _jobs(run)
    assert jobs[0]["ended_at"] and jobs[0]["state"] in ("CANCELLED", "FAILED", "COMPLETED")
    assert run.events("attempt_start")[1]["resumed_from"], "the new job resumes from the verified checkpoint"
    assert slurm.cli("kill", run.id, timeout=180).returncode == 0
    run.wait_status("killed", timeout=120)


def test_a_job_that_ended_while_no_runner_watched_is_judged_from_slurms_record(slurm):
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(30, 10, 0.05, "--fault", "segv@20#1"), **FAST))
    st = run.wait(lambda s: (s.get("job") or {}).get("state") == "RUNNING", timeout=120, what="job running")
    os.kill(st["runner"]["pid"], signal.SIGKILL)
    job_id = st["job"]["job_id"]
    until(lambda: not _squeue(job_id), timeout=120, what="the job's end", interval=0.2)
    assert slurm.cli("supervise", run.id, timeout=120).returncode == 0
    st = run.wait_status("succeeded", "failed", timeout=180)
    assert st["status"] == "succeeded", st
    assert run.crash(1)["class"] == "segfault", "the ended job was judged from its log and Slurm's record"
    jobs = _jobs(run)
    assert jobs[0]["job_id"] == job_id and jobs[0]["state"] == "FAILED" and jobs[0]["source"] in ("sacct", "scontrol")
    assert len(jobs) == 2 and jobs[1]["state"] == "COMPLETED"


def test_a_refused_submission_fails_the_run_with_sbatchs_reason(slurm):
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(8, 4), slurm={"poll_s": 0.2, "partition": "nosuchpart"}),
                      refused=True)
    assert "Invalid partition" in run.start_stderr, "run --detach says why, exit 1"
    st = run.wait_status("failed", "succeeded", timeout=120)
    assert st["status"] == "failed", st
    crash = run.crash(1)
    assert crash["class"] == "submit_refused" and "partition" in crash["summary"].lower(), crash
    assert "moeconsole: sbatch failed:" in (run.path / "train.log").read_text()
    assert len(run.events("attempt_start")) == 1, "a refused job is not submitted again"
    assert _jobs(run)[0]["state"] == "SUBMIT_REFUSED"


def test_a_refusal_that_comes_late_is_still_a_refusal_for_run_detach(slurm, tmp_path, monkeypatch):
    """A controller slow to answer (a busy machine, a long MessageTimeout) and a runner slow to
    start: sbatch's refusal came after `run --detach` had stopped waiting, and a run that could
    never start was reported "started under a detached runner", exit 0 (CI, 2 cores loaded).
    `run --detach` waits for sbatch's answer as long as the runner lets sbatch take, and says it
    waits. The real sbatch answers; a shim in front of it on PATH takes 12 s first."""
    shim = tmp_path / "slow-bin"
    shim.mkdir()
    real = shutil.which("sbatch")
    assert real, "sbatch on PATH"
    (shim / "sbatch").write_text(f"#!/bin/sh\nsleep 12\nexec {real} \"$@\"\n")
    (shim / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(8, 4), slurm={"poll_s": 0.2, "partition": "nosuchpart"}),
                      refused=True)
    assert "Invalid partition" in run.start_stderr, run.start_stderr
    assert "waiting for sbatch's answer" in run.start_stderr, run.start_stderr
    assert run.state()["status"] == "failed"


def test_an_unreachable_controller_is_waited_for_then_the_job_is_submitted(slurm, tmp_path, monkeypatch):
    # The runner and its Slurm commands read this config; it names a dead controller port first.
    good = open("/etc/slurm/slurm.conf").read() if os.path.exists("/etc/slurm/slurm.conf") else None
    if good is None:
        pytest.skip("the local cluster's slurm.conf is not at /etc/slurm/slurm.conf")
    conf = tmp_path / "slurm.conf"
    conf.write_text(good.replace("SlurmctldPort=6817", "SlurmctldPort=6999"))
    monkeypatch.setenv("SLURM_CONF", str(conf))
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(8, 4), slurm={"poll_s": 0.2},
                                   restart={"submit_wait_s": 0.5, "submit_wait_max_s": 600}))
    st = run.wait(lambda s: (s.get("last_crash") or {}).get("class") == "slurm_unavailable", timeout=120,
                  what="the failed submission judged")
    # While sbatch waited on the dead controller the runner kept answering.
    status = slurm.cli("--json", run.id, "--once", "--no-gpu", timeout=30)
    assert status.returncode == 0
    crash = run.events("crash")[0]
    assert crash["decision"] == "restart" and "controller" in crash["summary"], crash
    conf.write_text(good)  # the controller is back
    st = run.wait_status("succeeded", "failed", timeout=180)
    assert st["status"] == "succeeded", st
    # it tried every 0.5 s until the conf was back (more attempts on a loaded machine): waits for the
    # controller use no restart against the cap (policy.restarts_used), so the count shown stays 0
    assert st["restarts"] == 0, st
    jobs = _jobs(run)
    assert jobs[0]["state"] == "SUBMIT_UNREACHABLE" and jobs[-1]["state"] == "COMPLETED"


def test_a_job_whose_sbatch_answer_was_lost_is_found_by_name_and_adopted(slurm):
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(40, 20, 0.1), **FAST))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, timeout=120, what="3 steps")
    os.kill(st["runner"]["pid"], signal.SIGKILL)
    job_id = st["job"]["job_id"]
    # As if the runner had died while sbatch ran: the record knows the job's name, not its id.
    rec_path = run.path / "jobs" / "attempt-1.json"
    rec = json.loads(rec_path.read_text())
    assert rec["job_name"] == f"moeconsole-{run.id}-1"
    rec.update(job_id="", state="SUBMITTING")
    rec_path.write_text(json.dumps(rec))
    assert slurm.cli("supervise", run.id, timeout=120).returncode == 0
    st = run.wait_status("succeeded", "failed", timeout=180)
    assert st["status"] == "succeeded", st
    # adopted at once, its id not known yet (round 20: looked for by name in the background), then found
    assert "job_id" not in next(e for e in run.events() if e["type"] == "adopt")
    assert [e["job_id"] for e in run.events("job_submitted") if e.get("found_by_name")] == [job_id]
    assert len(_jobs(run)) == 1 and _jobs(run)[0]["job_id"] == job_id, "found, not submitted twice"


@pytest.fixture
def accounting_down():
    """slurmdbd stopped (as when it cannot reach its database): sacct fails; started again after."""
    local = Path(os.environ.get("SLURM_LOCAL_DIR", "/tmp/moeconsole-slurm"))
    pid_file = local / "run" / "slurmdbd.pid"
    if not pid_file.exists():
        pytest.skip("the local cluster's slurmdbd is not this script's (no pid file)")
    os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)
    until(lambda: subprocess.run(["sacct", "-n", "-X", "-S", "now-1hour"], capture_output=True,
                                 timeout=60).returncode != 0, timeout=60, what="sacct to fail")
    try:
        yield
    finally:
        subprocess.run(["/usr/sbin/slurmdbd"], capture_output=True, timeout=60)
        until(lambda: subprocess.run(["sacctmgr", "-n", "list", "cluster"], capture_output=True,
                                     timeout=60).returncode == 0, timeout=60, what="slurmdbd back")


def test_a_killed_job_ends_the_run_while_accounting_is_down(slurm, accounting_down):
    """A common outage: slurmdbd cannot reach its database. The user's kill ends the job at once;
    the run must end KILLED from the controller's word, never STOPPING for good re-sending scancel."""
    code = "import time\ni = 0\nwhile True:\n    i += 1; print(f'step {i} loss 1.0', flush=True); time.sleep(0.1)\n"
    run = slurm.start(slurm.recipe(engine="slurm", command=["{python}", "-u", "-c", code], kill={"grace_s": 2},
                                   **FAST))
    run.wait(lambda s: (s.get("job") or {}).get("state") == "RUNNING", timeout=60, what="job running")
    job_id = run.state()["job"]["job_id"]
    out = slurm.cli("kill", run.id, timeout=180)
    assert out.returncode == 0, out.stderr
    st = run.wait_status("killed", timeout=120)
    assert _squeue(job_id) == ""
    assert st["job"]["state"] in ("CANCELLED", "FAILED", "ENDED") and st["job"]["source"] == "scontrol", st["job"]


@pytest.fixture
def one_node_partition():
    """A partition of one node, made for the test and deleted after it (its jobs are cancelled by
    then: list this fixture before ``slurm``). A 2-node job sent there waits with
    PartitionNodeLimit, forever."""
    nodes = cluster_nodes()
    if len(nodes) < 2:
        pytest.skip("a 2-node job needs a cluster of 2 nodes or more: scripts/slurm-local.sh start --nodes 3")
    name = f"moeconsole-one-{os.getpid()}"
    made = subprocess.run(["scontrol", "create", f"PartitionName={name}", f"Nodes={nodes[0]}", "State=UP",
                           "MaxTime=INFINITE"], capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    try:
        yield name
    finally:
        subprocess.run(["scontrol", "delete", f"PartitionName={name}"], capture_output=True, timeout=60)


def test_a_job_that_can_never_start_where_it_was_sent_is_a_warn_naming_what_to_change(one_node_partition, slurm):
    run = slurm.start(slurm.recipe(engine="slurm", command=_demo(8, 4), heartbeat={"timeout_s": 120},
                                   slurm={"poll_s": 0.2, "nodes": 2, "partition": one_node_partition}))
    st = run.wait(lambda s: (s.get("job") or {}).get("reason") == "PartitionNodeLimit", timeout=120,
                  what="the 2-node job pending with PartitionNodeLimit")
    job_id = st["job"]["job_id"]
    alerts = until(lambda: [a for a in run.events("alert") if a.get("rule") == "slurm_pending"
                            and a["values"].get("reason") == "PartitionNodeLimit"] and run.events("alert"),
                   timeout=60, what="the slurm_pending alert")
    mine = [a for a in alerts if a.get("rule") == "slurm_pending"]
    assert mine[-1]["level"] == "warning" and all(a.get("update") for a in mine[1:]), \
        "Slurm may say PartitionConfig first: the same alert, its line updated"
    snap = json.loads(slurm.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)
    (group,) = [g for g in snap["alert_groups"] if g["key"] == "slurm_pending"]
    assert group["active"] and group["level"] == "warning" and group["count"] == 1
    assert group["headline"].startswith(f"Slurm job {job_id} cannot start by waiting: PartitionNodeLimit: ")
    assert "lower slurm.nodes" in group["headline"] and "slurm.partition" in group["headline"]
    shown = slurm.cli("runs", "show", run.id, check=True).stdout
    assert f"Slurm job {job_id} cannot start by waiting: PartitionNodeLimit" in shown, shown
    assert "lower slurm.nodes" in shown, shown
    assert run.state()["status"] == "running", "a warning: the run waits, the user decides"
