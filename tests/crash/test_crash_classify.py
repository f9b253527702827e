"""classify() on log tails built from the exact crash texts of formats.md section 4 and 5."""
from __future__ import annotations

import json

import pytest

from moeconsole.runner.rundir import jsonio
from moeconsole.runner.core.crash import CRASH_CLASSES, RECOVERIES, CrashVerdict, classify, clean_line

# --- texts from formats.md -------------------------------------------------------------

OOM_GPU3 = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total "
    "capacity of 79.19 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process "
    "has 78.12 GiB memory in use. Of the allocated memory 74.50 GiB is allocated by PyTorch, and "
    "2.81 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large "
    "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
    "documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html"
    "#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")


def oom_with_foreign(gpu: int, pids: dict[int, str]) -> str:
    others = "".join(f"Process {pid} has {size} memory in use. " for pid, size in pids.items())
    return (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU {gpu} has "
            f"a total capacity of 139.72 GiB of which 512.00 MiB is free. {others}Including "
            f"non-PyTorch memory, this process has 70.02 GiB memory in use. Of the allocated memory "
            f"68.00 GiB is allocated by PyTorch, and 300.00 MiB is reserved by PyTorch but "
            f"unallocated. If reserved but unallocated memory is large try setting "
            f"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            f"documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html"
            f"#environment-variables)")


OOM_PRE_23 = ("RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total "
              "capacity; 14.56 GiB already allocated; 3.44 MiB free; 14.70 GiB reserved in total by "
              "PyTorch)")

FLA_BACKWARD_TRACEBACK = [
    "[rank3]: Traceback (most recent call last):",
    '[rank3]:   File "/app/swift/cli/sft.py", line 10, in <module>',
    '[rank3]:   File "/usr/lib/python3.11/site-packages/torch/_tensor.py", line 625, in backward',
    '[rank3]:   File "/usr/lib/python3.11/site-packages/torch/autograd/graph.py", line 841, in _engine_run_backward',
    '[rank3]:   File "/usr/lib/python3.11/site-packages/torch/autograd/function.py", line 311, in apply',
    '[rank3]:   File "/usr/lib/python3.11/site-packages/fla/utils/_decorators.py", line 140, in wrapper',
    '[rank3]:   File "/usr/lib/python3.11/site-packages/torch/amp/autocast_mode.py", line 580, in decorate_bwd',
    '[rank3]:   File "/usr/lib/python3.11/site-packages/fla/ops/gated_delta_rule/chunk.py", line 300, in backward',
    '[rank3]:   File "/usr/lib/python3.11/site-packages/fla/ops/gated_delta_rule/chunk.py", line 150, in chunk_gated_delta_rule_bwd',
    '[rank3]:   File "/usr/lib/python3.11/site-packages/fla/ops/common/chunk_delta_h.py", line 776, in chunk_gated_delta_rule_bwd_dhu',
    "[rank3]:     dh = q.new_empty(B, NT, HV, K, V)",
]

NCCL_WATCHDOG = (
    "[rank{r}]:[E0102 03:14:15.123456789 ProcessGroupNCCL.cpp:685] [PG ID 0 PG GUID 0(default_pg) "
    "Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=81234, OpType=ALLREDUCE, "
    "NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600047 milliseconds before timing out.")
NCCL_FOLLOW_UP = [
    "[rank{r}]:[E0102 03:14:15.223456789 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) "
    "Rank {r}] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA "
    "kernels, subsequent GPU operations might run on corrupted/incomplete data.",
    "[rank{r}]:[E0102 03:14:15.223456789 ProcessGroupNCCL.cpp:638] [PG ID 0 PG GUID 0(default_pg) "
    "Rank {r}] To avoid data inconsistency, we are taking the entire process down.",
    "terminate called after throwing an instance of 'c10::DistBackendError'",
]
NCCL_API = ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
            "NCCLUtils.cpp:77, remote process exited or there was a network error, NCCL version 2.27.3")
NCCL_REMOTE_DETAIL = ("ncclRemoteError: A call failed possibly due to a network error or a remote "
                      "process exiting prematurely.")

PORT_NEW = ("torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
            "network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: "
            "address already in use")
PORT_RUNTIME = ("RuntimeError: The server socket has failed to listen on any local network address. "
                "port: 29501, useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use")
PORT_LEGACY = ("RuntimeError: The server socket has failed to listen on any local network address. "
               "The server socket has failed to bind to [::]:29502 (errno: 98 - Address already in use). "
               "The server socket has failed to bind to 0.0.0.0:29502 (errno: 98 - Address already in use).")

MEGATRON_DISABLED = (
    "RuntimeError: Rank 3, node gpu-07, device 3, iteration 1201: Unexpected result tensor(nan, "
    "device='cuda:3') (message='found NaN in local grad norm for bucket #0 in backward pass before "
    "data-parallel communication collective')")
MEGATRON_VALIDATE = (
    "Unexpected result tensor(nan, device='cuda:3') on rank 3 at iteration #1201 invocation #1 "
    "(message='found NaN in local grad norm for bucket #0 in backward pass before data-parallel "
    "communication collective')")
MEGATRON_SPIKY = ("Unexpected result 18.5 on rank 0 at iteration #900 invocation #1 "
                  "(message='Spiky loss')")
MEGATRON_OLD_ASSERT = ("AssertionError: Rank 3: found NaN in local grad norm in backward pass before "
                       "data-parallel communication collective. Device: 3, node: gpu-07")

RECOMPUTE = [
    "torch.utils.checkpoint.CheckpointError: torch.utils.checkpoint: A different number of tensors "
    "was saved during the original forward and recomputation.",
    "Number of tensors saved during forward: 12",
    "Number of tensors saved during recomputation: 10.",
    "Tip: To see a more detailed error message, either pass `debug=True` to",
]

ILLEGAL_ACCESS = [
    "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    "Search for `cudaErrorIllegalAddress' in https://docs.nvidia.com/cuda/cuda-runtime-api/"
    "group__CUDART__TYPES.html for more information.",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
    "below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
]
WATCHDOG_ILLEGAL = (
    "[rank5]:[E0102 03:14:15.123456789 ProcessGroupNCCL.cpp:1701] [PG ID 0 PG GUID 0(default_pg) "
    "Rank 5] Process group watchdog thread terminated with exception: CUDA error: an illegal memory "
    "access was encountered")
XID_79 = "NVRM: Xid (PCI:0000:81:00): 79, pid=41234, name=python, GPU has fallen off the bus."
XID_13_OLD = "NVRM: Xid (PCI:0000:3b:00): 13, pid='<unknown>', name=<unknown>, Graphics Exception"


def torchrun_block(root_exitcode: str, root_rank: int = 3, root_pid: int = 41234,
                   others: tuple[tuple[int, str], ...] = ((0, "-15 (pid: 41231)  (SIGTERM)"),),
                   root_traceback: str | None = None) -> list[str]:
    """torchrun's ChildFailedError block (formats.md 4.4), root cause last."""
    lines = ["torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
             "=======================================================",
             "train.py FAILED",
             "-------------------------------------------------------",
             "Failures:"]
    if not others:
        lines.append("  <NO_OTHER_FAILURES>")
    for i, (rank, status) in enumerate(others, start=1):
        lines += [f"[{i}]:", "  time      : 2026-01-02_03:04:07", "  host      : node-a",
                  f"  rank      : {rank} (local_rank: {rank})", f"  exitcode  : {status}",
                  "  error_file: <N/A>", "  traceback : Signal 15 (SIGTERM) received by PID 41231"]
    tb = root_traceback or "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"
    lines += ["-------------------------------------------------------",
              "Root Cause (first observed failure):",
              "[0]:",
              "  time      : 2026-01-02_03:04:05",
              "  host      : node-a",
              f"  rank      : {root_rank} (local_rank: {root_rank})",
              f"  exitcode  : {root_exitcode}",
              "  error_file: <N/A>",
              f"  traceback : {tb}",
              "======================================================="]
    return lines


STEP_LINES = [
    " [2026-01-02 03:04:05.678901] iteration      120/    5000 | consumed samples:         7680 | "
    "elapsed time per iteration (ms): 1834.6 | learning rate: 2.999900E-05 | global batch size:    64 | "
    "lm loss: 2.345678E+00 | loss scale: 1.0 | grad norm: 0.877 | number of skipped iterations:   0 | "
    "number of nan iterations:   0 |",
    "{'loss': 1.23456789, 'grad_norm': 0.87654321, 'learning_rate': 2e-05, 'iteration': '10/200', "
    "'elapsed_time': '1m 2s', 'remaining_time': '19m 38s', 'memory(GiB)': 35.12, 'train_speed(s/it)': 6.2}",
]


def check_shape(v: CrashVerdict) -> None:
    assert v.cls in CRASH_CLASSES and v.recovery in RECOVERIES
    assert len(v.evidence) <= 10 and all(len(e) <= 500 for e in v.evidence)
    assert v.summary and "\n" not in v.summary


# --- CUDA OOM ------------------------------------------------------------------------

def test_oom_in_fla_backward_after_steps_names_kernel_size_and_gpu():
    tail = STEP_LINES * 5 + FLA_BACKWARD_TRACEBACK + ["[rank3]: " + OOM_GPU3]
    v = classify(1, tail, steps_seen=120)
    check_shape(v)
    assert v.cls == "cuda_oom" and v.retryable and v.recovery == "restart"
    assert v.summary == ("CUDA out of memory in backward (chunk_gated_delta_rule_bwd), "
                         "tried to allocate 2.00 GiB on GPU 3")
    assert v.evidence[0].startswith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert "expandable_segments" in v.hint      # 2.81 GiB reserved but unallocated


def test_oom_at_init_with_foreign_processes_in_message_is_gpu_busy():
    line = oom_with_foreign(0, {4321: "60.00 GiB", 4400: "8.00 GiB"})
    v = classify(1, ["[INFO:swift] Loading the model", "[rank0]: " + line], steps_seen=0)
    check_shape(v)
    assert v.cls == "gpu_busy_at_init" and v.retryable
    assert v.recovery == "restart_after_gpu_clear"
    assert "pid 4321: 60.00 GiB" in v.summary and "pid 4400: 8.00 GiB" in v.summary
    assert "GPU 0" in v.summary and "moeconsole gpus" in v.hint


def test_oom_at_init_with_foreign_memory_seen_by_runner_is_gpu_busy():
    v = classify(1, [OOM_GPU3], steps_seen=0, foreign_gpu_memory=True)
    assert v.cls == "gpu_busy_at_init"
    assert classify(1, [OOM_GPU3], steps_seen=0, foreign_gpu_memory=False).cls == "cuda_oom"


def test_oom_before_first_step_without_foreign_memory_is_cuda_oom():
    v = classify(1, [OOM_GPU3], steps_seen=0)
    assert v.cls == "cuda_oom"
    assert v.summary == "CUDA out of memory before the first logged step, tried to allocate 2.00 GiB on GPU 3"


def test_oom_after_steps_is_cuda_oom_even_with_foreign_processes():
    v = classify(1, [oom_with_foreign(2, {4321: "60.00 GiB"})], steps_seen=50, foreign_gpu_memory=True)
    assert v.cls == "cuda_oom" and "GPU 2" in v.summary


def test_pre_2_3_oom_form():
    v = classify(1, ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
                     OOM_PRE_23], steps_seen=3)
    assert v.cls == "cuda_oom"
    assert v.summary == "CUDA out of memory, tried to allocate 20.00 MiB on GPU 0"
    assert "expandable_segments" not in v.hint


def test_cuda_error_out_of_memory_at_context_creation():
    v = classify(1, ["torch.AcceleratorError: CUDA error: out of memory"], steps_seen=0,
                 foreign_gpu_memory=True)
    assert v.cls == "gpu_busy_at_init"


def test_oom_in_forward_names_own_frame():
    tail = ["Traceback (most recent call last):",
            '  File "/app/train.py", line 40, in <module>',
            '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1775, in _call_impl',
            '  File "/app/moe.py", line 88, in forward',
            '  File "/app/moe.py", line 120, in dispatch_tokens',
            OOM_GPU3]
    assert classify(1, tail, steps_seen=9).summary.startswith("CUDA out of memory in forward (dispatch_tokens)")


def test_oom_in_one_rank_then_nccl_errors_in_others_is_oom():
    tail = (["[rank3]: " + OOM_GPU3]
            + [NCCL_WATCHDOG.format(r=r) for r in (0, 1, 2)]
            + [line.format(r=0) for line in NCCL_FOLLOW_UP]
            + [NCCL_API]
            + torchrun_block("1 (pid: 41234) ", root_rank=3))
    v = classify(1, tail, steps_seen=400)
    assert v.cls == "cuda_oom"
    assert not any("Watchdog" in e or "NCCL error" in e for e in v.evidence)


def test_many_ranks_oom_caps_evidence_and_lists_gpus():
    tail = [f"[rank{r}]: " + OOM_GPU3.replace("GPU 3", f"GPU {r}") for r in range(16)]
    v = classify(1, tail, steps_seen=10)
    assert len(v.evidence) == 10
    assert v.evidence[0].startswith("torch.OutOfMemoryError") and "GPU 0 " in v.evidence[0]
    assert "on GPUs 0, 1, 2" in v.summary


# --- NCCL --------------------------------------------------------------------------

def nccl_abort_tail(exitcode_line: str) -> list[str]:
    return (STEP_LINES + [NCCL_WATCHDOG.format(r=3)] + [line.format(r=3) for line in NCCL_FOLLOW_UP]
            + torchrun_block(exitcode_line, root_rank=3, root_traceback="Signal 6 (SIGABRT) received by PID 41234"))


@pytest.mark.parametrize("exitcode_line", ["-6 (pid: 41234)  (SIGABRT)",    # torch 2.14 form
                                           "-6 (pid: 41234)"])              # older form
def test_nccl_watchdog_timeout_with_sigabrt_root_cause(exitcode_line):
    v = classify(1, nccl_abort_tail(exitcode_line), steps_seen=300)
    check_shape(v)
    assert v.cls == "nccl_error" and v.retryable
    assert v.recovery == "restart_long_cooldown" and v.cooldown_scale == 3.0
    assert v.summary == "NCCL watchdog timeout: ALLREDUCE ran for 600 s on rank 3"
    assert any(e.startswith("[E0102 03:14:15.123456789 ProcessGroupNCCL.cpp:685]") for e in v.evidence)
    assert any(e.startswith("exitcode  : -6") for e in v.evidence)


def test_nccl_api_error_summary_names_reason_and_version():
    v = classify(1, [NCCL_API, NCCL_REMOTE_DETAIL, "Last error:", "socket closed"], steps_seen=20)
    assert v.cls == "nccl_error"
    assert v.summary == "NCCL error: remote process exited or there was a network error (NCCL 2.27.3)"
    assert v.evidence == (NCCL_API, NCCL_REMOTE_DETAIL)


def test_sigabrt_without_nccl_text_is_unknown():
    v = classify(-6, ["terminate called after throwing an instance of 'std::runtime_error'",
                      "  what():  bad state"], steps_seen=5)
    assert v.cls == "unknown" and v.retryable
    assert v.summary.startswith("ended by SIGABRT: terminate called after throwing")


def test_illegal_memory_access_inside_nccl_watchdog_is_cuda_fault_with_long_cooldown():
    tail = [WATCHDOG_ILLEGAL, "terminate called after throwing an instance of 'c10::DistBackendError'"]
    tail += [line.format(r=5) for line in NCCL_FOLLOW_UP[:2]]
    v = classify(-6, tail, steps_seen=700)
    check_shape(v)
    assert v.cls == "cuda_fault" and v.recovery == "restart_launch_blocking"
    assert v.env == {"CUDA_LAUNCH_BLOCKING": "1"} and v.cooldown_scale == 3.0
    assert v.summary == "CUDA fault: an illegal memory access was encountered"


# --- port ----------------------------------------------------------------------------

@pytest.mark.parametrize("line, port", [(PORT_NEW, "29500"), (PORT_RUNTIME, "29501"), (PORT_LEGACY, "29502")])
def test_port_in_use_all_forms(line, port):
    tail = ["[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29502 (errno: 98 - "
            "Address already in use)."] if line is PORT_LEGACY else []
    v = classify(1, tail + ["Traceback (most recent call last):", line], steps_seen=0)
    assert v.cls == "port_in_use" and v.recovery == "wait_port" and v.retryable
    assert v.summary == f"port {port} is already in use (EADDRINUSE)"
    assert line in v.evidence


def test_client_socket_timeout_is_not_port_in_use():
    v = classify(1, ["torch.distributed.DistNetworkError: The client socket has timed out after 600s "
                     "while trying to connect to (node-a, 29500)."], steps_seen=0)
    assert v.cls == "unknown"


# --- divergence -----------------------------------------------------------------------

def test_megatron_disabled_mode_runtime_error_is_divergence():
    v = classify(1, STEP_LINES + ["[rank3]: " + MEGATRON_DISABLED], steps_seen=1200)
    assert v.cls == "divergence" and not v.retryable and v.recovery == "pause"
    assert v.summary == "Megatron found a non-finite local grad norm at iteration 1201"
    assert v.evidence == (MEGATRON_DISABLED,)


def test_megatron_old_assertion_is_divergence():
    assert classify(1, [MEGATRON_OLD_ASSERT], steps_seen=8).cls == "divergence"


def test_megatron_exit_17_pauses_and_exit_16_restarts():
    base = [MEGATRON_VALIDATE, "First rerun: unexpected result is reproducible within the tolerance"]
    v17 = classify(1, base + torchrun_block("17 (pid: 41234) ", root_rank=3), steps_seen=1200)
    assert v17.cls == "divergence" and not v17.retryable and v17.recovery == "pause"
    assert "exit 17" in v17.summary
    v16 = classify(1, base + torchrun_block("16 (pid: 41234) ", root_rank=3), steps_seen=1200)
    assert v16.cls == "divergence" and v16.retryable and v16.recovery == "restart"
    assert "exit 16" in v16.summary
    assert any(e.startswith("First rerun:") for e in v16.evidence)


def test_spiky_loss_decides_only_with_exit_17():
    assert classify(1, [MEGATRON_SPIKY], steps_seen=900).cls == "unknown"
    v = classify(17, [MEGATRON_SPIKY], steps_seen=900)
    assert v.cls == "divergence" and v.summary.startswith("Megatron result validation failed at iteration 900")


def test_anomaly_mode_nan_is_divergence():
    v = classify(1, ["RuntimeError: Function 'LogSoftmaxBackward0' returned nan values in its 0th output."],
                 steps_seen=4)
    assert v.cls == "divergence"


def test_divergence_flag_from_monitors_wins_over_log_and_signal():
    v = classify(-15, [NCCL_API], steps_seen=300, divergence=True)
    assert v.cls == "divergence" and v.recovery == "pause" and not v.retryable
    assert "monitors" in v.summary


# --- recompute ------------------------------------------------------------------------

def test_recompute_mismatch_fails_with_routing_hint():
    v = classify(1, STEP_LINES + RECOMPUTE + [NCCL_WATCHDOG.format(r=1)], steps_seen=30)
    assert v.cls == "recompute_mismatch" and not v.retryable and v.recovery == "fail"
    assert v.summary == ("activation-checkpoint recompute mismatch: 12 tensors saved in forward, "
                         "10 in recomputation")
    assert "routing" in v.hint
    assert v.evidence[0].startswith("torch.utils.checkpoint.CheckpointError")


def test_recompute_metadata_variant():
    v = classify(1, ["torch.utils.checkpoint.CheckpointError: torch.utils.checkpoint: Recomputed values "
                     "for the following tensors have different metadata than during the forward pass."],
                 steps_seen=2)
    assert v.cls == "recompute_mismatch"


# --- CUDA faults ----------------------------------------------------------------------

def test_illegal_memory_access_restarts_with_launch_blocking():
    v = classify(1, ["[rank2]: " + line for line in ILLEGAL_ACCESS], steps_seen=77)
    assert v.cls == "cuda_fault" and v.retryable and v.cooldown_scale == 1.0
    assert v.env == {"CUDA_LAUNCH_BLOCKING": "1"}
    assert v.evidence[0] == ILLEGAL_ACCESS[0]


def test_older_runtime_error_form_and_launch_failure():
    v = classify(1, ["RuntimeError: CUDA error: unspecified launch failure"], steps_seen=3)
    assert v.cls == "cuda_fault" and v.summary == "CUDA fault: unspecified launch failure"


def test_xid_79_needs_a_reset_and_is_not_retryable():
    v = classify(-6, [XID_79, NCCL_API], steps_seen=500)
    assert v.cls == "cuda_fault" and not v.retryable and v.recovery == "fail"
    assert v.summary == "NVIDIA Xid 79 on PCI:0000:81:00: the GPU needs a reset"


def test_xid_13_old_driver_form_with_illegal_access():
    v = classify(1, [XID_13_OLD, ILLEGAL_ACCESS[0]], steps_seen=5)
    assert v.cls == "cuda_fault" and v.retryable
    assert v.summary == "CUDA fault: an illegal memory access was encountered (NVIDIA Xid 13 on PCI:0000:3b:00)"


def test_oom_and_fault_together_fault_wins():
    assert classify(1, [OOM_GPU3, ILLEGAL_ACCESS[0]], steps_seen=5).cls == "cuda_fault"


# --- signals --------------------------------------------------------------------------

@pytest.mark.parametrize("rc", [-9, 137, 247])
def test_sigkill_without_evidence_is_killed_oom(rc):
    v = classify(rc, STEP_LINES, steps_seen=100)
    assert v.cls == "killed_oom" and v.retryable and v.recovery == "restart"
    assert "SIGKILL" in v.summary and "dmesg" in v.hint


def test_sigkill_root_cause_inside_torchrun_block():
    tail = STEP_LINES + torchrun_block("-9 (pid: 41234)  (SIGKILL)", root_rank=6,
                                       root_traceback="Signal 9 (SIGKILL) received by PID 41234")
    v = classify(1, tail, steps_seen=100)
    assert v.cls == "killed_oom"
    assert v.summary.startswith("killed by SIGKILL (rank 6 on node-a, pid 41234)")


def test_failed_line_is_used_when_block_is_missing():
    tail = ["E0102 03:04:05.123000 41200 torch/distributed/elastic/multiprocessing/api.py:882] failed "
            "(exitcode: -11) local_rank: 2 (pid: 41233) of binary: /usr/bin/python3"]
    v = classify(1, tail, steps_seen=5)
    assert v.cls == "segfault" and "pid 41233" in v.summary


@pytest.mark.parametrize("rc", [-11, 139])
def test_segfault_restartable(rc):
    v = classify(rc, STEP_LINES, steps_seen=5)
    assert v.cls == "segfault" and v.retryable and v.recovery == "restart"


def test_segfault_worker_with_nccl_echo_in_siblings_is_segfault():
    tail = ([NCCL_API, NCCL_WATCHDOG.format(r=0)]
            + torchrun_block("-11 (pid: 41234)  (SIGSEGV)", root_traceback="Signal 11 (SIGSEGV) received by PID 41234"))
    assert classify(1, tail, steps_seen=5).cls == "segfault"


@pytest.mark.parametrize("rc", [-7, 135])
def test_bus_error_is_fatal(rc):
    v = classify(rc, STEP_LINES, steps_seen=5)
    assert v.cls == "bus_error" and not v.retryable and v.recovery == "fail"
    assert "shm" in v.hint


def test_dataloader_worker_bus_error_and_kill_texts():
    bus = ["RuntimeError: DataLoader worker (pid 5123) is killed by signal: Bus error. It is possible "
           "that dataloader's workers are out of shared memory. Please try to raise your shared memory limit."]
    assert classify(1, bus, steps_seen=5).cls == "bus_error"
    killed = ["RuntimeError: DataLoader worker (pid 5124) is killed by signal: Killed. "]
    assert classify(1, killed, steps_seen=5).cls == "killed_oom"
    terminated = ["RuntimeError: DataLoader worker (pid 5125) is killed by signal: Terminated. "]
    assert classify(1, terminated, steps_seen=5).cls == "unknown"


def test_shell_wrapper_job_message():
    v = classify(1, ["./train.sh: line 12: 41234 Segmentation fault      (core dumped) python train.py"],
                 steps_seen=5)
    assert v.cls == "segfault"


# --- runner flags ---------------------------------------------------------------------

def test_user_kill_wins_over_everything():
    v = classify(-9, [OOM_GPU3, NCCL_API, ILLEGAL_ACCESS[0]], user_kill=True, steps_seen=10)
    assert v.cls == "user_kill" and not v.retryable and v.recovery == "none"


def test_user_kill_with_clean_exit():
    assert classify(0, [], user_kill=True).cls == "user_kill"


def test_hang_plain_and_with_nccl_timeout():
    v = classify(-9, STEP_LINES, hang=True, steps_seen=10)
    assert v.cls == "hang" and v.retryable and v.recovery == "restart"
    assert v.evidence == (STEP_LINES[-1],)            # the last thing it printed
    v = classify(-15, STEP_LINES + [NCCL_WATCHDOG.format(r=2)], hang=True, steps_seen=10)
    assert v.cls == "nccl_error" and v.cooldown_scale == 3.0


def test_hang_with_nccl_errors_caused_by_our_kill_stays_hang():
    v = classify(-15, STEP_LINES + [NCCL_API], hang=True, steps_seen=10)
    assert v.cls == "hang"


def test_hang_after_an_oom_is_the_oom():
    assert classify(-9, [OOM_GPU3], hang=True, steps_seen=10).cls == "cuda_oom"


def test_clean_exit_is_not_a_crash():
    with pytest.raises(ValueError):
        classify(0, STEP_LINES)


# --- unknown --------------------------------------------------------------------------

def test_unknown_names_first_exception():
    tail = ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
            "    load()", "ValueError: dataset /data/x.jsonl has no 'messages' column"]
    v = classify(1, tail, steps_seen=0)
    assert v.cls == "unknown" and v.retryable and v.recovery == "restart"
    assert v.summary == "exited with code 1: ValueError: dataset /data/x.jsonl has no 'messages' column"
    assert v.evidence == (tail[-1],)


def test_unknown_exit_status_without_log():
    v = classify(None, [])
    assert v.cls == "unknown" and v.summary == "ended with an unknown exit status" and v.evidence == ()


def test_sigterm_from_outside_is_unknown():
    v = classify(1, ["torch.distributed.elastic.multiprocessing.api.SignalException: Process 41200 got signal: 15"])
    assert v.cls == "unknown" and "SignalException" in v.summary


# --- line handling --------------------------------------------------------------------

def test_clean_line_strips_ansi_and_rank_prefixes_but_keeps_failure_index():
    assert clean_line("\x1b[31m[rank3]:[default3]: RuntimeError: x\x1b[0m") == ("RuntimeError: x", 3)
    assert clean_line("[default1]:hello") == ("hello", 1)
    assert clean_line("[2]:text from the prefix template") == ("text from the prefix template", 2)
    assert clean_line("[0]:") == ("[0]:", None)


def test_evidence_is_clean_capped_and_in_log_order():
    long_tail = "x" * 2000
    tail = ["\x1b[1;31m[rank1]:[E0102 03:14:15.123456789 ProcessGroupNCCL.cpp:1] " + NCCL_API + long_tail,
            NCCL_REMOTE_DETAIL]
    v = classify(-6, tail, steps_seen=3)
    assert v.cls == "nccl_error"
    assert v.evidence[0].startswith("[E0102") and v.evidence[0].endswith("…")
    assert len(v.evidence[0]) == 500
    assert v.evidence[1] == NCCL_REMOTE_DETAIL


def test_error_glued_to_a_progress_bar():
    tail = ["Train:  40%|████      | 4/10 [00:02<00:03,  1.9it/s]\r" + OOM_PRE_23]
    v = classify(1, tail, steps_seen=3)
    assert v.cls == "cuda_oom" and v.evidence == (OOM_PRE_23,)


def test_verdict_serialises_to_json():
    v = classify(1, [WATCHDOG_ILLEGAL], steps_seen=3)
    d = json.loads(jsonio.dumps(v.to_dict()))
    assert d["cls"] == "cuda_fault" and d["env"] == {"CUDA_LAUNCH_BLOCKING": "1"}
    assert d["evidence"] == list(v.evidence) and d["cooldown_scale"] == 3.0


def test_verdict_rejects_unknown_class():
    with pytest.raises(ValueError):
        CrashVerdict(cls="success", evidence=(), retryable=False, recovery="none", summary="x")


def test_large_tail_with_noise_still_finds_the_cause():
    noise = STEP_LINES * 1000 + ["host:1:2 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[4] via P2P/IPC"] * 200
    v = classify(1, noise + FLA_BACKWARD_TRACEBACK + [OOM_GPU3] + noise[:50], steps_seen=1000)
    assert v.cls == "cuda_oom" and "chunk_gated_delta_rule_bwd" in v.summary


def test_traceback_source_lines_are_not_evidence():
    tail = ["[rank2]: Traceback (most recent call last):",
            '[rank2]:   File "/app/train.py", line 88, in <module>',
            "[rank2]:     if isinstance(err, torch.OutOfMemoryError) or 'NCCL error' in str(err):",
            "[rank2]: KeyError: 'labels'"]
    v = classify(1, tail, steps_seen=3)
    assert v.cls == "unknown" and v.evidence == ("KeyError: 'labels'",)
    # the same text as an exception line (not a quoted source line) does decide
    assert classify(1, tail[:2] + ["[rank2]: " + OOM_GPU3], steps_seen=3).cls == "cuda_oom"


@pytest.mark.parametrize("line, summary", [
    ("[rank1]:[E0102 03:14:15.123456789 ProcessGroupNCCL.cpp:1400] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
     "ProcessGroupNCCL's watchdog got stuck for 480 seconds without making progress in monitoring enqueued "
     "collectives.", "ProcessGroupNCCL watchdog got stuck"),
    ("torch.distributed.DistBackendError: NCCL communicator was aborted on rank 4. Original reason for "
     "failure was: NCCL error: remote process exited", "NCCL communicator was aborted"),
])
def test_other_nccl_forms(line, summary):
    v = classify(-6, [line], steps_seen=9)
    assert v.cls == "nccl_error" and v.summary == summary
