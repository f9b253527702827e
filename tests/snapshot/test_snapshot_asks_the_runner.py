"""A live run's state.json that is late while its runner lives (it cannot write its run directory):
every reader asks the runner on its control socket and shows what it answers; a runner that does not
answer is not asked again at every poll. The runner here is this test process (its PID, start time,
boot) serving the real socket the runner serves: one request line, one answer line."""
from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from moeconsole.runner.core import state as run_state
from moeconsole.runner.process.proctree import start_time
from moeconsole.runner.rundir import jsonio, rundir, store
from moeconsole.runner.rundir.snapshot import ASK_RUNNER_PAST_S, RunWatcher
from moeconsole.runner.supervisor import control
from tests.waiting import until

ROOM = {"error": "Read-only file system (events.jsonl)", "since": 1.7e9, "pending_records": 3}


def _late_state(run: rundir.RunDir, step: int) -> None:
    """state.json of a running run, last written well before its late mark, by this process as runner."""
    jsonio.atomic_write_bytes(run.state, run_state.encode({
        "v": run_state.STATE_VERSION, "status": "running", "name": "t", "step": step, "attempt": 1,
        "updated_at": time.time() - 10 * ASK_RUNNER_PAST_S, "stale_after_s": 4 * ASK_RUNNER_PAST_S,
        "runner": {**rundir.runner_record(), "start_time": start_time(os.getpid())}}))


@contextmanager
def runner_socket(run: rundir.RunDir, answer: dict | None) -> Iterator[list[bytes]]:
    """The run's control socket, served: each request read is recorded; ``answer`` is sent back (None:
    the connection is held open, unanswered, as by a runner whose loop does not tick)."""
    listener = control.listen(run.sock)
    listener.setblocking(True)
    listener.settimeout(0.2)
    asked: list[bytes] = []
    held: list[socket.socket] = []
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except (socket.timeout, OSError):
                continue
            conn.settimeout(5)
            asked.append(control.recv_line(conn))
            if answer is None:
                held.append(conn)
            else:
                control.reply(conn, answer)
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield asked
    finally:
        done.set()
        thread.join(10)
        for conn in held:
            conn.close()
        listener.close()


def test_a_late_state_is_what_the_live_runner_answers(tmp_path):
    run = rundir.create(tmp_path, "t")
    _late_state(run, 7)
    answer = {"ok": True, "state": {"status": "cooldown", "name": "t", "step": 9, "attempt": 1,
                                    "storage": ROOM, "a_newer_runners_key": 1}}
    with runner_socket(run, answer) as asked:
        snap = RunWatcher(run).poll(with_gpu=False)
        assert len(asked) == 1 and b'"status"' in asked[0], asked
        assert snap.run["status_word"].startswith("COOLDOWN (run directory not writable: Read-only file system"), snap.run
        assert not snap.run["stale"] and snap.run["step"] == 9, snap.run
        row = store.refresh_live({"path": str(run.path), "status": "running", "id": run.run_id})
        assert row["status"] == "cooldown" and row["storage"] == ROOM and not row["stale"], row


def test_a_runner_that_does_not_answer_is_said_stale_and_not_asked_at_every_poll(tmp_path):
    run = rundir.create(tmp_path, "t")
    _late_state(run, 7)
    with runner_socket(run, None) as asked:
        watcher = RunWatcher(run)
        snap = watcher.poll(with_gpu=False)
        assert len(asked) == 1 and snap.run["stale"] and snap.run["status_word"].startswith("RUNNING?"), snap.run
        _late_state(run, 8)   # state.json replaced (a new inode): read again, still late
        snap = watcher.poll(with_gpu=False)
        assert snap.run["step"] == 8 and snap.run["stale"] and len(asked) == 1, (snap.run, asked)
        row = store.refresh_live({"path": str(run.path), "status": "running", "id": run.run_id})   # `runs ls`, the browser
        assert row["stale"] and len(asked) == 1, (row, asked)
        # past the wait, asked again
        until(lambda: (_late_state(run, 9), watcher.poll(with_gpu=False).run["step"] == 9 and len(asked) == 2)[1],
              ASK_RUNNER_PAST_S * 10, what="the runner asked again")


# Round 32: another process (same user) listening at the run's socket path answers every line with a
# status of its own; it records what it is sent
IMPOSTOR = r"""
import os, socket, sys
path, heard = sys.argv[1], sys.argv[2]
os.chdir(os.path.dirname(path))
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(os.path.basename(path))
s.listen(8)
open(heard + ".ready", "w").close()
while True:
    c, _ = s.accept()
    line = c.makefile("rb").readline()
    with open(heard, "ab") as f:
        f.write(line)
    c.sendall(b'{"ok": true, "state": {"status": "succeeded", "name": "t", "step": 999, "attempt": 1}}\n')
    c.close()
"""


def test_a_status_from_another_process_at_the_runs_socket_is_never_shown_as_the_runs(tmp_path):
    import subprocess
    import sys
    run = rundir.create(tmp_path, "t")
    _late_state(run, 7)   # the runner state.json names is this process, which does not listen
    heard = tmp_path / "heard"
    imp = subprocess.Popen([sys.executable, "-c", IMPOSTOR, str(run.sock), str(heard)])
    try:
        until(lambda: (tmp_path / "heard.ready").exists() or imp.poll() is not None, what="the impostor listening")
        assert imp.poll() is None, "the impostor could not listen"
        snap = RunWatcher(run).poll(with_gpu=False)   # the run screen, --json
        assert snap.run["status"] == "running" and snap.run["step"] == 7, snap.run
        assert snap.run["status_word"].startswith("RUNNING?") and snap.run["stale"], snap.run
        row = store.refresh_live({"path": str(run.path), "status": "running", "id": run.run_id})   # `runs ls`
        assert row["status"] == "running" and row["stale"], row
        assert not heard.exists() or heard.read_bytes() == b"", heard.read_bytes()   # nothing was sent to it
    finally:
        imp.kill()
        imp.wait()
