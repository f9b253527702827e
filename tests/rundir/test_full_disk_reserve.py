"""state.json says the disk is full even while another writer takes every byte the moment it is
freed (the training's own checkpoint save filling the disk). The runner kept a reserve file for
that one write; it used to delete the reserve and then write state.json as a new file, and on a
busy machine the other writer took the freed room in between: state.json kept saying all was
well for as long as the disk stayed full (CI caught it: `runs show` and `--json` showed no
storage error, and the log offset past records that waited). Real tmpfs, real competing process."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from moeconsole.runner.rundir import rundir
from tests.conftest import fill_up, journal_on_tmpfs
from tests.waiting import until

# Takes every byte it can, at once and forever (no sleep): any room freed is gone in microseconds.
GREEDY = textwrap.dedent("""
    import os, sys
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    open(sys.argv[2], "w").close()
    chunk = 65536
    while True:
        try:
            os.write(fd, b"\\0" * chunk)
        except OSError:
            chunk = max(1, chunk // 2) if chunk > 1 else 65536
""")


def _state(step: int) -> dict:
    return {"status": "running", "name": "full", "attempt": 1, "stale_after_s": 30.0, "step": step}


def _full(where: Path) -> bool:
    return os.statvfs(where).f_bavail == 0


def test_state_json_says_the_disk_is_full_while_another_writer_takes_every_freed_byte(tmp_path):
    with journal_on_tmpfs(tmp_path, "full", size="4m") as (base, run, journal):
        for outage in range(6):
            assert journal.write_state(_state(outage)), "the disk has room: written"
            assert journal.where(journal.reserve).exists(), "the reserve is kept while there is room"
            filler, ready = base / "filler", tmp_path / f"ready-{outage}"
            greedy = subprocess.Popen([sys.executable, "-c", GREEDY, str(filler), str(ready)])
            try:
                until(lambda: ready.exists() and _full(base), 60, what="the disk full")
                assert not journal.write_state(_state(outage + 100))
                on_disk = json.loads(run.state.read_text())
                assert on_disk.get("storage"), (outage, on_disk)
                assert "space" in on_disk["storage"]["error"].lower(), on_disk["storage"]
                assert on_disk["step"] == outage + 100, "the state of now, not the one before the disk filled"
                # later writes while the disk stays full fail quietly; the file still says why
                until(lambda: _full(base), 60, what="the disk full again")
                assert not journal.write_state(_state(outage + 200))
                assert json.loads(run.state.read_text())["storage"], "never lost once written"
            finally:
                greedy.kill()
                greedy.wait()
            filler.unlink()


def test_state_json_says_the_disk_is_full_while_the_reserve_is_held_open_by_a_reader(tmp_path):
    """A reader holds the reserve open (a backup or an `rsync` of the runs directory, an indexer):
    deleting it frees no byte until that reader closes it, so the write meant to go into its room
    found none. Written into the reserve's own blocks, it needs no byte freed."""
    with journal_on_tmpfs(tmp_path, "held") as (base, run, journal):
        assert journal.write_state(_state(5))
        reader = open(journal.where(journal.reserve), "rb")
        try:
            filler = base / "filler"
            fill_up(filler)
            assert not journal.write_state(_state(6))
            on_disk = json.loads(run.state.read_text())
            assert on_disk.get("storage") and on_disk["step"] == 6, on_disk
            assert "space" in on_disk["storage"]["error"].lower(), on_disk["storage"]
        finally:
            reader.close()
        filler.unlink()
        assert journal.write_state(_state(7)), "room again: written the usual way"
        on_disk = json.loads(run.state.read_text())
        assert on_disk.get("storage") is None and on_disk["step"] == 7, on_disk
        assert journal.where(journal.reserve).exists(), "the reserve made again"


def test_a_reserve_too_small_for_the_state_is_given_up_for_its_room(tmp_path):
    """A reserve that cannot hold the state (cut short by hand, or on a copy-on-write filesystem, ZFS, where
    overwriting needs new blocks too): it is deleted and the room it frees takes state.json the usual way."""
    with journal_on_tmpfs(tmp_path, "small") as (base, run, journal):
        assert journal.write_state(_state(5))
        reserve = journal.where(journal.reserve)
        os.truncate(reserve, 100)   # one page: room for the state once given up, too small to write it into
        filler = base / "filler"
        fill_up(filler)
        assert not journal.write_state(_state(6))
        on_disk = json.loads(run.state.read_text())
        assert on_disk.get("storage") and on_disk["step"] == 6, on_disk
        filler.unlink()


def test_runs_show_says_the_run_directory_is_not_writable_while_state_json_says_so(tmp_path):
    """state.json's ``storage`` reached `--json` only: `runs show`, `runs ls` and the run screen's status
    word said a plain RUNNING through the whole outage (review R74)."""
    base = tmp_path / "runs"
    base.mkdir()
    run = rundir.create(base, "full")
    run.write_state({**_state(5), "storage": {"error": "No space left on device", "since": 1.0,
                                              "pending_records": 12}})
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "runs", "show", run.run_id,
                          "--runs-dir", str(base)], capture_output=True, text=True, timeout=120)
    assert "run directory not writable: No space left on device; 12 records wait in memory" in out.stdout, \
        (out.stdout, out.stderr)


def test_every_state_of_a_full_disks_outage_is_written_not_the_first_only(tmp_path):
    """The reserve took the outage's first state.json only: the crash's verdict written a moment later (the
    attempt over, judged off the loop since round 23) never reached the file, which said RUNNING for the
    whole outage (CI: round 6's full-disk test). The reserve and state.json now take turns, no block let go."""
    with journal_on_tmpfs(tmp_path, "turns") as (base, run, journal):
        assert journal.write_state(_state(5))
        fill_up(base / "filler")
        for step in range(6, 12):
            assert not journal.write_state(_state(step))
            on_disk = json.loads(run.state.read_text())
            assert on_disk["step"] == step and on_disk.get("storage"), on_disk
        (base / "filler").unlink()
        assert journal.write_state(_state(12))
        on_disk = json.loads(run.state.read_text())
        assert on_disk["step"] == 12 and on_disk.get("storage") is None, on_disk
        assert os.stat(journal.where(journal.reserve)).st_size >= 256 * 1024, "the reserve whole again"
