"""Batch 71's families (tests/crash/public 1516-1535, held out).

Main read 17 of the 20 texts' classes right. The three misses were two families, each added to the rule that owns it:

1. The host's OOM kill told in the killers' own words (1519, "When trying to run the aind-pipeline on our cluster I
   get jobs OOM killed."; 1517, "all the jobs are automatically killed because of a slurm out-of-memory error"; both
   read as ``unknown``): Slurm's participle ("Some of the step tasks have been OOM Killed", task/cgroup) and the
   kubelet's reason ("OOMKilled") after a verb of getting or the passive, or a kill given the host's out-of-memory
   as its cause, is ``killed_oom`` (``crash.oom_kill_told``); a plural subject after a definite determiner ("all the
   jobs") names the reporter's own jobs, not a kind (``crash._general_statement``).
2. A segfault told in Chinese (1532, "训练中途，报错，segmentation fault (core dumped)...", read as ``unknown``): the
   told OOM's Chinese verbs of meeting or reporting (and 报错) right before the signal's name, read with the told
   OOM's Chinese limits (``crash.segfault_told``).
Every accepted case below fails on main's code; the refusals pass on both."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


def _verdict(*lines: str, steps: int = 10):
    return classify(1, list(lines), steps_seen=steps)


# --- 1. the host's OOM kill told in the killers' own words ---------------------------------------------------------


@pytest.mark.parametrize("line", [
    "my trainer got OOM-killed at step 300, no traceback at all",
    "Rank 3 was OOMKilled twice last night while the other ranks waited in the allreduce",
    "We keep getting the dataloader workers OOM killed after epoch 2",
    "When I run it with 16 workers I get the whole job OOM killed.",
    "The training was killed due to OOM after about 4 hours on the 8xH100 node.",
    "After a while, all the jobs are killed because of a Slurm out-of-memory error.",
    "our sbatch job terminated due to out of memory at iteration 1200",
])
def test_oom_kill_told_in_the_killers_words_is_killed_oom(line):
    v = _verdict(line)
    assert v.cls == "killed_oom", (line, v.summary, v.evidence)


@pytest.mark.parametrize("line", [
    # a condition, advice, a question: no kill happened
    "If your job gets OOM killed, raise --mem in the sbatch script.",
    "Why do my jobs get OOM killed?",
    # a general statement: a kind of process, no run of the reporter's
    "Pods get OOM killed when they exceed their memory limit.",
    "Jobs are often killed due to OOM on this cluster.",
    "When a job gets OOM killed, Slurm marks it OUT_OF_MEMORY.",
    # a GPU's OOM is no host kill
    "the process was killed due to CUDA OOM",
    # a denial
    "The job wasn't OOM killed, dmesg shows nothing.",
])
def test_oom_kill_mentions_read_as_before(line):
    v = _verdict(line)
    assert v.cls == "unknown", (line, v.summary, v.evidence)


def test_the_jobs_of_a_kind_stay_generic():
    # a definite determiner does not make a relative clause's kind the reporter's own ... but a plain plural does
    v = _verdict("Workers get killed due to OOM when the page cache fills up.")
    assert v.cls == "unknown", (v.summary, v.evidence)


# --- 2. a segfault told in Chinese -------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "训练到第300步出现了segfault，进程直接退出",
    "8卡跑到一半碰到 SIGSEGV，rank 5 的进程没了",
    "多卡训练时遇到了 SIGSEGV，rank 0 先挂掉",
    "跑了两个小时，报错：segfault",
    "训练中途，报错，segmentation fault (core dumped)...",
])
def test_segfault_told_in_chinese_is_segfault(line):
    v = _verdict(line)
    assert v.cls == "segfault", (line, v.summary, v.evidence)


@pytest.mark.parametrize("line", [
    "如果出现segmentation fault，可以先检查环境",      # a condition and advice
    "为什么会出现Segmentation fault？",                 # a question
    "出现segfault的原因一般是环境没配好",               # the cause, an explainer's
    "升级之后没有出现segmentation fault",               # a denial
    "### 出现segmentation fault怎么办",                 # a heading
    "通常出现segmentation fault是因为驱动版本不对",      # a frequency: a general statement
    "出现Segmentation fault (core dumped)的常见原因与排查",  # a guide's title, past the shell's "(core dumped)"
    '用户报告遇到了"Segmentation fault"错误。',           # a third person's run (zh_retold_topic)
])
def test_segfault_mentioned_in_chinese_reads_as_before(line):
    v = _verdict(line)
    assert v.cls == "unknown", (line, v.summary, v.evidence)
