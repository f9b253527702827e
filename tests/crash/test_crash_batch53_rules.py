"""Batch 53's rule (docs/crash-classes.md, "Public crash texts"), on variants the batch's texts did not show, and the
lines it must not decide on.

A GPU's OOM a person tells in words decided only with the GPU after "on" ("got out of memory on my rtx 5090", batch
49). A reporter who names the runtime instead ("I'm getting a CUDA out-of-memory error", a LeRobot GR00T run on two
RTX 5080s, lerobot #2608) names which memory ran out as the runtime's own message does ("CUDA out of memory.", "HIP
out of memory.", "XPU out of memory.", "NPU out of memory.", "MPS backend out of memory"); the name does not say
whose run it was, so the first person stands in the words' clause. The told rules' one guard still refuses hedges,
predictions, fixes, denials, questions, general statements, log-level lines and OOMs a program caught and went on
from; a use of the words as a modifier ("a CUDA OOM test") tells none."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify, oom_told_on_gpu


def _verdict(*lines: str):
    return classify(1, list(lines), steps_seen=10)


@pytest.mark.parametrize("line", [
    "I'm getting a CUDA out-of-memory error",
    "I am training on two RTX 5080s, but I\u2019m getting a CUDA out-of-memory error.",
    "We hit a CUDA OOM at step 1200 on node 3",
    "We hit CUDA OOM.",
    "I keep getting an MPS out of memory error after 300 steps",
    "my run got a cuda oom right after the first eval",
    "Our runs hit HIP OOM when the sequence length grows",
    "I got an NPU out-of-memory error during step 20",
    "I'm running XPU out of memory with batch 8",
])
def test_a_gpus_oom_told_with_the_runtimes_name_decides(line):
    v = _verdict("Traceback (most recent call last):", line)
    assert v.cls == "cuda_oom", v.summary
    assert oom_told_on_gpu(line)


@pytest.mark.parametrize("line", [
    # no one's run: an explainer's case, a scenario, no subject at all
    "the model runtime hit CUDA out-of-memory on the GPU",
    "then a worker hits CUDA OOM and the whole job dies",
    "got a cuda oom right after loading the model",
    # a hedge, a prediction, a question, a general statement, a denial, a fix
    "If you're getting a CUDA out-of-memory error, lower the batch size",
    "You'll hit a CUDA OOM with batch 64",
    "Getting CUDA OOM? Try lowering the batch size",
    "Many users are getting CUDA OOM with this config",
    "I was not getting a CUDA out of memory error before the update",
    "Fixed: getting a CUDA out-of-memory error when saving",
    # a program's log-level line, an OOM caught and gone on from
    "WARNING: getting CUDA OOM, retrying with batch 2",
    "INFO: we hit a CUDA OOM, skipping batch",
    # the words as a modifier
    "I ran a CUDA OOM test, it passed",
    "I hit a CUDA OOM handler bug in the trainer",
])
def test_the_runtimes_name_decides_nothing_where_no_run_of_the_reporter_got_the_oom(line):
    assert not oom_told_on_gpu(line), line
    assert _verdict(line).cls != "cuda_oom"


def test_the_told_oom_is_decided_last_after_the_runtimes_own_line():
    """A told OOM decides only where no program's own line does (batch 48/49's place in classify): a fault after it
    is the verdict."""
    v = _verdict("I'm getting a CUDA out-of-memory error, then this:",
                 "RuntimeError: CUDA error: an illegal memory access was encountered")
    assert v.cls == "cuda_fault", v.summary
