"""Review R67, without the cluster: sbatch reads every extra option the way its own getopt_long does (any
unambiguous prefix of a long option, a short form), so the runner puts each one in its full name first and refuses
what it owns or forbids however it is written; one table pairs those options with their SBATCH_* variables."""
from __future__ import annotations

import subprocess
import sys

import pytest

from moeconsole.runner.process.slurm.text import BatchSpec, check_sbatch_option, sbatch_env, time_warning
from tests.runner.conftest import REPO


@pytest.mark.parametrize("opt", ["--arr=0-1", "--arra=0-1", "--requ", "--no-requ", "--job-na=x", "--outp=/tmp/x",
                                 "--parsa", "--wait", "--wai", "--export=NONE", "--export-f=/tmp/e",
                                 "--get-user-env", "-a0-1", "-W", "--test-only"])
def test_an_option_that_makes_a_second_job_or_one_the_runner_cannot_follow_is_refused(opt):
    """R67 findings 1 and 2: sbatch takes ``--arr=0-1`` as ``--array=0-1`` (measured: tasks ID_0, ID_1), ``--requ``
    undoes the runner's --no-requeue, ``--wait`` holds the job id back until the job ends (the runner submitted a
    second job while the first trained)."""
    with pytest.raises(ValueError):
        check_sbatch_option(opt)


@pytest.mark.parametrize("opt,words", [("--no=1", "write the option in full"), ("--sig=USR1@40", "--signal"),
                                       ("--zz=1", "sbatch has no option --zz"), ("--time", "takes a value")])
def test_an_option_sbatch_would_read_otherwise_than_written_is_refused_in_words(opt, words):
    with pytest.raises(ValueError, match=words.replace("-", r"\-")):
        check_sbatch_option(opt)


@pytest.mark.parametrize("opt", ["--comment=x", "--mem=4G", "--exclusive", "--qos=high", "--signal=USR1@40"])
def test_an_ordinary_option_written_in_full_is_accepted(opt):
    check_sbatch_option(opt)


def test_an_abbreviated_signal_is_still_the_time_warning():
    warn = time_warning(["--sig=USR1@40"])
    assert warn is not None and warn.ahead_s == 40


@pytest.mark.parametrize("var", ["SBATCH_WAIT", "SBATCH_EXPORT", "SBATCH_GET_USER_ENV", "SBATCH_ARRAY_INX",
                                 "SBATCH_REQUEUE", "SBATCH_JOB_NAME", "SBATCH_OUTPUT", "SBATCH_ERROR"])
def test_the_variable_of_every_refused_option_never_reaches_sbatch(var):
    spec = BatchSpec(job_name="j", argv=["x"], output="/tmp/l", workdir="/tmp")
    env = sbatch_env({var: "1", "SBATCH_QOS": "high"}, spec)
    assert var not in env and env["SBATCH_QOS"] == "high"


def test_a_signal_option_drops_the_shells_sbatch_signal():
    spec = BatchSpec(job_name="j", argv=["x"], output="/tmp/l", workdir="/tmp", extra_sbatch=["--signal=USR1@40"])
    assert "SBATCH_SIGNAL" not in sbatch_env({"SBATCH_SIGNAL": "USR2@300"}, spec)
    spec = BatchSpec(job_name="j", argv=["x"], output="/tmp/l", workdir="/tmp", extra_sbatch=["--mem=4G"])
    assert sbatch_env({"SBATCH_MEM_PER_NODE": "1G"}, spec) == {}    # --mem's variable (opt.c env_vars[])


@pytest.mark.parametrize("opt", ["--wait", "--arr=0-1", "--job-na=x"])
def test_lint_refuses_a_second_job_in_one_line(opt):
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "lint", str(REPO / "recipes" / "tiny-moe-slurm.yaml"),
                          "--set", f"slurm.sbatch=[{opt}]"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert out.returncode == 2 and "Traceback" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and opt in out.stderr, out.stderr


def _judged(warn, tail, last_step=135):
    """What the judge makes of a job that exited 0 at ``last_step`` of 4000 with ``tail`` as its log's end."""
    from moeconsole.runner.checkpoints.keeper import SaveCheck
    from moeconsole.runner.process.attempt import ExitStatus
    from tests.runner.test_judge import ended, run_judge
    return run_judge(ended(returncode=0, last_step=last_step, max_steps=4000, tail=tail,
                           exit_status=ExitStatus(0, None, 1000.0, job_state="COMPLETED", time_warning=warn)),
                     saved=lambda: SaveCheck(True))


_STEP = "{'loss': '1.0', 'global_step/max_steps': '135/4000'}"


def test_a_sigterm_the_log_proves_is_not_a_usr1_warning():
    """R67 finding 4: transformers' JIT checkpoint handles SIGTERM only; under --signal=USR1@40 a SIGTERM the log
    proves (a preemption, an admin's scancel -s TERM) stays "preempted"."""
    from moeconsole.runner.core.crash import TimeWarningEnd
    warn = TimeWarningEnd("--signal=USR1@40", 10, by_signal=False, killed=False, in_window=True)
    out = _judged(warn, [_STEP, "[INFO:transformers.trainer_jit_checkpoint] Saving JIT checkpoint at step 135"])
    assert out.report is not None and out.report.cls == "preempted", (out.report.cls, out.report.summary)


def test_a_sigterm_warning_the_jit_checkpoint_handled_inside_the_window_is_the_time_limit():
    from moeconsole.runner.core.crash import TimeWarningEnd
    warn = TimeWarningEnd("--signal=TERM@120", 15, by_signal=False, killed=False, in_window=True)
    out = _judged(warn, [_STEP, "[INFO:transformers.trainer_jit_checkpoint] Saving JIT checkpoint at step 135"])
    assert out.report is not None and out.report.cls == "time_limit", (out.report.cls, out.report.summary)


def test_a_training_that_stops_itself_inside_the_window_is_a_short_success_not_a_time_limit():
    """R67 finding 3: an exit 0 short of the total inside the warning's window with nothing in the log of a
    handled warning (early stopping, a data set run dry) is the training's own end, its resume offered, never
    resumed and trained over by the runner."""
    from moeconsole.runner.core.crash import TimeWarningEnd
    warn = TimeWarningEnd("--signal=USR1@40", 10, by_signal=False, killed=False, in_window=True)
    out = _judged(warn, [_STEP, "[early stopping] eval loss did not improve for 3 evaluations: stopping"])
    assert out.report is None and out.judged.action == "succeed", out.judged
    assert "short of its total" in out.judged.reason


def test_a_handled_warning_stays_the_time_limit_when_the_limit_was_raised_after_it():
    """R67 finding 6: an admin raised the limit after the warning came (Slurm reports the raised one at the end, so
    the run time falls outside the window): the handler's own line still proves the warning came."""
    from moeconsole.runner.core.crash import TimeWarningEnd
    warn = TimeWarningEnd("--signal=USR1@40", 10, by_signal=False, killed=False, in_window=False)
    out = _judged(warn, [_STEP, "Handling auto-requeue signal: 10", "Requeuing SLURM job 97 failed with error code 1"],
                  last_step=1)
    assert out.report is not None and out.report.cls == "time_limit", out.judged
