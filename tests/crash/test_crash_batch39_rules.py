"""Batch 39's rules (docs/crash-classes.md, "Public crash texts"), each on a variant the batch's texts did not show:
NCCL out of GPU memory for its own buffers (its allocators' WARN), an NCCL timeout a report tells with the
collective's name, and a DeepEP timeout a report tells in words."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify, nccl_timeout_told

VALUE_ERROR = ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
               "ValueError: the eval split is empty"]


# --- NCCL's allocators: "Failed to CUDA malloc|calloc|calloc async N bytes" ------------------------------------

# NCCL 2.27's WARN lines as a rank logs them (src/include/alloc.h ncclCudaCallocDebug), then torch's error
NCCL_CALLOC_LOG = [
    "node7:2211:2290 [3] include/alloc.h:324 NCCL WARN Failed to CUDA calloc 6291456 bytes",
    "node7:2211:2290 [3] NCCL INFO transport/p2p.cc:204 -> 1",
    "[rank3]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:3356, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.3",
]


def test_nccls_own_allocation_failure_is_a_cuda_oom_with_its_own_hint():
    v = classify(1, NCCL_CALLOC_LOG, steps_seen=12)
    assert v.cls == "cuda_oom" and v.recovery == "restart", (v.cls, v.summary)
    assert "NCCL could not allocate its buffers on the GPU" in v.summary
    assert "NCCL_BUFFSIZE" in v.hint


@pytest.mark.parametrize("line", ["[rank0]: Failed to CUDA malloc 2097152 bytes",
                                  "h1:9:9 [0] include/alloc.h:161 NCCL WARN Failed to CUDA calloc async 4096 bytes"])
def test_every_device_allocator_of_nccls_decides(line):
    v = classify(1, ["[rank0]: ncclUnhandledCudaError: Call to CUDA function failed.", "[rank0]: Last error:", line],
                 steps_seen=5)
    assert v.cls == "cuda_oom", (line, v.cls, v.summary)


def test_nccls_pinned_host_allocation_is_not_a_gpu_oom():
    v = classify(1, ["h1:9:9 [0] include/alloc.h:32 NCCL WARN Failed to CUDA host alloc 4194304 bytes",
                     "RuntimeError: NCCL error: unhandled cuda error"], steps_seen=5)
    assert v.cls == "nccl_error", (v.cls, v.summary)


def test_nccls_allocation_failure_with_another_cuda_error_named_is_not_an_oom():
    # cuMem refused (a driver or container without it): the WARN before the allocator's names why
    v = classify(1, ["h1:9:9 [0] include/alloc.h:290 NCCL WARN Cuda failure 801 'operation not supported'",
                     "h1:9:9 [0] include/alloc.h:324 NCCL WARN Failed to CUDA calloc 6291456 bytes",
                     "RuntimeError: NCCL error: unhandled cuda error"], steps_seen=5)
    assert v.cls == "nccl_error", (v.cls, v.summary)


def test_nccls_allocation_failure_after_a_sticky_fault_is_the_fault():
    v = classify(1, ["h1:9:9 [0] NCCL WARN Cuda failure 'an illegal memory access was encountered'",
                     "h1:9:9 [0] include/alloc.h:324 NCCL WARN Failed to CUDA calloc 6291456 bytes"], steps_seen=5)
    assert v.cls == "cuda_fault", (v.cls, v.summary)


# --- an NCCL timeout told with the collective's name -------------------------------------------------------------

@pytest.mark.parametrize("line", ["We hit an NCCL all-reduce timeout at step 812 on 64 nodes.",
                                  "the job dies with an NCCL `ALLREDUCE` timeout after the first save",
                                  "NCCL AllGather timed out during the weight sync",
                                  "Rank 5 sees an NCCL reduce_scatter time out"])
def test_an_nccl_timeout_told_with_its_collective_is_an_nccl_error(line):
    v = classify(1, ["step 812 loss 1.93", line], steps_seen=812)
    assert v.cls == "nccl_error" and v.recovery == "restart_long_cooldown", (line, v.cls, v.summary)
    assert "as the report tells it" in v.summary


@pytest.mark.parametrize("line", ["set the NCCL broadcast timeout to 3600",
                                  "NCCL ALLTOALL timeout = 1800",
                                  "to avoid an NCCL barrier timeout we sync the ranks first"])
def test_a_collectives_timeout_setting_or_hedge_is_no_timeout(line):
    assert not nccl_timeout_told(line), line
    v = classify(1, [line, *VALUE_ERROR], steps_seen=3)
    assert v.cls == "unknown", (line, v.cls, v.summary)


# --- a DeepEP timeout told in words -----------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["Training stops at the first MoE layer: DeepEP dispatch timed out on rank 12.",
                                  "DeepEP internode combine timeout after the checkpoint load",
                                  "our EP16 run hits DeepEP timeout at step 3"])
def test_a_deepep_timeout_told_in_words_is_an_nccl_error_with_the_ep_hint(line):
    v = classify(1, ["step 3 loss 2.01", line], steps_seen=3)
    assert v.cls == "nccl_error" and v.recovery == "restart_long_cooldown", (line, v.cls, v.summary)
    assert v.summary.startswith("DeepEP (expert-parallel all-to-all) timed out, as the report tells it")
    assert "NVSHMEM" in v.hint


def test_a_deepep_timeout_told_before_a_later_exception_yields_to_it():
    v = classify(1, ["DeepEP dispatch timeout on the first step", *VALUE_ERROR], steps_seen=0)
    assert v.cls == "unknown" and "ValueError" in v.summary, (v.cls, v.summary)


def test_a_deepep_timeout_setting_is_no_timeout():
    assert not nccl_timeout_told("we set the DeepEP dispatch timeout to 300 s")
