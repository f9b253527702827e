"""The Slurm engine: each attempt is one batch job, followed through Slurm's own commands.

The runner writes the batch script (every recipe value quoted, the training under ``srun`` so
``scancel --signal=TERM`` reaches it), submits it with ``sbatch --parsable`` and keeps the job id
in ``jobs/attempt-N.json``. From then on the job is only ever seen through Slurm: ``squeue`` while
it is queued or running, ``sacct`` (or ``scontrol`` without accounting) for how it ended. Those
commands run as child processes the loop polls (``runner.slurm.client``): a slow controller
never stops the runner from reading the log or answering ``status``.

The job's processes belong to slurmstepd, possibly on other hosts, so the attempt has no PIDs
of its own here: it is alive while Slurm lists the job unfinished. On this host the run's
environment marker still finds any process of the run that outlives the job.
"""
from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from runner import jsonio, proctree, rundir
from runner.attempt import ExitStatus, LaunchSpec
from runner.slurm import client
from runner.slurm.settings import SlurmSettings
from runner.slurm.text import BatchSpec, JobState, batch_script
from runner.state import JobRecord, TrackedPid

JOB_SCHEMA = 1


def returncode(js: JobState) -> int | None:
    """Popen's convention from Slurm's ``code:signal``: -N when a signal ended it."""
    if js.exit_signal:
        return -js.exit_signal
    return js.exit_code


def _record_of(js: JobState, base: JobRecord) -> JobRecord:
    rec = JobRecord(**base)
    rec["state"], rec["reason"], rec["source"] = js.state, js.reason, js.source
    rec["nodes"] = list(js.nodes) or list(base.get("nodes") or [])
    if js.final:
        rec["exit_code"], rec["signal"] = js.exit_code, js.exit_signal
        rec["ended_at"] = base.get("ended_at") or time.time()
    return rec


class JobTree(proctree.ProcessTree):
    """The attempt as Slurm sees it: alive while the job is unfinished. No local PIDs are
    tracked (``procs`` stays empty); ``survivors(scan_markers=True)`` still finds any process
    on this host that carries the run's marker, and those are signalled by PID + start time."""

    def __init__(self, run_id: str, follower: client.JobFollower) -> None:
        super().__init__(run_id)
        self.adopted = True  # never our child: nothing to reap
        self.follower = follower
        self.job_id = follower.job_id
        self.cancels: list[client.AsyncCommand] = []

    @property
    def job(self) -> JobState | None:
        return self.follower.state

    def job_alive(self) -> bool:
        st = self.follower.state
        return st is None or not st.final

    def refresh(self) -> None:
        self.follower.poll()
        self.cancels = [c for c in self.cancels if c.poll() is None]

    def survivors(self, *, scan_markers: bool = False) -> dict[int, float]:
        return proctree.marked_processes(self.run_id) if scan_markers else {}

    def alive(self, *, scan_markers: bool = False) -> bool:
        return self.job_alive() or bool(self.survivors(scan_markers=scan_markers))

    def blocking(self) -> list[str]:
        if not self.job_alive():
            return []
        st = self.follower.state
        return [f"Slurm job {self.job_id} still {st.state if st else 'known to Slurm'}"]

    def signal(self, sig: int, procs: dict[int, float] | None = None) -> list[int]:
        """SIGTERM: ``scancel --signal=TERM`` (reaches the srun step; a job still pending is
        simply cancelled). Anything else: plain ``scancel``, which ends the job. Local marked
        processes passed in ``procs`` get the signal themselves."""
        sent = super().signal(sig, procs) if procs else []
        if self.job_alive():
            st = self.follower.state
            graceful = sig == signal.SIGTERM and st is not None and not st.pending
            self.cancels.append(client.cancel(self.job_id, signal_name="TERM" if graceful else None))
            self.follower.hurry()
        return sent


class SlurmAttempt:
    """One attempt = one batch job."""
    polled = True  # the end is learned by asking Slurm, not from a descriptor

    def __init__(self, run: rundir.RunDir, record: JobRecord, follower: client.JobFollower,
                 adopted: bool) -> None:
        self.run = run
        self.number = int(record["attempt"])
        self.job_id = record["job_id"]
        self.record = record
        self.adopted = adopted
        self.proc = None
        self.tree = JobTree(run.run_id, follower)

    def wait_fd(self) -> int | None:
        return None

    @property
    def pending(self) -> bool:
        """Queued, not yet running: no output is expected, so no hang can be declared."""
        st = self.tree.job
        return st is None or st.pending

    def view(self) -> JobRecord:
        st = self.tree.job
        return _record_of(st, self.record) if st is not None else self.record

    def poll(self, reaped: Mapping[int, int]) -> int | None | bool:
        self.tree.refresh()
        st = self.tree.job
        if st is None or not st.final:
            return False
        if self.record.get("ended_at") is None:
            self.record = _record_of(st, self.record)
            jsonio.atomic_write_json(self.run.job_record(self.number), self.record)
        return returncode(st)

    def signal(self, sig: int, pids: Mapping[int, float] | None = None) -> list[int]:
        return self.tree.signal(sig, dict(pids) if pids is not None else None)

    def survivors(self, *, scan_markers: bool = False) -> dict[int, float]:
        return self.tree.survivors(scan_markers=scan_markers)

    def tracked(self) -> list[TrackedPid]:
        return []


def moeconsole_command() -> str | None:
    """The installed ``moeconsole`` beside this Python (for the per-node agents)."""
    path = Path(sys.executable).parent / "moeconsole"
    return str(path) if os.access(path, os.X_OK) else None


class SlurmEngine:
    name = "slurm"

    def __init__(self, run: rundir.RunDir, recipe: Mapping[str, Any], *,
                 command_timeout_s: float = client.COMMAND_TIMEOUT_S) -> None:
        self.run = run
        self.settings = SlurmSettings.from_recipe(recipe.get("slurm"))
        self.job_name = f"moeconsole-{recipe.get('name') or 'run'}"
        self.timeout_s = command_timeout_s
        self._probed: dict[str, JobState | None] = {}

    # -- helpers ---------------------------------------------------------------------
    def _read_record(self, number: int) -> JobRecord | None:
        rec = jsonio.read_json(self.run.job_record(number), default=None) if number else None
        if not isinstance(rec, dict) or not isinstance(rec.get("job_id"), str):
            return None
        return JobRecord(**rec)

    def _follower(self, job_id: str) -> client.JobFollower:
        return client.JobFollower(job_id, interval_s=self.settings.poll_s)

    def query(self, job_id: str) -> JobState | None:
        """Slurm's answer now (blocking, bounded): for a runner starting up, never its loop."""
        f = self._follower(job_id)
        deadline = time.monotonic() + 3 * (self.timeout_s + 5)
        while time.monotonic() < deadline:
            f.poll()
            if f.pending_cmd is not None:
                f.pending_cmd.wait(self.timeout_s + 5)
                f.poll()
            if f.state is not None and (f.state.final or not f.left_queue):
                break
            if f.left_queue and f.last_error and f.state is None and f.pending_kind == "scontrol":
                break
            f.hurry()
        f.close()
        return f.state

    # -- the engine interface --------------------------------------------------------
    def batch_spec(self, spec: LaunchSpec) -> BatchSpec:
        s = self.settings
        background: list[list[str]] = []
        if s.agents:
            cmd = moeconsole_command()
            if cmd:
                background.append(["--overlap", f"--nodes={s.nodes}", "--ntasks-per-node=1",
                                   "--kill-on-bad-exit=0", cmd, "agent", str(self.run.path)])
        return BatchSpec(job_name=self.job_name, argv=list(spec.argv), output=str(self.run.log),
                         workdir=spec.cwd, nodes=s.nodes, gpus_per_node=s.gpus_per_node,
                         ntasks_per_node=s.ntasks_per_node, time_limit=s.time, partition=s.partition,
                         account=s.account, extra_sbatch=s.sbatch, srun_extra=s.srun,
                         background_steps=background)

    def start(self, spec: LaunchSpec, log_fd: int) -> SlurmAttempt:
        """Write the batch script, submit it; the environment reaches the job through sbatch's
        own (``--export=ALL``), so no value of it is written to any file."""
        why = client.available()
        if why:
            raise OSError(why)
        self.run.jobs.mkdir(mode=rundir.DIR_MODE, exist_ok=True)
        try:
            text = batch_script(self.batch_spec(spec))
        except ValueError as exc:
            raise OSError(f"batch script: {exc}") from None
        script = self.run.jobs / f"attempt-{spec.attempt}.sh"
        jsonio.atomic_write_bytes(script, text.encode())
        self.run.job_record(spec.attempt).unlink(missing_ok=True)
        res = client.AsyncCommand(["sbatch", "--parsable", str(script)], timeout_s=self.timeout_s,
                                  env=dict(spec.env)).wait(self.timeout_s + 5)
        if res.returncode != 0:
            err = res.err.strip().splitlines()
            raise OSError(f"sbatch failed: {err[-1] if err else f'exit {res.returncode}'}"
                          if res.returncode is not None else f"sbatch did not answer in {res.seconds:.0f}s")
        try:
            job_id = client.parse_sbatch_parsable(res.out)
        except ValueError as exc:
            raise OSError(str(exc)) from None
        record = JobRecord(v=JOB_SCHEMA, engine=self.name, attempt=spec.attempt, job_id=job_id,
                           submitted_at=time.time(), state="PENDING", reason=None, nodes=[], exit_code=None,
                           signal=None, source="sbatch", ended_at=None)
        jsonio.atomic_write_json(self.run.job_record(spec.attempt), record)
        follower = self._follower(job_id)
        follower.state = JobState(job_id, "PENDING", None, source="sbatch")
        return SlurmAttempt(self.run, record, follower, adopted=False)

    def attempt_alive(self, number: int, pids: Sequence[TrackedPid]) -> bool:
        rec = self._read_record(number)
        if rec is None:
            return False
        if rec.get("ended_at") is not None:
            return False
        st = self._probed[rec["job_id"]] = self.query(rec["job_id"])
        return st is not None and not st.final

    def adopt(self, number: int, pids: Sequence[TrackedPid]) -> SlurmAttempt | None:
        rec = self._read_record(number)
        if rec is None:
            return None
        st = self._probed.pop(rec["job_id"], None) or self.query(rec["job_id"])
        if st is None or st.final:
            return None
        follower = self._follower(rec["job_id"])
        follower.state = st
        follower.left_queue = st.source != "squeue"
        return SlurmAttempt(self.run, rec, follower, adopted=True)

    def exit_status(self, number: int) -> ExitStatus | None:
        rec = self._read_record(number)
        if rec is None:
            return None
        if rec.get("ended_at") is None:
            st = self.query(rec["job_id"])
            if st is None or not st.final:
                return None
            rec = _record_of(st, rec)
            jsonio.atomic_write_json(self.run.job_record(number), rec)
        state = rec.get("state")
        code, sig = rec.get("exit_code"), rec.get("signal")
        rc = -sig if sig else code
        return ExitStatus(rc, None, rec.get("ended_at"), job_state=state)
