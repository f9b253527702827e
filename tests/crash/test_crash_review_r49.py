"""Review R49 of crash batch 54: the batch's prose rules refused real reports. Each rule is now bound to what makes
the words no report (docs/crash-classes.md, the cuda_oom row's "reviewed (R49)"), read on the reviewer's inputs
(/tmp/review-r49/c*.json) both ways.

1. an English `Symptom:` label refuses only the bare words on its line: torch's full OOM message with its numbers and
   CUDA's own fault text on it decide (crash._oom_mentioned, crash._fault_mentioned);
2. a lesson's staged run is the failure's own verb's: the lesson's "we" or "let's" right before it, "on purpose" /
   "deliberately" right after the words (crash._told_staged);
3. a Chinese 的话 (if) closes the words' own predicate, not a later clause a space sets off (crash._zh_if_after);
4. 同时/超时 hold no 时, and a 当 frame closed before the words is a report's when;
5. a Chinese list after a report's colon or verb is the report's, and the told NCCL timeout reads the same list
   (crash._zh_listed, one owner);
6. a Japanese frequency, a past narrative after たら, とは別に and a quoted report in the past are reports;
7. the Japanese conditions a guide writes (出たら, になったら, 出たときは, の場合は, 表示されたら) and "X はよくある
   エラーです" are mentions.
And the label: 1189 (a write-up's `当...时，系统会报出"CUDA out of memory"`) is a general case."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


def _cls(*lines: str) -> str:
    return classify(1, list(lines), steps_seen=10).cls


# --- 1: the Symptom label ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line,cls", [
    ("Symptom: job dies at step 1200, log says CUDA out of memory. Tried to allocate 1.50 GiB (GPU 3; 79.15 GiB total "
     "capacity; 77.02 GiB already allocated; 1.20 GiB free)", "cuda_oom"),
    ("Symptom: after 2h the job dies: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 3 has a total capacity of "
     "79.15 GiB of which 512.00 MiB is free.", "cuda_oom"),
    ("**Symptom:** `CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which "
     "1.20 GiB is free.`", "cuda_oom"),
    ("Symptom: an illegal memory access was encountered", "cuda_fault"),
    ("Symptom: Training crashes at step 1200 on rank 3 with an illegal memory access was encountered", "cuda_fault"),
    ("Symptoms: unspecified launch failure at step 40", "cuda_fault"),
])
def test_the_runtimes_own_message_on_a_symptom_label_decides(line, cls):
    assert _cls(line) == cls


@pytest.mark.parametrize("line", [
    "Symptom: CUDA out of memory",
    "Symptom: CUDA out of memory when batch size is large",
    "Symptoms: illegal memory access in the varlen kernel with long sequences",
])
def test_the_bare_words_on_a_symptom_label_stay_its_description(line):
    assert _cls(line) == "unknown"


# --- 2: a lesson's staged run ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("line,cls", [
    ("I get a CUDA OOM at step 30 even though I deliberately set the batch size to 1.", "cuda_oom"),
    ("We hit a CUDA OOM at step 1200 although I intentionally left 10 GB free on each GPU.", "cuda_oom"),
    ("I hit a CUDA OOM on rank 3 with the attached minimal repro to demonstrate it.", "cuda_oom"),
    ("I keep getting CUDA OOM with the script below, which I trimmed down to demonstrate the leak.", "cuda_oom"),
    ("In this exercise I keep getting CUDA OOM at step 30, what am I doing wrong", "cuda_oom"),
    ("In this tutorial's notebook, I hit a CUDA OOM at step 30 on my 4090.", "cuda_oom"),
    ("In this workshop I got out of memory on the GPU at step 3", "cuda_oom"),
    ("Setting batch 1 didn't let us finish: we hit a CUDA OOM at step 1200 on rank 3", "cuda_oom"),
    ("I'm new to this, let's say I'm a beginner: I get a CUDA OOM at step 30", "cuda_oom"),
    ("i got out of memory on my rtx 5090 deliberately testing the max batch size", "cuda_oom"),
    ("The run crashed with an illegal memory access at step 500 even though I deliberately disabled the custom kernel",
     "cuda_fault"),
    ("Training fails with an illegal memory access was encountered at step 500; I deliberately disabled flash-attn to "
     "check.", "cuda_fault"),
])
def test_a_staging_word_not_bound_to_the_failure_is_a_report(line, cls):
    assert _cls(line) == cls


@pytest.mark.parametrize("line", [
    "In this tutorial, we hit a CUDA OOM and read the allocator's message.",
    "Let's hit a CUDA OOM with batch 512 and see what torch prints.",
    "We hit a CUDA OOM at step 30 on purpose.",
    "We hit a CUDA OOM deliberately to see what the allocator prints",
    "Let us trigger an illegal memory access and read CUDA_LAUNCH_BLOCKING's trace.",
])
def test_a_lessons_staged_failure_stays_no_report(line):
    assert _cls(line) == "unknown"


# --- 3 and 4: Chinese conditions ------------------------------------------------------------------------------------

@pytest.mark.parametrize("line,cls", [
    ("多机训练出现 ncclSystemError 单机的话没问题", "nccl_error"),
    ("8卡训练出现 CUDA out of memory 单卡的话正常", "cuda_oom"),
    ("用 deepspeed zero3 出现 CUDA out of memory 用 zero2 的话反而正常", "cuda_oom"),
    ("训练到第 300 步出现 CUDA out of memory 不行的话我只能换卡了", "cuda_oom"),
    ("我这边跑的时候出现 illegal memory access 关掉 flash attn 的话就好了", "cuda_fault"),
    ("出现了 NCCL timeout 单机的话正常", "nccl_error"),
    ("训练出现显存不足 单卡的话正常", "cuda_oom"),
    ("8卡训练 Address already in use 单机的话没问题", "port_in_use"),
    ("training exited with code -9 单卡的话正常", "killed_oom"),
    ("CUDA out of memory单卡的话正常，8卡就报错", "cuda_oom"),
    # 4: 同时/超时 hold no 时; a 当 frame closed before the words; a 时 running on into what the run did
    ("当我用8卡训练时出现 CUDA out of memory 同时 NCCL 也报错", "cuda_oom"),
    ("当我把 seq_len 调到 8192 后出现 CUDA out of memory 时进程直接挂掉", "cuda_oom"),
    ("当我用8卡训练时还是会出现 CUDA out of memory", "cuda_oom"),
])
def test_a_later_clauses_condition_is_no_condition_of_the_words(line, cls):
    assert _cls(line) == cls


@pytest.mark.parametrize("line", [
    "CUDA out of memory 报错的话，减小batch size",
    "CUDA out of memory报错的话，减小batch size",
    "出现显存不足的话，减小 batch size",
    "如果出现 CUDA out of memory 的话，可以减小 batch size",
    "当看到CUDA out of memory报错时:",
    "当出现 NCCL 超时 的时候，先检查网络",
    # label 1189's line: a write-up's "whenever ..., the system will report" (with 如果 it read unknown already)
    '当使用Colab的Tesla T4显卡进行模型微调时,系统会报出"CUDA out of memory"错误。',
    "在项目中进行模型微调时,许多用户遇到了CUDA内存不足的问题。",
])
def test_the_words_own_condition_stays_a_mention(line):
    assert _cls(line) == "unknown"


# --- 5: a Chinese list -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line,cls", [
    ("训练中遇到两个问题：CUDA out of memory、illegal memory access", "cuda_fault"),
    ("多机训练时报错：ncclSystemError、进程退出", "nccl_error"),
    ("torchrun 启动报错：Address already in use、换端口也不行", "port_in_use"),
    ("训练到第500步报错：CUDA out of memory、进程被杀", "cuda_oom"),
    ("现象：CUDA out of memory、训练中断", "cuda_oom"),
    ("第300步的时候 CUDA out of memory、程序直接退出了", "cuda_oom"),
    ("日志里有 CUDA out of memory、NCCL watchdog timeout 两种报错", "cuda_oom"),
])
def test_a_list_a_report_tells_decides(line, cls):
    assert _cls(line) == cls


@pytest.mark.parametrize("line", [
    "常见错误：NCCL timeout、CUDA out of memory",
    "常见报错：CUDA out of memory、NCCL timeout",
    "- 显存相关:OOM(内存不足)、CUDA out of memory",
])
def test_a_guides_list_of_kinds_names_every_item(line):
    # one owner: the told NCCL timeout's item is no report when the OOM's item beside it is none
    assert _cls(line) == "unknown"


# --- 6 and 7: Japanese prose -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("line,cls", [
    ("学習中に CUDA out of memory がよく発生します。どうすればいいですか", "cuda_oom"),
    ("最近 CUDA out of memory で落ちることが多いです", "cuda_oom"),
    ("8GPU で学習すると ncclSystemError がよく出ます", "nccl_error"),
    ("昨日 torchrun で Address already in use がよく出ます", "port_in_use"),
    ("3エポック目で CUDA out of memory が発生したら学習が止まりました。", "cuda_oom"),
    ("学習中に CUDA out of memory とは別に NCCL のエラーも出ています", "cuda_oom"),
    ("「学習を始めました。3 エポック目で CUDA out of memory が出て止まりました」", "cuda_oom"),
    ("Address already in use が起動時に出ました", "port_in_use"),
])
def test_a_japanese_report_decides(line, cls):
    assert _cls(line) == cls


@pytest.mark.parametrize("line", [
    "CUDA out of memory が出たら batch size を下げてください。",
    "CUDA out of memory になったら、まず batch size を下げましょう。",
    "CUDA out of memory が出たときは gradient checkpointing を有効にしましょう。",
    "CUDA out of memory の場合は batch size を下げます。",
    "CUDA out of memory はよくあるエラーです。",
    "CUDA out of memory が表示されたら、以下を試してください。",
    "Address already in use が出たら MASTER_PORT を変えてください",
    "身に覚えのないポート衝突(Address already in use) 前のプロセスが居座っている時によく起こります。",
    "「おいおい、画面を見てみろよ。真っ赤な文字で DistBackendError って出てるぞ。」",
])
def test_a_japanese_guides_mention_names_no_failure(line):
    assert _cls(line) == "unknown"
