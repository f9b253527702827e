"""Ending a run's processes when no runner can take the run over.

``moeconsole kill`` normally asks the run's runner, starting a new one if it died, because only
the runner owns the tree. A runner cannot always start: the run's ``recipe.yaml`` is damaged,
``state.json`` says nothing a runner could use, the directory refuses it. The training still runs
and a kill must still get through. Then the kill works from what the run directory and the
process table prove on their own:

- the PIDs ``state.json`` recorded, each only while its start time still matches (a reused PID
  is a stranger);
- every process of this user carrying the run's marker (``MOECONSOLE_RUN_ID``) in its
  environment, which every process of an attempt inherits;
- every live descendant of those (a training that dropped its environment still started them).
- every live process of this user in a session or process group one of those is in, for as long
  as anything holds that ID and no process but its maker has that number (a process the
  training started as it ended, re-parented away from it and without the marker:
  ``proctree.group_members``), those ``state.json`` keeps (``groups``) among them: a worker left
  alone in a session whose makers all ended.

Each gets the checked termination of ``moeconsole.runner.telemetry.kill`` (SIGTERM, grace, SIGKILL; never
PID 1, this process or its ancestors, another user's process). The runner lock is held for the
whole kill, so no runner starts in the middle; the outcome is recorded as ``kill`` and
``kill_done`` events and, when the state file is usable, ``status: killed``.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.rundir import rundir
from moeconsole.runner.process import proctree
from moeconsole.runner.telemetry.kill import KillResult, Termination, kill_checked, start_termination

POLL_S = 0.05


@dataclass
class DirectKill:
    pids: list[int] = field(default_factory=list)   # signalled
    results: list[KillResult] = field(default_factory=list)
    survivors: list[int] = field(default_factory=list)
    seconds: float = 0.0
    refused: str | None = None   # nothing was tried, and why (``not_ours``)

    @property
    def ok(self) -> bool:
        return not self.refused and not self.survivors and all(r.ok for r in self.results)


def targets(run: rundir.RunDir, state: dict, groups: dict[int, float | None] | None = None) -> dict[int, float]:
    """PID -> start time of every process that provably belongs to the run right now. ``groups``:
    the sessions and process groups processes of the run made, each with its maker's start time,
    kept from one look to the next (updated here: those made since added, those no process holds
    any more or whose number a stranger has now dropped)."""
    out: dict[int, float] = {}
    for p in state.get("pids") or []:
        pid, created = p.get("pid"), p.get("start_time")
        if isinstance(pid, int) and isinstance(created, (int, float)) and proctree.same_process(pid, created):
            out[pid] = float(created)
    out.update(proctree.marked_processes(run.run_id, run.path))   # not a copy's, nor its original's
    # a process started by one of the run as it ended (its SIGTERM handler's save or upload) is
    # born after a look and its parent is gone at the next: nothing links it to the run but the
    # session or group its parent was in, which stays the run's while anything is in it and no
    # process but its maker has its number
    # (``proctree.groups_of``, ``proctree.group_members``)
    # the sessions and groups the runner kept in state.json: a worker left alone in one, every
    # process that made it ended, is known by them alone (``identity.kept_groups``)
    groups = proctree.kept_groups(state) if groups is None else groups
    table = proctree.process_table()   # one read of /proc for the groups, their members, the descendants
    for g, made in proctree.groups_of(out, table).items():
        groups.setdefault(g, made)
    members, held = proctree.group_members(groups, table)
    for g in set(groups) - held:
        del groups[g]
    for pid, created in members.items():
        out.setdefault(pid, created)
    # a process started by one proven the run's (a worker of a training that left the run's
    # session and dropped its environment while no runner watched) is the run's: its parent is
    # the proof (``ProcessTree.refresh`` takes the same)
    for pid in proctree.descendants(out, table):
        created = proctree.start_time(pid)
        if created is not None and proctree.same_process(pid, created):   # not a zombie
            out[pid] = created
    return out


def not_ours(run: rundir.RunDir) -> str | None:
    """Why this user must not end the run, or None: the run is another user's (its directory is
    theirs). Root reads every run and could signal every process, but the run's records and
    environment marker are another user's word, and no runner of root's may adopt their run: it is
    theirs to end (their own ``kill`` asks their runner, or starts one of theirs)."""
    owner = rundir.other_owner(run)
    if owner is None:
        return None
    return (f"the run of {owner}, not yours: its processes are not yours to signal; nothing was signalled "
            f"(that user's `moeconsole kill {run.run_id}` ends it)")


def end_run(run: rundir.RunDir, state: dict, *, grace_s: float, why: str, by: str = "cli",
            kill_wait_s: float = 10.0) -> DirectKill:
    """Terminate every process of the run (see the module docstring); blocking, bounded by
    ``grace_s + kill_wait_s`` per round. Raises ``rundir.RunLocked`` when a runner holds the run
    (then ask it instead)."""
    out = DirectKill()
    out.refused = not_ours(run) or rundir.copy_refusal(state, "a kill")   # the original's, by their marker
    if out.refused:
        return out
    lock = rundir.lock_runner(run, wait_s=1.0)
    t0 = time.monotonic()
    try:
        groups = proctree.kept_groups(state)   # the run's sessions and groups, kept while held (``targets``)
        found = targets(run, state, groups)
        if not found:
            # nothing of the run lives: no event, but the state keeps no PID or group for later:
            # a kept session's number goes to a stranger's next (``identity.kept_groups``)
            if state and (state.get("pids") or state.get("groups")):
                try:
                    run.write_state({**state, "pids": [], "groups": []})
                except (OSError, ValueError):
                    pass
            return out
        run.event_if_possible("kill", reason="user", requested_by=by, pids=sorted(found), grace_s=grace_s,
               runner=None, why=why, attempt=state.get("attempt"))
        for _ in range(3):  # a process may fork while its parent is ended: look again
            terms = {pid: start_termination(pid, created, grace_s=grace_s, kill_wait_s=kill_wait_s)
                     for pid, created in found.items() if pid not in out.pids}
            out.pids += sorted(terms)
            while terms:
                for pid, term in list(terms.items()):
                    res = term.step() if isinstance(term, Termination) else term
                    if res is not None:
                        out.results.append(res)
                        del terms[pid]
                if terms:
                    time.sleep(POLL_S)
            found = {pid: c for pid, c in targets(run, state, groups).items() if pid not in out.pids}
            if not found:
                break
        out.survivors = sorted(targets(run, state, groups))
        out.seconds = round(time.monotonic() - t0, 3)
        run.event_if_possible("kill_done", reason="user", seconds=out.seconds,
               escalated=any(r.action == "killed" for r in out.results), survivors=out.survivors,
               runner=None, attempt=state.get("attempt"))
        if state and not out.survivors:
            try:
                status = lc.killed_without_runner()  # the lifecycle decides the status, here as in the runner
                run.write_state({**state, "status": status, "pids": [], "groups": [], "ended_at": time.time(),
                                 "pause_reason": f"killed by user without a runner: {why}"})
                run.event_if_possible("status", status=status, reason=f"killed by user without a runner: {why}",
                       attempt=state.get("attempt"))
            except (OSError, ValueError):
                pass  # the processes are gone; the file says what it said
    finally:
        import os
        os.close(lock)
    return out


ELSEWHERE_KILLED, ELSEWHERE_OVER, ELSEWHERE_REFUSED = "killed", "over", "refused"


def end_elsewhere(run: rundir.RunDir, *, by: str = "cli", say: Callable[[str], Any] | None = None) -> tuple[str, str]:
    """``kill RUN --machine-gone``: the user's word that the machine a live run's runner ran on is gone
    for good (a GPU node dead, a container removed), said from another machine that reads the run
    directory (a shared filesystem). Nothing here can signal or see its processes, so nothing is
    signalled: the run is recorded killed (``kill`` and ``kill_done`` events with no PID, the status),
    as a kill without a runner records it, and a later ``restart`` here resumes it. (outcome, words):
    ``ELSEWHERE_KILLED`` and why; ``ELSEWHERE_OVER`` for a run already over; ``ELSEWHERE_REFUSED``, with
    why and nothing written, for a run that is a copy, another user's, not live, whose
    runner ran on this machine (``rundir.runner_host_elsewhere``; a plain ``kill`` ends it), whose
    state.json is still written (``launch.elsewhere_refusal``'s staleness: that machine lives), or
    whose runner lock is held (a runner here, or that machine's over a filesystem that shares locks), or
    whose state.json cannot be written."""
    from moeconsole.runner.process import launch
    from moeconsole.runner.rundir.snapshot import runner_liveness
    refused = not_ours(run) or rundir.copy_refusal(run.read_state(), "a kill")
    if refused:
        return ELSEWHERE_REFUSED, refused
    try:
        lock = rundir.lock_runner(run, wait_s=1.0)
    except rundir.RunLocked:
        return ELSEWHERE_REFUSED, ("a runner holds the run's lock (one here, or the other machine's over a filesystem "
                                   "that shares locks): its machine is not gone; nothing was done")
    except OSError as exc:
        return ELSEWHERE_REFUSED, f"cannot lock {run.lock}: {exc.strerror or exc}; nothing was done"
    try:
        state = run.read_state()   # under the lock: what no runner changes meanwhile
        status = state.get("status")
        if status not in rundir.LIVE:
            return ELSEWHERE_OVER, f"already {status}; nothing to kill"
        host = rundir.runner_host_elsewhere(state)
        if host is None:
            return ELSEWHERE_REFUSED, ("--machine-gone is for a run whose runner ran on another machine; this one's ran here: "
                           f"`moeconsole kill {rundir.command_ref(run.path.parent, run.run_id)[1]}` ends it; "
                           "nothing was done")
        _alive, age, stale = runner_liveness(state, time.time())
        if not stale:
            return ELSEWHERE_REFUSED, (launch.elsewhere_refusal(run, state, "a kill") or "") + \
                " (--machine-gone: its runner still writes state.json, so its machine is not gone)"
        written = launch.still_written_elsewhere(run, state, say=say)   # silent by the stamps: by a watch too
        if written is not None:
            return ELSEWHERE_REFUSED, written + " (--machine-gone: its machine is not gone)"
        shown = rundir.printable(host)
        why = (f"its runner's machine {shown} given up for gone by the user on {rundir.printable(rundir.hostname())} "
               f"(state.json silent {age or 0:.0f} s); nothing was signalled there")
        attempt = state.get("attempt")
        status = lc.killed_without_runner()  # the lifecycle decides the status, here as in the runner
        try:   # the state first: where it cannot be written, nothing is
            run.write_state({**state, "status": status, "pids": [], "groups": [], "held": None,
                             "runner": rundir.client_record(state.get("runner")),   # that machine's runner, back, stands down
                             **rundir.end_stamp(state), "pause_reason": f"killed by user without a runner: {why}"})
        except (OSError, ValueError) as exc:
            return ELSEWHERE_REFUSED, f"state.json cannot be written ({getattr(exc, 'strerror', None) or exc}); nothing was done"
        run.event_if_possible("kill", reason="user", requested_by=by, pids=[], grace_s=0.0, runner=None, why=why,
                              machine_gone=host, attempt=attempt)
        run.event_if_possible("kill_done", reason="user", seconds=0.0, escalated=False, survivors=[], runner=None,
                              machine_gone=host, attempt=attempt)
        run.event_if_possible("status", status=status, reason=f"killed by user without a runner: {why}",
                              attempt=attempt)
        return ELSEWHERE_KILLED, why + _job_left(state)
    finally:
        import os
        os.close(lock)


def _job_left(state: dict) -> str:
    """What ``end_elsewhere`` leaves running where the run's attempt is a batch job (``state.json``'s
    ``job``: a Slurm job outlives the machine its runner ran on, on the cluster's nodes): its id and the
    command that ends it there, for the user to type where the cluster answers ("" for a local run)."""
    job = state.get("job")
    if not isinstance(job, dict) or not job.get("job_id"):
        return ""
    engine, job_id = job.get("engine") or "batch", rundir.printable(str(job["job_id"]))
    ends = "`scancel " + job_id + "` on its cluster ends it" if engine == "slurm" else "its scheduler ends it"
    return f"; its {engine} job {job_id} was not cancelled from here ({ends})"


def end_runner(run: rundir.RunDir, state: dict, *, wait_s: float = 10.0) -> str | None:
    """The run's runner holds the run but does not answer (stopped with SIGSTOP, its socket
    gone, stuck): it is ended with SIGKILL, after the checks of ``moeconsole.runner.telemetry.kill`` (its
    recorded PID and start time, this user), so that no request it still holds is carried out
    later. None once no runner holds the run's lock (``end_run`` can take it), else why not."""
    r = state.get("runner") or {}
    pid, created = r.get("pid"), r.get("start_time")
    if isinstance(pid, int) and isinstance(created, (int, float)) and rundir.runner_here(r):
        res = kill_checked(pid, float(created), grace_s=0.0, kill_wait_s=wait_s)
        if not res.ok:
            return res.reason
    deadline = time.monotonic() + wait_s
    while rundir.runner_locked(run):
        if time.monotonic() > deadline:
            return "another process holds the run's runner lock"
        time.sleep(POLL_S)
    return None


