"""Batch 74 left it: an OOM told with the reporter's run as a third person's subject (a report's "The run OOMs after
100 steps", "My job got an OOM at step 300", an issue title's "Training got OOM at step 300") read ``unknown`` even
with the GPU named beside it: the told rules read the first person, a title opening with the words, or a runtime's
name. Now ``crash._OOM_TOLD_RUN_SUBJECT``: the GPU named after it in its sentence, or on the next line, makes it a
``cuda_oom``. Refusals: a hedge or a condition, the host named, a bare plural's general statement, a quote, a
question's heading, a denial, a code comment, a table row."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


@pytest.mark.parametrize("lines", [
    ["The run OOMs on 8x H100 after 100 steps"],
    ["The run OOMs after 100 steps", "8x H100 80GB"],
    ["My job got an OOM at step 300", "GPU: 8x A100 80G"],
    ["Training got OOM at step 300", "GPU: 8x A100 80G"],
    ["[Bug] Training OOMs after 100 steps on 8x H100"],
    ["The training crashes with CUDA OOM on 8x H800"],
    ["The trainer OOMed on rank 3 (A100 80GB)"],
    ["Our GRPO job still goes OOM on the H100s after the first rollout"],
])
def test_the_run_told_meeting_an_oom_with_its_gpu_named_is_a_cuda_oom(lines):
    assert classify(1, lines, steps_seen=5).cls == "cuda_oom"


@pytest.mark.parametrize("lines", [
    ["The job will OOM if batch is 8", "8x A100"],
    ["If the training OOMs, reduce the batch size on the A100"],
    ["the training OOMs on the host, 8x A100 80G"],
    ["The run OOMs after 100 steps", "the host has 512GB RAM"],
    ["The run OOMs after 100 steps"],
    ["jobs OOM on A100 all the time"],
    ['"the training OOMs on 8x A100" is what they said'],
    ["The run never OOMs on 8x H100"],
    ["x = 4  // my run OOMs on the A100 at step 10"],
    ["| the run OOMs | 8x A100 | fixed |"],
    ["The model OOMs on 8x H100"],   # a model is no run: a size told ("the 70B model OOMs on ...") stays unread
])
def test_refusal_a_hedge_the_host_a_general_statement_a_quote_or_no_gpu_decides_nothing(lines):
    assert classify(1, lines, steps_seen=5).cls == "unknown"


def test_a_long_line_of_run_nouns_is_read_in_time_linear_in_its_length():
    line = "the training " * 20000 + "OOMs on 8x H100"
    assert classify(1, [line], steps_seen=5).cls in ("cuda_oom", "unknown")
