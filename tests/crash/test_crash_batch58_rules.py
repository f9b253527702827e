"""Batch 58's families (tests/crash/public 1256-1275, LLM and MoE training stacks, held out).

1. Ascend's device memory exhausted below torch_npu's allocator: the CANN runtime reports the allocation it could not
   make in its own words and codes (rt_error_codes.h: ACL_ERROR_RT_MEMORY_ALLOCATION = 207001 "memory allocation
   error", ACL_ERROR_RT_DEVIDE_OOM = 207018 "device oom"; its error message EL0004 "Memory_Allocation_Failure"), which
   torch_npu relays under "The Inner error is reported as above" without its own "NPU out of memory" line: a vLLM-Ascend
   worker, HCCL's workspace, GE's graph memory. Read as ``unknown`` before batch 58 (1267); now the NPU's OOM.
2. An explainer's verb of manifestation before a fault's or the OOM's words: how a kind of failure shows, not one that
   happened ("... races against it and surfaces (asynchronously) as CUDA_ERROR_ILLEGAL_ADDRESS", 1257; "这类错误通常
   表现为"RuntimeError: CUDA error: device-side assert triggered"", 1272). Read as ``cuda_fault`` before batch 58.
Each rule's refusals and the reports it must keep deciding are below."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


def _verdict(*lines: str, steps: int = 10):
    return classify(1, list(lines), steps_seen=steps)


# --- 1. the CANN runtime's device OOM ---------------------------------------------------------------------------------


@pytest.mark.parametrize("lines", [
    # CANN's error message in its "Name(CODE): text" form, behind vLLM's EngineCore prefix (1267), the text wrapped
    ["(EngineCore_DP0 pid=10516) ERROR 12-03 12:16:41 [core.py:710] [PID: 10652] 2025-12-03-12:16:41.842.173 "
     "Memory_Allocation_Failure(EL0004): Failed to allocate ",
     "memory.",
     "(EngineCore_DP0 pid=10516) ERROR 12-03 12:16:41 [core.py:710]         Possible Cause: Available memory is "
     "insufficient."],
    # ... naming the module that asked (HCCL's workspace for an allreduce, GE's graph, the application's)
    ["RuntimeError: InnerRunOpApi:../torch_npu/csrc/framework/OpParamMaker.cpp:287 OPS function error: HcclAllreduce, "
     "error code is 24",
     "[PID: 4906] 2026-06-06-12:17:01.267.772 Memory_Allocation_Failure(EL0004): Failed to allocate memory requested "
     "by HCCL module."],
    ["torch.OutOfMemoryError: The Inner error is reported as above. The process exits for this inner error, and the "
     "current working operator name is SelfAttentionOperation.",
     "Memory_Allocation_Failure(EL0004): Failed to allocate memory requested by APP module."],
    # the runtime's traceback line for a device allocation with ACL_ERROR_RT_MEMORY_ALLOCATION, alone
    ["        alloc device memory failed, runtime result = 207001[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:162]"],
    # torch_npu's NPU_CHECK_ERROR with the device OOM's code, and the code's name
    ["RuntimeError: NPU function error: aclrtMalloc(&ptr, size, ACL_MEM_MALLOC_HUGE_FIRST), error code is 207018"],
    ["[ERROR] RUNTIME(12345,python):2026-03-01-10:00:00.000.000 [device_mem.cc:88] ACL_ERROR_RT_DEVIDE_OOM"],
])
def test_the_cann_runtimes_device_allocation_failure_is_the_npus_oom(lines):
    v = _verdict(*lines, steps=60)
    assert v.cls == "cuda_oom", (v.summary, v.evidence)
    assert v.summary.startswith("NPU out of memory"), v.summary     # the runtime it names, not CUDA's
    assert v.recovery == "restart"


@pytest.mark.parametrize("lines", [
    # a guide's list of the words to look for: the code bare, no "Name(CODE): " head
    ['    │   ├── 日志含 "HBM memory allocation failed" / "EL0004" / "memory not enough"'],
    ["**Risk if quota is too low:** Some ranks fail with `Memory_Allocation_Failure(EL0004)` after "
     "`global_segment_size` succeeds."],
    # a test spec's keywords
    ['      "error_keywords": ["207018", "OOM", "out of memory", "EL0004"],'],
    # a host (pinned) allocation CANN refused: the same EL0004 and 207001, the host's call in its block (review R62:
    # the two cases here before, "aclrtMallocHost ... 207001" and "... 207000" alone, no rule read at all)
    ["torch.OutOfMemoryError: allocate_host_memory_slowpath:",
     "NPU function error: aclrtMallocHostWithCfg, error code is 207001",
     "Memory_Allocation_Failure(EL0004): Failed to allocate memory requested by RUNTIME module.",
     "rtsMallocHost execution failed, reason=driver error:out of memory"],
    ["Memory_Allocation_Failure(EL0004): Failed to allocate memory requested by RUNTIME module.",
     "Resource_Error_Insufficient_Host_Memory(EL0018): Insufficient host memory."],
])
def test_a_cann_code_listed_or_another_code_is_no_oom(lines):
    assert _verdict(*lines, steps=60).cls != "cuda_oom"


def test_a_hedged_cann_oom_is_a_mention():
    v = _verdict("If you see Memory_Allocation_Failure(EL0004): Failed to allocate memory, lower the batch size.")
    assert v.cls != "cuda_oom", v.summary


# --- 2. an explainer's verb of manifestation --------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    # a write-up of an allocator's race (1257)
    "If a kernel is still in flight against the storage being torn down, cuMemUnmap races against it and surfaces "
    "(asynchronously) as CUDA_ERROR_ILLEGAL_ADDRESS at the next synchronous CUDA call.",
    "This typically manifests itself as RuntimeError: CUDA error: device-side assert triggered.",
    "A bad label id manifests as `CUDA error: device-side assert triggered` in the loss kernel.",
    # a Chinese write-up's general statement (1272), and the OOM's words in both languages
    '这类错误通常表现为"RuntimeError: CUDA error: device-side assert triggered",并伴随大量索引越界的断言失败信息。',
    "这种问题一般体现为 CUDA error: an illegal memory access was encountered",
    "这类错误通常表现为 CUDA out of memory",
    "A slow leak usually surfaces as CUDA out of memory after a few thousand steps.",
])
def test_a_failure_told_as_how_a_kind_of_error_shows_is_a_mention(line):
    v = _verdict(line)
    assert v.cls == "unknown", (v.summary, v.evidence)


@pytest.mark.parametrize("line, cls", [
    # the runtime's own line, and a report's: the first person, the run's step or rank, a pointer to the paste
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_fault"),
    ("The crash manifests as RuntimeError: CUDA error: an illegal memory access was encountered at step 300",
     "cuda_fault"),
    ("In our run it surfaces as CUDA error: an illegal memory access was encountered (log below)", "cuda_fault"),
    ('我这边的报错通常表现为"RuntimeError: CUDA error: an illegal memory access was encountered"', "cuda_fault"),
    # the Chinese verb with no general word in its clause: the run's own
    ("训练到第300步报错表现为 RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_fault"),
    ("The bug manifests as torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB on rank 3",
     "cuda_oom"),
    # "appears as" / "shows up as" are a report's words as often: not read
    ("The error appears as: RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_fault"),
    ("It shows up as CUDA error: an illegal memory access was encountered after the first eval", "cuda_fault"),
])
def test_a_report_told_with_the_same_verbs_still_decides(line, cls):
    v = _verdict(line)
    assert v.cls == cls, (v.summary, v.evidence)


# --- 3. a guide's general statements about the OOM (1274) -------------------------------------------------------------


@pytest.mark.parametrize("line", [
    # a prevalence after the words, and a gerund's scene as the general statement's subject
    "The torch.cuda.OutOfMemoryError is the most common roadblock for engineers fine-tuning Llama models.",
    "Seeing a CUDA Out of Memory (OOM) error in your terminal is a rite of passage for any ML engineer.",
    "Hitting an illegal memory access was encountered is a classic sign of a bad index.",
])
def test_a_guides_general_statement_about_the_failure_is_a_mention(line):
    v = _verdict(line)
    assert v.cls == "unknown", (v.summary, v.evidence)


@pytest.mark.parametrize("line", [
    "Getting CUDA out of memory at step 5 with batch 8",                 # a title: no predicate after the words
    "Getting CUDA out of memory is happening on my GPU every epoch.",    # the writer's run
    "CUDA out of memory is common on my 3090 with batch 16.",            # the prevalence of the writer's own
])
def test_the_same_shapes_of_a_report_still_decide(line):
    v = _verdict(line)
    assert v.cls == "cuda_oom", (v.summary, v.evidence)
