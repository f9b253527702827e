"""Batch 69's families (tests/crash/public 1476-1495, held out).

Main read 19 of the 20 texts' classes right; the one it missed (1492, a Chinese write-up's opening on NCCL timeouts,
read as ``nccl_error``) was two readings of a guide's general words, each added to the rule that owns it (no label
changed):

1. An explainer's prediction heading the program's line below its colon: "它只会在某个反向传播的瞬间突然爆发,中断整个训练
   进程,日志里留下一行冰冷的报错:" over torch's "RuntimeError: NCCL error in: ..., unhandled system error (5), Timeout".
   The 会 is _zh_predicted's one reading of a prediction (a general subject, none of a run's marks in its sentence);
   under it the raised exception's line is the sample, and a program's own prefix below still decides.
2. A told NCCL timeout after many people or a frequency in its clause: "很多人却被一个看似简单却反复出现的问题拦住去路:
   NCCL timeout。" -- _ZH_GENERAL_BEFORE, the told OOM's reading since review R31, is now the told NCCL timeout's too.
Every accepted case below fails on main's code; the refusals pass on both."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify

_NCCL_LINE = ("RuntimeError: NCCL error in: /opt/conda/work/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1127, "
              "unhandled system error (5), Timeout")


def _verdict(*lines: str, steps: int = 10):
    return classify(1, list(lines), steps_seen=steps)


# --- 1. a Chinese explainer's prediction heading the program's line ----------------------------------------------------


@pytest.mark.parametrize("lines", [
    # another runtime's line under it: torch's OOM with its numbers, the runtime's illegal address, NCCL's abort
    ["这种错误通常会在日志里留下这样一行：",
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB "
     "of which 1.19 GiB is free."],
    ["它往往会在某一步突然崩溃，只留下一行：", "RuntimeError: CUDA error: an illegal memory access was encountered"],
    ["这个报错会直接中断整个进程，日志的最后一行会是：", "RuntimeError: NCCL communicator was aborted on rank 3."],
    # the guide's own sentences before it on the line, a bold heading, the ASCII colon, prose glued after the sample
    ["这个错误不会告诉你是哪一步出了问题。它只会突然爆发，日志里留下一行冰冷的报错:", _NCCL_LINE + "更糟的是,这类问题往往复现困难"],
    ["**它会在日志里留下这样的报错：**", _NCCL_LINE],
])
def test_a_chinese_explainers_predicted_sample_is_no_runs_failure(lines):
    v = _verdict(*lines)
    assert v.cls == "unknown", (v.cls, v.summary)


@pytest.mark.parametrize("lines", [
    # the reporter's voice: the first person on the line or the line above, a past 了, a frequency of the run's own
    ["我的任务会报这个错：", _NCCL_LINE],
    ["我在 8 卡 H100 上跑 DDP。", "它会报下面的错：", _NCCL_LINE],
    ["它会卡住，然后报了这个错：", _NCCL_LINE],
    ["它每次都会报这个错：", _NCCL_LINE],
    # the run's detail before the 会, a number after it, a question, an exception named in the sentence
    ["训练到一半会报错：", _NCCL_LINE],
    ["它会在第 300 步报错：", _NCCL_LINE],
    ["为什么它会报这个错：", _NCCL_LINE],
    ["它会报 RuntimeError: 如下：", _NCCL_LINE],
    # no prediction at all: a report's own heading
    ["报错如下：", _NCCL_LINE],
])
def test_a_reporters_heading_keeps_the_programs_line(lines):
    v = _verdict(*lines)
    assert v.cls == "nccl_error", (v.cls, v.summary)


def test_a_programs_own_prefix_under_the_prediction_still_decides():
    v = _verdict("通常会看到这样的报错：",
                 "[rank3]:[E1224 16:22:36.695363169 ProcessGroupNCCL.cpp:1484] [PG ID 0 PG GUID 0(default_pg) Rank 3] "
                 "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, "
                 "NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds before timing out.")
    assert v.cls == "nccl_error", (v.cls, v.summary)


# --- 2. a told NCCL timeout in a general statement ---------------------------------------------------------------------


@pytest.mark.parametrize("lines", [
    ["很多人在多机训练里被同一个问题拦住：NCCL timeout。"],
    ["大家经常遇到 NCCL timeout，这里总结几个原因。"],
    ["不少人反馈多卡训练出现NCCL超时"],
    ["分布式训练中往往出现NCCL通信超时"],
])
def test_a_told_nccl_timeout_in_a_general_statement_is_none(lines):
    v = _verdict(*lines)
    assert v.cls == "unknown", (v.cls, v.summary)


@pytest.mark.parametrize("lines", [
    # the run's own, and the general words in another clause (what follows the "but" is told)
    ["训练到第300步出现 NCCL timeout，进程退出了。"],
    ["很多人说调大超时就好，但是我这边还是出现 NCCL timeout"],
    ["两台机器训练时出现NCCL超时，进程被杀掉了"],
])
def test_a_told_nccl_timeout_of_the_run_still_decides(lines):
    v = _verdict(*lines)
    assert v.cls == "nccl_error", (v.cls, v.summary)
