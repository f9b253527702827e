"""Review R48 D2: after logrotate's rename-and-create the path names a new, empty file while the pipe's tailer
(pinned to the job's file) and slurmstepd's ``--output`` fd keep the old one. The size the question carried was
the new file's (0), so no SUSPENDED reading ever held again (``read_to > 0``); now a size is used only when it is
of the file the tailer reads, else the times decide, as before round 19."""
from __future__ import annotations

import os
import time

from moeconsole.runner.core.held import LogMark, size_when_asked
from moeconsole.runner.process.engines.slurm import log_mark
from tests.runner.test_seam_units import _log, _pipe, made  # noqa: F401  (the fixture)


def _rotate(run) -> os.PathLike:
    old = run.log.with_name(run.log.name + ".1")
    os.rename(run.log, old)
    run.log.write_bytes(b"")                       # logrotate's create: a new, empty file at the path
    return old


def test_a_true_suspended_asked_after_the_last_output_holds_after_rename_and_create(made):  # noqa: F811
    run, recipe = made()
    pipe = _pipe(run, recipe)
    _log(run, "{'loss': 1.5, 'learning_rate': 1e-05, 'epoch': 0.1}")
    pipe.read()
    old = _rotate(run)
    with open(old, "ab") as f:                     # the job writes on through its fd
        f.write(b"{'loss': 1.4, 'learning_rate': 1e-05, 'epoch': 0.2}\n")
    assert pipe.read().read                        # the pinned tailer reads the job's file on
    mark = log_mark(run.log)                       # JobFollower.mark: the path's file, now the new one
    assert mark is not None and mark.size == 0
    pipe.job_suspended(True, time.monotonic(), mark)
    assert pipe.job_held and pipe.held_spans.open, "before: asked_size 0 < read_to, the hold never excused"


def test_after_rename_and_create_a_late_answer_is_still_stale_by_the_times(made):  # noqa: F811
    run, recipe = made()
    pipe = _pipe(run, recipe)
    _log(run, "{'loss': 1.5, 'learning_rate': 1e-05, 'epoch': 0.1}")
    pipe.read()
    old = _rotate(run)
    asked_at, mark = time.monotonic(), log_mark(run.log)
    with open(old, "ab") as f:                     # it ran again and printed after the question
        f.write(b"{'loss': 1.4, 'learning_rate': 1e-05, 'epoch': 0.2}\n")
    assert pipe.read().read and pipe.last_data > asked_at
    pipe.job_suspended(True, asked_at, mark)
    assert not pipe.job_held and not pipe.held_spans.spans


def test_the_size_counts_only_for_the_file_read():
    mark = LogMark(1, 2, 30)
    assert size_when_asked(mark, (1, 2)) == 30
    assert size_when_asked(mark, (1, 3)) is None and size_when_asked(mark, None) is None
    assert size_when_asked(None, (1, 2)) is None
