"""Crash classification: one exit of a training attempt -> one crash class and its recovery.

Pure functions on plain data (an exit status, the last log lines, a few facts the runner
knows), so the runner can call :func:`classify` after every exit and tests can feed it texts.
The signatures come from docs/crash-classes.md (torch, NCCL, CUDA and driver texts); the
precedence between them is documented there and in :func:`classify`.
"""
from __future__ import annotations

import os
import re
import signal as _signal
from dataclasses import dataclass, field
from typing import Collection, Iterable

from runner.core.memory import alloc_conf_advice
from runner.core.oom import FRAGMENTATION_MIN_GIB, parse_oom_message, torch_size_text

from runner.core.logline import ANSI_TEXT_RE, RANK_PREFIX_RE, SRUN_LABEL_RE, prefix_rank

CRASH_CLASSES = (
    "gpu_busy_at_init", "cuda_oom", "nccl_error", "port_in_use", "divergence",
    "recompute_mismatch", "cuda_fault", "killed_oom", "segfault", "bus_error", "hang",
    "user_kill", "gpu_unavailable", "config_error", "node_fail", "preempted", "time_limit",
    "job_cancelled", "submit_refused", "slurm_unavailable", "missing_dependency", "unknown",
)
RECOVERIES = (
    "restart", "restart_after_gpu_clear", "restart_long_cooldown", "wait_port", "pause",
    "fail", "restart_launch_blocking", "wait_gpu", "wait_slurm", "none",
)

MAX_EVIDENCE = 10
MAX_EVIDENCE_CHARS = 500
NCCL_COOLDOWN_SCALE = 3.0

# Megatron's rerun state machine (megatron/core/rerun_state_machine.py).
EXIT_RESUME_TO_DISAMBIGUATE = 16
EXIT_FAILED_ON_RESULT_VALIDATION = 17

# Xids after which the GPU needs a reset (double-bit ECC, fallen off the bus, uncontained
# ECC): restarting on the same node cannot help.
RESET_XIDS = frozenset({48, 79, 95})


@dataclass(frozen=True)
class CrashVerdict:
    """The class of one crash and what to do about it."""

    cls: str
    evidence: tuple[str, ...]
    retryable: bool
    recovery: str
    summary: str
    hint: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    cooldown_scale: float = 1.0

    def __post_init__(self) -> None:
        if self.cls not in CRASH_CLASSES:
            raise ValueError(f"unknown crash class {self.cls!r}")
        if self.recovery not in RECOVERIES:
            raise ValueError(f"unknown recovery {self.recovery!r}")

    def to_dict(self) -> dict:
        return {
            "cls": self.cls,
            "evidence": list(self.evidence),
            "retryable": self.retryable,
            "recovery": self.recovery,
            "summary": self.summary,
            "hint": self.hint,
            "env": dict(self.env),
            "cooldown_scale": self.cooldown_scale,
        }


# ---------------------------------------------------------------------------------------
# Exit status

def decode_exit(returncode: int | None) -> tuple[int | None, int | None]:
    """Split an exit status into (exit_code, signal).

    - ``None`` (still running, or an adopted process whose status cannot be read) -> (None, None).
    - Popen's ``-N`` (killed by signal N) -> (None, N): the process has no exit code.
    - ``128+N`` for N in 1..31 (a shell reporting a child killed by signal N: 134, 135, 137,
      139, 143) -> (code, N).
    - ``256-N`` for N in 2..31 (a Python wrapper doing ``sys.exit(child.returncode)`` with a
      negative code, as ms-swift's ``swift`` does: 241 = SIGTERM, 247 = SIGKILL) -> (code, N).
    - anything else -> (code, None).

    Ambiguity: a program may exit with 137 or 241 on its own; from the number alone it cannot
    be told apart from a signal. 255 is left as a plain code (``exit(-1)`` is a common generic
    failure; reading it as SIGHUP would mislead), and real-time signals (>31) are never inferred.
    """
    if returncode is None:
        return None, None
    if returncode < 0:
        return None, -returncode
    if 129 <= returncode <= 128 + 31:
        return returncode, returncode - 128
    if 256 - 31 <= returncode <= 254:
        return returncode, 256 - returncode
    return returncode, None


def signal_name(signum: int) -> str:
    try:
        return _signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def is_crash(exit_code: int | None, *, user_kill: bool = False, hang: bool = False,
             divergence: bool = False) -> bool:
    """True unless the attempt ended with a clean exit 0 that nobody forced."""
    return exit_code != 0 or user_kill or hang or divergence


# ---------------------------------------------------------------------------------------
# Line cleaning

def clean_line(raw: str) -> tuple[str, int | None]:
    """Strip ANSI escapes and rank prefixes; return the text and the rank the prefix named."""
    text, rank, _ = _clean(raw)
    return text, rank


def _clean(raw: str) -> tuple[str, int | None, int]:
    """(text, rank, indentation): the indentation is what followed the rank prefix, so a
    traceback's source lines (indented 4) can be told from its frame lines (indented 2)."""
    text = ANSI_TEXT_RE.sub("", raw) if "\x1b" in raw else raw
    text = text.rstrip()
    body = text.lstrip()
    rank = label_rank = None
    if body[:1].isdigit() or body[:1] == "[":
        m = SRUN_LABEL_RE.match(body)
        if m:
            label_rank = prefix_rank(m)
            text = body[m.end():]
            body = text.lstrip()
    while body.startswith("["):
        m = RANK_PREFIX_RE.match(body)
        if not m:
            break
        if rank is None:
            rank = prefix_rank(m)
        text = body[m.end():]
        body = text.lstrip()
    return body, (rank if rank is not None else label_rank), len(text) - len(body)


def _cap(text: str) -> str:
    return text if len(text) <= MAX_EVIDENCE_CHARS else text[: MAX_EVIDENCE_CHARS - 3] + "..."


# ---------------------------------------------------------------------------------------
# Signatures. A cheap substring pass picks the families a line may belong to (plain `in`
# checks are several times faster than one big regex alternation); only those families'
# detailed patterns run on it.

_FAMILY_TOKENS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("oom", ("out of memory", "OutOfMemoryError")),
    ("nccl", ("NCCL", "nccl", "atchdog", "DistBackendError", "before timing out")),
    ("slurm", ("CANCELLED AT", "oom_kill event", "oom-kill event")),
    ("hostoom", ("running low on memory", "killed due to memory pressure")),
    ("port", ("EADDRINUSE", "ddress already in use", "errno: 98")),
    ("div", ("Unexpected result", "found NaN", "found Inf", "returned nan values", "rerun:",
             "Spiky loss", "transient error", "Loss became infinite", "Minimum loss scale reached",
             "gradients are Nan/Inf")),
    ("recompute", ("CheckpointError", "tensors was saved", "tensors saved during",
                   "Recomputed values", "more tensors during recomputation")),
    ("fault", ("illegal", "launch failure", "device-side assert", "ECC", "misaligned address",
               "cudaError", "CUDA_ERROR_", "NVRM: Xid", "fallen off the bus", "GPU is lost")),
    ("sig", ("killed by signal", "Segmentation fault", "us error", "Killed", "Aborted",
             "got signal:", "died with <Signals.", "Caught signal", "return code =", "received by",
             "RECEIVED BY")),
    ("dep", ("ModuleNotFoundError", "ImportError")),
    ("gpu", ("busy or unavailable", "no CUDA-capable device", "cudaErrorDevicesUnavailable",
             "cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE")),
    ("usage", ("error: ", "remaining_argv", "unrecognized arguments",
               "not used by the HfArgumentParser")),
    ("tr", ("Root Cause", "Failures:", "exitcode", "rank", "traceback", "===", "EXITCODE", "Exitcode")),
    ("exc", ("Error", "Exception", "Interrupt", "terminate called")),
)


def _families(text: str) -> set[str]:
    found = {name for name, tokens in _FAMILY_TOKENS if any(t in text for t in tokens)}
    if text.startswith(("File \"", "Traceback (most recent call last)")):
        found.add("frame")
    return found


# (Ray's ``ray.exceptions.OutOfMemoryError`` is its host-memory monitor: see _HOST_OOM)
_OOM = re.compile(r"CUDA out of memory|(?<!ray\.exceptions\.)OutOfMemoryError|CUDA error: out of memory"
                  r"|Cuda failure 'out of memory'")

_NCCL_TIMEOUT = re.compile(r"Watchdog caught collective operation timeout|watchdog got stuck for"
                           r"|milliseconds before timing out")
_NCCL = re.compile(
    r"Watchdog caught collective operation timeout|watchdog got stuck for"
    r"|milliseconds before timing out"
    r"|Process group watchdog thread terminated with exception"
    r"|NCCL watchdog thread terminated with exception"   # torch <= 2.1
    r"|Some NCCL operations have failed or timed out"
    r"|we are taking the entire process down"
    r"|NCCL error"
    r"|nccl(?:System|Remote|UnhandledCuda|Internal|InvalidUsage|InvalidArgument)Error"
    r"|NCCL communicator was aborted"
    r"|DistBackendError")
_NCCL_SUPPORT = re.compile(r"NCCL WARN")
_NCCL_OP = re.compile(r"OpType=(\w+)")
_NCCL_RAN = re.compile(r"ran for (\d+) milliseconds")
_NCCL_API = re.compile(r"NCCL error in: \S+?, (.+?)(?:, NCCL version ([\d.]+\S*))?$")
_PG_RANK = re.compile(r"\bRank (\d+)\]")

_PORT = re.compile(r"EADDRINUSE|[Aa]ddress already in use|errno: 98\b")
_PORT_NUMBER = re.compile(r"\bport: (\d+)|:(\d+) \(errno: 98|\bport (\d+)")

_DIV = re.compile(
    r"found (?:NaN|Inf) in local (?:grad norm|forward loss)"
    r"|Unexpected result tensor\(-?(?:nan|inf)"
    r"|Rank \d+, node \S+, device \S+, iteration \d+: Unexpected result"
    r"|returned nan values in its \d+\w* output"
    # detectron2 (engine/train_loop.py), fairseq (optim/dynamic_loss_scaler.py, trainer.py)
    r"|Loss became infinite or NaN at iteration=\d+"
    r"|Minimum loss scale reached \([\d.e-]+\)"
    r"|FloatingPointError: gradients are Nan/Inf")
_DIV_SUPPORT = re.compile(r"Unexpected result|^(?:First|Second) rerun:|Spiky loss"
                          r"|[Pp]ossible transient error")
_DIV_ITERATION = re.compile(r"iteration[ =]#?(\d+)")

_RECOMPUTE = re.compile(
    r"different number of tensors was saved"
    r"|Recomputed values for the following tensors have different metadata"
    r"|trying to save more tensors during recomputation"
    r"|CheckpointError:", re.IGNORECASE)
_RECOMPUTE_COUNT = re.compile(r"Number of tensors saved during (forward|recomputation): (\d+)")

_FAULT = re.compile(
    r"an illegal memory access was encountered|unspecified launch failure"
    r"|device-side assert triggered|uncorrectable ECC error encountered"
    r"|an illegal instruction was encountered|misaligned address"
    r"|cudaError(?:IllegalAddress|LaunchFailure|Assert|ECCUncorrectable|IllegalInstruction"
    r"|MisalignedAddress)|CUDA_ERROR_(?:ILLEGAL_ADDRESS|LAUNCH_FAILED)"
    r"|GPU has fallen off the bus|GPU is lost")
# A GPU gone from the bus (the kernel's "NVRM: GPU 0000:81:00.0: GPU has fallen off the bus.",
# nvidia-smi's "GPU is lost"): like Xid 79, only a reset brings it back.
_GPU_GONE = re.compile(r"fallen off the bus|GPU is lost")
_XID = re.compile(r"NVRM: Xid \(((?:PCI:)?[0-9a-fA-F:.]+)[^)]*\): (\d+),")

_SIG_TEXT = re.compile(
    r"DataLoader worker \(pid \d+\) is killed by signal: (?P<dl>[A-Za-z ]+?)\."
    r"|(?P<shm>Unexpected bus error encountered in worker)"
    r"|Fatal Python error: (?P<fatal>Segmentation fault|Bus error|Aborted)"
    r"|(?P<oomkill>Out of memory: Killed process \d+)"
    r"|(?:^|: line \d+: +\d+ +)(?P<shell>Killed|Segmentation fault|Bus error|Aborted)"
    r"(?: +\(core dumped\))?(?:\s|$)"
    r"|SignalException: Process \d+ got signal: (?P<agent>\d+)"
    r"|died with <Signals\.SIG[A-Z0-9]+: (?P<cpe>\d+)>"
    r"|Caught signal (?P<caught>\d+)\b"
    r"|exits with return code = -(?P<rcneg>\d+)\b"
    r"|\bKilled: (?P<killedn>\d+)\b"
    # Slurm's srun names how a task ended: "srun: error: node1: task 3: Segmentation fault"
    r"|srun: error: \S+: tasks? [\d,\-\[\]]+: (?P<srun>Killed|Segmentation fault|Bus error|Aborted)"
    # torchrun's failure entry: "traceback : Signal 11 (SIGSEGV) received by PID 41234" (any case)
    r"|(?i:signal) (?P<recv>\d+) \((?i:sig)[A-Za-z0-9]+\) (?i:received by)")
# Slurm's slurmstepd when the scheduler ends a job (src/slurmd/slurmstepd/req.c) and its cgroup
# plugin after the kernel's OOM killer ran in the job (task_cgroup_memory.c): the same causes
# the job's final state gives, for when accounting cannot be asked.
_SLURM_CANCEL = re.compile(r"\*\*\* (?:JOB|STEP) [\d.]+(?: ON \S+)? CANCELLED AT \S+(?: DUE TO (?P<why>[A-Z ]+?))?"
                           r"(?:, SEE SLURMCTLD LOG FOR DETAILS)? \*\*\*")
_SLURM_OOM = re.compile(r"Detected (\d+) oom[-_]kill events?(?:\(s\))?")
_SLURM_WHY = {"TIME LIMIT": "TIMEOUT", "PREEMPTION": "PREEMPTED", "NODE FAILURE": "NODE_FAIL",
              "JOB REQUEUE": "PREEMPTED", None: "CANCELLED"}
# Ray's memory monitor killing a worker before the kernel does (ray/_raylet: the worker's exit
# detail; "Task was killed ..." up to Ray 2.54, "N worker(s) were killed ..." from 2.55; the
# raylet's summary "... Workers (tasks / actors) killed due to memory pressure (OOM)").
_HOST_OOM = re.compile(r"(?:Task was|worker\(s\) were) killed due to the node running low on memory"
                       r"|killed due to memory pressure \(OOM\)")
# A Python dependency that is not there: the interpreter's own words for a missing module and
# a compiled extension that cannot load.
_DEP = re.compile(r"^(?:[\w.]+\.)?(?P<cls>ModuleNotFoundError|ImportError): (?P<msg>.+)$")
_DEP_MODULE = re.compile(r"No module named '([^']+)'")
_DEP_SO = re.compile(r"(\S+?\.so(?:\.[\d.]+)?)\b")
_DEP_FROM = re.compile(r"cannot import name '([^']+)' from '([^']+)'")
_SITE_PACKAGES = re.compile(r'^File "(/[^"]*?)/lib/python(\d+\.\d+)/(?:site|dist)-packages/')
_STRSIGNAL = {"Killed": 9, "Bus error": 7, "Segmentation fault": 11, "Aborted": 6,
              "Terminated": 15, "Interrupt": 2, "Hangup": 1}

_TR_ROOT = re.compile(r"^Root Cause \(first observed failure\):")
_TR_FAILURES = re.compile(r"^Failures:")
_TR_RANK = re.compile(r"^rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)")
_TR_HOST = re.compile(r"^host\s*:\s*(\S+)")
_TR_EXIT = re.compile(r"^exitcode\s*:\s*(-?\d+)\s*\(pid:\s*(\d+)\)")
_TR_TRACEBACK = re.compile(r"^traceback\s*:\s*(.*)")
_TR_BORDER = re.compile(r"^=+$")
_TR_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)")
# A failure entry's fields anywhere in a line, in any case, with or without the spacing and
# colons of the block: pasted blocks lose their header, get joined ("rank2 (local rank:
# 2)exitcode: -9 (pid: 36071)") or lower-cased.
_TRF_RANK = re.compile(r"\brank\s*:?\s*(\d+)\s*\(local[_ ]rank\s*:\s*(\d+)\)", re.IGNORECASE)
_TRF_EXIT = re.compile(r"exitcode\s*:?\s*(-?\d+)\s*\(pid\s*:\s*(\d+)\)", re.IGNORECASE)
_TERMINATED_BY_AGENT = frozenset({-15, 143})   # siblings torchrun ended after the first failure

_FRAME = re.compile(r'^File "([^"]*)", line \d+, in (\S+)')
_TRACEBACK_START = re.compile(r"^Traceback \(most recent call last\)")
_EXC = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*)?(?:Error|Exception|Interrupt)\b:?"
                  r"|^terminate called after throwing")

_GPU_UNAVAILABLE = re.compile(
    r"devices?(?:\(s\))? (?:is/are |is |are )?busy or unavailable"
    r"|no CUDA-capable device is detected|cudaErrorDevicesUnavailable|cudaErrorNoDevice"
    r"|CUDA_ERROR_NO_DEVICE")
# Usage errors a trainer reports before doing anything: argparse ("prog: error: ..."), ms-swift
# ("ValueError: remaining_argv: [...]"), HfArgumentParser ("... not used by the HfArgumentParser").
_USAGE = re.compile(
    r"^(?:usage: )?(?!srun: |slurmstepd)[\w.+/-]+(?: [\w.+/-]+)*: error: \S"
    r"|remaining_argv"
    r"|unrecognized arguments:"
    r"|Some specified arguments are not used by the HfArgumentParser")

_SIGNAL_CLASSES: dict[int, str] = {_signal.SIGSEGV: "segfault", _signal.SIGBUS: "bus_error",
                   _signal.SIGKILL: "killed_oom"}
_DECISIVE_SIGNALS = frozenset({_signal.SIGSEGV, _signal.SIGBUS, _signal.SIGKILL,
                               _signal.SIGABRT})


@dataclass
class _Hits:
    """Lines (index, text) that matched one signature family."""

    decisive: list[tuple[int, str]] = field(default_factory=list)
    support: list[tuple[int, str]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.decisive)


@dataclass
class _RootCause:
    """The root-cause entry of torchrun's ChildFailedError block (or its 'failed' log line)."""

    exitcode: int | None = None
    rank: int | None = None
    pid: int | None = None
    lines: list[tuple[int, str]] = field(default_factory=list)
    host: str | None = None     # the node it ran on (a multi-node job's node name)


@dataclass
class _OomInfo:
    size: str | None = None
    gpus: list[str] = field(default_factory=list)
    foreign: dict[str, str] = field(default_factory=dict)   # pid -> size, in order seen
    unallocated_gib: float = 0.0
    frames: list[tuple[str, str]] = field(default_factory=list)  # (file, func) of its traceback


@dataclass
class _Scan:
    oom: _Hits = field(default_factory=_Hits)
    nccl: _Hits = field(default_factory=_Hits)
    nccl_timeout: _Hits = field(default_factory=_Hits)
    port: _Hits = field(default_factory=_Hits)
    div: _Hits = field(default_factory=_Hits)
    recompute: _Hits = field(default_factory=_Hits)
    fault: _Hits = field(default_factory=_Hits)
    xids: list[tuple[int, str, int, str]] = field(default_factory=list)  # idx, text, xid, pci
    sig_text: list[tuple[int, str, int]] = field(default_factory=list)    # idx, text, signal
    gpu: _Hits = field(default_factory=_Hits)
    usage: _Hits = field(default_factory=_Hits)
    slurm: list[tuple[int, str, str]] = field(default_factory=list)   # idx, text, job state it implies
    host_oom: _Hits = field(default_factory=_Hits)
    deps: list[tuple[int, str, list[tuple[str, str]]]] = field(default_factory=list)  # idx, text, frames
    failures: list[_RootCause] = field(default_factory=list)   # failure entries outside a root block
    exceptions: list[tuple[int, str]] = field(default_factory=list)
    root: _RootCause | None = None
    failed_line: _RootCause | None = None
    oom_info: _OomInfo = field(default_factory=_OomInfo)
    last_lines: list[tuple[int, str]] = field(default_factory=list)



def _iter_clean(log_tail: Iterable[str]) -> Iterable[tuple[str, int | None, int]]:
    for raw in log_tail:
        if "\r" in raw or "\n" in raw:
            for part in re.split(r"[\r\n]+", raw):
                if part.strip():
                    yield _clean(part)
        else:
            yield _clean(raw)


def _scan(log_tail: Iterable[str]) -> _Scan:
    """One pass over the tail, collecting every signature hit and the torchrun block."""
    s = _Scan()
    frames: dict[int | None, list[tuple[str, str]]] = {}
    last_frames_rank: int | None = None     # whose traceback grew last (for unprefixed lines)
    in_root = False
    root_seen = False
    after_frame: set[int | None] = set()     # ranks whose previous line was a traceback frame
    for idx, (text, rank, indent) in enumerate(_iter_clean(log_tail)):
        if not text:
            continue
        s.last_lines.append((idx, text))
        if len(s.last_lines) > 3:
            del s.last_lines[0]
        if rank in after_frame:
            after_frame.discard(rank)
            if indent >= 3:
                continue    # the source line a frame quotes (`raise OutOfMemoryError(...)`): not evidence
        families = _families(text)
        if not families and not in_root:
            continue
        if "frame" in families:
            if _TRACEBACK_START.match(text):
                frames[rank] = []
                last_frames_rank = rank
            else:
                fm = _FRAME.match(text)
                if fm:
                    after_frame.add(rank)
                    stack = frames.setdefault(rank, [])
                    last_frames_rank = rank
                    if len(stack) < 200:
                        stack.append((fm.group(1), fm.group(2)))
        if "tr" in families or in_root:
            in_root, root_seen = _scan_torchrun(s, idx, text, in_root, root_seen)
            _scan_failure_entry(s, idx, text)
        if "slurm" in families:
            m = _SLURM_CANCEL.search(text)
            if m:
                s.slurm.append((idx, text, _SLURM_WHY.get(m.group("why"), "CANCELLED")))
            elif _SLURM_OOM.search(text):
                s.slurm.append((idx, text, "OUT_OF_MEMORY"))
        if "hostoom" in families and _HOST_OOM.search(text):
            s.host_oom.decisive.append((idx, text))
        if "dep" in families:
            dm = _DEP.match(text)
            stack = frames.get(rank) or frames.get(last_frames_rank) or []
            if dm and stack:   # the exception that ended a traceback, not a logged warning
                s.deps.append((idx, text, list(stack)))
        if "oom" in families and _OOM.search(text):
            s.oom.decisive.append((idx, text))
            _collect_oom(s.oom_info, text, frames.get(rank) or frames.get(last_frames_rank, []))
        if "nccl" in families:
            if _NCCL.search(text):
                s.nccl.decisive.append((idx, text))
                if _NCCL_TIMEOUT.search(text):
                    s.nccl_timeout.decisive.append((idx, text))
            elif _NCCL_SUPPORT.search(text):
                s.nccl.support.append((idx, text))
        if "port" in families and _PORT.search(text):
            s.port.decisive.append((idx, text))
        if "div" in families:
            if _DIV.search(text):
                s.div.decisive.append((idx, text))
            elif _DIV_SUPPORT.search(text):
                s.div.support.append((idx, text))
        if "recompute" in families:
            if _RECOMPUTE.search(text):
                s.recompute.decisive.append((idx, text))
            elif _RECOMPUTE_COUNT.search(text):
                s.recompute.support.append((idx, text))
        if "fault" in families:
            xm = _XID.search(text)
            if xm:
                s.xids.append((idx, text, int(xm.group(2)), xm.group(1)))
                s.fault.decisive.append((idx, text))
            elif _FAULT.search(text):
                s.fault.decisive.append((idx, text))
        if "sig" in families:
            signum = _text_signal(text)
            if signum is not None:
                s.sig_text.append((idx, text, signum))
        if "gpu" in families and _GPU_UNAVAILABLE.search(text):
            s.gpu.decisive.append((idx, text))
        if "usage" in families and _USAGE.search(text):
            s.usage.decisive.append((idx, text))
        if "exc" in families and _EXC.match(text) and "ChildFailedError" not in text:
            s.exceptions.append((idx, text))
    return s


def _scan_torchrun(s: _Scan, idx: int, text: str, in_root: bool, root_seen: bool) -> tuple[bool, bool]:
    """Track torchrun's ChildFailedError block; keep the first root cause it names."""
    if s.failed_line is None:
        fm = _TR_FAILED.search(text)
        if fm:
            s.failed_line = _RootCause(int(fm.group(1)), None, int(fm.group(3)), [(idx, text)])
            return in_root, root_seen
    if _TR_ROOT.match(text):
        if not root_seen:
            s.root = _RootCause()
            return True, root_seen
        return False, root_seen
    if not in_root:
        return False, root_seen
    if _TR_BORDER.match(text) or _TR_FAILURES.match(text):
        if s.root is not None and s.root.exitcode is None:
            s.root = None
        return False, True
    root = s.root
    assert root is not None
    m = _TR_HOST.match(text)
    if m:
        root.host = m.group(1)
        root.lines.append((idx, text))
        return True, root_seen
    m = _TR_RANK.match(text)
    if m:
        root.rank = int(m.group(1))
        root.lines.append((idx, text))
        return True, root_seen
    m = _TR_EXIT.match(text)
    if m:
        root.exitcode, root.pid = int(m.group(1)), int(m.group(2))
        root.lines.append((idx, text))
        return True, root_seen
    m = _TR_TRACEBACK.match(text)
    if m and m.group(1) and not m.group(1).startswith("To enable traceback"):
        root.lines.append((idx, text))
    return True, root_seen


def _scan_failure_entry(s: _Scan, idx: int, text: str) -> None:
    """Failure entries of a torchrun block, wherever they stand (the root-cause header may be
    missing from a pasted block): each ``rank`` starts one, its ``exitcode`` completes it."""
    rm = _TRF_RANK.search(text)
    if rm:
        s.failures.append(_RootCause(None, int(rm.group(1)), None, [(idx, text)]))
    em = _TRF_EXIT.search(text)
    if em:
        if not s.failures or s.failures[-1].exitcode is not None:
            s.failures.append(_RootCause(lines=[]))
        entry = s.failures[-1]
        entry.exitcode, entry.pid = int(em.group(1)), int(em.group(2))
        if not rm:
            entry.lines.append((idx, text))


def _failure_entry(s: _Scan) -> _RootCause | None:
    """Without a root-cause block: the first failure entry that is not a sibling torchrun ended
    itself (SIGTERM), else the first one."""
    entries = [e for e in s.failures if e.exitcode is not None]
    return next((e for e in entries if e.exitcode not in _TERMINATED_BY_AGENT), entries[0] if entries else None)


def _text_signal(text: str) -> int | None:
    m = _SIG_TEXT.search(text)
    if not m:
        return None
    if m.group("dl"):
        return _STRSIGNAL.get(m.group("dl").strip())
    if m.group("shm"):
        return int(_signal.SIGBUS)
    if m.group("fatal"):
        return _STRSIGNAL.get(m.group("fatal"))
    if m.group("oomkill"):
        return int(_signal.SIGKILL)
    if m.group("shell"):
        return _STRSIGNAL.get(m.group("shell"))
    if m.group("srun"):
        return _STRSIGNAL.get(m.group("srun"))
    for name in ("agent", "cpe", "caught", "rcneg", "killedn", "recv"):
        if m.group(name):
            return int(m.group(name))
    return None


def _collect_oom(info: _OomInfo, text: str, frames: list[tuple[str, str]]) -> None:
    msg = parse_oom_message(text)
    if msg is not None:
        if info.size is None and msg.tried_text:
            info.size = msg.tried_text
        if msg.gpu is not None and str(msg.gpu) not in info.gpus:
            info.gpus.append(str(msg.gpu))
        for pid, gib in msg.others:
            info.foreign.setdefault(str(pid), torch_size_text(gib))
        if msg.reserved_unallocated_gib is not None:
            info.unallocated_gib = max(info.unallocated_gib, msg.reserved_unallocated_gib)
    if frames and not info.frames:
        info.frames = list(frames)


# ---------------------------------------------------------------------------------------
# Classification

def classify(exit_code: int | None, log_tail: list[str], *, user_kill: bool = False,
             hang: bool = False, steps_seen: int = 0, foreign_gpu_memory: bool = False,
             divergence: bool = False, attempt: int | None = None,
             own_pids: Collection[int] | None = None,
             live_pids: Collection[int] | None = None,
             python: str | None = None) -> CrashVerdict:
    """Classify one ended attempt. Precedence, highest first (why: docs/crash-classes.md):

    1. ``user_kill``; 2. ``divergence`` flag from the runner's monitors;
    3. root causes that the log names: recompute_mismatch > divergence (Megatron texts, exit
       16/17) > cuda_fault > CUDA OOM (gpu_busy_at_init / cuda_oom) > port_in_use;
    4. ``hang`` flag (nccl_error when NCCL itself reported a timeout);
    5. the fatal signal of the failed worker (torchrun's root cause, else the exit status, else
       a signal named in the log): SIGSEGV, SIGBUS, SIGKILL, SIGABRT (nccl_error with NCCL text);
    6. NCCL errors (usually the echo of another rank's death, hence so low); 7. unknown.

    Before those: ``config_error`` for a first attempt (``attempt`` None or 1) that logged no
    step and printed a usage error; then Slurm's own words when the scheduler ended the job
    (``*** JOB N ON host CANCELLED AT ... DUE TO TIME LIMIT ***``, ``... PREEMPTION``, an
    ``oom_kill`` event: the classes the job's state gives, for when accounting cannot be asked).
    ``gpu_unavailable`` (devices busy/unavailable, no device) and Ray's memory monitor
    (``killed_oom``) come right after the root causes of 3; a missing Python dependency
    (``missing_dependency``: the ``ModuleNotFoundError``/``ImportError`` that ended a traceback,
    with no fatal signal) right after 4. ``python``: the interpreter the attempt ran, named in the
    hint of a missing dependency when the traceback does not show it.

    PIDs named in an OOM message ("Process 566680 has 79.00 GiB memory in use") are another
    process's only when that can be proven: with ``own_pids`` (every PID of the attempt's tree,
    in every PID namespace: see ``runner.process.proctree.own_pid_set``) a named PID is foreign when it is not one
    of them and, if ``live_pids`` is given, is still alive in the runner's namespace (a holder
    of GPU memory outlives our crashed tree; a PID we cannot see cannot be proven foreign).
    Without ``own_pids`` every named PID counts as foreign (the caller knows nothing better).

    ``exit_code`` 0 with no flag is not a crash (see :func:`is_crash`): ValueError.
    """
    if not is_crash(exit_code, user_kill=user_kill, hang=hang, divergence=divergence):
        raise ValueError("exit status 0 is a clean exit, not a crash")
    if user_kill:
        return _verdict("user_kill", [], "stopped by the user", retryable=False, recovery="none")
    s = _scan(log_tail)
    code, signum, status_lines = _effective_status(exit_code, s)
    if divergence:
        return _verdict("divergence", s.div.decisive + s.div.support,
                        "non-finite loss or grad norm seen by the monitors; the run was stopped",
                        retryable=False, recovery="pause", hint=_DIVERGENCE_HINT)
    if s.usage and steps_seen == 0 and attempt in (None, 1) and not (s.oom or s.fault or s.nccl):
        return _config_verdict(s, code, status_lines)
    slurm = _slurm_text_verdict(s, hang, plain_cancel=False)
    if slurm is not None:
        return slurm
    if s.recompute:
        return _recompute_verdict(s)
    if s.div or code in (EXIT_RESUME_TO_DISAMBIGUATE, EXIT_FAILED_ON_RESULT_VALIDATION):
        return _divergence_verdict(s, code, status_lines)
    if s.fault:
        return _fault_verdict(s)
    if s.oom:
        return _oom_verdict(s, steps_seen, foreign_gpu_memory, own_pids, live_pids)
    if s.port:
        return _port_verdict(s)
    if s.gpu:
        return _gpu_unavailable_verdict(s, status_lines)
    if s.host_oom:
        return _verdict("killed_oom", s.host_oom.decisive,
                        "Ray's memory monitor killed a worker: the node ran low on host memory",
                        retryable=True, recovery="restart",
                        hint="host RAM, not GPU memory, ran out: lower dataloader workers, pinned memory "
                             "or CPU offload, or raise RAY_memory_usage_threshold only if the node "
                             "really has the room")
    if hang:
        if s.nccl_timeout:
            return _nccl_verdict(s, status_lines)
        return _verdict("hang", s.last_lines[-1:],
                        "no log output and no step progress past the heartbeat timeout; "
                        "the runner killed the attempt", retryable=True, recovery="restart",
                        hint="if it recurs at the same step, look for a collective one rank "
                             "never reaches (uneven data, a rank stuck in I/O)")
    if s.deps and signum not in _DECISIVE_SIGNALS:
        return _dependency_verdict(s, status_lines, python)
    sig, sig_lines = _fatal_signal(signum, status_lines, s)
    if sig == _signal.SIGABRT and s.nccl:
        return _nccl_verdict(s, sig_lines)
    if sig in _SIGNAL_CLASSES:
        return _signal_verdict(_SIGNAL_CLASSES[sig], sig, sig_lines, s)
    if s.nccl:
        return _nccl_verdict(s, status_lines)
    # a plain CANCELLED comes last: srun --kill-on-bad-exit cancels the step (and the job)
    # after a rank failed, so the rank's own evidence above is the cause when there is any
    cancelled = _slurm_text_verdict(s, hang, plain_cancel=True)
    if cancelled is not None:
        return cancelled
    return _unknown_verdict(exit_code, code, signum, status_lines, s)


def _effective_status(exit_code: int | None, s: _Scan) -> tuple[int | None, int | None, list]:
    """The failed worker's status: torchrun's root cause, its 'failed' line, a failure entry
    pasted without its header, else our own."""
    for entry in (s.root, s.failed_line, _failure_entry(s)):
        if entry is not None and entry.exitcode is not None:
            code, signum = decode_exit(entry.exitcode)
            return code, signum, entry.lines
    code, signum = decode_exit(exit_code)
    return code, signum, []


def _fatal_signal(signum: int | None, status_lines: list, s: _Scan) -> tuple[int | None, list]:
    if signum in _DECISIVE_SIGNALS:
        return signum, status_lines
    for idx, text, text_sig in s.sig_text:
        if text_sig in _DECISIVE_SIGNALS:
            return text_sig, status_lines + [(idx, text)]
    return signum, status_lines


def _evidence(*groups: list[tuple[int, str]]) -> tuple[str, ...]:
    """Unique lines, earlier groups first (decisive before supporting), then in log order."""
    chosen: dict[str, int] = {}
    for group in groups:
        for idx, text in group:
            if len(chosen) >= MAX_EVIDENCE:
                break
            text = _cap(text)
            if text not in chosen:
                chosen[text] = idx
    return tuple(t for t, _ in sorted(chosen.items(), key=lambda kv: kv[1]))


def _verdict(cls: str, lines: list[tuple[int, str]], summary: str, *, retryable: bool,
             recovery: str, hint: str | None = None, env: dict[str, str] | None = None,
             cooldown_scale: float = 1.0, extra: list[tuple[int, str]] | None = None) -> CrashVerdict:
    return CrashVerdict(cls=cls, evidence=_evidence(lines, extra or []), retryable=retryable,
                        recovery=recovery, summary=summary, hint=hint, env=env or {},
                        cooldown_scale=cooldown_scale)


# A batch job's final state that proves the cause whatever the log says (Slurm's JobState words).
_NODE_FAILURE = re.compile(r"srun: error: Node failure on (\S+)")
_JOB_STATE_TEXT = re.compile(r"\*\*\* (?:JOB|STEP) [\d.]+ ON \S+ CANCELLED AT \S+(?: DUE TO (?P<why>[A-Z ]+))?")
_JOB_STATES = {
    # state: (class, summary, recovery, retryable, hint)
    "NODE_FAIL": ("node_fail", "a node of the job failed (Slurm: NODE_FAIL)", "restart", True,
                  "resubmitted from the newest verified checkpoint; Slurm avoids a node it marked down"),
    "BOOT_FAIL": ("node_fail", "a node could not boot for the job (Slurm: BOOT_FAIL)", "restart", True, None),
    "PREEMPTED": ("preempted", "the job was preempted by a higher-priority job (Slurm: PREEMPTED)", "restart", True,
                  "resubmitted from the newest verified checkpoint"),
    "TIMEOUT": ("time_limit", "the job reached its time limit (Slurm: TIMEOUT)", "restart", True,
                "resubmitted from the newest verified checkpoint; a longer slurm.time or more frequent "
                "saves lose less work"),
    "DEADLINE": ("time_limit", "the job reached its deadline (Slurm: DEADLINE)", "restart", True, None),
    "OUT_OF_MEMORY": ("killed_oom", "the job ran out of host memory (Slurm: OUT_OF_MEMORY)", "restart", True,
                      "the node's memory limit (cgroup) killed it: lower the batch size or ask for more --mem"),
    # Not Slurm's words: the runner's record of an sbatch that gave no job id.
    "SUBMIT_REFUSED": ("submit_refused", "sbatch refused the job", "fail", False,
                       "fix the slurm section (partition, account, options) and start the run again"),
    "SUBMIT_UNREACHABLE": ("slurm_unavailable", "the Slurm controller could not be reached to submit the job",
                           "wait_slurm", True, "submitted again after restart.submit_wait_s"),
    "CANCELLED": ("job_cancelled", "the job was cancelled outside moeconsole (scancel by a user or an admin)",
                  "none", False, "not restarted: whoever cancelled it meant it; `moeconsole restart RUN` starts it again"),
}


def classify_job_state(job_state: str | None, log_tail: list[str],
                       failed_nodes: tuple[str, ...] = ()) -> CrashVerdict | None:
    """The crash a batch system's final job state proves (None: judge by exit status and log).
    TIMEOUT ends with exit 0:0 in sacct, so the state, not the exit code, is the witness.
    Evidence: the state itself, slurmstepd's ``*** JOB N ... CANCELLED ... ***`` lines, srun's
    ``Node failure on NODE`` and, after a NODE_FAIL, the nodes Slurm took out of service
    (``failed_nodes``: ``node2: down* (Not responding)``), which the summary names."""
    if job_state not in _JOB_STATES:
        return None
    cls, summary, recovery, retryable, hint = _JOB_STATES[job_state]
    said_failed = [(i, line) for i, line in enumerate(log_tail) if _NODE_FAILURE.search(line)]
    if cls == "node_fail":
        names = [n.split(":", 1)[0] for n in failed_nodes] or \
                list(dict.fromkeys(m.group(1) for _, line in said_failed if (m := _NODE_FAILURE.search(line))))
        if names:
            summary = f"{', '.join(names)} failed: {summary}"
    lines = [(i, line) for i, line in enumerate(log_tail) if _JOB_STATE_TEXT.search(line)]
    said = [(i, line) for i, line in enumerate(log_tail) if line.startswith("moeconsole: sbatch failed: ")]
    if job_state.startswith("SUBMIT_"):
        lines = said
        if said:
            summary = f"{summary}: {said[-1][1].split(': ', 2)[-1]}"
    return _verdict(cls, lines[-3:] + said_failed[-3:], summary, retryable=retryable, recovery=recovery, hint=hint,
                    extra=[(-1, f"Slurm job state: {job_state}")] + [(-1, f"Slurm node {n}") for n in failed_nodes])


_DIVERGENCE_HINT = ("the run is paused with its log window kept: inspect the loss and grad-norm "
                    "chart and the last checkpoints (one saved during the spike is suspect), "
                    "then resume from an earlier checkpoint or lower the learning rate")
_RECOMPUTE_HINT = ("the recomputed forward differs from the original forward: usually "
                   "non-deterministic MoE routing in recompute (router ties, token dropping, "
                   "RNG not restored). Make routing deterministic in recompute or exclude the "
                   "router/MoE layers from activation recompute; a restart hits it again")


def _recompute_verdict(s: _Scan) -> CrashVerdict:
    counts = {}
    for _, text in s.recompute.support:
        m = _RECOMPUTE_COUNT.search(text)
        if m:
            counts[m.group(1)] = m.group(2)
    summary = "activation-checkpoint recompute mismatch"
    if len(counts) == 2:
        summary += (f": {counts['forward']} tensors saved in forward, "
                    f"{counts['recomputation']} in recomputation")
    return _verdict("recompute_mismatch", s.recompute.decisive, summary, retryable=False,
                    recovery="fail", hint=_RECOMPUTE_HINT, extra=s.recompute.support)


def _divergence_verdict(s: _Scan, code: int | None, status_lines: list) -> CrashVerdict:
    first = (s.div.decisive or s.div.support or [(0, "")])[0][1]
    it = _DIV_ITERATION.search(first)
    where = f" at iteration {it.group(1)}" if it else ""
    if "Loss became infinite or NaN" in first:
        return _verdict("divergence", s.div.decisive + status_lines,
                        f"detectron2: the loss became infinite or NaN{where}", retryable=False,
                        recovery="pause", hint=_DIVERGENCE_HINT)
    if "Minimum loss scale reached" in first or "gradients are Nan/Inf" in first:
        scale = re.search(r"Minimum loss scale reached \(([^)]+)\)", first)
        what = (f"fairseq: the fp16 loss scale fell to its minimum ({scale.group(1)}): the loss is exploding"
                if scale else "fairseq: the gradients are NaN/Inf")
        return _verdict("divergence", s.div.decisive + status_lines, what, retryable=False,
                        recovery="pause", hint=_DIVERGENCE_HINT)
    if "grad norm" in first:
        what = f"Megatron found a non-finite local grad norm{where}"
    elif "forward loss" in first:
        what = f"Megatron found a non-finite forward loss{where}"
    elif "returned nan values" in first:
        what = "autograd anomaly mode found NaN values"
    elif first:
        what = f"Megatron result validation failed{where}"
    else:
        what = "Megatron's rerun state machine reported an unexpected result"
    if code == EXIT_RESUME_TO_DISAMBIGUATE:
        return _verdict("divergence", s.div.decisive + status_lines,
                        f"{what}; its rerun state machine saved a checkpoint and asks to resume "
                        f"(exit 16) to tell a hardware fault from a real divergence",
                        retryable=True, recovery="restart",
                        hint="restarting lets Megatron rerun the step; a reproducible result "
                             "ends with exit 17 and pauses the run",
                        extra=s.div.support)
    if code == EXIT_FAILED_ON_RESULT_VALIDATION:
        what += " (exit 17: the unexpected result was confirmed)"
    return _verdict("divergence", s.div.decisive + status_lines, what, retryable=False,
                    recovery="pause", hint=_DIVERGENCE_HINT, extra=s.div.support)


def _fault_verdict(s: _Scan) -> CrashVerdict:
    scale = NCCL_COOLDOWN_SCALE if s.nccl else 1.0
    extra = s.nccl.decisive[:2]
    reset = next((x for x in s.xids if x[2] in RESET_XIDS), None)
    gone = next((text for _, text in s.fault.decisive if _GPU_GONE.search(text)), None)
    if reset is None and gone is not None:
        return _verdict("cuda_fault", s.fault.decisive, "a GPU has fallen off the bus: it needs a reset",
                        retryable=False, recovery="fail", cooldown_scale=scale, extra=extra,
                        hint="the driver lost the GPU (like Xid 79): reset it or drain the node; check "
                             "`nvidia-smi -q` and dmesg before running on this GPU again")
    if reset is not None:
        return _verdict("cuda_fault", s.fault.decisive,
                        f"NVIDIA Xid {reset[2]} on {reset[3]}: the GPU needs a reset",
                        retryable=False, recovery="fail", cooldown_scale=scale, extra=extra,
                        hint="Xid 48/79/95 (double-bit ECC, fallen off the bus, uncontained "
                             "ECC) need a GPU reset or a node drain; check `nvidia-smi -q` and "
                             "dmesg before running on this GPU again")
    fault_text = next((m.group(0) for _, text in s.fault.decisive
                       for m in [_FAULT.search(text)] if m), None)
    parts = [f"CUDA fault: {fault_text}"] if fault_text else []
    if s.xids:
        _, _, xid, pci = s.xids[0]
        parts.append(f"NVIDIA Xid {xid} on {pci}")
    summary = parts[0] + (f" ({parts[1]})" if len(parts) > 1 else "")
    return _verdict("cuda_fault", s.fault.decisive, summary, retryable=True,
                    recovery="restart_launch_blocking", env={"CUDA_LAUNCH_BLOCKING": "1"},
                    cooldown_scale=scale, extra=extra,
                    hint="restarting with CUDA_LAUNCH_BLOCKING=1 (slower) so the traceback names "
                         "the failing kernel; repeated faults or Xid lines point at the hardware")


_GENERIC_FRAMES = frozenset({"forward", "backward", "_call_impl", "_wrapped_call_impl", "wrapper",
                             "inner", "apply", "<module>"})


def _oom_phase(frames: list[tuple[str, str]]) -> str:
    """' in backward (chunk_gated_delta_rule_bwd)' etc., from the OOM traceback's frames.

    Names the outermost ``*_bwd`` frame outside torch (the op's backward entry point, e.g.
    FLA's ``chunk_gated_delta_rule_bwd``), or for a forward OOM the innermost own frame.
    """
    own = [(path, func) for path, func in frames if "/torch/" not in path.replace("\\", "/")]
    funcs = [func for _, func in frames]
    if any("backward" in f or "_bwd" in f for f in funcs):
        bwd = next((func for _, func in own if "_bwd" in func), None)
        return f" in backward ({bwd})" if bwd else " in backward"
    if any(f == "forward" or "_fwd" in f for f in funcs):
        name = next((func for _, func in reversed(own) if func not in _GENERIC_FRAMES), None)
        return f" in forward ({name})" if name else " in forward"
    return ""


def interpreter_of(argv: list[str]) -> str | None:
    """The Python an attempt ran (its argv[0] when that is a Python interpreter), for the hint of
    a missing dependency."""
    if argv and os.path.basename(argv[0]).startswith("python"):
        return argv[0]
    return None


def foreign_holders(named: dict[str, str], own_pids: Collection[int] | None,
                    live_pids: Collection[int] | None) -> dict[str, str]:
    """The PIDs of an OOM message proven to be other processes' (see :func:`classify`)."""
    if own_pids is None:
        return dict(named)
    own = {int(p) for p in own_pids}
    live = None if live_pids is None else {int(p) for p in live_pids}
    return {pid: size for pid, size in named.items()
            if int(pid) not in own and (live is None or int(pid) in live)}


def _oom_verdict(s: _Scan, steps_seen: int, foreign_gpu_memory: bool,
                 own_pids: Collection[int] | None = None,
                 live_pids: Collection[int] | None = None) -> CrashVerdict:
    info = s.oom_info
    foreign = foreign_holders(info.foreign, own_pids, live_pids)
    phase = _oom_phase(info.frames)
    if not phase and steps_seen == 0:
        phase = " before the first logged step"
    gpus = ""
    if info.gpus:
        gpus = f" on GPU {info.gpus[0]}" if len(info.gpus) == 1 else f" on GPUs {', '.join(info.gpus)}"
    size = f", tried to allocate {info.size}" if info.size else ""
    if steps_seen == 0 and (foreign_gpu_memory or foreign):
        held = ", ".join(f"pid {pid}: {size_}" for pid, size_ in list(foreign.items())[:4])
        who = f" ({held})" if held else ""
        return _verdict("gpu_busy_at_init", s.oom.decisive,
                        f"CUDA out of memory{phase}{gpus} while other processes hold GPU memory{who}",
                        retryable=True, recovery="restart_after_gpu_clear",
                        hint="leftover processes (an earlier job, an inference server, an orphaned "
                             "rank) hold GPU memory: `moeconsole gpus` lists them; the runner waits "
                             "for the memory to be released before restarting")
    hint = ("a transient spike may pass on restart; if it repeats, lower the micro-batch or "
            "sequence length, or enable activation recompute")
    if info.unallocated_gib >= FRAGMENTATION_MIN_GIB:
        hint += f"; reserved-but-unallocated memory is large, try {alloc_conf_advice(None)}"
    return _verdict("cuda_oom", s.oom.decisive, f"CUDA out of memory{phase}{size}{gpus}",
                    retryable=True, recovery="restart", hint=hint)


def _slurm_text_verdict(s: _Scan, hang: bool, *, plain_cancel: bool) -> CrashVerdict | None:
    """The class Slurm's own words give when the scheduler ended the job (time limit, preemption,
    node failure, a cgroup OOM kill). A plain ``CANCELLED`` (``plain_cancel``: asked only when
    nothing else explains the end) is someone's scancel, unless the runner itself ended the
    attempt (``hang``: it cancelled the job after the heartbeat)."""
    if not s.slurm:
        return None
    hits = [h for h in s.slurm if h[2] != "CANCELLED" or (plain_cancel and not hang)]
    if not hits:
        return None
    state = next((h[2] for h in reversed(hits) if h[2] != "CANCELLED"), hits[-1][2])
    cls, summary, recovery, retryable, hint = _JOB_STATES[state]
    lines = [(i, t) for i, t, st in hits if st == state]
    summary = summary.replace("(Slurm: ", "(Slurm's message; state ")
    return _verdict(cls, lines[-3:], summary, retryable=retryable, recovery=recovery, hint=hint)


# pip's name for a module whose distribution is called otherwise
_PIP_NAMES = {"yaml": "pyyaml", "sklearn": "scikit-learn", "cv2": "opencv-python", "PIL": "pillow",
              "flash_attn": "flash-attn", "fla": "flash-linear-attention", "swift": "ms-swift"}


def _python_of(frames: list[tuple[str, str]]) -> str | None:
    """The interpreter whose site-packages the traceback ran through."""
    for path, _ in frames:
        m = _SITE_PACKAGES.match(f'File "{path}"')
        if m:
            return f"{m.group(1)}/bin/python{m.group(2)}"
    return None


def _dependency_verdict(s: _Scan, status_lines: list, python: str | None) -> CrashVerdict:
    idx, text, frames = s.deps[0]
    dm = _DEP.match(text)
    assert dm is not None
    msg = dm.group("msg")
    where = _python_of(frames) or python
    in_python = f" in {where}" if where else ""
    missing = _DEP_MODULE.search(msg)
    if missing:
        module = missing.group(1)
        top = module.split(".")[0]
        summary = f"Python module '{module}' is not installed{in_python}"
        pip = _PIP_NAMES.get(top, top)
        what = f"pip install {pip}"
    else:
        so = _DEP_SO.search(msg)
        name = _DEP_FROM.search(msg)
        if so:
            lib = so.group(1).rsplit("/", 1)[-1].split(".")[0]
            summary = f"a compiled extension cannot be loaded{in_python}: {_cap(msg)[:200]}"
            what = (f"reinstall the package that ships {lib} built for this Python's torch and CUDA "
                    f"(a missing or mismatched library)")
        elif name:
            summary = (f"'{name.group(1)}' cannot be imported from '{name.group(2)}'{in_python} "
                       f"(a version mismatch)")
            what = f"install the version of {name.group(2).split('.')[0]} the code expects"
        else:
            summary = f"an import failed{in_python}: {_cap(msg)[:200]}"
            what = "install what the import needs"
    demo = any("/runner/demo/" in path.replace("\\", "/") for path, _ in frames)
    interp = where or "the Python that runs the training"
    if demo:
        hint = (f"the demo needs torch in {interp}: run `{where + ' -m ' if where else ''}pip install "
                f"'moeconsole[demo]'`, then `moeconsole restart RUN`; a restart without it fails the same way")
    else:
        hint = (f"{what} in {interp}, then `moeconsole restart RUN`; it cannot heal by itself, so "
                f"it is not restarted")
    return _verdict("missing_dependency", [(idx, text)] + status_lines, summary, retryable=False,
                    recovery="fail", hint=hint)


def _config_verdict(s: _Scan, code: int | None, status_lines: list) -> CrashVerdict:
    own = s.usage.decisive[-1][1]     # argparse prints usage first, the error line last
    how = f" (exit {code})" if code is not None else ""
    return _verdict("config_error", s.usage.decisive + status_lines,
                    f"configuration error{how}: {_cap(own)[:300]}", retryable=False, recovery="fail",
                    hint="the trainer rejected its command line or arguments before training "
                         "started; restarting would fail the same way: fix the recipe's command "
                         "(see the trainer's own error line) and run it again")


def _gpu_unavailable_verdict(s: _Scan, status_lines: list) -> CrashVerdict:
    text = s.gpu.decisive[0][1]
    m = _GPU_UNAVAILABLE.search(text)
    what = m.group(0) if m else "CUDA devices unavailable"
    return _verdict("gpu_unavailable", s.gpu.decisive + status_lines, f"no usable GPU: {what}",
                    retryable=True, recovery="wait_gpu",
                    hint="the GPUs are in exclusive-process mode and held by another process, "
                         "missing from CUDA_VISIBLE_DEVICES, or the driver lost them: check "
                         "`nvidia-smi` (compute mode, processes) and the job's device list; the "
                         "runner waits for a device up to the restart section's gpu_wait_max_s, "
                         "then fails")


def _port_verdict(s: _Scan) -> CrashVerdict:
    port = None
    for _, text in s.port.decisive:
        m = _PORT_NUMBER.search(text)
        if m:
            port = next(g for g in m.groups() if g)
            break
    what = f"port {port}" if port else "the rendezvous port"
    return _verdict("port_in_use", s.port.decisive, f"{what} is already in use (EADDRINUSE)",
                    retryable=True, recovery="wait_port",
                    hint=f"another process holds {what} (an orphaned worker, or a previous run in "
                         f"TIME_WAIT); the runner waits for it to be free, or set MASTER_PORT to a "
                         f"free port")


def _nccl_verdict(s: _Scan, status_lines: list) -> CrashVerdict:
    lines = s.nccl.decisive
    summary = "NCCL error"
    for _, text in s.nccl_timeout.decisive[:1]:
        op, ran, rk = _NCCL_OP.search(text), _NCCL_RAN.search(text), _PG_RANK.search(text)
        summary = "NCCL watchdog timeout"
        if op:
            summary += f": {op.group(1)}"
        if ran:
            summary += f" ran for {int(ran.group(1)) / 1000:.0f} s"
        if rk:
            summary += f" on rank {rk.group(1)}"
        if "watchdog got stuck" in text:
            summary = "ProcessGroupNCCL watchdog got stuck"
    if summary == "NCCL error":
        for _, text in lines:
            m = _NCCL_API.search(text)
            if m:
                summary = f"NCCL error: {m.group(1)}"
                if m.group(2):
                    summary += f" (NCCL {m.group(2)})"
                break
            if "communicator was aborted" in text:
                summary = "NCCL communicator was aborted"
                break
    return _verdict("nccl_error", lines + status_lines, summary, retryable=True,
                    recovery="restart_long_cooldown", cooldown_scale=NCCL_COOLDOWN_SCALE,
                    hint="the whole process tree is killed and the cooldown is long so NCCL IPC "
                         "state is released; if it repeats at the same step, one rank may be "
                         "stuck or dead (see its own log lines)",
                    extra=s.nccl.support)


def _who(status_lines: list, s: _Scan) -> str:
    root = s.root if s.root is not None and s.root.exitcode is not None else (s.failed_line or _failure_entry(s))
    if root is None or not status_lines:
        return ""
    parts = []
    if root.rank is not None:
        parts.append(f"rank {root.rank}" + (f" on {root.host}" if root.host else ""))
    elif root.host:
        parts.append(f"on {root.host}")
    if root.pid is not None:
        parts.append(f"pid {root.pid}")
    return f" ({', '.join(parts)})" if parts else ""


def _signal_verdict(cls: str, sig: int, lines: list, s: _Scan) -> CrashVerdict:
    who = _who(lines, s)
    name = signal_name(sig)
    if cls == "killed_oom":
        return _verdict(cls, lines, f"killed by {name}{who} without a user kill: most likely the "
                                    f"host OOM killer", retryable=True, recovery="restart",
                        hint="check `dmesg` for 'Out of memory: Killed process'; lower host memory "
                             "use (dataloader workers, pinned memory, CPU offload)")
    if cls == "segfault":
        return _verdict(cls, lines, f"segmentation fault ({name}){who}", retryable=True,
                        recovery="restart",
                        hint="if it repeats, run with PYTHONFAULTHANDLER=1 to get the Python stack")
    return _verdict(cls, lines, f"bus error ({name}){who}", retryable=False, recovery="fail",
                    hint="usually /dev/shm is exhausted (dataloader workers) or a memory-mapped "
                         "file was truncated: raise the shared-memory size (docker --shm-size) "
                         "or lower dataloader workers")


def _unknown_verdict(exit_code: int | None, code: int | None, signum: int | None,
                     status_lines: list, s: _Scan) -> CrashVerdict:
    if signum is not None:
        how = f"ended by {signal_name(signum)}"
    elif code is not None:
        how = f"exited with code {code}"
    elif exit_code is None:
        how = "ended with an unknown exit status"
    else:
        how = f"exited with code {exit_code}"
    first_exc = s.exceptions[0][1] if s.exceptions else None
    summary = f"{how}{_who(status_lines, s)}"
    if first_exc:
        summary += f": {first_exc[:200]}"
    lines = s.exceptions + status_lines
    return _verdict("unknown", lines or s.last_lines, summary, retryable=True, recovery="restart",
                    extra=[(i, t) for i, t, _ in s.sig_text])
