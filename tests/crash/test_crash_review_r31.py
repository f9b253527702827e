"""Review R31 of crash batch 50's rules (docs/crash-classes.md, `killed_oom` and `cuda_oom` rows), mended.

1. slurmstepd's "Some of the step tasks have been OOM Killed" alone is always a retelling (Slurm prints it only after
   "Detected N oom_kill event(s)" on the same line, which ``_SLURM_OOM`` reads), so it is a told failure: decided last,
   after a program's exception or NCCL line, and never in a question, heading or explainer.
2. The host's OOM told in words needs a verb of the run meeting it (or the kill it ended with, or a title's recurrence);
   a bare noun phrase (docs, settings, tool text, guesses, denials, torch's FSDP warning, Chinese advice) is a mention.
3. The GPU's OOM told in Chinese goes through the same guards as the English rule, and Chinese questions, headings,
   guides, conditions, predictions, denials, counters and what the program caught and went on from are mentions.
4. The host row of the told table is decided last, after a told segfault or NCCL failure.
5. A recurrence before the words does not override a frequency or prevalence in the sentence.
6. 同时 and 时间 are no "when"; every match of the Chinese rule on a line is read.
"""
from __future__ import annotations

import re

import pytest

from moeconsole.runner.core.crash import classify

_SLURM_TOLD = "Some of the step tasks have been OOM Killed"
_CANCEL = "slurmstepd: error: *** JOB 4021 ON gpu-07 CANCELLED AT 2026-03-28T14:27:13 ***"
_TRACEBACK = ["Traceback (most recent call last):", '  File "/opt/train.py", line 3, in <module>',
              "    import flash_attn"]


def _cls(lines, code=1):
    return classify(code, lines if isinstance(lines, list) else [lines], steps_seen=300)


# --- 1: Slurm's second sentence alone is a told failure ---------------------------------------------------------


@pytest.mark.parametrize("later, cls", [
    (_TRACEBACK + ["ModuleNotFoundError: No module named 'flash_attn'"], "missing_dependency"),
    (["RuntimeError: CUDA error: an illegal memory access was encountered"], "cuda_fault"),
    (["[rank0]:[E328 14:27:13.072] [PG 0 Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
      "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600001 milliseconds before timing out."],
     "nccl_error"),
])
def test_a_retold_slurm_oom_kill_gives_way_to_a_later_program_line(later, cls):
    v = _cls([f"Earlier we got '{_SLURM_TOLD}' and raised --mem to 64G; that is solved.", "Now it fails with:"]
             + later)
    assert v.cls == cls, v.summary


@pytest.mark.parametrize("line", [
    f'Why does Slurm print "{_SLURM_TOLD}"?',
    f'The message "{_SLURM_TOLD}" means the job exceeded its --mem.',
    f"## {_SLURM_TOLD}",
    f"Q: {_SLURM_TOLD}. What does it mean?",
    f"{_SLURM_TOLD} usually means --mem is too low.",
])
def test_slurms_sentence_in_a_question_heading_or_explainer_is_no_oom_kill(line):
    assert _cls(line).cls != "killed_oom", line


@pytest.mark.parametrize("line", [
    f"{_SLURM_TOLD} - Custom reward_func",
    f"slurmstepd: error: {_SLURM_TOLD}.",
    f"Our PPO job died at step 300: '{_SLURM_TOLD}'.",
])
def test_slurms_sentence_retold_alone_still_is_killed_oom(line):
    v = _cls(line)
    assert v.cls == "killed_oom" and v.recovery == "restart", (line, v.summary)


def test_slurms_own_line_with_its_count_still_decides_before_an_exception():
    v = _cls([f"slurmstepd: error: Detected 1 oom_kill event in StepId=4021.0. {_SLURM_TOLD}."]
             + _TRACEBACK + ["ModuleNotFoundError: No module named 'flash_attn'"])
    assert v.cls == "killed_oom", v.summary


# --- 2: the host's OOM needs a verb -----------------------------------------------------------------------------


_HOST_MENTIONS = [
    "- **CPU OOM:** `killed`, with no traceback. The machine ran out of RAM.",
    "  - **torchvision:** decodes the whole clip into RAM, so a CPU OOM on long clips.",
    "CPU OOM happens when the dataset is loaded into RAM.",
    "The CPU OOM is caused by pinned memory.",
    "CPU OOM is exceptionally rare (CPU crates panic on allocation failure)",
    "VRAM OOM MUST be distinguished from host OOM",
    "The tool reports CPU OOM events in the dashboard.",
    "Added detection of host OOM to the monitor.",
    "Resolves CPU OOM during merging LoRA weights.",
    "Reduce CPU OOM risk by streaming the dataset",
    "RAM OOM protection enabled",
    "CPU OOM score adjustment: -1000",
    "sysctl vm.panic_on_oom=1 to panic on system OOM",
    "Probably a host OOM.",
    "I suspect a CPU OOM.",
    "We ruled out a host OOM.",
    "Check dmesg for host OOM.",
    "After upgrading, the CPU OOM is gone.",
    "GPUs sharing the same CPU memory, which risks CPU OOM. We recommend passing cpu_offload.",
    "Monitoring: host OOM events = 0",
    "如果出现 CPU OOM，请减少 num_workers",
    "为了避免 CPU OOM，建议关闭 pin_memory",
    "没有出现 CPU OOM",
    "可能是 CPU OOM 导致的",
    "会导致 CPU OOM（randperm(9B) ≈ 72 GB）",
]


@pytest.mark.parametrize("line", _HOST_MENTIONS)
def test_the_hosts_oom_named_without_a_verb_is_no_oom_kill(line):
    assert _cls(line).cls != "killed_oom", line


@pytest.mark.parametrize("line", _HOST_MENTIONS[:6] + _HOST_MENTIONS[-5:])
def test_a_host_oom_mention_does_not_outrank_slurms_plain_cancel(line):
    v = _cls([line, _CANCEL])
    assert v.cls == "job_cancelled", (line, v.summary)


def test_a_host_oom_mention_leaves_sigterm_unknown():
    assert _cls(["The tool reports CPU OOM events in the dashboard."], code=143).cls != "killed_oom"


@pytest.mark.parametrize("line", [
    "Frequent CPU OOM / Process Killed After Several Hundred Steps",
    "Recurring CPU out of memory during checkpoint save",
    "Our GRPO run hit a host OOM at step 812, no traceback.",
    "We keep getting a CPU OOM at step 300.",
    "The trainer crashed with a CPU OOM after 2 hours.",
    "Host OOM killed the trainer at step 40.",
    "训练到第300步时出现了 CPU OOM",
    "训练跑了两个小时后遇到 host OOM，进程被杀",
])
def test_the_hosts_oom_told_with_a_verb_still_is_killed_oom(line):
    v = _cls(line)
    assert v.cls == "killed_oom" and "host" in v.summary, (line, v.summary)


# --- 3: the GPU's OOM in Chinese goes through every guard --------------------------------------------------------


_ZH_GPU_MENTIONS = [
    "遇到显存不足怎么办？", "为什么会出现显存不足？", "## 出现显存不足怎么办", "FAQ：训练时报显存不足",
    "问题：出现显存溢出", "1. 出现显存溢出：减小batch size",
    "解决方法：遇到显存不足，减小batch size", "遇到显存溢出的问题，可以尝试开启梯度检查点", "修复了评估时出现显存不足的问题",
    "当出现显存不足的情况，程序会退出", "一旦出现显存不足，程序就会崩溃", "会出现显存不足", "容易出现显存不足",
    "很多人会遇到显存不足的问题", "出现显存不足的原因主要有以下几点",
    "这样就不会出现显存溢出了", "开启后不再出现显存不足", "改成 bf16 之后不报显存不足了",
    "报告显存溢出的次数: 0", "监控会报告显存不足事件",
    "出现显存不足，跳过该batch继续训练", "出现显存不足，已自动重试", "出现显存溢出, retrying with a smaller batch",
    "出现显存溢出, falling back to CPU",
]


@pytest.mark.parametrize("line", _ZH_GPU_MENTIONS)
def test_a_gpu_oom_only_mentioned_in_chinese_is_no_cuda_oom(line):
    assert _cls(line).cls != "cuda_oom", line


@pytest.mark.parametrize("later, cls", [
    ("Now our run dies with an NCCL timeout at step 20.", "nccl_error"),
    ("The trainer crashed with a segmentation fault while training.", "segfault"),
    ("Our job was killed by the OOM killer at step 300.", "killed_oom"),
])
def test_a_chinese_gpu_oom_mention_does_not_take_over_a_later_told_failure(later, cls):
    assert _cls(["参考：遇到显存不足怎么办？", later]).cls == cls


def test_a_chinese_gpu_oom_mention_does_not_outrank_slurms_plain_cancel():
    assert _cls(["参考：遇到显存不足怎么办？", _CANCEL]).cls == "job_cancelled"


# --- 4: the host row is decided last -----------------------------------------------------------------------------


@pytest.mark.parametrize("later, cls", [
    ("Now our run dies with an NCCL timeout at step 20.", "nccl_error"),
    ("Now the trainer crashed with a segmentation fault at step 20.", "segfault"),
])
def test_a_told_host_oom_gives_way_to_a_told_segfault_or_nccl_failure(later, cls):
    v = _cls(["We first hit a CPU OOM at step 100, so we added RAM.", later])
    assert v.cls == cls, v.summary


def test_a_segfault_told_beside_a_ruled_out_host_oom_is_a_segfault():
    v = _cls("The trainer crashed with a segmentation fault while training at step 40, so we ruled out a CPU OOM.")
    assert v.cls == "segfault", v.summary


# --- 5: a recurrence does not override a prevalence ---------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "Frequent CPU OOM is common with ZeRO-3 offload.",
    "Repeated CPU OOM typically indicates a memory leak in the dataloader.",
    "Troubleshooting: Frequent CPU OOM",
    "- Frequent CPU OOM: lower num_workers or disable pin_memory",
    "Frequent host OOM can be avoided by lowering num_workers.",
])
def test_a_recurrence_with_a_prevalence_or_advice_is_no_oom_kill(line):
    assert _cls(line).cls != "killed_oom", line


# --- 6: the Chinese "when" and every match ------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "训练到第300步出现显存不足，同时进程被杀",
    "出现显存不足的时间是第二个epoch",
    "如果不开梯度检查点就会报显存不足，开了之后第300步还是出现显存不足",
    "batch size 设置为 8 时出现显存不足",
])
def test_a_chinese_gpu_oom_report_is_a_cuda_oom(line):
    v = _cls(line)
    assert v.cls == "cuda_oom", (line, v.summary)


@pytest.mark.parametrize("line", ["训练大模型时经常会遇到显存不足的问题", "通常出现在显存不足时。",
                                  "如果 batch size 设置为 8 时出现显存不足，就减小它"])
def test_a_chinese_when_or_condition_still_is_a_mention(line):
    assert _cls(line).cls != "cuda_oom", line


@pytest.mark.parametrize("line", ["问题：训练到第300步出现显存溢出，进程退出", "2. 第二次训练到第300步出现显存溢出"])
def test_a_chinese_report_with_a_label_or_number_still_is_a_cuda_oom(line):
    assert _cls(line).cls == "cuda_oom", line


@pytest.mark.parametrize("line", ["Our job died: CPU OOM at step 812.", "host memory OOM at step 300",
                                  "system-memory OOM at step 300"])
def test_a_host_oom_after_a_death_or_at_a_step_is_killed_oom(line):
    assert _cls(line).cls == "killed_oom", line


def test_a_chinese_denial_with_again_is_no_cuda_oom():
    assert _cls("开启 gradient checkpointing 后就没有再报显存不足了").cls != "cuda_oom"


@pytest.mark.parametrize("piece", [
    "CPU OOM ", "we hit a CPU OOM, skipping ", "没有出现 CPU OOM ", "如果出现显存不足，", "出现显存不足时",
    "为什么出现显存不足？", "出现显存不足的问题，可以 ", "'Some of the step tasks have been OOM Killed' means ",
])
def test_the_told_oom_rules_read_a_long_line_in_its_length(monkeypatch, piece):
    """Every match of a line is read (item 6), at most crash._TOLD_OOM_WORDS_READ of them: the characters the rules'
    patterns scan on a 20 000-character line of refused mentions stay within a fixed multiple of it (counted)."""
    from moeconsole.runner.core import crash
    from tests.test_patterns_never_hang import _Counting

    seen: list[int] = []
    for name, value in list(vars(crash).items()):
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(crash, name, _Counting(value, seen))
    line = piece * (20_000 // len(piece))
    assert not (crash.host_oom_told(line) or crash.oom_told_on_gpu(line) or crash.slurm_oom_tasks_told(line))
    assert sum(seen) <= 128 * len(line), (sum(seen), len(line))


@pytest.mark.parametrize("line", ["开了梯度检查点还是会出现显存不足", "每次训练到第300步都会报显存不足"])
def test_a_chinese_runs_habit_is_no_prediction(line):
    assert _cls(line).cls == "cuda_oom", line
