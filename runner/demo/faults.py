"""What each injected fault does (``faultspec`` decides which ones fire).

Where the failure can be produced for real on a CPU box it is: NaN and grad-norm spikes come out
of the actual computation, signals are real (SIGSEGV from a NULL read, SIGBUS from touching a
truncated mmap, SIGABRT from abort(), SIGKILL), the port error is a real ``TCPStore`` bind on an
occupied port, the recompute mismatch is a real ``torch.utils.checkpoint`` error caused by routing
that drifts between forward and recomputation. CUDA-only failures (OOM, illegal memory access,
the NCCL watchdog) cannot happen without a GPU, so they raise or print the exact texts the real
ones produce (torch, NCCL and CUDA texts), from inside the real forward/backward call stack.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import resource
import signal
import socket
import sys
import tempfile
import time
from datetime import datetime, timedelta
from typing import Callable, Iterable, TextIO

import torch


# ---------------------------------------------------------------- deaths by signal

def _no_core_dump() -> None:
    """A demo crash must not litter the working directory with core files."""
    try:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ValueError, OSError):
        pass


def die_by_segfault() -> None:
    """A real SIGSEGV: read address 0."""
    _no_core_dump()
    ctypes.string_at(0)
    os.kill(os.getpid(), signal.SIGSEGV)  # not reached on Linux


def die_by_bus_error() -> None:
    """A real SIGBUS: touch a mapped page whose file was truncated underneath the mapping."""
    _no_core_dump()
    with tempfile.TemporaryFile() as f:
        f.write(b"\0" * mmap.PAGESIZE)
        f.flush()
        mapped = mmap.mmap(f.fileno(), mmap.PAGESIZE)
        f.truncate(0)
        mapped[0]  # the kernel delivers SIGBUS here
    os.kill(os.getpid(), signal.SIGBUS)  # not reached on Linux


def die_by_sigkill() -> None:
    """An abrupt death as the host OOM killer would deal it."""
    os.kill(os.getpid(), signal.SIGKILL)


def hang_forever() -> None:
    """No output, no progress, still alive: what a stuck collective looks like from outside."""
    while True:
        time.sleep(3600)


# ---------------------------------------------------------------- NCCL watchdog (text + SIGABRT)

def _c10_prefix(rank: int, now: datetime, line: int) -> str:
    return f"[rank{rank}]:[E{now:%m%d %H:%M:%S}.{now.microsecond * 1000:09d} ProcessGroupNCCL.cpp:{line}] "


def nccl_watchdog_lines(rank: int, step: int, now: datetime | None = None) -> list[str]:
    """The ProcessGroupNCCL watchdog-timeout report (ProcessGroupNCCL.cpp) and the C++ terminate text."""
    now = now or datetime.now()
    pg = f"[PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
    seq = 4 * step + 1
    work = (f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=93696, NumelOut=93696, "
            f"Timeout(ms)=600000)")
    timeout = f"Watchdog caught collective operation timeout: {work} ran for 600047 milliseconds before timing out."
    what = f"{pg}Process group watchdog thread terminated with exception: {pg}{timeout}"
    return [
        _c10_prefix(rank, now, 685) + pg + timeout,
        _c10_prefix(rank, now, 2412) + pg + "Some NCCL operations have failed or timed out. Due to the "
        "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
        _c10_prefix(rank, now, 2418) + pg + "To avoid data inconsistency, we are taking the entire process down.",
        _c10_prefix(rank, now, 1652) + what,
        "terminate called after throwing an instance of 'c10::DistBackendError'",
        f"  what():  {what}",
        "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:688 "
        "(most recent call first):",
    ]


def die_by_nccl_watchdog(rank: int, step: int, err: TextIO | None = None) -> None:
    """Print the watchdog report, then abort() as std::terminate does: a real SIGABRT."""
    err = err or sys.stderr
    err.write("\n".join(nccl_watchdog_lines(rank, step)) + "\n")
    err.flush()
    _no_core_dump()
    os.abort()


# ---------------------------------------------------------------- rendezvous port in use (real)

def fail_rendezvous_on_busy_port(port: int, host: str = "127.0.0.1") -> None:
    """Make rank 0's TCPStore server bind a port that is taken; the DistNetworkError is torch's own.

    The port is held by a socket of ours for the moment of the bind (if someone else, e.g. the
    torchrun agent, holds it already, that is the genuine case). Under torchrun the workers
    normally join the agent's store instead of serving one, so that shortcut is switched off here.
    Should the bind unexpectedly succeed, the same error is raised by hand: never silent."""
    import torch.distributed as dist

    os.environ["TORCHELASTIC_USE_AGENT_STORE"] = "False"
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        try:
            holder.bind(("0.0.0.0", port))
            holder.listen(1)
        except OSError:
            pass  # already in use by someone else: exactly the situation we want
        dist.init_process_group("gloo", init_method=f"tcp://{host}:{port}", rank=0, world_size=1,
                                timeout=timedelta(seconds=10))
        dist.destroy_process_group()
        raise dist.DistNetworkError(
            f"The server socket has failed to listen on any local network address. port: {port}, "
            "useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use")
    finally:
        holder.close()


# ---------------------------------------------------------------- CUDA OOM texts

_OOM_ADVICE = ("If reserved but unallocated memory is large try setting "
               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
               "See documentation for Memory Management  "
               "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")


def oom_message(device: int, foreign: Iterable[tuple[int, str]] = (), *, tried: str = "266.00 MiB",
                total: str = "139.80 GiB", free: str = "221.50 MiB", this_process: str = "139.57 GiB",
                allocated: str = "131.92 GiB", reserved_unallocated: str = "5.13 GiB") -> str:
    """torch.OutOfMemoryError's text as the caching allocator builds it (c10/cuda/CUDACachingAllocator.cpp)."""
    others = "".join(f"Process {pid} has {size} memory in use. " for pid, size in foreign)
    return (f"CUDA out of memory. Tried to allocate {tried}. GPU {device} has a total capacity of {total} "
            f"of which {free} is free. {others}Including non-PyTorch memory, this process has "
            f"{this_process} memory in use. Of the allocated memory {allocated} is allocated by PyTorch, "
            f"and {reserved_unallocated} is reserved by PyTorch but unallocated. {_OOM_ADVICE}")


def _runner_pid() -> int | None:
    """The waiter's parent (the runner), or None outside a supervised run."""
    try:
        with open(f"/proc/{os.getppid()}/stat") as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return ppid if ppid > 1 else None


def raise_gpu_busy_oom(device: int) -> None:
    """OOM while placing the model: foreign processes still hold most of the GPU. They are named
    by live PIDs outside the attempt (init and the supervising runner), as a leftover server
    would be: the classifier counts a named PID as foreign only when it is alive and not ours."""
    runner = _runner_pid()
    foreign = [(1, "96.31 GiB")] + ([(runner, "40.12 GiB")] if runner else [])
    raise torch.OutOfMemoryError(oom_message(
        device, foreign, tried="1.94 GiB", free="1.06 GiB", this_process="2.30 GiB",
        allocated="1.80 GiB", reserved_unallocated="14.00 MiB"))


def raise_driver_too_old() -> None:
    """torch's CUDA init on a node whose driver is older than the runtime torch was built with: the
    text of torch/cuda/__init__.py's ``_check_driver`` (c10/cuda/CUDAFunctions.cpp raises the same
    from ``torch._C._cuda_init()``), the driver's CUDA version 11.4 (found version 11040)."""
    raise RuntimeError(
        "The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by "
        "downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
        "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with "
        "your version of the CUDA driver.")


class GatedRepoError(OSError):
    """Printed as huggingface_hub prints its own (``huggingface_hub.errors.GatedRepoError``)."""


GatedRepoError.__module__ = "huggingface_hub.errors"


def raise_gated_repo(url: str | None = None) -> None:
    """A gated model without access: hf_raise_for_status's message (huggingface_hub
    utils/_http.py: the status, the request id, "Cannot access gated repo for url U.") and the
    Hub's server message for a user who is not logged in. ``url``: the file asked for."""
    url = url or "https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json"
    raise GatedRepoError(
        "401 Client Error. (Request ID: Root=1-66f4b037-1bf3d7d219afbc904ee05694)\n\n"
        f"Cannot access gated repo for url {url}.\n"
        "Access to model meta-llama/Llama-3.1-8B is restricted. You must have access to it and be "
        "authenticated to access it. Please log in.")


class HfHubHTTPError(OSError):
    """Printed as huggingface_hub prints its own (``huggingface_hub.errors.HfHubHTTPError``)."""


HfHubHTTPError.__module__ = "huggingface_hub.errors"


def raise_hub_rate_limit(url: str | None = None) -> None:
    """The Hub's rate limit, as huggingface_hub >= 1.2 raises it from the RateLimit headers
    (utils/_http.py hf_raise_for_status, status 429 with ``remaining == 0``; _format puts the
    request id before the first newline). ``url``: the file asked for."""
    url = url or "https://huggingface.co/Qwen/Qwen3-30B-A3B/resolve/main/config.json"
    raise HfHubHTTPError(
        "(Request ID: Root=1-6751c0a2-3f1e0c5b1a2d4e6f70819203)\n\n"
        "429 Too Many Requests: you have reached your 'resolvers' rate limit.\n"
        "Retry after 55 seconds (0/3000 requests remaining in current 300s window).\n"
        f"Url: {url}.")


def chunk_gated_delta_rule_bwd_dhu(grad: torch.Tensor, device: int) -> torch.Tensor:
    """Named after fla's backward kernel launcher whose ``dh`` buffer tips a tight GPU over."""
    raise torch.OutOfMemoryError(oom_message(device))


def chunk_gated_delta_rule_bwd(grad: torch.Tensor, device: int) -> torch.Tensor:
    return chunk_gated_delta_rule_bwd_dhu(grad, device)


class ChunkGatedDeltaRuleFunction(torch.autograd.Function):
    """Identity in forward; its backward runs out of (emulated) GPU memory, as in the incident."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, device: int) -> torch.Tensor:
        ctx.device = device
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return chunk_gated_delta_rule_bwd(grad, ctx.device), None


def oom_in_backward(x: torch.Tensor, device: int) -> torch.Tensor:
    """Thread ``x`` through a node whose backward raises torch.OutOfMemoryError."""
    return ChunkGatedDeltaRuleFunction.apply(x, device)


# ---------------------------------------------------------------- CUDA illegal memory access

CUDA_ILLEGAL_ADDRESS = (
    "CUDA error: an illegal memory access was encountered\n"
    "Search for `cudaErrorIllegalAddress' in "
    "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
    "below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")


def illegal_memory_access_router(logits: torch.Tensor) -> torch.Tensor:
    """Router hook that fails the way a token-dispatch kernel reading out of bounds does."""
    error = getattr(torch, "AcceleratorError", RuntimeError)
    raise error(CUDA_ILLEGAL_ADDRESS)


# ---------------------------------------------------------------- recompute mismatch (real)

def drifting_router(favoured: tuple[int, ...] = (0, 1)) -> Callable[[torch.Tensor], torch.Tensor]:
    """A router hook that leaves the original forward alone but, on recomputation, sends every
    token to ``favoured`` experts: the recompute then saves fewer tensors than the forward did
    and torch.utils.checkpoint raises its genuine CheckpointError."""
    calls = 0

    def hook(logits: torch.Tensor) -> torch.Tensor:
        nonlocal calls
        calls += 1
        if calls == 1:
            return logits
        bias = torch.zeros(logits.shape[-1])
        bias[list(favoured)] = 1e4
        return logits + bias

    return hook


# ---------------------------------------------------------------- divergence (real)

def poison_with_nan(weight: torch.nn.Parameter) -> None:
    """Put one NaN into a trained LoRA weight: the loss, grads and updates go NaN for real."""
    with torch.no_grad():
        weight.view(-1)[0] = float("nan")


SPIKE_SCALE = 1000.0
