"""Which sessions and process groups are the run's, and which processes a tree takes by PID and start
time, against real processes and a real /proc: a kept group ID whose number a stranger has now, a
group's maker that /proc hides (``hidepid``), a PID named with a start that is not its process's."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess

import pytest

from moeconsole.runner.process import proctree


def _sleeper(*, session: bool = False) -> subprocess.Popen:
    return subprocess.Popen(["sleep", "600"], start_new_session=session)


def _end(p: subprocess.Popen) -> None:
    p.kill()
    p.wait()


def test_a_kept_group_whose_number_a_strangers_group_leader_has_now_is_dropped_and_its_members_not_taken():
    """A session or group ID kept between two looks (a kill's whole grace) was only asked whether
    something still held it: everything in it may end meanwhile and the number go to a new
    process of the user that leads a group of its own (a shell's job). The kill took that
    stranger's group as the run's. Kept with its maker's start time, the ID is dropped when a live
    process of that PID started at another time (or when the maker was gone and a process of
    that PID exists now)."""
    stranger = _sleeper(session=True)   # leads its own session and group, numbered by its PID
    try:
        started = proctree.start_time(stranger.pid)
        assert started is not None
        for kept in (started + 5, None):   # another maker; a maker gone when the ID was kept
            members, held = proctree.group_members({stranger.pid: kept})
            assert stranger.pid not in members and stranger.pid not in held, (kept, members, held)
        members, held = proctree.group_members({stranger.pid: started})   # its maker: still the run's
        assert stranger.pid in members and stranger.pid in held
    finally:
        _end(stranger)


def test_track_takes_a_pid_only_with_its_own_start_time():
    """The waiter names each outliving PID with its start: a PID whose process started at
    another time is a stranger's (the named one ended and its PID was given again)."""
    p = _sleeper()
    try:
        started = proctree.start_time(p.pid)
        assert started is not None
        tree = proctree.ProcessTree("track")
        tree.track([(p.pid, started + 5)])
        assert p.pid not in tree.procs
        assert proctree.reused(p.pid, started + 5)
        assert not proctree.reused(p.pid, started)
        tree.track([(p.pid, started)])
        assert p.pid in tree.procs
    finally:
        _end(p)


_GROUPS_OF = r"""
import json, sys
from moeconsole.runner.process import proctree
pid = int(sys.argv[1])
print(json.dumps(sorted(proctree.groups_of({pid: proctree.start_time(pid)}))))
"""


def test_a_group_whose_maker_proc_hides_is_not_taken_for_one_whose_maker_ended():
    """/proc mounted ``hidepid=2`` (a hardened login node) shows no entry for another user's
    process: its stat cannot be read. A session or group is the run's only when its maker is
    among the run's processes or has ended; a maker that could not be read was taken for ended,
    and the session of another user's process (here root's shell, a process of ours started in
    it) for the run's. Signal 0 answers for a hidden process (EPERM: it exists). Run as
    ``nobody`` in a private mount namespace with its own /proc (``unshare -m``)."""
    from tests.rundir.test_other_users_runs import OTHER_PYTHON
    if OTHER_PYTHON is None or shutil.which("unshare") is None or shutil.which("setpriv") is None:
        pytest.skip("needs root, unshare, setpriv, runuser and a python3 another user may run")
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            "mount -t proc -o hidepid=2 proc /proc"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a private /proc with hidepid here: {probe.stderr.strip()}")
    # root's shell makes a session; nobody's sleep lives in it (a background job keeps its group)
    maker = subprocess.Popen(["sh", "-c", "setpriv --reuid 65534 --regid 65534 --clear-groups sleep 600 & "
                                          "echo $!; wait"], stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        assert maker.stdout is not None
        ours = int(maker.stdout.readline())
        line = shlex.join([*OTHER_PYTHON, "-c", _GROUPS_OF, str(ours)])
        out = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                              f"mount -t proc -o hidepid=2 proc /proc && {line}"],
                             capture_output=True, text=True, timeout=120, cwd="/")
        assert out.returncode == 0, out.stderr
        assert maker.pid not in json.loads(out.stdout), (maker.pid, out.stdout)
    finally:
        os.killpg(maker.pid, signal.SIGKILL)   # the shell and its sleep: the group this test made
        maker.wait()
        if maker.stdout is not None:
            maker.stdout.close()


def test_outliving_ticks_that_do_not_pair_with_the_pids_track_none():
    """The waiter's record names each outliving PID with its start ticks, in the same order. Ticks
    of another count prove no PID's start: they were taken for a record from an older waiter
    (PIDs alone) and a live process of that PID was tracked, a stranger's by then. Now none is;
    a record with no ticks at all (an older waiter's) is still read as PIDs alone."""
    from moeconsole.runner.process.engines.local import _outliving
    from moeconsole.runner.rundir.runfiles import ExitRecord
    from moeconsole.runner.telemetry.identity import read_stat
    p = _sleeper()
    try:
        tick = int(read_stat(p.pid)[1][19])
        tree = proctree.ProcessTree("outliving")
        tree.track(_outliving(ExitRecord(outliving=[p.pid], outliving_start_ticks=[tick, tick])))
        assert p.pid not in tree.procs
        tree.track(_outliving(ExitRecord(outliving=[p.pid], outliving_start_ticks=[tick])))
        assert p.pid in tree.procs
        assert _outliving(ExitRecord(outliving=[p.pid])) == ((p.pid, None),)
    finally:
        _end(p)


def test_a_walk_of_an_adopted_tree_reads_the_process_table_once(monkeypatch):
    """An adopted tree's walk read /proc for its parents and again for the members of its
    sessions and groups (and each tracked process's stat a third time for its groups): one read of
    the table now serves all of them."""
    leader = subprocess.Popen(["sleep", "600"], process_group=0)   # leads a group of its own
    member = subprocess.Popen(["sleep", "600"], process_group=leader.pid)   # in the leader's group, not its child
    try:
        tree = proctree.ProcessTree("adopted")
        tree.set_leader(leader.pid)
        tree.adopted = True
        listed: list[str] = []
        real = os.listdir

        def counting(path: str = ".") -> list[str]:
            if str(path) == "/proc":
                listed.append(str(path))
            return real(path)
        monkeypatch.setattr(os, "listdir", counting)
        assert not tree._walk()
        assert len(listed) == 1, listed
        assert {leader.pid, member.pid} <= set(tree.procs)   # the group's member taken by the same read
    finally:
        monkeypatch.undo()
        for p in (member, leader):
            _end(p)


# the waiter's fork of the command, caught before the command's own ``setsid`` (runner/process/waiter.py
# ``_fork_exec``): the child waits for GO, then leads a session and group of its own
FORKS_LATE_SETSID = r"""
import os, sys, time
go = sys.argv[1]
pid = os.fork()
if pid == 0:
    while not os.path.exists(go):
        time.sleep(0.02)
    os.setsid()
    os.execvp("sleep", ["sleep", "600"])
os.waitpid(pid, 0)
"""


def test_the_attempts_group_is_the_commands_own_once_it_leads_one(tmp_path):
    """Round 32: a look at the tree in the instant between the waiter's fork and the command's
    ``setsid`` read the waiter's group as the attempt's, and kept it for the whole attempt: state.json's
    ``pgid`` (shown by `--json`, the kill's question) named the waiter's group, a `kill -STOP -- -PGID`
    of it stopped the waiter and not the training, and the views named a stopped group PID by PID."""
    import sys
    go = tmp_path / "go"
    waiter = subprocess.Popen([sys.executable, "-c", FORKS_LATE_SETSID, str(go)], start_new_session=True)
    try:
        from tests.waiting import until
        tree = proctree.ProcessTree("late-setsid")
        tree.set_leader(waiter.pid, waiter=True)
        cmd = until(lambda: (tree.refresh(), next((p for p, t in tree.procs.items() if t.role == "leader"), None))[1],
                    what="the command forked")
        assert tree.pgid == waiter.pid   # not its own group yet: the waiter's
        go.write_text("")
        until(lambda: os.getpgid(cmd) == cmd, what="the command leading its own group")
        tree.refresh()
        assert tree.pgid == cmd, (tree.pgid, cmd, waiter.pid)
    finally:
        os.killpg(waiter.pid, signal.SIGKILL)
        try:
            os.killpg(cmd, signal.SIGKILL)
        except (ProcessLookupError, UnboundLocalError):
            pass
        waiter.wait()
