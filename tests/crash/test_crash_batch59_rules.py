"""Batch 59's families (tests/crash/public 1276-1295, LLM and MoE training stacks weighted to the rarer ones, held out).

1. Intel Gaudi's device memory exhausted: the Habana PyTorch bridge's device-memory module refuses an allocation,
   "RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::268435456 (256)MB", the words
   accelerate (utils/memory.py should_reduce_batch_size, "# HPU OOM"), auto-round and lm-eval catch as the HPU's OOM.
   Read as ``unknown`` before batch 59 (1281, 1282); now the HPU's OOM.
2. A GPU's OOM told with the short name as its verb, "OOMs", "OOMed", "OOMing", then the GPU after "on" (Megatron-
   Bridge's titles "Qwen3-30B-A3B fp8_mx pretrain OOMs with official defaults on 8x B300", 1276, 1277). Read as
   ``unknown`` before.
3. The same told in Chinese with 爆 as its own verb before 显存 ("单机8卡80G的A800爆显存", 1283). Read as ``unknown``.
4. A reference page's "Sample Error Messages:" heading over an error's text (openxla.org's E1000, 1287): an example,
   not the run's. Read as ``cuda_oom`` (XLA) before.
5. An NCCL timeout told in a scenario addressed to the reader ("After 3 days, you discover: ... triggered NCCL timeout
   on large all-reduce operations", a problem catalogue, 1292): the reader's imagined run. Read as ``nccl_error``.
Each rule's refusals and the reports it must keep deciding are below."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


def _verdict(*lines: str, steps: int = 10):
    return classify(1, list(lines), steps_seen=steps)


# --- 1. the Habana bridge's device OOM --------------------------------------------------------------------------------


@pytest.mark.parametrize("lines", [
    ["RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::268435456 (256)MB"],
    # behind a rank prefix, in a benchmark runner's summary, as an issue's title
    ["[rank3]: RuntimeError: [Rank:3] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::939524096 (896)MB"],
    ["\t* 1 x RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::268435456 (256)MB",
     "    \t| Traceback (most recent call last):"],
    ["RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::234881024 (224)MB #2",
     "### System Info"],
    # the bridge's message relayed by an engine's worker without torch's exception name
    ["(EngineCore pid=812) ERROR [core.py:710] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for "
     "size::1610612736 (1536)MB"],
])
def test_the_habana_bridges_device_allocation_failure_is_the_hpus_oom(lines):
    v = _verdict(*lines, steps=0)
    assert v.cls == "cuda_oom", v.summary
    assert v.summary.startswith("HPU out of memory"), v.summary


@pytest.mark.parametrize("lines", [
    # a library's list of the words it catches (accelerate's should_reduce_batch_size)
    ['        "FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed",  # HPU OOM'],
    ['    if "CUDA out of memory" in str(e) or "MODULE:PT_DEVMEM" in str(e):'],
    # prose naming the failure without the bridge's size
    ["| `--num-gpu-blocks-override 8192` | a 7-layer KV group tensor > 3.5 GB fails (`PT_DEVMEM Allocation failed`) |"],
    ["Gaudi's PT_DEVMEM module reports allocation failures when the graph does not fit."],
])
def test_the_bridges_words_without_its_report_decide_nothing(lines):
    assert _verdict(*lines).cls == "unknown"


# --- 2. "OOMs" as the verb, the GPU after "on" -------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "[bug] Qwen3-30B-A3B fp8_mx pretrain OOMs with official defaults on 8x B300, while bf16 and nvfp4 run successfully",
    "[bug] Nemotron-3-Super pretrain OOMs with CUDA Graphs on GB300 (NVFP4, EP=64)",
    "My run OOMed on the A100 at step 1200",
    "training keeps OOMing on my RTX 4090",
    "I tried batch 8 and it OOMed on both GPUs",
])
def test_a_gpus_oom_told_with_the_short_name_as_its_verb_decides(line):
    v = _verdict(line, steps=0)
    assert v.cls == "cuda_oom", v.summary


@pytest.mark.parametrize("line", [
    "Training often OOMs on small GPUs",                       # a frequency: a general statement
    "If it OOMs on the A100, lower the batch size",            # a condition
    "This PR fixes a bug where eval OOMed on H100",            # a fix
    "Why does it keep OOMing on the A100?",                    # a question
    "Maybe it OOMs on the A100",                               # a guess
    "The test checks that the job OOMs on the T4",             # a test's clause
    "It OOMed on the login node",                              # no GPU after "on": the host's memory
    "We used to get it OOMing on H100 before this patch",      # over
])
def test_the_verb_in_a_mention_decides_nothing(line):
    assert _verdict(line).cls == "unknown"


# --- 3. 爆显存 told in Chinese -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "应该还是没优化好，我也是这个问题单机8卡80G的A800爆显存，我使用了flashattn和DeepSpeed加速以及一些列参数优化都不行，等更新吧。",
    "训练到第300步就爆显存了",
    "A800爆显存了，求助",
])
def test_the_vram_blown_told_in_chinese_decides(line):
    v = _verdict(line, steps=0)
    assert v.cls == "cuda_oom", v.summary


@pytest.mark.parametrize("line", [
    "batch size 太大容易爆显存",                  # a general statement (容易)
    "开了梯度检查点就不会爆显存",                  # a denial
    "为了防止爆显存，建议开启梯度检查点",          # a way around, advice
    "爆显存怎么办？",                              # a question
    "## 爆显存",                                  # a heading
    "如果爆显存，可以减小batch size",              # a condition
    "这个模型很火爆显存占用也大",                  # 火爆 (popular) is no verb of the GPU's memory
    "爆显存的原因通常是batch size太大",            # its cause explained
])
def test_the_chinese_words_in_a_mention_decide_nothing(line):
    assert _verdict(line).cls == "unknown"


# --- 4. a reference page's sample of an error ---------------------------------------------------------------------------

_HBM = ("RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space hbm. Used 49.34G of "
        "32.00G hbm. Exceeded hbm capacity by 17.34G.")


@pytest.mark.parametrize("heading", ["Sample Error Messages:", "Sample error message:", "Example errors:",
                                     "**Sample error log:**"])
def test_an_error_under_a_sample_heading_is_an_example(heading):
    assert _verdict("Category: Compile Time: HBM OOM", heading, _HBM, "XLA Backends: TPU").cls == "unknown"


@pytest.mark.parametrize("lines", [
    [_HBM],
    ["Error messages:", _HBM],                 # a report's own heading over its paste
    ["Error message:", _HBM],
    ["The job died. Error log:", _HBM],
])
def test_the_same_error_under_a_reports_heading_decides(lines):
    v = _verdict(*lines)
    assert v.cls == "cuda_oom" and v.summary.startswith("XLA out of memory"), v.summary


# --- 5. a scenario told to the reader (the told NCCL timeout) ----------------------------------------------------------


@pytest.mark.parametrize("line", [
    "After 3 days, you discover: one node's InfiniBand cable had a slightly loose connection, causing intermittent "
    "10ms latency spikes that triggered NCCL timeout on large all-reduce operations.",
    "You start 4 nodes and the job hits an NCCL timeout after an hour.",
])
def test_an_nccl_timeout_in_a_scenario_told_to_the_reader_decides_nothing(line):
    assert _verdict(line).cls == "unknown"


@pytest.mark.parametrize("line", [
    "After 3 days we discovered the IB cable triggered NCCL timeout on all-reduce.",
    "Thank you, the job hit an NCCL timeout at step 300 again.",
    "The job hit an NCCL timeout at step 300.",
])
def test_the_same_told_of_the_writers_run_decides(line):
    assert _verdict(line).cls == "nccl_error"
