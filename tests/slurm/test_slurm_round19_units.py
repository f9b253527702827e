"""Round 19, without a cluster: each reading of a job carries its log's size when Slurm was asked (the held-time
rule's input since R45 D6), and an adoption's restart count judged against what the dead runner saw."""
from __future__ import annotations

from moeconsole.runner.process.engines.slurm import log_mark
from moeconsole.runner.process.slurm.client import JobFollower
from tests.slurm.test_slurm_review_r30 import fake  # noqa: F401  (the fixture: fake Slurm commands on PATH)
from tests.slurm.test_slurm_units import _Canned, _with_errors


def test_a_reading_carries_the_logs_size_taken_before_its_question(tmp_path):
    log = tmp_path / "train.log"
    log.write_bytes(b"step 1\n")
    canned = _Canned([("squeue", 0, "7|SUSPENDED|None|node1\n"), ("squeue", 1, ""),
                      ("squeue", 0, "7|RUNNING|None|node1\n"), ("squeue", 0, "7|RUNNING|None|node1\n")])
    f = JobFollower("7", interval_s=0.0, spawn=_with_errors(canned, {"squeue": "Unable to contact slurm controller"}),
                    mark=lambda: log_mark(log))
    f.poll()                                  # asks, the log 7 bytes long
    with open(log, "ab") as out:
        out.write(b"step 2\n")                # written after the question: not in its size
    f.poll()                                  # reads SUSPENDED (asked at 7 bytes), asks again at 14
    assert f.state is not None and f.state.state == "SUSPENDED" and f.said_mark.size == 7 and f.asked_mark.size == 14
    f.poll()                                  # the controller away: the reading and its size stay
    assert f.said_mark.size == 7
    f.poll()
    assert f.state.state == "RUNNING" and f.said_mark.size == 14
    assert log_mark(tmp_path / "gone.log") is None
    assert JobFollower("8").said_mark is None  # no log known: the times decide (``held.reading_holds``)


# -- an adoption after a runner that died before scontrol told it the count -------------------------------------
START = "2026-12-01T10:00:00"


def _ctl(state: str, restarts: int, start: str = START, reason: str = "None", nodes: str = "node1") -> str:
    return (f"JobId=77 JobName=x JobState={state} Reason={reason} Restarts={restarts} ExitCode=0:0 "
            f"StartTime={start} NodeList={nodes}\n")


def _dead_before_the_count(fake, tmp_path):
    """Runner 1 follows a queued job whose launch failed (requeued held, Restarts=1), released: it sees the job
    run and asks scontrol for the count, and dies before the answer (scontrol slow: the controller busy)."""
    from tests.slurm.test_slurm_review_r45_units import _judged, _polled_with
    from tests.slurm.test_slurm_review_r30 import _engine
    from tests.waiting import until
    fake.answer("sacct", 0, "77|PENDING|0:0|None assigned\n")
    fake.answer("scontrol", 0, _ctl("PENDING", 0, "Unknown", "Priority", "(null)"))
    fake.answer("squeue", 0, "77|PENDING|Priority||N/A\n")
    e = _engine(tmp_path, state="PENDING")
    att = e.adopt(1, [])
    assert att is not None and set(_judged(att)) == {"Running"}
    _polled_with(fake, att, "77|PENDING|launch failed requeued held||N/A\n")
    _polled_with(fake, att, "77|PENDING|Priority||N/A\n")
    fake.answer("scontrol", 0, _ctl("RUNNING", 1), delay_s=60)
    _polled_with(fake, att, f"77|RUNNING|None|node1|{START}\n")
    until(lambda: "scontrol" in fake.calls()[3:], 120, "the count asked")
    assert att.count_probe is not None
    att.count_probe.kill()                      # runner 1 is SIGKILLed: the answer never read
    fake.answer("scontrol", 0, _ctl("RUNNING", 1))
    fake.answer("sacct", 0, "77|RUNNING|0:0|node1\n")
    return e


def test_a_runner_dead_before_the_restart_count_leaves_which_run_it_saw_and_the_adoption_keeps_the_job(  # noqa: F811
        fake, tmp_path):
    """Before: ``restarts_seen`` was never written, the adoption read Restarts=1 as a requeue no runner saw and
    cancelled the healthy job (a new one resumed from the old save). Now the job is still in the run runner 1
    saw (its start, Slurm's words): the count is accepted and the job followed."""
    import json
    from tests.slurm.test_slurm_review_r45_units import _adopted_again, _judged
    e = _dead_before_the_count(fake, tmp_path)
    rec = json.loads(e.run.job_record(1).read_text())
    att2 = _adopted_again(e, tmp_path)
    assert att2 is not None and set(_judged(att2)) == {"Running"} and not att2.requeued_unwatched
    assert "scancel" not in fake.calls()
    assert rec.get("started_seen") == START and rec.get("restarts_seen") == 0   # the count read while it was queued
    assert json.loads(e.run.job_record(1).read_text()).get("restarts_seen") == 1


def test_a_requeue_after_the_run_the_dead_runner_saw_is_still_found(fake, tmp_path):  # noqa: F811
    """The same, but an admin requeued the job while no runner watched: it runs again, a new start. Found."""
    import json
    from tests.slurm.test_slurm_review_r45_units import _adopted_again, _judged
    from tests.waiting import until
    e = _dead_before_the_count(fake, tmp_path)
    fake.answer("scontrol", 0, _ctl("RUNNING", 2, "2026-12-01T10:05:00"))
    att2 = _adopted_again(e, tmp_path)
    assert att2 is not None and _judged(att2) and att2.requeued_unwatched
    until(lambda: "scancel" in fake.calls(), 120, "scancel")
    # over once the scancel took (round 20: a refused one is sent again first)
    until(lambda: att2.poll({}).__class__.__name__ == "Ended", 120, "the attempt ended")
    assert json.loads(e.run.job_record(1).read_text())["state"] == "REQUEUED"
