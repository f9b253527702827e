"""Review R61 of Slurm round 20, mended, without a cluster (fake Slurm commands on PATH, ``test_slurm_review_r30``).

D1. The name search must see every job of the attempt's name: a job in a Hidden partition (squeue lists it only
    with ``-a``) or a user's ``SQUEUE_STATES=R`` hiding a PENDING one was read as no job, and a second training
    was submitted beside it.
D2. The dead runner's own sbatch (its own session: it outlives the runner) may still be retrying: no "no job"
    while it lives on this host, nor before ``submitted_at`` plus sbatch's longest retry.
D3. An exit code equal to the warning signal's number is no proof of the time limit: srun's task line decides.
D4. A stop that came while the job was looked for is the normal stop once the job is found running
    (``scancel --signal=TERM``, the runner's grace), not a plain scancel.
D5. ``found_by_name`` only for a job the search found, not one read from the attempt's record; SBATCH_SIGNAL in
    the environment and ``--signal=USR1@`` (empty time) are read as sbatch reads them."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from moeconsole.runner.core.crash import classify_job_state
from moeconsole.runner.process.engines.slurm import SBATCH_LONGEST_RETRY_S, SlurmEngine
from moeconsole.runner.process.slurm import client
from moeconsole.runner.process.slurm.text import slurm_tool_env, time_warning
from moeconsole.runner.supervisor.attempt_watch import AttemptWatch
from tests.slurm.test_slurm_review_r30 import NO_ACCOUNTING, _engine, fake  # noqa: F401 (the fixture)
from tests.waiting import until


def _lost_answer(eng: SlurmEngine, *, submitted_ago: float) -> None:
    """The attempt's record as a runner killed while sbatch ran leaves it: no job id, SUBMITTING."""
    rec = json.loads(eng.run.job_record(1).read_text())
    rec.update(job_id="", state="SUBMITTING", source="sbatch", submitted_at=time.time() - submitted_ago)
    eng.run.job_record(1).write_text(json.dumps(rec))


def _script(bin_dir: Path, name: str, body: str) -> None:
    p = bin_dir / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)


def _calls(fake, cmd: str) -> list[str]:
    """The fake Slurm's calls of ``cmd`` so far, each with its arguments."""
    p = fake.dir / "calls"
    return [c for c in p.read_text().splitlines() if c.split()[0] == cmd] if p.exists() else []


def _state(att) -> str:
    return att.poll({}).__class__.__name__


# -- D1 ---------------------------------------------------------------------------------------------------------
HIDDEN_SQUEUE = """echo "$@" >> "$FAKE_DIR/squeue.args"
for a in "$@"; do case "$a" in -a|--all) echo '812|RUNNING'; exit 0;; esac; done
exit 0
"""
# squeue honouring the user's SQUEUE_STATES as src/squeue/opts.c l.519-523 does (the option given wins)
STATES_SQUEUE = """case " $* " in *" -t "*|*" --states"*) echo '812|PENDING'; exit 0;; esac
case "$SQUEUE_STATES" in ""|*PENDING*|*PD*|*all*) echo '812|PENDING';; esac
exit 0
"""


@pytest.mark.parametrize("squeue, env", [(HIDDEN_SQUEUE, {}), (STATES_SQUEUE, {"SQUEUE_STATES": "R"})])
def test_a_job_squeue_hides_from_the_name_search_is_found_not_taken_for_gone(fake, tmp_path, monkeypatch, squeue, env):
    """Before: the search ran ``squeue -h --name N`` with the runner's environment: the attempt ended ("Slurm has
    no job named ...") and a second training was submitted while the first one trained."""
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    _script(tmp_path / "bin", "squeue", squeue)
    fake.answer("sacct", 1, err=NO_ACCOUNTING)
    eng = _engine(tmp_path)
    _lost_answer(eng, submitted_ago=10 * SBATCH_LONGEST_RETRY_S)   # sbatch long over: only Slurm's answer counts
    att = eng.adopt(1, [])
    assert att is not None
    until(lambda: _state(att) == "Running" and att.job_id == "812", 60, "the hidden job found by name")
    assert json.loads(eng.run.job_record(1).read_text())["job_id"] == "812"


def test_a_job_slurm_really_lacks_still_ends_the_attempt(fake, tmp_path):
    """The other way: squeue (asked for every state and partition) and accounting both without it: no job."""
    fake.answer("squeue", 0, "")
    fake.answer("sacct", 1, err=NO_ACCOUNTING)
    eng = _engine(tmp_path)
    _lost_answer(eng, submitted_ago=10 * SBATCH_LONGEST_RETRY_S)
    att = eng.adopt(1, [])
    until(lambda: _state(att) == "Ended", 60, "the attempt ended")
    rec = json.loads(eng.run.job_record(1).read_text())
    assert rec["ended_at"] is not None
    asked = _calls(fake, "squeue")
    assert asked and all(" -a -t all --name " in c for c in asked), asked


def test_slurm_commands_never_get_the_users_filter_and_format_variables(tmp_path, monkeypatch):
    for k, v in {"SQUEUE_STATES": "R", "SQUEUE_PARTITION": "x", "SACCT_FORMAT": "JobID", "SCANCEL_STATE": "PENDING",
                 "SCONTROL_FUTURE": "1", "SINFO_PARTITION": "x", "SLURM_CONF": "/etc/slurm/slurm.conf"}.items():
        monkeypatch.setenv(k, v)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for c in ("squeue", "scancel", "sbatch"):
        _script(bin_dir, c, "env\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    for c in ("squeue", "scancel"):
        seen = client.AsyncCommand([c]).wait().out
        assert "SLURM_CONF=" in seen and not any(w in seen for w in ("SQUEUE_", "SACCT_", "SCANCEL_", "SCONTROL_",
                                                                     "SINFO_")), seen
    # sbatch's environment is the job's too, and ``sbatch_env``'s to decide: passed as given
    assert "SQUEUE_STATES=R" in client.AsyncCommand(["sbatch"], env=dict(os.environ)).wait().out
    assert slurm_tool_env({"SQUEUE_USERS": "u", "HOME": "/h"}) == {"HOME": "/h"}


# -- D2 ---------------------------------------------------------------------------------------------------------
def test_no_job_is_not_decided_while_the_dead_runners_sbatch_still_submits_it(fake, tmp_path):
    """Before: the first empty answers ended the attempt at once while the orphan sbatch (``start_new_session``,
    retrying a full queue for ~120 s, src/sbatch/sbatch.c l.296-327) was still to submit the job."""
    fake.answer("squeue", 0, "")
    fake.answer("sacct", 0, "")
    eng = _engine(tmp_path)
    _lost_answer(eng, submitted_ago=10 * SBATCH_LONGEST_RETRY_S)   # only the live process can say "wait"
    # the orphan: an sbatch still retrying (its argv as the runner started it), the run's marker in its environment
    _script(tmp_path / "bin", "sbatch", "sleep 600\n")
    orphan = subprocess.Popen([str(tmp_path / "bin" / "sbatch"), "--parsable", str(eng.run.jobs / "attempt-1.sh")],
                              env={**os.environ, "MOECONSOLE_RUN_ID": eng.run.run_id}, start_new_session=True)
    try:
        att = eng.adopt(1, [])
        assert att is not None
        until(lambda: _state(att) == "Running"
              and len(_calls(fake, "squeue")) >= 3,
              60, "the search asked again and again")
        assert _state(att) == "Running"
        assert f"sbatch pid {orphan.pid}" in (att.view().get("slurm_error") or ""), att.view()
        os.killpg(orphan.pid, signal.SIGKILL)    # its session: the shell and its sleep
        orphan.wait()
        until(lambda: _state(att) == "Ended", 60, "no job once that sbatch is gone")
    finally:
        try:
            os.killpg(orphan.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        orphan.wait()


def test_no_job_is_not_decided_before_sbatchs_longest_retry_since_the_submission(fake, tmp_path):
    fake.answer("squeue", 0, "")
    fake.answer("sacct", 0, "")
    eng = _engine(tmp_path)
    _lost_answer(eng, submitted_ago=1)
    att = eng.adopt(1, [])
    until(lambda: _state(att) == "Running" and len(_calls(fake, "squeue")) >= 3, 60, "the search asked again and again")
    assert "may still be retrying" in (att.view().get("slurm_error") or ""), att.view()
    # the other way: a submission older than sbatch's longest retry, no sbatch of it alive: no job
    eng2 = _engine(tmp_path / "b")
    _lost_answer(eng2, submitted_ago=SBATCH_LONGEST_RETRY_S + 5)
    att2 = eng2.adopt(1, [])
    until(lambda: _state(att2) == "Ended", 60, "no job")


# -- D3 ---------------------------------------------------------------------------------------------------------
def _ended(tmp_path: Path, option: str, code: int, sig: int, tail: list[str], env: dict[str, str] | None = None,
           monkeypatch: pytest.MonkeyPatch | None = None):
    for k, v in (env or {}).items():
        assert monkeypatch is not None
        monkeypatch.setenv(k, v)
    sets = (f'slurm.sbatch=["{option}"]',) if option else ()
    eng = _engine(tmp_path, state="FAILED", sets=sets)
    rec = json.loads(eng.run.job_record(1).read_text())
    rec.update(exit_code=code, signal=sig, ended_at=time.time())
    eng.run.job_record(1).write_text(json.dumps(rec))
    st = eng.exit_status(1)
    assert st is not None
    return classify_job_state(st.job_state, tail, time_warning=st.time_warning)


ARGPARSE = ["usage: train.py [-h] [--lr LR]", "train.py: error: unrecognized arguments: --lrr 3e-4"]


@pytest.mark.parametrize("option, code, srun", [
    ("--signal=INT@120", 2, "srun: error: node1: task 0: Exited with exit code 2"),      # argparse's exit(2)
    ("--signal=HUP@60", 1, "srun: error: node1: task 0: Exited with exit code 1"),       # any exit-1 crash
    ("--signal=USR1@40", 10, "srun: error: node1: task 0: Exited with exit code 10"),    # sys.exit(10)
    ("--signal=USR1@40", 10, None),                                                       # a code, no srun line
])
def test_a_crash_whose_exit_code_is_the_warning_signals_number_is_not_the_time_limit(tmp_path, option, code, srun):
    """Before: ``time_limit``, restarted until the budget ran out, the real cause (a config error) dropped."""
    v = _ended(tmp_path, option, code, 0, ARGPARSE + ([srun] if srun else []))
    assert v is None or v.cls != "time_limit", v


@pytest.mark.parametrize("option, code, sig, srun", [
    ("--signal=USR1@40", 10, 0, "srun: error: node1: task 0: User defined signal 1"),
    ("--signal=INT@120", 2, 0, "srun: error: node1: tasks 0-3: Interrupt (core dumped)"),
    ("--signal=B:USR1@40", 0, 10, None),        # the batch shell killed by it: its own exit signal is the proof
])
def test_a_death_srun_names_as_the_warning_signal_is_still_the_time_limit(tmp_path, option, code, sig, srun):
    v = _ended(tmp_path, option, code, sig, ["step 7"] + ([srun] if srun else []))
    assert v is not None and v.cls == "time_limit" and v.recovery == "restart", v


def test_sbatch_signal_in_the_environment_is_the_warning_and_an_empty_time_is_sbatchs_zero(tmp_path, monkeypatch):
    """sbatch reads SBATCH_SIGNAL (src/sbatch/opt.c env_vars[]) and ``@`` with no time (proc_args.c
    ``get_signal_opts``); before, both read as no warning: a death by it was judged as a crash."""
    assert time_warning(["--signal=USR1@"]) is not None and time_warning(["--signal=USR1@"]).signum == 10
    assert time_warning([], {"SBATCH_SIGNAL": "USR2@30"}).signum == 12
    assert time_warning(["--signal=USR1@40"], {"SBATCH_SIGNAL": "USR2@30"}).signum == 10   # the recipe's wins
    v = _ended(tmp_path, "", 10, 0, ["srun: error: node1: task 0: User defined signal 1"],
               env={"SBATCH_SIGNAL": "USR1@40"}, monkeypatch=monkeypatch)
    assert v is not None and v.cls == "time_limit", v


# -- D4 ---------------------------------------------------------------------------------------------------------
def test_a_stop_during_the_search_is_the_graceful_stop_once_the_job_is_found_running(fake, tmp_path):
    """Before: a plain scancel (KillWait, 30 s, before SIGKILL), not ``--signal=TERM`` and the runner's grace."""
    fake.answer("squeue", 0, "812|RUNNING\n", delay_s=1)
    fake.answer("sacct", 1, err=NO_ACCOUNTING, delay_s=1)
    eng = _engine(tmp_path)
    _lost_answer(eng, submitted_ago=10 * SBATCH_LONGEST_RETRY_S)
    att = eng.adopt(1, [])
    assert att.tree.search is not None
    att.tree.signal(signal.SIGTERM)             # the stop comes while squeue still answers
    until(lambda: (att.poll({}), _calls(fake, "scancel"))[1],
          60, "the found job stopped")
    cancels = _calls(fake, "scancel")
    assert cancels and all(c == "scancel --signal=TERM 812" for c in cancels), cancels


# -- D5 ---------------------------------------------------------------------------------------------------------
def test_found_by_name_only_for_a_job_the_search_found(fake, tmp_path):
    """The old runner wrote the record's job id and died before state.json: the id comes from the record, not a
    search. Before: the job_submitted event said ``found_by_name``."""
    fake.answer("sacct", 0, "77|RUNNING|0:0|node1\n")
    fake.answer("squeue", 0, "77|RUNNING|None|node1\n")
    fake.answer("scontrol", 0, "JobId=77 JobName=x JobState=RUNNING Reason=None Restarts=0 ExitCode=0:0 NodeList=node1\n")
    eng = _engine(tmp_path)
    watch = AttemptWatch(eng.run.run_id, eng)
    assert watch.adopt(1, []) is not None
    before = {"attempt": 1, "engine": "slurm", "job_id": "", "state": "SUBMITTING"}
    _, submitted = watch.job_news(before)
    assert submitted is not None and submitted["job_id"] == "77" and "found_by_name" not in submitted, submitted
    # the other way: the id lost, the job found by its name (the search's ``-o %i|%T``)
    fake.answer("squeue", 0, "77|RUNNING\n")
    fake.answer("sacct", 0, "77|RUNNING\n")
    eng2 = _engine(tmp_path / "b")
    _lost_answer(eng2, submitted_ago=10 * SBATCH_LONGEST_RETRY_S)
    watch2 = AttemptWatch(eng2.run.run_id, eng2)
    att = watch2.adopt(1, [])
    until(lambda: (att.poll({}), att.job_id == "77")[1], 60, "found by name")
    _, submitted2 = watch2.job_news(before)
    assert submitted2 is not None and submitted2.get("found_by_name") is True, submitted2
