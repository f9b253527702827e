"""A trainer double for GPU memory: it prints what ms-swift 4.x's ``megatron sft`` and
Megatron-Core print about memory, following a memory profile, and shows its memory to the fake
NVML; it can end in the CUDA OOM text torch prints. No GPU, no torch.

What it imitates (read in ms-swift 4.6.0 and Megatron-Core; the formats reference, sections 1
and 2a):

- ``swift/megatron/callbacks/print.py`` ``PrintCallback.on_log``: one ``str(dict)`` per logging
  step with ``loss``, ``grad_norm``, ``learning_rate``, then ``iteration`` ('N/M'),
  ``elapsed_time``, ``remaining_time``, ``memory(GiB)`` and ``train_speed(s/it)``.
  ``memory(GiB)`` is ``round(max over the model-parallel group of
  torch.cuda.max_memory_reserved() / 1024**3, 2)``: a running peak since the process started
  (nothing resets it), so one spike lifts it for good.
- ``megatron/training/utils`` ``report_memory``: ``[Rank R] (after N iterations) memory (MB) |
  allocated: A | max allocated: B | reserved: C | max reserved: D`` (MiB, two decimals), with
  ``FAKE_MEM_REPORT=1``.
- ``c10/cuda/CUDACachingAllocator.cpp``: ``torch.OutOfMemoryError: CUDA out of memory. Tried to
  allocate X. GPU G has a total capacity of T of which F is free. Including non-PyTorch memory,
  this process has P memory in use. Of the allocated memory A is allocated by PyTorch, and R is
  reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation
  for Memory Management  (https://...)``, after a traceback; the process exits 1.

The profile (environment):
  FAKE_MEM_STEPS        iterations (default 200)
  FAKE_MEM_BASE_GIB     allocated at the steady peak (default 60)
  FAKE_MEM_CACHE_GIB    reserved - allocated: the caching allocator's free blocks (default 1)
  FAKE_MEM_LEAK_MIB     allocated grows this much per step (default 0)
  FAKE_MEM_SPIKE_EVERY  every Nth step a transient of FAKE_MEM_SPIKE_MIB on top (0: never)
  FAKE_MEM_ATTEMPT_GIB  "A:G,..." more GiB in attempt A (a step change after a restart)
  FAKE_MEM_CAPACITY_GIB the device's capacity: reserved past it is a CUDA OOM (default 80)
  FAKE_MEM_OOM_AT       "S" or "S@A": a CUDA OOM at step S (in attempt A only); the allocation
                        that fails is FAKE_MEM_OOM_MIB (default 266)
  FAKE_MEM_CRASH_AT     "S@A": exit 1 with a plain error at step S of attempt A
  FAKE_STEP_S           seconds per step (default 0.01)
  FAKE_MEM_NVML=1       rewrite $FAKE_NVML_SCENARIO each step: this process on GPU 0..N-1 with
                        reserved + 0.5 GiB (the CUDA context), as NVML counts it
  FAKE_MEM_UTIL         the GPUs' utilisation then (percent, default 0); FAKE_MEM_SM_PCT this
                        process's SM share (a utilisation sample; none when unset)
"""
from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path

GIB_MIB = 1024.0
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from moeconsole.runner.demo.swiftlog import format_time  # noqa: E402  (ms-swift's own format, cheap to import)


def _f(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def _at(spec: str | None, attempt: int) -> int | None:
    if not spec:
        return None
    step, _, att = spec.partition("@")
    if att and int(att) != attempt:
        return None
    return int(step)


def _size(gib: float) -> str:
    """torch's ``format_size`` (``%.2f`` MiB up to 1 GiB, then GiB)."""
    return f"{gib * 1024:.2f} MiB" if gib <= 1.0 else f"{gib:.2f} GiB"


def _nvml(gpus: int, used_gib: float) -> None:
    path = os.environ.get("FAKE_NVML_SCENARIO")
    if not path or os.environ.get("FAKE_MEM_NVML") != "1":
        return
    from tests.fakes.nvml import FakeGpu, FakeProc, write_scenario
    cap = _f("FAKE_MEM_CAPACITY_GIB", 80.0)
    util = int(_f("FAKE_MEM_UTIL", 0))
    sm = os.environ.get("FAKE_MEM_SM_PCT")
    write_scenario(path, [FakeGpu(mem_total_mib=cap * GIB_MIB, util_pct=util) for _ in range(gpus)],
                   [FakeProc(gpu=i, pid=os.getpid(), used_mib=used_gib * GIB_MIB,
                             sm_pct=int(sm) if sm else None) for i in range(gpus)])


def main() -> int:
    attempt = int(os.environ.get("MOECONSOLE_ATTEMPT", "1"))
    steps = int(_f("FAKE_MEM_STEPS", 200))
    base, cache = _f("FAKE_MEM_BASE_GIB", 60.0), _f("FAKE_MEM_CACHE_GIB", 1.0)
    leak = _f("FAKE_MEM_LEAK_MIB", 0.0) / GIB_MIB
    spike_every, spike = int(_f("FAKE_MEM_SPIKE_EVERY", 0)), _f("FAKE_MEM_SPIKE_MIB", 266.0) / GIB_MIB
    cap = _f("FAKE_MEM_CAPACITY_GIB", 80.0)
    oom_at = _at(os.environ.get("FAKE_MEM_OOM_AT"), attempt)
    crash_at = _at(os.environ.get("FAKE_MEM_CRASH_AT"), attempt)
    step_s = _f("FAKE_STEP_S", 0.01)
    for part in filter(None, os.environ.get("FAKE_MEM_ATTEMPT_GIB", "").split(",")):
        a, _, g = part.partition(":")
        if int(a) == attempt:
            base += float(g)
    report = os.environ.get("FAKE_MEM_REPORT") == "1"
    gpus = int(_f("FAKE_MEM_GPUS", 2))
    print(f"[INFO:swift] fake megatron sft: attempt {attempt}, {steps} iterations", flush=True)
    start = time.time()
    max_reserved = max_allocated = 0.0
    for it in range(1, steps + 1):
        time.sleep(step_s)
        allocated = base + leak * it
        transient = spike if spike_every and it % spike_every == 0 else 0.0
        reserved = allocated + cache
        if oom_at == it or reserved + transient > cap:
            tried = _f("FAKE_MEM_OOM_MIB", 266.0) / GIB_MIB if oom_at == it else transient or leak or 0.01
            free = max(0.0, cap - reserved - 0.5)
            print("Traceback (most recent call last):", flush=True)
            print('  File "/opt/fla/ops/gated_delta_rule/chunk.py", line 312, in backward', flush=True)
            print('  File "/opt/fla/ops/gated_delta_rule/chunk.py", line 180, in chunk_gated_delta_rule_bwd',
                  flush=True)
            print(f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {_size(tried)}. GPU 0 has a total "
                  f"capacity of {_size(cap)} of which {_size(free)} is free. Including non-PyTorch memory, this "
                  f"process has {_size(reserved + 0.5)} memory in use. Of the allocated memory {_size(allocated)} is "
                  f"allocated by PyTorch, and {_size(cache)} is reserved by PyTorch but unallocated. If reserved but "
                  f"unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to "
                  f"avoid fragmentation.  See documentation for Memory Management  "
                  f"(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-"
                  f"alloc-conf)", flush=True)
            return 1
        if crash_at == it:
            print("RuntimeError: fake megatron: injected crash", flush=True)
            return 1
        max_allocated = max(max_allocated, allocated + transient)
        max_reserved = max(max_reserved, reserved + transient)
        _nvml(gpus, reserved + transient + 0.5)
        elapsed = time.time() - start
        speed = elapsed / it
        loss = 2.0 * math.exp(-it / 100.0) + 0.5
        logs = {"loss": round(loss, 8), "grad_norm": 0.8, "learning_rate": 2e-05, "iteration": f"{it}/{steps}",
                "elapsed_time": format_time(elapsed), "remaining_time": format_time((steps - it) * speed),
                "memory(GiB)": round(max_reserved, 2), "train_speed(s/it)": round(speed, 6)}
        print(str(logs), flush=True)
        if report:
            for rank in range(gpus):
                print(f"[Rank {rank}] (after {it} iterations) memory (MB) | allocated: {allocated * GIB_MIB:.2f} | "
                      f"max allocated: {max_allocated * GIB_MIB:.2f} | reserved: {reserved * GIB_MIB:.2f} | "
                      f"max reserved: {max_reserved * GIB_MIB:.2f}", flush=True)
    print("[INFO:swift] last_model_checkpoint: None", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
