"""The local engine: the command runs on this host under the waiter (``moeconsole.runner.process.waiter``).

The waiter is the runner's child and the root of the attempt: it records the command's exit in
``exits/attempt-N.json`` and ends the same way, so this runner reaps the exact status and a later
runner reads it from the file. Processes are tracked by PID + start time (``moeconsole.runner.process.proctree``);
the runner, a child subreaper, also collects what the command orphans.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Mapping, Sequence

from moeconsole.runner.core.programs import python_program
from moeconsole.runner.process import pyexec
from moeconsole.runner.rundir import rundir
from moeconsole.runner.process import proctree
from moeconsole.runner.process.attempt import Ended, ExitStatus, LaunchSpec, Polled, Running, TreeBacked
from moeconsole.runner.process.waiter import record_spare
from moeconsole.runner.core.state import TrackedPid
from moeconsole.runner.rundir import jsonio, runfiles
from moeconsole.runner.telemetry import identity

COMMAND_APPEARS_S = 2.0  # the waiter forks the command within milliseconds; bounded wait
LEADER_CHECK_S = 0.5  # how often a leader nobody reaps for us is looked up


def waiter_exited(pid: int) -> bool:
    """True once child ``pid`` has ended, without reaping it (``WNOWAIT``): the exit status stays
    for the runner's ``waitpid``."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def waiter_argv(exit_record: Path, argv: Sequence[str]) -> list[str]:
    """The command under the waiter, run by path with -S -E: stdlib only, fast to start, and the
    command still gets the environment untouched. ``EXIT_RECORD -- COMMAND``, the form every
    waiter takes: the record's spare (``waiter.record_spare``) is found by its name (R36)."""
    waiter = str(Path(__file__).resolve().parent.parent / "waiter.py")
    return pyexec.script_argv(waiter, str(exit_record), "--", *argv, flags=("-S", "-E"))


class LocalAttempt(TreeBacked):
    polled = False  # the runner reaps the waiter (or an adopted one's pidfd wakes the loop)
    pending = False
    job_id = None  # no batch job

    def __init__(self, number: int, tree: proctree.ProcessTree, proc: subprocess.Popen | None,
                 adopted: bool) -> None:
        self.number = number
        self.tree = tree
        self.proc = proc
        self.adopted = adopted
        self._pidfd: int | None = None
        self._leader_checked = 0.0
        if adopted and tree.leader is not None:
            try:
                self._pidfd = os.pidfd_open(tree.leader.pid)
            except (AttributeError, OSError):
                self._pidfd = None

    def wait_fd(self) -> int | None:
        return self._pidfd

    def view(self) -> None:
        return None  # no batch job to show

    def close_wait_fd(self) -> None:
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def poll(self, reaped: Mapping[int, int]) -> Polled:
        """Our own waiter: ended once this runner's waitpid reaped it. Any leader (an adopted one
        is nobody's child here; our own child reaped elsewhere must not leave the run "running"
        forever): ended once its PID + start time is gone, looked up every LEADER_CHECK_S."""
        root = self.tree.leader
        if root is None:
            return Running()
        if not self.adopted and root.pid in reaped:
            rc = proctree.returncode_from_status(reaped[root.pid])
            if self.proc is not None:
                self.proc.returncode = rc
            return Ended(rc)
        now = time.monotonic()
        if self._pidfd is None and now - self._leader_checked >= LEADER_CHECK_S:
            self._leader_checked = now
            if not proctree.same_process(root.pid, root.start_time):
                return Ended(None)  # the waiter's exit record says how
        return Running()


def _root(pids: Sequence[TrackedPid]) -> TrackedPid | None:
    """The waiter is the attempt's root (it outlives the command by the moment it takes to
    record the exit); runs from before the waiter have only a leader."""
    return next((p for p in pids if p.get("role") == "waiter"), None) or \
        next((p for p in pids if p.get("role") == "leader"), None)


def _outliving(rec: runfiles.ExitRecord) -> tuple[tuple[int, float | None], ...]:
    """The record's outliving processes as (pid, start time on the boot's pinned clock), from the
    start ticks the waiter noted. A record from an older waiter notes none: each PID alone (start
    None), as that waiter meant it. Ticks that do not pair with the PIDs (another count) prove no
    PID's start: none is tracked (a PID alone may be a stranger's by now). A tick None (unreadable
    when the waiter looked: the process had ended) leaves that PID out."""
    if not rec.outliving_start_ticks:
        return tuple((pid, None) for pid in rec.outliving)
    if len(rec.outliving_start_ticks) != len(rec.outliving):
        return ()
    out: list[tuple[int, float | None]] = []
    for pid, tick in zip(rec.outliving, rec.outliving_start_ticks):
        if tick is not None:
            # started_at is None only when this boot's start cannot be read: then the PID alone
            # (``ProcessTree.track`` asks its start on the same clock, and finds none either)
            out.append((pid, identity.started_at(tick)))
    return tuple(out)


class LocalEngine:
    name = "local"

    def __init__(self, run: rundir.RunDir) -> None:
        self.run = run

    def start(self, spec: LaunchSpec, log_fd: int) -> LocalAttempt:
        record = self.run.exit_record(spec.attempt)
        rundir.make_private_dir(self.run.exits, exist_ok=True)
        record.unlink(missing_ok=True)
        try:   # the exit record's spare (the waiter writes into it and renames it over the record when
            # the filesystem has no inode for a temp file): made now, while one is free
            os.close(os.open(record_spare(str(record)), os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                             jsonio.FILE_MODE))
        except OSError:
            pass   # none free now either: the waiter makes a temp file as it always did
        proc = subprocess.Popen(waiter_argv(record, spec.argv), stdin=subprocess.DEVNULL, stdout=log_fd,
                                stderr=log_fd, cwd=spec.cwd, env=dict(spec.env), start_new_session=True,
                                close_fds=True)
        tree = proctree.ProcessTree(self.run.run_id, self.run.path)
        tree.set_leader(proc.pid, waiter=True)
        program = python_program(spec.argv, spec.cwd)
        if program is not None:   # it inherits this runner's limits (proctree.address_space_limit)
            tree.command_program = (program, proctree.address_space_limit() is not None)
        attempt = LocalAttempt(spec.attempt, tree, proc, adopted=False)
        # Track the command before anyone is told the attempt runs: readers see it as the leader.
        # Never proc.poll() here: it reaps the waiter, and the runner learns of an exit only from
        # its own waitpid(-1); a command that ends within milliseconds would go unnoticed.
        deadline = time.monotonic() + COMMAND_APPEARS_S
        while time.monotonic() < deadline and not waiter_exited(proc.pid):
            tree.refresh()
            if any(t.role == "leader" for t in tree.procs.values()):
                break
            time.sleep(0.005)
        return attempt

    def attempt_alive(self, number: int, pids: Sequence[TrackedPid]) -> bool:
        root = _root(pids)
        return root is not None and proctree.same_process(root["pid"], root["start_time"])

    def adopt(self, number: int, pids: Sequence[TrackedPid],
              groups: Mapping[int, float | None] | None = None) -> LocalAttempt | None:
        """The recorded attempt, taken over; None when nothing of it lives. A root that ended
        while processes of its tree live on (a training its launcher left running when it exited
        0) is adopted with them: its end is noticed at the first poll, and what lives is the tree.
        ``groups``: the sessions and groups state.json keeps (``proctree.kept_groups``): a worker
        left alone in one, every recorded process ended, is what lives of the tree."""
        alive = [p for p in pids if proctree.same_process(p["pid"], p["start_time"])]
        members = proctree.group_members(groups)[0] if groups else {}
        root = _root(pids) or (alive[0] if alive else None)  # no root recorded: the tree outlived it
        if root is None or not (alive or members):
            return None
        tree = proctree.ProcessTree(self.run.run_id, self.run.path)
        tree.set_leader(int(root["pid"]), float(root["start_time"]), waiter=root.get("role") == "waiter")
        tree.adopted = True
        tree.groups = dict(groups or {})
        for pid, since in members.items():
            tree.procs.setdefault(pid, proctree.TrackedProc(pid, since, "child"))
        for p in pids:
            if p["pid"] != root["pid"] and proctree.same_process(p["pid"], p["start_time"]):
                role = p.get("role") if p.get("role") in ("leader", "child") else "child"
                tree.procs[p["pid"]] = proctree.TrackedProc(p["pid"], p["start_time"], role)
        tree.refresh()
        return LocalAttempt(number, tree, None, adopted=True)

    def exit_status(self, number: int) -> ExitStatus | None:
        if not number:
            return None
        rec, _problem = runfiles.read(self.run.exit_record(number), runfiles.ExitRecord)
        if rec is None:  # missing or damaged: the log is the only witness, as without a waiter
            return None
        end = rec.ended_mono
        ends = tuple((e.pid, e.returncode, e.mono - end) for e in rec.orphan_ends) if end is not None else ()
        return ExitStatus(rec.returncode, rec.error, rec.ended_at, fork_refused=rec.fork_refused, orphan_ends=ends,
                          outliving=_outliving(rec))
