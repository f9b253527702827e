"""Round 3: the gang scheduler's time slices (``PreemptMode=SUSPEND,GANG``). Slurm suspends the job, runs
it a slice, suspends it again; squeue, asked each ``poll_s``, may read SUSPENDED twice with no RUNNING
between. The pipe took only a change of Slurm's word, so the second slice's hold was never excused (a
``throughput_drop`` for a step the scheduler held). Now each reading counts once, by when it was asked: a
SUSPENDED asked after the training's last output is a hold (``core.held.reading_holds``), one asked before it
is stale. A real run directory and log."""
from __future__ import annotations

from moeconsole.runner.core.held import reading_holds
from tests.runner.test_seam_units import _log, _pipe, made  # noqa: F401  (the fixture)


def test_two_suspended_readings_with_output_between_are_two_holds(made):  # noqa: F811
    run, recipe = made()
    pipe = _pipe(run, recipe)
    _log(run, "{'loss': 1.5, 'learning_rate': 1e-05, 'epoch': 0.1}")
    pipe.read()
    pipe.job_suspended(True, pipe.last_data + 1)             # slice over: SUSPENDED
    assert pipe.held_spans.open and len(pipe.held_spans.spans) == 1
    pipe.job_suspended(True, pipe.last_data + 1)             # the same reading again: nothing new
    _log(run, "{'loss': 1.4, 'learning_rate': 1e-05, 'epoch': 0.2}")   # its next slice ran a step
    assert pipe.read().read and not pipe.held_spans.open
    pipe.job_suspended(True, pipe.last_data + 1)             # SUSPENDED again, no RUNNING read between
    assert pipe.held_spans.open and len(pipe.held_spans.spans) == 2, "main: the second slice was not held"
    _log(run, "{'loss': 1.3, 'learning_rate': 1e-05, 'epoch': 0.3}")
    assert pipe.read().read and not pipe.held_spans.open
    pipe.job_suspended(True, pipe.last_data - 0.5)           # asked before that output: stale, no hold
    assert not pipe.held_spans.open and len(pipe.held_spans.spans) == 2


def test_a_held_reading_proves_a_hold_only_when_asked_after_the_last_output():
    assert reading_holds(True, 10.0, 9.0)
    assert not reading_holds(True, 9.0, 9.0) and not reading_holds(True, 8.0, 9.0)
    assert not reading_holds(False, 10.0, 9.0)
