"""Control requests -> answers on plain data (runner/supervisor/dispatch.py), the typed
messages' refusals (runner/supervisor/control.py), and the wire as older clients speak it."""
from __future__ import annotations

import json
import socket
import threading

import pytest

from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.supervisor import control
from moeconsole.runner.supervisor.controlserver import ControlServer
from moeconsole.runner.supervisor.dispatch import Dispatcher, Steered
from moeconsole.runner.telemetry.kill import KillResult


class FakeRunner:
    """What the dispatcher reaches through its callables, recorded."""

    def __init__(self, *, finishing: float | None = None, reply: dict | None = None,
                 signalled: list[int] | None = None, stopping: list[int] | None = None) -> None:
        self.finishing = finishing
        self.reply = reply
        self.signalled = signalled or []
        self.stopping = stopping or []
        self.steered: list[lc.Control] = []
        self.terminated: list[tuple] = []

    def dispatcher(self) -> Dispatcher:
        return Dispatcher(state=lambda: {"status": "running", "step": 7}, finishing_left=lambda: self.finishing,
                          steer=self.steer, verify=lambda: {"ok": True, "message": "ok: checkpoint-8",
                                                            "verdict": {"verdict": "ok", "tensors": 3}},
                          terminate=self.terminate, grace=lambda asked: 10.0 if asked is None else float(asked))

    def steer(self, event: lc.Control) -> Steered:
        self.steered.append(event)
        return Steered(self.reply, self.signalled, self.stopping)

    def terminate(self, pid, start_time, grace_s, **fields):
        self.terminated.append((pid, start_time, grace_s, fields))
        return KillResult(pid, True, "gone", "exited before the signal", 0.0) if pid == 1 else object()


def ask(runner: FakeRunner, line: bytes) -> control.Answer:
    req, err = control.parse_request(line)
    assert err is None, err
    assert req is not None
    return runner.dispatcher().handle(req)


def test_status_answers_with_the_state_even_while_the_run_finishes():
    answer = ask(FakeRunner(finishing=30.0), b'{"cmd": "status"}')
    assert answer.ok and answer.state == {"status": "running", "step": 7}


def test_a_finished_run_refuses_commands_but_verifies():
    runner = FakeRunner(finishing=42.4)
    refused = ask(runner, b'{"cmd": "kill"}')
    assert not refused.ok and "the run is over (running)" in refused.text and "at most 42 s more" in refused.text
    assert "try kill again then" in refused.text and runner.steered == []
    assert ask(runner, b'{"cmd": "verify"}').verdict == {"verdict": "ok", "tensors": 3}


def test_kill_goes_to_the_lifecycle_and_names_the_pids_signalled():
    runner = FakeRunner(reply={"ok": True, "message": "SIGTERM sent", "grace_s": 5.0}, signalled=[11, 12])
    answer = ask(runner, b'{"cmd": "kill", "grace_s": 5, "by": "cli"}')
    assert runner.steered == [lc.Control("kill", grace_s=5.0, now=False, by="cli")]
    assert answer.ok and answer.pids == [11, 12]
    assert answer.text == "SIGTERM sent to [11, 12]; SIGKILL in 5s for anything left"


def test_restart_now_and_resume_reach_the_lifecycle_with_who_asked():
    runner = FakeRunner(reply={"ok": True, "message": "stopping, then restarting"}, stopping=[20])
    answer = ask(runner, b'{"cmd": "restart", "now": true}')
    assert runner.steered[-1] == lc.Control("restart", grace_s=None, now=True, by="client")
    assert answer.pids == [20] and answer.text == "stopping, then restarting"
    nothing = FakeRunner(reply=None)
    answer = ask(nothing, b'{"cmd": "resume", "by": "ui"}')
    assert not answer.ok and answer.text == "resume: nothing to do while running"
    assert nothing.steered == [lc.Control("resume", by="ui")]


def test_kill_pid_reports_a_settled_end_or_the_termination_under_way():
    runner = FakeRunner()
    done = ask(runner, b'{"cmd": "kill_pid", "pid": 1, "start_time": 5}')
    assert done.ok and done.text == "exited before the signal" and isinstance(done.result, dict) and done.result["pid"] == 1
    under_way = ask(runner, b'{"cmd": "kill_pid", "pid": 77, "start_time": 5.5, "grace_s": 3, "by": "ui"}')
    assert under_way.ok and under_way.text.startswith("SIGTERM sent to PID 77; SIGKILL in 3s")
    assert runner.terminated[-1] == (77, 5.5, 3.0, {"requested_by": "ui"})


@pytest.mark.parametrize("line,says", [
    (b'{"cmd": "frobnicate"}', "unknown command 'frobnicate' (known: status, kill, restart, resume, verify, kill_pid)"),
    (b'{"cmd": "kill", "grace": 5}', "kill: Object contains unknown field `grace`"),
    (b'{"cmd": "kill_pid", "pid": true, "start_time": 1}', "kill_pid: Expected `int`, got `bool` - at `$.pid`"),
    (b'{"cmd": "kill_pid", "pid": 5}', "kill_pid: Object missing required field `start_time`"),
    (b'{"cmd": "restart", "now": "yes"}', "restart: Expected `bool`, got `str` - at `$.now`"),
    (b'{"v": 2, "cmd": "status"}', "control version 2 not supported (this runner speaks 1)"),
    (b'["status"]', 'a request is a JSON object with a "cmd"'),
])
def test_requests_that_do_not_fit_are_refused_in_one_line(line, says):
    req, err = control.parse_request(line)
    assert req is None and err == says and "\n" not in err


def test_the_wire_stays_what_older_clients_send_and_read():
    assert json.loads(control.encode_request(control.KillRequest(grace_s=5.0, by="cli"))) == \
        {"cmd": "kill", "v": 1, "by": "cli", "grace_s": 5.0}
    assert control.encode_request(control.StatusRequest()) == b'{"cmd":"status","v":1}\n'
    line = control.encode_answer(control.Answer(ok=True, state={"status": "running"}))
    assert json.loads(line) == {"v": 1, "ok": True, "state": {"status": "running"}}  # unset keys stay off


def _serve(tmp_path, handle):
    path = str(tmp_path / "c.sock")
    listener = control.listen(path)
    server = ControlServer(listener, handle)
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            server.serve(0.05)
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return path, lambda: (stop.set(), t.join(5), server.close(), listener.close())


def test_typed_and_plain_clients_get_the_same_answer_from_a_real_socket(tmp_path):
    runner = FakeRunner(reply={"ok": True, "message": "resuming after cooldown"})
    path, close = _serve(tmp_path, runner.dispatcher().handle)
    try:
        typed = control.send(path, control.Resume(by="cli"), timeout=30)
        plain = control.send(path, {"cmd": "resume", "by": "cli"}, timeout=30)
        assert isinstance(typed, control.Answer) and typed.text == "resuming after cooldown"
        assert plain == {"v": 1, "ok": True, "message": "resuming after cooldown", "pids": []}
        refused = control.send(path, {"cmd": "kill", "signal": 9}, timeout=30)
        assert refused == {"v": 1, "ok": False, "message": "kill: Object contains unknown field `signal`"}
        # a raw client that writes its line by hand
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(path)
            s.sendall(b'{"cmd": "status"}\n')
            assert json.loads(control.recv_line(s))["state"]["step"] == 7
    finally:
        close()
    assert [e.cmd for e in runner.steered] == ["resume", "resume"]


def test_a_runner_answer_of_the_wrong_shape_is_a_control_error(tmp_path):
    path = str(tmp_path / "c.sock")
    listener = control.listen(path)
    listener.setblocking(True)

    def odd():
        conn, _ = listener.accept()
        control.read_request(conn)
        control.reply(conn, {"ok": "maybe"})
    t = threading.Thread(target=odd, daemon=True)
    t.start()
    with pytest.raises(control.ControlError, match="unreadable answer"):
        control.send(path, control.StatusRequest(), timeout=30)
    t.join(5)
    listener.close()


class ChoosingRunner(FakeRunner):
    """A runner that keeps a ``restart --from`` choice in its state as ``Supervisor.choose_resume`` does
    (runner/supervisor/supervisor.py: a save taken is kept, None clears, a refused save changes nothing)."""

    def __init__(self, choice: dict | None, **kw) -> None:
        super().__init__(**kw)
        self.st: dict = {"status": "paused", "resume_choice": choice}

    def dispatcher(self) -> Dispatcher:
        def choose(which: str | None, by: str | None) -> str | None:
            if which == "missing":
                return "--from missing: no save of this run is named so"
            self.st["resume_choice"] = None if which is None else {"path": which, "step": 4}
            return None
        return Dispatcher(state=lambda: dict(self.st), finishing_left=lambda: None, steer=self.steer,
                          verify=lambda: {}, terminate=self.terminate, grace=lambda asked: 10.0, choose=choose,
                          restore_choice=lambda previous: self.st.update(resume_choice=previous))


@pytest.mark.parametrize("line", [b'{"cmd": "restart", "resume_from": "/out/checkpoint-4"}', b'{"cmd": "restart"}',
                                  b'{"cmd": "restart", "resume_from": "missing"}'])
def test_a_refused_restart_keeps_the_choice_pending_before_it(line):
    """A choice is pending (checkpoint-8); a restart the lifecycle refuses, or whose save is refused,
    leaves it as it was (a refused restart had cleared it: the next attempt resumed from the newest)."""
    pending = {"path": "/out/checkpoint-8", "step": 8}
    runner = ChoosingRunner(dict(pending), reply={"ok": False, "message": "a kill is under way"})
    answer = ask(runner, line)
    assert not answer.ok and runner.st["resume_choice"] == pending, (answer, runner.st)
    taken = ChoosingRunner(dict(pending), reply={"ok": True, "message": "stopping, then restarting"})
    assert ask(taken, b'{"cmd": "restart", "resume_from": "/out/checkpoint-4"}').ok
    assert taken.st["resume_choice"] == {"path": "/out/checkpoint-4", "step": 4}
