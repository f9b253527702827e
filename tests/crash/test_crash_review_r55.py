"""Review R55 of crash batch 56: its Chinese prose rules refused first-hand reports (each input decided before batch
56 and was ``unknown`` after it); every one is asserted both ways here.

1. ``crash._zh_predicted``: a 会 before a runtime's bare words is an explainer's only with a general subject and
   nothing of a run in its sentence (no first person, no run detail, progress or count, no question or plea), and
   never before torch's raised message with its numbers.
2. ``crash._zh_guide_heading``: a Chinese "典型报错如下：" with the first person or the run's own narration is the
   reporter's, and under a guide's heading only a list's items are skipped: a program's own line decides.
3. ``crash.zh_retold_topic``: a line naming the first person ends the topic without a failure's keyword; an author
   addressed, a writer who met the same failure, and a third person's report as a noun's modifier open none.
4. One reading of 会: the told OOM (``crash._zh_oom_mentioned``) and the told NCCL timeout read ``_zh_predicted``."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


def _cls(*lines: str, steps: int = 10) -> str:
    return classify(1, list(lines), steps_seen=steps).cls


_TORCH_OOM = (" CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.20 "
              "GiB is free.")
_WATCHDOG = ("[rank3]:[E1201 10:00:00.000000000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation "
             "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600010 "
             "milliseconds before timing out.")
_C10D_BIND = ("[W socket.cpp:401] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
              "already in use).")


# --- finding 1: a report's 会 decides ---------------------------------------------------------------------------------


@pytest.mark.parametrize("lines, cls", [
    # DiffusionDet #86 (https://github.com/ShoufaChen/DiffusionDet/issues/86), title and body
    (("为什么迭代到第三万次的时候会报 CUDA out of memory？", "在训练的时候，前三万次都可以正常训练，为什么后来会报显存不够呢？"
      "RTX3080的显卡，难道连 batchsize=2 都跑不了吗"), "cuda_oom"),
    # tests/crash/public 1023's sentence without its 我, and with its run before a comma
    (("启用optimizer_cpu_offload会导致illegal memory access",), "cuda_fault"),
    (("8卡H100训练Qwen3-30B，启用optimizer_cpu_offload会导致illegal memory access",), "cuda_fault"),
    # a real srun script's comment (its # line is read as a heading, as before batch 56; the sentence itself)
    (("而--gres=gpu:8 --ntasks=8 --ntasks-per-node=8 就会报CUDA out of memory 的错",), "cuda_oom"),
    (("Qwen3-30B-A3B 用 megatron 训练，会报 CUDA out of memory，显存 80G 的 H100",), "cuda_oom"),
    (("两台机器跑多机，会报 Address already in use，换了端口也不行",), "port_in_use"),
    (("设置 --master_port 29500 会报 Address already in use，求助",), "port_in_use"),
    (("单卡没问题，多卡会报CUDA out of memory",), "cuda_oom"),
    (("单卡正常，多卡会报 ncclInternalError: Internal check failed.",), "nccl_error"),
    (("在 8 卡 A100 上 GRPO 会报 CUDA out of memory，log 如下",), "cuda_oom"),
    (("保存checkpoint的时候会报 CUDA out of memory",), "cuda_oom"),
    (("evaluate 的时候会出现 CUDA out of memory",), "cuda_oom"),
    (("开启sequence_parallel之后会导致CUDA out of memory，请问怎么解决",), "cuda_oom"),
    (("迭代到一半会报 CUDA out of memory，求助",), "cuda_oom"),
    # torch's raised message with its numbers always decides
    (("batch size 改成 8 会报" + _TORCH_OOM,), "cuda_oom"),
    (("显存不够会报" + _TORCH_OOM,), "cuda_oom"),
])
def test_a_reports_hui_decides(lines, cls):
    assert _cls(*lines) == cls, lines


@pytest.mark.parametrize("line", [
    "端口被占用会导致 Address already in use 错误，需要换一个 MASTER_PORT。",
    "残留进程占着端口会出现 errno: 98 的错误。",
    "显存不够会报 CUDA out of memory。",
    "显存碎片过多会导致 CUDA out of memory 错误。",
])
def test_an_explainers_prediction_with_a_general_subject_is_still_refused(line):
    assert _cls(line) == "unknown", line


# --- finding 4: one reading of 会 for the told failures -----------------------------------------------------------------


@pytest.mark.parametrize("line, cls", [
    ("训练一段时间后会出现显存不足", "cuda_oom"),
    ("训练一段时间后会报 CUDA out of memory", "cuda_oom"),
    ("多机训练一段时间后会出现NCCL超时", "nccl_error"),
])
def test_the_told_failures_read_hui_as_the_bare_words_do(line, cls):
    assert _cls(line) == cls, line


@pytest.mark.parametrize("line", ["显存不够会出现显存不足。", "网络不稳定会导致NCCL超时。"])
def test_an_explainers_hui_refuses_the_told_failures_too(line):
    assert _cls(line) == "unknown", line


# --- finding 2: a reporter's own "典型报错如下：" -------------------------------------------------------------------------


@pytest.mark.parametrize("lines, cls", [
    (("多机训练跑了两天后挂了，典型报错如下：", _WATCHDOG, _WATCHDOG), "nccl_error"),
    (("我这边训练时常见的报错如下：", _WATCHDOG, _WATCHDOG), "nccl_error"),
    # a guide's heading, but a program's own line under it is no list item
    (("启动时典型报错如下：", _C10D_BIND), "port_in_use"),
    (("常见的分布式训练通信失败表现包括:", _WATCHDOG), "nccl_error"),
])
def test_a_program_line_under_a_reporters_or_a_guides_heading_decides(lines, cls):
    assert _cls(*lines) == cls, lines


def test_a_guides_list_items_under_its_heading_stay_unread():
    assert _cls("常见的分布式训练通信失败表现包括:", "  • RuntimeError: NCCL error in ...: unhandled system error",
                "  • Address already in use绑定冲突") == "unknown"


# --- finding 3: the retold topic --------------------------------------------------------------------------------------


@pytest.mark.parametrize("lines, cls", [
    (("有用户报告遇到了显存不足的问题（#1234），但那个issue没有解决。", "我的配置如下", "8卡A100，训练到第300步出现显存不足，进程退出"),
     "cuda_oom"),
    (("有用户报告遇到了NCCL超时的问题（#1234），但那个issue没有解决。", "我的配置如下", "多机训练时遇到NCCL超时，训练卡住后退出"),
     "nccl_error"),
    (("作者您好，多机训练时遇到NCCL超时，训练卡住后退出",), "nccl_error"),
    (("开发者你好，多机训练时遇到NCCL超时，训练卡住后退出",), "nccl_error"),
    (("@作者 多机训练时遇到NCCL超时，训练卡住后退出",), "nccl_error"),
    (("和楼主遇到了一样的问题，训练到第300步出现显存不足",), "cuda_oom"),
    (("用户反馈的问题已经修复了，但是更新之后还是遇到NCCL超时，训练卡住后退出",), "nccl_error"),
    (("搜了issue，发现有人遇到过类似问题", "训练到第300步出现显存不足，8卡A100"), "cuda_oom"),
    # a contrast after the third person's mention turns to the writer's own run
    (("有人提到调小 batch size 可以解决，试了没用，训练到第300步还是出现显存不足",), "cuda_oom"),
    (("之前有人反馈过 NCCL timeout 的问题，说是升级 torch 就好了，但升级之后：", "多机训练时遇到NCCL超时，训练卡住后退出"),
     "nccl_error"),
])
def test_the_writers_own_run_decides(lines, cls):
    assert _cls(*lines) == cls, lines


@pytest.mark.parametrize("lines", [
    ("作者遇到了NCCL超时，训练卡住后退出。",),
    ("用户报告遇到了显存不足的问题。", "训练到第300步出现显存不足，8卡A100"),
    ("研究人员遇到了一个典型的内存管理问题。具体场景是在A100上微调时,训练过程中出现了CUDA内存不足的错误。",),
])
def test_a_third_persons_retold_run_is_still_refused(lines):
    assert _cls(*lines) == "unknown", lines
