"""Crash classification: one exit of a training attempt -> one crash class and its recovery.

Pure functions on plain data (an exit status, the last log lines, a few facts the runner
knows), so the runner can call :func:`classify` after every exit and tests can feed it texts.
The signatures come from docs/crash-classes.md (torch, NCCL, CUDA and driver texts); the
precedence between them is documented there and in :func:`classify`.
"""
from __future__ import annotations

import functools
import os
import re
import shlex
import signal as _signal
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any, Callable, Collection, Iterable, Iterator, Mapping, NamedTuple

from moeconsole.runner.core import sbatch_words
from moeconsole.runner.core.memory import alloc_conf_advice
from moeconsole.runner.core.units import clip, human_bytes
from moeconsole.runner.core.programs import frames_ran_here, can_tell_program, traceback_complete
from moeconsole.runner.core.oom import (FRAGMENTATION_MIN_GIB, asks_past_exabyte, parse_oom_message, torch_oom_rendered,
                                         torch_size_text)

from moeconsole.runner.core.logline import ANSI_TEXT_RE, MPI_TAG, RANK_PREFIX_RE, SRUN_LABEL_RE, prefix_rank

CRASH_CLASSES = (
    "gpu_busy_at_init", "cuda_oom", "nccl_error", "port_in_use", "divergence",
    "recompute_mismatch", "cuda_fault", "killed_oom", "segfault", "bus_error", "hang",
    "user_kill", "gpu_unavailable", "config_error", "node_fail", "preempted", "time_limit",
    "job_cancelled", "submit_refused", "slurm_unavailable", "missing_dependency", "launch_failed", "disk_full",
    "environment_error", "hub_access", "hub_rate_limited", "unknown",
)
RECOVERIES = (
    "restart", "restart_after_gpu_clear", "restart_long_cooldown", "wait_port", "pause",
    "fail", "restart_launch_blocking", "wait_gpu", "wait_slurm", "wait_disk", "wait_hub", "none",
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
# Xid 154 announces that the recovery action of its GPU changed (NVIDIA's Xid catalog, "GPU Recovery Action
# Changed": "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"; NVML's
# nvmlDeviceGpuRecoveryAction_t: None, GPU Reset, Node Reboot, Drain P2P, Drain and Reset, and from R610
# Recover IMEX Domain, Bus Reset, System Reboot). The action is per GPU and the latest change is the GPU's
# state: "None" means "the GPU can be immediately used again by starting a new GPU process", so a later
# change back to None undoes an earlier reset request, and another GPU's change is weighed on its own. An
# action that names a reset or a reboot means no restart on that GPU (node) can help, whatever Xid came
# before it (62, 119, 31 ...); "Drain P2P" asks only that peer traffic stop, so it does not decide.
XID_RECOVERY_ACTION = 154
# Xids the driver logs where no process met a fault (since batch 67): NVIDIA's Xid catalog (docs.nvidia.com/deploy/
# xid-errors/analyzing-xid-catalog.html, sheet "Xids", 2025-2026 revision; the driver's names in
# open-gpu-kernel-modules src/common/sdk/nvidia/inc/nverror.h) gives each "IGNORE" as its immediate action and
# triggers that touch no application: 63 INFOROM_DRAM_RETIREMENT_EVENT ("GPU memory remapping event", the row
# remapper recording a remap, IGNORE/IGNORE; the fault that caused it is its own Xid, 48, 94 or 95), 92
# EXCESSIVE_SBE_INTERRUPTS ("High single-bit ECC error rate": single-bit errors, which ECC corrects), 93
# INFOROM_ERASE_LIMIT_EXCEEDED ("Non-fatal violation of provisioned InfoROM wear limit"), 106/107 SMBPBI_TEST_MESSAGE
# (a test message), 121 C2C_ERROR ("corrected errors on the C2C NVLink connection to a Grace CPU ... no operational
# impact"). The driver's line with one of these, or a person's "we saw Xid 92 on node 3", tells no fault of the run:
# a guide's "Typical kernel-log signature" of Xid 92 read as a CUDA fault (plexus.company's Xid 92 page, batch 67's
# 1443). Xid 43 (IGNORE too) is not one: its application "hits a software induced fault and must terminate".
XID_NO_FAULT = frozenset({63, 92, 93, 106, 107, 121})
_XID_RECOVERY = re.compile(r"GPU recovery action changed (?:from [^()]*?(?:\([A-Za-z0-9 ]*\))? ?)?to "
                           r"(?:0x[0-9a-fA-F]+ ?)?(?:\((?P<named>[A-Za-z0-9 ]+)\)|(?P<bare>[A-Za-z][A-Za-z0-9 ]*))")
_XID_RESET_ACTION = re.compile(r"\b(?:Reset|Reboot)\b")


def xid_recovery_action(text: str) -> str | None:
    """The recovery action an Xid 154 line changes its GPU to ("GPU Reset Required", "None", ...), or None."""
    m = _XID_RECOVERY.search(text)
    return (m.group("named") or m.group("bare")).strip() if m else None


def _action_severity(action: str) -> int:
    """0: the GPU can be used again (None, Drain P2P); 1: a reset; 2: a reboot."""
    if not _XID_RESET_ACTION.search(action):
        return 0
    return 2 if "Reboot" in action else 1


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


# The identity of a crash's error (``error_identity``): the exception line (``Type: message``) or, without one,
# the first line of evidence, with what differs between two runs of the same error masked: hex addresses,
# numbers (PIDs, ranks, sizes, times, steps, the step in a checkpoint's name) and the environment's prefixes.
_IDENTITY_EXC = re.compile(r"(?:^|(?<=[\s:\]]))((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit)"
                           r"(?::\s.*|$))")
_IDENTITY_NUM = re.compile(r"\b0[xX][0-9a-fA-F]+\b|\d+")
IDENTITY_CHARS = 200


def error_identity(verdict: CrashVerdict) -> str:
    """What makes two crashes "the same error" for the restart policy (``policy.repeated_crash``): the
    class, then the exception type and its message line (the first evidence line that is one; else the
    first evidence line; else the summary), masked so that PIDs, addresses, timestamps, sizes and step
    numbers do not tell two runs of one error apart: ``unknown: megatron.core.dist_checkpointing.core.
    CheckpointingException: Flattened ranges dont cover the whole shard ShardedTensor(... local_shape=(#, #))``."""
    lines = [_strip_env_prefix(clean_line(e)[0]).strip() for e in verdict.evidence]
    lines = [line for line in lines if line]
    found = next((m.group(1) for line in lines if (m := _IDENTITY_EXC.search(line))), None)
    text = found or (lines[0] if lines else verdict.summary)
    text = _IDENTITY_NUM.sub("#", text)
    return f"{verdict.cls}: {' '.join(text.split())[:IDENTITY_CHARS].rstrip()}"


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


# ---------------------------------------------------------------------------------------
# Crash-text normalisation: the text as the program printed it, from the text as it reached us
# (a live log tail, a file, a paste in an issue). One function, used by :func:`classify` (hence
# by the live runner and every caller of it) and by the held-out corpus checks.

MAX_LINE_CHARS = 1 << 20       # a longer line keeps its head and its tail (the exception is last)
MAX_PART_CHARS = 16384         # one line after splitting; evidence is capped far lower anyway
MAX_LINES = 6000               # lines kept after splitting (the last ones: the crash is at the end)
_ELLIPSIS_CUT = " ... "

# Bytes no log line carries (NUL and the other C0 controls but tab and ESC, DEL, and the C1
# controls U+0080-U+009F: in UTF-8 text those are terminal commands, never words; U+009B is CSI,
# which a terminal reads as ESC [, so "\u009b2J" in a summary cleared the screen of whoever ran
# `runs show`, round 15) and lone surrogates (``errors="surrogateescape"`` decoding): dropped, so
# binary junk in a tail reads as nothing instead of breaking a regex, the JSON the verdict is
# written to, or the terminal it is shown on.
_JUNK = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f\ud800-\udfff]")

# Constant prefixes the environment writes in front of the program's own words, one piece at a
# time (several may stand in a row: `10.0.0.5: [2024-01-02 03:04:05,678] (Worker pid=7) ...`).
# Sources: Python logging's asctime (`2024-01-02 03:04:05,678`), ISO-8601 with `T`/`Z`/offset
# (Kubernetes, Docker `--timestamps`), ctime (`Wed Sep 20 19:33:32 2017`, mpirun
# `--timestamp-output`), journald/syslog (`Apr 29 19:24:11 host kernel:`), dmesg
# (`[ 1843.308145]`), a log viewer's `date time | ` column, Ray's worker prefix
# (`(RayTrainWorker pid=1234, ip=10.0.0.1)`, `(raylet)`: ray/_private/log_monitor.py; vLLM's
# `(VllmWorker TP0 pid=N)`), vLLM's logger header (`ERROR 09-28 15:47:24 [core.py:718] `),
# Open MPI's `--tag-output` (`[1,9]<stderr>:`), glog/absl line headers of severity I, W, E
# (`E0724 19:33:34.565000 128818 torch/distributed/elastic/multiprocessing/api.py:702] `,
# glog's LogMessage::Init; torch's c10 logging, torchrun's own log lines), a captured stream's
# `stderr: ` / `stdout: ` label, and pdsh's `host: ` (DeepSpeed's multi-node launcher: taken
# only when the same host label starts several lines, see _host_labels).
_TS_DATE = r"\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
_TS_CTIME = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \w{3} +\d+ \d{2}:\d{2}:\d{2} \d{4}"
_TS_SYSLOG = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) +\d+ \d{2}:\d{2}:\d{2} [\w.-]+ [\w.\-\[\]]+:"
_ENV_PREFIX = re.compile(
    r"(?:\[\s*(?:" + _TS_DATE + r")\]:?|" + _TS_DATE + r":?|\[?" + _TS_CTIME + r"\]?|" + _TS_SYSLOG
    + r"|\[\s*\d+\.\d+\]"                                   # dmesg
    + r"|\[?\d{2}:\d{2}:\d{2}(?:[.,]\d+)?\]?(?= )"          # time of day
    + r"|\((?:raylet|gcs_server|autoscaler|[A-Za-z_][\w.:-]*(?: [A-Za-z_][\w.:-]*)?(?: rank=\d+)? pid=\d+)"
    + r"(?:, ip=[\w.:-]+)?\)"
    # vLLM's logger header (vllm/logger.py: "%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d] ", date
    # "%m-%d %H:%M:%S"; up to 0.6 "%(levelname)s %(asctime)s %(filename)s:%(lineno)d] ") of DEBUG, INFO and
    # ERROR lines (a worker's traceback is logged line by line at ERROR); WARNING and CRITICAL keep theirs,
    # as glog's W and F do. Its process prefix "(VllmWorker TP0 pid=N)" / "(EngineCore_DP0 pid=N)" is the one
    # above.
    + r"|(?:DEBUG|INFO|ERROR) \d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)? (?:\[[^\]\s]+:\d+\]|[^\]\s]+:\d+\])"
    + r"|" + MPI_TAG                                        # mpirun --tag-output (core.logline)
    + r"|[IE]\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [^\]\s]+:\d+\]"
    + r"|[IE] [\w./\\-]+:\d+\]"                             # TensorFlow's "I tensorflow/core/...cc:123]"
    + r"|std(?:out|err):"
    + r"|[\w.-]+[-_]\d+ +\|(?= )"                        # docker compose's "service-1  | " column
    + r")(?:\s*\|(?=\s))?[ \t]?")
# glog/absl FATAL header (`F0531 07:47:31.003927   10044 file.cc:123] msg`): kept, it is the
# exception line of a C++ crash (see _FATAL_LOG).
_FATAL_LOG = re.compile(r"^F(?:\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+)? [^\]\s]+:\d+\] (?P<msg>.*)")
# A host-side C/C++ assert() that failed, in glibc's words (assert/assert.c __assert_fail_base:
# "%s%s%s:%u: %s%sAssertion `%s' failed.\n" = program, ": ", file, line, function, ": ", expression; the
# process then abort()s): "python3: /opt/DeepEP/csrc/hybrid_ep/extension/permute.cu:412: void
# permute_launcher(PermuteArgs) [with ...]: Assertion 'args.output_tokens_ptr != nullptr' failed." (a
# host launcher in a .cu file), Triton's "python3: /project/lib/Tools/LinearLayout.cpp:562: ...: Assertion
# `...' failed.". The exception line of that crash; never a kernel's own assertion (CUDA's __assert_fail
# adds "block: [x,y,z], thread: [x,y,z]" before "Assertion", a device fault: _FAULT).
_HOST_ASSERT = re.compile(r"^(?:[^\s:]+: )?(?P<file>[^\s:]+):(?P<line>\d+): (?!.*\bthread: \[)(?:.*?: )?"
                          r"Assertion [`'\u2018](?P<expr>.*)['\u2019] failed\.?$")
# Markdown and quoting around a pasted line: a quote block's "> ", inline code, bold, italics,
# quotation marks (the paired ones only when they close on the same line).
_MARKUP_LEAD = re.compile(r"^(?:>\s?|`{1,3}|\*\*(?!\*))+")     # never the "***" of glog or slurmstepd
_MARKUP_TAIL = re.compile(r"(?:`{1,3}|(?<!\*)\*\*)+$")
_MARKUP_PAIRS = ('"', "_", "'")
# a JSON object's member whose name opens the line ("regex": "...", RFC 8259 section 4): its first quote closes at the
# name, not at the line's end, so a last member (no comma after it) is no quoted line to unwrap (review R46)
_MEMBER_NAME_LEAD = re.compile(r"([\"'])[^\"'\\]*\1\s*:")
_HOST_LABEL = re.compile(r"^([A-Za-z0-9][\w.-]{0,62}): (?=\S)")
_NOT_A_HOST = re.compile(r"(?:Error|Exception|Warning|Interrupt|Exit|Failure)$|\.(?:py|cc|cpp|cu|cuh|h|hip|c|so)$"
                         r"|^(?:File|Traceback|usage|Note|note|WARNING|INFO|ERROR|DEBUG|CRITICAL|FATAL|Warning|Error"
                         r"|error|warning|srun|sbatch|slurmstepd|torchrun|what|Reason|Cause|Hint|Status|Memory"
                         r"|Last error|\d+)$")

# Where a traceback pasted on one line is split: a traceback header, each frame, the chained-
# exception sentences and a rank prefix in the middle of the line.
_ONE_LINE_SPLIT = re.compile(
    r"\s+(?=Traceback \(most recent call last\):"
    r"|File \"[^\"]+\", line \d+, in "
    r"|The above exception was the direct cause of the following exception:"
    r"|During handling of the above exception, another exception occurred:"
    r"|\[(?:rank|default)\d{1,6}\]:)")
_FRAME_HEAD = re.compile(r'^((?:\[(?:rank|default)\d{1,6}\]:\s*)?File "[^"]+", line \d+, in \S+)\s+(\S.*)$')
# the exception line at the end of the last frame's quoted source
_EXC_IN_LINE = re.compile(r"\s(?=(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Interrupt|Exit)(?::\s|$))")
_CHAINED = ("The above exception was the direct cause", "During handling of the above exception")

# A line a wrap cannot have continued: it starts something of its own.
_LINE_START = re.compile(r"^(?:Traceback \(|File \"|\[|[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Warning)\b"
                         r"|\*\*\*|[IWEF]\d{4} |\d{4}-\d{2}-\d{2}|srun: |slurmstepd)")
_ELISION = re.compile(r"\s*(?:\.{4,}|…+|\[\.\.\.\]|<\.\.\.>|<snip>)\s*")


def _sanitise(raw: str | bytes) -> str:
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8", "replace")
    if len(raw) > MAX_LINE_CHARS:
        half = MAX_LINE_CHARS // 2
        raw = raw[:half] + _ELLIPSIS_CUT + raw[-half:]
    return _JUNK.sub("", raw)


def _strip_markup(text: str) -> str:
    body = _MARKUP_TAIL.sub("", _MARKUP_LEAD.sub("", text.strip()))
    for q in _MARKUP_PAIRS:
        if len(body) > 2 and body[0] == q and body[-1] == q and _MEMBER_NAME_LEAD.match(body) is None:
            body = body[1:-1]
    return body if body != text.strip() else text


def _strip_env_prefix(text: str) -> str:
    """Remove the environment's constant pieces in front of a line, keeping a rank prefix and
    the indentation that follows (a traceback's source lines are told by it)."""
    original = text
    lead = ""
    stripped = False
    for _ in range(8):
        body = text.lstrip()
        if not body:
            break
        m = _ENV_PREFIX.match(body)
        if m and m.end() > 0:
            text = body[m.end():]
            stripped = True
            continue
        rm = RANK_PREFIX_RE.match(body) or SRUN_LABEL_RE.match(body)
        if rm and rm.end() < len(body):
            lead += body[:rm.end()].rstrip() + " "
            text = body[rm.end():]
            continue
        break
    return lead + text if stripped else original


def _host_labels(lines: list[str]) -> frozenset[str]:
    """pdsh-style `host: ` labels: a first word that starts at least three lines and cannot be an
    exception name, a file or a keyword (DeepSpeed's multi-node runner prints `worker-1: ...`)."""
    counts: dict[str, int] = {}
    for line in lines:
        if line.find(": ", 1, 66) < 0:
            continue
        m = _HOST_LABEL.match(line)
        if m:
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return frozenset(h for h, n in counts.items() if n >= 3 and not _NOT_A_HOST.search(h)
                     and any(c.isdigit() or c in ".-_" for c in h))


def _split_one_line(text: str) -> list[str]:
    """A traceback pasted on one line (newlines lost in a web form, an issue, a chat) back into
    lines: split at frame boundaries, the frame's quoted source indented below it, the
    exception line after the last frame's source on its own."""
    body = text.lstrip()
    if not (body.find('File "', 1) > 0 or body.find("Traceback (", 1) > 0 or body.find(" [rank", 1) > 0
            or body.find(" [default", 1) > 0):
        return [text]
    parts = _ONE_LINE_SPLIT.split(text)
    if not parts[0].strip():     # a boundary at the start of the line is no paste to split
        parts = parts[1:]
        if len(parts) == 1:
            return [text]
    if len(parts) == 1:
        return [text]
    out: list[str] = []
    for part in parts:
        fm = _FRAME_HEAD.match(part)
        if fm:
            out.append("  " + fm.group(1))
            source = fm.group(2)
            em = _EXC_IN_LINE.search(source)
            if em:
                out.append("    " + source[:em.start()])
                out.append(source[em.end():])
            else:
                out.append("    " + source)
            continue
        for sentence in _CHAINED:
            at = part.find(sentence)
            if at > 0:
                out.extend([part[:at].rstrip(), part[at:]])
                break
        else:
            out.append(part)
    return out


def normalize_crash_text(lines: Iterable[str | bytes]) -> list[str]:
    """The crash text as the program printed it, from the text as it reached us:

    - bytes decoded (invalid UTF-8 replaced), junk control bytes and lone surrogates dropped, a
      line longer than ``MAX_LINE_CHARS`` cut to its head and tail (the exception is at the end);
    - ``\\r``/``\\n`` inside an item split (progress bars redrawn with ``\\r``); the items are read from
      the end and the last ``MAX_LINES`` lines kept (the crash is at the end; the work stays bounded);
    - the environment's constant prefixes stripped (timestamps, Ray's and Open MPI's worker
      prefixes, glog I/W/E headers, pdsh host labels; see ``_ENV_PREFIX``), rank prefixes kept;
    - a traceback pasted on one line split at its frame boundaries (``_split_one_line``);
    - an elision a user made (``......``, ``…``, ``[...]``) becomes one ``...``;
    - a deciding phrase split by a line wrap rejoined: a line and the next are joined when one
      of the decisive signatures matches only across the boundary (``_rejoin_wraps``).

    Pure; the output is what :func:`classify` scans. An exception line with no ``Traceback``
    header above it is read as it is (the scan does not need the header)."""
    chunks: list[list[str]] = []
    total = 0
    for raw in reversed(list(lines)):     # from the end: the crash is there, and the work stays bounded
        parts = _normalise_item(raw)
        chunks.append(parts)
        total += len(parts)
        if total >= MAX_LINES:
            break
    split = [part for parts in reversed(chunks) for part in parts]
    if len(split) > MAX_LINES:
        split = split[-MAX_LINES:]
    hosts = _host_labels(split) if split else frozenset()
    if hosts:
        split = [_strip_env_prefix(line[len(m.group(0)):]) if (m := _HOST_LABEL.match(line)) and m.group(1) in hosts
                 else line for line in split]
    return _rejoin_wraps(split)


def _normalise_item(raw: str | bytes) -> list[str]:
    """One item of the tail: decoded, split at \\r/\\n, unwrapped from markup and prefixes, a one-line
    traceback split at its frames."""
    out: list[str] = []
    text = _sanitise(raw)
    pieces = re.split(r"[\r\n]+", text) if ("\r" in text or "\n" in text) else [text]
    for piece in pieces:
        if not piece.strip():
            continue
        if (piece[:1] in ">`*\"_'" or piece[-1:] in "`*\"_'") and not _zh_bold_label(piece):
            piece = _strip_markup(piece)
        piece = _strip_env_prefix(piece)
        if "..." in piece or "…" in piece or "<snip>" in piece:
            piece = _ELISION.sub(_ELIDED, piece)
        for part in _split_one_line(piece) if len(piece) > 60 else [piece]:
            if len(part) > MAX_PART_CHARS:    # keep its head (the exception's name) and its end
                part = part[:4096] + _ELLIPSIS_CUT + part[-(MAX_PART_CHARS - 4096 - len(_ELLIPSIS_CUT)):]
            out.append(part)
    return out


def _rejoin_wraps(lines: list[str]) -> list[str]:
    """Join a line with the next when a decisive phrase matches only across their boundary
    (a terminal wrapping at its width cuts mid-word; a web form or an editor wrapping at a
    space drops the space: both joins are tried)."""
    out: list[str] = []
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        while i + 1 < n:
            nxt = lines[i + 1]
            body = nxt.lstrip()
            if not body or _LINE_START.match(body) or len(line) > MAX_PART_CHARS:
                break
            joined = _wrap_join(line, body)
            if joined is None:
                break
            line = joined
            i += 1
        out.append(line)
        i += 1
    return out


def _wrap_join(line: str, nxt: str) -> str | None:
    """``line`` and ``nxt`` joined when a decisive signature matches across their boundary only.
    A wrapped line goes on in lower case or punctuation (``memory.``, ``'flash_attn'``): a line
    starting with a capital starts a sentence of its own and is not tried (it keeps the cost of
    this check off ordinary log lines)."""
    first = nxt[:1]
    if not (first.islower() or first in "'\"`(.,:;_)"):
        return None
    head = line.rstrip()
    tail = head[-160:]
    lead = nxt[:160]
    cut = len(tail)
    for sep in ("", " "):     # a mid-word cut (terminal width) first, then a wrap at a space
        window = tail + sep + lead
        for name in _families(window):
            pattern = _DECISIVE.get(name)
            if pattern is None:
                continue
            for m in pattern.finditer(window):
                if m.start() < cut < m.end():
                    return head + sep + nxt
    return None


# ---------------------------------------------------------------------------------------
# Signatures. A cheap substring pass picks the families a line may belong to (plain `in`
# checks are several times faster than one big regex alternation); only those families'
# detailed patterns run on it.

# nvidia-smi's line for a GPU NVML can no longer reach ("Unable to determine the device handle for GPU0000:01:00.0:
# Unknown Error", NVML_ERROR_UNKNOWN's nvmlErrorString text after nvidia-smi's own head; with NVML_ERROR_GPU_IS_LOST,
# "... : GPU is lost"), the program's words whatever tense the report around them is told in: also as a report
# shortens it, the bus id elided ("Unable to determine the device handle ... Unknown Error", musubi-tuner #106:
# review R46). The one owner for _FAULT (a fault) and _GPU_GONE (the fault needs a reset).
_DEVICE_HANDLE_LOST = (r"Unable to determine the device handle (?:for GPU ?[0-9A-Fa-f:.]+|\.\.\.|…)"
                       r":? (?:Unknown Error|GPU is lost)")
# What each accelerator's own runtime advises for an asynchronous fault, the variable that makes the
# next run fail at the kernel that faulted (the restart_launch_blocking recovery sets it): torch's
# c10 CUDA check "For debugging consider passing CUDA_LAUNCH_BLOCKING=1", its HIP build (ROCm) "For
# debugging consider passing AMD_SERIALIZE_KERNEL=3" (older ROCm builds: HIP_LAUNCH_BLOCKING=1), torch_npu
# (Ascend) "If you want to get the accurate stacktrace, pleace set the environment variable
# ASCEND_LAUNCH_BLOCKING=1." One table owns the switches: the names a log may choose (only these are ever
# taken from a log: a log line must not choose arbitrary environment for a restart), the value each runtime
# advises, and the fault text that names the runtime when no advice line came with it (a pasted tail, a
# cut log; the last row, CUDA's, is the default). Only the advice's own words choose: a shell trace or an
# env dump ("+ export CUDA_LAUNCH_BLOCKING=0") names a switch too, with whatever value the user had.
_HIP_FAULT = re.compile(r"HIP error|hipError|Memory access fault by GPU node|HSA_STATUS_ERROR|HIPBLAS_STATUS"
                        r"|Device-side assertion [`']")
# torch_npu's words for a CANN runtime error of a kernel that faulted on the NPU, when a synchronize or a launch
# returns it (its c10_npu::acl error table, after CANN's rt_error_codes.h: "[Error]: The vector core execution
# is abnormal." beside "NPU function error: ..., error code is 507035", "ACL stream synchronize failed, error
# code:507035", "rtKernelLaunchWithHandleV2 failed: 507015"; the runtime's own "reason=[vector core
# exception]"): ACL_ERROR_RT_AICORE_EXCEPTION 507015, _AICORE_TRAP_EXCEPTION 507016, _AICPU_EXCEPTION 507018,
# _VECTOR_CORE_EXCEPTION 507035, _VECTOR_CORE_TRAP_EXCEPTION 507036, the trap read/write out-of-bounds
# exceptions 507042-507045. Not its timeouts (507014 aicore, 507017 aicpu, 507034 vector core: a kernel that
# ran too long), nor an operator it could not compile (500002, GE's E40021).
_NPU_KERNEL_FAULT_RE = (r"The (?:aicore|aicpu|vector core) execution is abnormal"
                        r"|An exception occurs when (?:the aicore trap is|vector core traps are) executed"
                        r"|(?:The aicore|Vector core) trap (?:read|write) out-of-bounds exception"
                        r"|reason=\[(?:aicore|aicpu|vector core) (?:trap )?exception\]"
                        r"|(?:error code(?: is|:| =)|runtime result =|failed:) ?50701[568]\b"
                        r"|(?:error code(?: is|:| =)|runtime result =|failed:) ?5070(?:3[56]|4[2-5])\b")
_NPU_FAULT = re.compile(r"Kernel task happen error|Aicpu kernel execute failed|" + _NPU_KERNEL_FAULT_RE)
BLOCKING_SWITCHES: tuple[tuple[str, str, re.Pattern[str] | None], ...] = (
    ("ASCEND_LAUNCH_BLOCKING", "1", _NPU_FAULT),
    ("AMD_SERIALIZE_KERNEL", "3", _HIP_FAULT),
    ("HIP_LAUNCH_BLOCKING", "1", None),         # advised by older ROCm builds only: never the fallback
    ("CUDA_LAUNCH_BLOCKING", "1", None),        # the default: CUDA's
)
_LAUNCH_ADVICE = re.compile(r"(?:consider passing|environment variable) ("
                            + "|".join(name for name, _, _ in BLOCKING_SWITCHES) + r")=(\d)\b")



# the substrings that let a line reach _ENV_FA4 (FlashAttention-4's refusals, see there)
_FA4_TOKENS = (" forward with head_dim", " backward with head_dim", " 2CTA ", "forward only supports",
               "not supported on SM", "only supported on SM", "supported on SM90", "Only SM ")

_ILLEGAL_ADDRESS = "an illegal memory access was encountered"   # cudaGetErrorString(cudaErrorIllegalAddress)
_DEVICE_ASSERT = "device-side assert triggered"   # cudaGetErrorString(cudaErrorAssert)

# The CUDA faults, one row each: the number both APIs give it (cuda.h's CUresult, driver_types.h's cudaError_t),
# the driver's name, the runtime's name and the text cuGetErrorString / cudaGetErrorString give it. cuda.h
# documents each as leaving the process in an inconsistent state ("any further CUDA work will return the same
# error. To continue using CUDA, the process must be terminated and relaunched"): a restart is the recovery. 226
# is CUDA 12.8's CUDA_ERROR_CONTAINED / cudaErrorContained, "an exception occurred on the device that is now
# contained by the GPU's error containment capability" (an invalid access of peer GPU memory over NVLink, or a
# hardware error), as torch raises it ("CUDA error: Invalid access of peer GPU memory over nvlink or a hardware
# error") and XLA's allocator logs it ("cudaFreeAsync failed to free ...: CUDA_ERROR_CONTAINED: ..."). Programs
# print a fault by its text, by a name alone ("hitting `CUDA_ERROR_ILLEGAL_INSTRUCTION` inside
# `jit_train_step`"), or by its number (PhysX, below): _FAULT reads the first two, CUDA_FAULT_CODES the third.
_CUDA_FAULTS: tuple[tuple[int, str, str, str], ...] = (
    (700, "CUDA_ERROR_ILLEGAL_ADDRESS", "cudaErrorIllegalAddress", _ILLEGAL_ADDRESS),
    (710, "CUDA_ERROR_ASSERT", "cudaErrorAssert", "device-side assert triggered"),
    (714, "CUDA_ERROR_HARDWARE_STACK_ERROR", "cudaErrorHardwareStackError", "hardware stack error"),
    (715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "cudaErrorIllegalInstruction", "an illegal instruction was encountered"),
    (716, "CUDA_ERROR_MISALIGNED_ADDRESS", "cudaErrorMisalignedAddress", "misaligned address"),
    # a kernel that ran past the display watchdog (Windows' WDDM TDR, also under WSL2; an X server's on Linux):
    # cuda.h documents CUDA_ERROR_LAUNCH_TIMEOUT = 702 as leaving the process in the same inconsistent state ("can
    # only occur if timeouts are enabled - see the device attribute CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT ...
    # To continue using CUDA, the process must be terminated and relaunched"); cudaGetErrorString's text, as torch
    # raises it ("CUDA error: the launch timed out and was terminated"), THC printed it ("THCudaCheck FAIL ...
    # error=702 : ...", pre-CUDA-10 runtimes numbered it 6) and TensorFlow's stream executor logs the name with it
    (702, "CUDA_ERROR_LAUNCH_TIMEOUT", "cudaErrorLaunchTimeout", "the launch timed out and was terminated"),
    (717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", "cudaErrorInvalidAddressSpace",
     "operation not supported on global/shared address space"),
    (718, "CUDA_ERROR_INVALID_PC", "cudaErrorInvalidPc", "invalid program counter"),
    (719, "CUDA_ERROR_LAUNCH_FAILED", "cudaErrorLaunchFailure", "unspecified launch failure"),
    (214, "CUDA_ERROR_ECC_UNCORRECTABLE", "cudaErrorECCUncorrectable", "uncorrectable ECC error encountered"),
    (220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", "cudaErrorNvlinkUncorrectable",
     "uncorrectable NVLink error detected during the execution"),
    (226, "CUDA_ERROR_CONTAINED", "cudaErrorContained", "Invalid access of peer GPU memory over nvlink or a hardware error"),
)
# the texts cudaGetErrorString / cuGetErrorString give the faults: only the runtime writes one out whole
_CUDA_FAULT_TEXTS = frozenset(text for _, _, _, text in _CUDA_FAULTS)
# a fault's name -> its text, for the summary of a fault printed by its name alone
_CUDA_FAULT_NAMES: dict[str, str] = {name: text for _, driver, runtime, text in _CUDA_FAULTS
                                     for name in (driver, runtime)}
# any of those names alone (_fault_forms_listed)
_FAULT_NAME_ALONE = re.compile(r"\b(?:" + "|".join(sorted(_CUDA_FAULT_NAMES, key=len, reverse=True)) + r")\b")

# the words every retold form of a GPU gone from the bus holds (gpu_gone_told; _families' cheap test and the rule's):
# whatever _GPU_GONE_TOLD matches holds "off", an optional "the " and "bus" or "PCI"
_GPU_GONE_TOLD_WORDS = ("off bus", "off the bus", "off PCI", "off the PCI")

_FAMILY_TOKENS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("oom", ("out of memory", "OutOfMemoryError", "Out of memory", "OOM when allocating", "_ALLOC_FAILED",
             "PhysX failed to allocate GPU memory", "Allocator failed to allocate memory", "Allocator fail to allocate memory",
             "AllocatorCallback failed to allocate memory",
             "hipErrorOutOfMemory", "cudaErrorMemoryAllocation", "RESOURCE_EXHAUSTED", "ResourceExhaustedError",
             "Tried to allocate", "desired GPU memory utilization", "on startup is less than desired", "memory for the cache blocks",
             "available KV cache memory", "stored in KV cache", "not enough GPU memory", "has a total capac",
             "increase --mem-fraction-static",
             "Resource exhausted", "from device: ", "memory space",
             "OUT_OF_DEVICE_MEMORY", "CUDA_ERROR_OUT_OF_MEMORY", "[torch_memory_saver.cpp]",
             "CUDACachingAllocator.cpp", "Failed to CUDA ", "Out Of Memory", "OUT OF MEMORY", "ut of Memory",
             # CANN's device allocation failures (_OOM, since batch 58)
             "(EL0004)", "runtime result = 207001", "error code is 207018", "ACL_ERROR_RT_DEVIDE_OOM",
             "EL0004: ", "rtMalloc execute failed", "error code is 207001",
             # the Habana PyTorch bridge's device allocator on Intel Gaudi (_OOM, since batch 59)
             "PT_DEVMEM Allocation failed",
             # a GPU's OOM told in words by its short name (oom_told_on_gpu; since batch 49), or hyphenated
             "OOM on", "oom on", "OOM errors on", "oom errors on", "ut-of-memory", "ut-Of-Memory", "UT-OF-MEMORY",
             # or after the runtime's name, as its allocator's message names the memory (oom_told_on_gpu's
             # _OOM_TOLD_RUNTIME; since batch 53), in any case and joined by a space or a hyphen as that rule reads
             # it ("cuda OOM", "CUDA oom", "CUDA-OOM", "MPS backend OOM", "mps oom": the short name in any case
             # after a space or a hyphen; review R39)
             "OOM", " oom", "-oom", " Oom", "-Oom",
             # and in Chinese (oom_told_on_gpu's _OOM_TOLD_ON_GPU_ZH; since batch 50)
             "显存", "内存不足", "内存溢出", "内存耗尽",
             # the host's OOM told in words (host_oom_told; since batch 50), as people type it
             "CPU OOM", "cpu oom", "Cpu OOM", "CPU-OOM", "RAM OOM", "ram oom", "host OOM", "Host OOM", "host oom",
             "system OOM", "System OOM", "system oom", "memory OOM", "Memory OOM", "memory oom",
             "CPU out of memory", "cpu out of memory", "CPU Out Of Memory", "host out of memory",
             "Host out of memory", "RAM out of memory", "system out of memory", "System out of memory",
             # and the host's memory in Chinese before the OOM's words (since batch 72)
             "内存oom", "内存OOM", "内存 oom", "内存 OOM", "内存Oom", "内存out of memory", "内存 out of memory")),
    ("nccl", ("NCCL", "nccl", "atchdog", "Heartbeat monitor timed out", "DistBackendError", "before timing out", "Notify register",
              "Communication_Error", "NET/IB", "Got completion", "Connection closed by remote peer",
              "Call to recv from",
              "socketStartConnect", "[Proxy Service", "polling for opId", "HCCL", "Hccl", "hccl",
              "Getting socket times out", "DeepEP", "num_rdma_recv_tokens", "Dispatch CPU wait exception",
              "non-zero status:", "NULL value", "nvshmem", "NVLink SHARP")),
    ("slurm", ("CANCELLED AT", "CANCELLED DUE", "oom_kill event", "oom-kill event", "Out Of Memory", "Node failure on",
               "tasks have been OOM Killed", "sbatch: ", "Submitted batch job", "exceeded memory limit",
               "exceeded virtual memory limit")),
    ("hostoom", ("running low on memory", "killed due to memory pressure", "NODE_OUT_OF_MEMORY",
                 "exceeds the memory usage threshold")),
    ("hostalloc", ("DefaultCPUAllocator", "Cannot allocate memory", "for an array with shape",
                   "Torch: not enough memory")),
    ("port", ("EADDRINUSE", "ddress already in use", "errno: 98")),
    ("div", ("Unexpected result", "found NaN", "found Inf", "returned nan values", "rerun:", "top training",
             "top Training", "topping training", "terminating training",
             "Spiky loss", "transient error", "Loss became infinite", "Minimum loss scale reached",
             "loss scale already at minimum",
             "gradients are Nan/Inf", "NaN detected in ")),
    ("recompute", ("CheckpointError", "tensors was saved", "tensors saved during",
                   "Recomputed values", "more tensors during recomputation", "metadata: {'shape': ")),
    ("fault", ("illegal", "Illegal", "memory access was encountered", "launch failure", "device-side assert",
               "Device-side assert", "DEVICE-SIDE ASSERT", "ECC", "misaligned address",
               "cudaError", "CUDA_ERROR_", "NVRM: Xid", "Xid", "XID", "xid", "off the bus", "GPU is lost", "Device-side assertion",
               "thread: [", "Memory access fault by GPU", "hipError", "HSA_STATUS_ERROR", "device handle for GPU",
               "_STATUS_EXECUTION_FAILED", "_STATUS_MAPPING_ERROR", "exception].", "Kernel task happen error",
               "Aicpu kernel execute failed", "execution is abnormal", "traps are executed", "trap is executed",
               "out-of-bounds exception", "exception]", "50701", "50703", "50704", "failed to launch on the GPU", "GPU program failed to execute", "NVLink error", "NvlinkUncorrectable",
               "NVLINK_UNCORRECTABLE", "PhysX", " : internal error : ", " : abort : ", "LaunchError: ",
               "access to GPU memory space failed", ", D-RST: ", *(f"{name}=" for name, _, _ in BLOCKING_SWITCHES),
               *_GPU_GONE_TOLD_WORDS,
               *(text for _, _, _, text in _CUDA_FAULTS))),
    ("sig", ("killed by signal", "Segmentation fault", "us error", "Killed", "Aborted", "Abort trap",
             "got signal:", "died with <Signals.", "Caught signal", "return code =", "return code -", "return code=", "received by",
             "RECEIVED BY", "received at time", "Check failure stack trace", "terminated with signal",
             "oom-killer", "oom_reaper", "Kill process",
             # systemd-oomd's notice since v256 ("Marked /x.scope for killing due to ..."; _SIG_TEXT; since batch 70)
             "for killing due to",
             # the OOM killer told in words (oom_kill_told; since batch 49)
             "oom killer", "OOM killer", "OOM Killer", "OOM-killer", "OOM-Killer", "oom_killer", "oomkiller",
             "OOMKiller", "exit code", "exit status", "exited with code", "with status", "non-zero status",
             "and exited with a",
             "Segfault encountered", "encountered a Segfault", "out of shared memory", "OOMKilled", "Exit Code",
             "SIGSEGV", "egfault", "eg fault", "eg-fault", "egmentation fault", "egmentation-fault",
             # the names a person capitalises (a title's "(Segmentation Fault) while training", "Seg Fault",
             # "SEGFAULT"): segfault_told reads them in any case; since batch 47
             "egmentation Fault", "EGMENTATION", "eg Fault", "egFault", "EGFAULT", "EG FAULT", "EG-FAULT",
             "access violation", "ACCESS_VIOLATION", "0xC0000005", "0xc0000005",
             # glibc's zh_CN name of the signal, told in Chinese (segfault_told; since batch 73)
             "段错误",
             "died from signal", "exited on signal", "EXIT STRING", "KILLED BY SIGNAL")),
    # a wrapper's negative exit code (_WRAPPER_NEG_STATUS), or a report's "received SIGKILL" / "收到了SIGKILL信号"
    ("wrap", ("xit", "XIT", "eceived", "ECEIVED", "ot SIG", "ot a SIG", "OT SIG", "收到")),
    ("dep", ("ModuleNotFoundError", "ImportError", "PackageNotFoundError", "No module named", "undefined symbol", "shared object file",
             "Failed to import", "cannot import name", "DLL load failed", "Could not load library",
             "CUDA Setup failed despite GPU", "working triton installation", "raise TritonMissing(")),
    ("gpu", ("busy or unavailable", "no CUDA-capable device", "cudaErrorDevicesUnavailable",
             "cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE", "system not yet initialized", "SystemNotReady",
             "SYSTEM_NOT_READY")),
    # the interpreter's own refusal to start the program the command names (_PROGRAM_MISSING)
    ("program", ("can't open file '", "No module named ", "module specification for", "cannot be directly executed",
                 "is a directory, cannot continue", "package and cannot be executed", "as __main__ module")),
    ("usage", ("error: ", "usage: ", "remaining_argv", "unrecognized arguments",
               "not used by the HfArgumentParser")),
    ("tr", ("Root Cause", "Failures:", "exitcode", "rank", "traceback", "===", "EXITCODE", "Exitcode",
            "forcefully exiting via")),
    ("exc", ("Error", "Exception", "Interrupt", "terminate called", ".errors.", ".exceptions.")),
    # the datasets builders' line naming a file they could not read (_DATASETS_FILE_SAID)
    # and the exceptions its DatasetGenerationError is raised from when the data's text is at fault (_DATA_TEXT_CAUSE;
    # pyarrow's ArrowInvalid is no *Error by name, so _EXC does not take it)
    ("data", ("Failed to load JSON from file", "Failed to read file '", "Failed to read schema from '",
              "pyarrow.lib.Arrow", "JSONDecodeError", "ValueError", "UnicodeDecodeError", "ParserError",
              "CastError")),
    ("env", ("driver on your system", "driver version is insufficient", "InsufficientDriver", "orward compatibility",
             "CompatNotSupportedOnDevice", "COMPAT_NOT_SUPPORTED_ON_DEVICE",
             "driver combination", "no kernel image", "No kernel image", "NoKernelImage", "NO_BINARY_FOR_GPU",
             "unsupported toolchain", "is not compatible with the current PyTorch", "Ampere GPUs or newer",
             "NoBinaryForGpu", "nvalid device function", "nvalid Device Function", "INVALID DEVICE FUNCTION",
             "InvalidDeviceFunction", "ERROR_INVALID_ISA",
             "does not has any binary", "does not have any binary",
             "or higher required for", "FP8 block scaled GEMM requires", "(for all gemm layouts)",
             "peer access is not supported", "PeerAccessUnsupported", "PEER_ACCESS_UNSUPPORTED",
             "Expected is_sm", "requires A100/A800 or H100/H800", "gpu-architecture", *_FA4_TOKENS,
             "PTX JIT compilation failed", "ErrorInvalidPtx", "ErrorInvalidKernel", "ErrorInvalidImage",
             "CUDA_ERROR_INVALID_PTX", "CUDA_ERROR_INVALID_IMAGE", "invalid kernel file", "kernel image is invalid",
             "for GroupedGEMM kernels", "only supported on CUDA devices with compute capability",
             "Driver/library version mismatch", "driver/library version mismatch", "LIB_RM_VERSION_MISMATCH",
             "LibRmVersionMismatch",
             "API mismatch: the client has the version",
             # inductor's GPUTooOldForTriton and FlashAttention-3's check (since batch 65)
             "too old to be supported by the triton", "Hopper GPUs or newer",
             # vLLM's and transformers' refusal of bfloat16 on the GPU, and the GPU vLLM names (since batch 66)
             "Bfloat16 is only", "support bf16/gpu", " GPU has compute capability ",
             # Triton's OutOfResources (since batch 72), and its message wrapped by another exception (batch 73)
             "OutOfResources: out of resource: ", ", Hardware limit")),
    ("hub", ("GatedRepo", "gated repo", "gated dataset", "Make sure to have access to it at",
             "RepositoryNotFound", "Repository Not Found",
             "RevisionNotFound", "Revision Not Found", "not a valid model identifier", "DatasetNotFound",
             "doesn't exist on the Hub", "Repo id must", "LocalEntryNotFound", "requested files in the",
             "OfflineModeIsEnabled", "HF_HUB_OFFLINE", "We couldn't connect to", "Unauthorized for url",
             "NotExistError", "does not exist!", "not exists on", "Can't load tokenizer for",
             "Too Many Requests", "too many requests", "TOO MANY REQUESTS", "Retry after ", "Url: ")),
    ("disk", ("No space left on device", "Disk quota exceeded", "PytorchStreamWriter failed", "StorageFull",
              "QuotaExceeded", "unexpected pos ", "shared memory segment", "failed to extend")),
)


def _families(text: str) -> set[str]:
    found = {name for name, tokens in _FAMILY_TOKENS if any(t in text for t in tokens)}
    if text.startswith(("File \"", "Traceback (most recent call last)")):
        found.add("frame")
    return found


# vLLM (a colocated GRPO rollout engine, or a server on the same GPUs) refusing to start because the
# GPU has too little memory for what it must reserve, in its own words: v1/worker/gpu_worker.py's
# init_device "Free memory on device [cuda:0 ](3.22/4.0 GiB) on startup is less than desired GPU memory
# utilization (0.9, 3.6 GiB). Decrease GPU memory utilization or reduce GPU memory used by other
# processes."; the KV cache left without room after the weights (v0 worker and v1 kv_cache_utils): "No
# available memory for the cache blocks. Try increasing `gpu_memory_utilization` ..." and v1's
# _check_enough_kv_cache_memory "... (X GiB KV cache is needed, which is larger than the available KV
# cache memory (Y GiB). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` ...".
# v0's worker (vllm/worker/worker.py raise_if_cache_size_invalid, up to 0.10; its HPU, OpenVINO and XPU workers
# alike) raises the same refusal when the blocks it could reserve hold fewer tokens than one sequence: "The
# model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (2048).
# Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."
# v1's model runner (vllm/v1/worker/gpu_model_runner.py load_model) logs the weights that did not fit before it
# re-raises torch's OOM: "Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization ...
# (original error: CUDA out of memory. ...)", a paste often keeping that line and not the OOM.
# (Its sampler warm-up "CUDA out of memory occurred when warming up sampler ..." is a plain CUDA OOM.)
# Three refusals, each with vLLM's own advice: the start-up check of free memory (decrease gpu_memory_utilization
# or free what other processes use), the KV cache too small after the weights (increase gpu_memory_utilization or
# decrease max_model_len), the weights themselves not fitting (v1's load_model: "Try lowering
# --gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using --quantization").
_OOM_VLLM_RESERVE = (r"is less than desired GPU memory utilization"
                     # the same message wrapped after its first clause (an issue's code block, batch 45): its head
                     # "Free memory on device [cuda:0 ](8.0/64.0 GiB) on startup is less than desired" is vLLM's alone
                     r"|Free memory on device (?:\S+ )?\([\d.]+/[\d.]+ GiB\) on startup is less than desired")
_OOM_VLLM_KV = (r"No available memory for the cache blocks"
                r"|KV cache is needed, which is larger than the available KV cache memory"
                r"|is larger than the maximum number of tokens that can be stored in KV cache")
_OOM_VLLM_LOAD = r"Failed to load model - not enough GPU memory"
_OOM_VLLM = _OOM_VLLM_RESERVE + r"|" + _OOM_VLLM_KV + r"|" + _OOM_VLLM_LOAD
# SGLang's refusal when its KV pool gets no room (python/sglang/srt/model_executor/model_runner.py init_memory_pool,
# since 2024; from 2026 its MemoryPoolConfig.__post_init__, which may add " Current value: mem_fraction_static=X";
# sglang-jax's profile_max_num_token alike): the pool is what is left of mem_fraction_static x the GPU's total after
# the weights and what else holds the GPU, and it came out at no tokens: "RuntimeError: Not enough memory. Please
# try to increase --mem-fraction-static." (since the review of batch 45)
_OOM_SGLANG_KV = r"Not enough memory\. Please try to increase --mem-fraction-static"
_OOM_VLLM_WAKE = re.compile(r"CUDA Error: out of memory at \S*cumem_allocator\.cpp:\d+")
# SGLang's memory saver (torch_memory_saver, the sleep/wake of a colocated rollout engine in slime, verl, miles,
# AReaL) failing a CUDA call with out of memory, in its check macros' words (csrc/utils.h): CURESULT_CHECK
# "[torch_memory_saver.cpp] CUresult error: 2 (out of memory)  file=csrc/utils.h func=cu_mem_create line=187"
# (cuGetErrorString) and CUDA_ERROR_CHECK "... cudaError error: 2 (out of memory) ... func=resume" (the engine's
# resume mapping its memory back), then exit(1); before July 2025 without the text: "CUresult error  result=2
# file=..." / "cudaError error  result=2 ..." (2 is CUDA_ERROR_OUT_OF_MEMORY, cudaErrorMemoryAllocation and
# hipErrorOutOfMemory alike). Its other codes are not an OOM, nor its note that a cuMemCreate OOM was handed back
# to torch's allocator to retry ("cuMemCreate CUDA_ERROR_OUT_OF_MEMORY (may not be an issue ...)").
_OOM_SAVER_RE = (r"\[torch_memory_saver\.cpp\] (?:CUresult|cudaError) error"
                 r"(?:: \d+ \(out of memory\)|\s+result=2\b)")
_OOM_SAVER = re.compile(_OOM_SAVER_RE)
# torch's caching allocator out of memory, its message lost: when no block can be had (``!block_found`` after
# cudaErrorMemoryAllocation, c10/cuda/CUDACachingAllocator.cpp), it calls reportProcessMemoryInfo() to name the
# processes that hold the GPU before it raises OutOfMemoryError, and that function asserts every NVML call it makes
# (TORCH_INTERNAL_ASSERT: nvmlInit_v2_, nvmlDeviceGetHandleByPciBusId_v2_, and nvmlDeviceGetComputeRunningProcesses_
# as ``r``); an NVML that cannot list them (a container or MIG instance without access to them, a driver/NVML
# pairing that refuses) turns the OOM into "NVML_SUCCESS == r INTERNAL ASSERT FAILED at ".../c10/cuda/
# CUDACachingAllocator.cpp":995, please report a bug to PyTorch." (the line moves between releases: 813, 830, 995,
# 1123, 1154). The function is called from that path only, so the assert is the OOM's.
_OOM_NVML_ASSERT_RE = (r"NVML_SUCCESS == (?:r|DriverAPI::get\(\)->nvml\w+\([^)]*\)) INTERNAL ASSERT FAILED at "
                       r"""["'][^"']*CUDACachingAllocator\.cpp["']""")
_OOM_NVML_ASSERT = re.compile(_OOM_NVML_ASSERT_RE)
# NCCL allocating its own buffers on the GPU (channels, proxy and P2P buffers, its device work FIFO, when a
# communicator is made or meets a new peer), in its allocators' WARN (src/include/alloc.h, ncclCudaMallocDebug,
# ncclCudaCallocDebug, ncclCudaCallocAsyncDebug, the same words from NCCL 2.18 to 2.30): "Failed to CUDA malloc %ld
# bytes", "Failed to CUDA calloc %ld bytes", "Failed to CUDA calloc async %ld bytes", printed when cudaMalloc or
# cuMem's allocation left no pointer; torch repeats the last WARN as the communicator's "Last error:" under "NCCL
# error ... unhandled cuda error". The WARN does not name why; the CUDACHECK/CUCHECK WARN before it does ("Cuda failure
# 'out of memory'", the OOM already), so the allocation decides an OOM unless NCCL's own Cuda failure names another
# error (_scan_tail): cuMem's 801 'operation not supported', or a sticky fault (which decides first, cuda_fault).
# Not "Failed to CUDA host alloc" (pinned host memory, cudaHostAlloc).
_NCCL_ALLOC_FAILED_RE = r"Failed to CUDA (?:malloc|calloc(?: async)?) \d+ bytes"
_NCCL_ALLOC_FAILED = re.compile(_NCCL_ALLOC_FAILED_RE)
# (Ray's ``ray.exceptions.OutOfMemoryError`` is its host-memory monitor: see _HOST_OOM. Its message is the monitor's
# own, whatever prefix the paste kept: ray/exceptions.py OutOfMemoryError carries the raylet's "Task was killed due
# to the node running low on memory." (from Ray 2.55 "N worker(s) were killed ..."), so an OutOfMemoryError line
# saying that, bare in an issue title or behind another wrapper, is host memory too; torch's own OutOfMemoryError
# wrapped by Ray, "RayTaskError(OutOfMemoryError): ray::Actor.train()", says nothing of the node and stays CUDA's)
_OOM = re.compile(_OOM_VLLM + r"|" + _OOM_SGLANG_KV + r"|CUDA out of memory"
                  r"|(?<!ray\.exceptions\.)OutOfMemoryError(?!:[^.\n]*\bkilled due to the node running low on memory)"
                  r"|CUDA error: out of memory"
                  # NCCL's CUDA checks (src/include/checks.h CUDACHECK "Cuda failure '%s'"; cudawrap.h CUCHECK,
                  # the driver API, "Cuda failure %d '%s'": "include/alloc.h:320 (ncclCuMemAlloc) NCCL WARN Cuda
                  # failure 2 'out of memory'"; RCCL's "HIP failure '%s'": _NCCL_CUDA_FAILURE)
                  r"|(?:Cuda|HIP) failure (?:\d+ )?'out of memory'"
                  # and the WARN NCCL's allocators print when the device allocation itself failed (_NCCL_ALLOC_FAILED)
                  r"|" + _NCCL_ALLOC_FAILED_RE +
                  # vLLM's sleep-mode allocator (csrc/cumem_allocator.cpp CUDA_CHECK: "CUDA Error: %s at %s:%d"
                  # with cuGetErrorString): a colocated rollout engine that could not map its memory back on
                  # wake_up ("CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:56")
                  r"|CUDA Error: out of memory at \S+:\d+|" + _OOM_SAVER_RE + r"|" + _OOM_NVML_ASSERT_RE +
                  # ROCm builds of torch (c10/hip, hipified CUDACachingAllocator): "HIP out of memory.
                  # Tried to allocate ..."; the HIP runtime's own name for the error
                  r"|HIP out of memory|HIP error: out of memory|hipErrorOutOfMemory|cudaErrorMemoryAllocation"
                  # XLA (JAX, TF, torch_xla): "RESOURCE_EXHAUSTED: Out of memory while trying to allocate N
                  # bytes." (xla/pjrt, tsl BFC allocator); TensorFlow: "ResourceExhaustedError: OOM when
                  # allocating tensor with shape[...]"
                  r"|RESOURCE_EXHAUSTED: Out of memory|Out of memory while trying to allocate|OOM when allocating tensor"
                  # the TPU runtime ("RESOURCE_EXHAUSTED: Attempting to reserve 6.48G at the bottom of
                  # memory. That was not possible.") and TF's BFC allocator giving up
                  # ("ResourceExhaustedError: failed to allocate memory")
                  r"|RESOURCE_EXHAUSTED: Attempting to reserve \S+ at the bottom of memory"
                  r"|ResourceExhaustedError: failed to allocate memory"
                  # torch <= 0.4 (THC's THCudaCheck, "cuda runtime error (%d) : %s at %s:%d"): "cuda runtime
                  # error (2) : out of memory at ...", also retyped without its spaces ("error(2): out of memory")
                  r"|cuda runtime error ?\(2\) ?: ?out of memory"
                  # the allocator's own "Tried to allocate 2.00 GiB" (c10/cuda/CUDACachingAllocator.cpp; it
                  # stands in no other message, so it survives a retyped "CUDA out of the memory"), the
                  # runtime's cudaErrorMemoryAllocation (= 2) checked by caffe2 ("error == cudaSuccess. 2
                  # vs 0. Error at: ...: out of memory") and THC ("THCudaCheck FAIL ... error=2 : out of
                  # memory"), and any exception whose message ends in the runtime's "out of memory"
                  r"|Tried to allocate (?:more than )?\d|cudaSuccess\. 2 vs 0|error=2 : out of memory"
                  # and the sentence after it (same file: "GPU %d has a total capacity of %s of which %s is
                  # free."), in no other message either: a paste that cut the head keeps it. Its wording came with
                  # torch 2.1 (pytorch#99699, the OOM message that asks NVML who holds the memory) spelt "total
                  # capacty", as torch 2.1 and 2.2 print it; later releases spell "capacity". The sizes are
                  # format_size's (same file): "N bytes" up to 1 KiB (a full GPU's "of which 0 bytes is free"),
                  # then "%.2f KiB|MiB|GiB"
                  r"|GPU \d+ has a total capaci?ty of [\d.]+\s*(?:[KMGT]i?B|bytes) of which"
                  r" [\d.]+\s*(?:[KMGT]i?B|bytes) is free"
                  # the same allocator in other backends: torch_npu (Ascend) "NPU out of memory. Tried to
                  # allocate ...", Intel's "XPU out of memory", Apple's "MPS backend out of memory"
                  r"|\b(?:NPU|XPU) out of memory|MPS backend out of memory"
                  # Ascend below torch_npu's allocator (since batch 58): the CANN runtime's own report of a device
                  # allocation it could not make, which torch_npu relays under its "The Inner error is reported as
                  # above" without its own "NPU out of memory" line (vLLM-Ascend workers, HCCL's workspace, GE's graph
                  # memory): CANN's error message EL0004 in its "Name(CODE): text" form ("Memory_Allocation_Failure(
                  # EL0004): Failed to allocate memory[ requested by HCCL|GE|APP module].", then "Possible Cause:
                  # Available memory is insufficient."), the runtime's "alloc device memory failed, runtime result =
                  # 207001" (rt_error_codes.h, acl/error_codes: ACL_ERROR_RT_MEMORY_ALLOCATION = 207001, "memory
                  # allocation error", here on a device allocation) and the device OOM's own code (same header:
                  # ACL_ERROR_RT_DEVIDE_OOM = 207018, "device oom") by name or as torch_npu's NPU_CHECK_ERROR ends its
                  # "NPU function error: <call>, error code is N". Not the bare code or name in a guide's list (no
                  # "Name(CODE): " head), nor 207001 without "device memory" (aclrtMallocHost, host memory, returns it
                  # too). Reviewed (R62): CANN's whole message is matched ("Failed to allocate memory requested by
                  # RUNTIME module.", or the words cut at the line's end by a wrap), so a guard after the words reads
                  # what follows it; also the pre-8.2 head "EL0004: [PID: N] <time> Failed to allocate memory." and
                  # the runtime's own driver line for a device allocation, "rtMalloc execute failed, reason=[driver
                  # error:out of memory]" (not rtMallocHost / rtsMallocHost), and torch_npu's NPU_CHECK_ERROR on a
                  # device allocation call with 207001 ("NPU function error: c10_npu::acl::AclrtMalloc(&ptr, ...),
                  # error code is 207001"; not aclrtMallocHost*). EL0004 is CANN's driver error for any allocation
                  # the driver refuses, the host's pinned memory too (hicann/runtime src/runtime/driver/
                  # npu_driver_mem.cc:838-858 NpuDriver::HostMemAlloc reports it through DRV_MALLOC_ERROR_PROCESS,
                  # npu_driver_base.hpp:271,300-340): a block that names a host allocation is no device OOM
                  # (_NPU_HOST_ALLOC, dropped after the scan: _drop_npu_host_oom). ACL_ERROR_RT_DEVIDE_OOM by its name
                  # alone, and the XPU names below, are no report in a definition or a table (_error_name_defined).
                  r"|Memory_Allocation_Failure\(EL0004\): Failed to allocate(?: memory(?: requested by \w+ module)?\.?"
                  r"|\s*$)"
                  r"|\bEL0004: (?:\[PID: \d+\] )?(?:\S+ )?Failed to allocate memory\b\.?"
                  r"|alloc device memory failed, runtime result = 207001\b|\berror code is 207018\b"
                  r"|(?<!Host)(?<!\w)rtMalloc execute failed, reason=\[?driver error:out of memory\b"
                  r"|NPU function error: (?:c10_npu::acl::)?[Aa]clrtMalloc(?!Host)\w*\([^()\n]{0,160}\), error code is "
                  r"207001\b"
                  r"|\bACL_ERROR_RT_DEVIDE_OOM\b"
                  # Intel GPUs (XPU) below that allocator: the SYCL runtime's exception for a Unified Runtime
                  # call that failed, in its two wordings (intel/llvm sycl: __SYCL_OCL_ERROR_REPORT "Native API
                  # failed. Native API returns: " and the adapter check "<backend> backend failed with error: ",
                  # both followed by codeToString's "N (NAME)"), as torch's XPU kernels and oneCCL raise it when
                  # a device allocation fails: "level_zero backend failed with error: 39
                  # (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)". The number moved between UR releases (39 in
                  # ur_api.h v0.12, 40 in v0.9), the name did not, so the name decides, also Level Zero's own
                  # ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (ze_api.h) where a library prints that. Not UR's
                  # OUT_OF_RESOURCES (a launch the device cannot hold, e.g. its work-group size) nor
                  # OUT_OF_HOST_MEMORY (host RAM), nor DEVICE_LOST.
                  r"|\b(?:UR|ZE)_RESULT_ERROR_OUT_OF_DEVICE_MEMORY\b"
                  # Intel Gaudi (HPU, since batch 59): the Habana PyTorch bridge's device-memory module refusing an
                  # allocation, "RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for
                  # size::268435456 (256)MB". The bridge is shipped as binaries only (habana_frameworks), so the
                  # wording is the one the libraries that catch it match: accelerate src/accelerate/utils/memory.py:112
                  # (16cb6eb8, should_reduce_batch_size: "FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed",
                  # "# HPU OOM"),
                  # auto-round's and lm-eval's out_of_vram / batch-size retries ("MODULE:PT_DEVMEM" as gaudi's OOM).
                  # Only with the size the bridge prints after it: a library's list of the words (the literal
                  # above, ending in its quote) and prose naming the module alone are no report
                  r"|\bMODULE:PT_DEVMEM Allocation failed for size::\d+"
                  r"|^(?:[\w.]+\.)?[A-Z]\w*Error: .*: out of memory\s*$"
                  # cuBLAS/cuDNN failing to allocate their workspace (torch: "CUDA error:
                  # CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
                  r"|(?:CUBLAS|CUDNN)_STATUS_ALLOC_FAILED"
                  # XLA's status for an allocation it could not make, in both spellings of the code
                  # (absl::Status "RESOURCE_EXHAUSTED: ...", TF/XLA <= 2021 "Resource exhausted: ...")
                  # and every message its allocators give it: the BFC allocator's "Failed to allocate
                  # request for 2.99GiB (3206250496B) on device ordinal 0", "Out of memory while trying
                  # to allocate N bytes", the TPU compiler's "XLA:TPU compile permanent error. Ran out of
                  # memory in memory space vmem." (not gRPC's RESOURCE_EXHAUSTED for a message too large)
                  r"|(?:RESOURCE_EXHAUSTED|Resource exhausted): (?:.*?\b(?:[Ff]ailed to allocate|[Oo]ut of memory"
                  r"|Ran out of memory)|Attempting to reserve)"
                  # TensorFlow's stream executor failing a device allocation (cuda_driver.cc /
                  # rocm_driver.cc: "failed to allocate 7.35G (7889485824 bytes) from device:
                  # CUDA_ERROR_OUT_OF_MEMORY: out of memory", ROCm's "... from device:
                  # HIP_ERROR_OutOfMemory" and, before HIP 3, "... from device: hipError_t(1002)"
                  # (1002 = hipErrorMemoryAllocation then))
                  r"|failed to allocate \S+ \(\d+ bytes\) from device: (?:CUDA_ERROR_OUT_OF_MEMORY"
                  r"|HIP_ERROR_OutOfMemory|hipError_t\(1002\))"
                  # the CUDA driver API's own name for the runtime's "out of memory" (CUresult 2, cuda.h's
                  # CUDA_ERROR_OUT_OF_MEMORY, cuGetErrorName), as the driver-API wrappers end their messages with
                  # it: numba ("CudaAPIError: [2] Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY"),
                  # cuda-python ("CUresult.CUDA_ERROR_OUT_OF_MEMORY"), or the name alone (an issue title); a
                  # message that goes on after it ("...: CUDA_ERROR_OUT_OF_MEMORY: out of memory") is read by the
                  # rules above. Not pinned host memory the driver refused (cuMemHostAlloc, cuMemAllocHost, XLA's
                  # "failed to alloc N bytes on host: ..."): that is host memory, not the GPU's.
                  r"|^(?!.*(?:\bon host\b|cuMemHostAlloc|cuMemAllocHost)).*\bCUDA_ERROR_OUT_OF_MEMORY\s*$"
                  # the same name inside a Rust wrapper's error value (since batch 47): cudarc's DriverError (the
                  # driver API under Candle, candle-core's "backend op failed"), whose Debug (cudarc
                  # src/driver/result.rs, impl Debug for DriverError: f.debug_tuple("DriverError").field(&self.0)
                  # .field(&err_str), err_str from cuGetErrorString; its Display writes the Debug) prints the
                  # CUresult's name and the driver's string: 'DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of
                  # memory")', or Some("...") where a wrapper keeps the lookup's Option. It stands where the value is
                  # printed, so a hedge or a fix before it on the line is a mention (_oom_mentioned). cudarc's pinned
                  # host allocation (cuMemHostAlloc) refused prints the same value: no line tells it apart.
                  r'|\bDriverError\(CUDA_ERROR_OUT_OF_MEMORY, (?:Some\()?"out of memory"'
                  # NVIDIA PhysX's GPU simulation (Isaac Sim, Isaac Lab, Omniverse; batch 44) out of device memory,
                  # in its own words (NVIDIA-Omniverse/PhysX physx/source/gpucommon/src/PxgCudaMemoryAllocator.cpp,
                  # PxgCudaDeviceMemoryAllocate: "PxgCudaDeviceMemoryAllocator failed to allocate memory %zu bytes!
                  # Result = %i" after cuMemAlloc, "PxDeviceAllocatorCallback failed to allocate memory %zu bytes!"
                  # after an application's allocator; both put the CUDA context in abort mode, the only place that
                  # does, and NpScene.cpp / NpSceneFetchResults.cpp then abort the step with "PhysX failed to
                  # allocate GPU memory - aborting simulation."). The allocator's line decides with the driver's
                  # out of memory (Result = 2) or no result; another CUresult is a fault PhysX met, read elsewhere.
                  r"|PhysX failed to allocate GPU memory"
                  # PhysX 4 (Isaac Gym, its GPU code shipped as binaries) prints the allocator's line as "... fail to
                  # allocate memory N bytes!! Result = 2" (IsaacGymEnvs #256, OmniIsaacGymEnvs #11, #27)
                  r"|\bPx(?:gCudaDeviceMemoryAllocator|DeviceAllocatorCallback) fail(?:ed)? to allocate memory \d+ "
                  r"bytes!{1,2}(?!!)(?! Result = (?!2\b)\d)")
# An OOM's words as one item of a list of quoted strings are a list of patterns, not an OOM (batch 44): a parser's
# or a retry setting's strings to look for, as a feature request names them ("Map common strings (e.g.,
# 'OutOfMemoryError', 'CUDA error: out of memory') to actionable remediation hints."), a config dump prints them
# ("retry_on_errors: ['CUDA out of memory', 'CUBLAS_STATUS_ALLOC_FAILED']"), or code holds them (accelerate's
# utils/memory.py should_reduce_batch_size: _statements = ["CUDA out of memory.", "cuDNN error:
# CUDNN_STATUS_NOT_SUPPORTED.", ...], one item a line in its source: a line that is only a quoted string and the
# comma after it, a comment after that, is an item too). A list is two or more quoted strings joined by commas (the
# last also by "and" or "or"; _LIST_JOIN); a quoted string
# followed by a colon is a key, no item ("message": "...OutOfMemoryError: CUDA out of memory...", "extraInfo": {...}
# in torch elastic's error file is one message, still the OOM), and a message quoted alone ("RuntimeError('CUDA
# error: out of memory')", "I got 'CUDA out of memory' at step 300") is an OOM as before. A pattern names no
# sizes: an item with a digit in it is a message that happened ("['CUDA out of memory. Tried to allocate 20.00 MiB
# (GPU 0; ...)', '... (GPU 1; ...)']", one per rank, gathered), still the OOM.
_QUOTED_STRING = re.compile(r"""(['"`])([^'"`\n]{1,300})\1""")
# joins of a list's items: a comma, and before the last item "and" or "or" ("`A`, `B` and `C`"); a list has a comma
# ("'A' and 'B'" alone is two things a report names)
_LIST_JOIN = re.compile(r"\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+")
_KEY_AFTER = re.compile(r"\s*:")
_DIGIT = re.compile(r"\d")
# A list holds patterns only when each of its items is itself a failure's text (a family token of _FAMILY_TOKENS in
# it) and no item repeats another: "'CUDA out of memory', 'retrying with batch 8'" is a message and what the program
# did about it, "['CUDA out of memory', 'CUDA out of memory']" the same message gathered from two workers. A line
# that starts with an exception's head ("RuntimeError: ('CUDA out of memory', 'while allocating KV cache')",
# "Error: ...") is a message that was raised, whatever it holds (since the review of batches 43-44).
_EXC_HEAD = re.compile(r"\s*(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*)?(?:Error|Exception): ")
# a list's item alone on its line, as code spreads a list over lines: the string, its comma, maybe a comment. Only
# below a line that opens a list ("_statements = [", "(") or below another such item (_ListLines): a string and a
# comma alone elsewhere is a message printed in quotes
_ITEM_LINE = re.compile(r"""\s*(['"`])([^'"`\n]{1,300})\1,\s*(?:#.*|//.*)?""")
_QUOTES = ("'", '"', "`")


def _pattern_item(item: str) -> bool:
    """A list's item that reads as a pattern to look for: a failure's words (a family token) and no number."""
    return not _DIGIT.search(item) and bool(_families(item))


def _quoted_list_items(text: str, list_above: Collection[str] | None = None) -> list[tuple[int, int]]:
    """The spans (inside their quotes) of the quoted strings of ``text`` that are items of a list of patterns: two
    or more distinct quoted strings, each a failure's words with no number, on a line that is no exception's own
    (``_pattern_item``). ``list_above``: the items of the list that lines above opened and this line may go on with
    (``_ListLines``; None when no list is open): then a line that is only a quoted string and its comma is an item."""
    if _EXC_HEAD.match(text):
        return []
    items = [m for m in _QUOTED_STRING.finditer(text) if not _KEY_AFTER.match(text, m.end())]
    if list_above is not None and len(items) == 1 and _ITEM_LINE.fullmatch(text):
        item = items[0].group(2)
        return [items[0].span(2)] if _pattern_item(item) and item not in list_above else []
    listed: list[int] = []
    run = [0] if items else []
    comma = False
    for i in range(1, len(items) + 1):
        joined = (_LIST_JOIN.fullmatch(text, items[i - 1].end(), items[i].start())
                  if i < len(items) else None)
        if joined is not None:
            run.append(i)
            comma |= "," in joined.group()
            continue
        words = [items[j].group(2) for j in run]
        if len(run) >= 2 and comma and len(set(words)) == len(words) and all(map(_pattern_item, words)):
            listed.extend(run)
        run, comma = [i], False
    return [items[i].span(2) for i in listed]


class _ListLines:
    """A list spread over lines, as code holds one: the items read so far of the list a line above opened (a line
    ending in "[" or "("), for ``_quoted_list_items``; None when the line above neither opened a list nor went on
    with one."""

    def __init__(self) -> None:
        self.items: list[str] | None = None

    def step(self, text: str) -> list[str] | None:
        """The open list's items above ``text``; then ``text`` goes on with the list, opens one or closes it."""
        above = self.items
        m = _ITEM_LINE.fullmatch(text) if above is not None and text.lstrip()[:1] in _QUOTES else None
        if m is not None and above is not None:
            self.items = [*above, m.group(2)]
        else:
            self.items = [] if text.rstrip().endswith(("[", "(")) else None
        return above


def _only_listed(text: str, spans: list[tuple[int, int]], list_above: Collection[str] | None = None) -> bool:
    """Every span lies inside an item of a list of quoted patterns (``_quoted_list_items``)."""
    if not spans or not any(q in text[:min(a for a, _ in spans)] for q in _QUOTES):
        return False    # no quote before the words: the usual line, without the list's cost
    listed = _quoted_list_items(text, list_above)
    return all(any(a <= start and end <= b for a, b in listed) for start, end in spans)


# Where a runtime's own OOM message stands when it was raised or printed: right after an exception's name and its
# colon ("RuntimeError: CUDA error: out of memory", "torch.OutOfMemoryError: CUDA out of memory. Tried to ...",
# "[rank0]: ValueError: Free memory on device ..."), or the exception's own name with its colon, or at the line's
# start (a log's line, a paste that cut the exception's name); right after an error's words too (": ", "error",
# "failed": "Error running job: CUDA error: out of memory", "Could not train: CUDA out of memory").
_OOM_RAISED_BEFORE = re.compile(r"(?:^|[\s(\[`'\"「“:])(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\s*:\s*$")
# a line's start: maybe behind a list's bullet or number and markdown emphasis ("- **CUDA out of memory** ...")
_OOM_LINE_HEAD = re.compile(r"\s*(?:[-*+>]\s+|\d{1,2}[.)]\s+)?[*_`]*")


def _at_line_head(text: str, start: int) -> bool:
    """Only a bullet, a number or emphasis (_OOM_LINE_HEAD) before text[start]: read from the line's start as far as
    the head goes, not a fullmatch over everything before each match (review R62: a long line's square)."""
    head = _OOM_LINE_HEAD.match(text)
    return head is not None and head.end() == start
# a troubleshooting entry after the words at a line's start: the OOM names the entry, the advice follows
# ("CUDA out of memory: reduce --per_device_train_batch_size", "- CUDA out of memory -> lower the batch size")
_OOM_ADVICE_AFTER = re.compile(r"[*_`.\s]*(?:errors?[*_`]*\s*)?(?:[:：—–]|->|→|-\s)\s*(?i:reduce|lower|decrease|try|use|set"
                               r"|enable|disable|add|increase|switch|check)\b")


# OOM words in Japanese or Chinese quotes named as a kind of error, not one that happened: the closing quote followed
# by a naming word ("「RuntimeError: CUDA error: out of memory」というエラーです", the error called ...; "这种", "之类")
# or by the error as a topic of a general statement ("「CUDA out of memory」エラーは...一つです", the error is one of
# ...; "とは", what ... is); "「CUDA out of memory」エラーが発生しました" (the error occurred) is a report (batch 45)
_CJK_QUOTES = {"「": "」", "『": "』", "“": "”"}
_CJK_NAMED_AFTER = re.compile(r"\s*(?:という|といった|のような|みたいな|这种|这类|之类|这样的"
                              r"|(?:エラー|错误|報錯|报错)?\s*(?:とは|は(?!発生)))")
# a guide's heading after the words at a line's start: "CUDA out of memory 対策" (countermeasures), "... 解决方法"
_CJK_ADVICE_AFTER = re.compile(r"\s*(?:エラー)?\s*(?:の)?(?:対策|対処|解決|解决|怎么办|处理方法)")
# a guide's title or sentence that resolves or avoids the error, the verb after the words as Japanese puts it
# ("PyTorch開発者必見:CUDA Out of Memory (OOM) エラーを徹底解決する現場の10大テクニック", techniques to resolve it) or before
# them ("如何避免CUDA Out of Memory", how to avoid it), with no word on the line saying it happened ("...が発生しました。
# 解決方法を教えてください" asks for help with one that did)
_CJK_FIX = re.compile(r"(?:対策|対処|解決|解决|解消|回避|避免|テクニック)")
_CJK_HAPPENED = re.compile(r"(?:発生|出现|出現|出た|出て|出ま|起き|遇到|报错|報錯|になりました|になった|止ま|落ち)")
# ... but a question or a negation beside the fix's verb asks for one or says it failed: a report ("CUDA out of memory，
# 怎么解决？" how to solve it?, "求助：...如何解决" help, "都无法解决" nothing solved it, "回避できません" cannot avoid it),
# unless the line counts its tips as a guide's title does ("如何避免CUDA Out of Memory：显存优化的七个技巧", seven tips;
# "...現場の10大テクニック", ten techniques); since the review of batch 45.
_CJK_ASKED = re.compile(r"(?:如何|怎么|怎样|求助|？|\?|无法|不能|未能|できません|できない)")
_CJK_TIPS_COUNTED = re.compile(r"(?:\d+|[一二三四五六七八九十]+)\s*(?:个|個|つの|大|条)?\s*(?:技巧|方法|テクニック|コツ|招|tips)")


# How far after the OOM words _cjk_named looks for the quote's close: the whole message a person quotes, torch's
# current one ~540 characters (c10/cuda/CUDACachingAllocator.cpp: "Tried to allocate ... GPU 0 has a total capacity
# of ... See documentation for Memory Management (https://pytorch.org/docs/stable/notes/cuda.html#environment-
# variables)"), more than _MENTION_WINDOW; still bounded, so each of many matches on a long line costs at most this
_CJK_QUOTE_REACH = 2000


# A Chinese or Japanese troubleshooting entry's symptom label opening the line ("症状:训练过程中突然崩溃,错误日志包含
# "CUDA error: an illegal memory access was encountered"。", symptom: training suddenly crashes, the log contains ...; a
# verl FAQ on a CSDN mirror, batch 52): the entry names the kind of failure a reader may meet, its runtime message
# quoted as the symptom, and its fix follows (解决方案:); so a fault's or an OOM's words on it are named, even after an
# exception's name, as after a fix's word. Only 症状 (symptom), the FAQ's word: a report's "问题现象" heading or an
# English "Symptom" heading over a user's own log (tests/crash/public 1040, 1050) is no entry's label.
_ZH_SYMPTOM_ENTRY = re.compile(r"[\s>*\-–•·]*+[*_`]*+(?:症状|症狀)[*_`]*\s*[:：]")   # possessive: linear (R40)
# The English label ("Symptom: CUDA out of memory when the batch is large", "**Symptoms:** illegal memory access in
# the varlen kernel"; since batch 54): an issue template's field or a troubleshooting entry, whose own line is the
# writer's description, so the runtime's bare words on it name the failure (as a told OOM on it is no report since
# review R39, _SPEAKER_LABEL); the program's line decides wherever it stands: its message raised after an exception's
# name on the label's line ("Symptom: RuntimeError: CUDA error: an illegal memory access was encountered", a report's
# template filled with its paste, batch 52) or on the lines under a "Symptom" heading (tests/crash/public 878, 1040).
_SYMPTOM_LABEL = re.compile(r"[\s>*\-–•·]*+[*_`]*+(?i:symptoms?)[*_`]*\s*:")   # possessive: linear (R40)


def _cjk_named(text: str, start: int, end: int) -> bool:
    """OOM words in a Japanese or Chinese quote named as a kind of error (_CJK_NAMED_AFTER), on a line that does not
    say the error happened (_CJK_HAPPENED: "「CUDA out of memory」というエラーが発生しました" is a report; since the review
    of batch 45)."""
    if _first_end(_CJK_HAPPENED, text) >= 0:
        return False
    for opening, closing in _CJK_QUOTES.items():
        o = text.rfind(opening, max(0, start - _MENTION_WINDOW), start)
        c = text.find(closing, end, end + _CJK_QUOTE_REACH)
        if o >= 0 and c >= 0 and text.find(closing, o, start) < 0 and _CJK_NAMED_AFTER.match(text, c + 1):
            return True
    return False


# A document's source in a unified diff (since batch 73: a pull request's review thread quoting its troubleshooting
# page, "+``RuntimeError: CUDA out of memory`` with a Python traceback; ``Killed`` is the", monai-physio #126,
# tests/crash/public 1561): an added or removed line (diff's "+"/"-" in its first column) opening with a markup's
# mark, reStructuredText's inline literal "``" or directive ".. ", Markdown's "**" or a heading's "#"s, is a page's
# words, quoted; a program's output never opens so (a pasted log's "+" line, "+ python train.py" of bash -x, has a
# space or a word after it)
_DOC_DIFF_LINE = re.compile(r"[+-](?:``|\*\*|\.\. |#{1,6} )")


def _oom_mentioned(text: str, m: re.Match[str]) -> bool:
    """OOM words (_OOM) a line only mentions: not where a runtime's message stands when raised (_OOM_RAISED_BEFORE,
    or right after an error's words), but in a hedge's or an explanation's sentence or after a fix (_told_hedged:
    "If you get 'CUDA out of memory', lower the batch size", "To avoid CUDA out of memory errors, set ...", "it
    typically indicates CUDA out of memory"), on a program's log-level line (a start-up warning naming the OOM as a
    possibility), as a setting's value or an option's help, as a numbered heading (_named_as_heading), or at a
    line's start as a troubleshooting entry's name (_OOM_ADVICE_AFTER); since batch 45."""
    start = m.start()
    if (_DOC_DIFF_LINE.match(text) is not None or _named_as_heading(text, start, m.end())
            or _cjk_named(text, start, m.end())
            or _ZH_SYMPTOM_ENTRY.match(text) is not None or _error_name_defined(text, m)):
        return True
    if not text.startswith(":", m.end()) and _told_explained(text, start, m.end()):
        return True     # "torch.cuda.OutOfMemoryError means ..." (batch 49)
    if _manifested(text, start, m.end()):
        return True     # "... and surfaces as CUDA out of memory at the next allocation" (batch 58)
    if _at_line_head(text, start):
        return (_OOM_ADVICE_AFTER.match(text, m.end()) is not None
                or _CJK_ADVICE_AFTER.match(text, m.end()) is not None or _cjk_mentioned(text, start, m.end()))
    if _told_as_setting(text, start):
        return True     # a setting's value, also behind an exception's head (an index's "signature": "...")
    if ((text.startswith(":", m.end()) and m.group().endswith("Error"))    # "OutOfMemoryError: ..."
            or _OOM_RAISED_BEFORE.search(text, max(0, start - _MENTION_WINDOW), start)):
        return False
    if _labelled_item(text, start) or _SYMPTOM_LABEL.match(text) is not None:
        # a labelled item names a kind of OOM, and an issue template's "Symptom:" line is its writer's description
        # (since batch 54), unless torch's raised message stands there with its numbers (a trainer printing "Type 1:
        # CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of ..."; since the review of
        # batch 46's mends; "Symptom: the job dies, log says CUDA out of memory. Tried to allocate 1.50 GiB (GPU 3;
        # 79.15 GiB total capacity; ...", a template filled with the paste: review R49)
        return not (torch_oom_rendered(text, m.end()) or torch_oom_rendered(text, start))
    if (_first_end(_CJK_FIX, text) >= 0 and _first_end(_CJK_HAPPENED, text) < 0
            and (_first_end(_CJK_ASKED, text) < 0 or _first_end(_CJK_TIPS_COUNTED, text) >= 0)):
        return True
    if _FAULT_ERROR_BEFORE.search(text, max(0, start - _MENTION_WINDOW), start):    # after an error's words,
        return 0 <= _first_end(_TOLD_FIX_WORD, text) <= start                      # unless a fix's ("Fixed: ...")
    # torch's full message ("... Tried to allocate 2.00 GiB") is a rendered exception on a log level's line, not a
    # start-up warning's advice ("WARNING:__main__:rank 3 hit CUDA out of memory. Tried to allocate ..."; since the
    # review of batch 45)
    # the words bare in Chinese, Japanese or Korean prose: its own limits (_cjk_mentioned: "如果出现 CUDA out of memory，
    # 可以尝试...", "CUDA out of memory가 발생하면 ... 줄이세요"; since batch 52)
    return (_told_hedged(text, start, _HEDGE, _TOLD_FIX_WORD, _MENTION_WINDOW)
            or (_LOG_LEVEL_TAG.match(text) is not None and not _OOM_RENDERED.match(text, m.end()))
            or _cjk_mentioned(text, start, m.end()))


_OOM_RENDERED = re.compile(r"[.,:;]?\s*Tried to allocate \d")
# An OOM's error name matched alone (_OOM: CANN's ACL_ERROR_RT_DEVIDE_OOM, Unified Runtime's and Level Zero's
# *_RESULT_ERROR_OUT_OF_DEVICE_MEMORY) where a header, a source file or a docs table defines or lists it, not where a
# runtime prints it (review R62): "#define NAME 207018", "static const int32_t NAME = 207018;", "NAME = 0x70000002,",
# "case NAME:", "{NAME, \"device oom\"}", a JSON key "\"NAME\": ...", a markdown cell "| NAME |". CUDA's
# CUDA_ERROR_OUT_OF_MEMORY is read only ending a line, which none of these do.
_ERROR_NAME_ALONE = re.compile(r"(?:ACL|UR|ZE)_[A-Z0-9_]+")
_NAME_DEFINED_BEFORE = re.compile(r"(?:#\s*define|\bcase|\{)\s*$")
_NAME_DEFINED_AFTER = re.compile(r"[\"']?\s*(?:=(?!=)|:(?!:))|\s*\|")


def _error_name_defined(text: str, m: re.Match[str]) -> bool:
    """The OOM's error name alone (_ERROR_NAME_ALONE) defined or listed, not printed (see above)."""
    if _ERROR_NAME_ALONE.fullmatch(m.group()) is None:
        return False
    before = text[max(0, m.start() - 24):m.start()]
    after = _NAME_DEFINED_AFTER.match(text, m.end())
    return (_NAME_DEFINED_BEFORE.search(before) is not None
            or (after is not None and (not after.group().endswith("|") or before.rstrip().endswith("|"))))


def _oom_spans(text: str) -> list[tuple[int, int]]:
    """The spans of an OOM's words (_OOM) on a line that are not only mentioned (_oom_mentioned), nor PhysX's after a
    hedge or a fix (a FAQ's "If PhysX failed to allocate GPU memory, lower num_envs")."""
    quoted = any(q in text for q in _QUOTES)
    spans = []
    for m in _OOM.finditer(text):
        if _oom_mentioned(text, m) or (m.group().startswith(("PhysX", "Px"))
                                       and _told_hedged(text, m.start(), _HEDGE, window=_MENTION_WINDOW)):
            continue
        spans.append(m.span())
        if not quoted:      # the first kept span decides (_only_listed reads spans only after a quote)
            break
    return spans


def oom_stated(text: str, list_above: Collection[str] | None = None) -> bool:
    """A line with an OOM's words (``_oom_spans``: not a hedge, an explanation, a fix, advice, a log level's line, a
    setting, a heading) that are not only items of a list of quoted patterns (``list_above``: see
    ``_quoted_list_items``)."""
    found = _oom_spans(text)
    return bool(found) and not _only_listed(text, found, list_above)


# ProcessGroupNCCL's own words when its watchdog saw a collective time out or hang (never our kill):
# the heartbeat monitor's LOG(FATAL) "Terminating the process after attempting to dump debug info, due
# to ProcessGroupNCCL watchdog hang." / "... due to collective timeout or exception." (getNCCLWatchdog-
# TimeoutExitMsg), and c10::Error's location line for the timeout WorkNCCL::checkTimeout throws
# ("Exception raised from checkTimeout at .../ProcessGroupNCCL.cpp:632 (most recent call first):"),
# which pastes keep when the message above it was cut.
# Its heartbeat monitor, when the watchdog thread itself stopped (ProcessGroupNCCL::heartbeatMonitor, torch
# 2.3+; the same words in the ProcessGroupNCCL forks of other vendors): the LOG(ERROR) "Heartbeat monitor timed
# out! Process will be terminated after dumping debug info. workMetaList_.size()=N" and "First PG on this
# rank that detected no heartbeat of its watchdog.", printed before its exit message "...'s watchdog got
# stuck for N seconds ..." (matched below); a paste often keeps only these.
# A paste that kept only the C++ frames under it still names that path: WorkNCCL::checkTimeout throws nothing but
# the timeout (its "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<...>) + 0x282 (...)"),
# while the watchdog's other frames (ncclCommWatchdog, watchdogHandler, Watchdog::runLoop) carry any exception
# it met, a CUDA error of its event query too (below, _WATCHDOG_EXIT_LINE).
_NCCL_WATCHDOG_EXIT = (r"Terminating the process after attempting to dump debug info, due to"
                       r"|Exception raised from checkTimeout at \S*ProcessGroupNCCL\.cpp"
                       r"|\bc10d::ProcessGroupNCCL::WorkNCCL::checkTimeout\("
                       r"|Heartbeat monitor timed out! Process will be terminated"
                       r"|detected no heartbeat of its watchdog")
# torch's "Watchdog caught collective operation timeout: WorkNCCL(...)" (WorkNCCL::checkTimeout) is the only
# message with "Watchdog caught collective": a paste cut inside it ("... Watchdog caught collective
# operati", "... Watchdog caught coll") still names the timeout; "Watchdog caught" followed by anything
# else is not torch's.
_WATCHDOG_CAUGHT = r"Watchdog caught(?: collective|\s*(?:c(?:o(?:l(?:l(?:e(?:c(?:t(?:i(?:v)?)?)?)?)?)?)?)?)?\s*$)"
# CANN's device error report of an HCCL collective stuck past HCCL_EXEC_TIMEOUT ("... hccl fftsplus task
# timeout occurred during task execution, stream_id:5, ...")
_HCCL_TASK_TIMEOUT_RE = r"hccl (?:\w+ )?task timeout occurred"
# DeepEP, the expert-parallel all-to-all of Megatron-core's flex token dispatcher, NeMo and SGLang MoE runs, in
# its own words (deepseek-ai/DeepEP): the host side giving up on the counts the other ranks send
# (csrc/legacy/buffer.hpp: ``throw std::runtime_error("DeepEP error: timeout (dispatch CPU)")`` after printing
# "Global rank: %d, num_recv_tokens: %d, num_rdma_recv_tokens: %d", older "DeepEP error: CPU recv timeout";
# csrc/elastic/buffer.hpp: EPException "Dispatch CPU wait exception (FILE:LINE): ...") and its kernels' timeout
# printfs before they trap() (csrc/kernels/legacy/internode.cu, intranode.cu, utils.cuh, deep_ep/include/.../
# impls/*.cuh: "DeepEP dispatch forwarder timeout (RDMA meta), channel: ...", "DeepEP combine forwarder (NVL
# check) timeout, ...", "DeepEP timeout for dispatch receivers, rank ...", "DeepEP timeout check failed: ...",
# "DeepEP NVLink barrier timeout, ...", "DeepEP notify (GPU reduction) timeout, ..."). A collective that timed
# out, as NCCL's watchdog says it: the same class, usually the echo of a rank that died or hung. The low-latency
# kernels' "Warning: DeepEP timeout for dispatch receive, ..." masks the rank and goes on when a mask buffer is
# set (internode_ll.cu): supporting only.
_DEEPEP_TIMEOUT_RE = (r"DeepEP error: (?:timeout \(|CPU recv timeout)|Dispatch CPU wait exception \("
                      r"|Global rank: \d+, num_recv_tokens: -?\d+, num_rdma_recv_tokens: -?\d+"
                      # the printfs' shape: "timeout, ...", "timeout (WHERE), ...", "timeout for WHAT WHO, ...",
                      # "timeout check failed: ..." (a log line that only mentions a timeout setting is not one)
                      r"|(?<!Warning: )\bDeepEP (?:[\w()/%-]+ ){0,6}?timeout(?:,| \(| for \w+ \w+,| check failed:)")
_DEEPEP_TIMEOUT = re.compile(_DEEPEP_TIMEOUT_RE)
_DEEPEP_WARNING = re.compile(r"Warning: DeepEP timeout for ")
# a denial or a possibility before a fault's, a signal's or a timeout's words: they tell of none that happened
# ("can't" tells what happened); the one list the fault names, the segfaults and the NCCL timeouts told in words use
# The reporter's run named in a line: the first person, a step, an epoch or a rank by number, a process by name or PID
# (_RUN_OWN; its pattern is read by _WHEN_YOU_TOLD too, as one compiled pattern)
_RUN_OWN_RE = (r"(?-i:\b(?:I|[Ww]e|[Oo]ur|[Mm]y)\b)"
               r"|(?i:\b(?:step|epoch|iteration|iter|rank)\s*\d|\bpython\d?\b|\bpid\s*\d)")
# "you'll" and "when you": the second person's prediction and condition, a hedge in their whole sentence (_HEDGE_WORDS
# and _SENTENCE_WIDE_HEDGE both read these)
_YOU_WILL = r"you['’]ll"
_WHEN_YOU = r"when(?:ever)?\s+you"
# ... not in the past tense: the reply to what someone did ("When you asked me to rerun with CUDA_LAUNCH_BLOCKING=1,
# the job crashed with an illegal memory access"; review R32)
_WHEN_YOU_PAST = r"(?!\s+(?:\w+ed|said|told|wrote|ran|got|saw|did|sent|gave|made|showed|shown)\b)"
_HEDGE_WORDS = (r"no|not|never|without|may|might|could|can(?!['’]t)|will|would|possibl[ey]|potential(?:ly)?"
                # "if", but not the reporter's own experiment, what happens each time they run it ("If I run with NCCL
                # debug and blocking cuda it's a little clearer; the first error is a cuda illegal memory access",
                # Ultralytics #19987; a concession's "didn't matter if i used sd1.5 or sdxl, i always got out of memory
                # on my rtx 5090", ComfyUI #12575): the first person singular and a verb of running or changing the
                # run, in any tense (since batch 49), and only for words after the condition's clause has closed (a
                # comma, a semicolon, a colon, a dash before them): the condition's own clause is a conditional ("If I
                # use batch size 64 I get CUDA out of memory, so I use 32"), and "we" is a guide's ("If we use a batch
                # size of 512, we get a CUDA out of memory error"); since the review of batches 48/49. The hedge is
                # searched up to the words (endpos), so the clause's close is looked for only before them.
                r"|if(?!\s+[Ii]\s+(?:run|ran|use[ds]?|set|launch(?:ed)?|train(?:ed)?|tr(?:y|ied)|start(?:ed)?"
                r"|enabled?|disabled?|turn(?:ed)?|switch(?:ed)?|increased?|decreased?|changed?|removed?|add(?:ed)?"
                r"|lower(?:ed)?|raised?)\b(?:[^,;:.!?—–]|[.:](?=\S)){0,200}?(?:[,;—–]|:\s|\s-\s))"
                # "will" contracted after "you": a lesson's "Sooner or later you'll see CUDA out of memory", the second
                # person of a guide's prediction (since batch 47). Not "I'll" (the reporter's own plan: "I'll paste the
                # log below, the run died with ...") nor "it'll" (what keeps happening: "It'll run for an hour and then
                # it hits an NCCL timeout"); since the review of batch 47
                r"|" + _YOU_WILL +
                # and its condition, "when" or "whenever" and the second person: a guide's "Yet when you attempt Flux
                # LoRA training with default configurations, CUDA out of memory errors crash your process" speaks of
                # the reader's runs, none of the writer's; "when I ..." is the reporter's own (since batch 51); not a
                # reporter's generic "you" (_when_you_told, read by _hedge_found: review R32)
                r"|" + _WHEN_YOU + _WHEN_YOU_PAST +
                r"|avoid(?:s|ed|ing)?|prevent(?:s|ed|ing)?"
                # an explainer's general statement of what words stand for, not a report of one that happened
                # ("When DCGM detects fewer GPUs ..., it typically indicates a GPU has fallen off the bus", a
                # monitoring agent's pull request; "Xid 79 means the GPU fell off the bus"; since batch 45); not after
                # "which", where they read what the line just reported ("rank 3 stopped heartbeating, which typically
                # means an NCCL collective timed out; aborting job"; since the review of batch 45)
                r"|(?<!\bwhich )(?<!\bwhich typically )(?:typical(?:ly)?|indicat(?:e|es|ing)|means)")
_HEDGE = re.compile(r"(?i)\b(?:" + _HEDGE_WORDS + r")\b")
# and, before a failure a person tells in words (a segfault, an NCCL timeout), a fix of one (a changelog's "Fixed
# SIGSEGV in varlen backward", "Fixed NCCL broadcast timeout") or a way around one. These are looked for over the
# whole line before the words, not only their sentence: a changelog's heading names the fix once for the entries
# after it ("## v0.4.1 Fixes. NCCL timeout in eval barrier (#124).", "Bug fixes: - Segfault in collate (#123).";
# since the review of batch 41)
_TOLD_FIX_WORDS = r"or other|fix(?:es|ed|ing)?|work-?around(?:s|ed)?|address(?:es|ed|ing)"
_TOLD_FIX = re.compile(r"(?i)\b(?:" + _TOLD_FIX_WORDS + r")\b")
# the same only as a word, not inside a name ("[fix-loader run 3] CUDA out of memory", a branch "fix/oom", a file
# "fix_loader.py"): the OOM rule's, where torch's own message so often follows a run's or a branch's name; since the
# review of batch 45
_TOLD_FIX_WORD = re.compile(r"(?i)(?<![\w/-])(?:" + _TOLD_FIX_WORDS + r")(?![\w/-])")
# Where a denial or a possibility (_HEDGE_WORDS) is looked for: the sentence the words are in. A paragraph pasted on
# one line holds several sentences, and a word of an earlier one says nothing of a later one ("This causes the
# inline consolidation to assign all work to a single rank. For a 397B model on 256 GPUs, this manifests as a
# 10-minute NCCL collective timeout", NeMo Automodel #2279: the infinitive "to" of the first sentence is no setting
# of the second's timeout; since batch 41). A sentence ends at ". ", "! " or "? " (after a closing quote, backquote,
# bracket or markdown emphasis too); a period after a lone letter ("e.g. ", "i.e. ", "A. "), a digit ("step 3. "),
# an abbreviation ("etc. ", "vs. ", "approx. ", "cf. ") or an ellipsis ("... ") ends none, so a hedge before it
# still counts; nor does "; ": the clauses it joins are one sentence ("This can happen when one rank is slow; the
# others then report an NCCL timeout."; since the review of batch 41).
_SENTENCE_END = re.compile(r"(?<![\s.(]\w)(?<!\d)(?<!\.\.)(?<!\b[Ee]tc)(?<!\b[Vv]s)(?<!\b[Aa]pprox)(?<!\b[Cc]f)"
                           r"[.!?][\"'`*)\]]*\s+")


# A log's lines joined into one with their newlines escaped: a job's log as a JSON string ("textPayload": "...\n..."),
# Vertex AI's "Termination log message:", a CI log's API dump. Each joined line is read as a line of its own, so its
# own start is where a runtime's line stands and a fix's word on another joined line says nothing of it (since batch
# 51), and each ends the sentences of the rules that read the whole line (_sentence_start: a library warning's "when
# you" on an earlier joined line hedges no later runtime line; review R32). Not a JSON string's escaped backslash
# before an "n" (C:\\src\\new_kernels in JSON), nor a Windows path's separator before a name that starts with "n"
# (_path_separator_before: C:\Windows\System32\nvcuda.dll, the CUDA driver's DLL; C:\ComfyUI\nodes.py; C:\nodes;
# site-packages\nvidia\cudnn): a drive or a path segment right before it (after a drive's colon or another separator)
# or another separator right after its name; review R32
_ESCAPED_NEWLINE = re.compile(r"(?<!\\)(?:\\r)?\\n")
_PATH_SEGMENT_AFTER = re.compile(r"[\w.\-]{1,260}\\(?![nr\"\\])")
_PATH_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_PATH_REACH = 260     # Windows' MAX_PATH: how far back a path's segment is looked for


def _path_separator_before(text: str, at: int) -> bool:
    """text[:at] ends with a Windows path's segment: a separator "\\" (no escaped newline's: \\n, \\r) after a drive's
    colon or a name, then a name (above); read backwards, at most _PATH_REACH."""
    j, lo = at, max(0, at - _PATH_REACH)
    while j > lo and text[j - 1] in _PATH_CHARS:
        j -= 1
    if j == at:     # a drive's root: "C:\\nodes"
        return at >= 2 and text[at - 1] == ":" and text[at - 2].isalpha() and (at < 3 or not text[at - 3].isalnum())
    return (lo < j and j >= 2 and text[j - 1] == "\\" and text[j] not in "nr"
            and (text[j - 2] in _PATH_CHARS or text[j - 2] == ":"))


def _joined_line_break(text: str, m: re.Match[str]) -> bool:
    """The escaped newline ``m`` (_ESCAPED_NEWLINE) joins two lines of a log, no Windows path's separator."""
    return not (_path_separator_before(text, m.end() - 2) or _PATH_SEGMENT_AFTER.match(text, m.end()))


def _joined_lines(text: str) -> list[str]:
    """The lines a line joins with escaped newlines (_ESCAPED_NEWLINE, _joined_line_break), or the line itself."""
    if "\\n" not in text:
        return [text]
    parts, start = [], 0
    for m in _ESCAPED_NEWLINE.finditer(text):
        if _joined_line_break(text, m):
            parts.append(text[start:m.start()])
            start = m.end()
    parts.append(text[start:])
    return parts


def _joined_line_start(text: str, pos: int, lo: int = 0) -> int:
    """Where the joined line holding text[pos] starts (after its escaped newline: _joined_lines), ``lo`` at least."""
    i = pos
    while True:
        i = text.rfind("\\n", lo, i)
        if i < 0:
            return lo
        m = _ESCAPED_NEWLINE.match(text, i - 2 if i - 2 >= lo and text.startswith("\\r", i - 2) else i)
        if m is not None and m.end() == i + 2 and _joined_line_break(text, m):
            return m.end()


def _sentence_start(text: str, pos: int, lo: int = 0) -> int:
    """Where the sentence holding text[pos] begins on its line (``lo`` when no sentence ends between it and pos).
    Read backwards from pos, one end mark at a time, so a rule that asks for each of many words on a long line looks
    only as far back as the last sentence's end (its lookbehinds made a forward pass over a window cost 0.1 ms a
    word; since the review of batches 48/49). A joined line's escaped newline ends its sentences (_joined_line_start)."""
    if text.find("\\n", lo, pos) >= 0:     # only the window read: not a scan of the whole line a call (R62)
        lo = _joined_line_start(text, pos, lo)
    i = pos
    while True:
        i = max(text.rfind(".", lo, i), text.rfind("!", lo, i), text.rfind("?", lo, i))
        if i < 0:
            return lo
        m = _SENTENCE_END.match(text, i, pos)
        if m is not None:
            return m.end()


@functools.lru_cache(maxsize=8)
def _first_end(pattern: re.Pattern[str], text: str) -> int:
    """Where ``pattern``'s first match on the line ends (-1: none), read once a line however many words on it ask."""
    m = pattern.search(text)
    return m.end() if m is not None else -1


# How far before the words a rule that reads each match of many on a line looks for its marks (an exception's name,
# an error's words, the hedge's sentence): a log's line can be 1 MiB of repeated words, and looking back over the
# whole line for each made the work the line's square (since the review of batch 45)
_MENTION_WINDOW = 400


# A reporter's generic "you" ("When you run train.py with --batch_size 8 on a 3090 you get CUDA out of memory at step
# 12", "When you run on 8 GPUs, we hit an NCCL timeout"), no guide's condition: its sentence names a run of the
# reporter's (_RUN_OWN_RE) or holds the runtime's own text (an exception's name or an error's words and a colon, an
# exit code or status: "When you run on an RTX 5090 you get RuntimeError: nvrtc: error: ...", "... you get \"CUDA
# error: out of memory\"", "... the worker exited with code -9"); the whole sentence is read, after the words too
# (review R32)
_WHEN_YOU_TOLD = re.compile(_RUN_OWN_RE + r"|\w(?:Error|Exception)\s*:|(?i:\berror\s*:|\b(?:code|status)\s+-\d)")


def _when_you_told(text: str, h: re.Match[str]) -> bool:
    """The hedge ``h`` is "when you" (_WHEN_YOU) of a reporter's generic "you" (_WHEN_YOU_TOLD), no guide's."""
    return h.group()[:4].lower() == "when" and _when_you_told_at(text, h.start(), h.end())


@functools.lru_cache(maxsize=64)
def _when_you_told_at(text: str, start: int, end: int) -> bool:
    """_when_you_told of the words text[start:end], read once however many words after them ask."""
    sentence = _sentence_start(text, start, max(0, start - _MENTION_WINDOW))
    stop = _SENTENCE_END.search(text, end, end + _MENTION_WINDOW)
    hi = stop.start() if stop is not None else min(len(text), end + _MENTION_WINDOW)
    if "\\n" in text:     # a joined line's escaped newline ends the sentence (_joined_lines)
        hi = min(hi, *(m.start() for m in _ESCAPED_NEWLINE.finditer(text, end, hi) if _joined_line_break(text, m)))
    return _WHEN_YOU_TOLD.search(text, sentence, hi) is not None


def _hedge_found(hedge: re.Pattern[str], text: str, lo: int, hi: int) -> re.Match[str] | None:
    """The first match of ``hedge`` (a pattern built on _HEDGE_WORDS) in text[lo:hi] that hedges: "when you" of a
    reporter's generic "you" is none (_when_you_told)."""
    for h in hedge.finditer(text, lo, hi):
        if not _when_you_told(text, h):
            return h
    return None


def _told_hedged(text: str, pos: int, hedge: re.Pattern[str], fix: re.Pattern[str] = _TOLD_FIX,
                 window: int | None = None) -> bool:
    """A hedge before the words at text[pos] that a person tells: ``hedge`` (a denial, a possibility) in their own
    sentence (within ``window`` characters before them, when given), or a fix or a way around one (``fix``) anywhere
    before them on the line."""
    lo = 0 if window is None else max(0, pos - window)
    return bool(_hedge_found(hedge, text, _sentence_start(text, pos, lo), pos) or 0 <= _first_end(fix, text) <= pos)


# A log level's tag at the start of a line: a program's own line (a start-up banner "[INFO] Setting up. Watchdog
# aborts the job on an NCCL timeout.", a warning), not a person's report of what happened, so a failure told in
# words there decides nothing. Python logging's level names ("[INFO] ", "INFO: ", "WARNING:root:", "[DEBUG|x.py:3]"),
# torch's C++ warnings ("[W reducer.cpp:1360] ", "[W1130 10:02:11.123 ...] "), glog's and absl's I and W headers
# ("W0412 09:12:44.120000 501 file.py:874] "; _ENV_PREFIX strips the I header before a line is read), Julia's
# "[ Info: "; never an error's level (an ERROR line reports a failure).
_LOG_LEVEL_TAG = re.compile(r"^(?:\[\s*(?:INFO|WARN(?:ING)?|DEBUG|TRACE|NOTICE|Info|Warning|Debug)\b"
                            r"|\[[IWD](?:\d{4}|\s[^\]]*\]|\])"
                            r"|(?:INFO|WARN(?:ING)?|DEBUG|TRACE|NOTICE)\b\s*[:|\-]"
                            r"|[IW]\d{4}\s)")
# An NCCL timeout a report tells in words: torch's own texts for a collective past its timeout are the watchdog's
# ("Watchdog caught collective operation timeout", above), which a report, a title or a post retells as "an NCCL
# timeout", "NCCL operation timed out", "= NCCL timeout hell". The same words name a setting as often: LLaVA-style
# trainers print "Setting NCCL timeout to INF to avoid running errors." at every start, a results table has
# "| NCCL timeout (s) | 1800 |", a comment "barrier before eval to avoid NCCL timeout". So the words decide only as
# a statement (nccl_timeout_told: no denial, hedge or setting verb before them, no value after them) and last, like
# a segfault told in words (see classify); never NCCL's own text (_NCCL, _NCCL_TIMEOUT).
# The collective a report names may come between: torch's own names for it (ProcessGroupNCCL's "OpType=ALLREDUCE",
# from opTypeToString in torch/csrc/distributed/c10d/ProcessGroup.cpp: BROADCAST, ALLREDUCE, REDUCE, ALLGATHER,
# _ALLGATHER_BASE, GATHER, SCATTER, REDUCE_SCATTER, _REDUCE_SCATTER_BASE, ALLTOALL, ALLTOALL_BASE, SEND, RECV,
# BARRIER, ..._COALESCED), as torch.distributed's API spells them (all_reduce, all_to_all) or a person does
# ("all-reduce", "Broadcast"), bare or in backquotes: "NCCL broadcast timeout errors", "an NCCL `ALLREDUCE` timeout".
_COLLECTIVE_WORD = (r"(?i:_?(?:all[-_ ]?reduce|all[-_ ]?gather|reduce[-_ ]?scatter|all[-_ ]?to[-_ ]?all|broadcast"
                    r"|barrier|reduce|gather|scatter|send|recv)(?:_base|_coalesced)?)")
_NCCL_TIMEOUT_TOLD = re.compile(r"\bNCCL(?: (?:operation|collective|watchdog|communication|communicator"
                                r"|`?" + _COLLECTIVE_WORD + r"`?))?"
                                r" (?:[Tt]imeout|[Tt]ime-out|[Tt]ime out|timed out)\b")
# torch's NCCL watchdog told acting on a collective ("the NCCL watchdog reports a collective mismatch on
# DATA_PARALLEL_GROUP_WITH_CP", "Eventually NCCL watchdog aborts an ALLGATHER", "the NCCL watchdog killed the job"):
# ProcessGroupNCCL's watchdog thread (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, Watchdog::runLoop, before
# 2.8 ProcessGroupNCCL::watchdogHandler) acts on a work only when work.checkAndSetException() found NCCL's async error
# or work.checkTimeout() found it past its timeout, then aborts the communicators and throws: a report that it
# reported, caught or aborted something tells one of the two, as "an NCCL timeout" does. A past-tense act decides by
# itself; a present-tense one only with what it acted on (a collective by torch's name, a mismatch, a timeout, an
# error), so an explainer's "the NCCL watchdog aborts the job" names no run's collective. The told rules' limits
# hold (a hedge or a fix before it, a log level's line: nccl_timeout_told); since batch 48.
_NCCL_WATCHDOG_TOLD = re.compile(r"(?<![A-Za-z0-9_])(?:NCCL|ProcessGroupNCCL(?:'s)?)(?: collective)? watchdog (?:thread )?"
                                 r"(?:(?:has |had )?(?:reported|caught|aborted|fired|triggered|killed|terminated)\b"
                                 r"|(?P<present>reports|catches|aborts|kills|terminates) (?:an? |the )?"
                                 r"(?:collective |NCCL |desync )?(?:`?" + _COLLECTIVE_WORD + r"`?|mismatch"
                                 r"|timeout|time-out|error|desync|hang)(?![\w-]))")
# A DeepEP timeout a report tells in words ("DeepEP reports CPU time out", "a DeepEP dispatch timeout"): DeepEP's
# own words are _DEEPEP_TIMEOUT's; a person names the side that gave up in DeepEP's own vocabulary, the words of its
# timeout messages (csrc/kernels/legacy/internode.cu "DeepEP dispatch RDMA sender timeout", "DeepEP RDMA sender
# coordinator timeout", "DeepEP dispatch forwarder timeout (RDMA meta)", "DeepEP dispatch NVL receiver timeout";
# intranode.cu "DeepEP timeout for dispatch receivers"; internode_ll.cu "... for dispatch receive"; csrc/legacy/
# buffer.hpp "DeepEP error: CPU recv timeout"; deep_ep/include/deep_ep/common/comm.cuh "DeepEP NVLink barrier
# timeout", "DeepEP Gin barrier timeout"; impls/dispatch.cuh "DeepEP notify (GPU reduction) timeout"; impls/
# hybrid_dispatch.cuh "DeepEP hybrid dispatch (forwarding) timeout"; impls/pp_send_recv.cuh "DeepEP PP send timeout"),
# up to three of them, before the timeout or after its "for" as intranode.cu puts them ("DeepEP timeout for dispatch
# receivers" retold without the message's comma), or says it happened with a verb ("DeepEP hit a timeout in
# dispatch", "our run hits DeepEP timeout"). At least one word or verb: "DeepEP timeout disabled", "DeepEP timeout
# detection is off" name a setting.
_DEEPEP_WORD = (r"(?i:dispatch|combine|CPU|GPU|RDMA|NVL(?:ink)?|Gin|internode|intranode|low-latency|notify|hybrid"
                r"|forward(?:er|ing)s?|senders?|receivers?|coordinators?|barriers?|PP|send|recv|receive)")
_DEEPEP_VERB = r"(?:reports?|reported|hits?|throws?|threw|raises?|raised|gets?|got)"
_DEEPEP_TIMEOUT_TOLD = re.compile(r"(?:\bDeepEP(?: " + _DEEPEP_VERB + r"(?: an?)?(?: " + _DEEPEP_WORD + r"){0,3}"
                                  r"|(?: " + _DEEPEP_WORD + r"){1,3})"
                                  r"|\b" + _DEEPEP_VERB + r" (?:an? |the )?DeepEP(?: " + _DEEPEP_WORD + r"){0,3})"
                                  r" (?:[Tt]imeout|[Tt]ime-out|[Tt]ime out|timed out)\b"
                                  r"|\bDeepEP (?:[Tt]imeout|[Tt]ime-out|[Tt]ime out) for(?: " + _DEEPEP_WORD + r"){1,3}\b")
# Before the words: the hedges of a segfault told in words (_HEDGE_WORDS: a denial, a possibility "This may
# cause an NCCL broadcast timeout", "If you hit an NCCL all-reduce timeout, ..."; and _TOLD_FIX, a changelog's "Fixed
# NCCL broadcast timeout"), and what only a timeout has: a setting verb ("Setting NCCL timeout to INF"), and "to" as an infinitive
# ("to avoid", "to raise the"), not as the cause words "due to", "led to", "related to".
_NCCL_TIMEOUT_HEDGE = re.compile(r"(?i)\b(?:" + _HEDGE_WORDS + r"|set(?:s|ting)?"
                                 r"|(?<!due )(?<!led )(?<!lead )(?<!leads )(?<!leading )(?<!related )"
                                 r"(?<!owing )to)\b")
# After the words: a value or a unit ("NCCL timeout = 7200", "an NCCL timeout of 30 min is set", "NCCL timeout (s)", "timeout in minutes (default: 30)"),
# or the setting's own nouns and states ("DeepEP dispatch timeout check enabled", "NCCL gather time out count: 0",
# "NCCL time out value raised to 3600", "DeepEP timeout disabled")
_NCCL_TIMEOUT_VALUE = re.compile(r"\s*(?:to\b|=|:|of \d|\((?:s|ms|sec|secs|seconds|min|mins|minutes)\)|\(default"
                                 r"|(?i:disabled|enabled|checks?|detection|count|value)\b"
                                 r"|in (?:s|ms|sec|secs|seconds|min|mins|minutes)\b"
                                 # a setting told after the words: "NCCL timeout was set to 3600 s" ("raised"
                                 # is left out: an exception is raised)
                                 r"|(?i:(?:was|is|has been|were|are) (?:set|increased|lowered|changed|configured|extended)"
                                 r"|set (?:to|at)\b))")


# The same told in Chinese (a write-up's "错误日志显示NCCL通信操作超时", the log showed an NCCL communication operation
# time out; "出现NCCL集体操作超时错误(ALLREDUCE操作)"; batch 45): "NCCL", maybe the operation's kind, "超时" (timed
# out), not the setting's nouns after it ("NCCL超时时间", the timeout's duration; 阈值, threshold; 设置, setting), and
# not after a possibility, a way around or a setting verb in its sentence (如果/若 if, 可能 may, 避免/防止/以免 to
# avoid, 增加/设置/调大/延长 raise, set).
_NCCL_TIMEOUT_TOLD_ZH = re.compile(r"(?<![A-Za-z])NCCL\s*(?:(?:通信|通讯|集体|集合)\s*){0,2}(?:操作)?\s*超时"
                                   r"(?!时间|阈值|设置|参数|值|时长)")
_NCCL_TIMEOUT_HEDGE_ZH = re.compile(r"如果|若|可能|避免|防止|以免|为了|增加|设置|调大|延长"
                                    # a doubt ("不确定进程是否收到了SIGKILL信号", unsure whether the process received
                                    # SIGKILL; 是否 whether, 不知道 don't know); since the review of batches 48/49
                                    r"|不确定|是否|不知道")
# a denial of the verb right before the words ("进程没收到SIGKILL信号", "进程并没有收到SIGKILL信号", did not receive;
# 未 not yet): the negation stands next to what it denies, so an earlier clause's ("训练没跑完就...") is none
_ZH_DENIED_BEFORE = re.compile(r"(?:没有?|并没有?|未|从未|从没|不会|不)再?\s*$")


# The English words inside Chinese prose are read with the same Chinese limits: a setting's noun after them ("为 FSDP
# worker 增加了 NCCL timeout 配置", added an NCCL timeout setting, verl #607's answer; 配置 configuration), a setting or
# avoiding verb before them in their sentence (since batch 46)
# Korean prose too (Hangul syllables, U+AC00-U+D7A3, and jamo): since batch 52 a Korean line is a CJK line, so a log
# line glued to Korean prose ends where the Hangul starts (torch's DataLoader line, _SIG_TEXT) and the prose's own
# limits are read (_ko_mentioned)
# the letters of Chinese, Japanese and Korean (Hangul Jamo, kana, compatibility Jamo, CJK ideographs, Hangul syllables)
_CJK_RANGES = r"\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u9fff\uac00-\ud7a3"
_CJK_CHAR = re.compile(r"[" + _CJK_RANGES + r"]")
_NCCL_TIMEOUT_SETTING_ZH = re.compile(r"\s*(?:时间|阈值|设置|参数|值|时长|配置|選項|选项)")


# the turn may come a few words into its clause ("如果不开梯度检查点就会报显存不足，开了之后第300步还是出现显存不足": after
# enabling it, at step 300 it still ran out; review R31)
_ZH_CONTRAST = re.compile(r"[，,][^，,。；！？]{0,12}?(?:但是|但|还是|仍然|仍|却|可是|结果)")


def _zh_hedged(text: str, pos: int) -> bool:
    """A Chinese possibility, doubt, way around or setting verb (_NCCL_TIMEOUT_HEDGE_ZH) in the sentence before
    text[pos], a denial right before it (_ZH_DENIED_BEFORE), or a condition that closes its clause (_zh_if_after)."""
    sentence = _zh_sentence_start(text, pos)
    for turn in _ZH_CONTRAST.finditer(text, sentence, pos):   # "已经增加了超时时间，但是...还是出现 NCCL timeout": what
        sentence = turn.end()                                  # follows the "but" is told, not the setting before it
    return (any(not (h.group() == "设置" and _ZH_SET_WHEN.match(text, h.end(), pos))
                for h in _NCCL_TIMEOUT_HEDGE_ZH.finditer(text, sentence, pos))
            or _ZH_DENIED_BEFORE.search(text, max(sentence, pos - 4), pos) is not None or _zh_if_after(text, pos))


# A Chinese condition that closes the clause of the words at its start (since batch 54): ...的话 ("if ..."), alone
# ("CUDA out of memory 报错的话，减小batch size", if it errors with ..., reduce ...) or paired with 如果/若/要是 before the
# words ("如果出现 NCCL timeout 的话，把超时调大"); whatever follows, advice or a question ("出现 ... 的话怎么办"), the words
# are a case supposed, none that happened. Not 说的话/讲的话/听的话/这句话 (the words said), nor 的话题 (topic). Read from
# the words to their clause's end (a comma, a sentence's end) within _ZH_IF_REACH characters: a runtime's message
# quoted in the clause (torch's illegal address, ~52 characters) and the verb after it, bounded so each match costs
# the reach, not the line.
_ZH_IF_AFTER = re.compile(r"[^，,。；！？?\n]*?(?<![说讲听句])的话(?![题语筒])")
_ZH_IF_REACH = 120
# ... and the "whenever" frame 当 ... 时 around them ("当看到CUDA out of memory报错时:", when you see ..., a guide's case
# before its fixes; batch 54): 当 opening their clause (not 相当, 适当, 当前, 当时, 当天, 当然: _ZH_GENERAL_BEFORE's
# reading of 当, whose told rule has refused the pair since review R31) and 时 or 的时候 closing it. 时 alone after the
# words is a report's when ("出现 CUDA out of memory 时程序直接退出了", the program exited when it came).
# Reviewed (R49): 时 is not the one inside 同时 (at the same time), 超时 (timed out), 及时/按时/准时 (in time), 随时, 有时,
# 平时, 临时, 暂时, 小时, 定时, 计时, 实时 (_ZH_WHEN_CLOSES), and a 时 between 当 and the words closed the frame before them
# ("当我用8卡训练时出现 CUDA out of memory 同时 NCCL 也报错", when I trained on 8 GPUs the OOM came: a report).
_ZH_WHEN_WORD = r"(?<![同超及按准随有平临暂小定计实])时(?![间刻代长])"
_ZH_WHENEVER_BEFORE = re.compile(r"(?<![相适])当(?![前时天然])")
_ZH_WHEN_CLOSES = re.compile(r"[^，,。；！？?\n]*?(?:的时候|" + _ZH_WHEN_WORD + ")")
_ZH_WHEN_CLOSED = re.compile(r"的时候|" + _ZH_WHEN_WORD)
# Reviewed (R49): the condition must be the words' own, closing their predicate, not a later clause's that a space
# separates from them, as Chinese reports often write a comma ("多机训练出现 ncclSystemError 单机的话没问题", multi-node
# raises it, single-node is fine; "出现 CUDA out of memory 用 zero2 的话反而正常"; "不行的话我只能换卡了"): between the words
# and 的话/时 only the words' own verb or noun of error, or the rest of words told in Chinese ("NCCL 超时 的时候"), may
# stand (_ZH_OWN_PREDICATE: "CUDA out of memory 报错的话",
# "出现 ... 的话", "当看到CUDA out of memory报错时"), a Chinese word set off after them by a space or glued to their end
# that is none of these is a new subject's clause.
_ZH_OWN_PREDICATE = re.compile(r"的?(?:报错|报|错误|问题|异常|出现|发生|提示|超时|不足|溢出|耗尽|这个错误?|这种错误?|这个问题|等错误|等问题)?了?")
_ZH_LEADING_NON_HAN = re.compile(r"[^\u3400-\u9fff]+")


def _zh_own_condition(text: str, pos: int, end: int) -> bool:
    """The condition closing at text[end] (的话, 时) is the one of the words at text[pos]: past the first of the
    space-separated pieces of text[pos:end] (the words or their verb), each piece's Chinese is only the words' own
    verb or noun of error (_ZH_OWN_PREDICATE)."""
    for piece in text[pos:end].split()[1:]:
        han = _ZH_LEADING_NON_HAN.sub("", piece, count=1) if not "\u3400" <= piece[0] <= "\u9fff" else piece
        han = han.rstrip("`*'\"")
        if han and _ZH_OWN_PREDICATE.fullmatch(han) is None:
            return False
    return True


def _zh_if_after(text: str, pos: int) -> bool:
    """A Chinese condition closes the clause of the words at text[pos]: 的话 (_ZH_IF_AFTER), or 时 after 当 opened it
    (_ZH_WHENEVER_BEFORE, _ZH_WHEN_CLOSES) and no 时 closed it before them; the condition the words' own
    (_zh_own_condition)."""
    cond = _ZH_IF_AFTER.match(text, pos, pos + _ZH_IF_REACH)
    if cond is not None:
        return _zh_own_condition(text, pos, cond.end() - 2)
    clause = max(_zh_sentence_start(text, pos), *(text.rfind(c, 0, pos) + 1 for c in "，,；！？?\n"))
    when = _ZH_WHENEVER_BEFORE.search(text, max(clause, pos - _ZH_IF_REACH), pos)
    if when is None or _ZH_WHEN_CLOSED.search(text, when.end(), pos) is not None:
        return False
    closes = _ZH_WHEN_CLOSES.match(text, pos, pos + _ZH_IF_REACH)
    return (closes is not None and _ZH_WHEN_SET_OFF.match(text, closes.end()) is not None
            and _zh_own_condition(text, pos, closes.end() - (3 if closes.group().endswith("的时候") else 1)))


# a guide's 当 ... 时 frame is set off from what it advises by a mark or goes on with advice or a question ("当看到
# CUDA out of memory报错时:", "...的时候，先检查", "...时应该怎么办"); a 时 running on into what the run did ("当我把 seq_len
# 调到 8192 后出现 CUDA out of memory 时进程直接挂掉", the process died when it came) is a report's when (review R49)
_ZH_WHEN_SET_OFF = re.compile(r"\s*(?:$|[，,:：。；！？?、)）]|可以|应该|应|建议|需要|先|请|怎么|如何|要|会)")


# the setting the reporter's run had, as when the failure came ("batch size 设置为 8 时出现显存不足", set to 8, then):
# the run's own condition, no setting advised (review R31); the words follow right after its 时
_ZH_SET_WHEN = re.compile(r"(?:为|成)?\s*[^，,。；\s]{1,12}\s*时\s*$")


def _zh_sentence_start(text: str, pos: int) -> int:
    """Where the Chinese sentence of text[pos] starts (after 。 or ；)."""
    return max(text.rfind("。", 0, pos), text.rfind("；", 0, pos)) + 1


# Since batch 74: the words as a heading's or a list item's bold label, alone on their line with at most a kind's noun
# and a colon after them ("4. **NCCL 超时错误**:", an answer page's list of possible causes, tests/crash/public 1591;
# "### NCCL 超时"): a kind of failure named, no run's (the markup before them, a heading's # or a bold opening, is
# what makes it a label: an issue's bare title "NCCL超时" stays a report)
_ZH_LABEL_BEFORE = re.compile(r"\s*+(?:#{1,6}\s*+|(?:\d{1,3}[.)、]|[-*•])\s*+)?(?:\*\*|__)\s*+|\s*+#{1,6}\s*+")
_ZH_LABEL_AFTER = re.compile(r"\s*+(?:错误|问题|报错|异常)?\s*+(?:\*\*|__)?\s*+[:：]?\s*+$")    # possessive: linear


def _zh_label_only(text: str, start: int, end: int) -> bool:
    """The words at text[start:end] are a heading's or a list item's bold label alone on the line (above)."""
    return _ZH_LABEL_BEFORE.fullmatch(text, 0, start) is not None and _ZH_LABEL_AFTER.match(text, end) is not None


def _zh_bold_label(piece: str) -> bool:
    """A whole line that is a Chinese bold label of an NCCL timeout (``**NCCL 超时问题**``, a page's heading of a kind of
    failure): kept with its markup, which is what makes it a label (``_zh_label_only``); stripped, its words alone
    read as an issue's bare title (batch 74 left it: the list item's label was refused, the same label alone on its
    line with nothing before its ``**`` still read nccl_error)."""
    if "超时" not in piece:
        return False
    m = _NCCL_TIMEOUT_TOLD_ZH.search(piece)
    return m is not None and _zh_label_only(piece, m.start(), m.end())


def _nccl_timeout_told_zh(text: str) -> bool:
    m = _NCCL_TIMEOUT_TOLD_ZH.search(text)
    if m is None or _LOG_LEVEL_TAG.match(text) or _zh_label_only(text, m.start(), m.end()):
        return False
    # an explainer's 会 before the words, the told OOM's and the bare words' one reading (review R55, finding 4)
    return not (_zh_hedged(text, m.start()) or _zh_predicted(text, m.start(), m.end())
                or _zh_general(text, m.start()))


def nccl_timeout_told(text: str) -> bool:
    """A line that tells, in a person's words, that an NCCL collective (or DeepEP's all-to-all) timed out (not a
    setting or a mention)."""
    if "超时" in text and _nccl_timeout_told_zh(text):
        return True
    if "atchdog " in text:
        w = _NCCL_WATCHDOG_TOLD.search(text)
        if (w is not None and not _nccl_told_refused(text, w) and not _WATCHDOG_EXPLAINED.search(text)
                and not (w.group("present") and not _WATCHDOG_ACTED_ON.search(w.group()))):
            return True
    if not ("imeout" in text or "ime-out" in text or "ime out" in text or "timed out" in text):
        return False    # NCCL's INFO lines come here by the thousand: no regex for them
    m = _NCCL_TIMEOUT_TOLD.search(text) or _DEEPEP_TIMEOUT_TOLD.search(text)
    return m is not None and not _nccl_told_refused(text, m)


# A scenario told to the reader (since batch 59: a problem catalogue's "You set up training across 4 nodes ... At step
# 2,847, everything freezes. ... After 3 days, you discover: one node's InfiniBand cable had a slightly loose
# connection, causing intermittent 10ms latency spikes that triggered NCCL timeout on large all-reduce operations",
# remainingproblems.com, tests/crash/public 1292): the second person as the subject before the words in their sentence,
# with no first person in it, tells the reader's imagined run, none that happened. Not "thank you", nor "as you can
# see" / "you can see" (a report pointing at its own paste), nor a sentence that also names the writer's run ("you can
# see my job hit ...", "we hit it, you will too")
# Reviewed (R68): "you" told a scenario only as the subject of the imagined run's verb, in the present or the future
# ("you set up", "you start", "you discover", "you'll see"), not a person the reporter answers: after "as", "like",
# "what", "than", "same as" or an "@name" ("As you see in the log below, rank 3 hit ...", "Tried what you suggested,
# still hit NCCL timeout", "@stas00 you asked for the logs: ..."), nor before a past verb or a verdict ("you said",
# "you asked", "you were right", "you're right")
_SECOND_PERSON = re.compile(r"(?i)(?<!thank )(?<!\bas )(?<!\blike )(?<!\bwhat )(?<!\bthan )\byou\b"
                            r"(?!\s+(?:can|could|may|might)\s+see\b)"
                            r"(?=(?:['’]ll|\s+(?:will|would|then|now|just|first|finally|eventually|\w+ly))?\s+"
                            r"(?!(?:said|told|wrote|ran|got|saw|did|had|sent|gave|made|showed|shown|were|was|are|know"
                            r"|right|too|guys|all)\b)[a-z]+(?<!ed)\b)")
_ADDRESSEE_BEFORE = re.compile(r"@[\w-]+[\s,:]*$")


def _told_to_you(text: str, start: int, end: int) -> bool:
    """The words at text[start:end] stand in a sentence told to the reader: "you" before them in it as the imagined
    run's subject, not an addressee (_SECOND_PERSON, _ADDRESSEE_BEFORE), no first person anywhere in it
    (_FIRST_PERSON)."""
    sentence = _sentence_start(text, start, max(0, start - _MENTION_WINDOW))
    stop = _SENTENCE_END.search(text, end, end + _MENTION_WINDOW)
    hi = stop.start() if stop is not None else min(len(text), end + _MENTION_WINDOW)
    you = _SECOND_PERSON.search(text, sentence, start)
    return (you is not None and _ADDRESSEE_BEFORE.search(text, max(0, you.start() - 40), you.start()) is None
            and _FIRST_PERSON.search(text, sentence, hi) is None)


# The words as the subject of a modal after them (since batch 73, an item left by batches 70-72: "An NCCL timeout may
# cause this.", "NCCL timeouts can happen when a rank lags", "an NCCL timeout would kill the job"): a possibility or a
# prediction, no run's; the modals are _HEDGE_WORDS' (may, might, could, can, will, would, and their negations), read
# right after the words (a plural, "errors" or "issues" between), so a report's later clause ("we hit an NCCL timeout
# and it may be the network") keeps its past verb before the words
_NCCL_TOLD_MODAL_AFTER = re.compile(r"(?i)s?(?:\s+(?:errors?|issues?|problems?))?\s+(?:may|might|could|can|would|will"
                                    r"|should)(?:n[’']t)?\b")


def _nccl_told_refused(text: str, m: re.Match[str]) -> bool:
    """The told NCCL rules' one guard (a timeout, DeepEP's, the watchdog's act): a hedge, a setting verb or a fix
    before the words (_NCCL_TIMEOUT_HEDGE), a modal after them (_NCCL_TOLD_MODAL_AFTER), a value after them
    (_NCCL_TIMEOUT_VALUE), the Chinese limits, a log level's line, a scenario told to the reader (_told_to_you)."""
    if (_told_hedged(text, m.start(), _NCCL_TIMEOUT_HEDGE) or _NCCL_TIMEOUT_VALUE.match(text, m.end())
            or _NCCL_TOLD_MODAL_AFTER.match(text, m.end()) or _told_to_you(text, m.start(), m.end())):
        return True
    if _CJK_CHAR.search(text) and (_NCCL_TIMEOUT_SETTING_ZH.match(text, m.end()) or _zh_hedged(text, m.start())
                                   or _zh_listed(text, m.start(), m.end()) or _zh_general(text, m.start())):
        return True     # an item of a guide's Chinese list of kinds, as its other items are (_zh_listed; review R49)
    return _LOG_LEVEL_TAG.match(text) is not None


# The watchdog's act in a changelog's entry ("- Added: ProcessGroupNCCL watchdog reports the collective mismatch with
# sequence numbers") or a design's explanation ("In this design, the NCCL watchdog killed the job only after 10
# minutes"), and a present-tense act on no collective by torch's name nor a mismatch ("The NCCL watchdog catches a
# timeout and aborts the process, so ...", "With TORCH_NCCL_DUMP_ON_TIMEOUT=1, the NCCL watchdog reports a desync"):
# what the watchdog does, not what it did in a run; since the review of batches 48/49
_WATCHDOG_EXPLAINED = re.compile(r"^\s*(?:[-*•]\s*)?(?i:added|adds?|new|changed|improved|features?)\s*:\s"
                                 r"|(?i:\b(?:in|with) (?:this|the new|the) design\b|\bby design\b)")
_WATCHDOG_ACTED_ON = re.compile(r"(?:" + _COLLECTIVE_WORD + r"|mismatch)(?![\w-])")


_NCCL_TIMEOUT = re.compile(_WATCHDOG_CAUGHT + r"|watchdog got stuck for" + r"|" + _DEEPEP_TIMEOUT_RE +
                           r"|milliseconds before timing out|Timeout at NCCL work: \d+"
                           r"|Received a dump signal due to a collective timeout"
                           r"|The wait execution of the Notify register times out|Getting socket times out"
                           r"|" + _HCCL_TASK_TIMEOUT_RE + r"|" + _NCCL_WATCHDOG_EXIT)
# NCCL's transport failing under a live communicator, logged at WARN level right before the call
# returns ncclRemoteError/ncclSystemError/ncclInternalError (the socket, IB and proxy code print
# nothing else when NCCL_DEBUG=WARN, and torch may never get to raise): misc/socket.cc "Net :
# Connection closed by remote peer H<port>", "socketProgress: Connection closed by remote peer ...",
# "Net : Call to recv from H failed : E" / "socketProgressOpt: Call to recv from ...",
# "socketStartConnect: Connect to H failed : E"; transport/net_ib.cc in every release's wording
# "NET/IB : Got completion with error N, opcode ...", "NET/IB : Got completion from peer H with
# error N, ...", "... with status=N opcode=...", "NET/IB: ... with status=NAME(N) ...", the GIN
# plugin's "NET/IB/GIN: ..." (retold without its "NET/IB :" head: _NCCL_IB_RETOLD); proxy.cc "[Proxy Service N]
# Failed to execute operation Connect from rank R, retcode C" and "Socket recv failed while polling for opId=0x...";
# and the error-return
# trace reaching the proxy's progress thread ("proxy.cc:878 -> 6 [Progress Thread]", its INFO
# printed only when progressOps failed). Not NCCL's INFO "[Service thread] Connection closed by
# localRank N": every normal teardown prints it.
# NCCL's IB verbs wrappers (misc/ibvwrap.cc IBV_INT_CHECK_RET_ERRNO & co.) when a verbs call failed and NCCL
# gives up on it, at WARN level: "Call to ibv_create_cq failed with error Cannot allocate memory" (locked memory:
# ulimit -l), 2.2x "Call to ibv_modify_qp failed with 110 Connection timed out, on dev mlx5_0:1, curr state INIT,
# next state RTR, local GID index 3, ..." (a RoCE GID or route that does not work). The optional probes log the
# same words at INFO and recover: only the WARN line counts.
_NCCL_TRANSPORT = re.compile(
    r"(?<=NCCL WARN )Call to ibv_\w+ failed"
    r"|NET/IB\w*(?:/GIN)? ?: ?Got completion (?:from peer \S+ )?with (?:error|status)"
    r"|(?:Net|socketProgress(?:Opt)?) ?: (?:Connection closed by remote peer|Call to recv from \S+ failed)"
    r"|socketStartConnect: Connect to \S+ failed"
    r"|\[Proxy Service \d+\] Failed to execute operation \w+ from rank \d+"
    r"|Socket recv failed while polling for opId"
    r"|NCCL INFO [\w/.-]+\.cc:\d+ -> [1-9]\d* \[Progress Thread\]")
# The same IB work-completion error retold without NCCL's "NET/IB :" head, where the line still has the completion's
# "vendor err N" / "vendor_err=N" that every transport/net_ib.cc and GIN format prints ("Got completion with error 12,
# opcode 1, len 32478, vendor err 129" in a support article): a retelling, inside prose as often ("The log shows
# '...' which means a link flap; the job continued after retry."), so it decides as the timeouts told in words do
# (last, and not when an exception follows it: classify), never with the precedence of NCCL's own WARN line.
_NCCL_IB_RETOLD = re.compile(r"Got completion (?:from peer \S+ )?with (?:error|status)[^\n]{0,120}?vendor[ _]err")
# The same WARN line retyped by hand, NCCL's log level kept and the words between dropped or run together (an issue
# titled "... nccl error：NCCL WARN NET/IB Got completion error 12", batch 68): debug.cc prints every warning as
# "[dev] file:line NCCL WARN <message>" (NVIDIA/nccl 5067397 src/debug.cc l.345-348), and the IB transport's message
# is "NET/IB : Got completion with error N, ..." (v2.4.8-1 src/transport/net_ib.cc l.789), "NET/IB : Got completion
# from peer P with error N, ..." / "... with status=N ..." (v2.18.1-1 net_ib.cc l.1294), "NET/IB: Got completion from
# peer P with status=NAME(N) ..." (5067397 src/transport/net_ib/p2p.cc l.688), "NET/IB/GIN: ..." (gin.cc l.749):
# "NET/IB" and "Got completion" in that order after "NCCL WARN ", then its error or status and the number, with at
# most a colon, a peer and "with" between. Only after the WARN level: the resiliency path logs "NET/IB: f: Got
# completion with error (...)" at INFO and recovers (p2p_resiliency.cc l.1044-1045). A retelling, so it decides as
# _NCCL_IB_RETOLD does (told, last), and not in a hedge's sentence or after a fix (nccl_ib_warn_retyped).
_NCCL_IB_WARN_RETYPED = re.compile(r"NCCL WARN NET/IB(?:/GIN)? ?:? ?(?:Got completion )(?:from peer \S+ )?(?:with )?"
                                   r"(?:error|status) ?[=:]? ?\d+\b")


def nccl_ib_warn_retyped(text: str) -> bool:
    """NCCL's IB completion WARN line retyped (_NCCL_IB_WARN_RETYPED) where a person tells it happened: not in a
    hedge's sentence, nor after a fix's word on the line."""
    m = _NCCL_IB_WARN_RETYPED.search(text) if "NET/IB" in text else None
    return m is not None and not _told_hedged(text, m.start(), _HEDGE, _TOLD_FIX_WORD, _MENTION_WINDOW)
# NVSHMEM (DeepEP's transport, also torch's symmetric memory) failing to set up or run its transport, in its
# error macros' words (src/include/internal/.../nvshmemi_util.h & co.: NVSHMEMI_NZ_ERROR_JMP / NZ_ERROR_JMP
# "%s:%d: non-zero status: %d ", NVSHMEMI_NULL_ERROR_JMP "%s:%d: NULL value ", NVSHMEMI_ERROR_PRINT
# "%s:%s:%d: " + "init failed for transport: IBGDA"), where __FILE__ is NVSHMEM's own source
# (".../nvshmem/src/modules/transport/ibgda/ibgda.cpp:2234: NULL value Unable to create ah.", ".../main_nvshmem/
# src/host/init/init.cu:1047: non-zero status: 7 nvshmem setup connections failed"). The library NCCL is for
# collectives, NVSHMEM is for DeepEP's all-to-all: the same class. The same macros' words from any other
# program's file do not count.
# NVSHMEMI_ERROR_PRINT's "FILE:FUNCTION:LINE: " prefix is printed by no other macro: it decides whatever follows
# (a paste cut inside "init fa...").
# NCCL's shared-memory transport failing for a reason other than room, in its fail path's words
# (src/os/linux.cc ncclOsShmOpen, before it misc/shmutils.cc ncclShmOpen; it returns ncclSystemError, which torch
# repeats as the communicator's "Last error:"): WARN("Error while %s shared memory segment %s (size %ld), error: %s
# (%d)", create ? "creating" : "attaching to", ...) attaching to a peer's segment it cannot open (ENOENT when the
# ranks of one node do not share one /dev/shm, separate containers or IPC namespaces; NCCL 2.26+'s SHM transport
# under a driver that confines cuMem host allocations, nccl#2190), creating one with another errno than ENOSPC (a
# permission), and WARN("Error: Could not map %s size %zu, error: %s (%d)"). Creating one without room (ENOSPC, or
# the pre-2.19 line without the errno) is shared memory full: _NCCL_SHM, a bus_error.
_NCCL_SHM_FAILURE_RE = (r"Error while attaching to shared memory segment \S+ \(size \d+\)"
                        r"|Error while creating shared memory segment \S+ \(size \d+\), error: (?!No space left)"
                        r"|Error: Could not map \S*/dev/shm/\S+ size \d+")
_NCCL_SHM_FAILURE = re.compile(_NCCL_SHM_FAILURE_RE)
_NCCL_SHM_FAILURE_HINT = ("NCCL's shared-memory transport could not open or map a segment in /dev/shm (not a full "
                          "one): the ranks of one node must share one /dev/shm (one container or IPC namespace, "
                          "docker --ipc=host), /dev/shm must be writable, and stale /dev/shm/nccl-* files of dead "
                          "runs removed; NCCL_SHM_DISABLE=1 moves NCCL off shared memory (NCCL 2.26+ needs "
                          "nvidia-uvm uvm_disable_hmm=1 with iommu=pt, nccl#2190)")
_NVSHMEM_RE = (r"nvshmem\S*\.(?:cpp|cu|cuh|c|h):(?:[A-Za-z_]\w*:\d+: |\d+: (?:NULL value\b|non-zero status: -?\d+))")
_NVSHMEM = re.compile(_NVSHMEM_RE)
# NCCL (and RCCL) failing a CUDA call of its own, in its check macros' words: CUDACHECK (src/include/checks.h,
# the runtime: WARN("Cuda failure '%s'", cudaGetErrorString(err))) and CUCHECK (src/include/cudawrap.h, the
# driver API: WARN("Cuda failure %d '%s'", err, errStr)), after which the NCCL call returns ncclUnhandledCudaError
# ("transport/nvls.cc:254 NCCL WARN Cuda failure 401 'the operation cannot be performed in the present state'").
# Only at WARN level: CUDACHECKIGNORE logs the same words at INFO and goes on. A CUDA error of a class of its own
# keeps its class by precedence (an illegal address, 'out of memory', 217 peer access). RCCL (ROCm's NCCL, whose
# WARN lines keep NCCL's "NCCL WARN" head) says HIP where NCCL says Cuda: src/include/checks.h CUDACHECK
# WARN("HIP failure '%s'", hipGetErrorString(err)) (older releases kept "Cuda failure '%s'"), rocmwrap.h CUCHECK
# WARN("HIP failure '%s' at %s:%d", ...).
_NCCL_CUDA_FAILURE_RE = r"(?<=NCCL WARN )(?:Cuda|HIP) failure (?:\d+ )?'"
_NCCL_CUDA_FAILURE = re.compile(_NCCL_CUDA_FAILURE_RE + r"[^']*'?")
# NVLink SHARP (NVLS: NCCL's multicast collectives over the NVSwitches, transport/nvls.cc) failing to set up: the
# Fabric Manager, the switches' multicast slots or the driver, never this job's code. NCCL 2.29+ advises
# "Disable NVLS (NCCL_NVLS_ENABLE=0) if you wish to avoid this error in the future"; 2.27-2.28 fail only when NVLS
# was forced on ("Do not force-enable NVLS (NCCL_NVLS_ENABLE=1)") and otherwise go on without it. =0 works in all.
_NVLS = re.compile(r"\bnvls\.cc:\d+|\bNVLS\b|NVLink SHARP")
# transport/nvls.cc's own report when cuMulticastBindMem fails (NCCL 2.27+; it returns ncclUnhandledCudaError, and
# torch repeats it as the communicator's "Last error:"): "Failed to bind NVLink SHARP (NVLS) Multicast memory of
# size N : CUDA error 2 'out of memory'." - the switches' multicast resources, not the GPU's memory (NCCL 2.29's
# 128 multicast slots used up by many sub-communicators, nccl#2077), so never an OOM.
# Only as a WARN (or torch's repeat of it): NCCL 2.27.3-2.28.x (nvls.cc:288) log the same words at INFO when NVLS
# was not forced on ("NCCL INFO Failed to bind ... Proceeding without NVLS support.") and go on without it.
_NVLS_BIND_RE = r"(?<!NCCL INFO )Failed to bind NVLink SHARP \(NVLS\) Multicast memory"
_NVLS_BIND = re.compile(_NVLS_BIND_RE + r"[^:]*: (CUDA error \d+ '[^']*'?)")
_NVLS_HINT = ("NCCL's NVLink SHARP (NVLS) setup failed (the Fabric Manager, the NVSwitches' multicast resources or "
              "the driver): set NCCL_NVLS_ENABLE=0 for the run (NCCL then goes on without NVLS), and check "
              "`nvidia-smi -q` Fabric state and the Fabric Manager; a restart alone usually fails the same way")
_NCCL = re.compile(
    _WATCHDOG_CAUGHT + r"|watchdog got stuck for"
    r"|milliseconds before timing out"
    r"|Process group watchdog thread terminated with exception"
    r"|NCCL watchdog thread terminated with exception"   # torch <= 2.1
    r"|Some NCCL operations have failed or timed out"
    r"|we are taking the entire process down"
    r"|NCCL error"
    r"|nccl(?:System|Remote|UnhandledCuda|Internal|InvalidUsage|InvalidArgument)Error"
    r"|NCCL communicator was aborted"
    r"|DistBackendError"
    # torch <= 1.x (torch/lib/c10d/NCCLUtils.hpp): "NCCL Error 2: unhandled system error"; an exception line
    # that names it retyped without the reason ("RuntimeError: NCCL Error 2 & ibv_modify_qp timeout ...")
    r"|NCCL Error \d+:|(?:Error|Exception): NCCL Error \d+\b"
    # XLA (JAX, TF): "NCCL operation ncclAllReduce(...) failed: unhandled cuda error" (xla/service/gpu)
    r"|NCCL operation \w+\(.*?\) failed"
    # nccl-tests / rccl-tests (src/common.h NCCLCHECK: "%s: Test NCCL failure %s:%d '%s / %s'", before 2.13
    # "Test NCCL failure %s:%d '%s'" with ncclGetErrorString): a collective failed on this node
    r"|Test NCCL failure \S+:\d+"
    # torch 2.5+ WorkNCCL::printTraceback (ProcessGroupNCCL.cpp), logged by the watchdog for the collective that
    # failed or timed out: "Stack trace of the failed collective: \n<frames>", or without a flight-recorder entry
    # "Stack trace of the failed collective not found, potentially because FlightRecorder is disabled. ..."
    r"|Stack trace of the failed collective(?: not found\b|:)"
    r"|Watchdog caught collective operation timeout"
    # the watchdog's own summary lines (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp): 2.2-2.3
    # "[PG 1 Rank 11] Timeout at NCCL work: 15734, last enqueued NCCL work: ...", 2.4+ "Exception
    # (either an error or timeout) detected by watchdog at work: 808, ..."
    r"|Timeout at NCCL work: \d+"
    r"|Exception \(either an error or timeout\) detected by watchdog"
    # the heartbeat monitor's flight-recorder dump, set off by a collective timeout on some rank
    # (ProcessGroupNCCL.cpp: "Received a dump signal due to a collective timeout from this local rank",
    # "Observed flight recorder dump signal from another rank via TCPStore.")
    r"|Received a dump signal due to a collective timeout|Observed flight recorder dump signal from another rank"
    # Ascend's HCCL, NCCL's counterpart under torch_npu (CANN error codes): EI0002 "The wait execution of
    # the Notify register times out" (a collective timed out), EI0006 "Communication_Error_Get_Socket"
    r"|The wait execution of the Notify register times out|Communication_Error_\w+\(EI\d{4}\)"
    # torch_npu's ProcessGroupHCCL: its HCCL_CHECK_ERROR macro ("[ERROR] HCCL error in: FILE:LINE" +
    # DIST_ERROR; older "HCCL error in: FILE:LINE, CODE"), its op runner failing an HCCL collective
    # ("OPS function error: HcclAllreduce, error code is 6"), CANN's EI0006 text ("Getting socket times
    # out. Reason: Remote Rank did not send the data in time.") and its device error report of a
    # collective stuck past HCCL_EXEC_TIMEOUT ("hccl fftsplus task timeout occurred during task execution")
    r"|HCCL error in: \S+|OPS function error: Hccl\w+|Getting socket times out|" + _HCCL_TASK_TIMEOUT_RE +
    # NCCL's own error-return trace: its NCCLCHECK macro (src/include/checks.h) logs "file.cc:LINE -> CODE"
    # at INFO level when a call returned an error; reaching the "[Async thread]" it means the communicator's
    # init failed (a trace that stops earlier may be a probe NCCL recovered from: supporting only)
    r"|NCCL INFO [\w/.-]+\.cc:\d+ -> [1-9]\d* \[Async thread\]"
    # torch failing to set up a communicator (ProcessGroupNCCL::broadcastUniqueNCCLID): "[4] is setting up
    # NCCL communicator and retrieving ncclUniqueId from [0] via c10d key-value store ... Socket Timeout"
    r"|is setting up NCCL communicator and retrieving ncclUniqueId"
    # the watchdog's exits (above), and c10::Error's location line for what the watchdog thread rethrew
    # or found (ncclCommWatchdog, watchdogHandler, checkForNCCLErrorsInternal in ProcessGroupNCCL.cpp); from
    # torch 2.8 the watchdog is a class and the rethrow is Watchdog::run's (ProcessGroupNCCL.cpp: its catch
    # rethrows C10_BUILD_ERROR(DistBackendError, "...Process group watchdog thread terminated with exception:
    # ..."), so the location reads "Exception raised from run at .../ProcessGroupNCCL.cpp:2063"; since batch 47),
    # also where a paste kept only those frames and not the exit line
    r"|" + _NCCL_WATCHDOG_EXIT
    + r"|Exception raised from (?:ncclCommWatchdog|watchdogHandler|checkForNCCLErrorsInternal|run) at \S*ProcessGroupNCCL\.cpp"
    r"|" + _NCCL_TRANSPORT.pattern + r"|" + _DEEPEP_TIMEOUT_RE + r"|" + _NVSHMEM_RE + r"|" + _NCCL_CUDA_FAILURE_RE
    + r"|" + _NVLS_BIND_RE + r"|" + _NCCL_SHM_FAILURE_RE)
# NCCL's and torch's names for an NCCL failure as a person names a kind of it (since batch 46): "These errors typically
# manifest as `NCCL error: unhandled system error` or ..." (a write-up on Lightning's timeouts), an explainer's
# "Process crashes with ncclInternalError, ncclSystemError, etc.", a guide's "• Scenario B: ... (NCCL error)". The
# names (NCCL's ncclResult_t names from src/nccl.h.in, torch's "NCCL error" of NCCLUtils.hpp's C10D_NCCL_CHECK and
# its DistBackendError) decide nothing where every _NCCL match on the line is a name that is only mentioned: in a
# hedge's or an explanation's sentence or after a fix (_told_hedged), two or more of NCCL's result names listed
# ("ncclInternalError, ncclSystemError"; NCCL prints one result per line), in an explainer's labelled item, or on a
# program's log-level line (a start-up "[INFO] ... a DistBackendError may end the attempt"). A name
# where a raised exception stands (after an exception's name and colon, at a line's start: "RuntimeError: NCCL error
# in: ...", "torch.distributed.DistBackendError: ...", "ncclSystemError: System call ...") is torch's own line.
_NCCL_NAME = re.compile(r"NCCL error|nccl(?:System|Remote|UnhandledCuda|Internal|InvalidUsage|InvalidArgument)Error"
                        r"|DistBackendError")
_NCCL_RESULT_NAME = re.compile(r"\bnccl[A-Z]\w*Error\b")
# what torch's ProcessGroupNCCL puts after the name when it raises (C10D_NCCL_CHECK: "NCCL error in:
# ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO ...),
# NCCL version 2.19.3", ncclGetErrorString's results): an error that happened, also on a logger's WARNING line, after
# "will retry:" or in a report's "If I use 16 GPUs I get NCCL error: unhandled system error" (since the review of
# batch 46)
_NCCL_DETAIL_AFTER = re.compile(r"\s+in:\s*\S+:\d+|:\s*(?:unhandled (?:system|cuda) error|remote process exited"
                                r"|internal check failed|invalid usage|invalid argument)|.{0,400}?, NCCL version \d")
_NCCL_NAME_AT_HEAD = re.compile(r"\s*(?:[-*+>•]\s+)?[*_`]*(?:[\w.]+\.)?$")
# The name as one of two kinds a writer cannot tell apart, another library's name and a slash or "or" before it (an
# issue titled "MPI/NCCL error when using TP comm overlap" over Open MPI's MPI_Init_thread abort, batch 68; "Gloo or
# NCCL error"): torch raises the name alone, after an exception's name or at a line's start (NCCLUtils.hpp's
# C10D_NCCL_CHECK, "NCCL error in: ..."), never behind another name and a slash, so the pair names a kind of failure
# and no NCCL failure; the lines under it decide
_NCCL_NAME_ALTERNATIVE = re.compile(r"(?<![\w/.-])[A-Za-z][\w+-]{1,15}(?:\s*/\s*|\s+or\s+)$")


def _nccl_name_mentioned(text: str, m: re.Match[str]) -> bool:
    """An NCCL failure's name (_NCCL_NAME) a line only mentions (see above)."""
    start = m.start()
    lo = max(0, start - _MENTION_WINDOW)
    if _NCCL_NAME_AT_HEAD.match(text, 0, start) or _OOM_RAISED_BEFORE.search(text, lo, start):
        return False
    if text[start - 1:start] not in ("`", "'", '"') and _NCCL_DETAIL_AFTER.match(text, m.end()):
        return False    # torch's own message with its detail, wherever a logger or a launcher put it
    if m.group() == "NCCL error" and _NCCL_NAME_ALTERNATIVE.search(text, max(0, start - 24), start):
        return True
    if (_labelled_item(text, start) or len(set(_NCCL_RESULT_NAME.findall(text))) >= 2
            or _LOG_LEVEL_TAG.match(text) is not None):
        return True
    # the name bare in CJK prose: its limits too (_cjk_mentioned; since batch 54, a Japanese explainer's "torch.
    # distributed.DistBackendError についてですね")
    return _told_hedged(text, start, _HEDGE, _TOLD_FIX_WORD, _MENTION_WINDOW) or _cjk_mentioned(text, start, m.end())


def _nccl_named_only(text: str) -> bool:
    """Every _NCCL match on the line is a failure's name only mentioned (_nccl_name_mentioned)."""
    found = False
    for m in _NCCL.finditer(text):
        if not _NCCL_NAME.fullmatch(m.group()) or not _nccl_name_mentioned(text, m):
            return False
        found = True
    return found


# The watchdog's exit line relays whatever exception its loop met (ProcessGroupNCCL::Watchdog::run, torch 2.8+,
# ncclCommWatchdog before: c10::str(logPrefix(), "Process group watchdog thread terminated with exception: ",
# e.what()); torch <= 2.1 "NCCL watchdog thread terminated with exception: "): NCCL's timeout or error, or the
# CUDA runtime's error from the event query of a work it polls (CUDAEvent::query -> C10_CUDA_CHECK: "CUDA
# error: <cudaGetErrorString>", on ROCm "HIP error: ...", e.g. hipErrorCapturedEvent while another thread
# captures a graph, pytorch/pytorch#177309). Then the runtime's error is the cause, on the same line or the
# next (a paste that broke it there): the exit line and the echoes any exception of a work brings
# (_WATCHDOG_ECHO) are not NCCL's evidence; an illegal address stays a cuda_fault by its own words, and a runtime
# error of no class of its own is unknown.
_WATCHDOG_EXIT_LINE = re.compile(r"(?:Process group|NCCL) watchdog thread terminated with exception:\s*(?P<rest>.*)$")
_WATCHDOG_RUNTIME_ERROR = re.compile(r"(?:\[Rank \d+\]\s*)?(?:CUDA|HIP) error: (?!.*\bNCCL\b)")
# what torch prints for any exception a work or the watchdog met (WorkNCCL::handleException's two lines, the
# watchdog's summary, the rethrow's location and C++ frames, the DistBackendError it terminates with)
_WATCHDOG_ECHO = re.compile(r"watchdog thread terminated with exception"
                            r"|Some NCCL operations have failed or timed out"
                            r"|we are taking the entire process down"
                            r"|Exception \(either an error or timeout\) detected by watchdog"
                            r"|Exception raised from (?:ncclCommWatchdog|watchdogHandler|runLoop|run) at \S*ProcessGroupNCCL\.cpp"
                            r"|c10::DistBackendError")
# c10::Error's location line for the CUDA runtime's own error (c10/cuda/CUDAException.cpp, c10_cuda_check_implementation:
# the TORCH_CHECK that C10_CUDA_CHECK expands to raises "CUDA error: <cudaGetErrorString>" from there): in a tail cut
# above the error's message, with the watchdog's rethrow location after it, it is the error the watchdog relayed, as
# its exit line's "CUDA error: ..." is (since the review of batch 47)
_CUDA_CHECK_WHERE = re.compile(r"Exception raised from c10_cuda_check_implementation at \S*CUDAException\.cpp")
# A watchdog or NCCL error line a user shortened with "......" (the normaliser makes it " ... "): what
# is left still names NCCL and says it failed; NCCL's INFO/WARN debug lines never decide. Tried only on
# lines holding an elision. Reviewed (R68): read from each elision once, not from each "NCCL" (one regex,
# "NCCL[^\n]{0,200}? \.\.\. [^\n]{0,200}?Error", tried some 200x200 steps at each NCCL word of a line of
# repeated "NCCL ... ", ~20 us a character): an NCCL word (not a debug line's, _NCCL_ELIDED_LEVEL) ending at
# most _ELIDED_REACH characters before the elision and a failure word starting at most that far after it, on
# its line; the same verdicts as the regex, each word found once a line.
_ELIDED = " ... "
_ELIDED_REACH = 200
_NCCL_ELIDED_WORD = re.compile(r"NCCL|nccl")
_NCCL_ELIDED_LEVEL = re.compile(r"\S{0,80} (?:INFO|WARN)\b")
_NCCL_ELIDED_FAILED = re.compile(r"[Ee]rror|[Tt]imeout|timed out|[Ff]ailed|aborted")


def nccl_elided(text: str) -> bool:
    """A line that names NCCL and says it failed around an elision " ... " (above): the elisions, NCCL words and
    failure words each walked once, in order, stopping at the first elision with both within reach."""
    if _ELIDED not in text:
        return False
    for line in text.split("\n"):
        if _ELIDED not in line or _NCCL_ELIDED_FAILED.search(line) is None:
            continue
        words, fails = _NCCL_ELIDED_WORD.finditer(line), _NCCL_ELIDED_FAILED.finditer(line)
        word, fail = next(words, None), next(fails, None)
        last_word = -_ELIDED_REACH - 1      # where the last NCCL word before the elision ended
        e = line.find(_ELIDED)
        while e >= 0:
            while word is not None and word.end() <= e:
                if _NCCL_ELIDED_LEVEL.match(line, word.end(), word.end() + 87) is None:
                    last_word = word.end()
                word = next(words, None)
            if last_word >= e - _ELIDED_REACH:
                while fail is not None and fail.start() < e + len(_ELIDED):
                    fail = next(fails, None)
                if fail is None:
                    break
                if fail.start() <= e + len(_ELIDED) + _ELIDED_REACH:
                    return True
                # no failure word within reach of this elision: on to the first elision that reaches the next one,
                # the NCCL words read again from the reach before it (an NCCL word never overlaps another)
                e = line.find(_ELIDED, max(e + 1, fail.start() - len(_ELIDED) - _ELIDED_REACH))
                words = _NCCL_ELIDED_WORD.finditer(line, max(0, e - _ELIDED_REACH - len("NCCL")))
                word, last_word = next(words, None), -_ELIDED_REACH - 1
                continue
            e = line.find(_ELIDED, e + 1)
    return False


_NCCL_SUPPORT = re.compile(r"NCCL WARN")
_NCCL_OP = re.compile(r"OpType=(\w+)")
_NCCL_RAN = re.compile(r"ran for (\d+) milliseconds")
# torch's C10D_NCCL_CHECK (torch/csrc/distributed/c10d/NCCLUtils.hpp): "NCCL error in: " __FILE__ ":" __LINE__ ", " and
# ncclGetErrorWithVersion (NCCLUtils.cpp: ncclGetErrorString's words, ", NCCL version " and getNcclVersion(): "M.m.p",
# "." NCCL_SUFFIX when the build has one, or "Unknown NCCL version"), then "\n" and getNcclErrorDetailStr's
# "ncclSystemError: ..." line. The version is read as getNcclVersion() writes it, so what a paste glued after it (the
# detail line flattened onto the same line, a quote's closing mark and a sentence's period: '..., NCCL version
# 21.0.3".') stays out of the summary (since batch 62; the whole rest of the line was the error's words, or the
# version kept the quote and period)
_NCCL_API = re.compile(r"NCCL error in: \S+?, (.+?)(?:, NCCL version (?:Unknown NCCL version"
                       r"|(\d+(?:\.\d+)*(?:[.+][A-Za-z]\w*(?:\.\d+)*)?))|$)")
_PG_RANK = re.compile(r"\bRank (\d+)\]")

_PORT = re.compile(r"EADDRINUSE|[Aa]ddress already in use|errno: 98\b")


def _port_stated(text: str) -> bool:
    """The line holds the socket's EADDRINUSE (_PORT) not only named in CJK prose (_cjk_mentioned: a Japanese explainer's
    "ポート衝突(Address already in use) ... 時によく起こります", it often happens when ...; since batch 54; a Chinese
    explainer's prediction "端口被占用会导致 Address already in use": _zh_predicted, since batch 56). Any other line
    decides as before: the errno's words are the socket's (c10d's TCPStore, uvicorn, Ray's GCS) wherever they
    stand."""
    m = _PORT.search(text)
    return m is not None and not _cjk_mentioned(text, m.start(), m.end())
_PORT_NUMBER = re.compile(r"\bport: (\d+)|:(\d+) \(errno: 98|\bport (\d+)")

_DIV = re.compile(
    r"found (?:NaN|Inf) in local (?:grad norm|forward loss)"
    r"|Unexpected result tensor\(-?(?:nan|inf)"
    r"|Rank \d+, node \S+, device \S+, iteration \d+: Unexpected result"
    r"|returned nan values in its \d+\w* output"
    # detectron2 (engine/train_loop.py), fairseq (optim/dynamic_loss_scaler.py, trainer.py)
    r"|Loss became infinite or NaN at iteration=\d+"
    r"|Minimum loss scale reached \([\d.e-]+\)"
    # DeepSpeed's dynamic loss scaler (runtime/fp16/loss_scaler.py DynamicLossScaler.update_scale, also
    # fused_optimizer.py and unfused_optimizer.py, when raise_error_at_min_scale): raise Exception("Current
    # loss scale already at minimum - cannot decrease scale anymore. Exiting run.") after its "[deepspeed]
    # OVERFLOW! Rank 0 Skipping step. Attempted loss scale: N, reducing to M" lines reached min_loss_scale
    r"|[Cc]urrent loss scale already at minimum - cannot decrease scale anymore"
    r"|FloatingPointError: gradients are Nan/Inf"
    # trainers that stop themselves on a non-finite loss: MAE/DeiT/DINO-style engines
    # (facebookresearch/mae engine_pretrain.py: print("Loss is {}, stopping training".format(loss_value));
    # sys.exit(1)), Keras' TerminateOnNaN ("Batch N: Invalid loss, terminating training"), and the
    # family's shorter home-grown words raised as an exception ("ValueError:Network outputs is NAN! Stop
    # Training"; never a help text that merely mentions stopping on NaN)
    r"|[Ll]oss is (?:nan|NaN|inf|-inf|Inf), stopping training"
    r"|Invalid loss, terminating training"
    r"|(?:Error|Exception):[^\n]{0,80}?\b(?:nan|NaN|NAN)\b[^\n]{0,40}?\b[Ss]top(?:ping)? [Tt]raining"
    # ms-swift 4.6.0's ring attention (sequence parallel, swift/sequence_parallel/zigzag_ring_attn.py
    # l.528-588, not in main's 4.6.0.dev0): RuntimeError(f'NaN detected in block_out/block_lse at step {step}.'),
    # also block_dout and dq/dk/dv, in the backward pass; ``step`` is the ring's hop, not the training step
    r"|NaN detected in (?:block_out/block_lse|block_dout|dq/dk/dv) at step \d+")
# Megatron-core's rerun state machine (megatron/core/rerun_state_machine.py, RerunStateMachine.validate_result): with
# reruns disabled it raises RuntimeError(f"Rank {rank}, node {node}, device {device}, iteration {it}: Unexpected result
# {result} (message='{message}')") (_DIV reads that head); with them on it logs f"Unexpected result {result} on rank
# {r} at iteration #{it} invocation #{n} (message='{message}')". The result is the validated loss or grad norm, a
# float or a 0-dim tensor, so a non-finite one prints as Python's "nan", "inf" or "-inf" or as "tensor(nan, ...)". A
# paste or an issue title that kept the message without its "Rank ..., iteration N:" head ("Unexpected result nan
# (message='found NaN in local grad norm ...')", ROLL's "Unexpected result nan？") is the same failure (since batch
# 60); other programs print "Unexpected result {x}" of their own values, never a bare nan or inf on its own, and a
# person naming it in a hedge, a fix or an explanation ("If you see Unexpected result nan, lower the LR") tells none.
_DIV_RESULT_RETOLD = re.compile(r"\bUnexpected result (?:tensor\()?-?(?:nan|inf)\b")


def _div_result_retold(text: str) -> bool:
    """Megatron's non-finite result kept without the state machine's head (_DIV_RESULT_RETOLD), not only named."""
    m = _DIV_RESULT_RETOLD.search(text)
    return (m is not None and not _told_hedged(text, m.start(), _HEDGE)
            and _TOLD_EXPLAINED_AFTER.match(text, m.end()) is None
            and not (_has_cjk(text) and _cjk_told_mentioned(text, m.start(), m.end())))


_DIV_SELF_STOP = re.compile(r"(?i:stopping training|stop training|terminating training)")
_DIV_SUPPORT = re.compile(r"Unexpected result|^(?:First|Second) rerun:|Spiky loss"
                          r"|[Pp]ossible transient error")
_DIV_ITERATION = re.compile(r"iteration[ =]#?(\d+)")

_RECOMPUTE = re.compile(
    r"different number of tensors was saved"
    r"|Recomputed values for the following tensors have different metadata"
    r"|trying to save more tensors during recomputation"
    r"|CheckpointError:"
    # torch/utils/checkpoint.py _CheckpointFrame.check_recomputed_tensors_match lists what differed under
    # its head line, and a paste often keeps only that list (the head scrolled away): per tensor
    # "tensor at position N:\nsaved metadata: {X}\nrecomputed metadata: {Y}", X and Y from
    # _default_meta_extractor ({'shape': torch.Size([...]), 'dtype': ..., 'device': ...}, the only extractor
    # besides the "none" check's no-op), and for the other mismatch "Number of tensors saved during forward:
    # N" / "... during recomputation: M". No other program prints those lines.
    r"|^(?:saved|recomputed) metadata: \{'shape': "
    r"|^Number of tensors saved during (?:forward|recomputation): \d+", re.IGNORECASE)
_RECOMPUTE_COUNT = re.compile(r"Number of tensors saved during (forward|recomputation): (\d+)")

# cuBLAS's own words for a kernel that failed on the GPU, where a wrapper prints the status text instead of
# its name: cublasGetStatusString (cuBLAS 11.4 and later) words CUBLAS_STATUS_EXECUTION_FAILED "the function
# failed to launch on the GPU", as Transformer Engine's NVTE_CHECK_CUBLAS prints it (common/util/logging.h:
# NVTE_ERROR("cuBLAS Error: ", cublasGetStatusString(status)) -> ".../gemm/cublaslt_gemm.cu:750 in function
# cublas_gemm: cuBLAS Error: the function failed to launch on the GPU") and FlashInfer's FLASHINFER_CUBLAS_CHECK
# ("CUBLAS Error: " + cublasGetStatusString(e)); torch <= 1.x's THCBlas printed the documented texts of
# EXECUTION_FAILED and MAPPING_ERROR ("cublas runtime error : the GPU program failed to execute at
# .../THCBlas.cu:411", "... : an access to GPU memory space failed at ..."). Read only after a cuBLAS name and
# "error"/"failure", so cuSPARSE's same words and a sentence that mentions them decide nothing. cuBLAS's other
# texts name no fault and stay unknown, like their status names: "an unsupported value or parameter was passed
# to the function" (INVALID_VALUE, an FP8 GEMM's shape), "the requested functionality is not supported".
_CUBLAS_FAULT_TEXT = (r"\b(?i:cublas(?:lt)?)(?: runtime)? (?i:error|failure) ?: ?"
                      r"(?:the function failed to launch on the GPU|the GPU program failed to execute"
                      r"|an access to GPU memory space failed)")
_FAULT = re.compile(
    r"an illegal memory access was encountered|unspecified launch failure"
    # cudaErrorIllegalAddress / CUDA_ERROR_ILLEGAL_ADDRESS (700) has one text in every runtime that prints it
    # (cudaGetErrorString, cuGetErrorString, hipGetErrorString for hipErrorIllegalAddress, NCCL's and Triton's
    # CUDA checks): "an illegal memory access was encountered". Retold in a title or a sentence it keeps
    # either its core or its tail ("crashes with CUDA illegal memory access", "CUDA error: a memory access was
    # encountered"); no other CUDA or HIP error text holds either. The summary names the runtime's words.
    # Chinese and Japanese prose often glues the English words to its own characters ("启用`optimizer_cpu_offload`
    # 会导致illegal memory access:", enabling it causes an illegal memory access; ms-swift #9554, batch 46), where
    # \b finds no boundary (a CJK character is a word character to re): only a Latin letter or digit joins the words
    r"|(?P<illegal_retold>(?<![A-Za-z0-9_])(?i:illegal memory access)(?![A-Za-z0-9_])"
    r"|(?<![A-Za-z0-9_])memory access was encountered)"
    r"|device-side assert triggered|uncorrectable ECC error encountered"
    # cudaErrorAssert / CUDA_ERROR_ASSERT (710): cudaGetErrorString's "device-side assert triggered" (the table below,
    # torch's "CUDA error: device-side assert triggered"); retold in a title it keeps its core ("Device-side assert
    # crash during GRPO training on single A6000", Tina #10, batch 52), which no other CUDA or HIP text holds: torch's
    # "enable device-side assertions" / "Device-side assertions were explicitly omitted" and HIP's "Device-side
    # assertion `...' failed" go on with "ion" (HIP's is read above), so only the bare noun is this one
    r"|(?P<assert_retold>(?<![A-Za-z0-9_])(?i:device-side assert)(?![A-Za-z0-9_]))"
    # cudaErrorECCUncorrectable (214) has one text too, "uncorrectable ECC error encountered" (cudaGetErrorString,
    # hipGetErrorString for hipErrorECCNotCorrectable); retold in a title or a sentence it keeps its core
    # ('Training crash with "uncorrectable ECC error" and NCCL timeout?'), which no other CUDA or HIP error text
    # holds (nvidia-smi's table says "Uncorr. ECC", DCGM counts "... ECC errors": neither is this phrase)
    r"|(?<![A-Za-z0-9_])[Uu]ncorrectable ECC error(?![A-Za-z0-9_])"    # glued to CJK text too (see illegal_retold)
    r"|an illegal instruction was encountered|misaligned address"
    # an NVLink fault the GPU could not correct (cudaErrorNvlinkUncorrectable / CUDA_ERROR_NVLINK_UNCORRECTABLE,
    # 220): cudaGetErrorString / cuGetErrorString "uncorrectable NVLink error detected during the execution", as
    # torch raises it ("CUDA error: ..."), XLA's allocator and an error-file JSON carry it; like an uncorrectable
    # ECC error, restarted with the blocking switch, and the driver's Xid 154 says when the GPU needs a reset
    r"|uncorrectable NVLink error detected during the execution"
    # A kernel's own assertion, printed by every failing thread before "device-side assert
    # triggered" (pastes often hold only these, interleaved): CUDA's __assert_fail
    # "Indexing.cu:1236: indexSelectSmallIndex: block: [5,0,0], thread: [6,0,0] Assertion `...` failed."
    # and HIP's (ROCm, hip/amd_detail) "Indexing.hip:1292: indexSelectLargeIndex: Device-side
    # assertion `srcIndex < srcSelectDimSize' failed."
    r"|block: \[\d+, ?\d+, ?\d+\], thread: \[\d+, ?\d+, ?\d+\]|Device-side assertion [`']"
    # ROCm: the HSA runtime's page fault ("Memory access fault by GPU node-2 (Agent handle: ...) on
    # address 0x.... Reason: Page not present or supervisor privilege.") and hipError names; HIP spells 702
    # hipErrorLaunchTimeOut (hip_runtime_api.h: "hipErrorLaunchTimeOut = 702"; torch's hipify maps both
    # CUDA_ERROR_LAUNCH_TIMEOUT and cudaErrorLaunchTimeout to it, torch/utils/hipify/cuda_to_hip_mappings.py; review R54)
    r"|Memory access fault by GPU node|hipError(?:IllegalAddress|LaunchFailure|Assert|IllegalState|LaunchTimeOut)\b"
    r"|HSA_STATUS_ERROR_(?:MEMORY_APERTURE_VIOLATION|MEMORY_FAULT|EXCEPTION)"
    r"|[Ff]allen off the bus|[Ff]ell off the bus|GPU is lost"
    r"|" + _DEVICE_HANDLE_LOST +
    # cuBLAS and cuDNN reporting that their kernel failed on the GPU, in the libraries' own status
    # names (cublasStatus_t / cudnnStatus_t, as torch's "CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when
    # calling `cublasGemmEx(...)`", "cuDNN error: CUDNN_STATUS_MAPPING_ERROR", caffe's CHECK and CNTK's
    # "CUBLAS failure 13: ..." print them): EXECUTION_FAILED "the GPU program failed to execute"
    # (cuDNN 9 adds _CUDART, _CUBLAS, _CUDA_DRIVER, _CURAND suffixes for the layer that failed),
    # MAPPING_ERROR "an access to GPU memory space failed"; hipBLAS (ROCm) mirrors both names.
    # Not ALLOC_FAILED (an OOM, above) nor NOT_INITIALIZED / INTERNAL_ERROR (no fault named).
    r"|(?:CUBLAS|HIPBLAS|CUDNN)_STATUS_(?:EXECUTION_FAILED|MAPPING_ERROR)"
    # Ascend (CANN runtime, torch_npu): a kernel that faulted on the NPU, task.cc's "Kernel task happen
    # error, retCode=0x2a, [aicpu exception]." (also [aicore exception], [vector core exception],
    # [sdma exception] ...) and the AICPU's "Aicpu kernel execute failed, device_id=0, ..."
    r"|Kernel task happen error, retCode=\S+ \[[\w ]*exception\]|Aicpu kernel execute failed"
    r"|" + _NPU_KERNEL_FAULT_RE +
    r"|" + _CUBLAS_FAULT_TEXT +
    # pycuda built for a CUDA before 6.0 words two of the faults in its own table (src/cpp/cuda.hpp,
    # error::curesult_to_str: CUDA_ERROR_LAUNCH_FAILED "launch failed", CUDA_ERROR_LAUNCH_TIMEOUT "launch timeout";
    # since 6.0 it prints cuGetErrorString's text, read above) in its own message, "<routine> failed: <text>"
    # (error::make_message), raised as pycuda._driver.LaunchError (src/wrapper/wrap_cudadrv.cpp, translate_cuda_error):
    # only there, after the exception's name, are those bare words the fault's (review R54)
    r"|(?<=LaunchError: )\w+ failed: (?P<pycuda_launch>launch timeout|launch failed)(?![\w-])"
    # every fault of the table by its driver or runtime name alone, or by its text where no wording above holds it
    # (714, 717, 718, 226): the forms an enum dump ("CUDA_ERROR_ASSERT = 710") or a warning ("this kernel may
    # trigger a hardware stack error") print too, so they decide only as an error stated (_fault_stated)
    r"|(?P<named>\b(?:" + "|".join(sorted(_CUDA_FAULT_NAMES, key=len, reverse=True)) + r")\b"
    r"|" + "|".join(re.escape(text) for _, _, _, text in _CUDA_FAULTS) + r")")
# a definition after a fault's name (an enum or a table: "CUDA_ERROR_ASSERT = 710", "#define ...") or a
# possibility before it (a warning, an advice, a denial): no fault happened; right after an error's words (": ",
# "error", "failed", "returned", "results in") it is one, whatever the clause before said ("could not synchronize
# on CUDA context: CUDA_ERROR_LAUNCH_FAILED: ...")
_FAULT_DEFINITION = re.compile(r"\s*=")
_FAULT_ERROR_BEFORE = re.compile(r"(?i)(?::|\berror|\bfailed|\breturned|\bresult(?:s|ed)? in)[\s`'\"(<]{0,3}$")
# the runtime's error words opened by a quote or a code span right before the fault's text (_fault_mentioned)
_RUNTIME_QUOTED_BEFORE = re.compile(r"[`'\"“](?:[\w.]*Error:\s*)?(?:CUDA error|cudaError\w*):\s*$")
_FAULT_DEFINED_BEFORE = re.compile(r"#\s*define\s+(?:\w+\s+)?$|(?:^|[;{])\s*case\s+$")


# The driver's words for a GPU lost from the bus (Xid 79's "GPU has fallen off the bus"), as a person repeats them in
# prose: on a line that is not the driver's own ("NVRM: ..."), the told rules' limits hold (a hedge or an explanation
# in their sentence, a fix before them, a log level's line, an option's help): a monitoring agent's pull request
# "Addresses XID 79 (GPU has fallen off the bus) scenarios", "it typically indicates a GPU has fallen off the bus"
# (batch 45) tell of no loss that happened.
_BUS_LOSS_WORDS = re.compile(r"[Ff]allen off the bus|[Ff]ell off the bus")


def _told_only(text: str, pos: int) -> bool:
    """The one guard of a failure told in a person's words (the words at text[pos]: a fault's text or name, a GPU
    lost from the bus, an Xid by its number, an OOM on a GPU told in words): a denial, a possibility, a prediction
    or an explanation in their clause, or a fix before them on the line, none before a contrast
    (_told_hedged_in_clause), a program's log-level line, an option's help, a setting's value, an explainer's
    labelled item (not the reporter's own case: _item_happened) or a catalogue's row keyed by an Xid: the words name
    a kind of fault, none that happened. ``xid_told``, ``gpu_gone_told``, ``xid_events_told``, ``_fault_mentioned``
    and ``oom_told_on_gpu`` all decide through it (since batch 49; the clause, the contrast and the own case since
    the review of batches 48/49)."""
    return (_told_hedged_in_clause(text, pos) or _LOG_LEVEL_TAG.match(text) is not None
            or _HELP_OPTION.match(text) is not None or _told_as_setting(text, pos)
            or (_labelled_item(text, pos) and not _item_happened(text, pos))
            or _XID_CATALOGUE_ROW.match(text) is not None)


# A contrast that turns from what came before to what happened ("We fixed the data loader, but the job still crashes
# with an illegal memory access", "After the fix in #123 the job still crashes ...", "We could not reproduce before,
# but now we get ..."): a hedge or a fix before it says nothing of the words after it (since the review of batches
# 48/49)
_TOLD_CONTRAST = re.compile(r"(?i)\b(?:but|still|now|yet|however)\b")
# a condition or a possibility governs its sentence's later clauses, not only its own ("If you hit an Xid 79 on a
# node, drain it", "There could be, in some cases, an illegal memory access"); a denial only its own clause
_SENTENCE_WIDE_HEDGE = re.compile(r"if|may|might|could|can|will|would|possibl[ey]|potential(?:ly)?|" + _YOU_WILL
                                  + r"|" + _WHEN_YOU)
# a denial's determiner ("no", "without") denies the noun right after it ("no illegal memory access", "without an
# Xid"), not a later verb's object ("No idea why, the job crashed ...", "Without CUDA_LAUNCH_BLOCKING the job
# crashed with an illegal memory access"): at most this many words between it and the words
_DENIAL_REACH_WORDS = 3


def _told_hedged_in_clause(text: str, pos: int) -> bool:
    """A hedge (_HEDGE) in the clause of the words a person tells at text[pos] (_clause_start), a condition or a
    possibility anywhere in their sentence (_SENTENCE_WIDE_HEDGE), or
    a fix's word (_TOLD_FIX_WORD) anywhere before them on the line (a changelog's heading: "Fixes: illegal memory
    access in varlen"); none before a contrast that turns to what happened (_TOLD_CONTRAST). The told rules' one
    reading of a hedge (_told_only); since the review of batches 48/49."""
    lo = max(0, pos - _MENTION_WINDOW)
    sentence = _sentence_start(text, pos, lo)
    turn = sentence
    for c in _TOLD_CONTRAST.finditer(text, sentence, pos):
        turn = c.end()
    clause = _clause_start(text, pos, turn)
    if _told_over(text, pos, clause, turn):
        return True
    for h in _HEDGE.finditer(text, turn, pos):
        word = h.group().lower()
        if word in ("no", "without") and len(text[h.end():pos].split()) > _DENIAL_REACH_WORDS:
            continue
        if (h.start() >= clause or _SENTENCE_WIDE_HEDGE.fullmatch(word)) and not _when_you_told(text, h):
            return True
    fix = _first_end(_TOLD_FIX_WORD, text)
    return (0 <= fix <= pos and not (turn > sentence and fix <= turn)) or _told_staged(text, pos, turn)


# What makes the words a person tells no report of a failure in this run (review R39, newly reachable through batch 53's
# OOM told with the runtime's name): in their clause before them, one that is over ("We used to get ...", "I stopped
# getting ...", "Previously I got ...", "Before this PR we were getting ...", "Without this patch I was getting ..."), a
# doubt or a guess ("Maybe I'm getting ...", "I guess ...", "I doubt we hit ...", "I'm afraid we'll hit ...", "I expect
# to hit ..."), a conditional or a prediction of the first person ("I'd get ...", "we'll hit ..."), a question without
# its mark ("Why am I getting ...": _TOLD_ASKED), a test's or a check's clause ("a test that checks we get ..."); the condition of a
# habit right before the verb ("When I get a CUDA OOM, I lower the batch size"; "When I run with batch 64 I get ..." is
# a report); and after them in their sentence, a fix that ended it ("..., I fixed that by lowering num_envs", "this PR
# fixes it", "solved it with ...", "..., fixed by reducing batch size", "but it's resolved now", "but not since 0.4.2");
# a thought taken back ("I thought I was getting a CUDA OOM, but it was a NaN"); not "I think"/"I believe", a
# reporter's diagnosis of their own ("I think I'm getting a CUDA OOM because of the eval loop")
_TOLD_MET = r"(?:get|getting|hit|hitting|see|seeing|hav\w*|run\w*|encounter\w*|fac\w+|crash\w*|die|dying|fail\w*)"
_TOLD_OVER_BEFORE = re.compile(
    # what is over: the verb of meeting it right after ("the config used to train crashed ..." is a use, "previously
    # trained" an adjective's)
    r"(?i)\b(?:(?:used\s+to|stopped)(?=\s+" + _TOLD_MET + r"\b)"
    r"|(?:previously|formerly|in\s+the\s+past),?\s+(?:i|we|my|our)\b|(?:i|we)\s+(?:had\s+)?previously\b"
    r"|before\s+(?:this|that|the\s+(?:fix|patch|update|upgrade|change|pr|commit))\b"
    r"|without\s+(?:this|the|that)\s+(?:patch|pr|change|fix|commit|update)\b"
    r"|maybe|perhaps|probably|presumably|(?<![\w'’])i\s+(?:guess|doubt|suspect|thought|expect|assume"
    r"|imagine|fear|wonder)\b|i['’]?m\s+afraid|i\s+am\s+afraid|expect(?:s|ed|ing)?\s+to\b|we['’]ll"
    # the first person's conditional, not a wish ("I'd like to report that the job crashed ...")
    r"|(?:i|we)['’]d\s+(?:\w+ly\s+)?" + _TOLD_MET + r"\b"
    r"|(?:tests?|checks?|asserts?|verif(?:y|ies)|ensures?)\s+(?:that\s+|whether\s+)?(?:we|i|the\s+\w+)\s)")
# a question without its mark opens its sentence ("Why am I getting a CUDA OOM error", a title); "No idea why the job
# crashed ...", "That is why we hit ..." tell what happened
_TOLD_ASKED = re.compile(r"(?i)[\s*#>_`-]*(?:why|how\s+come)\b")
_TOLD_HABIT_BEFORE = re.compile(r"(?i)\bwhen(?:ever)?\s+(?:i|we)(?:\s+(?:first|also|still|again|\w+ly))?\s+$")
_TOLD_OVER_AFTER = re.compile(
    r"(?i)\b(?:(?:it|that|this|which)(?:['’]s|\s+(?:is|was|has\s+been|got|went))?\s+(?:now\s+)?"
    r"(?:resolved|solved|fixed|gone|away)\b"
    r"|(?<!n['’]t\s)(?<!not\s)(?<!never\s)(?<!nothing\s)(?:fixed|fixes|solved|resolved)\s+(?:it|that|this"
    r"|the\s+(?:issue|problem|oom|error|crash))\b"
    r"|(?<!n['’]t\s)(?<!not\s)(?<!never\s)(?:fixed|solved|resolved)\s+(?:it\s+)?(?:by|with)\b|not\s+since\b|went\s+away\b|(?:is|are)\s+fine\s+now\b)")


# A lesson's first person (since batch 54): a tutorial's, a course's or a workshop's "we" is the author walking the
# reader through a run staged to show the failure ("In this tutorial we hit a CUDA OOM on purpose", "Let's hit an NCCL
# timeout and read the watchdog's dump", "we hit a CUDA OOM deliberately to see what the allocator prints"), no report
# of this run. Reviewed (R49): the staging must be the failure's own verb's, bound in its clause: the lesson named as
# where it happens with the lesson's "we" as the subject of the failure's verb (the told rules' verb of meeting at the
# words' start: "In this tutorial, we hit a ..."), "let's"/"let us" right before that verb ("Let's hit a ..."; a
# fault's told rule reads from the words, so the staging verb may stand between: "Let us trigger an illegal memory
# access"), or the failure made on purpose right after the words ("... deliberately", "... on purpose to see ...",
# "... intentionally by ..."; _TOLD_WORDS_END, the words' noun phrase up to the adverb). Not a staging word elsewhere
# in the sentence ("I get a CUDA OOM at step 30 even though I deliberately set the batch size to 1", "...; I
# deliberately disabled flash-attn to check", "with the attached repro to demonstrate it"), nor a user in a lesson
# ("In this exercise I keep getting ...", "In this tutorial's notebook, I hit ...", "When I run this tutorial's
# notebook I hit ..."), nor "let us" with another verb ("didn't let us finish: we hit ..."), nor a write-up's "In this
# post we hit ..." (tests/crash/public 1050).
_TOLD_LESSON_BEFORE = re.compile(r"(?i)\b(?:in\s+(?:this|the\s+following|the\s+next|today['’]s)\s+(?:\w+\s+)?"
                                 r"(?:tutorial|lesson|walkthrough|course|chapter|exercise|workshop|codelab)\s*,?\s+we"
                                 r"|let['’]s|let\s+us)"
                                 r"\s+(?:(?:now|first|then|quickly|deliberately|intentionally|purposely|will|can)\s+)?"
                                 r"(?:(?:hit|get|trigger|cause|provoke|force|reproduce|induce)"
                                 r"\s+(?:(?:an?|the)\s+)?)?$")
_TOLD_STAGED_AFTER = re.compile(r"(?i)\s*(?:on\s+purpose|deliberately|intentionally|purposely)(?=\s*(?:$|[.,;:!?)]|"
                                r"(?:to|by|so|and|here|now)\b))")


def _told_over(text: str, pos: int, clause: int, sentence: int) -> bool:
    """The words a person tells at text[pos] (their clause from ``clause``, their sentence's turn to what happened from
    ``sentence``) are over or not of this run (above)."""
    over = _TOLD_OVER_BEFORE.search(text, clause, pos + 40)    # its verb of meeting may be the words' own ("used to get")
    if ((over is not None and over.start() < pos)
            or (clause == sentence and _TOLD_ASKED.match(text, sentence, pos) is not None)
            or _TOLD_HABIT_BEFORE.search(text, max(clause, pos - 40), pos) is not None):
        return True
    stop = _SENTENCE_END.search(text, pos, pos + _MENTION_WINDOW)
    return _TOLD_OVER_AFTER.search(text, pos, stop.start() if stop else min(len(text), pos + _MENTION_WINDOW)) is not None


# how far before the words a lesson's place is looked for in their sentence ("In this tutorial, we ..."): the opening
# of the sentence, not a paragraph pasted on one line (each match of a long line costs this, not the line)
_TOLD_LESSON_REACH = 160


def _told_staged(text: str, pos: int, sentence: int) -> bool:
    """The words a person tells at text[pos] (from their verb of meeting) are a lesson's staged run
    (_TOLD_LESSON_BEFORE ending right before them in their sentence from ``sentence``, or _TOLD_STAGED_AFTER right
    after them, _TOLD_WORDS_END; since batch 54, bound to the words' own verb since review R49); read after the
    hedges, which refuse most mentions first."""
    if _TOLD_LESSON_BEFORE.search(text, max(sentence, pos - _TOLD_LESSON_REACH), pos) is not None:
        return True
    words = _TOLD_WORDS_END.match(text, pos, pos + _TOLD_LESSON_REACH)
    return words is not None and _TOLD_STAGED_AFTER.match(text, words.end()) is not None


# the end of the failure's words a person tells, from their start: the runtime's name and the failure's noun ("CUDA
# OOM", "an illegal memory access", "NCCL timeout") and what the same noun phrase holds after it ("at step 30 on rank
# 3", "with batch 512"), never past a clause's break or a verb of its own
_TOLD_WORDS_END = re.compile(r"[\w'’-]+(?:\s+(?!(?:even|though|although|but|because|since|while|which|when|after|as|"
                             r"so|and|I|we|it)\b)[\w'’-]+){0,8}?(?=\s*(?:on\s+purpose|deliberately|intentionally|"
                             r"purposely)\b)", re.IGNORECASE)


# the words of a run that happened in a labelled item: the reporter's own cases ("Case 1: TP=1 works fine. Case 2:
# TP=2 crashes at step 10 with an illegal memory access", "Case 2: with TP=2 we hit Xid 79 on GPU 2 and the job
# died"), not an explainer's ("Case 3: illegal memory access in a custom kernel"); since the review of batches 48/49
_ITEM_HAPPENED = re.compile(r"(?i)\b(?:crash(?:es|ed)|died|dies|fail(?:s|ed)|aborted|works?|worked|hung|hangs)\b")


# A general statement, no report of one run (the review of batches 48/49): a question or an FAQ's or a markdown
# heading ("### Got OOM on the GPU?", "FAQ: Why do I get out of memory on the A100 ...?", "Was it killed by the OOM
# killer? dmesg says no."), a contracted denial in the clause ("The job wasn't killed by the OOM killer"), or, with no
# run of the reporter's in the sentence (_RUN_OWN), a generic or plural subject ("Many people run out of memory on
# RTX 3090 cards", "Pods that exceed their memory limit get killed by the OOM killer", "Frequent causes of runs
# getting OOM ..."), a frequency ("Users often hit OOM on the 4090") or a general predicate ("Running out of memory
# on the GPU is common").
# The reporter's run named in a line: the first person, a step, an epoch or a rank by number, a process by name or PID
_RUN_OWN = re.compile(_RUN_OWN_RE)
_GENERAL_HEADING = re.compile(r"\s*(?:#{1,6}\s|(?i:FAQ)\b|Q\s*\d*\s*[:.]\s)")
_CONTRACTED_DENIAL = re.compile(r"(?i)\b(?:was|were|is|are|did|does|do|has|have|had|would|could)n['’]t\b")
_GENERIC_SUBJECT = re.compile(r"(?i)\b(?:people|users|many|most|everyone|anyone|someone|processes|pods|workers"
                              r"|containers|jobs|runs|programs|tasks|apps)\b")
_GENERAL_FREQUENCY = re.compile(r"(?i)\b(?:often|usually|typically|generally|frequently|commonly|sometimes"
                                r"|frequent|common|typical)\b")
# a recurrence qualifying the told words themselves ("Frequent CPU OOM / Process Killed After Several Hundred Steps",
# an issue title, unsloth #4122; "Recurring NCCL timeouts"): the reporter's failure that keeps coming back, not a
# prevalence ("common", "typical": many people's) nor another noun's ("Frequent causes of runs getting OOM")
_RECURRENCE_BEFORE = re.compile(r"(?i)\b(?:frequent|recurring|repeated)\s+$")
# a definite determiner right before a plural subject names the reporter's particular ones, no kind ("However, after a
# while, all the jobs are automatically killed because of a slurm out-of-memory error": the jobs the reporter's command
# above submitted, flyvis #13, tests/crash/public 1517; since batch 71); "Pods that exceed ...", "Jobs get killed",
# "many workers" stay generic
_DEFINITE_BEFORE = re.compile(r"(?i)\b(?:(?:all\s+(?:of\s+)?)?the|these|those|both|all\s+my|all\s+our)\s+$")


# Since batch 74: a sentence that closes on a number before the question ("I still encounter a CUDA OOM error when
# max_turns is greater than 2. Is there a way to train with 4 turns?", rLLM #182, tests/crash/public 1582):
# _SENTENCE_END does not end a sentence after a digit (a list's "1. ", a version), so the question read as the words'
# own; a digit's period, a space and a capital opening the next word end the words' sentence before the question
_ASK_OTHER_SENTENCE = re.compile(r"\d\.\s+[A-Z]")


def _general_statement(text: str, start: int, end: int) -> bool:
    """The words a person tells at text[start:end] are in a general statement, no report (above)."""
    lo = max(0, start - _MENTION_WINDOW)
    sentence = _sentence_start(text, start, lo)
    stop = _SENTENCE_END.search(text, end, end + _MENTION_WINDOW)
    hi = stop.start() if stop is not None else min(len(text), end + _MENTION_WINDOW)
    ask = (stop.start() if stop is not None and stop.group().startswith("?")
           else hi - 1 if stop is None and text[end:hi].rstrip().endswith("?") else -1)
    if ask >= 0 and _CLAUSE_END.search(text, end, ask) is None and _ASK_OTHER_SENTENCE.search(text, end, ask) is None:
        return True     # the words' own clause asks (not a report's "..., any idea why?")
    if _GENERAL_HEADING.match(text) or _CONTRACTED_DENIAL.search(text, _clause_start(text, start, lo), start):
        return True
    if _RUN_OWN.search(text, sentence, hi):
        return False    # the reporter's run: "All 8 workers ran out of memory on GPU 0 at step 500"
    recurrence = _RECURRENCE_BEFORE.search(text, sentence, start)
    frequency = [f for f in _GENERAL_FREQUENCY.finditer(text, sentence, hi)
                 if recurrence is None or not recurrence.start() <= f.start() < recurrence.end()]
    if recurrence is not None and not frequency and not _GENERIC_SUBJECT.search(text, sentence, hi):
        return False    # the reporter's own failure that keeps coming back (_RECURRENCE_BEFORE), unless another
        #                 frequency or a prevalence says it is many people's ("Frequent CPU OOM is common"; review R31)
    return bool(any(_DEFINITE_BEFORE.search(text, sentence, g.start()) is None
                    for g in _GENERIC_SUBJECT.finditer(text, sentence, start)) or frequency)


def _item_happened(text: str, pos: int) -> bool:
    """A labelled item that tells what happened in the reporter's run (_ITEM_HAPPENED, _XID_HAPPENED) in its text
    around the words at text[pos]."""
    lo, hi = max(0, pos - _MENTION_WINDOW), min(len(text), pos + _MENTION_WINDOW)
    return (_ITEM_HAPPENED.search(text, lo, hi) is not None or _XID_HAPPENED.search(text, lo, hi) is not None)


# what the words stand for, said after them: an explainer's "An uncorrectable ECC error typically indicates failing
# HBM", "misaligned address can come from a bad cast" (not "... was encountered": the runtime's own text ends there),
# a guide's "torch.cuda.OutOfMemoryError means the model, optimizer state, ... don't fit in VRAM" (batch 49): the
# fault's and the OOM's words alike (_fault_mentioned, _oom_mentioned)
# (behind a closing quote or parenthesis, and a code's number: "\"...\" means", "This error (CUDA_ERROR_X) is raised
# when", "cudaErrorX (error code 702) occurs when"; review R54)
_TOLD_EXPLAINED_AFTER = re.compile(r"[`'\"”’)]?(?:\s*\((?:error\s+)?(?:code\s+)?\d+\))?(?:\s+errors?)?\s+"
                                    r"(?:(?:can|may|might|could|will|usually|typically|often"
                                    r"|generally|mostly)\s+)?(?:means?|indicates?|comes? from|stands? for"
                                    r"|(?:is|are) (?:usually |typically |often )?caused by|happens? when|occurs? when"
                                    r"|(?:is|are) (?:raised|thrown|returned) when"
                                    # a prevalence: "The torch.cuda.OutOfMemoryError is the most common roadblock for
                                    # engineers fine-tuning Llama models" (a vendor's guide, batch 58); reviewed (R62):
                                    # only the superlative or a category ("is one of the most common", "is a classic",
                                    # "is the dreaded"), a degree on "frequent" ("is quite frequent with this config")
                                    # is a reporter's own frequency, as R40 ruled
                                    r"|(?:is|are) (?:one of )?the most (?:common|frequent|typical|notorious|dreaded)"
                                    r"|(?:is|are) (?:a|the) (?:classic|dreaded|notorious)"
                                    r")\b")
# A gerund's scene as a general statement's subject: the words after "Seeing a" / "Getting a" / "Hitting a" at the
# sentence's start, the gerund's "is"/"are" after them in the sentence, no run of the writer's named ("Seeing a CUDA Out
# of Memory (OOM) error in your terminal is a rite of passage for any ML engineer", batch 58). An issue title's "Getting
# CUDA out of memory at step 5" has no predicate after the words, and "Getting ... is happening on my GPU" names the
# writer's: reports. Reviewed (R62): the predicate is the gerund phrase's own, right after the words (a parenthesis,
# "error", one "in your terminal"-like phrase between), with a characterising complement ("is a rite of passage", "is
# common", "is frustrating"); a later clause's "is" ("Getting CUDA out of memory even though there is plenty of free
# memory", "..., what is wrong?", "... when GRPO training, the vllm gpu_memory_utilization is 0.3") is the title's.
# The lead is one class, so a run of spaces before the gerund is read once (R62: "\s*[*_#>\s-]*" cost its square).
_GERUND_SCENE_BEFORE = re.compile(r"[*_#>\s-]*(?:Seeing|Getting|Hitting|Encountering|Facing|Running into)\s+"
                                  r"(?:an?\s+|the\s+)?")
_GERUND_PREDICATE = re.compile(r"(?:\s*\([^()\n]{0,30}\))?(?:\s+errors?)?"
                               r"(?:\s+(?:in|on|at|during|from)\s+(?:your|the|a|an)\s+\w+)?"
                               r"\s+(?:is|are)\s+(?:(?:a|an|the|one|so|very|quite|pretty|really|such)\s"
                               r"|(?:common|frustrating|annoying|painful|inevitable|normal|typical|usual)\b)")


# A reporter's diagnosis of their own fault is no explainer's definition: the first person in the sentence ("The
# illegal memory access happens when I enable fp8", "In our run the CUDA out of memory is caused by the eval loop"),
# or the words as the one that happened, pointing at its paste ("The illegal memory access comes from the flash-attn
# varlen kernel (trace below)"), unless the verb defines them (means, indicates, stands for); since the review of
# batches 48/49
# (a lowercase "i" as people type it, "i keep getting ...", not "i.e."; since review R39)
_FIRST_PERSON = re.compile(r"\b(?:I|i(?!\.\w)|[Ww]e|[Oo]ur|[Mm]y|[Mm]e|[Uu]s)\b")
_THE_ONE_BEFORE = re.compile(r"(?i)\b(?:the|this|that|our|my)\s+(?:[\w.]+\s+){0,2}$")
_PASTE_POINTER = re.compile(r"(?i)\b(?:below|above|attached)\b")
_DEFINING_VERB = re.compile(r"(?i)\b(?:means?|indicates?|stands? for)\b")


# How a kind of failure shows, the fault's or the OOM's words after an explainer's verb of manifestation (since batch
# 58): English "surfaces as" / "manifests (itself) as", a parenthesis allowed between ("If a kernel is still in flight
# against the storage being torn down, cuMemUnmap races against it and surfaces (asynchronously) as
# CUDA_ERROR_ILLEGAL_ADDRESS at the next synchronous CUDA call", a write-up of an allocator's race), and Chinese
# "表现为" / "体现为" (shows as) after a general word in its clause ("这类错误通常表现为"RuntimeError: CUDA error:
# device-side assert triggered"", a write-up of others' GRPO runs); the head of the program's message may stand
# between (an exception's name, torch's "CUDA error: ", a quote). No runtime prints its error after these verbs
# (c10/cuda/CUDAException.cpp raises "CUDA error: <text>", the allocator "CUDA out of memory. Tried to allocate ...":
# each at a line's or an exception's head); a reporter who tells their own run so names it in the sentence (the first
# person, a step or a rank by number: _RUN_OWN; a pointer to the paste, "below"), and that is a report. Not "shows up
# as" / "appears as": a report's own words as often ("The error appears as: RuntimeError: CUDA error: ...").
_MANIFEST_BEFORE = re.compile(r"(?:\b(?i:surfac(?:e|es|ed|ing)|manifest(?:s|ed|ing)?)(?:\s+(?:itself|themselves))?"
                              r"(?:\s*\([^()\n]{0,40}\))?\s+as|(?:表现|体现)为)\s*[`'\"“「]?"
                              r"(?:[\w.]{0,60}(?:Error|Exception)\s*:\s*)?(?:CUDA error\s*:\s*)?(?:an?\s+)?$")
_MANIFEST_REACH = 120
# Reviewed (R62): the verbs alone tell no explainer; a bug report tells its own failure the same way ("The crash manifests
# as ...", "This issue manifests as ...", "报错通常表现为 ..."). An explainer's manifestation has a generic subject, a kind
# of failure: in English an indefinite or a kind-word in the verb's clause ("A bad label id manifests as", "such races
# surface as", "this kind of error manifests as"), a condition on an indefinite opening the sentence ("If a kernel is
# still in flight ..., cuMemUnmap races against it and surfaces as"), or an explainer's adverb of what holds in general
# ("This typically manifests itself as"); in Chinese a kind-word in the verb's clause ("这类错误", "这种问题", "常见"),
# not a frequency or a prediction (通常, 经常, 一般, 会: a report's, as R40 ruled). A definite subject ("the crash", "the
# bug", "this issue", "it", "问题", "报错") is the reporter's. Either way the first person in the sentence (_RUN_OWN,
# 我) or a pointer to the paste (below, 如下, 见下, 附上) makes it a report.
_MANIFEST_GENERIC_EN = re.compile(r"(?i)\b(?:an?|any|such|each|every|some)\s+\w|\b(?:kinds?|types?|class(?:es)?|sorts?)\s+of\b"
                                  r"|\b(?:typically|generally|commonly|normally)\b")
_MANIFEST_CONDITION_EN = re.compile(r"[*_#>\s-]*(?:If|When(?:ever)?)\s+(?:an?|any|some)\s")
_ZH_MANIFEST_GENERAL = re.compile(r"这类|此类|这种|该类|这一类|此种|常见")
_ZH_CLAUSE_END = re.compile(r"[，,。；;：:！!？?\n]")
_ZH_SENTENCE_END = re.compile(r"[。！!？?\n]")
_ZH_PASTE_POINTER = re.compile(r"如下|见下|附上|附件|截图")
_EN_CLAUSE_END = re.compile(r"[,;:]\s")


def _manifested(text: str, start: int, end: int) -> bool:
    """The words at text[start:end] follow an explainer's verb of manifestation (_MANIFEST_BEFORE) in a general
    statement (see above): a generic subject in the verb's clause, no run of the writer's named in the sentence
    (_RUN_OWN, 我) and no pointer to a paste after the words."""
    m = _MANIFEST_BEFORE.search(text, max(0, start - _MANIFEST_REACH), start)
    if m is None:
        return False
    verb = m.start()
    if text[verb] in "表体":
        lo = max(0, verb - 40)
        clause = max([c.end() for c in _ZH_CLAUSE_END.finditer(text, lo, verb)], default=lo)
        sentence = max([c.end() for c in _ZH_SENTENCE_END.finditer(text, max(0, verb - 80), verb)],
                       default=max(0, verb - 80))
        stop = _ZH_SENTENCE_END.search(text, end, end + 80)
        hi = stop.start() if stop is not None else min(len(text), end + 80)
        return (_ZH_MANIFEST_GENERAL.search(text, clause, verb) is not None
                and "我" not in text[sentence:hi] and _ZH_PASTE_POINTER.search(text, end, hi) is None)
    sentence = _sentence_start(text, start, max(0, start - _MENTION_WINDOW))
    stop = _SENTENCE_END.search(text, end, end + _MENTION_WINDOW)
    hi = stop.start() if stop is not None else min(len(text), end + _MENTION_WINDOW)
    if _RUN_OWN.search(text, sentence, hi) or _PASTE_POINTER.search(text, end, hi):
        return False
    clause = max([c.end() for c in _EN_CLAUSE_END.finditer(text, max(sentence, verb - _MANIFEST_REACH), verb)],
                 default=max(sentence, verb - _MANIFEST_REACH))
    return (_MANIFEST_GENERIC_EN.search(text, clause, verb) is not None
            or _MANIFEST_CONDITION_EN.match(text, sentence) is not None)


def _told_explained(text: str, start: int, end: int) -> bool:
    """What the words at text[start:end] stand for, said after them (_TOLD_EXPLAINED_AFTER) as an explainer's
    general statement, not a reporter's diagnosis of their own (_FIRST_PERSON, _THE_ONE_BEFORE)."""
    if _GERUND_PREDICATE.match(text, end) is not None:     # read first: the sentence is looked for only then
        sentence = _sentence_start(text, start, max(0, start - _MENTION_WINDOW))
        if _GERUND_SCENE_BEFORE.fullmatch(text, sentence, start) is not None:
            stop = _SENTENCE_END.search(text, end, end + _MENTION_WINDOW)
            hi = stop.start() if stop is not None else min(len(text), end + _MENTION_WINDOW)
            if _RUN_OWN.search(text, sentence, hi) is None:
                return True
    after = _TOLD_EXPLAINED_AFTER.match(text, end)
    if after is None:
        return False
    if _DEFINING_VERB.search(after.group()):
        return True
    sentence = _sentence_start(text, start, max(0, start - _MENTION_WINDOW))
    stop = _SENTENCE_END.search(text, end, end + _MENTION_WINDOW)
    hi = stop.start() if stop is not None else min(len(text), end + _MENTION_WINDOW)
    return not (_FIRST_PERSON.search(text, sentence, hi)
                or (_THE_ONE_BEFORE.search(text, max(sentence, start - 40), start) is not None
                    and _PASTE_POINTER.search(text, end, hi) is not None))


def _fault_mentioned(text: str, m: re.Match[str]) -> bool:
    """A fault's words (_FAULT) a line only mentions (batch 49: "you'll hit an illegal memory access if ...", "To avoid
    a device-side assert triggered error, check the labels", a changelog's "Fixed an illegal memory access in the
    varlen kernel"). Where the runtime's line stands they are its own: at a line's start (behind a bullet or
    emphasis), after an exception's name and colon, or right after an error's words (_FAULT_ERROR_BEFORE: "CUDA
    error: ", "failed: ", "returned "), unless a fix's word is before them on the line ("Fixed: CUDA error: an illegal
    memory access ..."), as the OOM's words are read (_oom_mentioned); elsewhere the told rules' one guard decides
    (_told_only), and a numbered heading of the name alone names a kind."""
    start = m.start()
    if (_named_as_heading(text, start, m.end()) or _told_explained(text, start, m.end())
            or _ZH_SYMPTOM_ENTRY.match(text) is not None):    # a FAQ entry's symptom (since batch 52)
        return True
    if _fault_in_reference(text, start, m.end()):
        return True
    tag = _LOG_LEVEL_TAG.match(text)
    if tag is not None and m.group("named") is not None:
        # a runtime's own name for the fault on a program's warning line ("WARNING: cudaErrorIllegalAddress at
        # flash_fwd.cu:122"): the program's report, unless hedged (since the review of batches 48/49)
        return _told_hedged(text, start, _HEDGE, _TOLD_FIX_WORD, _MENTION_WINDOW)
    if tag is not None and not text[tag.end():start].strip():    # "WARNING: illegal memory access possible ..."
        return True
    if _told_as_setting(text, start) or _labelled_item_end(text) == start:
        return True     # a setting's value, an explainer's "Case 3: illegal memory access in a custom kernel"
    if _at_line_head(text, start):
        return _cjk_mentioned(text, start, m.end())     # "illegal memory access가 발생하면 ..." (since batch 52)
    lo = max(0, start - _MENTION_WINDOW)
    label = _SYMPTOM_LABEL.match(text)
    if label is not None and label.end() <= start and m.group() not in _CUDA_FAULT_TEXTS and not (
            _OOM_RAISED_BEFORE.search(text, label.end(), start) or _FAULT_ERROR_BEFORE.search(text, label.end(), start)):
        # an English symptom label's own line, its description: the label's colon is no runtime's (since batch 54;
        # "Symptom: CUDA error: an illegal memory access ..." still holds the runtime's message after its own words),
        # so only the bare words on it are refused, as on a labelled item: CUDA's own text for the fault
        # (cudaGetErrorString's, _CUDA_FAULTS: "Symptom: an illegal memory access was encountered", "... crashes at
        # step 1200 with an illegal memory access was encountered") is the runtime's wherever it stands (review R49)
        return True
    if _OOM_RAISED_BEFORE.search(text, lo, start) or _FAULT_ERROR_BEFORE.search(text, lo, start):
        if 0 <= _first_end(_TOLD_FIX_WORD, text) <= start:
            return True
        # the runtime's message quoted inside a person's sentence is read as the told words are for a general
        # statement (since batch 66): "Preempted ACE jobs cordon nodes: a rank SIGKILLed ... drops its NVLink peers,
        # the survivors fault with `CUDA error: Invalid access of peer GPU memory over nvlink or a hardware error`, and
        # the GPUs need rebooting." (ai2cm/ace #1398, a pull request telling what its change prevents) names a kind of
        # job, no run; "my job fails with `CUDA error: ...`", a step or a rank by number, is a report as before
        quote = _RUNTIME_QUOTED_BEFORE.search(text, lo, start)
        return (quote is not None and _MESSAGE_AT_START.fullmatch(text, 0, quote.start()) is None
                and _general_statement(text, quote.start(), m.end()))
    # the words bare in Chinese, Japanese or Korean prose: its limits too (_cjk_mentioned, since batch 52); the driver's
    # words for a GPU lost from the bus in a term's definition (_term_defined, since batch 67)
    return (_told_only(text, start) or _cjk_mentioned(text, start, m.end())
            or (_BUS_LOSS_WORDS.fullmatch(m.group()) is not None and _term_defined(text, start)))


# Where a fault's words stand in a reference, not in a program's line (review R54; the faults' shared guard, so 700's
# words as 702's): a markdown heading of the name alone ("## CUDA_ERROR_LAUNCH_TIMEOUT", "### cudaErrorLaunchTimeout
# (702)"), a markdown table's cell they fill ("| 702 | cudaErrorLaunchTimeout | the launch timed out and was
# terminated |"), a source's string literal assigned or returned (a binding's table, "describe LaunchTimeout = \"the
# launch timed out and was terminated\"", helper_cuda.h's "return \"cudaErrorLaunchTimeout\";"), an FAQ's question
# ("**Q: I get \"...\" error when ..."), a code comment ("// cudaErrorLaunchTimeout: the display watchdog ...", a
# test's "# (the launch timed out and was terminated) on GPU card not"), an environment setting's list value
# ("RETRYABLE_CUDA_ERRORS=cudaErrorLaunchTimeout,cudaErrorIllegalAddress"), an explainer's general cause ("A common
# cause of CUDA_ERROR_LAUNCH_TIMEOUT is ...") or a Chinese or Japanese definition after the words ("... (cudaError
# LaunchTimeout) 表示 ...", "“...”这个错误一般是由于 ...", "cudaErrorLaunchTimeout (702) は、...場合に発生します"). None of
# these is a shape a program prints its fault in: torch raises "RuntimeError: CUDA error: <text>" (c10/cuda/
# CUDAException.cpp), the CUDA runtime and driver give the text or the name (cudaGetErrorString, cuGetErrorName),
# cupy "CUDARuntimeError: cudaErrorX: <text>" (cupy_backends/cuda/api/runtime.pyx), numba "CudaAPIError: [702] Call
# to cuX results in CUDA_ERROR_X" (numba/cuda/cudadrv/driver.py), TensorFlow and JAX/XLA "...: CUDA_ERROR_X: <text>"
# (stream_executor/cuda/cuda_driver.cc), none at a heading's, cell's, literal's or comment's place.
_REF_HEADING_BEFORE = re.compile(r"\s*#{1,6}\s+[`*]*")
_REF_HEADING_AFTER = re.compile(r"[`*]*\s*(?:\(\d+\))?[`*:]*\s*")
_REF_CELL_BEFORE = re.compile(r"\|\s*[`*]*$")
_REF_CELL_AFTER = re.compile(r"[`*]*\s*(?:\(\d+\)\s*)?\|")
_REF_LITERAL_BEFORE = re.compile(r"(?:\s=|\breturn)\s*[\"']$")
_REF_LITERAL_AFTER = re.compile(r"[\"']\s*[;,]?\s*$")
_REF_QUESTION = re.compile(r"[\s>*\-]*[*_]*Q\s*[:：]")
_REF_COMMENT = re.compile(r"\s*(?://|#+\s+[a-z(])")
# a changelog's entry (behind a bullet or a version): "- Handle CUDA_ERROR_LAUNCH_TIMEOUT on Windows display GPUs
# (#1234)", "v0.4.1: Catch cudaErrorLaunchTimeout and retry with smaller chunks", "- Added a warning when ..."; not
# where the words follow an error's words ("Caught exception: CUDA error: ...", a program's line: _FAULT_ERROR_BEFORE)
_REF_CHANGELOG = re.compile(r"\s*(?:[-*•+]\s+|v?\d+(?:\.\d+)+\s*[:\-–]\s*)?(?:Handle[sd]?|Handling|Catch(?:es)?|Caught"
                            r"|Add(?:s|ed)?|Detect(?:s|ed)?|Retr(?:y|ies|ied)|Support(?:s|ed)?|Warn(?:s|ed)?)\b")
_REF_ENV_LIST = re.compile(r"\s*(?:export\s+)?[A-Z][A-Z0-9_]*=(?:[\w.\-]+,)*$")
_REF_CAUSE_BEFORE = re.compile(r"(?i)\b(?:common|typical|usual|main|frequent|likely)\s+(?:causes?|reasons?)\s+"
                               r"(?:of|for)\s+[`'\"“]?$")
_REF_CJK_DEFINED_AFTER = re.compile(r"[`'\"”」）)]?\s*(?:\(\d+\)|（\d+）)?\s*(?:这个错误|这个|错误|エラー)?\s*"
                                    r"(?:表示|意味着|一般是由于|通常是由于|一般是因为|通常是因为|は[、，,])")


def _fault_in_reference(text: str, start: int, end: int) -> bool:
    """The fault's words at text[start:end] stand in a reference's shape (see above), not in a program's line."""
    if _REF_HEADING_BEFORE.fullmatch(text, 0, start) is not None and _REF_HEADING_AFTER.fullmatch(text, end) is not None:
        return True
    if text.lstrip().startswith("|") and _REF_CELL_BEFORE.search(text, max(0, start - 8), start) is not None \
            and _REF_CELL_AFTER.match(text, end) is not None:
        return True
    if _REF_LITERAL_BEFORE.search(text, max(0, start - 10), start) is not None \
            and _REF_LITERAL_AFTER.match(text, end) is not None:
        return True
    if _REF_QUESTION.match(text) is not None or _REF_COMMENT.match(text) is not None:
        return True
    if _REF_ENV_LIST.fullmatch(text, 0, start) is not None:
        return True
    if _REF_CHANGELOG.match(text) is not None \
            and _FAULT_ERROR_BEFORE.search(text, max(0, start - _ERROR_WORDS_REACH), start) is None:
        return True
    return (_REF_CAUSE_BEFORE.search(text, max(0, start - 40), start) is not None
            or _REF_CJK_DEFINED_AFTER.match(text, end) is not None or _manifested(text, start, end))


# A runtime's name for an error as the heading of an explainer's numbered list ("1. CUDA_ERROR_OUT_OF_MEMORY", then
# what it usually means; "2. CUDA_ERROR_ILLEGAL_ADDRESS", a Chinese article of common CUDA errors, batch 45): the
# line holds only the item's number and the name, so it names a kind of error, not one that happened. An issue's
# title with the name alone has no such number and still decides.
_LIST_NUMBER = re.compile(r"\s*(?:\d{1,2}|[A-Za-z])[.)]\s+[`*]*")


def _named_as_heading(text: str, start: int, end: int) -> bool:
    """The words at text[start:end] are all a numbered list item's line holds after its number."""
    n = _LIST_NUMBER.match(text)
    return n is not None and start <= n.end() < end and not text[end:].strip(" `*:：")


# An explainer's labelled item: a line that opens (maybe behind a bullet) with a label word and its letter or number
# and a colon ("• Scenario C: GPU VRAM exhaustion (CUDA out of memory)", a Kubernetes guide's three causes behind
# exit code 137; "Case 2: ...", "Cause 3: ...", "Category 2: ERRORS", "Pattern 1: One Rank is Missing"): the item
# names a kind of failure a reader may meet, not one that happened (since batch 46). A runtime's message raised on
# it ("Case 2: RuntimeError: CUDA error: out of memory", a test harness's line) is still read as raised: the
# callers look for that first.
_LABELLED_ITEM = re.compile(r"[\s•·*\-–]*(?:Scenario|Case|Cause|Category|Pattern|Type|Failure mode)\s+(?:\d{1,2}|[A-Z])\s*:\s")


@functools.lru_cache(maxsize=8)
def _labelled_item_end(text: str) -> int:
    """Where the line's explainer's label (``_LABELLED_ITEM``) ends (-1: none), matched once a line: a line of a
    fault's words after a long run of bullets' characters asked it again for each (review R32)."""
    n = _LABELLED_ITEM.match(text)
    return n.end() if n is not None else -1


def _labelled_item(text: str, start: int) -> bool:
    """The words at text[start] are inside an explainer's labelled item (``_LABELLED_ITEM``), after its label."""
    return 0 <= _labelled_item_end(text) <= start


# How many of a line's fault words are read in full: a runtime's line holds one fault's message, and a line of a fault's
# words repeated (a 16 KiB paste of "may ... illegal memory access") is prose; reading every match over its window cost
# the line's length times the window (since the review of batches 48/49). Past them a match is read only where a
# runtime's own message stands: right after an error's words or a colon (_FAULT_ERROR_BEFORE, whose words and quotes
# reach at most _ERROR_WORDS_REACH characters back: "resulted in" and three), so a long paste's mentions cost a few
# characters each and the runtime's line after them still decides (since batch 51).
_FAULT_WORDS_READ = 16
_ERROR_WORDS_REACH = 16


def _fault_stated(text: str) -> re.Match[str] | None:
    """The first _FAULT match of a line that states a fault happened (_fault_stated_on_line), each of its joined lines
    read on its own when the line joins a log's lines with escaped newlines (_ESCAPED_NEWLINE)."""
    for part in _joined_lines(text):
        m = _fault_stated_on_line(part)
        if m is not None and not _fault_forms_listed(part):
            return m
    return None


# A line that names one fault of the table by both its driver's and its runtime's name, or by one name twice, lists
# the fault's forms: an error guide's row ("CUDA error: the launch timed out and was terminated cudaErrorLaunchTimeout:
# ... CUDA_ERROR_LAUNCH_TIMEOUT Display driver stopped responding ...", batch 57's 1243) or its title glued to its
# first sentence ("cudaErrorLaunchTimeout (702)cudaErrorLaunchTimeout (error code 702) occurs when ..."). A program
# prints one of them once, with the text after it at most: cupy's "CUDADriverError: CUDA_ERROR_X: <text>"
# (cupy_backends/cuda/api/driver.pyx), its runtime's "cudaErrorX: <text>" (runtime.pyx), cuda-samples' helper_cuda.h
# "code=%d(%s)", thrust's "<what>: cudaErrorX: <text>", JAX's and TensorFlow's "CUDA_ERROR_X: <text>" (review R54).


def _fault_forms_listed(text: str) -> bool:
    """The line names one table fault (_CUDA_FAULT_NAMES) twice, in two of its names or one name again."""
    if "_ERROR_" not in text and "cudaError" not in text:
        return False
    seen: set[str] = set()
    for m in _FAULT_NAME_ALONE.finditer(text):
        fault = _CUDA_FAULT_NAMES[m.group()]
        if fault in seen:
            return True
        seen.add(fault)
    return False


def _fault_stated_on_line(text: str) -> re.Match[str] | None:
    """The first _FAULT match of a line that states a fault happened: a fault printed by its name alone, or by a text
    only the table holds, is not one in a definition or after a word of possibility. The first _FAULT_WORDS_READ
    matches are read in full, later ones only where a runtime's message stands (after an error's words or a colon),
    so a long paste that mentions the words many times before the runtime's line still decides on that line, at a
    cost that grows with the line, not its square."""
    for i, m in enumerate(_FAULT.finditer(text)):
        if (i >= _FAULT_WORDS_READ
                and _FAULT_ERROR_BEFORE.search(text, max(0, m.start() - _ERROR_WORDS_REACH), m.start()) is None):
            continue
        if m.group("named") is None:
            if not (_BUS_LOSS_WORDS.fullmatch(m.group()) and "NVRM" in text) and _fault_mentioned(text, m):
                continue
            if m.group().startswith("hipError") and (
                    _FAULT_DEFINITION.match(text, m.end())
                    or _FAULT_DEFINED_BEFORE.search(text, max(0, m.start() - _MENTION_WINDOW), m.start())):
                continue    # HIP's enum or a header's #define of its names (review R54), as the CUDA names' below
            return m
        if (_FAULT_DEFINITION.match(text, m.end())
                or _FAULT_DEFINED_BEFORE.search(text, max(0, m.start() - _MENTION_WINDOW), m.start())):
            continue
        if not _fault_mentioned(text, m):
            return m
    return None

# A fault's words that stand as one item of a list on a line, not as the line's own message: after an opening
# parenthesis or bracket, a comma or a semicolon (behind the runtime's "CUDA error: " and a quote), as a handbook's
# "errors that aren't strictly OutOfMemoryError but are caused by VRAM pressure (CUDNN_STATUS_NOT_INITIALIZED, CUDA
# error: an illegal memory access was encountered)" (batch 57's 1247), a retry list a program logs ("OOM-adjacent
# errors retried: CUDNN_STATUS_NOT_INITIALIZED, CUDA error: ..."), a setting's value ("retry_on_errors: ['CUDA
# error: ...', ...]"), or in quotes after a prose word ("long kernels can fail with 'CUDA error: ...'"). Where the
# runtime prints its message it heads the line or follows an error's words, a number or a colon (torch's
# "RuntimeError: CUDA error: ...", NCCL's "Cuda failure 'the launch timed out and was terminated'", NCCL WARN's
# "Cuda failure 702 '...'", xmrig's "failed with error <...>:440 \"...\""), which this does not read as listed. Such
# a list yields to a program's OOM in the same tail (classify; review R54).
_FAULT_LIST_HEAD = re.compile(r"(?:(?:CUDA|Cuda|HIP|hip)\s+error\s*:\s*)?$")
_FAULT_LISTED_BEFORE = re.compile(r"(?:[(\[,;]\s*[`'\"“‘]?|(?<![\w.:])(?!(?i:errors?|failures?|failed|exception)\b)"
                                  r"[A-Za-z]+\s+[`'\"“‘])$")


def fault_listed(text: str) -> bool:
    """The fault a line states (_fault_stated) stands as one item of a list or a quote in prose (_FAULT_LISTED_BEFORE),
    not as the line's own message."""
    m = _fault_stated(text)
    if m is None:
        return False
    head = _FAULT_LIST_HEAD.search(text, max(0, m.start() - 16), m.start())
    start = head.start() if head is not None else m.start()
    return _FAULT_LISTED_BEFORE.search(text, max(0, start - 40), start) is not None


# The CUDA faults by number and the text each is given (_CUDA_FAULTS): a program that prints only the number
# (PhysX, below) is read through this table.
CUDA_FAULT_CODES: dict[int, str] = {code: text for code, _, _, text in _CUDA_FAULTS}
# the display watchdog's fault (cuda.h's CUDA_ERROR_LAUNCH_TIMEOUT), whose hint names the watchdog (_fault_verdict)
CUDA_LAUNCH_TIMEOUT = 702
# HIP's name for the launch timeout (_FAULT) -> the runtime's text, so its hint names the watchdog too
_HIP_FAULT_NAMES = {"hipErrorLaunchTimeOut": CUDA_FAULT_CODES[CUDA_LAUNCH_TIMEOUT]}
# pycuda's own words (before CUDA 6.0, _FAULT) for two faults -> the runtime's text, as the summary gives it
_PYCUDA_LAUNCH_FAULTS = {"launch timeout": f"{CUDA_FAULT_CODES[CUDA_LAUNCH_TIMEOUT]} (pycuda: launch timeout)",
                         "launch failed": f"{CUDA_FAULT_CODES[719]} (pycuda: launch failed)"}
# NVIDIA PhysX (GPU rigid bodies under Isaac Sim, Isaac Lab, Omniverse) reports a failed CUDA call with the
# driver's CUresult as a bare number, in its own words (NVIDIA-Omniverse/PhysX 5.6: PxgNarrowphaseCore.cpp
# "Fetching GPU Narrowphase failed! %d" / "Synchronizing GPU Narrowphase failed! %d", PxgArticulationCore.cpp
# and PxgTGSCudaSolverCore.cpp "GPU artiPropagateImpulses2 fail to launch kernel!! %i", PxgCudaUtils.h
# "SynchronizeStreams cuEventRecord failed with error %i", PxgKernelLauncher.h "GPU kernel '%s' failed to launch
# with error %u!!" / "... execution failed with error %u!", "getRigidDynamicData: CUDA error, code %u",
# PxgSimulationController.cpp "PhysX Internal CUDA error. Simulation can not continue! Error code %i!",
# CudaContextManager.cpp "Failed to unload CUDA module data, returned %i." and "... failed with error code %i!"),
# as omni.physx logs them ("PhysX error: %s, FILE %s, LINE %d": PhysXErrorCallback.h, the message's own newline
# putting ", FILE ..." on the next line) or the SDK's default callback does ("FILE (LINE) : internal error :
# MSG": ExtDefaultErrorCallback.cpp). Only a fault's number decides (CUDA_FAULT_CODES: 700, the illegal address
# of a contact or articulation kernel, is the one seen); another result (400, an invalid handle; 2, an OOM,
# which omni.physx itself sets apart) or a launch failure without a number decides nothing.
# The words between the opening and the number never run past another opening (round 22): the search's first
# opening with a number after it on the line is the last opening before that number, whose words hold no other one,
# so the number read is the same; an unbounded ``.*?`` read from every opening to the line's end cost the square of
# a line of openings with no number after them.
_PHYSX_OPENING = r"(?:\bPhysX\b|\(\d+\) : (?:internal error|abort) : )"
_PHYSX_CUDA_CODE = re.compile(_PHYSX_OPENING + r"(?:(?!" + _PHYSX_OPENING + r").)*?"
                              r"(?:failed!|!!|\bwith error(?: code)?|CUDA error, code|Error code"
                              r"|CUDA module data, returned) (\d+)\b")


def _fault_words(matched: str) -> str:
    """The runtime's words for a fault _FAULT matched: a fault printed by its name alone is given its text
    ("an illegal instruction was encountered (CUDA_ERROR_ILLEGAL_INSTRUCTION)")."""
    text = _CUDA_FAULT_NAMES.get(matched) or _HIP_FAULT_NAMES.get(matched)
    return f"{text} ({matched})" if text is not None else matched


def physx_cuda_fault(text: str) -> int | None:
    """The CUDA fault result (CUDA_FAULT_CODES) a PhysX error line reports by number, if it reports one."""
    m = _PHYSX_CUDA_CODE.search(text)
    if m is None:
        return None
    code = int(m.group(1))
    return code if code in CUDA_FAULT_CODES else None


def launch_blocking_env(fault_lines: Iterable[str], advice_lines: Iterable[str] = ()) -> dict[str, str]:
    """The environment a ``cuda_fault`` restart runs with so that the fault is reported where it
    happens: the value the runtime advised in the log when it did (the last advice wins), else the
    blocking switch of the runtime the fault text names (Ascend's, ROCm's, else CUDA's)."""
    advice = [m.groups() for text in advice_lines for m in _LAUNCH_ADVICE.finditer(text)]
    if advice:
        name, value = advice[-1]
        return {name: value}
    texts = list(fault_lines)
    for name, value, names_runtime in BLOCKING_SWITCHES:
        if names_runtime is not None and any(names_runtime.search(t) for t in texts):
            return {name: value}
    name, value, _ = BLOCKING_SWITCHES[-1]
    return {name: value}
# A GPU gone from the bus: the kernel's "NVRM: GPU 0000:81:00.0: GPU has fallen off the bus.",
# the probe's "NVRM: ... has fallen off the bus and is not responding to commands." (no Xid line),
# nvidia-smi's "GPU is lost" and "Unable to determine the device handle for GPU...: Unknown Error":
# like Xid 79, only a reset brings it back.
_KERNEL_ASSERT = re.compile(r"(\w+: (?:block: \[[\d, ]+\], thread: \[[\d, ]+\] )?(?:Device-side )?[Aa]ssertion [`'][^`']+[`'] failed)")
_GPU_GONE = re.compile(r"[Ff]allen off the bus|[Ff]ell off the bus|GPU is lost|" + _DEVICE_HANDLE_LOST)
# The same loss as a person retells it (batch 44): the driver prints it with the article (Xid 79's text in the
# driver's Xid string table, "GPU has fallen off the bus", and NVML's GPU_IS_LOST text "The GPU has fallen off the bus
# or has otherwise become inaccessible"), matched above with "fell off the bus"; a report drops the article ("XID error 79 — \"GPU fell off bus.\"") or names the PCIe bus or
# another verb ("one GPU dropped off the PCIe bus at step 900"). Only the past, a loss that happened: the present
# ("when a GPU falls off the bus") is a general statement. These words are a person's, never the driver's, so they
# decide only as a statement, like a segfault told in words: no denial, possibility or fix before them in their
# sentence ("If a GPU dropped off the bus, ...", "Fixed a crash when a GPU fell off bus"), not a program's own
# log-level line (a monitor's start-up banner), not an option's help text ("  --drain  drain the node once a GPU
# fell off bus").
# Only a GPU's loss: a GPU named in the words' clause ("one of the H100s dropped off the PCIe bus"; not "the
# ConnectX-6 NIC dropped off the PCIe bus" of mlx5_core), and no value or a monitor's word after them: a health
# check's field ("GPU fell off bus alerts: 0", "GPU fell off bus: no", "GPU fell off bus check PASSED") counts
# losses, it tells none (since the review of batches 43-44).
_GPU_GONE_TOLD = re.compile(r"\b(?:[Ff]allen|[Ff]ell|[Dd]ropped) off (?:the )?(?:PCI(?:e|-E)? )?bus\b"
                            r"(?!\s*(?:[:=]|\d|(?i:alerts?|checks?|counts?|pass(?:ed)?|ok|no|events?|errors?"
                            r"|status|total)\b))")
# where the clause of the words begins: after the last comma, semicolon, colon and space, bracket or dash before them
_CLAUSE_END = re.compile(r"[,;(\[—–]|:\s|\s-\s")
_GPU_SUBJECT = re.compile(r"(?i:gpu)|显卡|\b(?:[ABHLTVP]\d{2,3}|G[HB]\d{3}|B\d{3}|MI\d{3}|RTX|GTX|GeForce|Quadro"
                          r"|Tesla|TITAN|Titan|Radeon|Instinct|cuda:\d)|(?<!network )(?<!NIC )\bcards?\b")
# an option's help text: the line starts with the option ("  --drain-on-bus-loss  drain the node when ...")
_HELP_OPTION = re.compile(r"^\s*-{1,2}[A-Za-z][\w-]*(?:[ =,]|$)")


def _clause_start(text: str, pos: int, lo: int = 0) -> int:
    """Where the clause holding text[pos] begins: after its sentence's start or the last _CLAUSE_END before pos
    (``lo`` when neither is after it)."""
    return max([_sentence_start(text, pos, lo)] + [c.end() for c in _CLAUSE_END.finditer(text, lo, pos)])


# A glossary's definition of the loss (since batch 67): the words or the Xid in a sentence whose verb defines a term,
# "is" or "refers to" with a kind of condition as its complement ("GPU fallen off bus is the failure condition
# reported as Xid 79, where the GPU becomes completely unresponsive to the host system over the PCIe bus.",
# factryze.ai's glossary entry, 1446), its subject no run of the writer's (no first person in the sentence): the
# sentence names what the term stands for, no loss that happened. "reported as Xid 79" there is how the condition is
# reported, not a report (xid_told). A report's "The GPU fell off the bus and the node is in a bad state" has its
# copula after a past verb of its own and a first person or a place most often; its "is in a ... state" has no
# article right after the copula and is not one; a sentence that narrates ("Xid 79 happened on node 3, which is a
# serious condition": _TERM_NARRATED) is a report whatever its copula says.
_TERM_DEFINED = re.compile(r"(?i)\b(?:is|are|refers? to|describes?)\s+(?:a|an|the)\s+(?:[\w-]+\s+){0,2}?"
                           r"(?:condition|state|situation|failure mode|event)\b")
_TERM_WINDOW = 160    # a definition's sentence is short: its term and copula lie this near the words
_TERM_NARRATED = re.compile(r"(?i)\b(?:was|were|happened|occurred|hit|got|saw|seen|crashed|failed|died|killed|hung"
                            r"|aborted)\b")


def _term_defined(text: str, pos: int) -> bool:
    """The sentence holding text[pos] defines a term (_TERM_DEFINED), no first person nor narration in it."""
    lo, hi = max(0, pos - _TERM_WINDOW), min(len(text), pos + _TERM_WINDOW)
    start = _sentence_start(text, pos, lo)
    end = _SENTENCE_END.search(text, pos, hi)     # within a window either side: a long line costs its length
    stop = end.start() if end else hi
    return (_TERM_DEFINED.search(text, start, stop) is not None
            and _FIRST_PERSON.search(text, start, stop) is None and _TERM_NARRATED.search(text, start, stop) is None)


def gpu_gone_told(text: str) -> bool:
    """A line that tells, in a person's words, that a GPU fell off the bus (not the driver's own line, which _FAULT
    reads, nor a mention: a hedge, a fix, a program's log-level line, an option's help, a term's definition)."""
    if not any(w in text for w in _GPU_GONE_TOLD_WORDS):
        return False
    m = _GPU_GONE_TOLD.search(text)
    if m is None:
        return False
    clause = _clause_start(text, m.start())
    return (_GPU_SUBJECT.search(text, clause, m.start()) is not None and not _told_only(text, m.start())
            and not _term_defined(text, m.start()))
_XID = re.compile(r"NVRM: Xid \(((?:PCI:)?[0-9a-fA-F:.]+)[^)]*\): (\d+),")
# A tool's rendering of the driver's Xid line, right under that line: leptonai gpud's reason for an Xid event
# (components/accelerator/nvidia/xid/health_state.go l.143-174 at 4a8de33a: "XID %d", for 144-150 "XID %d.%d (err status
# 0x%08x)", then the catalogue's mnemonic or description and "detected on GPU <bus id>"). The driver's line with the
# same Xid rendered on the next line is a parser's input shown with its output (a monitor's pull request quoting
# "> NVRM: Xid (PCI:0000:01:00): 144, SAW_MVB Nonfatal ..." over "- XID 144.0 (err status 0x00000008)
# NVLINK_SAW_ERROR detected on GPU PCI:0000:01:00", leptonai/gpud #1160, batch 66): an example, neither line is a
# node's event. The rendering alone, a monitor's event with no driver's line above it, is still a told Xid (950).
_XID_RENDERED = re.compile(r"(?:[-*•+]\s+)?[`*_]*XID (?P<xid>\d+)(?:\.\d+ \(err status 0x[0-9a-fA-F]+\))?[ (]"
                           r"[^\n]{0,300}?\bdetected on\b")
# An Xid a person tells by its number alone, where the driver's line was not pasted ("we hit Xid 79 on node 3",
# "Xid 48 on GPU 2 then the job died", "saw an XID error 79 in dmesg"): read as the driver's line with that number
# would be (RESET_XIDS need a reset, another Xid is a fault as any: _fault_verdict), only where the person states it
# happened: a verb of happening before it in its sentence (_XID_HAPPENED) or the place or the time after it
# (_XID_HAPPENED_AFTER). Not an explainer ("Xid 79 means the GPU fell off the bus", "**Xid 13** — user application
# fault", a catalogue's table), nor a list of Xids to watch ("alert on Xid 48, 79 and 95"), nor the told rules'
# mentions: a hedge or a fix before it, a log level's line, an option's help, a setting's value (since batch 45).
_XID_TOLD = re.compile(r"(?i)\bxid(?:[ _-]?(?:error|event)s?)?\s*[:#]?\s*(\d{1,3})\b")
_XID_HAPPENED = re.compile(r"(?i)\b(?:hit|hits|hitting|got|gets|getting|see|sees|saw|seeing|seen|had|caught"
                           r"|encounter(?:s|ed|ing)?|observed|logged|reported|threw|throws|triggered|show(?:s|ed)"
                           r"|printed|experienc(?:ed|ing))\b")
_XID_PLACE = r"(?:node|host|server|machine|GPU|gpu|rank|device|card)"
_XID_HAPPENED_AFTER = re.compile(r"\s*(?:/\s*\d{1,3}\s*)?(?:\([^()\n]{0,80}\)\s*)?,?\s*(?:on (?:the |one |our |that |this |a )?"
                                 r"(?P<place>" + _XID_PLACE + r"(?:[\s-]++[\w.:-]*\w)?)\b"
                                 r"|(?:happened|occurred|appeared|showed up|was logged|were logged|in dmesg"
                                 r"|in (?:the )?kernel log|then)\b)")
_XID_EXPLAINED = re.compile(r"\s*(?:means|is|are|indicates|stands for|=|—|–)(?:\s|$)")
# A monitor's or a health check's field, not a report: a value or a state after the Xid and its place ("Xid 79 on GPU
# 0: 0", "(Xid 79 on GPU 0: none)", "Xid 79 on GPU 0000:3B:00.0 : N/A", "Xid 79 on GPU 0 since boot: 0", "Xid 79 on
# node-3: 0 events"), a comment's or a watcher's words before it ("# trigger on Xid 48", "health: Xid 79 ...", "alert
# on"), a count of none before it ("saw 0 Xid 79 events"); since the review of batch 45.
# A value is a number that ends its clause (a count: "0", "0 events", "3,"), not the driver's payload a report
# retells ("Xid 31: 0x1e MMU fault"); a count's or a total's name takes its colon right after it ("events: 0"),
# never one a few words on ("Xid 79 events on node-3: the job died" is a report). A comment is "# " at the line's
# start or after a space (not "Job #4411"); the watcher's words count only in the Xid's own clause ("The health
# check passed at 09:00, then we hit Xid 79"; "Our alert fired: we hit Xid 48" are reports), or in a label that
# ends right before the Xid ("node-3 health: Xid 79 on GPU 0", "alert: Xid 48 ..."). A count of none is no
# GPU's or rank's number ("dmesg showed GPU 0 Xid 79", "rank 0 Xid 13"); since the review of the told-Xid refusals.
# A count of none after the Xid's count noun and where it was counted is a field too, with a verb before it or not: "We
# saw Xid 79 events on node-3: 0", "Xid 79 errors on GPU 2 since boot: none", "... on node-3 (count: 0)": a monitor's
# report, or a person's, that none happened (since the review of batch 46's mends); a count above none there ("Xid 79
# events on node-3: 4") or words ("...: the job died") are a report of Xids that did.
# A zero that starts a list of numbers ("0, 3 and 5", "0,1") is the first of them, no count (since the review of
# batch 47).
_XID_NONE = (r"(?:0(?!\s*,\s*\d|\s+(?:and|&)\s+\d)|zero|none|no|n/?a)(?:\s+(?:events?|times|errors?|hits?))?"
             r"\s*(?:$|[,;.|)])")
# Where the Xids were counted: a place with its own name or number ("node-3", "GPU 2", "GPU 0000:3B:00.0"), or every
# place of a kind ("each GPU", "all GPUs", "the node"). A numbered kind alone before the colon ("on GPU: 0", "on
# GPUs: 0, 3 and 5", "on GPU | 0 |") takes its number there: a GPU's, a rank's, no count (since the review of batch
# 47). The name's separator is taken whole (possessive: a run of dashes is read once, not split every way; the
# review of batch 47 timed 8,000 dashes at 1.3 s before).
_XID_PLACE_ID = r"(?:[\s-]++[\w.:-]*\w)"
_XID_COUNTED_PLACE = (r"(?:(?:the |each |every |all )" + _XID_PLACE + r"s?" + _XID_PLACE_ID + r"?"
                      r"|" + _XID_PLACE + r"s?" + _XID_PLACE_ID
                      + r"|(?:node|host|server|machine)s?)")
_XID_VALUE_AFTER = re.compile(r"(?i)\s*(?:[:=|]\s*(?:\d+(?:\s+(?:events?|times|errors?|hits?))?\s*(?:$|[,;|)])"
                              r"|none\b|n/?a\b|ok\b|no\b|not\b|-)"
                              r"|(?:counts?|since boot|events?|total)\s*[:=|]"
                              r"|[ _-]?(?:events?|errors?|hits?|counts?)"
                              r"(?:\s+(?:on|for|across) " + _XID_COUNTED_PLACE
                              + r"|\s+since boot|\s+(?:today|in the last [\w ]{1,20}?))*"
                              r"\s*(?:[:=|]|\(\s*(?:counts?|total)\s*[:=])\s*" + _XID_NONE + r")")
_XID_COMMENT_BEFORE = re.compile(r"(?:^|(?<=\s))#\s")
_XID_WATCH_WORD = r"\b(?:trigger(?:s|ed)?|alerts?|watch(?:es|ed)?|polic(?:y|ies)|health)\b"
_XID_WATCHED_BEFORE = re.compile(r"(?i)" + _XID_WATCH_WORD)
_XID_WATCH_LABEL = re.compile(r"(?i)" + _XID_WATCH_WORD + r"[^,;.:]{0,20}:\s*$")
_XID_NONE_BEFORE = re.compile(r"(?i)(?<!gpu\s)(?<!rank\s)(?<!device\s)(?<!cuda:)\b(?:0|no|zero)\s+$")


# The Xids a person lists under a line that says they happened and introduces the list with a colon ("`dmesg` shows
# repeated NVIDIA Xid events, all on the same GPU (...):" then "  - `Xid 48 / 171`: uncorrectable double-bit ECC ...",
# vllm-backport #62, batch 45): each item's Xid happened, whatever the item then explains. The list ends at the
# first line that is no list item. An explainer's list has no such line above it ("### Why the specific Xids
# matter" then "- **Xid 13** — user application fault").
_XID_EVENTS_TOLD = re.compile(r"(?i)\bxids\b|\bxid[ _-]?(?:error|event)s\b")
_LIST_ITEM = re.compile(r"[-*+]\s+|\d{1,2}[.)]\s+")
_XID_ITEM = re.compile(r"(?i)(?:[-*+]|\d{1,2}[.)])\s+[*_`]*xid(?:[ _-]?(?:error|event))?\s*[:#]?\s*(\d{1,3})\b")


# An Xid told with a time of its own (since batch 46): "we hit Xid 31 on gpu 0 last week" above a real OOM is the
# node's history, no fault of this attempt. A past time in the Xid's sentence: a day, week, month or year gone ("last
# week", "yesterday", "3 days ago", "earlier this month", "back in March"), or another run's ("on the previous run",
# "before the driver update"). Such an Xid decides only where no exception was printed after it (a report's "last
# night we saw an XID error 95 in dmesg; NCCL timed out right after" tells this run's crash): what the run raised
# after it outranks it, as with the other failures told in words. "today", "just now", "at step 1200" are this run's.
_MONTH = r"(?:January|February|March|April|May|June|July|August|September|October|November|December)"
_XID_OTHER_TIME = re.compile(r"(?i)\b(?:last (?:week|month|year|night|weekend|time|run|job|quarter)|yesterday"
                             r"|(?:a few|a couple of|several|\d+|two|three|four|five) (?:days|weeks|months|years) ago"
                             r"|a (?:day|week|month|year) ago|earlier this (?:week|month|year)"
                             r"|(?:back )?in " + _MONTH + r"\b|on the previous (?:run|job|attempt)"
                             r"|before the (?:driver|firmware|kernel) (?:update|upgrade))\b")
# A catalogue's row keyed by the Xid (a runbook's "| Xid 79 | GPU has fallen off the bus | reset |"): the row names
# what the Xid stands for and what to do, no fault that happened (since batch 46). An incident table's row keyed by
# a node or a time ("| node3 | Xid 79 | 2026-01-02 |") has another first cell and is not one.
# Since batch 67 also a row keyed by the bare number under a table's "| XID | Meaning |" header, where the next cell
# is the driver's own string for that Xid ("| 79 | GPU has fallen off the bus | Power, PCIe, riser, or thermal kill
# |", a vendor's article, 1445): Xid 79's entry in the driver's string table (open-gpu-kernel-modules
# src/common/sdk/nvidia/inc/nverror.h, ROBUST_CHANNEL_ERROR_STR_PUBLIC_PUBLISHED, "GPU has fallen off the bus" for
# ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS (79)), the one Xid string the told words read. An incident's number
# before other words ("| 3 | GPU 2 fell off the bus at step 900 |") is no such row.
_XID_CATALOGUE_ROW = re.compile(r"\s*\|\s*[*_`]*(?:(?i:xid)[\s_-]*#?\d{1,3}[*_`]*\s*\|"
                                r"|79[*_`]*\s*\|\s*[*_`]*(?:The )?GPU has fallen off the bus\.?[*_`]*\s*\|)")


def xid_other_time(text: str, pos: int) -> bool:
    """A past time of another run (_XID_OTHER_TIME) in the sentence of the Xid at text[pos]."""
    start = _sentence_start(text, pos)
    end = _SENTENCE_END.search(text, pos)
    return _XID_OTHER_TIME.search(text, start, end.start() if end else len(text)) is not None


def xid_events_told(text: str) -> bool:
    """A line that says Xids happened (no number) and opens a list of them with its closing colon."""
    m = _XID_EVENTS_TOLD.search(text)
    return (m is not None and text.rstrip().endswith(":")
            and _XID_HAPPENED.search(text) is not None and not _told_only(text, m.start()))


def xid_listed(text: str) -> int | None:
    """The Xid number an item of such a list begins with."""
    m = _XID_ITEM.match(text)
    return int(m.group(1)) if m is not None else None


def xid_told(text: str) -> tuple[int, str] | None:
    """(Xid number, where) of an Xid a person states happened, told by its number alone (not the driver's
    ``NVRM: Xid`` line, which _XID reads; not an explanation, a list to watch, a hedge, a fix, a log line, help)."""
    for m in _XID_TOLD.finditer(text):
        # each match reads only the window before it, so a long line of fields costs its length, not its square
        lo = max(0, m.start() - _MENTION_WINDOW)
        after = _XID_HAPPENED_AFTER.match(text, m.end())
        if _XID_EXPLAINED.match(text, m.end()) or not (after or _XID_HAPPENED.search(text, _sentence_start(
                text, m.start(), lo), m.start())):
            continue
        if int(m.group(1)) in XID_NO_FAULT or _told_only(text, m.start()):
            continue
        if (_XID_VALUE_AFTER.match(text, m.end()) or (after is not None and _XID_VALUE_AFTER.match(text, after.end()))
                or _XID_COMMENT_BEFORE.search(text, lo, m.start())
                or _XID_WATCHED_BEFORE.search(text, _clause_start(text, m.start(), lo), m.start())
                or _XID_WATCH_LABEL.search(text, lo, m.start())
                or _XID_NONE_BEFORE.search(text, lo, m.start())
                or _term_defined(text, m.start())):   # last: it reads the sentence both ways
            continue
        place = after.group("place") if after is not None else None
        return int(m.group(1)), place or "a GPU"
    return None
# Xid 94/95's payload, the driver's error-containment report (open-gpu-kernel-modules
# src/nvidia/src/kernel/gpu/arch/ampere/kern_gpu_error_cont_ga100.c, _gpuGenerateErrorLog; before it
# kern_gpu_ga100.c): "%s: %s (0x%x). RST: %s, D-RST: %s", the first %s "Contained" (Xid 94) or "Uncontained"
# (Xid 95), then the error's name and where it was (an engine "(0x%x)", an LTC "(0x%x, 0x%x)", DRAM "(0x%x, 0x%x).
# physAddr: 0x%08llx", a VF, or nothing: "%s: %s. RST: ..."), RST and D-RST saying whether the driver marked the GPU
# for a reset (bGpuResetReqd) or a drain and reset (bGpuDrainAndResetReqd). The payload is the fault behind
# "NVRM: Xid (PCI:...): 94, pid=N, " or retold without that head (a forum title, a monitoring event's text); with
# RST or D-RST "Yes" no restart on that GPU can help, whatever the Xid number said.
_XID_CONTAINMENT = re.compile(r"\b(?P<kind>Contained|Uncontained): (?P<what>[^.\n]{1,80}?)\."
                              r"(?: physAddr: 0x[0-9a-fA-F]+)? RST: (?P<rst>Yes|No), D-RST: (?P<drst>Yes|No)\b")
_CONTAINMENT_XID = {"Contained": 94, "Uncontained": 95}

# An access violation ends a Windows process as SIGSEGV ends a POSIX one (STATUS_ACCESS_VIOLATION, NTSTATUS
# 0xC0000005): CPython's faulthandler prints it as "Windows fatal exception: access violation" before the Python
# stack (Modules/faulthandler.c, faulthandler_exc_handler, EXCEPTION_ACCESS_VIOLATION; its other Windows
# exceptions, "stack overflow", "page error", "int divide by zero", ..., are not this), and launchers, IDEs and
# shells print the exit status in its three spellings: 0xC0000005 (also with its name, Rust's "exit code:
# 0xc0000005, STATUS_ACCESS_VIOLATION"), unsigned 3221225477 (cmd's %ERRORLEVEL%, PowerShell's $LASTEXITCODE,
# ComfyUI's Windows launcher: "[... 3221225477 (0xC0000005)]") and signed -1073741819 (PyCharm: "Process finished with exit
# code -1073741819 (0xC0000005)"); the decimal ones only as an exit status, where no byte count is read as one.
_WIN_ACCESS_VIOLATION = (r"Windows fatal exception: access violation|\bSTATUS_ACCESS_VIOLATION\b|\b0x[Cc]0000005\b"
                         r"|(?i:exit(?:ed with)? code|exit status|return code)[: ]*\(?"
                         r"(?:3221225477|-1073741819)(?!\d)")
_WIN_AV = re.compile(_WIN_ACCESS_VIOLATION)

# a character of Chinese, Japanese or Korean prose or one of their full-width marks (the CJK symbols and punctuation
# block, "、。「」", and the full-width forms, "：，（）")
_CJK_PROSE_MARK = r"[" + _CJK_RANGES + r"\u3000-\u303f\uff00-\uffef]"

_SIG_TEXT = re.compile(
    # torch/csrc/DataLoader.cpp THPModule_errorIfAnyWorkerFails: "DataLoader worker (pid " << pid << ") is killed
    # by signal: " << strsignal(status) << ". ", the one wording since torch 0.4; retold, the pid is dropped
    # ("DataLoader worker is killed by signal: Bus error", an issue title) or a placeholder ("(pid XXX)"), and the
    # final period is lost at the end of a line, or where a Chinese or Japanese write-up goes on right after the
    # quoted line ("终端打印：DataLoader worker (pid XXX) is killed by signal: Bus error或者直接静默卡死", since batch 51)
    r"DataLoader worker (?:\(pid [^)\n]*\) )?is killed by signal: (?P<dl>[A-Za-z ]+?)"
    r"(?:\.|\s*$|(?=" + _CJK_CHAR.pattern + r"|[\u3000-\u303f\uff00-\uffef]))"
    # the DataLoader's SIGBUS: the worker's own handler (torch/csrc/DataLoader.cpp, "ERROR: Unexpected bus
    # error encountered in worker. This might be caused by insufficient shared memory (shm).") and the
    # advice the parent adds to "is killed by signal: Bus error." for SIGBUS alone ("It is possible that
    # dataloader's workers are out of shared memory. Please try to raise your shared memory limit."),
    # which stays when the head line was retyped ("pid XXX") or lost
    r"|(?P<shm>Unexpected bus error encountered in worker|dataloader's workers are out of shared memory)"
    r"|Fatal Python error: (?P<fatal>Segmentation fault|Bus error|Aborted)"
    # the kernel's OOM killer (mm/oom_kill.c), new and old wordings, global and cgroup: "Out of memory:
    # Killed process N (comm)", "Memory cgroup out of memory: Kill process N (comm) score S or sacrifice
    # child", "comm invoked oom-killer: gfp_mask=...", "oom_reaper: reaped process N"
    r"|(?P<oomkill>(?:Memory cgroup )?[Oo]ut of memory: Kill(?:ed)? process \d+|invoked oom-killer: "
    r"|oom_reaper: reaped process \d+"
    # systemd-oomd, the user-space OOM killer Ubuntu 22.04 and Fedora enable by default, killing a whole cgroup (a
    # terminal's scope, a session, a service) for memory pressure or for memory and swap used, in its own notice
    # (src/oom/oomd-manager.c, monitor_memory_pressure_contexts_handler and monitor_swap_contexts_handler: log_notice
    # "Killed %s due to memory pressure for %s being %lu.%02lu%% > %lu.%02lu%% for > %s with reclaim activity",
    # "Killed %s due to memory used (%"PRIu64") / total (%"PRIu64") and swap used (%"PRIu64") / total (%"PRIu64") being
    # more than ..."; since v256 "Marked %s for killing due to ...", commit 00a99cb4): the cgroup's path and the cause
    # right after it, behind whatever prefix the journal gives it (journalctl's localized date: "1217 10:04:41 user
    # systemd-oomd[588]: Killed ..."); the kernel does not count its kills (_no_oom_kill_proven; since batch 70)
    r"|(?:Killed|Marked) /\S* (?:for killing )?due to (?:memory pressure for /\S* being \d+\.\d+% >"
    r"|memory used \(\d+\) / total \(\d+\) and swap used|swap used \(\d+\) / total \(\d+\) being more than))"
    r"|(?:^|: line \d+: +\d+ +)(?P<shell>Killed|Segmentation fault|Bus error|Aborted)"
    r"(?: +\(core dumped\))?(?:\s|$)"
    # the same shell line quoted in, or glued to, Chinese or Japanese prose ("用户报告遇到了"Segmentation fault (core
    # dumped)"错误", "之后出现：Segmentation fault (core dumped)，..."): bash's report of a foreground job a signal ended
    # (jobs.c, wait_for: fprintf(stderr, "%s", j_strsignal(WTERMSIG(status))), then _(" (core dumped)") if
    # WIFCORED(status); util-linux's su prints strsignal()'s words with the same note) keeps its core-dump note, which
    # no person adds to a name they tell, so only a name that can dump core with the note after it, right
    # after a CJK character or full-width mark, bare or behind one quote; the prose's limits are read in _text_signal
    # (since batch 60)
    r"|(?:(?<=" + _CJK_PROSE_MARK + r")|(?<=" + _CJK_PROSE_MARK + r"[\"“「『`'‘]))"
    r"(?P<cjkshell>Segmentation fault|Bus error|Aborted)(?= \(core dumped\))"
    r"|SignalException: Process \d+ got signal: (?P<agent>\d+)"
    r"|died with <Signals\.SIG[A-Z0-9]+: (?P<cpe>\d+)>"
    r"|Caught signal (?P<caught>\d+)\b"
    # UCX's fatal-signal handler (UCX, under NCCL/MPI/vLLM: ucs/debug/debug.c ucs_debug_handle_error_signal,
    # "Caught signal %d (%s: %s%s)" with strsignal(), the si_code's cause and, for SIGSEGV, " at address %p"), its
    # message retold without the head ("Segmentation fault: address not mapped to object at address 0x3800" in an
    # issue title): SIGSEGV's SEGV_MAPERR / SEGV_ACCERR causes and SIGBUS's BUS_ADRALN / BUS_ADRERR / BUS_OBJERR
    r"|(?P<ucx>Segmentation fault(?=: (?:address not mapped to object|invalid permissions for mapped object) "
    r"at address )|Bus error(?=: (?:invalid address alignment|nonexistent physical address"
    r"|object-specific hardware error)\b))"
    # (since batch 75 also the line retyped with its "=" dropped or unspaced, "exits with return code -9" in an issue
    # title, OpenRLHF #841's "Sigkill, process exits with return code -9", tests/crash/public 1599; "return code=-9";
    # DeepSpeed 0.16.3 deepspeed/launcher/launch.py l.317-325 prints only the spaced "= ", so these are a person's)
    r"|exits with return code(?: ?= ?| )-(?P<rcneg>\d+)\b"
    r"|\bKilled: (?P<killedn>\d+)\b"
    # macOS's shells name a signal as Apple's libc strsignal() words it, the name and its Darwin number ("Killed: 9",
    # above; "Segmentation fault: 11", "Bus error: 10", "Abort trap: 6"; signal.strsignal gives the same there): only
    # a name with its own number (a UCX "Segmentation fault: address not mapped ..." has none); since batch 46
    r"|\b(?P<darwin>Segmentation fault|Bus error|Abort trap): (?P<darwinn>\d+)\b"
    # Slurm's srun names how a task ended: "srun: error: node1: task 3: Segmentation fault"
    r"|srun: error: \S+: tasks? [\d,\-\[\]]+: (?P<srun>Killed|Segmentation fault|Bus error|Aborted)"
    # torchrun's failure entry: "traceback : Signal 11 (SIGSEGV) received by PID 41234" (any case)
    r"|(?i:signal) (?P<recv>\d+) \((?i:sig)[A-Za-z0-9]+\) (?i:received by)(?: (?i:pid) (?P<recvpid>\d+))?"
    # glog's failure signal handler ("*** SIGSEGV (@0x0) received by PID 457 (TID 0x7f...) from PID 0;
    # stack trace: ***") and absl's ("*** SIGSEGV received at time=1745480384 on cpu 3 ***")
    r"|\*\*\* (?P<glog>SIG[A-Z]+)(?: \(@[^)]*\))? received (?:by PID|at time)"
    # a glog/absl CHECK that failed aborts the process ("*** Check failure stack trace: ***")
    r"|\*\*\* (?P<check>Check failure stack trace): \*\*\*"
    # apache-tvm-ffi's SIGSEGV handler (src/ffi/backtrace.cc, TVMFFISegFaultHandler, installed by a library
    # constructor when xgrammar/flashinfer load: vLLM, SGLang, ms-swift) and the older TVM runtime's
    # (src/runtime/logging.cc): the banner, native frames, then SIGSEGV re-raised with the default action
    r"|(?P<tvm>!!!!!!! (?:Segfault encountered|TVM encountered a Segfault) !!!!!!!)"
    # Windows' SIGSEGV: a process ended by an access violation (see _WIN_ACCESS_VIOLATION)
    r"|(?P<winav>" + _WIN_ACCESS_VIOLATION + r")"
    # torch.multiprocessing.spawn: "ProcessExitedException: process 0 terminated with signal SIGKILL"
    r"|process \d+ terminated with signal (?P<spawn>SIG[A-Z]+)"
    # MPI launchers telling how a rank ended (multi-node training under mpirun/mpiexec): Open MPI's PRRTE
    # (prrte src/tools/prte/help-prun.txt [prun:proc-aborted], [prun:proc-aborted-strsignal]: "%s noticed that
    # process rank %lu with PID %lu on node %s exited on signal %d (%s).", the first rank that did); MPICH's
    # Hydra (src/pm/hydra/mpiexec/mpiexec.c: "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: %s (signal %d)",
    # older "APPLICATION TERMINATED ..."; Intel MPI's Hydra "=   KILLED BY SIGNAL: 9 (Killed)" in its BAD
    # TERMINATION block). Hydra's own block line "=   EXIT CODE: %d" (pmiserv_cb.c) prints the raw wait status
    # of the signalled rank, 9 or 139 alike, and is left to those lines. HPE Cray PALS: _PALS_RANK_END below.
    r"|noticed that process rank \d+ with PID \d+ on node \S+ exited on signal (?P<ompi>\d+)"
    r"|EXIT STRING: [^(\n]*\(signal (?P<hydra>\d+)\)"
    r"|=\s*KILLED BY SIGNAL: (?P<hydrak>\d+)"
    # a shell-style status a wrapper reports for a killed child (128+N): Kubernetes/Flyte "terminated with
    # exit code (137)", docker "exited with code 139", CalledProcessError "returned non-zero exit status 137"
    # (kubectl describe's "Exit Code:\t137" too, k8s.io/kubectl/pkg/describe describeContainerState)
    # (and DeepSpeed's launcher, deepspeed/launcher/launch.py sigkill_handler: f"{cmd} exits with return code = {rc}",
    # whose child is a shell's when the script is one: "... exits with return code = 137"; since the review of batch
    # 46's mends)
    # (since batch 64 also the same status after "status" in the words of the wrappers that print it so: "exited with
    # status 137" and "exited with status code 137" (a Go or Rust launcher's f"{cmd} exited with status {code}"), "exit
    # with status code 137", and Google's training service's own "The replica REPLICA_NAME exited with a non-zero status
    # of EXIT_CODE . Termination reason: REASON ." (Vertex AI, AI Platform Training: its documented message for a user
    # code exit, docs.cloud.google.com .../training/understanding-training-service, "Handle common errors"), whose code
    # is the shell's for a custom container)
    r"|(?:exit(?:ed)? (?:with )?code|exit status|Exit Code|exits with return code ="
    r"|\bexit(?:s|ed)? with (?:a )?(?:non-zero )?status(?: code)?(?: of)?)[: ]*\(?"
    r"(?P<status>1(?:29|3\d|4[0-3]))\)?(?!\d)"
    # the same service's older message with the signal's raw number and its name, as its prebuilt (not custom)
    # containers reported a replica a signal ended ("The replica master 0 exited with a non-zero status of 9(SIGKILL)"),
    # and its out-of-memory message, which names the cause whatever the code ("The replica REPLICA_NAME ran out of
    # memory and exited with a non-zero status of EXIT_CODE .", the page above; AI Platform's "ran out-of-memory and
    # exited with a non-zero status of 9(SIGKILL)"): the replica's host memory, SIGKILL (since batch 64)
    r"|(?P<gcpoom>\bran out[- ]of[- ]memory and exited with a non-zero status of \d+)"
    r"|\bexited with a non-zero status of \d+\((?P<gcpsig>SIG(?:ABRT|BUS|KILL|SEGV))\)"
    # Kubernetes: a container the node's cgroup OOM killer ended, by the reason the kubelet records
    # ("OOMKilled", the container runtime's word): kubectl describe's "Reason:\tOOMKilled" under
    # "State:\tTerminated" / "Last State:", the pod status as JSON or YAML ("reason": "OOMKilled"), kubectl get
    # pods' STATUS column ("trainer-0   0/1   OOMKilled   3   12m") and docker inspect's "OOMKilled": true
    r"|(?P<k8soom>(?i:reason)[\"']?:\s*[\"']?OOMKilled\b|^\S+\s+\d+/\d+\s+OOMKilled\s+\d+"
    r"|\"OOMKilled\":\s*true\b)")
# A segmentation fault a report tells in words rather than pasting a handler's output (an issue title, a PR's
# description, a results table): the signal's names (signal.h's SIGSEGV, glibc's strsignal "Segmentation
# fault", the contraction "segfault" that apache-tvm-ffi's handler prints, "seg fault") in a statement that
# the run got one: after a verb of getting or ending with it ("encounter a segmentation fault", "crashes with
# a SIGSEGV", "results in a segfault"), as a verb itself ("segfaults in crc32_16bytes", "segfaulted at step
# 120"), where it happened ("SIGSEGV in ncclCommInitRank") or a result ("FAIL (SIGSEGV)"). A mention is none:
# another issue's "(get_device_properties segfault on BMG)", a denial or a hedge before it ("no", "may",
# Ray's "potential root causes ... due to SIGSEGV or other unexpected errors"). It decides last, where no
# program's own words do (see classify); since batch 36.
_SEGFAULT_NAME = r"(?:segmentation[ -]fault|seg[ -]?fault|SIGSEGV)"
_SEGFAULT_TOLD = re.compile(
    r"(?i:\b(?:encounter(?:s|ed|ing)?|gets?|getting|got|hit(?:s|ting)?|throw(?:s|n|ing)?|threw|raise[sd]?"
    r"|report(?:s|ed)?|(?:crash|fail|end|die|exit)(?:s|es|ed|ing|d)? with|result(?:s|ed|ing)? in"
    r"|lead(?:s|ing)? to|led to|trigger(?:s|ed)?)\s+(?:an?\s+|the\s+|this\s+)?(?:random\s+|sudden\s+)?"
    + _SEGFAULT_NAME + r"s?\b"
    r"|\bseg-?fault(?:s|ed|ing)\s+(?:in|at|on|when|while|during|after|inside)\b"
    # the name and when in the run it came, as a title or a report says it ("Core dumped (Segmentation Fault) while
    # training Gr00t", "I'm facing issue segmentation fault while training", "SIGSEGV during backward"): what the
    # run was doing, a gerund after "while" or "when", anything after "during"; since batch 47
    # (not where it names a kind of crash: _segfault_when_named)
    r"|\b(?P<when>" + _SEGFAULT_NAME + r")s?\)?\s+(?:(?:while|when)\s+\w+ing|during)\b)"
    r"|\bSIGSEGV in\b"
    r"|(?i:\b(?:fail(?:s|ed|ure)?|crash(?:es|ed)?))\W{0,3}\(SIGSEGV\)")
# apache-tvm-ffi's handler message kept without its banner (a paste, a tool or a PR that dropped the bangs:
# "[rank5]: Segfault encountered", "Error: `Segfault encountered` in cuCtxGetDevice"): the message alone after a
# prefix, as the handler prints it on its own line, or with the function it was in; mid-sentence it is a mention,
# and other words after it are someone else's line ("[launcher]: Segfault encountered in attempt 2, resuming from
# checkpoint": a launcher telling of an earlier attempt). Without the banner it is a retelling, decided with the
# segfaults told in words (last, nothing raised after it), not as the handler's output.
_TVM_SEGFAULT_RETOLD = re.compile(r"(?:^|[:\])] )[`'\"*]*Segfault encountered[`'\"*]*"
                                  r"(?:\s+in\s+`?[\w:.]+`?(?:\(\))?)?\s*$")
# before the words: a denial, a possibility ("calling cuda in a forked worker can lead to a segfault", a warning
# printed on every start), a fix of one (a changelog's "Fixed SIGSEGV in varlen backward", "Fix segfaults in X") or
# a way around one; "can't" tells what happened: ``_HEDGE``


# the words every form above holds, lower-cased: a line without one of them is none, without a regex's cost (the
# 'sig' family sends every exit code, Killed and exit status line here)
_SEGFAULT_WORDS = ("egfault", "eg fault", "eg-fault", "egmentation", "sigsegv", "段错误")


# The kernel's OOM killer a report tells in words, where the kernel's own line (mm/oom_kill.c "Out of memory: Killed
# process N", _SIG_TEXT's oomkill) was not pasted (batch 49: an issue title "Short LTX 2.3 Workflow that yesterday
# worked now provokes oom killer", ComfyUI #13023): the killer named as what ended the run, by a verb of setting it
# off before it ("provokes", "triggers", "invoked", "woke"), as the agent of the kill ("killed by the OOM killer",
# "reaped by the oom-killer") or acting after it ("the OOM killer kicked in", "... killed python3", "... fired"); the
# told rules' one guard decides a mention (_told_only: "can trigger the OOM killer", "To avoid the OOM killer ..."),
# and like a told segfault it decides last (classify).
_OOM_KILLER = r"(?:the\s+)?(?:linux\s+|kernel(?:['’]s)?\s+|host\s+|system\s+)?oom[- _]?killer"
_OOM_KILL_TOLD = re.compile(r"(?i:\b(?:provok|trigger|invok|wak|woke|summon|set(?:s|ting)?\s+off)\w*\s+" + _OOM_KILLER
                            + r"\b|\b(?:killed|terminated|reaped|shot|taken\s+out)\s+by\s+" + _OOM_KILLER
                            + r"\b|\boom[- _]?killer\s+(?:kicked|kicks|kicking|stepped|steps|killed|kills|reaped|fired"
                            r"|fires|struck|strikes|took|takes|got)\b"
                            # since batch 71 (tests/crash/public 1517, 1519): the kill told in the words the killers'
                            # own reports use, Slurm's participle (task/cgroup's "Some of the step tasks have been
                            # OOM Killed", src/plugins/task/cgroup/task_cgroup_memory.c) and the kubelet's reason
                            # ("OOMKilled"), after a verb of getting or the passive ("I get jobs OOM killed", "my
                            # trainer got OOM-killed", "rank 3 was OOMKilled"), at most three words between (eight
                            # since batch 73: "I get some of the ensemble's training jobs OOM killed"); or a kill
                            # given the host's out-of-memory as its cause ("all the jobs are automatically killed
                            # because of a slurm out-of-memory error", "killed due to OOM"; not a GPU's: "killed due
                            # to CUDA OOM" names none of these memories)
                            r"|\b(?P<part>get|gets|got|gotten|getting|been|was|were|is|are|being)\s+(?:[\w'’-]+\s+){0,8}?"
                            r"oom[- _]?killed\b"
                            r"|\b(?:killed|terminated)\s+(?:\w+\s+)?(?:because\s+of|due\s+to)\s+(?:an?\s+|the\s+)?"
                            r"(?:slurm(?:['’]s)?\s+|host\s+|cgroup\s+|system\s+|kernel\s+|linux\s+)?"
                            r"(?:out[- ]of[- ]memory|oom)\b)")

# the first person as the subject of the getting verb that opens the match ("I get", "we got", "I keep getting")
_FIRST_PERSON_GETS = re.compile(r"(?-i:\b(?:I|[Ww]e)\s+(?:\w+\s+)?)(?i:g)\Z")
# the OOM killer's act in the present tense: its habit, unless a run of the reporter's is named (_RUN_OWN)
_OOM_KILLER_PRESENT = re.compile(r"(?i)killer\s+(?:kicks|steps|kills|fires|strikes|takes)\b")


def oom_kill_told(text: str) -> bool:
    """A line that tells, in a person's words, that the kernel's OOM killer ended the run (not a mention)."""
    if "oom" not in text and "OOM" not in text and "Oom" not in text and "emory" not in text:
        return False
    m = _OOM_KILL_TOLD.search(text)
    # not where its sentence gives the kill as a cause or a general case (_SIGNAL_NAME_CAUSED, the one list of a kill
    # given a cause): Ray's "Some common causes include: (1) the process was killed by the OOM killer due to high
    # memory usage, (2) ...", an explainer's "When the OOM killer fires, the process exits with SIGKILL"
    # nor a general statement (_general_statement), nor the killer's habit told in the present tense with no run of
    # the reporter's in its sentence ("The OOM killer kills the process with the highest oom_score"; since the review
    # of batches 48/49)
    caused = None if m is None else _SIGNAL_NAME_CAUSED.search(text, _sentence_start(text, m.start()), m.start())
    if (caused is not None and m is not None and m.group("part") is not None and caused.group().lower().endswith("when")
            and _FIRST_PERSON_GETS.search(text, 0, m.start() + 1) is not None):
        caused = None   # the report's own when, the first person getting it: "When trying to run the pipeline on our
        #                 cluster I get jobs OOM killed" (tests/crash/public 1519; as the told OOM's "When I run with
        #                 batch 64 I get ..." is a report)
    return (m is not None and not _told_only(text, m.start())
            and caused is None
            and not _general_statement(text, m.start(), m.end())
            and not (_OOM_KILLER_PRESENT.search(m.group()) and not _RUN_OWN.search(text)))


def segfault_told(text: str) -> bool:
    """A line that tells, in a person's words, that the run got a segmentation fault (not a mention)."""
    low = text.lower()
    if not any(w in low for w in _SEGFAULT_WORDS):
        return False
    if _TVM_SEGFAULT_RETOLD.search(text):
        return True
    m = _SEGFAULT_TOLD.search(text)
    if m is not None and m.group("when") is not None and _segfault_when_named(text, m.start("when")):
        return False
    if m is None:
        zh = _SEGFAULT_TOLD_ZH.search(text)
        if zh is None or _LOG_LEVEL_TAG.match(text):
            return False
        tail = _SHELL_CORE_DUMPED_AFTER.match(text, zh.end())    # past the shell's "(core dumped)" and a quote
        end = tail.end() if tail is not None else zh.end()      # (the pattern matches always)
        return not (_zh_oom_mentioned(text, zh.start(), end) or _ZH_SHELL_GUIDE_AFTER.match(text, end) is not None)
    return not _told_hedged(text, m.start(), _HEDGE) and not _LOG_LEVEL_TAG.match(text)



# The name and when it came as the name of a kind of crash, not one that happened (since the review of batch 47): a
# heading ("## Segfault when using libcxx"), a code comment ("# Suppress segfault during shutdown (known ...)"), a
# list item that opens with it (a changelog's "- segmentation fault when having circular reference (now raise ...)",
# a known-issues list's "- Segfault during shutdown (...)"), a guide's or a question's title ("How to debug a
# segmentation fault when training with DeepSpeed", "What causes a segmentation fault when loading a model?", "...: A
# Guide": _GUIDE_TITLE), an explainer's causes ("Common causes of SIGSEGV during backward": _STATUS_CAUSES_BEFORE).
# An issue's title with the name in it still tells one ("Core dumped (Segmentation Fault) while training Gr00t").
_MD_HEADING = re.compile(r"\s{0,3}#{1,6}\s")
_NAME_OPENS_ITEM = re.compile(r"\s*(?:" + _LIST_ITEM.pattern + r")[*_`]*$")


def _segfault_when_named(text: str, start: int) -> bool:
    """The segfault's name at text[start], with when it came after it, names a kind of crash (see above)."""
    return (_MD_HEADING.match(text) is not None or _XID_COMMENT_BEFORE.search(text, 0, start) is not None
            or _NAME_OPENS_ITEM.fullmatch(text, 0, start) is not None or _GUIDE_TITLE.search(text) is not None
            or _STATUS_CAUSES_BEFORE.search(text, max(0, start - 40), start) is not None)


# Slurm's slurmstepd when the scheduler ends a job (src/slurmd/slurmstepd/req.c) and its cgroup
# plugin after the kernel's OOM killer ran in the job (task_cgroup_memory.c): the same causes
# the job's final state gives, for when accounting cannot be asked.
# Older slurmstepd (req.c up to Slurm 17.x) put the node after the reason or named it inside it:
# "*** %s CANCELLED AT %s DUE TO TIME LIMIT on %s ***", "... DUE TO PREEMPTION on %s ***",
# "... DUE TO NODE %s FAILURE ***" and, for a plain cancel, "*** %s CANCELLED AT %s *** on %s".
# The entity: "JOB %u" for the batch script, "STEP %u.%u" and, in newer releases, "STEP %s" from the step id's
# own string: a step name ("4021.interactive") or a heterogeneous component's "+N" are read after the job id
# in any order ("4021.0+1").
# From Slurm 25.05 (req.c _handle_signal_container, commits f7bc53fb04 and 610dc2256f) the plain cancel names
# what ended the step: "*** %s ON %s CANCELLED AT %s DUE to SIGNAL %s ***" (SIGTERM or SIGKILL sent to it,
# strsignal's "Terminated" / "Killed": a scancel, the plain cancel of older releases) and
# "*** %s ON %s CANCELLED AT %s DUE TO TASK FAILURE ***" (SIG_TERM_KILL: srun --kill-on-bad-exit, or the
# step manager, ending the other tasks after one failed; up to 24.11 the plain "CANCELLED AT %s ***").
_SLURM_ENTITY = r"\*\*\* (?:JOB|STEP) \d+(?:[.+]\w+)*"
_SLURM_CANCEL = re.compile(_SLURM_ENTITY + r"(?: ON \S+)? CANCELLED AT \S+"
                           r"(?: DUE (?:to|TO) (?:NODE (?P<failed_node>\S+) FAILURE|SIGNAL (?P<signal>\w[\w ]*?)"
                           r"|(?P<why>[A-Z ]+?))(?: on \S+)?)?"
                           r"(?:, SEE SLURMCTLD LOG FOR DETAILS)? \*\*\*")
# The same line retyped by a person as a whole line of its own, slurmstepd's head kept and the job's id, host, time or
# asterisks dropped (since batch 67: an issue titled "slurmstepd: error: JOB CANCELLED DUE TO TIME LIMIT", NextPolish
# #122, 1450): req.c's words in req.c's order, "slurmstepd[-host]: [error: ][*** ](JOB|STEP)[ id][ ON host] CANCELLED
# [AT time] DUE TO <why>[ ***]", for the reasons that prove a state (_SLURM_WHY); only at the line's start and filling
# it, so a sentence that names the line ("If you see slurmstepd: error: JOB CANCELLED DUE TO TIME LIMIT, raise
# --time") and a person's prose ("cancelled by the Slurm TIME LIMIT", 1431) stay as they were.
_SLURM_CANCEL_RETYPED = re.compile(r"[>*_`#\s]*slurmstepd(?:-[\w.-]+)?: (?:error: )?(?:\*\*\* )?(?:JOB|STEP)"
                                   r"(?: \d+(?:[.+]\w+)*)?(?: ON \S+)? CANCELLED(?: AT \S+)?"
                                   r" DUE (?:to|TO) (?P<why>TIME LIMIT|PREEMPTION|JOB REQUEUE)(?: on \S+)?"
                                   r"(?: \*\*\*)?[`*_.]*\s*")
_SLURM_OOM = re.compile(r"Detected (\d+) oom[-_]kill events?(?:\(s\))?"
                        # srun when a task's exit status is Slurm's SIG_OOM (src/srun/launch.c, _task_finish:
                        # error("%s: %s %s: Out Of Memory", hosts, task_str, tasks)), printed once per step
                        r"|(?:srun|salloc): error: \S+: tasks? [\d,\-\[\]]+: Out Of Memory")
# slurmstepd's own memory enforcement, which kills the step when the polled usage passes the job's or step's limit
# (jobacct_gather's polling, where the cgroup is not the limit: src/common/slurm_jobacct_gather.c,
# jobacct_gather_handle_mem_limit: error("%ps exceeded memory limit (%"PRIu64" > %"PRIu64"), being killed", ...) and
# "%ps exceeded virtual memory limit (...), being killed", then _acct_kill_step(); %ps is "JobId=N" / "StepId=N.M" in
# newer releases, "Job %u" / "Step %u.%u" before Slurm 20.02, whose slurmstepd printed it without "error: " to the
# job's stderr too): the job's host memory, as the cgroup's OOM kill; its "*** JOB N ... CANCELLED AT ***" after it is
# that kill. Its "Exceeded step memory limit at some point." is task/cgroup's warning that the cgroup touched its limit
# (its page cache too) for a step that may well have finished: no kill, not read. Not where a person names the line
# (_status_mentioned: a hedge, a fix, an explanation after it, also past a quote's close (_TOLD_EXPLAINED_AFTER), a
# guide's title; since batch 63).
_SLURM_MEM_LIMIT = re.compile(r"(?:\b(?:Job |JobId=)\d+|\b(?:Step |StepId=)\d+(?:[.+]\w+)*) exceeded (?:virtual )?"
                              r"memory limit \(\d+ > \d+\), being killed")


def slurm_mem_limit_killed(text: str) -> bool:
    """slurmstepd killed the job or step for its memory (_SLURM_MEM_LIMIT), not a person naming its line."""
    m = _SLURM_MEM_LIMIT.search(text)
    return m is not None and not (_status_mentioned(text, m) or _TOLD_EXPLAINED_AFTER.match(text, m.end()) is not None)


# slurmstepd's second sentence of the same report (task/cgroup's memory check, 22.05+: error("Detected %"PRIu64
# " oom_kill event%s in %ps. Some of the step tasks have been OOM Killed.", ...)) retold without the first (batch 50:
# an OpenRLHF PPO issue titled "Some of the step tasks have been OOM Killed - Custom reward_func", OpenRLHF #1139).
# Slurm prints it only after its count on the same line (_SLURM_OOM reads that line), so alone it is always a
# person's retelling: a told failure (the OOM killer's row of _TOLD_FAILURES, decided last, after a program's own
# lines and an exception raised after it), and a mention in a person's advice or explanation (_told_only), a question
# or a heading (_general_statement) or an explainer's "... means" (_told_explained; review R31)
_SLURM_OOM_TASKS = re.compile(r"\bSome of the step tasks have been OOM Killed\b")
_QUOTE_CLOSE = re.compile(r"[\"'”’`.]*")


def slurm_oom_tasks_told(text: str) -> bool:
    """slurmstepd's "Some of the step tasks have been OOM Killed" retold alone, telling the run's kill (see above)."""
    m = _SLURM_OOM_TASKS.search(text)
    if m is None:
        return False
    close = _QUOTE_CLOSE.match(text, m.end())       # past the quote that closes the retold words (matches always)
    end = close.end() if close is not None else m.end()
    return not (_told_only(text, m.start()) or _general_statement(text, m.start(), end)
                or _told_explained(text, m.start(), end))


# srun's and salloc's node-fail handler (src/srun/allocate.c and the step launch's _node_fail_handler:
# error("Node failure on %s", nodelist)): a node of the allocation failed, or never came up.
_NODE_FAILURE = re.compile(r"(?:srun|salloc): error: Node failure on (\S+)")
# slurmstepd's reasons (req.c) and the job state each proves; a reason not listed (TASK FAILURE: a task of the
# step failed and srun ended the rest, the failed task's own output is the cause) proves none.
_SLURM_WHY: dict[str | None, str | None] = {
    "TIME LIMIT": "TIMEOUT", "PREEMPTION": "PREEMPTED", "NODE FAILURE": "NODE_FAIL", "JOB REQUEUE": "PREEMPTED",
    None: "CANCELLED"}
# Ray's memory monitor killing a worker before the kernel does (ray/_raylet: the worker's exit
# detail; "Task was killed ..." up to Ray 2.54, "N worker(s) were killed ..." from 2.55; the
# raylet's summary "... Workers (tasks / actors) killed due to memory pressure (OOM)").
_HOST_OOM = re.compile(r"killed due to the node running low on memory"
                       r"|killed due to memory pressure \(OOM\)"
                       # an actor's death cause (ray/exceptions.py ActorDiedError): "Worker exit type:
                       # NODE_OUT_OF_MEMORY Worker exit detail: Task was killed due to ..."
                       r"|Worker exit type: NODE_OUT_OF_MEMORY"
                       # the same message's detail line, left alone where a paste cut its head (the raylet's
                       # memory monitor: "Memory on the node (IP: 10.0.0.3, ID: ab12) where the task (...) was
                       # running was 27.71GB / 28.80GB (0.962273), which exceeds the memory usage threshold of
                       # 0.95."; "the lease (lease ID: ...)" in newer releases)
                       r"|Memory on the node \(IP: [^)\n]*\) where the .*? was running was .*?"
                       r"which exceeds the memory usage threshold")
# Host memory that could not be had (ENOMEM), in the words of what asked for it: c10's CPU allocator
# (c10/core/alloc_cpu.cpp alloc_cpu: posix_memalign failed, CAFFE_ENFORCE(err == 0, "DefaultCPUAllocator:
# can't allocate memory: you tried to allocate ", nbytes, " bytes. Error code ", err, " (", strerror(err), ")");
# on Windows _aligned_malloc, "DefaultCPUAllocator: not enough memory: you tried to allocate N bytes." with
# " Buy new RAM!" in older releases), ATen's MapAllocator mapping a shared-memory tensor or a safetensors/
# torch.load file (aten/src/ATen/MapAllocator.cpp: "unable to mmap ", size, " bytes from file <", filename,
# ">: ", str_error(errno), " (", errno, ")"; only errno 12, glibc's strerror "Cannot allocate memory": a full
# /dev/shm is ENOSPC or SIGBUS, see _SHM_FULL), Python's OSError for ENOMEM ("[Errno 12] Cannot allocate
# memory", fork of a DataLoader worker or a subprocess) and numpy's _ArrayMemoryError ("Unable to allocate
# 3.2 GiB for an array with shape (...) and data type float32", numpy/core/_exceptions.py); torch <= 1.x's TH
# allocator (aten/src/TH/THGeneral.cpp THAlloc, and Torch7's luaT_alloc: "$ Torch: not enough memory: you tried
# to allocate %dGB. Buy new RAM!", the size in whole GiB, so often "0GB"). The same
# recovery as the kernel's OOM killer: restart, with the warning that host RAM ran out.
_HOST_ALLOC = re.compile(r"DefaultCPUAllocator: (?:can't allocate memory|not enough memory): you tried to "
                         r"allocate (?P<cpu>\d+) bytes"
                         r"|unable to mmap (?P<mmap>\d+) bytes from file <[^>]*>: Cannot allocate memory \(12\)"
                         r"|\[Errno 12\] Cannot allocate memory"
                         r"|Unable to allocate (?P<np>\S+ [KMGTP]?i?B) for an array with shape"
                         r"|\$ Torch: not enough memory: you tried to allocate (?P<th>\d+GB)")
# Those words decide only as the message of the line that printed them: at its start, or right after the
# exception (or program) that raised them, `what():`, and c10's `[enforce fail at FILE:N] EXPR. ` prefix
# (a pasted line may keep prose before the exception's name). The same words quoted inside another
# message (a config value, a retry warning, a wrapped error) are that message's, not an allocation
# that failed: `ValueError: bad value "OSError: [Errno 12] Cannot allocate memory"` decides nothing.
_HOST_ALLOC_LEAD = re.compile(r"(?:(?:[^:\"'`]*\s)?(?:[A-Za-z_][\w.]*(?:Error|Exception)|what\(\)|[^\s:\"'`]+):\s+)?"
                              r"(?:\[enforce fail at [^\]]*\][^.]*\.\s+)?")


def host_alloc_failure(text: str) -> re.Match[str] | None:
    """The host allocation (ENOMEM) a line reports as its own message, or None (see _HOST_ALLOC_LEAD)."""
    for m in _HOST_ALLOC.finditer(text):
        if _HOST_ALLOC_LEAD.fullmatch(text, 0, m.start()):
            return m
    return None
# A Python dependency that is not there: the interpreter's own words for a missing module and
# a compiled extension that cannot load.
# Transformer Engine's loader finding no compiled library of its own (transformer_engine/common/__init__.py
# _get_shared_object_file: `raise FileNotFoundError(f"Could not find shared object file for Transformer Engine
# {library} lib.")`, an `assert ..., f"..."` in older releases; library "core", "torch" or "jax"): the wheel of that
# part is not installed (TE's own warning before it: "reinstall Transformer Engine with `pip install
# transformer_engine[pytorch]`"), an extension that cannot load as much as a missing .so
_TE_NO_SO = r"Could not find shared object file for Transformer Engine \w+ lib"
# torch inductor finding no usable triton package for a GPU graph (since batch 64): torch/_inductor/exc.py, class
# TritonMissing(ShortenTraceback): "Cannot find a working triton installation. Either the package is not installed or it
# is too old. More information on installing Triton can be found at: https://github.com/triton-lang/triton" (torch
# 2.6+), raised by torch/_inductor/scheduler.py Scheduler.create_backend (`raise TritonMissing(inspect.currentframe())`
# when has_triton() is false on a CUDA or XPU device) and wrapped by torch 2.7+'s InductorError ("InductorError:
# TritonMissing: ..."); before 2.6 create_backend raised it as a RuntimeError, "Cannot find a working triton
# installation. More information on installing Triton can be found at https://github.com/openai/triton" (2.0-2.3) and
# with the "Either the package ..." sentence (2.4-2.5), which dynamo wraps as "BackendCompilerFailed: backend='inductor'
# raised: RuntimeError: ...". Its message is the one sentence all of them open with; torch.compile cannot run on the GPU
# until triton is installed (Windows CUDA wheels carry none), a missing dependency. Its sibling GPUTooOldForTriton (a GPU
# below capability 7.0) is the hardware's: an environment_error (_TRITON_GPU_OLD, since batch 65).
_TRITON_MISSING = r"Cannot find a working triton installation\."
_TRITON_RAISE = re.compile(r"\s*raise TritonMissing\(")
# importlib.metadata.PackageNotFoundError: a distribution that is not installed, as transformers'
# require_version raises it for a dependency an option needs (5.19.0 transformers/utils/versions.py
# l.100-105: "The 'jieba' distribution was not found and is required by this application. <hint>", which
# ms-swift 4.6.0 asks at start-up, e.g. swift/arguments/sft_args.py l.427 for --predict_with_generate's
# default nlg metric), or importlib's own "No package metadata was found for <name>"
_DEP = re.compile(r"^(?:[\w.]+\.)?(?P<cls>ModuleNotFoundError|ImportError|PackageNotFoundError): (?P<msg>.+)$"
                  # an import error wrapped in another exception: transformers' lazy modules
                  # ("RuntimeError: Failed to import transformers.models.x because of the following error
                  # (look up to see its traceback):" + the ImportError's text), ctypes/torch loading a
                  # library ("OSError: libcudart.so.12: cannot open shared object file: ..."), a
                  # framework re-raising ("RuntimeError: ... undefined symbol: ..."), Windows' "DLL load failed"
                  # (and torch inductor's TritonMissing, its own class, raised or behind dynamo's
                  # BackendCompilerFailed: _TRITON_MISSING; since batch 64)
                  r"|^(?:[\w.]+\.)?(?P<wcls>[A-Z]\w*(?:Error|Exception)|TritonMissing|BackendCompilerFailed): "
                  r"(?P<wmsg>.*?(?:No module named '"
                  r"|undefined symbol: |cannot open shared object file|Failed to import \S+ because of the following error"
                  r"|cannot import name '|DLL load failed|" + _TE_NO_SO + r"|" + _TRITON_MISSING + r").*)$")
# The dynamic loader's own message (dlerror: "/path/x.so: undefined symbol: _ZN...", "libcudart.so.12:
# cannot open shared object file: ...") and transformers' "Failed to import X because of the following
# error" standing at the start of a line with the exception's name lost in the paste: a dependency
# when nothing raised after it (see the bare dependency rule in _scan).
_DEP_LOADER = re.compile(r"^(?:\S*\.so(?:\.[\d.]+)?: (?:undefined symbol: |cannot open shared object file)"
                         r"|Failed to import \S+ because of the following error)"
                         # cuDNN's own loader (libcudnn.so's dlopen of its sub-libraries), then abort():
                         # "Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open
                         # shared object file: ..." / "Please make sure ... is in your library path!"
                         r"|Could not load library \S+\. Error: "
                         # ModuleNotFoundError's message alone on its line, its class name lost (an issue
                         # title, a copied summary): Python's own words, "No module named 'x'" (import.c /
                         # importlib: f"No module named {name!r}"); a warning says more on the same line
                         r"|^No module named '[^']+'$"
                         # bitsandbytes' own end when its native library did not load (cextension.py:
                         # "CUDA Setup failed despite GPU being available. Please run the following
                         # command ...", raised as a RuntimeError whose text starts on the next line)
                         r"|CUDA Setup failed despite GPU being available"
                         # TritonMissing's message alone at its line's start, its class name lost (an issue title,
                         # ComfyUI's error box), and create_backend's own raise as a traceback's innermost line when the
                         # exception's line was cut off (CPython prints the statement that raised it); since batch 64
                         r"|^" + _TRITON_MISSING + r"(?:\s|$)|^\s*raise TritonMissing\("
                         r"|" + _TE_NO_SO)
# The decisive phrases of a dependency line anywhere in a line (wrap rejoining, see _DECISIVE)
_DEP_PHRASE = re.compile(r"No module named '[^']+'|undefined symbol: \S+|cannot open shared object file"
                         r"|cannot import name '[^']+'")
_DEP_LOOK_UP = "(look up to see its traceback):"
_DEP_MODULE = re.compile(r"No module named '([^']+)'")
_DEP_DIST = re.compile(r"^No package metadata was found for (?:The '(?P<req>[^']+)' distribution|(?P<name>\S+)$)")
_DEP_REQ_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")
# Tried only where a run of non-spaces starts (review R73): a start inside a run sees a part of what the run's start
# sees, so the name read is the same; tried at every start it cost the square of a long run without ``.so`` (7 s at
# 32k non-spaces, on a missing-library message).
_DEP_SO = re.compile(r"(?<!\S)(\S+?\.so(?:\.[\d.]+)?)\b")
_DEP_FROM = re.compile(r"cannot import name '([^']+)' from '([^']+)'")
_DEP_TE = re.compile(_TE_NO_SO.replace(r"\w+", r"(\w+)"))  # the library it names
# the install that brings each part of Transformer Engine (its README: the [pytorch] / [jax] extras build the
# framework extension against the torch or JAX already installed, hence --no-build-isolation)
_TE_INSTALL = {"torch": "pip install --no-build-isolation 'transformer_engine[pytorch]'",
               "jax": "pip install --no-build-isolation 'transformer_engine[jax]'"}
_SITE_PACKAGES = re.compile(r'^File "(/[^"]*?)/lib/python(\d+\.\d+)/(?:site|dist)-packages/')
# HPE Cray PALS, the mpiexec of PBS systems (Polaris, Aurora, Sunspot), reports each rank's end in the order the
# ranks ended: "<host>: rank 0 died from signal 11 and dumped core", "<host>: rank 7 exited with code 255". PALS
# is not open source: this is the wording its logs show (saforem2/ezpz#210 and the ALCF users' logs its failover
# patterns were written from). The first rank to end is the failure; the launcher then ends the others (SIGTERM,
# then SIGKILL: "rank 4 died from signal 9"), so only the first such line says anything.
_PALS_RANK_END = re.compile(r"\brank \d+ (?:died from signal (?P<sig>\d+)|exited with code \d+)")

_STRSIGNAL = {"Killed": 9, "Bus error": 7, "Segmentation fault": 11, "Aborted": 6,
              "Terminated": 15, "Interrupt": 2, "Hangup": 1}
# Apple's strsignal words with Darwin's number, and the signal they name here
_DARWIN_STRSIGNAL = {"Segmentation fault": (11, int(_signal.SIGSEGV)), "Bus error": (10, int(_signal.SIGBUS)),
                     "Abort trap": (6, int(_signal.SIGABRT))}
# before a shell's quoted words for a signal: a possibility, a denial, an explanation or a fix ("If you see
# `Segmentation fault: 11`, rebuild ...", "Segmentation fault: 11 means ..."), not "will": "`cargo run ...` will
# crash with `Segmentation fault: 11`" (a pull request that reverts the change behind it) tells a crash it repeats
# (the possibility and the explanation apart from the denial: before a program's own status line only they make it a
# mention, where a denial of something else stands in the label: "No restarts left: worker exited with code 137")
_POSSIBILITY_WORDS = r"may|might|could|possibl[ey]|if|avoid(?:s|ed|ing)?|prevent(?:s|ed|ing)?|typical(?:ly)?|indicat(?:e|es|ing)|means"
# and a denial of the ending itself before a program's own status line: "Never exited with code 137.", "We never saw:
# worker exited with code 137", "No longer happens after the upgrade: ...", "Not reproducible on 2.4: Command ...
# returned non-zero exit status 139.", "we didn't get: ..."; not "no" before a noun, the denial of something else a
# supervisor's label tells ("No restarts left: worker exited with code 137"); since the review of batch 47
_OWN_LINE_HEDGE = re.compile(r"(?i)\b(?:" + _POSSIBILITY_WORDS + r"|never|not|no longer"
                             r"|(?:did|does|do|has|have|had|was|were|is|are)n['’]t)\b")
_QUOTED_SIGNAL_HEDGE = re.compile(r"(?i)\b(?:no|not|never|without|" + _POSSIBILITY_WORDS + r")\b")

_TR_ROOT = re.compile(r"^Root Cause \(first observed failure\):")
_TR_FAILURES = re.compile(r"^Failures:")
_TR_RANK = re.compile(r"^rank\s*:\s*(\d+)\s*\(local_rank:\s*(\d+)\)")
_TR_HOST = re.compile(r"^host\s*:\s*(\S+)")
_TR_EXIT = re.compile(r"^exitcode\s*:\s*(-?\d+)\s*\(pid:\s*(\d+)\)")
_TR_TRACEBACK = re.compile(r"^traceback\s*:\s*(.*)")
_TR_BORDER = re.compile(r"^=+$")
# the agent's own line for the first failure (torch/distributed/elastic/multiprocessing/api.py:
# "failed (exitcode: %s) local_rank: %s (pid: %s) of binary: %s"), also cut right after the exit code
# (an issue title, a terminal's width) or inside "(pid: ..." (rich's log columns wrap the message and
# put the PID on the next line)
_TR_FAILED = re.compile(r"failed \(exitcode: (-?\d+)\)(?: local_rank: (\d+)(?: \(pid:\s*(\d+)\))?|\s*$)")
# the same line with the rest of its words retyped (a translated paste: "failed (exitcode: -9) for binary located
# at ... with local_rank: 0 (process ID: 71)"): its logger's name, which the module logs under
# (api.py: logger = logging.getLogger(__name__)) and every torch log format prints, says whose line it is
# (the words between never run past another naming of the logger, round 22: the same exit code is read, from the last
# naming before it, where ``.*?`` from every naming to the line's end cost the square of a line of namings)
_TR_LOGGER = r"\btorch\.distributed\.elastic\.multiprocessing\.api\b"
_TR_FAILED_RETOLD = re.compile(_TR_LOGGER + r"(?:(?!" + _TR_LOGGER + r").)*?\bfailed \(exitcode: (-?\d+)\)")
# A failure entry's fields anywhere in a line, in any case, with or without the spacing and
# colons of the block: pasted blocks lose their header, get joined ("rank2 (local rank:
# 2)exitcode: -9 (pid: 36071)") or lower-cased.
_TRF_RANK = re.compile(r"\brank\s*:?\s*(\d+)\s*\(local[_ ]rank\s*:\s*(\d+)\)", re.IGNORECASE)
_TRF_EXIT = re.compile(r"exitcode\s*:?\s*(-?\d+)\s*\(pid\s*:\s*(\d+)\)", re.IGNORECASE)
_TERMINATED_BY_AGENT = frozenset({-15, 143})   # siblings torchrun ended after the first failure
# torchrun's own SIGKILL of a worker that outlived its SIGTERM: after the first failure the agent's ``_close``
# (torch/distributed/elastic/multiprocessing/api.py l.1023-1047, torch 2.13) sends every worker still running the
# closing signal, waits up to 30 s, then logs "Unable to shutdown process %s via %s, forcefully exiting via %s"
# (death_sig, ``_get_kill_signal()``: SIGKILL; the enums print as their numbers from Python 3.11, as
# ``Signals.SIGTERM`` before) and kills it. Older torch spelt it "forcefully exitting" (a typo, not matched: those
# versions never listed the worker they killed among the failures, which only pytorch PR #160908, Sept 2025, added,
# so there is no entry to excuse). That worker's failure entry then reads ``exitcode : -9``, ``traceback : Signal 9
# (SIGKILL) received by PID N`` (_SIG_TEXT's ``recv``/``recvpid``): the agent's kill, not the cause (a rank stopped
# by SIGSTOP or stuck where SIGTERM cannot end it, after another rank's collective timed out). The excuse is tied to
# the agent that logged the kill: the same srun ``--label`` task (PIDs repeat across nodes' containers), and it holds
# only while the kernel counted no OOM kill (``_excuse_agent_kills``: the OOM killer's victim can outlive the 30 s
# too, GPU teardown and reclaim, and then be the one torchrun "forcefully" ends).
_TR_FORCED_KILL = re.compile(r"Unable to shutdown process (\d+) via (?:Signals\.)?\w+, forcefully exiting via "
                             r"(?:Signals\.)?(?:9|SIGKILL)\b")

_FRAME = re.compile(r'^File "([^"]*)", line \d+, in (\S+)')
_TRACEBACK_START = re.compile(r"^Traceback \(most recent call last\)")
# Also a class named in a module of exceptions whose name says nothing of it: Triton's
# "triton.runtime.errors.OutOfResources: out of resource: shared memory, ..." (triton/runtime/errors.py),
# "triton.compiler.errors.CompileTimeAssertionFailure: ...".
# c10::Error's second line, "Exception raised from mha_fwd at .../flash_api.cpp:370 (most recent call first):"
# (c10/util/Exception.cpp), belongs to the exception above it: never one of its own.
_C10_WHERE = "Exception raised from "
# A process that already failed on the device and then aborts while freeing its memory at exit:
# c10's caching allocator throwing from its free ("terminate called after throwing an instance of
# 'c10::Error' / what():  invalid device pointer: 0x5400000 / Exception raised from free at
# ../c10/hip/HIPCachingAllocator.cpp:2994"): an echo of the error before it, not a new cause.
_TEARDOWN = re.compile(r"^Exception raised from free at \S*CachingAllocator\.cpp")
_EXC = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?(?:[A-Z]\w*)?(?:Error|Exception|Interrupt)\b:?"
                  r"|^(?:[A-Za-z_]\w*\.)+(?:errors|exceptions)\.[A-Z]\w*: "
                  r"|^terminate called after throwing")
# A report's heading that _EXC's bare "Error"/"Exception" would take for a raised exception ("Error messages",
# "Error Message:", "Exception details:", a markdown heading's words once "###" is stripped): it names no cause
_EXC_HEADING = re.compile(r"^(?:Error|Exception)s? (?:[Mm]essages?|[Ll]ogs?|[Dd]etails?|[Oo]utput|[Ii]nfo|[Rr]eports?"
                          r"|[Tt]race(?:back)?s?)\s*:?\s*$")
# IPython's traceback head (IPython/core/ultratb.py VerboseTB.prepare_header, 8.x l.999-1003: the exception's type,
# then "Traceback (most recent call last)" right-justified, "ValueError                                Traceback (most
# recent call last)"): the head of the exception the trace ends with, whose own line ("ValueError: ...") comes after
# its frames; the head is no exception of its own, raised after a line above it (since batch 66: a report's message
# line, then its notebook's stack trace cut before the message)
_IPYTHON_TB_HEAD = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*\s{2,}Traceback \(most recent call last\)\s*$")

# A write that failed for lack of room, in the words of what printed it: the C library's strerror for
# ENOSPC / EDQUOT ("No space left on device", "Disk quota exceeded", as Python's OSError "[Errno 28]"
# and Rust's io::Error carry them; Rust's ErrorKind names StorageFull / QuotaExceeded, as safetensors
# prints them), and torch.save's zip writer that lost a write (caffe2/serialize/inline_container.cc:
# "PytorchStreamWriter failed writing file data/3: file write failed", "unexpected pos N vs M").
# Class ``disk_full``: the runner waits for room where the run saves, then resumes from the newest
# verified checkpoint.
_DISK_FULL = re.compile(r"No space left on device|Disk quota exceeded|\bStorageFull\b|\bQuotaExceeded\b"
                        r"|PytorchStreamWriter failed writing file"
                        # torch.save to a path (PyTorchStreamWriter over an ofstream) on a full filesystem: the
                        # short write is not raised; the next record's ostream_write_func finds the offset wrong,
                        # CAFFE_THROW("unexpected pos ", current_pos_, " vs ", file_ofs), chained after the
                        # stream's own "basic_ios::clear: iostream error" (seen for real on a full tmpfs)
                        r"|inline_container\.cc:\d+\] \. unexpected pos \d+ vs \d+")
_DISK_FULL_HINT = ("a write ran out of room (disk full or over quota): the runner waits until the filesystem "
                   "where the run saves has room again (cooldown.disk_free_min_mib, cooldown.disk_margin), "
                   "then resumes from the newest verified checkpoint; free space there (`df -h`, `quota`, "
                   "old checkpoints)")
# The same errno on shared memory is another cause with another fix: /dev/shm (a tmpfs in RAM, 64 MB in
# a default docker container) is full, not the disk. In the programs' words: torch's MapAllocator
# (aten/src/ATen/MapAllocator.cpp) "unable to write to file </torch_123_456_7>: No space left on device
# (28)" for a DataLoader worker's tensor in shared memory, and "unable to open shared memory object
# <...>"; NCCL's shm transport "Call to posix_fallocate failed : No space left on device" (shm.h,
# NCCL <= 2.11) and "Error while creating shared memory segment /dev/shm/nccl-XXXX (size N)"
# (shmutils.cc). torch's DataLoader names the same exhaustion on SIGBUS ("This might be caused by
# insufficient shared memory (shm)"), so it is that class, ``bus_error``: raising the shm size or
# lowering workers is the fix; waiting for the output disk would never help.
_SHM_FULL = re.compile(r"/dev/shm|unable to write to file </torch_|shared memory|posix_fallocate")
# NCCL's shared-memory segment that could not be made, which decides without the errno (NCCL's
# misc/shmutils.cc: "Error: failed to extend %s to %ld bytes" and "Error while creating shared memory segment
# %s (size %ld)", with ", error: %s (%d)" since 2.19; include/shm.h before 2.12): the NCCL guide's
# troubleshooting gives these words for insufficient shared memory (a container's 64 MB /dev/shm, or
# /dev/shm/nccl-* left by dead runs), whatever NCCL then returns (ncclSystemError, an "invalid argument").
# One that names another errno (a permission) is not room.
_NCCL_SHM = re.compile(r"Error while creating shared memory segment \S+ \(size \d+\)(?!, error: (?!No space left))"
                       r"|failed to extend \S*/dev/shm/\S+ to \d+ bytes(?!, error: (?!No space left))")
_SHM_HINT = ("shared memory (/dev/shm) is full, not the disk: raise it (docker --shm-size, "
             "a larger tmpfs), lower dataloader workers, or remove stale /dev/shm/nccl-* and "
             "/dev/shm/torch_* files of dead runs; NCCL_SHM_DISABLE=1 moves NCCL off shm")

# The CUDA system not ready to start work: cudaErrorSystemNotReady / CUDA_ERROR_SYSTEM_NOT_READY (802,
# cudaGetErrorString "system not yet initialized": "verify the system configuration is in a valid state and all
# required driver daemons are actively running"). On NVSwitch systems (HGX/DGX A100, H100, H200, B200) CUDA waits
# for the Fabric Manager to register the GPUs in the fabric (nvidia-smi -q "Fabric: State: In Progress"), and a job
# started while nvidia-fabricmanager is down, still starting or of another version than the driver fails with it
# (the Fabric Manager user guide, ABORT_CUDA_JOBS_ON_FM_EXIT): torch's "Error 802: system not yet initialized",
# THC's "cuda runtime error (802) : system not yet initialized", the samples' "code=802(cudaErrorSystemNotReady)".
# The message only where CUDA's wording puts it (after its 802, torch's "CUDA error: ", the driver API's name,
# the samples' "-> "): "system not yet initialized" alone is any program's (a logging system's warning).
_GPU_UNAVAILABLE = re.compile(
    r"devices?(?:\(s\))? (?:is/are |is |are )?busy or unavailable"
    r"|no CUDA-capable device is detected|cudaErrorDevicesUnavailable|cudaErrorNoDevice"
    r"|CUDA_ERROR_NO_DEVICE"
    r"|(?P<not_ready>(?:(?:\b802\)? ?|CUDA error|CUDA_ERROR_SYSTEM_NOT_READY): |-> )(?P<not_ready_text>system not yet initialized)"
    r"|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY)")
# Usage errors a trainer reports before doing anything: argparse ("prog: error: ..."), ms-swift
# ("ValueError: remaining_argv: [...]"), HfArgumentParser ("... not used by the HfArgumentParser").
_USAGE = re.compile(
    r"remaining_argv"
    r"|unrecognized arguments:"
    r"|Some specified arguments are not used by the HfArgumentParser")
# argparse's own error line: ArgumentParser.error (CPython Lib/argparse.py) prints the usage first
# (self.print_usage(sys.stderr), HelpFormatter's "usage: " prefix) and then exits with status 2 and
# "%(prog)s: error: %(message)s". Every compiler driver and build tool words its errors the same way
# ("g++: error: unrecognized command-line option", "nvcc: error: ...", "ninja: error: loading 'build.ninja'",
# NVRTC's program log "nvrtc: error: ..."), so the line is argparse's only beside its usage or its exit
# status (_argparse_usage_error; since the review of batch 41).
_ARGPARSE_ERROR = re.compile(r"^(?:usage: )?(?!srun: |slurmstepd)[\w.+/-]+(?: [\w.+/-]+)*: error: \S")
_ARGPARSE_USAGE = re.compile(r"^usage: \S")
_ARGPARSE_EXIT = 2

# The argument checks that end a start-up: an exception whose traceback runs through the trainer's
# argument classes. ms-swift validates its arguments in the dataclasses' ``__post_init__``
# (4.x swift/arguments/, swift/megatron/arguments/, swift/trainers/arguments.py,
# swift/rlhf_trainers/arguments.py; 3.x swift/llm/argument/, swift/megatron/argument/) and raises
# ValueError / AssertionError / NotImplementedError / FileExistsError there ("Packing and
# lazy_tokenize are incompatible.", "save_total_limit must be greater than or equal to 2.",
# "path: 'X' not found"); transformers' HfArgumentParser builds those dataclasses (and its own
# TrainingArguments) in ``parse_args_into_dataclasses``.
# Megatron-LM checks its own arguments the same way before anything runs: ``validate_args`` in
# megatron/training/arguments.py (megatron/arguments.py before core 0.8 and in Megatron-DeepSpeed) asserts
# and raises ValueError on the parallel layout and options ("When using MoE and tensor parallelism,
# sequence parallelism must be used."); ms-swift's Megatron and other trainers built on it go through it.
# Megatron-core's config dataclasses check the layout again in ``__post_init__`` when the model is built
# (megatron/core/model_parallel_config.py ModelParallelConfig, megatron/core/transformer/transformer_config.py
# TransformerConfig: "num_query_groups (4) must be a multiple of tensor_model_parallel_size (8).").
_ARGS_FRAME_FILE = re.compile(r"[/\\]swift[/\\](?:\w+[/\\])?arguments?[/\\.]"
                             r"|[/\\]megatron[/\\](?:training[/\\])?arguments\.py$"
                             r"|[/\\]megatron[/\\]core[/\\](?:transformer[/\\]transformer_config"
                             r"|model_parallel_config)\.py$")
_ARGS_FRAME_FUNCS = frozenset({"parse_args_into_dataclasses"})
# Megatron-core checks the parallel layout against the world size once more when it builds the process
# groups: ``initialize_model_parallel`` in megatron/core/parallel_state.py (called by Megatron-LM's
# ``_initialize_distributed``, Megatron-Bridge and the RL trainers on Megatron) and the ``RankGenerator`` it
# builds raise RuntimeError on the sizes the recipe asked for ("world_size (6) is not divisible by 4"; core_r0.8
# "world_size (N) is not divisible by tensor_model_parallel_size (T) x ..." and "data_parallel_size (N) is not
# divisible by expert_model_parallel_size"; core_r0.13 "decoder world_size (N) is not divisible by
# expert_tensor_model_pipeline_parallel size (M)"; "pipeline-model-parallel size should be greater than 1 with
# interleaved schedule"; RankGenerator's "The size of (ep) is (2), but you haven't specified the order (...)" and
# core_r0.8's "The ep and dp must be adjacent in order (...)") and assert with a message on them ("Expert data
# parallel size should be divisible by partial DistOpt shard factor", main d98e8a64 l.1447; "Data parallel size
# should be divisible by partial DistOpt shard factor", core_r0.13 l.883). Only what those functions raise
# themselves (the innermost frame): a store or NCCL failure while they create the groups is raised in torch's
# frames under them, and their assertions that a group "is already initialized" (and the bare
# ``assert torch.distributed.is_initialized()``) check the program's order, not the recipe.
_MEGATRON_LAYOUT_FILE = re.compile(r"[/\\]megatron[/\\]core[/\\]parallel_state\.py$")
_MEGATRON_LAYOUT_FUNCS = frozenset({"initialize_model_parallel", "__init__"})
_MEGATRON_LAYOUT_EXC = re.compile(
    r"^(?:AssertionError: (?!.*\bis already initialized\b)\S"
    r"|RuntimeError: (?:(?:decoder )?world_size \(\d+\) is not divisible by"
    r"|data_parallel_size \(\d+\) is not divisible by expert_model_parallel_size"
    r"|pipeline-model-parallel size should be greater than 1 with interleaved schedule"
    r"|The size of \(\w+\) is \(\d+\), but you haven't"
    r"|The ep and dp must be adjacent in order))")


# Megatron-core's own words for a layout it refuses, which no other program prints, decide without those frames
# (batch 61: an RL trainer's issue quoting the exception under a prose "report \"File ...parallel_state.py\", line
# 780, in initialize_model_parallel", a NeMo issue's title holding it after the reporter's question, the frames cut
# before Megatron's). Each is a RuntimeError raised in megatron/core/parallel_state.py: ``initialize_model_parallel``
# (main d98e8a64 l.882 "world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)";
# core_r0.11 l.693 and the copies vendored in forks, "decoder world_size (4) is not divisible
# by expert_tensor_model_pipeline_parallel size (8)", one fork "... expert_tensor_model_pipeline size (N)"; core_r0.8
# l.433 "world_size (N) is not divisible by tensor_model_parallel_size (T) x pipeline_model_parallel_size (P) x
# context_parallel_size (C)", l.444 "data_parallel_size (N) is not divisible by expert_model_parallel_size ", forks'
# "data_parallel_size * context_parallel_size (N) ..."; core_r0.8 l.450 and main l.829 "pipeline-model-parallel size
# should be greater than 1 with interleaved schedule") and ``RankGenerator.__init__`` (core_r0.8 l.246 "The ep and dp
# must be adjacent in order (...)", main l.506 "The size of (ep) is (2), but you haven't specified the order (...)",
# core_r0.11's f-strings joined with no space between "haven't" and "specified"). Main's bare "world_size (N) is
# not divisible by M" (l.823) is any program's words, and the assertions are generic: both keep needing the frames.
# Read only after the exception's name, as it was raised ("RuntimeError: "), at the line's start (an exception line)
# or after a report's words (a title, a sentence); not where a line only names it: a program's log level's line,
# a hedge, a guide's "raises"/"for example" in its sentence or a fix before it on the line, CJK prose's limits.
_MEGATRON_LAYOUT_OWN = re.compile(
    r"RuntimeError: (?:(?:decoder )?world_size \(\d+\) is not divisible by "
    r"(?:expert_tensor_model_pipeline(?:_parallel)? size \(\d+\)|tensor_model_parallel_size \(\d+\) x pipeline_model_parallel_size)"
    r"|data_parallel_size(?: \* context_parallel_size)? \(?\d+\)? is not divisible by expert_model_parallel_size"
    r"|pipeline-model-parallel size should be greater than 1 with interleaved schedule"
    r"|The size of \(\w+\) is \(\d+\), but you haven't ?specified the order"
    r"|The ep and dp must be adjacent in order)")
# a guide's or a reference's words in the sentence before the message: the hedges of the told rules and the verbs
# of a statement of what the code does ("Megatron raises RuntimeError: ... when ...", "e.g. RuntimeError: ...")
_MEGATRON_LAYOUT_TOLD = re.compile(r"(?i)\b(?:" + _HEDGE_WORDS + r"|raises|throws|is raised|for example|such as)\b"
                                   r"|(?i:\be\.g\.)")


def _megatron_layout_refusal(text: str, stack: list[tuple[str, str]]) -> bool:
    """Did Megatron-core's ``initialize_model_parallel`` refuse the parallel layout (``_MEGATRON_LAYOUT_EXC``), or
    does the exception line hold its own words for it (``_MEGATRON_LAYOUT_OWN``, at the line's start)?"""
    if text.startswith("RuntimeError: ") and _MEGATRON_LAYOUT_OWN.match(text):
        return True
    return (bool(stack) and bool(_MEGATRON_LAYOUT_FILE.search(stack[-1][0]))
            and stack[-1][1] in _MEGATRON_LAYOUT_FUNCS and bool(_MEGATRON_LAYOUT_EXC.match(text)))


def megatron_layout_stated(text: str) -> str | None:
    """Megatron-core's own refusal of the layout (``_MEGATRON_LAYOUT_OWN``) raised on a line that is no exception
    line (a title, a report's sentence): the words from the exception's name on, or None where the line only names
    them (see above)."""
    m = _MEGATRON_LAYOUT_OWN.search(text)
    if m is None or _LOG_LEVEL_TAG.match(text) is not None:
        return None
    start = m.start()
    if (_told_hedged(text, start, _MEGATRON_LAYOUT_TOLD, _TOLD_FIX_WORD, _MENTION_WINDOW)
            or _cjk_mentioned(text, start, m.end())):
        return None
    return text[start:]
# ms-swift's start-up after the arguments: its pipeline (4.x swift/pipelines/train/sft.py, Megatron's
# swift/megatron/pipelines/train/sft.py; 3.x swift/llm/train/, swift/megatron/train/) prepares the
# model, tuner, template and dataset before it calls ``trainer.train`` and raises the exceptions
# below for what the recipe asked ("Template `X` does not support padding free or packing.",
# sft.py l.78; "Unknown tuner_type: X", tuner.py l.350; a dataset row it cannot encode). One of
# them with no ``train`` frame in its traceback ended the start: it fails the same way again.
# ms-swift 2.x has no train/ package: ``swift sft``, ``pt`` and ``rlhf`` run ``llm_sft`` / ``llm_rlhf``
# of swift/llm/sft.py and rlhf.py (2.6.1: ``prepare_model_template_train``, ``prepare_dataset``,
# ``llm_sft_megatron``'s assert, then ``trainer_train`` calls ``trainer.train``, sft.py l.143-546).
_SETUP_FRAME_FILE = re.compile(r"[/\\]swift[/\\](?:megatron[/\\])?(?:(?:pipelines|llm)[/\\])?train[/\\]"
                               r"|[/\\]swift[/\\]llm[/\\](?:sft|rlhf)\.py")
# ms-swift's export (``swift export`` / ``megatron export``: merge a LoRA, convert to Hugging Face,
# quantize) is set-up only: its pipeline (4.x swift/pipelines/export/, swift/megatron/pipelines/export/;
# 3.x swift/llm/export/, swift/megatron/export/) raises the same kinds for what the recipe asked
# ("Please specify `--mcore_model` or `--model`.", 4.6.0 megatron/pipelines/export/export.py l.45;
# "Please set the quant_bits. ...", pipelines/export/quant.py l.39), and a restart refuses it again.
_EXPORT_FRAME_FILE = re.compile(r"[/\\]swift[/\\](?:megatron[/\\])?(?:(?:pipelines|llm)[/\\])?export[/\\]")
# The exceptions ms-swift refuses a recipe with (the argument checks and the start-up alike). Not any
# exception: transformers' TrainingArguments.__post_init__ sets up its devices and so joins the
# process group (accelerate PartialState), where a late node is a DistStoreError/RuntimeError that a
# restart may well get past.
_REFUSAL_EXC = re.compile(r"^(?:ValueError|AssertionError|NotImplementedError|FileNotFoundError|FileExistsError)\b")
# ms-swift's entry point (the ``swift`` and ``megatron`` programs: swift/cli/main.py ``cli_main`` and
# ``parse_yaml_args``, swift/cli/_megatron/main.py's ``cli_main`` calls the same) reads only its argv, the config
# file it names and the environment before it starts the trainer (4.6.0 l.86-99): whatever it raises itself
# (innermost frame there) fails every restart the same way. Measured with 4.6.0: ``swift stf`` is
# ``KeyError: 'stf'`` at l.91 (``ROUTE_MAPPING``); read from 4.3.0's file: an ENV value that differs from a set
# variable is ``NameError: name 'logger' is not defined`` at l.55; a config file that is not YAML, PyYAML's
# ``ScannerError`` under l.47. An interrupt lands in ``subprocess.run``'s frames, not these.
_SWIFT_ENTRY_FILE = re.compile(r"[/\\]swift[/\\]cli[/\\](?:_megatron[/\\])?main\.py$")
_SWIFT_ENTRY_FUNCS = frozenset({"cli_main", "parse_yaml_args", "get_torchrun_args"})


def _swift_entry_point_refusal(stack: list[tuple[str, str]]) -> bool:
    """Was the exception raised by ms-swift's entry point itself, before any trainer (``_SWIFT_ENTRY_FILE``)?"""
    return bool(stack) and bool(_SWIFT_ENTRY_FILE.search(stack[-1][0])) and stack[-1][1] in _SWIFT_ENTRY_FUNCS

# The datasets library could not read the training's data (datasets 4.8.4 builder.py ``_prepare_split_single``,
# l.1915-1922: any error while a split's tables are written is raised again as
# ``DatasetGenerationError("An error occurred while generating the dataset")`` from it; a cast error first as
# ``DatasetGenerationCastError``, l.1889-1897, a subclass, re-raised as is). Python prints its cause right above
# it. When that cause is the file's own text or columns (the JSON builder, packaged_modules/json/json.py
# l.209-252: pyarrow's ``ArrowInvalid: JSON parse error: ... in row N``, pandas' ``ValueError`` of the whole-file
# read; table.py's ``CastError: Couldn't cast ...`` for files whose columns differ; csv's pandas ``ParserError``;
# a text that is not UTF-8), a restart reads the same bytes and fails the same way. An ``OSError`` under it
# (a disk, a network file system) is not that. Measured with ms-swift 4.6.0 (a JSONL line cut in half): the
# attempt was ``unknown``, "ValueError: Trailing data at position 358" (pandas' inner error), and restarted.
_DATASET_UNREADABLE = re.compile(r"^datasets\.exceptions\.DatasetGeneration(?:Cast)?Error\b")
_DATA_TEXT_CAUSE = re.compile(r"^(?:pyarrow\.lib\.Arrow(?:Invalid|TypeError|NotImplementedError)"
                              r"|(?:json\.decoder\.)?JSONDecodeError|ValueError|UnicodeDecodeError"
                              r"|pandas\.errors\.ParserError|datasets\.table\.CastError)\b")
# The builders' own line naming the file before they raise (json.py l.248 "Failed to load JSON from file 'F'
# with error <class ...>: ...", csv.py l.205, parquet.py l.122/l.212, arrow.py l.76 "Failed to read file 'F' ...").
_DATASETS_FILE_SAID = re.compile(r"Failed to (?:load JSON from file|read file|read schema from) '.*' with error .*")


def dataset_unreadable(raised: str, cause: str | None) -> bool:
    """``raised`` (an exception line) is datasets' ``DatasetGenerationError`` raised from the data's own text or
    columns: ``cause`` is the exception line printed right above it (its cause, ``_DATA_TEXT_CAUSE``); a
    ``DatasetGenerationCastError`` is one by itself."""
    if not _DATASET_UNREADABLE.match(raised):
        return False
    if raised.startswith("datasets.exceptions.DatasetGenerationCastError"):
        return True
    return cause is not None and _DATA_TEXT_CAUSE.match(cause) is not None


# ms-swift's Megatron trainer checks more of the recipe inside ``train`` but before its first step:
# ``BaseMegatronTrainer.train`` calls ``setup_training`` (swift/megatron/trainers/base.py, 4.3.0 l.621 to
# 4.6.0 l.713, main 3602360a l.657), which builds the optimizer setup and the data iterators, and only then
# loops over ``run_train_step``/``train_step``. A refusal raised under ``setup_training`` with no step frame
# ended the start ("shuffle must be True when group_by_length is True", batch_sampler.py l.93, built by
# ``_prepare_dataloader``): the start-up rule's pipeline frames come with a ``train`` frame there.
_SWIFT_MEGATRON_TRAINER_FILE = re.compile(r"[/\\]swift[/\\]megatron[/\\]trainers[/\\]\w+\.py$")
_SWIFT_MEGATRON_STEP_FUNCS = frozenset({"run_train_step", "train_step"})

# ms-swift's refusals of a resume: the checkpoint's state and the command line disagree, so every restart
# from that checkpoint with that command ends the same way, on the runner's own resumes (attempt 2+) too.
# Each: (the exception line, what to change). The runner's resume never changes the command by itself.
_SWIFT_RESUME_REFUSALS: tuple[tuple[re.Pattern[str], str], ...] = (
    # 4.6.0 swift/megatron/trainers/base.py l.1055-1058 (``_prepare_dataloader``, GRPO/GKD; not in 4.5.3 nor
    # main 3602360a)
    (re.compile(r"^RuntimeError: consumed_train_samples \(\d+\) must be divisible by num_generations \(\d+\)"),
     "the checkpoint's consumed_train_samples is not a multiple of --num_generations: resume with the "
     "--num_generations the checkpoint was trained with, or from a checkpoint saved with the current one"),
    # a full-state resume (--mcore_model/--mcore_adapter with --finetune false) under another tensor/pipeline
    # layout with the distributed optimizer: swift/megatron/utils/megatron_lm_utils.py load_mcore_checkpoint
    # (4.2.0 l.417, 4.5.3 l.531, 4.6.0 l.534, main l.440), after Megatron-LM's load_checkpoint
    # (megatron/training/checkpointing.py), which raises the same words, in newer versions with "... with sharding
    # type dp_zero_gather_scatter. Please use `--ckpt-fully-parallel-save` flag during checkpoint saving."
    (re.compile(r"^RuntimeError: \(TP, PP\) mismatch after resume \(.*\): not supported for DistributedOptimizer"),
     "the checkpoint's optimizer state was saved under another tensor/pipeline parallel layout: resume with "
     "the layout it was saved with, or load the weights without the optimizer state (ms-swift --no_load_optim "
     "true, Megatron-LM --no-load-optim)"),
    # 4.5.3 l.487 / 4.6.0 l.490 load_mcore_checkpoint: --use_megatron_fsdp reading a plain DCP checkpoint
    (re.compile(r"^ValueError: Checkpoint `[^`]*` uses PyTorch DCP storage but was not saved as a Megatron-FSDP "
                r"fsdp_dtensor checkpoint"),
     "the checkpoint was not saved by Megatron-FSDP: resume it without --use_megatron_fsdp, as it was trained"),
)


def _swift_resume_hint(text: str) -> str | None:
    """What to change when ``text`` (an exception line) is one of ms-swift's refusals of a resume, else None."""
    return next((hint for rx, hint in _SWIFT_RESUME_REFUSALS if rx.match(text)), None)


def _swift_megatron_setup_refusal(stack: list[tuple[str, str]]) -> bool:
    """Was the exception raised under ms-swift's Megatron ``setup_training``, before any training step?"""
    return (any(fn == "setup_training" and _SWIFT_MEGATRON_TRAINER_FILE.search(f) for f, fn in stack)
            and not any(fn in _SWIFT_MEGATRON_STEP_FUNCS for _, fn in stack))


def _swift_resume_refusal(s: "_Scan", steps_seen: int) -> CrashVerdict | None:
    """ms-swift refused the checkpoint it was resumed from (``_SWIFT_RESUME_REFUSALS``), the attempt's end."""
    if not s.resume or steps_seen:
        return None
    idx, text = s.resume.decisive[-1]
    if s.exceptions_after(idx) or s.oom or s.fault or s.nccl:
        return None
    return _verdict("config_error", s.resume.decisive, f"resume refused: {clip(text, 300)}", retryable=False,
                    recovery="fail", hint=f"ms-swift refused to resume, and every restart from that checkpoint "
                                          f"ends the same way: {_swift_resume_hint(text)}")

# ms-swift 4.6's Megatron trainer cannot survive an update the optimizer skips: megatron-core's mixed-precision
# optimizer returns (False, None, None) when its grad scaler found an inf or a NaN (megatron-core 0.16.1
# optimizer/optimizer.py l.597-598, l.967-968, l.1311-1312), and ms-swift passes that None grad norm to
# reduce_max_stat_across_model_parallel_group (4.6.0 swift/megatron/trainers/base.py l.1015), whose
# torch.tensor([stat], dtype=torch.float32) raises "TypeError: must be real number, not NoneType"
# (swift/megatron/utils/parallel_utils.py l.14). Only --fp16 has a grad scaler, and ms-swift cannot set its
# initial scale (no --initial_loss_scale: megatron-core's 2**32, optimizer_config.py l.220): the first steps
# overflow, and every restart starts from that scale again.
_SWIFT_PARALLEL_UTILS_FILE = re.compile(r"[/\\]swift[/\\]megatron[/\\]utils[/\\]parallel_utils\.py$")


def _swift_skipped_update(text: str, stack: list[tuple[str, str]]) -> bool:
    """Was ``text`` ms-swift's Megatron trainer failing on the None grad norm of a skipped update?"""
    return (text.startswith("TypeError: must be real number, not NoneType")
            and any(fn == "reduce_max_stat_across_model_parallel_group" and _SWIFT_PARALLEL_UTILS_FILE.search(f)
                    for f, fn in stack)
            and any(fn == "train_step" and _SWIFT_MEGATRON_TRAINER_FILE.search(f) for f, fn in stack))


def _swift_skipped_update_verdict(s: "_Scan", status_lines: list) -> CrashVerdict | None:
    """The attempt ended on ``_swift_skipped_update``: a restart overflows again (config_error, fail)."""
    if not s.skipped_update:
        return None
    idx, _text = s.skipped_update.decisive[-1]
    if s.exceptions_after(idx) or s.oom or s.fault or s.nccl:
        return None
    return _verdict("config_error", s.skipped_update.decisive + status_lines,
                    "ms-swift's Megatron trainer cannot skip an update: the optimizer skipped a step (an fp16 "
                    "loss-scale overflow) and ms-swift failed on its missing grad norm (TypeError: must be real "
                    "number, not NoneType)", retryable=False, recovery="fail",
                    hint="train in bf16 (--bf16 true, not --fp16): ms-swift 4.6 cannot set the fp16 loss scale, "
                         "which starts at 2**32 and overflows in the first steps; every restart begins there again")


# A CUDA environment that cannot run this build: a restart fails the same way (environment_error).
# The driver older than the runtime: torch's _check_driver / c10 CUDAFunctions.cpp ("The NVIDIA
# driver on your system is too old (found version N)"; its "Found no NVIDIA driver" stays gpu_unavailable),
# the runtime's cudaGetErrorString for cudaErrorInsufficientDriver ("CUDA driver version is
# insufficient for CUDA runtime version") and cudaErrorSystemDriverMismatch ("system has
# unsupported display driver / cuda driver combination").
_ENV_DRIVER = re.compile(
    r"The NVIDIA driver on your system is too old(?: \(found version (?P<found>\d+)\))?"
    r"|CUDA driver version is insufficient for CUDA runtime version|cudaErrorInsufficientDriver"
    r"|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH|cudaErrorSystemDriverMismatch"
    r"|system has unsupported display driver / cuda driver combination")
# CUDA's forward compatibility refused on this GPU (since batch 63): cudaErrorCompatNotSupportedOnDevice /
# CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804, whose cudaGetErrorString / cuGetErrorString is "forward compatibility
# was attempted on non supported HW" (driver_types.h: "the system was upgraded to run with forward compatibility but
# the visible hardware detected by CUDA does not support this configuration"): a container or an environment that
# loads the CUDA compat libraries (cuda-compat, libcuda from a newer CUDA than the node's driver) on a GPU they do not
# support (GeForce and other non data-center GPUs), so no CUDA call ever works there until the node's driver runs that
# CUDA itself. The words decide only where CUDA's own wording puts them, as the 802 of _GPU_UNAVAILABLE: after the
# error's number (torch's c10/cuda/CUDAFunctions.cpp device_count_impl: "Unexpected error from cudaGetDeviceCount(). Did
# you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error ", err, ": ",
# cudaGetErrorString(err) -> "Error 804: ..."; THC's "cuda runtime error (804) : ..."; onnxruntime's "CUDA failure
# 804: ..."), after torch's "CUDA error: " (c10/cuda/CUDAException.cpp), or as the enum's names; and not where a person
# only names them (env_compat_stated: a hedge, a fix, an explanation after them, a guide's title, a topic's "For
# `...`," that advice follows, a log level's line).
_ENV_COMPAT = re.compile(r"(?:\b804\)? ?: |CUDA error: |CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE: )"
                         r"forward compatibility was attempted on non supported HW"
                         r"|cudaErrorCompatNotSupportedOnDevice|CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE")
# a topic the words open in a person's advice: "For `CUDA failure 804: ...`, the recommendation is to update your
# cuda driver" (onnxruntime #21435, a maintainer's comment); read over the few words before them in their sentence
_ENV_COMPAT_TOPIC = re.compile(r"(?i)\b(?:for|about|regarding|re)\s+[`'\"]?[^`'\"\n]{0,60}$")


def env_compat_stated(text: str) -> re.Match[str] | None:
    """CUDA's forward-compatibility refusal (_ENV_COMPAT) as a program prints or raises it, not named in a person's
    hedge, fix, explanation, guide or topic, nor on a log level's line (see above)."""
    m = _ENV_COMPAT.search(text)
    if m is None or _LOG_LEVEL_TAG.match(text):
        return None
    lo = _sentence_start(text, m.start(), max(0, m.start() - _MENTION_WINDOW))
    if (_status_mentioned(text, m) or _TOLD_EXPLAINED_AFTER.match(text, m.end()) is not None
            or _ENV_COMPAT_TOPIC.search(text, max(lo, m.start() - 80), m.start()) is not None):
        return None
    return m


# The driver's user-space libraries and its loaded kernel module of different versions (a driver upgraded without
# a reboot or a reload of the nvidia modules): NVML's NVML_ERROR_LIB_RM_VERSION_MISMATCH (18, nvml.h "RM detects
# a driver/library version mismatch"), whose nvmlErrorString nvidia-smi prints as "Failed to initialize NVML:
# Driver/library version mismatch" (exit status 18) and pynvml raises as NVMLError_LibRmVersionMismatch; the
# kernel module's own refusal of the client in the kernel log (nv.c): "NVRM: API mismatch: the client has the
# version 550.144, but / NVRM: this kernel module has the version 550.127." Every CUDA process fails the same way
# until the node is rebooted. The NVIDIA container runtime's hook says the same in lower case when it cannot start a
# GPU container on such a node: libnvidia-container's driver.c wraps each failed NVML call with
# error_set_nvml(..., "nvml error") (error.c's error_vset lower-cases nvmlErrorString's words after it), and the CLI
# prints what its library init returned as warnx("initialization error: %s") (src/cli/configure.c, info.c, list.c;
# warnx's program name first): "nvidia-container-cli: initialization error: nvml error: driver/library version
# mismatch". runc wraps the hook's stderr ("error running hook: exit status 1, stdout: , stderr: ...", older
# "running prestart hook 0 caused ..."), and docker/containerd end the OCI runtime's failure with ": unknown"; the
# container never starts. The lower-case words decide only in those forms: after the CLI's name or its
# "initialization error: " (an issue title that cut the name), or before the runtime's ": unknown" (a title that cut
# the head); a monitor's "gpustat: nvml error: ..." or a FAQ quoting the words is no container hook.
_ENV_RM_MISMATCH = re.compile(r"Driver/library version mismatch|NVML_ERROR_LIB_RM_VERSION_MISMATCH"
                              r"|NVMLError_LibRmVersionMismatch|API mismatch: the client has the version"
                              r"|(?:nvidia-container-cli: (?:[a-z]+ error: )?|\binitialization error: )"
                              r"nvml error: driver/library version mismatch"
                              r"|nvml error: driver/library version mismatch(?=: unknown\b)")
# A build without the GPU's architecture: cudaErrorNoKernelImageForDevice / CUDA_ERROR_NO_BINARY_FOR_GPU
# ("no kernel image is available for execution on the device"), cudaErrorUnsupportedPtxVersion
# ("the provided PTX was compiled with an unsupported toolchain."); torch's _check_cubins warning
# ("<GPU> with CUDA capability sm_86 is not compatible with the current PyTorch installation.")
# names the architecture (decisive only when nothing else explains the exit).
_HSA_INVALID_ISA = r"HSA_STATUS_ERROR_INVALID_ISA(?:_NAME)?\b"
# cudaErrorUnsupportedPtxVersion (222) / CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the CUDA headers' own note on it is
# "The most common reason for this, is the PTX was generated by a compiler newer than what is supported by the CUDA
# driver and PTX JIT compiler": the build is not missing the GPU, the driver is older than the toolkit that built it
_PTX_WORDS = "the provided PTX was compiled with an unsupported toolchain"
_PTX_TOOLCHAIN = _PTX_WORDS + r"|cudaErrorUnsupportedPtxVersion\b|CUDA_ERROR_UNSUPPORTED_PTX_VERSION\b"
_INVALID_IMAGE = (r"a PTX JIT compilation failed|(?:cuda|hip)ErrorInvalid(?:Ptx|KernelImage|KernelFile|Image)\b"
                  r"|CUDA_ERROR_INVALID_(?:PTX|IMAGE)\b|\binvalid kernel file\b|device kernel image is invalid")
# ROCm's words for a missing code object: the summary and hint name ROCm's switches, not CUDA's
_ROCM_ARCH_WORDS = re.compile(r"\bHIP error\b|\bhipError|HSA_STATUS_ERROR|\bgfx\d|\binvalid kernel file\b")
_FLASH_BWD_ARCH = (r"FlashAttention backward for head dim [^\n]*? requires A100/A800 or H100/H800"
                   r"|Expected is_sm\w+(?: \|\| is_sm\w+)* to be true, but got false")
_ENV_ARCH = re.compile(
    # (cudaGetErrorString's words; retyped with a capital too: "No kernel image is available ...")
    r"[Nn]o kernel image is available for execution on the device|cudaErrorNoKernelImageForDevice"
    r"|CUDA_ERROR_NO_BINARY_FOR_GPU|" + _PTX_TOOLCHAIN +
    # the HIP runtime (ROCm) with no code object for the GPU: "hipErrorNoBinaryForGpu: Unable to find code
    # object for all current devices!" (its "no kernel image ..." text is matched above)
    r"|hipErrorNoBinaryForGpu"
    # the runtimes' older name for the same: cudaErrorInvalidDeviceFunction (98; cudaGetErrorString "invalid device
    # function", which the CUDA runtime API documents as "the requested device function does not exist or is not
    # compiled for the proper device architecture") and HIP's hipErrorInvalidDeviceFunction (98, the same text from
    # hipGetErrorString), which torch's ROCm build raises ("HIP error: invalid device function", also retyped with a
    # capital) when its code objects do not include the GPU's gfx target; and the HSA runtime refusing a code
    # object's ISA (hsa.h: HSA_STATUS_ERROR_INVALID_ISA, 0x100F, "The instruction set architecture is invalid.", and
    # HSA_STATUS_ERROR_INVALID_ISA_NAME, 0x1017), which ROCclr's queue callback prints as "Callback: Queue 0x...
    # aborting with error : HSA_STATUS_ERROR_INVALID_ISA: ..." when HSA_OVERRIDE_GFX_VERSION names another ISA
    r"|(?i:invalid device function)|(?:cuda|hip)ErrorInvalidDeviceFunction|" + _HSA_INVALID_ISA +
    # a kernel image or PTX the driver cannot load or JIT-compile for this GPU, in the runtimes' own words
    # (cudaGetErrorString / cuGetErrorString, and HIP's hip_error.cpp): cudaErrorInvalidPtx / CUDA_ERROR_INVALID_PTX
    # (218, "a PTX JIT compilation failed": PTX newer than the driver's JIT, or for another architecture), whose
    # HIP twin hipErrorInvalidKernelFile prints "invalid kernel file" on AMD (a code object the GPU cannot load:
    # DeepEP's launch_hip.cuh check "CUDA error .../launch_hip.cuh:71 'invalid kernel file'"), and
    # cudaErrorInvalidKernelImage / CUDA_ERROR_INVALID_IMAGE / hipErrorInvalidImage (200, "device kernel image is
    # invalid"); every launch of that kernel fails the same way until the build matches the GPU and driver
    r"|" + _INVALID_IMAGE +
    # (flash-attn 2's own check of the GPU's architecture is _ENV_FA2, read where it is stated)
    # flash-attn's backward kernels for large head dims, built for sm80/sm90 only (flash_api.cpp mha_bwd/mha_varlen_bwd,
    # flash-attn's and torch's vendored copy: TORCH_CHECK(is_sm80 || is_sm90, "FlashAttention backward for head
    # dim > 192 requires A100/A800 or H100/H800"), "... head dim 256 with dropout, or head dim 224 with/without
    # dropout requires A100/A800 or H100/H800", and the bare check c10 words "Expected is_sm80 || is_sm90 to be
    # true, but got false." (any such check on the GPU's architecture flags)
    r"|" + _FLASH_BWD_ARCH +
    # Ascend: the CANN kernels package has no binary of an operator for this NPU ("Op Cast does not has
    # any binary.", aclnn's kernel lookup; the op is never runnable on this install)
    r"|Op \w+ does not ha(?:s|ve) any binary")
# The runtime compiler (NVRTC) of the install refusing the GPU's architecture: torch compiles some kernels when they
# are first used (ATen's jiterator, aten/src/ATen/native/cuda/jit_utils.cpp; TorchScript's fuser, torch/csrc/jit/
# codegen/fuser/cuda/fused_kernel.cpp; NNC, torch/csrc/jit/tensorexpr/cuda_codegen.cpp) with NVRTC, passing
# "--gpu-architecture=compute_XY" (or "sm_XY") from the device's compute capability, and on NVRTC_ERROR throws
# NVRTC's program log ("cu << log.data() << std::endl; cu << "nvrtc compilation failed: " ...; throw
# std::runtime_error(cu.str())"); an NVRTC older than the GPU (torch cu128's NVRTC 12.8 on sm_103 B300 or sm_121
# GB10, Isaac Sim's CUDA 11.8 on sm_120) logs "nvrtc: error: invalid value for --gpu-architecture (-arch)", and
# CuPy, Warp and numba print the same log. Every such kernel fails the same way until the NVRTC (the torch build,
# or nvidia-cuda-nvrtc) knows the architecture. Retold it keeps "nvrtc: " and may drop "error: " ("PyTorch cu128
# fails with nvrtc: invalid value for --gpu-architecture"); as an advice or a possibility ("If you see ...") it
# decides nothing (_nvrtc_arch_stated).
_ENV_NVRTC_ARCH = re.compile(r"\bnvrtc: (?:error: )?invalid value for --gpu-architecture(?: ?\(-arch\))?")


# The exception that carries NVRTC's log, right before it: torch's "RuntimeError: ", CuPy's "CompileException: ",
# numba's "NvrtcError: ", a C++ terminate's "what():  " (looked for in the few characters before the log only)
_RAISED_BEFORE = re.compile(r"(?:\w(?:Error|Exception)|\bwhat\(\)):\s*$")
_RAISED_WINDOW = 160
# A line that went on after NVRTC refused: a warning's or a fallback's words (a library that compiles its kernel
# with NVRTC when it can and runs another one when it cannot: "[W jiterator] nvrtc: error: ...; falling back")
_NVRTC_WENT_ON = re.compile(r"(?i)\bwarn(?:ing|s)?\b|\bfall(?:s|ing)?[ -]?back\b|\bfell[ -]back\b")


def _nvrtc_arch_stated(text: str) -> re.Match[str] | None:
    """NVRTC's refusal of the GPU's architecture, stated as what happened: not after a word of possibility, advice
    or denial in its sentence (before the exception's name, when one raised it: "If you see RuntimeError: nvrtc:
    error: ..."), and not on a line that names a fix ("Known issue: ... fixed in 2.9", "Symptom: ... Fix: pip ...")."""
    if "gpu-architecture" not in text:
        return None
    m = _ENV_NVRTC_ARCH.search(text)
    if m is None or _TOLD_FIX.search(text):
        return None
    raised = _RAISED_BEFORE.search(text, max(0, m.start() - _RAISED_WINDOW), m.start())
    end = raised.start() if raised else m.start()
    return None if _hedge_found(_HEDGE, text, _sentence_start(text, end), end) else m


def _nvrtc_arch_raised(text: str) -> bool:
    """NVRTC's refusal as the message of the exception that ended the attempt (decisive): right after the
    exception's name or ``what():``, on a line with no warning's or fallback's words. NVRTC's log alone on its line
    (the raised message's next line, a warning, a retelling) only supports: it decides when nothing else does."""
    m = _ENV_NVRTC_ARCH.search(text)
    return (m is not None and _RAISED_BEFORE.search(text, max(0, m.start() - _RAISED_WINDOW), m.start()) is not None
            and not _NVRTC_WENT_ON.search(text) and not _LOG_LEVEL_TAG.match(text))


# A low-precision recipe the GPU or the CUDA build cannot run: Transformer Engine's own availability
# checks (transformer_engine/pytorch/fp8.py, 2.x quantization.py: check_fp8_support, check_mxfp8_support,
# check_nvfp4_support, check_fp8_block_scaling_support; ROCm's TE the same with gfx names), whose reason is
# raised as `assert fp8_available, reason_for_no_fp8` in fp8_autocast_enter or as
# `RuntimeError(unsupported_reason)` by check_recipe_support, in every wording it has had: "Device compute
# capability 8.9 or higher required for FP8 execution.", "CublasLt version 12.1.3.x or higher required for
# FP8 execution on Ada.", "Cuda version 12.1 or higher required for FP8 execution on Ada.", "Device compute
# capability 10.0 or higher required for MXFP8 execution." (and NVFP4), "MXFP8 (for all gemm layouts) is
# not supported on 12.0+ architectures yet.", "FP8 block scaled GEMM requires Hopper and CUDA >= 12.9." and
# "... requires compute capability 9.0 or higher and CUDA >= 12.9.", ROCm's "Device compute capability
# gfx942 or higher required for FP8 execution." / "gfx950 ... for FP8 OCP format.". (Its shape checks,
# "FP8 execution requires 2D input matrices with height divisible by 8 ...", are the model's, not these.)
_ENV_LOWP = re.compile(
    r"Device compute capability \S+ or higher required for (?:FP8|MXFP8|NVFP4|FP4)(?: execution| OCP format)?"
    r"|(?:CublasLt|Cuda) version \S+ or higher required for FP8 execution on Ada"
    r"|MXFP8 \(for all gemm layouts\) is not supported on \S+ architectures yet"
    r"|FP8 block scaled GEMM requires (?:Hopper|compute capability \S+ or higher) and CUDA >= [\d.]*\d")
# GPUs that cannot reach each other's memory (the PCIe topology, an IOMMU/ACS setting, a VM or a
# container): the CUDA runtime's cudaErrorPeerAccessUnsupported (217), whose cudaGetErrorString is "peer
# access is not supported between these two devices" (the driver's CUDA_ERROR_PEER_ACCESS_UNSUPPORTED), as
# torch raises it ("CUDA error: ..."), NCCL's P2P transport logs it ("transport/p2p.cc: NCCL WARN failed to
# open CUDA IPC handle : 217 peer access ...", CUDACHECK's "Cuda failure 217 '...'") and vLLM/SGLang's
# custom all-reduce prints it ("Failed: Cuda error .../custom_all_reduce.cuh:307 '...'"). NCCL then
# fails as "unhandled cuda error": its echo, not another cause.
_ENV_P2P = re.compile(r"peer access is not supported between these two devices|cudaErrorPeerAccessUnsupported"
                      r"|CUDA_ERROR_PEER_ACCESS_UNSUPPORTED")
# FlashAttention-4 (flash-attn's CuTe DSL kernels, flash_attn.cute; the FA4 path of transformers, Transformer
# Engine and ms-swift's Megatron on Hopper and Blackwell) refusing an attention configuration that its kernels
# for this GPU architecture do not implement, in its own assertion and NotImplementedError texts (read in
# flash_attn/cute/interface.py, sm100_hd256_2cta_fmha_forward.py / _backward.py and flash_fwd_sm90.py of
# Dao-AILab/flash-attention 0251105a, Aug 2026): "SM100 forward with head_dim=256 does not support aux_tensors"
# (softcap, block sparsity, learnable_sink, seqused_q/seqused_k, score_mod, mask_mod, pack_gqa, SplitKV, local
# attention ...; "SM100 backward with head_dim=256 ..." the same, "... only supports cluster_size in {1, 2}",
# "... requires use_2cta_instrs=True"), "SM100 hd256 2CTA paged KV requires max_seqlen_k divisible by ...",
# "SM100 block-sparse backward with head_dim=192 requires 2CTA; ...", "SM120 forward only supports
# num_splits=1", _validate_head_dims' "(head_dim, head_dim_v)=(96, 96) is not supported on SM100/SM110. ..."
# (and "... on SM90."), "paged KV not supported on SM 8.0", "SplitKV not supported on SM 9.0", "Block sparsity
# not supported on SM 12.0", "score_mod backward not supported on SM 12.0", "Custom user-provided score_mod is
# not supported on SM8x architectures.", "FP8 is only supported on SM100 (compute capability 10.x) for FA4
# CuTe.", "Learnable sink backward is supported on SM90 and SM100/SM110", "Only SM 9.x is supported". The same
# call on the same GPU fails the same way: environment_error, another attention backend or a configuration
# the kernel implements.
_ENV_FA4 = re.compile(
    r"\bSM\d{2,3}(?:/SM\d{2,3})? (?:forward|backward|block-sparse backward|hd\d+ 2CTA)\b[^\n]*? "
    r"(?:does not support|only supports|requires) "
    r"|\(head_dim, head_dim_v\)=\(\d+, \d+\) is not supported on SM\d+"
    r"|\bnot supported on SM \d+\.\d\b|is not supported on SM8x architectures"
    r"|is only supported on SM\d+ \(compute capability [\d.x]+\) for FA4"
    r"|is supported on SM90 and SM100/SM110|\bOnly SM \d+\.x is supported")
# Its kernel classes check in their constructors that the tile and head sizes fit this architecture's tensor
# and shared memory (flash_fwd_sm100.py FlashAttentionForwardSm100.__init__: `assert self.tmem_total <=
# self.tmem_alloc_cols`, in 2025 `<= SM100_TMEM_CAPACITY_COLUMNS`; flash_bwd_sm100.py: `assert self.tile_hdim
# <= 128 or ...`): a bare AssertionError raised from such a constructor is the same refusal without words.
_FA4_KERNEL_FILE = re.compile(r"flash_attn[/\\]cute[/\\]\w*sm_?\d+\w*\.py$")


def _fa4_kernel_refusal(text: str, stack: list[tuple[str, str]]) -> str | None:
    """The FlashAttention-4 kernel file whose constructor raised this bare ``AssertionError``, else None."""
    if text.rstrip(": ") != "AssertionError" or not stack or stack[-1][1] != "__init__":
        return None
    m = _FA4_KERNEL_FILE.search(stack[-1][0])
    return m.group(0).replace("\\", "/").rsplit("/", 1)[-1] if m else None


# A matmul kernel that refuses this GPU's compute capability, in the checks' own words: Megatron-LM's validate_args
# for --moe-grouped-gemm (megatron/training/arguments.py: `assert dc[0] >= 8, "Unsupported compute capability for
# GroupedGEMM kernels."`, the grouped_gemm kernels of its MoE experts, also in forks that keep the line), and torch's
# device checks of its private matmuls (aten/src/ATen/native/cuda/Blas.cpp; TORCH_CHECK, from torch 2.9
# TORCH_CHECK_VALUE): torch 2.8's "torch._grouped_mm is only supported on CUDA devices with compute capability =
# 9.0" (`dprops->major == 9`: an A100 or a Blackwell is refused; 2.9+ runs sm_80+), "torch._scaled_grouped_mm is only
# supported on CUDA devices with compute capability = [9.0, 10.0], or ROCm MI300+" and "torch._scaled_mm is only
# supported on CUDA devices with compute capability >= 9.0 or 8.9, or ROCm MI300+" (FP8). The same call on the same
# GPU fails the same way. (Retyped "... in only supported ..." in a report: the check's words otherwise.)
_ENV_GEMM = re.compile(r"Unsupported compute capability for GroupedGEMM kernels"
                       r"|\btorch\._(?:scaled_)?(?:grouped_)?mm i[sn] only supported on CUDA devices with compute "
                       r"capability[^\n]*?(?=[\"'`]|$)")
# torch inductor refusing a GPU below CUDA capability 7.0 for triton (since batch 65): torch/_inductor/exc.py, class
# GPUTooOldForTriton(ShortenTraceback): f"Found {device_props.name} which is too old to be supported by the triton GPU
# compiler, which is used as the backend. Triton only supports devices of CUDA Capability >= 7.0, but your device is of
# CUDA capability {device_props.major}.{device_props.minor}" (torch 2.6+), raised by torch/_inductor/scheduler.py
# Scheduler.create_backend when has_triton() is false on a CUDA device of major < 7 (`raise
# GPUTooOldForTriton(device_props, inspect.currentframe())`; later torch's _dynamo/device_interface.py
# CudaInterface.raise_if_triton_unavailable) and wrapped by 2.7+'s InductorError ("InductorError: GPUTooOldForTriton:
# Found ..."); torch 2.0-2.5's create_backend raised the same f-string as a RuntimeError, which dynamo wraps as
# "BackendCompilerFailed: backend='inductor' raised: RuntimeError: Found ...". torch.compile never runs on such a GPU
# (Pascal, Maxwell): the hardware's, no package to install (its sibling TritonMissing, _TRITON_MISSING, is). The GPU's
# name is cudaDeviceProp::name (no braces: the f-string CPython quotes from create_backend's frame is no message).
_TRITON_GPU_OLD = re.compile(r"Found (?P<gpu>[^{}\n]{1,256}?) which is too old to be supported by the triton GPU "
                             r"compiler(?:, which is used as the backend\. Triton only supports devices of CUDA "
                             r"Capability >= [\d.]+, but your device is of CUDA capability (?P<cc>\d+\.\d+))?")
# ... as raised: right after the exception's name (RuntimeError before torch 2.6, GPUTooOldForTriton since, behind
# InductorError's or a worker's log prefix), or at its line's start (an issue title that kept only the message, after
# a template's tag: "[Usage]: Found Tesla P40 which is too old ...")
_TRITON_GPU_OLD_RAISED = re.compile(r"\b(?:RuntimeError|GPUTooOldForTriton):\s*$")
# A Triton kernel compiled for more of the GPU than this GPU has (since batch 72): triton/runtime/errors.py (3.4.0
# l.14-22), class OutOfResources(TritonError), str f"out of resource: {name}, Required: {required}, Hardware limit:
# {limit}. Reducing block sizes or `num_stages` may help.", raised by triton/compiler/compiler.py CompiledKernel.
# _init_handles (3.4.0 l.474-494) when the kernel is loaded on the device: `if self.metadata.shared > max_shared: raise
# OutOfResources(self.metadata.shared, max_shared, "shared memory")`, the same for "tensor memory" (Blackwell's TMEM)
# and "threads" (num_warps * warp_size over the loaded function's max threads). The sizes are the compiled kernel's
# (its block sizes and num_stages, chosen by the project for another GPU) against this device's limit, so every launch
# on this GPU and every restart fails the same way: the hardware cannot run the kernel as built, an environment_error
# (the no-progress rule had ended it as unknown, batches 68-71). The autotuner catches it while benchmarking a config
# (triton/runtime/autotuner.py l.161: `except (OutOfResources, CompileTimeAssertionFailure, PTXASError)`, the config's
# time is inf) and prints it only as "Autotuning failed with out of resource: ..." when verbose: the exception's name
# before the words is what says it was raised. Older releases spelt the class triton.runtime.autotuner.OutOfResources
# and the limit "Hardware limitation" (2.x).
_TRITON_OOR = re.compile(r"\bOutOfResources: out of resource: (?P<res>shared memory|tensor memory|threads)"
                         r"(?:, Required: (?P<req>\d+), Hardware limit(?:ation)?: (?P<lim>\d+))?")


# ... and, since batch 73 (an item batch 72 left), the class's rendered message whole, its required size and the
# device's limit (the str() above, no other program words it so), wrapped by another exception's name before it on
# the line (a wrapper re-raising str(e): "RuntimeError: out of resource: threads, Required: 2048, Hardware limit:
# 1024. ...", "CompilationError: at 14:8: out of resource: ..."), without Triton's class name; within 200 characters
# of that name (the wrapper's head and a location), and not the autotuner's "Autotuning failed with ..." (no name)
_TRITON_OOR_RENDERED = re.compile(r"\bout of resource: (?P<res>shared memory|tensor memory|threads), Required: "
                                  r"(?P<req>\d+), Hardware limit(?:ation)?: (?P<lim>\d+)")
_EXCEPTION_NAME_BEFORE = re.compile(r"\b[A-Z]\w*(?:Error|Exception):\s")


def triton_out_of_resources(text: str) -> re.Match[str] | None:
    """Triton's OutOfResources (_TRITON_OOR) raised on this line, stated as what happened (_arch_refusal_stated: not
    after a fix's word, in a hedge's sentence, a guide's title, a literal a call is given, nor explained after it)."""
    if "out of resource: " not in text:
        return None
    m = _TRITON_OOR.search(text)
    if m is None:
        w = _TRITON_OOR_RENDERED.search(text)
        if w is not None and _EXCEPTION_NAME_BEFORE.search(text, max(0, w.start() - 200), w.start()) is not None:
            m = w
    if m is None or _STRING_ARG_OPENS.search(text, max(0, m.start() - 80), m.start()) is not None:
        return None
    return m if _arch_refusal_stated(text, m) else None


# a string literal an argument opens right before the exception's (dotted) name: a keyword's or a call's value
# (`pytest.raises(OutOfResources, match="OutOfResources: out of resource: ...")`), not a message raised
_STRING_ARG_OPENS = re.compile(r"[=(,]\s*[rbf]?[\"'][\w.]*$")


_MESSAGE_AT_START = re.compile(r"[\s>*`'\"_-]*+(?:\[\w+\]:\s*)?")
# FlashAttention-3's own check of the GPU's architecture (flash-attention's hopper/flash_api.cpp, its is_sm90 / is_sm9x
# TORCH_CHECKs from July 2024 to January 2025: mha_fwd's "FlashAttention only supports Hopper GPUs or newer." and
# "FlashAttention-3 only supports Hopper GPUs or newer.", mha_bwd's "FlashAttentionHopper only supports Hopper GPUs or
# newer."; since 7bc3f031 (2025-01-08) FA3 runs on Ampere too and keeps mha_combine's "Attention combine function only
# supports Ampere GPUs or newer."): every call on an older GPU fails the same way (since batch 65)
# flash-attn 2's own check of the GPU's architecture (csrc/flash_attn/flash_api.cpp mha_fwd/mha_bwd/mha_varlen_*:
# TORCH_CHECK(is_sm8x_min, "FlashAttention only supports Ampere GPUs or newer.")), raised on every call on a Turing or
# Volta GPU; read as FlashAttention-3's is (fa_arch_stated): since batch 65's review not in advice ("If you see ..."), a
# fix, a guide's title or a string a call is given, where it had decided wherever the words stood
_ENV_FA2 = re.compile(r"\bFlashAttention only supports Ampere GPUs or newer")
_ENV_FA3 = re.compile(r"\b(?:FlashAttention(?:-3|Hopper)?) only supports Hopper GPUs or newer"
                      r"|\bAttention combine function only supports Ampere GPUs or newer")
# a Chinese write-up's title that shares, records or sums up how its writer solved the error named after it ("分享如何解决
# RuntimeError: Found NVIDIA GeForce GTX 1060 which is too old ...", sharing how to solve ...): a guide, not a report
_ZH_SHARED_FIX = re.compile(r"(?:分享|记录|總結|总结)[^，。,.!?！？\n]{0,12}?(?:解决|解決|修复|修復|处理|處理)")
# the message as a string literal in code (a test's `RuntimeError("FlashAttention only supports Hopper GPUs or newer.")`,
# the check's own `TORCH_CHECK(is_sm90, "...")`): the words a call is given, not a message raised
_QUOTED_IN_CALL = re.compile(r"\w\((?:[^()\n]{0,60},\s*)?[\"']$")


def _arch_refusal_stated(text: str, m: re.Match[str]) -> bool:
    """A build's or a compiler's refusal of the GPU's architecture at text[m] stated as what happened to this run: not
    on a line that went on (a warning's or a fallback's words: dynamo's suppress_errors logs the backend's failure at
    WARNING and runs the frame eagerly), not after a fix's word on the line, a hedge in its sentence, a guide's title or
    a Chinese write-up sharing its fix (_ZH_SHARED_FIX), not as a string literal a call is given (_QUOTED_IN_CALL), and
    not explained after it."""
    if _NVRTC_WENT_ON.search(text) or _GUIDE_TITLE.search(text) is not None:
        return False
    if _TOLD_FIX_WORD.search(text, 0, m.start()) or _ZH_SHARED_FIX.search(text, 0, m.start()):
        return False
    if _QUOTED_IN_CALL.search(text, max(0, m.start() - 80), m.start()) is not None:
        return False
    if _STATUS_EXPLAINED_AFTER.match(text, m.end()) is not None:
        return False
    return _hedge_found(_HEDGE, text, _sentence_start(text, m.start(), max(0, m.start() - _MENTION_WINDOW)),
                        m.start()) is None


def triton_gpu_too_old(text: str) -> re.Match[str] | None:
    """torch inductor's GPUTooOldForTriton (_TRITON_GPU_OLD) raised on this line: after the exception's name or at the
    line's start, stated as what happened (_arch_refusal_stated)."""
    if "too old to be supported by the triton" not in text:
        return None
    for m in _TRITON_GPU_OLD.finditer(text):
        raised = (_TRITON_GPU_OLD_RAISED.search(text, max(0, m.start() - 40), m.start()) is not None
                  or _MESSAGE_AT_START.fullmatch(text, 0, m.start()) is not None)
        if raised and _arch_refusal_stated(text, m):
            return m
    return None


def fa3_arch_stated(text: str) -> re.Match[str] | None:
    """FlashAttention-3's refusal of the GPU's architecture (_ENV_FA3), stated as what happened (_arch_refusal_stated)."""
    return _fa_arch_stated(_ENV_FA3, text)


def fa2_arch_stated(text: str) -> re.Match[str] | None:
    """flash-attn 2's refusal of the GPU's architecture (_ENV_FA2), stated as what happened (_arch_refusal_stated)."""
    return _fa_arch_stated(_ENV_FA2, text)


def _fa_arch_stated(pattern: re.Pattern[str], text: str) -> re.Match[str] | None:
    if "GPUs or newer" not in text:
        return None
    m = pattern.search(text)
    return m if m is not None and _arch_refusal_stated(text, m) else None


# A GPU without bfloat16 asked to run in it (since batch 66), in the two refusals an LLM run meets at its start. vLLM's
# platform check of the model's dtype, called by the GPU worker's init_device (vllm/platforms/cuda.py
# CudaPlatformBase.check_if_supports_dtype, v0.11.0 l.497-514 and on main; rocm.py l.472-489 the same words;
# vllm/v1/worker/gpu_worker.py l.163): `if not cls.has_device_capability(80): ... raise ValueError("Bfloat16 is only
# supported on GPUs with compute capability of at least 8.0. Your {gpu_name} GPU {compute_str}. You can use float16
# instead by explicitly setting the `dtype` flag in CLI, for example: --dtype=half.")`, compute_str "has compute
# capability M.m" or "does not have a compute capability" (vLLM 0.2-0.6's worker.py _check_if_gpu_supports_dtype: the
# first two sentences, the float16 advice since January 2024), so an RL trainer's rollout engine (verl, NeMo-RL,
# OpenRLHF, TRL's vLLM) on a V100 or a T4 stops there; and transformers' TrainingArguments.__post_init__
# (transformers/training_args.py, 4.57.1 l.1737-1747: `if not is_torch_bf16_gpu_available() ...: error_message = "Your
# setup doesn't support bf16/gpu."`, then " You need Ampere+ GPU with cuda>=11.0" when CUDA is available; before 4.3x
# " You need torch>=1.10, using Ampere GPU with cuda>=11.0"). The same GPU refuses every restart the same way:
# environment_error, float16 or another GPU.
_ENV_BF16 = re.compile(r"Bfloat16 is only supported on GPUs with compute capability of at least 8\.0"
                       r"|Your setup doesn't support bf16/gpu\.")
# the GPU vLLM names, on the message's line or, wrapped, at the next line's start (compute_str above; the name is
# NVML's or cudaDeviceProp's, bounded as _ENV_SM's)
_BF16_GPU = re.compile(r"\bYour (?P<gpu>[^\n]{1,256}?) GPU (?:has compute capability (?P<cc>\d+\.\d+)"
                       r"|does not have a compute capability)")
# ... as raised: right after ValueError's name (behind Xinference's actor address, "ValueError: [address=0.0.0.0:37495,
# pid=262] Bfloat16 ...": xoscar re-raises the actor's exception with it), after vLLM's logger head at ERROR (its engine
# logs the start-up exception before it raises: "ERROR 01-20 01:25:05 engine.py:366] Bfloat16 ...", vllm/logger.py's
# "%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s"; a NIM container's "ERROR 2025-07-21
# 14:34:24.934 async_trtllm_engine_factory.py:62] ..." the same), or at its line's start (an issue title, a paste);
# never behind a comment's mark ("#ValueError: Bfloat16 ..." in a script that sets dtype="half" below it)
_BF16_RAISED = re.compile(r"(?:\bValueError:\s*(?:\[address=[^\]\n]{0,80}\]\s*)?"
                          r"|\b(?:ERROR|CRITICAL) [\d\-: .]{8,30} \[?[\w./-]+:\d+\]\s*)$")
_COMMENT_MARK = re.compile(r"\s*(?:#|//)")


def bf16_gpu_refused(text: str) -> re.Match[str] | None:
    """vLLM's or transformers' refusal of bfloat16 on this GPU (_ENV_BF16) raised on this line: after ValueError's name
    or vLLM's ERROR head, or at the line's start, not behind a comment's mark, and stated as what happened
    (_arch_refusal_stated: not in a hedge's sentence, after a fix, in a guide's title, as a call's string, explained)."""
    if "Bfloat16 is only" not in text and "support bf16/gpu" not in text:
        return None
    m = _ENV_BF16.search(text)
    if m is None or _COMMENT_MARK.match(text) is not None:
        return None
    raised = (_BF16_RAISED.search(text, max(0, m.start() - 120), m.start()) is not None
              or _MESSAGE_AT_START.fullmatch(text, 0, m.start()) is not None)
    return m if raised and _arch_refusal_stated(text, m) else None


# The device's name before the phrase is bounded (torch/cuda/__init__.py `_check_capability` prints
# get_device_name(), cudaDeviceProp::name, a char[256]): an unbounded `\S.*?` scanned from every start of a line to
# its end when the phrase was there and its rest was not, the line's square (round 21: 18 s on one 16k line).
_ENV_SM = re.compile(r"(?P<gpu>\S[^\n]{0,255}?) with CUDA capability (?P<sm>sm_\d+) is not compatible with the current "
                     r"PyTorch installation")
# A model or dataset the Hub will not give (hub_access): huggingface_hub's errors.py classes and
# hf_raise_for_status's messages (utils/_http.py: "Cannot access gated repo for url U.", "Repository
# Not Found for url: U.", "Revision Not Found for url: U.", OfflineAdapter's "Cannot reach U: offline
# mode is enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment variable."), its
# validators ("Repo id must be in the form 'repo_name' or 'namespace/repo_name'", "Repo id must use
# alphanumeric chars ..."), file_download's LocalEntryNotFoundError ("... we cannot find the requested
# files in the local cache", "Cannot find the requested files in the disk cache and outgoing traffic
# has been disabled"), transformers' wrappers ("You are trying to access a gated repo.", "We couldn't
# connect to 'https://huggingface.co' to load this file", "... is not a local folder and is not a valid
# model identifier listed on 'https://huggingface.co/models'", the gated repo's "Make sure to have
# access to it at https://huggingface.co/ORG/NAME."), datasets' ("Dataset 'X' is a gated
# dataset on the Hub", "Dataset 'X' doesn't exist on the Hub or cannot be accessed"), and ModelScope's
# hub (NotExistError; "The request model: X does not exist!"; "Repo X not exists on ..."), and
# transformers' tokenizer loading (tokenization_utils_base.py, PreTrainedTokenizerBase.from_pretrained:
# every vocab file resolved to None, cached_file asked not to raise on missing entries or connection
# errors, so a Hub that is unreachable, refuses or has no such repo ends as
# ``raise EnvironmentError(f"Can't load tokenizer for '{name}'. If you were trying to load it from
# 'https://huggingface.co/models', make sure you don't have a local directory with the same name.
# Otherwise, make sure '{name}' is the correct path to a directory containing all relevant files for
# a {cls.__name__} tokenizer.")``, printed ``OSError: Can't load tokenizer for ...``; later versions
# raise the same text as ``OSError`` for any non-OSError from cached_file).
_HUB_GATED = re.compile(r"GatedRepoError|Cannot access gated repo|You are trying to access a gated repo"
                        r"|Make sure to have access to it at https?://|is a gated dataset on the Hub")
_HUB_MISSING = re.compile(r"RepositoryNotFoundError|Repository Not Found for url|RevisionNotFoundError"
                          r"|Revision Not Found for url|is not a valid model identifier listed on"
                          r"|DatasetNotFoundError|doesn't exist on the Hub or cannot be accessed"
                          r"|401 Client Error: Unauthorized for url: https?://huggingface\.co")
_HUB_BAD_ID = re.compile(r"Repo id must (?:be in the form|use alphanumeric chars)")
_HUB_OFFLINE = re.compile(r"LocalEntryNotFoundError|cannot find the requested files in the local cache"
                          r"|Cannot find the requested files in the disk cache|OfflineModeIsEnabled"
                          r"|offline mode is enabled|We couldn't connect to '?https?://huggingface\.co")
_HUB_MODELSCOPE = re.compile(r"\bNotExistError\b|The request (?:model|dataset): \S+ does not exist!"
                             r"|Repo \S+ not exists on")
_HUB_TOKENIZER = re.compile(r"Can't load tokenizer for '[^']*'")
# The Hub refusing more requests in this window (HTTP 429; huggingface.co/docs/hub/rate-limits: per account, or
# per address without a token, over 5-minute fixed windows), in the words of the client that asked: requests'
# HTTPError ("429 Client Error: Too Many Requests for url: U", huggingface_hub < 1.0, transformers, datasets),
# httpx's ("Client error '429 Too Many Requests' for url 'U'", huggingface_hub 1.0-1.1), huggingface_hub >= 1.2's
# hf_raise_for_status (utils/_http.py: "429 Too Many Requests for url: U." or, from the RateLimit headers, "429
# Too Many Requests: you have reached your 'api' rate limit." then "Retry after N seconds (R/Q requests remaining
# in current Ws window)."), hf_xet's Rust client ("Reqwest Error: HTTP status client error (429 Too Many
# Requests)") and aiohttp under datasets' streaming ("429, message='Too Many Requests', url=..."). The status
# alone is any server's: it is the Hub's only where the same line names the Hub (its hosts, its error class, its
# client, or the Hub's own "you have reached your '...' rate limit").
_HUB_429 = re.compile(r"\b429\b,? (?:Client Error: |message=')?Too Many Requests", re.IGNORECASE)
_HUB_NAMED = re.compile(r"(?:huggingface\.co|\bhf\.co|hf-mirror\.com)\b|HfHubHTTPError|huggingface_hub"
                        r"|Hugging ?Face|Reqwest Error|you have reached your '\w+' rate limit", re.IGNORECASE)
_HUB_RETRY_AFTER = re.compile(r"Retry after (\d+) seconds")
# the lines of huggingface_hub >= 1.2's 429 message after its status line
_HUB_429_TAIL = re.compile(r"\bRetry after \d+ seconds|(?:^|\s)Url: https?://")


def hub_rate_limited(text: str) -> bool:
    """The line says the Hugging Face Hub answered 429 Too Many Requests."""
    return bool(_HUB_429.search(text) and _HUB_NAMED.search(text))


# the first kind of this order among the hits names the failure: a tokenizer that could not be
# loaded after a Hub error the log also shows is that error
_HUB_KINDS = (("gated", _HUB_GATED), ("bad_id", _HUB_BAD_ID), ("offline", _HUB_OFFLINE),
              ("modelscope", _HUB_MODELSCOPE), ("missing", _HUB_MISSING), ("tokenizer", _HUB_TOKENIZER))
_HUB_REPO = re.compile(r"Can't load tokenizer for '([^']+)'|https?://(?:[^/\s@]+@)?huggingface\.co/(?:api/(?:models|datasets|spaces)/)?(?:datasets/)?(\S+)"
                       r"|(?:Access to (?:model|dataset)|The request (?:model|dataset):|Repo) ([\w.-]+/[\w.-]+)"
                       r"|Dataset '([^']+)'")
_HUB_URL_TAIL = re.compile(r"/(?:resolve|revision|refs|tree|blob)/.*$|[.,;:)'\"]+$")

# The decisive signature of each family, for rejoining a phrase a line wrap split (_wrap_join).
_DECISIVE: dict[str, re.Pattern[str]] = {
    "oom": _OOM, "nccl": _NCCL, "port": _PORT, "div": _DIV, "recompute": _RECOMPUTE, "fault": _FAULT,
    "sig": _SIG_TEXT, "gpu": _GPU_UNAVAILABLE, "hostoom": _HOST_OOM, "dep": _DEP_PHRASE, "slurm": _SLURM_CANCEL,
}

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
    listed_own: set[str] = field(default_factory=set)       # of those, the ones the message shows are ours
    unallocated_gib: float = 0.0
    frames: list[tuple[str, str]] = field(default_factory=list)  # (file, func) of its traceback


@dataclass
class _Scan:
    oom: _Hits = field(default_factory=_Hits)
    nccl: _Hits = field(default_factory=_Hits)
    nccl_timeout: _Hits = field(default_factory=_Hits)
    watchdog_relay: list[int] = field(default_factory=list)   # the watchdog's exit relaying a CUDA/HIP error
    nccl_relayed: bool = False    # every NCCL line is the watchdog relaying such an error (_WATCHDOG_ECHO)
    deepep: list[tuple[int, str]] = field(default_factory=list)   # DeepEP's timeouts (_DEEPEP_TIMEOUT)
    port: _Hits = field(default_factory=_Hits)
    div: _Hits = field(default_factory=_Hits)
    recompute: _Hits = field(default_factory=_Hits)
    fault: _Hits = field(default_factory=_Hits)
    # idx, text, xid, pci, told: a person's Xid by its number (xid_told), read only when no driver's line was seen
    xids: list[tuple[int, str, int, str, bool]] = field(default_factory=list)
    # idx, kind, what, reset (RST or D-RST Yes), headed (behind its "NVRM: Xid" head, not retold)
    containment: list[tuple[int, str, str, bool, bool]] = field(default_factory=list)
    sig_text: list[tuple[int, str, int]] = field(default_factory=list)    # idx, text, signal
    # a wrapper's negative exit code of a child (wrapper_negative_status): idx, text, signal; decided late
    wrapper_sig: list[tuple[int, str, int]] = field(default_factory=list)
    sig_told: list[tuple[int, str]] = field(default_factory=list)    # a segfault told in words (segfault_told)
    oom_kill_told: list[tuple[int, str]] = field(default_factory=list)    # the OOM killer told in words
    host_oom_told: list[tuple[int, str]] = field(default_factory=list)    # the host's OOM told in words (batch 50)
    oom_gpu_told: list[tuple[int, str]] = field(default_factory=list)    # a GPU's OOM told in words (decided last)
    npu_host: list[int] = field(default_factory=list)    # lines naming an Ascend host allocation (_NPU_HOST_ALLOC)
    # an Xid told with a past time of its own (xid_other_time): decides only with no exception after it
    xid_other_time: list[tuple[int, str, int, str]] = field(default_factory=list)
    # an NCCL timeout told in words, an IB completion error retold without its head (_NCCL_IB_RETOLD)
    nccl_told: list[tuple[int, str]] = field(default_factory=list)
    pals_seen: bool = False    # a PALS rank-end line was read: the ones after it are the launcher's teardown
    # (srun label, PID) torchrun SIGKILLed itself (_TR_FORCED_KILL), and the failure-entry lines reporting them
    agent_killed: set[tuple[int | None, int]] = field(default_factory=set)
    agent_kill_lines: set[int] = field(default_factory=set)
    others_killed: bool = False    # concurrently killed the other commands: their exits after it are its own kill
    gpu: _Hits = field(default_factory=_Hits)
    usage: _Hits = field(default_factory=_Hits)
    # "prog: error: ..." lines (_ARGPARSE_ERROR), argparse's only beside its usage line or exit status 2
    argparse_errors: list[tuple[int, str]] = field(default_factory=list)
    usage_printed: bool = False     # a line starts with argparse's "usage: "
    args: _Hits = field(default_factory=_Hits)     # an exception raised by the argument checks (_ARGS_FRAME_*)
    setup: _Hits = field(default_factory=_Hits)    # ... by the trainer's start-up before training (_SETUP_*)
    data: _Hits = field(default_factory=_Hits)     # datasets could not read the data (dataset_unreadable)
    data_said: list[tuple[int, str]] = field(default_factory=list)   # datasets' own line naming the file
    data_causes: list[tuple[int, str]] = field(default_factory=list)   # pyarrow's and the like (_DATA_TEXT_CAUSE)
    export: _Hits = field(default_factory=_Hits)   # ... by ms-swift's export pipeline (_EXPORT_FRAME_FILE)
    program: _Hits = field(default_factory=_Hits)  # the interpreter found no program to run (_PROGRAM_MISSING)
    resume: _Hits = field(default_factory=_Hits)   # ms-swift's refusal of the checkpoint it resumed (_SWIFT_RESUME_REFUSALS)
    slurm: list[tuple[int, str, str]] = field(default_factory=list)   # idx, text, job state it implies
    # sbatch's own lines in the log (core.sbatch_words; since batch 52, its place since review R40): its refusals
    # (idx, text, reason), its other lines (a limit slurmctld named, a retry note) and its last success's line
    sbatch: list[tuple[int, str, str]] = field(default_factory=list)
    sbatch_notes: dict[int, tuple[str, str]] = field(default_factory=dict)     # idx: (text, what it says)
    sbatch_submitted: int = -1
    host_oom: _Hits = field(default_factory=_Hits)
    host_alloc: _Hits = field(default_factory=_Hits)   # ENOMEM for host memory (see _HOST_ALLOC)
    disk: _Hits = field(default_factory=_Hits)
    shm: _Hits = field(default_factory=_Hits)       # ENOSPC on /dev/shm (see _SHM_FULL)
    env: _Hits = field(default_factory=_Hits)       # driver too old / no kernel image (support: sm_XX warning)
    hub: list[tuple[int, str, str]] = field(default_factory=list)   # idx, text, kind (see _HUB_KINDS)
    hub_tail: list[tuple[int, str]] = field(default_factory=list)   # huggingface_hub's 429 lines "Retry after", "Url:"
    deps: list[tuple[int, str, list[tuple[str, str]]]] = field(default_factory=list)  # idx, text, frames
    failures: list[_RootCause] = field(default_factory=list)   # failure entries outside a root block
    exceptions: list[tuple[int, str]] = field(default_factory=list)
    raised_frames: dict[int, list[tuple[str, str]]] = field(default_factory=dict)   # an exception's line -> its traceback's (file, function)s, outermost first
    # failed host assert()s (_HOST_ASSERT): named by an unknown verdict, but never "something else ended it"
    # (darknet asserts on the CUDA error it has just printed: the error decides)
    asserts: list[tuple[int, str]] = field(default_factory=list)
    teardown: set[int] = field(default_factory=set)    # exceptions that are the echo of an earlier one (_TEARDOWN)
    root: _RootCause | None = None
    failed_line: _RootCause | None = None
    oom_info: _OomInfo = field(default_factory=_OomInfo)
    fa4_kernel: str | None = None   # FlashAttention-4's kernel file whose constructor refused (_fa4_kernel_refusal)
    skipped_update: _Hits = field(default_factory=_Hits)   # ms-swift Megatron on a skipped update (_swift_skipped_update)
    last_lines: list[tuple[int, str]] = field(default_factory=list)

    def exceptions_after(self, idx: int, *, but: Collection[int] = ()) -> bool:
        """An exception line after line ``idx`` (other than the lines ``but`` and the teardown echoes of an
        earlier exception): something else ended it."""
        return any(i > idx and i not in but and i not in self.teardown for i, _ in self.exceptions)

    def last_told(self, told: list[tuple[int, str]]) -> tuple[int, str] | None:
        """The last of ``told`` (a failure only a person's words tell, by line) that no exception
        raised after it ended: what a program printed outranks a report's words."""
        return next(((i, t) for i, t in reversed(told) if not self.exceptions_after(i)), None)



def _iter_clean(log_tail: Iterable[str]) -> Iterable[tuple[str, int | None, int]]:
    for raw in log_tail:
        if "\r" in raw or "\n" in raw:
            for part in re.split(r"[\r\n]+", raw):
                if part.strip():
                    yield _clean(part)
        else:
            yield _clean(raw)


# A program's lines shown as an example, not printed by this run (since batch 46): a tool's pull request that shows
# the driver's lines as its parser's sample input ("**kmsg input:**" over "NVRM: Xid (PCI:0019:01:00): 149, ...",
# leptonai/gpud #1174), a guide's "Example output:", "For example:", or its second-person walk-through ("Your pod
# crashed. You run kubectl describe and see this:" over "Reason: OOMKilled" / "Exit Code: 137"). The heading is a
# line of its own that ends with its colon; the example is the lines under it up to the first blank line after them
# or a line of prose (a sentence ending in its period), and never more than _EXAMPLE_LINES lines (a log tail keeps no
# blank lines: an example is short, and a real crash below a stray "input:" still decides). A person's own "I see this:" or "Here is the log:" is no
# example heading: their lines are their run's. Since batch 56 also a Chinese guide's heading over its list of common
# failures, their log lines as items ("常见的分布式训练通信失败表现包括:" over "• RuntimeError: NCCL error in ...:
# unhandled system error" and "• Address already in use绑定冲突", a write-up on ms-swift's distributed training,
# tests/crash/public 1231; one line's "常见错误：NCCL timeout、CUDA out of memory" is _zh_listed's): 常见 or 典型
# (common, typical: _ZH_LIST_GENERAL's words of a guide) and 包括 or 如下 (include, as follows) before the colon;
# a report's "训练中遇到两个问题：" names no common kind and stays the run's
# Since batch 59 also a reference page's sample of an error's text ("Sample Error Messages:" over XLA's
# "RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. ...",
# openxla.org/xla/errors/error_1000, the heading XLA's own docs/errors/error_*.md put over each code's messages: "Sample
# error message:", "Sample Error Messages:"), and "Example error(s):"; a report's own "Error message:" / "Error
# messages:" heading is none
_EXAMPLE_KINDS = r"(?:input|output|logs?|errors?(?:\s+(?:messages?|logs?|outputs?))?)"
_EXAMPLE_HEADING = re.compile(r"(?i:[#*_>\s]*(?:[\w./-]+\s+)?(?:input|sample(?:\s+" + _EXAMPLE_KINDS + r")?"
                              r"|example(?:\s+" + _EXAMPLE_KINDS + r")?|for example|e\.g\.)[*_]*\s*[:：][*_\s]*)"
                              r"|.*\b[Yy]ou\b[^.:!?]{0,80}\bsee(?: something like)?(?: this)?\s*[:：]\s*")
# Reviewed (R55): a reporter heads their own paste the same way ("多机训练跑了两天后挂了，典型报错如下：", "我这边训练时常见
# 的报错如下：", a lab diary's "...出现大约十几个timeout...典型报错如下"), so the Chinese heading is a guide's only with no
# first person and none of the run's own narration in it (_ZH_FIRST_PERSON, _ZH_RUN_OWN_TIMES: a count, a frequency, a
# past 了), and under it only a list's items are its example (_ZH_EXAMPLE_ITEM: "• ...", "- ...", "1. ..."): a
# program's own line under it ("[rank3]:[E...] ... Watchdog caught collective operation timeout", c10d's "[W
# socket.cpp:401] ... (errno: 98 - Address already in use)") ends it and decides
_ZH_EXAMPLE_HEADING = re.compile(r"[#*\s]*[^。：:]{0,30}?(?:常见|典型)[^。：:]{0,30}?(?:包括|如下)\s*[:：][*\s]*")
_ZH_EXAMPLE_ITEM = re.compile(r"(?:[*+•·▪●]|-(?=\s))\s*|\d{1,2}[.)、]\s*")


def _zh_guide_heading(text: str) -> bool:
    """A Chinese guide's heading over its list of common failures, none of a reporter's own marks (above)."""
    return (_ZH_EXAMPLE_HEADING.fullmatch(text) is not None and _ZH_FIRST_PERSON.search(text) is None
            and _ZH_RUN_OWN_TIMES.search(text) is None)


# Since batch 66 also an introducer of examples alone on its line, with or without its colon ("Such as" over a shell
# block holding vLLM's bfloat16 refusal in a feature request, gpustack #1774; "For instance,", "e.g."): the sentence
# it ends names what the lines under it are examples of
_EXAMPLE_INTRO = re.compile(r"(?i)[#*_>\s]*(?:such as|for (?:example|instance)|e\.g\.)[*_]*\s*[,:：]?[*_\s]*")
# Since batch 67 also that introducer ending a sentence that asks for what is to be done, a need, a duty or a plan
# before it ("We need to check the scheduler log files for timeout messages, e.g.:" over slurmstepd's time-limit line in
# inline code, a platform's task to detect Slurm timeouts, PlantIT #198, 1449; "..., should match lines such as:"): the
# lines under it are what is looked for, not what the run printed. A sentence that narrates the run ("The job crashed
# with errors such as:", _RUN_NARRATED) heads its own lines and is none. The introducer is looked for in the line's
# last characters only and the need in its own sentence, so a long line costs a few plain scans of it.
_EXAMPLES_SOUGHT_END = re.compile(r"(?i)[\s,](?:such as|for (?:example|instance)|e\.g\.)[*_]*\s*[:：][*_\s]*$")
_EXAMPLES_SOUGHT_NEED = re.compile(r"(?i)\b(?:needs? to|should|must|ha(?:ve|s) to|wants? to|going to)\b")


def _examples_sought(text: str) -> bool:
    """The line ends with an introducer of examples in a sentence that states a need, a duty or a plan and narrates no
    run (see above)."""
    tail = max(0, len(text) - 32)
    end = _EXAMPLES_SOUGHT_END.search(text, tail)
    if end is None:
        return False
    start = _sentence_start(text, end.start())
    return (_EXAMPLES_SOUGHT_NEED.search(text, start, end.start()) is not None
            and _RUN_NARRATED.search(text, start, end.start()) is None)
# Since batch 69 also an explainer's prediction heading the program's line under it: a Chinese guide tells what the
# failure does in general and ends that sentence with its colon over the line it predicts ("它只会在某个反向传播的瞬间突然
# 爆发,中断整个训练进程,日志里留下一行冰冷的报错:" over torch's "RuntimeError: NCCL error in: .../ProcessGroupNCCL.cpp:1127,
# unhandled system error (5), Timeout", a Chinese write-up on NCCL timeouts, tests/crash/public 1492). The 会 is
# _zh_predicted's one reading of a prediction (_ZH_WILL: not the run's habit 也会/都会/还是会/总会), here anywhere in the
# colon's sentence (one subject for a chain of verbs: 会 ... 爆发, 中断 ..., 留下 ...), with that reading's limits in the
# whole sentence: no first person, no count, frequency or past 了 of the run's own, no run detail before the 会 (训练,
# 跑, a flag, a number), no digit after it, no question or plea, no exception named in it; nor a first person on the
# line above (the reporter's voice: "我在 8 卡上跑 DDP。" then "它会报下面的错："). Under it the example holds the raised
# exception's line too (the prediction's whole object: _EXAMPLE_ENDS does not end it); a program's own prefix (a rank,
# a glog head, a timestamp, NVRM:, srun:, slurmstepd:) ends it as R68's reference sample's does, so a run's log pasted
# under such a sentence still decides.
# Since batch 75 also a guide's hedged prediction: 可能会 (may) and the example named as what follows, 以下/如下 (the
# following) before the colon ("当使用PyTorch进行分布式训练时,可能会遇到以下错误:" over NCCL's "NCCL error: unhandled system
# error, NCCL version 2.4.8", a Chinese guide's problem statement, duoke360, tests/crash/public 1608): the hedge and the
# announced example are no reporter's, so the topic's words before the 会 (训练, PyTorch) stand; a count, a size or a
# step of a run does not (a digit before the 会: "8卡训练到第300步时可能会报以下错误："), nor the other limits
_ZH_HEDGED_SAMPLE = re.compile(r"可能(?=会)")
_ZH_SAMPLE_FOLLOWS = re.compile(r"(?:以下|如下)[^：:，,。]{0,6}[:：]")


def zh_sample_predicted(text: str, above: str = "") -> bool:
    """The line is a Chinese explainer's prediction whose colon heads the program's line below it (see above)."""
    colon = len(text.rstrip("*")) - 1
    if colon < 1 or text[colon] not in ":：" or not _has_cjk(text) or _ZH_FIRST_PERSON.search(above):
        return False
    sentence = _zh_sentence_start(text, colon)
    will = _ZH_WILL.search(text, sentence, colon)
    hedged = (will is not None and _ZH_HEDGED_SAMPLE.match(text, max(sentence, will.start() - 2)) is not None
              and _ZH_SAMPLE_FOLLOWS.search(text, will.end(), colon + 1) is not None)
    return (will is not None
            and _ZH_FIRST_PERSON.search(text, sentence, colon) is None
            and _ZH_RUN_OWN_TIMES.search(text, sentence, colon) is None
            and (_ZH_RUN_DIGIT if hedged else _ZH_RUN_DETAIL).search(text, sentence, will.start()) is None
            and _ZH_RUN_DIGIT.search(text, will.end(), colon) is None
            and _ZH_PREDICTION_ASKED.search(text, sentence, colon) is None
            and _EXC_IN_TEXT.search(text, sentence, colon) is None)


_EXAMPLE_LINES = 8
_PROSE_LINE = re.compile(r"[A-Z][a-z]+(?: +\S+){4,}?[.!?][\"'”)]?")
# a program's own failure under a stray heading (a trainer printing "### Input:" or "Sample output:" and a sample,
# then dying) ends the example: a traceback's head, a raised exception's line, a logger's level line (review of
# batch 46)
_EXAMPLE_ENDS = re.compile(r"Traceback \(most recent call last\):|(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\b:"
                           r"|(?:INFO|WARNING|ERROR|CRITICAL):[\w.]+:")
# Reviewed (R68): a reporter heads one of their own failures "Example error:" too, and a launcher prints "Sample
# errors:" over its workers' lines, so under batch 59's error kinds (_EXAMPLE_ERROR_KIND) the example is a reference
# page's text only: a line with a program's own prefix ends it (a rank's prefix, read off before this; a glog head
# "[E1206 18:44:16..." / "E1206 18:44:16", a timestamp, srun's, slurmstepd's, the driver's "NVRM:", CPython's "Fatal
# Python error", the Habana bridge's "FATAL ERROR ::", "CUDA error:"; XLA's own samples, "RESOURCE_EXHAUSTED: XLA:TPU
# compile permanent error ...", carry none), and the heading is none when the line above it narrates the run ("The
# training crashes after ~2h on 4 nodes.", "Job failed on 2 of 16 workers.": _RUN_NARRATED, or the run's own marks)
_EXAMPLE_ERROR_KIND = re.compile(r"(?i)\b(?:sample|example)\s+errors?\b")
_PROGRAM_LINE = re.compile(r"\[?[EWIF]\d{4} \d\d:\d\d:\d\d|\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|(?:srun|slurmstepd|NVRM):"
                           r"|Fatal Python error|.{0,40}?FATAL ERROR ::|CUDA error:|\[?(?i:rank)\s*:?\s*\d+\]?:")
_RUN_NARRATED = re.compile(r"(?i)\b(?:crash(?:es|ed)|fail(?:s|ed)|died|dies|hangs|hung|stuck|killed|aborted"
                           r"|timed out|times out)\b")


# A documentation page's heading as its HTML renders to text (since batch 70, tests/crash/public 1508): Sphinx puts a
# permalink after every section title (sphinx/writers/html5.py, HTML5Translator.add_permalink_ref: the
# ``<a class="headerlink">`` holding ``¶``, html_permalinks_icon's default; pydata-sphinx-theme and Furo show ``#``),
# so the copied page has "CUDA Error: Illegal Memory Access Encountered#" and "CUDA Out of Memory#" on lines of their
# own above the section's advice (docs.sglang.ai/references/faq.html). The title names the kind of error a section is
# about, no run's: the line is a heading, the mark glued to its last word, one mark, at most 120 characters before it
# and a letter among them; a shell's prompt ends in ``#`` after ``:``, ``~``, ``]``, ``/``, ``$`` or ``>``, none
# here. A program prints no such mark after its message, and a person's markdown heading ("## CUDA error: ...") over
# their log is still read as before.
_RENDERED_HEADING = re.compile(r"(?=[^#¶]*[A-Za-z])[^#¶]{1,120}[^\s#¶:/\]~$>][#¶]")


def _scan_tail(log_tail: Iterable[str]) -> _Scan:
    """One pass over the tail, collecting every signature hit and the torchrun block."""
    s = _Scan()
    frames: dict[int | None, list[tuple[str, str]]] = {}
    last_frames_rank: int | None = None     # whose traceback grew last (for unprefixed lines)
    in_root = False
    root_seen = False
    after_frame: set[int | None] = set()     # ranks whose previous line was a traceback frame
    dep_open: int | None = None     # s.deps entry whose text continues on the next line
    bare_deps: list[tuple[int, str]] = []    # dependency lines with no traceback above them
    watchdog_open: int | None = None    # the watchdog's exit line whose exception is on the next line
    xid_list = False    # inside a list of Xids a line above said happened (xid_events_told)
    bf16_wrapped = False    # the line above was vLLM's bfloat16 refusal wrapped before its GPU (bf16_gpu_refused)
    xid_driver: tuple[int, int] | None = None    # the last driver's Xid line and its number (_XID_RENDERED)
    list_lines = _ListLines()    # a list of quoted strings spread over lines (_quoted_list_items)
    retold_open: int | None = None    # s.oom.decisive's OOM retyped in another case on the line above (_OOM_RETRIED)
    zh_retold = False    # a third person's run is the Chinese text's topic (zh_retold_topic)
    example: bool | None = None    # under an example's heading (_EXAMPLE_HEADING): True once its lines began
    example_lines = 0
    example_items = False    # under a Chinese guide's heading only a list's items are the example (_zh_guide_heading)
    example_errors = False    # under an error kind's heading a program's own line ends it (_EXAMPLE_ERROR_KIND)
    example_raised = False    # under a predicted sample a raised exception's line is the sample (zh_sample_predicted)
    above = ""    # the last line with text before this one (_RUN_NARRATED)
    status_heading: tuple[int, int, int] | None = None    # a heading's line, its status, lines left (_STATUS_HEADING)
    oom_bare: tuple[int, str] | None = None    # a bare OOM told, its GPU maybe on the next line (oom_told_bare)
    for idx, (text, rank, indent) in enumerate(_iter_clean(normalize_crash_text(log_tail))):
        if oom_bare is not None and idx == oom_bare[0] + 1:
            if (_GPU_NAMED_ANY_CASE.search(text) is not None and _HOST_MEMORY_NAMED.search(text) is None
                    and _ZH_HOST_MEMORY.search(text) is None):
                s.oom_gpu_told.append(oom_bare)
            oom_bare = None
        above, line_above = (text or above), above
        if example is not None:
            if not text:
                example = None if example else False
                continue
            if (_PROSE_LINE.fullmatch(text) or example_lines >= _EXAMPLE_LINES
                    or (not example_raised and _EXAMPLE_ENDS.match(text))
                    or (example_items and _ZH_EXAMPLE_ITEM.match(text) is None)
                    or (example_errors and (rank is not None or _PROGRAM_LINE.match(text) is not None))):
                example = None
            else:
                example = True
                example_lines += 1
                continue
        if not text:
            zh_retold = False    # a Chinese topic ends with its paragraph (zh_retold_topic)
            continue
        example_raised = False
        if rank is None and _RENDERED_HEADING.fullmatch(text) is not None:
            continue    # a rendered page's section title names a kind of error (above)
        if _EXAMPLE_INTRO.fullmatch(text) is not None:
            example, example_lines, example_items, example_errors = False, 0, False, False
            continue
        if text.endswith((":", "：", ":*", ":**")) and _examples_sought(text):
            example, example_lines, example_items, example_errors = False, 0, False, False
            continue
        if text.endswith((":", "：", ":*", ":**")) and zh_sample_predicted(text, line_above):
            example, example_lines, example_items, example_errors, example_raised = False, 0, False, True, True
            continue
        if len(text) < 200 and text.endswith((":", "：", ":**", ":*")):
            example_items = _EXAMPLE_HEADING.fullmatch(text) is None
            example_errors = not example_items and _EXAMPLE_ERROR_KIND.search(text) is not None
            if example_errors and (_RUN_NARRATED.search(line_above) or _RUN_OWN.search(line_above)):
                example_items = True    # a report's own heading over its run's lines (above: review R68)
            elif not example_items or _zh_guide_heading(text):
                example, example_lines = False, 0
                continue
        if xid_list and not _LIST_ITEM.match(text):
            xid_list = False
        list_above = list_lines.step(text)
        if watchdog_open is not None:
            if _WATCHDOG_RUNTIME_ERROR.match(text):
                s.watchdog_relay.append(watchdog_open)
            watchdog_open = None
        if "c10_cuda_check_implementation" in text and _CUDA_CHECK_WHERE.match(text):
            s.watchdog_relay.append(idx)
        if "atchdog thread terminated" in text:
            wm = _WATCHDOG_EXIT_LINE.search(text)
            if wm and not wm.group("rest"):
                watchdog_open = idx
            elif wm and _WATCHDOG_RUNTIME_ERROR.match(wm.group("rest")):
                s.watchdog_relay.append(idx)
        if dep_open is not None:
            # transformers' "Failed to import X because of the following error (look up to see its
            # traceback):" names the import error on the next line
            i0, t0, f0 = s.deps[dep_open]
            s.deps[dep_open] = (i0, f"{t0} {text}", f0)
            dep_open = None
        if text[:1] == "F" and _FATAL_LOG.match(text):
            s.exceptions.append((idx, text))    # glog/absl LOG(FATAL) / CHECK: the exception line of a C++ crash
        elif "Assertion" in text and _HOST_ASSERT.match(text):
            s.asserts.append((idx, text))
        s.last_lines.append((idx, text))
        if len(s.last_lines) > 3:
            del s.last_lines[0]
        if rank in after_frame:
            after_frame.discard(rank)
            if indent >= 3:
                if "raise TritonMissing(" in text and _TRITON_RAISE.match(text):
                    # inductor's own raise quoted as the innermost frame's statement: the exception is TritonMissing
                    # even where its line was cut off (it decides as a bare dependency line: nothing raised after)
                    bare_deps.append((idx, text))
                continue    # the source line a frame quotes (`raise OutOfMemoryError(...)`): not evidence
        if retold_open is not None:
            if _OOM_RETRIED.search(text):   # "CUDA OUT OF MEMORY ERROR!" then "...trying again...": the program went on
                s.oom.support.append(s.oom.decisive.pop(retold_open))
            retold_open = None
        if "to other processes" in text and _KILL_OTHERS.search(text):
            s.others_killed = True
        elif s.others_killed and _KILLED_OTHER_EXIT.search(text):
            continue    # concurrently's own kill of a command after another one ended (_KILL_OTHERS)
        if status_heading is not None:
            at, status, left = status_heading
            if status_derived(text, status):
                s.sig_text = [h for h in s.sig_text if h[0] != at]    # a guide's entry (_STATUS_HEADING)
                status_heading = None
            else:
                status_heading = (at, status, left - 1) if left > 1 else None
        families = _families(text)
        # read on every line: a line naming the first person ends the topic without a failure's keyword too; only a
        # line with a failure family's keyword opens it (review R55)
        zh_retold = zh_retold_topic(text, zh_retold, opens=bool(families))
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
            in_root, root_seen = _scan_torchrun(s, idx, text, in_root, root_seen, rank)
            _scan_failure_entry(s, idx, text, rank)
        if "slurm" in families:
            m = _SLURM_CANCEL.search(text) or _SLURM_CANCEL_RETYPED.fullmatch(text)
            if m:
                state = ("NODE_FAIL" if "failed_node" in m.re.groupindex and m.group("failed_node")
                         else _SLURM_WHY.get(m.group("why")))
                if state is not None:
                    s.slurm.append((idx, text, state))
            elif _SLURM_OOM.search(text) or ("exceeded" in text and slurm_mem_limit_killed(text)):
                s.slurm.append((idx, text, "OUT_OF_MEMORY"))
            elif _NODE_FAILURE.search(text):
                s.slurm.append((idx, text, "NODE_FAIL"))
            elif (why := sbatch_words.refusal_reason(text)) is not None:
                s.sbatch.append((idx, text, why))     # sbatch's own refusal (_sbatch_verdict; since batch 52)
            elif sbatch_words.SBATCH_SUBMITTED.match(text):
                s.sbatch_submitted = idx
            elif (note := sbatch_words.SBATCH_LINE.match(text)) is not None and len(s.sbatch_notes) < 50:
                s.sbatch_notes[idx] = (text, note.group("what"))
        if "hostoom" in families and _HOST_OOM.search(text):
            s.host_oom.decisive.append((idx, text))
        if "hostalloc" in families and host_alloc_failure(text):
            s.host_alloc.decisive.append((idx, text))
        if "dep" in families:
            dm = _DEP.match(text)
            stack = frames.get(rank) or frames.get(last_frames_rank) or []
            if dm and (stack or dm.group("wcls")):   # the exception that ended a traceback, not a logged warning
                s.deps.append((idx, text, list(stack)))
                if text.endswith(_DEP_LOOK_UP):
                    dep_open = len(s.deps) - 1
            elif dm or _DEP_LOADER.search(text):
                bare_deps.append((idx, text))
        if "ost" in text and _NPU_HOST_ALLOC.search(text) is not None:
            s.npu_host.append(idx)
        told = _oom_told(text, list_above) if "oom" in families else None
        if told == "retold":
            retold_open = len(s.oom.decisive)
        if told in ("decisive", "retold"):
            s.oom.decisive.append((idx, text))
            _collect_oom(s.oom_info, text, frames.get(rank) or frames.get(last_frames_rank, []))
        elif told == "support":
            s.oom.support.append((idx, text))
        elif told is None and "oom" in families and not (zh_retold and _has_cjk(text)) and oom_told_on_gpu(text):
            s.oom_gpu_told.append((idx, text))
        elif told is None and "oom" in families and not (zh_retold and _has_cjk(text)) and oom_told_bare(text):
            oom_bare = (idx, text)
        if "nccl" in families:
            if ((_NCCL.search(text) and not _nccl_named_only(text))
                    or nccl_elided(text)):
                s.nccl.decisive.append((idx, text))
                if _NCCL_TIMEOUT.search(text):
                    s.nccl_timeout.decisive.append((idx, text))
                if _DEEPEP_TIMEOUT.search(text):
                    s.deepep.append((idx, text))
            elif "Got completion" in text and nccl_ib_warn_retyped(text):
                s.nccl_told.append((idx, text))    # its "NCCL WARN" would make it _NCCL_SUPPORT's
            elif _NCCL_SUPPORT.search(text) or _DEEPEP_WARNING.search(text):
                s.nccl.support.append((idx, text))
            elif ((nccl_timeout_told(text) and not (zh_retold and _has_cjk(text)))
                  or ("Got completion" in text and _NCCL_IB_RETOLD.search(text))):
                s.nccl_told.append((idx, text))
        if "port" in families and _port_stated(text):
            s.port.decisive.append((idx, text))
        if "div" in families:
            if _DIV.search(text) or _div_result_retold(text):
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
            rendered = (_XID_RENDERED.match(text) if xm is None and xid_driver is not None
                        and idx == xid_driver[0] + 1 else None)
            if rendered is not None and xid_driver is not None and int(rendered.group("xid")) == xid_driver[1]:
                # the driver's line above and a tool's rendering of it: a parser's example, neither decides
                at = xid_driver[0]
                s.xids = [x for x in s.xids if x[0] != at]
                s.fault.decisive = [h for h in s.fault.decisive if h[0] != at]
                s.containment = [c for c in s.containment if c[0] != at]
                xm = None
                text_xid_pair = True
            else:
                text_xid_pair = False
            xid_driver = (idx, int(xm.group(2))) if xm else None
            cm = _XID_CONTAINMENT.search(text) if ", D-RST: " in text else None
            if cm:
                s.containment.append((idx, cm.group("kind"), cm.group("what").strip(),
                                      "Yes" in (cm.group("rst"), cm.group("drst")), xm is not None))
            # a containment report on the line is the richer reading of the same Xid (its kind and where)
            xid_said = None if xm or cm or text_xid_pair else xid_told(text)
            if xid_said is None and xid_list and not (xm or cm):
                listed = xid_listed(text)
                xid_said = (listed, "a GPU") if listed is not None else None
            if not xid_list and xid_events_told(text):
                xid_list = True
            if xm and int(xm.group(2)) in XID_NO_FAULT:
                pass    # a condition the driver logs with no fault of any process (XID_NO_FAULT)
            elif xm:
                s.xids.append((idx, text, int(xm.group(2)), xm.group(1), False))
                s.fault.decisive.append((idx, text))
            elif xid_said is not None:
                tm = _XID_TOLD.search(text)
                if tm is not None and xid_other_time(text, tm.start()):
                    s.xid_other_time.append((idx, text, xid_said[0], xid_said[1]))
                else:
                    s.xids.append((idx, text, xid_said[0], xid_said[1], True))
                    s.fault.decisive.append((idx, text))
            elif text_xid_pair:
                pass
            elif cm or _fault_stated(text) or physx_cuda_fault(text) is not None or gpu_gone_told(text):
                s.fault.decisive.append((idx, text))
            elif _LAUNCH_ADVICE.search(text):
                s.fault.support.append((idx, text))
        if "sig" in families:
            pals = _PALS_RANK_END.search(text)
            if pals and s.pals_seen:    # a later PALS rank line: the launcher's teardown of the others
                signum = None
            elif pals and pals.group("sig"):
                signum = int(pals.group("sig"))
            else:
                signum = _text_signal(text)
            s.pals_seen |= pals is not None
            if signum is not None:
                s.sig_text.append((idx, text, signum))
                hm = _STATUS_HEADING.fullmatch(text)
                if hm is not None:
                    status_heading = (idx, int(hm.group("n")), _STATUS_DERIVED_LINES)
            elif segfault_told(text) and not (zh_retold and _has_cjk(text)):
                s.sig_told.append((idx, text))     # not a third person's run, told in Chinese (zh_retold_topic)
        if oom_kill_told(text) or slurm_oom_tasks_told(text):
            s.oom_kill_told.append((idx, text))
        elif host_oom_told(text):
            s.host_oom_told.append((idx, text))
        if "wrap" in families and not (s.sig_text and s.sig_text[-1][0] == idx):
            wsig = wrapper_negative_status(text)
            if wsig is not None:
                s.wrapper_sig.append((idx, text, wsig))
        if "disk" in families and _DISK_FULL.search(text):
            (s.shm if _SHM_FULL.search(text) else s.disk).decisive.append((idx, text))
        elif "disk" in families and _NCCL_SHM.search(text):
            s.shm.decisive.append((idx, text))
        if "gpu" in families and _GPU_UNAVAILABLE.search(text):
            s.gpu.decisive.append((idx, text))
        if "program" in families and _PROGRAM_MISSING.match(text):
            s.program.decisive.append((idx, text))
        if "data" in families:
            said = _DATASETS_FILE_SAID.search(text)
            if said:
                s.data_said.append((idx, said.group(0)))
            elif _DATA_TEXT_CAUSE.match(text):
                s.data_causes.append((idx, text))
        if "usage" in families and _USAGE.search(text):
            s.usage.decisive.append((idx, text))
        elif "usage" in families and _ARGPARSE_ERROR.search(text):
            s.argparse_errors.append((idx, text))
        if "usage" in families and _ARGPARSE_USAGE.match(text):
            s.usage_printed = True
        if "env" in families:
            nvrtc = _nvrtc_arch_stated(text) is not None
            compat = (("orward compatibility" in text or "ompatNotSupportedOnDevice" in text
                       or "COMPAT_NOT_SUPPORTED_ON_DEVICE" in text) and env_compat_stated(text) is not None)
            if (((_ENV_DRIVER.search(text) or compat) and "UserWarning" not in text) or _ENV_ARCH.search(text)
                    or _ENV_RM_MISMATCH.search(text) or (nvrtc and _nvrtc_arch_raised(text))
                    or _ENV_LOWP.search(text) or _ENV_P2P.search(text) or _ENV_FA4.search(text)
                    or _ENV_GEMM.search(text) or triton_gpu_too_old(text) or fa3_arch_stated(text)
                    or triton_out_of_resources(text)
                    or fa2_arch_stated(text) or bf16_gpu_refused(text)):
                s.env.decisive.append((idx, text))
            elif (_ENV_SM.search(text) or _ENV_DRIVER.search(text) or nvrtc or compat
                  or (bf16_wrapped and _BF16_GPU.match(text) is not None)):
                s.env.support.append((idx, text))
            # vLLM's message wrapped after its first sentence names the GPU at the next line's start
            bf16_wrapped = (s.env.decisive[-1:] == [(idx, text)] and _ENV_BF16.search(text) is not None
                            and _BF16_GPU.search(text) is None)
        if "hub" in families:
            kind = "rate" if hub_rate_limited(text) else next((k for k, rx in _HUB_KINDS if rx.search(text)), None)
            if kind is None and _HUB_429_TAIL.search(text):
                s.hub_tail.append((idx, text))
            if kind:
                s.hub.append((idx, text, kind))
        if text.startswith(_C10_WHERE):
            if _TEARDOWN.match(text):
                s.teardown.update(i for i, t in s.exceptions[-1:] if idx - i <= 3 and t.startswith("terminate called"))
            continue
        if "exc" in families and "RuntimeError: " in text and not text.startswith("RuntimeError: "):
            # Megatron-core's own refusal of the layout raised in a title or a sentence (megatron_layout_stated); at
            # the line's start it is the exception line's, read below (_megatron_layout_refusal)
            stated = megatron_layout_stated(text)
            if stated is not None:
                s.args.decisive.append((idx, stated))
        if ("exc" in families and _EXC.match(text) and "ChildFailedError" not in text
                and not _EXC_HEADING.match(text) and not _IPYTHON_TB_HEAD.match(text)):
            s.exceptions.append((idx, text))
            stack = frames.get(rank) or frames.get(last_frames_rank) or []
            s.raised_frames[idx] = list(stack)
            fa4_kernel = _fa4_kernel_refusal(text, stack)
            if fa4_kernel:
                s.env.decisive.append((idx, text))
                s.fa4_kernel = fa4_kernel
            if _DATASET_UNREADABLE.match(text):
                printed = [(i, t) for i, t in s.exceptions[:-1] + s.data_causes if i < idx]
                if dataset_unreadable(text, max(printed)[1] if printed else None):
                    s.data.decisive.append((idx, text))
            if _megatron_layout_refusal(text, stack) or _swift_entry_point_refusal(stack):
                s.args.decisive.append((idx, text))
            elif not _REFUSAL_EXC.match(text):
                pass    # e.g. a rendezvous timeout while TrainingArguments sets up its devices: not a refusal
            elif any(fn in _ARGS_FRAME_FUNCS or _ARGS_FRAME_FILE.search(f) for f, fn in stack):
                s.args.decisive.append((idx, text))
            elif ((any(_SETUP_FRAME_FILE.search(f) for f, _ in stack) and not any(fn == "train" for _, fn in stack))
                  or _swift_megatron_setup_refusal(stack)):
                s.setup.decisive.append((idx, text))
            elif any(_EXPORT_FRAME_FILE.search(f) for f, _ in stack):
                s.export.decisive.append((idx, text))
            if _swift_resume_hint(text):
                s.resume.decisive.append((idx, text))
            if _swift_skipped_update(text, stack):
                s.skipped_update.decisive.append((idx, text))
    # An import error pasted without the traceback above it decides when it is the last exception
    # of the text (a warning that mentions an ImportError is followed by the real end, or is not
    # at the start of its line).
    for idx, text, xid, where in s.xid_other_time:
        if not s.exceptions_after(idx):
            s.xids.append((idx, text, xid, where, True))
            s.fault.decisive.append((idx, text))
    s.fault.decisive.sort()
    s.xids.sort(key=lambda x: x[0])
    if bare_deps and not s.deps and not any(i > bare_deps[-1][0] for i, _ in s.exceptions):
        s.deps.append((bare_deps[-1][0], bare_deps[-1][1], []))
    # the watchdog relayed the runtime's error and nothing of NCCL's own failed: its lines decide no nccl_error
    # (they still lengthen a fault's cooldown, as NCCL text beside a fault does)
    s.nccl_relayed = bool(s.watchdog_relay) and all(_WATCHDOG_ECHO.search(t) for _, t in s.nccl.decisive)
    if s.npu_host and s.oom.decisive:
        s.oom.decisive = [(i, t) for i, t in s.oom.decisive if not _npu_host_oom(i, t, s.npu_host)]
    # NCCL's "Failed to CUDA calloc N bytes" alone: an OOM unless NCCL's own CUDA check named another error
    if _nccl_alloc_only(s.oom.decisive) and any(
            not m.group(0).endswith("'out of memory'")
            for _, t in s.nccl.decisive + s.nccl.support for m in [_NCCL_CUDA_FAILURE.search(t)] if m):
        s.oom.decisive.clear()
    # an OOM that asked more than 1 EiB (oom.asks_past_exabyte) is a garbage size, most often the metadata of a
    # collective that failed or fell out of step (an object collective's size tensor, a broadcast after a timeout:
    # tests/crash/public 1510, where NCCL's maintainer reads the run's screenshot as a broadcast timing out "followed by an
    # out-of-memory message"): beside NCCL's own failure, its timeout, or one a report tells, NCCL's decides and the
    # OOM is its echo; alone it is still an OOM (batch 17's NPU text; since batch 70)
    if (s.oom.decisive and all(asks_past_exabyte(t) for _, t in s.oom.decisive)
            and (s.nccl.decisive or s.nccl_timeout.decisive or s.last_told(s.nccl_told) is not None)):
        s.oom.support.extend(s.oom.decisive)
        s.oom.decisive.clear()
    return s


# Ascend's pinned host memory that could not be had (review R62): torch_npu's CachingHostAllocator
# (allocate_host_memory_slowpath, "NPU function error: aclrtMallocHostWithCfg, error code is 207001") and the CANN runtime
# below it ("rtsMallocHost execution failed, reason=driver error:out of memory", rtMallocHost; hicann/runtime
# src/runtime/driver/npu_driver_mem.cc:838-858 NpuDriver::HostMemAlloc, MEM_HOST) print the same EL0004
# "Memory_Allocation_Failure" and 207001 as a device allocation, and torch_npu raises torch.OutOfMemoryError for it; CANN's
# own host error EL0018 "Resource_Error_Insufficient_Host_Memory". Host RAM or a container's memlock limit, not the NPU's
# memory: a restart loops, as the CUDA rule refuses cuMemHostAlloc (_OOM).
_NPU_HOST_ALLOC = re.compile(r"\b(?:rts?MallocHost|aclrtMallocHost\w*|allocate_host_memory\w*|CachingHostAllocator)\b"
                             r"|Resource_Error_Insufficient_Host_Memory|\(EL0018\)|\b[Ii]nsufficient host memory\b")
# the OOM lines a host allocation's block turns: CANN's words and codes, torch_npu's relay of them (not another
# runtime's OOM beside it, nor torch's message with its numbers)
_NPU_OOM_WORDS = re.compile(r"EL0004|\b2070(?:01|18)\b|rtMalloc|ACL_ERROR_RT_DEVIDE_OOM|OutOfMemoryError: (?!.*(?:Tried to allocate|CUDA|HIP|XPU|MPS))")
_NPU_HOST_BLOCK = 8     # lines either side: torch_npu's relay, CANN's error message and the runtime's driver line


def _npu_host_oom(idx: int, text: str, host_lines: list[int]) -> bool:
    """An Ascend OOM line (_NPU_OOM_WORDS) in the block of a line naming a host allocation (_NPU_HOST_ALLOC): the
    host's pinned memory, not the NPU's (see above)."""
    return (_NPU_OOM_WORDS.search(text) is not None and "Tried to allocate" not in text
            and any(abs(idx - h) <= _NPU_HOST_BLOCK for h in host_lines))


def _nccl_alloc_only(oom_lines: list[tuple[int, str]]) -> bool:
    """Every OOM line that decides is NCCL's allocator WARN (_NCCL_ALLOC_FAILED): NCCL's own buffers, not the
    training's tensors, ran out of room (beside torch's own "CUDA out of memory" the allocator's OOM is the cause,
    and NCCL failed on another rank for want of the same memory)."""
    return bool(oom_lines) and all(_NCCL_ALLOC_FAILED.search(t) for _, t in oom_lines)


def _scan_torchrun(s: _Scan, idx: int, text: str, in_root: bool, root_seen: bool,
                   label: int | None = None) -> tuple[bool, bool]:
    """Track torchrun's ChildFailedError block; keep the first root cause it names. ``label``: the line's srun
    ``--label`` task (or rank prefix), which ties a forced kill to the agent that logged it."""
    forced = _TR_FORCED_KILL.search(text) if "forcefully exiting via" in text else None
    if forced:
        s.agent_killed.add((label, int(forced.group(1))))
        return in_root, root_seen
    if s.failed_line is None:
        fm = _TR_FAILED.search(text)
        if fm:
            pid = int(fm.group(3)) if fm.group(3) else None
            s.failed_line = _RootCause(int(fm.group(1)), None, pid, [(idx, text)])
            return in_root, root_seen
        fm = _TR_FAILED_RETOLD.search(text) if "failed (exitcode" in text else None
        if fm:
            s.failed_line = _RootCause(int(fm.group(1)), None, None, [(idx, text)])
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


def _scan_failure_entry(s: _Scan, idx: int, text: str, label: int | None = None) -> None:
    """Failure entries of a torchrun block, wherever they stand (the root-cause header may be
    missing from a pasted block): each ``rank`` starts one, its ``exitcode`` completes it. An entry's
    SIGKILL of a PID the same agent (``label``) forcefully ended itself is marked (``agent_kill_lines``)."""
    if s.agent_killed and "received by" in text.lower():
        sm = _SIG_TEXT.search(text)
        if sm and sm.group("recvpid") and (label, int(sm.group("recvpid"))) in s.agent_killed \
                and int(sm.group("recv")) == _signal.SIGKILL:
            s.agent_kill_lines.add(idx)
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
        if entry.exitcode == -_signal.SIGKILL and (label, entry.pid) in s.agent_killed:
            s.agent_kill_lines.update(i for i, _ in entry.lines)


def _failure_entry(s: _Scan) -> _RootCause | None:
    """Without a root-cause block: the first failure entry that is not a sibling torchrun ended
    itself (SIGTERM), else the first one that torchrun did not SIGKILL itself (``_agent_kill``):
    an agent's own kill alone decides nothing."""
    entries = [e for e in s.failures if e.exitcode is not None and not any(_agent_kill(s, i) for i, _ in e.lines)]
    return next((e for e in entries if e.exitcode not in _TERMINATED_BY_AGENT), entries[0] if entries else None)


# A guide's or an explainer's words around the shell's line quoted in Chinese prose (since batch 60): a way of dealing
# with it right before it ("解决"Segmentation fault (core dumped)"问题的几种方法", 排查, 修复, 处理, 应对, 分析), or its
# causes, fixes or a walk-through a few characters after it in its clause, past its closing quote ("...的原因通常是",
# "...的常见原因与排查", "...问题的几种方法"); _zh_oom_mentioned reads the words' own ends only (a quote stops it)
_ZH_SHELL_DEALT_BEFORE = re.compile(r"(?:解决|排查|修复|处理|应对|分析)[^，,。；！？\n]{0,4}$")
_ZH_SHELL_GUIDE_AFTER = re.compile(r"[^，,。；！？\n]{0,8}?(?:原因|排查|解决|方法|办法|详解)")
_CLOSING_QUOTE = re.compile(r"[\"”」』`'’]")


def _cjk_shell_line_named(text: str, start: int, end: int) -> bool:
    """The shell's line quoted in Chinese prose at text[start:end] as a guide's subject (above), not a report."""
    after = end + 1 if _CLOSING_QUOTE.match(text, end) else end
    return (_ZH_SHELL_DEALT_BEFORE.search(text, max(0, start - 6), start) is not None
            or _ZH_OOM_MENTIONED_AFTER.match(text, after) is not None
            or _ZH_SHELL_GUIDE_AFTER.match(text, after) is not None)


def _text_signal(text: str) -> int | None:
    m = _SIG_TEXT.search(text)
    if not m:
        return None
    if m.group("dl"):
        # quoted in Chinese or Japanese prose: not in a condition, a way around, advice, a cause or a general statement
        # ("如果遇到 ... Bus error，可以增大 /dev/shm", "为了避免 ...", "容易出现 ..."), nor as a kind of error a Japanese
        # quote names ("「... Bus error」というエラーが出る場合は"): the Chinese limits of a failure told in words
        # (_zh_oom_mentioned) and _cjk_named (review R32)
        # Korean's too since batch 52; raised after an exception's name the line decides as it would alone, but for
        # the Chinese limits review R32 read (review R40: "학습 중에 자주 RuntimeError: DataLoader worker ...")
        if (_OOM_RAISED_BEFORE.search(text, max(0, m.start() - _MENTION_WINDOW), m.start()) is None
                and _cjk_told_mentioned(text, m.start(), m.end("dl"))):
            return None
        if _has_cjk(text) and (_zh_oom_mentioned(text, m.start(), m.end("dl"))
                               or _cjk_named(text, m.start(), m.end("dl"))):
            return None
        return _STRSIGNAL.get(m.group("dl").strip())
    if m.group("shm"):
        return int(_signal.SIGBUS)
    if m.group("fatal"):
        return _STRSIGNAL.get(m.group("fatal"))
    if m.group("oomkill") or m.group("k8soom"):
        return int(_signal.SIGKILL)
    if m.group("shell"):
        return _STRSIGNAL.get(m.group("shell"))
    if m.group("cjkshell"):
        # the prose's limits as for the DataLoader's line quoted in it: a condition, a way around, advice, a cause, a
        # list's item or a kind of error named ("如果出现"Segmentation fault (core dumped)"，可以...", "「Segmentation fault
        # (core dumped)」というエラーが出る場合は")
        end = m.end("cjkshell") + len(" (core dumped)")
        if (_cjk_told_mentioned(text, m.start(), end) or _zh_oom_mentioned(text, m.start(), end)
                or _cjk_named(text, m.start(), end) or _cjk_shell_line_named(text, m.start(), end)):
            return None
        return _STRSIGNAL.get(m.group("cjkshell"))
    if m.group("darwin"):
        # Darwin's numbers (sys/signal.h): SIGABRT 6, SIGBUS 10, SIGSEGV 11; read as the signal's number here
        darwin = _DARWIN_STRSIGNAL[m.group("darwin")]
        if (int(m.group("darwinn")) != darwin[0] or _told_hedged(text, m.start(), _QUOTED_SIGNAL_HEDGE)
                or _STATUS_EXPLAINED_AFTER.match(text, m.end())):
            return None
        return darwin[1]
    if m.group("ucx"):
        return _STRSIGNAL.get(m.group("ucx"))
    if m.group("srun"):
        return _STRSIGNAL.get(m.group("srun"))
    if m.group("glog") or m.group("spawn"):
        try:
            return int(_signal.Signals[m.group("glog") or m.group("spawn")])
        except KeyError:
            return None
    if m.group("check"):
        return int(_signal.SIGABRT)
    if m.group("tvm") or m.group("winav"):
        return int(_signal.SIGSEGV)
    if m.group("status"):
        return None if _status_mentioned(text, m) else int(m.group("status")) - 128
    if m.group("gcpoom") or m.group("gcpsig"):
        # Google's training service's replica status (since batch 64), with the shell status's limits
        if _status_mentioned(text, m):
            return None
        return int(_signal.SIGKILL) if m.group("gcpoom") else int(_signal.Signals[m.group("gcpsig")])
    if m.group("rcneg"):
        # DeepSpeed's launcher (deepspeed/launcher/launch.py, sigkill_handler: logger.error(f"{cmd} exits with return
        # code = {last_return_code}"), -N for a rank signal N ended) in its own line decides; the same words a person
        # hedges, fixes or explains are a mention, as the shell's status is (_status_mentioned): a guide's "If the
        # launcher exits with return code = -9, lower the batch", "exits with return code = -7 means /dev/shm is
        # full", a changelog's "Fixed ... exits with return code = -11" (since batch 62; read as the signal wherever
        # it stood before). A report quoting it keeps it: "Training fails due to "exits with return code = -7"
        # without further explanations.", an issue title "[BUG] exits with return code = -11".
        return None if _status_mentioned(text, m) else int(m.group("rcneg"))
    for name in ("agent", "cpe", "caught", "killedn", "recv", "ompi", "hydra", "hydrak"):
        if m.group(name):
            return int(m.group(name))
    return None


# The shell's 128+N status named, not reported (since batch 46): a guide's title ("How to Debug Kubernetes OOMKilled
# (Exit Code 137): The Complete Guide", "What is exit code 137?"), a possibility, denial or fix before it in its
# sentence ("If you see exit code 137, raise the limit", "How do I fix exit code 137?"), or the code explained or
# mapped after it ("Exit code 137 indicates that ...", a table's "| Exit Code 137 | OOMKilled |"). A report keeps
# it: kubectl's "Exit Code:   137", "The response will be "Exit Code: 137."", "training exited with code 137".
_GUIDE_TITLE = re.compile(r"(?i)^[#*\s]*(?:how to|what is|what does|what causes|understanding|troubleshooting)\b"
                          r"|\bguide\b")
# right before it, its causes or meaning as an explainer's subject ("Three completely different problems hide behind
# exit code 137", "the causes of exit code 137", "the meaning of exit status 139")
_STATUS_CAUSES_BEFORE = re.compile(r"(?i)\b(?:behind|causes? of|reasons? for|meaning of)\s+(?:an?\s+|the\s+)?$")
_STATUS_EXPLAINED_AFTER = re.compile(r"\)?\s*(?:(?:[A-Za-z]+ly|often|most likely)\s+)?(?:means|meant|is|indicates"
                                     r"|signals|signifies|stands for)\b|\)?\s*(?:[|=→⇒]|->|=>)")


# A program's own line telling how a child ended: it decides whatever prose stands before it on the line (a
# supervisor's "No restarts left: worker exited with code 137", a launcher's line behind a retry loop's "no retries
# left; ..."), where a person's hedged sentence ("it may exit with code 137", "If the job exited with code 137, raise
# the limit") still names the status only; since the review of batch 46's mends. Each shape is its program's own:
# concurrently (npm's runner of several commands at once) with --kill-others or --kill-others-on-fail kills the other
# commands itself once one ended (src/flow-control/kill-others.ts: logger.logGlobalEvent(`Sending ${this.killSignal}
# to other processes..`), "Sending SIGTERM ..." before the --kill-signal option; the global event's "--> " head from
# src/logger.ts), then prints each one's close ("[1] python train.py exited with code SIGKILL", "... code 137"): those
# exits are its kill, not the kernel's; the command that ended first, before the line, still tells why (since the
# review of batch 47).
_KILL_OTHERS = re.compile(r"(?:^|-->\s*)Sending SIG[A-Z]+ to other processes\b")
_KILLED_OTHER_EXIT = re.compile(r"\bexited with code\b")


_STATUS_OWN_LINE = re.compile(
    # docker compose (pkg/compose/printer.go, Run: consumer.Status(container, "exited with code %d"): "worker-1
    # exited with code 137", "(restarting)" after it in later releases) and the supervisors and wrappers that print
    # the same (ClusterShell's and Flux's "<node>: exited with exit code N", gemma-tuner-multimodal's "❌ Training failed
    # with exit code -9"): the child's one-word name and the words, alone on their line (behind a symbol) or after a
    # label's colon or bracket
    r"(?:^|[:\]|>]\s)[^\w\s]*\s*[\w.@/-]+:?\s+(?:[Ee]xited|failed) with (?:exit )?code -?\d+(?:\s*+\(restarting\))?"
    # (the spaces after the code read once, possessively: ``\s*\.?\s*$`` split a run of spaces every way before a
    # line's last character, 0.9 s on a 16 KiB line)
    r"\s*+(?:\.\s*+)?$"
    # Slurm's srun (src/srun/launch.c, _task_finish: error("%s: %s %s: Exited with exit code %d", ...))
    r"|\bsrun: error: \S+: tasks? [\d,\-\[\]]+: Exited with exit code -?\d+"
    # kubectl describe (k8s.io/kubectl/pkg/describe, describeContainerState: "Exit Code:\t%d"): the field alone at
    # its line's end, in its column
    # (a run of spaces read from its start and whole: each place inside it tried again made a 16 KiB line of
    # spaces take 1.75 s; since the review of batch 47)
    r"|(?:^|\t|(?<! ) {2,}+)Exit Code:\s+-?\d+\s*$"
    # CPython's CalledProcessError (Lib/subprocess.py, __str__: "Command '%s' returned non-zero exit status %d."), which
    # accelerate's launcher raises for the script it ran (accelerate/commands/launch.py, simple_launcher): the quote
    # that closes the command's repr before the words, the message at its line's start (a traceback's last line) or
    # after a label's colon or bracket, behind the exception's name or not
    r"|(?:^|[:\]|>]\s)\s*(?:[\w.]*CalledProcessError: )?Command '[^\n]*' returned non-zero exit status -?\d+"
    # DeepSpeed's launcher (deepspeed/launcher/launch.py, sigkill_handler: f"{cmd} exits with return code = {rc}",
    # the command a list's repr), logged by its logger's own head ("[<time>] [ERROR] [launch.py:325:sigkill_handler] ",
    # deepspeed/utils/logging.py's formatter: "[%(asctime)s] [%(levelname)s] [%(filename)s:%(lineno)d:%(funcName)s] ")
    r"|:sigkill_handler\] \[[^\n]*\] exits with return code = -?\d+")


def _status_own_line(text: str, pos: int) -> bool:
    """The exit status at text[pos] stands in a program's own status line (``_STATUS_OWN_LINE``), not quoted inside a
    person's sentence (an odd number of backquotes or double quotes before it: "If you see `srun: error: ...`")."""
    lo = max(0, pos - _MENTION_WINDOW)
    for o in _STATUS_OWN_LINE.finditer(text, lo):
        if o.start() > pos:
            break
        if pos < o.end():
            before = text[lo:o.start()]
            return before.count("`") % 2 == 0 and before.count('"') % 2 == 0
    return False


# A guide's entry for a status: a heading that is only a condition's name and the status in parentheses ("Out of
# Memory (exit code 137)", "Segmentation Fault (Exit Code 139)"), whose paragraph below derives the number from the
# shell's rule, bash's 128 + N for a command a fatal signal N ended (bash(1), EXIT STATUS: "When a command terminates
# on a fatal signal N, bash uses the value of 128+N as the exit status"): "137 = 128 + 9", "128 + 9 = 137". A run's
# log never does that sum; a guide does (torc's "Slurm Exit Codes" page, batch 68), so the heading names the status
# and tells no ending. Read in the scan: the heading's hit is dropped when one of the next few lines with text
# derives its number (_STATUS_DERIVED_LINES). A report's own title with the status ("Training killed (exit code 137)")
# and no such sum below still decides, as does any line of the run under it.
_STATUS_HEADING = re.compile(r"[#*\s]*[A-Z][\w'-]*(?: [\w'-]+){0,4} ?\((?i:exit (?:code|status)|status)[: ]*"
                             r"(?P<n>1(?:29|3\d|4[0-3]))\)[*\s]*")
_STATUS_DERIVED_LINES = 3


def status_derived(text: str, status: int) -> bool:
    """The line derives a shell status from bash's 128 + N ("137 = 128 + 9", "128 + 9 = 137"; see _STATUS_HEADING)."""
    n = status - 128
    return re.search(rf"(?<![\d.]){status}\s*=\s*128\s*\+\s*{n}(?!\d|\.\d)|(?<![\d.])128\s*\+\s*{n}\s*=\s*{status}"
                     rf"(?!\d|\.\d)", text) is not None


def _status_mentioned(text: str, m: re.Match[str]) -> bool:
    if _GUIDE_TITLE.search(text) is not None or _STATUS_EXPLAINED_AFTER.match(text, m.end()) is not None:
        return True
    if _status_own_line(text, m.start()):
        # a program's own line: a denial of something else before it counts for nothing ("No restarts left: ..."), a
        # possibility in its sentence ("If you see: worker-1 exited with code 137, ...") or a fix's word before it (a
        # changelog's "- Fix: worker exited with code 137") still makes it a mention
        return _told_hedged(text, m.start(), _OWN_LINE_HEDGE, _TOLD_FIX_WORD, _MENTION_WINDOW)
    return (_told_hedged(text, m.start(), _QUOTED_SIGNAL_HEDGE, _TOLD_FIX_WORD, _MENTION_WINDOW)
            or _STATUS_CAUSES_BEFORE.search(text, max(0, m.start() - 40), m.start()) is not None)


# A wrapper telling how the training process it ran ended, in Python's subprocess convention: Popen.returncode (also
# CalledProcessError.returncode, asyncio's Process.returncode) is -N for a child ended by signal N (Lib/subprocess.py,
# _handle_exitstatus: os.waitstatus_to_exitcode), and wrappers print it as it is: "❌ Training failed with exit code
# -9" (gemma-tuner-multimodal, f"... failed with exit code {e.returncode}"), "exited with code -11", "exit status: -7"
# (the shell's 128+N form is _SIG_TEXT's "status"). Only the signals that name a class of their own (SIGABRT, SIGBUS,
# SIGKILL, SIGSEGV); a -1 or -2 is as often a program's own exit(-1). Not in a hedge's sentence ("If training fails
# with exit code -9, add RAM"), after a fix ("Fixed exit code -9 on macOS"), nor where the code is being explained
# ("exit code -9 means SIGKILL"), on a log level's line, or as a setting (_told_as_setting); since batch 43.
# Its words in any case ("Exited with code -9", "EXIT STATUS -9"), each spelling holding "xit" or "XIT" (the family
# "wrap" of _FAMILY_TOKENS routes on those). Not where the code is explained ("exit code -9 means SIGKILL", also with
# an adverb: "exit code -9 usually means ...") or mapped to a value or name (a table's "| exit code -9 | SIGKILL |",
# "exit code -9: SIGKILL", "exit code -9 -> OOM"; since the review of batches 43-44).
# The same ending told by the signal's name where the code would stand (since batch 47): Node's child_process gives
# an 'exit' handler (code, signal) and a wrapper prints whichever is set, so concurrently's "[WORKER] node
# dist/cron/worker.js exited with code SIGINT" (AI Toolkit's UI) names the signal as its code; "exited with signal
# SIGKILL", and a report's "<process exits with SIGKILL / status 137 — no Python traceback>". The same four signals,
# by signal.h's names; SIGINT and SIGTERM are someone's stop, no crash of the training's own. Not where its sentence
# gives the kill a cause (_SIGNAL_NAME_CAUSED): an explainer's "When the OOM killer fires, the process exits with
# SIGKILL", "kill -9 makes the process exit with SIGKILL", a user's own stop "Ctrl-C twice and the trainer exits with
# SIGKILL" (since the review of batch 47).
# The same signal told as received (since batch 48): torchrun's own words are "Signal 9 (SIGKILL) received by PID N"
# (torch/distributed/elastic/multiprocessing/errors/__init__.py, ProcessFailure.__post_init__; _SIG_TEXT's "recv"), glog's "*** SIGSEGV
# received by PID"; a report retells them as the process having received or got it ("the trainer received SIGKILL",
# a Chinese write-up's "进程收到了SIGKILL信号(信号9)"), the same ending by the same names. With the same limits, and a
# Chinese "when" (当, not 当前 "current") or a Chinese hedge or setting verb (_zh_hedged) before it in its sentence.
_WRAPPER_NEG_STATUS = re.compile(r"(?:(?:\b[Ee]xit|\bEXIT)(?i:(?:ed)?(?: with)? (?:code|status))\s*[:=]?\s*\(?-(?P<sig>6|7|9|11)\)?"
                                 r"(?![\d.])"
                                 r"|(?:(?:\b[Ee]xit|\bEXIT)(?i:s|ed)? (?i:with) (?i:(?:code|signal) )?"
                                 r"|(?<![A-Za-z])(?i:received|got)(?: (?:an?|the))? `?|收到了?\s*)"
                                 r"SIG(?P<name>ABRT|BUS|KILL|SEGV)(?![A-Za-z0-9_]))"
                                 r"(?!\s*(?:[|:=→⇒]|->|=>|-\s|—))"
                                 r"(?!\s*(?:(?:[A-Za-z]+ly|often|most likely)\s+)?(?:means|meant|is|indicates|signals"
                                 r"|signifies|stands for|==?)(?!\w))")
_TABLE_ROW = re.compile(r"\s*\|")
_SIGNAL_NAME_CAUSED = re.compile(r"(?i)(?:^|(?<=[.!?]\s))\W*when\b|(?<![^\s，,。；;：:])当(?!前|时|晚|天|然|日|年|初)"
                                 r"|\b(?:makes?|made|causes?|caused|forces?|forced)\b"
                                 r"|\bctrl[-+ ]?c\b|\^C|\bkill\s+-(?:9|KILL|s KILL)\b|\bscancel\b"
                                 # a container's stop after its grace period (docker stop, kubectl delete); since
                                 # the review of batches 48/49
                                 r"|\bdocker\s+(?:stop|kill|rm)\b|\bkubectl\s+delete\b|\bgrace[ _]?period")
# A signal told as received, in a handler's documentation: "when"/"after"/"once" and its subject right before the
# received words ("The handler is called when the process received SIGKILL", "on_signal: called after the trainer
# received SIGSEGV"); since the review of batches 48/49
_SIGNAL_RECEIVED_WHEN = re.compile(r"(?i)\b(?:when|whenever|after|once|until|before|if)\s+"
                                   r"(?:(?:the|a|an|its|this|each|every|any)\s+)?[\w-]+\s+$")
# A wrapper's line names the training when it tells how the training ended ("Training failed with exit code -9",
# "LoRA training exited with code (-9)"); a wrapper runs other children too (a reward sandbox's test, an inference
# server: "[reward] sandbox test 3 exited with code -9 (timeout 10s)"), so only the last such line, or one naming the
# training, tells how the attempt ended (classify decides on it late: _wrapper_signal).
_NAMES_TRAINING = re.compile(r"(?i)\b(?:(?:pre)?train(?:ing|er)?|fine-?tun(?:e|ing)|finetun(?:e|ing)|sft)\b")


# A line that only names such words as a setting's value or an option's help (both rules below): a key and ":" or "="
# before them with the value quoted (`restart_on: "exited with code -9"`, `OOM_MARKER="cuda out of memory"`), or a
# command-line option's help line ("  --empty-cache  empty the cache on cuda out of memory"). An exception's own line,
# "RuntimeError: cuda out of memory", has no quote; nor has a key that is an error's name the value it quotes
# ("Error: 'CUDA out of memory', 'retrying with batch 8'": a logger's error and what it did).
# Since batch 55 the key may be quoted, as a JSON object's member name is (RFC 8259 section 4: a member is a string,
# a colon, a value), but only a key that names a matcher or a data field holds the words as data: an error index's
# record (errorcanon's `"signature": "RuntimeError: MPS backend out of memory (...)"`, `"regex": "..."`), a rule's
# `"pattern"`, `"match"`, `"glob"`, `"needle"`, `"example"` (also as a compound's last word: `"oom_regex"`,
# `"errorPattern"`, `"signatures"`). Any other quoted key's value is still the program's words, since no list of the
# log writers' names is complete (review R46: structlog's `event` and its dict tracebacks' `exc_value`, Sentry's
# exception `value` and `title`, GELF's `short_message`/`full_message`, OpenTelemetry's `exception.message`, torch
# elastic's error file's `message` (error_handler.py record_exception), Docker's `log`, journald's `MESSAGE`, Cloud
# Logging's `textPayload`, `reason`, `detail`, ...). An unquoted key (YAML, a JS object, a shell assignment:
# `message: "CUDA out of memory"`, `MESSAGE="..."`) is any setting's, as before batch 55 (review R46). Each piece
# backtracks over one run of spaces at most, so a match costs the line's length (review R46: `\s*\{?\s*` before
# the key and `\s*\[?\s*` after it were cubic and quadratic in spaces).
# An exception's head opening the value (`retry_on: "RuntimeError: CUDA out of memory"`, _SETTING_VALUE_HEAD) keeps
# it the setting's only under such a key, quoted or not (group `data`), also a marker's and a trigger's (`OOM_MARKER=`,
# `retry_on:`, `restartOn:`): under any other unquoted key it decides as before batch 55 (a SageMaker job's
# `FailureReason: 'AlgorithmError: RuntimeError: CUDA error: ...'`, a k8s status's `reason: "RuntimeError: ..."`).
_DATA_KEY = (r"(?:[\w.\-]*[_.\-]|[\w.\-]*[a-z\d](?=[A-Z]))?"
             r"(?i:signature|regexp?|pattern|match(?:er)?|glob|needle|example|marker|on)(?:e?s)?")
_SETTING_BEFORE = re.compile(r"\s*(?:\{\s*)?(?:(?P<data>" + _DATA_KEY + r")\s*[:=]"
                             r"|(?![\w.\-]*(?:Error|Exception|error|ERROR)\s*[:=])[\w.\-]+\s*[:=]"
                             r"|(?P<quote>[\"'])" + _DATA_KEY + r"(?P=quote)\s*:)"
                             r"\s*(?:\[\s*)?[\"']")
# an exception's head (and a runtime's error head) that opens a setting's quoted value: the value is still the
# setting's (`"signature": "RuntimeError: MPS backend out of memory"`, `retry_on: "RuntimeError: CUDA error: an
# illegal memory access ..."`); since batch 55
_SETTING_VALUE_HEAD = re.compile(r"(?:(?:[\w.]+\.)?[A-Za-z]\w*(?: [A-Za-z]\w*)?(?:Error|Exception| error)\s*:\s*){0,3}"
                                 r"(?:[A-Za-z_]\w*\.){0,4}")
# the option's help: the option (and its value) and two spaces, matched at the line's start, its shortest form first,
# so a word anywhere after it is in the help without reading the line up to each (a 16 KiB help line of a fault's
# words read every match: since batch 51)
_OPTION_HELP_LEAD = re.compile(r"\s*--?[A-Za-z][\w\-]*(?:[ =]\S+)??\s{2}")


@functools.lru_cache(maxsize=8)
def _setting_lead_ends(text: str) -> tuple[int, int, bool]:
    """Where the line's setting lead (_SETTING_BEFORE: a key and a colon and a quote) and its option's help lead
    (_OPTION_HELP_LEAD) end (-1: none), each matched once a line: either has one end at most (a key's characters hold
    no space nor colon, the quote must follow them), so a word at text[start] is in it when it ends there or before,
    and the many matches of a long line cost the line once, not each its leading run again (review R32)."""
    setting, option = _SETTING_BEFORE.match(text), _OPTION_HELP_LEAD.match(text)
    data = setting is not None and (setting.group("data") is not None or setting.group("quote") is not None)
    return (setting.end() if setting is not None else -1, option.end() if option is not None else -1, data)


def _told_as_setting(text: str, start: int) -> bool:
    """The words at text[start] are a setting's quoted value (right at its opening quote, or behind an exception's
    head there: _SETTING_VALUE_HEAD) or in an option's help."""
    setting, option, data = _setting_lead_ends(text)
    return (setting == start or 0 <= option <= start
            or (data and 0 <= setting < start <= setting + 120
                and _SETTING_VALUE_HEAD.fullmatch(text, setting, start) is not None))


def wrapper_negative_status(text: str) -> int | None:
    """The signal a wrapper's negative exit code names ("Training failed with exit code -9": SIGKILL), or that it names
    where the code would stand ("exited with code SIGKILL"), else None."""
    m = _WRAPPER_NEG_STATUS.search(text)
    if m is None or _told_as_setting(text, m.start()) or _TABLE_ROW.match(text):
        return None
    if _status_own_line(text, m.start()):
        # a program's own status line ("No restarts left: worker exited with code -9"): as the shell's status on one
        # (_status_mentioned), whatever a log level's tag before it (since the review of batch 46's mends)
        hedged = _told_hedged(text, m.start(), _OWN_LINE_HEDGE, _TOLD_FIX_WORD, _MENTION_WINDOW)
        return None if hedged else int(m.group("sig"))
    if (_told_hedged(text, m.start(), _HEDGE) or _LOG_LEVEL_TAG.match(text)
            or (_CJK_CHAR.search(text) and _zh_hedged(text, m.start()))):
        return None
    if m.group("name") is not None:
        sentence = _sentence_start(text, m.start())
        if _SIGNAL_NAME_CAUSED.search(text, sentence, m.start()):
            return None
        if not m.group().lower().startswith("exit"):
            # told as received: a cause after it in its sentence is the user's or the container's stop ("received
            # SIGKILL after I ran scancel", "got SIGKILL when I pressed Ctrl-C twice", "from docker stop after the
            # 10 s grace period"), and a handler's documentation is no report (_SIGNAL_RECEIVED_WHEN)
            stop = _SENTENCE_END.search(text, m.end(), m.end() + _MENTION_WINDOW)
            hi = stop.start() if stop is not None else min(len(text), m.end() + _MENTION_WINDOW)
            if (_SIGNAL_NAME_CAUSED.search(text, m.end(), hi)
                    or _SIGNAL_RECEIVED_WHEN.search(text, max(sentence, m.start() - 80), m.start())):
                return None
        return int(getattr(_signal, "SIG" + m.group("name")))
    return int(m.group("sig"))


# torch's "CUDA out of memory" retyped in another case by a person ("加载模型出现Cuda out of memory" in a Chinese title,
# "cuda out of memory" in prose; the program's own spelling is _OOM's): the words in any case, not inside a longer
# word (a CJK character before them is no letter: no \b), and, as every failure told in words, not in a hedge's
# sentence ("to avoid cuda out of memory", "if you hit cuda out of memory"), after a fix, on a log level's line (a
# start-up banner's advice), or as a setting or an option's help (_told_as_setting); since batch 43. The limits are
# the ones of torch's own spelling (_oom_mentioned; since batch 45).
_OOM_CASE_RETOLD = re.compile(r"(?<![A-Za-z])(?i:cuda out of memory)(?![A-Za-z])")
# An OOM the program met and went on from: retry or skip words on its line ("CUDA OUT OF MEMORY ERROR! ...trying
# again...", "cuda out of memory, skipping batch") make the words support only, so what ended the attempt later (an
# NCCL timeout) decides; and the words with a count after them are a counter, no statement ("train summary: ...,
# cuda out of memory retries: 0"); since the review of batches 43-44.
_OOM_RETRIED = re.compile(r"(?i)\b(?:retr(?:y|ying|ied|ies)|(?:try|trying) again|skip(?:s|ped|ping)?)\b")
_COUNT_AFTER = re.compile(r"(?:\s+[A-Za-z_]+){0,2}\s*[:=|]\s*\d+(?:\.\d+)?\s*(?:$|[,;|)\]}])")


def _oom_case_match(text: str) -> re.Match[str] | None:
    """The words of a CUDA out-of-memory a person retyped in another case (_OOM_CASE_RETOLD), if they tell one: not
    a mention, advice, fix, setting or counter; retried or not (``_OOM_RETRIED``), listed or not."""
    m = _OOM_CASE_RETOLD.search(text)
    if m is None or _oom_mentioned(text, m) or _COUNT_AFTER.match(text, m.end()):
        return None
    return m


# The host's memory a report tells as what ran out, where no kernel, launcher or allocator line was pasted (batch 50:
# an Unsloth GRPO issue titled "Frequent CPU OOM / Process Killed After Several Hundred Steps", unsloth #4122): the
# host named right before the OOM's words ("CPU OOM", "RAM OOM", "host OOM", "system memory OOM", "CPU out of
# memory"). Linux ends such a run with its OOM killer (mm/oom_kill.c, "Out of memory: Killed process N", _SIG_TEXT's
# oomkill) or fails the allocation with ENOMEM (host_alloc_failure): both are killed_oom's, whose hint names host RAM.
# A GPU's memory ("GPU OOM", "CUDA out of memory") is not this (oom_told_on_gpu), nor an OOM on the CPU a program
# caught and went on from (_OOM_RETRIED); the told rules' guards decide a mention (_told_only, _general_statement,
# a cause's list: _SIGNAL_NAME_CAUSED), and it decides last, after every line a program printed (_TOLD_FAILURES).
# Since batch 72 also the host's memory in Chinese right before the OOM's words (EasyR1 #260, "使用EasyR1训练qwen2.5-vl-7b
# 则出现内存oom", then occurred a memory OOM, on 8xH100 with 2 TB of RAM: tests/crash/public 1536): 内存 alone is the
# host's, 显存 the GPU's (the told OOM's Chinese reading, _OOM_TOLD_ON_GPU_ZH: 内存 after CUDA, GPU or 显卡 is the GPU's),
# so not after those; read with the same verbs and limits (a Chinese verb of meeting right before it, _ZH_OOM_MET; the
# Chinese limits, _zh_oom_mentioned)
_HOST_OOM_TOLD = re.compile(r"(?i:\b(?:CPU|RAM|host|system)(?:[- ](?:memory|RAM))?[- ]"
                            r"(?:OOM|out[- ]of[- ]memory)(?![- ]?killer)\b)"
                            r"|(?<![A-Za-z显卡])(?<!CUDA )(?<!GPU )内存\s*(?i:OOM|out[- ]of[- ]memory)(?![- ]?killer)\b")
# The words name a kind of failure unless the line tells the run met it (review R31: "CPU OOM happens when ...",
# "Reduce CPU OOM risk", "RAM OOM protection enabled", torch's FSDP warning "... which risks CPU OOM"
# (torch/distributed/fsdp/_unshard_param_utils.py) are none): a verb of meeting or ending right before them ("hit a
# host OOM", "ran into a system memory OOM", "died of a RAM OOM", "crashed with a CPU OOM"), the kill they ended in
# right after them ("CPU OOM / Process Killed", "Host OOM killed the trainer") or the step it came at ("host memory
# OOM at step 300"), a Chinese verb of meeting right before
# them (_ZH_OOM_MET: "出现了 CPU OOM"), or an issue's title that opens with a recurrence ("Recurring CPU out of memory
# during checkpoint save") with no predicate after it ("Frequent CPU OOM is common", "... can be avoided")
# The verbs of meeting an OOM, the one family of the OOM told in words (the host's here, the GPU's in oom_told_on_gpu:
# _OOM_TOLD_ON_GPU, _OOM_TOLD_RUNTIME; one owner since review R39, which found the GPU rules' narrower copy refusing
# thu-ml/Motus #26's "but I consistently encounter CUDA OOM errors, even when the batch size is set to 1", "We ran into
# a CUDA OOM at step 400", "I'm seeing CUDA OOM at step 40"), and the words that may stand between them and the OOM
_OOM_MET_VERBS = (r"got|gets?|getting|hit|hits|hitting|(?:ran|runs?|running)\s+into"
                  r"|encounter(?:ed|s|ing)?|experienc(?:e|ed|es|ing)|suffer(?:ed|s|ing)?(?:\s+from)?"
                  r"|see(?:s|ing|n)?|saw|fac(?:e|es|ed|ing)"
                  r"|(?:died|dies|dying|crash(?:ed|es|ing)?|fail(?:ed|s|ing)?|killed|terminated"
                  r"|aborted|ended|stopped)\s+(?:of|from|with|by|due\s+to|because\s+of|after)"
                  r"|caused|triggered|led\s+to|resulted\s+in|there\s+(?:was|were)"
                  r"|(?:died|crashed|failed|aborted)\s*[:—–]|killed\s*[:—–]")
_OOM_MET_DETERMINERS = r"(?:\s+(?:an?|the|another|repeated|frequent|recurring|constant))*"
_HOST_OOM_MET_BEFORE = re.compile(r"(?i)\b(?:" + _OOM_MET_VERBS + r")" + _OOM_MET_DETERMINERS + r"\s*$")
_HOST_OOM_KILLED_AFTER = re.compile(r"(?i)\s*(?:[/,;:–—-]\s*)?(?:(?:the\s+|our\s+|my\s+)?(?:process|trainer|job|run"
                                    r"|worker|training|python\w*)\s+)?(?:was\s+|got\s+)?(?:killed|crashed|died"
                                    r"|terminated)\b"
                                    # or the point of the run it came at ("host memory OOM at step 300")
                                    r"|\s+(?:at|after|on|in|during)\s+(?:the\s+)?(?:step|epoch|iteration|iter)\s*\d")
_TITLE_PREDICATE_AFTER = re.compile(r"(?i)\b(?:is|are|can|could|may|might|should|will|would|means?|indicates?"
                                    r"|happens?|occurs?)\b|[:：]")


def _host_oom_met(text: str, m: re.Match[str], cjk: bool) -> bool:
    """The run met the host's OOM at m (see above), not a kind of failure named; ``cjk``: the line has Chinese."""
    start, end = m.start(), m.end()
    if _HOST_OOM_MET_BEFORE.search(text, max(0, start - 60), start) or _HOST_OOM_KILLED_AFTER.match(text, end):
        return True
    zh = _ZH_OOM_MET_BEFORE.search(text, max(0, start - 6), start) if cjk else None
    if zh is not None:
        return not _zh_hedged(text, zh.start())     # "没有出现 CPU OOM" denies the verb, not the words
    if start > 40 or text[:start].strip() == "":    # a title opens with its recurrence
        return False
    rec = _RECURRENCE_BEFORE.search(text, 0, start)
    stop = _SENTENCE_END.search(text, end, end + _MENTION_WINDOW)
    return (rec is not None and not text[:rec.start()].strip()
            and _TITLE_PREDICATE_AFTER.search(text, end, stop.start() if stop else end + _MENTION_WINDOW) is None)


# How many matches of a line the OOM told in words reads (the host's, the GPU's in Chinese): a report names its OOM
# once or twice ("就会报显存不足，开了之后...还是出现显存不足"), and each match's guards look back over the line, so a
# line of repeated mentions costs this many times its length, not its square (as _FAULT_WORDS_READ; review R31)
_TOLD_OOM_WORDS_READ = 16


def _told_oom_refused(text: str, start: int, end: int, cjk: bool) -> bool:
    """The one guard of an OOM told in words at text[start:end] (the GPU's, in English or Chinese, and the host's):
    the told rules' (_told_only), a general statement (_general_statement), the Chinese limits (_zh_oom_mentioned)
    where the line is Chinese, or an OOM the program caught and went on from (_OOM_RETRIED, _OOM_FELL_BACK); review
    R31 (before it, each rule pasted its own subset); ``cjk``: the line has Chinese (looked for once a line)."""
    return (_told_only(text, start) or _general_statement(text, start, end)
            or (cjk and _cjk_told_mentioned(text, start, end))
            or _OOM_RETRIED.search(text, end) is not None or _OOM_FELL_BACK.search(text, end) is not None)


def host_oom_told(text: str) -> bool:
    """A line that tells, in a person's words, that the host's memory ran out in the run (not a mention)."""
    low = text.lower()
    if "oom" not in low and "of memory" not in low and "of-memory" not in low:
        return False
    cjk = _CJK_CHAR.search(text) is not None
    return any(_host_oom_met(text, m, cjk) and not _told_oom_refused(text, m.start(), m.end(), cjk)
               and _SIGNAL_NAME_CAUSED.search(text, _sentence_start(text, m.start()), m.start()) is None
               for m in islice(_HOST_OOM_TOLD.finditer(text), _TOLD_OOM_WORDS_READ))


def oom_case_retold(text: str, list_above: Collection[str] | None = None) -> bool:
    """A CUDA out-of-memory a person tells in another case than torch prints it, that ended something (not a mention,
    advice, fix, counter, an OOM the program retried, nor an item of a list of patterns)."""
    m = _oom_case_match(text)
    return (m is not None and not _OOM_RETRIED.search(text)
            and not _only_listed(text, [m.span()], list_above))


# A GPU's OOM a person tells in words, without a runtime's message (batch 49: "i always got out of memory on my rtx
# 5090, even with default settings", a ComfyUI LoRA training report): a verb of getting or running out before the
# words (as _SEGFAULT_TOLD reads a told segfault) and the GPU after "on" (_GPU_SUBJECT: a GPU's name or model,
# "cuda:0", "the card"), so host memory ("got out of memory on the login node") is none; decided through the told
# rules' one guard (_told_only: a hedge, a prediction, a fix, a log level's line, a setting, help), not in a general
# statement (_general_statement), not caught and gone on from (_OOM_RETRIED, _OOM_FELL_BACK); decided last, like a
# told segfault (classify; since the review of batches 48/49). torch's own message is _OOM's, read before this.
# the GPU's verbs: the family above, and "ran"/"running" alone before "out of memory" ("We ran out of memory on the A100")
_OOM_MET_ON_GPU = r"\b(?:" + _OOM_MET_VERBS + r"|ran|runs?|running)" + _OOM_MET_DETERMINERS + r"\s+"
_OOM_TOLD_ON_GPU = re.compile(r"(?i:" + _OOM_MET_ON_GPU +
                              r"(?:out[ -]of[ -]memory|OOM)(?:\s+errors?)?\s+on\s+(?:(?:my|the|a|an|our|this|that"
                              r"|each|every|one|all|both)\s+)?)")
_OOM_TOLD_WORDS = ("out of memory", "out-of-memory", "oom", "显存", "内存")    # looked for in the lowered line
# The same with the runtime's name right before the words instead of the GPU after "on" (batch 53: "I'm getting a CUDA
# out-of-memory error", a LeRobot GR00T run on two RTX 5080s, lerobot #2608): the name says which memory ran out as
# the runtime's own OOM message does, each allocator naming its device's memory so (c10/cuda/CUDACachingAllocator.cpp
# "CUDA out of memory.", its hipified build's "HIP out of memory.", c10/xpu/XPUCachingAllocator.cpp "XPU out of
# memory.", torch_npu's "NPU out of memory.", aten/src/ATen/mps/MPSAllocator.mm "MPS backend out of memory"), the
# short "OOM" as people type it ("hit a CUDA OOM"); the same verbs, guard and place in classify as the rule above.
# The name says which memory but not whose: "on my RTX 5090" places the OOM on the reporter's GPU, the runtime's name
# does not, so the first person stands in the words' clause (_FIRST_PERSON: "but I'm getting ...", "we hit ..."); an
# explainer's case ("the model runtime hit CUDA out-of-memory on the GPU") or a scenario ("a worker hits CUDA OOM and
# the whole job dies") is none.
_OOM_TOLD_RUNTIME = re.compile(r"(?i:" + _OOM_MET_ON_GPU + r"(?:cuda|hip|mps(?:\s+backend)?|npu|xpu)[ -]"
                               r"(?:out[ -]of[ -]memory|OOMs?)\b"
                               # not as a modifier of a noun ("ran a CUDA OOM test", "hit a CUDA OOM handler bug"): what
                               # makes the words no report is the noun they qualify, not a list of words allowed after
                               # them ("CUDA OOM issues", "CUDA OOM despite 80GB", "CUDA OOM then the process died" are
                               # reports; review R39)
                               r"(?!(?:\s+(?:errors?|exceptions?))?\s+" + "(?:" + "|".join((
                                   r"tests?", r"test(?:ing|ed|er|suite)", r"handl(?:er|ers|ing)", r"bugs?", r"checks?",
                                   r"guards?", r"hooks?", r"callbacks?", r"detect(?:or|ors|ion)", r"messages?",
                                   r"strings?", r"regex(?:es)?", r"patterns?", r"labels?", r"protection",
                                   r"recovery", r"retr(?:y|ies)", r"simulat(?:or|ion)", r"injection", r"warnings?",
                                   r"logic", r"code", r"path", r"flag", r"options?", r"settings?", r"thresholds?",
                                   r"mode", r"demo", r"examples?", r"scenarios?", r"tutorial", r"docs?", r"guide",
                                   r"fix(?:es)?", r"workarounds?", r"templates?", r"reproducers?", r"repro",
                                   r"script")) + r")\b)"
                               r"(?:\s+(?:errors?|exceptions?)\b)?)")
# Whose OOM the runtime's name tells (review R39): the first person as the verb's subject, right before it or with only
# an auxiliary or an adverb between ("I keep getting", "we've been hitting", "i am unexpectedly getting", "my run got",
# "our 8-GPU job hit"), or a verb joined to its clause's first person ("I tried batch 8 and got ..."); not a pronoun
# that governs another subject ("I believe a worker hits CUDA OOM"), nor a lowercase "i" of "i.e."
# The auxiliaries are whole words read once (round 22: each ends at a word's end and the run of them is atomic, so a
# search does not try every way to split a long run of them before failing at the end; the same texts match, as
# each auxiliary had to be followed by a space anyway)
_OOM_TOLD_SUBJECT_BEFORE = re.compile(
    r"(?i)(?:\b(?:i(?!\.\w)|we)(?:['’](?:m|re|ve|d))?|\b(?:my|our)(?:\s+[\w.-]+){1,4})"
    r"(?>(?:\s+(?:am|are|is|was|were|have|has|had|been|keep|keeps|kept|still|also|always|just|now|then|again|often"
    r"|sometimes|do|does|did|even|only|\w+ly)\b)*)\s+$")
# Since batch 74: a verb after "but" with no subject of its own, its sentence opening with the first person as the
# subject ("Now I'm using 8 A100 80G to finetune Alpaca-7B ..., but got CUDA OOM problem.", RRHF #20,
# tests/crash/public 1586): the contrast's clause shares the sentence's subject ("and"/"then" need the first person in
# their own clause, _OOM_TOLD_JOINED_BEFORE); an opening adverb or a name's mention before the subject at most
_OOM_TOLD_BUT_BEFORE = re.compile(r"(?i)\bbut(?:\s+(?:then|still|also|again|always|\w+ly))*\s+$")
_OOM_TOLD_SUBJECT_OPENS = re.compile(r"(?i)[\s>*_-]*(?:@\w+[,:]?\s+)?(?:(?:now|so|then|today|also|here|recently|"
                                     r"again),?\s+)?(?:i|we)(?:['’](?:m|ve|d))?\b(?!\.\w)")
_OOM_TOLD_JOINED_BEFORE = re.compile(r"(?i)\b(?:and|then)(?:\s+(?:then|still|also|again|\w+ly))*\s+$")
# ... and not someone else's words: a quote open before them ('**User**: "I'm getting CUDA OOM with DeepSeek-V3"', a
# skill doc's example), or a line a speaker's or a template's label opens ("User: ...", "* **Prompt/Objective:** ...",
# "Symptom: we hit CUDA OOM during eval")
_SPEAKER_LABEL = re.compile(r"[\s>*•·\-–]*(?i:user|customer|human|prompt|objective|symptoms?|question|query|example"
                            r"|scenario|input)\b[\w/ ]{0,20}?\**\s*:")


def _quote_open(text: str, pos: int) -> bool:
    """A quotation opened before text[pos] on the line is not closed before it (straight or curly double quotes)."""
    return text.count('"', 0, pos) % 2 == 1 or text.count("“", 0, pos) > text.count("”", 0, pos)


def _oom_told_own(text: str, start: int) -> bool:
    """The OOM told at text[start] (its verb) is the reporter's own (_OOM_TOLD_SUBJECT_BEFORE, not quoted)."""
    clause = _clause_start(text, start, max(0, start - _MENTION_WINDOW))
    lo = max(clause, start - 120)
    own = (_OOM_TOLD_SUBJECT_BEFORE.search(text, lo, start) is not None
           or (_OOM_TOLD_JOINED_BEFORE.search(text, lo, start) is not None
               and _FIRST_PERSON.search(text, clause, start) is not None)
           or (_OOM_TOLD_BUT_BEFORE.search(text, max(0, start - 40), start) is not None
               and _OOM_TOLD_SUBJECT_OPENS.match(text, _sentence_start(text, start, max(0, start - _MENTION_WINDOW))) is not None))
    return own and not _quote_open(text, start) and _SPEAKER_LABEL.match(text) is None


# The same told in Chinese (batch 50: a GitCode write-up of a LLaMA-Factory evaluation, "系统日志显示多个GPU进程
# (rank0-rank7)均报告了CUDA内存不足的错误", the ranks reported CUDA out-of-memory errors): a verb of meeting or reporting
# (出现, 遇到, 碰到, 发生, 报告, 报出, 报, 触发) before the GPU's memory running out (显存, the GPU's own memory, or
# 内存 after CUDA, GPU or 显卡; 内存 alone is the host's) with 不足 (not enough), 溢出 (overflow), 耗尽 (used up) or
# 爆 (blew up); a Chinese condition, doubt or way around before it in its sentence, or a denial right before, is a
# mention (_zh_hedged), as for the NCCL timeout told in Chinese; so is a general statement: a frequency before it in
# its sentence (通常, usually; 一般, 往往, 常常, 经常, 常见, 大多) or a "when" after it (时, 的时候: "通常出现在显存不足时",
# usually happens when VRAM runs short, an explainer of CUDA errors, jjblogs 224933)
_ZH_OOM_MET = r"(?:出现|遇到|碰到|发生|报告|报出|报|触发)了?"
_ZH_OOM_MET_BEFORE = re.compile(_ZH_OOM_MET + r"\s*$")
# A segfault told in Chinese (segfault_told; since batch 71: "大家训练过程中有遇到这个错误吗？训练中途，报错，segmentation fault (core
# dumped)...", mid-training it reported an error, ..., ddpm-pytorch #20, tests/crash/public 1532): the told OOM's verbs
# of meeting or reporting (_ZH_OOM_MET, and 报错, reported an error) right before the signal's name, a comma or a quote
# between at most; the Chinese limits are the told OOM's, one reading (_zh_oom_mentioned: a condition, a doubt, a
# denial, a general statement, a question, a heading, a cause or a remedy after: "如果出现segmentation fault，可以...",
# "为什么会出现Segmentation fault？", "出现segfault的原因")
# (the told words end past the shell's "(core dumped)" and a closing quote, where a cause or a guide's words after
# them are read: "出现"Segmentation fault (core dumped)"的原因通常是内存越界", "...的常见原因与排查": _ZH_SHELL_GUIDE_AFTER,
# batch 60's reading of the shell's words in prose)
_SHELL_CORE_DUMPED_AFTER = re.compile(r"(?:\s*[(（](?:core dumped|核心已转储)[)）])?[\"'”」`*]*")
# Since batch 73 also the signal's name as a Chinese system prints it, glibc's zh_CN catalogue giving strsignal(SIGSEGV)
# as 段错误 (po/zh_CN.po, msgid "Segmentation fault"; a Chinese shell's "段错误 (核心已转储)"), after the same verbs
# ("训练过程会出现段错误(Segmentation fault)"), and the process told as ended by the signal in the passive (被 ... 信号终止:
# "最终导致进程被SIGSEGV信号终止(信号11)", a write-up of modded-nanogpt on 8x H100, tests/crash/public 1563), read with the
# same Chinese limits
_SEGFAULT_NAME_ZH = r"(?:(?i:" + _SEGFAULT_NAME + r")|段错误)"
_SEGFAULT_TOLD_ZH = re.compile(r"(?:报错|" + _ZH_OOM_MET.removesuffix("了?") + r")了?\s*[，,：:]?\s*[`'\"“「*]*"
                               + _SEGFAULT_NAME_ZH +
                               r"|被\s*[`'\"“「*]*(?:SIGSEGV|段错误)[`'\"”」*]*\s*(?:\(\s*11\s*\)\s*)?(?:信号)?\s*"
                               r"(?:终止|杀死|杀掉|中断|结束|打断)")

# Since batch 59 also 爆显存 (blew the VRAM), the same words with 爆 as their own verb before 显存 ("单机8卡80G的A800爆
# 显存", LlamaFactory #9191; "跑到第300步就爆显存了"): no verb of meeting needed, the same limits read from 爆 (a
# condition, a way around, a denial, a prediction, a question, a heading: _zh_oom_mentioned); not 火爆/引爆 (popular,
# to set off), which are no verb of the GPU's memory
_OOM_TOLD_ON_GPU_ZH = re.compile(_ZH_OOM_MET + r"[^。；！？\n]{0,16}?"
                                 r"(?:(?:CUDA|GPU|显卡)\s*(?:内存|显存)|显存)\s*(?:不足|溢出|耗尽|爆)"
                                 r"|(?<![火引])爆了?显存")
# Since review R31 also: many people (很多, 不少, 大家), a condition (当, 一旦, 容易), a prediction (会: since review R55
# an explainer's only, _zh_predicted's one reading, not this list), a guide's or a
# fix's label before the words (解决方法, 办法, 修复), a question word (为什么, 怎么), read in the words' own clause (a
# run's habit, 还是会, 仍然会, 都会, 也会, 总会: "开了梯度检查点还是会出现显存不足", is no prediction)
# ("没开梯度检查点就会报显存不足，开了之后第300步还是出现显存不足": the second clause is the report)
# (a prediction's 会, not 机会/学会/开会/社会/总会/工会/协会, nor a habit's 也会/都会/还是会/仍然会: one reading, _ZH_WILL)
_ZH_WILL_RE = r"(?<![机学开社总工协也都还是然])会(?![话议])"
_ZH_GENERAL_BEFORE = re.compile(r"通常|一般|往往|常常|经常|常见|大多|很多|许多|不少|大家|容易|一旦|(?<![相适])当(?![前时天然])"
                                r"|修复|解决方法|解决办法|解决方案|办法|方法\s*[:：]"
                                r"|为什么|为何|如何|怎么")
# a "when" right after the words ("通常出现在显存不足时"), not a word with 时 in it (同时 at the same time, 时间 time)
_ZH_WHEN_AFTER = re.compile(r"[^\s，,。；！？、同]{0,2}?(?:时候|时(?![间刻代长]))")
# after the words: a question in their clause, their cause or remedy, advice, a counter, a label's colon, the
# program's skip or retry (跳过, 重试, 继续训练, 自动)
# (the advice's words, _ZH_ADVICE, are also read after a runtime's bare words: _ZH_ADVICE_AFTER_CONDITION); not a
# report's request for help or question ("可以帮忙看看吗", "应该怎么办", "请大家帮忙") nor "可以看到" (one can see; R40)
_ZH_ADVICE = r"(?:可以(?!看到|看出|帮|吗)|建议|应该(?!怎么|如何|是)|不妨|请(?!问|大家|帮))"
_ZH_OOM_MENTIONED_AFTER = re.compile(r"[^，,。；！]{0,8}?(?:[？?]|怎么|吗)|的?(?:原因|解决|办法|方法)|\s*[:：]"
                                     r"|[^。；]{0,40}?" + _ZH_ADVICE + r"|[^。；]{0,40}?(?:跳过|重试|继续训练|自动)"
                                     r"|[^，,。；]{0,8}?[=:：]\s*\d")
# a heading or an FAQ's question opening the line, or a "problem:" label right before the words ("问题：出现显存溢出";
# a report's "问题：训练到第300步出现显存溢出" names its run first)
_ZH_OOM_HEADING = re.compile(r"\s*(?:#{1,6}\s|(?i:FAQ)|Q\s*\d*\s*[:：])")
_ZH_OOM_LABEL_BEFORE = re.compile(r"(?:常见)?问题\s*[:：]\s*$")


def _zh_general(text: str, pos: int) -> bool:
    """A general statement in the Chinese clause of text[pos], before it: many people, a frequency, a condition, a
    guide's or a fix's label, a question word (_ZH_GENERAL_BEFORE, the told OOM's reading since review R31). Since
    batch 69 the told NCCL timeout's too ("很多人却被一个看似简单却反复出现的问题拦住去路:NCCL timeout。", many people are
    stopped by ...: a write-up's opening, tests/crash/public 1492), the one reading of both."""
    return _ZH_GENERAL_BEFORE.search(text, _zh_clause_start(text, pos), pos) is not None


def _zh_clause_start(text: str, pos: int) -> int:
    """Where the Chinese clause of text[pos] starts (after a comma in its sentence)."""
    return max(_zh_sentence_start(text, pos), text.rfind("，", 0, pos) + 1, text.rfind(",", 0, pos) + 1)


def _zh_oom_mentioned(text: str, start: int, end: int) -> bool:
    """The Chinese limits of an OOM told in words at text[start:end]: a hedge, a doubt or a denial (_zh_hedged), a
    general statement, a question, a heading, a guide, a counter, a caught OOM (above), or a "when" after it."""
    return (_zh_hedged(text, start) or _ZH_OOM_HEADING.match(text) is not None
            or _ZH_OOM_LABEL_BEFORE.search(text, max(0, start - 8), start) is not None
            or _zh_general(text, start)
            or _zh_predicted(text, start, end)     # an explainer's 会, the one reading (review R55, finding 4)
            or _ZH_WHEN_AFTER.match(text, end) is not None or _ZH_OOM_MENTIONED_AFTER.match(text, end) is not None)


# Chinese advice after a runtime's bare words refuses them only after a condition that closes their clause ("出现CUDA
# out of memory的情况下，建议减小batch size", in case it occurs, reduce ...; "出现 ... 时，可以 ...", when it occurs):
# advice after a report ("训练中断：CUDA out of memory，请减小 per_device_train_batch_size 后重新运行", a program's
# own error line) is the report's, and a request for help or a question ("可以帮忙看一下吗", "应该怎么办", "应该如何
# 排查", "请大家帮忙看看") or "可以看到" (one can see) is none (review R40)
_ZH_ADVICE_AFTER_CONDITION = re.compile(r"[^，,。；！？?]{0,12}?(?:的?情况下|的话|的?时候|时(?![间刻代长]))[，,\s]*"
                                        r"[^。；？?]{0,40}?" + _ZH_ADVICE)
# the Chinese hedges of a runtime's bare words (review R40; _zh_hedged's list is a told NCCL timeout's, whose setting
# verbs and doubts are a report's own words here: "batch size 设置为 1 还是出现 CUDA out of memory", "不知道为什么训练时
# 出现 ..."): a condition or a way around in their sentence (如果 if, 一旦 once, 为了避免 to avoid), a possibility or a
# whether in their own clause (可能 may, 是否 whether), a denial right before them
_ZH_BARE_CONDITION = re.compile(r"如果|若|假如|要是|一旦|万一|避免|防止|以免")
_ZH_BARE_DOUBT = re.compile(r"可能|是否|会不会")


def _zh_bare_hedged(text: str, pos: int) -> bool:
    """The Chinese hedges of a runtime's bare words at text[pos] (above), and a 的话 condition after them
    (_zh_if_after)."""
    sentence = _zh_sentence_start(text, pos)
    for turn in _ZH_CONTRAST.finditer(text, sentence, pos):   # what follows a "but" is told
        sentence = turn.end()
    clause = max(sentence, *(text.rfind(c, sentence, pos) + 1 for c in "，,；！？?"))
    return (_ZH_BARE_CONDITION.search(text, sentence, pos) is not None
            or _ZH_BARE_DOUBT.search(text, clause, pos) is not None
            or _ZH_DENIED_BEFORE.search(text, max(sentence, pos - 4), pos) is not None
            or _zh_if_after(text, pos)       # "CUDA out of memory 报错的话，减小batch size" (since batch 54)
            or _zh_whenever_will(text, pos, sentence, clause))


# A "whenever" frame closed before the words with a prediction in their clause ("当使用Colab的T4显卡进行模型微调时，系统会
# 报出"CUDA out of memory"错误", whenever one fine-tunes on a T4 the system will report it: a write-up's general case,
# tests/crash/public 1189, read as 如果 in its place is; review R49): 当 (_ZH_WHENEVER_BEFORE) in their sentence, its
# 时 (_ZH_WHEN_CLOSED) before them, and 会 (will) before them in their clause, not the run's own habit (还是会, 都会:
# _ZH_WILL_RE, _zh_oom_mentioned's reading). A report's 当 ... 时 with no prediction ("当我用8卡训练时出现
# CUDA out of memory") decides.
_ZH_WILL = re.compile(_ZH_WILL_RE)


def _zh_whenever_will(text: str, pos: int, sentence: int, clause: int) -> bool:
    """A 当 ... 时 frame closed before the words at text[pos] in their sentence from ``sentence``, and a prediction's
    会 in their clause from ``clause`` (above)."""
    when = _ZH_WHENEVER_BEFORE.search(text, max(sentence, pos - _ZH_IF_REACH), pos)
    return (when is not None and _ZH_WHEN_CLOSED.search(text, when.end(), pos) is not None
            and _ZH_WILL.search(text, max(clause, when.end()), pos) is not None)


# A failure's words inside Korean prose (since batch 52: ms-swift and LLaMA-Factory users paste from velog, tistory and
# Korean issue threads): Korean puts the verb after its object, so what the prose does with the words stands right after
# them, in their own clause: a condition (발생하면 / 나면 / 뜨면, if it occurs; 경우, in case; 발생할 때, when it occurs),
# advice (줄이세요 reduce, 해야 합니다 must, 권장 recommended), a question (발생하나요?), a guide's cause or way (원인,
# 해결 방법); or before them in their sentence a condition or a frequency (만약 if, 보통 usually, 흔히 commonly). The
# clause ends at a comma or a sentence's end, and at a connective (발생하는데 it occurs and, 발생했지만 it occurred
# but, 뜨고 ... and): "CUDA out of memory가 발생하는데 어떻게 해결하나요?" is a report that asks for help, as its Chinese
# twin ("...，怎么解决？"); "2번째 에폭에서 ... 발생했습니다" (it occurred at epoch 2) is a report.
_KO_CLAUSE_END = re.compile(r"[.。!?！？,，;；\n]|(?:는데|은데|지만|으며|고|서|며)(?![\uac00-\ud7a3])"
                            r"|(?:다|요)(?![\uac00-\ud7a3])")
# Not a report's own words (review R40): 나요 alone is 나다's plain polite form ("CUDA out of memory가 나요", it
# happens), only 하나요/되나요/... ask; 경우가 있습니다 and 날 때가 있어요 (there are times it happens) and 발생할 때까지
# (until it happens) tell when it happened; 봐 주세요 / 도와주세요 ask for help, not advise; a frequency (자주 often,
# 종종 sometimes) tells how often it happened, as the English "We often hit CUDA out of memory" does.
_KO_MENTIONED_AFTER = re.compile(r"(?:하|되|나|뜨|기|이|으|오)면(?![\uac00-\ud7a3])|경우(?!가)"
                                 r"|(?:할|날|뜰|길|생길)\s*때(?!가|까지)|(?<!주)세요|십시오|해야|권장|추천"
                                 # a guide's cause or way, not a report's "원인을 모르겠습니다" (don't know why)
                                 r"|원인(?!을?\s*모르)|방법|해결법"
                                 r"|(?:하|되|있|없|뜨|나|생기)나요|까요|[?？]")
_KO_MENTIONED_BEFORE = re.compile(r"만약|만일|보통|일반적으로|흔히|대부분")
_KO_CHAR = re.compile(r"[\uac00-\ud7a3]")
# how far after the words their Korean clause is read (its particle and verb: "에러가 발생하면 ...")
_KO_CLAUSE_REACH = 40


def _ko_mentioned(text: str, start: int, end: int) -> bool:
    """The Korean limits of a failure's words at text[start:end] (above): a condition, advice, a question or a guide's
    word in their own clause after them, or a condition or a frequency before them in their sentence."""
    window = text[end:end + _KO_CLAUSE_REACH]
    if _KO_CHAR.search(window) is None and _KO_CHAR.search(text, max(0, start - _MENTION_WINDOW), start) is None:
        return False
    cut = _KO_CLAUSE_END.search(window)
    clause = window if cut is None else window[:cut.end()]
    return (_KO_MENTIONED_AFTER.search(clause) is not None
            or _KO_MENTIONED_BEFORE.search(text, _sentence_start(text, start), start) is not None)


def _cjk_mentioned(text: str, start: int, end: int) -> bool:
    """A runtime's bare words for a failure at text[start:end] (an OOM's, a fault's, the DataLoader's line) that the
    Chinese, Japanese or Korean prose around them only mentions (the one owner of the CJK prose's limits since batch
    52): a Chinese condition, doubt, way around or denial before them (_zh_bare_hedged), a heading or an FAQ, Chinese
    advice after a condition closing their clause (_ZH_ADVICE_AFTER_CONDITION), a Japanese or Chinese quote naming a kind of error (_cjk_named), the Korean limits
    (_ko_mentioned), a Chinese enumeration of kinds (_zh_listed) or the Japanese limits (_ja_mentioned; the last two
    since batch 54); never on a line without CJK text. Only those: the prose around a log line is the reporter's own
    ("我在尝试...时, 启用`X`会导致illegal memory access:", a report with the paste after its colon), so the Chinese limits
    of a failure told in Chinese words alone (_cjk_told_mentioned) are not read here. The prose only refuses: a
    runtime's line raised in it (after an exception's name) decides as it would alone."""
    if not _has_cjk(text):
        return False
    if _ZH_OOM_HEADING.match(text) is not None or _cjk_named(text, start, end):
        return True
    # the sentence's limits read within _MENTION_WINDOW of the words: each of many matches on a long line costs the
    # window, not the line (tests/test_patterns_never_hang.py)
    lo = max(0, start - _MENTION_WINDOW)
    part = text[lo:end + _MENTION_WINDOW]
    return (_zh_bare_hedged(part, start - lo) or _ZH_ADVICE_AFTER_CONDITION.match(part, end - lo) is not None
            or _ko_mentioned(part, start - lo, end - lo) or _zh_listed(part, start - lo, end - lo)
            or _ja_mentioned(part, start - lo, end - lo) or _zh_predicted(part, start - lo, end - lo))


# A Chinese prediction before a runtime's bare words (since batch 56, item 1 of its brief): an explainer's "端口被占用会导致
# Address already in use 错误" (a port in use will cause ...), "显存不够会报 CUDA out of memory": 会 (will, _ZH_WILL: not
# the run's habit 还是会/都会/也会) in the words' clause before them. Reviewed (R55): a report says 会 of its own run as
# often ("为什么迭代到第三万次的时候会报 CUDA out of memory？", DiffusionDet #86; "单卡没问题，多卡会报 ..."; "启用
# optimizer_cpu_offload会导致illegal memory access", tests/crash/public 1023 without its 我), so the prediction is an
# explainer's only with a general subject and nothing of a run in its whole sentence: no first person anywhere in it
# (_ZH_FIRST_PERSON), no count, frequency or past 了 of the run's own (_ZH_RUN_OWN_TIMES) before or after the words, no
# run detail before the 会 (_ZH_RUN_DETAIL: a model, a flag, a size, a GPU, a port or a number, any Latin letter or
# digit; the run's progress or phase, 训练, 迭代, 加载, 保存, 评估, 一段时间, 之后, 的时候, 步, 轮; its cards or
# machines, 单卡, 多卡, 多机, 节点), no digit after the words (a size, "显存 80G"), no question or plea in it (为什么,
# 怎么, 请问, 求助, 吗, ？), no exception's name raised between, and never before torch's raised message with its
# numbers (oom.torch_oom_rendered: "... 会报 CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total
# capacity of ..."). The one reading of 会 before a failure told or named in Chinese prose: the told OOM's limits
# (_zh_oom_mentioned) and the told NCCL timeout's (_nccl_timeout_told_zh) read it here too (review R55, finding 4).
_ZH_FIRST_PERSON = re.compile(r"我|咱|俺|本人")
_ZH_RUN_OWN_TIMES = re.compile(r"每次|总是|一直|有时|有几次|偶尔|又|第\s*\d+|了")
_ZH_RUN_DETAIL = re.compile(r"[A-Za-z0-9０-９]|训练|跑|运行|启动|执行|迭代|加载|保存|评估|推理|测试|微调|一段时间|之后|后|时候"
                            r"|步|轮|卡|机|节点")
_ZH_RUN_DIGIT = re.compile(r"[0-9０-９]")
_ZH_PREDICTION_ASKED = re.compile(r"[？?]|吗|呢|求助|请问|怎么|如何|为什么|为何")
_ZH_SENTENCE_END = re.compile(r"[。！？!?；\n]")


def _zh_predicted(text: str, pos: int, end: int) -> bool:
    """An explainer's prediction, 会 with a general subject, before the words at text[pos:end]; none of a run's marks
    in their sentence (above)."""
    sentence = _zh_sentence_start(text, pos)
    clause = max(sentence, *(text.rfind(c, sentence, pos) + 1 for c in "，,；！？?"))
    will = _ZH_WILL.search(text, clause, pos)
    if will is None or torch_oom_rendered(text, end):
        return False
    stop_m = _ZH_SENTENCE_END.search(text, end)
    stop = len(text) if stop_m is None else stop_m.end()
    return not (_ZH_FIRST_PERSON.search(text, sentence, stop) is not None
                or _ZH_RUN_OWN_TIMES.search(text, sentence, pos) is not None
                or _ZH_RUN_OWN_TIMES.search(text, end, stop) is not None
                or _ZH_RUN_DETAIL.search(text, sentence, will.start()) is not None
                or _ZH_RUN_DETAIL.search(text, will.end(), pos) is not None
                or _ZH_RUN_DIGIT.search(text, end, stop) is not None
                or _ZH_PREDICTION_ASKED.search(text, sentence, stop) is not None
                or _EXC_IN_TEXT.search(text, clause, pos) is not None)


# A third person's run retold in Chinese (since batch 56: GitCode's blog write-ups of others' TRL runs, "研究人员遇到了
# 一个典型的内存管理问题。具体场景是...训练过程中出现了CUDA内存不足的错误" and further down "错误发生:CUDA内存不足",
# "用户报告在初始化vLLM...引擎时遇到了CUDA内存溢出(OOM)问题", a guide's "用户常遇到...NCCL超时或崩溃等问题",
# tests/crash/public 1231, 1233, 1234): a third person (研究人员, 研究者, 用户, 开发者, 有人, 作者, 网友, 楼主) as the one
# who met or reported the failure (遇到, 碰到, 报告, 反馈, 发现, 提到) is the topic, and Chinese carries a topic's
# subject over the sentences and lines that follow it (its own line too), so what the text tells in words after it is that person's run
# until a line names the first person (我遇到..., 我们的训练...: the writer's own run). Only the failures told in
# Chinese words read it (the told OOM and the told NCCL timeout); a program's own line decides wherever it stands.
# Not a question ("有人遇到过这个问题吗？训练到第300步出现显存不足": a report asking whether others met it) nor a denial
# ("没有人遇到"); the topic ends at a line naming the first person (the scan's reset at a blank line is moot for a tail
# normalize_crash_text read: it drops blank lines; review R55).
# Reviewed (R55): the topic holds from the line that names the third person's failure (a line with a failure family's
# keyword opens it: "搜了issue，发现有人遇到过类似问题" names none and opens none), over the rest of that line and the
# lines after it; every line is read for its end, one without a failure's keyword too ("我的配置如下" ends it); the
# third person is the one who met the failure only as the verb's subject: not addressed (作者您好, 开发者你好, 楼主你好,
# @作者), not joined to the writer (和楼主遇到了一样的问题, 跟/同/与/像: the writer met it too), and not a noun's modifier
# (用户反馈的问题已经修复了, the verb before 的)
_ZH_THIRD_PERSON_MET = re.compile(r"(?<![没和跟同与像@])(?:研究人员|研究者|用户|开发者|有人|作者|网友|楼主)"
                                  r"(?![，,\s]{0,2}(?:[您你]们?好|们好))[^。；\n]{0,12}?"
                                  r"(?:遇到|碰到|报告|反馈|发现|提到)(?!的)")
_ZH_ASKED_AFTER = re.compile(r"[^。！；\n]*?(?:吗|？|\?)")


def zh_retold_topic(text: str, retold: bool, opens: bool = True) -> bool:
    """Whether a third person's run is the topic after the line ``text`` (``retold``: it was before it; ``opens``: the
    line may open it, one naming a failure; above)."""
    if not _has_cjk(text):
        return retold
    if _ZH_FIRST_PERSON.search(text) is not None:
        return False
    met = list(islice(_ZH_THIRD_PERSON_MET.finditer(text), 4)) if opens else []
    if met and _ZH_CONTRAST.search(text, met[-1].end()) is not None:
        return False    # the writer turns to their own run after the other's ("有人提到...可以解决，试了没用，训练到第300步还是
        #                 出现显存不足", "有人反馈过...，但升级之后：": a contrast after the mention; review R55)
    return retold or any(_ZH_ASKED_AFTER.match(text, m.end()) is None for m in met)


# A Chinese enumeration of kinds (since batch 54): the enumeration comma 、 joins nouns of one list ("- 显存相关:OOM(内存
# 不足)、CUDA out of memory", a guide's "三类问题" by category), so the words right before or after one name an item of
# the list, as two of NCCL's result names listed on one line do (_nccl_name_mentioned); not with a verb of meeting in
# their clause ("训练时出现了 loss nan、CUDA out of memory", both happened: a report's list of what it met). Reviewed
# (R49): the clause runs over a colon, so a list after a report's colon is the report's ("训练中遇到两个问题：CUDA out of
# memory、illegal memory access", "多机训练时报错：ncclSystemError、进程退出"), as is a report's heading before it
# ("现象：", "问题现象：") or its noun of error after the list ("日志里有 CUDA out of memory、NCCL watchdog timeout 两种
# 报错"); a guide's common kinds ("常见错误：NCCL timeout、CUDA out of memory", "常见报错：...") stay items. One owner:
# the told NCCL timeout's rule reads the same list (nccl_timeout_told), so no item of a list is taken while another
# is refused.
_ZH_LIST_MARK = "、"
# a gloss in brackets between the words and the mark ("OOM(内存不足)、")
_ZH_LIST_GLOSS_THEN_MARK = re.compile(r"[(（][^)）、]{0,8}[)）]\s*、")
_ZH_MET_BEFORE = re.compile(r"(?:出现|遇到|碰到|发生|报告|报出|报错|报|触发|遭遇|现象)")
_ZH_LIST_GENERAL = re.compile(r"常见|典型|几类|几种|哪些|以下")
# how far the list's clause is read on each side of the words (each match costs this, not the line)
_ZH_LIST_REACH = 120


def _zh_listed(text: str, start: int, end: int) -> bool:
    """The bare words at text[start:end] are an item of a Chinese enumeration (_ZH_LIST_MARK right before or after
    them, brackets and spaces aside) with no verb of meeting in their clause (_ZH_MET_BEFORE, over a colon), or of
    a guide's common kinds (_ZH_LIST_GENERAL)."""
    before = text[max(0, start - 3):start].rstrip(" `*")
    after = text[end:end + 12].lstrip(" `*")
    if not (before.endswith(_ZH_LIST_MARK) or after.startswith(_ZH_LIST_MARK)
            or _ZH_LIST_GLOSS_THEN_MARK.match(after) is not None):
        return False
    clause = max(_zh_sentence_start(text, start), start - _ZH_LIST_REACH,
                 *(text.rfind(c, 0, start) + 1 for c in "，,；\n"))
    if _ZH_LIST_GENERAL.search(text, clause, start) is not None:
        return True
    stop = _ZH_CLAUSE_END.search(text, end, end + _ZH_LIST_REACH)
    hi = stop.start() if stop else min(len(text), end + _ZH_LIST_REACH)
    return (_ZH_MET_BEFORE.search(text, clause, start) is None and _ZH_MET_BEFORE.search(text, end, hi) is None
            and _ZH_RUN_ENDED.search(text, end, hi) is None)


_ZH_CLAUSE_END = re.compile(r"[，,；。！？?\n]")
# the run's end told after the list ("第300步的时候 CUDA out of memory、程序直接退出了", "...、进程被杀", "...、训练中断"):
# what happened next, no kind listed (review R49)
_ZH_RUN_ENDED = re.compile(r"退出|中断|崩溃|挂掉|挂了|被杀|被kill|终止|停止|卡住|失败")


# Japanese prose's limits of a failure's words (since batch 54: a Japanese explainer's "torch.distributed.DistBackendError
# についてですね", about it; "ポート衝突(Address already in use) ... 居座っている時によく起こります", it often happens when
# ...; a comic dialogue's speaker 「... 真っ赤な文字で DistBackendError って出てるぞ。」): Japanese, like Korean, puts
# what the prose does with the words after them: the topic right after them (について about, とは what is, って何,
# の正体; not とは別に/とは違う, apart from), a general statement in their sentence after them, a condition in their
# clause; or a speaker's line: a 「 opening the line and a sentence ended inside it before the words (someone's
# utterance in a dialogue, as _SPEAKER_LABEL and an open quote refuse a told OOM). A report ("学習中に DistBackendError
# が発生しました", "...って出て止まりました") names none of these, and 「CUDA out of memory」というエラーが発生しました stays
# _cjk_named's report. Reviewed (R49), each limit bound to what makes it no report:
# - a frequency is a report's (review R40: Korean 자주/종종, English "We often hit ..."): "学習中に CUDA out of memory
#   がよく発生します", "...で落ちることが多いです" decide; only what happens when a case comes, said after the words (the
#   English explainer's "X happens when ...", _TOLD_EXPLAINED_AFTER: "...が居座っている時によく起こります"), or the words
#   as the sentence's topic (は) with a tendency or "a common error" (がち, よくある: "illegal memory access はカスタム
#   カーネルで起きがちです", "CUDA out of memory はよくあるエラーです") is general;
# - a condition's conjugations as Japanese writes them (発生したら, 出たら, 起きたら, になったら, 表示されたら, 出たときは,
#   出た場合, 起きると, の場合は), unless their sentence goes on in the past: what followed is told as happened
#   ("...が発生したら学習が止まりました", it stopped when it came; _JA_PAST_END);
# - a speaker's line that tells a run in the past ("「学習を始めました。... が出て止まりました」", a quoted report) is a
#   report; a line in the present ("って出てるぞ", look, it says ...) is the dialogue's.
_JA_TOPIC_AFTER = re.compile(r"[\s)）」』`*]*(?:について|とは(?!別|違|異)|って何|の正体)")
_JA_SENTENCE_END = re.compile(r"[。！？!?\n]")
_JA_GENERAL_AFTER = re.compile(r"(?:時|とき|場合)に(?:は)?(?:よく|しばしば|たびたび)(?:起こ|起き|発生|出)")
_JA_TOPIC_GENERAL = re.compile(r"[\s)）」』`*]*は[^。！？!?\n]{0,40}?(?:(?:し|なり|出|起き|起こり)がち|よくある)")
_JA_CONDITION_AFTER = re.compile(r"[^、。！？\n]{0,16}?(?:(?:発生し|出|起き|起こっ|表示され|になっ)(?:たら|た場合|たとき|た時)"
                                 r"|(?:発生す|出|起き|起こ|表示され|にな)る(?:場合|と)|(?:発生す|出|起き|起こ)れば)"
                                 r"|[\s)）」』`*]*の場合")
_JA_PAST_END = re.compile(r"(?:ました|でした|た)[\s」』]*$")
_JA_KANA = re.compile(r"[\u3040-\u30ff]")


def _ja_mentioned(text: str, start: int, end: int) -> bool:
    """The Japanese limits of a failure's words at text[start:end] (above); never on a line without kana."""
    if _JA_KANA.search(text) is None:
        return False
    if _JA_TOPIC_AFTER.match(text, end) is not None:
        return True
    stop = _JA_SENTENCE_END.search(text, end)
    sentence_end = stop.start() if stop else len(text)
    past = _JA_PAST_END.search(text, end, sentence_end) is not None
    if ((not past and _JA_GENERAL_AFTER.search(text, end, sentence_end) is not None)
            or _JA_TOPIC_GENERAL.match(text, end, sentence_end) is not None
            or (not past and _JA_CONDITION_AFTER.match(text, end, sentence_end) is not None)):
        return True
    head = len(text) - len(text.lstrip())
    return (text.startswith("「", head) and text.find("」", head, start) < 0 and not past
            and _JA_SENTENCE_END.search(text, head, start) is not None)


@functools.lru_cache(maxsize=8)
def _has_cjk(text: str) -> bool:
    """The line holds Chinese, Japanese or Korean text (_CJK_CHAR), looked for once a line however many words ask."""
    return _CJK_CHAR.search(text) is not None


def _cjk_told_mentioned(text: str, start: int, end: int) -> bool:
    """A failure told in words at text[start:end] that the CJK prose only mentions: the Chinese limits of a failure told
    in words (_zh_oom_mentioned: its general statements, questions, counters and labels too) or the bare words' limits
    (_cjk_mentioned, with the Korean ones)."""
    return _has_cjk(text) and (_zh_oom_mentioned(text, start, end) or _cjk_mentioned(text, start, end))


# Reviewed (R68): 爆显存 needs no verb of meeting, so it is as often a noun phrase, a topic or a hypothesis as a report;
# the limits the English told verb reads (_oom_verb_own: no noun after a fix's or a topic's word), in Chinese: a fix's,
# a topic's or a possibility's word right before it (解决, 减少, 降低, 避免, 关于, 搞懂, 可以, 容易, a prediction's 会
# but not the run's habit, 还是会, _ZH_WILL_RE: "一文搞懂爆显存",
# "会打爆显存/显存带宽的取值", a code comment), a noun it qualifies after it (问题, 原因, 概率, 情况, 几种, 方案:
# "解决爆显存问题的几种方法", "大模型微调爆显存的常见原因与解决方案"), or a sentence that calls a configuration infeasible
# (不可行: a design note's "DEP8 在 K3 上不可行（状态池 ×8 爆显存）"); its report stays ("A800爆显存了", "第300步就爆显存了")
_ZH_BLOWN_NOUN_BEFORE = re.compile(r"(?:解决|减少|降低|避免|防止|关于|搞懂|了解|可以|容易|不会|" + _ZH_WILL_RE + r")打?\s*$")
_ZH_BLOWN_NOUN_AFTER = re.compile(r"[的等]?(?:常见|主要)?(?:问题|原因|概率|情况|几种|方案|解决|风险|可能)")
_ZH_INFEASIBLE = re.compile(r"不可行")


def _zh_blown_mentioned(text: str, start: int, end: int) -> bool:
    """爆显存 at text[start:end] as a noun phrase, a topic or a hypothesis, no report (above)."""
    return (_ZH_BLOWN_NOUN_BEFORE.search(text, max(0, start - 4), start) is not None
            or _ZH_BLOWN_NOUN_AFTER.match(text, end) is not None
            or _ZH_INFEASIBLE.search(text, _zh_sentence_start(text, start), end) is not None)


# Since batch 75 also the GPU's memory running out as the last clause of a line, after a comma and a clause of the run
# (an issue title's setting, action, outcome: "4机8卡 H100 80GB，跑QWEN3-30B-A3B GRPO示例训练，显存溢出", verl #2865,
# tests/crash/public 1610): the outcome needs no verb of meeting where the clause before it names the run's work
# (_ZH_RUN_WORK: 训练, 跑, 运行, 微调, 推理, 启动, 加载, 保存, 评估); with the same guard (_told_oom_refused: a
# condition's 如果, a question, a heading, a fix; a question word in an earlier clause of the sentence too, 为什么, 怎么:
# _ZH_PREDICTION_ASKED), and not 内存 alone (the host's); the words end their line (a 吗, a 怎么办, 的原因 after them
# are a question or a topic)
_OOM_TOLD_CLAUSE_ZH = re.compile(r"(?<=[，,])\s*(?:(?:CUDA|GPU|显卡)\s*(?:内存|显存)|显存)\s*(?:不足|溢出|耗尽|爆了)"
                                 r"(?=\s*[。！!]?\s*$)")
_ZH_RUN_WORK = re.compile(r"训练|跑|运行|微调|推理|启动|加载|保存|评估")


def _oom_told_on_gpu_zh(text: str) -> bool:
    """``oom_told_on_gpu`` in Chinese (_OOM_TOLD_ON_GPU_ZH, _OOM_TOLD_CLAUSE_ZH), not a mention (_told_oom_refused;
    爆显存's own limits, _zh_blown_mentioned), any match."""
    if _CJK_CHAR.search(text) is None:
        return False
    clause = _OOM_TOLD_CLAUSE_ZH.search(text, max(0, len(text) - 24))
    if (clause is not None and _ZH_RUN_WORK.search(text, 0, clause.start()) is not None
            and _ZH_PREDICTION_ASKED.search(text, _zh_sentence_start(text, clause.start()), clause.start()) is None
            and not _told_oom_refused(text, clause.start(), clause.end(), True)):
        return True
    return any(
        not _told_oom_refused(text, m.start(), m.end(), True)
        and not (m.group().startswith("爆") and _zh_blown_mentioned(text, m.start(), m.end()))
        for m in islice(_OOM_TOLD_ON_GPU_ZH.finditer(text), _TOLD_OOM_WORDS_READ))
# an OOM a program caught and went on from, besides _OOM_RETRIED's retry and skip words: it fell back to the CPU or
# dropped its cache and carried on (a text encoder's "ran out of memory on GPU; falling back to CPU encode", a
# diffusion UI's "Ran out of memory on GPU - dumping cache and performing inference on CPU for now"): a told OOM
# then never decides (since the review of batches 48/49)
_OOM_FELL_BACK = re.compile(r"(?i)\b(?:fall(?:s|ing)?\s+back|fell\s+back|dump(?:s|ing)?\s+(?:the\s+)?cache"
                            r"|(?:inference|encod\w*|running|continu\w*|switch\w*|mov\w*)\s+(?:\w+\s+)?(?:on|to)\s+"
                            r"(?:the\s+)?CPU)\b")
# The accelerators other than a GPU whose OOM the classifier reads (_OOM_RUNTIMES), by the names people give the
# device a told OOM ran on, each with the runtime its summary names (review R68): Intel Gaudi's HPU (habana_frameworks'
# torch.hpu, "Gaudi2"), Ascend's NPU (torch_npu), a TPU (XLA's), Intel's XPU
_TOLD_ACCELERATORS = (("HPU", r"Gaudi\s?\d?|HPUs?(?::\d)?"), ("NPU", r"Ascend(?:\s?\d+\w?)?|NPUs?(?::\d)?"),
                      ("XLA", r"TPUs?(?:\s?v\d\w*)?|v[4-7](?:e|p|litepod)\b"), ("XPU", r"XPUs?(?::\d)?"))
_TOLD_ACCELERATOR_NAMES = r"\b(?:" + "|".join(f"(?P<{rt}>{rx})" for rt, rx in _TOLD_ACCELERATORS) + r")\b"
_TOLD_ACCELERATOR = re.compile(_TOLD_ACCELERATOR_NAMES, re.IGNORECASE)
# _GPU_SUBJECT's names in any case, as a person types them ("my rtx 5090", "an h100"), and the accelerators above
# since batch 74 also a model's name glued to the count of GPUs before it ("OOM with 8B on 8xH100s and low batch +
# rollouts", prime-rl #950's title, tests/crash/public 1584; "8×A100"): _GPU_SUBJECT's word boundary does not stand
# between "x" and the name
_GPU_NAMED_ANY_CASE = re.compile(r"(?:" + _GPU_SUBJECT.pattern + r"|" + _TOLD_ACCELERATOR_NAMES
                                 + r"|(?<=\d[x×])(?:[ABHLTVP]\d{2,3}|G[HB]\d{3}|B\d{3}|MI\d{3})(?!\d))", re.IGNORECASE)


def told_oom_device(text: str) -> str:
    """The device a told OOM's line names after "on" (_TOLD_ACCELERATOR's runtime: "HPU", "NPU", "XLA", "XPU"), or
    "GPU" when it names none of them."""
    for m in re.finditer(r"(?i)\bon\s+", text):
        a = _TOLD_ACCELERATOR.match(text, _TOLD_DEVICE_LEAD.match(text, m.end()).end())     # type: ignore[union-attr]
        if a is not None and a.lastgroup is not None:
            return a.lastgroup
    return "GPU"
# Since batch 59 the short name as the verb itself, "OOMs", "OOMed", "OOM'd", "OOMing" (Megatron-Bridge #4587
# "Qwen3-30B-A3B fp8_mx pretrain OOMs with official defaults on 8x B300", #3500 "Nemotron-3-Super pretrain OOMs with
# CUDA Graphs on GB300"), then the GPU after "on" in the same clause (a few words between: what it ran with), a count of
# GPUs before it ("8x", "8 x"); the same guard (_told_oom_refused: a hedge, a condition, a fix, a question, a general
# statement)
# Since review R68 the verb's other spellings too ("OOM’d" as autocorrect types it, "OOMd", "OOM-ed"), and only as the
# reporter's run's own verb: its sentence carries the run's marks (_RUN_OWN: the first person, a step, a rank; or an
# issue title's "[bug]" tag, the Megatron-Bridge titles'), and the short name is no noun (_OOM_VERB_NOUN_BEFORE: after a
# determiner, a count, a verb of fixing or avoiding, "which"), nor on a code comment's part of a line, nor in a
# markdown table's row ("Reduce OOMs on H100", "# 4 OOMs on H100", "| seq_len=4096 OOMs on H100 |", a comparison's
# "Standard attention OOMs on the A100 ..., FlashAttention does not" decide nothing)
_TOLD_DEVICE_LEAD = re.compile(r"(?:(?:my|the|a|an|our|this|that|each|every|one|all|both)\s+)?(?:\d+\s*[x×]\s*)?",
                               re.IGNORECASE)
_OOM_TOLD_VERB = re.compile(r"\b(?i:oom)(?:s|-?ed|[’']?d|ing)\b[^.;:!?\n]{0,60}?\s+on\s+" + _TOLD_DEVICE_LEAD.pattern,
                            re.IGNORECASE)
_OOM_VERB_NOUN_BEFORE = re.compile(r"(?i)(?:\b(?:reduc\w*|fewer|less|avoid\w*|prevent\w*|stop\w*|fix\w*|no(?:\s+more)?"
                                   r"|without|w/o|any|many|more|frequent|occasional|random|rare|the|these|those|some"
                                   r"|several|of|for|about|against|which|that|who|\d+)|[#|])\s+$")
_CODE_COMMENT_BEFORE = re.compile(r"\S\s+(?:#|//)\s")
_ISSUE_BUG_TAG = re.compile(r"\s*\[(?i:bug)\]")


def _oom_verb_own(text: str, start: int, end: int) -> bool:
    """The short name told as a verb at text[start:end] is the reporter's run's (above: _OOM_TOLD_VERB)."""
    if (_OOM_VERB_NOUN_BEFORE.search(text, max(0, start - 24), start) is not None
            or _CODE_COMMENT_BEFORE.search(text, 0, start) is not None or _TABLE_ROW.match(text)):
        return False
    sentence = _sentence_start(text, start, max(0, start - _MENTION_WINDOW))
    stop = _SENTENCE_END.search(text, end, end + _MENTION_WINDOW)
    hi = stop.start() if stop is not None else min(len(text), end + _MENTION_WINDOW)
    return _RUN_OWN.search(text, sentence, hi) is not None or _ISSUE_BUG_TAG.match(text) is not None


# Since batch 73: the words opening an issue's title or a sentence, met at a place or a time of the run right after
# them ("[Bug] CUDA OOM in train_grpo.py on GPUs with ≤8GB VRAM", minimind #758, tests/crash/public 1556; "OOM at step
# 300 during backward"; a Chinese title's noun after it, 问题/报错/错误: "OOM 问题, 显卡是A00 40G", ALMA #42, 1565), a
# title's form of "I got an OOM in ..." with no verb of meeting; the memory named as the told
# rules name it: the runtime's or the GPU's name right before the words (the allocators' own "CUDA out of memory",
# "HIP", "XPU", "NPU", "MPS"; "GPU", "VRAM"), or, for the bare short name, a GPU named after it in its sentence or in
# the sentence right before it on the line ("Qwen3-30B LoRA on 8x H100. OOM at step 300": an item batches 69-72 left
# unread), and no host memory there (CPU, RAM, host, system memory: host_oom_told's words); not a title with a
# predicate after the words (it names a kind: "CUDA OOM in long runs is common", "OOM at step 0 means ...",
# _TITLE_PREDICATE_AFTER), a guide's title, nor what the told rules' one guard refuses (_told_oom_refused). At most
# _TOLD_OOM_WORDS_READ sentence starts of a line are read.
_TITLE_TAGS = re.compile(r"[\s>*#_`]*(?:[\[【(][^\]】)\n]{1,24}[\]】)]\s*[:：-]?\s*)*")
_OOM_OPENS_TOLD = re.compile(r"(?i)(?:(?P<rt>cuda|gpu|hip|mps|npu|xpu|vram)[ -])?(?:OOM|out[ -]of[ -]memory)"
                             r"(?:\s+(?:errors?|crash(?:es)?|issues?))?(?:\s+(?:in|on|at|when|while|during|after"
                             r"|with|for|from)\b|\s*(?:问题|报错|错误))")
# a sentence's end and the space after it (a model's "H100." ends one too, which _SENTENCE_END keeps for a version's
# "2.3")
_TOLD_SENTENCE_BREAK = re.compile(r"(?<!\be\.g)(?<!\bi\.e)[.!?。！？]\s+")
_HOST_MEMORY_NAMED = re.compile(r"(?i)\b(?:CPU|RAM|host|system\s+memory|DRAM)\b")
# the host's memory in Chinese: 内存 not after the GPU's names (显存 and 显卡内存 are the GPU's; since batch 74)
_ZH_HOST_MEMORY = re.compile(r"(?<!显卡)(?<!GPU)(?<!CUDA)(?<!gpu)内存")


def _oom_opens_told(text: str, cjk: bool) -> bool:
    """The OOM's words open the line's title or one of its sentences, met at a place or time of a GPU's run (above)."""
    # (where the words may open: the title after its tags, and each later sentence with the sentence before it)
    tags = _TITLE_TAGS.match(text)
    starts = [(tags.end() if tags is not None else 0, 0)]
    starts += [(e.end(), _sentence_start(text, e.start())) for e in islice(_TOLD_SENTENCE_BREAK.finditer(text),
                                                                          _TOLD_OOM_WORDS_READ)]
    for pos, lo in starts:
        m = _OOM_OPENS_TOLD.match(text, pos)
        if m is None:
            continue
        stop = _TOLD_SENTENCE_BREAK.search(text, m.end())
        hi = stop.start() if stop is not None else len(text)
        # (since batch 74 a title's words read the sentence after them too: "OOM 问题。 我的显卡是A100 40G", the card
        # named in another sentence, an item batch 73 left; the next line's GPU is the scan's, oom_told_bare)
        gpu_hi = hi
        if pos == starts[0][0] and stop is not None:
            after = _TOLD_SENTENCE_BREAK.search(text, stop.end())
            gpu_hi = after.start() if after is not None else len(text)
        if m.group("rt") is None and (_GPU_NAMED_ANY_CASE.search(text, lo, gpu_hi) is None
                                      or _HOST_MEMORY_NAMED.search(text, lo, gpu_hi) is not None
                                      or _ZH_HOST_MEMORY.search(text, lo, gpu_hi) is not None):
            continue
        if (_TITLE_PREDICATE_AFTER.search(text, m.end(), hi) is None and _GUIDE_TITLE.search(text) is None
                and not _told_oom_refused(text, m.start(), m.end(), cjk)):
            return True
    return False


# Since batch 74: the bare short name told by the reporter with the GPU named only on the next line (an item batch 73
# left): a title opening with it (_OOM_OPENS_TOLD, no runtime's name: "OOM with 8B and low batch" over a line
# "8x H100 80GB ..."), or the first person getting it ("@danielhanchen I'm getting OOMs after training for ~120+
# steps, any ideas ...?" over "... on a 7b model and an A6000 (48gb).", unsloth #1624, tests/crash/public 1587);
# the scan reads it as oom_told_on_gpu's when the next line names a GPU (_GPU_NAMED_ANY_CASE) and no host memory
# (_HOST_MEMORY_NAMED, _ZH_HOST_MEMORY), on neither line; through the told rules' one guard (_told_oom_refused), not
# quoted (a Chinese title's "OOM 问题" over "显卡是A100 40G，8卡" too)
_OOM_TOLD_BARE_OWN = re.compile(
    r"(?i)\b(?:i(?!\.\w)|we)(?:['’](?:m|re|ve))?(?>(?:\s+(?:am|are|was|were|have|had|been|keep|kept|still|also"
    r"|always|just|now|again|often|\w+ly)\b)*)\s+(?:get|getting|got|hit|hitting|see|seeing|(?:run|ran|running)\s+into"
    r"|encounter(?:ed|ing)?)\s+(?:an?\s+|the\s+)?OOMs?\b")


# Since the items batch 74 left: the reporter's run as the subject that meets the OOM, in the third person (a report's
# "The training OOMs after 100 steps", "My job got an OOM at step 300", "The run crashes with CUDA OOM on 8x H100"):
# the run's noun with its article or possessive right before the verb (the, this, my, our), or opening the line (a
# title's "Training got OOM at step 300"; never a bare plural, "jobs OOM", a general statement's subject), the short name as the verb or after a verb of meeting, present or past; the
# GPU named after it in its sentence (``oom_told_on_gpu``) or on the lines after it (``oom_told_bare``); through the
# told rules' one guard (a hedge: "the job will OOM if ...", a prediction, a fix, a setting)
#
# Since batch 76: an issue title (the line's opening) whose subject is the model the reporter trains, named with its
# parameter count in the one token (torchtitan #1789's "DeepSeek-V3-16B OOMs on 8 x H100 80GB HBM3", tests/crash/public
# 1621; "Qwen3-30B-A3B got OOM on 8x H800", "[Bug] Llama-3-70B crashes with CUDA OOM on 8 A100"): the short name for
# torch's allocator's "CUDA out of memory. Tried to allocate ..." (c10/cuda/CUDACachingAllocator.cpp) told of that
# model as the run's own, read as the run's noun opening a title is; the size (a digit and "B" ending the count:
# "16B", "7b", "235B-A22B", "8x7B") is what names one model run, so a bare plural or a model kind ("7B models OOM on
# 24GB", "Large models OOM on ...", "MoE OOMs ...") stays a general statement, and only at the line's opening (the
# article's "the model" stays unread); through the same guard and the GPU named as the run's noun needs it
_MODEL_SIZED_TITLE = r"(?=[\w.-]{0,40}?\d(?:\.\d+)?b(?![a-z]))[a-z0-9][\w.-]{0,48}"
# (the title's tags read once, atomic: before batch 76 "\s*[:：-]?\s*" let each tag's space go either way, and a line
# of thousands of "[x] " tags took exponential time)
_RUN_SUBJECT_OPENS = r"^[\s>*#_`]*(?>(?:[\[【(][^\]】)\n]{1,24}[\]】)]\s*(?:[:：-]\s*)?)*)"
_OOM_TOLD_RUN_SUBJECT = re.compile(
    r"(?i)(?:(?:\b(?:the|this|my|our)\s+|" + _RUN_SUBJECT_OPENS + r")"
    r"(?:(?:training|train|fine-?tuning|sft|grpo|dpo|ppo|rl|lora)\s+)?"
    r"(?:run|training|job|trainer|script|process|rank\s*\d{1,5}|worker)"
    r"|" + _RUN_SUBJECT_OPENS + _MODEL_SIZED_TITLE + r")"
    r"(?:\s+(?:still|always|now|just|also|immediately|quickly|eventually|sometimes|randomly|consistently|then))?"
    r"\s+(?:OOM(?:s|-?ed|['’]d)?(?![\w-])|(?:go(?:es)?|went|gets?|got|hits?|ran\s+into|runs?\s+into"
    r"|crash(?:es|ed)\s+with|fail(?:s|ed)\s+with|die[sd]\s+with|end(?:s|ed)\s+with)\s+(?:an?\s+|the\s+)?"
    r"(?:(?:CUDA|GPU)\s+)?OOMs?(?![\w-]))")


# Since batch 76: a subject meeting the OOM under a condition put to the reader, or with the OOM explained as what is
# to be expected, in the words' own sentence after them ("Llama-3-70B OOMs on 8 A100 if you disable activation
# checkpointing", "The training OOMs on 8 A100 because ..., which is expected."), is advice or an explanation, no run's
_RUN_SUBJECT_ADVICE_AFTER = re.compile(r"(?i)\b(?:if|unless|when|once|as\s+soon\s+as)\s+you\b"
                                       r"|\b(?:which\s+is|that['’]s|this\s+is|as)\s+expected\b|\bby\s+design\b")


def _oom_run_subject(text: str) -> Iterator[re.Match[str]]:
    """The reporter's run told meeting the OOM as a third person (above), each through the told rules' guard, not
    quoted, no condition put to the reader nor an expected OOM after it in its sentence."""
    if "oom" not in text.lower():
        return
    cjk = _CJK_CHAR.search(text) is not None
    for m in islice(_OOM_TOLD_RUN_SUBJECT.finditer(text), _TOLD_OOM_WORDS_READ):
        stop = _TOLD_SENTENCE_BREAK.search(text, m.end())
        if _RUN_SUBJECT_ADVICE_AFTER.search(text, m.end(), stop.start() if stop is not None else len(text)):
            continue
        if (not _quote_open(text, m.start()) and not _told_oom_refused(text, m.start(), m.end(), cjk)
                and _CODE_COMMENT_BEFORE.search(text, 0, m.start()) is None and not _TABLE_ROW.match(text)):
            yield m


def oom_told_bare(text: str) -> bool:
    """A line that tells the reporter's bare OOM, the memory not named on it (above): a GPU named on the next line
    makes it ``oom_told_on_gpu``'s."""
    if "oom" not in text.lower() or _HOST_MEMORY_NAMED.search(text) is not None or _ZH_HOST_MEMORY.search(text):
        return False
    cjk = _CJK_CHAR.search(text) is not None
    tags = _TITLE_TAGS.match(text)
    m = _OOM_OPENS_TOLD.match(text, tags.end() if tags is not None else 0)
    if m is not None and m.group("rt") is None:
        stop = _TOLD_SENTENCE_BREAK.search(text, m.end())
        hi = stop.start() if stop is not None else len(text)
        if (_TITLE_PREDICATE_AFTER.search(text, m.end(), hi) is None and _GUIDE_TITLE.search(text) is None
                and not _told_oom_refused(text, m.start(), m.end(), cjk)):
            return True
    return any(not _quote_open(text, b.start()) and _SPEAKER_LABEL.match(text) is None
               and not _told_oom_refused(text, b.start(), b.end(), False)
               for b in islice(_OOM_TOLD_BARE_OWN.finditer(text), _TOLD_OOM_WORDS_READ)) \
        or (_SPEAKER_LABEL.match(text) is None and next(_oom_run_subject(text), None) is not None)


def oom_told_on_gpu(text: str) -> bool:
    """A line that tells, in a person's words, that the run got an OOM on a GPU (not a mention: _told_only)."""
    low = text.lower()
    if not any(w in low for w in _OOM_TOLD_WORDS):
        return False
    if _oom_told_on_gpu_zh(text):
        return True
    cjk = _CJK_CHAR.search(text) is not None
    if _oom_opens_told(text, cjk):
        return True
    m = _OOM_TOLD_ON_GPU.search(text)
    if (m is not None and _GPU_NAMED_ANY_CASE.match(text, m.end()) is not None
            and not _told_oom_refused(text, m.start(), m.end(), cjk)):
        return True
    if any(_GPU_NAMED_ANY_CASE.match(text, v.end()) is not None and _oom_verb_own(text, v.start(), v.end())
           and not _told_oom_refused(text, v.start(), v.end(), cjk)
           for v in islice(_OOM_TOLD_VERB.finditer(text), _TOLD_OOM_WORDS_READ)):
        return True
    if any(_oom_told_own(text, m.start()) and not _told_oom_refused(text, m.start(), m.end(), cjk)
           for m in islice(_OOM_TOLD_RUNTIME.finditer(text), _TOLD_OOM_WORDS_READ)):
        return True
    # the run as a third person's subject (_OOM_TOLD_RUN_SUBJECT), the GPU named after it in its sentence, no host memory
    if _HOST_MEMORY_NAMED.search(text) is not None or _SPEAKER_LABEL.match(text) is not None:
        return False
    for m in _oom_run_subject(text):
        stop = _TOLD_SENTENCE_BREAK.search(text, m.end())
        if _GPU_NAMED_ANY_CASE.search(text, m.end(), stop.start() if stop is not None else len(text)) is not None:
            return True
    return False


def _oom_told(text: str, list_above: Collection[str] | None) -> str | None:
    """How a line of the oom family counts: "decisive" (``oom_stated``), "retold" (``oom_case_retold`` alone: the
    scan makes it support when the next line retries), "support" (an OOM retyped in another case that the program
    retried on the line), else None. The listed spans are found once for both rules,
    and only when a quote stands before the words (``_only_listed``)."""
    found = _oom_spans(text)
    case = _oom_case_match(text)
    spans = found + ([case.span()] if case is not None else [])
    if not spans:
        return None
    listed = (_quoted_list_items(text, list_above)
              if any(q in text[:min(a for a, _ in spans)] for q in _QUOTES) else [])

    def inside(span: tuple[int, int]) -> bool:
        return any(a <= span[0] and span[1] <= b for a, b in listed)

    if found and not all(map(inside, found)):
        return "decisive"
    if case is None or inside(case.span()):
        return None
    return "support" if _OOM_RETRIED.search(text) else "retold"


def _collect_oom(info: _OomInfo, text: str, frames: list[tuple[str, str]]) -> None:
    msg = parse_oom_message(text)
    if msg is not None:
        if info.size is None and msg.tried_text:
            info.size = msg.tried_text
        if msg.gpu is not None and str(msg.gpu) not in info.gpus:
            info.gpus.append(str(msg.gpu))
        for pid, gib in msg.others:
            info.foreign.setdefault(str(pid), torch_size_text(gib))
        if msg.self_pid is not None:
            info.listed_own.add(str(msg.self_pid))
        if msg.reserved_unallocated_gib is not None:
            info.unallocated_gib = max(info.unallocated_gib, msg.reserved_unallocated_gib)
    if frames and not info.frames:
        info.frames = list(frames)


# ---------------------------------------------------------------------------------------
# Classification

class _ToldFailure(NamedTuple):
    """A failure only a person's words tell, decided near the end of ``classify``: the scan's told lines, the class
    and recovery it takes, and its summary and hint worded from the told line."""
    told: Callable[[_Scan], list[tuple[int, str]]]
    cls: str
    recovery: str
    words: Callable[[str], tuple[str, str]]
    cooldown_scale: float = 1.0


def _told_segfault_words(text: str) -> tuple[str, str]:
    how = ("apache-tvm-ffi's handler message, pasted without its banner" if _TVM_SEGFAULT_RETOLD.search(text)
           else "as the report tells it (no signal handler's output was pasted)")
    return f"segmentation fault (SIGSEGV), {how}", _SEGFAULT_HINT


def _told_nccl_words(text: str) -> tuple[str, str]:
    ib = _NCCL_IB_RETOLD.search(text) or _NCCL_IB_WARN_RETYPED.search(text)
    if ib is not None:
        return (f"NCCL transport failure: {clip(text[ib.start():], 160)} (as the report tells it, without NCCL's "
                "NET/IB line)", _NCCL_HINT)
    if _DEEPEP_TIMEOUT_TOLD.search(text) and not _NCCL_TIMEOUT_TOLD.search(text):
        return ("DeepEP (expert-parallel all-to-all) timed out, as the report tells it (none of DeepEP's own lines "
                "were pasted)", _EP_HINT)
    if _NCCL_WATCHDOG_TOLD.search(text) and not _NCCL_TIMEOUT_TOLD.search(text):
        return ("torch's NCCL watchdog caught a collective that failed or timed out, as the report tells it (none of "
                "NCCL's or torch's own lines were pasted)", _NCCL_HINT)
    return ("an NCCL collective timed out, as the report tells it (none of NCCL's or torch's own lines were pasted)",
            _NCCL_HINT)


_TOLD_HOST_OOM_HINT = ("host RAM, not GPU memory, ran out: check `dmesg` for 'Out of memory: Killed process'; lower "
                       "host memory use (dataloader workers, pinned memory, CPU offload)")


def _told_oom_kill_words(text: str) -> tuple[str, str]:
    if _SLURM_OOM_TASKS.search(text) and not _OOM_KILL_TOLD.search(text):
        return ("killed by the OOM killer in its Slurm step, as the report tells it (slurmstepd's 'Some of the step "
                "tasks have been OOM Killed' without its count)", _TOLD_HOST_OOM_HINT)
    return ("killed by the kernel's OOM killer, as the report tells it (no kernel or launcher line was pasted)",
            _TOLD_HOST_OOM_HINT)


# The told failures in the order they are decided (the first whose last told line no later exception ended wins).
# The host's memory told as what ran out comes last: it names no program's failure, so a told segfault or NCCL
# failure beside it decides (review R31).
_TOLD_FAILURES: tuple[_ToldFailure, ...] = (
    _ToldFailure(lambda s: s.oom_gpu_told, "cuda_oom", "restart", lambda text: (
        f"{told_oom_device(text)} out of memory, as the report tells it (no runtime's message was pasted)",
        "a transient spike may pass on restart; if it repeats, lower the micro-batch or sequence length, or enable "
        "activation recompute")),
    _ToldFailure(lambda s: s.oom_kill_told, "killed_oom", "restart", _told_oom_kill_words),
    _ToldFailure(lambda s: s.sig_told, "segfault", "restart", _told_segfault_words),
    _ToldFailure(lambda s: s.nccl_told, "nccl_error", "restart_long_cooldown", _told_nccl_words,
                 cooldown_scale=NCCL_COOLDOWN_SCALE),
    _ToldFailure(lambda s: s.host_oom_told, "killed_oom", "restart", lambda _text: (
        "the host ran out of memory, as the report tells it (no kernel, launcher or allocator line was pasted)",
        _TOLD_HOST_OOM_HINT)),
)


def classify(exit_code: int | None, log_tail: list[str], *, user_kill: bool = False,
             hang: bool = False, steps_seen: int = 0, foreign_gpu_memory: bool = False,
             divergence: bool = False, attempt: int | None = None,
             own_pids: Collection[int] | None = None,
             live_pids: Collection[int] | None = None,
             python: str | None = None, log_at_limit: int | None = None,
             oom_kills: int | None = None, local_host: str | None = None,
             address_limit: int | None = None, alloc_ceiling: int | None = None,
             address_space_seen: int | None = None, elsewhere_client: str | None = None,
             programs_run: Mapping[str, bool] | None = None, log_refused: str | None = None) -> CrashVerdict:
    """Classify one ended attempt. Precedence, highest first (why: docs/crash-classes.md):

    1. ``user_kill``; 2. ``divergence`` flag from the runner's monitors;
    3. root causes that the log names: recompute_mismatch > divergence (Megatron texts, exit
       16/17) > cuda_fault > CUDA OOM (gpu_busy_at_init / cuda_oom) > port_in_use;
    4. ``hang`` flag (nccl_error when NCCL itself reported a timeout);
    5. the fatal signal of the failed worker (torchrun's root cause, else the exit status, else
       a signal named in the log): SIGSEGV, SIGBUS, SIGKILL, SIGABRT (nccl_error with NCCL text);
    6. NCCL errors (usually the echo of another rank's death, hence so low); sbatch's own refusal as the
       attempt's last word (``_sbatch_verdict``: a recipe's launcher); 7. a segfault, then an NCCL
       timeout, only a report's words tell (``segfault_told``, ``nccl_timeout_told``); 8. unknown.

    Before those: ``config_error`` for a first attempt (``attempt`` None or 1) that logged no
    step and printed a usage error; then Slurm's own words when the scheduler ended the job
    (``*** JOB N ON host CANCELLED AT ... DUE TO TIME LIMIT ***``, ``... PREEMPTION``, an
    ``oom_kill`` event: the classes the job's state gives, for when accounting cannot be asked).
    ``gpu_unavailable`` (devices busy/unavailable, no device) and Ray's memory monitor
    (``killed_oom``) come right after the root causes of 3; a CUDA environment that cannot run the
    build (``environment_error``: driver older than the runtime, no kernel image for the GPU's
    architecture) comes before ``cuda_fault``, and a model or dataset the Hub will not give
    (``hub_access``, when it ended the attempt) right after a full disk; a missing Python dependency
    (``missing_dependency``: the ``ModuleNotFoundError``/``ImportError`` that ended a traceback,
    with no fatal signal) right after 4. ``python``: the interpreter the attempt ran, named in the
    hint of a missing dependency when the traceback does not show it.

    PIDs named in an OOM message ("Process 566680 has 79.00 GiB memory in use") are another
    process's only when that can be proven: with ``own_pids`` (every PID of the attempt's tree,
    in every PID namespace: see ``moeconsole.runner.process.proctree.own_pid_set``) a named PID is foreign when it is not one
    of them and, if ``live_pids`` is given, is still alive in the runner's namespace (a holder
    of GPU memory outlives our crashed tree; a PID we cannot see cannot be proven foreign).
    Without ``own_pids`` every named PID counts as foreign (the caller knows nothing better), but
    the one the message's own numbers show is the raising process under a container's PID namespace
    (no "this process has" clause, and the only listed process holding at least what PyTorch
    reserved: ``moeconsole.runner.core.oom.OomMessage.self_pid``).

    ``log_refused``: why the attempt's log cannot be written now, as the runner found it when the attempt
    ended (its error's words: "Read-only file system"; None: it can): an end nothing else explains is said
    as the training's want of its log (``log_refused_verdict``).

    ``log_at_limit``: the attempt's log reached the file size limit the runner could not lift (its
    bytes): the training could write no more, not even its traceback (``file_size_verdict``).

    ``address_limit``: the attempt ran under a limit on its address space (``ulimit -v``, RLIMIT_AS,
    or ``ulimit -d``, RLIMIT_DATA; bytes): a host allocation that failed (ENOMEM, a final
    ``MemoryError``) that ended the attempt failed at that limit, not for want of RAM
    (``address_limit_verdict``; only then, and never on SIGKILL or a counted OOM kill: ``_refused_at_limit``).
    ``alloc_ceiling``: the largest single allocation the machine's overcommit policy allows (bytes;
    ``host.overcommit_ceiling``; None: none or not known): a refused size within the limit and over
    it is not the limit's (a file mapping's size excepted: ``_refused_at_limit``). ``address_space_seen``: the
    most address space one process of the attempt that ran under the limit (the runner's own descendants) was
    seen holding (bytes; None: not watched): a refused size within the limit that no such process was seen
    holding enough to meet is still the limit's (a walk misses a mapping's growth), and its words also name
    the other place (a command that runs its work where the runner's limits do not reach: ``docker run``,
    ``ssh host cmd``; srun propagates them, Slurm's ``PropagateResourceLimits``): ``address_limit_verdict``.
    ``elsewhere_client``: the name of a process of the attempt's tree that is such a client
    (``proctree.elsewhere_client``; None: none seen): a refusal that names no size is the limit's unless
    one ran and no process here was seen near the limit (``address_limit_unproven_verdict``; review R50).
    ``programs_run``: the Python programs the attempt's processes here ran, each mapped to whether one that ran
    it was under an address-space limit (``proctree.ProcessTree.programs_run``; None: not watched). Round 20:
    a sizeless refusal a traceback printed is decided by whose it is (``programs.frames_ran_here``): a frame a
    program run here under the limit, the limit's; only programs run here free of it, not the limit's; none,
    unproven unless a process here was seen near the limit, whatever the names in the tree. The name list
    (``elsewhere_client``) decides only a refusal no traceback of a watched program attributes.

    ``oom_kills``: the OOM kills the kernel of the machine the attempt ran on counted while it ran
    (``/proc/vmstat``'s ``oom_kill``: every kill of the OOM killer, global or a memory cgroup's; None:
    not known). With 0 a SIGKILL's summary says the kernel's OOM killer did not send it, but only when
    that kernel's count can speak for the killed process (``_no_oom_kill_proven``: proven local, no OOM
    text in the log). ``local_host``: the name of the machine the runner (and ``oom_kills``) is on.

    ``exit_code`` 0 with no flag is not a crash (see :func:`is_crash`): ValueError.
    """
    if not is_crash(exit_code, user_kill=user_kill, hang=hang, divergence=divergence):
        raise ValueError("exit status 0 is a clean exit, not a crash")
    if user_kill:
        return _verdict("user_kill", [], "stopped by the user", retryable=False, recovery="none")
    s = _scan_tail(log_tail)
    _excuse_agent_kills(s, oom_kills)
    _driver_xids_first(s)   # before any rule weighs the fault's lines (DeepEP's timeout before them, an OOM's retold)
    if steps_seen:
        _mismatch_only_supports(s)
    code, signum, status_lines = _effective_status(exit_code, s)
    too_large = [(i, t) for i, t in s.exceptions[-1:] if _FILE_TOO_LARGE.search(t)]
    if log_at_limit is not None or signum == _SIGXFSZ or too_large:
        return file_size_verdict(log_at_limit, too_large + status_lines)
    if divergence:
        return _verdict("divergence", s.div.decisive + s.div.support,
                        "non-finite loss or grad norm seen by the monitors; the run was stopped",
                        retryable=False, recovery="pause", hint=_DIVERGENCE_HINT)
    _argparse_usage_error(s, code)
    if s.usage and steps_seen == 0 and attempt in (None, 1) and not (s.oom or s.fault or s.nccl):
        return _config_verdict(s.usage, code, status_lines)
    resume = _swift_resume_refusal(s, steps_seen)
    if resume is not None:
        return resume
    skipped = _swift_skipped_update_verdict(s, status_lines)
    if skipped is not None:
        return skipped
    for hits, hint in ((s.args, None), (s.setup, _SETUP_HINT), (s.export, _EXPORT_HINT), (s.program, _PROGRAM_HINT)):
        if (hits and steps_seen == 0 and attempt in (None, 1) and not s.exceptions_after(hits.decisive[-1][0])
                and not (s.oom or s.fault or s.nccl or s.gpu or s.env or s.hub or s.deps or s.disk or s.port)):
            return _config_verdict(hits, code, status_lines, hint)   # the trainer's own checks ended the start
    if (s.data and steps_seen == 0 and attempt in (None, 1) and not s.exceptions_after(s.data.decisive[-1][0])
            and not (s.oom or s.fault or s.nccl or s.gpu or s.env or s.hub or s.deps or s.disk or s.port)):
        return _data_verdict(s, code, status_lines)   # the data file cannot be read: it fails the same way again
    slurm = _slurm_text_verdict(s, hang, plain_cancel=False)
    if slurm is not None:
        return slurm
    if s.recompute:
        return _recompute_verdict(s)
    if s.div or code in (EXIT_RESUME_TO_DISAMBIGUATE, EXIT_FAILED_ON_RESULT_VALIDATION):
        return _divergence_verdict(s, code, status_lines)
    if s.env and not s.exceptions_after(s.env.decisive[-1][0], but=_env_own_lines(s)):
        # (TensorFlow logs `failed call to cuInit: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH` and trains on the
        # CPU: an exception after it is the attempt's own end)
        return _environment_verdict(s, status_lines)
    # a contained error's report retold without its "NVRM: Xid" head and with no reset asked (a person's words of a
    # fault the driver contained) yields to the program's own OOM in the same tail; so does a fault's words that stand only as an
    # item of a list or a quote in prose (fault_listed: a handbook's or a retry setting's list of errors; review R54)
    retold = {i for i, kind, _, reset_asked, headed in s.containment
              if kind == "Contained" and not reset_asked and not headed}
    if (s.fault and not (s.deepep and s.deepep[0][0] < s.fault.decisive[0][0])
            and not (s.oom and all(i in retold or fault_listed(text) for i, text in s.fault.decisive))):
        # (DeepEP's kernels trap() after their timeout printf: the CUDA error that follows, on this rank or
        # the others, is that timeout's echo)
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
    refused, asked = _refused_at_limit(s, address_limit, signum, oom_kills, alloc_ceiling)
    if address_limit is not None and refused:
        stack = s.raised_frames.get(refused[-1][0], [])
        files = [file for file, _ in stack]
        # a named client (`ssh`, `srun`: mpirun's and horovodrun's remote ranks) may run the very program run
        # here elsewhere: a frame matched here proves nothing then, only a process here near the limit does
        # (review R58); and no frame matched proves "not run here" only for a traceback printed whole from the
        # program's entry (``traceback_complete``: Hydra and a thread's traceback leave the program out)
        here = frames_ran_here(files, programs_run) if asked is None and elsewhere_client is None else None
        if here is False:
            pass   # printed by a process here that ran free of the limit: not the limit's (read on below)
        elif (asked is None and here is None and not limit_neared(address_limit, address_space_seen)
              and (elsewhere_client is not None
                   or (traceback_complete(stack) and can_tell_program(programs_run)))):
            return address_limit_unproven_verdict(address_limit, refused + status_lines, address_space_seen,
                                                  elsewhere_client, None if elsewhere_client else _program_frame(stack))
        else:
            return address_limit_verdict(address_limit, refused + status_lines, asked, address_space_seen)
    if s.host_alloc:
        return _host_alloc_verdict(s, status_lines)
    # a write that ran out of room (no fatal signal but SIGABRT: C++ writers throw and terminate)
    if (s.disk or s.shm) and (signum not in _DECISIVE_SIGNALS or signum == _signal.SIGABRT):
        return _shm_verdict(s, status_lines) if s.shm and not s.disk else _disk_full_verdict(s, status_lines)
    hub = _hub_decides(s, signum)
    if hub:
        # a 429 is the cause of whatever the Hub client said after it (transformers' "We couldn't connect to
        # 'https://huggingface.co'", a tokenizer it could not load): the rate limit passes, the others do not
        if any(kind == "rate" for _, _, kind in hub):
            return _hub_rate_verdict(hub, status_lines, s)
        return _hub_verdict(hub, status_lines)
    if hang:
        if s.nccl_timeout:
            return _nccl_verdict(s, status_lines)
        return _verdict("hang", s.last_lines[-1:],
                        "no log output and no step progress past the heartbeat timeout; "
                        "the runner killed the attempt", retryable=True, recovery="restart",
                        hint="if it recurs at the same step, look for a collective one rank "
                             "never reaches (uneven data, a rank stuck in I/O)")
    # a library that cannot load makes cuDNN and friends abort(): the dependency is the cause of a SIGABRT
    if s.deps and (signum not in _DECISIVE_SIGNALS or signum == _signal.SIGABRT):
        return _dependency_verdict(s, status_lines, python)
    sig, sig_lines = _fatal_signal(signum, status_lines, s)
    if sig == _signal.SIGABRT and s.nccl and not s.nccl_relayed:
        return _nccl_verdict(s, sig_lines)
    if sig in _SIGNAL_CLASSES:
        return _signal_verdict(_SIGNAL_CLASSES[sig], sig, sig_lines, s,
                               _no_oom_kill_proven(exit_code, oom_kills, sig_lines, s, own_pids, local_host))
    if s.nccl and not s.nccl_relayed:
        return _nccl_verdict(s, status_lines)
    # sbatch's own refusal as the attempt's last word (a program's line: above the words people write)
    sbatch_end = _sbatch_verdict(s, steps_seen)
    if sbatch_end is not None:
        return sbatch_end
    # a GPU's OOM, the OOM killer, a segfault or an NCCL failure only a person's words tell (_TOLD_FAILURES): what a
    # program printed outranks them, an exception raised after them too (since the review of batches 48/49)
    for row in _TOLD_FAILURES:
        told = s.last_told(row.told(s))
        if told is not None:
            summary, hint = row.words(told[1])
            return _verdict(row.cls, status_lines + [told], summary, retryable=True, recovery=row.recovery,
                            cooldown_scale=row.cooldown_scale, hint=hint)
    # a plain CANCELLED comes last: srun --kill-on-bad-exit cancels the step (and the job)
    # after a rank failed, so the rank's own evidence above is the cause when there is any
    cancelled = _slurm_text_verdict(s, hang, plain_cancel=True)
    if cancelled is not None:
        return cancelled
    # a wrapper's negative exit code of its child: what every rank and scheduler line above did not explain
    wrapper = _wrapper_signal(s)
    if wrapper is not None and wrapper[2] in _SIGNAL_CLASSES:
        wrapped = status_lines + [wrapper[:2]]
        return _signal_verdict(_SIGNAL_CLASSES[wrapper[2]], wrapper[2], wrapped, s,
                               _no_oom_kill_proven(exit_code, oom_kills, wrapped, s, own_pids, local_host))
    if s.env.support and not s.exceptions_after(s.env.support[-1][0]):
        return _environment_verdict(s, status_lines)
    if signum is None and sig == _signal.SIGABRT:
        # no status told a signal, but a program's own line did (DeepSpeed's launcher, deepspeed/launcher/launch.py
        # sigkill_handler: f"{cmd} exits with return code = {rc}" with rc -6; torchrun's "Signal 6 (SIGABRT) received
        # by PID N" entry, torch/distributed/elastic/multiprocessing/errors/__init__.py ProcessFailure; glog's
        # "*** Check failure stack trace: ***"; a shell's "Aborted (core dumped)"): the summary says how the
        # process ended, as torchrun's "exitcode: -6" already made it (since batch 62)
        signum, status_lines = sig, sig_lines
    unknown = _unknown_verdict(exit_code, code, signum, status_lines, s,
                               how=SWIFT_255_WORDS if _swift_trainer_minus_one(code, signum, status_lines, s,
                                                                                programs_run) else None)
    return log_refused_verdict(unknown, log_refused) if log_refused is not None else unknown


def _wrapper_signal(s: _Scan) -> tuple[int, str, int] | None:
    """The wrapper's line that tells how the attempt ended (_NAMES_TRAINING): the last one naming the training, else
    the last one."""
    named = [h for h in s.wrapper_sig if _NAMES_TRAINING.search(h[1])]
    hits = named or s.wrapper_sig
    return hits[-1] if hits else None


def _mismatch_only_supports(s: _Scan) -> None:
    """The attempt logged steps: a node whose driver libraries and kernel module differ runs no CUDA at all, so a
    version mismatch line (a monitor's probe at start-up, a pasted FAQ) ended nothing. It only supports: a later
    class decides, and it still names the cause when nothing else does (the end of ``classify``). The same
    "no step logged" condition the other texts of an attempt that could not start decide under (config_error, the
    trainer's own checks, a refused resume)."""
    moved = [(i, t) for i, t in s.env.decisive if _ENV_RM_MISMATCH.search(t)]
    if moved:
        s.env.decisive = [h for h in s.env.decisive if h not in moved]
        s.env.support = sorted(s.env.support + moved)


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
        if text_sig in _DECISIVE_SIGNALS and not _agent_kill(s, idx):
            return text_sig, status_lines + [(idx, text)]
    return signum, status_lines


def _agent_kill(s: _Scan, idx: int) -> bool:
    """Is line ``idx`` torchrun's failure entry of a worker torchrun itself SIGKILLed (``_TR_FORCED_KILL``)?"""
    return idx in s.agent_kill_lines


def _excuse_agent_kills(s: _Scan, oom_kills: int | None) -> None:
    """torchrun's own SIGKILL is excused only while the kernel counted no OOM kill: with ``oom_kills`` > 0 the
    worker it "forcefully" ended may be the OOM killer's victim still tearing down (its GPU context, pinned memory),
    so its -9 keeps its weight (killed_oom) as before the excuse existed."""
    if oom_kills:
        s.agent_kill_lines.clear()


def _evidence(*groups: list[tuple[int, str]]) -> tuple[str, ...]:
    """Unique lines, earlier groups first (decisive before supporting), then in log order."""
    chosen: dict[str, int] = {}
    for group in groups:
        for idx, text in group:
            if len(chosen) >= MAX_EVIDENCE:
                break
            text = clip(text, MAX_EVIDENCE_CHARS)
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
# srun's line on how a task ended ("srun: error: node1: task 0: User defined signal 1", strsignal's words).
_SRUN_TASK_END = re.compile(r"\bsrun: error: \S+: tasks? [\d,\-\[\]]+: (?P<end>\S.*?)\s*$")


class TimeWarningEnd(NamedTuple):
    """A batch job that ended as its time-limit warning signal would end it (``classify_job_state``)."""
    option: str       # the sbatch option that asked for the warning, e.g. --signal=USR1@40
    signum: int       # its signal
    by_signal: bool   # the job's own exit signal was it (Slurm's ``FAILED 0:10``: the batch shell killed by it)
    killed: bool = True      # its exit is what a death by the signal gives (``TimeWarning.ended``)
    in_window: bool = False  # it ran into the time Slurm sends the signal in (``TimeWarning.may_have_come``)


def _warning_ended_it(warn: TimeWarningEnd, log_tail: list[str]) -> list[tuple[int, str]] | None:
    """srun's lines proving the job died of the warning signal, None when nothing does. An exit code equal to the
    signal's number proves nothing alone: srun's code for a task killed by signal S is S (src/srun/launch.c
    l.416-422, srun.c returns ``global_rc``, SchedMD/slurm 284c3b95f0), and so is a task's own ``exit(S)``
    (``exit(2)`` of argparse under ``--signal=INT``, any exit-1 crash under ``--signal=HUP``). srun's task line
    tells them apart: ``strsignal(S)`` for a death by the signal (l.398-411: "task 0: User defined signal 1",
    " (core dumped)" after it), "Exited with exit code S" for an exit (l.388). So: srun naming the signal and not
    saying "Exited with exit code S"; with no srun line, only the job's own exit signal (review R61 D3)."""
    said = [(i, m.group("end")) for i, line in enumerate(log_tail) if (m := _SRUN_TASK_END.search(line))]
    lines = [(i, log_tail[i]) for i, _ in said]
    if warn.by_signal:
        return lines[-3:]
    name = _signal.strsignal(warn.signum)
    killed = [(i, log_tail[i]) for i, end in said if name is not None and end in (name, f"{name} (core dumped)")]
    exited = [i for i, end in said if end == f"Exited with exit code {warn.signum}"]
    return killed[-3:] if killed and not exited else None
_JOB_STATE_TEXT = re.compile(_SLURM_ENTITY + r"(?: ON \S+)? CANCELLED AT \S+(?: DUE TO (?P<why>[A-Z ]+))?")
_JOB_STATES = {
    # state: (class, summary, recovery, retryable, hint)
    "NODE_FAIL": ("node_fail", "a node of the job failed (Slurm: NODE_FAIL)", "restart", True,
                  "resubmitted from the newest verified checkpoint; Slurm avoids a node it marked down"),
    "BOOT_FAIL": ("node_fail", "a node could not boot for the job (Slurm: BOOT_FAIL)", "restart", True, None),
    "PREEMPTED": ("preempted", "the job was preempted by a higher-priority job (Slurm: PREEMPTED)", "restart", True,
                  "resubmitted from the newest verified checkpoint"),
    # Ours, not a final state of Slurm's: the job ran and Slurm queued it again (an admin's
    # `scontrol requeue`/`requeuehold` once its requeue flag was turned on; slurmstepd says "DUE TO
    # JOB REQUEUE", read as PREEMPTED above): the runner cancelled it (engines/slurm.py _requeued).
    "REQUEUED": ("preempted", "Slurm requeued the job (scontrol requeue): cancelled, not started again "
                 "from its old resume point", "restart", True, "resubmitted from the newest verified checkpoint"),
    "REQUEUE_HOLD": ("preempted", "Slurm requeued the job held (scontrol requeuehold, or its launch failed: the job record's "
                     "reason says which): cancelled, not started "
                     "again from its old resume point", "restart", True,
                     "resubmitted held from the newest verified checkpoint: `scontrol release JOB` lets it run"),
    "TIMEOUT": ("time_limit", "the job reached its time limit (Slurm: TIMEOUT)", "restart", True,
                "resubmitted from the newest verified checkpoint; a longer slurm.time or more frequent "
                "saves lose less work"),
    "DEADLINE": ("time_limit", "the job reached its deadline (Slurm: DEADLINE)", "restart", True, None),
    "OUT_OF_MEMORY": ("killed_oom", "the job ran out of host memory (Slurm: OUT_OF_MEMORY)", "restart", True,
                      "the node's memory limit (cgroup) killed it: lower the batch size or ask for more --mem"),
    # Not Slurm's words: the runner's record of an sbatch that gave no job id.
    "SUBMIT_REFUSED": ("submit_refused", "sbatch refused the job", "fail", False,
                       "fix the slurm section (partition, account, options) and start the run again"),
    "SUBMIT_UNREACHABLE": ("slurm_unavailable", "Slurm could not take the job now (no controller answered, or it "
                           "stayed busy or a limit on queued jobs was reached: core.sbatch_words.transient)",
                           "wait_slurm", True, "submitted again after restart.submit_wait_s"),
    "CANCELLED": ("job_cancelled", "the job was cancelled outside moeconsole (scancel by a user or an admin)",
                  "none", False, "not restarted: whoever cancelled it meant it; `moeconsole restart RUN` starts it again"),
}


def classify_job_state(job_state: str | None, log_tail: list[str],
                       failed_nodes: tuple[str, ...] = (), *,
                       time_warning: TimeWarningEnd | None = None) -> CrashVerdict | None:
    """The crash a batch system's final job state proves (None: judge by exit status and log).
    TIMEOUT ends with exit 0:0 in sacct, so the state, not the exit code, is the witness.
    Evidence: the state itself, slurmstepd's ``*** JOB N ... CANCELLED ... ***`` lines, srun's
    ``Node failure on NODE`` and, after a NODE_FAIL, the nodes Slurm took out of service
    (``failed_nodes``: ``node2: down* (Not responding)``), which the summary names.

    ``time_warning``: the job's exit is what the signal Slurm sends ahead of its time limit would give (the engine
    reads the job's exit, ``TimeWarning.ended``): when srun's lines prove that signal ended it (``_warning_ended_it``),
    Slurm records FAILED (srun's ``task 0: User defined signal 1``), yet it is the time limit, not a crash of the
    training."""
    srun_said = _warning_ended_it(time_warning, log_tail) \
        if time_warning is not None and time_warning.killed and job_state not in _JOB_STATES else None
    if time_warning is not None and srun_said is not None:
        option, name = time_warning.option, _signal.Signals(time_warning.signum).name
        return _verdict("time_limit", srun_said,
                        f"the job's time-limit warning ({option}) ended the training, which does not "
                        f"handle {name} (Slurm: {job_state})", retryable=True, recovery="restart",
                        hint=f"resubmitted from the newest verified checkpoint; a training that saves and exits on "
                             f"{name} loses less work, a longer slurm.time less again",
                        extra=[(-1, f"Slurm job state: {job_state}"), (-1, f"sbatch {option}")])
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


# A training's own handler of Slurm's time-limit warning, in its own words: PyTorch Lightning's SLURM auto-requeue
# (pytorch_lightning 2.4 trainer/connectors/signal_connector.py ``_slurm_sigusr_handler_fn`` l.67-103: "Handling
# auto-requeue signal: N", then "Requeued SLURM job: ID" or "Requeuing SLURM job ID failed with error code RC").
WARNING_HANDLED = ("Handling auto-requeue signal", "Requeued SLURM job", "Requeuing SLURM job")


def warning_handled(warn: TimeWarningEnd | None, job_state: str | None, where: str, log_tail: Iterable[str] = (),
                    sigterm_line: str | None = None) -> CrashVerdict | None:
    """A training that exited 0 short of its total (``where``: "step 9 of 400", ``ending.short_end``) on its job's
    time-limit warning: the time limit, not a success, resumed from the newest verified save. The log's evidence
    decides, never the run time alone (review R67 findings 3, 4, 6):

    - a line of the training's own handler of the warning (``WARNING_HANDLED``): the warning came, whatever limit
      Slurm reports at the end (an admin may raise it after the warning was sent; Slurm sends it once,
      job_mgr.c ``send_job_warn_signal``);
    - a SIGTERM the log proves handled (``sigterm_line``: transformers' JIT checkpoint) is the warning only when the
      warning is a SIGTERM (``--signal=TERM@N``) and the job ran into its window (``TimeWarningEnd.in_window``);
      under any other warning signal it stays the SIGTERM's own (None: the caller's "preempted").

    Run time inside the window with nothing in the log stays the training's own end (None: "succeeded", short of its
    total, its resume offered): an early stop, a data set run dry or an epoch total there would otherwise be resumed
    and trained on over the user's finished result, while a handled warning read as a short success loses nothing
    but the time until the user resumes."""
    if warn is None:
        return None
    if sigterm_line is not None:
        if warn.signum != _signal.SIGTERM or not warn.in_window:
            return None
        line = sigterm_line
    else:
        line = next((ln.strip() for ln in reversed(list(log_tail)) if any(w in ln for w in WARNING_HANDLED)), "")
        if not line:
            return None
    name = _signal.Signals(warn.signum).name
    return _verdict("time_limit", [(-1, line)], f"the job's time-limit warning ({warn.option}) came and the training "
                    f"saved and exited 0 at {where}, short of its total (Slurm: {job_state})", retryable=True,
                    recovery="restart",
                    hint=f"resubmitted from the newest verified checkpoint, as the {name} handler meant; a longer "
                         f"slurm.time loses less",
                    extra=[(-1, f"Slurm job state: {job_state}"), (-1, f"sbatch {warn.option}"),
                           (-1, f"exit 0 at {where}")])


_DIVERGENCE_HINT = ("the run is paused with its log window kept: inspect the loss and grad-norm "
                    "chart and the last checkpoints (one saved during the spike is suspect), "
                    "then resume from an earlier checkpoint or lower the learning rate")


def divergence_hint(run_id: str, save: Mapping[str, Any] | None, began: int | None) -> str:
    """The divergence hint of a run that paused: the command that resumes from the newest clean save
    verified ok from before the step the divergence began (``order.save_before``), typed whole."""
    inspect = ("the run is paused with its log window kept: inspect the loss and grad-norm chart and the last "
               "checkpoints (one saved during the spike is suspect)")
    where = f" before step {began}, where the divergence began" if began is not None else ""
    if save is None:
        return f"{inspect}; no save verified ok{where}: lower the learning rate and start the run again"
    name = os.path.basename(str(save.get("path")).rstrip("/"))
    which = shlex.quote(str(save.get("which") or name))
    return (f"{inspect}, then `moeconsole restart {run_id} --from {which}` resumes from {name} (step "
            f"{save.get('step')}, the newest clean save verified ok{where}), or lower the learning rate")


_RECOMPUTE_HINT = ("the recomputed forward differs from the original forward: usually "
                   "non-deterministic MoE routing in recompute (router ties, token dropping, "
                   "RNG not restored). Make routing deterministic in recompute or exclude the "
                   "router/MoE layers from activation recompute; a restart hits it again")


def _recompute_verdict(s: _Scan) -> CrashVerdict:
    counts = {}
    for _, text in s.recompute.decisive + s.recompute.support:
        m = _RECOMPUTE_COUNT.search(text)
        if m:
            counts[m.group(1)] = m.group(2)
    summary = "activation-checkpoint recompute mismatch"
    if len(counts) == 2:
        summary += (f": {counts['forward']} tensors saved in forward, "
                    f"{counts['recomputation']} in recomputation")
    return _verdict("recompute_mismatch", s.recompute.decisive, summary, retryable=False,
                    recovery="fail", hint=_RECOMPUTE_HINT, extra=s.recompute.support)


def _host_alloc_verdict(s: _Scan, status_lines: list) -> CrashVerdict:
    m = host_alloc_failure(s.host_alloc.decisive[-1][1])
    assert m is not None    # every decisive line matched it in _scan
    nbytes = m["cpu"] or m["mmap"]      # bytes (c10, ATen); numpy and TH print their own size text
    asked = torch_size_text(int(nbytes) / 1024 ** 3) if nbytes else (m["np"] or m["th"])
    size = f" ({asked} asked)" if asked else ""
    what = ("a shared-memory or memory-mapped tensor could not be mapped" if m["mmap"]
            else "an allocation in host RAM failed")
    return _verdict("killed_oom", s.host_alloc.decisive + status_lines,
                    f"host memory ran out: {what}{size}", retryable=True, recovery="restart",
                    hint=_HOST_ALLOC_HINT)


_HOST_ALLOC_HINT = ("host RAM, not GPU memory, ran out (ENOMEM): lower dataloader workers, prefetch or CPU "
                    "offload, or free the node's memory; if mmap fails with RAM to spare, the map count limit "
                    "(vm.max_map_count) may be the one to raise")


def _divergence_verdict(s: _Scan, code: int | None, status_lines: list) -> CrashVerdict:
    first = (s.div.decisive or s.div.support or [(0, "")])[0][1]
    it = _DIV_ITERATION.search(first)
    where = f" at iteration {it.group(1)}" if it else ""
    if "Loss became infinite or NaN" in first:
        return _verdict("divergence", s.div.decisive + status_lines,
                        f"detectron2: the loss became infinite or NaN{where}", retryable=False,
                        recovery="pause", hint=_DIVERGENCE_HINT)
    if "loss scale already at minimum" in first:
        return _verdict("divergence", s.div.decisive + status_lines,
                        "DeepSpeed: the fp16 loss scale is at its minimum and still overflows: the loss is "
                        "exploding", retryable=False, recovery="pause", hint=_DIVERGENCE_HINT)
    if "Minimum loss scale reached" in first or "gradients are Nan/Inf" in first:
        scale = re.search(r"Minimum loss scale reached \(([^)]+)\)", first)
        what = (f"fairseq: the fp16 loss scale fell to its minimum ({scale.group(1)}): the loss is exploding"
                if scale else "fairseq: the gradients are NaN/Inf")
        return _verdict("divergence", s.div.decisive + status_lines, what, retryable=False,
                        recovery="pause", hint=_DIVERGENCE_HINT)
    ring = re.search(r"NaN detected in (\S+) at step", first)
    if ring:
        return _verdict("divergence", s.div.decisive + status_lines,
                        f"ms-swift's ring attention (sequence parallel) found NaN in {ring.group(1)} in the backward "
                        "pass: the activations or gradients are no longer finite", retryable=False,
                        recovery="pause", hint=_DIVERGENCE_HINT)
    if _DIV_SELF_STOP.search(first):
        return _verdict("divergence", s.div.decisive + status_lines,
                        f"the trainer stopped itself on a non-finite loss: {clip(first, 200)}", retryable=False,
                        recovery="pause", hint=_DIVERGENCE_HINT)
    if "grad norm" in first:
        what = f"Megatron found a non-finite local grad norm{where}"
    elif "forward loss" in first:
        what = f"Megatron found a non-finite forward loss{where}"
    elif "returned nan values" in first:
        what = "autograd anomaly mode found NaN values"
    elif (bare := _DIV_RESULT_RETOLD.search(first)) is not None:
        # the state machine's message kept from "Unexpected result" on names the value only (since batch 60)
        value = "inf" if "inf" in bare.group(0) else "nan"
        what = f"Megatron's result validation found a non-finite result ({value}){where}"
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


def _gpus_needing_recovery(xids: list[tuple[int, str, int, str, bool]]) -> list[tuple[int, str, str]]:
    """(line, GPU, action) for each GPU whose latest Xid 154 asks for a reset or a reboot, the most severe
    first (a reboot before a reset, then in log order)."""
    latest: dict[str, tuple[int, str]] = {}
    for idx, text, xid, pci, _ in xids:
        action = xid_recovery_action(text) if xid == XID_RECOVERY_ACTION else None
        if action is not None:
            latest[pci] = (idx, action)
    needing = [(idx, pci, action) for pci, (idx, action) in latest.items() if _action_severity(action)]
    return sorted(needing, key=lambda n: (-_action_severity(n[2]), n[0]))


def _driver_xids_first(s: _Scan) -> None:
    """The driver's own ``NVRM: Xid`` lines decide: an Xid a person told by its number (a flag on its s.xids entry)
    counts only when the log has none ("we hit Xid 79 on node 3 last month" below a driver's Xid 13 is history);
    since the review of batch 45."""
    told = {x[0] for x in s.xids if x[4]}
    if told and len(told) < len(s.xids):
        s.xids = [x for x in s.xids if not x[4]]
        s.fault.decisive = [d for d in s.fault.decisive if d[0] not in told]


def _fault_verdict(s: _Scan) -> CrashVerdict:
    # NCCL's or torch's own lines beside the fault (a told timeout is no NCCL text: a report's words, or a setting)
    scale = NCCL_COOLDOWN_SCALE if s.nccl else 1.0
    extra = s.nccl.decisive[:2]
    reset = next((x for x in s.xids if x[2] in RESET_XIDS), None)
    if reset is not None:
        return _verdict("cuda_fault", s.fault.decisive,
                        f"NVIDIA Xid {reset[2]} on {reset[3]}: the GPU needs a reset",
                        retryable=False, recovery="fail", cooldown_scale=scale, extra=extra,
                        hint="Xid 48/79/95 (double-bit ECC, fallen off the bus, uncontained "
                             "ECC) need a GPU reset or a node drain; check `nvidia-smi -q` and "
                             "dmesg before running on this GPU again")
    # a report that marked the GPU for a reset, or an uncontained error (Xid 95's report, behind its head or retold
    # without it: the same fault as the Xid 95 line above)
    marked = next((c for c in s.containment if c[3] or c[1] == "Uncontained"), None)
    if marked is not None:
        _, kind, where, reset_asked, _ = marked
        if reset_asked:
            return _verdict("cuda_fault", s.fault.decisive,
                            f"NVIDIA Xid {_CONTAINMENT_XID[kind]} ({kind.lower()} error: {where}): the driver marked "
                            "the GPU for a reset",
                            retryable=False, recovery="fail", cooldown_scale=scale, extra=extra,
                            hint="the NVIDIA driver's error-containment report says RST: Yes or D-RST: Yes: reset "
                                 "the GPU (or drain and reset it) before running on it again; check `nvidia-smi -q` "
                                 "(Remapped Rows, ECC errors) and dmesg")
        return _verdict("cuda_fault", s.fault.decisive,
                        f"NVIDIA Xid 95 (uncontained error: {where}): the GPU needs a reset",
                        retryable=False, recovery="fail", cooldown_scale=scale, extra=extra,
                        hint="Xid 95 (an uncontained error) needs a GPU reset or a node drain; check `nvidia-smi -q` "
                             "(Remapped Rows, ECC errors) and dmesg before running on this GPU again")
    if any(_GPU_GONE.search(text) or gpu_gone_told(text) for _, text in s.fault.decisive):
        return _verdict("cuda_fault", s.fault.decisive, "a GPU has fallen off the bus: it needs a reset",
                        retryable=False, recovery="fail", cooldown_scale=scale, extra=extra,
                        hint="the driver lost the GPU (like Xid 79): reset it or drain the node; check "
                             "`nvidia-smi -q` and dmesg before running on this GPU again")
    needing = _gpus_needing_recovery(s.xids)
    if needing:
        at, pci, action = needing[0]
        # the Xid it states the recovery for: the last one before it on the same GPU
        before = [x[2] for x in s.xids if x[0] < at and x[3] == pci and x[2] != XID_RECOVERY_ACTION]
        after = f" after Xid {before[-1]}" if before else ""
        also = "".join(f"; {other_pci}: {other}" for _, other_pci, other in needing[1:])
        return _verdict("cuda_fault", s.fault.decisive,
                        f"NVIDIA Xid {XID_RECOVERY_ACTION} on {pci}{after}: the driver's recovery action is {action}"
                        f"{also}",
                        retryable=False, recovery="fail", cooldown_scale=scale, extra=extra,
                        hint=f"the NVIDIA driver set the GPU's recovery action to {action}: reset the GPU "
                             "(or reboot the node, as it asks) or drain the node; check `nvidia-smi -q` "
                             "(GPU Recovery Action) and dmesg before running on this GPU again")
    fault_text = next((_ILLEGAL_ADDRESS if m.group("illegal_retold")
                       else _DEVICE_ASSERT if m.group("assert_retold")
                       else _PYCUDA_LAUNCH_FAULTS[m.group("pycuda_launch")] if m.group("pycuda_launch")
                       else _fault_words(m.group(0))
                       for _, text in s.fault.decisive for m in [_fault_stated(text)] if m), None)
    if fault_text is None:
        code = next((c for _, text in s.fault.decisive for c in [physx_cuda_fault(text)] if c is not None), None)
        if code is not None:
            fault_text = f"{CUDA_FAULT_CODES[code]} (PhysX, CUDA error {code})"
    if fault_text and (fault_text.startswith("block: [") or fault_text.startswith("Device-side assertion")):
        what = next((m.group(1) for _, text in s.fault.decisive
                     for m in [_KERNEL_ASSERT.search(text)] if m), None)
        fault_text = "a kernel's device-side assertion failed" + (f" ({what})" if what else "")
    parts = [f"CUDA fault: {fault_text}"] if fault_text else []
    if s.xids:
        _, _, xid, pci, _ = s.xids[0]
        parts.append(f"NVIDIA Xid {xid} on {pci}")
    elif s.containment:
        _, kind, where, _, _ = s.containment[0]
        parts.append(f"NVIDIA Xid {_CONTAINMENT_XID[kind]}: {kind.lower()} error ({where})")
    summary = parts[0] + (f" ({parts[1]})" if len(parts) > 1 else "")
    env = launch_blocking_env((text for _, text in s.fault.decisive), (text for _, text in s.fault.support))
    setting = " ".join(f"{k}={v}" for k, v in env.items())
    # cudaErrorLaunchTimeout (702, _CUDA_FAULTS) is the display watchdog's: cuda.h names its cause, a kernel longer
    # than CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT allows: no hardware fault, and a repeat at the same step is the
    # watchdog's signature (policy.repeated_crash pastes this hint into its pause), so the hint names the way out
    # and not the hardware (review R54). On Windows every GPU under the WDDM driver model has the watchdog (TDR; WSL2
    # runs on the Windows host's WDDM driver, so the host's limit holds there too): NVIDIA's nvidia-smi documents the
    # TCC driver model ("nvidia-smi -g N -dm 1", Tesla, Quadro and some other boards) as the one without it, and
    # Windows' TdrDelay (HKLM\System\CurrentControlSet\Control\GraphicsDrivers, seconds) as its limit; on Linux
    # it is set on a GPU an X server runs on (the NVIDIA driver README's X option "Interactive": "off" lets
    # kernels run past it)
    if fault_text and fault_text.startswith(CUDA_FAULT_CODES[CUDA_LAUNCH_TIMEOUT]) and "CUDA_LAUNCH_BLOCKING" not in env:
        # HIP's (hipErrorLaunchTimeOut, ROCm on Windows under WDDM too): NVIDIA's TCC and X options name no AMD GPU
        return _verdict("cuda_fault", s.fault.decisive, summary, retryable=True,
                        recovery="restart_launch_blocking", env=env, cooldown_scale=scale, extra=extra,
                        hint=f"restarting with {setting} (slower) so the traceback names the failing kernel; a launch "
                             "timeout is a watchdog ending a kernel that ran too long, not a hardware fault: on "
                             "Windows raise TdrDelay in the registry; or split the work into shorter kernels")
    if fault_text and fault_text.startswith(CUDA_FAULT_CODES[CUDA_LAUNCH_TIMEOUT]):
        return _verdict("cuda_fault", s.fault.decisive, summary, retryable=True,
                        recovery="restart_launch_blocking", env=env, cooldown_scale=scale, extra=extra,
                        hint=f"restarting with {setting} (slower) so the traceback names the failing kernel; a launch "
                             "timeout is the display watchdog ending a kernel that ran too long, not a hardware "
                             "fault: on Windows and WSL2 every GPU under the WDDM driver has it (TDR): raise "
                             "TdrDelay in the Windows host's registry, or switch a GPU that supports it to TCC "
                             "(nvidia-smi -g N -dm 1); on Linux, train on a GPU no X server runs on (or set the X "
                             "driver's Option \"Interactive\" \"off\"); or split the work into shorter kernels")
    return _verdict("cuda_fault", s.fault.decisive, summary, retryable=True,
                    recovery="restart_launch_blocking", env=env,
                    cooldown_scale=scale, extra=extra,
                    hint=f"restarting with {setting} (slower) so the traceback names "
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
                    live_pids: Collection[int] | None, listed_own: Collection[str] = ()) -> dict[str, str]:
    """The PIDs of an OOM message proven to be other processes' (see :func:`classify`).

    ``listed_own``: the PIDs the message itself shows are the raising process's own entry under a
    container's PID namespace (``moeconsole.runner.core.oom.OomMessage.self_pid``); they are left
    out only when the caller knows no PIDs of its own (a pasted text): the runner's own PIDs, in
    every namespace, are the better proof."""
    if own_pids is None:
        return {pid: size for pid, size in named.items() if pid not in listed_own}
    own = {int(p) for p in own_pids}
    live = None if live_pids is None else {int(p) for p in live_pids}
    return {pid: size for pid, size in named.items()
            if int(pid) not in own and (live is None or int(pid) in live)}


# Which runtime ran out of device memory, by the words of the lines that decided it, for the
# summary: the same allocator and class on every accelerator (see _OOM), but an AMD or Ascend user
# told "CUDA out of memory" reads the wrong runtime. First match wins; CUDA when none names another.
_OOM_RUNTIMES = (
    ("HIP", re.compile(r"\bHIP out of memory|HIP error: out of memory|hipErrorOutOfMemory|HIP_ERROR_OutOfMemory"
                       r"|hipError_t\(1002\)")),
    ("NPU", re.compile(r"\bNPU out of memory|Memory_Allocation_Failure\(EL0004\)|\bEL0004: |runtime result = 207001\b"
                       r"|rtMalloc execute failed|\berror code is 2070(?:01|18)\b|\bACL_ERROR_RT_DEVIDE_OOM\b")),
    ("XPU", re.compile(r"\bXPU out of memory|\b(?:UR|ZE)_RESULT_ERROR_OUT_OF_DEVICE_MEMORY\b")),
    ("MPS", re.compile(r"MPS backend out of memory")),
    # Intel Gaudi's PyTorch bridge (_OOM's MODULE:PT_DEVMEM; since batch 59)
    ("HPU", re.compile(r"\bMODULE:PT_DEVMEM Allocation failed for size::\d")),
    # absl's status code of XLA/PjRt (JAX, torch_xla, TPUs); TensorFlow's own allocator on a CUDA GPU
    # ("OOM when allocating tensor ... by allocator GPU_0_bfc") stays CUDA
    ("XLA", re.compile(r"RESOURCE_EXHAUSTED|Resource exhausted")),
)


def oom_runtime(texts: Iterable[str]) -> str:
    """The runtime an OOM's deciding lines name (``_OOM_RUNTIMES``): "CUDA" unless another is named."""
    lines = list(texts)
    return next((name for name, rx in _OOM_RUNTIMES if any(rx.search(t) for t in lines)), "CUDA")


class _OomEngine(NamedTuple):
    rx: re.Pattern[str]
    where: str      # after the summary's "CUDA out of memory ..."
    hint: str
    # NCCL's buffers: the entry names the OOM only when every decisive OOM line is NCCL's (_nccl_alloc_only)
    only: bool = False


_NCCL_ALLOC_HINT = ("NCCL allocates its buffers on the GPU when a communicator is made or meets a new peer, and "
                    "the training left it no room: the attempt is restarted as it is, which helps when the peak was "
                    "transient (another process's memory, a cache not yet released); if it fails the same way, leave "
                    "headroom (a lower micro-batch or sequence length, activation recompute, a colocated rollout "
                    "engine's smaller gpu_memory_utilization), or fewer NCCL channels and buffers "
                    "(NCCL_MAX_NCHANNELS, NCCL_BUFFSIZE)")
# A rollout engine's own allocator that ran out of memory, first match wins: vLLM's refusals at start (_OOM_VLLM:
# the weights that do not fit, a KV cache too small for one sequence, its reservation of gpu_memory_utilization x
# the GPU's total), each with vLLM's own advice; its sleep-mode allocator on wake-up (_OOM_VLLM_WAKE), SGLang's
# torch_memory_saver (_OOM_SAVER); NCCL's own buffers (_NCCL_ALLOC_FAILED).
_OOM_ENGINES = (
    _OomEngine(re.compile(_OOM_VLLM_LOAD), " (vLLM could not load the model's weights)",
               "the model's weights do not fit in the GPU memory vLLM has on each GPU: split them over more GPUs "
               "(a larger tensor_parallel_size) or load a quantized model; vLLM also suggests a lower "
               "gpu_memory_utilization. Restarting with the same settings usually fails the same way"),
    _OomEngine(re.compile(_OOM_VLLM_KV), " (vLLM's KV cache cannot hold one sequence of max_model_len)",
               "after the weights, vLLM's share of the GPU (gpu_memory_utilization) leaves too little KV cache for "
               "max_model_len: as vLLM says, increase gpu_memory_utilization (if the GPU has the room: a colocated "
               "training model shares it) or decrease max_model_len. Restarting with the same settings usually "
               "fails the same way"),
    _OomEngine(re.compile(_OOM_VLLM_RESERVE), " (vLLM could not reserve its GPU memory)",
               "vLLM reserves gpu_memory_utilization of the GPU's total memory when it starts: lower it "
               "(a colocated rollout engine shares the GPU with the training model), "
               "or free the memory other processes hold (`moeconsole gpus`)"),
    _OomEngine(re.compile(_OOM_SGLANG_KV), " (SGLang's KV cache pool got no room)",
               "SGLang's KV pool is what is left of mem_fraction_static of the GPU's memory after the weights and "
               "what else holds the GPU, and nothing was left: free what else holds it (a colocated training model "
               "offloaded before the engine starts, other processes: `moeconsole gpus`), then, as SGLang says, "
               "increase mem_fraction_static if the GPU has the room, or split the weights over more GPUs (a larger "
               "tp_size). Restarting with the same settings usually fails the same way"),
    _OomEngine(_OOM_VLLM_WAKE, " (vLLM's sleep-mode allocator could not map its memory back)",
               "a colocated vLLM engine woke up (wake_up after sleep) to less free GPU memory than it had "
               "released: the training side still held it; free it before the wake-up (offload the model and "
               "optimizer, torch.cuda.empty_cache()) or lower vLLM's gpu_memory_utilization"),
    _OomEngine(_OOM_SAVER, " (torch_memory_saver, the rollout engine's sleep/wake allocator, could not get GPU memory)",
               "a colocated SGLang engine's memory saver (torch_memory_saver) could not map GPU memory when it "
               "resumed or allocated: the training side still held it, or the engine reserves too much; offload "
               "the training model and optimizer before the engine resumes, or lower SGLang's mem_fraction_static"),
    _OomEngine(_OOM_NVML_ASSERT, " (torch's allocator then failed its NVML query of the GPU's processes, which "
                                 "replaced the OOM message)",
               "torch's caching allocator ran out of GPU memory; composing the message it asks NVML which "
               "processes hold the GPU, and NVML could not tell (a container or MIG instance without access to "
               "them): a transient spike may pass on restart; if it repeats, lower the micro-batch or sequence "
               "length, or enable activation recompute, and check `moeconsole gpus` for other processes"),
    _OomEngine(_NCCL_ALLOC_FAILED, " (NCCL could not allocate its buffers on the GPU)", _NCCL_ALLOC_HINT, only=True),
)


def _oom_verdict(s: _Scan, steps_seen: int, foreign_gpu_memory: bool,
                 own_pids: Collection[int] | None = None,
                 live_pids: Collection[int] | None = None) -> CrashVerdict:
    info = s.oom_info
    foreign = foreign_holders(info.foreign, own_pids, live_pids, info.listed_own)
    phase = _oom_phase(info.frames)
    if not phase and steps_seen == 0:
        phase = " before the first logged step"
    gpus = ""
    if info.gpus:
        gpus = f" on GPU {info.gpus[0]}" if len(info.gpus) == 1 else f" on GPUs {', '.join(info.gpus)}"
    size = f", tried to allocate {info.size}" if info.size else ""
    nccl_only = _nccl_alloc_only(s.oom.decisive)
    engine = next((e for e in _OOM_ENGINES if (nccl_only if e.only else
                                                 any(e.rx.search(text) for _, text in s.oom.decisive))), None)
    where = engine.where if engine else ""
    runtime = oom_runtime(text for _, text in s.oom.decisive)
    if steps_seen == 0 and (foreign_gpu_memory or foreign):
        held = ", ".join(f"pid {pid}: {size_}" for pid, size_ in list(foreign.items())[:4])
        who = f" ({held})" if held else ""
        return _verdict("gpu_busy_at_init", s.oom.decisive,
                        f"{runtime} out of memory{phase}{gpus}{where} while other processes hold GPU memory{who}",
                        retryable=True, recovery="restart_after_gpu_clear",
                        hint="leftover processes (an earlier job, an inference server, an orphaned "
                             "rank) hold GPU memory: `moeconsole gpus` lists them; the runner waits "
                             "for the memory to be released before restarting")
    hint = ("a transient spike may pass on restart; if it repeats, lower the micro-batch or "
            "sequence length, or enable activation recompute")
    if engine:
        hint = engine.hint
    if info.unallocated_gib >= FRAGMENTATION_MIN_GIB:
        hint += f"; reserved-but-unallocated memory is large, try {alloc_conf_advice(None)}"
    return _verdict("cuda_oom", s.oom.decisive, f"{runtime} out of memory{phase}{size}{gpus}{where}",
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
    nodes = list(dict.fromkeys(m.group(1) for _, t in lines if (m := _NODE_FAILURE.search(t))))
    if nodes:
        summary = f"{', '.join(nodes)} failed: {summary}"
    return _verdict(cls, lines[-3:], summary, retryable=retryable, recovery=recovery, hint=hint)


def _sbatch_verdict(s: _Scan, steps_seen: int) -> CrashVerdict | None:
    """sbatch's own refusal in the attempt's log (core.sbatch_words; since batch 52, placed by review R40). The runner's
    own submission never reaches here: the Slurm engine records an sbatch that gave no job id (SUBMIT_REFUSED,
    SUBMIT_UNREACHABLE in _JOB_STATES). An sbatch in the log is the recipe's command's own: a launcher that submits,
    or a job script that submits itself again. Its refusal ends the attempt only as its last word: the attempt logged
    no step (a resubmit after training is the job script's chaining, not why the training ended), no exception came
    after it, and no later ``Submitted batch job N`` says sbatch got the job in after all; and only when no program's
    failure nor fatal signal above explains the end (a job script that resubmits itself first, then OOMs: the OOM).
    Its class as sbatch.c's words say (sbatch_words): a controller out of reach or busy, or a queued-job count at its
    limit, waits and starts again (slurm_unavailable); any other reason is a refusal no restart mends (submit_refused).
    sbatch's lines right before the refusal (the limit slurmctld named: "sbatch: error: QOSMaxSubmitJobPerUserLimit")
    are read with it and named in the summary."""
    if not s.sbatch or steps_seen:
        return None
    idx, text, why = s.sbatch[-1]
    if s.sbatch_submitted > idx or s.exceptions_after(idx):
        return None
    notes: list[tuple[int, tuple[str, str]]] = []
    while len(notes) < 5 and (i := idx - len(notes) - 1) in s.sbatch_notes:
        notes.append((i, s.sbatch_notes[i]))
    notes.reverse()
    reason = clip("; ".join([w.rstrip() for _, (_, w) in notes] + [why]), 200)
    lines = [(i, t) for i, (t, _) in notes][-2:] + [(idx, text)]
    if sbatch_words.controller_unreachable(why):
        return _verdict("slurm_unavailable", lines,
                        f"the command's sbatch could not reach the Slurm controller: {reason}", retryable=True,
                        recovery="wait_slurm", hint="started again after restart.submit_wait_s")
    if sbatch_words.transient(reason):
        return _verdict("slurm_unavailable", lines,
                        f"Slurm could not take the command's job now (sbatch gave up retrying, or a limit on queued "
                        f"jobs was reached): {reason}", retryable=True, recovery="wait_slurm",
                        hint="started again after restart.submit_wait_s; a limit on queued jobs clears as they end")
    return _verdict("submit_refused", lines, f"the command's own sbatch refused the job: {reason}",
                    retryable=False, recovery="fail",
                    hint="the recipe's command submits with its own sbatch (a launcher, or a job script that submits "
                         "itself again): fix the options it passes (partition, account, time limit, QOS) and start the "
                         "run again; moeconsole's slurm section did not submit it")


# pip's name for a module whose distribution is called otherwise
_PIP_NAMES = {"yaml": "pyyaml", "sklearn": "scikit-learn", "cv2": "opencv-python", "PIL": "pillow",
              "flash_attn": "flash-attn", "fla": "flash-linear-attention", "swift": "ms-swift"}


def pip_install(module: str) -> str:
    """What installs a missing Python module: ``pip install`` and its distribution's name (a module's
    import name and its distribution's differ for a few: ``_PIP_NAMES``)."""
    top = module.split(".")[0]
    return f"pip install {_PIP_NAMES.get(top, top)}"


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
    lm = None if dm else _DEP_LOADER.search(text)
    msg = (dm.group("msg") or dm.group("wmsg")) if dm else text[lm.start():] if lm else text
    where = _python_of(frames) or python
    in_python = f" in {where}" if where else ""
    missing = _DEP_MODULE.search(msg)
    dist = _DEP_DIST.match(msg)
    if missing:
        module = missing.group(1)
        summary = f"Python module '{module}' is not installed{in_python}"
        what = pip_install(module)
    elif dist:
        req = dist.group("req") or dist.group("name")
        named = _DEP_REQ_NAME.match(req)
        summary = f"Python package '{named.group(0) if named else req}' is not installed{in_python}"
        what = f"pip install '{req}'"
    else:
        so = _DEP_SO.search(msg)
        name = _DEP_FROM.search(msg)
        te = _DEP_TE.search(msg)
        if te:
            lib = te.group(1)
            summary = f"Transformer Engine's {lib} library is not installed{in_python} (no shared object for it)"
            what = (f"reinstall Transformer Engine with it (`{_TE_INSTALL[lib]}`, or a source build with "
                    f"NVTE_FRAMEWORK={'pytorch' if lib == 'torch' else lib})" if lib in _TE_INSTALL
                    else "reinstall Transformer Engine with its core library for this CUDA (the transformer_engine "
                         "wheel with its -cu12/-cu13 core package, or a complete source build)")
        elif so:
            lib = so.group(1).rsplit("/", 1)[-1].split(".")[0]
            summary = f"a compiled extension cannot be loaded{in_python}: {clip(msg, 200)}"
            what = (f"reinstall the package that ships {lib} built for this Python's torch and CUDA "
                    f"(a missing or mismatched library)")
        elif "working triton installation" in msg or "TritonMissing(" in msg:
            summary = f"torch.compile's inductor cannot find a working triton installation{in_python}"
            what = ("install triton for this torch (`pip install triton`, the version its wheel pins; on Windows the "
                    "triton-windows package), or run without torch.compile (the recipe's compile option off, or "
                    "TORCHDYNAMO_DISABLE=1)")
        elif "CUDA Setup failed despite GPU" in msg:
            summary = f"bitsandbytes could not load its CUDA library{in_python}"
            what = ("reinstall bitsandbytes built for this CUDA (`pip install -U bitsandbytes`; "
                    "`python -m bitsandbytes` names what it looked for)")
        elif name:
            summary = (f"'{name.group(1)}' cannot be imported from '{name.group(2)}'{in_python} "
                       f"(a version mismatch)")
            what = f"install the version of {name.group(2).split('.')[0]} the code expects"
        else:
            summary = f"an import failed{in_python}: {clip(msg, 200)}"
            what = "install what the import needs"
    demo = any("/runner/demo/" in path.replace("\\", "/") for path, _ in frames)
    interp = where or "the Python that runs the training"
    if demo:
        from moeconsole.runner.core.cpu_torch import install_hint
        hint = (f"the demo needs torch in {interp}: run {install_hint(where or None)}, then `moeconsole restart "
                f"RUN`; a restart without it fails the same way")
    else:
        hint = (f"{what} in {interp}, then `moeconsole restart RUN`; it cannot heal by itself, so "
                f"it is not restarted")
    return _verdict("missing_dependency", [(idx, text)] + status_lines, summary, retryable=False,
                    recovery="fail", hint=hint)


_SETUP_HINT = ("the trainer stopped while preparing the model, tuner, template or dataset, before "
               "training started; restarting would fail the same way: fix the recipe's command or "
               "its data (see the trainer's own error line) and run it again")
# CPython's own refusal to start the program a command names, before any code of it ran: the script
# (Modules/main.c pymain_run_file_obj, 3.11: "%S: can't open file %R: [Errno %d] %s", and a directory
# without __main__.py: "%S: %R is a directory, cannot continue"; exit 2) or the `-m` module (Lib/runpy.py
# 3.11 _run_module_as_main l.193-194, "%s: %s" % (sys.executable, exc), exc from _get_module_details:
# l.142 "No module named %s", l.136 "Error while finding module specification for %r (%s: %s)", l.144
# "Cannot use package as __main__ module", l.151-152 "...; %r is a package and cannot be directly
# executed", l.155 "%r is a namespace package and cannot be executed"; exit 1). Unquoted, after the
# interpreter's name (sys.executable, or argv[0] as typed: `python3`; a log level's `INFO: No module named x`
# is no interpreter's): a dependency the program imports is a ModuleNotFoundError's "No module named 'x'"
# (missing_dependency). It had been `unknown`, and restarted up to max_restarts times (newcomer round 11:
# `moeconsole run -- python3 -m my_trian`).
_PROGRAM_MISSING = re.compile(r"^(?P<exe>(?:[^:'\s][^:']*/)?(?:python|pypy)[\w.-]*): (?:can't open file '[^']+': \[Errno \d+\] .+"
                              r"|'[^']+' is a directory, cannot continue"
                              r"|No module named [\w.]+(?:; '[\w.]+' is a package and cannot be directly executed)?"
                              r"|Error while finding module specification for '[\w.]+' \(\w+: .+\)(?: Try using .+)?"
                              r"|Cannot use package as __main__ module"
                              r"|'[\w.]+' is a namespace package and cannot be executed)$")
_PROGRAM_HINT = ("the interpreter found no program to run: the command's script or `-m` module is not where the "
                 "command runs (workdir, else the directory `run` was typed in), or not installed for that Python; "
                 "restarting would fail the same way: fix its path or name in the command and run it again")
_EXPORT_HINT = ("ms-swift's export refused what the recipe asked (the checkpoint or model to convert, the "
                "adapters to merge, the quantization); restarting would fail the same way: fix the command "
                "(see ms-swift's own error line) and run it again")


_DATA_HINT = ("the datasets library could not read the training's data (a line that is not JSON, a file cut "
              "short, columns that differ between files); restarting reads the same bytes and fails the same "
              "way: fix the data file (its name and row are in the line above the traceback) and run it again")


def _data_verdict(s: _Scan, code: int | None, status_lines: list) -> CrashVerdict:
    """``config_error`` for data the datasets library could not read (``dataset_unreadable``), said in datasets'
    own line naming the file when it printed one before the traceback, else in the cause's line."""
    idx, raised = s.data.decisive[-1]
    above = [(i, t) for i, t in s.exceptions + s.data_causes if i < idx]
    cause = max(above) if above and not raised.startswith("datasets.exceptions.DatasetGenerationCastError") \
        else (idx, raised)
    said = next(((i, t) for i, t in reversed(s.data_said) if i < idx), None)
    own = said[1] if said is not None else cause[1]
    how = f" (exit {code})" if code is not None else ""
    lines = sorted({cause, (idx, raised), *([said] if said is not None else [])})
    return _verdict("config_error", lines + status_lines, f"configuration error{how}: the training's data could "
                    f"not be read: {clip(own, 300)}", retryable=False, recovery="fail", hint=_DATA_HINT)


def _argparse_usage_error(s: _Scan, code: int | None) -> None:
    """The "prog: error: ..." lines are argparse's usage error (they join ``s.usage``) when argparse's usage line
    is in the tail or the attempt exited with argparse's status 2; else they are another program's errors."""
    if s.argparse_errors and (s.usage_printed or code == _ARGPARSE_EXIT):
        s.usage.decisive = sorted(s.usage.decisive + s.argparse_errors)


def _config_verdict(hits: _Hits, code: int | None, status_lines: list, hint: str | None = None) -> CrashVerdict:
    own = hits.decisive[-1][1]     # argparse prints usage first, the error line last
    how = f" (exit {code})" if code is not None else ""
    return _verdict("config_error", hits.decisive + status_lines,
                    f"configuration error{how}: {clip(own, 300)}", retryable=False, recovery="fail",
                    hint=hint or "the trainer rejected its command line or arguments before training "
                                 "started; restarting would fail the same way: fix the recipe's command "
                                 "(see the trainer's own error line) and run it again")


def _gpu_unavailable_verdict(s: _Scan, status_lines: list) -> CrashVerdict:
    text = s.gpu.decisive[0][1]
    m = _GPU_UNAVAILABLE.search(text)
    what = m.group(0) if m else "CUDA devices unavailable"
    if m and m.group("not_ready"):
        summary = f"no usable GPU: CUDA is not ready on this node ({m.group('not_ready_text') or what}, error 802)"
        hint = ("CUDA error 802: the node's GPUs are not registered in the NVSwitch fabric yet; "
                "the Fabric Manager (nvidia-fabricmanager) is down, still starting, or of another "
                "version than the driver: check `systemctl status nvidia-fabricmanager` and "
                "`nvidia-smi -q` (Fabric State: Completed); the runner waits for a device up to "
                "the restart section's gpu_wait_max_s, then fails")
    else:
        summary = f"no usable GPU: {what}"
        hint = ("the GPUs are in exclusive-process mode and held by another process, "
                "missing from CUDA_VISIBLE_DEVICES, or the driver lost them: check "
                "`nvidia-smi` (compute mode, processes) and the job's device list; the "
                "runner waits for a device up to the restart section's gpu_wait_max_s, "
                "then fails")
    return _verdict("gpu_unavailable", s.gpu.decisive + status_lines, summary,
                    retryable=True, recovery="wait_gpu", hint=hint)


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


def _nccl_transport_summary(lines: list[tuple[int, str]]) -> str | None:
    """NCCL's own words for the transport that failed (its WARN message, from the phrase on), else
    the error code the proxy's progress thread returned."""
    said = [(m, text) for _, text in lines for m in [_NCCL_TRANSPORT.search(text)] if m]
    for m, text in said:
        if "[Progress Thread]" not in m.group(0):
            return f"NCCL transport failure: {text[m.start():][:200]}"
    for m, _ in said:
        code = re.search(r"-> (\d+)", m.group(0))
        return f"NCCL transport failure: the proxy's progress thread failed (NCCL error {code.group(1) if code else '?'})"
    return None


_HCCL = re.compile(r"HCCL|Hccl|hccl|EI\d{4}|Getting socket times out")
# NCCL's verbs wrapper when the NIC could not pin or queue memory (ibv_reg_mr*, ibv_create_cq/qp returning
# ENOMEM): the locked-memory limit of the process, not host RAM (NCCL's troubleshooting guide: raise
# `ulimit -l`; a container's default is 64 KB-8 MB).
_IBV_ENOMEM = re.compile(r"Call to ibv_\w+ failed with (?:error )?Cannot allocate memory")
_IBV_ENOMEM_HINT = ("the InfiniBand/RoCE NIC could not register or queue memory: the process's locked-memory "
                    "limit is too low (check `ulimit -l` where the ranks run; docker/Kubernetes: --ulimit "
                    "memlock=-1, Slurm: PropagateResourceLimits, /etc/security/limits.conf), not host RAM; "
                    "the restart only helps if the limit is raised")
_HCCL_TASK_TIMEOUT = re.compile(_HCCL_TASK_TIMEOUT_RE)


_EP_HINT = ("DeepEP's all-to-all (or NVSHMEM under it) timed out or could not set up: the whole process tree is "
            "killed and the cooldown is long; if it repeats at the first dispatch, check the DeepEP and NVSHMEM "
            "versions against each other and the network NVSHMEM uses (IBGDA needs RDMA device access in the "
            "container, NVSHMEM_IB_ENABLE_IBGDA, the GID index), or switch the MoE dispatcher to NCCL's alltoall; "
            "mid-run, one rank may be stuck or dead (see its own log lines)")


def _ep_summary(s: _Scan) -> str | None:
    """DeepEP's or NVSHMEM's own words, when they are what failed (the NCCL class, their own name)."""
    for _, text in s.deepep[:1]:
        m = _DEEPEP_TIMEOUT.search(text)
        said = text[m.start():] if m and not m.group(0).startswith("Global rank") else (m.group(0) if m else text)
        return f"DeepEP (expert-parallel all-to-all) timed out: {clip(said, 160)}"
    for _, text in s.nccl.decisive:
        m = _NVSHMEM.search(text)
        if m:
            rest = text[m.end():].split(" /", 1)[0]     # the same macro's next message on the line
            return f"NVSHMEM failed: {clip(m.group(0).rsplit('/', 1)[-1] + rest, 160)}"
    return None


_NCCL_HINT = ("the whole process tree is killed and the cooldown is long so NCCL IPC state is released; if it "
              "repeats at the same step, one rank may be stuck or dead (see its own log lines)")


def _nccl_verdict(s: _Scan, status_lines: list) -> CrashVerdict:
    lines = s.nccl.decisive
    ep = _ep_summary(s)
    if ep is not None:
        return _verdict("nccl_error", lines + status_lines, ep, retryable=True,
                        recovery="restart_long_cooldown", cooldown_scale=NCCL_COOLDOWN_SCALE, hint=_EP_HINT,
                        extra=s.nccl.support)
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
        if ("watchdog got stuck" in text or "watchdog hang" in text or "Heartbeat monitor timed out" in text
                or "no heartbeat of its watchdog" in text):
            summary = "ProcessGroupNCCL watchdog got stuck"
        elif "Getting socket times out" in text:
            summary = "NCCL timeout: a remote rank did not send its data in time (EI0006)"
        elif _HCCL_TASK_TIMEOUT.search(text):
            summary = "NCCL timeout: a collective stayed stuck on the device past HCCL_EXEC_TIMEOUT"
        elif "Exception raised from checkTimeout" in text:
            summary = "NCCL watchdog timeout (a collective timed out)"
        elif "after attempting to dump debug info, due to" in text:
            summary = "ProcessGroupNCCL ended the process: " + text.rsplit("due to ", 1)[1].rstrip(".")
            if rk:
                summary += f" (rank {rk.group(1)})"
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
            m = re.search(r"NCCL Error (\d+)\b", text)
            if m:
                summary = f"NCCL error {m.group(1)}"    # torch 1.x's code (2: a system call failed)
        if summary == "NCCL error":
            summary = _nccl_transport_summary(lines) or summary
        if summary == "NCCL error":
            failed = next(((m, t) for _, t in lines for m in [_NCCL_CUDA_FAILURE.search(t)] if m), None)
            if failed:
                m, text = failed
                # debug.cc's WARN prefix: "[dev] file:line NCCL WARN", since NCCL 2.30 "[dev] file:line (func)
                # NCCL WARN" (the function's name when the call site gives one)
                src = re.search(r"([\w.-]+\.(?:cc|cu|h)):\d+(?: \(\w+\))? NCCL WARN", text)
                summary = f"NCCL failed a CUDA call{' in ' + src.group(1) if src else ''}: {clip(m.group(0), 160)}"
    if summary == "NCCL error" or summary.startswith("NCCL error:"):
        bound = next((m for _, t in lines for m in [_NVLS_BIND.search(t)] if m), None)
        if bound:
            summary = f"NCCL could not bind NVLink SHARP (NVLS) multicast memory: {bound.group(1)}"
    shm = next(((m, t) for _, t in lines for m in [_NCCL_SHM_FAILURE.search(t)] if m), None)
    if shm and summary == "NCCL error":
        summary = f"NCCL's shared-memory transport failed: {clip(shm[1][shm[0].start():], 200)}"
    if summary.startswith("NCCL") and lines and all(_HCCL.search(t) for _, t in lines):
        summary = "HCCL (Ascend)" + summary[4:]     # torch_npu's collectives: same class, their own name
    hint = _NCCL_HINT
    if any(_IBV_ENOMEM.search(t) for _, t in lines):
        hint = _IBV_ENOMEM_HINT
    elif any(_NVLS.search(t) for _, t in lines + s.nccl.support):
        hint = _NVLS_HINT
    elif shm:
        hint = _NCCL_SHM_FAILURE_HINT
    return _verdict("nccl_error", lines + status_lines, summary, retryable=True,
                    recovery="restart_long_cooldown", cooldown_scale=NCCL_COOLDOWN_SCALE, hint=hint,
                    extra=s.nccl.support)


def _failed_root(s: _Scan) -> _RootCause | None:
    """The failed process a launcher's report names: torchrun's root cause, its 'failed' line, a failure entry."""
    return s.root if s.root is not None and s.root.exitcode is not None else (s.failed_line or _failure_entry(s))


def _failed_rank_words(status_lines: list, s: _Scan) -> str:
    root = _failed_root(s)
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


_SEGFAULT_HINT = "if it repeats, run with PYTHONFAULTHANDLER=1 to get the Python stack"


# Names that are this machine whatever its hostname: torchrun's failure entry prints ``socket.getfqdn()``
# (torch/distributed/elastic/multiprocessing/errors/__init__.py l.303 in torch 2.x, ChildFailedError.format_msg),
# "localhost" where the hostname resolves to the loopback address.
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "127.0.0.1", "::1"})


def _is_this_host(name: str, local_host: str | None) -> bool:
    """Does a host a log names (a torchrun failure entry's ``host``) name the runner's machine? Its
    short name compared, as getfqdn's ``node1.cluster`` and gethostname's ``node1`` name one machine."""
    n = name.strip().lower()
    if n in _LOOPBACK_NAMES:
        return True
    return bool(local_host) and n.split(".")[0] == str(local_host).strip().lower().split(".")[0]


def _oom_kill_told(text: str) -> bool:
    """A line that itself says memory ran out for a killed process: the kernel's OOM killer
    (``Out of memory: Killed process N``, a memory cgroup's, ``invoked oom-killer``), Kubernetes'
    ``OOMKilled``, or a DataLoader worker killed by SIGKILL (the _SIG_TEXT groups that read them)."""
    m = _SIG_TEXT.search(text)
    return m is not None and bool(m.group("oomkill") or m.group("k8soom")
                                  or (m.group("dl") and _STRSIGNAL.get(m.group("dl").strip()) == _signal.SIGKILL))


def _no_oom_kill_proven(exit_code: int | None, oom_kills: int | None, lines: list, s: _Scan,
                        own_pids: Collection[int] | None, local_host: str | None) -> bool:
    """May a SIGKILL's summary say the kernel's OOM killer did not send it? Only when the kernel
    that counted no OOM kill (``oom_kills`` == 0, ``/proc/vmstat`` on the runner's machine) is the
    killed process's and the verdict rests on the bare signal (since the review of the OOM-kill
    count; a wrong denial of a real OOM kill is worse than the hedge, so in doubt: no):

    - no line tells an OOM kill (``_oom_kill_told``, in the verdict's lines or any signal text);
    - the failed process a launcher names ran here: a host it names is this machine
      (``_is_this_host``; any other host named, ``rank 1 on gpu-node-2``, and the count says nothing),
      and either the runner's own child died of SIGKILL (exit code -9: killed on this kernel), the
      killed PID is one of the attempt's own (``own_pids``), or the named host is this machine.
      A wrapper's status (137, 247: pdsh, ssh, kubectl, mpirun, a remote rank's ``exits with
      return code = -9``) proves no locality by itself."""
    if oom_kills != 0:
        return False
    if any(_oom_kill_told(t) for _, t in lines) or any(_oom_kill_told(t) for _, t, _sig in s.sig_text):
        return False
    root = _failed_root(s)
    if root is not None and root.host and not _is_this_host(root.host, local_host):
        return False
    if exit_code is not None and exit_code < 0 and -exit_code == _signal.SIGKILL:
        return True
    if root is None:
        return False
    if root.pid is not None and own_pids is not None and root.pid in {int(p) for p in own_pids}:
        return True
    return bool(root.host)


def _signal_verdict(cls: str, sig: int, lines: list, s: _Scan, no_oom_kill: bool = False) -> CrashVerdict:
    who = _failed_rank_words(lines, s)
    name = signal_name(sig)
    if cls == "killed_oom" and no_oom_kill:
        # the kernel of the machine the process ran on counted no OOM kill while the attempt ran
        # (mm/oom_kill.c counts each one; _no_oom_kill_proven): a person's `kill -9`, a watchdog, a
        # scheduler or a user-space OOM daemon (earlyoom, systemd-oomd: the kernel does not count theirs)
        # sent it. The class and its recovery (a restart) stay the SIGKILL's; the words say what the count proves.
        return _verdict(cls, lines, f"killed by {name}{who} without a user kill, and not by the kernel's OOM "
                                    f"killer (the kernel counted no OOM kill here while the attempt ran): another "
                                    f"process sent it",
                        retryable=True, recovery="restart",
                        hint="something outside the run sent it (a `kill -9`, a watchdog, a scheduler's preemption, "
                             "or a user-space OOM daemon: `journalctl -u earlyoom`, `journalctl -u systemd-oomd`); "
                             "`moeconsole kill RUN` stops a run without a restart")
    if cls == "killed_oom":
        return _verdict(cls, lines, f"killed by {name}{who} without a user kill: most likely the "
                                    f"host OOM killer", retryable=True, recovery="restart",
                        hint="check `dmesg` for 'Out of memory: Killed process'; lower host memory "
                             "use (dataloader workers, pinned memory, CPU offload)")
    if cls == "segfault":
        if any(_WIN_AV.search(t) for _, t in lines):
            name = "a Windows access violation, 0xC0000005"
        return _verdict(cls, lines, f"segmentation fault ({name}){who}", retryable=True,
                        recovery="restart",
                        hint=_SEGFAULT_HINT)
    return _verdict(cls, lines, f"bus error ({name}){who}", retryable=False, recovery="fail",
                    hint="usually /dev/shm is exhausted (dataloader workers) or a memory-mapped "
                         "file was truncated: raise the shared-memory size (docker --shm-size) "
                         "or lower dataloader workers")


# ms-swift's ``swift`` runs its trainer (swift/cli/sft.py, pt.py, rlhf.py, ...; torchrun's when it starts several
# processes) with ``subprocess.run`` and exits with ``sys.exit(result.returncode)`` (swift/cli/main.py 4.6.0
# l.100-102; 3.x the same): a trainer ended by signal N makes it exit 256-N (``decode_exit``: 241 SIGTERM), and
# the trainer's -1 exit 255, which ``decode_exit`` leaves a plain code (a program's own ``exit(-1)`` is common).
# Measured (round 10/11, tests/swift/test_swift_round11.py): SIGHUP to the trainer alone, nothing printed, exit 255.
_SWIFT_TRAINER = re.compile(r"(?:^|/)swift/cli/\w+\.py$")
SWIFT_255_WORDS = ("exited with code 255: ms-swift's swift exits with its trainer's status, and 255 is the "
                   "trainer's -1: ended by SIGHUP (or its own exit(-1)), with nothing printed")


def _swift_trainer_minus_one(code: int | None, signum: int | None, status_lines: list, s: _Scan,
                             programs_run: Mapping[str, bool] | None) -> bool:
    """Whether an exit 255 is ms-swift's ``swift`` passing on its trainer's -1 (``SWIFT_255_WORDS``): one of the
    attempt's programs was ms-swift's trainer (``proctree.ProcessTree.programs_run``), and nothing the log holds
    explains the end (no exception, no assert, no status line of a launcher or a rank)."""
    return (code == 255 and signum is None and not status_lines and not s.exceptions and not s.asserts
            and any(_SWIFT_TRAINER.search(p) for p in (programs_run or {})))


def _unknown_verdict(exit_code: int | None, code: int | None, signum: int | None,
                     status_lines: list, s: _Scan, how: str | None = None) -> CrashVerdict:
    if how is not None:
        pass
    elif signum is not None:
        how = f"ended by {signal_name(signum)}"
    elif code is not None:
        how = f"exited with code {code}"
    elif exit_code is None:
        how = "ended with an unknown exit status"
    else:
        how = f"exited with code {exit_code}"
    raised = sorted(s.exceptions + s.asserts)
    first_exc = raised[0][1] if raised else None
    summary = f"{how}{_failed_rank_words(status_lines, s)}"
    if first_exc:
        summary += f": {clip(_exception_words(first_exc), 200)}"
    lines = raised + status_lines
    return _verdict("unknown", lines or s.last_lines, summary, retryable=True, recovery="restart",
                    extra=[(i, t) for i, t, _ in s.sig_text + s.wrapper_sig if not _agent_kill(s, i)])


def _exception_words(text: str) -> str:
    """An exception line as a summary says it: a failed host assert() as where and what it asserted (its
    function's signature, templates and all, would fill the summary), anything else as printed."""
    m = _HOST_ASSERT.match(text)
    if m:
        return f"assertion failed at {m['file'].rsplit('/', 1)[-1]}:{m['line']}: {m['expr']}"
    return text


def _room_line(hits: _Hits) -> str:
    """The line that says what ran out of room, from its exception on (a prefix hides it otherwise)."""
    text = hits.decisive[-1][1]
    m = _EXC_IN_TEXT.search(text) or _DISK_FULL.search(text) or _NCCL_SHM.search(text)
    return text[m.start():] if m else text


# A file that may grow no more: past the file size limit (``ulimit -f``, RLIMIT_FSIZE) a write(2) fails
# with EFBIG, strerror "File too large" (errno 27), when SIGXFSZ is ignored (CPython ignores it at start-up:
# Python/pylifecycle.c, signal_install_handlers), else SIGXFSZ ends the writer (its default action: a C
# writer, `dd`, a shell's 153). The runner lifts a soft limit (``proctree.lift_file_size_limit``): what is
# left is a hard one, or the filesystem's largest file (EFBIG too), and every restart meets it again.
_FILE_TOO_LARGE = re.compile(r"\[Errno 27\]|: File too large\s*$|\bFile size limit exceeded\b")
_SIGXFSZ = getattr(_signal, "SIGXFSZ", 25)
_FILE_SIZE_HINT = ("raise the hard file size limit where the run starts (it needs root: `fsize` in "
                   "/etc/security/limits.conf, systemd's LimitFSIZE=, docker/Kubernetes `--ulimit fsize=-1`; "
                   "check with `ulimit -Hf`), or write to a filesystem that allows larger files; a restart meets "
                   "the same limit, so the run is not restarted")


_LOG_REFUSED_HINT = ("the run directory's filesystem refuses writes: read-only after a disk or filesystem error "
                     "(the kernel's log says so: `dmesg`; remount it read-write after `fsck`), or out of quota; "
                     "the runner waits until train.log can be written again, then restarts the training")


def log_refused_verdict(unknown: CrashVerdict, why: str) -> CrashVerdict:
    """An end nothing in the log explains (``unknown``) while the log itself cannot be written (``why``: the
    error's words, as the runner found them): the training's output was refused, its last words too (a
    Python that cannot flush stdout at exit ends with code 120), so the refusal is what is known. Still
    ``unknown``, restarted: the runner's cooldown waits until the log can be written."""
    how = unknown.summary
    return replace(unknown, summary=f"train.log could not be written ({why}): the training could write no more, "
                                    f"not even why it ended ({how})", hint=_LOG_REFUSED_HINT)


def file_size_verdict(log_at_limit: int | None, lines: list[tuple[int, str]]) -> CrashVerdict:
    """A write past the file size limit (or the filesystem's largest file) ended the attempt
    (environment_error: fail, never restarted into the same wall). ``log_at_limit``: the bytes of
    the limit the attempt's log reached (the runner's own finding)."""
    if log_at_limit is not None:
        summary = (f"train.log reached the file size limit (ulimit -f) of {human_bytes(log_at_limit)}, which the "
                   "runner cannot lift: the training could write no more")
    elif lines and _FILE_TOO_LARGE.search(lines[0][1]):
        summary = f"a file reached the file size limit (ulimit -f) or its filesystem's largest file: {clip(lines[0][1], 200)}"
    else:
        summary = "ended by SIGXFSZ: a file reached the file size limit (ulimit -f)"
    return _verdict("environment_error", lines, summary, retryable=False, recovery="fail", hint=_FILE_SIZE_HINT)


# Python's own exception for an allocation malloc refused (Objects/exceptions.c MemoryError, raised by
# PyErr_NoMemory), as the last exception of a traceback: "MemoryError" alone or with its message.
_MEMORY_ERROR = re.compile(r"^(?:builtins\.)?MemoryError\b")
_ADDRESS_LIMIT_HINT = ("the shell (or service, or batch job) that started the run limits its address space "
                       "(`ulimit -v`, limits.conf `as`, systemd's LimitAS=, `ulimit -d`): CUDA, PyTorch and "
                       "memory-mapped weights reserve far more address space than RAM they use; raise it "
                       "(`ulimit -v unlimited`, which needs the hard limit to allow it: `ulimit -Hv`) and "
                       "restart; a restart meets the same limit, so the run is not restarted")
# said too when no process under the limit was seen near it (``address_limit_verdict``)
_ADDRESS_ELSEWHERE_HINT = ("; a command that runs its work elsewhere (docker run, ssh host cmd) runs it under that "
                           "place's limits and memory, not these: look there (a container's --ulimit and memory "
                           "limit, the remote shell's ulimit -v)")


def _allocation_refused(s: _Scan) -> list[tuple[int, str]]:
    """The line of a host allocation that failed (ENOMEM: ``host_alloc_failure``), or a final
    ``MemoryError``: what an address-space limit refuses."""
    if s.host_alloc:
        return s.host_alloc.decisive[-1:]
    return [(i, t) for i, t in s.exceptions[-1:] if _MEMORY_ERROR.match(t)]


# The units numpy's _ArrayMemoryError prints its size in (numpy/_core/_exceptions.py
# ``_size_to_string``: powers of 1024, "bytes" to "EiB", three significant figures).
_NP_UNITS = {"bytes": 0, "B": 0, "KiB": 1, "MiB": 2, "GiB": 3, "TiB": 4, "PiB": 5, "EiB": 6}


def host_alloc_bytes(m: re.Match[str]) -> int | None:
    """The size a refused host allocation (``host_alloc_failure``) asked for, in bytes, as its words
    print it (None: they print none, as ENOMEM's "[Errno 12]" does): c10's and ATen's exact bytes,
    numpy's three significant figures, Torch7's whole GiB (``size/1073741824``: at least that)."""
    if m["cpu"] or m["mmap"]:
        return int(m["cpu"] or m["mmap"])
    if m["np"]:
        num, _, unit = m["np"].partition(" ")
        try:
            return int(float(num) * 1024 ** _NP_UNITS[unit])
        except (KeyError, ValueError):
            return None
    if m["th"]:
        return int(m["th"][:-2]) * 1024 ** 3
    return None


def _refused_at_limit(s: _Scan, limit: int | None, signum: int | None, oom_kills: int | None,
                      ceiling: int | None = None) -> tuple[list[tuple[int, str]], int | None]:
    """The refused allocation (``_allocation_refused``) an address-space limit is named for: only one that ended
    the attempt. Since the review of round 15 (R36) it decides at the host allocation's own place, below every
    root cause a log names (divergence, cuda_fault, the GPU's OOM, Ray's memory monitor), and only when it is the
    attempt's last exception (an ENOMEM of a fork the trainer logged and trained past, then a CUDA OOM, was
    "environment_error", never restarted), never when the attempt died of SIGKILL (a limit refuses an allocation:
    the process gets ENOMEM or MemoryError, mm/mmap.c ``may_expand_vm``, never a signal; the OOM killer sends
    SIGKILL, mm/oom_kill.c ``__oom_kill_process``) nor when the kernel counted an OOM kill while it ran
    (``oom_kills``): RAM ran out then, not the address space.
    Round 16: nor when the size it asked for is within the limit but over ``ceiling``, the largest
    allocation the machine's overcommit policy allows (``host.overcommit_ceiling``): the kernel
    checks the limit first (mm/mmap.c ``mmap_region``: ``may_expand_vm``, then
    ``security_vm_enough_memory_mm``), but the request is refused without it too, so the limit is
    not why (numpy's 200 GiB under a 1 TiB `ulimit -v` on a 24 GiB machine named the limit). A size
    over the limit is the limit's whatever the machine: no process under it could have it.
    Review R43: a file mapping's size is never compared with ``ceiling``: the overcommit check charges only
    a private writable mapping (mm/mmap.c ``accountable_mapping``: ``(vm_flags & (VM_NORESERVE|VM_SHARED|
    VM_WRITE)) == VM_WRITE``; Documentation/mm/overcommit-accounting.rst: "SHARED or READ-only - 0 cost"),
    and ATen prints the same "unable to mmap N bytes from file" for a MAP_SHARED mapping as for a
    MAP_PRIVATE one (aten/src/ATen/MapAllocator.cpp, ``MapAllocator::MapAllocator``: the two ``mmap`` calls
    and one ``TORCH_CHECK``): a 30 GiB shared mapping the 40 GiB limit refused on a 23.5 GiB machine read
    ``killed_oom``. Also returned: the size asked (bytes; None: the words say none), for the verdict's words."""
    if limit is None or signum == _signal.SIGKILL or (oom_kills or 0) > 0:
        return [], None
    refused = _allocation_refused(s)
    if not refused or s.exceptions_after(refused[0][0]):
        return [], None
    m = host_alloc_failure(refused[0][1])
    asked = host_alloc_bytes(m) if m is not None else None
    if asked is not None and m is not None and not m["mmap"] and ceiling is not None and ceiling < asked <= limit:
        return [], None
    return refused, asked


def fork_refused_verdict(error: str) -> CrashVerdict:
    """The kernel refused the fork of the training itself (its waiter's exit record: ``fork_refused``, EAGAIN at a
    task limit, ENOMEM; the error names the limit when ``waiter.process_limit_said`` can show it): ``unknown``,
    restarted with the class's backoff, since the tasks that hold the limit end (the user's other sessions on a
    shared node, an earlier attempt's lingering workers) and the restart cap bounds a wall that stays (review
    R36: FAILED as a command that cannot start, where the waiter's traceback had been restarted)."""
    return _verdict("unknown", [(0, error)], f"the kernel refused to make the training's process: {clip(error, 300)}",
                    retryable=True, recovery="restart",
                    hint="a limit on tasks (a container's or pod's pids limit, systemd's TasksMax=, ulimit -u) or on "
                         "memory was reached when the attempt started; it is restarted as processes end: if it "
                         "recurs, end processes or raise the limit the error names")


def address_limit_verdict(limit: int, lines: list[tuple[int, str]], asked: int | None = None,
                          seen: int | None = None) -> CrashVerdict:
    """A host allocation failed while the attempt ran under an address-space limit (environment_error:
    fail, never restarted into the same wall). Read as a host OOM (``killed_oom``: "host memory ran
    out", restarted) or ``unknown`` before round 15, though RAM was to spare.
    ``asked``: the size refused (bytes); ``seen``: the most address space one process of the attempt under the
    limit was seen holding (``proctree.address_space_seen``; None: not watched). When no process was seen near
    the limit (``seen + asked`` within it) the words say so and name the other place a refusal comes from (a
    command whose work runs where the limit does not reach: ``docker run``, ``ssh host cmd``), but the verdict
    stays the limit's. Review R43: round 16 judged that case ``killed_oom`` (restarted, "host memory ran out"),
    but the walks, half a second apart, never bound a process's growth: one ``mmap`` of a weights shard
    (safetensors' ``safe_open``, ``np.load(mmap_mode=)``, ``torch.load(mmap=True)``) adds its whole size at
    once (mm/mmap.c ``may_expand_vm`` counts it in ``total_vm``), and a real `ulimit -v` of 16 GiB refusing 3 GiB
    milliseconds after an 11 GiB map, 3.1 GiB seen, was restarted to the crash cap with a hint about RAM."""
    said = f": {clip(lines[0][1], 200)}" if lines else ""
    unseen = ""
    if seen is not None and asked is not None and seen + asked <= limit:
        unseen = (f" (no process of the attempt here was seen holding more than {human_bytes(seen)} of address "
                  "space: if its work runs elsewhere, in a container or on another machine, that place's limit "
                  "or memory refused it)")
    return _verdict("environment_error", lines,
                    f"an allocation failed at the address-space limit (ulimit -v or -d) of {human_bytes(limit)}, "
                    f"not for want of RAM{said}{unseen}", retryable=False, recovery="fail",
                    hint=_ADDRESS_LIMIT_HINT + (_ADDRESS_ELSEWHERE_HINT if unseen else ""))


# A process seen holding at least this share of its address-space limit was at its edge: any refusal it
# met may be the limit's (``limit_neared``).
NEAR_LIMIT_FRAC = 0.5


def limit_neared(limit: int, seen: int | None) -> bool:
    """Whether a process of the attempt that ran under an address-space limit was seen holding at
    least ``NEAR_LIMIT_FRAC`` of it (``seen``: ``proctree.address_space_seen``, the runner's own
    descendants, which inherit its limits), or the runner did not watch (None). With a client whose
    work runs elsewhere in the tree (``classify``'s ``elsewhere_client``), a refusal that names no size
    is the limit's only so; a size said is weighed against the limit instead (``address_limit_verdict``)."""
    return seen is None or seen >= NEAR_LIMIT_FRAC * limit


def address_limit_unproven_verdict(limit: int, lines: list[tuple[int, str]], seen: int | None,
                                   client: str | None, program: str | None = None) -> CrashVerdict:
    """A refusal that names no size, under an address-space limit, in an attempt whose tree ran
    ``client``, a client whose work runs where the runner's limits do not reach
    (``proctree.elsewhere_client``: `docker run`, `ssh host cmd`, `srun`), with no process here seen near
    the limit (``limit_neared``): nothing proves this limit refused it. ``unknown``, restarted with the
    backoff (a wall that stays meets the no-progress count or the crash cap, whose fail reason quotes
    this summary: ``policy.decide``), the words naming the limit, the client and the other place.
    Round 18 judged it ``environment_error`` and FAILED it after one attempt.
    Review R50: round 18 read every sizeless refusal with no process seen near the limit so, and a
    real `ulimit -v` refusal of a plain local training (``np.memmap``/``mmap.mmap``'s ``[Errno 12]
    Cannot allocate memory``, ``bytearray``'s or ``pickle.load``'s bare ``MemoryError``: one request larger
    than the rest of the limit, which no walk sees coming) was restarted as ``unknown`` and FAILED for
    "no step progress" without naming the limit. A descendant that inherited the limit, with no such
    client in its tree, is the limit's (``address_limit_verdict``).
    Round 20: or ``client`` None and ``program`` the file of the traceback's outermost program frame
    (``_program_frame``), a program no process of the attempt here ran (``programs.frames_ran_here``) in a
    traceback printed whole (``programs.traceback_complete``; review R58): a client the name list does not know
    (``ray job submit``, ``enroot``, a site's ``remote.sh``) relayed it."""
    said = clip(lines[0][1], 200) if lines else "an allocation failed"
    held = human_bytes(seen) if seen is not None else "?"
    return _verdict("unknown", lines,
                    f"an allocation was refused with no size said ({said}) under the address-space limit "
                    f"(ulimit -v or -d) of {human_bytes(limit)}, which no process of the attempt here was seen "
                    f"near (the most one held: {held}); "
                    + (f"the attempt ran `{client}`, whose work runs elsewhere, " if client else
                       f"no process of the attempt here ran the program that raised it ({clip(program or '?', 120)}): "
                       "its work ran elsewhere, ")
                    + "in a container or on another machine: that place's limit or memory may have refused it",
                    retryable=True, recovery="restart", hint=_ADDRESS_UNPROVEN_HINT)


def _program_frame(stack: list[tuple[str, str]]) -> str:
    """The program a whole traceback (``programs.traceback_complete``) names: its outermost frame of
    the program's own code (``in <module>``: runpy's frames before it are the interpreter's, for ``-m``),
    not the innermost, which is mostly a library's (review R58)."""
    return next((file for file, func in stack if func == "<module>"), stack[0][0])


_ADDRESS_UNPROVEN_HINT = ("the log names no size, so neither this limit nor RAM is proven the cause: if the work ran "
                          "here, raise the limit (`ulimit -v unlimited`, within `ulimit -Hv`) and restart"
                          + _ADDRESS_ELSEWHERE_HINT)


def _disk_full_verdict(s: _Scan, status_lines: list) -> CrashVerdict:
    return _verdict("disk_full", s.disk.decisive[-3:] + status_lines,
                    f"a write ran out of room{_failed_rank_words(status_lines, s)}: {clip(_room_line(s.disk), 200)}",
                    retryable=True, recovery="wait_disk", hint=_DISK_FULL_HINT)


def _shm_verdict(s: _Scan, status_lines: list) -> CrashVerdict:
    return _verdict("bus_error", s.shm.decisive[-3:] + status_lines,
                    f"shared memory (/dev/shm) is full{_failed_rank_words(status_lines, s)}: {clip(_room_line(s.shm), 200)}",
                    retryable=False, recovery="fail", hint=_SHM_HINT)


# an exception name inside a line (the start of the exception a prefix hides)
_EXC_IN_TEXT = re.compile(r"\b(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception): ")


_ENV_HINT_DRIVER = ("the NVIDIA driver is older than the CUDA runtime this torch was built with: update the "
                    "driver on the node (nvidia-smi shows its version and the newest CUDA it supports), or "
                    "install a torch build for that CUDA version (pytorch.org's cuXXX wheels); a restart "
                    "fails the same way, so the run is not restarted")
_ENV_HINT_COMPAT = ("CUDA error 804: the CUDA forward-compatibility libraries (cuda-compat, which NVIDIA's and many "
                    "other container images load when the node's driver is older than their CUDA) run only on "
                    "data-center GPUs: install an NVIDIA driver on the node that supports this CUDA itself (nvidia-smi "
                    "shows the newest CUDA it supports), or use an image or torch build for the CUDA the driver "
                    "supports, or keep the compat libraries off LD_LIBRARY_PATH; a restart fails the same way, so "
                    "the run is not restarted")
_ENV_HINT_RM_MISMATCH = ("the node's NVIDIA driver was updated but the loaded kernel module is still the old "
                         "version (the libraries and the module disagree): reboot the node, or unload and reload "
                         "the nvidia kernel modules once no process uses the GPUs; every restart fails the same "
                         "way until then, so the run is not restarted")
_ENV_HINT_ARCH = ("this torch (or extension) build has no kernels for this GPU's architecture{sm}: install a "
                  "build that lists it (torch.cuda.get_arch_list(); pytorch.org's newer cuXXX wheels), or "
                  "rebuild the extension with TORCH_CUDA_ARCH_LIST including it; a restart fails the same way, "
                  "so the run is not restarted")

_ENV_HINT_PTX = ("the program (or an extension it loads) was built by a CUDA toolkit newer than the node's NVIDIA "
                 "driver supports, and the driver cannot compile its PTX for the GPU: update the driver to one whose "
                 "CUDA version (nvidia-smi's header) is at least the toolkit's, or rebuild with the toolkit of the "
                 "driver's CUDA, or with this GPU's architecture{sm} in the build, whose kernels need no compiling (for "
                 "torch, a build whose torch.cuda.get_arch_list() lists it); a restart fails the same way, so the run is "
                 "not restarted")

_ENV_HINT_NVRTC = ("torch (and CuPy, Warp) compile some kernels at run time with NVRTC, and this install's NVRTC does "
                   "not know the GPU's architecture: older than the GPU (install a torch build for a CUDA release that "
                   "knows it, cu128 or newer for sm_120, cu129 or newer for sm_103, cu130 for sm_121, or upgrade "
                   "nvidia-cuda-nvrtc to that release), or newer than the GPU (CUDA 13's NVRTC dropped compute_50 to "
                   "compute_72, Maxwell, Pascal and Volta: on a V100 or a P100 install a cu12x build); a restart "
                   "fails the same way, so the run is not restarted")

_ENV_HINT_ROCM_ARCH = ("this ROCm torch (or extension) build has no code object for this GPU's gfx target: install a "
                       "ROCm build whose torch.cuda.get_arch_list() lists it, or rebuild the extension with "
                       "PYTORCH_ROCM_ARCH (ROCm's TORCH_CUDA_ARCH_LIST) naming it; HSA_OVERRIDE_GFX_VERSION helps only "
                       "when it names an ISA this GPU can run (a wrong one ends in HSA_STATUS_ERROR_INVALID_ISA); a "
                       "restart fails the same way, so the run is not restarted")


# flash-attn 2's check (csrc/flash_attn/flash_api.cpp, the releases that print this message: is_sm8x = major == 8,
# is_sm90 = major == 9 && minor == 0, TORCH_CHECK(is_sm90 || is_sm8x, ...)) refuses a GPU older than Ampere and one
# newer than Hopper alike: a Blackwell RTX PRO 6000 (sm_120) or B200 (sm_100) gets "only supports Ampere GPUs or
# newer" too (starVLA #69, batch 43), where a flash-attn built for that architecture is the fix
_ENV_HINT_FLASH = ("flash-attn's check refused this GPU's architecture: on one older than Ampere (Turing, Volta) no "
                   "build has kernels for it, use another attention implementation (transformers' attn_implementation "
                   "'sdpa' or 'eager', ms-swift's --attn_impl sdpa, vLLM's VLLM_ATTENTION_BACKEND=XFORMERS) or an "
                   "Ampere or newer GPU; on one newer than Hopper (Blackwell sm_100/sm_120) the installed flash-attn "
                   "predates it, install a flash-attn release built for that architecture or use another attention "
                   "implementation; a restart fails the same way, so the run is not restarted")
_ENV_HINT_TRITON_OLD = ("torch.compile's inductor generates triton kernels, and triton runs on GPUs of CUDA capability 7.0 "
                        "(Volta) or newer only: run without torch.compile (the trainer's compile switch off, e.g. "
                        "nanoGPT's compile=False, nnUNet_compile=f, or TORCHDYNAMO_DISABLE=1; for vLLM its eager mode "
                        "with no compilation config) or on a newer GPU; a restart fails the same way, so the run is not "
                        "restarted")
_ENV_HINT_TRITON_OOR = ("the kernel was compiled with block sizes and num_stages for a GPU with more shared memory or "
                        "threads (an H100 has 227 KiB of shared memory per block, an A100 163 KiB, an RTX 3090 or 4090 "
                        "99 KiB): use the library's setting or release for this GPU, or smaller block sizes or "
                        "num_stages in the kernel's config, or run on a larger GPU; a restart fails the same way, so "
                        "the run is not restarted")
_ENV_HINT_FA3 = ("FlashAttention-3 (flash_attn_interface, built from flash-attention's hopper/ directory) refused this "
                 "GPU: its releases before January 2025 run on Hopper (sm_90) only, later ones on Ampere (sm_80) or "
                 "newer: on an A100/A800 or an Ada GPU rebuild a newer FA3 or use flash-attn 2 (flash_attn) or 'sdpa'; on "
                 "an older GPU use another attention implementation; a restart fails the same way, so the run is not "
                 "restarted")
_ENV_HINT_BF16_VLLM = ("vLLM checks the model's dtype against the GPU when its worker starts, and bfloat16 needs "
                       "compute capability 8.0 (Ampere) or newer: run the engine in float16 (vLLM's dtype=half, "
                       "--dtype half; in an RL trainer its rollout's dtype, e.g. verl's "
                       "actor_rollout_ref.rollout.dtype, with the trainer's own precision fp16 too) or on an Ampere "
                       "or newer GPU; a restart fails the same way, so the run is not restarted")
_ENV_HINT_BF16_TRAINER = ("transformers checks bf16 against the GPU when TrainingArguments is built, and GPUs older "
                          "than Ampere (V100, T4, RTX 20xx and older) have no bfloat16: train in fp16 (--fp16 true "
                          "with bf16 off, in the DeepSpeed config too) or on an Ampere or newer GPU; if the GPU is "
                          "one, check that torch sees it (torch.cuda.is_available()); a restart fails the same way, "
                          "so the run is not restarted")
_ENV_HINT_FLASH_BWD = ("flash-attention's backward kernels for this head size are built for sm_80 and sm_90 only "
                       "(A100/A800, H100/H800): use another attention implementation (transformers' attn_implementation "
                       "'sdpa' with its memory-efficient or math kernel, or 'eager'; torch.backends.cuda."
                       "enable_flash_sdp(False)) or such a GPU; a restart fails the same way, so the run is not restarted")
_ENV_HINT_FA4 = ("FlashAttention-4's kernels for this GPU architecture do not implement this attention "
                 "configuration (head size, softcap, sink, score_mod, paging, split-KV ...): use another attention "
                 "backend (flash-attn 2, Transformer Engine's fused attention, 'sdpa'; for ms-swift --attn_impl "
                 "flash_attn or sdpa) or a head size and feature set the kernel supports; a restart fails the same "
                 "way, so the run is not restarted")
_ENV_HINT_LOWP = ("Transformer Engine's own check says this GPU or CUDA cannot run the FP8/FP4 recipe asked for: "
                  "train in bf16 (turn fp8 off), choose a recipe the GPU supports (delayed or current/tensorwise "
                  "scaling from Ada/Hopper; MXFP8 and NVFP4 from Blackwell; blockwise on Hopper with CUDA 12.9+), or "
                  "run a container with the CUDA it names; a restart fails the same way, so the run is not restarted")
_ENV_HINT_P2P = ("these GPUs cannot use peer-to-peer access (PCIe topology, IOMMU/ACS, a VM or container): when "
                 "NCCL's P2P transport failed, set NCCL_P2P_DISABLE=1 in the recipe's env so NCCL goes through host "
                 "memory; turn off custom "
                 "all-reduce in a vLLM/SGLang engine (disable_custom_all_reduce), or use GPUs that share a "
                 "switch or NVLink (nvidia-smi topo -m); a restart fails the same way, so the run is not restarted")
_ENV_HINT_GEMM = ("the GPU's compute capability is below what this matmul kernel was built for: Megatron's grouped GEMM "
                  "(--moe_grouped_gemm) needs sm_80 or newer; torch 2.8's torch._grouped_mm runs on sm_90 only (torch "
                  "2.9 and later also on sm_80+: upgrade torch, or choose another MoE experts implementation, e.g. "
                  "transformers' experts_implementation or the trainer's own grouped-GEMM switch); torch._scaled_mm and "
                  "_scaled_grouped_mm (FP8) need sm_89/sm_90 or an MI300: train in bf16; a restart fails the same way, "
                  "so the run is not restarted")
_ENV_HINT_CANN = ("install the CANN kernels (ops) package matching the toolkit and this NPU's chip, or a torch_npu "
                  "release that supports it; a restart fails the same way, so the run is not restarted")


def _env_own_lines(s: _Scan) -> set[int]:
    """The lines that restate the environment error: its own lines; NCCL's failures after it was raised, the echo
    of the rank it ended on the ranks still in a collective with it ("DistBackendError: NCCL error ... remote
    process exited or there was a network error"); and, when what NCCL hit was GPUs without peer access, NCCL's
    own report of that CUDA error ("unhandled cuda error", before or after it). A logged environment line ended no
    rank (TensorFlow's cuInit failure, then training on the CPU): NCCL's failure after it is no echo of it."""
    own = {i for i, _ in s.env.decisive}
    if not own:
        return own
    # (a collective that timed out after it is no echo: NCCL went on, and the timeout ended the attempt)
    last = s.env.decisive[-1][0]
    if any(i > last for i, _ in s.nccl_timeout.decisive):
        return own
    if any(_ENV_P2P.search(t) for _, t in s.env.decisive):
        return own | {i for i, _ in s.nccl.decisive}
    raised = min((i for i, _ in s.exceptions if i in own), default=None)
    if raised is not None:
        own |= {i for i, _ in s.nccl.decisive if i > raised}
    return own


def _fa4_refusal(lines: list[tuple[int, str]], kernel: str | None) -> str | None:
    """FlashAttention-4's own refusal among the environment lines, from the line's message on (or the
    kernel whose constructor asserted without words)."""
    for _, text in lines:
        m = _ENV_FA4.search(text)
        if m:
            start = text.rfind("Error: ", 0, m.start())
            return text[start + len("Error: "):] if start >= 0 else text[m.start():]
    return f"AssertionError in {kernel}'s constructor (the tile or head size does not fit)" if kernel else None


def _environment_verdict(s: _Scan, status_lines: list) -> CrashVerdict:
    """The CUDA driver or the build cannot run on this node (environment_error: fail, never restarted)."""
    lines = s.env.decisive or s.env.support
    sm = next((m for _, t in s.env.support + s.env.decisive for m in [_ENV_SM.search(t)] if m), None)
    driver = next((m for _, t in lines for m in [_ENV_DRIVER.search(t)] if m), None)
    mismatch = next((m for _, t in lines for m in [_ENV_RM_MISMATCH.search(t)] if m), None)
    compat = next((m for _, t in lines for m in [env_compat_stated(t)] if m), None)
    if mismatch is not None:
        summary = (f"the NVIDIA kernel module and the driver's libraries are different versions: "
                   f"{mismatch.group(0)}")
        hint = _ENV_HINT_RM_MISMATCH
    elif compat is not None and driver is None:
        summary = ("CUDA's forward-compatibility libraries cannot run on this GPU (the node's driver is older than the "
                   "CUDA runtime): forward compatibility was attempted on non supported HW (error 804)")
        hint = _ENV_HINT_COMPAT
    elif driver is not None:
        found = driver.group("found")
        if found:
            ver = f"{int(found) // 1000}.{int(found) % 1000 // 10}"
            summary = f"the NVIDIA driver is too old for this torch build (it supports CUDA {ver})"
        else:
            summary = f"the NVIDIA driver is too old for the CUDA runtime: {driver.group(0)}"
        hint = _ENV_HINT_DRIVER
    else:
        # the GPU's name without what the warning's line had before it: the warnings module's "file:line:
        # UserWarning: " and a paste's list bullet or quote ("- `NVIDIA GeForce RTX 5090 with CUDA capability ...")
        gpu = sm.group("gpu").rsplit(": ", 1)[-1].lstrip("-*>`'\" ").strip() if sm else ""
        where = f" ({sm.group('sm')}, {gpu})" if sm else ""
        arch = next((m.group(0) for _, t in lines for m in [_ENV_ARCH.search(t) or fa2_arch_stated(t)] if m), None)
        nvrtc = next((m.group(0) for _, t in lines for m in [_nvrtc_arch_stated(t)] if m), None)
        summary = (f"the build has no kernels for this GPU{where}: {arch}" if arch
                   else f"this torch build does not support the GPU{where}")
        hint = _ENV_HINT_ARCH.format(sm=f" ({sm.group('sm')})" if sm else "")
        if arch is None and nvrtc:
            summary, hint = (f"the install's runtime compiler (NVRTC) cannot compile for this GPU's architecture"
                             f"{where}: {nvrtc}", _ENV_HINT_NVRTC)
        if arch and any(_ROCM_ARCH_WORDS.search(t) for _, t in lines):
            hint = _ENV_HINT_ROCM_ARCH
        if arch and re.fullmatch(_FLASH_BWD_ARCH, arch):
            summary, hint = (f"flash-attention's backward needs an sm_80 or sm_90 GPU (A100/H100 class) here{where}: "
                             f"{arch}", _ENV_HINT_FLASH_BWD)
        elif arch and arch.startswith("FlashAttention"):
            summary, hint = (f"flash-attn cannot run on this GPU's architecture (older than Ampere sm_80, or newer "
                             f"than the installed flash-attn knows){where}: {arch}", _ENV_HINT_FLASH)
        elif arch and arch.startswith("Op "):
            summary, hint = f"the CANN kernels package has no binary for this NPU: {arch}", _ENV_HINT_CANN
        elif arch and re.fullmatch(_INVALID_IMAGE, arch):
            summary = f"the build's kernel image cannot be loaded on this GPU and driver{where}: {arch}"
        elif arch and re.fullmatch(_PTX_TOOLCHAIN, arch):
            ptx = _PTX_WORDS if any(_PTX_WORDS in t for _, t in lines) else arch   # the words over the enum's name
            summary, hint = (f"the build's PTX comes from a CUDA toolkit newer than this NVIDIA driver can compile"
                             f"{where}: {ptx}", _ENV_HINT_PTX.format(sm=f" ({sm.group('sm')})" if sm else ""))
        triton_old = next((m for _, t in lines for m in [triton_gpu_too_old(t)] if m), None)
        fa3 = next((m.group(0) for _, t in lines for m in [fa3_arch_stated(t)] if m), None)
        if arch is None and triton_old:
            cc = f" (CUDA capability {triton_old.group('cc')})" if triton_old.group("cc") else ""
            summary, hint = (f"torch.compile's inductor cannot use triton on this GPU{cc}, triton needs CUDA "
                             f"capability 7.0 or newer: {triton_old.group('gpu')}", _ENV_HINT_TRITON_OLD)
        oor = next((m for _, t in lines for m in [triton_out_of_resources(t)] if m), None)
        if arch is None and triton_old is None and oor is not None:
            sizes = (f" (required {oor.group('req')}, this GPU's limit {oor.group('lim')})" if oor.group("req")
                     else "")
            summary, hint = (f"a Triton kernel needs more {oor.group('res')} than this GPU has{sizes}: "
                             f"{oor.group(0).split(': ', 1)[1]}", _ENV_HINT_TRITON_OOR)
        elif arch is None and fa3:
            summary, hint = (f"FlashAttention-3 (flash-attention's hopper build) cannot run on this GPU's "
                             f"architecture{where}: {fa3}", _ENV_HINT_FA3)
        bf16 = next((m for _, t in lines for m in [bf16_gpu_refused(t)] if m), None)
        if arch is None and bf16 is not None:
            named = next((g for _, t in lines + s.env.support for g in [_BF16_GPU.search(t)] if g), None)
            which = (f": {named.group('gpu')} (compute capability {named.group('cc')})" if named and named.group("cc")
                     else f": {named.group('gpu')}" if named else "")
            if bf16.group(0).startswith("Bfloat16"):
                summary, hint = (f"vLLM cannot run bfloat16 on this GPU, it needs compute capability 8.0 (Ampere) or "
                                 f"newer{which}", _ENV_HINT_BF16_VLLM)
            else:
                summary, hint = ("transformers' TrainingArguments refused bf16: this setup has no GPU bfloat16 (it "
                                 "needs an Ampere or newer GPU and CUDA 11+)", _ENV_HINT_BF16_TRAINER)
        gemm = next((m.group(0) for _, t in lines for m in [_ENV_GEMM.search(t)] if m), None)
        lowp = next((m.group(0) for _, t in lines for m in [_ENV_LOWP.search(t)] if m), None)
        p2p = next((m.group(0) for _, t in lines for m in [_ENV_P2P.search(t)] if m), None)
        fa4 = _fa4_refusal(lines, s.fa4_kernel)
        if arch is None and gemm:
            summary, hint = (f"this GPU's compute capability is below what the matmul kernel needs{where}: "
                             f"{gemm.rstrip('.')}", _ENV_HINT_GEMM)
        elif arch is None and fa4:
            summary, hint = (f"FlashAttention-4 cannot run this attention configuration on this GPU's "
                             f"architecture{where}: {fa4}", _ENV_HINT_FA4)
        elif arch is None and lowp:
            summary, hint = f"this GPU or CUDA build cannot run the low-precision recipe: {lowp}", _ENV_HINT_LOWP
        elif arch is None and p2p:
            summary, hint = f"the GPUs cannot access each other's memory (peer to peer): {p2p}", _ENV_HINT_P2P
    return _verdict("environment_error", lines + status_lines, summary, retryable=False, recovery="fail",
                    hint=hint, extra=s.env.support)


def _hub_decides(s: _Scan, signum: int | None) -> list[tuple[int, str, str]]:
    """The Hub lines that ended the attempt: no fatal signal, and no other exception after the last of
    them (a logged Hub warning followed by the real failure is not the cause)."""
    if not s.hub or signum in _DECISIVE_SIGNALS:
        return []
    hub_idx = {i for i, _, _ in s.hub}
    return s.hub if not s.exceptions_after(s.hub[-1][0], but=hub_idx) else []


_HUB_WHAT = {
    "gated": ("the model or dataset is gated on the Hugging Face Hub and this account has no access",
              "request access on the repo's page, then log in on this node as that account "
              "(`huggingface-cli login`, or set HF_TOKEN in the recipe's env)"),
    "missing": ("the Hugging Face Hub has no such repo, or it is private and the request was not authorised",
                "check the repo id (and model vs dataset) in the recipe; a private or gated repo also answers "
                "'not found' without a token: `huggingface-cli login` or HF_TOKEN in the recipe's env"),
    "bad_id": ("the repo id is not a valid Hugging Face id (a local path that does not exist is read as one)",
               "fix the model or dataset id in the recipe: `name` or `namespace/name`, or an existing local "
               "directory"),
    "offline": ("the Hugging Face Hub cannot be reached (offline, HF_HUB_OFFLINE=1 or no network) and the "
                "files are not in the local cache",
                "download the model/dataset into the cache the run uses first (`huggingface-cli download "
                "REPO` with the same HF_HOME / HF_HUB_CACHE), point the recipe at a local directory, or "
                "unset HF_HUB_OFFLINE"),
    "tokenizer": ("the tokenizer could not be loaded, the Hugging Face Hub did not give its files (offline, "
                  "no access, or no such repo) and no local directory holds them",
                  "check the model / tokenizer id or path in the recipe; download it into the cache the run "
                  "uses first (`huggingface-cli download REPO` with the same HF_HOME), log in for a gated or "
                  "private repo (`huggingface-cli login` or HF_TOKEN in the recipe's env), or point the recipe "
                  "at a local directory holding tokenizer_config.json and the vocab files"),
    "modelscope": ("ModelScope has no such model or dataset",
                   "check the id in the recipe (ms-swift's --model / --dataset), or use --use_hf true for a "
                   "Hugging Face id; a private one needs `modelscope login` (MODELSCOPE_API_TOKEN)"),
}


def _hub_repo(texts: Iterable[str]) -> str | None:
    """The repository the first of ``texts`` naming one names (``owner/name``, a URL's tail cut);
    a local path whole."""
    repo = next((next(g for g in m.groups() if g) for t in texts for m in [_HUB_REPO.search(t)] if m), None)
    if repo and not repo.startswith(("/", "./", "../", "~")):
        repo = "/".join(_HUB_URL_TAIL.sub("", repo).split("/")[:2]) or None
    return repo


def _hub_verdict(hub: list[tuple[int, str, str]], status_lines: list) -> CrashVerdict:
    """A model or dataset the Hub will not give (hub_access: fail, never restarted)."""
    kinds = [k for _, _, k in hub]
    kind = next(k for k, _ in _HUB_KINDS if k in kinds)
    repo = _hub_repo(t for _, t, _ in hub)
    what, fix = _HUB_WHAT[kind]
    summary = what + (f": {repo}" if repo else "")
    hint = f"{fix}; a restart fails the same way, so the run is not restarted"
    return _verdict("hub_access", [(i, t) for i, t, _ in hub][-4:] + status_lines, summary, retryable=False,
                    recovery="fail", hint=hint)


def _hub_rate_verdict(hub: list[tuple[int, str, str]], status_lines: list, s: _Scan) -> CrashVerdict:
    """The Hub's rate limit (hub_rate_limited: the policy waits a window, restart.hub_wait_s, and tries again)."""
    rate = [(i, t) for i, t, kind in hub if kind == "rate"]
    after = [(i, t) for i, t in s.hub_tail if rate[0][0] < i <= rate[-1][0] + 4]
    repo = _hub_repo(t for _, t in rate + after)
    retry = next((m.group(1) for _, t in after for m in [_HUB_RETRY_AFTER.search(t)] if m), None)
    summary = ("the Hugging Face Hub is rate-limiting the requests (429 Too Many Requests)"
               + (f": {repo}" if repo else "") + (f"; it asks to retry after {retry} s" if retry else ""))
    hint = ("the Hub counts requests per account (per address without a token) over 5-minute windows, so the run "
            "waits restart.hub_wait_s before the next try, without using a restart; for a higher limit log in "
            "(HF_TOKEN in the recipe's env), and download the model and dataset into the cache once before the "
            "run (`huggingface-cli download REPO` with the same HF_HOME) with HF_HUB_OFFLINE=1 in the recipe's "
            "env, so that the ranks do not each ask the Hub again")
    return _verdict("hub_rate_limited", rate[-4:] + after[:2] + status_lines, summary, retryable=True,
                    recovery="wait_hub", hint=hint)
