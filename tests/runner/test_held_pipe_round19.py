"""Round 19 (review R45 D6): a batch job's SUSPENDED reading judged by what the job had written when Slurm was
asked (its log's size then), not by when the runner read the output. Before, output written just before the
suspension and read after the squeue question made a true SUSPENDED look stale: the hold was never excused (a
slow step, a ``throughput_drop``). A real run directory, log and pipe; ``SlurmAttempt`` takes the size with each
question (``JobFollower.mark``)."""
from __future__ import annotations

import time

from moeconsole.runner.core.held import reading_holds
from moeconsole.runner.process.engines.slurm import log_mark
from tests.runner.test_seam_units import _log, _pipe, made  # noqa: F401  (the fixture)


def test_output_written_before_the_question_and_read_after_it_does_not_make_suspended_stale(made):  # noqa: F811
    run, recipe = made()
    pipe = _pipe(run, recipe)
    _log(run, "{'loss': 1.5, 'learning_rate': 1e-05, 'epoch': 0.1}")
    pipe.read()
    _log(run, "{'loss': 1.4, 'learning_rate': 1e-05, 'epoch': 0.2}")    # the last step before the suspension
    asked_at, size = time.monotonic(), log_mark(run.log)          # squeue asked: the job is SUSPENDED
    assert pipe.read().read and pipe.last_data > asked_at                # ... the runner reads that step after
    pipe.job_suspended(True, asked_at, size)
    assert pipe.job_held and pipe.held_spans.open, "before: stale by the read time, the hold never excused"
    _log(run, "{'loss': 1.3, 'learning_rate': 1e-05, 'epoch': 0.3}")    # resumed: output past the size
    assert pipe.read().read and not pipe.job_held and not pipe.held_spans.open


def test_a_late_answer_after_the_job_printed_again_is_stale_and_late_read_output_keeps_the_hold(made):  # noqa: F811
    run, recipe = made()
    pipe = _pipe(run, recipe)
    _log(run, "{'loss': 1.5, 'learning_rate': 1e-05, 'epoch': 0.1}")
    size = log_mark(run.log)
    asked_at = time.monotonic()                                           # asked while it was held ...
    _log(run, "{'loss': 1.4, 'learning_rate': 1e-05, 'epoch': 0.2}")    # ... it ran again and printed
    pipe.read()
    pipe.job_suspended(True, asked_at, size)                              # the answer comes after: stale
    assert not pipe.job_held and not pipe.held_spans.spans
    # held, found so before the runner read the job's last output: reading it does not end the hold
    _log(run, "{'loss': 1.3, 'learning_rate': 1e-05, 'epoch': 0.3}")
    pipe.job_suspended(True, time.monotonic(), log_mark(run.log))
    assert pipe.job_held and pipe.held_spans.open
    assert pipe.read().read and pipe.job_held and pipe.held_spans.open
    assert pipe.held_spans.spans[-1][0] == pipe.last_data                 # the hold counted from that output on


def test_the_reading_rule_by_size_and_by_time_without_one():
    assert reading_holds(True, 1.0, 9.0, asked_size=100, read_to=100)    # asked before the read, written before
    assert not reading_holds(True, 10.0, 9.0, asked_size=100, read_to=101)
    assert not reading_holds(False, 10.0, 9.0, asked_size=100, read_to=50)
    assert reading_holds(True, 10.0, 9.0) and not reading_holds(True, 8.0, 9.0)   # no size: the times
