"""Review R74 of round 24: state.json written into the full-disk reserve's blocks, and what may be planted or
left in the reserve's place (a FIFO, a short file, a hard link to another file). Real tmpfs."""
from __future__ import annotations

import json
import os
import threading

from moeconsole.runner.rundir import rundir
from moeconsole.runner.rundir.journal import Journal
from tests.conftest import fill_up, journal_on_tmpfs, tmpfs


def _state(step: int) -> dict:
    return {"status": "running", "name": "full", "attempt": 1, "stale_after_s": 30.0, "step": step}


def test_a_fifo_in_the_reserves_place_never_hangs_the_runner_on_a_full_disk(tmp_path):
    """A FIFO where `.reserve` belongs (the family of a planted symlink, which O_NOFOLLOW refuses):
    `replace_from_reserve` opens it O_WRONLY without O_NONBLOCK, which blocks until a reader
    comes: the runner's loop stops on the first full-disk state write."""
    with journal_on_tmpfs(tmp_path, "fifo") as (base, run, journal):
        assert journal.write_state(_state(1))
        reserve = journal.where(journal.reserve)
        reserve.unlink()
        os.mkfifo(reserve, 0o600)
        fill_up(base / "filler")
        done = threading.Event()
        t = threading.Thread(target=lambda: (journal.write_state(_state(2)), done.set()), daemon=True)
        t.start()
        finished = done.wait(20)
        if not finished:   # unblock the writer so the test leaves nothing behind
            os.close(os.open(reserve, os.O_RDONLY | os.O_NONBLOCK))
            t.join(20)
        assert finished, "journal.write_state blocked on a FIFO planted as .reserve (the runner's loop stops)"


def test_a_reserve_left_small_is_made_whole_again_before_the_next_outage(tmp_path):
    """A `.reserve` smaller than its RESERVE_BYTES (a runner killed between `ftruncate` and the rename in
    `replace_from_reserve`, or between `ensure_reserve`'s O_CREAT and its `posix_fallocate`): `ensure_reserve`
    looks only at whether the name exists, so it is never made whole again, and at the next full disk
    state.json never says the disk is full (the very thing the reserve is kept for)."""
    with journal_on_tmpfs(tmp_path, "small") as (base, run, journal):
        assert journal.write_state(_state(1))
        reserve = journal.where(journal.reserve)
        os.truncate(reserve, 0)   # as ensure_reserve leaves it when killed after O_CREAT
        for step in range(2, 6):   # the disk has room: many state writes, each one calls ensure_reserve
            assert journal.write_state(_state(step))
        fill_up(base / "filler")
        assert not journal.write_state(_state(6))
        on_disk = json.loads(run.state.read_text())
        assert on_disk.get("storage") and on_disk["step"] == 6, on_disk


def test_a_fifo_in_the_state_spares_place_never_hangs_the_runner_out_of_inodes(tmp_path):
    """The same family on the inode-exhausted path (`exchange_write` opens the spare O_WRONLY, no O_NONBLOCK)."""
    from tests.conftest import take_every_inode
    base = tmp_path / "runs"
    base.mkdir()
    with tmpfs(base, "size=8m,nr_inodes=200,mode=0700"):
        run = rundir.create(base, "fifo2")
        journal = Journal(run, lambda msg: None)
        assert journal.write_state(_state(1))
        run.state_spare.unlink()
        os.mkfifo(run.state_spare, 0o600)
        (base / "many").mkdir()
        take_every_inode(base / "many")
        done = threading.Event()
        t = threading.Thread(target=lambda: (journal.write_state(_state(2)), done.set()), daemon=True)
        t.start()
        finished = done.wait(20)
        if not finished:
            os.close(os.open(run.state_spare, os.O_RDONLY | os.O_NONBLOCK))
            t.join(20)
        assert finished, "journal.write_state blocked on a FIFO planted as state.json's spare"


def test_a_hard_link_planted_as_the_reserve_never_has_the_other_file_rewritten(tmp_path):
    """`.reserve` made a second name of another file of the user's on the same filesystem: writing
    state.json into it would have rewritten that file and renamed it over state.json."""
    with journal_on_tmpfs(tmp_path, "linked") as (base, run, journal):
        assert journal.write_state(_state(1))
        theirs = base / "notes.txt"
        theirs.write_bytes(b"the user's own notes\n" * 20_000)
        reserve = journal.where(journal.reserve)
        reserve.unlink()
        os.link(theirs, reserve)
        fill_up(base / "filler")
        journal.write_state(_state(2))
        assert theirs.read_bytes() == b"the user's own notes\n" * 20_000
        assert json.loads(run.state.read_text()).get("step") in (1, 2)
