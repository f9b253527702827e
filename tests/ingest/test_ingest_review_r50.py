"""Review R50, finding 3: Megatron's save line names the save root (``args.save``), not the save:
"successfully saved checkpoint from iteration 2005 to /ckpt" is the save ``/ckpt/iter_0002005``
(megatron/training/checkpointing.py: ``get_checkpoint_name`` joins ``iter_{:07d}``). The mark named
``/ckpt``, whose name never matched the verified save's, so the attempt's own save line never
proved the save its own (``policy.saved_past``'s ``named``), and a crash it passed stayed open."""
from __future__ import annotations

from pathlib import Path

import pytest

from moeconsole.runner.core.policy import AttemptRecord, saved_past
from moeconsole.runner.ingest.formats import read_mark

NOW = 1_700_000_000.0


@pytest.mark.parametrize("line,path", [
    ("  successfully saved checkpoint from iteration    2005 to /ckpt [ t 1/8, p 1/1 ]", "/ckpt/iter_0002005"),
    ("successfully saved checkpoint from iteration 1 to ./model_weights/glm4_mcore/", "./model_weights/glm4_mcore/iter_0000001"),
    ("successfully saved checkpoint at iteration     300 to /runs/a", "/runs/a/iter_0000300"),
    # a root that is itself the save (a log that names it so): kept
    ("successfully saved checkpoint from iteration 300 to /runs/a/iter_0000300", "/runs/a/iter_0000300"),
])
def test_megatrons_save_line_names_the_save_under_its_root(line, path):
    mark = read_mark(line)
    assert mark is not None and mark["kind"] == "checkpoint_saved", mark
    assert mark["path"] == path and mark["step"] == int(path.rsplit("_", 1)[1]), mark


def test_an_exit_signal_save_past_the_last_logged_step_resolves_the_crash_by_its_save_line():
    """`--log-interval 10`: the earlier attempt crashed with step 2000 its last logged; this one logged
    2000 and its exit-signal-handler saved iteration 2005. Its own save line names the save, so the
    crash is passed ("saved"), as the supervisor asks: the verified save's name among the names its
    log's save lines gave (``Supervisor.saves_named``)."""
    mark = read_mark("successfully saved checkpoint from iteration    2005 to /ckpt")
    assert mark is not None
    named = {Path(mark["path"]).name}
    history = [AttemptRecord(attempt=1, started_at=NOW, ended_at=NOW + 5, resumed_step=None, last_step=2000,
                             crash_class="segfault"),
               AttemptRecord(attempt=2, started_at=NOW + 10, ended_at=None, resumed_step=1000, last_step=None,
                             crash_class=None, resumed_from="/ckpt/iter_0001000")]
    verified = Path("/ckpt/iter_0002005")
    got = saved_past(history, 2, 2005, start=1000, resumed_from="/ckpt/iter_0001000", own_step=2000,
                     named=verified.name in named)
    assert [r.attempt for r in got] == [1], got
