"""Batch 50's rules (docs/crash-classes.md, "Public crash texts"), each on variants the batch's texts did not show.

Item 1 of the batch made the four told-failure verdicts one table (``crash._TOLD_FAILURES``): the verdicts they give
are pinned here (class, recovery, cooldown, summary, hint). The host's memory told as what ran out ("CPU OOM",
"RAM OOM", "host out of memory") is a ``killed_oom`` decided last, as the OOM killer told in words is; a recurrence
right before the told words ("Frequent CPU OOM") is the reporter's failure coming back, no general statement.
slurmstepd's "Some of the step tasks have been OOM Killed" retold without its first sentence is still Slurm's report
of the OOM kill. A GPU's OOM told in Chinese ("报告了CUDA内存不足的错误", "出现显存溢出") is a CUDA OOM. Each also gets
the lines its words must not decide on: advice, conditions, denials, explanations, log-level lines, settings, a
general statement and the GPU's or a program's own lines."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import NCCL_COOLDOWN_SCALE, classify

# --- item 1: the told failures' table gives the verdicts it gave before ------------------------------------------


@pytest.mark.parametrize("line, cls, recovery, scale, summary_has, hint_has", [
    ("i always got out of memory on my rtx 5090 at step 40", "cuda_oom", "restart", 1.0,
     "GPU out of memory, as the report tells it", "lower the micro-batch"),
    ("Our job was killed by the OOM killer at step 300.", "killed_oom", "restart", 1.0,
     "killed by the kernel's OOM killer, as the report tells it", "dmesg"),
    ("The trainer crashed with a segmentation fault while training.", "segfault", "restart", 1.0,
     "segmentation fault (SIGSEGV), as the report tells it", "PYTHONFAULTHANDLER"),
    ("[rank5]: Segfault encountered", "segfault", "restart", 1.0,
     "apache-tvm-ffi's handler message, pasted without its banner", "PYTHONFAULTHANDLER"),
    ("Our run died with an NCCL timeout at step 20.", "nccl_error", "restart_long_cooldown", NCCL_COOLDOWN_SCALE,
     "an NCCL collective timed out, as the report tells it", "NCCL"),
])
def test_the_told_failures_table_gives_each_rows_verdict(line, cls, recovery, scale, summary_has, hint_has):
    v = classify(1, [line], steps_seen=300)
    assert (v.cls, v.recovery, v.cooldown_scale) == (cls, recovery, scale), (line, v.summary)
    assert summary_has in v.summary and hint_has in (v.hint or ""), (v.summary, v.hint)


def test_a_program_line_after_a_told_failure_still_outranks_it():
    v = classify(1, ["The OOM killer kicked in at step 300 and we restarted.",
                     "RuntimeError: CUDA error: an illegal memory access was encountered"], steps_seen=300)
    assert v.cls == "cuda_fault", v.summary


# --- the host's OOM told in words ---------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "Frequent CPU OOM / Process Killed After Several Hundred Steps",
    "Our GRPO run hit a host OOM at step 812, no traceback.",
    "The job died of a RAM OOM while loading the dataset.",
    "After 3 hours the trainer ran into a system memory OOM and the node rebooted.",
    "Recurring CPU out of memory during checkpoint save",
    "训练到第300步时出现了 CPU OOM",
])
def test_the_hosts_oom_told_in_words_is_killed_oom(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls == "killed_oom", (line, v.summary)
    assert "host" in v.summary and "host RAM" in (v.hint or ""), (v.summary, v.hint)


@pytest.mark.parametrize("line", [
    # advice, a condition, a prediction, a denial
    "To avoid a CPU OOM, lower dataloader_num_workers.",
    "If you hit a host OOM, reduce the number of rollout workers.",
    "You'll get a CPU OOM with offload enabled on small nodes.",
    "We did not see any CPU OOM during the run.",
    # a general statement and prevalence
    "Common CPU OOM causes and how to fix them",
    "Users often hit a RAM OOM with pinned memory.",
    # a question heading
    "### Why do I get a host OOM with ZeRO-3 offload?",
    # a log-level line and a setting
    "[WARNING] host OOM risk: 95% of RAM in use",
    "oom_guard: \"CPU OOM\"",
    # caught and gone on from
    "CPU OOM on batch 12, skipping batch and continuing",
    # the GPU's memory is not the host's, nor a cause among Ray's possible ones
    "Our job got a GPU OOM at step 40.",
    "There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage.",
])
def test_the_hosts_oom_only_mentioned_is_no_oom_kill(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls != "killed_oom", (line, v.summary)


def test_a_recurrence_before_the_words_does_not_undo_a_generic_subject():
    v = classify(1, ["Frequent CPU OOM in jobs that pin memory is expected."], steps_seen=300)
    assert v.cls != "killed_oom", v.summary


def test_torchs_own_oom_after_a_told_host_oom_decides():
    v = classify(1, ["Frequent CPU OOM on this node, see below",
                     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                     "capacity of 79.10 GiB of which 6.00 MiB is free."], steps_seen=300)
    assert v.cls == "cuda_oom", v.summary


# --- slurmstepd's second sentence alone ---------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "Some of the step tasks have been OOM Killed - Custom reward_func",
    "slurmstepd: error: Some of the step tasks have been OOM Killed.",
    "[2026-03-28T14:27:13.072] error: Some of the step tasks have been OOM Killed.",
])
def test_slurms_step_tasks_oom_killed_alone_is_killed_oom(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls == "killed_oom", (line, v.summary)


@pytest.mark.parametrize("line", [
    "If you see 'Some of the step tasks have been OOM Killed', raise --mem.",
    "To avoid \"Some of the step tasks have been OOM Killed\" request more memory per CPU.",
    "oom_message: \"Some of the step tasks have been OOM Killed\"",
])
def test_slurms_sentence_only_mentioned_is_no_oom_kill(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls != "killed_oom", (line, v.summary)


# --- a GPU's OOM told in Chinese -----------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "系统日志显示多个GPU进程(rank0-rank7)均报告了CUDA内存不足的错误,尝试分配270MB内存失败",
    "训练到第二个epoch时出现显存溢出,进程退出",
    "评估阶段遇到了显存不足的问题,训练中断",
    "保存checkpoint的时候报GPU内存不足",
])
def test_a_gpu_oom_told_in_chinese_is_a_cuda_oom(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls == "cuda_oom", (line, v.summary)


@pytest.mark.parametrize("line", [
    # a general statement, a "when", a condition, a way around, a denial, a doubt
    "这是最常见的情况,通常出现在显存不足时。",
    "训练大模型时经常会遇到显存不足的问题",
    "如果出现显存不足,可以减小batch size",
    "为了避免出现显存溢出,建议开启梯度检查点",
    "训练过程中没有出现显存不足",
    "不确定是否出现了显存溢出",
    # the host's memory (内存 alone) is not the GPU's
    "训练时出现内存不足,进程被杀",
    # a program's log-level line
    "[WARNING] 出现显存不足风险,请减小batch size",
])
def test_a_gpu_oom_only_mentioned_in_chinese_is_no_cuda_oom(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls != "cuda_oom", (line, v.summary)
