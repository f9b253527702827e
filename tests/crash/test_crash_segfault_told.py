"""A segmentation fault that a report tells in words instead of pasting the handler's output (batch 36):
the signal's names (its abbreviation SIGSEGV, strsignal's "Segmentation fault", the contraction "segfault"
that apache-tvm-ffi's handler prints) in a statement that the run got one. It decides only where nothing a
program printed decides, and never when the words hedge ("may", "possible", Ray's list of root causes)."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


# apache-tvm-ffi's handler (src/ffi/backtrace.cc, TVMFFISegFaultHandler: "!!!!!!! Segfault encountered !!!!!!!\n",
# the native frames, then SIGSEGV re-raised), its message kept without the banner a paste or a tool dropped
@pytest.mark.parametrize("line", ["[rank5]: Segfault encountered",
                                  "`Segfault encountered`",
                                  "(SGLangEngine pid=3697723) Segfault encountered"])
def test_the_tvm_ffi_message_without_its_banner_is_a_segfault(line):
    lines = ["step 7 loss 0.81", line,
             '  File "<unknown>", line 0, in cuGraphLaunch',
             '  File "<unknown>", line 0, in at::cuda::CUDAGraph::replay()']
    v = classify(1, lines, steps_seen=7)
    assert v.cls == "segfault" and v.retryable, (v.cls, v.summary)
    assert any("Segfault encountered" in e for e in v.evidence)


@pytest.mark.parametrize("told", [
    "The job segfaulted at step 120 while writing the optimizer shards.",
    "Training crashes with a segmentation fault right after the first rollout",
    "Every rank gets a SIGSEGV in cudaGraphLaunch when CUDA graphs are on",
    "16 nodes: FAILED (SIGSEGV) on 2 of 128 ranks",
    "we keep hitting a seg fault during the save",
    "[Bug] megatron sft: rank 0 segfaults in torch.save",
])
def test_a_segfault_told_in_words_is_a_segfault_when_nothing_else_decides(told):
    v = classify(1, [told, "step 120 loss 0.33"], steps_seen=120)
    assert v.cls == "segfault" and v.recovery == "restart", (v.cls, v.summary)
    assert told in v.evidence


@pytest.mark.parametrize("lines", [
    # Ray's list of what might have killed a worker names SIGSEGV as one possibility among others
    ["(raylet) A worker died or was killed while executing a task by an unexpected system error. Worker exit "
     "type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of "
     "file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high "
     "memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or "
     "other unexpected errors."],
    # a hedge or a denial tells no segfault
    ["this config may cause a segfault on older drivers", "step 3 loss 1.0"],
    ["no segfault this time, the run just stops", "step 3 loss 1.0"],
    # another issue's segfault, cited
    ["Related to #179891 (get_device_properties segfault on BMG)", "step 3 loss 1.0"],
])
def test_a_segfault_only_mentioned_is_not_one(lines):
    assert classify(1, lines, steps_seen=3).cls == "unknown"


def test_an_exception_raised_after_the_told_segfault_decides():
    lines = ["I got a segfault when saving, then on the resume:",
             "Traceback (most recent call last):",
             '  File "train.py", line 9, in <module>',
             "KeyError: 'iteration'"]
    v = classify(1, lines, steps_seen=0)
    assert v.cls == "unknown" and "KeyError" in v.summary, (v.cls, v.summary)


def test_what_a_program_printed_outranks_a_told_segfault():
    lines = ["Training crashes with a segmentation fault after a while",
             "[rank1]:[E1206 18:44:16.018938295 ProcessGroupNCCL.cpp:1515] [PG 1 Rank 1] Process group watchdog "
             "thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: "
             "WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600099 "
             "milliseconds before timing out."]
    assert classify(1, lines, steps_seen=40).cls == "nccl_error"
