"""The review of batches 43 and 44's rules (docs/crash-classes.md): a wrapper's negative exit code decided late and
no stronger than the signal itself, its explanations and tables, a GPU gone from the bus only as a GPU's loss and
not a health check's field, a list of quoted strings as patterns only when every item is a distinct failure text,
OOM words in title case, an OOM the program retried, and PhysX 4's allocator line."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify, gpu_gone_told, oom_case_retold, oom_stated, wrapper_negative_status

NCCL_TIMEOUT = ("[rank0]:[E ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600003 "
                "milliseconds before timing out.")
TORCH_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
SANDBOX_KILL = "[reward] sandbox test 3 exited with code -9 (timeout 10s)"

# --- 1. a wrapper's -9 is decided late -------------------------------------------------------------------------


@pytest.mark.parametrize(("lines", "cls"), [
    # a reward sandbox's child killed on its timeout, then the training's own NCCL watchdog timeout
    ([SANDBOX_KILL, "step 40/200 loss=1.91", NCCL_TIMEOUT], "nccl_error"),
    # ... then a segfault, an NCCL timeout only the report tells
    ([SANDBOX_KILL, "the training crashed with a segmentation fault at step 40"], "segfault"),
    ([SANDBOX_KILL, "our NCCL watchdog timed out after 30 minutes at step 900"], "nccl_error"),
    # a scancel (the job is not restarted) and the wrapper's -9 that the cancel's SIGKILL gave
    (["slurmstepd: error: *** JOB 1234 ON node01 CANCELLED AT 2026-01-01T00:00:00 ***",
      "Training failed with exit code -9"], "job_cancelled"),
])
def test_what_the_ranks_and_the_scheduler_said_outranks_a_wrappers_negative_exit_code(lines, cls):
    assert classify(1, lines, steps_seen=40).cls == cls


def test_of_several_wrapper_lines_the_one_naming_the_training_decides_else_the_last():
    tail = [SANDBOX_KILL, "LoRA training exited with code -11", "inference server exited with code -9"]
    assert classify(1, tail, steps_seen=41).cls == "segfault"
    tail = [SANDBOX_KILL, "step 41", "worker pool: child exited with code -11"]
    assert classify(1, tail, steps_seen=41).cls == "segfault"


# --- 2. one owner: the wrapper's -9 says what a bare SIGKILL says ----------------------------------------------

@pytest.mark.parametrize("line", ["Training failed with exit code -9", "Server process exited with code -9"])
def test_a_wrappers_sigkill_gets_the_verdict_of_the_attempts_own_sigkill(line):
    wrapped = classify(1, ["step 3 loss 1.2", line], steps_seen=3)
    bare = classify(-9, ["step 3 loss 1.2"], steps_seen=3)
    assert (wrapped.cls, wrapped.summary, wrapped.recovery, wrapped.retryable, wrapped.hint) == \
        (bare.cls, bare.summary, bare.recovery, bare.retryable, bare.hint)


# --- 3. explanations and tables ----------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "Note: exit code -9 usually means the process was killed by the kernel",
    "exit status -9 typically indicates SIGKILL",
    "| exit code -9 | SIGKILL | killed by the OS |",
    "exit code -9: SIGKILL (killed by the OS)",
    "exit code -9 -> the OOM killer",
    "exit code -9 → SIGKILL",
])
def test_a_negative_exit_code_explained_or_mapped_in_a_table_decides_nothing(line):
    assert wrapper_negative_status(line) is None
    assert classify(1, [line], steps_seen=10).cls == "unknown"


# --- 9. the wrapper's words in any case are routed ---------------------------------------------------------------

@pytest.mark.parametrize("line", ["Training Exited with code -9", "trainer: Exit status -9", "TRAINING EXITED WITH CODE -9"])
def test_a_wrappers_negative_exit_code_in_another_case_is_read(line):
    assert classify(1, ["step 3", line], steps_seen=3).cls == "killed_oom"


# --- 4. a GPU gone from the bus: a GPU's loss, no health check's field --------------------------------------------

@pytest.mark.parametrize(("lines", "cls"), [
    (["node health: ecc errors 0, GPU fell off bus alerts: 0", TORCH_OOM], "cuda_oom"),
    (["GPU fell off bus: no"], "unknown"),
    (["dcgm health: GPU fell off bus check PASSED"], "unknown"),
    (["gpu-monitor: GPU fell off bus count=0"], "unknown"),
    (["mlx5_core 0000:3b:00.0: the ConnectX-6 NIC dropped off the PCIe bus",
      "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, "
      "unhandled system error"], "nccl_error"),
])
def test_a_bus_loss_of_no_gpu_or_a_monitors_field_is_no_gpu_fault(lines, cls):
    assert not any(gpu_gone_told(t) for t in lines)
    assert classify(1, lines, steps_seen=100).cls == cls


@pytest.mark.parametrize("line", [
    # 9: the PCIe bus without the article
    "one GPU fell off PCIe bus at step 900",
    "GPU 3 dropped off PCIe bus during the all-reduce",
])
def test_a_gpu_gone_from_the_pcie_bus_without_the_article_needs_a_reset(line):
    assert gpu_gone_told(line)
    v = classify(1, [line], steps_seen=900)
    assert v.cls == "cuda_fault" and v.recovery == "fail"


# --- 5. a list is patterns only when its items are distinct failure texts ----------------------------------------

@pytest.mark.parametrize("line", [
    "Error: 'CUDA out of memory', 'retrying with batch 8'",
    "RuntimeError: ('CUDA out of memory', 'while allocating KV cache')",
    "RuntimeError: 2 workers failed: ['CUDA out of memory', 'CUDA out of memory']",
    "workers failed: ['CUDA out of memory', 'CUDA out of memory']",
    "failed with 'CUDA out of memory', 'while allocating KV cache'",
])
def test_an_oom_quoted_beside_what_it_did_or_repeated_by_the_workers_is_an_oom(line):
    assert oom_stated(line) or oom_case_retold(line)
    assert classify(1, [line], steps_seen=30).cls == "cuda_oom"


def test_a_pretty_printed_json_errors_item_is_an_oom_when_no_line_above_opened_a_list():
    lines = ["{", '  "status": "failed",', '  "errors": "see below",', '  "CUDA out of memory",', "}"]
    assert classify(1, lines, steps_seen=30).cls == "cuda_oom"


def test_a_pretty_printed_json_errors_list_of_the_same_oom_twice_is_an_oom():
    lines = ["{", '  "errors": [', '    "CUDA out of memory",', '    "CUDA out of memory",', "  ]", "}"]
    assert classify(1, lines, steps_seen=30).cls == "cuda_oom"


def test_an_item_line_alone_is_a_pattern_only_below_a_line_that_opened_a_list():
    assert oom_stated('        "CUDA out of memory.",  # CUDA OOM')
    assert not oom_stated('        "CUDA out of memory.",  # CUDA OOM', list_above=[])


# --- 6. the title case is routed ---------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "CUDA Out of Memory error. Try using a GPU with more VRAM",
    "训练时出现 Cuda Out of Memory 错误",
])
def test_cuda_out_of_memory_in_title_case_is_a_cuda_oom(line):
    assert classify(1, [line], steps_seen=12).cls == "cuda_oom"


# --- 7. an OOM the program retried, a counter --------------------------------------------------------------------

@pytest.mark.parametrize("lines", [
    ["CUDA OUT OF MEMORY ERROR!", "...trying again...", "step 5 loss 1.2", NCCL_TIMEOUT],
    ["CUDA OUT OF MEMORY ERROR! ...trying again...", "step 5 loss 1.2", NCCL_TIMEOUT],
    ["Cuda out of memory, skipping batch 12", "step 13 loss 1.1", NCCL_TIMEOUT],
])
def test_an_oom_the_program_retried_yields_to_what_ended_the_attempt(lines):
    assert classify(1, lines, steps_seen=5).cls == "nccl_error"


def test_an_oom_the_program_retried_is_still_named_when_nothing_else_is():
    assert not oom_case_retold("CUDA OUT OF MEMORY ERROR! ...trying again...")
    assert classify(1, ["CUDA OUT OF MEMORY ERROR! ...trying again..."], steps_seen=5).cls == "unknown"


@pytest.mark.parametrize("line", [
    "train summary: steps 900, cuda out of memory retries: 0",
    "| cuda out of memory | 0 |",
    "cuda out of memory count=0, nan steps=0",
])
def test_a_counter_of_ooms_is_no_oom(line):
    assert not oom_case_retold(line)
    assert classify(1, [line], steps_seen=900).cls == "unknown"


# --- 8. PhysX 4 (Isaac Gym) --------------------------------------------------------------------------------------

def test_physx_4s_allocator_line_is_an_oom():
    # IsaacGymEnvs #256, OmniIsaacGymEnvs #11/#27: PhysX 4's wording, "fail to" and two exclamation marks
    line = "[Error] [carb.gym.plugin] PxgCudaDeviceMemoryAllocator fail to allocate memory 100663296 bytes!! Result = 2"
    assert classify(1, [line], steps_seen=0).cls == "cuda_oom"


def test_physx_4s_allocator_line_with_another_result_is_no_oom():
    line = "PxgCudaDeviceMemoryAllocator fail to allocate memory 4096 bytes!! Result = 700"
    assert classify(1, [line], steps_seen=0).cls != "cuda_oom"


@pytest.mark.parametrize("line, cls", [
    # a guide's title that resolves the error after naming it (the verb last, in Japanese and Chinese)
    ("PyTorch開発者必見:CUDA Out of Memory (OOM) エラーを徹底解決する現場の10大テクニック", "unknown"),
    ("如何避免CUDA Out of Memory：显存优化的七个技巧", "unknown"),
    # ... but a report that says it happened and asks how to resolve it is one
    ("训练时出现CUDA out of memory，求解决方法", "cuda_oom"),
    ("CUDA out of memory が発生しました。解決方法を教えてください", "cuda_oom"),
    # a logger's error key before the quoted message is no setting
    ("Error: 'CUDA out of memory', 'retrying with batch 8'", "cuda_oom"),
    ("error_patterns: ['CUDA out of memory', 'CUBLAS_STATUS_ALLOC_FAILED']", "unknown"),
])
def test_merged_oom_rules_read_guides_reports_and_error_keys(line, cls):
    assert classify(1, [line], steps_seen=5).cls == cls, line
