"""Batch 74's families (tests/crash/public 1576-1595, held out) and the items batch 73 left.

Main read 15 of the 20 texts' classes right. The five misses were five families, each added to the rule that owns it:

1. A GPU's count glued to its model's name (1584, prime-rl #950's title "OOM with 8B on 8xH100s and low batch +
   rollouts", read as ``unknown``): ``crash._GPU_NAMED_ANY_CASE`` reads the name after "8x".
2. A question in the sentence after one that closes on a number (1582, rLLM #182, "I still encounter a CUDA OOM error
   when max_turns is greater than 2. Is there a way ...?", read as ``unknown``): ``crash._ASK_OTHER_SENTENCE`` in
   ``_general_statement``.
3. A verb after "but" sharing its sentence's first-person subject (1586, RRHF #20, "Now I'm using 8 A100 80G ..., but
   got CUDA OOM problem.", read as ``unknown``): ``crash._OOM_TOLD_BUT_BEFORE`` in ``_oom_told_own``.
4. An NCCL timeout in Chinese as a list item's bold label (1591, an answer page's "4. **NCCL 超时错误**:", read as
   ``nccl_error``): ``crash._zh_label_only`` in ``_nccl_timeout_told_zh``.
5. The bare short name told by the reporter, the GPU named only on the next line (1587, unsloth #1624, "I'm getting
   OOMs after training for ~120+ steps, ...?" over "... an A6000 (48gb).", read as ``unknown``): ``crash.oom_told_bare``
   and the scan; this also closes batch 73's two items (a title whose GPU is on the next line; ``OOM 问题`` with the card
   named in another sentence).
The cases marked "new" fail on main's code; the refusals and the controls marked "as before" pass on both."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify
from tests.crash.hang_guard import classify_ends, long_line


def _cls(*lines: str, steps: int = 10) -> str:
    return classify(1, list(lines), steps_seen=steps).cls


# --- 1. a GPU's count glued to its name ----------------------------------------------------------------------------


@pytest.mark.parametrize("line", [       # new
    "OOM with 8B on 8xH100s and low batch + rollouts",
    "OOM at step 40 on 8xA100 with ZeRO-3",
    "[Bug] OOM when training Qwen3-30B-A3B on 4×H800",    # as before (a space-free × was read already)
    "OOM during rollout on 8xB200",
])
def test_a_gpu_count_glued_to_its_name_names_the_gpu(line):
    assert _cls(line) == "cuda_oom"


@pytest.mark.parametrize("line", [       # refusals, as before
    "OOM with 8B on 8xH100s is common",
    "OOM with 8B on 8xH100s: reduce the micro batch",
    "OOM with 8B on 8xH100s and 2 TB of host RAM",
    "How to avoid OOM with 8B on 8xH100s",
    "We ran a 8xH100 job and it finished fine",
])
def test_a_glued_count_refusals_read_as_before(line):
    assert _cls(line) == "unknown"


# --- 2. a question after a sentence that closes on a number ---------------------------------------------------------


@pytest.mark.parametrize("line", [       # new
    "With my setup on 64 A100 80 GB GPUs, I still encounter a CUDA OOM error when max_turns is greater than 2. "
    "Is there a way to train with 4 turns?",
    "I keep getting CUDA OOM at step 300 with batch 8. Any idea?",
    "We hit CUDA OOM when tp is 2. Should we raise it?",
])
def test_a_question_after_a_numbers_sentence_is_another_sentence(line):
    assert _cls(line) == "cuda_oom"


@pytest.mark.parametrize("line", [       # refusals, as before
    "Do I still encounter a CUDA OOM error when max_turns is greater than 2?",
    "Why do we get CUDA OOM with batch 2?",
    "Will I get CUDA OOM on step 2 if I use batch 64?",
])
def test_a_question_holding_the_words_stays_a_question(line):
    assert _cls(line) == "unknown"


# --- 3. a but-clause sharing the sentence's first-person subject ---------------------------------------------------


@pytest.mark.parametrize("line", [       # new
    "Got it! Now I'm using 8 A100 80G to finetune Alpaca-7B with the HH provided pairs, but got CUDA OOM problem.",
    "I tried batch 8 with ZeRO-3, but got CUDA OOM.",
    "We lowered the micro batch, but still hit CUDA OOM at step 40.",
])
def test_a_but_clause_shares_the_first_person(line):
    assert _cls(line) == "cuda_oom"


@pytest.mark.parametrize("line", [       # refusals, as before
    "They tried batch 8, but got CUDA OOM.",
    "If you use batch 8 but get CUDA OOM, lower it.",
    "We could try batch 8, but might get CUDA OOM.",
    "I tried batch 8, but did not get CUDA OOM.",
    'He wrote "I tried batch 8, but got CUDA OOM" in the old thread.',
])
def test_a_but_clause_refusals_read_as_before(line):
    assert _cls(line) == "unknown"


# --- 4. an NCCL timeout in Chinese as a label --------------------------------------------------------------------


@pytest.mark.parametrize("line", [       # refusals, new
    "4. **NCCL 超时错误**:",
    "### NCCL 超时",
    "- **NCCL通信超时**：",
])
def test_a_chinese_nccl_timeout_label_is_no_report(line):
    assert _cls(line) == "unknown"


@pytest.mark.parametrize("line", [       # as before
    "训练到第300步出现了NCCL超时，进程退出",
    "4. 训练时出现 NCCL 超时，所有进程退出",
    "**训练出现NCCL超时，任务失败**",
])
def test_a_chinese_nccl_timeout_told_still_reads(line):
    assert _cls(line) == "nccl_error"


# --- 5. a bare OOM whose GPU is named on the next line or in the title's next sentence -------------------------


@pytest.mark.parametrize("lines", [       # new
    ("@dev I'm getting OOMs after training for ~120+ steps, any ideas on what might cause that?",
     "I'm at 0.32 gpu_memory_utilization with 4096 max_completion_length on a 7b model and an A6000 (48gb)."),
    ("OOM with 8B and low batch + rollouts", "8x H100 80GB, 4 for train and 4 for inference"),
    ("I am hitting OOM after 20 steps.", "Setup: 8x A100 80GB."),
    ("OOM 问题", "显卡是A100 40G，8卡"),
    ("OOM 问题。 我的显卡是A100 40G",),
    ("OOM at step 300. 8x H100 80GB.",),
])
def test_a_bare_oom_with_the_gpu_named_next(lines):
    assert _cls(*lines) == "cuda_oom"


@pytest.mark.parametrize("lines", [       # refusals, as before
    ("OOM with 8B and low batch", "Our nodes have 2 TB of host RAM and 8 H100"),
    ("OOM with 8B is common", "8x H100"),
    ("If you get OOM after 20 steps,", "reduce the batch on your A100."),
    ("I am hitting OOM after 20 steps.", "The node has 8 GPUs and 512 GB RAM."),
    ('He said "I am hitting OOM".', "8x A100"),
    ("OOM 问题怎么解决？ 显卡是A100",),
    ("OOM 问题。 内存是512G，显卡是A100",),
    ("OOM 问题", "内存512G"),
    ("OOM at step 300 is common. 8x H100.",),
])
def test_a_bare_oom_refusals_read_as_before(lines):
    assert _cls(*lines) == "unknown"


@pytest.mark.parametrize("lead", ["OOM with ", "I am hitting OOM ", "4. **NCCL 超时", "I tried, but got CUDA OOM ",
                                  "I got CUDA OOM when tp is 2. "])
@pytest.mark.parametrize("piece", ["8xH100 ", "but ", "**", "2. ", "I ", "a", " ", "OOM 问题。 "])
def test_the_batch74_rules_never_hang_on_a_long_run_behind_their_words(lead, piece):
    line = long_line(lead, piece)
    classify_ends([line, "8x H100"], f"{lead!r} + {piece!r}*N")
