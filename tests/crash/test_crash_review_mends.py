"""Mends of batch 36-38's rules after a review that classified texts it wrote: the words that name a failure
(an NCCL timeout, a segfault, a CUDA fault) also name settings, hedges, fixes and enum values, and a rule copied
from one release's wording misses the others."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify

VALUE_ERROR = ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
               "ValueError: the eval split is empty"]
ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"


# --- an NCCL timeout told in words: a statement, not a setting -------------------------------------------------

# LLaVA's train.py (and its forks) print this at every start
LLAVA_SETTING = "Setting NCCL timeout to INF to avoid running errors."


def test_a_trainers_nccl_timeout_setting_does_not_make_its_later_error_an_nccl_error():
    v = classify(1, [LLAVA_SETTING, "step 3 loss 1.2", *VALUE_ERROR], steps_seen=3)
    assert v.cls == "unknown" and "ValueError" in v.summary, (v.cls, v.summary)


def test_a_trainers_nccl_timeout_setting_leaves_a_hang_a_hang():
    v = classify(None, [LLAVA_SETTING, "step 3 loss 1.2"], hang=True, steps_seen=3)
    assert v.cls == "hang", (v.cls, v.summary)


def test_a_trainers_nccl_timeout_setting_keeps_a_faults_short_cooldown():
    v = classify(1, [LLAVA_SETTING, ILLEGAL], steps_seen=3)
    assert v.cls == "cuda_fault" and v.cooldown_scale == 1.0, (v.cls, v.cooldown_scale)


@pytest.mark.parametrize("line", ["Run finished with no NCCL timeout",
                                  "barrier before eval to avoid NCCL timeout",
                                  "| NCCL timeout (s) | 1800 |",
                                  "NCCL timeout = 7200",
                                  "We raise the NCCL timeout: 3600 s"])
def test_a_mention_or_a_setting_of_the_nccl_timeout_is_no_nccl_error(line):
    v = classify(1, [line, "exit status 1"], steps_seen=3)
    assert v.cls == "unknown", (v.cls, v.summary)


@pytest.mark.parametrize("line", ["Training dies with an NCCL timeout after 30 minutes",
                                  "the job crashed due to NCCL timeout at step 400",
                                  "FSDP full-state gather over PCIe = NCCL timeout hell"])
def test_an_nccl_timeout_told_as_what_happened_is_an_nccl_error_in_words_not_the_watchdogs(line):
    v = classify(1, [line], steps_seen=3)
    assert v.cls == "nccl_error" and v.recovery == "restart_long_cooldown", (v.cls, v.summary)
    assert "watchdog" not in v.summary.lower() and "as the report tells it" in v.summary


def test_an_nccl_timeout_told_before_a_raised_error_is_not_its_cause():
    v = classify(1, ["Training dies with an NCCL timeout after 30 minutes", *VALUE_ERROR], steps_seen=3)
    assert v.cls == "unknown", (v.cls, v.summary)


# --- torch's allocator tail in every release's wording ---------------------------------------------------------

# c10/cuda/CUDACachingAllocator.cpp: the wording came with torch 2.1 spelt "capacty" (2.1, 2.2); format_size prints
# "N bytes" up to 1 KiB
@pytest.mark.parametrize("tail", [
    "GPU 0 has a total capacty of 79.15 GiB of which 11.25 MiB is free. Process 3258 has 79.12 GiB memory in use.",
    "GPU 0 has a total capacity of 79.15 GiB of which 0 bytes is free. Of the allocated memory 77.10 GiB is "
    "allocated by PyTorch, and 1.20 GiB is reserved by PyTorch but unallocated.",
    "GPU 3 has a total capacty of 23.69 GiB of which 512 bytes is free.",
])
def test_the_allocator_tail_of_torch_2_1_and_2_2_and_of_a_full_gpu_is_a_cuda_oom(tail):
    v = classify(1, ["step 12 loss 0.91", tail], steps_seen=12)
    assert v.cls == "cuda_oom" and v.recovery == "restart", (v.cls, v.summary)


# --- the driver's containment report retold without its NVRM head ----------------------------------------------

UNCONTAINED = "Uncontained: LTC TAG (0x1, 0x2). RST: No, D-RST: No"
OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."


@pytest.mark.parametrize("line", [UNCONTAINED, f"NVRM: Xid (PCI:0000:3b:00): 95, pid=4411, name=python, {UNCONTAINED}"])
def test_an_uncontained_error_fails_the_run_with_or_without_its_xid_head(line):
    v = classify(1, ["step 40 loss 0.7", line], steps_seen=40)
    assert v.cls == "cuda_fault" and v.recovery == "fail" and not v.retryable, (v.cls, v.recovery, v.summary)
    assert "Xid 95" in v.summary and "reset" in v.summary


def test_a_retold_contained_error_yields_to_the_programs_own_oom():
    v = classify(1, ["step 40 loss 0.7", "Contained: SM (0x1). RST: No, D-RST: No", OOM], steps_seen=40)
    assert v.cls == "cuda_oom", (v.cls, v.summary)


def test_a_contained_error_still_decides_without_an_oom():
    v = classify(1, ["step 40 loss 0.7", "Contained: SM (0x1). RST: No, D-RST: No"], steps_seen=40)
    assert v.cls == "cuda_fault" and v.retryable, (v.cls, v.summary)


# --- apache-tvm-ffi's message without its banner: a retelling, and only with a function after it --------------

WATCHDOG = ("[rank0]:[E1130 10:02:11.123 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            "600012 milliseconds before timing out.")


def test_a_launcher_telling_of_an_earlier_segfault_does_not_outrank_this_attempts_nccl_timeout():
    v = classify(1, ["[launcher]: Segfault encountered in attempt 2, resuming from checkpoint",
                     "step 300 loss 0.52", WATCHDOG], steps_seen=300)
    assert v.cls == "nccl_error" and "ALLREDUCE" in v.summary, (v.cls, v.summary)


def test_the_bannerless_tvm_message_in_a_function_is_still_a_segfault():
    v = classify(1, ["step 300 loss 0.52", "Error: `Segfault encountered` in cuCtxGetDevice"], steps_seen=300)
    assert v.cls == "segfault" and "without its banner" in v.summary, (v.cls, v.summary)


# --- a segfault told in words: not a possibility, a fix or a way around one -------------------------------------

@pytest.mark.parametrize("line", [
    "UserWarning: calling cuda in a forked worker can lead to a segfault",
    "Fixed SIGSEGV in varlen backward",
    "Fix segfaults in the fused MoE router when top_k > 8",
    "set OMP_NUM_THREADS=1 to avoid a segfault in the tokenizer",
    "this will trigger a segfault on old drivers",
])
def test_a_segfault_as_a_possibility_or_a_fix_is_no_segfault(line):
    v = classify(1, [line, "exit status 1"], steps_seen=3)
    assert v.cls == "unknown", (v.cls, v.summary)


def test_a_segfault_told_after_cant_is_still_told():
    v = classify(1, ["I can't get past step 5: the job crashes with a segfault"], steps_seen=5)
    assert v.cls == "segfault", (v.cls, v.summary)


# --- a CUDA fault's name or text: an error stated, not a definition or a possibility ---------------------------

@pytest.mark.parametrize("line", ["  CUDA_ERROR_ASSERT = 710",
                                  "#define cudaErrorIllegalInstruction 715",
                                  "WARNING: this kernel may trigger a hardware stack error",
                                  "NOTE: large grids could hit CUDA_ERROR_INVALID_PC on sm_70"])
def test_a_fault_name_in_a_definition_or_a_warning_does_not_decide(line):
    v = classify(1, ["step 8 loss 0.4", line, *VALUE_ERROR], steps_seen=8)
    assert v.cls == "unknown" and "ValueError" in v.summary, (v.cls, v.summary)


@pytest.mark.parametrize("line", [
    "could not synchronize on CUDA context: CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "Call to cuCtxSynchronize results in CUDA_ERROR_INVALID_PC",
    "we keep hitting `CUDA_ERROR_HARDWARE_STACK_ERROR` inside `jit_train_step`",
    "RuntimeError: CUDA error: hardware stack error",
])
def test_a_fault_name_or_text_stated_as_an_error_decides(line):
    v = classify(1, ["step 8 loss 0.4", line], steps_seen=8)
    assert v.cls == "cuda_fault", (v.cls, v.summary)


# --- vLLM's start-up refusals, each with vLLM's own advice ------------------------------------------------------

VLLM_KV = ("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
           "stored in KV cache (2048). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
           "initializing the engine.")
VLLM_LOAD = ("(EngineCore_DP0 pid=36704) ERROR 04-07 15:58:28 [gpu_model_runner.py:4818] Failed to load model - not "
             "enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing "
             "--tensor-parallel-size, or using --quantization.")


def test_vllms_kv_cache_refusal_advises_more_memory_utilization_not_less():
    v = classify(1, [VLLM_KV], steps_seen=0)
    assert v.cls == "cuda_oom", (v.cls, v.summary)
    assert "increase gpu_memory_utilization" in v.hint and "lower it" not in v.hint, v.hint
    assert "KV cache" in v.summary and "could not reserve" not in v.summary, v.summary


def test_vllms_weights_that_do_not_fit_advise_tensor_parallelism_or_quantization():
    v = classify(1, [VLLM_LOAD], steps_seen=0)
    assert v.cls == "cuda_oom", (v.cls, v.summary)
    assert "tensor_parallel_size" in v.hint and "quantized" in v.hint, v.hint
    assert "could not load the model's weights" in v.summary, v.summary


def test_vllms_refusal_at_start_with_another_process_on_the_gpu_still_waits_for_it():
    v = classify(1, [VLLM_KV], steps_seen=0, foreign_gpu_memory=True)
    assert v.cls == "gpu_busy_at_init", (v.cls, v.summary)
