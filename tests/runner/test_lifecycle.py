"""The lifecycle as a pure function: every event in every state, on plain data."""
from __future__ import annotations

import itertools
import math

import pytest

from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.core.state import LIVE, TERMINAL, Status

CFG = lc.Settings(grace_s=5.0, floor_s=10.0, ceiling_s=90.0)
NOW = 1000.0


def kinds(effects) -> list[str]:
    return [type(e).__name__ for e in effects]


def status_set(effects) -> Status | None:
    return next((e.status for e in effects if isinstance(e, lc.SetStatus)), None)


def running() -> lc.Life:
    return lc.Life(Status.RUNNING, attempt_live=True)


ALL_EVENTS = [
    lc.Started(leader_alive=True, leader_known=True), lc.Started(leader_alive=False, leader_known=True),
    lc.Started(leader_alive=False, leader_known=False, restart_requested=True),
    lc.Started(leader_alive=True, leader_known=True, stopping=("user", "cli")),
    lc.LeaderExit(0), lc.LeaderExit(-9), lc.LeaderExit(None),
    lc.TreeProbe(alive=True), lc.TreeProbe(alive=False), lc.TreeProbe(alive=False, hidden=True),
    lc.TreeProbe(alive=True, writing=True),
    lc.Control("kill", grace_s=float("nan")), lc.Control("restart", now=True), lc.Control("resume"),
    lc.Control("status"), lc.Tick(), lc.Hang(100.0, 60.0), lc.Divergence(), lc.BadSaves("2 stubs"),
    lc.ConditionsProbe(("port 29500 busy",), "wait", port_busy=True), lc.ConditionsProbe((), "wait"),
    lc.Judged("restart", "oom", 1.0, 0.0), lc.Judged("succeed", "exit 0"), lc.Judged("fail", "fatal"),
    lc.Judged("unsaved", "no verified checkpoint"), lc.Launched(3), lc.LaunchFailed("cannot start 'trian.py'"),
]
ALL_LIVES = [lc.Life(s) for s in Status] + [
    running(), lc.Life(Status.RUNNING, exited=True, returncode=1),
    lc.Life(Status.RUNNING, exited=True, returncode=0, exited_at=NOW - 1, lingering=True),
    lc.Life(Status.STOPPING, attempt_live=True, kill=lc.KillInProgress("user", NOW - 1, NOW + 4)),
    lc.Life(Status.COOLDOWN, cooldown=lc.Cooldown(NOW - 1, NOW + 5, NOW + 60, "oom")),
]


@pytest.mark.parametrize("life,event", list(itertools.product(ALL_LIVES, ALL_EVENTS)))
def test_every_event_in_every_state_gives_a_valid_state(life, event):
    new, effects = lc.step(life, event, NOW, CFG)
    assert isinstance(new.status, Status)
    # A written status is the new state's status; a terminal run stays terminal unless restarted.
    if status_set(effects) is not None:
        assert status_set(effects) == new.status
    # A status change is recorded once: a SetStatus always changes the status.
    assert all(e.status != life.status for e in effects if isinstance(e, lc.SetStatus))
    if life.status in TERMINAL and not (isinstance(event, lc.Started) and event.restart_requested):
        assert new.status == life.status
    # Deadlines are real numbers: a NaN grace never leaves a kill that cannot escalate.
    if new.kill:
        assert math.isfinite(new.kill.deadline) and new.kill.deadline >= NOW - 1
    if new.cooldown:
        assert new.cooldown.earliest <= new.cooldown.ceiling_at
    # Never two attempts: a launch only from a cooldown with no live attempt.
    if any(isinstance(e, lc.Launch) for e in effects):
        assert life.status == Status.COOLDOWN and not life.attempt_live


def test_new_runner_adopts_a_live_attempt_and_judges_a_dead_one():
    new, eff = lc.step(lc.Life(Status.STOPPING), lc.Started(leader_alive=True, leader_known=True), NOW, CFG)
    assert kinds(eff) == ["Adopt"] and new.status == Status.RUNNING and new.attempt_live
    # Runner and training both died: the attempt is judged, not left RUNNING forever.
    new, eff = lc.step(lc.Life(Status.RUNNING), lc.Started(leader_alive=False, leader_known=True), NOW, CFG)
    assert eff == [lc.JudgeAttempt(None)]
    new, eff = lc.step(new, lc.Judged("succeed", "training finished (exit 0)"), NOW, CFG)
    assert new.status == Status.SUCCEEDED
    # A paused run stays paused under a new runner.
    new, eff = lc.step(lc.Life(Status.PAUSED), lc.Started(False, True), NOW, CFG)
    assert new.status == Status.PAUSED and eff == []
    # A fresh run cools down (pre-flight) before its first launch.
    new, eff = lc.step(lc.Life(Status.STARTING), lc.Started(False, False), NOW, CFG)
    assert new.status == Status.COOLDOWN and new.cooldown.preflight and new.cooldown.earliest == NOW


def test_kill_with_nan_grace_still_escalates_to_sigkill():
    new, eff = lc.step(running(), lc.Control("kill", grace_s=float("nan")), NOW, CFG)
    assert eff[0] == lc.SignalTree("TERM", "user") and new.status == Status.STOPPING
    assert new.kill.deadline == NOW + CFG.grace_s
    same, eff = lc.step(new, lc.Tick(), NOW + 1, CFG)
    assert eff == []
    later, eff = lc.step(new, lc.Tick(), NOW + CFG.grace_s, CFG)
    assert eff[0].sig == "KILL" and later.kill.escalated


def test_leader_exit_then_survivors_are_cleaned_before_judging():
    life, eff = lc.step(running(), lc.LeaderExit(-9), NOW, CFG)
    assert life.exited and kinds(eff) == ["Record"]
    life, eff = lc.step(life, lc.TreeProbe(alive=True), NOW, CFG)
    assert life.kill.reason == "cleanup" and eff[0] == lc.SignalTree("TERM", "cleanup")
    life, eff = lc.step(life, lc.TreeProbe(alive=False, hidden=True), NOW + 1, CFG)
    assert eff == [lc.SignalTree("KILL", "marked processes outside the tree")]
    life, eff = lc.step(life, lc.TreeProbe(alive=False), NOW + 2, CFG)
    assert eff[-1] == lc.JudgeAttempt("cleanup") and life.kill is None


def test_a_tree_that_trains_on_after_its_leaders_exit_0_is_not_cut_short():
    """A launcher that returned 0 while the training it started goes on: what outlives it gets a
    kill grace to show it writes the log; once it does, the attempt goes on in it (one alert):
    a user's kill and the heartbeat's hang still end it; what never wrote is cleaned up."""
    life, _ = lc.step(running(), lc.LeaderExit(0), NOW, CFG)
    still, eff = lc.step(life, lc.TreeProbe(alive=True), NOW + 1, CFG)    # within the grace: wait
    assert eff == [] and still.kill is None
    on, eff = lc.step(still, lc.TreeProbe(alive=True, writing=True), NOW + 2, CFG)
    assert on.lingering and [e.fields["rule"] for e in eff] == ["tree_outlives_leader"]
    same, eff = lc.step(on, lc.TreeProbe(alive=True, writing=True), NOW + 60, CFG)
    assert eff == [] and same.status == Status.RUNNING            # the alert is given once
    killed, eff = lc.step(on, lc.Control("kill"), NOW + 61, CFG)
    assert killed.kill.reason == "user" and eff[0] == lc.SignalTree("TERM", "user")
    quiet, eff = lc.step(on, lc.TreeProbe(alive=True), NOW + 61, CFG)  # quiet: the heartbeat decides
    assert eff == [] and quiet.kill is None
    hung, eff = lc.step(on, lc.Hang(100.0, 60.0), NOW + 61, CFG)       # a hang, as in any attempt
    assert hung.kill.reason == "hang"
    stray, eff = lc.step(life, lc.TreeProbe(alive=True), NOW + 6, CFG)  # never wrote within the grace
    assert stray.kill.reason == "cleanup"
    done, eff = lc.step(on, lc.TreeProbe(alive=False), NOW + 61, CFG)  # the training ended itself
    assert eff == [lc.JudgeAttempt(None)] and not done.lingering
    # a crashed leader's tree is ended at once, whatever it writes
    crashed, _ = lc.step(running(), lc.LeaderExit(1), NOW, CFG)
    crashed, eff = lc.step(crashed, lc.TreeProbe(alive=True, writing=True), NOW, CFG)
    assert crashed.kill.reason == "cleanup"


def test_a_new_runner_carries_on_the_kill_its_predecessor_had_begun():
    """A STOPPING run whose runner died: the new runner adopts the attempt and begins the same
    kill again (its reason and who asked), never leaves it RUNNING."""
    life, eff = lc.step(lc.Life(Status.STOPPING), lc.Started(True, True, stopping=("user", "cli")), NOW, CFG)
    assert kinds(eff)[:2] == ["Adopt", "SignalTree"] and life.status == Status.STOPPING
    assert life.kill.reason == "user" and life.kill.requested_by == "cli" and life.kill.deadline == NOW + CFG.grace_s
    assert not any(isinstance(e, lc.SetStatus) for e in eff)   # still STOPPING: no second status record
    life, eff = lc.step(lc.Life(Status.STOPPING), lc.Started(True, True), NOW, CFG)  # no kill recorded
    assert eff == [lc.Adopt()] and life.status == Status.RUNNING


def test_user_kill_during_a_restart_kill_wins_and_is_not_restarted():
    life, _ = lc.step(running(), lc.Control("restart"), NOW, CFG)
    assert life.kill.reason == "restart"
    life, eff = lc.step(life, lc.Control("kill"), NOW + 1, CFG)
    assert life.kill.reason == "user"
    life, _ = lc.step(life, lc.LeaderExit(-15), NOW + 2, CFG)
    life, eff = lc.step(life, lc.TreeProbe(alive=False), NOW + 2, CFG)
    assert eff[-1] == lc.JudgeAttempt("user", False)


def test_cooldown_waits_for_conditions_until_the_ceiling_then_launches_on_a_new_port():
    life, _ = lc.step(lc.Life(Status.PAUSED), lc.Control("resume"), NOW, CFG)
    busy = lc.ConditionsProbe(("port 29500 busy",), "wait", port_busy=True)
    same, eff = lc.step(life, busy, NOW + CFG.floor_s + 1, CFG)
    assert eff == [] and same.cooldown.waiting_on == ("port 29500 busy",)
    new, eff = lc.step(life, busy, NOW + CFG.ceiling_s, CFG)
    assert eff == [lc.Launch(new_port=True, ceiling_alert=("port 29500 busy",))] and new.attempt_live


def test_no_room_to_save_holds_the_launch_past_the_ceiling_until_there_is_room():
    life, _ = lc.step(lc.Life(Status.PAUSED), lc.Control("resume"), NOW, CFG)
    full = lc.ConditionsProbe(("room on /ckpt: 2.0 GB free, need 9.0 GB (cooldown.disk_free_min_mib)",), "wait",
                              hold=True)
    for late in (CFG.ceiling_s, CFG.ceiling_s * 100):
        same, eff = lc.step(life, full, NOW + late, CFG)
        assert eff == [] and not same.attempt_live and same.status == Status.COOLDOWN
    new, eff = lc.step(life, lc.ConditionsProbe((), "wait"), NOW + CFG.ceiling_s * 100, CFG)
    assert eff == [lc.Launch()] and new.attempt_live


def test_preflight_refuse_fails_the_run_and_kill_policy_kills_blockers():
    life, _ = lc.step(lc.Life(Status.STARTING), lc.Started(False, False), NOW, CFG)
    new, eff = lc.step(life, lc.ConditionsProbe(("GPU 0: 30 GiB used",), "refuse"), NOW, CFG)
    assert new.status == Status.FAILED and "pre-flight failed" in eff[-1].reason
    new, eff = lc.step(life, lc.ConditionsProbe(("pid 77 holds GPU 0",), "kill", blockers=True), NOW, CFG)
    assert kinds(eff) == ["KillBlockers"] and new.status == Status.COOLDOWN


def test_hang_and_divergence_kill_only_a_live_attempt():
    new, eff = lc.step(running(), lc.Hang(120.0, 60.0), NOW, CFG)
    assert new.kill.reason == "hang"
    new, eff = lc.step(lc.Life(Status.COOLDOWN), lc.Hang(120.0, 60.0), NOW, CFG)
    assert eff == []
    new, eff = lc.step(running(), lc.Divergence(), NOW, CFG)
    assert new.kill.reason == "divergence"


def test_bad_saves_stop_a_live_attempt_and_its_judgement_pauses():
    new, eff = lc.step(running(), lc.BadSaves("2 bad saves in a row"), NOW, CFG)
    assert new.kill.reason == "bad_saves" and kinds(eff)[0] == "SignalTree"
    new, eff = lc.step(new, lc.LeaderExit(-15), NOW + 1, CFG)
    new, eff = lc.step(new, lc.TreeProbe(alive=False), NOW + 1, CFG)
    assert eff[-1] == lc.JudgeAttempt("bad_saves")
    assert lc.step(lc.Life(Status.COOLDOWN), lc.BadSaves("x"), NOW, CFG)[1] == []


@pytest.mark.parametrize("action,status", [("restart", Status.COOLDOWN), ("pause", Status.PAUSED),
                                           ("fail", Status.FAILED), ("stop", Status.KILLED),
                                           ("succeed", Status.SUCCEEDED), ("unsaved", Status.UNSAVED)])
def test_the_policy_decision_sets_the_status(action, status):
    new, eff = lc.step(lc.Life(Status.RUNNING, exited=True), lc.Judged(action, "why", 2.0, 0.0), NOW, CFG)
    assert new.status == status and status_set(eff) == status
    if action == "restart":
        assert new.cooldown.earliest == NOW + 2.0


def test_kill_of_a_run_with_nothing_running_ends_it_and_terminal_runs_refuse_control():
    for s in (Status.COOLDOWN, Status.PAUSED):
        new, eff = lc.step(lc.Life(s), lc.Control("kill"), NOW, CFG)
        assert new.status == Status.KILLED and eff[-1].answer["ok"]
    for s in TERMINAL:
        new, eff = lc.step(lc.Life(s), lc.Control("restart"), NOW, CFG)
        assert new.status == s and eff[-1].answer["ok"] is False


def test_status_enum_is_a_plain_string_on_the_wire():
    import json
    assert json.dumps({"status": Status.RUNNING}) == '{"status": "running"}'
    assert Status.RUNNING == "running" and f"{Status.PAUSED}" == "paused" and "killed" in TERMINAL
    assert Status.STARTING in LIVE


def test_a_launch_becomes_running_only_when_the_attempt_started():
    cooling = lc.Life(Status.COOLDOWN, cooldown=lc.Cooldown(NOW - 5, NOW - 1, NOW + 60, "oom"))
    launching, effects = lc.step(cooling, lc.ConditionsProbe((), "wait"), NOW, CFG)
    assert kinds(effects) == ["Launch"] and launching.status == Status.COOLDOWN and launching.attempt_live
    running_, effects = lc.step(launching, lc.Launched(2), NOW, CFG)
    assert running_.status == Status.RUNNING and status_set(effects) == Status.RUNNING
    assert effects[0].reason == "attempt 2 started"
    failed, effects = lc.step(launching, lc.LaunchFailed("cannot start 'trian.py': No such file"), NOW, CFG)
    assert failed.status == Status.FAILED and not failed.attempt_live
    assert effects == [lc.SetStatus(Status.FAILED, "cannot start 'trian.py': No such file")]
    # a Launched that arrives when no launch was asked for changes nothing
    assert lc.step(running(), lc.Launched(2), NOW, CFG) == (running(), [])


def test_a_restart_asked_during_a_cooldown_records_no_second_cooldown_status():
    cooling = lc.Life(Status.COOLDOWN, cooldown=lc.Cooldown(NOW - 1, NOW + 5, NOW + 60, "oom"))
    new, effects = lc.step(cooling, lc.Control("restart", now=True), NOW, CFG)
    assert new.status == Status.COOLDOWN and new.cooldown is not None and new.cooldown.earliest == NOW
    assert status_set(effects) is None and "Record" in kinds(effects)


def test_next_deadline_is_the_sigkill_or_the_earliest_launch():
    assert lc.next_deadline(running(), NOW) is None
    stopping = lc.Life(Status.STOPPING, attempt_live=True, kill=lc.KillInProgress("user", NOW - 1, NOW + 4))
    assert lc.next_deadline(stopping, NOW) == 4
    cooling = lc.Life(Status.COOLDOWN, cooldown=lc.Cooldown(NOW - 1, NOW + 2.5, NOW + 60, "oom"))
    assert lc.next_deadline(cooling, NOW) == 2.5
    assert lc.next_deadline(cooling, NOW + 3) is None


def test_an_orphan_that_ends_badly_after_or_just_before_its_leaders_exit_0_is_the_attempts_end():
    # a backgrounded training that died after its launcher's exit 0, or while the launcher was exiting
    assert lc.attempt_returncode(0, [(0.3, 3)]) == 3
    assert lc.attempt_returncode(0, [(-0.02, 3)]) == 3
    assert lc.attempt_returncode(0, [(-lc.ORPHAN_END_WINDOW_S, -9)]) == -9
    # a helper that ended badly long before a training that ended well: the run succeeded
    assert lc.attempt_returncode(0, [(-lc.ORPHAN_END_WINDOW_S - 0.01, 3)]) == 0
    assert lc.attempt_returncode(0, [(-3600.0, 1), (0.5, 0)]) == 0
    # the first bad end counts; a leader's own failure, or an end not known, stands
    assert lc.attempt_returncode(0, [(-3600.0, 1), (0.1, 7), (0.2, 3)]) == 7
    assert lc.attempt_returncode(2, [(0.1, 3)]) == 2
    assert lc.attempt_returncode(None, [(0.1, 3)]) is None
    assert lc.attempt_returncode(0, []) == 0
