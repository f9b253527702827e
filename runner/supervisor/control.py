"""The control socket: how clients (UI, CLI) ask a live runner to act.

One request per connection: the client sends one JSON line, the runner answers one JSON line.
The socket lives in the run directory with mode 0600, so only the owner can steer the run.
Requests (``Request``: one msgspec struct per command, tagged by ``cmd``)::

    {"cmd": "status"}
    {"cmd": "kill", "grace_s": 60}              clean kill, no restart
    {"cmd": "restart", "now": false}            clean kill, cool down, restart from the latest good checkpoint
    {"cmd": "resume"}                           leave PAUSED: cool down and restart
    {"cmd": "verify"}                           verify the newest checkpoint now
    {"cmd": "kill_pid", "pid": 123, "start_time": 1.7e9}   end a blocker (start time checked)

Every request may say ``"by"`` (who asks: "ui", "cli", ...). Answers (``Answer``): {"ok": true|false,
"message": "...", ...}. Every message carries ``"v": 1``; a request without ``v`` is read as
version 1 (older clients). An unknown command, an unknown field or a value of the wrong type is
refused with one line naming it, before anything acts on the request.

The runner never lets a client hold its loop: connections are non-blocking, a request is at most
``MAX_REQUEST`` bytes and ``MAX_DEPTH`` levels of nesting (checked before parsing), and a client
has ``CLIENT_TIMEOUT_S`` in all to send its line.
"""
from __future__ import annotations

import json
import os
import random
import socket
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Union, overload

import msgspec
from msgspec import UNSET, UnsetType

CONTROL_VERSION = 1
MAX_MESSAGE = 1 << 20      # an answer (the status carries the whole state)
MAX_REQUEST = 64 * 1024    # a request is a few dozen bytes; anything near this is not a client of ours
MAX_DEPTH = 16
CLIENT_TIMEOUT_S = 2.0
BACKLOG = 1024             # pending connections the kernel queues (capped by net.core.somaxconn)
RETRY_FIRST_S = 0.005      # a client that finds the queue full retries after this, doubling ...
RETRY_MAX_S = 0.2          # ... up to this, until its own timeout


# ---- the messages -----------------------------------------------------------------------------
class _Request(msgspec.Struct, tag_field="cmd", forbid_unknown_fields=True, kw_only=True):
    """Fields every request may carry. ``cmd`` is the tag (a class constant here)."""
    cmd: ClassVar[str]
    v: int = CONTROL_VERSION
    by: str | UnsetType = UNSET      # who asks (shown in events): "ui", "cli", ...

    @property
    def asker(self) -> str:
        return self.by if isinstance(self.by, str) else "client"


class StatusRequest(_Request, tag="status"):
    cmd: ClassVar[str] = "status"


class KillRequest(_Request, tag="kill"):
    """Clean kill, no restart: SIGTERM, ``grace_s``, SIGKILL."""
    cmd: ClassVar[str] = "kill"
    grace_s: float | None | UnsetType = UNSET


class Restart(_Request, tag="restart"):
    """Clean kill, cool down, restart; ``now`` skips the cooldown floor; ``resume_from``: the save the
    next attempt resumes from (``restart --from``: a path the runner checks again, ``order.chosen_save``)."""
    cmd: ClassVar[str] = "restart"
    now: bool | UnsetType = UNSET
    resume_from: str | UnsetType = UNSET


class Resume(_Request, tag="resume"):
    cmd: ClassVar[str] = "resume"


class Verify(_Request, tag="verify"):
    cmd: ClassVar[str] = "verify"


class KillPid(_Request, tag="kill_pid"):
    """End a process outside the attempt (a blocker); its start time proves it is the same one."""
    cmd: ClassVar[str] = "kill_pid"
    pid: int
    start_time: float
    grace_s: float | None | UnsetType = UNSET


Request = Union[StatusRequest, KillRequest, Restart, Resume, Verify, KillPid]
REQUEST_TYPES: tuple[type[_Request], ...] = (StatusRequest, KillRequest, Restart, Resume, Verify, KillPid)
COMMANDS = tuple(t.cmd for t in REQUEST_TYPES)


class Answer(msgspec.Struct, kw_only=True):
    """The runner's one answer line. Keys the runner did not give stay off the wire; a key a
    newer runner adds is ignored by an older client."""
    v: int = CONTROL_VERSION
    ok: bool
    message: str | UnsetType = UNSET
    pids: list[int] | UnsetType = UNSET
    grace_s: float | UnsetType = UNSET
    state: dict[str, Any] | UnsetType = UNSET      # status: the run's state.json fields
    result: dict[str, Any] | UnsetType = UNSET     # kill_pid: how the process ended
    verdict: dict[str, Any] | UnsetType = UNSET    # verify: the checkpoint's verdict

    @property
    def text(self) -> str:
        """The message, or "" when the answer has none."""
        return self.message if isinstance(self.message, str) else ""

    @property
    def said(self) -> str:
        """What the answer says, as every client shows it: its message, else "done" or "refused"
        (an answer without one: a runner of another version, a peer that speaks the protocol
        tersely). Never empty, never "None"."""
        return self.text or ("done" if self.ok else "refused")


def refusal(message: str) -> Answer:
    return Answer(ok=False, message=message)


def answer_of(fields: dict[str, Any]) -> Answer:
    """A dict answer (the lifecycle's replies, the checkpoint keeper's verdict) as the model."""
    return msgspec.convert(fields, Answer, strict=False)


_answer_encoder = msgspec.json.Encoder(enc_hook=str)


def encode_answer(answer: Answer) -> bytes:
    """One answer line, as every client reads it."""
    return _answer_encoder.encode(answer) + b"\n"


def encode_request(request: Request) -> bytes:
    return msgspec.json.encode(request) + b"\n"


def too_deep(data: bytes, limit: int = MAX_DEPTH) -> bool:
    """True when JSON text nests deeper than ``limit`` (brackets inside strings do not count).
    Checked before parsing, so a hostile message costs one linear scan, never a recursion."""
    depth = 0
    in_string = escaped = False
    for byte in data:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


def parse_request(data: bytes) -> tuple[Request | None, str | None]:
    """One request line as a typed request, or why it is refused (one line)."""
    if len(data) > MAX_REQUEST:
        return None, f"request larger than {MAX_REQUEST} bytes"
    if too_deep(data):
        return None, f"request nested deeper than {MAX_DEPTH} levels"
    try:
        raw = json.loads(data)
    except (ValueError, RecursionError):
        return None, "unreadable request"
    return request_of(raw)


def request_of(raw: object) -> tuple[Request | None, str | None]:
    """A decoded JSON value as a typed request, or why it is refused."""
    if not isinstance(raw, dict) or not isinstance(raw.get("cmd"), str):
        return None, "a request is a JSON object with a \"cmd\""
    if raw.get("v", CONTROL_VERSION) != CONTROL_VERSION:
        return None, f"control version {raw.get('v')!r} not supported (this runner speaks {CONTROL_VERSION})"
    cmd = raw["cmd"]
    if cmd not in COMMANDS:
        return None, f"unknown command {cmd!r} (known: {', '.join(COMMANDS)})"
    try:
        return msgspec.convert(raw, Request), None
    except msgspec.ValidationError as exc:
        return None, f"{cmd}: {exc}"


_UCRED = "iII"   # struct ucred: pid_t pid, uid_t uid, gid_t gid (uid_t and gid_t unsigned)


def peer_cred(conn: socket.socket) -> tuple[int, int] | None:
    """(pid, uid) of the process at the other end of a unix socket (SO_PEERCRED, as the kernel
    recorded them at connect, or for a listener at its ``listen``: net/unix/af_unix.c,
    ``init_peercred``); the pid is 0 for a process outside this PID namespace. None where the
    kernel does not say."""
    try:
        pid, uid, _gid = struct.unpack(_UCRED, conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                               struct.calcsize(_UCRED)))
    except (AttributeError, OSError, struct.error):
        return None
    return pid, uid


def peer_uid(conn: socket.socket) -> int | None:
    """The uid of the process at the other end of a unix socket; None where the kernel does not say."""
    cred = peer_cred(conn)
    return None if cred is None else cred[1]


def not_the_runner(sock_path: Path | str, peer_pid: int | None, runner_pid: int | None) -> str | None:
    """Why a request must not be sent to the listener ``peer_pid`` at the run's socket, or None:
    the run's state names its runner ``runner_pid`` and another process listens there (the socket
    file was replaced). Unknown on either side (no runner named, a listener in another PID
    namespace: 0) is not a reason."""
    if not runner_pid or not peer_pid or peer_pid == runner_pid:
        return None
    return (f"the control socket {sock_path} is held by pid {peer_pid}, not the run's runner (pid {runner_pid}): "
            "nothing was sent to it")


def foreign_asker(uid: int | None, own: int) -> str | None:
    """Why a command (anything but ``status``) from the peer ``uid`` is refused, or None: a runner
    takes commands only from its own user; root too is another user here (it reads the run as
    anyone may, with ``status``; ``moeconsole kill`` refuses another user's run the same way)."""
    if uid is None or uid == own:
        return None
    return (f"this run belongs to uid {own}; commands come only from its own user (asked by uid {uid}); "
            "`status` answers anyone who can reach the socket")


@dataclass
class ClientConn:
    """One client connection being read without blocking, with a deadline for the whole line and
    the uid of the process that connected (``peer_uid``)."""
    sock: socket.socket
    deadline: float
    data: bytearray = field(default_factory=bytearray)
    uid: int | None = None

    @classmethod
    def accept(cls, listener: socket.socket, timeout_s: float = CLIENT_TIMEOUT_S) -> "ClientConn | None":
        try:
            conn, _ = listener.accept()
        except (BlockingIOError, OSError):
            return None
        conn.setblocking(False)
        return cls(conn, time.monotonic() + timeout_s, uid=peer_uid(conn))

    def read(self) -> tuple[bool, Request | None, str | None]:
        """(done, request, error): done once a whole line, EOF, an oversize message or an error."""
        try:
            chunk = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return False, None, None
        except OSError as exc:
            return True, None, f"read failed: {exc}"
        if chunk:
            self.data += chunk
            if len(self.data) > MAX_REQUEST:
                return True, None, f"request larger than {MAX_REQUEST} bytes"
            if b"\n" not in chunk:
                return False, None, None
        line = bytes(self.data).split(b"\n", 1)[0]
        if not line.strip():
            return True, None, "empty request"
        req, err = parse_request(line)
        return True, req, err

    def expired(self, now: float) -> bool:
        return now >= self.deadline

    def answer(self, answer: Answer, timeout_s: float = 0.5) -> None:
        """Send the answer (bounded: a client that does not read loses it) and close."""
        self.answer_bytes(encode_answer(answer), timeout_s)

    def answer_bytes(self, line: bytes, timeout_s: float = 0.5) -> None:
        """Send an encoded answer line (one encoding serves a crowd of status clients) and close."""
        try:
            self.sock.settimeout(timeout_s)
            self.sock.sendall(line)
        except OSError:
            pass
        finally:
            self.sock.close()


class ControlError(Exception):
    """No runner answered (not running, socket missing, or timed out)."""


class NotListening(ControlError):
    """Nothing listens on the socket path (no request was sent): asking again is safe."""


class NotTheRunner(ControlError):
    """Another process listens at the run's socket path (it was replaced; the runner binds it
    again within ``PATH_CHECK_S`` of seeing so): no request was sent, asking again is safe."""


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

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)


@overload
def send(sock_path: Path | str, request: Request, timeout: float = 10.0, runner_pid: int | None = None) -> Answer: ...


@overload
def send(sock_path: Path | str, request: dict[str, Any], timeout: float = 10.0,
         runner_pid: int | None = None) -> dict[str, Any]: ...


def send(sock_path: Path | str, request: Request | dict[str, Any], timeout: float = 10.0,
         runner_pid: int | None = None) -> Answer | dict[str, Any]:
    """One request, one answer: a typed ``Request`` gets a typed ``Answer``. A plain dict is
    sent as it is and its answer returned as a dict (the wire as older clients and test
    doubles speak it). A runner whose connection queue is full (a crowd of status clients) is
    retried with exponential backoff and jitter until ``timeout``: a kill gets through however
    many clients poll. ``runner_pid``: the runner the run's state names; a listener that is another
    process is sent nothing (``NotTheRunner``)."""
    if isinstance(request, dict):
        line = json.dumps({"v": CONTROL_VERSION, **request}).encode() + b"\n"
    else:
        line = encode_request(request)
    data = _exchange(sock_path, line, timeout, runner_pid)
    if isinstance(request, dict):
        try:
            answer = json.loads(data)
        except ValueError:
            raise ControlError("the runner sent an unreadable answer") from None
        if not isinstance(answer, dict):
            raise ControlError("the runner sent an unreadable answer")
        return answer
    try:
        return msgspec.json.decode(data, type=Answer)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ControlError(f"the runner sent an unreadable answer ({exc})") from None


def _exchange(sock_path: Path | str, line: bytes, timeout: float, runner_pid: int | None = None) -> bytes:
    """Connect (retrying a full queue), check the listener is the run's runner, send one line,
    read the answer line."""
    deadline = time.monotonic() + timeout
    delay = RETRY_FIRST_S
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            with _ShortPath(str(sock_path)) as short:
                s.connect(short)
            break
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            s.close()
            raise NotListening(f"no runner is listening on {sock_path} ({exc.strerror})") from None
        except (BlockingIOError, InterruptedError) as exc:  # EAGAIN: the queue is full
            s.close()
            left = deadline - time.monotonic()
            if left <= 0:
                raise ControlError(f"the runner's connection queue stayed full for {timeout:g}s ({exc.strerror})") \
                    from None
            time.sleep(min(left, delay * (0.5 + random.random())))
            delay = min(RETRY_MAX_S, delay * 2)
        except socket.timeout:
            s.close()
            raise ControlError(f"the runner did not answer within {timeout:g}s") from None
        except OSError as exc:
            s.close()
            raise ControlError(f"control socket error: {exc}") from None
    cred = peer_cred(s)
    foreign = not_the_runner(sock_path, None if cred is None else cred[0], runner_pid)
    if foreign is not None:
        s.close()
        raise NotTheRunner(foreign)
    try:
        s.settimeout(max(0.01, deadline - time.monotonic()))
        s.sendall(line)
        return recv_line(s)
    except socket.timeout:
        raise ControlError(f"the runner did not answer within {timeout:g}s") from None
    except OSError as exc:
        raise ControlError(f"control socket error: {exc}") from None
    finally:
        s.close()


def recv_line(s: socket.socket, limit: int = MAX_MESSAGE) -> bytes:
    """One answer line (up to EOF), at most ``limit`` bytes (ControlError beyond)."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
        if len(data) > limit:
            raise ControlError("answer too large")
    return data


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
    s.listen(BACKLOG)
    s.setblocking(False)
    return s


def read_request(conn: socket.socket, timeout: float = 2.0) -> dict[str, Any] | None:
    """Blocking read of one request as the wire dict it was (for simple servers such as test
    doubles; the runner reads through ``ClientConn`` so no client can hold its loop). A request
    the runner would refuse is None."""
    conn.settimeout(timeout)
    data = b""
    try:
        while not data.endswith(b"\n") and len(data) <= MAX_REQUEST:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        return None
    line = data.split(b"\n", 1)[0]
    req, _ = parse_request(line)
    if req is None:
        return None
    body = json.loads(line)
    body.pop("v", None)  # the version is the envelope's; callers see the request as it was built
    return body if isinstance(body, dict) else None


def reply(conn: socket.socket, answer: dict[str, Any]) -> None:
    try:
        conn.sendall(json.dumps(answer, default=str).encode() + b"\n")
    except OSError:
        pass
    finally:
        conn.close()
