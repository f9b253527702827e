"""The waiter records how the command ended and ends the same way (real processes, real files)."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys

from moeconsole.runner.process.engines.local import waiter_argv
from tests.conftest import REPO
from tests.waiting import until


def _run(tmp_path, argv, timeout=60):
    record = tmp_path / "attempt-1.json"
    proc = subprocess.run(waiter_argv(record, argv), capture_output=True, text=True, timeout=timeout)
    return proc, (json.loads(record.read_text()) if record.exists() else None), record


def test_exit_code_is_recorded_and_mirrored(tmp_path):
    proc, rec, record = _run(tmp_path, [sys.executable, "-c", "import sys; print('hi'); sys.exit(3)"])
    assert proc.returncode == 3 and proc.stdout == "hi\n"
    assert rec["returncode"] == 3 and rec["signal"] is None and rec["error"] is None
    assert oct(record.stat().st_mode & 0o777) == "0o600"


def test_death_by_signal_is_recorded_and_mirrored(tmp_path):
    proc, rec, _ = _run(tmp_path, [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert proc.returncode == -signal.SIGKILL
    assert rec["returncode"] == -9 and rec["signal"] == 9


def test_a_command_that_cannot_start_says_why(tmp_path):
    proc, rec, _ = _run(tmp_path, ["/nonexistent/trainer", "--x"])
    assert proc.returncode == 127
    assert "cannot start '/nonexistent/trainer'" in rec["error"] and "cannot start" in proc.stderr


def test_the_waiter_outlives_sigterm_and_the_command_gets_its_own_session(tmp_path):
    record = tmp_path / "attempt-1.json"
    script = "import os, sys, time\nprint(os.getsid(0) == os.getpid(), flush=True)\ntime.sleep(60)\n"
    proc = subprocess.Popen(waiter_argv(record, [sys.executable, "-c", script]), stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "True", "the command leads a session of its own"
        proc.send_signal(signal.SIGTERM)  # blocked by the waiter: it must live to write the record
        import psutil
        child = psutil.Process(proc.pid).children()[0]
        child.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == -signal.SIGTERM
        assert json.loads(record.read_text())["returncode"] == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# The command double-forks (each in a session of its own, stdout closed) a process that ends with
# exit 3 after SLEEP seconds and one that lives on (each writes its PID to a file in DIR); the
# command itself exits 0 after COMMAND_S.
def _backgrounding(out, sleep: float, command_s: float) -> list[str]:
    return [sys.executable, "-c", (
        "import os, sys, time\n"
        "def detached(name, seconds, rc):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            fd = os.open(os.devnull, os.O_WRONLY)\n"
        "            os.dup2(fd, 1); os.dup2(fd, 2)\n"
        f"            open(os.path.join({str(out)!r}, name), 'w').write(str(os.getpid()))\n"
        "            time.sleep(seconds)\n"
        "            os._exit(rc)\n"
        "        os._exit(0)\n"
        "    while not os.path.exists(os.path.join(%r, name)):\n" % str(out) +
        "        time.sleep(0.001)\n"
        f"detached('dies', {sleep}, 3)\n"
        "detached('lives', 600, 0)\n"
        f"time.sleep({command_s})\n"
        "sys.exit(0)\n")]


def _end(pids):
    import psutil
    for pid in pids:
        try:
            psutil.Process(pid).kill()
        except psutil.NoSuchProcess:
            pass


def test_orphans_of_the_command_come_back_to_the_waiter_which_records_their_bad_ends_and_who_lives_on(tmp_path):
    """The waiter is the subreaper of the command's tree: the orphan that ends badly before the
    command is recorded with its time before the command's end, and the one that lives on after the
    command is named (`outliving`) for the runner, which then knows it as the attempt's."""
    proc, rec, _ = _run(tmp_path, _backgrounding(tmp_path, 0.0, 1.0))
    lives = int((tmp_path / "lives").read_text())
    try:
        assert proc.returncode == 0 and rec["returncode"] == 0
        dies = int((tmp_path / "dies").read_text())
        assert [(e["pid"], e["returncode"]) for e in rec["orphan_ends"]] == [(dies, 3)]
        assert rec["orphan_ends"][0]["mono"] < rec["ended_mono"]
        assert rec["outliving"] == [lives]
    finally:
        _end([lives])


def test_an_orphan_that_ends_badly_after_the_command_is_recorded_after_its_end_or_named_as_living_on(tmp_path):
    """The command exits 0 at once; its orphan fails 0.3 s later: the waiter either saw that end
    (after the command's) or names the orphan as living on (the runner reaps it then)."""
    proc, rec, _ = _run(tmp_path, _backgrounding(tmp_path, 0.3, 0.0))
    lives = int((tmp_path / "lives").read_text())
    try:
        dies = int((tmp_path / "dies").read_text())
        assert proc.returncode == 0 and lives in rec["outliving"]
        ended = [e for e in rec["orphan_ends"] if e["pid"] == dies]
        assert dies in rec["outliving"] or (ended and ended[0]["mono"] >= rec["ended_mono"]), rec
    finally:
        _end([lives])


def test_the_command_starts_with_the_signal_dispositions_it_has_when_run_by_hand(tmp_path):
    """Python ignores SIGPIPE and SIGXFSZ in itself, and an ignored signal stays ignored across
    exec: a training started by the waiter's fork/exec inherited both (subprocess resets them,
    ``restore_signals``; a bare fork did not). Then `yes | head -1` inside a training script says
    "Broken pipe" instead of ending quietly, and a write past a file-size limit fails with EFBIG
    where it would end the process. The command starts with both at their defaults."""
    proc, rec, _ = _run(tmp_path, ["sh", "-c", "yes | head -n 1"])
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "y\n", "")
    proc, _, _ = _run(tmp_path, ["cat", "/proc/self/status"])
    ignored = int(next(line for line in proc.stdout.splitlines() if line.startswith("SigIgn:")).split()[1], 16)
    assert not ignored & (1 << (signal.SIGPIPE - 1)) and not ignored & (1 << (signal.SIGXFSZ - 1)), hex(ignored)
    # nor with the signals the waiter keeps from itself ignored or blocked (a kill must reach it)
    blocked = int(next(line for line in proc.stdout.splitlines() if line.startswith("SigBlk:")).split()[1], 16)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        assert not (ignored | blocked) & (1 << (sig - 1)), (sig, hex(ignored), hex(blocked))


def test_a_sigterm_in_the_commands_first_moment_ends_it(tmp_path):
    """The command is a fork of the waiter until it execs. The waiter ignored SIGTERM, so a SIGTERM
    sent to the command then (the runner's kill in the first moments of an attempt, as soon as its
    tree shows the command) was lost and the command trained on; the kill waited out its grace.
    Each SIGTERM here goes to the command as soon as the waiter's child appears (mostly before its
    exec: 99 of 100 were lost before), and each ends it."""
    script = "import time\nwhile True: time.sleep(0.1)"
    for i in range(20):
        record = tmp_path / f"attempt-{i}.json"
        proc = subprocess.Popen(waiter_argv(record, [sys.executable, "-c", script]))
        child = None
        try:
            child = until(lambda: _first_child(proc.pid), timeout=30, what="the waiter's child", interval=0)
            os.kill(child, signal.SIGTERM)
            assert proc.wait(timeout=30) == -signal.SIGTERM, i
        finally:
            if proc.poll() is None:
                if child:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(child, signal.SIGKILL)
                proc.kill()
                proc.wait()


def _first_child(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as f:
            kids = f.read().split()
    except OSError:
        return None
    return int(kids[0]) if kids else None


def test_a_sigterm_to_the_waiter_is_not_how_it_ends(tmp_path):
    """The waiter keeps the runner's SIGTERM from itself (it must write the record) and then ends as
    its command did: exit 0 after a command that ended well, whatever was sent to it meanwhile."""
    record = tmp_path / "attempt-1.json"
    proc = subprocess.Popen(waiter_argv(record, [sys.executable, "-c", "import sys; sys.stdin.readline()"]),
                            stdin=subprocess.PIPE, text=True)
    try:
        until(lambda: _first_child(proc.pid), timeout=30, what="the waiter's child")
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            proc.send_signal(sig)
        proc.communicate("go\n", timeout=30)
        assert proc.returncode == 0 and json.loads(record.read_text())["returncode"] == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# A launcher whose middle fork M (the one that starts the training G with setsid and a second
# fork) stays until a byte arrives on FIFO, then exits 0; the launcher exits 0 once both PIDs are
# written to DIR/pids ("M G").
def _middle_fork_on_cue(out, fifo) -> list[str]:
    return [sys.executable, "-c", (
        "import os, sys, time\n"
        f"out, fifo = {str(out)!r}, {str(fifo)!r}\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    g = os.fork()\n"
        "    if g == 0:\n"
        "        fd = os.open(os.devnull, os.O_WRONLY)\n"
        "        os.dup2(fd, 1); os.dup2(fd, 2)\n"
        "        time.sleep(600)\n"
        "        os._exit(3)\n"
        "    open(os.path.join(out, 'pids.tmp'), 'w').write(f'{os.getpid()} {g}')\n"
        "    os.rename(os.path.join(out, 'pids.tmp'), os.path.join(out, 'pids'))\n"
        "    with open(fifo, 'rb') as f:\n"
        "        f.read(1)\n"
        "    os._exit(0)\n"
        "while not os.path.exists(os.path.join(out, 'pids')):\n"
        "    time.sleep(0.001)\n"
        "sys.exit(0)\n")]


# The waiter as `python -m ...waiter` runs it, except that its walk of the tree at the command's
# end gives M its cue right after reading the waiter's own children, and reads M's only once M has
# ended: the moment when a real launcher's middle fork exits during the walk, forced.
_WALK_RACED = """
import os, sys, time
from moeconsole.runner.process import waiter
out, fifo = sys.argv[1], sys.argv[2]
read_children, cued = waiter._children, []
def children(pid):
    kids = read_children(pid)
    if pid == os.getpid() and not cued:
        cued.append(True)
        m = int(open(os.path.join(out, "pids")).read().split()[0])
        with open(fifo, "wb") as f:
            f.write(b"x")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with open(f"/proc/{m}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    break
            time.sleep(0.001)
    return kids
waiter._children = children
sys.exit(waiter.main(sys.argv[3:]))
"""


def test_a_middle_fork_ending_while_the_waiter_walks_the_tree_does_not_hide_the_training(tmp_path):
    """A launcher exits 0; its middle fork exits just as the waiter walks the tree at the command's
    end, between reading its parent's children and its own: the training it started comes back to
    the waiter after the waiter read its own children. One walk missed it (the record named only
    the middle fork, so the runner never knew the training, and its later crash was nobody's and
    the run `succeeded`); the waiter walks again until the tree stands still."""
    fifo = tmp_path / "cue"
    os.mkfifo(fifo)
    record = tmp_path / "attempt-1.json"
    argv = [sys.executable, "-c", _WALK_RACED, str(tmp_path), str(fifo), str(record), "--",
            *_middle_fork_on_cue(tmp_path, fifo)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO)
    middle, training = (int(x) for x in (tmp_path / "pids").read_text().split())
    try:
        assert proc.returncode == 0, proc.stderr
        rec = json.loads(record.read_text())
        assert rec["outliving"] == [training], rec
        assert middle not in rec["outliving"]  # it ended (exit 0) and was reaped: no bad end noted
        assert rec["orphan_ends"] == []
    finally:
        _end([training])
