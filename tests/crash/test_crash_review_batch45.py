"""The review of batch 45's rules (docs/crash-classes.md): an Xid told by its number only where a person states it
happened, not a monitor's field or a watcher's rule, and never over the driver's own Xid line; Japanese and Chinese
reports of an OOM; the OOM rule's work bounded on a long line; a rendered exception on a log level's line; a fix's
word only as a word; the explainer's hedges only after a general subject; SGLang's KV-pool refusal."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify

TORCH_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."

# --- 1. a health check's field or a watcher's rule is no Xid told -------------------------------------------------


@pytest.mark.parametrize("line", [
    "[prolog] node-3 health: Xid 79 on GPU 0: 0, Xid 48 on GPU 0: 0",
    "GPU health OK (Xid 79 on GPU 0: none)",
    "    Xid 79 on GPU 0000:3B:00.0 : N/A",
    "dcgmi policy --set 0,0 -x  # trigger on Xid 48 on GPU",
])
def test_an_xid_field_above_a_real_oom_leaves_the_oom(line):
    assert classify(1, [line, TORCH_OOM]).cls == "cuda_oom"


@pytest.mark.parametrize("line", [
    "saw 0 Xid 79 events on node 3",
    "health check: Xid 79 on node-3: 0 events",
    "dcgm-exporter: Xid 79 on GPU 0 since boot: 0",
    "node-3: health check passed (Xid 79 on GPU 0: not seen)",
    "node-3 health: Xid 79 on GPU 0",               # a watcher's label right before the Xid (its clause is the Xid's)
    "alert: Xid 48 on GPU 2",
])
def test_an_xid_count_or_state_alone_is_no_gpu_fault(line):
    assert classify(1, [line]).cls == "unknown"


@pytest.mark.parametrize("line", [
    "we hit Xid 79 on node 3, then the job died",
    "Xid 48 on GPU 2 then the job died",
    "saw an XID error 79 in dmesg",
])
def test_an_xid_a_person_says_happened_is_still_a_gpu_fault(line):
    r = classify(1, [line])
    assert (r.cls, r.recovery) == ("cuda_fault", "fail")


# --- 2. the driver's own Xid line decides over an Xid a person told ------------------------------------------------

DRIVER_XID_13 = ("[ 1234.567890] NVRM: Xid (PCI:0000:3b:00): 13, pid=4321, name=python, Graphics SM Warp Exception on "
                 "(GPC 0, TPC 1, SM 0): Out Of Range Address")


@pytest.mark.parametrize("lines", [
    [DRIVER_XID_13, "we hit Xid 79 on node 3 last month"],
    ["we hit Xid 79 on node 3 last month", DRIVER_XID_13],
])
def test_the_drivers_xid_line_decides_over_an_xid_a_person_told(lines):
    r = classify(1, lines)
    assert (r.cls, r.recovery) == ("cuda_fault", "restart_launch_blocking")
    assert "Xid 13" in r.summary and "Xid 79" not in r.summary


def test_an_xid_a_person_told_still_decides_without_a_drivers_line():
    r = classify(1, ["step 40/200 loss=1.91", "we hit Xid 79 on node 3, then the job died"])
    assert (r.cls, r.recovery) == ("cuda_fault", "fail")


# --- 3. Japanese and Chinese reports: happened, stopped, asked how to solve, could not solve -----------------------


@pytest.mark.parametrize("line", [
    "「CUDA out of memory」というエラーが発生しました。",
    "「torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB」というエラーで止まります",
    "训练到第100步出现“CUDA out of memory”这种错误",
    "训练到第100步就CUDA out of memory，怎么解决？",
    "求助：运行train.py时CUDA out of memory. Tried to allocate 2.00 GiB，如何解决",
    "运行train.py时CUDA out of memory. Tried to allocate 2.00 GiB，减小batch size都无法解决",
    "学習中にCUDA out of memoryになり、batch sizeを下げても回避できません",
])
def test_a_japanese_or_chinese_report_of_an_oom_is_an_oom(line):
    assert classify(1, [line]).cls == "cuda_oom"


@pytest.mark.parametrize("line", [
    # a guide's title counts its tips, whatever its "how to"
    "PyTorch開発者必見:CUDA Out of Memory (OOM) エラーを徹底解決する現場の10大テクニック",
    "如何避免CUDA Out of Memory：显存优化的七个技巧",
    # a quote naming a kind of error, its raised name inside, on a line that says nothing happened
    "よくあるのが「torch.OutOfMemoryError: CUDA out of memory」というエラーです。",
])
def test_a_japanese_or_chinese_guide_or_naming_is_still_no_oom(line):
    assert classify(1, [line]).cls == "unknown"


# --- 5. torch's full message on a log level's line is a rendered exception ------------------------------------------


@pytest.mark.parametrize("line", [
    "[WARNING|trainer.py:2345] 2026-01-02 12:00:00 >> CUDA out of memory. Tried to allocate 2.00 GiB",
    "WARNING:__main__:rank 3 hit CUDA out of memory. Tried to allocate 2.00 GiB; aborting",
    "W0102 12:00:00.123 1234 train.py:88] CUDA out of memory. Tried to allocate 2.00 GiB",
])
def test_torchs_full_oom_message_on_a_log_level_line_is_an_oom(line):
    assert classify(1, [line]).cls == "cuda_oom"


@pytest.mark.parametrize("line", [
    "[INFO] Setting up. If you see CUDA out of memory, lower the batch size.",
    "[WARNING] micro batch 16 on a 24 GiB GPU: the first step may hit CUDA out of memory. Tried to allocate 2 GiB",
    "WARNING: watch for CUDA out of memory on the first step",
])
def test_a_log_level_lines_advice_or_hedge_is_still_no_oom(line):
    assert classify(1, [line], steps_seen=300).cls != "cuda_oom"


# --- 6. a fix's word inside a name is no fix -----------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "[fix-loader run 3] CUDA out of memory. Tried to allocate 2.00 GiB",
    "Running on branch fix-loader: CUDA out of memory. Tried to allocate 2.00 GiB",
    "job bugfix/fixes_2 failed: CUDA out of memory. Tried to allocate 2.00 GiB",
])
def test_a_fix_word_inside_a_name_leaves_torchs_oom(line):
    assert classify(1, [line]).cls == "cuda_oom"


def test_a_changelogs_fix_of_an_oom_is_still_no_oom():
    assert classify(1, ["Fixed: CUDA out of memory in eval with long prompts (#812)"], steps_seen=300).cls \
        != "cuda_oom"


# --- 7. an explainer's words after "which" read what the line reported ---------------------------------------------


@pytest.mark.parametrize(("line", "cls"), [
    ("[launcher] rank 3 stopped heartbeating, which typically means an NCCL collective timed out; aborting job",
     "nccl_error"),
    ("gpu-health[123]: GPU 0000:3b:00.0 status check failed, which typically indicates the GPU has fallen off the bus",
     "cuda_fault"),
])
def test_a_report_read_with_which_typically_means_is_the_failure(line, cls):
    assert classify(1, [line]).cls == cls


@pytest.mark.parametrize("line", [
    "When DCGM detects fewer GPUs than expected, it typically indicates a GPU has fallen off the bus",
    "A stalled heartbeat typically means an NCCL collective timed out.",
    "Xid 79 means the GPU fell off the bus and needs a reset.",
])
def test_an_explainers_general_statement_is_still_no_failure(line):
    assert classify(1, [line], steps_seen=300).cls == "unknown"


# --- 8. SGLang's KV-pool refusal -----------------------------------------------------------------------------------

SGLANG_KV = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."


@pytest.mark.parametrize("lines", [
    [SGLANG_KV],
    ["[2026-01-02 12:00:00 TP0] Scheduler hit an exception: Traceback (most recent call last):",
     SGLANG_KV + " Current value: mem_fraction_static=0.35"],
])
def test_sglangs_kv_pool_refusal_is_an_oom_with_its_own_advice(lines):
    r = classify(1, lines)
    assert r.cls == "cuda_oom"
    assert "SGLang" in r.summary and "mem_fraction_static" in r.hint


def test_sglangs_refusal_in_a_monitors_list_of_patterns_is_no_oom():
    line = f'abnormal_flag_str = ["{SGLANG_KV}", "CUDA error: invalid device ordinal"]'
    assert classify(1, [line]).cls != "cuda_oom"


# --- 9. the review of the told-Xid refusals: a real report is no monitor's field -----------------------------------


@pytest.mark.parametrize("line", [
    "We saw Xid 79 events on node-3: the job died after that",
    "Job #4411 died at step 9000; dmesg shows Xid 79 on GPU 3",
    "The health check passed at 09:00, then we hit Xid 79 on GPU 2 and training stopped",
    "Our alert fired: we hit Xid 48 on GPU 5",
    "The run died and dmesg showed GPU 0 Xid 79 then nothing",
    "we hit rank 0 Xid 13 in dmesg",
    "Training crashed and dmesg showed Xid 31: 0x1e MMU fault",
])
def test_an_xid_a_person_reports_is_a_gpu_fault_not_a_monitors_field(line):
    assert classify(1, [line]).cls == "cuda_fault"


DEEPEP_TIMEOUT_LINES = ["DeepEP error: timeout (dispatch CPU)",
                        "RuntimeError: CUDA error: unspecified launch failure",
                        "[12345.6] NVRM: Xid (PCI:0000:3b:00): 13, pid=1234, ..."]


@pytest.mark.parametrize("told", [
    "we hit Xid 79 on GPU 3",
    "we hit Xid 79 on node 3, then the job died",
    "we hit Xid 79 on GPU 3 last week, replaced the card",
])
def test_an_xid_told_above_the_drivers_own_does_not_hide_deepeps_timeout_before_the_fault(told):
    # the driver's Xid line decides over the told one, so DeepEP's timeout before the CUDA error is the crash's
    # cause (its trap() makes the CUDA error), as it is without the told line
    assert classify(1, DEEPEP_TIMEOUT_LINES).cls == "nccl_error"
    assert classify(1, [told] + DEEPEP_TIMEOUT_LINES).cls == "nccl_error"


# torch's whole OOM message (c10/cuda/CUDACachingAllocator.cpp's, as torch 2.4+ prints it): longer than the window
# the OOM rule looks in for the words' own marks
TORCH_OOM_WHOLE = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which "
                   "1.20 GiB is free. Including non-PyTorch memory, this process has 77.94 GiB memory in use. Of the "
                   "allocated memory 75.12 GiB is allocated by PyTorch, and 1.81 GiB is reserved by PyTorch but "
                   "unallocated. If reserved but unallocated memory is large try setting "
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                   "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


def test_torchs_whole_oom_message_named_in_a_japanese_quote_is_no_oom():
    assert classify(1, [f"「{TORCH_OOM_WHOLE}」というエラーです"]).cls == "unknown"
