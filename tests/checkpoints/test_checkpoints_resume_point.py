"""The resume point every view shows (``order.current_resume_point``): the runner's word in
state.json while the save it names is there; the disk's rule when the runner wrote none or its
save was deleted since."""
from __future__ import annotations

import shutil

from moeconsole.runner.checkpoints.order import current_resume_point
from moeconsole.runner.rundir import jsonio, rundir
from tests.checkpoints.conftest import write_demo_checkpoint


def _run(tmp_path, resume_point: dict | None | str = "unset") -> rundir.RunDir:
    root = tmp_path / "out"
    for step in (10, 20):
        write_demo_checkpoint(root / f"checkpoint-{step}", step)
    run = rundir.RunDir(tmp_path / "runs" / "20260101-000000-r-0001")
    run.path.mkdir(parents=True)
    state = {"v": 1, "status": "failed", "name": "r", "checkpoint_root": str(root)}
    if resume_point != "unset":
        state["resume_point"] = resume_point
    jsonio.atomic_write_json(run.state, state)
    return run


def test_a_gone_runners_word_stands_while_its_save_is_there(tmp_path):
    """A finished run: its runner's last resume point is shown as it wrote it (no recipe read, no
    save verified: what ``--json --once`` asks every few seconds)."""
    run = _run(tmp_path, {"path": str(tmp_path / "out" / "checkpoint-10"), "step": 10})
    good = current_resume_point(run, run.read_state(), runner_alive=False)
    assert good == {"path": str(tmp_path / "out" / "checkpoint-10"), "step": 10}


def test_a_deleted_save_or_no_word_is_asked_of_the_disk(tmp_path):
    run = _run(tmp_path, {"path": str(tmp_path / "out" / "checkpoint-20"), "step": 20})
    shutil.rmtree(tmp_path / "out" / "checkpoint-20")       # deleted after the runner ended
    good = current_resume_point(run, run.read_state(), runner_alive=False)
    assert good is not None and good["step"] == 10, good
    old = _run(tmp_path / "old")                                # a runner that wrote no resume point
    good = current_resume_point(old, old.read_state(), runner_alive=False)
    assert good is not None and good["step"] == 20, good


def test_a_live_runners_word_is_taken_as_it_is(tmp_path):
    run = _run(tmp_path, None)                                  # nothing verified ok yet, it says
    assert current_resume_point(run, run.read_state(), runner_alive=True) is None
