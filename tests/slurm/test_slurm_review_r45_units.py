"""Review R45 D4, without a cluster (fake squeue/sacct/scontrol/scancel on PATH, as tests/slurm/test_slurm_review_r30.py):
Slurm raises a job's restart count on a launch that failed even under --no-requeue (``PrologFlags=ForceRequeueOnFail``:
src/slurmctld/job_mgr.c ``_job_requeue_op`` l.17888-17896, ``restart_cnt++`` l.18007) and holds it "launch failed
requeued held". Its script never ran, so the live runner follows it as queued. Before: a later adoption read
``Restarts=1``, cancelled the healthy running job and resubmitted it. Now an adoption counts only a rise above the
count a runner accepted; a requeue while no runner watched is still found."""
from __future__ import annotations

import json
import time
from pathlib import Path

from moeconsole.runner.process.engines.slurm import SlurmEngine
from moeconsole.runner.recipes import recipe as recipes
from tests.slurm.test_slurm_review_r30 import AWAY, Fake, _engine, fake  # noqa: F401
from tests.waiting import until


def _ctl(state: str, restarts: int, reason: str = "None", nodes: str = "node1") -> str:
    return f"JobId=77 JobName=x JobState={state} Reason={reason} Restarts={restarts} ExitCode=0:0 NodeList={nodes}\n"


def _squeues(fake: Fake) -> int:
    return sum(c == "squeue" for c in fake.calls())


def _polled_with(fake: Fake, att, sq: str) -> str:
    """The attempt polled until the follower read ``sq`` twice; what the last poll returned."""
    fake.answer("squeue", 0, sq)
    n = _squeues(fake)
    until(lambda: (att.poll({}), _squeues(fake) >= n + 2)[1], 60, "two squeues")
    return att.poll({}).__class__.__name__


def _judged(att) -> list[str]:
    """The adopted attempt polled until the controller's restart count, asked in the background, is judged:
    what each poll returned."""
    kinds: list[str] = []
    until(lambda: (kinds.append(att.poll({}).__class__.__name__), att.requeue_probe is None)[1], 60,
          "the restart count judged")
    return kinds


def _adopted_again(engine: SlurmEngine, tmp_path: Path):
    e2 = SlurmEngine(engine.run, recipes.load("recipes/tiny-moe-slurm.yaml", []), command_timeout_s=20)
    return e2.adopt(1, [])


def _record(engine: SlurmEngine) -> dict:
    return json.loads(engine.run.job_record(1).read_text())


def _followed_through_a_failed_launch(fake: Fake, tmp_path: Path):
    """Runner 1 follows a queued job whose launch fails between two polls (requeued held, Restarts=1), released,
    then running: it accepts that count once it sees the job run."""
    fake.answer("sacct", 0, "77|PENDING|0:0|None assigned\n")
    fake.answer("scontrol", 0, _ctl("PENDING", 0, "Priority", "(null)"))
    fake.answer("squeue", 0, "77|PENDING|Priority|\n")
    e = _engine(tmp_path, state="PENDING")
    att = e.adopt(1, [])
    assert att is not None and set(_judged(att)) == {"Running"} and not att.requeued_unwatched
    kinds = [_polled_with(fake, att, "77|PENDING|launch failed requeued held|\n")]
    fake.answer("scontrol", 0, _ctl("RUNNING", 1))
    kinds += [_polled_with(fake, att, "77|PENDING|Priority|\n"), _polled_with(fake, att, "77|RUNNING|None|node1\n")]
    # the controller's count read once the job was seen running (the code before had no such question)
    until(lambda: (att.poll({}), getattr(att, "count_probe", None) is None)[1], 60, "scontrol's restart count")
    assert set(kinds) == {"Running"}, kinds
    fake.answer("sacct", 0, "77|RUNNING|0:0|node1\n")
    return e


def test_a_requeue_the_live_runner_accepted_is_not_counted_again_by_an_adoption(fake, tmp_path):
    e = _followed_through_a_failed_launch(fake, tmp_path)
    att2 = _adopted_again(e, tmp_path)      # runner 1 dies; `supervise` adopts the same healthy running job
    assert att2 is not None and set(_judged(att2)) == {"Running"} and not att2.requeued_unwatched
    assert att2.poll({}).__class__.__name__ == "Running" and _record(e).get("restarts_seen") == 1
    assert "scancel" not in fake.calls()
    rec = _record(e)
    assert rec["state"] not in ("REQUEUED", "REQUEUE_HOLD") and rec.get("ended_at") is None and "restarts" not in rec


def test_a_requeue_after_the_accepted_count_while_no_runner_watched_is_still_found(fake, tmp_path):
    e = _followed_through_a_failed_launch(fake, tmp_path)
    fake.answer("scontrol", 0, _ctl("PENDING", 2, "BeginTime", "(null)"))   # an admin's requeue, no runner watching
    fake.answer("squeue", 0, "77|PENDING|BeginTime|\n")
    fake.answer("sacct", 0, "77|PENDING|0:0|None assigned\n")
    att2 = _adopted_again(e, tmp_path)
    assert att2 is not None and _judged(att2) and att2.requeued_unwatched == 1
    until(lambda: "scancel" in fake.calls(), 120, "scancel")
    # over once the scancel took (round 20: a refused one is sent again first)
    until(lambda: att2.poll({}).__class__.__name__ == "Ended", 120, "the attempt ended")
    rec = _record(e)
    assert rec["state"] == "REQUEUED" and rec.get("restarts") == 1, rec


def test_a_job_adopted_held_after_a_failed_launch_is_not_cancelled(fake, tmp_path):
    """No runner watched the failed launch: the job is found held with Slurm's words for it (job_mgr.c l.18100-18103);
    its script never ran, so its resume point is still right. A later adoption, released and running, agrees."""
    fake.answer("sacct", 0, "77|PENDING|0:0|None assigned\n")
    fake.answer("scontrol", 0, _ctl("PENDING", 1, "launch failed requeued held", "(null)").replace(
        "Reason=launch failed requeued held", "Reason=launch_failed_requeued_held"))
    fake.answer("squeue", 0, "77|PENDING|launch failed requeued held|\n")
    e = _engine(tmp_path, state="PENDING")
    st = e.query("77")
    assert st is not None
    att = e.adopt(1, [])
    assert att is not None
    assert set(_judged(att)) == {"Running"} and not att.requeued_unwatched
    assert "scancel" not in fake.calls() and _record(e).get("restarts_seen") == 1
    fake.answer("scontrol", 0, _ctl("RUNNING", 1))
    fake.answer("sacct", 0, "77|RUNNING|0:0|node1\n")
    fake.answer("squeue", 0, "77|RUNNING|None|node1\n")
    att2 = _adopted_again(e, tmp_path)
    assert att2 is not None and set(_judged(att2)) == {"Running"} and not att2.requeued_unwatched
    assert "scancel" not in fake.calls()


def test_an_adoption_while_the_controller_is_away_does_not_wait_for_it_and_judges_the_count_once_it_is_back(
        fake, tmp_path):
    """CI, stop 52: accounting answered, the controller did not, and adoption waited on scontrol's retries (~18 s):
    `supervise` said the runner was not ready after 20 s. The count is asked in the background and asked again
    until the controller answers; a requeue behind the runner's back is still found then."""
    e = _followed_through_a_failed_launch(fake, tmp_path)
    fake.answer("sacct", 0, "77|RUNNING|0:0|node1\n")
    fake.answer("squeue", 1, err=AWAY, delay_s=3)
    fake.answer("scontrol", 1, err=AWAY, delay_s=3)
    e2 = SlurmEngine(e.run, recipes.load("recipes/tiny-moe-slurm.yaml", []), command_timeout_s=20)
    t0 = time.monotonic()
    att2 = e2.adopt(1, [])
    took = time.monotonic() - t0
    assert att2 is not None and att2.requeue_probe is not None
    assert took < 3, f"adoption waited {took:.1f}s for a controller that is away"
    asked = sum(c == "scontrol" for c in fake.calls())
    until(lambda: (att2.poll({}), sum(c == "scontrol" for c in fake.calls()) >= asked + 1)[1], 60,
          "scontrol asked again while the controller is away")
    assert att2.requeue_probe is not None and not att2.requeued_unwatched and "scancel" not in fake.calls()
    # back, and the job was requeued meanwhile (Restarts=2 above the accepted 1): the attempt ends, the job cancelled
    fake.answer("scontrol", 0, _ctl("RUNNING", 2))
    fake.answer("squeue", 0, "77|RUNNING|None|node1\n")
    assert _judged(att2) and att2.requeued_unwatched == 1
    until(lambda: "scancel" in fake.calls(), 120, "scancel")
    # over once the scancel took (round 20: a refused one is sent again first)
    until(lambda: att2.poll({}).__class__.__name__ == "Ended", 120, "the attempt ended")
    assert _record(e)["state"] == "REQUEUED"
