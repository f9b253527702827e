"""Round 23: judging a crash never holds the runner's loop.

A real runner supervises a real training (``tests.hostile.crash_tail``) that prints a tail of lines built from
the crash classifier's own words between runs of other scripts and exits 1. Reading that tail costs the judge
seconds of CPU (round 21: about 4 ms a line; tens of seconds of wall time on a busy machine). Before, the runner
judged in its loop: ``status`` got no answer, a ``kill`` waited for the verdict and came too late to stop the
restart, the heartbeat stopped. Now the loop serves while a worker reads the tail: each test asserts on the order
of what a user sees (a ``status`` reply saying the crash is being judged before the verdict is written; a kill
answered while judging and no attempt after it; a runner killed while judging leaves the attempt to be judged
again), never on durations."""
from __future__ import annotations

import os
import signal

from moeconsole.runner.supervisor import control
from tests.runner.conftest import NO_SAVES, harness  # noqa: F401  (the real CLI and runner: the fixture)
from tests.waiting import until

LINES = 1000   # about 4 s of CPU to judge on an idle machine: long enough to be seen, whatever the load


def _start(harness, tmp_path, max_restarts: int):
    go = tmp_path / "go"
    run = harness.start(harness.recipe(command=["{python}", "-m", "tests.hostile.crash_tail", str(LINES), str(go)],
                                       restart={"max_restarts": max_restarts}, **NO_SAVES))
    run.wait_status("running", timeout=120)
    go.write_text("")   # the training prints its tail and exits 1
    return run


def _report(run, attempt: int = 1):
    return run.path / "crashes" / f"attempt-{attempt}.json"


def test_status_answers_while_the_crash_is_judged_and_says_so(harness, tmp_path):
    run = _start(harness, tmp_path, max_restarts=0)
    seen: list[str] = []   # in order: "judging" replies, then the verdict
    while "verdict" not in seen:
        try:
            reply = control.send(run.path / "control.sock", {"cmd": "status"}, timeout=300)
        except control.ControlError:   # the runner exits once the run is over
            until(lambda: run.state().get("status") == "failed", 120, what="the run over")
            reply = {}
        state = reply.get("state") or {}
        if state.get("judging"):
            assert state["judging"]["attempt"] == 1 and state["status"] == "running", state
            seen.append("judging")
        if _report(run).exists() and not run.state().get("judging"):
            seen.append("verdict")
    assert seen[0] == "judging", "no status reply came while the crash was judged"
    st = run.wait_status("failed", timeout=120)
    assert st.get("judging") is None and st["last_crash"]["attempt"] == 1, st
    assert _report(run).exists()


def test_kill_while_the_crash_is_judged_stops_the_run_once_the_verdict_lands(harness, tmp_path):
    run = _start(harness, tmp_path, max_restarts=3)
    run.wait(lambda s: bool(s.get("judging")), timeout=120, what="the runner judging the crash")
    out = harness.cli("kill", run.id)
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert "being judged" in out.stdout + out.stderr, (out.stdout, out.stderr)
    st = run.wait(lambda s: s.get("status") in ("killed", "failed") and not s.get("judging"), timeout=300,
                  what="the run stopped with its verdict")
    assert st["status"] == "killed", st   # the user's word: never the verdict's own end (failed, a restart)
    assert st["last_crash"]["attempt"] == 1, st   # the verdict landed
    assert _report(run).exists(), "the verdict was not written"
    assert [c["attempt"] for c in run.events("crash")] == [1]
    assert st["attempt"] == 1, "an attempt was started after the kill"


def _runner_killed_while_judging(harness, tmp_path):
    run = _start(harness, tmp_path, max_restarts=0)
    st = run.wait(lambda s: bool(s.get("judging")), timeout=120, what="the runner judging the crash")
    runner = st["runner"]["pid"]
    os.kill(runner, signal.SIGKILL)   # the run's own runner, named by its state.json
    _gone(runner)
    return run


def _gone(pid: int) -> None:
    def gone() -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().split(") ")[-1].startswith("Z")
        except OSError:
            return True
    until(gone, 120, what=f"the runner {pid} gone")


def test_a_runner_killed_while_judging_leaves_the_attempt_to_be_judged_again(harness, tmp_path):
    run = _runner_killed_while_judging(harness, tmp_path)
    st = run.state()
    assert st.get("judging") and st["status"] == "running", st   # nothing half-written: no verdict yet
    assert not _report(run).exists() and not run.events("crash")
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0, (out.stdout, out.stderr)
    st = run.wait(lambda s: s.get("status") == "failed" and not s.get("judging"), timeout=300,
                  what="the attempt judged again")
    assert st["last_crash"]["attempt"] == 1, st
    assert _report(run).exists()
    assert [c["attempt"] for c in run.events("crash")] == [1]


def test_a_runner_killed_between_the_verdicts_events_and_its_state_writes_no_second_crash_event(harness, tmp_path):
    # the window of one write: a runner judging attempt 1 writes the report and the ``crash`` event, then dies
    # before state.json clears ``judging``. Built from real records: a runner killed while judging leaves state.json
    # as it is in that window; a second runner judges and writes the verdict; that state.json is put back (the
    # second runner "died" right after its events); a third runner takes the run over
    run = _runner_killed_while_judging(harness, tmp_path)
    judging_state = (run.path / "state.json").read_bytes()
    assert harness.cli("supervise", run.id).returncode == 0
    st = run.wait(lambda s: s.get("status") == "failed" and not s.get("judging"), timeout=300,
                  what="the attempt judged")
    _gone(st["runner"]["pid"])   # the second runner exits with the run over: nothing of it writes any more
    first = run.events("crash")
    assert [c["attempt"] for c in first] == [1]
    (run.path / "state.json").write_bytes(judging_state)
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0, (out.stdout, out.stderr)
    st = run.wait(lambda s: s.get("status") == "failed" and not s.get("judging"), timeout=300,
                  what="the attempt judged again")
    assert st["last_crash"]["attempt"] == 1, st   # the state the dead runner never wrote is written
    assert run.events("crash") == first, "the verdict's crash event was written a second time"


def test_the_status_word_says_the_crash_is_being_judged():
    from moeconsole.runner.rundir.snapshot import state_words
    word, _ = state_words({"status": "running", "judging": {"attempt": 3, "since": 1.0}, "updated_at": 2.0,
                           "stale_after_s": 1e12}, now=3.0)
    assert "attempt 3 ended, judging its crash" in word, word
