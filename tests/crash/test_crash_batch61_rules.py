"""Batch 61's families (tests/crash/public 1316-1335, LLM and MoE training stacks, held out).

1. Megatron-core's refusal of the parallel layout without the ``initialize_model_parallel`` frame under it: slime's
   issue quoting ``RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)``
   under a prose ``report "File ".../parallel_state.py", line 780, in initialize_model_parallel`` (1327), NeMo's title
   ``Help! Wrong calculations of ...? RuntimeError: decoder world_size (4) is not divisible by ...`` with the frames cut
   before Megatron's (1328). Read as ``unknown`` before batch 61 (the rule asked for the innermost frame); now the
   words only megatron/core/parallel_state.py prints decide ``config_error`` on their own, after the exception's name,
   at a line's start or after a report's words; main's bare ``world_size (N) is not divisible by M`` and the
   assertions still need the frame.
Each rule's refusals and the reports it must keep deciding are below; every accepted case here fails on main's code."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


def _verdict(*lines: str, steps: int = 0, attempt: int | None = None):
    return classify(1, list(lines), steps_seen=steps, attempt=attempt)


# --- 1. Megatron-core's own words for a refused layout, without its frame --------------------------------------------


@pytest.mark.parametrize("lines", [
    # slime (1327): the frame retold in prose, the exception line after it with the quote that closes the prose
    ['report "File "/root/Megatron-LM/megatron/core/parallel_state.py", line 780, in initialize_model_parallel',
     "    raise RuntimeError(",
     'RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)"'],
    # the exception line alone, each wording parallel_state.py has printed (main, core_r0.11 and its vendored copies,
    # core_r0.8, a fork's), and RankGenerator's (core_r0.11's f-strings joined with no space)
    ["RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)"],
    ["RuntimeError: decoder world_size (4) is not divisible by expert_tensor_model_pipeline_parallel size (8)"],
    ["RuntimeError: world_size (24) is not divisible by expert_tensor_model_pipeline size (16)"],
    ["RuntimeError: world_size (6) is not divisible by tensor_model_parallel_size (4) x pipeline_model_parallel_size (1) "
     "x context_parallel_size (1)"],
    ["RuntimeError: data_parallel_size (2) is not divisible by expert_model_parallel_size "],
    ["RuntimeError: data_parallel_size * context_parallel_size (6) is not divisible by expert_model_parallel_size "],
    ["RuntimeError: pipeline-model-parallel size should be greater than 1 with interleaved schedule"],
    ["RuntimeError: The size of (ep) is (2), but you haven'tspecified the order (tp-cp-dp-pp)."],
    ["RuntimeError: The size of (ep) is (2), but you haven't specified the order (tp-cp-dp-pp)."],
    ["RuntimeError: The ep and dp must be adjacent in order (tp-pp-dp-ep)."],
    # behind a rank's prefix, behind a node's prefix as NeMo-Run prints it
    ["[rank3]: RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)"],
    # NeMo (1328): the title after the reporter's question, then Lightning's frames cut before Megatron's
    ["Help! Wrong calculations of expert_tensor_model_pipeline_parallel size? RuntimeError: decoder world_size (4) is "
     "not divisible by expert_tensor_model_pipeline_parallel size (8)",
     "Hi all,",
     '1:   File "/opt/venv/lib/python3.12/site-packages/lightning/pytorch/strategies/ddp.py", line 154, in '
     "setup_environment",
     "1:     self.setup_distributed()"],
    # a report's sentence
    ["Launching the GLM recipe on one node fails with RuntimeError: world_size (8) is not divisible by "
     "expert_tensor_model_pipeline_parallel size (16) and nothing else."],
    # a Chinese report that asks for help after its clause
    ["训练启动就报错 RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)，"
     "请问怎么办"],
])
def test_megatrons_own_layout_refusal_decides_without_its_frame(lines):
    v = _verdict(*lines)
    assert v.cls == "config_error", (v.cls, v.summary)
    assert "is not divisible" in v.summary or "interleaved" in v.summary or "order" in v.summary


@pytest.mark.parametrize("lines", [
    # main's bare wording is any program's: without the frame it decides nothing
    ["RuntimeError: world_size (6) is not divisible by 4"],
    # a guide's condition and advice, a reference's statement of what the code raises, an example
    ["If you see RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16), "
     "lower EP or ETP."],
    ["Megatron raises RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size "
     "(16) when ETP x EP x PP does not divide the world size."],
    ["For example, RuntimeError: decoder world_size (4) is not divisible by expert_tensor_model_pipeline_parallel "
     "size (8) means the expert grid is too large."],
    ["You may hit RuntimeError: pipeline-model-parallel size should be greater than 1 with interleaved schedule."],
    # a changelog's fix, a program's log level's line
    ["Fixed RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16) on "
     "single-node recipes (#2077)"],
    ["[WARNING] RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16) "
     "expected; lowering expert_model_parallel_size to 4"],
    # the source's own f-string
    ['            f"world_size ({world_size}) is not divisible by expert_tensor_model_pipeline_parallel size '
     '({expert_tensor_model_pipeline_parallel_size})"'],
    # a comment quoting the words without the exception's name
    ['#     single node. Megatron rejects it before loading any weights: "world_size',
     '#     (8) is not divisible by expert_tensor_model_pipeline_parallel size (64)".'],
    # Chinese advice
    ["如果出现 RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)，"
     "可以把EP改小"],
])
def test_megatrons_layout_words_only_named_decide_nothing(lines):
    v = _verdict(*lines)
    assert v.cls != "config_error", (v.cls, v.summary)


def test_megatrons_layout_refusal_is_a_start_up_error_only():
    line = "RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)"
    assert _verdict(line, steps=0, attempt=1).cls == "config_error"
    # a run that logged steps, or the runner's own restart, is not refused by its command line
    assert _verdict(line, steps=12).cls != "config_error"
    assert _verdict(line, steps=0, attempt=2).cls != "config_error"


def test_an_exception_after_the_layout_refusal_is_the_attempts_end():
    v = _verdict("Help? RuntimeError: world_size (8) is not divisible by expert_tensor_model_pipeline_parallel size (16)",
                 "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
                 "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5")
    assert v.cls == "nccl_error", (v.cls, v.summary)
