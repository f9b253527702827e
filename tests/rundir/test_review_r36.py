"""Review R36, finding 4: a crash report set aside for want of an inode was retried forever, whatever the error,
so one that can never be written (``crashes/`` made a symlink meanwhile: ELOOP) kept the journal ``unwritten``
and a finishing runner waited for it for good. Real: a tmpfs out of inodes, a real symlink."""
from __future__ import annotations

import json
import os
import shutil

from moeconsole.runner.rundir import rundir
from moeconsole.runner.rundir.journal import Journal


def test_a_report_set_aside_whose_directory_became_a_symlink_is_dropped_not_retried_forever(tmp_path):
    from tests.conftest import take_every_inode, tmpfs
    base = tmp_path / "runs"
    base.mkdir()
    said: list[str] = []
    with tmpfs(base, "size=16m,nr_inodes=200,mode=0700"):
        run = rundir.create(base, "j")
        journal = Journal(run, said.append)
        filler = base / "filler"
        filler.mkdir()
        assert take_every_inode(filler) > 0
        journal.write_json(run.crash_report(1), {"attempt": 1, "class": "unknown"})
        journal.event("run_end", status="failed")
        assert len(journal.aside) == 1 and journal.unwritten, said
        shutil.rmtree(filler)                       # inodes back, but crashes/ is a symlink now
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        crashes = run.crash_report(1).parent
        shutil.rmtree(crashes)
        os.symlink(elsewhere, crashes)
        journal.flush()
        assert not journal.unwritten and not journal.aside, said
        assert list(elsewhere.iterdir()) == []      # never written through the link
        assert any("is not a directory of this run" in m for m in said), said
        # the records behind it were written all along
        assert [json.loads(x)["type"] for x in run.events.read_text().splitlines()][-1:] == ["run_end"]


def test_a_report_set_aside_is_still_written_once_inodes_are_back(tmp_path):
    from tests.conftest import take_every_inode, tmpfs
    base = tmp_path / "runs"
    base.mkdir()
    with tmpfs(base, "size=16m,nr_inodes=200,mode=0700"):
        run = rundir.create(base, "j")
        journal = Journal(run, lambda m: None)
        filler = base / "filler"
        filler.mkdir()
        assert take_every_inode(filler) > 0
        journal.write_json(run.crash_report(1), {"attempt": 1, "class": "unknown"})
        assert journal.aside and journal.unwritten
        journal.flush()
        assert journal.aside                        # still no inode: it waits
        shutil.rmtree(filler)
        journal.flush()
        assert not journal.unwritten and json.loads(run.crash_report(1).read_text())["class"] == "unknown"
