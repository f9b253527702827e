"""Crash texts that once fell to `unknown` (and were restarted three times): each family written
from the program that prints it, in the forms users paste (without headers, joined, lower-cased)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from moeconsole.runner.core.crash import classify
from moeconsole.runner.core.policy import AttemptRecord, RestartSettings, decide

REPO = Path(__file__).resolve().parents[2]

# torch/distributed/elastic/multiprocessing/errors/__init__.py: one failure entry of the
# ChildFailedError block, pasted without the "Root Cause (first observed failure):" header.
ENTRY_SEGV = ["[0]:",
              "  time      : 2026-01-02_03:04:05",
              "  host      : node-a",
              "  rank      : 3 (local_rank: 3)",
              "  exitcode  : -11 (pid: 41234)",
              "  error_file: <N/A>",
              "  traceback : Signal 11 (SIGSEGV) received by PID 41234"]


def test_torchrun_failure_entry_without_its_header_names_the_signal_and_rank():
    v = classify(1, ["step 40 loss 1.2", *ENTRY_SEGV], steps_seen=40)
    assert v.cls == "segfault" and "rank 3" in v.summary and "pid 41234" in v.summary


def test_torchrun_entries_joined_and_lower_cased_when_pasted():
    joined = ["[1]:time: 2026-01-02_03:04:05host: node-b",
              "rank2 (local rank: 2)exitcode: -9 (pid: 36071)",
              "error_file: <n/a>traceback: signal 9 (sigkill) received by pid 36071"]
    v = classify(1, joined, steps_seen=10)
    assert v.cls == "killed_oom" and "rank 2" in v.summary and "pid 36071" in v.summary
    v = classify(1, ["traceback : signal 9 (SIGKILL) received by PID 36071"], steps_seen=10)
    assert v.cls == "killed_oom"


def test_the_sibling_torchrun_terminated_is_not_the_cause():
    """Without the header, entries of siblings the agent ended (-15) come first in the block."""
    sibling = ["  rank      : 0 (local_rank: 0)", "  exitcode  : -15 (pid: 41231)  (SIGTERM)",
               "  traceback : Signal 15 (SIGTERM) received by PID 41231"]
    v = classify(1, sibling + ENTRY_SEGV, steps_seen=10)
    assert v.cls == "segfault" and "rank 3" in v.summary


def test_torch_2_1_nccl_watchdog_wording_is_an_nccl_failure():
    # (the watchdog's catch-all: "... terminated with exception: unknown"; a CUDA error it relays is the
    # runtime's, below: test_the_watchdog_relaying_a_runtime_error_is_not_an_nccl_error)
    tail = ["[E ProcessGroupNCCL.cpp:915] [Rank 1] NCCL watchdog thread terminated with exception: unknown",
            "terminate called after throwing an instance of 'std::runtime_error'",
            "  what():  [Rank 1] NCCL watchdog thread terminated with exception: unknown"]
    v = classify(None, tail + ["  exitcode  : -6 (pid: 77)"], steps_seen=300)
    assert v.cls == "nccl_error" and v.retryable


@pytest.mark.parametrize("tail, words", [
    # detectron2/engine/train_loop.py: FloatingPointError(f"Loss became infinite or NaN at iteration={cur_iter}!\n...")
    (["Traceback (most recent call last):", '  File "tools/train_net.py", line 9, in <module>',
      "FloatingPointError: Loss became infinite or NaN at iteration=1234!",
      "loss_dict = {'loss_cls': nan, 'loss_box_reg': 0.5}"], "detectron2: the loss became infinite or NaN at iteration 1234"),
    # fairseq/optim/dynamic_loss_scaler.py
    (["Traceback (most recent call last):", '  File "fairseq_cli/train.py", line 9, in <module>',
      "FloatingPointError: Minimum loss scale reached (0.0001). Your loss is probably exploding. Try lowering the "
      "learning rate, using gradient clipping or increasing the batch size."], "minimum (0.0001)"),
])
def test_divergence_texts_of_other_frameworks_pause(tail, words):
    v = classify(1, tail, steps_seen=1234)
    assert v.cls == "divergence" and not v.retryable and v.recovery == "pause"
    assert words in v.summary


def test_ray_memory_monitor_kill_is_host_oom_not_cuda_oom():
    old = ["ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
           "Memory on the node (IP: 10.0.62.231, ID: e5d9) where the task (task ID: 4353, name=train_fn, "
           "pid=11362, memory used=1.25GB) was running was 27.71GB / 28.80GB (0.962273), which exceeds the "
           "memory usage threshold of 0.95. Ray killed this worker (ID: 6f2e) because it was the most "
           "recently scheduled task"]
    new = ["ray.exceptions.OutOfMemoryError: 1 worker(s) were killed due to the node running low on memory."]
    for tail in (old, new):
        v = classify(1, tail, steps_seen=50)
        assert v.cls == "killed_oom" and "Ray's memory monitor" in v.summary and v.retryable


def test_ray_memory_monitor_message_without_its_module_prefix_is_host_oom():
    # ray/exceptions.py OutOfMemoryError carries the raylet's message: the class name pasted bare (an issue title,
    # Ray 2.55's wording) or only the message's detail line is the node's RAM, not the GPU's
    bare = ["OutOfMemoryError: 1 worker(s) were killed due to the node running low on memory.",
            "(TaskRunner pid=812) Refer to the documentation on how to address the out of memory issue."]
    detail = ["Memory on the node (IP: 10.22.68.9, ID: 87d7) where the lease (lease ID: 7900, "
              "name=AgentLoopWorker.__init__, pid=2285, memory used=10.13GB) was running was 891.06GB / 937.50GB "
              "(0.950459), which exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: 9555) "
              "because it was the most recently scheduled task"]
    for tail in (bare, detail):
        v = classify(1, tail, steps_seen=116)
        assert v.cls == "killed_oom" and "Ray's memory monitor" in v.summary, (tail, v.summary)
    # torch's CUDA OOM that Ray wrapped in its task error stays a CUDA OOM
    wrapped = ["ray.exceptions.RayTaskError(OutOfMemoryError): ray::MegatronTrainRayActor.train() (pid=51, ip=10.0.0.2)",
               "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
               "of 79.11 GiB of which 1.02 GiB is free."]
    assert classify(1, wrapped, steps_seen=30).cls == "cuda_oom"


def test_ucx_signal_message_without_its_caught_signal_head_names_the_signal():
    # ucs/debug/debug.c: "Caught signal %d (%s: %s%s)", strsignal, the si_code's cause, " at address %p" for SEGV
    segv = ["[Bug] training dies with Segmentation fault: invalid permissions for mapped object at address "
            "0x7f3c5f628350"]
    v = classify(1, segv, steps_seen=12)
    assert v.cls == "segfault" and "SIGSEGV" in v.summary
    assert classify(1, ["rank 3 died: Bus error: invalid address alignment"], steps_seen=12).cls == "bus_error"
    # the same words without the handler's cause are not its message
    assert classify(1, ["Segmentation fault: see the attached log for details"], steps_seen=12).cls == "unknown"


def test_gpu_fallen_off_the_bus_without_an_xid_needs_a_reset():
    tail = ["NVRM: GPU 0000:81:00.0: GPU has fallen off the bus.",
            "RuntimeError: CUDA error: unspecified launch failure"]
    v = classify(1, tail, steps_seen=9)
    assert v.cls == "cuda_fault" and not v.retryable and "fallen off the bus" in v.summary
    v = classify(1, ["Unable to determine the device handle for GPU 0000:81:00.0: GPU is lost.  Reboot the "
                     "system to recover this GPU"], steps_seen=9)
    assert v.cls == "cuda_fault" and not v.retryable


def _missing(module: str, python: str = "/opt/venv/lib/python3.11/site-packages") -> list[str]:
    return ["Traceback (most recent call last):",
            f'  File "{python}/swift/cli/sft.py", line 1, in <module>',
            f"    import {module}",
            f"ModuleNotFoundError: No module named '{module}'"]


def test_missing_module_is_its_own_class_not_retried():
    v = classify(1, _missing("flash_attn"), steps_seen=0)
    assert v.cls == "missing_dependency" and not v.retryable and v.recovery == "fail"
    assert "'flash_attn'" in v.summary and "/opt/venv/bin/python3.11" in v.summary
    assert "pip install flash-attn" in (v.hint or "") and "/opt/venv/bin/python3.11" in (v.hint or "")
    decision = decide(v, [AttemptRecord(attempt=1, started_at=0.0, ended_at=1.0, resumed_step=None,
                                        last_step=None, crash_class=v.cls)], RestartSettings(), now=2.0)
    assert decision.action == "fail"


def test_compiled_extension_that_cannot_load():
    tail = ["Traceback (most recent call last):",
            '  File "/home/u/train.py", line 3, in <module>',
            "    import flash_attn_2_cuda as flash_attn_cuda",
            "ImportError: /home/u/.venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-"
            "linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"]
    v = classify(1, tail, steps_seen=0, python="/home/u/.venv/bin/python")
    assert v.cls == "missing_dependency" and "compiled extension" in v.summary
    assert "/home/u/.venv/bin/python" in v.summary and "flash_attn_2_cuda" in (v.hint or "")


def test_demo_without_torch_names_the_demo_extra():
    tail = ["Traceback (most recent call last):",
            f'  File "{REPO}/runner/demo/train.py", line 120, in <module>',
            "    import torch",
            "ModuleNotFoundError: No module named 'torch'"]
    v = classify(1, tail, steps_seen=0, python="/usr/bin/python3")
    assert v.cls == "missing_dependency" and "pip install 'moeconsole[demo]'" in (v.hint or "")
    assert "/usr/bin/python3" in (v.hint or "")


def test_an_import_error_logged_as_a_warning_decides_nothing():
    v = classify(1, ["WARNING: ImportError: apex not found, using torch AMP", "KeyError: 'labels'"], steps_seen=3)
    assert v.cls == "unknown"


@pytest.mark.parametrize("line, cls", [
    # src/slurmd/slurmstepd/req.c
    ("slurmstepd: error: *** JOB 1234 ON gpu-07 CANCELLED AT 2026-01-02T03:04:05 DUE TO TIME LIMIT ***", "time_limit"),
    ("slurmstepd: error: *** STEP 1234.0 ON gpu-07 CANCELLED AT 2026-01-02T03:04:05 DUE TO PREEMPTION ***", "preempted"),
    ("slurmstepd: error: *** JOB 1234 ON gpu-07 CANCELLED AT 2026-01-02T03:04:05 DUE TO NODE FAILURE, SEE "
     "SLURMCTLD LOG FOR DETAILS ***", "node_fail"),
    # src/plugins/task/cgroup/task_cgroup_memory.c (Slurm >= 20.11) and older releases
    ("slurmstepd: error: Detected 1 oom_kill event in StepId=1234.batch. Some of the step tasks have been OOM "
     "Killed.", "killed_oom"),
    ("slurmstepd: error: Detected 2 oom-kill event(s) in step 1234.0 cgroup. Some of your processes may have "
     "been killed by the cgroup out-of-memory handler.", "killed_oom"),
    ("slurmstepd-localhost: error: *** JOB 3 ON localhost CANCELLED AT 2026-11-21T22:34:21 ***", "job_cancelled"),
    # "STEP %s" from the step id's own string (Slurm >= 20.11): a heterogeneous component, the interactive step
    ("slurmstepd: error: *** STEP 1234.0+1 ON gpu-07 CANCELLED AT 2026-01-02T03:04:05 DUE TO TIME LIMIT ***",
     "time_limit"),
    ("slurmstepd: error: *** STEP 1234.interactive ON gpu-07 CANCELLED AT 2026-01-02T03:04:05 DUE TO PREEMPTION "
     "***", "preempted"),
])
def test_slurm_texts_give_the_job_state_classes_without_accounting(line, cls):
    v = classify(None, ["step 10 loss 1.0", "srun: Job step aborted: Waiting up to 32 seconds for job step "
                        "to finish.", line, "srun: error: gpu-07: task 0: Terminated"], steps_seen=10)
    assert v.cls == cls and line.split("error: ")[-1][:30] in " ".join(v.evidence)


def test_the_runners_own_cancel_after_a_hang_stays_a_hang():
    v = classify(None, ["slurmstepd: error: *** JOB 3 ON localhost CANCELLED AT 2026-11-21T22:34:21 ***"],
                 hang=True, steps_seen=10)
    assert v.cls == "hang"


def test_run_preflight_refuses_the_demo_when_its_python_lacks_torch(tmp_path):
    """`moeconsole run` checks the demo's own imports before launching anything."""
    code = ("import sys; sys.modules['torch'] = None; from moeconsole.console.cli import main; "
            f"sys.exit(main(['run', 'recipes/tiny-moe-cpu.yaml', '--detach', '--runs-dir', {str(tmp_path)!r}]))")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "missing_dependency" in res.stderr and "torch" in res.stderr
    assert "pip install 'moeconsole[demo]'" in res.stderr
    assert not any(tmp_path.iterdir()) or not any(p.is_dir() for p in tmp_path.iterdir())


def test_a_step_cancelled_after_a_rank_died_is_the_rank_death_not_a_scancel():
    """srun --kill-on-bad-exit cancels the step (slurmstepd says CANCELLED, with no reason) once a
    rank died: the rank's own end is the cause; a plain CANCELLED alone is someone's scancel."""
    tail = ["[rank1]: step 21 loss 2.9",
            "srun: error: node2: task 1: Killed",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
            "Root Cause (first observed failure):",
            "[0]:",
            "  time      : 2026-11-26_06:03:50",
            "  host      : node2",
            "  rank      : 1 (local_rank: 0)",
            "  exitcode  : -9 (pid: 4242)",
            "  error_file: <N/A>",
            "  traceback : Signal 9 (SIGKILL) received by PID 4242",
            "slurmstepd: error: *** STEP 176.0 ON node1 CANCELLED AT 2026-11-26T06:03:50 ***"]
    v = classify(1, tail)
    assert v.cls == "killed_oom" and "node2" in v.summary, v
    assert classify(1, tail[-1:]).cls == "job_cancelled"


# NCCL's transport failing under a live communicator: the WARN lines misc/socket.cc, transport/net_ib.cc
# and proxy.cc print (every release's wording) right before the call returns an error, and the error
# return reaching the proxy's progress thread. Host names, ports and numbers are placeholders.
NCCL_TRANSPORT_WARNS = [
    "node1:1:2 [0] misc/socket.cc:538 NCCL WARN Net : Connection closed by remote peer node2<47861>",
    "node1:1:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer node2<57557>",
    "node1:1:2 [1] misc/socket.cc:518 NCCL WARN Net : Call to recv from 10.0.0.2<58355> failed : Broken pipe",
    "node1:1:2 [1] misc/socket.cc:61 NCCL WARN socketProgressOpt: Call to recv from 10.0.0.2<3375> failed : "
    "Connection reset by peer",
    "node1:1:2 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : "
    "Software caused connection abort",
    "node1:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, "
    "vendor err 129",
    "node1:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.35.1<49189> with "
    "error 5, opcode 48, len 32710, vendor err 249",
    "node1:1:2 [6] transport/net_ib.cc:2244 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<39226> with "
    "status=12 opcode=32224 len=0 vendor err 129 (Recv) localGid fe80::1 remoteGids fe80::2",
    "node1:1:2 [6] transport/net_ib.cc:2244 NCCL WARN NET/IB: Got completion from peer 10.0.0.2<39226> with "
    "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RECV(128) vendor_err=129 hca mlx5_0",
    "node1:1:2 [6] gin/gin_ib.cc:700 NCCL WARN NET/IB/GIN: Got completion from peer 10.0.0.2<39226> with "
    "status=12 opcode=0 len=0 vendor err 129 (Send) hca mlx5_0",
    "node1:1:2 [1] proxy.cc:1119 NCCL WARN [Proxy Service 9] Failed to execute operation Connect from rank 9, "
    "retcode 6",
    "node1:1:2 [0] proxy.cc:1143 NCCL WARN Socket recv failed while polling for opId=0x7f6f18cb7f40",
    "node1:1:2 [0] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]",
]


@pytest.mark.parametrize("line", NCCL_TRANSPORT_WARNS)
def test_nccl_transport_failure_warnings_are_an_nccl_error(line):
    v = classify(1, ["step 40 loss 1.2", line], steps_seen=40)
    assert v.cls == "nccl_error" and line.split("NCCL ", 1)[1][:40] in " ".join(v.evidence), v
    assert v.summary.startswith("NCCL transport failure: "), v.summary
    if "[Progress Thread]" not in line:     # the summary quotes NCCL's own words from the phrase on
        assert v.summary.split(": ", 1)[1][:20] in line, v.summary


# the same IB work-completion failure retold without NCCL's "NET/IB :" head (a support article, a forum post): the
# work completion's vendor error that ends every net_ib.cc format still names it (batch 40)
@pytest.mark.parametrize("line", [
    "our job died with: Got completion from peer 10.0.35.1<49189> with error 5, opcode 48, len 32710, vendor err 249",
    "> Got completion from peer 10.0.0.2<39226> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RECV(128) "
    "vendor_err=129 hca mlx5_0",
])
def test_an_ib_completion_error_retold_without_its_head_is_an_nccl_error(line):
    v = classify(1, ["step 40 loss 1.2", line], steps_seen=40)
    assert v.cls == "nccl_error" and v.summary.startswith("NCCL transport failure: Got completion"), (v.cls, v.summary)


def test_a_completion_error_without_a_vendor_error_is_no_ib_failure():
    line = "worker 3: Got completion with error from the job queue, retrying"
    assert classify(1, ["step 40 loss 1.2", line], steps_seen=40).cls == "unknown"


def test_the_summary_quotes_the_first_transport_warning_not_the_progress_trace():
    tail = ["node1:1:2 [0] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]",
            "node1:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.2<5> "
            "with error 12, opcode 0, len 0, vendor err 129"]
    v = classify(1, tail, steps_seen=40)
    assert v.summary == ("NCCL transport failure: NET/IB : Got completion from peer 10.0.0.2<5> with error 12, "
                         "opcode 0, len 0, vendor err 129"), v.summary
    v = classify(1, tail[:1], steps_seen=40)
    assert v.summary == "NCCL transport failure: the proxy's progress thread failed (NCCL error 6)", v.summary


def test_nccl_teardown_info_and_a_recovered_probe_decide_nothing():
    """A normal teardown logs '[Service thread] Connection closed by localRank N' at INFO; an error
    trace that stops before a thread is a probe NCCL may recover from."""
    tail = ["node1:1:2 [0] NCCL INFO [Service thread] Connection closed by localRank 0",
            "node1:1:2 [0] NCCL INFO transport/net.cc:1137 -> 6"]
    assert classify(1, tail, steps_seen=40).cls == "unknown"


def test_a_segfault_outranks_the_nccl_transport_warnings_it_causes():
    tail = ["node1:1:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer node2<5>",
            "./train.sh: line 12: 41234 Segmentation fault      (core dumped) python train.py"]
    assert classify(1, tail, steps_seen=40).cls == "segfault"


@pytest.mark.parametrize("line", [
    # torch (aten/src/ATen/cuda/CUDABlas.cpp TORCH_CUDABLAS_CHECK, cudnn/Exceptions.h)
    "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle, opa, opb, m, n, "
    "k, &alpha, a, lda, b, ldb, &beta, c, ldc)`",
    "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED",
    "RuntimeError: cuDNN error: CUDNN_STATUS_MAPPING_ERROR",
    "RuntimeError: CUDA error: CUBLAS_STATUS_MAPPING_ERROR when calling `cublasGemmEx(...)`",
    # cuDNN 9's sub-codes naming the layer under it that failed
    "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED_CUDART",
    # ROCm's hipBLAS names; a glog CHECK on a cuBLAS status (caffe math_functions.cu)
    "rocblas error: HIPBLAS_STATUS_EXECUTION_FAILED",
    "F0421 09:02:45.161278  7233 math_functions.cu:52] Check failed: status == CUBLAS_STATUS_SUCCESS (13 vs. 0)  "
    "CUBLAS_STATUS_EXECUTION_FAILED",
])
def test_cublas_and_cudnn_execution_failures_are_a_cuda_fault(line):
    v = classify(1, ["step 40 loss 1.2", line], steps_seen=40)
    want = {"AMD_SERIALIZE_KERNEL": "3"} if "HIPBLAS" in line else {"CUDA_LAUNCH_BLOCKING": "1"}
    assert v.cls == "cuda_fault" and v.env == want, v
    assert "_STATUS_" in v.summary


@pytest.mark.parametrize("line, cls", [
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", "cuda_oom"),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_NOT_INITIALIZED when calling `cublasCreate(handle)`", "unknown"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR", "unknown"),
])
def test_other_library_statuses_keep_their_class(line, cls):
    assert classify(1, [line], steps_seen=40).cls == cls


@pytest.mark.parametrize("line, cls", [
    # src/srun/launch.c _task_finish: error("%s: %s %s: Out Of Memory", hosts, task_str, tasks) when a
    # task's status is Slurm's SIG_OOM (the job's cgroup OOM killer ended it)
    ("srun: error: gpu001: task 0: Out Of Memory", "killed_oom"),
    ("srun: error: j17r3n18: tasks 0-3,5: Out Of Memory", "killed_oom"),
    # srun/salloc _node_fail_handler: error("Node failure on %s", nodelist)
    ("srun: error: Node failure on gpu-07", "node_fail"),
    ("salloc: error: Node failure on gpu-[07-08]", "node_fail"),
])
def test_srun_task_oom_and_node_failure_without_accounting(line, cls):
    tail = ["[rank1]: step 21 loss 2.9", "[rank0]: torch.distributed.DistBackendError: NCCL error in: "
            "ProcessGroupNCCL.cpp:1970, remote process exited or there was a network error", line]
    v = classify(1, tail, steps_seen=21)
    assert v.cls == cls and line in v.evidence, v
    if cls == "node_fail":
        assert v.summary.startswith(line.rsplit(" ", 1)[1] + " failed: "), v.summary


def test_srun_words_for_a_plain_task_end_are_not_a_slurm_verdict():
    assert classify(1, ["srun: error: gpu001: task 0: Exited with exit code 1"], steps_seen=3).cls == "unknown"


@pytest.mark.parametrize("line, cls", [
    # torch/distributed/elastic/multiprocessing/api.py: logger.error("failed (exitcode: %s) local_rank: %s
    # (pid: %s) of binary: %s", ...) for the first failure, behind its glog header, and cut after the code
    ("E0312 10:11:12.000000 4242 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -11) "
     "local_rank: 0 (pid: 4243) of binary: /usr/bin/python", "segfault"),
    ("[QUESTION] torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -11)", "segfault"),
    ("torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -9)", "killed_oom"),
    # rich's log columns (RichHandler) wrap the message inside "(pid:" and put file:line at the margin
    ("[01:21:55] ERROR    failed (exitcode: -7) local_rank: 0 (pid:      api.py:672", "bus_error"),
])
def test_the_agents_failed_line_gives_the_signal_even_cut_after_the_exit_code(line, cls):
    assert classify(1, [line], steps_seen=30).cls == cls


def test_failed_exitcode_inside_other_words_is_not_the_agents_line():
    assert classify(1, ["job 7 failed (exitcode: -11) and was requeued by the scheduler"],
                    steps_seen=30).cls == "unknown"


@pytest.mark.parametrize("line", [
    # Python's OSError from strerror(ENOSPC) / strerror(EDQUOT)
    "OSError: [Errno 28] No space left on device",
    "OSError: [Errno 122] Disk quota exceeded: '/ckpt/checkpoint-400/model.safetensors'",
    # safetensors (Rust io::Error debug form), torch.save's zip writer (caffe2/serialize/inline_container.cc)
    'safetensors_rust.SafetensorError: Error while serializing: IoError(Os { code: 28, kind: StorageFull, '
    'message: "No space left on device" })',
    "RuntimeError: [enforce fail at inline_container.cc:778] . PytorchStreamWriter failed writing file "
    "data.pkl: file write failed",
    # behind a prefix the normaliser does not know (a Metaflow task's "[run/step/task (pid N)] [uuid] ")
    "2023-04-29 06:01:12.977 [177/train/578 (pid 28936)] [09c561ee-a44c] OSError: [Errno 28] No space left on device",
])
def test_a_write_that_ran_out_of_room_is_disk_full_and_waits_for_room(line):
    tail = ["Saving model checkpoint to out/checkpoint-400", "Traceback (most recent call last):",
            '  File "/usr/lib/python3.11/site-packages/torch/serialization.py", line 652, in save', line]
    v = classify(1, tail, steps_seen=400)
    assert v.cls == "disk_full" and v.retryable and v.recovery == "wait_disk", v
    assert v.hint and "free space" in v.hint and "verified checkpoint" in v.hint, v
    assert line.split("] ", 2)[-1][:25] in v.summary if "pid 28936" in line else line[:25] in v.summary, v.summary


@pytest.mark.parametrize("lines", [
    # torch's MapAllocator (aten/src/ATen/MapAllocator.cpp) for a DataLoader worker's shared-memory tensor
    ["Traceback (most recent call last):",
     "RuntimeError: unable to write to file </torch_3046_2373297702_0>: No space left on device (28)"],
    # NCCL <= 2.11's shm transport (shm.h: SYSCHECK(shm_allocate(...), "posix_fallocate"))
    ["node1:123:456 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device",
     "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, unhandled system "
     "error, NCCL version 2.10.3"],
    # a write into /dev/shm by name
    ["OSError: [Errno 28] No space left on device: '/dev/shm/cache/batch_17.pt'"],
])
def test_shared_memory_out_of_room_is_not_the_disk(lines):
    """ENOSPC on /dev/shm: torch's own words for that exhaustion (the DataLoader's SIGBUS text,
    "insufficient shared memory (shm)") make it bus_error; waiting for the output disk never helps."""
    v = classify(1, lines, steps_seen=40)
    assert v.cls == "bus_error" and not v.retryable and v.recovery == "fail", v
    assert "shared memory (/dev/shm) is full" in v.summary and "--shm-size" in (v.hint or ""), v


def test_a_disk_full_line_after_a_fatal_signal_is_not_the_cause():
    v = classify(-11, ["OSError: [Errno 28] No space left on device", "Segmentation fault (core dumped)"],
                 steps_seen=40)
    assert v.cls == "segfault", v


def test_an_ordinary_unknown_crash_gets_no_disk_hint():
    v = classify(1, ["Traceback (most recent call last):", "ValueError: bad batch"], steps_seen=3)
    assert v.cls == "unknown" and v.hint is None


@pytest.mark.parametrize("line, summary", [
    # ProcessGroupNCCL's heartbeat monitor (getNCCLWatchdogTimeoutExitMsg, LOG(FATAL)), both reasons
    ("[rank2]:[F205 18:19:06.383067836 ProcessGroupNCCL.cpp:1614] [PG ID 17 PG GUID 137 Rank 2] [PG ID 17 "
     "PG GUID 137 Rank 2] Terminating the process after attempting to dump debug info, due to ProcessGroupNCCL "
     "watchdog hang.", "ProcessGroupNCCL watchdog got stuck"),
    ("[rank3]:[F710 18:08:32.707469047 ProcessGroupNCCL.cpp:1725] [PG ID 0 PG GUID 0(default_pg) Rank 3] "
     "[PG ID 0 PG GUID 0(default_pg) Rank 3] Terminating the process after attempting to dump debug info, due "
     "to collective timeout or exception.", "ProcessGroupNCCL ended the process: collective timeout or exception "
     "(rank 3)"),
    # c10::Error's location line for the timeout WorkNCCL::checkTimeout throws, its message cut above it
    ("Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:632 "
     "(most recent call first):", "NCCL watchdog timeout (a collective timed out)"),
])
def test_the_nccl_watchdogs_own_exit_lines_are_an_nccl_timeout(line, summary):
    v = classify(1, ["step 40 loss 1.2", line], steps_seen=40)
    assert v.cls == "nccl_error" and v.summary == summary, v
    assert classify(None, [line], hang=True, steps_seen=40).cls == "nccl_error"   # NCCL said it timed out


def test_the_watchdog_threads_rethrow_location_is_an_nccl_error_but_not_a_timeout():
    line = ("Exception raised from ncclCommWatchdog at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1901 "
            "(most recent call first):")
    assert classify(1, [line], steps_seen=40).cls == "nccl_error"
    assert classify(None, [line], hang=True, steps_seen=40).cls == "hang"


@pytest.mark.parametrize("line, cls", [
    # slurmstepd's req.c up to Slurm 17.x: the node after the reason, or inside it, or after the stars
    ("slurmstepd: *** JOB 830329 CANCELLED AT 2018-08-06T17:21:44 DUE TO TIME LIMIT on n447 ***", "time_limit"),
    ("slurmstepd: error: *** STEP 830329.0 CANCELLED AT 2018-08-06T17:21:44 DUE TO TIME LIMIT on n447 ***",
     "time_limit"),
    ("slurmstepd: error: *** JOB 77 CANCELLED AT 2017-03-01T10:00:00 DUE TO PREEMPTION on gpu12 ***", "preempted"),
    ("slurmstepd: error: *** JOB 77 CANCELLED AT 2017-03-01T10:00:00 DUE TO NODE gpu12 FAILURE ***", "node_fail"),
    ("slurmstepd: error: *** JOB 77 CANCELLED AT 2017-03-01T10:00:00 DUE TO JOB REQUEUE ***", "preempted"),
    ("slurmstepd: error: *** JOB 77 CANCELLED AT 2017-03-01T10:00:00 *** on gpu12", "job_cancelled"),
])
def test_older_slurmstepd_cancel_lines_give_the_jobs_state(line, cls):
    v = classify(None, ["step 40 loss 1.2", line], steps_seen=40)
    assert v.cls == cls, v


def test_module_not_found_message_alone_is_the_missing_dependency():
    """ModuleNotFoundError's message on its own line (an issue title), frames after it and nothing raised."""
    tail = ["No module named 'swift.megatron.model.gpt_bridge'",
            '  File "/x/megatron/core/dist_checkpointing/strategies/common.py", line 89, in load_common',
            "    return torch.load(load_path, map_location='cpu', weights_only=False)"]
    v = classify(1, tail, steps_seen=0)
    assert v.cls == "missing_dependency" and "swift.megatron.model.gpt_bridge" in v.summary, v
    # a logged warning that names a missing optional module says more on its line: not the cause
    warn = ["Warning: No module named 'apex', falling back to torch", "Traceback (most recent call last):",
            "ValueError: bad batch"]
    assert classify(1, warn, steps_seen=3).cls == "unknown"


def test_torch_save_to_a_full_filesystem_is_disk_full():
    """What torch 2.x's torch.save printed for real on a full tmpfs (tests/runner/test_runner_disk_full.py):
    no errno anywhere, only the stream's exception and the zip writer's offset check."""
    tail = ["Traceback (most recent call last):",
            '  File "/venv/lib/python3.11/site-packages/torch/serialization.py", line 1312, in _save',
            "    zip_file.write_record(name, storage, num_bytes)",
            "RuntimeError: basic_ios::clear: iostream error", "",
            "During handling of the above exception, another exception occurred:", "",
            "Traceback (most recent call last):",
            '  File "/venv/lib/python3.11/site-packages/torch/serialization.py", line 834, in __exit__',
            "    self.file_like.write_end_of_file()",
            "RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos 507776 vs 507664"]
    v = classify(1, tail, steps_seen=12)
    assert v.cls == "disk_full" and "unexpected pos 507776 vs 507664" in v.summary, v
    assert classify(1, ["ValueError: unexpected position in stream"], steps_seen=3).cls == "unknown"


# ---------------------------------------------------------------- crashes a restart cannot fix

def _fails_without_restart(v) -> None:
    assert not v.retryable and v.recovery == "fail"
    decision = decide(v, [AttemptRecord(attempt=1, started_at=0.0, ended_at=1.0, resumed_step=None,
                                        last_step=None, crash_class=v.cls)], RestartSettings(), now=2.0)
    assert decision.action == "fail" and decision.alert == "critical"


# torch/cuda/__init__.py _check_driver (and c10/cuda/CUDAFunctions.cpp, the same words), the CUDA
# runtime's cudaGetErrorString for cudaErrorInsufficientDriver / cudaErrorSystemDriverMismatch, and
# how frameworks print them (THCudaCheck, glog CHECK, a bare CUDA Error line).
@pytest.mark.parametrize("line", [
    "RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU "
    "driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx",
    "RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version",
    "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=74 error=35 : CUDA driver version is "
    "insufficient for CUDA runtime version",
    "F1127 13:49:06.743296 17418 hl_cuda_device.cc:565] Check failed: cudaSuccess == cudaStat (0 vs. 35) "
    "Cuda Error: CUDA driver version is insufficient for CUDA runtime version",
    "RuntimeError: cudaErrorInsufficientDriver",
    "RuntimeError: CUDA error: system has unsupported display driver / cuda driver combination",
])
def test_a_driver_older_than_the_runtime_is_an_environment_error(line):
    v = classify(1, ["Traceback (most recent call last):", '  File "/w/train.py", line 9, in <module>',
                     "    model.cuda()", line], steps_seen=0)
    assert v.cls == "environment_error", v.summary
    assert "driver" in v.summary and "update the driver" in (v.hint or "")
    _fails_without_restart(v)


def test_the_driver_version_torch_found_is_named_as_the_cuda_it_supports():
    v = classify(1, ["RuntimeError: The NVIDIA driver on your system is too old (found version 11040)."])
    assert "CUDA 11.4" in v.summary


# cudaErrorNoKernelImageForDevice / CUDA_ERROR_NO_BINARY_FOR_GPU / cudaErrorUnsupportedPtxVersion,
# and torch's _check_cubins warning naming the architecture.
SM86 = ("/opt/conda/lib/python3.10/site-packages/torch/cuda/__init__.py:145: UserWarning: "
        "NVIDIA GeForce RTX 3090 with CUDA capability sm_86 is not compatible with the current PyTorch installation.")


@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    "Error no kernel image is available for execution on the device at line 167 in file csrc/ops.cu",
    "RuntimeError: CUDA driver error: CUDA_ERROR_NO_BINARY_FOR_GPU",
    "RuntimeError: cudaErrorNoKernelImageForDevice",
    "RuntimeError: CUDA error: the provided PTX was compiled with an unsupported toolchain.",
])
def test_a_build_without_the_gpus_architecture_is_an_environment_error(line):
    v = classify(1, [SM86, "The current PyTorch install supports CUDA capabilities sm_37 sm_50 sm_60 sm_70.",
                     "Traceback (most recent call last):", '  File "/w/train.py", line 9, in <module>', line],
                 steps_seen=0)
    assert v.cls == "environment_error", v.summary
    assert "sm_86" in v.summary and "sm_86" in (v.hint or "") and "torch" in (v.hint or "")
    _fails_without_restart(v)


def test_the_sm_warning_alone_decides_only_when_nothing_else_ends_the_text():
    assert classify(1, [SM86]).cls == "environment_error"
    # the warning, then training fails for a reason of its own: that reason is the cause
    later = [SM86, "Traceback (most recent call last):", '  File "/w/train.py", line 9, in <module>',
             "ValueError: bad shape"]
    assert classify(1, later).cls == "unknown"


def test_torchs_cuda_init_warning_is_not_the_crash():
    """torch warns 'CUDA initialization: The NVIDIA driver ... too old' and falls back to the CPU;
    a later error of its own is the cause."""
    tail = ["/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:124: UserWarning: CUDA initialization: "
            "The NVIDIA driver on your system is too old (found version 11000).",
            "Traceback (most recent call last):", '  File "/w/train.py", line 9, in <module>',
            "KeyError: 'labels'"]
    assert classify(1, tail).cls == "unknown"


# huggingface_hub utils/_http.py hf_raise_for_status, errors.py, file_download.py, _validators.py;
# transformers' and datasets' wrappers; ModelScope's hub. (text, words in the summary, words in the hint)
HUB_CASES = [
    (["huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-6)", "",
      "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/config.json.",
      "Access to model meta-llama/Llama-3.1-8B is restricted. You must have access to it and be authenticated "
      "to access it. Please log in."], ("gated", "meta-llama/Llama-3.1-8B"), "huggingface-cli login"),
    (["OSError: You are trying to access a gated repo.",
      "Make sure to have access to it at https://huggingface.co/google/gemma-2-9b."], ("gated", "google/gemma-2-9b"),
     "HF_TOKEN"),
    (["datasets.exceptions.DatasetNotFoundError: Dataset 'cais/hle' is a gated dataset on the Hub. You must be "
      "authenticated to access it."], ("gated", "cais/hle"), "huggingface-cli login"),
    (["huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error. (Request ID: Root=1-6)", "",
      "Repository Not Found for url: https://huggingface.co/api/models/org/privat-model/revision/main.",
      "Please make sure you specified the correct `repo_id` and `repo_type`.",
      "If you are trying to access a private or gated repo, make sure you are authenticated."],
     ("no such repo", "org/privat-model"), "repo id"),
    (["OSError: qwen/Qwen2-7B is not a local folder and is not a valid model identifier listed on "
      "'https://huggingface.co/models'"], ("no such repo",), "repo id"),
    (["datasets.exceptions.DatasetNotFoundError: Dataset 'my/data' doesn't exist on the Hub or cannot be accessed."],
     ("no such repo", "my/data"), "repo id"),
    (["huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. (Request ID: x)", "",
      "Revision Not Found for url: https://huggingface.co/api/models/gpt2/revision/v9."], ("no such repo",),
     "repo id"),
    (["huggingface_hub.errors.HFValidationError: Repo id must be in the form 'repo_name' or "
      "'namespace/repo_name': '/data/models/qwen'. Use `repo_type` argument if needed."], ("not a valid",),
     "`namespace/name`"),
    (["huggingface_hub.utils._validators.HFValidationError: Repo id must use alphanumeric chars or '-', '_', '.', "
      "'--' and '..' are forbidden, '-' and '.' cannot start or end the name, max length is 96: '../ckpt'."],
     ("not a valid",), "`namespace/name`"),
    (["huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the file on the "
      "Hub and we cannot find the requested files in the local cache. Please check your connection and try again "
      "or make sure your Internet connection is on."], ("cannot be reached",), "huggingface-cli download"),
    (["huggingface_hub.errors.LocalEntryNotFoundError: Cannot find the requested files in the disk cache and "
      "outgoing traffic has been disabled. To enable hf.co look-ups and downloads online, set 'local_files_only' "
      "to False."], ("cannot be reached",), "HF_HUB_OFFLINE"),
    (["huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/models/gpt2: offline "
      "mode is enabled. To disable it, please unset the `HF_HUB_OFFLINE` environment variable."],
     ("cannot be reached", "gpt2"), "HF_HUB_OFFLINE"),
    (["OSError: We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it in the cached "
      "files and it looks like Qwen/Qwen2-7B is not the path to a directory containing a file named config.json."],
     ("cannot be reached",), "huggingface-cli download"),
    (["modelscope.hub.errors.NotExistError: The model: qwen/Qwen9-7B not exists"], ("ModelScope",), "--use_hf"),
    (["requests.exceptions.HTTPError: The request model: swift/llava-7b does not exist!"],
     ("ModelScope", "swift/llava-7b"), "modelscope login"),
    # transformers tokenization_utils_base.py PreTrainedTokenizerBase.from_pretrained: every vocab file
    # None (raise EnvironmentError, printed OSError); later versions raise the same OSError for any
    # other exception of cached_file; a local directory is named whole
    (["OSError: Can't load tokenizer for 'openai/clip-vit-large-patch14'. If you were trying to load it from "
      "'https://huggingface.co/models', make sure you don't have a local directory with the same name. Otherwise, "
      "make sure 'openai/clip-vit-large-patch14' is the correct path to a directory containing all relevant files "
      "for a CLIPTokenizer tokenizer."], ("tokenizer could not be loaded", "openai/clip-vit-large-patch14"),
     "huggingface-cli download"),
    (["OSError: Can't load tokenizer for '/data/models/Qwen3-30B-A3B'. Otherwise, make sure "
      "'/data/models/Qwen3-30B-A3B' is the correct path to a directory containing all relevant files for a "
      "Qwen2TokenizerFast tokenizer."], ("tokenizer could not be loaded", "/data/models/Qwen3-30B-A3B"),
     "tokenizer_config.json"),
    # a Hub error the log shows before the tokenizer's own names the failure
    (["huggingface_hub.errors.GatedRepoError: 401 Client Error.",
      "Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-3.1-8B/resolve/main/tokenizer.json.",
      "OSError: Can't load tokenizer for 'meta-llama/Llama-3.1-8B'. Otherwise, make sure 'meta-llama/Llama-3.1-8B' "
      "is the correct path to a directory containing all relevant files for a LlamaTokenizerFast tokenizer."],
     ("gated", "meta-llama/Llama-3.1-8B"), "request access"),
]


@pytest.mark.parametrize("text, words, hint", HUB_CASES, ids=lambda x: x[0][:50] if isinstance(x, list) else None)
def test_a_model_or_dataset_the_hub_will_not_give_is_hub_access(text, words, hint):
    frames = ["Traceback (most recent call last):",
              '  File "/opt/venv/lib/python3.11/site-packages/transformers/utils/hub.py", line 398, in cached_file',
              "    resolved_file = hf_hub_download("]
    v = classify(1, frames + text, steps_seen=0)
    assert v.cls == "hub_access", v.summary
    assert all(w in v.summary for w in words), v.summary
    assert hint in (v.hint or "")
    _fails_without_restart(v)


def test_a_hub_error_logged_while_training_goes_on_is_not_the_cause():
    """ms-swift logs ModelScope's '[ERROR:modelscope] The request model: unknown does not exist!' and
    trains on (QwenLM/Qwen3-VL#841): a crash after it is the crash's own."""
    tail = ["[ERROR:modelscope] The request model: unknown does not exist!",
            "{'loss': 1.2, 'global_step/max_steps': '10/100'}",
            "Traceback (most recent call last):", '  File "/w/train.py", line 9, in <module>',
            "ValueError: the batch has no labels"]
    assert classify(1, tail, steps_seen=10).cls == "unknown"
    # a fatal signal after a Hub warning is the signal's
    assert classify(-11, ["[ERROR:modelscope] The request model: unknown does not exist!"]).cls == "segfault"


def test_hub_summary_and_hint_carry_no_token_from_the_masked_text():
    """The runner masks the tail before classifying (IngestPipe.tail_for_report); the verdict is built
    from it, so a token a proxy URL carried cannot reach the summary or the hint."""
    from moeconsole.runner.rundir.secrets import Redactor
    planted = "hf_" + "PlantedTokenValue0123456789abcdef"
    raw = ["huggingface_hub.errors.GatedRepoError: 401 Client Error.",
           f"Cannot access gated repo for url https://u:{planted}@huggingface.co/org/m/resolve/main/config.json"
           f"?token={planted}"]
    v = classify(1, [Redactor().redact(line) for line in raw])
    assert v.cls == "hub_access" and "org/m" in v.summary
    assert planted not in v.summary + (v.hint or "") + " ".join(v.evidence)


def test_a_driver_line_logged_before_a_cpu_fallback_is_not_the_cause():
    """TensorFlow logs the driver mismatch at cuInit and goes on on the CPU
    (tensorflow/stream_executor/cuda/cuda_driver.cc); the exception that ends the text is the cause."""
    tail = ["E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit: "
            "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system has unsupported display driver / cuda driver combination",
            "Traceback (most recent call last):", '  File "/w/train.py", line 9, in <module>',
            "ValueError: Shapes (None, 10) and (None, 1) are incompatible"]
    assert classify(1, tail).cls == "unknown"
    assert classify(1, tail[:1]).cls == "environment_error"


# vLLM refusing to start for want of GPU memory, in its own words (v1/worker/gpu_worker.py init_device,
# v0 worker and v1 kv_cache_utils, v1 _check_enough_kv_cache_memory); a colocated GRPO rollout engine
# prints them when the training model already holds the GPU (vllm-project/vllm#25837).
VLLM_MEMORY_REFUSALS = [
    "ValueError: Free memory on device (3.22/4.0 GiB) on startup is less than desired GPU memory "
    "utilization (0.9, 3.6 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
    "(EngineCore_DP0 pid=17374) ERROR 09-28 15:47:24 [core.py:718] ValueError: Free memory on device cuda:0 "
    "(7.34/15.49 GiB) on startup is less than desired GPU memory utilization (0.8, 12.39 GiB). Decrease GPU "
    "memory utilization or reduce GPU memory used by other processes.",
    "[rank0]: ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
    "when initializing the engine.",
    "ValueError: To serve at least one request with the models's max seq len (32768), (4.00 GiB KV cache is "
    "needed, which is larger than the available KV cache memory (1.20 GiB). Try increasing "
    "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.",
]


@pytest.mark.parametrize("line", VLLM_MEMORY_REFUSALS)
def test_vllm_refusing_to_start_for_gpu_memory_is_an_oom(line):
    v = classify(1, ["Traceback (most recent call last):",
                     '  File "/env/lib/python3.10/site-packages/vllm/v1/worker/gpu_worker.py", line 180, in init_device',
                     "    raise ValueError(", line], steps_seen=0)
    assert v.cls == "cuda_oom", (v.summary, v.evidence)
    # each refusal with vLLM's own advice: the reservation, or the KV cache left after the weights
    kv = "cache" in line
    assert ("vLLM's KV cache cannot hold one sequence" if kv else "vLLM could not reserve its GPU memory") in v.summary
    assert ("increase gpu_memory_utilization" if kv else "lower it") in (v.hint or "")
    assert decide(v, [AttemptRecord(1, 0.0, 10.0, v.cls, 0, 0)], RestartSettings(), 10.0).action == "restart"
    # the training model or a leftover server holding the GPU: wait for it, as for any OOM at start
    busy = classify(1, [line], steps_seen=0, foreign_gpu_memory=True)
    assert busy.cls == "gpu_busy_at_init" and "vLLM" in busy.summary


def test_vllm_free_memory_refusal_wrapped_at_a_space_is_still_read():
    tail = ["ValueError: Free memory on device cuda:0 (2.6/121.63 GiB) on startup",
            "is less than desired GPU memory utilization (0.08, 9.73 GiB)"]
    assert classify(1, tail, steps_seen=0).cls == "cuda_oom"


@pytest.mark.parametrize("cut", [
    "Watchdog caught collective operati", "Watchdog caught collective", "Watchdog caught coll",
    "Watchdog caught",
])
def test_a_watchdog_timeout_line_cut_short_is_still_a_timeout(cut):
    """torch's WorkNCCL::checkTimeout message, cut wherever a paste or a terminal cut it
    (hiyouga/LlamaFactory#8261: glued to a tqdm bar and cut inside "operation")."""
    line = f"[1763]   1%|▏  | 24/1752 [01:08<1:22:56,  2.88s/it][rank5]:[E602 11:17:52.185053341 " \
           f"ProcessGroupNCCL.cpp:632] [Rank 5] {cut}"
    v = classify(1, [line], steps_seen=24)
    assert v.cls == "nccl_error" and "timeout" in v.summary, v.summary
    # a timeout the watchdog reported turns the runner's own hang verdict into an NCCL timeout
    assert classify(None, [line], hang=True, steps_seen=24).cls == "nccl_error"
    # other words after "Watchdog caught" are not torch's message
    for other in ("Watchdog caught nothing unusual, resuming", "Watchdog caught colt"):
        assert classify(1, [line.replace(cut, other)], steps_seen=24).cls == "unknown"


def _vllm_logged(lines, header):
    return [f"{header} {line}" for line in lines]


@pytest.mark.parametrize("header", [
    "(VllmWorker TP0 pid=675227) ERROR 03-02 19:49:43 [multiproc_executor.py:242]",     # vLLM >= 0.7
    "(EngineCore_DP0 pid=17374) ERROR 09-28 15:47:24 [v1/engine/core.py:718]",
    "ERROR 01-28 03:21:01 engine.py:387]",                                              # vLLM <= 0.6
])
def test_a_vllm_workers_traceback_behind_its_log_header_is_read(header):
    """vLLM logs a worker's traceback line by line behind its own header (vllm/logger.py's
    "%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d]", the process prefix "(VllmWorker TP0 pid=N)"):
    the exception at the end decides, as it does without the header."""
    tb = ["Traceback (most recent call last):",
          '  File "/env/lib/python3.12/site-packages/vllm/v1/worker/gpu_worker.py", line 3, in init_device',
          "    import flashinfer",
          "ModuleNotFoundError: No module named 'flashinfer'"]
    v = classify(1, _vllm_logged(tb, header))
    assert v.cls == "missing_dependency" and "flashinfer" in v.summary, v.summary
    other = classify(1, _vllm_logged(tb[:3] + ["vllm.v1.engine.exceptions.EngineDeadError: EngineCore died"], header))
    assert other.cls == "unknown" and "EngineDeadError: EngineCore died" in other.summary, other.summary
    # a WARNING keeps its header, as glog's W does: an import error logged there is not the cause
    warned = ["WARNING 03-02 19:49:43 [utils.py:12] ImportError: No module named 'flash_attn'; using the fallback"]
    assert classify(1, warned + _vllm_logged(tb[:3] + ["ValueError: no labels"], header)).cls == "unknown"


@pytest.mark.parametrize("line", [
    "[rank3]:[E1105 10:01:02.123456 ProcessGroupNCCL.cpp:1423] [PG ID 0 PG GUID 0(default_pg) Rank 3] Heartbeat "
    "monitor timed out! Process will be terminated after dumping debug info. workMetaList_.size()=1",
    "[E ProcessGroupNCCL.cpp:1180] [Rank 3] Heartbeat monitor timed out! Process will be terminated after "
    "dumping debug info. workMetaList_.size()=0",
    "[rank3]:[E1105 10:01:02.123456 ProcessGroupNCCL.cpp:1410] [PG ID 0 PG GUID 0(default_pg) Rank 3] First PG on "
    "this rank that detected no heartbeat of its watchdog.",
])
def test_the_heartbeat_monitor_finding_the_watchdog_hung_is_a_stuck_watchdog(line):
    """ProcessGroupNCCL::heartbeatMonitor's LOG(ERROR) lines before its exit message (torch 2.3+): the
    watchdog thread stopped, as "watchdog got stuck" says; a paste often keeps only these."""
    v = classify(1, [line], steps_seen=10)
    assert v.cls == "nccl_error" and v.summary == "ProcessGroupNCCL watchdog got stuck", v.summary
    assert classify(None, [line], hang=True, steps_seen=10).cls == "nccl_error"
    # other programs' heartbeat monitors are not torch's
    assert classify(1, ["follower heartbeat monitor timed out, switching state to candidate"]).cls == "unknown"


def test_an_exception_class_named_only_by_its_errors_module_is_the_exception_line():
    """Triton's OutOfResources (triton/runtime/errors.py) ends in neither Error nor Exception: the unknown
    summary still quotes it, not a bare exit status."""
    tail = ['  File "/env/lib/python3.10/site-packages/triton/compiler/compiler.py", line 374, in _init_handles',
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 66560, Hardware limit: "
            "65536. Reducing block sizes or `num_stages` may help."]
    v = classify(1, tail, steps_seen=10)
    # since batch 72 Triton's OutOfResources raised has its class (environment_error: the kernel's tiling exceeds
    # this GPU's limits, docs/crash-classes.md); its summary still quotes Triton's words
    assert v.cls == "environment_error" and "out of resource: shared memory" in v.summary, v.summary
    # another class of an errors module, with no class of its own, is still the unknown summary's exception line
    other = ['  File "/env/lib/python3.10/site-packages/triton/compiler/code_generator.py", line 1100, in visit_Call',
             "triton.compiler.errors.CompileTimeAssertionFailure: at 12:4: BLOCK_K must divide K"]
    v = classify(1, other, steps_seen=10)
    assert v.cls == "unknown" and "CompileTimeAssertionFailure: at 12:4" in v.summary, v.summary


# Batch 17: accelerators and stacks the corpus lacked (ROCm, Ascend, XLA, flash-attn, bitsandbytes).
# Each line is the program's own format string, filled in.

@pytest.mark.parametrize("line", [
    # TensorFlow / XLA stream executor (cuda_driver.cc, rocm_driver.cc DeviceAllocate)
    "2023-11-01 16:19:17.812101: E tensorflow/compiler/xla/stream_executor/rocm/rocm_driver.cc:606] failed to "
    "allocate 127.99TiB (140729850295296 bytes) from device: HIP_ERROR_OutOfMemory",
    "2019-01-08 19:06:11.303639: E tensorflow/stream_executor/rocm/rocm_driver.cc:601] failed to allocate 7.35G "
    "(7889485824 bytes) from device: hipError_t(1002)",
    "2020-05-01 10:00:00.000000: E tensorflow/stream_executor/cuda/cuda_driver.cc:806] failed to allocate 3.94G "
    "(4230807552 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory",
    # XLA statuses in both spellings of the code, from its BFC allocator and the TPU compiler
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for 2.99GiB "
    "(3206250496B) on device ordinal 0",
    "RuntimeError: Resource exhausted: Failed to allocate request for 32.00MiB (33554432B) on device ordinal 0",
    "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory "
    "in memory space vmem.",
])
def test_xla_and_rocm_device_allocation_failures_are_an_oom(line):
    assert classify(1, [line], steps_seen=10).cls == "cuda_oom"
    # gRPC's RESOURCE_EXHAUSTED for a message too large, or a quota, has nothing to do with device memory
    for other in ["grpc._channel._InactiveRpcError: status = StatusCode.RESOURCE_EXHAUSTED details = \"Received "
                  "message larger than max (8388608 vs. 4194304)\"",
                  "RuntimeError: RESOURCE_EXHAUSTED: Quota exceeded for quota metric 'Requests'"]:
        assert classify(1, [line, other], steps_seen=10).cls == "cuda_oom"
        assert classify(1, [other], steps_seen=10).cls == "unknown", other


@pytest.mark.parametrize("lines", [
    # torch_npu ProcessGroupHCCL's HCCL_CHECK_ERROR (new and old wording)
    ["RuntimeError: [ERROR] HCCL error in: torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:64"],
    ["RuntimeError: HCCL error in: /usr1/torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:112, 7"],
    # torch_npu's op runner failing a collective, with CANN's EI0006
    ["RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: "
     "HcclAllreduce, error code is 6",
     "EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did not "
     "send the data in time. Please check the reason for the rank being stuck"],
    # CANN's device error report of a collective stuck past HCCL_EXEC_TIMEOUT
    ["RuntimeError: ACL stream synchronize failed.",
     "EI9999: 2024-10-21-10:42:00.358.410  The error from device(chipId:3, dieId:0), serial number is 9, hccl "
     "fftsplus task timeout occurred during task execution, stream_id:5, sq_id:5, task_id:38827, stuck notify "
     "num:1, timeout:30min(default).[FUNC:ProcessStarsHcclFftsPlusTimeoutErrorInfo][FILE:device_error_proc.cc]"],
])
def test_ascend_hccl_failures_are_nccl_errors(lines):
    """HCCL is NCCL's counterpart on Ascend: the same recovery (long cooldown) fits."""
    v = classify(1, lines, steps_seen=10)
    assert v.cls == "nccl_error" and v.cooldown_scale == 3.0 and v.summary.startswith("HCCL (Ascend)"), v.summary
    # torch_npu's warning about HCCL_EXEC_TIMEOUT is not a failure
    warn = ("[rank7]:[W609 06:57:47.819535026 compiler_depend.ts:877] Warning: The HCCL execution timeout was set "
            "to never timeout, so it is bigger than watchdog timeout 1800000ms which is set by init_process_group!")
    assert classify(1, [warn, "ValueError: bad batch"], steps_seen=10).cls == "unknown"


@pytest.mark.parametrize("kind", ["aicpu exception", "aicore exception", "vector core exception"])
def test_an_npu_kernel_exception_is_a_device_fault(kind):
    lines = ["RuntimeError: Run:torch_npu/csrc/framework/OpParamMaker.cpp:128 NPU error,NPU error code is:100000",
             "EZ9999: Inner Error, Please contact support engineer!",
             f"EZ9999 Kernel task happen error, retCode=0x2a, [{kind}].[FUNC:PreCheckTaskErr][FILE:task.cc][LINE:1068]"]
    v = classify(1, lines, steps_seen=10)
    assert v.cls == "cuda_fault" and kind in v.summary, v.summary


@pytest.mark.parametrize("lines, words", [
    (["RuntimeError: FlashAttention only supports Ampere GPUs or newer."], "sdpa"),
    (["RuntimeError: FlashAttention only supports Ampere GPUs or newer.",
      "Exception raised from mha_fwd at /tmp/flash-attn/csrc/flash_attn/flash_api.cpp:370 (most recent call first):",
      "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f22 in /env/torch/lib/libc10.so)"],
     "sdpa"),
    (["ERROR 01-11 13:09:40 engine.py:366] RuntimeError: Error in model execution (input dumped to /tmp/x.pkl): "
      "FlashAttention only supports Ampere GPUs or newer."], "VLLM_ATTENTION_BACKEND"),
    (["RuntimeError: call aclnnCast failed, detail:EZ9999: Inner Error!", "        Op Cast does not has any binary.",
      "        Kernel Run failed. opType: 3, Cast"], "CANN kernels"),
    (["hipErrorNoBinaryForGpu: Unable to find code object for all current devices!", "Aborted (core dumped)"],
     "TORCH_CUDA_ARCH_LIST"),
])
def test_a_kernel_library_that_cannot_run_on_this_device_is_an_environment_error(lines, words):
    v = classify(1, lines, steps_seen=0)
    assert v.cls == "environment_error" and not v.retryable and words in v.hint, (v.summary, v.hint)


def test_the_caching_allocator_aborting_at_exit_does_not_hide_the_error_before_it():
    """ROCm torch: the HIP error, then c10's allocator throwing from free() while the process exits."""
    lines = ["RuntimeError: HIP error: no kernel image is available for execution on the device",
             "terminate called after throwing an instance of 'c10::Error'",
             "  what():  invalid device pointer: 0x5400000",
             "Exception raised from free at ../c10/hip/HIPCachingAllocator.cpp:2994 (most recent call first):"]
    assert classify(-6, lines, steps_seen=0).cls == "environment_error"
    # any other exception after the error is still its own end
    other = lines[:1] + ["terminate called after throwing an instance of 'c10::Error'",
                         "  what():  CUDA driver error: unknown error",
                         "Exception raised from synchronize at ../c10/cuda/CUDAFunctions.cpp:120"]
    assert classify(1, other, steps_seen=0).cls != "environment_error"


def test_bitsandbytes_failing_to_load_its_library_is_a_dependency_named_as_such():
    lines = ['  File "/env/lib/python3.10/site-packages/bitsandbytes/cextension.py", line 20, in <module>',
             "    raise RuntimeError('''", "RuntimeError:",
             "        CUDA Setup failed despite GPU being available. Please run the following command to get more "
             "information:", "", "        python -m bitsandbytes"]
    v = classify(1, lines, steps_seen=0)
    assert v.cls == "missing_dependency" and "bitsandbytes" in v.summary and "bitsandbytes" in v.hint, v.summary


# apache-tvm-ffi's SIGSEGV handler (src/ffi/backtrace.cc, TVMFFISegFaultHandler: std::cerr << "!!!!!!! Segfault
# encountered !!!!!!!\n" << backtrace, then the signal re-raised with SIG_DFL), installed by a library
# constructor when xgrammar or flashinfer is imported (vLLM, SGLang, ms-swift's rollout); the older TVM
# runtime's own handler (src/runtime/logging.cc, backtrace_handler): "!!!!!!! TVM encountered a Segfault !!!!!!!".
# Each is followed by native frames in Python's "File ..., line 0, in ..." form, and the process dies of SIGSEGV.
@pytest.mark.parametrize("banner", ["!!!!!!! Segfault encountered !!!!!!!",
                                    "!!!!!!! TVM encountered a Segfault !!!!!!!",
                                    "[rank3]: !!!!!!! Segfault encountered !!!!!!!"])
def test_the_tvm_ffi_segfault_banner_is_a_segfault(banner):
    lines = ["saving checkpoint at iteration      20 to /ckpt/run in torch_dist format", banner,
             '  File "<unknown>", line 0, in mz_zip_writer_add_mem_ex_v2',
             '  File "<unknown>", line 0, in caffe2::serialize::PyTorchStreamWriter::writeRecord(...)']
    v = classify(1, lines, steps_seen=20)
    assert v.cls == "segfault" and v.retryable
    assert any("Segfault" in e for e in v.evidence)


def test_a_log_that_only_mentions_segfaults_is_not_one():
    lines = ["INFO: set TVM_FFI_BACKTRACE_ON_SEGFAULT=0 to turn off the Segfault encountered banner",
             "ValueError: bad config"]
    assert classify(1, lines, steps_seen=3).cls != "segfault"


@pytest.mark.parametrize("tail, env", [
    # torch's HIP build (c10/hip, hipified from c10/cuda/CUDAException.cpp) advises its own switch
    (["RuntimeError: HIP error: an illegal memory access was encountered",
      "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
      "be incorrect.",
      "For debugging consider passing AMD_SERIALIZE_KERNEL=3",
      "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions."], {"AMD_SERIALIZE_KERNEL": "3"}),
    # torch_npu (Ascend): its advice line, then CANN's kernel fault
    (["Since the operator is called asynchronously, the stacktrace may be inaccurate. If you want to get the "
      "accurate stacktrace, pleace set the environment variable ASCEND_LAUNCH_BLOCKING=1.",
      "Note: ASCEND_LAUNCH_BLOCKING=1 will force ops to run in synchronous mode, resulting in performance "
      "degradation. Please unset ASCEND_LAUNCH_BLOCKING in time after debugging.",
      "[ERROR] RUNTIME(1234,python):2025-05-29-20:52:24.655.114 [task.cc:1234] Kernel task happen error, "
      "retCode=0x2a, [aicpu exception]."], {"ASCEND_LAUNCH_BLOCKING": "1"}),
    # a CANN fault pasted without torch_npu's advice
    (["EZ9999: Inner Error!", "Aicpu kernel execute failed, device_id=0, stream_id=2, task_id=3."],
     {"ASCEND_LAUNCH_BLOCKING": "1"}),
    # CUDA, with and without torch's advice line
    (["RuntimeError: CUDA error: an illegal memory access was encountered",
      "For debugging consider passing CUDA_LAUNCH_BLOCKING=1"], {"CUDA_LAUNCH_BLOCKING": "1"}),
    (["RuntimeError: CUDA error: unspecified launch failure"], {"CUDA_LAUNCH_BLOCKING": "1"}),
])
def test_a_cuda_fault_restarts_with_the_blocking_switch_of_the_runtime_that_faulted(tail, env):
    v = classify(1, ["step 40 loss 1.2", *tail], steps_seen=40)
    assert v.cls == "cuda_fault" and v.recovery == "restart_launch_blocking"
    assert v.env == env
    (name, value), = env.items()
    assert f"{name}={value}" in v.hint


def test_a_log_line_cannot_choose_other_environment_for_the_restart():
    v = classify(1, ["RuntimeError: CUDA error: an illegal memory access was encountered",
                     "For debugging consider passing LD_PRELOAD=1 and PYTHONPATH=2"], steps_seen=3)
    assert v.env == {"CUDA_LAUNCH_BLOCKING": "1"}


@pytest.mark.parametrize("echo", ["+ export CUDA_LAUNCH_BLOCKING=0", "env: AMD_SERIALIZE_KERNEL=0 NCCL_DEBUG=WARN",
                                  "CUDA_LAUNCH_BLOCKING=0 torchrun --nproc-per-node 8 train.py"])
def test_a_blocking_switch_the_log_only_echoes_does_not_choose_the_restarts_environment(echo):
    # a shell trace or an env dump names the variable, but only the runtime's advice says what to set: the
    # restart must still block kernel launches, on the runtime that faulted
    v = classify(1, [echo, "step 40 loss 1.2", "terminate called after throwing an instance of 'c10::Error'",
                     "  what():  CUDA error: unspecified launch failure"], steps_seen=40)
    assert v.cls == "cuda_fault" and v.env == {"CUDA_LAUNCH_BLOCKING": "1"}, (v.env, v.hint)
    assert "CUDA_LAUNCH_BLOCKING=1" in v.hint


# Host memory that could not be had (ENOMEM), in the words of what asked for it (batch 19): c10's CPU
# allocator (c10/core/alloc_cpu.cpp: "DefaultCPUAllocator: can't allocate memory: you tried to allocate N
# bytes. Error code 12 (Cannot allocate memory)" after posix_memalign; on Windows "DefaultCPUAllocator: not
# enough memory: you tried to allocate N bytes." and, in older releases, " Buy new RAM!"), ATen's
# MapAllocator (aten/src/ATen/MapAllocator.cpp: "unable to mmap N bytes from file <F>: " + strerror(errno) +
# " (errno)"), Python's OSError for ENOMEM and numpy's _ArrayMemoryError (numpy/core/_exceptions.py).
@pytest.mark.parametrize("lines, asked", [
    (["RuntimeError: [enforce fail at alloc_cpu.cpp:114] data. DefaultCPUAllocator: can't allocate memory: "
      "you tried to allocate 2147483648 bytes. Error code 12 (Cannot allocate memory)"], "2.00 GiB"),
    (["[rank3]: RuntimeError: [enforce fail at C:\\actions-runner\\_work\\pytorch\\c10\\core\\impl\\alloc_cpu.cpp:"
      "72] data. DefaultCPUAllocator: not enough memory: you tried to allocate 1048576 bytes."], "1024.00 KiB"),
    (["RuntimeError: [enforce fail at ..\\c10\\core\\CPUAllocator.cpp:73] data. DefaultCPUAllocator: not enough "
      "memory: you tried to allocate 318767104000 bytes. Buy new RAM!"], "296.88 GiB"),
    (["ERROR: Caught RuntimeError in DataLoader worker process 3.",
      "RuntimeError: unable to mmap 8192 bytes from file </torch_3021_2814491522_12>: Cannot allocate memory (12)"],
     "8.00 KiB"),
    (["RuntimeError: unable to mmap 136 bytes from file <filename not specified>: Cannot allocate memory (12)"],
     "136 bytes"),
    (['  File "/usr/lib/python3.10/multiprocessing/popen_fork.py", line 66, in _launch',
      "    self.pid = os.fork()", "OSError: [Errno 12] Cannot allocate memory"], ""),
    (["numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.20 GiB for an array with shape "
      "(429496730, 2) and data type float32"], "3.20 GiB"),
    (["RuntimeError: $ Torch: not enough memory: you tried to allocate 64GB. Buy new RAM! at "
      "/opt/conda/conda-bld/pytorch-nightly_1540719301766/work/aten/src/TH/THGeneral.cpp:204"], "64GB"),
])
def test_host_memory_that_cannot_be_had_is_a_host_oom_restarted_with_a_warning(lines, asked):
    v = classify(1, ["step 12 loss 1.9", *lines], steps_seen=12)
    assert v.cls == "killed_oom" and v.retryable and v.summary.startswith("host memory ran out"), v.summary
    assert asked in v.summary and "host RAM" in v.hint
    d = decide(v, [], RestartSettings(), 1000.0, floor_s=0.0)
    assert d.action == "restart" and d.alert == "warning"
    assert "host memory ran out" in d.reason and "SIGKILL" not in d.reason, d.reason
    assert d.reason.count("host memory") == 1, d.reason     # said once, not "host memory: host memory ran out"


@pytest.mark.parametrize("lines", [
    # another errno from the same mmap is not memory (a missing /dev/shm device, a permission)
    ["RuntimeError: unable to mmap 4096 bytes from file </torch_1_2_3>: No such device (19)"],
    ["RuntimeError: unable to open shared memory object </torch_1_2> in read-write mode: Too many open files (24)"],
    # a help text that names the allocator is not its failure
    ["INFO: if you see DefaultCPUAllocator errors, lower num_workers", "ValueError: bad value for lr"],
])
def test_words_near_a_host_allocation_failure_are_not_one(lines):
    assert classify(1, lines, steps_seen=3).cls != "killed_oom"


# NCCL's IB transport completion error as net plugins print it: each names itself after "NET/" (NCCL's
# transport/net_ib.cc and the nccl-rdma-sharp-plugins' ib_plugin.c "NET/IB : Got completion from peer %s
# with status=%d opcode=%d ...", NCCL 2.19+'s IB ext plugin "NET/IBext", vendor forks "NET/IBP:Got ...").
@pytest.mark.parametrize("line", [
    "NET/IBP:Got completion from peer 7.6.13.83<36315> with status=12 opcode=32698 len=32696 vendor err 129 (Send)",
    "node1:81:99 [3] NCCL WARN NET/IBext : Got completion from peer 10.0.0.2<4451> with status=12 opcode=0 len=0 "
    "vendor err 129 (Recv) localGid ::ffff:10.0.0.1 remoteGids::ffff:10.0.0.2",
])
def test_a_net_plugins_ib_completion_error_is_an_nccl_transport_failure(line):
    v = classify(1, ["step 90 loss 2.0", line], steps_seen=90)
    assert v.cls == "nccl_error" and "Got completion" in v.summary, v.summary


# DeepSpeed's dynamic loss scaler (runtime/fp16/loss_scaler.py, update_scale) raises when an fp16 step still
# overflows at min_loss_scale: the loss is exploding, so the run pauses like fairseq's "Minimum loss scale".
def test_deepspeed_loss_scale_at_its_minimum_is_a_divergence():
    lines = ["[2023-06-07 22:26:58,110] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 "
             "Skipping step. Attempted loss scale: 2, reducing to 1",
             "[rank0]:   File \"/env/lib/python3.10/site-packages/deepspeed/runtime/fp16/loss_scaler.py\", "
             "line 175, in update_scale",
             "[rank0]:     raise Exception(",
             "[rank0]: Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run."]
    v = classify(1, lines, steps_seen=380)
    assert v.cls == "divergence" and not v.retryable and v.recovery == "pause" and "DeepSpeed" in v.summary
    # the overflow lines alone are DeepSpeed's normal backing off, not a divergence
    assert classify(1, [lines[0], "RuntimeError: boom"], steps_seen=380).cls != "divergence"


# Megatron-LM's own argument checks: validate_args in megatron/training/arguments.py (megatron/arguments.py in
# older releases and Megatron-DeepSpeed) asserts or raises ValueError before anything ran; Megatron-core's config
# dataclasses (ModelParallelConfig, TransformerConfig) check the layout again in __post_init__ at model build.
@pytest.mark.parametrize("path, func, exc", [
    ("/workspace/Megatron-LM/megatron/training/arguments.py", "validate_args",
     "AssertionError: When using MoE and tensor parallelism, sequence parallelism must be used."),
    ("/opt/Megatron-DeepSpeed/megatron/arguments.py", "validate_args",
     "ValueError: num_layers (30) must be divisible by pipeline_model_parallel_size (4)"),
    ("/usr/local/lib/python3.12/dist-packages/megatron/core/transformer/transformer_config.py", "__post_init__",
     "ValueError: num_query_groups (4) must be a multiple of tensor_model_parallel_size (8)."),
    ("/usr/local/lib/python3.12/dist-packages/megatron/core/model_parallel_config.py", "__post_init__",
     "ValueError: When using pipeline parallelism, pipeline_dtype must be specified"),
])
def test_megatrons_argument_checks_are_a_configuration_error_on_a_first_attempt(path, func, exc):
    lines = ["Traceback (most recent call last):",
             '  File "/workspace/Megatron-LM/pretrain_gpt.py", line 233, in <module>',
             '  File "/workspace/Megatron-LM/megatron/training/initialize.py", line 71, in initialize_megatron',
             "    validate_args(args, args_defaults)",
             f'  File "{path}", line 714, in {func}',
             "    raise ValueError(", exc]
    v = classify(1, lines, steps_seen=0, attempt=1)
    assert v.cls == "config_error" and not v.retryable and exc in v.summary, v.summary
    assert classify(1, lines, steps_seen=0, attempt=2).cls != "config_error"   # it ran before: not the command
    # the same exception raised from the training itself is not an argument check
    trained = lines[:2] + ['  File "/workspace/Megatron-LM/megatron/training/training.py", line 1252, in train_step',
                           exc]
    assert classify(1, trained, steps_seen=0, attempt=1).cls != "config_error"



# Megatron-core checks the parallel layout against the world size when it builds the process groups:
# initialize_model_parallel in megatron/core/parallel_state.py (and its RankGenerator) raises RuntimeError or
# asserts on the sizes the recipe asked for (main d98e8a64 l.823-1447; core_r0.13 l.711-788; core_r0.8 l.432-450).
# Public text: batch 27's 575 (the partial-DistOpt assertion); these are the other checks and versions.
_LAYOUT_FRAMES = ["[rank3]: Traceback (most recent call last):",
                  '[rank3]:   File "/workspace/Megatron-LM/pretrain_gpt.py", line 396, in <module>',
                  '[rank3]:   File "/workspace/Megatron-LM/megatron/training/initialize.py", line 341, in '
                  "_initialize_distributed",
                  "[rank3]:     mpu.initialize_model_parallel(",
                  '[rank3]:   File "/usr/local/lib/python3.12/dist-packages/megatron/core/parallel_state.py", line 652, '
                  "in initialize_model_parallel"]


@pytest.mark.parametrize("exc", [
    "RuntimeError: world_size (6) is not divisible by 4",
    "RuntimeError: decoder world_size (16) is not divisible by expert_tensor_model_pipeline_parallel size (12)",
    "RuntimeError: pipeline-model-parallel size should be greater than 1 with interleaved schedule",
    "AssertionError: Data parallel size should be divisible by partial DistOpt shard factor",
])
def test_megatron_cores_parallel_layout_refusal_is_a_configuration_error_on_a_first_attempt(exc):
    lines = [*_LAYOUT_FRAMES, "[rank3]:     raise RuntimeError(", f"[rank3]: {exc}"]
    v = classify(1, lines, steps_seen=0, attempt=1)
    assert v.cls == "config_error" and not v.retryable and v.recovery == "fail", v.summary
    assert exc in v.summary
    assert classify(1, lines, steps_seen=0, attempt=2).cls != "config_error"    # it ran before: not the command


def test_megatron_cores_rank_generator_refusing_the_order_is_a_configuration_error():
    lines = [*_LAYOUT_FRAMES, "    decoder_rank_generator = RankGenerator(",
             '  File "/opt/megatron/core/parallel_state.py", line 251, in __init__',
             "    raise RuntimeError(",
             "RuntimeError: The size of (ep) is (2), but you haven't specified the order (tp-cp-dp-pp)."]
    assert classify(1, lines, steps_seen=0, attempt=1).cls == "config_error"


@pytest.mark.parametrize("tail", [
    # a group "already initialized": the program called it twice, not the recipe
    ["AssertionError: data parallel group is already initialized"],
    # the bare assert torch.distributed.is_initialized()
    ["AssertionError"],
    # the store timing out while the groups are created: raised in torch's frames under it
    ['  File "/usr/local/lib/python3.12/dist-packages/torch/distributed/distributed_c10d.py", line 5104, in new_group',
     "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. 7/8 clients joined."],
])
def test_megatron_cores_other_failures_in_initialize_model_parallel_are_not_the_recipe(tail):
    v = classify(1, [*_LAYOUT_FRAMES, *tail], steps_seen=0, attempt=1)
    assert v.cls != "config_error", v.summary

# Xid 154 (NVIDIA's Xid catalog) names the recovery the driver needs for the Xid before it: "GPU recovery action
# changed from 0x0 (None) to 0x2 (Node Reboot Required)", values None, Drain P2P, Drain and Reset, GPU Reset
# Required, Node Reboot Required. After a reset or reboot is asked no restart on this GPU can help, whatever
# the Xid before it (62 GSP watchdog, 119 GSP RPC timeout, 31 MMU fault ...), none of them in RESET_XIDS.
@pytest.mark.parametrize("lines, action", [
    (["NVRM: Xid (PCI:0000:01:00): 62, 323f0f30 0000c3d8 00000000 206dae68 206da022 206da190 206d85f6 206d8d86",
      "NVRM: GPU0 _kgspRpcGspEventPmuHalted: Received signal from GSP that PMU has halted.",
      "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"],
     "GPU Reset Required"),
    (["[Mon Apr  6 07:25:23 2026] NVRM: Xid (PCI:0000:97:00): 119, pid=5220, name=cache_mgr_main, Timeout after "
      "45s of waiting for RPC response from GPU6 GSP! Expected function 76 (GSP_RM_CONTROL) sequence 3661611 "
      "(0x208f1105 0x8).",
      "[Mon Apr  6 07:25:24 2026] NVRM: Xid (PCI:0000:97:00): 154, GPU recovery action changed from 0x0 (None) "
      "to 0x1 (GPU Reset Required)"], "GPU Reset Required"),
    (["kernel: NVRM: Xid (PCI:0000:01:00): 31, pid=1211, name=python, Ch 00000008, intr 00000000. MMU Fault",
      "kernel: NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 "
      "(Node Reboot Required)"], "Node Reboot Required"),
    (["NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x3 (Drain and Reset)"],
     "Drain and Reset"),
])
def test_xid_154_asking_for_a_reset_or_reboot_fails_the_run_instead_of_restarting_on_that_gpu(lines, action):
    v = classify(1, ["step 120 loss 1.9", *lines, "RuntimeError: CUDA error: unspecified launch failure"],
                 steps_seen=120)
    assert v.cls == "cuda_fault" and not v.retryable and v.recovery == "fail", v.summary
    assert "Xid 154" in v.summary and action in v.summary and "reset" in v.hint
    assert any("154" in e for e in v.evidence)
    decision = decide(v, [AttemptRecord(attempt=1, started_at=0.0, ended_at=1.0, resumed_step=None,
                                        last_step=120, crash_class=v.cls)], RestartSettings(), now=2.0)
    assert decision.action == "fail", decision


@pytest.mark.parametrize("line", [
    "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
    "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain P2P)",
])
def test_xid_154_back_to_none_or_only_draining_p2p_keeps_the_faults_restart(line):
    v = classify(1, ["step 120 loss 1.9", "NVRM: Xid (PCI:0000:01:00): 13, Graphics SM Warp Exception", line,
                     "RuntimeError: CUDA error: an illegal memory access was encountered"], steps_seen=120)
    assert v.cls == "cuda_fault" and v.retryable and v.recovery == "restart_launch_blocking", v.summary


# torch/csrc/DataLoader.cpp: for a worker ended by SIGBUS, and for SIGBUS alone, the parent adds "It is possible
# that dataloader's workers are out of shared memory. Please try to raise your shared memory limit." to "DataLoader
# worker (pid N) is killed by signal: Bus error." That advice names the cause even when the head line was
# retyped ("pid XXX", no period) or cut off; other signals never carry it.
@pytest.mark.parametrize("lines", [
    ["DataLoader worker (pid XXX) is killed by signal: Bus error", "",
     "It is possible that dataloader's workers are out of shared memory", "",
     "Please try to raise your shared memory limit"],
    ["RuntimeError: DataLoader worker (pid 249) is killed by signal: Bus error. It is possible that dataloader's "
     "workers are out of shared memory. Please try to raise your shared memory limit."],
    ["It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory "
     "limit."],
])
def test_the_dataloaders_shared_memory_advice_is_a_bus_error_even_without_its_head_line(lines):
    v = classify(1, ["step 3 loss 2.0", *lines], steps_seen=3)
    assert v.cls == "bus_error" and not v.retryable, (v.summary, v.evidence)
    assert "shm" in v.hint or "shared memory" in v.hint


# The same head line retold without its pid (an issue title: "RuntimeError: DataLoader worker is killed by signal:
# Bus error", ms-swift#7264) or with a placeholder for it, and without the period at the line's end: the signal
# strsignal() named still decides, for every signal the parent reports (torch/csrc/DataLoader.cpp).
@pytest.mark.parametrize("line, cls", [
    ("RuntimeError: DataLoader worker is killed by signal: Segmentation fault", "segfault"),
    ("DataLoader worker (pid XXX) is killed by signal: Killed", "killed_oom"),
    ("RuntimeError: DataLoader worker is killed by signal: Bus error  ", "bus_error"),
])
def test_the_dataloaders_killed_by_signal_line_retold_without_its_pid(line, cls):
    v = classify(1, ["step 3 loss 2.0", line], steps_seen=3)
    assert v.cls == cls, (v.summary, v.evidence)


# THC (torch <= 0.4) printed "cuda runtime error (%d) : %s at %s:%d" (THCGeneral.cpp); users retype it without
# the spaces: "cuda runtime error(2): out of memory".
@pytest.mark.parametrize("line", ["cuda runtime error(2): out of memory",
                                  "RuntimeError: cuda runtime error(2):out of memory at /pytorch/aten/src/THC/"
                                  "THCCachingAllocator.cpp:510"])
def test_the_old_thc_oom_retyped_without_spaces_is_a_cuda_oom(line):
    v = classify(1, ["step 8 loss 3.1", line], steps_seen=8)
    assert v.cls == "cuda_oom", v.summary


# cudaGetErrorString's "no kernel image is available for execution on the device", retyped with a capital (a
# post about an RTX 3090 under CUDA 11.1): a build without the GPU's architecture all the same, never restarted.
def test_no_kernel_image_retyped_with_a_capital_is_an_environment_error():
    v = classify(1, ["RuntimeError: No kernel image is available for execution on the device"], steps_seen=0)
    assert v.cls == "environment_error" and not v.retryable and v.recovery == "fail", v.summary
    assert "No kernel image" in v.summary or any("No kernel image" in e for e in v.evidence)


# A host-side assert() that failed, in glibc's words (assert/assert.c __assert_fail_base: "%s%s%s:%u: %s%s
# Assertion `%s' failed.", then abort()): DeepEP's HybridEP launcher in a .cu file under Megatron-Bridge
# (batch 21), Triton's compiler (batch 13), a program without a name. No class of its own (a restart may or
# may not meet it again; the no-progress rule ends a deterministic one), but the summary says where and what
# was asserted, not only "ended by SIGABRT".
@pytest.mark.parametrize("exit_code, line, where, expr", [
    (-6, "python3: /opt/DeepEP/csrc/hybrid_ep/extension/permute.cu:412: void permute_launcher(PermuteArgs) [with "
         "DType = short unsigned int; ProbType = float; ScalarType = float]: Assertion 'args.output_tokens_ptr != "
         "nullptr' failed.", "permute.cu:412", "args.output_tokens_ptr != nullptr"),
    (134, "python3: /project/lib/Tools/LinearLayout.cpp:562: mlir::triton::LinearLayout mlir::triton::LinearLayout::"
          "reshapeOuts(llvm::ArrayRef<std::pair<mlir::StringAttr, int> >) const: Assertion `getTotalOutDimSize() == "
          "std::accumulate(newOutDims.begin(), newOutDims.end(), 1)' failed.", "LinearLayout.cpp:562",
     "getTotalOutDimSize() == std::accumulate(newOutDims.begin(), newOutDims.end(), 1)"),
    (-6, "train.c:88: main: Assertion `n > 0' failed.", "train.c:88", "n > 0"),
    # a program whose name starts with "F", like a glog FATAL line's "F0531 ...": still an assertion
    (-6, "FastSim: src/step.c:21: step: Assertion `dt > 0' failed.", "step.c:21", "dt > 0"),
])
def test_a_failed_host_assertion_is_named_in_the_summary(exit_code, line, where, expr):
    v = classify(exit_code, ["step 5 loss 1.0", line, "Aborted (core dumped)"], steps_seen=5)
    assert v.cls == "unknown" and v.recovery == "restart", v.summary
    assert f"assertion failed at {where}: {expr}" in v.summary, v.summary
    assert line in v.evidence


def test_a_kernels_own_assertion_stays_a_device_fault():
    # CUDA's device __assert_fail adds the block and thread: a kernel that faulted, not a host assert()
    line = ("/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1236: indexSelectSmallIndex: block: [5,0,0], "
            "thread: [6,0,0] Assertion `srcIndex < srcSelectDimSize` failed.")
    assert classify(-6, ["step 5 loss 1.0", line], steps_seen=5).cls == "cuda_fault"


def test_xid_154_names_the_xid_before_it_on_the_same_gpu():
    # Xid 154 states the recovery for the Xid before it on its own GPU: another GPU's Xid, or one after it,
    # is not what it answers
    lines = ["step 120 loss 1.9",
             "NVRM: Xid (PCI:0000:3b:00): 13, Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0)",
             "NVRM: Xid (PCI:0000:01:00): 62, 323f0f30 0000c3d8 00000000 206dae68 206da022 206da190 206d85f6",
             "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
             "NVRM: Xid (PCI:0000:01:00): 43, pid=1211, name=python, Ch 00000008",
             "RuntimeError: CUDA error: unspecified launch failure"]
    v = classify(1, lines, steps_seen=120)
    assert v.cls == "cuda_fault" and v.recovery == "fail", v.summary
    assert "Xid 154 on PCI:0000:01:00 after Xid 62:" in v.summary, v.summary


# Host memory that could not be had (ENOMEM) decides only as the message of the line that printed it: the same
# words quoted inside another message (a config value, a retry warning) are not an allocation that failed, and
# must not turn the attempt's own end into `killed_oom`.
_ENOMEM_OWN_LINES = [
    "OSError: [Errno 12] Cannot allocate memory",
    "i am getting error RuntimeError: unable to mmap 18329065000 bytes from file </m/model.safetensors>: "
    "Cannot allocate memory (12)",
    "  what():  [enforce fail at alloc_cpu.cpp:117] err == 0. DefaultCPUAllocator: can't allocate memory: you tried "
    "to allocate 116806262784 bytes. Error code 12 (Cannot allocate memory)",
    "(pid=4242) numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.20 GiB for an array with shape "
    "(8, 107374182) and data type float32",
    "/root/torch/install/bin/luajit: $ Torch: not enough memory: you tried to allocate 0GB. Buy new RAM! at "
    "/tmp/luarocks_torch-scm-1-1/torch7/lib/TH/THGeneral.c:270",
]


@pytest.mark.parametrize("lines, cls", [
    (["Traceback (most recent call last):", '  File "/w/train.py", line 12, in <module>',
      'ValueError: --on_error must be one of retry, abort; got "OSError: [Errno 12] Cannot allocate memory"'],
     "unknown"),
    (["UserWarning: prefetch failed once (RuntimeError: unable to mmap 4096 bytes from file </torch_1_2_3>: "
      "Cannot allocate memory (12)), retrying",
      "step 300 loss 1.10",
      "[rank0]:[E1121 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
      "milliseconds before timing out."], "nccl_error"),
    (["omegaconf.errors.ValidationError: Value 'DefaultCPUAllocator: can't allocate memory: you tried to allocate "
      "12 bytes' of key 'fault_msg' is not a valid choice"], "unknown"),
])
def test_enomem_decides_only_as_its_lines_own_message(lines, cls):
    v = classify(1, lines, steps_seen=300)
    assert v.cls == cls, (v.summary, v.evidence)
    # the same words as the message of the line that printed them still decide
    for line in _ENOMEM_OWN_LINES:
        v = classify(1, ["step 3 loss 1.0", line], steps_seen=3)
        assert v.cls == "killed_oom" and "host memory ran out" in v.summary, (line, v.summary)


# One table (crash.BLOCKING_SWITCHES) owns the launch-blocking switches: the names a log's advice may choose, the
# value each runtime advises, and the runtime a fault text names when no advice came with it.
def test_the_launch_blocking_switches_have_one_owner_for_advice_and_fallback():
    from moeconsole.runner.core.crash import BLOCKING_SWITCHES, launch_blocking_env
    fault = "RuntimeError: CUDA error: an illegal memory access was encountered"
    for name, value, _ in BLOCKING_SWITCHES:
        v = classify(1, ["step 3 loss 1.0", fault, f"For debugging consider passing {name}={value}"], steps_seen=3)
        assert v.cls == "cuda_fault" and dict(v.env) == {name: value}, (name, v.env)
    assert launch_blocking_env(["Kernel task happen error, retCode=0x2a, [aicpu exception]"]) == {
        "ASCEND_LAUNCH_BLOCKING": "1"}
    assert launch_blocking_env(["Memory access fault by GPU node-2 (Agent handle: 0x1) on address 0x7f"]) == {
        "AMD_SERIALIZE_KERNEL": "3"}
    assert launch_blocking_env([fault]) == {"CUDA_LAUNCH_BLOCKING": "1"}
    # a shell trace naming a switch chooses nothing
    v = classify(1, ["+ export CUDA_LAUNCH_BLOCKING=0", "step 3 loss 1.0", fault], steps_seen=3)
    assert dict(v.env) == {"CUDA_LAUNCH_BLOCKING": "1"}


# Xid 154's action is per GPU and the latest change is the GPU's state (NVIDIA's Xid catalog and NVML's
# recovery actions: "None" = the GPU can be used again by a new process). Every GPU's latest action is
# weighed: a later reboot request on another GPU is what the run must be told, not the first reset.
def test_xid_154_weighs_every_gpus_latest_action_and_names_the_most_severe():
    lines = ["step 120 loss 1.9",
             "NVRM: Xid (PCI:0000:01:00): 62, 323f0f30 0000c3d8 00000000 206dae68 206da022 206da190 206d85f6",
             "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
             "NVRM: Xid (PCI:0000:41:00): 119, pid=5220, name=python, Timeout after 45s of waiting for RPC response",
             "NVRM: Xid (PCI:0000:41:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 "
             "(Node Reboot Required)",
             "RuntimeError: CUDA error: unspecified launch failure"]
    v = classify(1, lines, steps_seen=120)
    assert v.cls == "cuda_fault" and v.recovery == "fail", v.summary
    assert v.summary.startswith("NVIDIA Xid 154 on PCI:0000:41:00 after Xid 119: the driver's recovery action is "
                                "Node Reboot Required"), v.summary
    assert "PCI:0000:01:00: GPU Reset Required" in v.summary and "Node Reboot Required" in v.hint


def test_xid_154_back_to_none_on_the_same_gpu_undoes_its_reset_request():
    lines = ["step 120 loss 1.9",
             "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
             "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
             "RuntimeError: CUDA error: an illegal memory access was encountered"]
    v = classify(1, lines, steps_seen=120)
    assert v.cls == "cuda_fault" and v.retryable and v.recovery == "restart_launch_blocking", v.summary
    # ... while another GPU that still asks for a reset keeps the run from restarting on it
    other = lines[:2] + ["NVRM: Xid (PCI:0000:41:00): 154, GPU recovery action changed from 0x1 (GPU Reset "
                         "Required) to 0x0 (None)"] + lines[3:]
    v = classify(1, other, steps_seen=120)
    assert v.recovery == "fail" and "PCI:0000:01:00" in v.summary, v.summary


# Transformer Engine's own availability checks (transformer_engine/pytorch/fp8.py and 2.x quantization.py:
# check_fp8_support, check_mxfp8_support, check_nvfp4_support, check_fp8_block_scaling_support), raised as an
# assertion in fp8_autocast_enter or a RuntimeError by check_recipe_support: the GPU or the CUDA build cannot run
# the recipe, every attempt fails the same way (environment_error, not restarted).
@pytest.mark.parametrize("line", [
    "AssertionError: Device compute capability 8.9 or higher required for FP8 execution.",
    "AssertionError: CublasLt version 12.1.3.x or higher required for FP8 execution on Ada.",
    "AssertionError: Cuda version 12.1 or higher required for FP8 execution on Ada.",
    "RuntimeError: Device compute capability 10.0 or higher required for MXFP8 execution.",
    "RuntimeError: MXFP8 (for all gemm layouts) is not supported on 12.0+ architectures yet.",
    "AssertionError: Device compute capability 10.0 or higher required for NVFP4 execution.",
    "AssertionError: FP8 block scaled GEMM requires Hopper and CUDA >= 12.9.",
    "AssertionError: FP8 block scaled GEMM requires compute capability 9.0 or higher and CUDA >= 12.9.",
    "AssertionError: Device compute capability gfx942 or higher required for FP8 execution.",
    "AssertionError: Device compute capability gfx950 or higher required for FP8 OCP format.",
])
def test_transformer_engines_fp8_availability_checks_are_an_environment_error(line):
    frames = ['  File "/usr/lib/python3.12/site-packages/transformer_engine/pytorch/fp8.py", line 465, in '
              'fp8_autocast_enter', "    assert fp8_available, reason_for_no_fp8"]
    v = classify(1, ["Traceback (most recent call last):", *frames, line], steps_seen=0)
    assert v.cls == "environment_error" and not v.retryable and v.recovery == "fail", v.summary
    assert v.summary.startswith("this GPU or CUDA build cannot run the low-precision recipe: ") and "bf16" in v.hint
    # its shape checks are the model's, not the GPU's
    v = classify(1, ["AssertionError: FP8 execution requires 2D input matrices with height divisible by 8 and width "
                     "divisible by 16, but got tensor with dims=[896, 712]"], steps_seen=0)
    assert v.cls == "unknown", v.summary


# cudaErrorPeerAccessUnsupported (217): GPUs that cannot reach each other's memory. torch raises it, NCCL's P2P
# transport and CUDACHECK log it (then fail as "unhandled cuda error", its echo), vLLM/SGLang's custom
# all-reduce prints it. No restart changes the topology: environment_error, with NCCL_P2P_DISABLE in the hint.
@pytest.mark.parametrize("lines", [
    ["RuntimeError: CUDA error: peer access is not supported between these two devices",
     "For debugging consider passing CUDA_LAUNCH_BLOCKING=1"],
    ["node1:1:2 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 217 peer access is not "
     "supported between these two devices",
     "node1:1:2 [0] NCCL INFO transport.cc:68 -> 1",
     "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:784, unhandled cuda error, "
     "NCCL version 2.7.8"],
    ["node1:1:2 [0] include/alloc.h:102 NCCL WARN Cuda failure 217 'peer access is not supported between these "
     "two devices'",
     "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
     "unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5"],
    ["Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:307 'peer access is not supported between these two "
     "devices'"],
    ["cudaErrorPeerAccessUnsupported"],
])
def test_gpus_without_peer_access_are_an_environment_error_even_under_nccls_echo(lines):
    token = "hf_" + "a1B2" * 9
    v = classify(1, ["step 0", *lines, f"HF_TOKEN={token}"], steps_seen=0)
    assert v.cls == "environment_error" and v.recovery == "fail", (v.summary, v.evidence)
    assert "peer to peer" in v.summary and "NCCL_P2P_DISABLE=1" in v.hint
    assert token not in v.summary and token not in v.hint
    # a collective that times out later, after NCCL fell back, ends the attempt on its own
    v = classify(1, [*lines, "step 900 loss 0.7", "[rank3]:[E1121 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 3] "
                     "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, "
                     "NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds before timing out.",
                     "terminate called after throwing an instance of 'c10::DistBackendError'",
                     "  what():  [PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated with "
                     "exception: [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, "
                     "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600031 milliseconds before "
                     "timing out."],
                 steps_seen=900)
    assert v.cls == "nccl_error", (v.summary, v.evidence)


# nccl-tests / rccl-tests (src/common.h NCCLCHECK): "HOST: Test NCCL failure FILE:LINE 'REASON / LAST ERROR'",
# before 2.13 "Test NCCL failure FILE:LINE 'REASON'"; retyped in a title without the quotes.
@pytest.mark.parametrize("line", [
    "node7: Test NCCL failure common.cu:1279 'invalid usage (run with NCCL_DEBUG=WARN for details) / '",
    "fastmoe: Test NCCL failure common.cu:777 'unhandled system error'",
    "Test NCCL failure common.cu:1119 unhandled system error",
])
def test_nccl_tests_own_failure_line_is_an_nccl_error(line):
    v = classify(1, [line], steps_seen=0)
    assert v.cls == "nccl_error", v.summary


# flash-attention's backward kernels for large head dims are built for sm80/sm90 only (flash_api.cpp mha_bwd and
# mha_varlen_bwd, in flash-attn and torch's vendored copy): on any other GPU every backward fails the same way.
@pytest.mark.parametrize("line", [
    "RuntimeError: Expected is_sm80 || is_sm90 to be true, but got false.  (Could this error message be improved?  "
    "If so, please report an enhancement request to PyTorch.)",
    "RuntimeError: FlashAttention backward for head dim > 192 requires A100/A800 or H100/H800",
    "RuntimeError: FlashAttention backward for head dim 256 with dropout, or head dim 224 with/without dropout "
    "requires A100/A800 or H100/H800",
])
def test_flash_attention_backward_built_for_sm80_and_sm90_only_is_an_environment_error(line):
    v = classify(1, ["step 1 loss 2.0", '  File "/x/torch/nn/functional.py", line 5, in scaled_dot_product_attention',
                     line], steps_seen=1)
    assert v.cls == "environment_error" and v.recovery == "fail", v.summary
    assert "sm_80 or sm_90" in v.summary and "sdpa" in v.hint
    # another check that failed is not the GPU's architecture
    v = classify(1, ["RuntimeError: Expected is_contiguous() to be true, but got false."], steps_seen=1)
    assert v.cls == "unknown", v.summary


# DeepEP (deepseek-ai/DeepEP), the expert-parallel all-to-all under Megatron-core's flex token dispatcher:
# its host side giving up on the other ranks' counts (csrc/legacy/buffer.hpp: the "Global rank: ..." printf
# and `throw std::runtime_error("DeepEP error: timeout (dispatch CPU)")`, older "DeepEP error: CPU recv
# timeout"; csrc/elastic/buffer.hpp: EPException "Dispatch CPU wait exception (FILE:LINE): ...") and its
# kernels' timeout printfs before trap() (csrc/kernels/legacy/internode.cu, intranode.cu, utils.cuh, and
# deep_ep/include/deep_ep/impls/*.cuh, common/comm.cuh). A collective that timed out: nccl_error.
DEEPEP_TIMEOUTS = [
    ["[rank5]:   File \"/opt/venv/lib/python3.12/site-packages/deep_ep/buffer.py\", line 581, in internode_dispatch",
     "[rank5]: RuntimeError: DeepEP error: timeout (dispatch CPU)"],
    ["Global rank: 12, num_recv_tokens: -1, num_rdma_recv_tokens: 4096",
     "moe_recv_expert_counter[0]: -1"],
    ["RuntimeError: DeepEP error: CPU recv timeout"],
    ["RuntimeError: Dispatch CPU wait exception (/workspace/DeepEP/csrc/elastic/buffer.hpp:1063): "
     "num_recv_tokens=-1"],
    ["DeepEP dispatch RDMA sender timeout, channel: 3, RDMA: 1, nvl: 2, dst RDMA lane: 0, head: 4, tail: 9"],
    ["DeepEP combine forwarder (NVL check) timeout, channel: 1, RDMA: 0, nvl: 6, src NVL: 2, dst RDMA: 1, head: 0"],
    ["DeepEP timeout for dispatch receivers, rank 3, responsible_channel = 7, tokens remained: 12"],
    ["DeepEP timeout check failed: rank = 2, thread = 0, value = 0)"],
    ["DeepEP NVLink barrier timeout, tag: 1, nvl: 3, thread: 0, counter: 7"],
    ["DeepEP notify (GPU reduction) timeout, rank: 2/16, thread: 5"],
]


@pytest.mark.parametrize("lines", DEEPEP_TIMEOUTS)
def test_deepeps_own_timeouts_are_an_nccl_error_named_deepep(lines):
    token = "hf_" + "Zq9x" * 9
    v = classify(1, ["iteration 12 loss 3.1", *lines, f"export HF_TOKEN={token}"], steps_seen=12)
    assert v.cls == "nccl_error" and v.recovery == "restart_long_cooldown", (v.summary, v.evidence)
    assert v.summary.startswith("DeepEP (expert-parallel all-to-all) timed out: ") and "NVSHMEM" in v.hint
    assert token not in v.summary and token not in v.hint


def test_deepeps_timeout_gives_way_to_a_cause_before_it_but_not_to_its_own_echo():
    timeout = "[rank3]: RuntimeError: DeepEP error: timeout (dispatch CPU)"
    fault = "[rank7]: torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
    # its kernels trap() after the timeout: the CUDA error after it is the echo
    v = classify(1, [timeout, fault, "For debugging consider passing CUDA_LAUNCH_BLOCKING=1"], steps_seen=3)
    assert v.cls == "nccl_error" and v.summary.startswith("DeepEP"), v.summary
    # a fault first is the cause the other ranks then waited for
    v = classify(1, [fault, "For debugging consider passing CUDA_LAUNCH_BLOCKING=1", timeout], steps_seen=3)
    assert v.cls == "cuda_fault", v.summary
    # as is a rank the kernel killed (torchrun's root cause): the timeouts are the echo of its death
    entry = ["Root Cause (first observed failure):", "[0]:", "  time      : 2026-03-01_10:00:00",
             "  host      : node-3", "  rank      : 9 (local_rank: 1)", "  exitcode  : -9 (pid: 5151)",
             "  error_file: <N/A>", "  traceback : Signal 9 (SIGKILL) received by PID 5151"]
    v = classify(1, [timeout, *entry], steps_seen=30)
    assert v.cls == "killed_oom", v.summary
    # the low-latency kernels' warning masks the late rank and goes on: it decides nothing
    v = classify(1, ["Warning: DeepEP timeout for dispatch receive, rank 3, local_expert_idx 1, src_rank 9"],
                 steps_seen=3)
    assert v.cls == "unknown", v.summary


# NVSHMEM under DeepEP: its error macros print "FILE:LINE: NULL value ..." (NVSHMEMI_NULL_ERROR_JMP),
# "FILE:LINE: non-zero status: N ..." (NVSHMEMI_NZ_ERROR_JMP, NZ_ERROR_JMP), "FILE:FUNC:LINE: init failed for
# transport: IBGDA" (NVSHMEMI_ERROR_PRINT), FILE being NVSHMEM's own source.
@pytest.mark.parametrize("line", [
    "/opt/nvshmem/src/modules/transport/ibgda/ibgda.cpp:1889: NULL value cannot allocate mlx5dv_devx_uar",
    "/dvs/p4/build/sw/rel/gpgpu/toolkit/r13.0/main_nvshmem/src/host/init/init.cu:1047: non-zero status: 7 "
    "nvshmem setup connections failed",
    "/sgl-workspace/nvshmem/src/host/transport/transport.cpp:nvshmemi_transport_init:275: init failed for "
    "transport: IBGDA",
    # NVSHMEMI_ERROR_PRINT's FILE:FUNCTION:LINE prefix, the message cut by the paste
    "/sgl-workspace/nvshmem/src/host/transport/transport.cpp:nvshmemi_transport_init:275: init fa",
])
def test_nvshmems_own_failures_are_an_nccl_error_named_nvshmem(line):
    v = classify(1, [line], steps_seen=0)
    assert v.cls == "nccl_error" and v.summary.startswith("NVSHMEM failed: "), v.summary
    assert "/opt/" not in v.summary and "/dvs/" not in v.summary
    # the same macro's words from another program's file are not NVSHMEM's
    v = classify(1, ["/src/openconnect/hipreport.c:88: non-zero status: 7 HIP script failed"], steps_seen=0)
    assert v.cls == "unknown", v.summary


# NCCL's shared-memory segment that could not be made (misc/shmutils.cc, include/shm.h before 2.12): the
# NCCL guide gives these words for insufficient shared memory (a container's 64 MB /dev/shm). It decides even
# without the errno, under NCCL's own "unhandled system error".
@pytest.mark.parametrize("lines", [
    ["node1:97:183 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
     "nccl-shm-recv-c43b846667d22574-1-1-0 (size 9637888)",
     "RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/ProcessGroupNCCL.cpp:784, unhandled system error, "
     "NCCL version 2.7.8"],
    ["torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.hpp:268, "
     "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
     "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. ",
     "Last error:",
     "Error while creating shared memory segment /dev/shm/nccl-1YsMbG (size 7340384)"],
    ["node1:1:2 [0] misc/shmutils.cc:72 NCCL WARN Error: failed to extend /dev/shm/nccl-UbzKZ9 to 9637892 bytes",
     "node1:1:2 [0] NCCL INFO transport/shm.cc:114 -> 2"],
])
def test_nccls_shared_memory_segment_it_could_not_create_is_dev_shm_full(lines):
    v = classify(1, lines, steps_seen=0)
    assert v.cls == "bus_error" and not v.retryable, (v.summary, v.evidence)
    assert v.summary.startswith("shared memory (/dev/shm) is full: ") and "shm-size" in v.hint
    assert "node1:" not in v.summary
    # a segment refused for another reason (a permission) is not room
    v = classify(1, ["node1:1:2 [0] misc/shmutils.cc:132 NCCL WARN Error while creating shared memory segment "
                     "/dev/shm/nccl-WU88OE (size 9637888), error: Permission denied (13)",
                     "torch.distributed.DistBackendError: NCCL error in: x.cpp:1, unhandled system error, "
                     "NCCL version 2.21.5"], steps_seen=0)
    assert v.cls == "nccl_error", v.summary


# NCCL's IB verbs wrappers (misc/ibvwrap.cc) at WARN level when a verbs call failed: locked memory (ulimit -l),
# a RoCE GID that does not route. The optional probes log the same words at INFO and go on.
@pytest.mark.parametrize("line", [
    "[2026-03-13 22:26:02] host-01:123:456 [5] ibvwrap.c:262 NCCL WARN Call to ibv_modify_qp failed with 110 "
    "Connection timed out, on dev mlx5_3:1, curr state INIT, next state RTR, local GID index 3",
    "h200-2:4016:4653 [7] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error Cannot "
    "allocate memory",
    "gpu7:1:2 [0] misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory",
])
def test_nccls_ib_verbs_calls_that_failed_at_warn_level_are_an_nccl_error(line):
    v = classify(1, [line], steps_seen=0)
    assert v.cls == "nccl_error", v.summary
    assert v.summary.startswith("NCCL transport failure: Call to ibv_"), v.summary
    v = classify(1, [line.replace("NCCL WARN", "NCCL INFO")], steps_seen=0)
    assert v.cls == "unknown", v.summary


def test_torch_1x_nccl_error_code_retyped_without_its_reason_is_an_nccl_error():
    v = classify(1, ["[Issue]: RuntimeError: NCCL Error 2 & ibv_modify_qp timeout (errno 110) during saving"],
                 steps_seen=5)
    assert v.cls == "nccl_error" and v.summary == "NCCL error 2", v.summary
    v = classify(1, ["we saw NCCL Error 2 once last week, then training went on", "ValueError: bad batch"],
                 steps_seen=5)
    assert v.cls == "unknown", v.summary


# vLLM's sleep-mode allocator (csrc/cumem_allocator.cpp CUDA_CHECK, "CUDA Error: %s at %s:%d" with
# cuGetErrorString): a colocated rollout engine woken up to less free memory than it released.
def test_vllms_cumem_allocator_out_of_memory_on_wake_up_is_a_cuda_oom():
    v = classify(1, ["It took 0.61 seconds to wake up tags ['weights'].",
                     "CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:56",
                     "CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:57"], steps_seen=40)
    assert v.cls == "cuda_oom" and "sleep-mode allocator" in v.summary and "wake" in v.hint, v.summary
    v = classify(1, ["CUDA Error: invalid argument at /workspace/csrc/cumem_allocator.cpp:57"], steps_seen=40)
    assert v.cls == "unknown", v.summary


def test_a_log_line_that_only_mentions_deepeps_timeout_setting_decides_nothing():
    for line in ["[INFO] DeepEP dispatch timeout set to 100 s", "Using DeepEP with timeout 300"]:
        v = classify(1, ["iteration 40 loss 2.0", line, "ValueError: bad sample"], steps_seen=40)
        assert v.cls == "unknown", (line, v.summary)
    v = classify(1, ["DeepEP PP send timeout, recv buffer is full"], steps_seen=40)
    assert v.cls == "nccl_error", v.summary


def test_an_ib_verbs_call_out_of_locked_memory_names_ulimit_l_not_host_ram():
    v = classify(1, ["h200-2:4016:4653 [7] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_create_cq failed with error "
                     "Cannot allocate memory",
                     "h200-2:4016:4653 [7] NCCL INFO transport/net_ib.cc:659 -> 2",
                     "h200-2:4011:4650 [2] proxy.cc:1567 NCCL WARN [Proxy Service 10] Failed to execute operation "
                     "Connect from rank 10, retcode 3"], steps_seen=0)
    assert v.cls == "nccl_error" and "ulimit -l" in v.hint and "memlock" in v.hint, v.hint


# cuBLAS's own words for a kernel that failed on the GPU, where a wrapper prints the status text and not its name:
# Transformer Engine's NVTE_CHECK_CUBLAS (common/util/logging.h: NVTE_ERROR("cuBLAS Error: ",
# cublasGetStatusString(status)), after NVTE_ERROR's "FILE:LINE in function F: "), FlashInfer's
# FLASHINFER_CUBLAS_CHECK ("CUBLAS Error: " + cublasGetStatusString(e)) and torch <= 1.x's THCBlas ("cublas runtime
# error : <text> at FILE:LINE"). cublasGetStatusString words CUBLAS_STATUS_EXECUTION_FAILED "the function failed to
# launch on the GPU" (batch 24's slime #1622); EXECUTION_FAILED and MAPPING_ERROR's documented texts are "the GPU
# program failed to execute" and "an access to GPU memory space failed". They were restarted as unknown.
@pytest.mark.parametrize("line, words", [
    ("RuntimeError: /TransformerEngine/transformer_engine/common/gemm/cublaslt_gemm.cu:750 in function cublas_gemm: "
     "cuBLAS Error: the function failed to launch on the GPU", "cuBLAS Error: the function failed to launch on the GPU"),
    ("RuntimeError: /workspace/flashinfer/include/flashinfer/gemm/bmm_fp8.cuh:212: CUBLAS Error: the function failed "
     "to launch on the GPU", "CUBLAS Error: the function failed to launch on the GPU"),
    ("RuntimeError: cublas runtime error : the GPU program failed to execute at /pytorch/aten/src/THC/THCBlas.cu:411",
     "cublas runtime error : the GPU program failed to execute"),
    ("RuntimeError: cublas runtime error : an access to GPU memory space failed at "
     "C:/a/w/1/s/windows/pytorch/aten/src/THC/THCBlas.cu:21", "cublas runtime error : an access to GPU memory space failed"),
])
def test_cublas_words_for_a_kernel_that_failed_on_the_gpu_are_a_device_fault(line, words):
    frames = ['  File "/usr/local/lib/python3.12/dist-packages/transformer_engine/pytorch/cpp_extensions/gemm.py", '
              'line 141, in general_gemm', "    out, bias_grad, gelu_input, extra_output = tex.generic_gemm(*args)"]
    v = classify(1, ["step 12 loss 2.1", "Traceback (most recent call last):", *frames, line], steps_seen=12)
    assert v.cls == "cuda_fault" and v.retryable and v.recovery == "restart_launch_blocking", (v.summary, v.evidence)
    assert v.summary == f"CUDA fault: {words}" and v.env == {"CUDA_LAUNCH_BLOCKING": "1"}
    # cuBLAS's texts that name no fault stay unknown, like their status names: an FP8 GEMM's shape
    # (INVALID_VALUE, batch 24's ms-swift #5694), NOT_SUPPORTED; and cuSPARSE's same words, or a sentence quoting
    # them, decide nothing
    for other in ["megatron.core.utils: /TransformerEngine/transformer_engine/common/gemm/cublaslt.cu:412 in function "
                  "cublas_gemm: cuBLAS Error: an unsupported value or parameter was passed to the function",
                  "RuntimeError: /tmp/te/transformer_engine/common/include/transformer_engine/logging.h:38 in function "
                  "check_cublas_: CUBLAS Error: the requested functionality is not supported",
                  "cusparse status 6: the function failed to launch on the GPU",
                  "Returns: CUBLAS_STATUS_SUCCESS or the function failed to launch on the GPU"]:
        assert classify(1, [other], steps_seen=12).cls == "unknown", other


# FlashAttention-4 (flash_attn.cute) refusing an attention configuration its kernels for this GPU architecture do
# not implement, in its own texts (flash_attn/cute/interface.py, sm100_hd256_2cta_fmha_forward.py/_backward.py,
# flash_fwd_sm90.py of Dao-AILab/flash-attention 0251105a): every attempt on this GPU fails the same way, so the
# run fails at once (environment_error) instead of three restarts of the same refusal (batch 24's #2635).
@pytest.mark.parametrize("line", [
    "AssertionError: SM100 forward with head_dim=256 does not support aux_tensors",
    "AssertionError: SM100 forward with head_dim=256 does not support learnable_sink",
    "AssertionError: SM100 backward with head_dim=256 does not support seqused_q/seqused_k",
    "AssertionError: SM100 backward with head_dim=256 only supports cluster_size in {1, 2}",
    "AssertionError: SM100 hd256 2CTA paged KV requires max_seqlen_k divisible by 128",
    "AssertionError: SM100 block-sparse backward with head_dim=192 requires 2CTA; use_2cta_instrs is False.",
    "AssertionError: SM120 forward only supports num_splits=1",
    "AssertionError: (head_dim, head_dim_v)=(96, 96) is not supported on SM100/SM110. head_dim and head_dim_v must "
    "be between 8 and 128 and divisible by 8, or (192, 128) for DeepSeek, or (256, 256) for hd256.",
    "AssertionError: (head_dim, head_dim_v)=(320, 320) is not supported on SM90. head_dim and head_dim_v must be "
    "between 8 and 256 and divisible by 8.",
    "AssertionError: SplitKV not supported on SM 9.0",
    "AssertionError: Block sparsity not supported on SM 12.0",
    "NotImplementedError: Custom user-provided score_mod is not supported on SM8x architectures.",
    "AssertionError: FP8 is only supported on SM100 (compute capability 10.x) for FA4 CuTe.",
    "AssertionError: Learnable sink backward is supported on SM90 and SM100/SM110",
    "AssertionError: Only SM 9.x is supported",
])
def test_flash_attention_4s_refusal_on_this_architecture_is_an_environment_error(line):
    frames = ['  File "/usr/local/lib/python3.12/site-packages/flash_attn/cute/interface.py", line 1309, in '
              '_flash_attn_fwd', "    assert test, msg"]
    v = classify(1, ["[rank3]: Traceback (most recent call last):", *frames, f"[rank3]: {line}"], steps_seen=0)
    assert v.cls == "environment_error" and not v.retryable and v.recovery == "fail", (v.summary, v.evidence)
    message = line.split(": ", 1)[1]
    assert v.summary.startswith("FlashAttention-4 cannot run this attention configuration on this GPU's "
                                "architecture: " + message), v.summary
    assert "another attention backend" in v.hint
    assert decide(v, [AttemptRecord(1, 0.0, 10.0, v.cls, 0, 0)], RestartSettings(), 10.0).action == "fail"
    # logged and survived (a fallback), then something else ended the attempt: not the cause
    v = classify(1, [line, "step 40 loss 1.9", "Traceback (most recent call last):",
                     '  File "train.py", line 9, in <module>', "KeyError: 'labels'"], steps_seen=40)
    assert v.cls == "unknown", v.summary


def test_a_bare_assertion_in_a_flash_attention_4_kernel_constructor_is_an_environment_error():
    """flash_fwd_sm100.py's constructor asserts that the tiles fit the GPU's tensor memory, without a message
    (batch 24's #1959, head_dim 256 on a B200)."""
    tail = ["Traceback (most recent call last):", '  File "test.py", line 17, in <module>', "    tmp = fa_cute(...)",
            '  File "/opt/venv/lib/python3.12/site-packages/flash_attn/cute/flash_fwd_sm100.py", line 132, in __init__',
            "    assert self.tmem_total <= SM100_TMEM_CAPACITY_COLUMNS", "AssertionError"]
    v = classify(1, tail, steps_seen=0)
    assert v.cls == "environment_error" and v.recovery == "fail", (v.summary, v.evidence)
    assert "AssertionError in flash_fwd_sm100.py's constructor" in v.summary, v.summary
    # the same bare assertion elsewhere (FA4's own call checks, another library's constructor) is no such refusal
    for where in ['  File "/opt/venv/lib/python3.12/site-packages/flash_attn/cute/interface.py", line 640, in '
                  '_flash_attn_fwd',
                  '  File "/opt/venv/lib/python3.12/site-packages/mylib/flash_fwd_sm100.py", line 132, in __init__',
                  '  File "/opt/venv/lib/python3.12/site-packages/flash_attn/cute/flash_fwd_sm100.py", line 900, in '
                  'kernel']:
        v = classify(1, [*tail[:3], where, "    assert q.shape[-1] == k.shape[-1]", "AssertionError"], steps_seen=0)
        assert v.cls == "unknown", (where, v.summary)


@pytest.mark.parametrize("line, cls", [
    ("AssertionError: SM100 forward with head_dim=256 does not support aux_tensors", "environment_error"),
    ("RuntimeError: /TransformerEngine/transformer_engine/common/gemm/cublaslt_gemm.cu:750 in function cublas_gemm: "
     "cuBLAS Error: the function failed to launch on the GPU", "cuda_fault"),
])
def test_the_new_summaries_quote_a_pasted_line_with_its_secrets_masked(line, cls):
    """`moeconsole parse - --crash` as a user runs it: the summary quotes the line from the message on, and a
    token the paste carried on that line never reaches the output."""
    token = "hf_" + "Zq9x" * 9
    res = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "parse", "-", "--crash", "--json"],
                         cwd=REPO, input=f"step 3\n{line} (HF_TOKEN={token})\n".encode(), capture_output=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert token.encode() not in res.stdout
    verdict = json.loads(res.stdout)
    assert verdict["cls"] == cls and line.split("Error: ")[-1] in verdict["summary"], verdict


# cudaErrorNvlinkUncorrectable / CUDA_ERROR_NVLINK_UNCORRECTABLE (220): cudaGetErrorString's "uncorrectable NVLink
# error detected during the execution", as torch raises it on every rank of an NVLink job, in torchrun's error-file
# JSON, and in XLA's allocator line. It was restarted as unknown, without the blocking switch; it is a device fault
# like an uncorrectable ECC error.
@pytest.mark.parametrize("lines", [
    ["[rank2]: RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution",
     "[rank2]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
     "might be incorrect.", "[rank2]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1"],
    ['      "message": "RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution\\nCUDA kernel '
     'errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",'],
    ["[rank1] E0821 04:06:44.462569 820 gpu_cudamallocasync_allocator.cc:414] cudaFreeAsync failed to free "
     "0x27e80b9200: INTERNAL: CUDA error: : CUDA_ERROR_NVLINK_UNCORRECTABLE: uncorrectable NVLink error detected "
     "during the execution"],
])
def test_an_uncorrectable_nvlink_error_is_a_device_fault(lines):
    v = classify(1, ["step 310 loss 1.4", *lines], steps_seen=310)
    assert v.cls == "cuda_fault" and v.recovery == "restart_launch_blocking", (v.summary, v.evidence)
    assert "nvlink" in v.summary.lower() and v.env == {"CUDA_LAUNCH_BLOCKING": "1"}


# Kubernetes: a container the node's cgroup OOM killer ended, by the reason the kubelet records ("OOMKilled"), as
# kubectl describe prints a container's state (k8s.io/kubectl/pkg/describe describeContainerState: "State:\t
# Terminated", "Reason:\t%s", "Exit Code:\t%d", tab-expanded), the pod status as JSON or YAML, kubectl get pods'
# STATUS column and docker inspect's State; it was read as unknown (exit code 1). A SIGKILL for memory:
# killed_oom, restarted with a warning.
@pytest.mark.parametrize("lines", [
    ["Containers:", "  pytorch:", "    State:          Terminated", "      Reason:       OOMKilled",
     "      Exit Code:    137", "      Started:      Mon, 13 Nov 2023 03:48:52 +0100"],
    ["    State:          Running", "    Last State:     Terminated", "      Reason:       OOMKilled",
     "      Exit Code:    137"],
    ["NAME                     READY   STATUS      RESTARTS   AGE", "llama-sft-worker-0       0/1     OOMKilled   3          41m"],
    ['        "lastState": {', '            "terminated": {', '                "exitCode": 137,',
     '                "reason": "OOMKilled",'],
    ["      terminated:", "        exitCode: 137", "        reason: OOMKilled"],
    ['        "OOMKilled": true,', '        "Dead": false,'],
    ["      Exit Code:    137"],
])
def test_kubernetes_oomkilled_container_is_a_host_oom_kill(lines):
    v = classify(1, ["step 120 loss 1.3", *lines], steps_seen=120)
    assert v.cls == "killed_oom" and v.retryable and v.recovery == "restart", (v.summary, v.evidence)
    # the word in prose, or docker's "OOMKilled": false, is no such kill
    for other in ["If the pod shows OOMKilled we should raise its memory limit",
                  '        "OOMKilled": false,']:
        assert classify(1, ["step 120 loss 1.3", other], steps_seen=120).cls == "unknown", other


# cudaErrorIllegalAddress (700) has one text in every runtime ("an illegal memory access was encountered");
# retold in a title or a sentence it keeps its core or its tail. Both were restarted as unknown, without the
# blocking switch (batch 25: Unsloth's "CUDA error: a memory access was encountered", vLLM-Omni's "crashes with
# CUDA illegal memory access"). The summary gives the runtime's own words; a host SIGILL stays what it was.
@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: illegal memory access",
    "Illegal memory access in the fused MoE kernel when EP=8 (Qwen3-30B-A3B)",
    "[rank3]: torch.AcceleratorError: CUDA error: a memory access was encountered",
    "the GRPO run dies at step 14 with an Illegal Memory Access after the rollout wakes up",
])
def test_an_illegal_memory_access_retold_is_a_device_fault(line):
    v = classify(1, ["step 14 loss 0.9", line], steps_seen=14)
    assert v.cls == "cuda_fault" and v.env == {"CUDA_LAUNCH_BLOCKING": "1"}, (v.summary, v.evidence)
    assert v.summary == "CUDA fault: an illegal memory access was encountered"


def test_a_host_illegal_instruction_is_no_device_fault():
    v = classify(None, ["step 14 loss 0.9", "Illegal instruction (core dumped)"], steps_seen=14)
    assert v.cls != "cuda_fault", v


# Slurm >= 25.05 (src/slurmd/slurmstepd/req.c, _handle_signal_container) names what ended a step: "DUE to SIGNAL
# <strsignal>" for a SIGTERM/SIGKILL sent to it (a scancel: up to 24.11 the plain "CANCELLED AT T ***") and
# "DUE TO TASK FAILURE" (SIG_TERM_KILL: srun --kill-on-bad-exit ending the other tasks after one failed). The
# first was read as nothing (unknown); the second as someone's scancel (job_cancelled: never restarted).
@pytest.mark.parametrize("signal", ["Terminated", "Killed"])
def test_slurm_2505_cancel_by_signal_is_a_cancel(signal):
    line = f"slurmstepd: error: *** JOB 4711 ON gpu-03 CANCELLED AT 2026-02-03T04:05:06 DUE to SIGNAL {signal} ***"
    v = classify(None, ["step 30 loss 1.1", line], steps_seen=30)
    assert v.cls == "job_cancelled" and not v.retryable and line in v.evidence, v


def test_slurm_task_failure_is_the_failed_tasks_own_error_not_a_cancel():
    tail = ["[rank2]: Traceback (most recent call last):",
            "[rank2]:   File \"/app/train.py\", line 88, in <module>",
            "[rank2]: KeyError: 'labels'",
            "srun: error: gpu-03: task 2: Exited with exit code 1",
            "slurmstepd: error: *** STEP 4711.0 ON gpu-03 CANCELLED AT 2026-02-03T04:05:06 DUE TO TASK FAILURE ***",
            "srun: error: gpu-03: tasks 0-1,3: Terminated"]
    v = classify(1, tail, steps_seen=30)
    assert v.cls == "unknown" and v.retryable and "KeyError: 'labels'" in v.summary, v
    # alone, it still says only that some task failed: no class of its own, and never a scancel
    assert classify(1, tail[-2:], steps_seen=30).cls == "unknown"


# --- batch 26 -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("tail", [
    # ROCm: hipEventQuery refused while another thread captures a graph (pytorch/pytorch#177309), one line
    ["[rank3]:[E421 22:56:09 ProcessGroupNCCL.cpp:2055] [PG ID 5 PG GUID 23 Rank 1] Process group watchdog thread "
     "terminated with exception: HIP error: operation not permitted when stream is capturing",
     "Search for `hipErrorStreamCaptureUnsupported' in https://rocm.docs.amd.com/projects/HIP/en/latest/index.html "
     "for more information.",
     "terminate called after throwing an instance of 'c10::DistBackendError'"],
    # CUDA's wording of the same, the exception on the line after the exit line, with the work's echoes
    ["[rank0]:[E1120 08:01:02.123 ProcessGroupNCCL.cpp:621] [Rank 0] Some NCCL operations have failed or timed out. "
     "Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.",
     "[rank0]:[E1120 08:01:02.124 ProcessGroupNCCL.cpp:627] [Rank 0] To avoid data inconsistency, we are taking the "
     "entire process down.",
     "[rank0]:[E1120 08:01:02.125 ProcessGroupNCCL.cpp:1515] [PG 0 Rank 0] Process group watchdog thread terminated "
     "with exception:",
     "CUDA error: operation not permitted on an event last recorded in a capturing stream",
     "Exception raised from ncclCommWatchdog at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1521 (most "
     "recent call first):"],
    # torch <= 2.1's wording, the GPU's "unknown error" relayed
    ["[E ProcessGroupNCCL.cpp:915] [Rank 1] NCCL watchdog thread terminated with exception: CUDA error: unknown error",
     "terminate called after throwing an instance of 'std::runtime_error'",
     "  what():  [Rank 1] NCCL watchdog thread terminated with exception: CUDA error: unknown error"],
])
def test_the_watchdog_relaying_a_runtime_error_is_not_an_nccl_error(tail):
    """ProcessGroupNCCL's watchdog names what it met: the CUDA/HIP runtime's error of its event query is the
    cause, and nothing of NCCL failed (torch's Watchdog::run, ``"... terminated with exception: ", e.what()``)."""
    v = classify(-6, tail, steps_seen=40)
    assert v.cls == "unknown" and "NCCL" not in v.summary, v.summary
    assert v.cooldown_scale == 1.0


def test_the_watchdog_relaying_a_runtime_error_beside_an_nccl_timeout_is_still_the_timeout():
    tail = ["[rank0]:[E1120 ProcessGroupNCCL.cpp:1515] [PG 0 Rank 0] Process group watchdog thread terminated with "
            "exception: CUDA error: operation not permitted when stream is capturing",
            "[rank1]:[E1120 ProcessGroupNCCL.cpp:621] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 "
            "milliseconds before timing out."]
    v = classify(-6, tail, steps_seen=40)
    assert v.cls == "nccl_error" and v.summary.startswith("NCCL watchdog timeout"), v.summary


def test_the_watchdog_timeouts_frames_alone_are_an_nccl_timeout():
    """torch 2.8+'s frames (Watchdog::runLoop) under WorkNCCL::checkTimeout, the message above them lost."""
    frames = ["frame #0: c10::Error::Error(c10::SourceLocation, std::__cxx11::basic_string<char, std::char_traits"
              "<char>, std::allocator<char> >) + 0x80 (0x7f8b1257cb80 in /usr/lib/python3.12/torch/lib/libc10.so)",
              "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
              "std::ratio<1l, 1000l> > >) + 0x247 (0x7f8a990a29d7 in /usr/lib/python3.12/torch/lib/libtorch_cuda.so)",
              "frame #2: c10d::ProcessGroupNCCL::Watchdog::runLoop() + 0x1691 (0x7f8a990a75e1 in "
              "/usr/lib/python3.12/torch/lib/libtorch_cuda.so)"]
    assert classify(-6, frames, steps_seen=40).cls == "nccl_error"
    assert classify(None, frames, hang=True, steps_seen=40).cls == "nccl_error"    # NCCL said it timed out
    # the watchdog's loop frames carry any exception it met: alone they prove no timeout
    assert classify(None, [frames[0], frames[2]], hang=True, steps_seen=40).cls == "hang"


@pytest.mark.parametrize("lines", [
    ["RuntimeError: ACL stream synchronize failed, error code:507015", "[Error]: The aicore execution is abnormal.",
     "        Rectify the fault based on the error information in the ascend log."],
    ["EH9999: Inner Error!", "        rtStreamSynchronize execute failed, reason=[aicore trap exception]"
     "[FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:53]"],
    ["RuntimeError: npuSynchronizeDevice:torch_npu/csrc/core/npu/NPUStream.cpp:404 NPU function error: "
     "AclrtSynchronizeDeviceWithTimeout, error code is 507036"],
    ["[Error]: Vector core trap write out-of-bounds exception.",
     "        Rectify the fault based on the error information in the ascend log."],
])
def test_torch_npus_words_for_a_faulted_npu_kernel_are_a_device_fault(lines):
    """torch_npu's error table for CANN's kernel exceptions (507015/16/18, 507035/36, 507042-45): restarted with
    torch_npu's own blocking switch."""
    v = classify(1, lines, steps_seen=10)
    assert v.cls == "cuda_fault" and v.env == {"ASCEND_LAUNCH_BLOCKING": "1"}, v


@pytest.mark.parametrize("lines", [
    # a kernel that ran too long (ACL_ERROR_RT_VECTOR_CORE_TIMEOUT), an operator CANN could not compile
    ["RuntimeError: ACL stream synchronize failed, error code:507034", "[Error]: Vector core execution timed out."],
    ["RuntimeError: InnerRun:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:234 OPS function error: Conv3D, "
     "error code is 500002"],
])
def test_other_npu_runtime_errors_are_no_device_fault(lines):
    assert classify(1, lines, steps_seen=10).cls == "unknown"



# Intel GPUs (XPU): a device allocation that failed below torch's XPU allocator, as the SYCL runtime words a
# Unified Runtime result (intel/llvm sycl: "Native API failed. Native API returns: N (NAME)" and
# "<backend> backend failed with error: N (NAME)"); UR v0.9 numbered OUT_OF_DEVICE_MEMORY 40, v0.12 39.
@pytest.mark.parametrize("lines", [
    ["[rank1]:   File \"/opt/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py\", line 125, in forward",
     "[rank1]:     return F.linear(input, self.weight, self.bias)",
     "[rank1]: RuntimeError: Native API failed. Native API returns: 40 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)"],
    ["2026-05-01 10:00:00 | ERROR | trainer:fit:88 - level_zero backend failed with error: 39 "
     "(UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)", "Fatal Python error: Aborted"],
    ["zeMemAllocDevice failed: ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY"],
])
def test_an_intel_gpu_out_of_device_memory_is_a_gpu_oom(lines):
    v = classify(1, ["step 12 loss 2.1", *lines], steps_seen=12)
    assert v.cls == "cuda_oom" and v.recovery == "restart", (v.summary, v.evidence)


@pytest.mark.parametrize("line", [
    "RuntimeError: level_zero backend failed with error: 40 (UR_RESULT_ERROR_OUT_OF_RESOURCES)",
    "RuntimeError: Native API failed. Native API returns: 38 (UR_RESULT_ERROR_OUT_OF_HOST_MEMORY)",
    "RuntimeError: level_zero backend failed with error: 20 (UR_RESULT_ERROR_DEVICE_LOST)",
])
def test_other_unified_runtime_results_are_no_gpu_oom(line):
    assert classify(1, ["step 12 loss 2.1", line], steps_seen=12).cls != "cuda_oom"


# torch/utils/checkpoint.py check_recomputed_tensors_match: the list under its head line, pasted without it.
def test_the_recompute_checks_tensor_counts_alone_are_a_recompute_mismatch():
    v = classify(1, ["[rank3]: Number of tensors saved during forward: 412",
                     "[rank3]: Number of tensors saved during recomputation: 398.",
                     "W0101 00:00:01.000000 7 torch/distributed/elastic/multiprocessing/api.py:900] "
                     "Sending process 8 closing signal SIGTERM"], steps_seen=5)
    assert v.cls == "recompute_mismatch" and not v.retryable
    assert v.summary == ("activation-checkpoint recompute mismatch: 412 tensors saved in forward, "
                         "398 in recomputation")


def test_the_recompute_checks_metadata_list_alone_is_a_recompute_mismatch():
    v = classify(1, ["tensor at position 3:",
                     "saved metadata: {'shape': torch.Size([4, 8, 201, 201]), 'dtype': torch.float32, "
                     "'device': device(type='xpu', index=0)}",
                     "recomputed metadata: {'shape': torch.Size([32, 201, 32]), 'dtype': torch.bfloat16, "
                     "'device': device(type='xpu', index=0)}"], steps_seen=5)
    assert v.cls == "recompute_mismatch"


def test_other_metadata_lines_are_no_recompute_mismatch():
    v = classify(1, ["saved metadata: /ckpt/step_100/metadata.json", "RuntimeError: boom"], steps_seen=5)
    assert v.cls != "recompute_mismatch"


# A write past the file size limit (RLIMIT_FSIZE) or the filesystem's largest file: EFBIG, whose
# strerror is "File too large" (CPython ignores SIGXFSZ at start-up, Python/pylifecycle.c, so its
# writes fail with it), or SIGXFSZ for a writer that keeps the default action (a shell's 153).
@pytest.mark.parametrize("code, lines", [
    (1, ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>',
         "    torch.save(state, path)", "OSError: [Errno 27] File too large"]),
    (-25, ["step 9 loss 1.0"]),
    (153, ["step 9 loss 1.0"]),
])
def test_a_write_past_the_file_size_limit_is_an_environment_error_never_restarted(code, lines):
    v = classify(code, lines, steps_seen=9, attempt=2)
    assert v.cls == "environment_error" and v.recovery == "fail" and not v.retryable, v
    assert "ulimit -f" in v.summary and "ulimit -Hf" in (v.hint or "")


def test_the_runners_finding_of_a_log_at_the_limit_names_it_whatever_the_exit():
    v = classify(1, ["{'loss': '1.0', 'global_step/max_steps': '9548/20000'}"], steps_seen=9548,
                 log_at_limit=512 * 1024)
    assert v.cls == "environment_error" and v.summary.startswith("train.log reached the file size limit (ulimit -f) of 512")


def test_file_too_large_in_another_message_is_no_file_size_limit():
    v = classify(1, ["ValueError: File too large to upload to the Hub (max 50 GB)"], steps_seen=9, attempt=2)
    assert v.cls != "environment_error", v


@pytest.mark.parametrize("runtime, line", [
    ("HIP", "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity "
            "of 191.98 GiB of which 1.02 GiB is free."),
    ("NPU", "RuntimeError: NPU out of memory. Tried to allocate 1.20 GiB (NPU 2; 60.97 GiB total capacity; "
            "58.10 GiB already allocated)"),
    ("XPU", "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity "
            "of 47.98 GiB."),
    ("XPU", "RuntimeError: level_zero backend failed with error: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)"),
    ("MPS", "RuntimeError: MPS backend out of memory (MPS allocated: 17.00 GB, other allocations: 1.20 GB, "
            "max allowed: 18.13 GB). Tried to allocate 256.00 MB on private pool."),
    ("XLA", "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
            "17179869184 bytes."),
    ("CUDA", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
             "capacity of 79.10 GiB of which 1.50 GiB is free."),
])
def test_an_oom_summary_names_the_runtime_that_ran_out(runtime, line):
    """The same allocator and class on every accelerator, but the summary the user reads names the
    runtime the message names: an AMD, Ascend, Intel or Apple user was told "CUDA out of memory"."""
    v = classify(None, ["Traceback (most recent call last):", '  File "train.py", line 9, in <module>', line],
                 steps_seen=12)
    assert v.cls == "cuda_oom", v
    assert v.summary.startswith(f"{runtime} out of memory"), v.summary
    assert runtime == "CUDA" or "CUDA" not in v.summary, v.summary


# The runtimes' other words for a build without the GPU's code (batch 30): cudaErrorInvalidDeviceFunction and
# HIP's hipErrorInvalidDeviceFunction, both "invalid device function" (torch's ROCm build raises it when its
# code objects lack the GPU's gfx target), and the HSA runtime refusing a code object's ISA
# (HSA_STATUS_ERROR_INVALID_ISA / _ISA_NAME in hsa.h, printed by ROCclr's queue callback), which a wrong
# HSA_OVERRIDE_GFX_VERSION gives. The public texts: tests/crash/public/668, 669.
@pytest.mark.parametrize("lines, exit_code, words", [
    (["RuntimeError: HIP error: invalid device function",
      "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
      "incorrect.",
      "For debugging consider passing AMD_SERIALIZE_KERNEL=3",
      "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions."], 1, "PYTORCH_ROCM_ARCH"),
    (["hipLaunchKernel: Returned hipErrorInvalidDeviceFunction :",
      "RuntimeError: HIP error: hipErrorInvalidDeviceFunction"], 1, "PYTORCH_ROCM_ARCH"),
    ([":0:rocdevice.cpp            :2984: 7425131395 us: [pid:4021 tid:0x7f13] Callback: Queue 0x7f1200000000 "
      "aborting with error : HSA_STATUS_ERROR_INVALID_ISA_NAME: The instruction set architecture name is invalid. "
      "code: 0x1017", "Aborted (core dumped)"], -6, "HSA_OVERRIDE_GFX_VERSION"),
    # the CUDA runtime's own text (an old torch or an extension built without this GPU's sm): CUDA's switches
    (["Traceback (most recent call last):", '  File "/w/train.py", line 9, in <module>',
      "RuntimeError: CUDA error: invalid device function"], 1, "TORCH_CUDA_ARCH_LIST"),
    (["RuntimeError: cuda runtime error (8) : invalid device function at /pytorch/aten/src/THCUNN/generic/"
      "Threshold.cu:34"], 1, "TORCH_CUDA_ARCH_LIST"),
    (["F0806 12:02:26.552108  4388 im2col.cu:54] Check failed: error == cudaSuccess (8 vs. 0)  invalid device function",
      "*** Check failure stack trace: ***"], -6, "TORCH_CUDA_ARCH_LIST"),
    (["Cuda kernel failed. Error: Invalid Device Function"], 1, "TORCH_CUDA_ARCH_LIST"),
])
def test_an_invalid_device_function_or_isa_is_a_build_without_the_gpus_code(lines, exit_code, words):
    v = classify(exit_code, lines, steps_seen=0)
    assert v.cls == "environment_error", (v.summary, v.evidence)
    assert words in (v.hint or ""), v.hint
    assert not v.env, v.env          # never restarted with a blocking switch: it is not a fault
    _fails_without_restart(v)


def test_other_invalid_device_errors_are_not_a_missing_build():
    for line in ["RuntimeError: CUDA error: invalid device ordinal",
                 "RuntimeError: HIP error: invalid device pointer"]:
        assert classify(1, [line], steps_seen=0).cls != "environment_error", line


# Windows' SIGSEGV (batch 30): an access violation, STATUS_ACCESS_VIOLATION 0xC0000005, in CPython faulthandler's
# words ("Windows fatal exception: access violation", Modules/faulthandler.c) or as the exit status launchers,
# IDEs and shells print (0xC0000005, 3221225477, -1073741819). The public texts: tests/crash/public/686, 687.
@pytest.mark.parametrize("lines", [
    ["Epoch 3:  41%|████      | 212/517 [01:02<01:29,  3.40it/s, loss=0.412]",
     "Process finished with exit code -1073741819 (0xC0000005)"],
    ["Windows fatal exception: access violation", "",
     "Thread 0x00002f64 (most recent call first):",
     '  File "C:\\env\\lib\\threading.py", line 331 in wait',
     "", "Current thread 0x00001d8c (most recent call first):",
     '  File "C:\\env\\lib\\site-packages\\torch\\nn\\modules\\conv.py", line 549 in _conv_forward'],
    ["accelerate-launch.exe exited with code 3221225477"],
    ["error: process didn't exit successfully: `target\\release\\trainer.exe` "
     "(exit code: 0xc0000005, STATUS_ACCESS_VIOLATION)"],
])
def test_a_windows_access_violation_is_a_segfault(lines):
    v = classify(1, lines, steps_seen=40)
    assert v.cls == "segfault" and v.retryable, (v.summary, v.evidence)
    assert "Windows access violation" in v.summary, v.summary


@pytest.mark.parametrize("line", ["Windows fatal exception: int divide by zero",
                                  "Windows fatal exception: stack overflow",
                                  "torch.OutOfMemoryError: tried to allocate 3221225477 bytes",
                                  "ValueError: expected 1073741819 rows, got -1073741819"])
def test_other_windows_exceptions_and_bare_numbers_are_not_an_access_violation(line):
    assert classify(1, [line], steps_seen=5).cls != "segfault", line


@pytest.mark.parametrize("warning", [SM86, "  - `NVIDIA GeForce RTX 3090 with CUDA capability sm_86 is not compatible "
                                           "with the current PyTorch installation`"])
def test_the_summary_names_the_gpu_without_the_warnings_prefix_or_a_pastes_bullet(warning):
    v = classify(1, [warning, "RuntimeError: CUDA error: no kernel image is available for execution on the device"],
                 steps_seen=0)
    assert "(sm_86, NVIDIA GeForce RTX 3090)" in v.summary, v.summary


@pytest.mark.parametrize("heading", ["Error messages", "Error Message:", "Exception details:", "Error log"])
def test_a_reports_error_heading_is_not_the_exception_the_summary_quotes(heading):
    """Batch 30 (689): a report's heading above the quoted error had been quoted as the exception."""
    v = classify(1, ["**Description:**", "It fails on MPS.", heading, "",
                     "> ValueError: Tensor for argument #2 'mat2' is on CPU, but expected it to be on GPU"],
                 steps_seen=0)
    assert v.cls == "unknown" and heading not in v.summary, v.summary
    assert "ValueError: Tensor for argument #2" in v.summary, v.summary


# MPI launchers' words for how a rank ended, from their own format strings: Open MPI's PRRTE
# (help-prun.txt [prun:proc-aborted-strsignal]), MPICH Hydra's mpiexec.c ("... EXIT STRING: %s (signal %d)") and
# Intel MPI's Hydra block ("=   KILLED BY SIGNAL: 9 (Killed)"), HPE Cray PALS ("<host>: rank N died from signal S
# [and dumped core]", two ranks' lines glued when the terminal lost a newline).
@pytest.mark.parametrize("lines, cls", [
    (["mpirun noticed that process rank 0 with PID 0 on node gpu-a17 exited on signal 9 (Killed)."], "killed_oom"),
    (["prterun noticed that process rank 3 with PID 4411 on node gpu7 exited on signal 11 (Segmentation fault)."],
     "segfault"),
    (["YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Bus error (signal 7)",
      "This typically refers to a problem with your application."], "bus_error"),
    (["=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", "=   RANK 1 PID 5491 RUNNING AT gn59",
      "=   KILLED BY SIGNAL: 9 (Killed)"], "killed_oom"),
    (["x3109c0s13b0n0.hsn.cm.polaris.alcf.anl.gov: rank 0 died from signal 7 and dumped corex3109c0s13b0n0.hsn."
      "cm.polaris.alcf.anl.gov: rank 3 died from signal 15"], "bus_error"),
    (["x4311c6s7b0n0.hsn.cm.aurora.alcf.anl.gov: rank 2 died from signal 9"], "killed_oom"),
])
def test_mpi_launchers_name_the_signal_that_ended_a_rank(lines, cls):
    v = classify(1, ["step 12 loss 2.2", *lines], steps_seen=12)
    assert v.cls == cls, (v.summary, v.evidence)


def test_pals_ranks_ended_after_the_first_are_the_launchers_teardown():
    # the first rank exited with an error code; the launcher then killed the rest: no SIGKILL of our own
    lines = ["x3102c0s7b0n0.hsn.cm.polaris.alcf.anl.gov: rank 7 exited with code 255",
             "x3102c0s37b1n0.hsn.cm.polaris.alcf.anl.gov: rank 0 died from signal 9"]
    v = classify(1, ["step 12 loss 2.2", *lines], steps_seen=12)
    assert v.cls == "unknown", (v.summary, v.evidence)
    # the first rank's own SIGSEGV decides over the SIGKILL the launcher sent after it
    lines = ["rank 0 died from signal 11 and dumped core", "rank 4 died from signal 9"]
    assert classify(1, ["step 12 loss 2.2", *lines], steps_seen=12).cls == "segfault"


# The CUDA driver API's name for the runtime's out-of-memory (cuda.h CUDA_ERROR_OUT_OF_MEMORY = 2), as driver-API
# wrappers end their messages with it; pinned host memory the driver refused is not the GPU's memory.
@pytest.mark.parametrize("line, cls", [
    ("numba.cuda.cudadrv.driver.CudaAPIError: [2] Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY",
     "cuda_oom"),
    ("RuntimeError: CUresult.CUDA_ERROR_OUT_OF_MEMORY", "cuda_oom"),
    ("numba.cuda.cudadrv.driver.CudaAPIError: [2] Call to cuMemHostAlloc results in CUDA_ERROR_OUT_OF_MEMORY",
     "unknown"),
    ("E0101 12:00:00.000 cuda_driver.cc:1018] failed to alloc 8589934592 bytes on host: CUDA_ERROR_OUT_OF_MEMORY",
     "unknown"),
])
def test_the_driver_apis_out_of_memory_name_is_a_cuda_oom_unless_on_the_host(line, cls):
    v = classify(1, ["step 30 loss 1.4", line], steps_seen=30)
    assert v.cls == cls, (v.summary, v.evidence)


# Batch 31: a matmul kernel that refuses the GPU's compute capability, in the checks' own words: Megatron-LM's
# validate_args for --moe-grouped-gemm (megatron/training/arguments.py `assert dc[0] >= 8, ...`), and torch's device
# checks of its private matmuls (aten/src/ATen/native/cuda/Blas.cpp). Variants the issues did not show: the assertion
# at the end of Megatron's traceback (a first attempt: not config_error, the GPU is what must change), the FP8
# checks of _scaled_grouped_mm and _scaled_mm behind a [rankN]: prefix.
@pytest.mark.parametrize("lines", [
    ['  File "/opt/Megatron-LM/megatron/training/arguments.py", line 731, in validate_args',
     '    assert dc[0] >= 8, "Unsupported compute capability for GroupedGEMM kernels."',
     "AssertionError: Unsupported compute capability for GroupedGEMM kernels."],
    ["[rank3]: RuntimeError: torch._scaled_grouped_mm is only supported on CUDA devices with compute capability = "
     "[9.0, 10.0], or ROCm MI300+"],
    ["[rank0]: ValueError: torch._scaled_mm is only supported on CUDA devices with compute capability >= 9.0 or 8.9, "
     "or ROCm MI300+"],
])
def test_a_matmul_kernel_refusing_the_gpus_compute_capability_is_an_environment_error(lines):
    v = classify(1, ["Traceback (most recent call last):", *lines], steps_seen=0, attempt=1)
    assert v.cls == "environment_error" and not v.retryable, (v.summary, v.evidence)
    assert "compute capability" in v.summary and "grouped GEMM" in v.hint, (v.summary, v.hint)


def test_a_capability_check_of_another_kind_is_not_a_matmul_refusal():
    # torch.compile's tutorial note has the same shape but names no private matmul: no rule of this family
    v = classify(1, ["RuntimeError: torch.compile is only supported on cuda devices with compute capability >= 7.0"],
                 steps_seen=0)
    assert v.cls == "unknown", (v.summary, v.evidence)


# Batch 31: a kernel image or PTX the driver cannot load for this GPU (cudaErrorInvalidPtx 218 "a PTX JIT compilation
# failed", its HIP twin hipErrorInvalidKernelFile "invalid kernel file" on AMD, cudaErrorInvalidKernelImage 200
# "device kernel image is invalid"), as torch and the driver API print them: variants the issue did not show.
@pytest.mark.parametrize("line, rocm", [
    ("RuntimeError: CUDA error: a PTX JIT compilation failed", False),
    ("torch.AcceleratorError: HIP error: invalid kernel file", True),
    ("RuntimeError: CUDA error: device kernel image is invalid", False),
    ("Error: DriverError(CUDA_ERROR_INVALID_PTX, \"a PTX JIT compilation failed\")", False),
])
def test_a_kernel_image_the_driver_cannot_load_is_an_environment_error(line, rocm):
    v = classify(1, ["step 0", line], steps_seen=0)
    assert v.cls == "environment_error" and "kernel image cannot be loaded" in v.summary, (v.summary, v.evidence)
    assert ("PYTORCH_ROCM_ARCH" in v.hint) is rocm, v.hint


# Batch 31: Transformer Engine's loader finding no library of its own (transformer_engine/common/__init__.py
# _get_shared_object_file: FileNotFoundError, an assert in older releases; "core", "torch" or "jax"), after the
# traceback or alone: a missing dependency whose hint names TE's own install.
@pytest.mark.parametrize("line, want", [
    ("FileNotFoundError: Could not find shared object file for Transformer Engine core lib.", "core library"),
    ("AssertionError: Could not find shared object file for Transformer Engine jax lib.", "transformer_engine[jax]"),
    ("[rank0]: FileNotFoundError: Could not find shared object file for Transformer Engine torch lib.",
     "transformer_engine[pytorch]"),
])
def test_transformer_engines_missing_library_is_a_missing_dependency(line, want):
    v = classify(1, ["Traceback (most recent call last):",
                     '  File "/usr/lib/python3.12/site-packages/transformer_engine/common/__init__.py", line 212, '
                     "in load_framework_extension", line], steps_seen=0)
    assert v.cls == "missing_dependency" and not v.retryable, (v.summary, v.evidence)
    assert "Transformer Engine" in v.summary and want in v.hint, (v.summary, v.hint)


# Batch 31: cudaErrorECCUncorrectable retold without its tail ("uncorrectable ECC error" in a sentence); nvidia-smi's
# "Uncorr. ECC" column and DCGM's counts of "uncorrectable ECC errors" are not it.
@pytest.mark.parametrize("line, cls", [
    ("The job died after 3 h: uncorrectable ECC error on GPU 5, then every rank timed out.", "cuda_fault"),
    ("DCGM: 0 uncorrectable ECC errors since the last reset", "unknown"),
    ("| N/A   43C    P0    67W / 250W |  Volatile Uncorr. ECC |", "unknown"),
])
def test_an_uncorrectable_ecc_error_retold_is_a_cuda_fault(line, cls):
    v = classify(1, ["step 88 loss 1.1", line], steps_seen=88)
    assert v.cls == cls, (v.summary, v.evidence)


# Batch 33: NVIDIA PhysX (Isaac Sim / Isaac Lab) reports a failed CUDA call with the driver's CUresult as a bare
# number, in its own words (NVIDIA-Omniverse/PhysX: PxgSimulationController.cpp "PhysX Internal CUDA error.
# Simulation can not continue! Error code %i!", PxgCudaUtils.h "SynchronizeStreams cuEventRecord failed with error
# %i", PxgKernelLauncher.h "GPU kernel '%s' execution failed with error %u!", CudaContextManager.cpp "... failed
# with error code %i!"), behind omni.physx's "PhysX error: " or the SDK's default callback "FILE (LINE) : internal
# error : ". A fault's number is a cuda_fault restarted with the blocking switch; any other number is not.
@pytest.mark.parametrize("line, cls, words", [
    ("2025-04-01 12:00:00 [9,001ms] [Error] [omni.physx.plugin] PhysX error: PhysX Internal CUDA error. "
     "Simulation can not continue! Error code 719!", "cuda_fault", "unspecified launch failure"),
    ("/builds/physx/source/gpucommon/include/PxgCudaUtils.h (78) : internal error : SynchronizeStreams "
     "cuStreamWaitEvent failed with error 716", "cuda_fault", "misaligned address"),
    ("[Error] [omni.physx.plugin] PhysX error: GPU kernel 'solveContacts' execution failed with error 710!",
     "cuda_fault", "device-side assert triggered"),
    ("[Error] [omni.physx.plugin] PhysX error: GPU kernel 'bpSignalComplete' failed to launch with error 400!!",
     "unknown", ""),
    ("[Error] [omni.physx.plugin] PhysX error: Mem allocation failed with error code 2!", "unknown", ""),
    ("loader: Fetching shards failed! 700 rows were skipped", "unknown", ""),
    # CudaContextManager.cpp's "Failed to unload CUDA module data, returned %i." is the only "returned" of a
    # CUresult; another number after "returned" on a PhysX line is no CUDA result
    ("[Error] [omni.physx.plugin] PhysX error: Failed to unload CUDA module data, returned 700.", "cuda_fault",
     "illegal memory access"),
    ("[Error] [omni.physx.plugin] PhysX error: convex hull cooking returned 700 vertices, more than the 255 allowed",
     "unknown", ""),
])
def test_physx_reporting_a_cuda_fault_by_number_is_a_cuda_fault(line, cls, words):
    v = classify(1, ["[INFO]: Starting the simulation.", line,
                     ", FILE /builds/omniverse/physics/physx/source/x.cpp, LINE 57"], steps_seen=300)
    assert v.cls == cls, (v.summary, v.evidence)
    if cls == "cuda_fault":
        assert words in v.summary and "PhysX" in v.summary, v.summary
        assert v.retryable and v.env == {"CUDA_LAUNCH_BLOCKING": "1"}, v.env
# SGLang's memory saver (torch_memory_saver csrc/utils.h): CUDA_ERROR_CHECK's "cudaError error: N (STRING)" on the
# engine's resume, CURESULT_CHECK's "CUresult error: N (STRING)", and the pre-July-2025 wording without the text
# ("... error  result=N file=..."); only out of memory (2) is an OOM, and its note that it handed a cuMemCreate
# OOM back to torch's allocator to retry is not one.
@pytest.mark.parametrize("line", [
    "[torch_memory_saver.cpp] cudaError error: 2 (out of memory)  file=csrc/core.cpp func=resume line=243",
    "(SGLangEngine pid=4121) [torch_memory_saver.cpp] CUresult error: 2 (out of memory)  file=csrc/utils.h "
    "func=cu_mem_create line=148",
    "[torch_memory_saver.cpp] cudaError error  result=2 file=csrc/torch_memory_saver.cpp func=resume line=90",
])
def test_torch_memory_savers_out_of_memory_is_a_cuda_oom_with_its_own_advice(line):
    v = classify(1, ["step 12 loss 0.4", line], steps_seen=12)
    assert v.cls == "cuda_oom" and "torch_memory_saver" in v.summary
    assert "mem_fraction_static" in v.hint


@pytest.mark.parametrize("line", [
    "[torch_memory_saver.cpp] CUresult error: 1 (invalid argument)  file=csrc/utils.h func=cu_mem_set_access line=158",
    "[torch_memory_saver.cpp] cudaError error  result=700 file=csrc/torch_memory_saver.cpp func=resume line=90",
    "[torch_memory_saver.cpp] cuMemCreate CUDA_ERROR_OUT_OF_MEMORY (may not be an issue e.g. torch allocator "
    "will free cache and retry)",
])
def test_torch_memory_savers_other_errors_and_its_retry_note_are_no_oom(line):
    assert classify(1, ["step 12 loss 0.4", line], steps_seen=12).cls == "unknown"


# NCCL's CUDA checks (src/include/checks.h CUDACHECK "Cuda failure '%s'", src/include/cudawrap.h CUCHECK "Cuda
# failure %d '%s'") at WARN level: the NCCL call returns ncclUnhandledCudaError. The INFO line of CUDACHECKIGNORE
# goes on; a CUDA error with a class of its own keeps it.
# debug.cc's WARN prefix: "[dev] file:line NCCL WARN", since NCCL 2.30 "[dev] file:line (func) NCCL WARN".
@pytest.mark.parametrize("line, src", [
    ("node7:3411:3502 [3] transport/p2p.cc:275 NCCL WARN Cuda failure 'invalid resource handle'", "p2p.cc"),
    ("gpu-12:88:140 [0] proxy.cc:1602 NCCL WARN Cuda failure 304 'OS call failed or operation not supported on this "
     "OS'", "proxy.cc"),
    ("gpu-12:88:140 [0] transport/p2p.cc:363 (p2pMap) NCCL WARN Cuda failure 1 'invalid argument'", "p2p.cc"),
])
def test_nccls_warn_of_a_failed_cuda_call_is_an_nccl_error(line, src):
    v = classify(1, ["step 3 loss 2.0", line], steps_seen=3)
    assert v.cls == "nccl_error" and f"NCCL failed a CUDA call in {src}: Cuda failure " in v.summary, v.summary
    assert "NVLS" not in v.hint


# NCCL's own GPU allocations failing (include/alloc.h ncclCuMemAlloc's CUCHECK, the driver API's numbered form;
# CUDACHECK's runtime form without the number): the GPU's memory, an OOM like torch's.
@pytest.mark.parametrize("line", [
    "gpu-12:88:140 [0] include/alloc.h:320 (ncclCuMemAlloc) NCCL WARN Cuda failure 2 'out of memory'",
    "gpu-12:88:140 [0] include/alloc.h:215 NCCL WARN Cuda failure 'out of memory'",
])
def test_nccls_warn_of_cuda_out_of_memory_is_a_cuda_oom(line):
    assert classify(1, ["step 3 loss 2.0", line], steps_seen=3).cls == "cuda_oom"


# CUDACHECKIGNORE's INFO line, and NCCL 2.27.3-2.28.x's INFO that NVLS could not be bound when it was not forced
# on (transport/nvls.cc:288, then it goes on without NVLS): neither decides what ended the run later.
@pytest.mark.parametrize("info", [
    "node7:3411:3502 [3] misc/utils.cc:120 NCCL INFO Cuda failure 'invalid resource handle'",
    "node7:3411:3502 [3] NCCL INFO Failed to bind NVLink SHARP (NVLS) Multicast memory of size 4194304 : CUDA error "
    "801 'operation not supported'. Proceeding without NVLS support.",
])
def test_nccls_info_lines_decide_nothing(info):
    assert classify(1, ["step 3 loss 2.0", info], steps_seen=3).cls == "unknown"
    v = classify(1, ["step 3 loss 2.0", info, "Traceback (most recent call last):",
                     '  File "train.py", line 40, in <module>', "ValueError: bad batch size 0"], steps_seen=3)
    assert v.cls != "nccl_error" and "ValueError" in v.summary, (v.cls, v.summary)


def test_a_cuda_faults_words_in_nccls_warn_keep_their_class():
    fault = "node7:3411:3502 [3] enqueue.cc:1554 NCCL WARN Cuda failure 700 'an illegal memory access was encountered'"
    assert classify(1, ["step 3 loss 2.0", fault], steps_seen=3).cls == "cuda_fault"


# transport/nvls.cc's WARN when cuMulticastBindMem fails: the NVSwitches' multicast resources, never the GPU's
# memory, whatever CUDA error it names; NCCL_NVLS_ENABLE=0 is the way round it (2.29+ advise it; 2.27-2.28 fail
# only when NVLS was forced on).
@pytest.mark.parametrize("lines", [
    ["h100-3:9921:9921 [5] transport/nvls.cc:284 NCCL WARN Failed to bind NVLink SHARP (NVLS) Multicast memory "
     "of size 4194304 : CUDA error 2 'out of memory'.",
     "This is usually caused by a system or configuration error in the Fabric Manager or NVSwitches.",
     "Disable NVLS (NCCL_NVLS_ENABLE=0) if you wish to avoid this error in the future."],
    ["h100-3:9921:9921 [5] transport/nvls.cc:376 (nvlsAllocateMem) NCCL WARN Failed to bind NVLink SHARP (NVLS) "
     "Multicast memory of size 2097152 : CUDA error 801 'operation not supported'."],
    ["[rank2]: ncclUnhandledCudaError: Call to CUDA function failed.",
     "[rank2]: Last error:",
     "[rank2]: Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 1 'invalid argument'."],
])
def test_an_nvls_multicast_bind_failure_is_an_nccl_error_with_the_nvls_advice(lines):
    v = classify(1, ["step 0", *lines], steps_seen=0)
    assert v.cls == "nccl_error" and "NVLink SHARP (NVLS)" in v.summary
    assert "NCCL_NVLS_ENABLE=0" in v.hint


# cudaErrorSystemNotReady (802, "system not yet initialized"): an NVSwitch node whose Fabric Manager has not
# registered the GPUs yet (down, starting, or of another version than the driver); the runner waits for a device.
@pytest.mark.parametrize("lines", [
    ["RuntimeError: cuda runtime error (802) : system not yet initialized at "
     "/opt/conda/conda-bld/pytorch_1579022034529/work/aten/src/THC/THCGeneral.cpp:50"],
    ["cudaGetDeviceProperties returned 802", "-> system not yet initialized",
     'CUDA error at bandwidthTest.cu:256 code=802(cudaErrorSystemNotReady) "cudaSetDevice(currentDevice)"'],
    ["jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CUDA error: Failed call to cuInit: "
     "CUDA_ERROR_SYSTEM_NOT_READY: system not yet initialized"],
])
def test_cuda_not_ready_on_an_nvswitch_node_waits_for_the_gpus_and_names_the_fabric_manager(lines):
    v = classify(1, ["loading model", *lines], steps_seen=0)
    assert v.cls == "gpu_unavailable" and v.recovery == "wait_gpu", (v.cls, v.summary)
    assert "error 802" in v.summary and "nvidia-fabricmanager" in v.hint


@pytest.mark.parametrize("lines", [
    ["RuntimeError: CUDA error: system not yet initialized",
     "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
     "be incorrect."],
])
def test_torchs_cuda_error_802_is_cuda_not_ready(lines):
    v = classify(1, ["loading model", *lines], steps_seen=0)
    assert v.cls == "gpu_unavailable" and "error 802" in v.summary, (v.cls, v.summary)


def test_another_programs_system_not_yet_initialized_is_not_cuda_not_ready():
    """The words alone are any program's (a logging setup's warning): the traceback after it is the crash."""
    lines = ["loading model", "WARNING: logging system not yet initialized", "Traceback (most recent call last):",
             '  File "train.py", line 40, in <module>', "    main()",
             "ValueError: unknown optimizer 'adamw8'"]
    v = classify(1, lines, steps_seen=0)
    assert v.cls != "gpu_unavailable" and "ValueError: unknown optimizer" in v.summary, (v.cls, v.summary)


def test_cudas_other_system_errors_are_not_a_device_to_wait_for():
    line = ("RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before "
            "calling NumCudaDevices() that might have already set an error? Error 804: forward compatibility "
            "was attempted on non supported HW")
    assert classify(1, ["loading model", line], steps_seen=0).cls != "gpu_unavailable"


# NVML's NVML_ERROR_LIB_RM_VERSION_MISMATCH and the kernel module's refusal of its client: the driver was updated
# without a reboot, every process fails the same way until the node is rebooted.
@pytest.mark.parametrize("lines", [
    ["Traceback (most recent call last):", '  File "train.py", line 12, in <module>', "    pynvml.nvmlInit()",
     "pynvml.NVMLError_LibRmVersionMismatch: Driver/library version mismatch"],
    ["[2140090.470492] NVRM: API mismatch: the client has the version 470.129.06, but",
     "                 NVRM: this kernel module has the version 470.103.01.  Please",
     "                 NVRM: make sure that this kernel module and all NVIDIA driver"],
])
def test_a_driver_library_and_kernel_module_of_different_versions_is_an_environment_error(lines):
    v = classify(1, ["step 0", *lines], steps_seen=0)
    assert v.cls == "environment_error" and not v.retryable, (v.cls, v.summary)
    assert "different versions" in v.summary and "reboot the node" in v.hint


# the NVIDIA container runtime's hook on such a node, in libnvidia-container's lower-case words (batch 40): the
# container never starts, so nothing after it in the log
@pytest.mark.parametrize("line", [
    "docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI "
    "runtime create failed: runc create failed: unable to start container process: error during container init: "
    "error running hook #0: error running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy' "
    "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown.",
    # docker-compose v1 over runc (an issue's paste): the hook's stderr inside the OCI runtime's failure
    "ERROR: for backend  Cannot start service backend: failed to create shim: OCI runtime create failed: runc create "
    "failed: unable to start container process: error during container init: error running hook #0: error running "
    "hook: exit status 1, stdout: , stderr: nvidia-container-cli: initialization error: nvml error: driver/library "
    "version mismatch: unknown",
])
def test_the_container_hooks_nvml_version_mismatch_is_an_environment_error(line):
    v = classify(125, [line], steps_seen=0)
    assert v.cls == "environment_error" and not v.retryable, (v.cls, v.summary)
    assert "different versions" in v.summary and "reboot the node" in v.hint


def test_the_kernel_modules_load_line_is_no_version_mismatch():
    line = "[    9.854868] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 01:44:30 UTC 2024"
    assert classify(1, ["step 3 loss 2.0", line], steps_seen=3).cls == "unknown"


# torch's caching allocator out of memory asks NVML which processes hold the GPU, and asserts each NVML call
# (reportProcessMemoryInfo, called from the OOM path only): its assert is the OOM's, whichever call failed.
@pytest.mark.parametrize("line", [
    'RuntimeError: NVML_SUCCESS == DriverAPI::get()->nvmlInit_v2_() INTERNAL ASSERT FAILED at '
    '"../c10/cuda/CUDACachingAllocator.cpp":1123, please report a bug to PyTorch.',
    'RuntimeError: NVML_SUCCESS == DriverAPI::get()->nvmlDeviceGetHandleByPciBusId_v2_( pci_id, &nvml_device) '
    'INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":815, please report a bug to PyTorch.',
    "RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "
    "'/opt/pytorch/pytorch/c10/cuda/CUDACachingAllocator.cpp':830, please report a bug to PyTorch.",
])
def test_the_allocators_nvml_assert_on_its_oom_path_is_a_cuda_oom(line):
    v = classify(1, ["step 11 loss 0.4", "Traceback (most recent call last):",
                     '  File "train.py", line 80, in <module>', "    loss.backward()", line], steps_seen=11)
    assert v.cls == "cuda_oom" and "NVML" in v.summary, (v.cls, v.summary)


def test_another_internal_assert_of_the_allocator_is_no_oom():
    line = ('RuntimeError: !block->allocated INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":2046, '
            'please report a bug to PyTorch.')
    assert classify(1, ["step 11 loss 0.4", line], steps_seen=11).cls == "unknown"


# NCCL's shared-memory transport failing for a reason other than room (ncclOsShmOpen's fail path, its map
# failure): NCCL's own failure with the advice to share /dev/shm or move off it; without room it stays shm full.
@pytest.mark.parametrize("lines", [
    ["ubuntu:9621:9688 [3] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment "
     "/dev/shm/nccl-KWfVyt (size 5967872), error: Permission denied (13)"],
    ["node2:771:802 [1] os/linux.cc:806 NCCL WARN Error: Could not map /dev/shm/nccl-Qm3xZa size 9637892, "
     "error: Invalid argument (22)"],
    ["[rank3]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
     "ProcessGroupNCCL.cpp:3690, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.7",
     "[rank3]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.",
     "[rank3]: Last error:",
     "[rank3]: Error while attaching to shared memory segment /dev/shm/nccl-Xq2hB7 (size 0), error: No such file "
     "or directory (2)"],
])
def test_nccls_shared_memory_segment_it_cannot_open_is_an_nccl_error_with_the_shm_advice(lines):
    v = classify(1, ["step 0", *lines], steps_seen=0)
    assert v.cls == "nccl_error", (v.cls, v.summary)
    assert "NCCL_SHM_DISABLE=1" in v.hint and "/dev/shm" in v.hint


def test_nccls_shared_memory_without_room_stays_shared_memory_full():
    line = ("gpu-3:1181:1190 [0] misc/shmutils.cc:132 NCCL WARN Error while creating shared memory segment "
            "/dev/shm/nccl-WU88OE (size 9637888), error: No space left on device (28)")
    assert classify(1, ["step 0", line], steps_seen=0).cls == "bus_error"


# The CUDA faults cuda.h says leave the process unusable ("must be terminated and relaunched"), whichever of
# their three forms a program prints: the text, the driver's or the runtime's name alone, or (PhysX) the number;
# CUDA 12.8's cudaErrorContained (226, an invalid peer access over NVLink or a hardware error) among them.
@pytest.mark.parametrize("line, words", [
    ("cupy_backends.cuda.api.runtime.CUDARuntimeError: cudaErrorContained: Invalid access of peer GPU memory over "
     "nvlink or a hardware error", "Invalid access of peer GPU memory over nvlink"),
    ("E0912 03:11:42.118 external/xla/xla/stream_executor/cuda/cuda_executor.cc:212] failed to synchronize the "
     "stop event: CUDA_ERROR_CONTAINED", "Invalid access of peer GPU memory over nvlink"),
    ("numba.cuda.cudadrv.driver.CudaAPIError: [718] Call to cuCtxSynchronize results in CUDA_ERROR_INVALID_PC",
     "invalid program counter (CUDA_ERROR_INVALID_PC)"),
    ("RuntimeError: CUDA error: hardware stack error", "hardware stack error"),
    ("RuntimeError: CUDA error: operation not supported on global/shared address space",
     "operation not supported on global/shared address space"),
    ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CUDA error: Could not synchronize CUDA stream: "
     "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"),
])
def test_a_cuda_fault_in_any_of_its_forms_is_a_cuda_fault(line, words):
    v = classify(1, ["step 40 loss 1.2", line], steps_seen=40)
    assert v.cls == "cuda_fault" and v.recovery == "restart_launch_blocking", (v.cls, v.summary)
    assert words in v.summary, v.summary


def test_physx_reports_a_contained_fault_by_its_number():
    line = "[Error] [omni.physx.plugin] PhysX error: Fetching GPU Narrowphase failed! 226, FILE PxgNarrowphaseCore.cpp"
    v = classify(1, ["step 3", line], steps_seen=3)
    assert v.cls == "cuda_fault" and "nvlink" in v.summary, (v.cls, v.summary)


def test_cudas_recoverable_errors_named_alone_are_no_fault():
    for line in ["numba.cuda.cudadrv.driver.CudaAPIError: [1] Call to cuLaunchKernel results in CUDA_ERROR_INVALID_VALUE",
                 "RuntimeError: CUDA error: CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"]:
        assert classify(1, ["step 40", line], steps_seen=40).cls == "unknown", line


# torch elastic's failure line retyped after its head (a translated paste): the logger's name the module logs
# under says it is torch's line, so its exit status decides as the line's own wording does.
@pytest.mark.parametrize("line, cls", [
    ("[2026-05-02 08:14:51,201] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -7) "
     "for the binary at /opt/conda/bin/python3.11, local rank 3, process 2201", "bus_error"),
    ("E0502 08:14:51.201000 77 torch/distributed/elastic/multiprocessing/api.py:869] ERROR:"
     "torch.distributed.elastic.multiprocessing.api:failed (exitcode: -11) 进程 2201 的 local_rank: 3", "segfault"),
])
def test_torch_elastics_failure_line_retyped_after_its_head_keeps_its_exit_status(line, cls):
    v = classify(1, ["step 900 loss 0.7", line], steps_seen=900)
    assert v.cls == cls, (v.cls, v.summary)


def test_the_same_words_without_torch_elastics_logger_decide_nothing():
    line = "the job failed (exitcode: -9) for the binary at /opt/conda/bin/python3.11, local rank 3"
    assert classify(1, ["step 900 loss 0.7", line], steps_seen=900).cls == "unknown"


# The NVIDIA driver's error-containment report behind Xid 94/95 (open-gpu-kernel-modules kern_gpu_error_cont_ga100.c,
# _gpuGenerateErrorLog: "Contained|Uncontained: <error> (<where>). RST: Yes|No, D-RST: Yes|No"), with or without its
# "NVRM: Xid (...): 94," head: RST or D-RST "Yes" means the driver marked the GPU for a reset, whatever the Xid number.
@pytest.mark.parametrize("line", [
    "dcgm event on gpu 3: Uncontained: LTC TAG (0x2, 0x1). RST: Yes, D-RST: No",
    "NVRM: Xid (PCI:0000:4c:00): 94, pid=91822, name=python3, Contained: FBHUB (0x3, 0x0). "
    "physAddr: 0x0001f3a000 RST: No, D-RST: Yes",
])
def test_an_error_containment_report_that_asks_for_a_reset_fails_the_run(line):
    v = classify(1, ["step 812 loss 1.9", line], steps_seen=812)
    assert v.cls == "cuda_fault" and not v.retryable and v.recovery == "fail", (v.cls, v.recovery, v.summary)
    assert "marked the GPU for a reset" in v.summary, v.summary


def test_a_contained_error_retold_without_the_xid_head_is_a_fault_the_run_can_restart_from():
    line = "dmesg on node 7 shows: Contained: CE User Channel (0x9). RST: No, D-RST: No"
    v = classify(1, ["step 812 loss 1.9", line], steps_seen=812)
    assert v.cls == "cuda_fault" and v.retryable and v.recovery == "restart_launch_blocking", (v.cls, v.summary)
    assert "Xid 94" in v.summary and "CE User Channel" in v.summary, v.summary


def test_the_word_contained_without_the_reset_fields_decides_nothing():
    line = "ValueError: Contained: tokens (0x9). exceeded the budget"
    assert classify(1, ["step 8", line], steps_seen=8).cls == "unknown"


# NCCL's failure told in words: "NCCL error" was read already; its timeout reads the same.
@pytest.mark.parametrize("line", [
    "[Rank 3] NCCL operation timed out after 1800 seconds",
    "the run died at step 4000 with an NCCL watchdog timeout on node 2",
])
def test_an_nccl_timeout_told_in_words_is_an_nccl_error(line):
    v = classify(1, ["step 4000 loss 2.0", line], steps_seen=4000)
    assert v.cls == "nccl_error", (v.cls, v.summary)


def test_the_nccl_timeout_setting_is_no_timeout():
    v = classify(1, ["export NCCL_TIMEOUT=1800", "ValueError: bad value"], steps_seen=0)
    assert v.cls != "nccl_error", v.summary


# vLLM v0's KV-cache capacity check (vllm/worker/worker.py raise_if_cache_size_invalid), the same refusal as v1's.
def test_vllm_v0s_kv_cache_capacity_check_is_an_oom_with_vllms_hint():
    line = ("ERROR 03-02 11:40:01 engine.py:366] ValueError: The model's max seq len (131072) is larger than the "
            "maximum number of tokens that can be stored in KV cache (30320). Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
    v = classify(1, ["INFO 03-02 11:39:50 worker.py:267] Memory profiling takes 6.31 seconds", line], steps_seen=0)
    assert v.cls == "cuda_oom" and "vLLM's KV cache cannot hold one sequence" in v.summary, (v.cls, v.summary)
    assert "increase gpu_memory_utilization" in (v.hint or "") and "decrease max_model_len" in (v.hint or ""), v.hint


# torch's WorkNCCL::printTraceback for the collective that failed, with the flight recorder's trace found.
def test_the_failed_collectives_stack_trace_is_nccls_evidence():
    lines = ["[rank5]:[E1102 07:15:44.120 ProcessGroupNCCL.cpp:730] Stack trace of the failed collective: ",
             "#0 all_reduce from /usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:2501"]
    v = classify(1, ["step 210 loss 3.1", *lines], steps_seen=210)
    assert v.cls == "nccl_error", (v.cls, v.summary)


# vLLM v1's model-load refusal (vllm/v1/worker/gpu_model_runner.py load_model: "Failed to load model - not enough
# GPU memory. ...") and torch's allocator tail ("GPU N has a total capacity of ... of which ... is free",
# c10/cuda/CUDACachingAllocator.cpp, torch 2.3+), each read with no "CUDA out of memory" left beside it.
@pytest.mark.parametrize("line", [
    "(EngineCore_DP0 pid=311) ERROR: Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization",
    "GPU 3 has a total capacity of 79.19 GiB of which 20.00 MiB is free. Including non-PyTorch memory, this process "
    "has 79.16 GiB memory in use.",
])
def test_a_model_load_refusal_or_the_allocators_tail_alone_is_an_oom(line):
    v = classify(1, ["INFO loading weights", line], steps_seen=0)
    assert v.cls == "cuda_oom", (v.cls, v.summary)
