"""What ``moeconsole restart`` says of a runner's answer and of a run it stopped waiting for: the
words every client shows (``control.Answer.said``; ``snapshot.state_words``), never a raw None.
It had printed ``RUN: None`` for an answer without a message (a runner of another version, a peer
that speaks the protocol tersely) and ``RUN: None (attempt None)`` when the runner went away with
state.json unreadable. The runner here is a peer on the run's control socket that this test
makes: a real process, a real unix socket, the real CLI."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from moeconsole.runner.rundir import rundir
from moeconsole.runner.telemetry.identity import process_start
from tests.runner.conftest import NO_SAVES, Harness
from tests.waiting import until

# One request answered with argv[2] (a JSON line), then ``then`` (argv[3]) done to state.json and
# the peer gone: "next" names attempt 2 running; "damaged" leaves a state.json no reader can parse;
# "stay" leaves it as it was.
PEER = textwrap.dedent("""
    import json, os, socket, sys
    run_dir, reply, then = sys.argv[1], sys.argv[2], sys.argv[3]
    os.chdir(run_dir)   # a relative name: a unix socket's path is short
    try:
        os.unlink("control.sock")
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("control.sock")
    s.listen(1)
    open("peer.ready", "w").write("")
    conn, _ = s.accept()
    conn.makefile("rb").readline()
    conn.sendall(reply.encode() + b"\\n")
    conn.close()
    if then == "stay":
        sys.exit(0)
    if then in ("next", "over"):
        state = json.load(open("state.json"))
        state.update(status="running", attempt=state["attempt"] + 1) if then == "next" else \
            state.update(status="succeeded")
        text = json.dumps(state)
    else:
        text = "{"
    open("state.json.peer", "w").write(text)
    os.replace("state.json.peer", "state.json")
""")


@pytest.fixture
def harness(tmp_path, runs_dir):
    return Harness(tmp_path, runs_dir)


def _ended_run(harness):
    run = harness.start(harness.recipe(command=["{python}", "-c", "print('done', flush=True)"], **NO_SAVES))
    run.wait(lambda s: s.get("status") in rundir.TERMINAL and not rundir.runner_locked(rundir.RunDir(run.path)),
             120, what="the run to end and its runner to go")
    return run


def _peer_as_runner(run, reply: dict, then: str) -> subprocess.Popen:
    """The peer started and named in state.json as the run's live runner, the run running."""
    peer = subprocess.Popen([sys.executable, "-c", PEER, str(run.path), json.dumps(reply), then])
    until(lambda: (run.path / "peer.ready").exists() or peer.poll() is not None, 60, what="the peer listening")
    assert peer.poll() is None
    state = run.state()
    state.update(status="running", attempt=1,
                 runner={"pid": peer.pid, "host": rundir.hostname(), "start_time": process_start(peer.pid)})
    tmp = run.path / "state.json.test"
    tmp.write_text(json.dumps(state))
    os.replace(tmp, run.path / "state.json")
    return peer


def _ask_peer(harness, command: str, reply: dict, then: str):
    """An ended run, the peer named as its live runner answering ``reply`` then doing ``then``,
    and the real CLI's ``command`` on it: (the run, the finished command)."""
    run = _ended_run(harness)
    peer = _peer_as_runner(run, reply, then)
    try:
        return run, harness.cli(command, run.id)
    finally:
        peer.kill()
        peer.wait()


@pytest.mark.parametrize("ok, said, code", [(True, "done", 0), (False, "refused", 1)])
def test_an_answer_without_a_message_is_said_in_words(harness, ok, said, code):
    run, out = _ask_peer(harness, "restart", {"v": 1, "ok": ok}, "next")
    assert out.returncode == code, (out.stdout, out.stderr)
    assert f"{run.id}: {said}\n" in out.stderr, out.stderr
    assert "None" not in out.stdout + out.stderr, (out.stdout, out.stderr)
    if ok:
        assert f"{run.id}: attempt 2 running" in out.stdout, out.stdout


def test_a_runner_gone_with_state_json_unreadable_is_said_damaged_not_none(harness):
    run, out = _ask_peer(harness, "restart", {"v": 1, "ok": True}, "damaged")
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert "None" not in out.stdout + out.stderr, (out.stdout, out.stderr)
    assert out.stdout.startswith(f"{run.id}: DAMAGED ("), out.stdout


def test_a_kill_refused_without_a_message_says_refused_and_does_not_wait(harness):
    """``kill`` was the one client that showed a runner's answer by its text alone: a refusal
    without one printed nothing and the kill waited for an end that nobody was bringing (grace +
    60 s, then "still RUNNING"). It says the refusal in words (``Answer.said``) and stops, 1."""
    run, out = _ask_peer(harness, "kill", {"v": 1, "ok": False}, "stay")
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert f"{run.id}: refused\n" in out.stderr, out.stderr
    assert "still" not in out.stdout and "None" not in out.stdout + out.stderr, (out.stdout, out.stderr)


def test_a_kill_refused_because_the_run_just_ended_says_so_and_exits_0(harness):
    """The runner refuses a kill while it writes an ended run's last records ("the run is over
    ...; try kill again then"): the kill asks again how the run stands and says it ended, 0, as
    when state.json said so before the request."""
    over = ("the run is over (succeeded); its runner exits once its last records are written and the last "
            "checkpoint's copy to persistent storage ends: try kill again then")
    run, out = _ask_peer(harness, "kill", {"v": 1, "ok": False, "message": over}, "over")
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert out.stdout == f"{run.id}: already succeeded; nothing to kill\n", (out.stdout, out.stderr)
