"""Batch 43's rules, with variants the public texts did not show (docs/crash-classes.md, batch 43).

A wrapper that runs the training as a subprocess prints the child's end as Python's subprocess
gives it: ``Popen.returncode`` is -N for a child ended by signal N (``Lib/subprocess.py``), so
"Training failed with exit code -9" is a SIGKILL (the host's OOM killer, macOS's jetsam), -11 a
SIGSEGV, -7 a SIGBUS, -6 a SIGABRT. And torch's "CUDA out of memory" retyped by a person in another
case ("Cuda out of memory" in a title) is the same OOM. Neither decides in advice, a fix, an
explanation of the code, a log level's line, a setting's value or an option's help.
"""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify, oom_case_retold, wrapper_negative_status


@pytest.mark.parametrize(("line", "cls"), [
    ("ERROR: training job exited with code -11", "segfault"),
    ("trainer process: exit status: -7", "bus_error"),
    ("❌ **Training failed with exit code: -9**", "killed_oom"),     # a Streamlit wrapper's f"...: {code}"
    ("LoRA training exited with code (-9)", "killed_oom"),
])
def test_a_wrappers_negative_exit_code_is_the_signal_that_ended_the_child(line, cls):
    assert classify(1, ["step 40/200 loss=1.91", line], steps_seen=40).cls == cls


def test_a_negative_code_that_names_no_signal_of_its_own_decides_nothing():
    assert wrapper_negative_status("Training failed with exit code -1") is None
    assert classify(1, ["Training failed with exit code -2"], steps_seen=0).cls == "unknown"


@pytest.mark.parametrize("line", [
    "If training fails with exit code -9, your machine ran out of RAM.",             # advice
    "Exit code -9 means SIGKILL, usually the kernel's OOM killer.",                  # explaining the code
    "Fixed training failing with exit code -9 when caching latents (#123).",         # a changelog
    "[INFO] supervisor: restarts the trainer when it exited with code -9 (at most 3 times)",   # a start-up line
    'restart_on: "exited with code -9"',                                             # a setting
    "  --kill-grace S       seconds before a worker that exited with code -9 is replaced",     # help text
])
def test_a_negative_exit_code_named_without_having_happened_decides_nothing(line):
    assert wrapper_negative_status(line) is None
    assert classify(1, [line], steps_seen=10).cls == "unknown"


def test_a_root_cause_before_the_wrappers_line_keeps_its_class():
    tail = ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
            "Training failed with exit code -9"]
    assert classify(1, tail, steps_seen=5).cls == "cuda_oom"


@pytest.mark.parametrize("line", [
    "Training crashed with cuda out of memory after 300 steps on 2x4090",
    "CUDA Out Of Memory when resuming Qwen3-8B LoRA from checkpoint-500",
    "CUDA OUT OF MEMORY at step 12 with ZeRO-3",
    "RuntimeError: cuda out of memory",
    "全参微调时报Cuda out of memory",
])
def test_cuda_out_of_memory_retyped_in_another_case_is_a_cuda_oom(line):
    v = classify(1, [line], steps_seen=12)
    assert v.cls == "cuda_oom" and v.recovery == "restart"


@pytest.mark.parametrize("line", [
    "To avoid cuda out of memory, set per_device_train_batch_size=1.",              # advice
    "Fixed cuda out of memory when saving checkpoints (#812)",                      # a changelog
    "[INFO] Tip: lower max_length when you see Cuda out of memory",                 # a start-up line
    'OOM_MARKER="cuda out of memory"',                                              # a setting
    "  --empty-cache        empty the allocator cache on cuda out of memory",       # help text
    "see the cudaoutofmemory handler",                                              # inside a longer word
])
def test_cuda_out_of_memory_in_another_case_named_without_having_happened_decides_nothing(line):
    assert not oom_case_retold(line)
    assert classify(1, [line], steps_seen=12).cls == "unknown"


def test_flash_attns_ampere_check_on_a_gpu_newer_than_hopper_names_the_newer_release_as_the_fix():
    # flash_api.cpp of the releases printing this message: TORCH_CHECK(is_sm90 || is_sm8x, ...), so a Blackwell
    # sm_120 GPU is refused in the words of a pre-Ampere one (starVLA #69 on an RTX PRO 6000)
    tail = ['  File "/x/flash_attn/flash_attn_interface.py", line 90, in _flash_attn_varlen_forward',
            "RuntimeError: FlashAttention only supports Ampere GPUs or newer."]
    v = classify(1, tail, steps_seen=0)
    assert v.cls == "environment_error" and not v.retryable
    assert "newer than" in v.summary and "Blackwell" in v.hint and "sdpa" in v.hint
