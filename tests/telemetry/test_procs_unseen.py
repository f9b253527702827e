"""Why a process the driver lists is not seen here (``procs.unseen_why``): hidden by ``hidepid`` only
where this namespace's /proc is mounted so (``procs.proc_hides_pids``); the positive case, a real
``hidepid=2`` mount, is ``tests/runner/test_runner_world7.py``."""
from __future__ import annotations

import os

import pytest

from moeconsole.runner.telemetry import procs


def test_without_hidepid_an_unseen_pid_is_another_namespaces_and_no_signal_asks_it(monkeypatch):
    """A PID the driver lists from another PID namespace may name a process here (a stranger's, or
    ours): without hidepid it is not asked by signal (the answer would describe the wrong process,
    and a 1,024-GPU view asked it of every other node's process on every refresh)."""
    if procs.proc_hides_pids():
        pytest.skip("this machine's /proc is mounted hidepid")
    sent: list[int] = []
    monkeypatch.setattr(procs.os, "kill", lambda pid, sig: sent.append(pid))
    assert procs.unseen_why(os.getpid()) == "not visible here: another PID namespace, or ended"
    assert sent == []


@pytest.mark.parametrize("options, hides", [("rw,nosuid,nodev,noexec,relatime", False),
                                             ("rw,relatime,hidepid=2", True), ("rw,hidepid=invisible", True),
                                             ("rw,hidepid=0", False), ("rw,hidepid=off,gid=4", False)])
def test_hidepid_is_read_from_the_last_proc_mount(monkeypatch, tmp_path, options, hides):
    mounts = tmp_path / "mounts"
    mounts.write_text(f"proc /proc proc rw,relatime 0 0\nsysfs /sys sysfs rw 0 0\nproc /proc proc {options} 0 0\n")
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, *a, **kw: real_open(mounts if path == "/proc/self/mounts" else path, *a, **kw))
    procs.proc_hides_pids.cache_clear()
    try:
        assert procs.proc_hides_pids() is hides
    finally:
        monkeypatch.undo()
        procs.proc_hides_pids.cache_clear()
