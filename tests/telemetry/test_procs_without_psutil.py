"""The blocker scan, the labelled processes' facts and the host line read /proc themselves on
Linux, so an attached console never imports psutil (1.7 MiB of code: docs/benchmarks.md, ``ui``).
What they read must be what psutil gives for the same process: each reader is checked here
against psutil itself, on real processes (this one, its parent, a child with spaces in its
arguments, an unreaped child)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest

from moeconsole.runner.telemetry import host, identity, procs
from tests.waiting import until

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="Linux's /proc")


def test_the_state_names_are_psutils():
    assert procs._STATES == {"R": psutil.STATUS_RUNNING, "S": psutil.STATUS_SLEEPING,
                             "D": psutil.STATUS_DISK_SLEEP, "T": psutil.STATUS_STOPPED,
                             "t": psutil.STATUS_TRACING_STOP, "Z": psutil.STATUS_ZOMBIE, "X": psutil.STATUS_DEAD,
                             "x": psutil.STATUS_DEAD, "K": "wake-kill", "W": psutil.STATUS_WAKING,
                             "I": psutil.STATUS_IDLE, "P": psutil.STATUS_PARKED}
    assert procs.STATUS_ZOMBIE == psutil.STATUS_ZOMBIE


def test_the_start_times_of_the_scan_are_psutils():
    """Start times compare with the ones the runner recorded (a tracked PID is the run's only while
    they match): every row's start time is ``identity.process_start``'s, psutil's ticks since boot
    on the boot's pinned wall time (psutil's own ``create_time`` moves with a step of the wall
    clock; the boot time read is psutil's). The
    states are compared on processes whose state holds still between the two reads (this one,
    running as it reads; a sleeping child; a stopped one): a parent on a busy machine may be
    running at one read and sleeping at the next."""
    assert identity.live_btime() == psutil.boot_time()
    sleeping = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    stopped = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        os.kill(stopped.pid, signal.SIGSTOP)
        until(lambda: psutil.Process(sleeping.pid).status() == psutil.STATUS_SLEEPING
              and psutil.Process(stopped.pid).status() == psutil.STATUS_STOPPED, 60, what="the children to settle")
        rows = {row.pid: row for row in procs._proc_rows() or []}
        for pid in (os.getpid(), os.getppid(), 1, sleeping.pid, stopped.pid):
            assert rows[pid].create_time == identity.process_start(pid), pid
            since_boot = psutil.Process(pid).create_time() - psutil.boot_time()
            assert abs(rows[pid].create_time - (identity.boot_epoch() + since_boot)) < 1e-6, pid
        for pid in (os.getpid(), sleeping.pid, stopped.pid):
            assert rows[pid].status == psutil.Process(pid).status(), pid
    finally:
        for child in (sleeping, stopped):
            child.kill()
            child.wait()


def test_a_processs_user_command_line_and_name_are_psutils():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "two words", ""])
    try:
        for pid in (os.getpid(), os.getppid(), 1, child.pid):
            p = psutil.Process(pid)
            assert procs._user_argv_name(pid) == (p.username(), p.cmdline(), p.name()), pid
        assert procs._user_argv_name(child.pid)[1][-2:] == ["two words", ""]
    finally:
        child.kill()
        child.wait()


def test_an_unreaped_child_has_no_command_line_as_with_psutil():
    """psutil raises ZombieProcess for a zombie's command line: the listed line stays empty."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        until(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE, 60, what="the child to exit")
        with pytest.raises(psutil.ZombieProcess):
            psutil.Process(child.pid).cmdline()
        user, argv, _ = procs._user_argv_name(child.pid)
        assert (user, argv) == (psutil.Process(child.pid).username(), None)
        info = procs._proc_info(child.pid, procs._Row(pid=child.pid, ppid=os.getpid(), uid=os.getuid(),
                                                      status=psutil.STATUS_ZOMBIE, create_time=0.0),
                                ("defunct",), {}, 0.0)
        assert (info.cmdline, info.user) == ("", user)
    finally:
        child.wait()


def test_a_gone_process_has_no_facts():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    with pytest.raises(OSError):
        procs._user_argv_name(child.pid)


def test_this_process_and_its_ancestors_are_psutils():
    me = psutil.Process()
    assert identity.self_and_ancestors() == {me.pid} | {p.pid for p in me.parents()}


def test_the_ram_figures_are_psutils():
    """MemAvailable moves between two reads on a busy machine (other work allocating): the two
    are read again until they were taken in a quieter moment, never compared once with a wide
    margin (MemFree, the wrong line, differs by the page cache: it never agrees)."""
    total, _ = host._meminfo_total_available() or (0, 0)
    vm = psutil.virtual_memory()
    assert total == vm.total
    until(lambda: abs((host._meminfo_total_available() or (0, 0))[1] - psutil.virtual_memory().available)
          < 16 * 2**20, 60, what="our MemAvailable and psutil's to agree within 16 MiB")
    ram = host.ram_now()
    assert ram["ram_total_gib"] == vm.total / host.GIB
