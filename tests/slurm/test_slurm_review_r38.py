"""R38 D3: a job seen running and then requeued held after its launch failed (squeue's reason
``launch failed requeued held``: Slurm's ``_job_requeue_op``, src/slurmctld/job_mgr.c, holds it
with priority 0 like ``scontrol requeuehold``) was recorded ``REQUEUED``: cancelled, resubmitted
unheld, its verdict naming `scontrol requeue`. Now every held requeue's reason reads
``REQUEUE_HOLD`` (the new job submitted held). Pure: squeue's line as the follower reads it."""
from __future__ import annotations

from moeconsole.runner.process.slurm.text import REQUEUE_HOLD, REQUEUED, parse_squeue, requeued_word


def _word(reason: str) -> str:
    js = parse_squeue(f"17|PENDING|{reason}|\n", "17")
    assert js is not None
    return requeued_word(js)


def test_a_held_requeue_after_a_failed_launch_is_recorded_held():
    for reason in ("launch failed requeued held", "user env retrieval failed requeued held",
                   "job requeued in held state", "JobHeldAdmin"):
        assert _word(reason) == REQUEUE_HOLD, reason
    for reason in ("BeginTime", "Priority", "None"):   # `scontrol requeue`: queued again, not held
        assert _word(reason) == REQUEUED, reason
