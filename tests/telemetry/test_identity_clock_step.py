"""A process's identity (PID + start time) across a step of the wall clock.

The kernel keeps a process's start as ticks since boot and derives ``/proc/stat``'s ``btime`` from
the wall clock at every read (fs/proc/stat.c, ``getboottime64``), so a step of the wall clock
(NTP stepping, ``date -s``, a restored or migrated VM, a leap second) moves psutil's
``create_time`` of every process by the step. Every start time the run recorded before it then
stopped matching (50 ms tolerance): a kill found "PID reused" and ended nothing, a new runner
took the live training for gone.

Stepping this shared machine's clock would step it under every other test, so the step is made
where the readers look: psutil's ``PROCFS_PATH`` and ``identity.PROC_STAT`` point at a copy of
``/proc`` whose ``stat`` says ``btime`` two hours later (what the kernel answers after a +2 h
step; every other entry is a link to the real ``/proc``). The processes and signals are real."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from moeconsole.runner.process import proctree
from moeconsole.runner.telemetry import identity, kill

STEP_S = 7200.0


@pytest.fixture
def stepped_clock(tmp_path, monkeypatch):
    """``/proc`` as it reads after the wall clock stepped STEP_S forward."""
    fake = tmp_path / "proc"
    fake.mkdir()
    identity.boot_epoch()   # the boot's wall time pinned before the step (any of our processes does)
    before = psutil.boot_time()

    def step() -> None:
        for name in os.listdir("/proc"):   # the processes of now, the training included
            if name != "stat":
                os.symlink(f"/proc/{name}", fake / name)
        real = Path("/proc/stat").read_text()
        lines = [f"btime {int(line.split()[1]) + int(STEP_S)}" if line.startswith("btime ") else line
                 for line in real.splitlines()]
        (fake / "stat").write_text("\n".join(lines) + "\n")
        monkeypatch.setattr(psutil, "PROCFS_PATH", str(fake))
        monkeypatch.setattr(identity, "PROC_STAT", str(fake / "stat"))
        assert psutil.boot_time() == before + STEP_S   # the step is seen where the kernel shows it
    return step


@pytest.fixture
def training():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    yield child
    if child.poll() is None:
        child.kill()
    child.wait()


def test_a_process_is_still_itself_after_the_wall_clock_stepped(stepped_clock, training):
    recorded = proctree.start_time(training.pid)   # as state.json records it
    assert recorded is not None and proctree.same_process(training.pid, recorded)
    stepped_clock()
    assert proctree.same_process(training.pid, recorded), "the training taken for gone after a clock step"
    assert not proctree.same_process(training.pid, recorded + 1.0)   # a reused PID is still told apart
    assert proctree.start_time(training.pid) == pytest.approx(recorded, abs=identity.START_TIME_TOLERANCE_S)


def test_a_checked_kill_after_the_wall_clock_stepped_ends_the_training(stepped_clock, training):
    recorded = proctree.start_time(training.pid)
    stepped_clock()
    res = kill.kill_checked(training.pid, recorded, grace_s=5.0, kill_wait_s=10.0)
    assert res.ok and res.action == "terminated", res
    assert training.wait(timeout=30) == -signal.SIGTERM
