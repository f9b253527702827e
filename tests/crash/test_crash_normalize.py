"""Crash texts as users paste them (wrapped, on one line, behind the environment's prefixes, without
the traceback header) and the crash families of other frameworks' own words: each read by
``classify``, which normalises the text first (``normalize_crash_text``)."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify, normalize_crash_text

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
       "79.19 GiB of which 120.00 MiB is free.")


# --- wraps, one-liners, prefixes ---------------------------------------------------------

@pytest.mark.parametrize("tail, cls", [
    # a terminal wrapping at its width cuts mid-word
    (["RuntimeError: CUDA out of mem", "ory. Tried to allocate 2.00 GiB"], "cuda_oom"),
    # an editor or a web form wrapping at a space drops the space
    (["RuntimeError: CUDA error: an illegal memory access was", "encountered"], "cuda_fault"),
    (["[rank1]:[E ProcessGroupNCCL.cpp:1423] [PG 0 Rank 1] ProcessGroupNCCL's watchdog got", "stuck for 480 seconds "
      "without making progress in monitoring enqueued collectives."], "nccl_error"),
    (["ModuleNotFoundError: No module named 'flash_", "attn'"], "missing_dependency"),
    (["NVRM: GPU 0000:81:00.0: GPU has fallen off the", "bus."], "cuda_fault"),
])
def test_a_deciding_phrase_split_by_a_wrap_is_rejoined(tail, cls):
    v = classify(1, ["step 10 loss 1.0", *tail], steps_seen=10)
    assert v.cls == cls, v


def test_rejoined_module_name_reaches_the_summary():
    v = classify(1, ["ModuleNotFoundError: No module named 'flash_", "attn'"], steps_seen=0)
    assert "'flash_attn'" in v.summary


def test_a_traceback_pasted_on_one_line_is_split_at_its_frames():
    one = ('Traceback (most recent call last): File "/w/train.py", line 10, in <module> main() '
           'File "/w/train.py", line 5, in main raise torch.OutOfMemoryError("x") ' + OOM)
    v = classify(1, [one], steps_seen=10)
    assert v.cls == "cuda_oom" and "tried to allocate 2.00 GiB" in v.summary
    lines = normalize_crash_text([one])
    assert lines[0] == "Traceback (most recent call last):"
    assert '  File "/w/train.py", line 5, in main' in lines
    assert lines[-1] == OOM
    # the frame's quoted source is indented below its frame, so it is never evidence
    assert not any("raise torch" in e for e in v.evidence)


def test_a_one_line_dependency_traceback_names_the_module():
    one = ('Traceback (most recent call last):   File "/opt/venv/lib/python3.11/site-packages/swift/cli/sft.py", '
           "line 1, in <module>     import deepspeed ModuleNotFoundError: No module named 'deepspeed'")
    v = classify(1, [one], steps_seen=0)
    assert v.cls == "missing_dependency" and "'deepspeed'" in v.summary and "/opt/venv/bin/python3.11" in v.summary


def test_a_rank_prefixed_traceback_joined_on_one_line():
    one = ("[rank0]: Traceback (most recent call last): [rank0]:   File \"t.py\", line 3, in <module> [rank0]:     "
           "import megatron.core [rank0]: ModuleNotFoundError: No module named 'megatron'")
    v = classify(1, [one], steps_seen=0)
    assert v.cls == "missing_dependency" and "'megatron'" in v.summary


@pytest.mark.parametrize("prefix", [
    "2024-05-01 12:00:03,123 ", "[2024-05-01 12:00:03] ", "2024-05-01T12:00:03.123456Z ", "12:00:03 ",
    "Wed Sep 20 19:33:32 2017[1,9]<stderr>:", "(RayTrainWorker pid=2994774, ip=10.0.0.7) ",
    "E0724 19:33:34.565000 128818126430656 torch/distributed/elastic/multiprocessing/api.py:702] ",
    "2024-05-01 12:00:03 | ", "stderr: ", "0: [rank3]: 2024-05-01 12:00:03,123 ",
])
def test_constant_prefixes_are_stripped_before_reading(prefix):
    tail = [prefix + "Traceback (most recent call last):",
            prefix + '  File "/opt/venv/lib/python3.11/site-packages/trainer.py", line 3, in <module>',
            prefix + "    import flash_attn",
            prefix + "ModuleNotFoundError: No module named 'flash_attn'"]
    v = classify(1, tail, steps_seen=0)
    assert v.cls == "missing_dependency" and "'flash_attn'" in v.summary, (prefix, v)


def test_pdsh_host_labels_of_a_multi_node_deepspeed_run_are_stripped():
    tail = ["worker-1: [2024-05-01 12:00:03,123] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 4242",
            "worker-1: Traceback (most recent call last):",
            'worker-1:   File "/opt/venv/lib/python3.10/site-packages/deepspeed/__init__.py", line 3, in <module>',
            "worker-1:     import triton",
            "worker-1: ModuleNotFoundError: No module named 'triton'"]
    v = classify(1, tail, steps_seen=0)
    assert v.cls == "missing_dependency" and "'triton'" in v.summary
    # an exception name starting several lines is never taken for a host label
    lines = normalize_crash_text(["RuntimeError: a", "RuntimeError: b", "RuntimeError: c"])
    assert lines == ["RuntimeError: a", "RuntimeError: b", "RuntimeError: c"]


def test_an_import_error_without_a_traceback_header_is_missing_dependency():
    v = classify(1, ["step 3 loss 2.0", "ModuleNotFoundError: No module named 'deepspeed'"], steps_seen=3)
    assert v.cls == "missing_dependency" and "'deepspeed'" in v.summary
    # ... but not when it was only logged and something else ended the run afterwards
    v = classify(1, ["ImportError: apex is not installed, falling back", "KeyError: 'labels'"], steps_seen=3)
    assert v.cls == "unknown"


# --- families -------------------------------------------------------------------------------

@pytest.mark.parametrize("tail, cls", [
    # absl's failure signal handler (absl/debugging/failure_signal_handler.cc)
    (["*** SIGSEGV received at time=1745480384 on cpu 3 ***",
      "PC: @     0x74419eb385de  (unknown)  ray::gcs::TaskInfoAccessor::AsyncAddTaskEventData()"], "segfault"),
    # glog's (src/signalhandler.cc)
    (['*** Aborted at 1563442069 (unix time) try "date -d @1563442069" if you are using GNU date ***',
      "PC: @     0x7f06fd1b120d (unknown)",
      "*** SIGSEGV (@0x0) received by PID 457 (TID 0x7f070ab6f100) from PID 0; stack trace: ***"], "segfault"),
    (["*** SIGBUS (@0x7f0000) received by PID 9 (TID 0x7f) from PID 0; stack trace: ***"], "bus_error"),
    # a CHECK whose message names the cause
    (["2023-04-23 20:35:34.618070: F external/xla/xla/pjrt/gpu/se_gpu_pjrt_client.cc:962] Check failed: ok "
      "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8589934592 bytes.",
      "*** Check failure stack trace: ***"], "cuda_oom"),
])
def test_glog_and_absl_fatal_blocks(tail, cls):
    assert classify(1, tail, steps_seen=10).cls == cls


def test_a_glog_check_failure_names_the_check_in_the_summary():
    tail = ["F0531 07:47:31.003927   10044 xla.cc:227] Check failed: stream_device != nullptr (0 vs. nullptr)",
            "*** Check failure stack trace: ***", "    @     0x7f2950042d4f  google::LogMessage::Fail()"]
    v = classify(1, tail, steps_seen=10)
    assert v.cls == "unknown" and "Check failed: stream_device != nullptr" in v.summary


@pytest.mark.parametrize("line", [
    "/pytorch/aten/src/ATen/native/hip/Indexing.hip:1292: indexSelectLargeIndex: Device-side assertion "
    "`srcIndex < srcSelectDimSize' failed.",
    "../aten/src/ATen/native/cuda/Indexing.cu:1236: indexSelectSmallIndex: block: [5,0,0], thread: [6,0,0] "
    "Assertion `srcIndex < srcSelectDimSize` failed.",
    # two threads' lines interleaved into one
    "../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: "
    "[5,0,0] Assertion `t >= 0 && t < n_classes` fai../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_"
    "reduce_cuda_kernel_2d: block: [0,0,0], thread: [6,0,0] Assertion `t >= 0 && t < n_classes` failed.led.",
    "Memory access fault by GPU node-2 (Agent handle: 0x55d1c8f0) on address 0x7f2a3c000000. Reason: Page not present "
    "or supervisor privilege.",
])
def test_kernel_assertions_and_rocm_faults_alone_are_a_cuda_fault(line):
    v = classify(134, [line] * 3, steps_seen=10)
    # the restart serializes the kernels of the runtime that faulted: HIP's own switch on ROCm
    rocm = ".hip:" in line or "Memory access fault by GPU node" in line
    assert v.cls == "cuda_fault" and v.env == ({"AMD_SERIALIZE_KERNEL": "3"} if rocm else {"CUDA_LAUNCH_BLOCKING": "1"})


def test_a_kernel_assertion_is_named_in_the_summary():
    v = classify(1, ["../aten/src/ATen/native/cuda/Indexing.cu:1236: indexSelectSmallIndex: block: [5,0,0], "
                     "thread: [6,0,0] Assertion `srcIndex < srcSelectDimSize` failed."], steps_seen=10)
    assert "device-side assertion failed" in v.summary and "srcIndex < srcSelectDimSize" in v.summary


@pytest.mark.parametrize("line", [
    "[E ProcessGroupNCCL.cpp:737] [Rank 1] NCCL watchdog ...... timed out after 1800000 ms",
    "[E ProcessGroupNCCL.cpp:1250] ...... NCCL communicator encountered error ...... aborted",
    "RuntimeError: NCCL Error 2: unhandled system error",
    "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: external/xla/xla/service/gpu/nccl_utils.cc:297: NCCL operation "
    "ncclCommInitRank(&comm, nranks, id, rank) failed: unhandled cuda error",
])
def test_nccl_errors_shortened_or_old_or_from_xla(line):
    assert classify(1, ["step 5 loss 1.0", line], steps_seen=5).cls == "nccl_error"
    # NCCL's INFO/WARN debug lines, shortened too, never decide
    debug = "node-0:2874:7128 [3] NCCL INFO transport/p2p.cc:302 ...... -> 3 failed"
    assert classify(1, [debug, "KeyError: 'x'"], steps_seen=5).cls == "unknown"


@pytest.mark.parametrize("tail", [
    ["RuntimeError: Failed to import transformers.models.bloom.modeling_bloom because of the following error "
     "(look up to see its traceback):",
     "/usr/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: "
     "_ZN3c105ErrorC2ENS_14SourceLocationE"],
    ["RuntimeError: Failed to import trl.trainer.grpo_trainer because of the following error (look up to see its "
     "traceback):", "No module named 'vllm._C'"],
    ["OSError: libcudart.so.12: cannot open shared object file: No such file or directory"],
    ["RuntimeError: /opt/venv/lib/python3.10/site-packages/apex/amp_C.so: undefined symbol: _ZN2at4_ops"],
])
def test_an_import_error_wrapped_in_another_exception_is_missing_dependency(tail):
    v = classify(1, tail, steps_seen=0)
    assert v.cls == "missing_dependency" and not v.retryable, v


def test_the_wrapped_import_error_names_what_failed_in_the_summary():
    v = classify(1, ["RuntimeError: Failed to import trl.trainer.grpo_trainer because of the following error (look up "
                     "to see its traceback):", "No module named 'vllm._C'"], steps_seen=0)
    assert "'vllm._C'" in v.summary and "pip install vllm" in (v.hint or "")


@pytest.mark.parametrize("tail", [
    ["[ 1843.308145] NVRM: The NVIDIA GPU 0000:b3:00.0",
     "               NVRM: (PCI ID: 10de:26b5) installed in this system has",
     "               NVRM: fallen off the bus and is not responding to commands."],
    ["Unable to determine the device handle for GPU0000:03:00.0: Unknown Error"],
])
def test_a_gpu_gone_without_an_xid_needs_a_reset(tail):
    v = classify(1, tail, steps_seen=9)
    assert v.cls == "cuda_fault" and not v.retryable and v.recovery == "fail"


@pytest.mark.parametrize("tail", [
    ["ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
     "\tclass_name: WorkerDict", "Worker exit type: NODE_OUT_OF_MEMORY Worker exit detail: ..."],
    ["ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on", "memory."],
])
def test_rays_memory_monitor_is_a_host_oom_kill(tail):
    v = classify(1, tail, steps_seen=9)
    assert v.cls == "killed_oom" and "Ray's memory monitor" in v.summary


@pytest.mark.parametrize("line, cls", [
    ("RuntimeError: HIP out of memory. Tried to allocate 1.95 GiB (GPU 0; 63.98 GiB total capacity; 61.20 GiB already "
     "allocated)", "cuda_oom"),
    ("jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 17179869184 "
     "bytes.", "cuda_oom"),
    ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with "
     "shape[32,1024,1024] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
     "cuda_oom"),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "cuda_oom"),
    ("torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGKILL", "killed_oom"),
])
def test_other_frameworks_words_for_the_same_classes(line, cls):
    assert classify(1, ["step 9 loss 1.0", line], steps_seen=9).cls == cls


# --- bad input -------------------------------------------------------------------------------

def test_bad_input_never_raises_and_stays_fast():
    huge = "x" * (10 * 1024 * 1024)
    binary = bytes(range(256)) * 64
    tail = [huge, binary.decode("latin-1"), binary, b"\xff\xfe\xfa invalid utf-8 \xc3\x28",
            "surrogate \udcff\udcfe", "\x00\x01\x02", OOM]
    v = classify(1, tail, steps_seen=10)
    assert v.cls == "cuda_oom"
    for e in v.evidence:
        e.encode("utf-8")                 # no lone surrogate reaches the crash report's JSON
        assert "\x00" not in e
    lines = normalize_crash_text(tail)
    assert all(len(line) <= 16384 for line in lines)
    # a huge one-line paste keeps its end, where the exception is
    assert classify(1, ["y " * (3 * 1024 * 1024) + OOM], steps_seen=10).cls == "cuda_oom"


@pytest.mark.parametrize("exit_status", [1, 134, -6])
def test_cudnn_failing_to_load_a_library_then_aborting_is_missing_dependency(exit_status):
    """cuDNN prints its loader's error and calls abort(): the library, not the abort, is the cause."""
    tail = ["web-1  | Could not load library libcudnn_cnn_infer.so.8. Error: libnvrtc.so: cannot open shared object "
            "file: No such file or directory",
            "web-1  | Please make sure libcudnn_cnn_infer.so.8 is in your library path!",
            "web-1  | Aborted (core dumped)"]
    v = classify(exit_status, tail, steps_seen=3)
    assert v.cls == "missing_dependency" and not v.retryable
    assert v.summary.endswith("cannot open shared object file: No such file or directory") or "libnvrtc.so" in v.summary


@pytest.mark.parametrize("line", [
    "Loss is nan, stopping training",                                        # MAE/DeiT engines, then sys.exit(1)
    "Batch 412: Invalid loss, terminating training",                         # Keras TerminateOnNaN
])
def test_a_trainer_stopping_itself_on_a_non_finite_loss_is_a_divergence(line):
    v = classify(1, ["Epoch: [3]  [ 120/1251]  eta: 0:10:00  lr: 0.000100  loss: nan (0.6931)", line], steps_seen=3)
    assert v.cls == "divergence" and v.recovery == "pause" and "stopped itself on a non-finite loss" in v.summary


@pytest.mark.parametrize("line, cls", [
    # mm/oom_kill.c, older and cgroup wordings
    ("Memory cgroup out of memory: Kill process 4142 (python3) score 68 or sacrifice child", "killed_oom"),
    ("python invoked oom-killer: gfp_mask=0xd0, order=0, oom_score_adj=0", "killed_oom"),
    # a wrapper's shell-style status for a killed child
    ("[f8107735c673549d7acd-n0-0] terminated with exit code (137). Reason [Error]. Message:", "killed_oom"),
    ("subprocess.CalledProcessError: Command '['python', 'train.py']' returned non-zero exit status 139.", "segfault"),
    # ProcessGroupNCCL's heartbeat monitor after a collective timeout elsewhere, then abort()
    ("[rank4]:[E603 04:19:17.315831399 ProcessGroupNCCL.cpp:1685] [PG ID 0 PG GUID 0(default_pg) Rank 4] Observed "
     "flight recorder dump signal from another rank via TCPStore.", "nccl_error"),
])
def test_kernel_oom_killer_wrapper_statuses_and_the_flight_recorder(line, cls):
    tail = ["step 8 loss 1.0", line, "  exitcode  : -6 (pid: 107)" if cls == "nccl_error" else "done"]
    assert classify(1, tail, steps_seen=8).cls == cls


@pytest.mark.parametrize("line, cls", [
    # the caching allocator's words in other backends: torch_npu, Intel XPU, Apple MPS
    ("RuntimeError: NPU out of memory. Tried to allocate 5.03 GiB (NPU 3; 60.96 GiB total capacity)", "cuda_oom"),
    ("NPU out of memory. Tried to allocate more than 1EB memory", "cuda_oom"),
    ("RuntimeError: XPU out of memory. Tried to allocate 2.00 GiB", "cuda_oom"),
    ("RuntimeError: MPS backend out of memory (MPS allocated: 17.00 GB, other allocations: 1.20 GB)", "cuda_oom"),
    # Ascend HCCL (CANN EI0002): a collective timed out
    ("EI0002: [PID: 13075] 2025-06-25-10:45:23.586.187 The wait execution of the Notify register times out. Reason: "
     "The Notify register has not received the Notify record from remote rank: [unknown].", "nccl_error"),
])
def test_other_accelerators_words_for_oom_and_collective_timeouts(line, cls):
    assert classify(1, ["step 4 loss 1.0", line], steps_seen=4).cls == cls


def test_nccls_error_return_trace_reaching_its_async_init_thread_is_an_nccl_error():
    trace = ["host:2375341:2375387 [0] init.cc:573 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA "
             "device 1000", "host:2375341:2375387 [0] NCCL INFO init.cc:840 -> 5"]
    # a trace that stops before the async init thread may be a probe NCCL recovered from
    assert classify(1, trace + ["KeyError: 'labels'"], steps_seen=0).cls == "unknown"
    v = classify(1, trace + ["host:2375341:2375387 [0] NCCL INFO group.cc:73 -> 5 [Async thread]"], steps_seen=0)
    assert v.cls == "nccl_error"
    # torch failing to fetch the communicator's unique id from rank 0 (ProcessGroupNCCL::broadcastUniqueNCCLID)
    v = classify(1, ["RuntimeError: [4] is setting up NCCL communicator and retrieving ncclUniqueId from [0] via c10d "
                     "key-value store by key '0', but store->get('0') got error: Socket Timeout"], steps_seen=0)
    assert v.cls == "nccl_error"
