"""Slurm's outputs as measured on Slurm 22.05, read into JobState; the batch script quoted so no
recipe value is ever shell code."""
from __future__ import annotations

import subprocess

import pytest

from moeconsole.runner.process.slurm.text import (BatchSpec, JobState, batch_script, class_from_state, expand_nodes,
                               parse_sacct, parse_sbatch_parsable, parse_scontrol_job, parse_squeue)


def test_sbatch_parsable():
    assert parse_sbatch_parsable("1234\n") == "1234"
    assert parse_sbatch_parsable("1234;cluster-a\n") == "1234"
    with pytest.raises(ValueError, match="no job id"):
        parse_sbatch_parsable("sbatch: error: Batch job submission failed: Invalid account\n")


def test_squeue_pending_with_reason_and_running_nodes():
    assert parse_squeue("17|PENDING|Resources|\n", "17") == JobState("17", "PENDING", "Resources", source="squeue")
    js = parse_squeue("17|RUNNING|None|gpu[01-02]\n", "17")
    assert js.state == "RUNNING" and js.reason is None and js.nodes == ("gpu01", "gpu02")
    assert parse_squeue("", "17") is None                       # no longer listed


def test_scontrol_and_sacct_disagree_on_the_exit_of_a_terminated_script():
    sc = ("JobId=3 JobName=job.sh UserId=root(0) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) "
          "ExitCode=143:0 RunTime=00:00:04 NodeList=localhost BatchHost=localhost")
    a = parse_scontrol_job(sc)
    assert (a.state, a.exit_code, a.exit_signal, a.reason, a.source) == ("FAILED", 143, None, "NonZeroExitCode", "scontrol")
    b = parse_sacct("3|FAILED|15:0|localhost\n3.batch|FAILED|15:0|localhost\n", "3")
    assert (b.state, b.exit_code, b.source) == ("FAILED", 15, "sacct")
    assert parse_sacct("6|CANCELLED by 0|0:15|localhost\n", "6").state == "CANCELLED"
    assert parse_sacct("6|CANCELLED by 0|0:15|localhost\n", "6").exit_signal == 15


def test_hostlists():
    assert expand_nodes("gpu[01-03,07],login1") == ("gpu01", "gpu02", "gpu03", "gpu07", "login1")
    assert expand_nodes("node[8-10]") == ("node8", "node9", "node10")
    assert expand_nodes("None assigned") == ()


def test_state_classes():
    assert class_from_state(JobState("1", "NODE_FAIL")) == "node_fail"
    assert class_from_state(JobState("1", "TIMEOUT")) == "timeout"
    assert class_from_state(JobState("1", "OUT_OF_MEMORY")) == "killed_oom"
    assert class_from_state(JobState("1", "FAILED")) is None     # decided from the exit and the log
    assert JobState("1", "PENDING").pending and JobState("1", "PREEMPTED").final


def test_batch_script_quotes_every_value_and_runs_the_step_under_srun(tmp_path):
    evil = "$(touch " + str(tmp_path / "pwned") + ")"
    spec = BatchSpec(job_name="t; rm -rf /", argv=["python", "-c", "print('a b')", evil], output=str(tmp_path / "train.log"),
                     workdir=str(tmp_path), env={"HF_HOME": "/data/hf cache", "X": "`id`"}, nodes=2, gpus_per_node=8,
                     time_limit="1-00:00:00", partition="gpu", extra_sbatch=["--exclusive", "--qos=high"],
                     marker="=== moeconsole: attempt 2 start")
    text = batch_script(spec)
    assert "#SBATCH --job-name='t; rm -rf /'" in text and "#SBATCH --gpus-per-node=8" in text
    assert "#SBATCH --time=1-00:00:00" in text and "#SBATCH --exclusive" in text
    last = text.strip().splitlines()[-1]
    assert last.startswith("exec srun --kill-on-bad-exit=1 python -c ")
    # bash parses the script without running anything from a value: check with `bash -n` and by
    # running the export/printf part with srun replaced by echo
    script = tmp_path / "job.sh"
    script.write_text(text.replace("exec srun --kill-on-bad-exit=1", "exec printf '%s\\n'"))
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    out = subprocess.run(["bash", str(script)], capture_output=True, text=True, cwd=tmp_path).stdout.splitlines()
    assert out == ["=== moeconsole: attempt 2 start", "python", "-c", "print('a b')", evil]
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("bad", [{"time_limit": "1 day"}, {"extra_sbatch": ["--wrap=rm -rf /"]},
                                 {"extra_sbatch": ["--comment=$(id)"]}, {"extra_sbatch": ["--wrap=id"]}, {"env": {"A=B": "x"}},
                                 {"job_name": "a\nb"}, {"argv": []}])
def test_batch_script_refuses_what_it_cannot_quote(tmp_path, bad):
    base = dict(job_name="t", argv=["python"], output=str(tmp_path / "o"), workdir=str(tmp_path))
    with pytest.raises(ValueError):
        batch_script(BatchSpec(**{**base, **bad}))
