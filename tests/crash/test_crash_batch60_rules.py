"""Batch 60's families (tests/crash/public 1296-1315, LLM and MoE training stacks weighted to the rarer ones, held out).

1. The shell's report of a job a signal ended, quoted in or glued to Chinese or Japanese prose with its core-dump
   note: a write-up's ``用户报告遇到了"Segmentation fault (core dumped)"错误`` and ``突然出现"Segmentation fault (core
   dumped)"`` (1304), a report's ``...之后出现：Segmentation fault (core dumped)，...``. Read as ``unknown`` before batch 60
   unless the shell's line also stood alone on a line; now the signal the words name (SIGSEGV, SIGBUS, SIGABRT).
2. Megatron-core's rerun state machine's ``Unexpected result nan`` kept without its ``Rank N, node X, device Y,
   iteration I:`` head (ROLL's issue title ``Unexpected result nan？``, 1302; a paste that kept ``RuntimeError:
   Unexpected result inf (message='loss is Inf')``). Read as ``unknown`` before; now a divergence.
Each rule's refusals and the reports it must keep deciding are below; every accepted case here fails on main's code."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify
from tests.crash.hang_guard import classify_ends, long_line


def _verdict(*lines: str, steps: int = 10):
    return classify(1, list(lines), steps_seen=steps)


# --- 1. the shell's signal line quoted in CJK prose ------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    # a write-up retelling a user's report (1304), in ASCII and in Chinese quotes
    '在使用TRL项目进行监督式微调(SFT)训练时,用户报告遇到了"Segmentation fault (core dumped)"错误。',
    '- 突然出现"Segmentation fault (core dumped)"',
    '多卡训练跑到第20步时报了“Segmentation fault (core dumped)”，进程直接退出',
    # a report that asks for help after its clause
    '训练一会儿就报"Segmentation fault (core dumped)"，求助',
    # glued after a full-width colon, prose going on after a full-width comma
    '运行python train.py之后出现：Segmentation fault (core dumped)，我们排查很久不清楚什么原因。',
    # Japanese: a report in the past tense
    '学習を開始すると「Segmentation fault (core dumped)」で落ちました。',
])
def test_the_shells_segfault_line_quoted_in_cjk_prose_is_a_segfault(line):
    v = _verdict(line, steps=0)
    assert v.cls == "segfault", (v.cls, v.summary)


def test_the_shells_bus_error_line_quoted_in_chinese_prose_is_a_bus_error():
    v = _verdict('DataLoader 开了8个worker后训练时出现"Bus error (core dumped)"，然后进程退出了', steps=3)
    assert v.cls == "bus_error", (v.cls, v.summary)


@pytest.mark.parametrize("line", [
    # a condition and its advice, a way around, a guide's list of common kinds, a Japanese kind named as a case
    '如果出现"Segmentation fault (core dumped)"，可以尝试减小 num_workers。',
    '为了避免出现"Segmentation fault (core dumped)"，建议使用 torchrun 启动。',
    '常见错误：Segmentation fault (core dumped)、Bus error (core dumped)、CUDA out of memory',
    '「Segmentation fault (core dumped)」というエラーが出る場合は、num_workers を減らしてください。',
    # a guide's title or an explainer: dealing with it before it, its causes or fixes after its closing quote
    '解决"Segmentation fault (core dumped)"问题的几种方法',
    '出现"Segmentation fault (core dumped)"的原因通常是内存越界',
    'Linux下出现Segmentation fault (core dumped)的常见原因与排查',
    '修复了"Segmentation fault (core dumped)"的问题',
    # the name without the shell's core-dump note is no line of the shell's; Killed never dumps core
    '用户报告遇到了"Segmentation fault"错误。',
    '训练时出现"Killed (core dumped)"',
    # English prose quoting it is no CJK prose (the shell's line at a line's start decides as before)
    'I also see "Segmentation fault (core dumped)" sometimes, maybe a driver issue?',
])
def test_the_shells_words_named_in_prose_decide_nothing(line):
    v = _verdict(line, steps=0)
    assert v.cls == "unknown", (v.cls, v.summary)


def test_the_shells_own_line_still_decides_on_its_own():
    assert _verdict("Segmentation fault (core dumped)", steps=0).cls == "segfault"


# --- 2. Megatron's non-finite result without the state machine's head ------------------------------------------------


@pytest.mark.parametrize("lines", [
    # ROLL's title (1302): a question mark after it, the report's Chinese words, then Ray-prefixed frames
    ["Unexpected result nan？",
     "我正常训练过程中发生nan情况，数据没有问题，如何解决呢？（重新启动resume，仍然在step205左右nan）",
     "(ActorWorker(actor_train-1) pid=18175) Traceback (most recent call last):"],
    # the raised message kept from the result on, as torch's exception line and alone
    ["RuntimeError: Unexpected result inf (message='loss is Inf')"],
    ["Unexpected result -inf (message='spiky loss')"],
    # the rerun mode's log line with a float result (its tensor form decided before)
    ["[rank3]: Unexpected result nan on rank 3 at iteration #1200 invocation #1 (message='loss is NaN')"],
    # its tensor form decided before; its summary now names the non-finite value too
    ["Unexpected result tensor(nan, device='cuda:0') on rank 0 at iteration #12 invocation #1 (message='loss is NaN')"],
])
def test_megatrons_non_finite_result_without_its_head_is_a_divergence(lines):
    v = _verdict(*lines, steps=205)
    assert v.cls == "divergence", (v.cls, v.summary)
    assert v.retryable is False
    # the summary names what Megatron found, not only that a validation failed
    assert "found a non-finite result" in v.summary, v.summary


@pytest.mark.parametrize("line", [
    # a hedge or a fix before it, an explanation after it, a Chinese condition with advice
    "If you see Unexpected result nan, lower the learning rate or enable gradient clipping.",
    "Fixed the Unexpected result nan with bf16 instead of fp16.",
    "Unexpected result nan means the loss or the grad norm stopped being finite.",
    "如果出现 Unexpected result nan，可以尝试降低学习率。",
    # another program's own check of its own values, and a finite result
    "Test 3 - FAIL: Unexpected result 0.5",
    "Unexpected result nancy_smith in column name",
])
def test_the_words_named_or_another_value_decide_nothing(line):
    v = _verdict(line, steps=205)
    assert v.cls == "unknown", (v.cls, v.summary)


# --- both rules read a long line in its length --------------------------------------------------------------------


@pytest.mark.parametrize("lead", ['用户报告遇到了"Segmentation fault (core dumped)"', "Unexpected result nan",
                                  "出现：Segmentation fault (core dumped)"])
@pytest.mark.parametrize("piece", ["出", "错误 ", "a", " ", "nan "])
def test_the_batch60_rules_never_hang_on_a_long_run_behind_their_words(lead, piece):
    line = long_line(lead, piece)
    classify_ends([line], f"{lead!r} + {piece!r}*N")
