"""Batch 54's rules (docs/crash-classes.md, "Public crash texts"), on variants the batch's texts did not show, and the
lines they must not decide on.

Item 1 of the batch, the limits batch 52 and review R39 left, read both ways:
- a Chinese condition closing the words' clause: ...的话 ("CUDA out of memory 报错的话，减小batch size"), and the
  "whenever" frame 当 ... 时 ("当看到CUDA out of memory报错时:", a LLaMA-Factory guide, 1189); a report's 时 alone
  ("出现 ... 时程序直接退出了") and a raised runtime message in the condition still decide;
- an English `Symptom:` label's own line is its writer's description: the runtime's bare words on it name the failure;
  the program's line decides wherever it stands, raised after an exception's name on the label's line (batch 52's
  template filled with a paste) or on the lines under a `Symptom` heading (878, 1040);
- a lesson's first person: "In this tutorial we hit a CUDA OOM", "Let's hit ...", "... on purpose"; a write-up's
  "In this post we hit ..." and a user who ran a tutorial still report.
And the families the batch's misses were: a Chinese enumeration of kinds ("OOM(内存不足)、CUDA out of memory"), and
Japanese prose's limits (a topic, a general statement, a condition, a dialogue's speaker) for the OOM's words, NCCL's
names and the socket's EADDRINUSE (1187, 1195)."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


def _cls(*lines: str) -> str:
    return classify(1, list(lines), steps_seen=10).cls


# --- item 1: a Chinese condition closing the words' clause ---------------------------------------------------------

@pytest.mark.parametrize("line", [
    "CUDA out of memory 报错的话，减小batch size",
    "训练时出现 CUDA out of memory 的话怎么办",
    "如果出现 CUDA out of memory 的话，可以减小 batch size",
    "出现 NCCL timeout 的话，把 NCCL_TIMEOUT 调大",
    "要是遇到 illegal memory access 的话，先设置 CUDA_LAUNCH_BLOCKING=1",
    "当看到CUDA out of memory报错时:",
    "当出现 CUDA out of memory 的时候，先检查 nvidia-smi",
])
def test_a_chinese_condition_closing_the_clause_is_no_report(line):
    assert _cls(line) == "unknown"


@pytest.mark.parametrize("line,cls", [
    # a report's when, the words said ("说的话", "这句话"), a later clause's 的话
    ("训练到第300步出现 CUDA out of memory 时程序直接退出了", "cuda_oom"),
    ("训练到第300步出现 CUDA out of memory，他说的话我没听懂", "cuda_oom"),
    ("训练到第300步出现 CUDA out of memory，这句话是什么意思", "cuda_oom"),
    ("第二个 epoch 出现了 CUDA out of memory，不行的话我就换卡", "cuda_oom"),
    # the runtime's raised message decides in any prose (batch 52), as "If you see RuntimeError: ..." does
    ("若出现 RuntimeError: CUDA error: an illegal memory access was encountered 的话，升级驱动", "cuda_fault"),
    ("当时训练到一半出现 CUDA out of memory，程序退出", "cuda_oom"),
])
def test_a_report_and_a_raised_message_still_decide(line, cls):
    assert _cls(line) == cls


# --- item 1: an English symptom label's own line ---------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "Symptom: CUDA out of memory when batch size is large",
    "**Symptom:** training crashes with CUDA out of memory after a few steps",
    "- Symptoms: CUDA out of memory during eval",
    "> Symptom: CUDA out of memory",
    # a fault's words: the label's colon is no runtime's
    "Symptoms: illegal memory access in the varlen kernel with long sequences",
])
def test_the_bare_words_on_a_symptom_labels_line_are_its_description(line):
    assert _cls(line) == "unknown"


@pytest.mark.parametrize("lines,cls", [
    (("Symptom: RuntimeError: CUDA error: an illegal memory access was encountered",), "cuda_fault"),
    (("Symptom: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
      "of 79.10 GiB of which 1.20 GiB is free.",), "cuda_oom"),
    (("Symptom:", "RuntimeError: CUDA error: an illegal memory access was encountered"), "cuda_fault"),
    (("Symptom: CUDA error: an illegal memory access was encountered",), "cuda_fault"),
    (("Symptom:", "an illegal memory access was encountered"), "cuda_fault"),
    # CUDA's own text for the fault on the label's line is the runtime's (review R49; was refused by batch 54)
    (("**Symptom:** an illegal memory access was encountered during backward",), "cuda_fault"),
    (("**Symptom**", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."), "cuda_oom"),
    # the label is the line's opening, not a word anywhere on it
    (("Training crashed at step 40 with CUDA out of memory; symptom: none before it",), "cuda_oom"),
])
def test_the_programs_line_on_or_under_the_label_decides(lines, cls):
    assert _cls(*lines) == cls


# --- item 1: a lesson's first person ---------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "In this tutorial we hit a CUDA OOM on purpose",
    "In this tutorial, we hit a CUDA OOM and read the allocator's message.",
    "In the following lesson we get a CUDA OOM with batch 512.",
    "Let's hit a CUDA OOM with batch 512 and see what torch prints.",
    "We hit a CUDA OOM deliberately to see what the allocator prints",
    "I ran into a CUDA OOM intentionally to demonstrate the memory snapshot",
])
def test_a_lessons_staged_oom_is_no_report(line):
    assert _cls(line) == "unknown"


@pytest.mark.parametrize("line", [
    "In this post, we hit a CUDA OOM at step 1200 on our 8xH100 node.",
    "When I run this tutorial's notebook I hit a CUDA OOM at step 30",
    "On our lab cluster we hit a CUDA OOM at step 1200",
    "Let me add that we hit a CUDA OOM at step 1200",
    "we hit a CUDA OOM at step 1200",
])
def test_a_write_up_or_a_user_of_a_tutorial_still_reports(line):
    assert _cls(line) == "cuda_oom"


# --- the batch's families: a Chinese enumeration of kinds -----------------------------------------------------------

@pytest.mark.parametrize("line", [
    "- 显存相关:OOM(内存不足)、CUDA out of memory",
    "常见错误有 CUDA out of memory、illegal memory access 等",
])
def test_an_item_of_a_chinese_enumeration_names_a_kind(line):
    assert _cls(line) == "unknown"


@pytest.mark.parametrize("line,cls", [
    ("训练时出现了 loss nan、CUDA out of memory", "cuda_oom"),
    ("第300步报错、CUDA out of memory，进程退出", "cuda_oom"),
])
def test_a_reports_list_of_what_it_met_decides(line, cls):
    assert _cls(line) == cls


# --- the batch's families: Japanese prose ---------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "今回は PyTorch の分散学習で誰もが一度は頭を抱える torch.distributed.DistBackendError についてですね。",
    "「おいおい、画面を見てみろよ。真っ赤な文字で DistBackendError って出てるぞ。」",
    "身に覚えのないポート衝突(Address already in use) 前のプロセスが居座っている時によく起こります。",
    "EADDRINUSE とは、ポートがすでに使われている状態です。",
    "CUDA out of memory が発生したら、バッチサイズを下げましょう。",
    "illegal memory access はカスタムカーネルで起きがちです。",
])
def test_japanese_prose_only_names_the_failure(line):
    assert _cls(line) == "unknown"


@pytest.mark.parametrize("line,cls", [
    ("学習中に DistBackendError が発生しました: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error",
     "nccl_error"),
    ("torchrun を起動すると Address already in use で止まりました", "port_in_use"),
    ("Address already in use が起動時に出ました", "port_in_use"),
    ("RuntimeError: The server socket has failed to listen on any local network address. port: 29500, "
     "useIpv6: 0, code: -98, name: EADDRINUSE, message: address already in use", "port_in_use"),
    ("「CUDA out of memory」というエラーが発生しました", "cuda_oom"),
    ("3エポック目で CUDA out of memory が出て学習が止まりました。", "cuda_oom"),
])
def test_a_japanese_report_and_the_programs_line_still_decide(line, cls):
    assert _cls(line) == cls
