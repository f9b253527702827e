"""Batch 56's rules (tests/crash/public 1216-1235) and item 1 of its brief.

- A Chinese prediction before a runtime's bare words in their clause is an explainer's (``crash._zh_predicted``, read
  by ``crash._cjk_mentioned``, so the port's words, the OOM's and the faults' alike): "端口被占用会导致 Address already
  in use"; a report's 会 decides (the first person before the words, the run's own count or time, a past 了, an
  exception's name raised between; since review R55 any run detail or progress in the sentence: test_crash_review_r55).
- A third person's run retold is a Chinese text's topic until a line names the first person (``crash.zh_retold_topic``):
  the failures told in Chinese words (the told OOM, the told NCCL timeout) do not decide under it; a program's line does.
- A Chinese guide's heading over its list of common failures is an example's heading (``crash._EXAMPLE_HEADING``).
- Item 1's decisions left as they were, asserted both ways: a subjectless OOM is not read (a condition's consequence,
  VRAM and host RAM both named, no device named), and a markdown reply's ``> I'm getting ...`` quote decides (GitHub's
  quote reply copies an earlier comment of the same thread, the reporter's own words) unless a speaker's label, a
  quotation opened before the words or an OOM that is over refuses it, as on any line."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


def _cls(*lines: str, steps: int = 10) -> str:
    return classify(1, list(lines), steps_seen=steps).cls


# --- item 1 (b): a Chinese explainer's prediction -------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "端口被占用会导致 Address already in use 错误，需要换一个 MASTER_PORT。",
    "残留进程占着端口会出现 errno: 98 的错误。",
    # the same owner reads the OOM's bare words
    "显存不够会报 CUDA out of memory。",
])
def test_a_chinese_prediction_before_the_bare_words_is_an_explainers(line):
    assert _cls(line) == "unknown", line


@pytest.mark.parametrize("line, cls", [
    ("我启动训练时端口被占用，会报 Address already in use，重启机器也没用。", "port_in_use"),
    ("每次启动都会报 Address already in use", "port_in_use"),
    ("训练到第3个epoch会报 EADDRINUSE", "port_in_use"),
    ("昨天跑了一半会报 Address already in use", "port_in_use"),
    ("端口被占用时会出现 RuntimeError: The server socket has failed to listen on any local network address. port: 29500,"
     " useful error: [errno: 98] Address already in use", "port_in_use"),
    ("我这边一跑就会报 CUDA out of memory", "cuda_oom"),
    # the run's progress: when it fails
    ("训练一段时间后会报 CUDA out of memory", "cuda_oom"),
    ("多机启动会报 Address already in use，换端口也一样", "port_in_use"),
    # review R55: a run's detail (a setting's name) or its progress (训练时) before the 会 is a report's, even under a
    # cause's 会导致: these explainers' sentences cannot be told from a report's and decide (documented misses)
    ("多个任务共用同一个 MASTER_PORT 会报 EADDRINUSE。", "port_in_use"),
    ("训练时端口被占用会导致 Address already in use 错误。", "port_in_use"),
])
def test_a_reports_hui_still_decides(line, cls):
    assert _cls(line) == cls, line


# --- a third person's run retold in Chinese --------------------------------------------------------------------------


@pytest.mark.parametrize("lines", [
    ("研究人员遇到了一个典型的内存管理问题。具体场景是在A100上微调时,训练过程中出现了CUDA内存不足的错误。",),
    ("用户报告在初始化vLLM引擎时遇到了CUDA内存溢出(OOM)问题。", "- 错误发生:CUDA内存不足,仅剩余24MB可用空间"),
    ("用户常遇到通信初始化失败、NCCL超时或崩溃等问题，导致训练进程中断。",),
])
def test_a_third_persons_run_retold_in_chinese_is_no_report(lines):
    assert _cls(*lines) == "unknown", lines


@pytest.mark.parametrize("lines, cls", [
    # the first person ends the retold topic
    (("用户报告训练会卡住。", "我这边训练时也出现了显存不足，8卡A100。"), "cuda_oom"),
    # a program's own line decides under it
    (("研究人员遇到了一个问题。", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
      "total capacity of 79.35 GiB of which 1.2 GiB is free."), "cuda_oom"),
    (("多机训练到第300步出现NCCL超时，进程退出了。",), "nccl_error"),
])
def test_the_writers_own_run_and_a_programs_line_still_decide(lines, cls):
    assert _cls(*lines) == cls, lines


# --- a Chinese guide's list of common failures -----------------------------------------------------------------------


def test_a_chinese_guides_list_of_common_failures_is_an_example():
    assert _cls("常见的分布式训练通信失败表现包括:", "", "  • RuntimeError: NCCL error in ...: unhandled system error",
                "  • Address already in use绑定冲突") == "unknown"


def test_a_reports_list_and_a_traceback_under_a_guides_heading_still_decide():
    assert _cls("训练中遇到两个问题：", "  • RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1275, unhandled system "
                "error, NCCL version 2.18.1") == "nccl_error"
    assert _cls("典型的报错如下：", "  • Address already in use", "Traceback (most recent call last):",
                '  File "train.py", line 3, in <module>',
                "RuntimeError: The server socket has failed to listen on any local network address. port: 29500, "
                "useful error: [errno: 98] Address already in use") == "port_in_use"


# --- item 1 (a): the subjectless OOM stays unread ---------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "If I stop using adam-offload, then OOM happens (4x A40 48g).",     # 1223: a condition's consequence
    "started training lora, and OOM... on platform with 32GB VRAM / 96 GB RAM...",     # 1199: both memories named
    "I changed VP from 24 to 2, and still got the OOM error:",     # 1221: no device
])
def test_a_subjectless_oom_is_not_read(line):
    assert _cls(line) == "unknown", line


def test_an_oom_told_on_a_named_gpu_is_read():
    assert _cls("I keep getting OOM on my A40 48g") == "cuda_oom"


# --- item 1 (c): a markdown reply's quote ------------------------------------------------------------------------------


@pytest.mark.parametrize("lines", [
    ("> I'm getting CUDA out of memory on my 4090 when training.", "", "Try lowering the batch size."),
    ("> I keep getting CUDA OOM on the A100 at step 1200.",),
])
def test_a_quote_reply_of_the_reporters_words_decides(lines):
    assert _cls(*lines) == "cuda_oom", lines


@pytest.mark.parametrize("line", [
    '> **User**: "I\'m getting CUDA OOM on my 4090"',
    "> User: I'm getting CUDA OOM on my 4090",
    "> I used to get CUDA OOM on my 4090 before the fix.",
])
def test_a_quoted_speaker_or_an_oom_that_is_over_does_not(line):
    assert _cls(line) == "unknown", line


@pytest.mark.parametrize("lines", [
    # a report asking whether others met it, a denial, and the paragraph after a retold one
    ("有人遇到过这个问题吗？训练到第300步出现显存不足，8卡A100。",),
    ("没有人遇到过。训练到第300步出现显存不足，8卡A100。",),
    ("用户报告训练会卡住。", "", "更新后训练到第300步还是出现显存不足，8卡A100。"),
])
def test_a_question_a_denial_or_a_new_paragraph_ends_the_retold_topic(lines):
    assert _cls(*lines) == "cuda_oom", lines
