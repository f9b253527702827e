"""The current attempt's processes, as the runner watches them.

An attempt is launched or adopted through its engine (``moeconsole.runner.process.attempt``). From then on
this watch holds its processes and notices its end whichever way it shows: the runner's own
child reaped by ``waitpid``, an adopted leader's pidfd, a batch job's final state, or
a leader that vanished without any of those (reaped elsewhere): the attempt's ``poll`` says
``Running`` or ``Ended``. The end's return code comes from the waiter's exit record when the
runner could not reap it itself. It signals the attempt's processes for the lifecycle's kills
and keeps every PID the attempt ever had (an OOM message that names one of them names us, not
someone else).

Everything goes through the ``Attempt`` protocol (``moeconsole.runner.process.attempt``); the watch never
reaches into an engine's process tree. Without an attempt (before the first launch) a
``NoAttempt`` stands in: nothing tracked, the run's marker still scanned for.
"""
from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from moeconsole.runner.core.held import LogMark
from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.core.crash import decode_exit
from moeconsole.runner.process.proctree import ReapedChild, live_pid_set, own_pid_set, returncode_from_status, reused
from moeconsole.runner.core.state import JobRecord
from moeconsole.runner.process.attempt import Attempt, Ended, Engine, ExitStatus, NoAttempt, Processes


class AttemptWatch:
    def __init__(self, run_id: str, engine: Engine, sidecars: Callable[[], set[int]] | None = None,
                 run_dir: Path | str | None = None) -> None:
        """``sidecars()``: PIDs of the run's ops helpers, never part of an attempt's tree; ``run_dir``:
        the run's directory (a marked process started for another is not the run's: ``proctree.marked_for``)."""
        self.engine = engine
        self.sidecars = sidecars
        self.attempt: Attempt | None = None
        self.procs: Processes = NoAttempt(run_id, run_dir)  # the attempt's processes (the attempt, or none)
        self.own_pids: set[int] = set()  # every PID of the attempt's tree, in every PID namespace (NSpid)
        self.tree_pids: set[int] = set()  # the same in this runner's namespace only: who made a session
        self.adopted = False
        self.pidfd: int | None = None  # an adopted leader's: readable when it ends
        self.returncode: int | None = None
        # PIDs of the tree that outlived the waiter of an adopted attempt: their parent is not this
        # runner (the waiter was orphaned with the old one), so no one here reads how they end
        self.unread_ends: set[int] = set()
        self.exit_status: ExitStatus | None = None
        self.exit_seen_at = time.time()  # shown (the attempt_end event's detected_at)
        self.exit_seen_mono = time.monotonic()  # how long judging took after it: a duration
        self.signalled: list[int] = []  # the PIDs the last SIGTERM went to

    def watch_sidecars(self, sidecars: Callable[[], set[int]]) -> None:
        self.sidecars = sidecars
        self.procs.set_sidecars(sidecars)

    def _follow(self, attempt: Attempt) -> None:
        self.attempt = self.procs = attempt
        if self.sidecars is not None:
            attempt.set_sidecars(self.sidecars)

    def launched(self, attempt: Attempt) -> None:
        self._follow(attempt)
        self.tree_pids = set(attempt.pids)
        self.own_pids = own_pid_set(self.tree_pids)
        self.adopted, self.returncode, self.exit_status = False, None, None
        self.unread_ends = set()

    def adopt(self, number: int, pids: list[Any], groups: dict[int, float | None] | None = None) -> Attempt | None:
        """Take over attempt ``number`` a previous runner started; None when it ended meanwhile.
        ``groups``: the sessions and process groups state.json keeps (``proctree.kept_groups``)."""
        attempt = self.engine.adopt(number, pids, groups)
        self.adopted = True
        if attempt is None:
            self.procs.forget_leader()
            return None
        self._follow(attempt)
        self.pidfd = attempt.wait_fd()
        return attempt

    def ended(self, number: int, rc: int | None, *, orphan_ends: bool = True) -> None:
        """The attempt's leader ended: when it was noticed, and how (``rc`` None: the waiter's
        exit record says). An orphan of the tree the waiter saw end badly after the command, or
        just before it, is the attempt's end (``orphan_ends``: no kill is under way;
        ``lifecycle.attempt_returncode``); the PIDs that outlive the waiter are the attempt's
        (they come back to the runner)."""
        self.exit_seen_at, self.exit_seen_mono = time.time(), time.monotonic()
        self.exit_status = status = self.engine.exit_status(number)
        self.returncode = rc if rc is not None else (status.returncode if status else None)
        if status is not None:
            self.procs.track(status.outliving)
            # a PID the waiter named that another process has now is that one's (the named one
            # ended and its PID was given again); one with no process, or its zombie, is the named
            # one's, ended
            outliving = [pid for pid, named in status.outliving if not reused(pid, named)]
            ended = {pid for pid, _, _ in status.orphan_ends}
            self.tree_pids |= ended | set(outliving)
            self.own_pids |= ended | own_pid_set(outliving)
            self.unread_ends = own_pid_set(outliving) if self.adopted else set()
            if orphan_ends:
                self.returncode = lc.attempt_returncode(self.returncode, [(t, rc) for _, rc, t in status.orphan_ends])

    def outlived_end(self, reaped: Mapping[int, ReapedChild]) -> None:
        """After the leader's exit 0, while its log is read to the end or its tree trains on
        (``lifecycle.Life.lingering``): a process of the tree that ends badly is how the attempt
        ends (the training's own exit, not the launcher's), so the judge classifies that return
        code and not the leader's 0. The first bad end counts; a leader's own failure is kept.
        Only orphans reach the runner's reaping (it is their subreaper): a child reaped by its
        own live parent is never seen here."""
        ends = [(0.0, returncode_from_status(child.status)) for pid, child in reaped.items() if self._ours(pid, child)]
        self.unread_ends -= set(reaped)
        self.returncode = lc.attempt_returncode(self.returncode, ends)  # all after the leader's end

    def _ours(self, pid: int, child: ReapedChild) -> bool:
        """A reaped orphan is the attempt's when its PID is, or its session or process group was
        made by a process of the attempt's tree. The session settles a training forked after the
        waiter last looked at its tree and dead before this runner saw it alive (a launcher's middle
        process, listed as outliving the waiter, that only then forks it): its parent is gone with
        its PID, its session is its maker's. The runner's helpers (a notification command, the
        exporter) lead sessions of their own or share the runner's: never one of the tree's PIDs,
        and a helper alive now is left out by name."""
        if pid in self.tree_pids:
            return True
        sc = self.sidecars() if self.sidecars is not None else ()
        return any(g in self.tree_pids and g not in sc for g in (child.session, child.group))

    def noticed_end(self, reaped: Mapping[int, int], *, live: bool) -> tuple[bool, int | None]:
        """(ended, rc) from the attempt's ``poll``: this turn's reaped children, a batch job's
        state, or a leader that vanished (rc None then: the exit record says). ``live``: the
        lifecycle has a live attempt (an attempt already judged is not polled)."""
        if self.attempt is None or not live:
            return False, None
        polled = self.attempt.poll(reaped)
        return (True, polled.returncode) if isinstance(polled, Ended) else (False, None)

    def job(self) -> JobRecord | None:
        """The batch job as the engine sees it now (None: no batch job)."""
        return self.attempt.view() if self.attempt is not None else None

    def held_reading(self) -> tuple[bool, float, LogMark | None] | None:
        """The batch job's last reading by its scheduler (``SlurmAttempt.held_reading``): held still, when it was
        asked, and the job's log's file and size then; None without a batch job or before any."""
        reading = getattr(self.attempt, "held_reading", None)
        return reading() if reading is not None else None

    def job_news(self, before: Mapping[str, Any] | None) -> tuple[JobRecord | None, dict[str, Any] | None]:
        """The batch job's record when it changed since ``before`` (state.json's), and the
        ``job_submitted`` event's fields once sbatch gave a new id (not for an adopted job, unless its id was
        not in state.json when it was adopted: the runner that submitted it died before sbatch answered, or before
        it wrote state.json, so no event named it; ``found_by_name`` when it was found by its name)."""
        job = self.job()
        if job is None or job == before:
            return None, None
        prev = before or {}
        new_id = bool(job.get("job_id")) and (prev.get("job_id") != job.get("job_id")
                                             or prev.get("attempt") != job.get("attempt"))
        unnamed = self.adopted and prev.get("attempt") == job.get("attempt") and not prev.get("job_id")
        # found by its name (``SlurmAttempt.found_by_name``), not read from the attempt's record: the runner that
        # submitted it may have written the record's id and died before state.json (review R61 D5)
        found = unnamed and bool(getattr(self.attempt, "found_by_name", False))
        submitted = {"attempt": job.get("attempt"), "engine": job.get("engine"), "job_id": job.get("job_id"),
                     "state": job.get("state"), **({"found_by_name": True} if found else {})} \
            if new_id and (unnamed or not self.adopted) else None
        return job, submitted

    def probe(self, *, hidden_too: bool = False, writing: bool = False) -> lc.TreeProbe:
        """What of the tree still lives (``hidden_too``: when nothing tracked does, also the
        processes carrying the run's marker outside it; ``writing``: the log grew lately)."""
        self.refresh()
        alive = self.procs.alive()
        return lc.TreeProbe(alive=alive, hidden=hidden_too and not alive and self.procs.alive(scan_markers=True),
                            writing=writing)

    def end_facts(self) -> dict[str, Any]:
        """What the watch knows of the ended attempt, for the judge (``judge.EndedAttempt``)."""
        return {"returncode": self.returncode, "exit_status": self.exit_status, "exit_seen_at": self.exit_seen_at,
                "end_unread": bool(self.unread_ends),
                "detected_after_s": round(time.monotonic() - self.exit_seen_mono, 3),
                "own_pids": frozenset(self.own_pids), "live_pids": frozenset(live_pid_set()),
                "address_space_seen": self.procs.address_space_seen(),
                "elsewhere_client": self.procs.elsewhere_client(), "programs_run": self.procs.programs_run()}

    def survivors_alert(self, eff: lc.Record) -> dict[str, Any]:
        """The lifecycle's alert about processes that outlive SIGKILL, naming them (or what
        the engine still waits for)."""
        alive = sorted(self.procs.survivors())
        left = alive or self.procs.blocking()
        return {"level": eff.fields["level"], "rule": eff.fields["rule"], "message": f"{eff.fields['message']}: {left}",
                "pids": alive}

    def record_fields(self, eff: lc.Record, attempt: int | None, wall: Callable[[float], float]) -> dict[str, Any]:
        """A lifecycle record's event fields: the kill names the PIDs the SIGTERM went to, the
        attempt's end how the leader ended and when it was noticed, a cooldown its wall-clock
        times (``wall``: a monotonic time as wall-clock time)."""
        f = dict(eff.fields)
        if eff.type == "kill" and f.get("joins"):   # a kill joining one under way: no signal of its own
            return {"reason": f["reason"], "requested_by": f["requested_by"], "joins": f["joins"], "pids": [],
                    "grace_s": f["grace_s"], "attempt": attempt}
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
        self.procs.refresh()
        new = set(self.procs.pids) - self.tree_pids  # a PID's namespaces are read once, while it lives
        self.tree_pids |= new
        self.own_pids |= own_pid_set(new)

    def terminate(self) -> list[int]:
        """SIGTERM to the whole tree (start times checked): the PIDs signalled."""
        self.procs.refresh()
        self.signalled = self.procs.signal(signal.SIGTERM)
        return self.signalled

    def kill(self, *, outside_tree: bool) -> list[int]:
        """SIGKILL to what survives (``outside_tree``: the processes carrying the run's marker
        outside the tracked tree): the PIDs signalled, else those found."""
        if outside_tree:
            targets = self.procs.survivors(scan_markers=True)
        else:
            self.procs.refresh()
            targets = self.procs.survivors()
        return self.procs.signal(signal.SIGKILL, targets) or sorted(targets)
