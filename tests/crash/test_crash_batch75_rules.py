"""Batch 75's families (tests/crash/public 1596-1615, held out).

Main read 16 of the 20 texts' classes right. Three of the four misses were three families, each added to the rule that
owns it; the fourth (1609, a host OOM told only by a size of memory beside the GPUs) is left, see docs/crash-classes.md:

1. DeepSpeed's launcher line retyped with its "=" dropped or unspaced (1599, OpenRLHF #841's title "Sigkill, process
   exits with return code -9", read as ``unknown``): the launcher (deepspeed/launcher/launch.py l.317-325, 0.16.3)
   prints ``f"{cmd} exits with return code = {last_return_code}"``; ``crash._SIG_TEXT``'s ``rcneg`` reads the retyped
   forms, with the status's limits (``_status_mentioned``).
2. A Chinese guide's hedged prediction heading the program's line (1608, "当使用PyTorch进行分布式训练时,可能会遇到以下错误:"
   over "NCCL error: unhandled system error, NCCL version 2.4.8", read as ``nccl_error``): ``crash.zh_sample_predicted``
   lets the topic's words stand before 可能会 when 以下/如下 announce the example.
3. The GPU's memory running out as a line's last clause after a clause of the run's work (1610, verl #2865's title
   "4机8卡 H100 80GB，跑QWEN3-30B-A3B GRPO示例训练，显存溢出", read as ``unknown``): ``crash._OOM_TOLD_CLAUSE_ZH`` in
   ``_oom_told_on_gpu_zh``.
The cases marked "new" fail on main's code; the refusals and the controls marked "as before" pass on both."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify
from tests.crash.hang_guard import classify_ends, long_line


def _cls(*lines: str, steps: int = 10) -> str:
    return classify(1, list(lines), steps_seen=steps).cls


# --- 1. DeepSpeed's launcher line retyped -------------------------------------------------------------------------


@pytest.mark.parametrize("line", [       # new
    "Sigkill, process exits with return code -9",
    "[ERROR] the launcher exits with return code=-9",
    "Training dies: train.py exits with return code -9 after 2 hours",
    "rank 3 exits with return code= -9",
])
def test_the_launcher_line_retyped_is_a_sigkill(line):
    assert _cls(line) == "killed_oom"


def test_the_launcher_line_retyped_with_a_segv_is_a_segfault():     # new
    assert _cls("process exits with return code -11") == "segfault"


@pytest.mark.parametrize("line", [       # as before: a hedge, an explanation, a fix, a question
    "If the launcher exits with return code -9, lower the batch size.",
    "exits with return code -7 means /dev/shm is full",
    "Fixed a hang where the launcher exits with return code -9",
    "Why does it exit with return code -9?",
    "the script exits with return code 9",
])
def test_the_launcher_line_retyped_refusals_read_as_before(line):
    assert _cls(line) == "unknown"


def test_the_launcher_line_as_printed_reads_as_before():     # as before
    line = ("[2023-04-14 13:11:27,885] [ERROR] [launch.py:434:sigkill_handler] ['/usr/bin/python3', '-u', 'main.py'] "
            "exits with return code = -9")
    assert _cls(line) == "killed_oom"


# --- 2. a Chinese guide's hedged prediction heading the program's line --------------------------------------------


@pytest.mark.parametrize("lines", [       # new
    ("当使用PyTorch进行分布式训练时,可能会遇到以下错误:", "NCCL error: unhandled system error, NCCL version 2.4.8"),
    ("在多机训练中可能会看到如下报错：",
     "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error, "
     "NCCL version 2.19.3"),
    ("训练时可能会遇到以下错误：", "NCCL error: unhandled system error, NCCL version 2.4.8"),
])
def test_a_hedged_prediction_heads_an_example(lines):
    assert _cls(*lines) == "unknown"


@pytest.mark.parametrize("lines", [       # as before: a count or a size, the first person, no hedge, no announced example
    ("使用8卡训练时可能会遇到以下错误：", "NCCL error: unhandled system error, NCCL version 2.4.8"),
    ("我训练时可能会遇到以下错误：", "NCCL error: unhandled system error, NCCL version 2.4.8"),
    ("训练时会报以下错误：", "NCCL error: unhandled system error, NCCL version 2.4.8"),
    ("训练时可能会报错：", "NCCL error: unhandled system error, NCCL version 2.4.8"),
    # a program's own prefix under the heading ends the example
    ("当使用PyTorch进行分布式训练时,可能会遇到以下错误:",
     "[rank3]: RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled "
     "system error, NCCL version 2.19.3"),
])
def test_a_hedged_prediction_refusals_read_as_before(lines):
    assert _cls(*lines) == "nccl_error"


# --- 3. the GPU's memory running out as a line's last clause -------------------------------------------------------


@pytest.mark.parametrize("line", [       # new
    "4机8卡 H100 80GB，跑QWEN3-30B-A3B GRPO示例训练，显存溢出",
    "Qwen2.5-72B LoRA 微调，显存不足",
    "8卡A100跑DPO训练，显存爆了",
    "单机8卡训练，CUDA显存不足。",
    "训练中，显存溢出",
])
def test_the_gpu_memory_as_the_last_clause_is_told(line):
    assert _cls(line) == "cuda_oom"


@pytest.mark.parametrize("line", [       # as before: a condition, a question, a topic, a heading, the host, no run, a fix
    "如果跑QWEN3训练，显存溢出",
    "为什么训练Qwen3，显存溢出",
    "大模型训练，显存溢出怎么办",
    "## 训练大模型，显存溢出",
    "8卡A100跑DPO训练，内存不足",
    "4机8卡 H100 80GB，显存溢出",
    "降低batch size训练，避免显存溢出",
    "训练，显存溢出的原因",
])
def test_the_gpu_memory_as_the_last_clause_refusals_read_as_before(line):
    assert _cls(line) == "unknown"


@pytest.mark.parametrize("lead", ["process exits with return code", "训练时可能会遇到以下", "跑训练，", "训练，显存"])
@pytest.mark.parametrize("piece", ["= ", " -", "以下", "可能会", "，", "训练", "显存溢出，", "a", " "])
def test_the_batch75_rules_never_hang_on_a_long_run_behind_their_words(lead, piece):
    line = long_line(lead, piece)
    classify_ends([line + "：", "NCCL error: unhandled system error", line + "，显存溢出"], f"{lead!r} + {piece!r}*N")
