"""Review R62 of crash batch 58: what a user sees for each finding's family (the class a text gets).

1. CANN's EL0004 / 207001 for a host (pinned) allocation is no NPU OOM: EL0004 is the driver's error for any allocation
   it refuses (hicann/runtime src/runtime/driver/npu_driver_mem.cc:838-858 NpuDriver::HostMemAlloc reports it through
   DRV_MALLOC_ERROR_PROCESS), so a restart would loop on a container's memlock limit or host RAM.
2. An error's name alone in a definition or a table (a header, a source file, a docs table) is no report.
3. "manifests/surfaces as", "表现为" with a definite (the reporter's) subject, a frequency, or a pointer to the paste
   is a report; only a generic subject (a kind of failure) is an explainer's.
4. A gerund's issue title with a later clause's "is" is a report.
5. A degree on "frequent" is the reporter's own frequency; only the superlative or a category is a guide's.
8. CANN's whole message is read, so an explanation after it is a mention.
9. CANN's older "EL0004: [PID ...]" head, the runtime's rtMalloc driver line and torch_npu's check on a device call.
"""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify

# a real torch_npu host-allocator failure (a write-up of a Docker container's memlock limit, R62 finding 1)
_HOST_BLOCK = [
    "torch.OutOfMemoryError: allocate_host_memory_slowpath:",
    "../torch_npu/csrc/core/npu/CachingHostAllocator.cpp:252",
    "NPU function error: aclrtMallocHostWithCfg, error code is 207001",
    "[ERROR] 2026-10-10-01:49:39 (PID:1119, Device:0, RankID:-1) ERR00100 PTA call acl api failed",
    "[Error]: Failed to apply for memory.",
    "[PID: 1119] 2026-10-10-01:49:39.813.031 Memory_Allocation_Failure(EL0004): Failed to allocate memory requested by "
    "RUNTIME module.",
    "        rtsMallocHost execution failed, reason=driver error:out of memory",
]


def _verdict(*lines: str, steps: int = 10):
    return classify(1, list(lines), steps_seen=steps)


@pytest.mark.parametrize("lines", [
    _HOST_BLOCK,
    _HOST_BLOCK[-2:],                                                  # CANN's two lines alone
    ["Memory_Allocation_Failure(EL0004): Failed to allocate memory requested by RUNTIME module.",
     "Resource_Error_Insufficient_Host_Memory(EL0018): Insufficient host memory."],
    ["RuntimeError: NPU function error: aclrtMallocHost(&ptr, size), error code is 207001",
     "EL0004: [PID: 77] 2026-01-02-03:04:05.678.901 Failed to allocate memory.",
     "        rtMallocHost execute failed, reason=[driver error:out of memory]"],
])
def test_a_host_allocation_refused_by_cann_is_no_npu_oom_restart(lines):
    v = _verdict(*lines, steps=60)
    assert v.cls != "cuda_oom", (v.summary, v.evidence)
    assert "NPU out of memory" not in v.summary


@pytest.mark.parametrize("line", [
    "#define  ACL_ERROR_RT_DEVIDE_OOM                 207018 // device oom",
    "static const int32_t ACL_ERROR_RT_DEVIDE_OOM = 207018;           // device oom",
    "| 207018 | ACL_ERROR_RT_DEVIDE_OOM | Device memory exhausted | Check device memory, optimize usage |",
    '        "ACL_ERROR_RT_DEVIDE_OOM": "请检查 Device 内存使用情况并优化内存占用。",',
    "    case ACL_ERROR_RT_DEVIDE_OOM:",
    '    {ACL_ERROR_RT_DEVIDE_OOM, "device oom"},',
    "    ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY = 0x70000002,      ///< [Core] insufficient device memory",
    "| 39 | UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY | out of device memory |",
])
def test_an_error_name_defined_or_tabled_is_no_oom(line):
    v = _verdict(line)
    assert v.cls == "unknown", (v.summary, v.evidence)


@pytest.mark.parametrize("line, runtime", [
    # the names where a runtime prints them still decide
    ("level_zero backend failed with error: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)", "XPU"),
    ("[ERROR] RUNTIME(12345,python):2026-03-01-10:00:00.000.000 [device_mem.cc:88] ACL_ERROR_RT_DEVIDE_OOM", "NPU"),
])
def test_an_error_name_printed_still_decides(line, runtime):
    v = _verdict(line)
    assert v.cls == "cuda_oom" and v.summary.startswith(f"{runtime} out of memory"), (v.summary, v.evidence)


@pytest.mark.parametrize("line, cls", [
    ("The crash manifests as RuntimeError: CUDA error: an illegal memory access was encountered.", "cuda_fault"),
    ("The bug manifests as CUDA out of memory when training Qwen3-30B-A3B with TP=2.", "cuda_oom"),
    ("This issue manifests as `RuntimeError: CUDA error: an illegal memory access was encountered` when enable_lora is "
     "on.", "cuda_fault"),
    ("After upgrading to vllm 0.11, the failure surfaces as CUDA error: an illegal memory access was encountered during "
     "wake_up.", "cuda_fault"),
    ("Training Qwen3 MoE with EP=8 on 8xH100; the crash surfaces as CUDA out of memory during the backward pass.",
     "cuda_oom"),
    ("问题描述：训练Qwen3-30B-A3B，报错通常表现为 RuntimeError: CUDA error: an illegal memory access was encountered",
     "cuda_fault"),
    ("我们在训练Qwen3-30B-A3B时，报错通常表现为 CUDA out of memory", "cuda_oom"),
    ("用 GRPO 训练 Qwen2.5-7B，跑几步后经常表现为 CUDA out of memory", "cuda_oom"),
    ("每次 rollout 之后，训练进程会表现为 CUDA error: an illegal memory access was encountered", "cuda_fault"),
    ("这个问题一般表现为CUDA out of memory，日志如下", "cuda_oom"),
    ("这类问题表现为 CUDA out of memory，截图见下", "cuda_oom"),
])
def test_a_report_told_with_a_verb_of_manifestation_decides(line, cls):
    v = _verdict(line)
    assert v.cls == cls, (v.summary, v.evidence)


@pytest.mark.parametrize("line", [
    "Such races surface as CUDA error: an illegal memory access was encountered at the next sync.",
    "This kind of error manifests as CUDA out of memory only under load.",
    "When a worker leaks pinned buffers, the leak surfaces as CUDA out of memory after hours.",
    "这类错误表现为 CUDA out of memory",
])
def test_a_kind_of_failure_told_with_the_verb_stays_a_mention(line):
    v = _verdict(line)
    assert v.cls == "unknown", (v.summary, v.evidence)


@pytest.mark.parametrize("line", [
    "Getting CUDA out of memory even though there is plenty of free memory",
    "Getting a CUDA out of memory error, what is wrong?",
    "Hitting CUDA out of memory with Qwen3-8B full finetune, is this expected?",
    "Getting CUDA out of memory error when GRPO training, the vllm gpu_memory_utilization is 0.3",
    "Facing CUDA out of memory while fine-tuning Llama 3 8B, any config that is known to work?",
    # a degree on "frequent": the reporter's own frequency (finding 5)
    "CUDA out of memory is quite frequent with this config (Qwen3-30B-A3B, EP=8)",
    "The CUDA out of memory is so frequent that training never reaches step 100",
    "CUDA out of memory is very frequent since upgrading to v0.8.3, the log is attached",
])
def test_an_issue_titles_gerund_or_frequency_is_a_report(line):
    v = _verdict(line)
    assert v.cls == "cuda_oom", (v.summary, v.evidence)


@pytest.mark.parametrize("line", [
    "CUDA out of memory is one of the most common errors when fine-tuning large models.",
    "Getting a CUDA out of memory error in your terminal is frustrating for every new user.",
    "Memory_Allocation_Failure(EL0004): Failed to allocate memory means the NPU's HBM is exhausted.",
    "Memory_Allocation_Failure(EL0004): Failed to allocate memory requested by GE module usually means the graph is "
    "too large.",
])
def test_a_guides_general_statement_stays_a_mention(line):
    v = _verdict(line)
    assert v.cls == "unknown", (v.summary, v.evidence)


@pytest.mark.parametrize("lines", [
    # the pre-8.2 head (vLLM-Ascend issues) with its Possible Cause, cut before the runtime's result line
    ["EL0004: [PID: 6903] 2025-10-09-01:31:15.131.349 Failed to allocate memory.",
     "        Possible Cause: Available memory is insufficient."],
    ["        rtMalloc execute failed, reason=[driver error:out of memory][FUNC:FuncErrorReason][FILE:error_message_manage"
     ".cc][LINE:53]"],
    ["RuntimeError: NPU function error: c10_npu::acl::AclrtMalloc(&ptr, size, ACL_MEM_MALLOC_HUGE_FIRST), error code is "
     "207001"],
])
def test_canns_older_head_and_device_lines_are_the_npus_oom(lines):
    v = _verdict(*lines, steps=60)
    assert v.cls == "cuda_oom", (v.summary, v.evidence)
    assert v.summary.startswith("NPU out of memory"), v.summary


@pytest.mark.parametrize("lines", [
    # another runtime's OOM beside a host allocator's words is still the GPU's
    ["torch.OutOfMemoryError: CUDA out of memory.", "pin_memory: CachingHostAllocator stats: 2 blocks"],
    # torch_npu's own message with its numbers beside a host line
    ["torch.OutOfMemoryError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.00 GiB total capacity)",
     "aclrtMallocHost ok"],
])
def test_a_devices_oom_beside_host_words_still_restarts_as_an_oom(lines):
    v = _verdict(*lines, steps=60)
    assert v.cls == "cuda_oom", (v.summary, v.evidence)
