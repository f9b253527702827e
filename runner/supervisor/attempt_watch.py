"""The current attempt's processes, as the runner watches them.

An attempt is launched or adopted through its engine (``runner.process.attempt``). From then on
this watch holds its process tree and notices its end whichever way it shows: the runner's own
child reaped by ``waitpid``, an adopted leader's pidfd, a batch job's final state (``poll``), or
a leader that vanished without any of those (reaped elsewhere). The end's return code comes
from the waiter's exit record when the runner could not reap it itself. It signals the tree
for the lifecycle's kills and keeps every PID the attempt ever had (an OOM message that names
one of them names us, not someone else).
"""
from __future__ import annotations

import signal
import time
from typing import Any, Callable, Mapping

from runner.core import lifecycle as lc
from runner.core.crash import decode_exit, live_pid_set, own_pid_set
from runner.core.state import JobRecord
from runner.process import proctree
from runner.process.attempt import Attempt, Engine, ExitStatus

LEADER_CHECK_S = 0.5  # how often a leader nobody reaps for us is looked up


class AttemptWatch:
    def __init__(self, run_id: str, engine: Engine, sidecars: Callable[[], set[int]] | None = None) -> None:
        """``sidecars()``: PIDs of the run's ops helpers, never part of an attempt's tree."""
        self.engine = engine
        self.sidecars = sidecars
        self.attempt: Attempt | None = None
        self.tree = proctree.ProcessTree(run_id)
        self.own_pids: set[int] = set()
        self.adopted = False
        self.pidfd: int | None = None  # an adopted leader's: readable when it ends
        self.returncode: int | None = None
        self.exit_status: ExitStatus | None = None
        self.exit_seen_at = time.time()  # shown (the attempt_end event's detected_at)
        self.exit_seen_mono = time.monotonic()  # how long judging took after it: a duration
        self.signalled: list[int] = []  # the PIDs the last SIGTERM went to
        self._leader_checked = 0.0

    def watch_sidecars(self, sidecars: Callable[[], set[int]]) -> None:
        self.sidecars = sidecars
        self.tree.set_sidecars(sidecars)

    def _follow(self, attempt: Attempt) -> None:
        self.attempt, self.tree = attempt, attempt.tree
        if self.sidecars is not None:
            self.tree.set_sidecars(self.sidecars)

    def launched(self, attempt: Attempt) -> None:
        self._follow(attempt)
        self.own_pids = own_pid_set(self.tree.procs)
        self.adopted, self.returncode, self.exit_status = False, None, None

    def adopt(self, number: int, pids: list[Any]) -> Attempt | None:
        """Take over attempt ``number`` a previous runner started; None when it ended meanwhile."""
        attempt = self.engine.adopt(number, pids)
        self.adopted = True
        if attempt is None:
            self.tree.leader = None
            return None
        self._follow(attempt)
        self.pidfd = attempt.wait_fd()
        return attempt

    def ended(self, number: int, rc: int | None) -> None:
        """The attempt's leader ended: when it was noticed, and how (``rc`` None: the waiter's
        exit record says)."""
        self.exit_seen_at, self.exit_seen_mono = time.time(), time.monotonic()
        self.exit_status = self.engine.exit_status(number)
        self.returncode = rc if rc is not None else (self.exit_status.returncode if self.exit_status else None)

    def noticed_end(self, reaped: Mapping[int, int], *, live: bool) -> tuple[bool, int | None]:
        """(ended, rc) from this turn's reaped children, a batch job's poll, or a leader that
        vanished (rc None then: the exit record says). ``live``: the lifecycle has a live attempt."""
        attempt, leader = self.attempt, self.tree.leader
        for pid, status in reaped.items():
            if leader and pid == leader.pid and not self.adopted:
                rc = proctree.returncode_from_status(status)
                if attempt is not None and attempt.proc is not None:
                    attempt.proc.returncode = rc
                return True, rc
        if attempt is not None and attempt.polled and live:
            polled = attempt.poll({})
            if polled is not False:
                return True, polled if isinstance(polled, int) else None
        now = time.monotonic()
        if live and leader and self.pidfd is None and (self.adopted or (attempt is not None and not attempt.polled)) \
                and now - self._leader_checked >= LEADER_CHECK_S:
            self._leader_checked = now
            # An adopted leader is nobody's child here; our own child that vanished without our
            # waitpid seeing it (reaped elsewhere) must not leave the run "running" forever.
            if not proctree.same_process(leader.pid, leader.start_time):
                return True, None
        return False, None

    def job(self) -> JobRecord | None:
        """The batch job as the engine sees it now (None: no batch job)."""
        return self.attempt.view() if self.attempt is not None else None

    def job_news(self, before: Mapping[str, Any] | None) -> tuple[JobRecord | None, dict[str, Any] | None]:
        """The batch job's record when it changed since ``before`` (state.json's), and the
        ``job_submitted`` event's fields once sbatch gave a new id (not for an adopted job)."""
        job = self.job()
        if job is None or job == before:
            return None, None
        prev = before or {}
        new_id = bool(job.get("job_id")) and (prev.get("job_id") != job.get("job_id")
                                             or prev.get("attempt") != job.get("attempt"))
        submitted = {"attempt": job.get("attempt"), "engine": job.get("engine"), "job_id": job.get("job_id"),
                     "state": job.get("state")} if new_id and not self.adopted else None
        return job, submitted

    def probe(self, *, hidden_too: bool = False) -> lc.TreeProbe:
        """What of the tree still lives (``hidden_too``: when nothing tracked does, also the
        processes carrying the run's marker outside it)."""
        self.tree.refresh()
        alive = self.tree.alive()
        return lc.TreeProbe(alive=alive, hidden=hidden_too and not alive and self.tree.alive(scan_markers=True))

    def end_facts(self) -> dict[str, Any]:
        """What the watch knows of the ended attempt, for the judge (``judge.EndedAttempt``)."""
        return {"returncode": self.returncode, "exit_status": self.exit_status, "exit_seen_at": self.exit_seen_at,
                "detected_after_s": round(time.monotonic() - self.exit_seen_mono, 3),
                "own_pids": frozenset(self.own_pids), "live_pids": frozenset(live_pid_set())}

    def survivors_alert(self, eff: lc.Record) -> dict[str, Any]:
        """The lifecycle's alert about processes that outlive SIGKILL, naming them (or what
        the engine still waits for)."""
        alive = sorted(self.tree.survivors())
        left = alive or self.tree.blocking()
        return {"level": eff.fields["level"], "rule": eff.fields["rule"], "message": f"{eff.fields['message']}: {left}",
                "pids": alive}

    def record_fields(self, eff: lc.Record, attempt: int | None, wall: Callable[[float], float]) -> dict[str, Any]:
        """A lifecycle record's event fields: the kill names the PIDs the SIGTERM went to, the
        attempt's end how the leader ended and when it was noticed, a cooldown its wall-clock
        times (``wall``: a monotonic time as wall-clock time)."""
        f = dict(eff.fields)
        if eff.type == "kill":
            return {"reason": f["reason"], "requested_by": f["requested_by"], "pids": self.signalled,
                    "grace_s": f["grace_s"], "attempt": attempt}
        if eff.type == "attempt_end":
            code, sig = decode_exit(self.returncode)
            return {"attempt": attempt, "returncode": self.returncode, "exit_code": code, "signal": sig,
                    "detected_at": self.exit_seen_at}
        if eff.type == "cooldown":
            return {"attempt": attempt, "until": wall(f["until"]), "ceiling_at": wall(f["ceiling_at"]),
                    "reason": f["reason"]}
        return {"attempt": attempt, **f}

    def refresh(self) -> None:
        """The tree as it is now, and every PID it has in any namespace, read while alive."""
        self.tree.refresh()
        self.own_pids |= own_pid_set(self.tree.procs)

    def terminate(self) -> list[int]:
        """SIGTERM to the whole tree (start times checked): the PIDs signalled."""
        self.tree.refresh()
        self.signalled = self.tree.signal(signal.SIGTERM)
        return self.signalled

    def kill(self, *, outside_tree: bool) -> list[int]:
        """SIGKILL to what survives (``outside_tree``: the processes carrying the run's marker
        outside the tracked tree): the PIDs signalled, else those found."""
        if outside_tree:
            targets = self.tree.survivors(scan_markers=True)
        else:
            self.tree.refresh()
            targets = self.tree.survivors()
        return self.tree.signal(signal.SIGKILL, targets) or sorted(targets)
