"""Round 21 (Slurm), without the cluster: where a job's end fell against its time limit's warning, read from
Slurm's own fields, and what the runner makes of a training that exited 0 short of its total there."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import TimeWarningEnd, warning_handled
from moeconsole.runner.process.slurm.text import parse_sacct, parse_scontrol_job, slurm_seconds, time_warning


@pytest.mark.parametrize("text,seconds", [("00:01:05", 65), ("1-02:00:00", 93600), ("05:07", 307),
                                          ("UNLIMITED", None), ("Partition_Limit", None), ("", None)])
def test_scontrol_durations_in_seconds(text, seconds):
    assert slurm_seconds(text) == seconds


def test_sacct_and_scontrol_say_how_long_the_job_ran_and_its_limit():
    st = parse_sacct("7|COMPLETED|0:0|node1|95|2\n", "7")   # ElapsedRaw seconds, TimelimitRaw minutes (sacct(1))
    assert (st.state, st.elapsed_s, st.limit_s) == ("COMPLETED", 95, 120)
    assert parse_sacct("7|COMPLETED|0:0|node1|95|UNLIMITED\n", "7").limit_s is None
    st = parse_scontrol_job("JobId=7 JobName=x JobState=COMPLETED Reason=None ExitCode=0:0 RunTime=00:01:35 "
                            "TimeLimit=00:02:00 NodeList=node1")
    assert (st.elapsed_s, st.limit_s) == (95, 120)


@pytest.mark.parametrize("option,elapsed,came", [
    ("--signal=USR1@40", 49, False),   # 120 - 40 - PERIODIC_TIMEOUT (30) = 50: no sweep could have sent it yet
    ("--signal=USR1@40", 50, True),
    ("--signal=USR1", 29, False),      # no @TIME: 60 s (sbatch(1))
    ("--signal=USR1", 30, True),
    ("--signal=B:USR1@0", 89, False),
    ("--signal=B:USR1@0", 90, True),
])
def test_the_warning_may_have_come_only_in_the_last_time_plus_a_sweep_of_the_limit(option, elapsed, came):
    warn = time_warning([option])
    assert warn is not None and warn.may_have_come(elapsed, 120) is came
    assert not warn.may_have_come(None, 120) and not warn.may_have_come(elapsed, None)


def test_an_exit_0_short_of_its_total_is_the_time_limit_only_where_the_log_says_the_warning_was_handled():
    """Review R67 finding 3: run time inside the window alone is no evidence (an early stop there was resumed and
    trained over); a line of the training's own handler is."""
    inside = TimeWarningEnd("--signal=USR1@40", 10, by_signal=False, killed=False, in_window=True)
    said = ["{'loss': '1.0', 'global_step/max_steps': '135/4000'}", "Requeued SLURM job: 97"]
    verdict = warning_handled(inside, "COMPLETED", "step 135 of 4000", said)
    assert verdict is not None and (verdict.cls, verdict.recovery) == ("time_limit", "restart")
    assert "--signal=USR1@40" in verdict.summary and "step 135 of 4000" in verdict.summary
    assert warning_handled(inside, "COMPLETED", "step 135 of 4000", said[:1]) is None
    assert warning_handled(None, "COMPLETED", "step 135 of 4000", said) is None


@pytest.mark.parametrize("name,kept", [("sbatch", True), ("squeue", False), ("sacct", False)])
def test_a_slurm_command_given_by_path_gets_the_environment_its_name_calls_for(tmp_path, name, kept):
    """``AsyncCommand`` passes sbatch its environment as given (``sbatch_env``: the job's environment, exported
    whole) and strips the user's filter and format variables from the others (``slurm_tool_env``). Before round 21
    it compared ``argv[0] == "sbatch"`` literally: ``/opt/slurm/bin/sbatch`` lost the job's SQUEUE_*/SACCT_*
    variables. A real program (env(1)) under each command's name, given by its full path, prints what it got."""
    import shutil
    import tests.waiting as waiting
    from moeconsole.runner.process.slurm.client import AsyncCommand
    tool = tmp_path / "bin" / name
    tool.parent.mkdir()
    tool.symlink_to(shutil.which("env"))
    cmd = AsyncCommand([str(tool)], env={"PATH": "/usr/bin:/bin", "SQUEUE_FORMAT": "%i", "SACCT_FORMAT": "JobID"},
                       timeout_s=120)
    done = waiting.until(cmd.poll, timeout=120, what=f"{name} by path")
    assert done.returncode == 0, done.err
    assert (("SQUEUE_FORMAT=%i" in done.out.splitlines()) and ("SACCT_FORMAT=JobID" in done.out.splitlines())) is kept, done.out


def test_lint_refuses_an_array_in_one_line():
    """``slurm.sbatch: [--array=0-1]`` would submit the one training as two jobs into one run directory, listed by
    squeue and sacct as ``ID_0``/``ID_1``, never as the id the runner follows: refused when the recipe loads."""
    import subprocess
    import sys
    from tests.runner.conftest import REPO
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "lint", "recipes/tiny-moe-slurm.yaml",
                          "--set", "slurm.sbatch=[--array=0-1]"], capture_output=True, text=True, timeout=120,
                         cwd=REPO)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert "one training, one job" in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_an_array_left_in_the_users_shell_never_reaches_sbatch():
    from moeconsole.runner.process.slurm.text import BatchSpec, sbatch_env
    spec = BatchSpec(job_name="moeconsole-r-1", argv=["python", "train.py"], output="/tmp/log", workdir="/tmp")
    assert "SBATCH_ARRAY_INX" not in sbatch_env({"SBATCH_ARRAY_INX": "0-1", "SBATCH_PARTITION": "gpu"}, spec)
