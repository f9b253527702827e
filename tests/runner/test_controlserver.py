"""The runner's control server on real sockets: a crowd is accepted at once, commands are
answered before status, every client gets one answer line, a full queue is retried."""
from __future__ import annotations

import json
import socket
import threading
import time

from moeconsole.runner.supervisor import control
from moeconsole.runner.supervisor.controlserver import ControlServer


def _client(path: str, line: bytes) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(line)
    return s


def test_commands_are_answered_before_status_and_every_client_gets_its_line(tmp_path):
    path = str(tmp_path / "c.sock")
    listener = control.listen(path)
    seen: list[str] = []

    def handle(req: control.Request) -> control.Answer:
        seen.append(req.cmd)
        return control.Answer(ok=True, state={"status": "running"}) if req.cmd == "status" \
            else control.Answer(ok=True, message="x")

    server = ControlServer(listener, handle)
    clients = [_client(path, b'{"cmd": "status"}\n') for _ in range(120)]
    clients.append(_client(path, b'{"cmd": "kill", "grace_s": 1}\n'))
    clients.append(_client(path, b"not json\n"))
    deadline = time.monotonic() + 30
    while sum(server.answered.values()) < len(clients) and time.monotonic() < deadline:
        server.serve(0.2)
    assert server.answered == {"command": 1, "status": 120, "refused": 1}
    assert seen[0] == "kill" and seen.count("status") <= 2, seen  # one encoding per pass for the crowd
    answers = []
    for s in clients:
        s.settimeout(10)
        answers.append(json.loads(control.recv_line(s)))
        s.close()
    assert all(a["v"] == control.CONTROL_VERSION for a in answers)
    assert sum(1 for a in answers if a.get("state")) == 120 and answers[-1]["ok"] is False
    server.close()
    listener.close()


def test_a_client_retries_a_full_connection_queue_until_it_is_served(tmp_path):
    """The backlog is full (nobody accepts for a while): ``send`` backs off and gets through
    once the server accepts, instead of failing with EAGAIN."""
    path = str(tmp_path / "c.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    parked = []
    for _ in range(8):  # fill the queue
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(path)
        except BlockingIOError:
            s.close()
            break
        parked.append(s)
    server = ControlServer(listener, lambda req: control.Answer(ok=True, state={}))
    got: dict = {}
    t = threading.Thread(target=lambda: got.update(control.send(path, {"cmd": "status"}, timeout=30)))
    t.start()
    time.sleep(0.5)  # the client is retrying against the full queue meanwhile
    for s in parked:
        s.close()
    deadline = time.monotonic() + 30
    while t.is_alive() and time.monotonic() < deadline:
        server.serve(0.05)
    t.join(timeout=5)
    assert got.get("ok") is True
    server.close()
    listener.close()
