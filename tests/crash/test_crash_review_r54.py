"""Review R54's findings on batch 57 (cudaErrorLaunchTimeout, 702, in the fault table), mended:

1. A fault's words that stand only as an item of a list or a quote in prose (a handbook's "caused by VRAM pressure
   (CUDNN_STATUS_NOT_INITIALIZED, CUDA error: ...)", a retry list a program logs, a retry setting's value, a
   warning's "can fail with '...'") yield to a real OOM (crash.fault_listed); a line that names one fault twice (an
   error guide's row of the fault's forms, its title glued to its first sentence) lists the fault's forms and
   decides nothing (crash._fault_forms_listed). The program's own lines still decide, both before and after an OOM.
3. The launch timeout's hint names the display watchdog and its way out (TCC or the host's TdrDelay; no X server's
   GPU on Linux), not the hardware, and so does policy.repeated_crash's pause for two at one step.
"""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import CrashVerdict, classify, error_identity
from moeconsole.runner.core.policy import AttemptRecord, repeated_crash

OOM = ["Traceback (most recent call last):", '  File "train.py", line 10, in <module>', "    loss.backward()",
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "23.64 GiB of which 1.02 GiB is free."]
TIMEOUT = "the launch timed out and was terminated"
ILLEGAL = "an illegal memory access was encountered"


def _verdict(*lines: str, steps: int = 10) -> CrashVerdict:
    return classify(1, list(lines), steps_seen=steps)


@pytest.mark.parametrize("fault", [TIMEOUT, ILLEGAL])
@pytest.mark.parametrize("listed", [
    # the handbook's shape (batch 57's 1247): a parenthesised list in a "caused by" sentence
    "OOM-adjacent recovery: some allocations fail with errors that aren't strictly OutOfMemoryError but are caused "
    "by VRAM pressure (CUDNN_STATUS_NOT_INITIALIZED, CUDA error: {f}).",
    "2026-01-01 12:00:00 INFO  recovery: OOM-adjacent errors retried: CUDNN_STATUS_NOT_INITIALIZED, CUDA error: {f}",
    "retry_on_errors: ['CUDA error: {f}', 'NCCL timeout']",
    "  retryable_errors = ('CUDA error: {f}', 'CUDA error: out of memory')",
    "UserWarning: GPU 0 has a kernel execution timeout (Windows TDR): long kernels can fail with 'CUDA error: {f}'.",
])
def test_a_fault_listed_in_prose_or_a_setting_yields_to_the_oom(listed, fault):
    v = _verdict(listed.format(f=fault), *OOM)
    assert v.cls == "cuda_oom", v.summary
    assert v.recovery != "restart_launch_blocking"
    # the OOM above the list too
    assert _verdict(*OOM, listed.format(f=fault)).cls == "cuda_oom"


@pytest.mark.parametrize("fault", [TIMEOUT, ILLEGAL])
@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: {f}",
    "torch.AcceleratorError: CUDA error: {f}",
    "Cuda failure '{f}'",                                   # NCCL's line (Last error:)
    "misc/nvmlwrap.cc:1 NCCL WARN Cuda failure 700 '{f}'",
    "thrust::system::system_error: parallel_for failed: cudaErrorX: {f}",
    "F0101 12:00:00.000 syncedmem.cpp:71] Check failed: error == cudaSuccess (702 vs. 0)  {f}",
    "CUDA error: {f}\n  current device: 0, in function ggml_backend_cuda_synchronize at ggml-cuda.cu:2436",
])
def test_the_programs_own_fault_line_still_outranks_an_oom(line, fault):
    text = line.format(f=fault).replace("cudaErrorX", "cudaErrorLaunchTimeout" if fault == TIMEOUT
                                        else "cudaErrorIllegalAddress")
    for lines in ([*text.split("\n"), *OOM], [*OOM, *text.split("\n")]):
        v = _verdict(*lines)
        assert v.cls == "cuda_fault", (lines, v.summary)
        assert v.recovery == "restart_launch_blocking"


@pytest.mark.parametrize("line", [
    # batch 57's 1243: an error guide's row of the fault's forms, and its title glued to its first sentence
    "CUDA error: the launch timed out and was terminated cudaErrorLaunchTimeout: the launch timed out and was "
    "terminated CUDA_ERROR_LAUNCH_TIMEOUT Display driver stopped responding and has recovered (TDR)",
    "cudaErrorLaunchTimeout (702)cudaErrorLaunchTimeout (error code 702) occurs when a CUDA kernel runs longer than "
    "the operating system's watchdog timer allows.",
    "CUDA error: an illegal memory access was encountered cudaErrorIllegalAddress: an illegal memory access was "
    "encountered CUDA_ERROR_ILLEGAL_ADDRESS",
    "cudaErrorIllegalAddress (700)cudaErrorIllegalAddress (error code 700) occurs when a kernel reads a bad pointer.",
])
def test_a_line_of_one_faults_forms_in_a_row_decides_nothing(line):
    v = _verdict(line)
    assert v.cls == "unknown", v.summary


@pytest.mark.parametrize("line", [
    "cupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_LAUNCH_TIMEOUT: the launch timed out and was terminated",
    "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorLaunchTimeout: the launch timed out and was terminated",
    "CUDA error at helper_cuda.h:779 code=702(cudaErrorLaunchTimeout) \"cudaDeviceSynchronize()\"",
    "numba.cuda.cudadrv.driver.CudaAPIError: [702] Call to cuMemcpyDtoH results in CUDA_ERROR_LAUNCH_TIMEOUT",
    "RuntimeError: CUDA error: (<CUresult.CUDA_ERROR_LAUNCH_TIMEOUT: 702>,)",
    # two different faults on a line are no row of one fault's forms
    "cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorIllegalAddress (after cudaErrorLaunchTimeout)",
])
def test_a_programs_line_naming_the_fault_once_still_decides(line):
    v = _verdict(line)
    assert v.cls == "cuda_fault", v.summary


def test_the_batch57_pages_read_as_relabelled():
    """1243 (an error guide) is `unknown`; 1247 (a handbook) is its Symptom line's OOM, not the listed fault."""
    guide = ["CUDA error: the launch timed out and was terminated cudaErrorLaunchTimeout: the launch timed out and "
             "was terminated CUDA_ERROR_LAUNCH_TIMEOUT Display driver stopped responding and has recovered (TDR)",
             "Modify Windows registry to allow longer kernel execution."]
    assert _verdict(*guide).cls == "unknown"
    handbook = ["Symptom: RUNTIME_GPU_OOM, or PyTorch's raw torch.cuda.OutOfMemoryError: CUDA out of memory. Tried "
                "to allocate <N> MiB...",
                "OOM-adjacent recovery (BACKEND-B-003): some allocations fail with errors that aren't strictly "
                "OutOfMemoryError but are caused by VRAM pressure (CUDNN status CUDNN_STATUS_NOT_INITIALIZED, CUDA "
                "error: an illegal memory access was encountered)."]
    assert _verdict(*handbook).cls == "cuda_oom"


LAUNCH_TIMEOUT_TAIL = ['  File "train.py", line 88, in <module>', "    loss.item()",
                       "RuntimeError: CUDA error: the launch timed out and was terminated"]


def test_the_launch_timeouts_hint_names_the_watchdogs_way_out_not_the_hardware():
    v = _verdict(*LAUNCH_TIMEOUT_TAIL)
    assert v.cls == "cuda_fault" and v.env == {"CUDA_LAUNCH_BLOCKING": "1"}
    assert "hardware" not in v.hint.replace("not a hardware fault", "")
    assert "TCC" in v.hint and "TdrDelay" in v.hint and "X server" in v.hint
    # another fault keeps its hint
    other = _verdict("RuntimeError: CUDA error: an illegal memory access was encountered")
    assert "point at the hardware" in other.hint and "TdrDelay" not in other.hint


def _attempt(n: int, v: CrashVerdict) -> AttemptRecord:
    start = 10_000.0 + n * 10_000.0
    return AttemptRecord(attempt=n, started_at=start, ended_at=start + 3600.0, resumed_step=None, last_step=120,
                         crash_class=v.cls, memory_verdict=None, ran_s=3600.0, signature=error_identity(v),
                         resumed_from="/data/run/output/checkpoint-100",
                         resume_next="/data/run/output/checkpoint-100", gpus=1)


def test_two_launch_timeouts_at_one_step_pause_naming_the_watchdog():
    v = _verdict(*LAUNCH_TIMEOUT_TAIL)
    reason = repeated_crash(v, [_attempt(1, v), _attempt(2, v)])
    assert reason is not None and reason.startswith("paused: the same crash twice at step 120")
    assert "display watchdog" in reason and "TdrDelay" in reason
    assert "point at the hardware" not in reason


# 2. The faults' shared guard refuses a reference's shapes (crash._fault_in_reference, _TOLD_EXPLAINED_AFTER), for
# 700 as for 702; the forms {name} (runtime), {drv} (driver) and {text} (cudaGetErrorString) and {code}
REFERENCE_SHAPES = [
    '**Q: I get "{text}" error when I run big images',                        # CERN/TIGRE Frontispiece/FAQ.md
    "    # (the {text_bare}) on GPU card not",                                 # a Theano test's comment
    '    // {name}: the display watchdog killed the kernel',
    'describe LaunchTimeout               = "{text}"',                         # a Haskell binding's string table
    "| {code} | {name} | {text} |",
    "| `{name}` | {code} | Kernel exceeded the watchdog timeout (TDR) |",
    '    case {name}:\n      return "{name}";',                                # cuda-samples' helper_cuda.h
    "RETRYABLE_CUDA_ERRORS={name},cudaErrorLaunchFailure",
    "- Handle {drv} on Windows display GPUs (#1234)",
    "v0.4.1: Catch {name} and retry with smaller chunks",
    "- Added a warning when the GPU has a kernel timeout ({name})",
    "A common cause of {drv} is a display attached to the training GPU.",
    '"{text}" means the Windows watchdog killed your kernel.',
    "{name} (error code {code}) occurs when a kernel runs longer than the watchdog allows.",
    "This error ({drv}) is raised when the display watchdog kills a long-running kernel.",
    "错误代码 {code} ({name}) 表示内核执行时间超过了 Windows 的 TDR 限制。",
    "“{text}”这个错误一般是由于 TDR 导致的，可以修改注册表中的 TdrDelay。",
    "{name} ({code}) は、カーネルの実行時間が長すぎる場合に発生します。",
    "## {drv}",
    "### {name} ({code})",
]
FORMS = {
    702: dict(name="cudaErrorLaunchTimeout", drv="CUDA_ERROR_LAUNCH_TIMEOUT", text=TIMEOUT, code="702"),
    700: dict(name="cudaErrorIllegalAddress", drv="CUDA_ERROR_ILLEGAL_ADDRESS", text=ILLEGAL, code="700"),
}


@pytest.mark.parametrize("code", [702, 700])
@pytest.mark.parametrize("shape", REFERENCE_SHAPES)
def test_a_faults_words_in_a_reference_decide_nothing(shape, code):
    forms = FORMS[code]
    text = shape.format(text_bare=forms["text"], **forms)
    v = _verdict(*text.split("\n"))
    assert v.cls == "unknown", (text, v.summary)
    # ... and a program's OOM after them is the run's
    assert _verdict(*text.split("\n"), *OOM).cls == "cuda_oom"


# every first-hand form review R54 found sound still decides (the programs' own lines, cited in its report)
FIRST_HAND = [
    "torch.AcceleratorError: CUDA error: the launch timed out and was terminated",
    "RuntimeError: cuda runtime error (6) : the launch timed out and was terminated at /pytorch/aten/src/THC/generic/"
    "THCStorage.cpp:36",
    "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=405 error=6 : the launch timed out and was "
    "terminated",
    "cupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_LAUNCH_TIMEOUT: the launch timed out and was terminated",
    "cupy.cuda.runtime.CUDARuntimeError: cudaErrorLaunchTimeout",
    "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: run time error: custom "
    "call 'xla.gpu.func.launch' failed: CUDA_ERROR_LAUNCH_TIMEOUT: the launch timed out and was terminated.",
    "E tensorflow/stream_executor/cuda/cuda_driver.cc:1140] could not synchronize on CUDA context: "
    "CUDA_ERROR_LAUNCH_TIMEOUT :: No stack trace available",
    "2023-05-01 [E:onnxruntime:Default, cuda_call.cc:116 CudaCall] CUDA failure 702: the launch timed out and was "
    "terminated ; GPU=0 ; hostname=PC ; expr=cudaDeviceSynchronize();",
    "RuntimeError: Triton Error [CUDA]: the launch timed out and was terminated",
    "mxnet.base.MXNetError: [12:00:00] src/storage/./pooled_storage_manager.h:151: cudaMalloc failed: the launch "
    "timed out and was terminated",
    "Warp CUDA error 702: the launch timed out and was terminated (in function wp_cuda_context_synchronize, "
    "C:\\warp\\native\\warp.cu:2418)",
    "numba.cuda.cudadrv.driver.CudaAPIError: [6] Call to cuMemcpyDtoH results in CUDA_ERROR_LAUNCH_TIMEOUT",
    "Cuda failure 'the launch timed out and was terminated'",
    "Error: llama runner process has terminated: CUDA error: the launch timed out and was terminated",
    "RuntimeError: copy_if failed to synchronize: the launch timed out and was terminated",
    "LaunchError: cuStreamSynchronize failed: the launch timed out and was terminated",
    "SystemError: CUDA_ERROR_LAUNCH_TIMEOUT",
    "PhysX Internal CUDA error. Simulation can not continue! Error code 702!",
    "RuntimeError: HIP error: the launch timed out and was terminated",
    "[12345.678] NVRM: Xid (PCI:0000:01:00): 8, pid=2345, name=python, Channel 00000010\nRuntimeError: CUDA error: "
    "the launch timed out and was terminated",
    "训练到第3个epoch的时候报错了：RuntimeError: CUDA error: the launch timed out and was terminated，请问怎么解决？",
    "跑了一会儿就报 the launch timed out and was terminated 错误，显卡是3060，接着显示器",
    "After ~2 hours of training the job dies with CUDA_ERROR_LAUNCH_TIMEOUT on my laptop.",
    "Getting 'CUDA error: the launch timed out and was terminated' during training",
    "Nvidia thread #0 failed with error <cryptonight_extra_cpu_final>:440 \"the launch timed out and was terminated\"",
]


@pytest.mark.parametrize("text", FIRST_HAND)
def test_every_first_hand_launch_timeout_still_decides(text):
    v = _verdict(*text.split("\n"))
    assert v.cls == "cuda_fault", v.summary
    assert v.recovery == "restart_launch_blocking"


# 4. pycuda's own words before CUDA 6.0 (src/cpp/cuda.hpp's curesult_to_str, raised as LaunchError by
# src/wrapper/wrap_cudadrv.cpp) and HIP's name for 702 (hip_runtime_api.h's hipErrorLaunchTimeOut)
@pytest.mark.parametrize(("line", "words", "env"), [
    ("pycuda._driver.LaunchError: cuCtxSynchronize failed: launch timeout", TIMEOUT, {"CUDA_LAUNCH_BLOCKING": "1"}),
    ("LaunchError: cuMemcpyDtoH failed: launch timeout - kernel ran too long", TIMEOUT, {"CUDA_LAUNCH_BLOCKING": "1"}),
    ("pycuda._driver.LaunchError: cuCtxSynchronize failed: launch failed", "unspecified launch failure",
     {"CUDA_LAUNCH_BLOCKING": "1"}),
    ("hipErrorLaunchTimeOut", TIMEOUT, {"AMD_SERIALIZE_KERNEL": "3"}),
    ("RuntimeError: hip error: hipErrorLaunchTimeOut at /src/foo.cpp:12", TIMEOUT, {"AMD_SERIALIZE_KERNEL": "3"}),
])
def test_pycudas_and_hips_own_words_are_the_fault(line, words, env):
    v = _verdict(line)
    assert v.cls == "cuda_fault", v.summary
    assert words in v.summary and v.env == env
    if words == TIMEOUT:
        assert "watchdog" in v.hint and "point at the hardware" not in v.hint
        # NVIDIA's TCC and X options are no way out on an AMD GPU
        assert ("nvidia-smi" in v.hint) == ("CUDA_LAUNCH_BLOCKING" in env)


@pytest.mark.parametrize("line", [
    "pycuda._driver.LogicError: cuMemcpyDtoH failed: launch timeout",      # not the LaunchError pycuda raises it as
    "Our kernel hit a launch timeout on the laptop",
    "pycuda._driver.LaunchError: cuLaunchKernel failed: launch out of resources",   # no fault (701)
    "    hipErrorLaunchTimeOut            = 702 ## Timeout for the launch.",        # hip's enum
    "#define cudaErrorLaunchTimeout hipErrorLaunchTimeOut",
])
def test_launch_timeout_words_elsewhere_decide_nothing(line):
    assert _verdict(line).cls == "unknown"
