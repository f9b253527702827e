"""Slurm's command output, parsed; the batch script, written.

Slurm prints job state three ways and they disagree on details (measured on Slurm 22.05):
``squeue`` knows only pending/running jobs; ``scontrol show job`` knows a job until MinJobAge
after it ends and gives ``ExitCode=143:0`` for a batch script that died of SIGTERM; ``sacct``
knows it forever (with accounting) and gives ``15:0`` for the same job. So the state and exit
are read from whichever answers, and the source is kept beside the value.
"""
from __future__ import annotations

import os
import re
import shlex
import signal
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from moeconsole.runner.core.units import clip

# Job states as Slurm names them (squeue %T / sacct State / scontrol JobState).
PENDING_STATES = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD",
                            "SUSPENDED", "STOPPED", "RESIZING", "SIGNALING", "STAGE_OUT"})
RUNNING_STATES = frozenset({"RUNNING", "COMPLETING"})
# A job whose processes Slurm holds still, its allocation kept (squeue(1) "JOB STATE CODES":
# SUSPENDED "Job has an allocation, but execution has been suspended", by `scontrol suspend` or
# PreemptMode=SUSPEND; STOPPED "execution has been stopped with SIGSTOP signal"): its training
# trains no step meanwhile (``moeconsole.runner.core.held``).
HELD_STATES = frozenset({"SUSPENDED", "STOPPED"})
# A job that ran and is queued again: Slurm requeued it (`scontrol requeue` or `requeuehold` once
# an admin turned its requeue flag on behind --no-requeue, `scontrol update JobId=N Requeue=1`;
# measured on Slurm 22.05: PENDING with reason BeginTime, Restarts=1, and a hold's JobHeldUser or
# JobHeldAdmin). The same script would start again with its old resume point.
REQUEUED_STATES = frozenset({"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED"})
# Ours, the record's word for such a job (Slurm's state names): ended by the runner, which cancels
# it and resubmits from the newest verified checkpoint; REQUEUE_HOLD when it was requeued held.
REQUEUED, REQUEUE_HOLD = "REQUEUED", "REQUEUE_HOLD"
# A job held (job_state_reason.c's words), and what squeue's %r says of one requeued held: the
# controller's state_desc, set with WAIT_HELD_USER and priority 0 in ``_job_requeue_op``
# (src/slurmctld/job_mgr.c l.18070-18105, SchedMD/slurm 284c3b95f0): `scontrol requeuehold`
# (measured on 22.05), a special exit, and a launch that failed (its prolog: requeued even under
# our --no-requeue with PrologFlags=ForceRequeueOnFail, l.17888-17896; held unless
# SchedulerParameters=nohold_on_prolog_fail) or whose user environment could not be read.
# The two whose requeue never ran the job's script (``flags & JOB_LAUNCH_FAILED``, l.18086-18104): its
# resume point is still right, so an adoption does not count that requeue (review R45 D4).
LAUNCH_FAILED_REASONS = frozenset({"launch failed requeued held", "user env retrieval failed requeued held"})
HOLD_REASONS = frozenset({"JobHeldUser", "JobHeldAdmin", "job requeued in held state",
                          "job requeued in special exit state"}) | LAUNCH_FAILED_REASONS
# Ours, not Slurm's: a job that squeue no longer lists and the controller no longer knows
# ("Invalid job id specified": purged after MinJobAge), with no accounting to say how it ended.
ENDED_UNKNOWN = "ENDED"
UNKNOWN_EXIT = "exit code unknown: accounting unavailable"
FINAL_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
                          "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED", ENDED_UNKNOWN})
# What Slurm's commands say of an id the controller does not know (slurm_strerror(ESLURM_INVALID_JOB_ID)).
INVALID_JOB_ID = "Invalid job id specified"
# What sacct says, failing, where the cluster keeps no accounting (src/sacct/options.c).
ACCOUNTING_DISABLED = "Slurm accounting storage is disabled"


@dataclass(frozen=True)
class JobState:
    job_id: str
    state: str                      # e.g. RUNNING, PENDING, TIMEOUT (CANCELLED by N -> CANCELLED)
    reason: str | None = None       # pending reason (Resources, Priority, ReqNodeNotAvail, ...)
    exit_code: int | None = None    # the script's exit status, as the source reports it
    exit_signal: int | None = None  # the signal that ended it, if any
    nodes: tuple[str, ...] = ()
    source: str = ""                # squeue | scontrol | sacct
    # how often Slurm requeued it (scontrol's ``Restarts=``, the job's restart_cnt, src/api/job_info.c;
    # raised by each requeue in src/slurmctld/job_mgr.c ``_job_requeue_op``); None: not asked
    restarts: int | None = None
    # when Slurm started the run it is in (squeue's ``%S``, scontrol's ``StartTime=``, the controller's own words,
    # compared for equality only, never with a clock): a requeue starts a new run; None: not running, not said
    started: str | None = None
    # how long it ran and its time limit, seconds (sacct's ElapsedRaw and TimelimitRaw, minutes; scontrol's RunTime
    # and TimeLimit): where its end fell against the limit (``TimeWarning.may_have_come``); None: not said, no limit
    elapsed_s: int | None = None
    limit_s: int | None = None

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def pending(self) -> bool:
        return self.state in PENDING_STATES


def _job_state_word(text: str) -> str:
    """``CANCELLED by 0`` -> ``CANCELLED``; ``RUNNING+`` (sacct's truncation mark) -> ``RUNNING``."""
    return text.strip().split()[0].rstrip("+").upper() if text.strip() else "UNKNOWN"


def _exit(text: str | None) -> tuple[int | None, int | None]:
    m = re.fullmatch(r"\s*(\d+):(\d+)\s*", text or "")
    if not m:
        return None, None
    code, sig = int(m.group(1)), int(m.group(2))
    return code, (sig or None)


def parse_sbatch_parsable(out: str) -> str:
    """``sbatch --parsable`` prints ``JOBID`` or ``JOBID;CLUSTER``."""
    line = out.strip().splitlines()[-1] if out.strip() else ""
    job = line.split(";", 1)[0].strip()
    if not job.isdigit():
        raise ValueError(f"sbatch printed no job id: {clip(out.strip(), 200)!r}")
    return job


SQUEUE_FORMAT = "%i|%T|%r|%N|%S"


def _start_word(state: str, text: str | None) -> str | None:
    """The start of the run a job is in, as Slurm printed it, for a job that runs (or is held in its run); None
    otherwise: a pending job's ``%S``/``StartTime`` is the scheduler's expected start, not a run's."""
    text = (text or "").strip()
    if state not in RUNNING_STATES | HELD_STATES or text in ("", "N/A", "Unknown", "None", "(null)"):
        return None
    return text


def parse_squeue(out: str, job_id: str) -> JobState | None:
    """``squeue -h -j ID -o '%i|%T|%r|%N|%S'``; None when squeue no longer lists the job."""
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 4 or parts[0] != job_id:
            continue
        reason = parts[2].strip() or None
        if reason in ("None", "(null)"):
            reason = None
        state = _job_state_word(parts[1])
        return JobState(job_id, state, reason, None, None, expand_nodes(parts[3]), "squeue",
                        started=_start_word(state, parts[4] if len(parts) > 4 else None))
    return None


def parse_scontrol_job(out: str) -> JobState | None:
    """``scontrol show job -o ID``: one line of Key=Value pairs (values may hold spaces only in
    a few keys we do not read)."""
    fields: dict[str, str] = {}
    for tok in re.findall(r"(\w+)=(\S*)", out):
        fields.setdefault(tok[0], tok[1])
    job_id = fields.get("JobId")
    if not job_id:
        return None
    code, sig = _exit(fields.get("ExitCode"))
    reason = fields.get("Reason")
    if reason in ("None", "(null)", ""):
        reason = None
    nodes = fields.get("NodeList") or ""
    restarts = fields.get("Restarts", "")
    state = _job_state_word(fields.get("JobState", ""))
    return JobState(job_id, state, reason, code, sig,
                    expand_nodes("" if nodes == "(null)" else nodes), "scontrol",
                    int(restarts) if restarts.isdigit() else None, _start_word(state, fields.get("StartTime")),
                    elapsed_s=slurm_seconds(fields.get("RunTime")), limit_s=slurm_seconds(fields.get("TimeLimit")))


def slurm_seconds(text: str | None) -> int | None:
    """A duration as scontrol prints it (``[D-]HH:MM:SS``, ``MM:SS``; src/common/parse_time.c ``secs2time_str``
    and ``mins2time_str``) in seconds; None for ``UNLIMITED``, ``Partition_Limit``, anything else."""
    m = re.fullmatch(r"\s*(?:(\d+)-)?(?:(\d+):)?(\d+):(\d{2})\s*", text or "")
    if m is None:
        return None
    days, hours, minutes, seconds = (int(g) if g else 0 for g in m.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


SACCT_FIELDS = "JobID,State,ExitCode,NodeList,ElapsedRaw,TimelimitRaw"


def parse_sacct(out: str, job_id: str) -> JobState | None:
    """``sacct -n -P -X -j ID -o JobID,State,ExitCode,NodeList,ElapsedRaw,TimelimitRaw``: the allocation's line
    (ElapsedRaw in seconds, TimelimitRaw in minutes, sacct(1); "UNLIMITED" or "Partition_Limit": no number)."""
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 4 or parts[0] != job_id:
            continue
        code, sig = _exit(parts[2])
        elapsed, limit = (parts[4:6] + ["", ""])[:2]
        return JobState(job_id, _job_state_word(parts[1]), None, code, sig, expand_nodes(parts[3]), "sacct",
                        elapsed_s=int(elapsed) if elapsed.strip().isdigit() else None,
                        limit_s=int(limit) * 60 if limit.strip().isdigit() else None)
    return None


SINFO_NODE_FORMAT = "%N|%T|%E"
# Node states that mean the node is out of service (sinfo's long words; "*" = not responding).
_NODE_OUT = ("DOWN", "FAIL", "DRAIN", "NOT_RESPONDING", "POWERED_DOWN", "POWER_DOWN", "UNKNOWN")


def parse_sinfo_nodes(out: str) -> list[tuple[str, str, str | None]]:
    """``sinfo -h -N -n NODES -o '%N|%T|%E'``: (node, state, reason) per line."""
    rows = []
    for line in out.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) < 2 or not parts[0]:
            continue
        reason = parts[2].strip() if len(parts) > 2 else ""
        rows.append((parts[0].strip(), parts[1].strip(), None if reason in ("", "none", "None") else reason))
    return rows


def nodes_out_of_service(rows: list[tuple[str, str, str | None]]) -> tuple[str, ...]:
    """The rows whose node is down, failing, drained or not responding, as ``node2: down* (Not
    responding)``: what a NODE_FAIL report names. Each node once, in sinfo's order."""
    out: dict[str, str] = {}
    for node, state, reason in rows:
        word = state.upper().rstrip("*~#!%$@^-")
        if node in out or not (state.endswith("*") or any(word.startswith(w) for w in _NODE_OUT)):
            continue
        out[node] = f"{node}: {state}" + (f" ({reason})" if reason else "")
    return tuple(out.values())


def expand_nodes(text: str) -> tuple[str, ...]:
    """``gpu[01-03,07],login1`` -> ``('gpu01', 'gpu02', 'gpu03', 'gpu07', 'login1')`` (the
    common hostlist forms; ``None assigned`` and empty give no nodes)."""
    text = text.strip()
    if not text or text in ("(null)", "None assigned", "n/a"):
        return ()
    out: list[str] = []
    for prefix, ranges, plain in re.findall(r"([^,\[]+)\[([^\]]+)\]|([^,\[\]]+)", text):
        if plain:
            out.append(plain)
            continue
        for part in ranges.split(","):
            if "-" in part:
                lo, hi = part.split("-", 1)
                width = len(lo)
                out += [f"{prefix}{i:0{width}d}" for i in range(int(lo), int(hi) + 1)]
            else:
                out.append(prefix + part)
    return tuple(out)


@dataclass(frozen=True)
class BatchSpec:
    """What the runner submits: every value from the recipe, quoted when written."""
    job_name: str
    argv: Sequence[str]                      # the training command: runs under srun
    output: str                              # the run's train.log (Slurm appends to it)
    workdir: str
    env: Mapping[str, str] = field(default_factory=dict)
    nodes: int = 1
    gpus_per_node: int | None = None
    ntasks_per_node: int = 1
    time_limit: str | None = None            # Slurm's forms: MM, HH:MM:SS, D-HH:MM:SS
    partition: str | None = None
    account: str | None = None
    extra_sbatch: Sequence[str] = ()         # each one "--flag=value", checked by the recipe loader
    marker: str | None = None                # the attempt's marker line, echoed before the step
    srun_extra: Sequence[str] = ()
    background_steps: Sequence[Sequence[str]] = ()  # srun options + argv of steps beside the training


def check_time_limit(text: str) -> None:
    if not re.fullmatch(r"(\d+-)?\d+(:\d{2}){0,2}", text):
        raise ValueError(f"time limit {text!r} is not a Slurm time (MM, HH:MM:SS, D-HH:MM:SS)")


# sbatch's long options and their short forms: Slurm 22.05's src/common/slurm_opt.c ``common_options[]``, each
# entry with a ``set_func`` or ``set_func_sbatch`` (the table ``slurm_option_table_create`` l.5207-5275 gives
# sbatch's ``getopt_long`` for its command line and for every ``#SBATCH`` line alike, src/sbatch/opt.c
# ``_set_options``; SchedMD/slurm tag slurm-22-05-8-1), with ``has_arg``: "r" required_argument, "o" optional, "n" none.
SBATCH_LONG_OPTIONS: dict[str, tuple[str, str]] = {
    "account": ("A", "r"), "acctg-freq": ("", "r"), "array": ("a", "r"), "batch": ("", "r"), "begin": ("b", "r"),
    "bb": ("", "r"), "bbf": ("", "r"), "cluster-constraint": ("", "r"), "chdir": ("D", "r"), "cluster": ("", "r"),
    "clusters": ("M", "r"), "comment": ("", "r"), "container": ("", "r"), "context": ("", "r"),
    "contiguous": ("", "n"), "constraint": ("C", "r"), "core-spec": ("S", "r"), "cores-per-socket": ("", "r"),
    "cpu-freq": ("", "r"), "cpus-per-gpu": ("", "r"), "cpus-per-task": ("c", "r"), "deadline": ("", "r"),
    "delay-boot": ("", "r"), "dependency": ("d", "r"), "distribution": ("m", "r"), "error": ("e", "r"),
    "exclude": ("x", "r"), "exclusive": ("", "o"), "export": ("", "r"), "export-file": ("", "r"),
    "extra-node-info": ("B", "r"), "get-user-env": ("", "o"), "gid": ("", "r"), "gpu-bind": ("", "r"),
    "gpu-freq": ("", "r"), "gpus": ("G", "r"), "gpus-per-node": ("", "r"), "gpus-per-socket": ("", "r"),
    "gpus-per-task": ("", "r"), "gres": ("", "r"), "gres-flags": ("", "r"), "help": ("h", "n"), "hint": ("", "r"),
    "hold": ("H", "n"), "ignore-pbs": ("", "n"), "input": ("i", "r"), "job-name": ("J", "r"),
    "kill-on-invalid-dep": ("", "r"), "licenses": ("L", "r"), "mail-type": ("", "r"), "mail-user": ("", "r"),
    "mcs-label": ("", "r"), "mem": ("", "r"), "mem-bind": ("", "r"), "mem-per-cpu": ("", "r"),
    "mem-per-gpu": ("", "r"), "mincpus": ("", "r"), "network": ("", "r"), "nice": ("", "o"), "no-kill": ("k", "o"),
    "no-requeue": ("", "n"), "nodefile": ("F", "r"), "nodelist": ("w", "r"), "nodes": ("N", "r"),
    "ntasks": ("n", "r"), "ntasks-per-core": ("", "r"), "ntasks-per-gpu": ("", "r"), "ntasks-per-node": ("", "r"),
    "ntasks-per-socket": ("", "r"), "ntasks-per-tres": ("", "r"), "open-mode": ("", "r"), "output": ("o", "r"),
    "overcommit": ("O", "n"), "oversubscribe": ("s", "n"), "parsable": ("", "n"), "partition": ("p", "r"),
    "power": ("", "r"), "prefer": ("", "r"), "priority": ("", "r"), "profile": ("", "r"), "propagate": ("", "o"),
    "qos": ("q", "r"), "quiet": ("Q", "n"), "reboot": ("", "n"), "requeue": ("", "n"), "reservation": ("", "r"),
    "signal": ("", "r"), "sockets-per-node": ("", "r"), "spread-job": ("", "n"), "switches": ("", "r"),
    "tasks-per-node": ("", "r"), "test-only": ("", "n"), "thread-spec": ("", "r"), "threads-per-core": ("", "r"),
    "time": ("t", "r"), "time-min": ("", "r"), "tmp": ("", "r"), "uid": ("", "r"), "use-min-nodes": ("", "n"),
    "verbose": ("v", "n"), "version": ("V", "n"), "usage": ("", "n"), "wait": ("W", "n"),
    "wait-all-nodes": ("", "r"), "wckey": ("", "r"), "wrap": ("", "r"),
}
# sbatch's input variables by long option (src/sbatch/opt.c ``env_vars[]`` l.177-241, slurm-22-05-8-1): read after
# the script's ``#SBATCH`` lines, and they win over them (``process_options_second_pass``).
SBATCH_OPTION_ENV: dict[str, str] = {
    "ignore-pbs": "SBATCH_IGNORE_PBS", "account": "SBATCH_ACCOUNT", "array": "SBATCH_ARRAY_INX",
    "acctg-freq": "SBATCH_ACCTG_FREQ", "batch": "SBATCH_BATCH", "bb": "SBATCH_BURST_BUFFER",
    "cluster-constraint": "SBATCH_CLUSTER_CONSTRAINT", "clusters": "SBATCH_CLUSTERS",
    "container": "SBATCH_CONTAINER", "constraint": "SBATCH_CONSTRAINT", "core-spec": "SBATCH_CORE_SPEC",
    "cpu-freq": "SBATCH_CPU_FREQ_REQ", "cpus-per-gpu": "SBATCH_CPUS_PER_GPU", "verbose": "SBATCH_DEBUG",
    "delay-boot": "SBATCH_DELAY_BOOT", "distribution": "SBATCH_DISTRIBUTION", "exclusive": "SBATCH_EXCLUSIVE",
    "export": "SBATCH_EXPORT", "get-user-env": "SBATCH_GET_USER_ENV", "gres": "SBATCH_GRES",
    "gres-flags": "SBATCH_GRES_FLAGS", "gpus": "SBATCH_GPUS", "gpu-bind": "SBATCH_GPU_BIND",
    "gpu-freq": "SBATCH_GPU_FREQ", "gpus-per-node": "SBATCH_GPUS_PER_NODE", "gpus-per-socket": "SBATCH_GPUS_PER_SOCKET",
    "gpus-per-task": "SBATCH_GPUS_PER_TASK", "hint": "SBATCH_HINT", "job-name": "SBATCH_JOB_NAME",
    "mem-bind": "SBATCH_MEM_BIND", "mem-per-cpu": "SBATCH_MEM_PER_CPU", "mem-per-gpu": "SBATCH_MEM_PER_GPU",
    "mem": "SBATCH_MEM_PER_NODE", "network": "SBATCH_NETWORK", "no-kill": "SBATCH_NO_KILL",
    "no-requeue": "SBATCH_NO_REQUEUE", "open-mode": "SBATCH_OPEN_MODE", "overcommit": "SBATCH_OVERCOMMIT",
    "partition": "SBATCH_PARTITION", "power": "SBATCH_POWER", "profile": "SBATCH_PROFILE", "qos": "SBATCH_QOS",
    "switches": "SBATCH_REQ_SWITCH", "requeue": "SBATCH_REQUEUE", "reservation": "SBATCH_RESERVATION",
    "signal": "SBATCH_SIGNAL", "spread-job": "SBATCH_SPREAD_JOB", "thread-spec": "SBATCH_THREAD_SPEC",
    "threads-per-core": "SBATCH_THREADS_PER_CORE", "time": "SBATCH_TIMELIMIT", "use-min-nodes": "SBATCH_USE_MIN_NODES",
    "wait": "SBATCH_WAIT", "wait-all-nodes": "SBATCH_WAIT_ALL_NODES", "wckey": "SBATCH_WCKEY",
    "error": "SBATCH_ERROR", "input": "SBATCH_INPUT", "output": "SBATCH_OUTPUT",
}

SBATCH, SRUN = "sbatch", "srun"
_OWNED = "moeconsole sets that one itself"
_ONE_JOB = "a run is one training, one job, which the runner follows by the id sbatch prints"
_ARRAY = f"{_ONE_JOB} (an array would start the same training several times into one run directory)"
_WAIT = f"{_ONE_JOB} (--wait holds that id back until the job ends)"
_NO_JOB = f"{_ONE_JOB} (with it sbatch submits none)"
_ITS_ENV = "the job's environment is the runner's (set it with the recipe's env key)"
# The options the runner owns or forbids, by full long name, with why: ONE table. ``check_sbatch_option`` refuses
# each of them (however it is written, ``sbatch_option_name``) and ``sbatch_env`` drops each one's SBATCH_*
# variable (``SBATCH_OPTION_ENV``) from the user's shell, which sbatch would let win over the script's lines.
# An array (``--array``) submits the script as several jobs listed as ``ID_0``, ``ID_1`` (measured on 22.05), never as
# the id sbatch gave; ``--wait`` holds sbatch until the job ends, so no id comes back before the submit times out and
# the runner submits again while the first job trains (review R67 finding 2); ``--requeue`` lets Slurm start the same
# script again with its old resume point; ``--job-name`` is how a restarted runner finds its job, ``--output``/
# ``--open-mode`` the log it reads; ``--export``/``--export-file``/``--get-user-env`` would replace the environment
# the script exports; ``--wait-all-nodes`` is kept at sbatch's default (its variable was always dropped).
RUNNER_OPTIONS: dict[str, str] = {
    "wrap": _OWNED, "output": _OWNED, "error": _OWNED, "input": _OWNED, "open-mode": _OWNED, "chdir": _OWNED,
    "job-name": _OWNED, "parsable": _OWNED, "requeue": _OWNED, "no-requeue": _OWNED, "wait-all-nodes": _OWNED,
    "array": _ARRAY, "wait": _WAIT, "test-only": _NO_JOB, "help": _NO_JOB, "usage": _NO_JOB, "version": _NO_JOB,
    "export": _ITS_ENV, "export-file": _ITS_ENV, "get-user-env": _ITS_ENV,
}


# srun's long options and their short forms, read the same way: Slurm 22.05's ``common_options[]`` entries with a
# ``set_func`` or ``set_func_srun`` (src/common/slurm_opt.c l.5049-5200, the table ``slurm_option_table_create``
# l.5207-5275 gives srun's ``getopt_long``, src/srun/libsrun/opt.c l.675-687 and l.731-743; slurm-22-05-8-1). srun, like
# sbatch, takes any unambiguous prefix (``--outp=F`` is ``--output=F``, measured on 22.05: the step's output went to F)
# and fails on an ambiguous one ("option '--ntasks-per=1' is ambiguous; possibilities: ...", exit 255, measured).
SRUN_LONG_OPTIONS: dict[str, tuple[str, str]] = {
    "accel-bind": ("", "r"), "account": ("A", "r"), "acctg-freq": ("", "r"), "bcast": ("", "o"),
    "bcast-exclude": ("", "r"), "begin": ("b", "r"), "bb": ("", "r"), "bbf": ("", "r"),
    "cluster-constraint": ("", "r"), "chdir": ("D", "r"), "cluster": ("", "r"), "clusters": ("M", "r"),
    "comment": ("", "r"), "compress": ("", "o"), "container": ("", "r"), "context": ("", "r"),
    "contiguous": ("", "n"), "constraint": ("C", "r"), "core-spec": ("S", "r"), "cores-per-socket": ("", "r"),
    "cpu-bind": ("", "r"), "cpu_bind": ("", "r"), "cpu-freq": ("", "r"), "cpus-per-gpu": ("", "r"),
    "cpus-per-task": ("c", "r"), "deadline": ("", "r"), "debugger-test": ("", "n"), "delay-boot": ("", "r"),
    "dependency": ("d", "r"), "disable-status": ("X", "n"), "distribution": ("m", "r"), "epilog": ("", "r"),
    "error": ("e", "r"), "exact": ("", "n"), "exclude": ("x", "r"), "exclusive": ("", "o"), "export": ("", "r"),
    "extra-node-info": ("B", "r"), "gid": ("", "r"), "gpu-bind": ("", "r"), "gpu-freq": ("", "r"),
    "gpus": ("G", "r"), "gpus-per-node": ("", "r"), "gpus-per-socket": ("", "r"), "gpus-per-task": ("", "r"),
    "gres": ("", "r"), "gres-flags": ("", "r"), "help": ("h", "n"), "het-group": ("", "r"), "hint": ("", "r"),
    "hold": ("H", "n"), "immediate": ("I", "o"), "input": ("i", "r"), "interactive": ("", "n"), "jobid": ("", "r"),
    "job-name": ("J", "r"), "kill-on-bad-exit": ("K", "o"), "label": ("l", "n"), "licenses": ("L", "r"),
    "mail-type": ("", "r"), "mail-user": ("", "r"), "threads": ("T", "r"), "mcs-label": ("", "r"), "mem": ("", "r"),
    "mem-bind": ("", "r"), "mem-per-cpu": ("", "r"), "mem-per-gpu": ("", "r"), "mincpus": ("", "r"),
    "mpi": ("", "r"), "msg-timeout": ("", "r"), "multi-prog": ("", "n"), "network": ("", "r"), "nice": ("", "o"),
    "no-allocate": ("Z", "n"), "no-kill": ("k", "o"), "nodefile": ("F", "r"), "nodelist": ("w", "r"),
    "nodes": ("N", "r"), "ntasks": ("n", "r"), "ntasks-per-core": ("", "r"), "ntasks-per-gpu": ("", "r"),
    "ntasks-per-node": ("", "r"), "ntasks-per-socket": ("", "r"), "ntasks-per-tres": ("", "r"),
    "open-mode": ("", "r"), "output": ("o", "r"), "overcommit": ("O", "n"), "overlap": ("", "o"),
    "oversubscribe": ("s", "n"), "pack-group": ("", "r"), "partition": ("p", "r"), "power": ("", "r"),
    "prefer": ("", "r"), "preserve-env": ("E", "n"), "priority": ("", "r"), "profile": ("", "r"),
    "prolog": ("", "r"), "propagate": ("", "o"), "pty": ("", "n"), "qos": ("q", "r"), "quiet": ("Q", "n"),
    "quit-on-interrupt": ("", "n"), "reboot": ("", "n"), "relative": ("r", "r"), "reservation": ("", "r"),
    "resv-ports": ("", "o"), "send-libs": ("", "o"), "signal": ("", "r"), "slurmd-debug": ("", "r"),
    "sockets-per-node": ("", "r"), "spread-job": ("", "n"), "switches": ("", "r"), "task-epilog": ("", "r"),
    "task-prolog": ("", "r"), "tasks-per-node": ("", "r"), "test-only": ("", "n"), "thread-spec": ("", "r"),
    "threads-per-core": ("", "r"), "time": ("t", "r"), "time-min": ("", "r"), "tmp": ("", "r"), "uid": ("", "r"),
    "unbuffered": ("u", "n"), "use-min-nodes": ("", "n"), "verbose": ("v", "n"), "version": ("V", "n"),
    "usage": ("", "n"), "wait": ("W", "r"), "wckey": ("", "r"), "whole": ("", "n"),
}

# Entries of ``common_options[]`` that are one option under two names (the same ``val`` and ``has_arg``, slurm_opt.c
# 22.05: ``slurm_opt_tasks_per_node``, ``slurm_opt_cpu_underscore_bind``, ``slurm_opt_pack_group``): the name read -> the
# option's own name, which the runner's tables use.
OPTION_ALIASES: dict[str, str] = {"tasks-per-node": "ntasks-per-node", "cpu_bind": "cpu-bind", "pack-group": "het-group"}


def option_name(opt: str, command: str, table: Mapping[str, tuple[str, str]]) -> str:
    """The full long name (``--array``) ``command``'s ``getopt_long`` (sbatch's or srun's: the same reader, Slurm's
    ``slurm_option_table_create``, over that command's ``table``) reads ``opt`` as, written as one word: ``--arr=0-1``,
    ``--arra``, ``--array 0-1``, ``-a0-1``, ``-a``: any unambiguous prefix of a long option (glibc getopt: an exact name
    wins), or a short form. ValueError, in one line, for a prefix of several options or of none, or a short option
    the command does not have."""
    word = opt.strip()
    shorts = {short: name for name, (short, _) in table.items() if short}
    if word.startswith("--"):
        prefix = re.split(r"[=\s]", word[2:], maxsplit=1)[0]
        if prefix in table:
            return "--" + OPTION_ALIASES.get(prefix, prefix)
        # glibc's getopt calls a prefix ambiguous only between entries that differ (has_arg, flag, val): two names of
        # one option (``OPTION_ALIASES``) are one
        found = sorted({OPTION_ALIASES.get(name, name) for name in table if prefix and name.startswith(prefix)})
        if len(found) == 1:
            return "--" + found[0]
        if found:
            raise ValueError(f"option {opt!r}: {command} reads --{prefix} as any of "
                             f"{', '.join('--' + f for f in sorted(found))}: write the option in full")
        raise ValueError(f"option {opt!r}: {command} has no option --{prefix}")
    if word.startswith("-") and len(word) > 1 and word[1] in shorts:
        return "--" + shorts[word[1]]
    raise ValueError(f"option {opt!r} must look like --flag or --flag=value")


def sbatch_option_name(opt: str) -> str:
    """The full long name sbatch reads ``opt`` as (``option_name`` over ``SBATCH_LONG_OPTIONS``)."""
    return option_name(opt, SBATCH, SBATCH_LONG_OPTIONS)


def srun_option_name(opt: str) -> str:
    """The full long name srun reads ``opt`` as (``option_name`` over ``SRUN_LONG_OPTIONS``): ``-N2`` is ``--nodes``,
    ``--exclus`` ``--exclusive``, ``--ntasks-per`` none (ambiguous)."""
    return option_name(opt, SRUN, SRUN_LONG_OPTIONS)


def _check_written_in_full(opt: str, command: str, name: str, table: Mapping[str, tuple[str, str]]) -> None:
    """``opt`` is written as ``name`` in full, one word, its value present exactly when the option takes one."""
    if not opt.startswith("--"):
        raise ValueError(f"option {opt!r}: {command} reads it as {name}: write the option in full")
    if not re.fullmatch(r"--[a-z][a-z0-9_-]*(=[^\s'\"\\$`;]+)?", opt):
        raise ValueError(f"option {opt!r} must look like --flag or --flag=value")
    written = opt.split("=", 1)[0][2:]
    if OPTION_ALIASES.get(written, written) != name[2:]:
        raise ValueError(f"option {opt!r}: {command} reads it as {name}: write the option in full")
    kind = table[name[2:]][1]
    if kind == "r" and "=" not in opt:
        raise ValueError(f"option {opt!r}: {name} takes a value: write {name}=VALUE")
    if kind == "n" and "=" in opt:
        raise ValueError(f"option {opt!r}: {name} takes no value")


def check_sbatch_option(opt: str) -> None:
    """One extra sbatch option: ``--flag`` or ``--flag=value``, written in full, with nothing a shell or Slurm's own
    script parser could read as more than one word, and not one the runner owns or forbids (``RUNNER_OPTIONS``,
    however sbatch would read it: ``sbatch_option_name``)."""
    name = sbatch_option_name(opt)
    why = RUNNER_OPTIONS.get(name[2:])
    if why is not None:
        raise ValueError(f"option {opt!r} ({name}): {why}")
    _check_written_in_full(opt, SBATCH, name, SBATCH_LONG_OPTIONS)


_STEP_OUTPUT = "the training step's output is the run's train.log, which the runner reads"
_NO_STEP = "with it srun starts no training step"
# The srun options the runner owns or forbids for the training step, by full long name (``srun_option_name`` reads
# any way of writing them), with why. ``--kill-on-bad-exit`` is the runner's (=1: one rank's death ends the step,
# never ranks left waiting on a dead peer until the hang detector); ``--jobid`` would run the step in another job's
# allocation; ``--export`` would replace the environment the script exports; ``--pty``, ``--multi-prog`` change what
# the command is; ``--test-only``, ``--help``, ``--usage``, ``--version`` run none.
SRUN_RUNNER_OPTIONS: dict[str, str] = {
    "output": _STEP_OUTPUT, "error": _STEP_OUTPUT, "input": _OWNED, "open-mode": _STEP_OUTPUT,
    "chdir": _OWNED, "job-name": _OWNED, "kill-on-bad-exit": _OWNED, "jobid": _ONE_JOB, "export": _ITS_ENV,
    "pty": _NO_STEP, "multi-prog": _NO_STEP, "test-only": _NO_STEP, "help": _NO_STEP, "usage": _NO_STEP,
    "version": _NO_STEP,
}


def check_srun_option(opt: str) -> None:
    """One extra srun option for the training step: ``--flag`` or ``--flag=value``, written in full (srun reads a
    prefix as the option it starts, ``srun_option_name``), with nothing a shell could read as more than one word,
    and not one the runner owns or forbids (``SRUN_RUNNER_OPTIONS``)."""
    name = srun_option_name(opt)
    why = SRUN_RUNNER_OPTIONS.get(name[2:])
    if why is not None:
        raise ValueError(f"option {opt!r} ({name}): {why}")
    _check_written_in_full(opt, SRUN, name, SRUN_LONG_OPTIONS)


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def batch_script(spec: BatchSpec) -> str:
    """The batch script: ``#SBATCH`` lines, the environment as quoted exports, the marker, then
    ``exec srun ...`` so a ``scancel --signal=TERM`` reaches the training step itself. Every
    value is quoted with shlex: no recipe value is ever read by a shell as code."""
    if not spec.argv:
        raise ValueError("the command is empty")
    for value in (*spec.argv, *spec.env.values()):
        if "\0" in value:
            raise ValueError(f"a value holds a NUL byte: {value[:40]!r}")
    for value in (spec.job_name, spec.output, spec.workdir, spec.partition or "", spec.account or ""):
        if "\0" in value or "\n" in value or "\r" in value:
            raise ValueError(f"an #SBATCH value holds a NUL or a line break: {value[:40]!r}")
    lines = ["#!/bin/bash",
             f"#SBATCH --job-name={shlex.quote(spec.job_name)}",
             f"#SBATCH --output={shlex.quote(spec.output)}",
             "#SBATCH --open-mode=append",
             # Never requeued by Slurm (JobRequeue=1 is its default on NODE_FAIL): the same
             # script would start again with the old resume point. The runner resubmits instead.
             "#SBATCH --no-requeue",
             f"#SBATCH --chdir={shlex.quote(spec.workdir)}",
             f"#SBATCH --nodes={int(spec.nodes)}",
             f"#SBATCH --ntasks-per-node={int(spec.ntasks_per_node)}"]
    if spec.gpus_per_node:
        lines.append(f"#SBATCH --gpus-per-node={int(spec.gpus_per_node)}")
    if spec.time_limit:
        check_time_limit(spec.time_limit)
        lines.append(f"#SBATCH --time={spec.time_limit}")
    if spec.partition:
        lines.append(f"#SBATCH --partition={shlex.quote(spec.partition)}")
    if spec.account:
        lines.append(f"#SBATCH --account={shlex.quote(spec.account)}")
    for opt in spec.extra_sbatch:
        check_sbatch_option(opt)
        lines.append(f"#SBATCH {opt}")
    lines += ["set -u"]
    for k, v in sorted(spec.env.items()):
        if not _ENV_NAME.match(k):
            raise ValueError(f"environment name {k!r} is not a valid name")
        lines.append(f"export {k}={shlex.quote(v)}")
    if spec.marker:
        lines.append(f"printf '%s\\n' {shlex.quote(spec.marker)}")
    for step in spec.background_steps:  # e.g. the per-node agents; ended with the job
        lines.append(" ".join(shlex.quote(a) for a in ["srun", *step]) + " &")
    srun = ["srun", "--kill-on-bad-exit=1", *spec.srun_extra, *spec.argv]
    lines.append("exec " + " ".join(shlex.quote(a) for a in srun))
    return "\n".join(lines) + "\n"


# sbatch reads its SBATCH_* input variables AFTER the script's #SBATCH lines and lets them
# win (src/sbatch/opt.c, process_options_second_pass: _opt_batch_script(), then _opt_env(),
# then the command line; the variables in opt.c's env_vars[] table): SBATCH_REQUEUE=1 in the
# user's shell would undo --no-requeue, SBATCH_JOB_NAME the name a dead runner's job is found
# by, SBATCH_EXPORT=NONE the job's environment, SBATCH_WAIT would hold sbatch until the job
# ends. The ones for options the script sets are dropped from sbatch's environment.
# SBATCH_ARRAY_INX (opt.c env_vars[] l.185, sbatch's ``--array``) would make the one training a job array.
# The variables of the options the runner owns or forbids (``RUNNER_OPTIONS``) are always dropped.
_ALWAYS_OWNED_ENV = tuple(SBATCH_OPTION_ENV[name] for name in RUNNER_OPTIONS if name in SBATCH_OPTION_ENV)


def sbatch_env(env: Mapping[str, str], spec: BatchSpec) -> dict[str, str]:
    """sbatch's environment for ``spec``'s script: ``env`` without the SBATCH_* variables that
    would override what the script sets (the recipe's keys and extra options win over a value
    left in the user's shell; an option the recipe leaves unset keeps the site's variable)."""
    drop = set(_ALWAYS_OWNED_ENV)
    set_here = [flag for flag, value in (("--gpus-per-node", spec.gpus_per_node), ("--time", spec.time_limit),
                                         ("--partition", spec.partition), ("--account", spec.account)) if value]
    for flag in [*set_here, *(sbatch_option_name(opt) for opt in spec.extra_sbatch)]:
        if flag[2:] in SBATCH_OPTION_ENV:
            drop.add(SBATCH_OPTION_ENV[flag[2:]])
    return {k: v for k, v in env.items() if k not in drop}


# The environment variables by which Slurm's query and cancel commands take filters and formats from the user's
# shell (SchedMD/slurm 284c3b95f0): squeue's SQUEUE_STATES, _PARTITION, _QOS, _ACCOUNT, _USERS, _NAMES, _FORMAT
# (src/squeue/opts.c l.177-194, l.437-439, l.489-530: SQUEUE_STATES=R hides a PENDING job from ``--name``), sacct's
# SACCT_FORMAT, _FEDERATION, _LOCAL (src/sacct/options.c l.527-529, l.1164), scancel's SCANCEL_STATE, _BATCH,
# _INTERACTIVE, _FULL (src/scancel/opt.c l.248-337: SCANCEL_STATE=PENDING leaves a running job uncancelled),
# scontrol's SCONTROL_ALL, _FUTURE, ... (src/scontrol/scontrol.c l.174-187) and sinfo's SINFO_PARTITION, _ALL, ... (src/sinfo/opts.c l.149-159).
# The runner reads their output and needs every job of its own, so none of these reach them.
_COMMAND_FILTER_ENV = ("SQUEUE_", "SACCT_", "SCANCEL_", "SCONTROL_", "SINFO_")


def is_command(word: str, name: str) -> bool:
    """Is ``word`` (an argv[0], as given or as /proc shows it) the command ``name``, given bare or by any path
    (``/usr/bin/sbatch``, ``/opt/slurm/bin/sbatch``): the one comparison of a Slurm command's name."""
    return bool(word) and os.path.basename(word) == name


def slurm_tool_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment every Slurm command the runner runs gets: ``env`` without the user's filter and format
    variables for squeue, sacct, scancel, scontrol and sinfo (``_COMMAND_FILTER_ENV``). sbatch's own SBATCH_*
    are ``sbatch_env``'s to decide."""
    return {k: v for k, v in env.items() if not k.startswith(_COMMAND_FILTER_ENV)}


# Slurm's final state -> the crash class it implies, before any log evidence is weighed.
STATE_CLASS = {
    "NODE_FAIL": "node_fail",
    "PREEMPTED": "preempted",
    "TIMEOUT": "timeout",
    "OUT_OF_MEMORY": "killed_oom",
    "BOOT_FAIL": "node_fail",
    "DEADLINE": "timeout",
}


# slurmctld's sweep of running jobs' time limits, where the time-limit warning signal is sent
# (src/slurmctld/slurmctld.h l.105 ``#define PERIODIC_TIMEOUT 30``; job_mgr.c ``send_job_warn_signal`` l.19512).
PERIODIC_TIMEOUT_S = 30


@dataclass(frozen=True)
class TimeWarning:
    """sbatch's ``--signal=[{R|B}:]SIG[@TIME]``: Slurm sends SIG ahead of the job's time limit (to its steps; with
    ``B:`` to the batch shell only, sbatch(1): the runner's batch shell is ``exec srun``, which forwards it to the
    tasks, src/srun/signals.c l.66), at the first sweep where the time left is under TIME seconds (60 when not
    given) plus PERIODIC_TIMEOUT (30 s) (src/common/proc_args.c ``get_signal_opts`` l.1139-1187,
    src/slurmctld/job_mgr.c ``send_job_warn_signal`` l.19506-19513, SchedMD/slurm 284c3b95f0)."""
    signum: int
    option: str      # as the recipe wrote it, e.g. --signal=USR1@40
    ahead_s: int = 60   # its TIME: how long before the limit it is asked for (60 when not given)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    def may_have_come(self, elapsed_s: int | None, limit_s: int | None) -> bool:
        """Did the job run into the time the signal is sent in: the first sweep where ``warn_time +
        PERIODIC_TIMEOUT + now >= end_time`` (job_mgr.c ``send_job_warn_signal`` l.19511-19513), so never before
        ``limit - TIME - PERIODIC_TIMEOUT`` of run time. False when Slurm did not say how long it ran or its limit
        (none: ``UNLIMITED`` gets no warning, job_mgr.c l.9531). A limit cut or raised while it ran is the one
        Slurm reports at its end (the one its end_time was last set from)."""
        if elapsed_s is None or limit_s is None:
            return False
        return elapsed_s >= limit_s - self.ahead_s - PERIODIC_TIMEOUT_S

    def ended(self, exit_code: int | None, exit_signal: int | None) -> bool:
        """The job's exit as Slurm recorded it may be a death by this signal: its signal (a batch shell it reached,
        ``B:``), or the exit code srun gives for a task it killed, the number (``FAILED 10:0`` for SIGUSR1,
        measured on 22.05), or a shell's 128+N. A code alone is also a task's own ``exit(N)``: srun's lines decide
        (``crash._warning_ended_it``, review R61 D3)."""
        return exit_signal == self.signum or exit_code in (self.signum, 128 + self.signum)


def time_warning(options: Sequence[str], env: Mapping[str, str] | None = None) -> TimeWarning | None:
    """The time-limit warning the job's sbatch asks for: the recipe's options (the last ``--signal=``, as sbatch
    reads them), else ``env``'s SBATCH_SIGNAL (src/sbatch/opt.c env_vars[] l.233; ``sbatch_env`` passes it on
    when the recipe sets no ``--signal``); None without one or when it names no signal. ``@`` with no time is
    sbatch's time 0 (proc_args.c ``get_signal_opts``: ``strtol`` of "")."""
    found: TimeWarning | None = None
    var = SBATCH_OPTION_ENV["signal"]
    given = [f"--signal={env[var]}"] if env is not None and env.get(var) else []
    for opt in [*given, *options]:
        try:
            if sbatch_option_name(opt) != "--signal" or "=" not in opt:
                continue
        except ValueError:
            continue
        value = opt.split("=", 1)[1]
        m = re.fullmatch(r"(?i)(?:[RB]{1,2}:)?(?:SIG)?(\w+?)(?:@\d*)?", value)
        if m is None:
            continue
        word = m.group(1)
        try:
            num = int(word) if word.isdigit() else int(signal.Signals["SIG" + word.upper()])
        except (KeyError, ValueError):
            continue
        if num in set(signal.Signals):
            ahead = value.rsplit("@", 1)[1] if "@" in value else None
            found = TimeWarning(num, opt, 60 if ahead is None else int(ahead or 0))
    return found


def launch_failed(js: JobState) -> bool:
    """Is the job held after a launch that failed (``LAUNCH_FAILED_REASONS``): its last requeue never ran its
    script. squeue's %r gives the controller's state_desc as it is; scontrol's ``Reason=`` with each white space
    made an underscore ("Replace white space with underscore for easier parsing", src/api/job_info.c)."""
    return js.pending and (js.reason or "").replace("_", " ") in LAUNCH_FAILED_REASONS


def requeued_word(js: JobState) -> str:
    """The record's word for a job seen running and then queued again: ``REQUEUE_HOLD`` when Slurm
    requeued it held (its state, or a held requeue's reason, ``HOLD_REASONS``), else ``REQUEUED``."""
    return REQUEUE_HOLD if js.state == REQUEUE_HOLD or js.reason in HOLD_REASONS else REQUEUED


def class_from_state(js: JobState) -> str | None:
    """The crash class Slurm's own state proves (None: decide from the exit status and log)."""
    return STATE_CLASS.get(js.state)
