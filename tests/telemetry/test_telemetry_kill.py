"""kill_checked refuses what it must, and escalates SIGTERM -> SIGKILL on real processes."""
from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

from moeconsole.runner.telemetry.kill import kill_checked
from tests.telemetry.telemetry_helpers import alive
from tests.waiting import until

IGNORE_TERM = ("import signal, time\n"
               "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
               "print('ready', flush=True)\n"
               "while True: time.sleep(60)\n")


def _start(pid: int) -> float:
    return psutil.Process(pid).create_time()


def test_sleeper_terminated_by_sigterm(spawn):
    p = spawn.popen()
    res = kill_checked(p.pid, _start(p.pid), grace_s=10)
    assert (res.ok, res.action) == (True, "terminated")
    assert p.wait(timeout=10) == -signal.SIGTERM


def test_sigterm_ignored_then_sigkill(spawn):
    p = spawn.popen(IGNORE_TERM, ready=True)
    assert p.ready_line == "ready"
    res = kill_checked(p.pid, _start(p.pid), grace_s=0.3)
    assert (res.ok, res.action) == (True, "killed")
    assert "ignored SIGTERM" in res.reason
    assert p.wait(timeout=10) == -signal.SIGKILL


def test_reused_pid_refused_and_left_alive(spawn):
    p = spawn.popen()
    res = kill_checked(p.pid, _start(p.pid) - 1234.5, grace_s=1)
    assert (res.ok, res.action) == (False, "refused")
    assert "was reused" in res.reason
    assert alive(p.pid)


def test_unknown_start_time_refused(spawn):
    p = spawn.popen()
    res = kill_checked(p.pid, None)
    assert (res.ok, res.action) == (False, "refused") and "cannot rule out a reused PID" in res.reason
    assert alive(p.pid)


@pytest.mark.parametrize("pid", [1, 0, -1])
def test_init_and_group_pids_refused(pid):
    res = kill_checked(pid, 0.0)
    assert (res.ok, res.action) == (False, "refused")


def test_self_and_ancestors_refused():
    me = psutil.Process()
    for pid in [me.pid, me.ppid()]:
        res = kill_checked(pid, psutil.Process(pid).create_time())
        assert (res.ok, res.action) == (False, "refused")
        assert "this console or one of its ancestors" in res.reason
    assert me.is_running()


def test_already_gone_is_ok(spawn):
    p = spawn.popen()
    started = _start(p.pid)
    p.kill()
    p.wait()
    res = kill_checked(p.pid, started)
    assert (res.ok, res.action) == (True, "gone")


def test_defunct_target_reported_gone_with_its_parent(spawn):
    p = spawn.popen("pass")
    started = _start(p.pid)
    until(lambda: psutil.Process(p.pid).status() == psutil.STATUS_ZOMBIE, timeout=60, what="<defunct>")
    res = kill_checked(p.pid, started)
    assert (res.ok, res.action) == (True, "gone")
    assert f"its parent PID {os.getpid()} must reap it" in res.reason


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to start a process as another user")
def test_other_users_process_refused_unless_root_says_so(spawn):
    p = spawn.popen(argv=["sleep", "300"], user=65534)
    started = _start(p.pid)
    res = kill_checked(p.pid, started, grace_s=1)
    assert (res.ok, res.action) == (False, "refused")
    assert "belongs to user" in res.reason and "explicit flag" in res.reason
    assert alive(p.pid)
    res = kill_checked(p.pid, started, grace_s=5, allow_other_users=True)
    assert (res.ok, res.action) == (True, "terminated")


@pytest.mark.skipif(os.geteuid() == 0, reason="as root every process is killable with the flag")
def test_other_users_process_refused_for_a_normal_user():
    other = next(p for p in psutil.process_iter(["uids"])
                 if p.pid > 2 and p.info["uids"] and p.info["uids"].real != os.getuid())
    res = kill_checked(other.pid, other.create_time(), allow_other_users=True)
    assert (res.ok, res.action) == (False, "refused") and "not to you" in res.reason
