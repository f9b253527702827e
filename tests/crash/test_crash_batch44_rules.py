"""Batch 44's rules (docs/crash-classes.md, "Public crash texts"), each on a variant the batch's texts did not show:
a GPU gone from the bus as a person retells it (cuda_fault, needs a reset), an OOM's words as items of a list of
quoted patterns (no OOM), NVIDIA PhysX's own out-of-GPU-memory words (cuda_oom). Each rule also gets the lines its
words must not decide on: advice, a changelog, help text, a start-up line, a setting."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify, gpu_gone_told, oom_stated

# --- a GPU gone from the bus, retold ----------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    # another verb and the PCIe bus named
    "Three days in, one of the H100s dropped off the PCIe bus and the whole job died.",
    # the driver's words with the article dropped, a GPU index before them, the Xid after
    "GPU 5 has fallen off bus again (XID 79), second time this week",
])
def test_a_gpu_gone_from_the_bus_retold_needs_a_reset(line):
    v = classify(1, [line], steps_seen=1200)
    assert v.cls == "cuda_fault" and not v.retryable and v.recovery == "fail", (line, v.cls, v.summary)
    assert "fallen off the bus" in v.summary and "reset" in v.hint


@pytest.mark.parametrize("line", [
    # advice (a possibility)
    "If a GPU fell off bus, the watchdog aborts the job after 10 minutes.",
    # a changelog
    "- Fixed monitor crash when a GPU dropped off the bus (#212)",
    # a monitor's own start-up line
    "[INFO] gpu-health: started; drains the node once a GPU dropped off the PCIe bus",
    # an option's help text
    "  --drain-on-bus-loss   drain the node after a GPU fell off bus (default: on)",
    # the present: a general statement, no loss that happened
    "When a GPU falls off the bus, only a reset brings it back.",
])
def test_advice_changelogs_start_up_lines_and_help_text_naming_the_loss_are_no_fault(line):
    assert not gpu_gone_told(line), line
    v = classify(1, [line], steps_seen=1200)
    assert v.cls != "cuda_fault", (line, v.cls, v.summary)


# --- an OOM's words as items of a list of quoted patterns -------------------------------------------------------

@pytest.mark.parametrize("line", [
    # a retry setting as a trainer's config dump prints it
    'retry_on_errors: ["CUDA out of memory", "CUBLAS_STATUS_ALLOC_FAILED"]',
    # a JSON setting: the key is no item, the list's two strings are
    '  "oom_patterns": ["OutOfMemoryError", "CUDA error: out of memory"],',
    # code that holds the strings it looks for (accelerate's should_reduce_batch_size), in backquotes in a comment
    "We match `CUDA out of memory.`, `HIP out of memory.` and `XPU out of memory` before halving the batch.",
])
def test_oom_words_listed_as_quoted_patterns_are_no_oom(line):
    assert not oom_stated(line), line
    v = classify(1, [line], steps_seen=300)
    assert v.cls != "cuda_oom", (line, v.cls, v.summary)


@pytest.mark.parametrize("line", [
    # torch elastic's error file: "message" is a key, its value one message
    '{"message": {"message": "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", '
    '"extraInfo": {"py_callstack": "Traceback", "timestamp": "1764500000"}}}',
    # an exception's repr, one string
    "RuntimeError('CUDA error: out of memory')",
    # a quoted OOM in a report, the next quote not a list
    "I got 'CUDA out of memory' at step 300, then 'NCCL watchdog' lines from the other ranks.",
    # messages gathered from the ranks: they name sizes, so they happened
    "errors: ['CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0)', "
    "'CUDA out of memory. Tried to allocate 20.00 MiB (GPU 1)']",
])
def test_an_oom_quoted_alone_or_with_its_sizes_is_still_an_oom(line):
    assert oom_stated(line), line
    v = classify(1, [line], steps_seen=300)
    assert v.cls == "cuda_oom", (line, v.cls, v.summary)


# --- NVIDIA PhysX out of GPU memory -----------------------------------------------------------------------------

@pytest.mark.parametrize("lines", [
    # the device allocator's line as omni.physx logs it (PhysXErrorCallback: "PhysX error: %s, FILE %s, LINE %d"),
    # the driver's out of memory as its result
    ["2026-03-02 10:14:51 [Error] [omni.physx.plugin] PhysX error: PxgCudaDeviceMemoryAllocator failed to allocate "
     "memory 1073741824 bytes! Result = 2, FILE /builds/omniverse/physics/physx/source/gpucommon/src/"
     "PxgCudaMemoryAllocator.cpp, LINE 140"],
    # an application's device allocator refusing, then the scene's abort, through the SDK's default callback
    ["physx/source/gpucommon/src/PxgCudaMemoryAllocator.cpp (120) : out of memory : PxDeviceAllocatorCallback failed "
     "to allocate memory 268435456 bytes!",
     "physx/source/physx/src/NpScene.cpp (3005) : abort : PhysX failed to allocate GPU memory - aborting simulation."],
])
def test_physx_out_of_gpu_memory_is_an_oom(lines):
    v = classify(1, lines, steps_seen=40)
    assert v.cls == "cuda_oom", (v.cls, v.summary)


@pytest.mark.parametrize("line", [
    # another CUresult: a fault PhysX met, not an OOM
    "PhysX error: PxgCudaDeviceMemoryAllocator failed to allocate memory 4096 bytes! Result = 700, FILE "
    "PxgCudaMemoryAllocator.cpp, LINE 140",
    # pinned host memory over its configured capacity: a setting to raise, not the GPU's memory
    "PhysX error: PxgPinnedHostLinearMemoryAllocator: overflowing initial allocation size, increase capacity to "
    "at least 1048576, FILE PxgCudaMemoryAllocator.cpp, LINE 228",
    # advice in a FAQ, a changelog
    "If PhysX failed to allocate GPU memory, lower num_envs or the GPU buffer capacities.",
    "- Fixed: PhysX failed to allocate GPU memory - aborting simulation. when cloning 8192 envs (#311)",
])
def test_physx_advice_settings_and_other_results_are_no_oom(line):
    v = classify(1, [line], steps_seen=40)
    assert v.cls != "cuda_oom", (line, v.cls, v.summary)


def test_a_list_of_patterns_spread_over_lines_as_code_holds_it_is_no_oom():
    # accelerate's utils/memory.py should_reduce_batch_size, pasted from its source: one item a line, a comment after
    lines = ["    _statements = [",
             '        "CUDA out of memory.",  # CUDA OOM',
             '        "cuDNN error: CUDNN_STATUS_NOT_SUPPORTED.",  # CUDNN SNAFU',
             "    ]"]
    assert not oom_stated(lines[1], list_above=[])     # below the line that opened the list
    v = classify(1, lines, steps_seen=300)
    assert v.cls != "cuda_oom", (v.cls, v.summary)
    # a JSON array of messages that happened (sizes in them) is still an OOM
    assert oom_stated('  "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",')
