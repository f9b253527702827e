"""Review R27 (hostile round 14): state.json written with no inode free. It was rewritten in
place (not atomic: 5 torn reads in 200,000 measured, a runner killed mid-write left it damaged).
Now it is swapped whole with a spare kept beside it since the run's creation
(``renameat2(RENAME_EXCHANGE)``), which needs no inode; in place only where that is refused."""
from __future__ import annotations

import json
import os
import stat

from moeconsole.runner.rundir import jsonio, rundir
from tests.conftest import take_every_inode, tmpfs



def test_state_json_with_no_inode_free_is_swapped_whole_with_its_spare_not_rewritten_in_place(tmp_path):
    with tmpfs(tmp_path, "size=16m,nr_inodes=200,mode=0700"):
        run = rundir.create(tmp_path / "runs", "r")
        spare = run.state_spare
        assert spare.is_file() and stat.S_IMODE(os.stat(spare).st_mode) == 0o600
        assert jsonio.is_temp_name(spare.name)   # every reader that skips temp files skips it
        run.write_state({"status": "running", "step": 1, "name": "x" * 6000})
        assert take_every_inode(tmp_path / "runs") > 0
        assert os.statvfs(tmp_path).f_favail == 0
        for step in range(2, 40):
            spare_ino = os.stat(spare).st_ino
            state_ino = os.stat(run.state).st_ino
            run.write_state({"status": "running", "step": step, "name": "y" * (step * 50)})
            # the two names swapped: the new state is the spare's inode, written whole before
            assert os.stat(run.state).st_ino == spare_ino and os.stat(spare).st_ino == state_ino
            got = json.loads(run.state.read_bytes())
            assert got["step"] == step and got["name"] == "y" * (step * 50)
            assert json.loads(spare.read_bytes())["step"] == step - 1   # the old one, whole
        assert stat.S_IMODE(os.stat(run.state).st_mode) == 0o600


def test_a_run_with_no_spare_is_still_written_in_place_with_no_inode_free(tmp_path):
    """A run made before the spare (or its spare gone with no inode to make it again): the
    in-place rewrite stays the fallback, state.json still follows."""
    with tmpfs(tmp_path, "size=16m,nr_inodes=200,mode=0700"):
        run = rundir.create(tmp_path / "runs", "r")
        run.write_state({"status": "running", "step": 1})
        os.unlink(run.state_spare)
        assert take_every_inode(tmp_path / "runs") > 0
        ino = os.stat(run.state).st_ino
        run.write_state({"status": "succeeded", "step": 9})
        assert os.stat(run.state).st_ino == ino
        assert json.loads(run.state.read_bytes())["status"] == "succeeded"
        assert not run.state_spare.exists()


def test_the_spare_removed_by_a_cleaner_is_made_again_by_the_runner(tmp_path):
    from moeconsole.runner.supervisor.dirguard import DirGuard
    run = rundir.create(tmp_path / "runs", "r")
    said: list[str] = []
    guard = DirGuard(run, said.append)
    try:
        os.unlink(run.state_spare)
        assert guard.check() is None
        assert run.state_spare.is_file() and stat.S_IMODE(os.stat(run.state_spare).st_mode) == 0o600
        assert any("spare" in s for s in said), said
    finally:
        guard.close()
