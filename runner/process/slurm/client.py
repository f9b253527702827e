"""Talking to Slurm without ever waiting on it in the runner's loop.

Every Slurm command (sbatch, squeue, sacct, scontrol, scancel) runs as a child process whose
output goes to an unlinked temporary file; the caller polls. A controller that hangs costs a
child that is killed at its timeout, never a frozen runner: the loop keeps reading the log and
answering the control socket.
"""
from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from moeconsole.runner.core.held import LogMark
from moeconsole.runner.core import sbatch_words
from moeconsole.runner.core.units import clip
from moeconsole.runner.process.slurm.text import (SBATCH, ACCOUNTING_DISABLED, is_command, ENDED_UNKNOWN, INVALID_JOB_ID, SACCT_FIELDS,
                                                  SQUEUE_FORMAT, slurm_tool_env,
                                                  UNKNOWN_EXIT, JobState, parse_sacct, parse_sbatch_parsable,
                                                  parse_scontrol_job, parse_squeue)

COMMAND_TIMEOUT_S = 30.0

# Commands still running, by PID: a runner reaps every child itself (``waitpid(-1)``, it is a
# subreaper), so it hands their exit statuses back here with ``deliver``.
_RUNNING: dict[int, "AsyncCommand"] = {}


def deliver_reaped(reaped: Mapping[int, int]) -> None:
    """Give each of our commands the raw wait status a ``waitpid(-1)`` loop collected for it
    (without this, ``Popen.poll`` would find the child gone and report exit 0)."""
    for pid, status in reaped.items():
        cmd = _RUNNING.pop(pid, None)
        if cmd is not None:
            cmd.reaped_status = status


@dataclass(frozen=True)
class Finished:
    argv: tuple[str, ...]
    returncode: int | None          # None: killed at its timeout
    out: str
    err: str
    seconds: float


class AsyncCommand:
    """One command in a child process; ``poll()`` is None until it has finished (or timed out). Its environment is
    ``env`` (the runner's own when None) without the user's Slurm filter and format variables (``slurm_tool_env``);
    sbatch's is ``sbatch_env``'s as given (it is the job's environment too)."""

    def __init__(self, argv: Sequence[str], *, timeout_s: float = COMMAND_TIMEOUT_S,
                 env: dict[str, str] | None = None) -> None:
        self.argv = tuple(argv)
        self.timeout_s = timeout_s
        self._out = tempfile.TemporaryFile()
        self._err = tempfile.TemporaryFile()
        self.started = time.monotonic()
        if not self.argv or not is_command(self.argv[0], SBATCH):   # given by any path too (``is_command``)
            env = slurm_tool_env(os.environ if env is None else env)
        self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._out, stderr=self._err,
                                     close_fds=True, env=env, start_new_session=True)
        self.result: Finished | None = None
        self.reaped_status: int | None = None
        _RUNNING[self.proc.pid] = self

    def poll(self) -> Finished | None:
        if self.result is not None:
            return self.result
        rc: int | None
        if self.reaped_status is not None:
            rc = self.proc.returncode = os.waitstatus_to_exitcode(self.reaped_status)
        else:
            rc = self.proc.poll()
        if rc is None:
            if time.monotonic() - self.started < self.timeout_s:
                return None
            self.kill()
            rc = None
        else:
            rc = int(rc)
        _RUNNING.pop(self.proc.pid, None)
        self._out.seek(0)
        self._err.seek(0)
        out = self._out.read().decode(errors="replace")
        err = self._err.read().decode(errors="replace")
        self._out.close()
        self._err.close()
        self.result = Finished(self.argv, rc, out, err, round(time.monotonic() - self.started, 3))
        return self.result

    def wait(self, deadline_s: float = COMMAND_TIMEOUT_S + 5) -> Finished:
        """For tests and command-line tools (never the runner's loop)."""
        end = time.monotonic() + deadline_s
        while (res := self.poll()) is None:
            if time.monotonic() > end:
                raise TimeoutError(" ".join(self.argv))
            time.sleep(0.02)
        return res

    def kill(self) -> None:
        if self.reaped_status is None and self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=5)
            except (ChildProcessError, subprocess.TimeoutExpired):
                pass
        _RUNNING.pop(self.proc.pid, None)


# The Slurm client commands a run needs where the runner runs: the one list (``why_unavailable``, lint's
# ``slurm_missing``).
REQUIRED_COMMANDS = (SBATCH, "squeue", "scancel", "scontrol")


def missing_commands() -> list[str]:
    """The required Slurm commands not on PATH, in ``REQUIRED_COMMANDS``' order."""
    return [c for c in REQUIRED_COMMANDS if shutil.which(c) is None]


def why_unavailable() -> str | None:
    """None when the Slurm client commands are on PATH, else why not."""
    missing = missing_commands()
    return f"Slurm commands not found: {', '.join(missing)}" if missing else None


def why_failed(res: Finished, kind: str) -> str:
    """One line on why a Slurm command gave no answer: the LAST line of its stderr, where Slurm
    puts the deciding error after any lines of context (munge down, squeue prints "If munged is
    up, restart with --num-threads=10" and "Munge encode failed ..." before "slurm_load_jobs
    error: Protocol authentication error", src/common/slurm_protocol_api.c + src/squeue/
    squeue.c's ``slurm_perror``), or that it timed out / its exit code."""
    lines = [x for x in res.err.strip().splitlines() if x.strip()]
    if lines:
        return clip(lines[-1].strip(), 300)
    if res.returncode is None:
        return f"{kind} did not answer in {res.seconds:.0f}s"
    return f"{kind} exit {res.returncode}"


class Submission:
    """``sbatch --parsable SCRIPT`` in the background; ``poll()`` gives the job id or raises."""

    def __init__(self, script: str, *, env: dict[str, str] | None = None, timeout_s: float = COMMAND_TIMEOUT_S,
                 spawn: Callable[..., AsyncCommand] = AsyncCommand) -> None:
        self.cmd = spawn([SBATCH, "--parsable", script], timeout_s=timeout_s, env=env)

    def poll(self) -> str | None:
        res = self.cmd.poll()
        if res is None:
            return None
        if res.returncode is None:
            raise SubmitError(f"sbatch did not answer in {res.seconds:.0f}s", transient=True)
        if res.returncode != 0:
            why = why_failed(res, SBATCH)
            # all of sbatch's lines: the limit slurmctld named comes on the line before the refusal (review R40)
            raise SubmitError(why, transient=sbatch_words.transient(res.err or why))
        try:
            return parse_sbatch_parsable(res.out)
        except ValueError as exc:
            raise SubmitError(str(exc), transient=False) from None

    def kill(self) -> None:
        self.cmd.kill()


class NameSearch:
    """The job named ``name`` looked for in the background, for an attempt whose sbatch answer no runner saw (the
    runner died while sbatch ran): ``poll()`` gives it once Slurm names it (its id and state as the answer says,
    ``source`` the command), None while nobody could say, and raises ``JobNotFound`` once both the controller and
    accounting answered without it.

    Both are asked at once and neither is ever waited for: squeue (``--name``, every queued or running job) needs
    the controller and, with it away, retries the connection each second for ``MessageTimeout`` (10 s by default)
    before it fails (src/common/slurm_protocol_api.c ``_open_controller`` l.781-788, SchedMD/slurm 284c3b95f0;
    measured on 22.05: squeue 9 s, scontrol 18 s); sacct asks slurmdbd, not the controller (src/sacct/sacct.c
    l.386 ``slurmdb_jobs_get``), so it names a job whose row reached accounting while the controller is away
    (the row is sent after the submission, by the controller's own agent: a job seconds old may have none yet).
    Asked again, no sooner than ``interval_s`` after the last question, while neither could answer."""

    def __init__(self, name: str, *, interval_s: float = 2.0, timeout_s: float = COMMAND_TIMEOUT_S,
                 spawn: Callable[..., AsyncCommand] = AsyncCommand,
                 in_flight: Callable[[], str | None] | None = None) -> None:
        self.name = name
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.spawn = spawn
        # why the job may still come: the sbatch that submits it may still be retrying (``SlurmEngine.sbatch_in_flight``);
        # while it says so, a definite miss is no answer and Slurm is asked again
        self.in_flight = in_flight
        self.waiting: str | None = None
        self.last_error: str | None = None   # why the last round gave no answer (Slurm's own line)
        self._asked: dict[str, AsyncCommand] = {}
        self._said: dict[str, Finished] = {}
        self._asked_at = -math.inf
        self._ask()

    def _ask(self) -> None:
        self._asked_at = time.monotonic()
        self._said = {}
        self._asked = {
            # every job of that name in every state and partition: without ``-a`` squeue does not ask for SHOW_ALL
            # (src/squeue/squeue.c l.320-321) and slurmctld leaves out a job whose partitions are all Hidden
            # (job_mgr.c ``_pack_job`` l.10306-10309); ``-t all`` lists a job ended and still in memory too
            "squeue": self.spawn(["squeue", "-h", "-a", "-t", "all", "--name", self.name, "-o", "%i|%T"],
                                 timeout_s=self.timeout_s),
            "sacct": self.spawn(["sacct", "-n", "-P", "-X", "--name", self.name, "-o", "JobID,State",
                                 "-S", "now-7days"], timeout_s=self.timeout_s)}

    def poll(self) -> JobState | None:
        for kind, cmd in list(self._asked.items()):
            res = cmd.poll()
            if res is None:
                continue
            del self._asked[kind]
            self._said[kind] = res
            # "ID|STATE" (sacct's "CANCELLED by 0": its first word); the newest job of that name last
            cells = [line.split("|") for line in res.out.splitlines() if line.count("|") == 1]
            rows = [(i.strip(), st.split()[0]) for i, st in cells if i.strip().isdigit() and st.split()]
            if res.returncode == 0 and rows:
                self.kill()
                self.last_error = None
                job_id, state = rows[-1]
                return JobState(job_id, state, source=kind)
        if self._asked:
            return None
        squeue, sacct = self._said["squeue"], self._said["sacct"]
        # the controller lists every queued and running job; accounting every one it was sent, or it is off
        # ("Slurm accounting storage is disabled", src/sacct/options.c): both without it, there is none
        accounting_says = sacct.returncode == 0 or ACCOUNTING_DISABLED in sacct.err
        if squeue.returncode == 0 and accounting_says:
            self.waiting = self.in_flight() if self.in_flight is not None else None
            if self.waiting is None:
                raise JobNotFound(f"Slurm has no job named {self.name}")
            self.last_error = None
        else:
            self.last_error = why_failed(squeue if squeue.returncode != 0 else sacct,
                                         "squeue" if squeue.returncode != 0 else "sacct")
        if time.monotonic() - self._asked_at >= self.interval_s:
            self._ask()
        return None

    def kill(self) -> None:
        for cmd in self._asked.values():
            cmd.kill()
        self._asked = {}


class JobNotFound(Exception):
    """Neither the controller nor accounting knows a job of that name (``NameSearch``)."""


class SubmitError(Exception):
    """sbatch did not give a job id; ``transient`` when Slurm could not take the job now (try again
    later: no controller answered, one stayed busy through sbatch's own retries, or a limit on queued
    jobs was reached; ``core.sbatch_words.transient``) rather than refusing it (a bad partition,
    account, option)."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


class JobFollower:
    """The state of one job, asked of Slurm at most every ``interval_s``: squeue while Slurm
    lists the job, then sacct (accounting) or scontrol (without it) for the final state.

    Accounting is optional, never a reason to wait forever: when sacct fails (slurmdbd cannot
    reach its database, a common outage) or has no row yet, the controller is asked next
    (scontrol, which keeps an ended job for MinJobAge); when the controller does not know the id
    either, the job has ended and how is unknown (``ENDED``, "exit code unknown: accounting
    unavailable").

    While squeue cannot reach the controller the state shown stays as last read, but every
    ``SACCT_EVERY`` failed periods accounting is asked too and a FINAL row is taken (a job that
    ended while the controller stays away is not shown running forever; a row that is not final
    changes nothing: sacct has no pending reason). Once squeue said the id is gone, a row that
    still says RUNNING (a runaway row) is checked with the controller, whose "Invalid job id"
    ends it. Every question waits ``interval_s`` except the next one of a chain (squeue -> sacct
    -> scontrol)."""

    SACCT_EVERY = 5

    def __init__(self, job_id: str, *, interval_s: float = 2.0, accounting: bool = True,
                 spawn: Callable[..., AsyncCommand] = AsyncCommand, mark: Callable[[], LogMark | None] | None = None) -> None:
        self.job_id = job_id
        self.mark = mark
        self.interval_s = interval_s
        self.accounting = accounting
        self.spawn = spawn
        self.state: JobState | None = None
        self.pending_cmd: AsyncCommand | None = None
        self.pending_kind = ""
        self.next_at = 0.0
        self.left_queue = False
        self.ask_controller = False  # sacct failed or had no row: scontrol next
        self.last_error: str | None = None
        self.gone = False            # squeue said "Invalid job id specified"
        self.squeue_failures = 0     # consecutive periods squeue could not reach the controller
        self.peek = False            # ask accounting for a final row next (squeue keeps failing)
        self.asked_at = -math.inf    # monotonic: when the command under way was started
        self.said_at = -math.inf     # monotonic: when the command whose answer ``state`` is was started
        # ``mark()`` (the job's log's file and size, ``held.LogMark``) taken just before the command under way was started, and as it was
        # for the answer ``state`` is: what the job had written when Slurm was asked (no clock compared)
        self.asked_mark: LogMark | None = None
        self.said_mark: LogMark | None = None

    def poll(self, now: float | None = None) -> JobState | None:
        now = time.monotonic() if now is None else now
        if self.pending_cmd is not None:
            res = self.pending_cmd.poll()
            if res is None:
                return self.state
            kind, was_left, was_controller = self.pending_kind, self.left_queue, self.ask_controller
            before = self.state
            self._read(res)
            if self.state is not before:
                self.said_at, self.said_mark = self.asked_at, self.asked_mark
            self.pending_cmd = None
            # The next question of a chain at once (squeue said gone -> sacct; sacct had nothing
            # -> scontrol); a repeated question waits the interval.
            chained = ((kind == "squeue" and self.left_queue and not was_left)
                       or (kind == "sacct" and self.ask_controller and not was_controller))
            self.next_at = now + (0.0 if chained else self.interval_s)
        if self.state is not None and self.state.final:
            return self.state
        if now >= self.next_at:
            self._ask()
        return self.state

    def _ask(self) -> None:
        j = self.job_id
        if not self.left_queue and self.peek:
            self.peek = False
            self.pending_kind, argv = "sacct-final", ["sacct", "-n", "-P", "-X", "-j", j, "-o", SACCT_FIELDS]
        elif not self.left_queue:
            self.pending_kind, argv = "squeue", ["squeue", "-h", "-j", j, "-o", SQUEUE_FORMAT]
        elif self.accounting and not self.ask_controller:
            self.pending_kind, argv = "sacct", ["sacct", "-n", "-P", "-X", "-j", j, "-o", SACCT_FIELDS]
        else:
            self.pending_kind, argv = "scontrol", ["scontrol", "show", "job", "-o", j]
        self.asked_mark = self.mark() if self.mark is not None else None   # before the question: never after it
        self.asked_at = time.monotonic()
        self.pending_cmd = self.spawn(argv)

    def _read(self, res: Finished) -> None:
        if self.pending_kind == "squeue" and res.returncode != 0 and INVALID_JOB_ID not in res.err:
            # The controller did not answer (slurmctld restarting or overloaded: squeue says
            # "Unable to contact slurm controller", or was killed at its timeout). That is not
            # the job leaving the queue: its state and pending reason stay as last read (sacct
            # has no reason column, so asking it would lose "JobHeldAdmin" for good) and squeue
            # is asked again next period. Only "Invalid job id specified" (the id purged
            # MinJobAge after it ended, slurm_strerror(ESLURM_INVALID_JOB_ID)) means it is gone.
            self.last_error = why_failed(res, "squeue")
            self.squeue_failures += 1
            self.peek = self.accounting and self.squeue_failures % self.SACCT_EVERY == 0
            return
        if self.pending_kind == "sacct-final":
            # squeue keeps failing: only accounting's FINAL word is taken (see the class doc);
            # anything else leaves the state, its reason and the squeue error as they were.
            if res.returncode == 0:
                st = parse_sacct(res.out, self.job_id)
                if st is not None and st.final:
                    self.state, self.left_queue, self.last_error = st, True, None
            elif ACCOUNTING_DISABLED in res.err:
                self.accounting = False
            return
        if res.returncode != 0 and self.pending_kind != "squeue":
            self.last_error = why_failed(res, self.pending_kind)
            if self.pending_kind == "sacct":
                if ACCOUNTING_DISABLED in res.err:
                    self.accounting = False
                self.ask_controller = True  # accounting unavailable now: the controller may know
            elif INVALID_JOB_ID in res.err:
                # Neither listed by squeue nor known to the controller: it has ended.
                nodes = self.state.nodes if self.state is not None else ()
                self.state = JobState(self.job_id, ENDED_UNKNOWN, UNKNOWN_EXIT, None, None, nodes, "scontrol")
            else:
                self.ask_controller = False  # the controller did not answer: accounting again
            return
        if self.pending_kind == "squeue":
            self.squeue_failures = 0
            self.gone = res.returncode != 0  # only "Invalid job id specified" gets here failed
            st = parse_squeue(res.out, self.job_id) if res.returncode == 0 else None
            if st is None or st.final:
                # Not (or no longer) listed, or listed as ended without its exit code: the
                # final word comes from sacct/scontrol. squeue also fails for a forgotten id
                # (the only failure that gets here: see above).
                self.left_queue = True
                if st is not None and self.state is not None:
                    self.state = JobState(st.job_id, "COMPLETING", None, None, None, st.nodes or self.state.nodes,
                                          "squeue")
                return
            self.state = st
        elif self.pending_kind == "sacct":
            st = parse_sacct(res.out, self.job_id)
            if st is not None:
                self.state = st
            # no row yet: the controller may know; a row still unfinished for an id squeue
            # said is gone (a runaway row): the controller's "Invalid job id" decides
            self.ask_controller = st is None or (self.gone and not st.final)
        else:
            st = parse_scontrol_job(res.out)
            if st is not None:
                self.state = st
            self.ask_controller = False
        self.last_error = None

    def hurry(self) -> None:
        """Ask again at once (after a cancel: its effect should show without a poll period)."""
        self.next_at = 0.0

    def close(self) -> None:
        if self.pending_cmd is not None:
            self.pending_cmd.kill()
            self.pending_cmd = None


def cancel(job_id: str, *, signal_name: str | None = None,
           spawn: Callable[..., AsyncCommand] = AsyncCommand) -> AsyncCommand:
    """``scancel --signal=TERM JOB`` reaches the job's srun steps (the training: the batch script
    ``exec``s srun); plain ``scancel JOB`` ends the job. Returns the running command to poll."""
    argv = ["scancel"] + ([f"--signal={signal_name}"] if signal_name else []) + [job_id]
    return spawn(argv)
