"""Batch 57's family (tests/crash/public 1236-1255): cudaErrorLaunchTimeout, a kernel the display watchdog ended
(Windows' WDDM TDR, also under WSL2, or an X server on Linux). cuda.h documents CUDA_ERROR_LAUNCH_TIMEOUT = 702 as
leaving the process in the state of the other faults of ``crash._CUDA_FAULTS`` ("To continue using CUDA, the process
must be terminated and relaunched"), so its text and names are a ``cuda_fault`` restarted with CUDA_LAUNCH_BLOCKING=1,
and the hint names the watchdog. Before batch 57 every form below was ``unknown``; the lines it must not decide on
are the ones below the table's existing limits refuse; the reference shapes they did not (review R54: headings, table
cells, string literals, FAQ questions, comments, changelogs, explainers' causes, CJK definitions) are
tests/crash/test_crash_review_r54.py's, with what is left in docs/crash-classes.md's batch 57 paragraph."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


def _verdict(*lines: str, steps: int = 10):
    return classify(1, list(lines), steps_seen=steps)


# --- the fault, in the forms the runtimes print it -------------------------------------------------------------------


@pytest.mark.parametrize("lines", [
    # torch's raised message (c10/cuda/CUDAException.cpp: "CUDA error: " + cudaGetErrorString), kohya's LoRA run
    ["RuntimeError: CUDA error: the launch timed out and was terminated",
     "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
     "incorrect.",
     "For debugging consider passing CUDA_LAUNCH_BLOCKING=1."],
    # c10's terminate of the same error, alone
    ["terminate called after throwing an instance of 'c10::Error'",
     "  what():  CUDA error: the launch timed out and was terminated"],
    # torch 1.x's THC check with the runtime's number
    ["THCudaCheck FAIL file=/opt/conda/aten/src/THC/THCCachingHostAllocator.cpp line=278 error=702 : "
     "the launch timed out and was terminated"],
    # TensorFlow's stream executor: the driver API's name and text
    ["2018-11-06 11:32:27.452268: E tensorflow/stream_executor/cuda/cuda_event.cc:48] Error polling for event status: "
     "failed to query event: CUDA_ERROR_LAUNCH_TIMEOUT: the launch timed out and was terminated"],
    # numba and cuda-python: the name alone after an error's words
    ["numba.cuda.cudadrv.driver.CudaAPIError: [702] Call to cuCtxSynchronize results in CUDA_ERROR_LAUNCH_TIMEOUT"],
    ["RuntimeError: cudaErrorLaunchTimeout: the launch timed out and was terminated"],
    # an issue title with the runtime's words after its prefix (1242)
    ["CUDA error: the launch timed out and was terminated", "", "     Epoch   gpu_mem       box       obj"],
    # PhysX's CUDA error by its number (crash.physx_cuda_fault reads the table's numbers)
    ["PhysX Internal CUDA error. Simulation can not continue! Error code 702!"],
])
def test_a_launch_timeout_is_a_cuda_fault_restarted_with_launch_blocking(lines):
    v = _verdict(*lines, steps=3)
    assert v.cls == "cuda_fault", v.summary
    assert "the launch timed out and was terminated" in v.summary
    assert v.recovery == "restart_launch_blocking"
    assert v.env == {"CUDA_LAUNCH_BLOCKING": "1"}
    # the hint names the display watchdog and its way out (TCC or the host's TdrDelay: TDR holds on every WDDM GPU),
    # not the hardware (review R54)
    assert "display watchdog" in v.hint and "TdrDelay" in v.hint and "TCC" in v.hint
    assert "point at the hardware" not in v.hint and "no display attached" not in v.hint


def test_the_watchdog_hint_is_the_launch_timeouts_only():
    v = _verdict("RuntimeError: CUDA error: an illegal memory access was encountered")
    assert v.cls == "cuda_fault"
    assert "watchdog" not in v.hint and "TdrDelay" not in v.hint


def test_a_wsl2_report_quoting_the_raised_message_is_the_fault():
    # 1238: the reporter quotes torch's line in a sentence, then tells that CUDA_LAUNCH_BLOCKING=1 got the run
    # through: the class's own recovery
    v = _verdict("I am running casanovo using an older GPU on Windows 10 Pro (under WSL2 & Docker) and was "
                 "encountering this error: `RuntimeError: CUDA error: the launch timed out and was terminated`")
    assert v.cls == "cuda_fault"
    assert v.recovery == "restart_launch_blocking"


# --- lines it must not decide on ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    # a definition: cuda.h's enum, a #define, a table of codes
    "    CUDA_ERROR_LAUNCH_TIMEOUT                 = 702,",
    "#define CUDA_ERROR_LAUNCH_TIMEOUT 702",
    # advice and a possibility: a comment, a warning that it may happen
    '# TdrDelay: raise it if you see "the launch timed out and was terminated"',
    "WARNING: a long kernel may trigger the launch timed out and was terminated error on a display GPU",
    # a fix in a changelog
    "Fixed: CUDA error: the launch timed out and was terminated on Windows laptops (#4851)",
    # an explainer's definition after the name
    "cudaErrorLaunchTimeout means the kernel ran past the display watchdog",
    "CUDA_ERROR_LAUNCH_TIMEOUT usually means a kernel ran longer than the TDR limit",
    # a setting's quoted value under a matcher's key
    'retry_on: "CUDA error: the launch timed out and was terminated"',
    '  "pattern": "the launch timed out and was terminated",',
    # Chinese prose with a condition and advice around the words
    "如果出现 the launch timed out and was terminated，可以调大 TdrDelay",
    # the explainers collected beside the family (1244, 1245): Windows' message and the TDR's name, no runtime's line
    "Display driver nvlddmkm stopped responding and has successfully recovered.",
    "You may have tripped the timeout detection and recovery (TDR) process, or the watchdog timer.",
    # another launch error of cuda.h that is no fault of this table: the launch's configuration (batch 44's choice)
    "RuntimeError: CUDA error: too many resources requested for launch",
])
def test_lines_that_only_name_the_timeout_decide_nothing(line):
    v = _verdict(line)
    assert v.cls == "unknown", (line, v.summary)
