"""``rundir.taken_over_by``: whether a live runner's state.json was written by another machine since it
started (round 29). The cases a runner meets without any takeover read None."""
from __future__ import annotations

from moeconsole.runner.rundir import rundir

MINE = {"pid": 100, "start_time": 1000.0, "host": "gpu-07", "boot_id": "b-gpu07", "pidns": 1}


def test_another_machines_runner_or_kill_written_after_this_runner_started_is_a_takeover():
    assert rundir.taken_over_by({"updated_at": 2000.0, "runner": {"host": "login-1", "boot_id": "b-login"}},
                                MINE) == "login-1"
    assert rundir.taken_over_by({"updated_at": 2000.0, "runner": {"pid": None, "host": "login-1"}},
                                {**MINE, "boot_id": None}) == "login-1"   # no boots to compare: the host names


def test_this_machine_an_older_copy_or_no_runner_is_no_takeover():
    same_boot = {"updated_at": 2000.0, "runner": {"host": "renamed", "boot_id": "b-gpu07", "pid": 5}}
    older = {"updated_at": 900.0, "runner": {"host": "login-1", "boot_id": "b-login"}}
    assert rundir.taken_over_by(same_boot, MINE) is None   # a host name changed mid-run: still here
    assert rundir.taken_over_by(older, MINE) is None        # a state.json put back from a copy
    assert rundir.taken_over_by({"updated_at": 2000.0}, MINE) is None   # no runner: a file rebuilt or by hand
    assert rundir.taken_over_by({}, MINE) is None                       # missing or damaged
    assert rundir.taken_over_by({"updated_at": 2000.0, "runner": {"host": "gpu-07"}}, {**MINE, "boot_id": None}) is None


def test_a_takeover_that_names_this_runner_is_one_whatever_the_other_machines_clock_says():
    """The login node's clock an hour behind the node's (no NTP on one of them): its `kill --machine-gone`
    or `restart` wrote an ``updated_at`` before this runner's start, and the time rule alone took the write
    for an older copy put back: the runner wrote its `running` over the user's kill. A writer now names the
    runner record it replaced (``took_over``); the runner named there was taken over."""
    skewed = {"updated_at": MINE["start_time"] - 3600.0,
              "runner": {"pid": None, "host": "login-1", "boot_id": "b-login", **rundir.replacing(MINE)}}
    assert rundir.taken_over_by(skewed, MINE) == "login-1"
    restarted = {"updated_at": 10.0, "runner": {"pid": 7, "start_time": 5.0, "host": "login-1", "boot_id": "b-login",
                                                **rundir.replacing(MINE)}}
    assert rundir.taken_over_by(restarted, MINE) == "login-1"


def test_a_takeover_record_of_another_runner_or_of_this_machine_falls_back_to_the_times():
    someone = {**MINE, "start_time": 500.0}   # a runner before this one (this one replaced it)
    older = {"updated_at": 900.0, "runner": {"host": "login-1", "boot_id": "b-login", **rundir.replacing(someone)}}
    assert rundir.taken_over_by(older, MINE) is None   # a copy put back from before this runner: not it
    chain = {"updated_at": 2000.0, "runner": {"host": "login-2", "boot_id": "b-l2", **rundir.replacing(someone)}}
    assert rundir.taken_over_by(chain, MINE) == "login-2"   # a later takeover of a takeover: the times say it
    mine_here = {"updated_at": 2000.0, "runner": {**MINE, "pid": 101, **rundir.replacing(MINE)}}
    assert rundir.taken_over_by(mine_here, MINE) is None   # this machine's own (the same boot)
    assert rundir.replacing({"pid": None, "host": "login-1"}) == {}   # a client's record names no process


def test_the_replaced_runner_is_kept_through_state_json_s_model(tmp_path):
    run = rundir.RunDir(tmp_path / "r")
    run.path.mkdir()
    run.write_state({"status": "killed", "attempt": 1, "runner": {"pid": None, "host": "login-1",
                                                                  **rundir.replacing(MINE)}})
    assert rundir.taken_over_by({**run.read_state(), "updated_at": 1.0}, MINE) == "login-1"
