"""Round 20 (Slurm), without a cluster: the time limit's warning signal (sbatch --signal) as the runner reads it,
and the job named by a lost sbatch answer looked for without ever waiting (fake Slurm commands on PATH)."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from moeconsole.runner.core.crash import TimeWarningEnd, classify_job_state
from moeconsole.runner.process.slurm import client
from moeconsole.runner.process.slurm.text import time_warning
from tests.slurm.test_slurm_review_r30 import _engine, fake  # noqa: F401 (the fixture)
from tests.waiting import until


@pytest.mark.parametrize("opts, signum", [(["--signal=USR1@40"], 10), (["--signal=B:SIGUSR2@90"], 12),
                                          (["--signal=10"], 10), (["--signal=RB:TERM"], 15),
                                          (["--signal=USR1", "--signal=USR2@5"], 12),
                                          (["--signal=NOSUCH@3"], None), (["--qos=high"], None)])
def test_the_time_limit_warning_is_read_as_sbatch_reads_it(opts, signum):
    got = time_warning(opts)
    assert (got.signum if got else None) == signum


def test_a_death_by_the_warning_is_the_time_limit_resumed_not_the_trainings_crash():
    warn = time_warning(["--signal=USR1@40"])
    assert warn is not None and warn.ended(10, 0) and warn.ended(None, 10) and not warn.ended(1, 0)
    tail = ["step 7", "srun: error: node1: task 0: User defined signal 1"]
    end = TimeWarningEnd(warn.option, warn.signum, by_signal=False)
    v = classify_job_state("FAILED", tail, time_warning=end)
    assert v is not None and v.cls == "time_limit" and v.recovery == "restart", v
    assert "SIGUSR1" in v.summary and "--signal=USR1@40" in v.summary
    assert classify_job_state("FAILED", tail) is None      # no warning asked: judged from exit and log
    # a state that proves its own cause keeps it
    assert classify_job_state("NODE_FAIL", tail, time_warning=end).cls == "node_fail"


def _fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_a_name_search_answers_from_accounting_while_the_controller_keeps_squeue_waiting(tmp_path, monkeypatch):
    _fake(tmp_path, "squeue", "sleep 60\n")              # the controller away: squeue retries MessageTimeout
    _fake(tmp_path, "sacct", "echo '812|RUNNING'\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    search = client.NameSearch("moeconsole-r-1", interval_s=0.1)
    got = until(search.poll, timeout=30, what="accounting's answer")
    assert got.job_id == "812" and got.state == "RUNNING" and got.source == "sacct"


def test_a_name_search_with_slurm_away_keeps_asking_and_says_why_and_a_definite_miss_is_no_job(tmp_path, monkeypatch):
    _fake(tmp_path, "squeue", "echo 'slurm_load_jobs error: Unable to contact slurm controller (connect failure)' >&2;"
                              " exit 1\n")
    _fake(tmp_path, "sacct", "echo 'sacct: error: Problem talking to the database: Connection refused' >&2; exit 1\n")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    search = client.NameSearch("moeconsole-r-1", interval_s=0.1)
    until(lambda: search.poll() is None and search.last_error, timeout=30, what="the failure said")
    assert "Unable to contact slurm controller" in search.last_error
    _fake(tmp_path, "squeue", "exit 0\n")                # the controller back: no such job queued or running
    _fake(tmp_path, "sacct", "echo 'Slurm accounting storage is disabled' >&2; exit 1\n")

    def missed() -> bool:
        try:
            search.poll()
        except client.JobNotFound:
            return True
        return False
    until(missed, timeout=30, what="the definite miss")


DB_INDEX = "scancel: error: Kill job error on job id 77: Job update not available right now, the DB index is being set, try again in a bit"


def test_a_requeued_jobs_refused_scancel_is_sent_again_and_the_attempt_ends_only_once_it_takes(fake, tmp_path):
    """A controller just back refuses updates a moment (Slurm 22.05's words above, measured). Before round 20 the
    attempt ended at once and a refused scancel was dropped: the requeued job stayed queued, to start its old
    script again beside the new job."""
    fake.answer("sacct", 0, "77|RUNNING|0:0|node1\n")
    fake.answer("scontrol", 0, "JobId=77 JobName=x JobState=RUNNING Reason=None Restarts=0 ExitCode=0:0 NodeList=node1\n")
    fake.answer("squeue", 0, "77|RUNNING|None|node1\n")
    att = _engine(tmp_path).adopt(1, [])
    assert att is not None
    until(lambda: (att.poll({}), att.requeue_probe is None)[1], 60, "the adoption's count judged")
    fake.answer("scancel", 1, err=DB_INDEX)
    fake.answer("squeue", 0, "77|PENDING|BeginTime|\n")     # requeued: queued again after it ran
    until(lambda: (att.poll({}), sum(c == "scancel" for c in fake.calls()) >= 2)[1], 60, "scancel sent again")
    assert att.poll({}).__class__.__name__ == "Running", "not over while the requeued job may start again"
    assert json.loads(att.run.job_record(1).read_text())["state"] == "REQUEUED"
    fake.answer("scancel", 0)
    until(lambda: att.poll({}).__class__.__name__ == "Ended", 60, "the attempt over once scancel took")
