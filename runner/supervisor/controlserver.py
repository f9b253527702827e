"""The runner's side of the control socket: accept, read, expire and answer clients without
ever letting one hold the runner's loop, and with commands ahead of status.

Clients come in crowds (a dashboard polling ``status`` from 200 shells) and one of them may be
the ``kill`` that must get through. So:

- the listening socket has a deep backlog (``control.BACKLOG``) and every pending connection is
  accepted at once (clients that still find the queue full retry with backoff,
  ``moeconsole.runner.supervisor.control.send``);
- every client is read without blocking and has ``control.CLIENT_TIMEOUT_S`` in all;
- the requests complete in one pass are answered commands first (kill, restart, resume, verify,
  kill_pid), then every ``status`` with one encoding of the state;
- the runner's loop waits on this server's own selector (an epoll descriptor is itself
  readable), and calls ``serve()`` between the log's sub-slices itself, so a flood of log lines
  never makes a client wait for more than one sub-slice;
- the clients held are capped (``client_cap``: the open-file limit less a reserve for the
  runner's own files); past the cap the oldest idle client is closed unanswered, and a refused
  ``accept`` (EMFILE) closes one too: a crowd of silent connections never takes the descriptors
  the runner needs for its state, logs and training;
- the socket's path is watched (``path``): deleted or replaced while the runner lives, the
  socket is bound again there, so clients find their runner again.
"""
from __future__ import annotations

import errno
import os
import resource
import selectors
import socket
import time
import traceback
from pathlib import Path
from typing import Callable

from moeconsole.runner.supervisor import control

MAX_ACCEPT = 1024  # connections taken per pass (the backlog holds no more)
MAX_CLIENTS = 1024  # client connections held at once, whatever the open-file limit
PATH_CHECK_S = 0.5  # how often the socket's path is looked at (one lstat)


def client_cap(nofile: int | None = None) -> int:
    """Client connections the runner may hold: the open-file limit (soft) less a reserve for
    the runner's own files (state, logs, journal, the training's pipes and pidfds, sidecars):
    half the limit, at most 256. 32 clients at ``nofile`` 64, 768 at 1024."""
    if nofile is None:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        nofile = soft if soft != resource.RLIM_INFINITY else 1 << 20
    reserve = min(256, nofile // 2)
    return max(4, min(MAX_CLIENTS, nofile - reserve))


class ControlServer:
    def __init__(self, listener: socket.socket, handle: Callable[[control.Request], control.Answer],
                 diag: Callable[[str], None] = lambda msg: None, path: Path | str | None = None) -> None:
        """``handle``: a request -> its answer (the runner's dispatcher); ``path``: where the
        listener is bound (watched, bound again when it vanishes)."""
        self.listener = listener
        listener.setblocking(False)  # accepting until the queue is empty must never block
        self.handle = handle
        self.statuses: list[control.ClientConn] = []   # status askers of the pass, answered by ``answer_statuses``
        self.diag = diag
        self.sel = selectors.DefaultSelector()
        self.sel.register(listener, selectors.EVENT_READ, None)
        self.clients: list[control.ClientConn] = []
        self.answered = {"command": 0, "status": 0, "refused": 0}
        self.dropped = 0   # idle clients closed unanswered (the cap, EMFILE)
        self.rebound = 0   # times the socket was bound again at its path
        self.max_clients = client_cap()
        self.own_uid = os.getuid()
        self.path = None if path is None else str(path)
        self._bound = self._identity()
        self._path_checked = time.monotonic()

    def fileno(self) -> int:
        """Readable while a connection or a request waits (register it in the runner's loop)."""
        return self.sel.fileno()

    def serve(self, timeout: float = 0.0) -> int:
        """One whole pass (``answer_commands``, then ``answer_statuses``); how many requests were answered.
        The runner does the two itself, writing its state between them when a command was answered."""
        before = sum(self.answered.values())
        self.answer_commands(timeout)
        self.answer_statuses()
        return sum(self.answered.values()) - before

    def answer_commands(self, timeout: float = 0.0) -> int:
        """Accept and read what is ready; answer every complete command (and refuse what cannot be
        read or is not the runner's user's), and keep the pass's ``status`` askers for
        ``answer_statuses``. How many commands were handed to ``handle``."""
        self._check_path()
        ready: list[tuple[control.ClientConn, control.Request | None, str | None]] = []
        for key, _ in self.sel.select(timeout):
            if key.data is None:
                self._accept()
            else:
                client: control.ClientConn = key.data
                done, req, err = client.read()
                if done:
                    self._drop(client)
                    ready.append((client, req, err))
        self._expire()
        if not ready:
            return 0
        commands = [(c, r) for c, r, _ in ready if r is not None and not isinstance(r, control.StatusRequest)]
        self.statuses += [c for c, r, _ in ready if isinstance(r, control.StatusRequest)]
        for client, req, err in ready:
            if req is None:
                client.answer(control.refusal(err or "unreadable request"))
                self.answered["refused"] += 1
        handled = 0
        for client, cmd in commands:
            foreign = control.foreign_asker(client.uid, self.own_uid)
            if foreign is not None:
                client.answer(control.refusal(foreign))
                self.answered["refused"] += 1
                continue
            client.answer(self._dispatch(cmd))
            self.answered["command"] += 1
            handled += 1
        return handled

    def answer_statuses(self) -> None:
        """Answer the ``status`` askers kept since the last call, with one encoding of the state for the crowd."""
        statuses, self.statuses = self.statuses, []
        if statuses:
            body = control.encode_answer(self._dispatch(control.StatusRequest()))
            for client in statuses:
                client.answer_bytes(body)
            self.answered["status"] += len(statuses)

    def _dispatch(self, req: control.Request) -> control.Answer:
        try:
            return self.handle(req)
        except Exception as exc:  # noqa: BLE001 - a bad request must not end the runner
            self.diag("control request failed:\n" + traceback.format_exc())
            return control.refusal(f"runner error: {exc}")

    def _accept(self) -> None:
        for _ in range(MAX_ACCEPT):
            if len(self.clients) >= self.max_clients:
                self._drop_oldest()
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE) and self.clients:
                    self._drop_oldest()   # a descriptor for this one; the runner keeps its reserve
                    continue
                return
            conn.setblocking(False)
            client = control.ClientConn(conn, time.monotonic() + control.CLIENT_TIMEOUT_S, uid=control.peer_uid(conn))
            self.clients.append(client)
            self.sel.register(client.sock, selectors.EVENT_READ, client)

    def _drop_oldest(self) -> None:
        """Close the oldest client that has sent nothing yet (else the oldest), unanswered: an
        answer could block on a client that does not read."""
        idle = [c for c in self.clients if not c.data]
        victim = min(idle or self.clients, key=lambda c: c.deadline)
        self._drop(victim)
        self.dropped += 1
        try:
            victim.sock.close()
        except OSError:
            pass

    # ---- the socket's path ---------------------------------------------------------------
    def _identity(self) -> tuple[int, int] | None:
        if self.path is None:
            return None
        try:
            st = os.lstat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def follow(self, path: Path | str) -> None:
        """The run directory was renamed (or renamed back): the socket moved with it and is at
        ``path`` now, never bound again at the name it left (a directory made there later, by
        the training's own output, would otherwise take the run's socket)."""
        self.path = str(path)
        self._bound = self._identity()

    def _check_path(self) -> None:
        """The socket file deleted or replaced (by a user, a cleanup job): bind again there."""
        if self.path is None:
            return
        now = time.monotonic()
        if now - self._path_checked < PATH_CHECK_S:
            return
        self._path_checked = now
        if self._bound is not None and self._identity() == self._bound:
            return
        try:
            new = control.listen(self.path)
        except OSError as exc:
            if self._bound is not None:
                self.diag(f"control socket {self.path} is gone and cannot be bound again: {exc}")
            self._bound = None
            return
        try:
            self.sel.unregister(self.listener)
        except (KeyError, ValueError):
            pass
        self.listener.close()
        self.listener = new
        self.sel.register(new, selectors.EVENT_READ, None)
        self._bound = self._identity()
        self.rebound += 1
        self.diag(f"control socket {self.path} was deleted or replaced: bound again")

    def _drop(self, client: control.ClientConn) -> None:
        try:
            self.sel.unregister(client.sock)
        except (KeyError, ValueError):
            pass
        if client in self.clients:
            self.clients.remove(client)

    def _expire(self) -> None:
        now = time.monotonic()
        for client in [c for c in self.clients if c.expired(now)]:
            self._drop(client)
            client.answer(control.refusal(f"request not complete within {control.CLIENT_TIMEOUT_S:g}s"),
                          timeout_s=0.05)

    def next_expiry(self) -> float | None:
        """Seconds until the oldest client's deadline (the runner wakes for it), else None."""
        if not self.clients:
            return None
        return max(0.0, min(c.deadline for c in self.clients) - time.monotonic())

    def close(self, message: str = "runner is exiting") -> None:
        for client in list(self.clients):
            self._drop(client)
            client.answer(control.refusal(message), timeout_s=0.05)
        self.sel.close()
        if self.rebound:
            self.listener.close()   # the one bound here (the runner closes the first)

