"""R38 D1: a Slurm job's held interval closed only when the follower's squeue poll (every
``poll_s``) saw the job leave SUSPENDED, so the next record read after the resume was excused
and judged again (``core.held``). Now the first output read after the resume closes it, and
squeue still saying SUSPENDED (its answer up to ``poll_s`` old) does not open it again; a new
suspension (RUNNING seen, then SUSPENDED) opens a new one. A real run directory and log."""
from __future__ import annotations

from tests.runner.test_seam_units import _log, _pipe, made  # noqa: F401  (the fixture)


def test_output_after_a_slurm_resume_closes_the_held_interval(made):  # noqa: F811
    run, recipe = made()
    pipe = _pipe(run, recipe)
    _log(run, "{'loss': 1.5, 'learning_rate': 1e-05, 'epoch': 0.1}")
    pipe.read()
    pipe.job_suspended(True, pipe.last_data + 1)            # squeue: SUSPENDED
    assert pipe.held_spans.open
    asked_before_the_resume = pipe.last_data + 2
    _log(run, "{'loss': 1.4, 'learning_rate': 1e-05, 'epoch': 0.2}")
    assert pipe.read().read
    assert not pipe.held_spans.open, "output read: the job runs again (main: open until squeue said so)"
    pipe.job_suspended(True, min(asked_before_the_resume, pipe.last_data))   # the same SUSPENDED answer, asked before the resume
    assert not pipe.held_spans.open and len(pipe.held_spans.spans) == 1
    pipe.job_suspended(False, pipe.last_data + 1)           # RUNNING
    pipe.job_suspended(True, pipe.last_data + 2)            # suspended again: a new hold
    assert pipe.held_spans.open and len(pipe.held_spans.spans) == 2
