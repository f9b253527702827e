"""Mends of batch 39-40's rules after a review that classified texts it wrote: libnvidia-container's lower-case
version mismatch read anywhere (and decided after steps that prove it was no cause), NCCL's allocation WARN
taking over a real torch OOM's summary, the widened "timeout told in words" rules firing on settings, help text
and hedged prose, the IB completion error retold in prose outranking a later crash, and RCCL's "HIP failure"."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify, nccl_timeout_told

STEPS = [f"{{'loss': 1.2, 'grad_norm': 0.8, 'learning_rate': 1e-05, 'epoch': 0.1, 'global_step/max_steps': '{n}/500'}}"
         for n in (1, 50, 100)]
WATCHDOG = ("[rank0]:[E1130 10:02:11.123 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            "600021 milliseconds before timing out.")
KEY_ERROR = ["Traceback (most recent call last):", '  File "train.py", line 88, in <module>',
             "KeyError: 'input_ids'"]
ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"


# --- 1. the driver/library version mismatch: libnvidia-container's words only, and no cause after steps ----------

# a GPU monitor started beside the training (gpustat's own wording, not libnvidia-container's)
GPUSTAT = "gpustat: nvml error: driver/library version mismatch"
FAQ = "'nvml error: driver/library version mismatch' means you must reboot the node"
NVIDIA_SMI = "Failed to initialize NVML: Driver/library version mismatch"


@pytest.mark.parametrize("first", [GPUSTAT, NVIDIA_SMI])
def test_a_version_mismatch_before_100_steps_leaves_the_later_watchdog_timeout_the_cause(first):
    v = classify(1, [first, *STEPS, WATCHDOG], steps_seen=100)
    assert v.cls == "nccl_error" and v.recovery == "restart_long_cooldown", (v.cls, v.summary)


@pytest.mark.parametrize("first", [GPUSTAT, NVIDIA_SMI])
def test_a_version_mismatch_before_100_steps_leaves_a_later_kill_killed_oom(first):
    v = classify(137, [first, *STEPS, "Killed"], steps_seen=100)
    assert v.cls == "killed_oom", (v.cls, v.summary)


def test_a_faq_line_quoting_the_container_hooks_words_is_no_environment_error():
    v = classify(1, [FAQ, *STEPS, "exit status 1"], steps_seen=100)
    assert v.cls == "unknown" and v.retryable, (v.cls, v.summary)


def test_a_version_mismatch_after_steps_with_nothing_else_is_still_the_environment():
    # nothing else decides: the mismatch, only supporting now, is still what the text names
    v = classify(1, [*STEPS, NVIDIA_SMI], steps_seen=100)
    assert v.cls == "environment_error" and not v.retryable, (v.cls, v.summary)


def test_a_version_mismatch_before_any_step_still_decides_over_the_nccl_text_after_it():
    v = classify(1, [NVIDIA_SMI, WATCHDOG], steps_seen=0)
    assert v.cls == "environment_error", (v.cls, v.summary)


# libnvidia-container: src/cli/*.c warnx("initialization error: %s", ...) over driver.c's call_nvml ->
# error_set_nvml(..., "nvml error") (error.c lower-cases the message); runc wraps the hook's stderr
# ("error running hook: exit status 1, stdout: , stderr: ..."), docker/containerd end it with ": unknown"
@pytest.mark.parametrize("line", [
    "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch",
    'ERROR: for trainer  Cannot start service trainer: OCI runtime create failed: container_linux.go:349: starting '
    'container process caused "process_linux.go:449: container init caused \\"process_linux.go:432: running prestart '
    'hook 0 caused \\\\\\"error running hook: exit status 1, stdout: , stderr: nvidia-container-cli: initialization '
    'error: nvml error: driver/library version mismatch\\\\\\\\n\\\\\\"\\"": unknown',
    "Docker container won't start after updating the driver: nvml error: driver/library version mismatch: unknown",
])
def test_the_container_hooks_mismatch_in_its_own_words_is_an_environment_error(line):
    v = classify(125, [line], steps_seen=0)
    assert v.cls == "environment_error" and "different versions" in v.summary, (v.cls, v.summary)


# --- 2. NCCL's allocation WARN beside torch's own OOM --------------------------------------------------------------

TORCH_OOM = ("[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
             "capacity of 79.15 GiB of which 1.20 GiB is free.")
NCCL_LAST = ["[rank0]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3356, unhandled cuda "
             "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.27.3",
             "[rank0]: ncclUnhandledCudaError: Call to CUDA function failed.",
             "[rank0]: Last error:", "[rank0]: Failed to CUDA calloc async 40 bytes"]


def test_torchs_own_oom_keeps_its_summary_and_hint_beside_nccls_allocation_failure():
    v = classify(1, [*STEPS, TORCH_OOM, *NCCL_LAST], steps_seen=100)
    assert v.cls == "cuda_oom", (v.cls, v.summary)
    assert "NCCL could not allocate" not in v.summary and "NCCL_BUFFSIZE" not in v.hint, (v.summary, v.hint)
    assert "2.00 GiB" in v.summary


def test_nccls_allocation_hint_agrees_with_the_restart_the_class_applies():
    v = classify(1, [*STEPS, *NCCL_LAST], steps_seen=100)
    assert v.cls == "cuda_oom" and v.recovery == "restart", (v.cls, v.recovery)
    assert "NCCL could not allocate its buffers on the GPU" in v.summary
    assert "usually fails the same way" not in v.hint and "restart" in v.hint, v.hint


# --- 3. a timeout told in words: not a setting, help text, start-up line, changelog or hedge -----------------------

@pytest.mark.parametrize("line", [
    "DeepEP timeout disabled",
    "WARNING: DeepEP timeout detection is disabled in this build",
    "Fixed DeepEP dispatch timeout when num_sms=24",
    "--dist-timeout  NCCL barrier timeout in minutes (default: 30)",
    "NCCL gather time out count: 0",
    "NCCL time out value raised to 3600",
    "Fixed NCCL broadcast timeout when the group has one rank",
    "If you hit an NCCL all-reduce timeout, increase --ddp_timeout",
    "This may cause an NCCL broadcast timeout",
    "NCCL timeout check enabled",
    "DeepEP combine timeout in ms: 100000",
])
def test_a_setting_help_text_changelog_or_hedge_is_no_timeout_told(line):
    assert not nccl_timeout_told(line), line
    v = classify(1, [line, *STEPS, "exit status 1"], steps_seen=100)
    assert v.cls == "unknown", (line, v.cls, v.summary)


DEEPEP_INIT = "Init DeepEP buffer: num_sms=24, DeepEP dispatch timeout check enabled"


def test_deepeps_start_up_line_is_no_timeout():
    v = classify(1, [DEEPEP_INIT, *STEPS, "exit status 1"], steps_seen=100)
    assert v.cls == "unknown", (v.cls, v.summary)


def test_deepeps_start_up_line_leaves_a_later_faults_cooldown_short():
    v = classify(1, [DEEPEP_INIT, *STEPS, ILLEGAL], steps_seen=100)
    assert v.cls == "cuda_fault" and v.cooldown_scale == 1.0, (v.cls, v.cooldown_scale)


def test_a_timeout_told_in_words_is_no_nccl_text_beside_a_fault():
    # a told timeout before an illegal address is no NCCL evidence that would lengthen the fault's cooldown
    v = classify(1, ["Training dies with an NCCL timeout after 30 minutes", ILLEGAL], steps_seen=100)
    assert v.cls == "cuda_fault" and v.cooldown_scale == 1.0, (v.cls, v.cooldown_scale)


# DeepEP's own timeout printfs name the side that gave up: dispatch/combine, RDMA/NVL sender, forwarder, receiver,
# coordinator, (NVLink/Gin) barrier, (hybrid) notify, PP send/recv (csrc/kernels/legacy/internode.cu, intranode.cu,
# deep_ep/include/deep_ep/common/comm.cuh, impls/hybrid_dispatch.cuh, impls/pp_send_recv.cuh)
@pytest.mark.parametrize("line", ["DeepEP dispatch receivers timed out on rank 3",
                                  "DeepEP hit a timeout in dispatch",
                                  "DeepEP RDMA sender coordinator timeout on the second node",
                                  "The run died: DeepEP hybrid notify timed out",
                                  "DeepEP PP send timeout after the first micro-batch",
                                  "DeepEP timeout for dispatch receivers on rank 3 again",
                                  "our EP16 run hits DeepEP timeout at step 3"])
def test_a_deepep_timeout_told_with_deeps_own_words_is_read(line):
    assert nccl_timeout_told(line), line
    v = classify(1, [*STEPS, line], steps_seen=100)
    assert v.cls == "nccl_error" and v.summary.startswith("DeepEP"), (line, v.cls, v.summary)


# --- 4. the IB completion error retold without NCCL's "NET/IB :" head ----------------------------------------------

RETOLD_IB = ("The log shows 'Got completion with error 12, opcode 1, len 32478, vendor err 129' which means a link "
             "flap; the job continued after retry.")


def test_an_ib_completion_error_retold_in_prose_does_not_outrank_a_later_crash():
    v = classify(1, [RETOLD_IB, *STEPS, *KEY_ERROR], steps_seen=500)
    assert v.cls == "unknown" and "KeyError" in v.summary, (v.cls, v.summary)


def test_an_ib_completion_error_retold_with_nothing_after_it_is_still_an_nccl_error():
    v = classify(1, [*STEPS, RETOLD_IB.replace("the job continued after retry", "the job died")], steps_seen=100)
    assert v.cls == "nccl_error" and "Got completion with error 12" in v.summary, (v.cls, v.summary)


def test_nccls_own_ib_warn_keeps_its_precedence_over_a_later_exception():
    line = ("node3:1200:1300 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.0.0.4<52416> "
            "with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid fe80::1 remoteGidsfe80::2 hca mlx5_0")
    v = classify(1, [*STEPS, line, *KEY_ERROR], steps_seen=100)
    assert v.cls == "nccl_error", (v.cls, v.summary)


# --- 5. RCCL's "HIP failure '%s'" (src/include/checks.h CUDACHECK, rocmwrap.h CUCHECK) -----------------------------

def test_rccls_hip_failure_naming_another_error_keeps_its_allocation_failure_an_nccl_error():
    v = classify(1, ["h1:9:9 [0] include/alloc.h:290 NCCL WARN HIP failure 'invalid argument'",
                     "h1:9:9 [0] include/alloc.h:324 NCCL WARN Failed to CUDA calloc 136 bytes",
                     "RuntimeError: NCCL error: unhandled cuda error"], steps_seen=5)
    assert v.cls == "nccl_error", (v.cls, v.summary)
    assert "HIP failure 'invalid argument'" in v.summary, v.summary


def test_rccls_hip_failure_out_of_memory_is_a_cuda_oom():
    v = classify(1, ["h1:9:9 [0] include/rocmwrap.h:120 NCCL WARN HIP failure 'out of memory' at "
                     "/src/rccl/src/allocator.cc:210",
                     "RuntimeError: NCCL error: unhandled cuda error"], steps_seen=5)
    assert v.cls == "cuda_oom", (v.cls, v.summary)
