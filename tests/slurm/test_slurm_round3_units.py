"""Round 3, without a cluster: Slurm's restart count read from the controller (a job requeued while no
runner watched), and each reading of the job stamped with when it was asked (the held-time rule's input)."""
from __future__ import annotations

from moeconsole.runner.process.slurm.client import JobFollower
from moeconsole.runner.process.slurm.text import parse_scontrol_job
from tests.slurm.test_slurm_units import _Canned, _with_errors

# scontrol show job -o of a job an admin requeued (measured on Slurm 22.05: PENDING, BeginTime, Restarts=1)
REQUEUED = ("JobId=401 JobName=moeconsole-x-1 UserId=root(0) Priority=4294901757 JobState=PENDING Reason=BeginTime "
            "Dependency=(null) Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 NodeList=(null)")


def test_the_controllers_restart_count_is_read():
    st = parse_scontrol_job(REQUEUED)
    assert st is not None and (st.state, st.reason, st.restarts) == ("PENDING", "BeginTime", 1)
    assert parse_scontrol_job(REQUEUED.replace("Restarts=1", "Restarts=0")).restarts == 0
    assert parse_scontrol_job(REQUEUED.replace(" Restarts=1", "")).restarts is None


def test_a_reading_is_stamped_with_when_it_was_asked_and_a_failed_one_keeps_the_last():
    canned = _Canned([("squeue", 0, "7|SUSPENDED|None|node1\n"), ("squeue", 1, ""), ("squeue", 0, "7|SUSPENDED|None|node1\n"),
                      ("squeue", 0, "7|RUNNING|None|node1\n")])
    f = JobFollower("7", interval_s=0.0, spawn=_with_errors(canned, {"squeue": "Unable to contact slurm controller"}))
    f.poll()                      # asks
    asked = f.asked_at
    f.poll()                      # reads SUSPENDED, asks again
    assert f.state is not None and f.state.state == "SUSPENDED" and f.said_at == asked
    second = f.asked_at
    f.poll()                      # the controller away: the reading stays the one asked first
    assert f.said_at == asked < second
    third = f.asked_at
    f.poll()                      # SUSPENDED again: a new reading, asked later
    assert f.said_at == third > asked
