"""The control socket: how clients (UI, CLI) ask a live runner to act.

One request per connection: the client sends one JSON line, the runner answers one JSON line.
The socket lives in the run directory with mode 0600, so only the owner can steer the run.
Requests::

    {"cmd": "status"}
    {"cmd": "kill", "grace_s": 60}              clean kill, no restart
    {"cmd": "restart", "now": false}            clean kill, cool down, restart from the latest good checkpoint
    {"cmd": "resume"}                           leave PAUSED: cool down and restart
    {"cmd": "verify"}                           verify the newest checkpoint now
    {"cmd": "kill_pid", "pid": 123, "start_time": 1.7e9}   end a blocker (start time checked)

Answers: {"ok": true|false, "message": "...", ...}.
"""
from __future__ import annotations

import json
import os
import socket
from pathlib import Path

MAX_MESSAGE = 1 << 20
COMMANDS = ("status", "kill", "restart", "resume", "verify", "kill_pid")


class ControlError(Exception):
    """No runner answered (not running, socket missing, or timed out)."""


MAX_SUN_PATH = 104  # sockaddr_un holds 108 bytes on Linux (104 on BSDs); keep to the smaller


class _ShortPath:
    """A socket path short enough for sockaddr_un: a deep runs directory is reached through
    /proc/self/fd/N of the directory, which names the same place in a few bytes."""

    def __init__(self, path: str) -> None:
        self.fd: int | None = None
        self.path = path
        if len(os.fsencode(path)) >= MAX_SUN_PATH:
            parent, name = os.path.split(path)
            self.fd = os.open(parent or ".", os.O_PATH | os.O_DIRECTORY)
            self.path = f"/proc/self/fd/{self.fd}/{name}"

    def __enter__(self) -> str:
        return self.path

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            os.close(self.fd)


def send(sock_path: Path | str, request: dict, timeout: float = 10.0) -> dict:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        try:
            with _ShortPath(str(sock_path)) as short:
                s.connect(short)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise ControlError(f"no runner is listening on {sock_path} ({exc.strerror})") from None
        s.sendall(json.dumps(request).encode() + b"\n")
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
            if len(data) > MAX_MESSAGE:
                raise ControlError("answer too large")
    except socket.timeout:
        raise ControlError(f"the runner did not answer within {timeout:g}s") from None
    except OSError as exc:
        raise ControlError(f"control socket error: {exc}") from None
    finally:
        s.close()
    try:
        answer = json.loads(data)
    except ValueError:
        raise ControlError("the runner sent an unreadable answer") from None
    if not isinstance(answer, dict):
        raise ControlError("the runner sent an unreadable answer")
    return answer


def listen(sock_path: Path | str) -> socket.socket:
    """Bind the socket with mode 0600 from the start (umask), replacing a stale one."""
    sock_path = str(sock_path)
    try:
        os.unlink(sock_path)
    except FileNotFoundError:
        pass
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        with _ShortPath(sock_path) as short:
            s.bind(short)
    finally:
        os.umask(old)
    os.chmod(sock_path, 0o600)
    s.listen(16)
    s.setblocking(False)
    return s


def read_request(conn: socket.socket, timeout: float = 2.0) -> dict | None:
    conn.settimeout(timeout)
    data = b""
    try:
        while not data.endswith(b"\n") and len(data) < MAX_MESSAGE:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        req = json.loads(data)
    except (OSError, ValueError):
        return None
    return req if isinstance(req, dict) else None


def reply(conn: socket.socket, answer: dict) -> None:
    try:
        conn.sendall(json.dumps(answer, default=str).encode() + b"\n")
    except OSError:
        pass
    finally:
        conn.close()
