"""Batch 76's families (tests/crash/public 1616-1635, held out).

Main read 19 of the 20 texts' classes right. The miss was one family, added to the rule that owns it:

1. An issue title whose subject is the model the reporter trains, named with its parameter count, met by the OOM with
   the GPUs named (1621, torchtitan #1789's "DeepSeek-V3-16B OOMs on 8 x H100 80GB HBM3", read as ``unknown``): the
   short name for torch's allocator's "CUDA out of memory. Tried to allocate ..." (c10/cuda/CUDACachingAllocator.cpp);
   ``crash._OOM_TOLD_RUN_SUBJECT`` reads a sized model's name (``crash._MODEL_SIZED_TITLE``) opening the line as it
   reads the run's noun there, through the told rules' one guard.
2. The run (or the sized model) as the subject with a condition put to the reader ("if you", "unless you") or the OOM
   explained as expected after the words in their sentence is advice or an explanation
   (``crash._RUN_SUBJECT_ADVICE_AFTER``): main read "The training OOMs on 8 A100 if you disable ..." as ``cuda_oom``.
3. A line of thousands of title tags ("[x] [x] ...") hung main's run-subject rule ("\\s*[:：-]?\\s*" let each tag's
   space go either way); the tags are now read once, atomically (``crash._RUN_SUBJECT_OPENS``).
The cases marked "new" fail on main's code; the refusals and the controls marked "as before" pass on both."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify
from tests.crash.hang_guard import classify_ends, long_line


def _cls(*lines: str, steps: int = 10) -> str:
    return classify(1, list(lines), steps_seen=steps).cls


@pytest.mark.parametrize("line", [       # new
    "DeepSeek-V3-16B OOMs on 8 x H100 80GB HBM3",
    "[Bug] Llama-3-70B crashes with CUDA OOM on 8 A100",
    "Qwen3-30B-A3B got OOM on 8x H800 with EP=8",
    "Mixtral-8x7B OOMed on 4 A100 80GB during the first step",
    "qwen2.5-7b-instruct hits an OOM on a single RTX 4090",
    "> Qwen3-235B-A22B OOMs on 16x H100",
])
def test_a_sized_model_opening_a_title_meets_the_oom_on_a_gpu(line):
    assert _cls(line, steps=0) == "cuda_oom"


def test_a_sized_model_title_with_the_gpu_on_the_next_line():     # new
    assert _cls("DeepSeek-V3-16B OOMs after 20 steps", "Hardware: 8x H100 80GB HBM3") == "cuda_oom"


@pytest.mark.parametrize("line", [       # as before: a plural or a kind, a condition, a hedge, a question, advice,
    "7B models OOM on 24GB GPUs",          # an explanation, a changelog, a setting, help text, the host, mid-line
    "Large models OOM on a single A100",
    "MoE OOMs on 8x H100 are common",
    "Llama-3-70B OOMs on 8 A100 if you disable activation checkpointing",
    "Llama-3-70B may OOM on 8 A100 without offload",
    "Does Llama-3-70B OOM on 8 A100?",
    "To keep Llama-3-70B from OOMing on 8 A100, enable FSDP.",
    "Llama-3-70B OOMs on 8 A100 because the optimizer states are not sharded, which is expected.",
    "- Fixed: Llama-3-70B OOMs on 8 A100 when resuming (#1234)",
    "max_model_len: 8192  # Llama-3-70B OOMs on 8 A100 above this",
    "  --offload   keep Llama-3-70B from OOMs on 8 A100",
    "Llama-3-70B OOMs on host RAM while loading shards",
    "When I train it, Llama-3-70B OOMs on 8 A100",
    "Llama-3-70B OOMs",
])
def test_a_sized_model_title_refusals_read_as_before(line):
    assert _cls(line, steps=0) == "unknown"


@pytest.mark.parametrize("line", [       # as before: the run's noun and the first person
    "Training got OOM at step 300 on 8x H100",
    "I got OOM on my H100",
])
def test_the_run_subject_controls_read_as_before(line):
    assert _cls(line, steps=0) == "cuda_oom"


@pytest.mark.parametrize("lead", ["Llama-3-70B", "DeepSeek-V3-16B OOMs", "[Bug] Qwen3-30B-A3B", "7b"])
@pytest.mark.parametrize("piece", ["-", "b", "7", ".", " ", "a", "B-", " OOMs", "(x) ", "[x] "])
def test_the_batch76_rule_never_hangs_on_a_long_run_behind_its_words(lead, piece):
    line = long_line(lead, piece)
    classify_ends([line, line + " OOMs on 8x H100", long_line("", piece) + " OOMs on 8x H100"],
                  f"{lead!r} + {piece!r}*N")


@pytest.mark.parametrize("line", [       # new: the run's noun under a condition put to the reader, or an expected OOM
    "The training OOMs on 8 A100 if you disable activation checkpointing",
    "Training OOMs on 8x H100 unless you shard the optimizer",
    "The job OOMs on 8 A100 because the optimizer states are not sharded, which is expected.",
])
def test_the_run_subject_under_advice_or_an_explanation_is_no_run(line):
    assert _cls(line, steps=0) == "unknown"
