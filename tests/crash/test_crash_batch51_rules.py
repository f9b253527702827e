"""Batch 51's rules (docs/crash-classes.md, "Public crash texts"), each on variants the batch's texts did not show.

Item 1: every fault word of a line is read. A long paste joined into one line (a cloud job's status that carries
the traceback, Cloud ML Engine's "The replica master 0 exited with a non-zero status of 1. Termination reason:
Error. Traceback (most recent call last): File ...", Vertex AI's "... Termination log message: ..." in a JSON job
state, a CI log with its newlines escaped) can mention a fault's words many times before the runtime's own line;
before batch 51 only the first 16 mentions were read and the runtime's line after them decided nothing. Each match
looks back over a bounded window, so the cost stays a fixed multiple of the line's length
(tests/test_patterns_never_hang.py counts it)."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify

# --- item 1: a line with many mentions before the runtime's own line ---------------------------------------------

_MENTIONS = {
    "hedge": "WARNING: kernel {i} may hit an illegal memory access if seqlen > 8192\\n",
    "fix": "Fixed an illegal memory access in varlen kernel {i}.\\n",
    "advice": "[{i}] To avoid a device-side assert triggered error, check your labels.\\n",
    "explainer": "({i}) An uncorrectable ECC error typically indicates failing HBM.\\n",
    # newlines lost (joined with spaces): past the first 16 only a match after an error's words is read in full
    "hedge, spaces": "kernel {i} may hit an illegal memory access if seqlen > 8192; ",
    "explainer, spaces": "An uncorrectable ECC error typically indicates failing HBM ({i}). ",
}
_RUNTIME_LINE = "RuntimeError: CUDA error: an illegal memory access was encountered"


@pytest.mark.parametrize("kind", sorted(_MENTIONS))
@pytest.mark.parametrize("count", [17, 40, 300])
def test_the_runtimes_line_after_many_mentions_on_one_joined_line_decides(kind, count):
    joined = "".join(_MENTIONS[kind].format(i=i) for i in range(count))
    v = classify(1, [joined + _RUNTIME_LINE], steps_seen=100)
    assert v.cls == "cuda_fault", (kind, count, v.summary)


@pytest.mark.parametrize("kind", sorted(_MENTIONS))
@pytest.mark.parametrize("count", [17, 300])
def test_a_line_of_only_mentions_still_decides_nothing(kind, count):
    joined = "".join(_MENTIONS[kind].format(i=i) for i in range(count))
    v = classify(1, [joined], steps_seen=100)
    assert v.cls != "cuda_fault", (kind, count, v.summary)


def test_a_fix_before_the_runtimes_line_on_a_long_line_is_still_a_changelog():
    joined = "".join(f"Fixed: CUDA error: an illegal memory access in kernel {i}; " for i in range(40))
    assert classify(1, [joined], steps_seen=100).cls != "cuda_fault"


def test_a_fix_on_another_joined_line_says_nothing_of_the_runtimes_line():
    """Each line of a log joined with escaped newlines is read as its own: a fix's word on an earlier one ("Fixed
    seed", a changelog printed at start) does not make the runtime's line a changelog's."""
    joined = "[INFO] Fixed seed 42 for every rank\\n[INFO] step 120 loss 2.31\\n" + _RUNTIME_LINE
    assert classify(1, [joined], steps_seen=100).cls == "cuda_fault"
    # on one line with no escaped newline the fix still reads as a changelog's
    assert classify(1, ["Fixed seed 42 for every rank; " + _RUNTIME_LINE], steps_seen=100).cls != "cuda_fault"


def test_a_joined_log_of_only_hedged_lines_decides_nothing():
    joined = "\\n".join(f"[W] kernel {i} may hit an illegal memory access" for i in range(200))
    assert classify(1, [joined], steps_seen=100).cls != "cuda_fault"


def cls(line: str, steps: int = 100) -> str:
    return classify(1, [line], steps_seen=steps).cls


# --- 1130: torch's DataLoader worker line quoted in Chinese or Japanese prose, its period lost --------------------

@pytest.mark.parametrize(("line", "expected"), [
    ("  • 终端打印：DataLoader worker (pid XXX) is killed by signal: Bus error或者直接\"静默卡死\"", "bus_error"),
    ("训练到第3个epoch时报错：DataLoader worker (pid 4242) is killed by signal: Bus error，只能重启", "bus_error"),
    ("学習中に DataLoader worker (pid 123) is killed by signal: Bus errorが出て止まりました", "bus_error"),
    ("报错 DataLoader worker (pid 77) is killed by signal: Segmentation fault。", "segfault"),
])
def test_the_dataloader_workers_line_quoted_in_cjk_prose_decides(line, expected):
    assert cls(line) == expected


@pytest.mark.parametrize("line", [
    # the signal's name runs on in English: no strsignal text ends there
    "DataLoader worker (pid 12) is killed by signal: Bus errors happen when shm is small",
])
def test_a_signal_name_that_runs_on_in_english_is_not_the_workers_line(line):
    assert cls(line) != "bus_error"


# --- 1134: the second person's condition ("when you ...") is a guide's, as "you'll" is ---------------------------

@pytest.mark.parametrize("line", [
    "Yet when you attempt Flux LoRA training with default configurations, CUDA out of memory errors crash your "
    "process within minutes.",
    "Whenever you train SDXL at 1024px on 12 GB, CUDA out of memory stops the run.",
    "When you enable fp8 on an older card, the job crashes with an illegal memory access.",
])
def test_a_guides_when_you_is_no_report(line):
    assert cls(line) not in ("cuda_oom", "cuda_fault")


@pytest.mark.parametrize(("line", "expected"), [
    # the reporter's own condition
    ("When I train Flux at 1024px, CUDA out of memory crashes my run at step 40.", "cuda_oom"),
    # the runtime's own line still decides after the words
    ("When you asked for the log, here it is: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
     "cuda_oom"),
    ("When you run with fp8: RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_fault"),
    # "when" without the second person is no guide's condition
    ("When the eval loop starts, CUDA out of memory kills our run on the A100.", "cuda_oom"),
])
def test_the_reporters_own_when_and_the_runtimes_line_still_decide(line, expected):
    assert cls(line) == expected
