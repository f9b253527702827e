"""Review R37 of newcomer round 3: which look at the index a listing's rows go with
(``store.listing``), so the run browser reads the index again exactly when someone else wrote it."""
from __future__ import annotations

import os

from moeconsole.runner.rundir import store
from tests.console.conftest import write_run


def _runs(tmp_path):
    base = tmp_path / "runs"
    base.mkdir(mode=0o700)
    for i in range(3):
        write_run(base, f"20240101-00000{i}-old{i}-b00{i}", name=f"old{i}", status="succeeded")
    store.rebuild(base)
    return base


def test_a_runner_commit_during_the_read_is_not_in_the_look_the_rows_go_with(tmp_path, monkeypatch):
    base = _runs(tmp_path)
    new = write_run(base, "20240105-000000-new-n001", name="new", status="running", runner_pid=os.getpid())
    names = store.display_names

    def display_names(rows, conn=None):   # the runner's index_run lands after the SELECT
        other = store.connect(base)
        store.upsert(other, store.row_from_state(new, new.read_state(), {}))
        other.close()
        monkeypatch.setattr(store, "display_names", names)
        return names(rows, conn)
    monkeypatch.setattr(store, "display_names", display_names)
    rows, seen = store.listing(base)
    # round 18: a run directory the index has no row for is listed from its directory all the same
    # (``store._unindexed``: a runner that could not write its row must not hide its run)
    assert new.run_id in [r["id"] for r in rows]
    assert seen != store.index_seen(base)   # the browser reads again
    rows, seen = store.listing(base)
    assert new.run_id in [r["id"] for r in rows] and seen == store.index_seen(base)


def test_a_listing_s_own_write_of_a_training_run_s_row_is_no_change(tmp_path):
    """The other way: the row of a run whose files went ahead of the index is written by the
    listing itself; its look is the one after that write, so a browser with a run training keeps
    reading the live rows alone rather than the whole index at every refresh."""
    base = _runs(tmp_path)
    run_id = "20240105-000000-live-n002"
    write_run(base, run_id, name="live", status="running", runner_pid=os.getpid(), steps=40)
    store.rebuild(base)
    write_run(base, run_id, name="live", status="running", runner_pid=os.getpid(), steps=70)
    before = store.index_seen(base)
    rows, seen = store.listing(base)
    assert next(r for r in rows if r["id"] == run_id)["last_step"] == 70
    assert store.index_seen(base) != before   # the listing wrote the row ...
    assert seen == store.index_seen(base)     # ... and that is not a change to read again for


def _in_place_update(base, run_id, status):
    """An ended run's row updated in place (``runs rebuild``, a late event): the index's inode and
    size stay, its time alone changes."""
    conn = store.connect(base)
    with conn:
        conn.execute("UPDATE runs SET status = ? WHERE id = ?", (status, run_id))
    conn.close()


def test_an_index_stamped_in_whole_seconds_within_the_tick_is_looked_at_again(tmp_path):
    """A filesystem with 1 s (ext3, HFS+) or 2 s (FAT) file times, simulated by ``os.utime`` as the
    reviewer's inplace.py did: an in-place update within the tick keeps the index's inode, size and
    time, and the browser had kept its rows (the run's old status) until another write or F5."""
    import time
    base = _runs(tmp_path)
    index = base / store.INDEX_NAME
    run_id = "20240101-000000-old0-b000"
    tick = time.time_ns() // 1_000_000_000 * 1_000_000_000   # the second we are in
    os.utime(index, ns=(tick, tick))
    looked = store.index_seen(base)
    _in_place_update(base, run_id, "failed")
    os.utime(index, ns=(tick, tick))   # the same tick: the filesystem stamps the same time
    assert store.index_seen(base) != looked


def test_an_index_stamped_in_whole_seconds_long_ago_is_no_change(tmp_path):
    """The other way: a whole-second time from before the tick's end is trusted, so the browser
    keeps reading the live rows alone on such a filesystem when nothing was written."""
    import time
    base = _runs(tmp_path)
    index = base / store.INDEX_NAME
    old = (time.time_ns() // 1_000_000_000 - 10) * 1_000_000_000
    os.utime(index, ns=(old, old))
    assert store.index_seen(base) == store.index_seen(base)
