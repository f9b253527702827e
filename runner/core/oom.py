"""A CUDA OOM explained after it happened: what torch's message says, what the failing GPU's
memory did before it, and a verdict with its evidence.

Pure: the runner hands over the OOM text, the GPU's recent memory (from
:class:`moeconsole.runner.core.memory.MemoryWatch`) and what it knows (foreign processes, torch version);
tests feed plain values. Verdicts, in the order they are tried:

- ``foreign``: another process held memory on that GPU (the message's ``Process N has X``
  for a PID proven not ours, or NVML's process list): a restart helps once it is gone;
- ``leak``: the GPU's per-step peak was growing: a restart fails again about as many steps
  after it starts;
- ``fragmentation``: torch held at least the failed allocation reserved but unallocated
  (reserved >> allocated): the allocator's ``expandable_segments:True`` under the env name the
  run's torch reads;
- ``transient``: a flat envelope and a failed allocation on top of it: a spike, restarting is
  right (named after a declared transient of about its size);
- ``unknown``: not enough memory history to tell.

The message formats are torch's ``c10/cuda/CUDACachingAllocator.cpp`` (formats reference 4.1):
``Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.19 GiB of which 1.06 GiB is free.
[Process N has X memory in use.] Including non-PyTorch memory, this process has Y memory in use.
[L allowed;] Of the allocated memory A is allocated by PyTorch, [with P allocated in private
pools (e.g., CUDA Graphs),] and R is reserved by PyTorch but unallocated.``; before torch 2.3
``Tried to allocate X (GPU 0; Y total capacity; Z already allocated; W free; V reserved in total
by PyTorch)``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from moeconsole.runner.core.memory import (ALLOC_CONF_NEW, ALLOC_CONF_OLD, Trend, alloc_conf_env,
                                           gib_text, mib_rate_text)

FRAGMENTATION_MIN_GIB = 1.0    # less reserved-but-unallocated than this is not fragmentation
FOREIGN_MIN_GIB = 0.5          # another process holding less than this did not cause an OOM
TRANSIENT_MATCH = 0.25         # a failed allocation within 25% of a declared transient is that one
_PRINT_ROUNDING_GIB = 0.01     # torch's format_size prints two decimals: sizes compared within that

_SIZE = r"([\d.]+) ?(bytes|B|KiB|MiB|GiB|TiB|KB|MB|GB|TB)"
_UNITS = {"bytes": 1 / 1024 ** 3, "B": 1 / 1024 ** 3, "KiB": 1 / 1024 ** 2, "KB": 1 / 1024 ** 2,
          "MiB": 1 / 1024, "MB": 1 / 1024, "GiB": 1.0, "GB": 1.0, "TiB": 1024.0, "TB": 1024.0}
_TRIED = re.compile(r"Tried to allocate " + _SIZE)
_TRIED_HUGE = re.compile(r"Tried to allocate more than (\S+) memory")
# Intel Gaudi's PyTorch bridge names the size it failed to allocate in bytes and in MB (MiB: 939524096 is 896 of them)
# after its device-memory module: "FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::939524096 (896)MB" (the
# HPU's OOM, crash._OOM; its summary carries the size as torch's "Tried to allocate" gives it on the other runtimes)
_HPU_DEVMEM_SIZE = re.compile(r"MODULE:PT_DEVMEM Allocation failed for size::(\d+) \((\d+)\)(MB)")
_REQUESTED = re.compile(r"Requested size: " + _SIZE)
# torch 2.1 and 2.2 print "total capacty" (the wording's first releases), later ones "capacity"
_GPU_NEW = re.compile(r"GPU (\d+) has a total capaci?ty of " + _SIZE + r" of which " + _SIZE + r" is free")
_GPU_OLD = re.compile(r"\(GPU (\d+); " + _SIZE + r" total capacity")
_OLD_ALLOCATED = re.compile(_SIZE + r" already allocated")
_OLD_FREE = re.compile(r"; " + _SIZE + r" free")
_OLD_RESERVED = re.compile(_SIZE + r" reserved in total by PyTorch")
_PROCESS = re.compile(r"Process (\d+) has " + _SIZE + r" memory in use")
_THIS = re.compile(r"this process has " + _SIZE + r" memory in use")
_ALLOWED = re.compile(_SIZE + r" allowed;")
_ALLOCATED = re.compile(r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch")
_PRIVATE = re.compile(r"with " + _SIZE + r" allocated in private pools")
_UNALLOCATED = re.compile(r"and " + _SIZE + r" is reserved by PyTorch but unallocated")


def _to_gib(num: str, unit: str) -> float:
    return float(num) * _UNITS[unit]


@dataclass(frozen=True)
class OomMessage:
    """What one torch OOM message says (GiB; None where it says nothing)."""

    tried_gib: float | None = None
    tried_text: str | None = None           # as printed ("2.00 GiB", "more than 1EB")
    gpu: int | None = None                  # the process's CUDA device index
    total_gib: float | None = None
    free_gib: float | None = None
    process_gib: float | None = None        # this process, PyTorch and not
    allocated_gib: float | None = None      # by PyTorch
    private_pools_gib: float | None = None
    reserved_unallocated_gib: float | None = None
    reserved_gib: float | None = None       # pre-2.3: reserved in total by PyTorch
    allowed_gib: float | None = None        # set_per_process_memory_fraction's limit
    others: tuple[tuple[int, float], ...] = ()   # (pid, GiB) of the other processes listed
    self_pid: int | None = None             # the entry of ``others`` that must be this process (``_own_entry``)

    def to_dict(self) -> dict:
        return {"tried_gib": self.tried_gib, "tried": self.tried_text, "gpu": self.gpu,
                "total_gib": self.total_gib, "free_gib": self.free_gib, "process_gib": self.process_gib,
                "allocated_gib": self.allocated_gib, "private_pools_gib": self.private_pools_gib,
                "reserved_unallocated_gib": self.reserved_unallocated_gib, "reserved_gib": self.reserved_gib,
                "allowed_gib": self.allowed_gib, "others": [{"pid": p, "gib": g} for p, g in self.others],
                "self_pid": self.self_pid}


def parse_oom_message(text: str) -> OomMessage | None:
    """The numbers of a CUDA OOM message (any torch since 1.x; the size of Gaudi's, _HPU_DEVMEM_SIZE); None when
    ``text`` holds none."""
    hpu = _HPU_DEVMEM_SIZE.search(text) if "PT_DEVMEM" in text else None
    if "out of memory" not in text and "OutOfMemoryError" not in text and hpu is None:
        return None
    kw: dict[str, Any] = {}
    m = _TRIED.search(text) or _REQUESTED.search(text)
    if m:
        kw["tried_gib"], kw["tried_text"] = _to_gib(m.group(1), m.group(2)), f"{m.group(1)} {m.group(2)}"
    elif hpu is not None:
        kw["tried_gib"], kw["tried_text"] = int(hpu.group(1)) / 1024 ** 3, f"{hpu.group(2)} {hpu.group(3)}"
    else:
        h = _TRIED_HUGE.search(text)
        if h:
            kw["tried_text"] = f"more than {h.group(1)}"
    g = _GPU_NEW.search(text)
    if g:
        kw["gpu"], kw["total_gib"], kw["free_gib"] = int(g.group(1)), _to_gib(g.group(2), g.group(3)), \
            _to_gib(g.group(4), g.group(5))
    else:
        o = _GPU_OLD.search(text)
        if o:
            kw["gpu"], kw["total_gib"] = int(o.group(1)), _to_gib(o.group(2), o.group(3))
            for key, rx in (("allocated_gib", _OLD_ALLOCATED), ("free_gib", _OLD_FREE), ("reserved_gib", _OLD_RESERVED)):
                mm = rx.search(text)
                if mm:
                    kw[key] = _to_gib(mm.group(1), mm.group(2))
            if kw.get("reserved_gib") is not None and kw.get("allocated_gib") is not None:
                kw["reserved_unallocated_gib"] = max(0.0, kw["reserved_gib"] - kw["allocated_gib"])
    for key, rx in (("process_gib", _THIS), ("allowed_gib", _ALLOWED), ("allocated_gib", _ALLOCATED),
                    ("private_pools_gib", _PRIVATE), ("reserved_unallocated_gib", _UNALLOCATED)):
        mm = rx.search(text)
        if mm:
            kw[key] = _to_gib(mm.group(1), mm.group(2))
    others = tuple((int(pid), _to_gib(num, unit)) for pid, num, unit in _PROCESS.findall(text))
    if kw.get("reserved_gib") is None and kw.get("allocated_gib") is not None \
            and kw.get("reserved_unallocated_gib") is not None:
        kw["reserved_gib"] = kw["allocated_gib"] + kw["reserved_unallocated_gib"]
    if others:
        kw["others"] = others
        own = _own_entry(others, kw) if "process_gib" not in kw else None
        if own is not None:
            kw["self_pid"] = own[0]
    return OomMessage(**kw)


def _own_entry(others: tuple[tuple[int, float], ...], kw: Mapping[str, Any]) -> tuple[int, float] | None:
    """The raising process's own entry when torch printed it as ``Process N has X`` (a PID namespace).

    torch lists NVML's compute processes on the device and names the one whose PID equals its
    ``getpid()`` "this process" (``c10/cuda/CUDACachingAllocator.cpp``, ``reportProcessMemoryInfo``,
    torch 2.1+). NVML reports PIDs of the host's namespace, so in a container the process's own
    entry reads ``Process <host pid> has X memory in use`` and no "this process" clause is printed.
    That entry holds at least what PyTorch reserved (``Of the allocated memory A ... and R is
    reserved by PyTorch but unallocated``, A + R) plus its CUDA context: when exactly one listed
    process holds that much it is this process, not another's; with several it cannot be told
    which (and another process holds at least as much anyway), so none is taken."""
    reserved = kw.get("reserved_gib") if kw.get("allocated_gib") is not None else None
    if reserved is None or not others:
        return None
    big = [o for o in others if o[1] + _PRINT_ROUNDING_GIB >= reserved]
    return big[0] if len(big) == 1 else None


def merge_messages(texts: Sequence[str]) -> OomMessage | None:
    """The first OOM message of a log tail that names a GPU (ranks often print one each), else
    the first at all."""
    found = [m for m in (parse_oom_message(t) for t in texts) if m is not None]
    if not found:
        return None
    return next((m for m in found if m.gpu is not None), found[0])


@dataclass(frozen=True)
class OomExplanation:
    verdict: str                          # foreign | leak | fragmentation | transient | unknown
    summary: str
    evidence: tuple[str, ...]
    advice: str
    restart: str                          # "helps" | "fails_again" | "after_gpu_clear" | "with_allocator_setting" | "unknown"
    gpu: int | None = None
    env: dict[str, str] = field(default_factory=dict)   # what the advice asks to set
    steps_to_oom: int | None = None       # a leak: steps this attempt ran before it

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "summary": self.summary, "evidence": list(self.evidence),
                "advice": self.advice, "restart": self.restart, "gpu": self.gpu, "env": dict(self.env),
                "steps_to_oom": self.steps_to_oom}


def explain_oom(msg: OomMessage | None, *, gpu: int | None, trend: Trend | None, history: Sequence[Mapping],
                foreign_pids: Mapping[int, float] | None = None, torch_version: str | None = None,
                transients: Sequence[tuple[str, float]] = (), oom_step: int | None = None,
                attempt_start_step: int | None = None, env: Mapping[str, str] | None = None) -> OomExplanation:
    """The verdict on one CUDA OOM (see the module docstring). ``gpu`` is the physical GPU the
    message names; ``history`` that GPU's recent samples (``MemoryWatch.history``), newest last;
    ``foreign_pids`` the message's PIDs proven to be other processes'."""
    where = f"GPU {gpu}" if gpu is not None else "the GPU"
    tried = msg.tried_gib if msg else None
    tried_s = (msg.tried_text or gib_text(tried)) if msg and (msg.tried_text or tried is not None) else "an allocation"
    failed = f"tried to allocate {tried_s}" + (f" with {gib_text(msg.free_gib)} free" if msg and msg.free_gib is not None else "")
    evidence: list[str] = []
    if msg is not None:
        evidence.append(_message_line(msg, where))

    # foreign memory: the message's other processes, else NVML's view before the crash
    held = {pid: g for pid, g in (foreign_pids or {}).items() if g >= FOREIGN_MIN_GIB}
    nvml_foreign = max((float(h["foreign_gib"]) for h in history[-20:] if h.get("foreign_gib") is not None),
                       default=0.0)
    if held or nvml_foreign >= max(FOREIGN_MIN_GIB, tried or 0.0):
        if held:
            who = ", ".join(f"PID {pid} held {gib_text(g)}" for pid, g in list(held.items())[:4])
            evidence.append(f"not this run's processes on {where}: {who}")
        if nvml_foreign:
            evidence.append(f"NVML listed {gib_text(nvml_foreign)} on {where} for processes outside the run "
                            f"before the crash")
        return OomExplanation("foreign", f"out of memory on {where} ({failed}) while another process held "
                                         f"GPU memory", tuple(evidence),
                              "end the other process (moeconsole gpus lists it); the runner waits for the GPU's "
                              "memory to be released before it restarts", "after_gpu_clear", gpu)

    peaks = [(h.get("step"), h.get("peak_gib")) for h in history if h.get("peak_gib") is not None]
    if trend is not None and trend.state == "growing" and trend.gib_per_step:
        ran = None if oom_step is None or attempt_start_step is None else max(0, oom_step - attempt_start_step)
        grew = f"{where}'s per-step peak grew {mib_rate_text(trend.gib_per_step)} (robust trend over " \
               f"{trend.steps} steps, lag {trend.lag}) up to {gib_text(trend.level_gib)}"
        evidence.append(grew)
        if peaks:
            first, last = peaks[0], peaks[-1]
            evidence.append(f"recorded peak {gib_text(first[1])} at step {first[0]} -> {gib_text(last[1])} "
                            f"at step {last[0]}")
        again = f"about {ran:,} steps after it starts (this attempt ran {ran:,} steps from step " \
                f"{attempt_start_step})" if ran is not None else "at about the same point"
        return OomExplanation("leak", f"out of memory on {where} after steady growth of "
                                      f"{mib_rate_text(trend.gib_per_step)} (a leak)", tuple(evidence),
                              f"a restart runs out again {again}: find what keeps memory (tensors kept "
                              f"across steps, a growing cache, logging of tensors that hold the graph)",
                              "fails_again", gpu, steps_to_oom=ran)

    frag = msg.reserved_unallocated_gib if msg else None
    if frag is not None and frag >= FRAGMENTATION_MIN_GIB and (tried is None or frag >= tried):
        name = alloc_conf_env(torch_version)
        # the setting the attempt ran with: under the name its torch reads; torch's version unknown,
        # under the first name set (the doctor accepts both while they agree)
        names = (name,) if name else (ALLOC_CONF_NEW, ALLOC_CONF_OLD)
        had = next(((n, v) for n in names if (v := str((env or {}).get(n) or ""))), (names[0], ""))
        current = had[1]
        evidence.append(f"{gib_text(frag)} was reserved by PyTorch but unallocated, "
                        + (f"at least the {gib_text(tried)} it tried to allocate: the memory was there, in "
                           f"pieces" if tried is not None else "free only for smaller blocks"))
        if msg and msg.allocated_gib is not None:
            evidence.append(f"allocated by PyTorch {gib_text(msg.allocated_gib)}, reserved "
                            f"{gib_text((msg.allocated_gib or 0) + frag)}")
        if "expandable_segments:True" in current:
            advice = (f"{had[0]} already has expandable_segments:True: lower the peak instead (micro-batch, "
                      f"sequence length, recompute)")
            env_out: dict[str, str] = {}
        else:
            # the runner sets it for the next attempt (judge.remedy_env, state.json's next_env), whether
            # it restarts the run itself or the user does
            # (torch's version unknown: both names, which the doctor accepts while they agree); the
            # recipe's own options kept (max_split_size_mb:...: comma-separated key:value pairs, torch's
            # c10/cuda/CUDAAllocatorConfig.cpp, c10/core/AllocatorConfig.cpp from 2.9)
            value = f"{current},expandable_segments:True" if current else "expandable_segments:True"
            env_out = {n: value for n in names}
            advice = (f"the next attempt runs with {' and '.join(f'{n}={value}' for n in names)} "
                      f"(torch {torch_version or 'version unknown'}), set by the runner: the allocator can then use "
                      f"the memory it holds in pieces")
        return OomExplanation("fragmentation", f"out of memory on {where} through fragmentation: "
                                               f"{gib_text(frag)} reserved but unallocated", tuple(evidence),
                              advice, "with_allocator_setting", gpu, env=env_out)

    if trend is not None and trend.state == "stable":
        evidence.append(f"{where}'s per-step peak was flat at {gib_text(trend.level_gib)} over the last "
                        f"{trend.steps} steps")
        named = ""
        if tried is not None:
            match = [(n, g) for n, g in transients if g > 0 and abs(tried - g) <= TRANSIENT_MATCH * g]
            if match:
                named = f" (about the declared transient {match[0][0]}, {gib_text(match[0][1])})"
                evidence.append(f"the failed allocation {gib_text(tried)} is within "
                                f"{TRANSIENT_MATCH:.0%} of the declared transient {match[0][0]}")
        return OomExplanation("transient", f"out of memory on {where}: a transient spike{named} on a flat "
                                           f"envelope ({failed})", tuple(evidence),
                              "restarting is right; if it recurs, declare it in memory.transients and keep the "
                              "effective headroom above it (less micro-batch or sequence length)", "helps", gpu)
    if peaks:
        evidence.append(f"only {len(peaks)} memory sample(s) before the crash: too few steps for a trend")
    return OomExplanation("unknown", f"out of memory on {where} ({failed}); not enough memory history to "
                                     f"say why", tuple(evidence),
                          "restart; the next attempt's memory history decides if it recurs", "unknown", gpu)


def _message_line(msg: OomMessage, where: str) -> str:
    parts = []
    if msg.tried_text or msg.tried_gib is not None:
        parts.append(f"tried to allocate {msg.tried_text or gib_text(msg.tried_gib)}")
    if msg.total_gib is not None:
        parts.append(f"{gib_text(msg.total_gib)} total")
    if msg.free_gib is not None:
        parts.append(f"{gib_text(msg.free_gib)} free")
    if msg.process_gib is not None:
        parts.append(f"this process {gib_text(msg.process_gib)}")
    if msg.allocated_gib is not None:
        parts.append(f"allocated by PyTorch {gib_text(msg.allocated_gib)}")
    if msg.reserved_unallocated_gib is not None:
        parts.append(f"reserved but unallocated {gib_text(msg.reserved_unallocated_gib)}")
    return f"torch on {where}: " + ", ".join(parts)


# torch's allocator message as it is raised, with its own numbers (c10/cuda/CUDACachingAllocator.cpp, the
# TORCH_CHECK_WITH(OutOfMemoryError, ...) of malloc: "CUDA out of memory. Tried to allocate " format_size(alloc_size)
# ". GPU " device " has a total capacity of " format_size(device_total) ...; torch 2.1 and 2.2 spell "capacty"; before
# torch 2.3 "Tried to allocate X (GPU N; Y total capacity; ..."; torch_npu's "(NPU N; ..."): the failed allocation's
# size and the device's capacity in format_size's own form ("N bytes" up to 1 KiB, then "%.2f KiB|MiB|GiB", as
# torch_size_text prints them). A person naming a kind of OOM writes neither ("Tried to allocate N GiB").
_FORMAT_SIZE = r"(?:\d+ bytes|\d+\.\d\d [KMG]iB)"
_RENDERED = re.compile(r"[.,:;]?\s*Tried to allocate " + _FORMAT_SIZE
                       + r"(?:\. GPU \d+ has a total capaci?ty of " + _FORMAT_SIZE
                       + r"| \((?:GPU|NPU) \d+; " + _FORMAT_SIZE + r" total capacity)")


def asks_past_exabyte(text: str) -> bool:
    """The OOM message on the line asks no size but "more than 1EB": torch refuses any single allocation of 1 EiB or
    more before it asks the driver (c10/cuda/CUDAMallocAsyncAllocator.cpp, CudaMallocAsyncAllocator::allocate:
    ``TORCH_CHECK_WITH(OutOfMemoryError, size < one_exa_bytes, "CUDA out of memory. Tried to allocate more than 1EB
    memory.")``, "Same pattern as CUDACachingAllocator.cpp"; torch_npu's the same). No memory holds that: the size was
    garbage, not the memory short (crash._scan_tail reads it beside NCCL's failure)."""
    return _TRIED_HUGE.search(text) is not None


def torch_oom_rendered(text: str, pos: int) -> bool:
    """At text[pos] stands the rest of torch's allocator OOM message with its numbers (``_RENDERED``): the failed
    allocation's size and the GPU's capacity, as only a raised message prints them."""
    return _RENDERED.match(text, pos) is not None


def torch_size_text(gib: float) -> str:
    """A size as torch's ``format_size`` prints it (``%.2f`` and bytes, KiB, MiB up to 1 GiB, GiB)."""
    b = gib * 1024 ** 3
    if b <= 1024:
        return f"{b:.0f} bytes"
    if b <= 1024 ** 2:
        return f"{b / 1024:.2f} KiB"
    if b <= 1024 ** 3:
        return f"{b / 1024 ** 2:.2f} MiB"
    return f"{gib:.2f} GiB"


def crash_hint(report: Mapping[str, Any]) -> str | None:
    """The one hint a crash report gives, wherever it is shown (the alert's details, the timeline,
    ``runs show``, the receipt, ``--json``): a CUDA OOM with a memory verdict gets that verdict's
    advice (a leak is never told to set the allocator for fragmentation); anything else, and an
    OOM the memory watch could not judge, the crash classifier's hint."""
    mem = report.get("memory")
    if isinstance(mem, Mapping) and mem.get("verdict") and mem.get("advice"):
        return str(mem["advice"])
    hint = report.get("hint")
    return str(hint) if hint else None
