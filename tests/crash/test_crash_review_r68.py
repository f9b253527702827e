"""Review R68 of crash batch 59: the reviewer's probes (each a real or realistic text batch 59's rules misread), taken
in whole, and the mends' own cases below them."""
from __future__ import annotations

import random
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


# 5. _NCCL_ELIDED: "every repetition bounded" still costs ~200x200 steps per NCCL word (the mend: crash.nccl_elided,
# read from each elision once)
def test_nccl_elided_costs_its_line_not_a_second_a_line(monkeypatch):
    lines = [("[rank%d] NCCL ... " % i) * (4000 // 16) for i in range(20)]

    def cpu() -> float:
        best = float("inf")
        for _ in range(3):
            t = time.process_time()
            classify(1, lines, steps_seen=10)
            best = min(best, time.process_time() - t)
        return best

    with_it = cpu()
    monkeypatch.setattr(crash, "nccl_elided", lambda _text: False)
    without = cpu()
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


# --- the mends' own cases ----------------------------------------------------------------------------------------------

# 1. the verb as the reporter's run's: its own marks keep deciding; a noun, a comment, a table row never
@pytest.mark.parametrize("line", [
    "Our 8-node pretrain OOMs on H100 at step 40",
    "[BUG] Mixtral pretrain OOMs with EP=8 on 8x H200",
    "after the upgrade it OOMed on the H100 of rank 3",
    "We started the run yesterday and it OOMed on the A100 at iteration 900",
])
def test_the_verb_of_the_reporters_run_still_decides(line):
    assert _cls(line, steps=0) == "cuda_oom"


@pytest.mark.parametrize("line", [
    "We reduced OOMs on our H100s by 40% with expandable segments",       # a noun after a fix's verb, a run's marks
    "x = 4  // my run OOMs on the A100 at step 10",                        # a code comment's part of the line
    "| my run | OOMs on H100 at step 10 | yes |",                           # a table's row
    "the config which OOMs on H100 at step 10 is in examples/",            # a relative clause
])
def test_the_verb_as_a_noun_a_comment_or_a_cell_with_a_runs_marks_decides_nothing(line):
    assert _cls(line) == "unknown"


# 2. under a reference page's heading its sample stays an example; a program's line or a narrated run ends that
@pytest.mark.parametrize("own", _OWN)
def test_a_programs_own_line_under_an_example_error_heading_decides_without_narration(own):
    assert _cls("Example error:", own) == _cls(own) != "unknown"


def test_a_reporters_own_xla_oom_under_example_error_decides_after_their_narration():
    hbm = ("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 49.34G of "
           "32.00G hbm. Exceeded hbm capacity by 17.34G.")
    assert _cls("Category: Compile Time: HBM OOM", "Example error:", hbm) == "unknown"     # a reference page's
    assert _cls("Our TPU job crashed at step 40 on v5e.", "Example error:", hbm) == "cuda_oom"


# 3. the scenario told to the reader stays refused in its other tenses
@pytest.mark.parametrize("line", [
    "You launch 8 ranks, and one of them hits an NCCL timeout.",
    "Eventually you notice the job hit an NCCL timeout on rank 3.",
    "You'll see an NCCL timeout after 30 minutes.",
])
def test_the_readers_imagined_run_still_decides_nothing(line):
    assert _cls(line) == "unknown"


# 4. 爆显存: the report stays, the noun and the hypothesis go
@pytest.mark.parametrize("line", ["4卡H100跑到第2000步爆显存了", "我这边A100爆显存，batch size已经是1了",
                                  "开了梯度检查点还是会爆显存"])     # the run's habit (还是会), no prediction
def test_the_vram_blown_report_still_decides(line):
    assert _cls(line, steps=0) == "cuda_oom"


@pytest.mark.parametrize("line", ["避免爆显存的三个技巧", "长序列训练爆显存的风险很高", "这样做会爆显存"])
def test_more_nouns_and_hypotheses_of_the_vram_blown_decide_nothing(line):
    assert _cls(line) == "unknown"


# 5. the elision's rule keeps batch 59's regex's verdicts (the regex below, verbatim from crash.py at 2ad87876), on
# lines built of its parts at every distance around the 200-character reaches
_BATCH59_NCCL_ELIDED = re.compile(r"(?:ProcessGroupNCCL|NCCL|nccl)(?!\S{0,80} (?:INFO|WARN)\b)[^\n]{0,200}? \.\.\. "
                                  r"[^\n]{0,200}?(?:[Ee]rror|[Tt]imeout|timed out|[Ff]ailed|aborted)")


def _elided_lines() -> list[str]:
    rnd = random.Random(68)
    parts = ["NCCL", "nccl", "ProcessGroupNCCL", " ... ", "Error", "timed out", "Failed", "aborted", " INFO", " WARN",
             "NCCL INFO", "x" * 37, " ", "y" * 190, "z" * 9, "\n", "abc def "]
    lines = ["NCCL" + "a" * gap + " ... " + "b" * gap2 + "Error" for gap in (0, 199, 200, 201)
             for gap2 in (0, 199, 200, 201)]
    lines += ["".join(rnd.choice(parts) for _ in range(rnd.randint(2, 14))) for _ in range(3000)]
    return [line for line in lines if " ... " in line]


def test_the_elided_nccl_rule_keeps_the_regexs_verdicts():
    lines = _elided_lines()
    assert sum(bool(_BATCH59_NCCL_ELIDED.search(line)) for line in lines) > 100    # both verdicts are exercised
    assert sum(not _BATCH59_NCCL_ELIDED.search(line) for line in lines) > 100
    assert [line for line in lines if crash.nccl_elided(line) != bool(_BATCH59_NCCL_ELIDED.search(line))] == []


@pytest.mark.parametrize("tail", ["", "Error"])     # a failure word only past every elision's reach
@pytest.mark.parametrize("piece", ["NCCL ... ", "[rank1] NCCL ... Error ", "NCCL" * 3 + " ... ", " ... NCCL error"])
def test_the_elided_nccl_rule_costs_a_plain_scans_multiple(piece, tail):
    """Ratio-measured (CPU time, least of 3, against a plain scan of the same line with one literal pattern): the
    batch-59 regex took ~200x200 steps at each NCCL word; the rule reads each elision once."""
    line = piece * (64_000 // len(piece)) + tail
    plain = re.compile(r"NCCL")

    def cpu(fn) -> float:
        best = float("inf")
        for _ in range(3):
            t = time.process_time()
            for _ in range(5):
                fn(line)
            best = min(best, time.process_time() - t)
        return max(best, 1e-4)

    assert cpu(crash.nccl_elided) < 40 * cpu(plain.findall), piece


# 6/7. the told device names the runtime in the summary; the bridge's size is the HPU summary's
@pytest.mark.parametrize(("line", "device"), [
    ("training OOMs on Gaudi2 at step 10", "HPU"),
    ("my run OOMed on the Ascend 910B at step 3", "NPU"),
    ("my run OOMed on a TPU v5e at step 3", "XLA"),
    ("My run OOM’d on the A100 at step 1200", "GPU"),
])
def test_the_told_oom_summary_names_the_device_told(line, device):
    v = classify(1, [line], steps_seen=0)
    assert v.cls == "cuda_oom" and v.summary.startswith(f"{device} out of memory, as the report tells it"), v.summary


def test_the_hpu_summary_reads_the_size_the_bridge_prints():
    v = classify(1, ["[rank3]: RuntimeError: [Rank:3] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for "
                     "size::268435456 (256)MB"], steps_seen=10)
    assert v.summary == "HPU out of memory, tried to allocate 256 MB", v.summary
