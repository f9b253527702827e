"""Review R30 of the hostile Slurm round, mended (no cluster: fake squeue/sacct/scontrol/sbatch
executables on PATH answer as Slurm's do, from files the test writes).

1. A runner taking over while accounting is off or down must not take "no answer" for an
   ended job (that submits a second training beside the live one); a job the controller shows
   ended keeps its state (TIMEOUT), not "unknown".
2. squeue failing for good: accounting's final row still ends the job.
3. A runaway accounting row (squeue: id gone, sacct: RUNNING): the controller decides, at the
   poll interval, not in a busy loop.
4. slurm_error is Slurm's deciding (last) line.
6. SBATCH_* in the user's shell do not undo the script's own #SBATCH lines."""
from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from moeconsole.runner.process.attempt import LaunchSpec
from moeconsole.runner.process.engines.slurm import SlurmEngine
from moeconsole.runner.process.slurm.client import AsyncCommand, Finished, JobFollower
from moeconsole.runner.process.slurm.text import JobState
from moeconsole.runner.recipes import recipe as recipes
from moeconsole.runner.rundir import rundir
from tests.slurm.test_slurm_units import GONE, _Canned, _with_errors
from tests.waiting import until

FAKE = r"""#!/bin/bash
# answers from the answer directory $FAKE_DIR/<cmd>.now links to ({rc,out,err,delay}), read through one resolved
# path: a test's next answer (a new directory, the link swapped by rename) is never seen half written
c=$(basename "$0")
echo "$c $*" >> "$FAKE_DIR/calls"
a=$(readlink -f "$FAKE_DIR/$c.now" 2>/dev/null)
[ -n "$a" ] && [ -f "$a/delay" ] && sleep "$(cat "$a/delay")"
[ "$c" = sbatch ] && env | grep '^SBATCH_' | sort > "$FAKE_DIR/sbatch.env"
[ -n "$a" ] && [ -f "$a/out" ] && cat "$a/out"
[ -n "$a" ] && [ -f "$a/err" ] && cat "$a/err" >&2
exit "$(cat "$a/rc" 2>/dev/null || echo 0)"
"""
AWAY = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"
NO_ACCOUNTING = "sacct: error: Slurm accounting storage is disabled\n"
DBD_DOWN = "sacct: error: Problem talking to the database: Connection refused\n"


class Fake:
    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.dir = root / "fake"
        bin_dir = root / "bin"
        self.dir.mkdir()
        bin_dir.mkdir()
        for c in ("squeue", "sacct", "scontrol", "sbatch", "scancel", "sinfo"):
            p = bin_dir / c
            p.write_text(FAKE)
            p.chmod(p.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("FAKE_DIR", str(self.dir))
        self._answers = 0
        monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")

    def answer(self, cmd: str, rc: int = 0, out: str = "", err: str = "", delay_s: float = 0) -> None:
        """``cmd`` answers so from now on; ``delay_s``: after that long (scontrol's ~18 s of retries with the
        controller away, Slurm 22.05, measured). The answer is written whole in a new directory, then the link to it
        replaced (rename): a call racing with it reads the old answer or the new one, never an empty ``out`` (which
        squeue's follower rightly reads as the job gone from the queue, and then asks sacct, never squeue again)."""
        self._answers += 1
        d = self.dir / f"{cmd}.{self._answers}"
        d.mkdir()
        for name, v in (("rc", str(rc)), ("out", out), ("err", err), ("delay", str(delay_s))):
            (d / name).write_text(v)
        link = self.dir / f"{cmd}.now.tmp"
        link.symlink_to(d.name)
        os.replace(link, self.dir / f"{cmd}.now")

    def calls(self) -> list[str]:
        p = self.dir / "calls"
        return [c.split()[0] for c in p.read_text().splitlines()] if p.exists() else []


@pytest.fixture
def fake(tmp_path, monkeypatch):
    return Fake(tmp_path, monkeypatch)


def _engine(tmp_path: Path, state: str = "RUNNING", sets: tuple[str, ...] = ()) -> SlurmEngine:
    run = rundir.RunDir(tmp_path / "run-r30")
    run.jobs.mkdir(parents=True)
    run.job_record(1).write_text(json.dumps({
        "v": 1, "engine": "slurm", "attempt": 1, "job_id": "77", "job_name": "moeconsole-run-r30-1",
        "submitted_at": time.time(), "state": state, "reason": None, "nodes": ["node1"], "exit_code": None,
        "signal": None, "source": "squeue", "ended_at": None}))
    return SlurmEngine(run, recipes.load("recipes/tiny-moe-slurm.yaml", list(sets)), command_timeout_s=20)


# -- 1: the startup order ------------------------------------------------------------------
@pytest.mark.parametrize("sacct_err", [NO_ACCOUNTING, DBD_DOWN])
def test_a_running_job_is_adopted_when_accounting_fails_and_the_controller_shows_it(fake, tmp_path, sacct_err):
    fake.answer("sacct", 1, err=sacct_err)
    fake.answer("scontrol", 0, "JobId=77 JobName=x JobState=RUNNING Reason=None ExitCode=0:0 NodeList=node1\n")
    fake.answer("squeue", 0, "77|RUNNING|None|node1\n")
    e = _engine(tmp_path)
    assert e.attempt_alive(1, []) is True  # was False: a second job would have been submitted
    att = e.adopt(1, [])
    assert att is not None and att.tree.job is not None and att.tree.job.state == "RUNNING"
    assert fake.calls() == ["sacct", "scontrol"]  # the controller's answer was waited for


@pytest.mark.parametrize("sacct_rc,sacct_err", [(1, NO_ACCOUNTING), (1, DBD_DOWN), (0, "")])  # 0: no row yet
def test_no_answer_at_all_adopts_the_job_as_recorded_and_keeps_asking(fake, tmp_path, sacct_rc, sacct_err):
    fake.answer("sacct", sacct_rc, err=sacct_err)
    fake.answer("scontrol", 1, err=AWAY)
    fake.answer("squeue", 1, err=AWAY)
    e = _engine(tmp_path)
    assert e.attempt_alive(1, []) is True
    assert e.exit_status(1) is None  # nothing known of its end
    att = e.adopt(1, [])
    assert att is not None
    view = att.view()
    assert view["state"] == "RUNNING" and view["nodes"] == ["node1"] and "not answering" in view["slurm_error"]
    # the controller comes back: the adopted attempt reads its end from Slurm
    fake.answer("squeue", 1, err=GONE + "\n")
    fake.answer("scontrol", 0, "JobId=77 JobName=x JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15 NodeList=node1\n")
    until(lambda: att.poll({}).__class__.__name__ == "Ended", 60, "the adopted job read as ended")
    assert att.record["state"] == "TIMEOUT"


def test_an_ended_job_keeps_its_state_when_accounting_is_off(fake, tmp_path):
    """The other way: the controller still shows the job ended (MinJobAge): not alive, and its
    end is TIMEOUT (was: the early break dropped it, exit unknown)."""
    fake.answer("sacct", 1, err=NO_ACCOUNTING)
    fake.answer("scontrol", 0, "JobId=77 JobName=x JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15 NodeList=node1\n")
    e = _engine(tmp_path)
    assert e.attempt_alive(1, []) is False
    st = e.exit_status(1)
    assert st is not None and st.job_state == "TIMEOUT"


def test_a_job_the_controller_does_not_know_has_ended(fake, tmp_path):
    fake.answer("sacct", 1, err=NO_ACCOUNTING)
    fake.answer("scontrol", 1, err=GONE + "\n")
    e = _engine(tmp_path)
    assert e.attempt_alive(1, []) is False
    assert e.adopt(1, []) is None
    st = e.exit_status(1)
    assert st is not None and st.job_state == "ENDED"


# -- 2: squeue failing for good ----------------------------------------------------------------
class _ByKind:
    """A spawn answering each Slurm command by its name, whatever the order; counts the calls."""

    def __init__(self, answers: dict[str, tuple[int, str, str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def __call__(self, argv):
        rc, out, err = self.answers[argv[0]]
        self.asked.append(argv[0])
        cmd = AsyncCommand.__new__(AsyncCommand)
        cmd.result = Finished(tuple(argv), rc, out, err, 0.01)
        return cmd


def test_accounting_ends_a_job_while_squeue_keeps_failing():
    spawn = _ByKind({"squeue": (1, "", AWAY), "sacct": (0, "5|COMPLETED|0:0|node1\n", "")})
    f = JobFollower("5", interval_s=0.0, spawn=spawn)
    f.state = JobState("5", "RUNNING", None, nodes=("node1",), source="squeue")
    for _ in range(40):
        if (st := f.poll()) is not None and st.final:
            break
    assert f.state is not None and (f.state.state, f.state.exit_code, f.state.source) == ("COMPLETED", 0, "sacct")
    assert 1 < spawn.asked.count("squeue") <= 10 and spawn.asked.count("sacct") == 1


def test_a_row_not_final_keeps_the_pending_reason_while_squeue_fails():
    spawn = _ByKind({"squeue": (1, "", AWAY), "sacct": (0, "5|PENDING|0:0|\n", "")})
    f = JobFollower("5", interval_s=0.0, spawn=spawn)
    f.state = JobState("5", "PENDING", "JobHeldAdmin", source="squeue")
    for _ in range(40):
        f.poll()
    assert f.state is not None and (f.state.state, f.state.reason, f.state.source) == ("PENDING", "JobHeldAdmin", "squeue")
    assert "Unable to contact" in (f.last_error or "") and not f.left_queue
    assert spawn.asked.count("squeue") > 4 * spawn.asked.count("sacct")  # squeue stays the question


# -- 3: a runaway row ----------------------------------------------------------------------------
def test_a_runaway_row_is_ended_by_the_controller():
    canned = _Canned([("squeue", 1, ""), ("sacct", 0, "5|RUNNING|0:0|node1\n"), ("scontrol", 1, "")])
    f = JobFollower("5", interval_s=2.0, spawn=_with_errors(canned, {"squeue": GONE, "scontrol": GONE}))
    f.state = JobState("5", "RUNNING", None, nodes=("node1",), source="squeue")
    for _ in range(6):  # one instant: the chain squeue -> sacct -> scontrol goes on without waiting
        f.poll(now=100.0)
    assert f.state is not None and f.state.final and f.state.state == "ENDED"
    assert canned.asked == ["squeue", "sacct", "scontrol"]


def test_a_runaway_row_the_controller_still_shows_is_asked_again_only_after_the_interval():
    canned = _Canned([("squeue", 1, ""), ("sacct", 0, "5|RUNNING|0:0|node1\n"),
                      ("scontrol", 0, "JobId=5 JobState=RUNNING Reason=None ExitCode=0:0 NodeList=node1"),
                      ("sacct", 0, "5|COMPLETED|0:0|node1\n")])
    f = JobFollower("5", interval_s=2.0, spawn=_with_errors(canned, {"squeue": GONE}))
    f.state = JobState("5", "RUNNING", None, nodes=("node1",), source="squeue")
    for _ in range(20):
        f.poll(now=100.0)
    assert canned.asked == ["squeue", "sacct", "scontrol"]  # was: sacct again on every poll
    f.poll(now=102.5)
    f.poll(now=102.5)
    assert f.state is not None and f.state.state == "COMPLETED"


# -- 4: the deciding line -----------------------------------------------------------------------
def test_slurm_error_is_the_deciding_last_line():
    munge = ("squeue: error: If munged is up, restart with --num-threads=10\n"
             "squeue: error: Munge encode failed: Failed to access \"/run/munge/munge.socket.2\": "
             "No such file or directory (retrying ...)\n" * 3
             + "slurm_load_jobs error: Protocol authentication error\n")
    canned = _Canned([("squeue", 1, "")])
    f = JobFollower("5", interval_s=10.0, spawn=_with_errors(canned, {"squeue": munge}))
    f.state = JobState("5", "RUNNING", None, source="squeue")
    f.poll(now=0.0)  # asks
    f.poll(now=0.0)  # reads the answer
    assert f.last_error == "slurm_load_jobs error: Protocol authentication error"


# -- 6: sbatch's environment ---------------------------------------------------------------------
def test_the_users_sbatch_variables_do_not_undo_the_scripts_options(fake, tmp_path):
    fake.answer("sbatch", 0, "4242\n")
    e = _engine(tmp_path, sets=("slurm.partition=gpu",))
    env = {"PATH": os.environ["PATH"], "FAKE_DIR": str(fake.dir), "SBATCH_REQUEUE": "1",
           "SBATCH_JOB_NAME": "other", "SBATCH_EXPORT": "NONE", "SBATCH_PARTITION": "debug",
           "SBATCH_QOS": "high", "KEEP_ME": "1"}
    att = e.start(LaunchSpec(attempt=2, argv=["python", "train.py"], env=env, cwd=str(tmp_path)), -1)
    until(lambda: att.tree.submission is None or att.tree.submission.poll(), 60, "sbatch answered")
    seen = (fake.dir / "sbatch.env").read_text().split()
    # the recipe set the partition: its value wins; the site's QOS (unset by the recipe) stays
    assert seen == ["SBATCH_QOS=high"]
