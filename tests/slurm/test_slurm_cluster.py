"""The batch script and the parsers against a real Slurm cluster on this machine: the one-node
cluster on loopback or the multi-node one of network namespaces (scripts/slurm-local.sh;
.ci/run installs and starts the latter). Skipped, with the reason, where no cluster answers."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from moeconsole.runner.process.slurm.text import (SACCT_FIELDS, SQUEUE_FORMAT, BatchSpec, JobState, batch_script, parse_sacct,
                               parse_sbatch_parsable, parse_squeue)
from tests.waiting import until


def _local_controller_pid() -> int | None:
    """The pid of the local test cluster's slurmctld (scripts/slurm-local.sh records it under
    $SLURM_LOCAL_DIR/run), if it lives; None for any other controller."""
    pidfile = Path(os.environ.get("SLURM_LOCAL_DIR", "/tmp/moeconsole-slurm")) / "run" / "slurmctld.pid"
    try:
        pid = int(pidfile.read_text().strip())
        os.kill(pid, 0)
    except PermissionError:
        return pid            # root's controller, asked by another user: alive
    except (OSError, ValueError):
        return None
    return pid


def _cluster_up() -> str | None:
    """Why the Slurm tests cannot run here, or None. Only the local test cluster is used: on a login node of a
    real site the controller that answers is the site's, and tests never submit jobs to, suspend or requeue on
    a cluster they did not start (the user's Slurm is theirs)."""
    if shutil.which("sbatch") is None:
        return "Slurm is not installed (scripts/slurm-local.sh install)"
    try:
        if subprocess.run(["scontrol", "ping"], capture_output=True, timeout=20).returncode != 0:
            return "no Slurm controller answers (scripts/slurm-local.sh start)"
    except subprocess.TimeoutExpired:
        return "scontrol ping timed out"
    if _local_controller_pid() is None:
        return ("a Slurm controller answers, but not the local test cluster's (scripts/slurm-local.sh start): "
                "the tests submit no job to a cluster they did not start")
    if os.geteuid() != 0:
        # the tests act as its administrator (suspend, requeue, drain a node, make a partition)
        return "the local test cluster is root's (SlurmUser=root): its tests run as root"
    return None


pytestmark = pytest.mark.skipif(_cluster_up() is not None, reason=str(_cluster_up()))


def cluster_nodes() -> list[str]:
    """The cluster's node names (``localhost`` on the one-node cluster, node1..nodeN on the
    multi-node one)."""
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True, timeout=60).stdout
    return sorted(set(out.split()))


def _state(job: str) -> JobState | None:
    q = parse_squeue(subprocess.run(["squeue", "-h", "-j", job, "-o", SQUEUE_FORMAT], capture_output=True,
                                    text=True).stdout, job)
    if q is not None:
        return q
    return parse_sacct(subprocess.run(["sacct", "-n", "-P", "-X", "-j", job, "-o", SACCT_FIELDS],
                                      capture_output=True, text=True).stdout, job)


def _wait(job: str, pred, timeout: float = 120.0) -> JobState:
    last = None

    def reached() -> JobState | None:
        nonlocal last
        last = _state(job)
        return last if last is not None and pred(last) else None
    try:
        return until(reached, timeout, what=f"job {job}", interval=0.2)
    except AssertionError:
        raise AssertionError(f"job {job}: timed out; last state {last}") from None


@pytest.fixture
def submit(tmp_path):
    jobs: list[str] = []

    def _submit(code: str, **kw) -> tuple[str, Path]:
        log = tmp_path / "train.log"
        spec = BatchSpec(job_name="moeconsole-test", argv=[sys.executable, "-u", "-c", code], output=str(log),
                         workdir=str(tmp_path), marker="=== moeconsole: attempt 1 start", **kw)
        script = tmp_path / "job.sh"
        script.write_text(batch_script(spec))
        out = subprocess.run(["sbatch", "--parsable", str(script)], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        job = parse_sbatch_parsable(out.stdout)
        jobs.append(job)
        return job, log

    try:
        yield _submit
    finally:
        for job in jobs:
            subprocess.run(["scancel", job], capture_output=True, timeout=60)


def test_follow_to_success(submit):
    job, log = submit("import time\nfor i in range(3): print(f'step {i}', flush=True); time.sleep(0.3)",
                      env={"MOECONSOLE_TEST": "a value with spaces"})
    final = _wait(job, lambda s: s.final)
    assert (final.state, final.exit_code, final.source) == ("COMPLETED", 0, "sacct")
    assert len(final.nodes) == 1 and final.nodes[0] in cluster_nodes()
    text = log.read_text()
    assert text.splitlines()[0] == "=== moeconsole: attempt 1 start" and "step 2" in text


def test_scancel_term_reaches_the_srun_step(submit):
    code = ("import signal, sys, time\n"
            "def bye(*_): print('got TERM', flush=True); sys.exit(3)\n"
            "signal.signal(signal.SIGTERM, bye)\n"
            "print('ready', flush=True)\n"
            "time.sleep(120)\n")
    job, log = submit(code)
    _wait(job, lambda s: s.state == "RUNNING")
    until(lambda: "ready" in (log.read_text() if log.exists() else ""), timeout=60, what="the job's ready line")
    subprocess.run(["scancel", "--signal=TERM", job], check=True, timeout=60)
    _wait(job, lambda s: s.final)
    assert "got TERM" in log.read_text()


def test_follower_sees_pending_reason_then_the_final_state_without_blocking(submit, tmp_path):
    from moeconsole.runner.process.slurm.client import JobFollower, cancel

    hog, _ = submit("import time; time.sleep(60)", extra_sbatch=["--exclusive"], nodes=len(cluster_nodes()))
    _wait(hog, lambda s: s.state == "RUNNING")
    job, log = submit("print('second', flush=True)")
    f = JobFollower(job, interval_s=0.2)
    seen = None

    def polled(done) -> bool:
        nonlocal seen
        t0 = time.monotonic()
        seen = f.poll()
        assert time.monotonic() - t0 < 0.5          # a poll never waits for Slurm
        return seen is not None and done(seen)
    until(lambda: polled(lambda s: s.pending and s.reason), timeout=60, what="the job pending with a reason")
    assert seen is not None and seen.state == "PENDING" and seen.reason in ("Resources", "Priority")
    cancel(hog).wait()
    until(lambda: polled(lambda s: s.final), timeout=120, what="the job's end")
    assert seen is not None and seen.state == "COMPLETED" and seen.exit_code == 0 and seen.source == "sacct"
    assert "second" in log.read_text()
