"""Review R68 of crash batch 59: the reviewer's probes (each a real or realistic text batch 59's rules misread), taken
in whole, and the mends' own cases below them."""
from __future__ import annotations

import re
import time

import pytest

from moeconsole.runner.core import crash
from moeconsole.runner.core.crash import classify


def _cls(*lines: str, steps: int = 10) -> str:
    return classify(1, list(lines), steps_seen=steps).cls


# 1. _OOM_TOLD_VERB: "OOMs" as a noun, in a comment, a table cell, a comparison, a guide's title
@pytest.mark.parametrize("line", [
    # repo texts (find_string "OOMs on H100"): a docstring's comparison, a risk table, a code/config comment
    "    (vs 1023 keys × 32 MB ≈ 33 GB in the naive variant — which OOMs on H100).",
    "| seq_len=4096 OOMs on H100 | Blocks Phase 1 | Gradient checkpointing, reduce batch size |",
    "    batch_size: int = 2,  # 4 OOMs on H100",
    "micro_batch_size: 2  # 4 OOMs on H100",
    # the plural noun after a fix's or an improvement's word, a guide's title, "w/o"
    "Reduce OOMs on H100 with long context",
    "fewer OOMs on GB200 after enabling expandable segments",
    "How to stop OOMing on an RTX 3090",
    "Support training 405B on 16 nodes w/o OOMing on H100",
    # a paper's / README's comparison, a release note's known issue
    "Standard attention OOMs on the A100 at 16k sequence length, FlashAttention does not",
    "Known issues: Llama-3.1-405B OOMs on 8x H100 with TP=8; use TP=16.",
])
def test_oom_verb_outside_a_report_decides_nothing(line):
    assert _cls(line) == "unknown"


def test_a_runs_echoed_config_comment_does_not_make_its_crash_an_oom():
    # a launcher echoing its script (set -x) before a crash no rule reads
    assert _cls("+ MICRO_BS=2 # 4 OOMs on 8x H100", "+ torchrun --nproc_per_node 8 train.py",
                "wandb: Synced run-abc", steps=100) == "unknown"


# 2. _EXAMPLE_HEADING's new error kinds swallow a reporter's own paste under "Example error:"
_OWN = [
    "[rank3]:[E1206 18:44:16.994932383 ProcessGroupNCCL.cpp:607] [Rank 3] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=8, OpType=ALLTOALL, NumelIn=3150848, NumelOut=3150848, Timeout(ms)=600000) ran for "
    "600000 milliseconds before timing out.",
    "Fatal Python error: Segmentation fault",
    "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
    "CUDA error: an illegal memory access was encountered",
    "[Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::268435456 (256)MB",
    "srun: error: node-17: task 3: Out Of Memory",
]


@pytest.mark.parametrize("heading", ["Example error:", "**Example error:**", "Sample error log:", "An example error:"])
@pytest.mark.parametrize("own", _OWN)
def test_a_reporters_example_error_heading_over_their_own_lines_still_decides(heading, own):
    alone = _cls("The training crashes after ~2h on 4 nodes.", own)
    assert alone != "unknown"
    assert _cls("The training crashes after ~2h on 4 nodes.", heading, own) == alone


def test_a_scripts_sample_errors_heading_over_its_workers_lines_still_decides():
    # a launcher's summary: echo "Sample errors:"; grep ERROR worker logs | head -5 (the shape of a real CI script)
    assert _cls("Job failed on 2 of 16 workers.", "   Sample errors:", _OWN[0]) == "nccl_error"


# 3. _told_to_you: a "you" addressed to a person, not a scenario (each decided nccl_error before batch 59)
@pytest.mark.parametrize("line", [
    "As you see in the log below, rank 3 hit an NCCL timeout after 30 minutes.",
    "Like you said, the job hit an NCCL timeout once the dataset grew past 1M samples.",
    "@stas00 you asked for the logs: the job hit an NCCL timeout again at step 300.",
    "Same as you, the job hit an NCCL timeout at step 300.",
    "You're right, the job hit an NCCL timeout at step 300 again after the upgrade.",
    "Thanks, you were right: the job hit an NCCL timeout at step 300.",
    "Tried what you suggested, still hit NCCL timeout at step 300.",
    "Did what you said, same NCCL timeout after 30 min on rank 5.",
])
def test_an_nccl_timeout_told_to_an_addressee_still_decides(line):
    assert _cls(line) == "nccl_error"


# 4. 爆显存 as a noun: guides' titles, design notes, code comments
@pytest.mark.parametrize("line", [
    "解决爆显存问题的几种方法",
    "大模型微调爆显存的常见原因与解决方案",
    "一文搞懂爆显存",
    "减少爆显存的概率",
    "降低batch size可以解决爆显存",
    "关于爆显存",
    # repo texts (find_string "爆显存")
    " * 目的：**任何**离开本进程、发往 ComfyUI 的图，都不允许含有会打爆显存/显存带宽的取值。",
    "5. **DEP8 在 K3 上不可行**（状态池 ×8 爆显存）",
])
def test_vram_blown_as_a_noun_or_a_hypothesis_decides_nothing(line):
    assert _cls(line) == "unknown"


# 5. _NCCL_ELIDED: "every repetition bounded" still costs ~200x200 steps per NCCL word
def test_nccl_elided_costs_its_line_not_a_second_a_line():
    lines = [("[rank%d] NCCL ... " % i) * (4000 // 16) for i in range(20)]
    t = time.process_time()
    classify(1, lines, steps_seen=10)
    with_it = time.process_time() - t
    saved = crash._NCCL_ELIDED
    try:
        crash._NCCL_ELIDED = re.compile(r"(?!)")
        t = time.process_time()
        classify(1, lines, steps_seen=10)
        without = time.process_time() - t
    finally:
        crash._NCCL_ELIDED = saved
    assert with_it < 3 * without, (with_it, without)


# 6. the verb's spellings and the accelerators the slice added: reports refused
@pytest.mark.parametrize("line", [
    "My run OOM’d on the A100 at step 1200",          # the typographic apostrophe (GitHub/macOS autocorrect)
    "My run OOMd on the A100 at step 1200",
    "My run OOM-ed on the A100 at step 1200",
    "training OOMs on Gaudi2 at step 10",              # Gaudi, the runtime batch 59 added
    "training OOMs on the HPU at step 10",
])
def test_the_verbs_other_spellings_and_gaudi_decide(line):
    assert _cls(line, steps=0) == "cuda_oom"


# 7. the HPU's summary drops the size the bridge prints (NPU's and XPU's keep theirs)
def test_the_hpu_oom_summary_names_its_size():
    r = classify(1, ["RuntimeError: [Rank:3] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for "
                     "size::939524096 (896)MB"], steps_seen=10)
    assert "896" in r.summary, r.summary
