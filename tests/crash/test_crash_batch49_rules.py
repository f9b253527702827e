"""Batch 49's rules (docs/crash-classes.md, "Public crash texts"), each on variants the batch's texts did not show.

A CUDA fault told in a person's words goes through the told rules' one guard (``crash._told_only``), as the OOM's
words, a told segfault, a GPU lost from the bus and a told Xid do: a hedge, a prediction, a fix, an explanation, a log
level's line, an option's help or a setting decide nothing, while the runtime's own line (at a line's start, after an
exception's name, after "CUDA error: ") still decides; "if I run/use ..." is the reporter's experiment, no hedge. An
OOM's words explained after them ("OutOfMemoryError means ...") are a mention. A GPU's OOM told in words ("got out of
memory on my rtx 5090") is a CUDA OOM, and the kernel's OOM killer told in words ("provokes oom killer") a
``killed_oom``; each also gets the lines its words must not decide on."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify

# --- item 1: a CUDA fault told in words, through the one guard ----------------------------------------------------


@pytest.mark.parametrize("line", [
    # a prediction, the brief's own example
    "You'll hit an illegal memory access if the index is out of range.",
    # advice quoting the runtime's text
    "If you see \"an illegal memory access was encountered\", set CUDA_LAUNCH_BLOCKING=1.",
    # a possibility
    "This may cause an illegal memory access.",
    "The kernel may hit a misaligned address on odd sizes.",
    "Setting CUDA_LAUNCH_BLOCKING=1 will show where the illegal memory access happens.",
    # a way around one
    "To avoid a device-side assert triggered error, check your labels.",
    "If you get unspecified launch failure, update the driver.",
    # a changelog's fix
    "Fixed an illegal memory access in the varlen kernel (#123).",
    # a denial
    "We did not see any uncorrectable ECC error during the run.",
    "No misaligned address errors after the fix.",
    # an explanation, before or after the words
    "This means that an illegal memory access was encountered in one of the kernels",
    "An uncorrectable ECC error typically indicates failing HBM.",
    "misaligned address can come from a bad cast",
    # a program's own log-level line, and an option's help
    "[INFO] Watch for illegal memory access in the logs.",
    "WARNING: illegal memory access possible with this config",
    "  --check-ecc   stop when an uncorrectable ECC error is reported",
    # a setting's value
    "fault_pattern: \"an illegal memory access was encountered\"",
    # an explainer's labelled item
    "Case 3: illegal memory access in a custom kernel",
])
def test_a_cuda_fault_only_mentioned_is_no_cuda_fault(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls != "cuda_fault", (line, v.summary)


@pytest.mark.parametrize("line", [
    # the runtime's own line, as torch raises it, behind prefixes too
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered",
    "(WorkerDict pid=123) [rank0]: torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    # the text alone at a line's start
    "an illegal memory access was encountered",
    "CUDA error: device-side assert triggered",
    # a report that tells it happened
    "Training crashes with CUDA illegal memory access at step 300",
    "I get an illegal memory access when I use bf16.",
    "Training hits CUDA_ERROR_ILLEGAL_ADDRESS at step 40",
    # the reporter's own experiment, not a hypothetical (Ultralytics #19987's wording)
    "If I run with NCCL debug and blocking cuda it's a little clearer; the first error is a cuda illegal memory access.",
    "If I use 16 GPUs I get RuntimeError: CUDA error: an illegal memory access was encountered",
])
def test_a_cuda_fault_the_runtime_printed_or_a_report_told_still_decides(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls == "cuda_fault", (line, v.summary)


def test_a_fault_told_after_a_hedge_leaves_the_real_fault_below_it_deciding():
    lines = ["Note: this kernel may hit an illegal memory access on odd shapes.",
             "Traceback (most recent call last):",
             "  File \"train.py\", line 10, in <module>",
             "RuntimeError: CUDA error: an illegal memory access was encountered"]
    v = classify(1, lines, steps_seen=300)
    assert v.cls == "cuda_fault"
    assert v.evidence[-1].startswith("RuntimeError: CUDA error"), v.evidence


@pytest.mark.parametrize("line", [
    # a GPU lost from the bus, and an Xid, go through the same guard (a fix's word, a help line)
    "Fixed handling when a GPU fell off the bus during the run (#881)",
    "  --drain   drain the node when a GPU fell off the bus",
    "WARNING: alert if we hit Xid 79 on any node",
])
def test_the_other_told_fault_rules_share_the_guard(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls != "cuda_fault", (line, v.summary)


@pytest.mark.parametrize("line", [
    "one of the H100s fell off the bus at step 900",
    "we hit Xid 79 on node 3 and the job died",
])
def test_the_other_told_fault_rules_still_decide_on_a_report(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls == "cuda_fault", (line, v.summary)


# --- an OOM's words explained after them ---------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "torch.cuda.OutOfMemoryError means the model, optimizer state, gradients, and activations don't fit in VRAM.",
    "CUDA out of memory usually means the batch is too large for the card.",
    "CUDA out of memory errors typically indicate activations that do not fit.",
])
def test_an_oom_explained_after_its_words_is_no_oom(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls != "cuda_oom", (line, v.summary)


def test_torchs_raised_oom_still_decides():
    v = classify(1, ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                     "capacity of 23.55 GiB of which 1.02 GiB is free."], steps_seen=300)
    assert v.cls == "cuda_oom", v.summary


# --- a GPU's OOM told in words --------------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "i always got out of memory on my rtx 5090, even with default settings",
    "We ran out of memory on the A100 at step 1200.",
    "Training keeps hitting OOM on both GPUs after the first epoch",
    "didn't matter if i used sd1.5 or sdxl, i always got out of memory on my RTX 4090",
])
def test_a_gpu_oom_told_in_words_is_a_cuda_oom(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls == "cuda_oom", (line, v.summary)


@pytest.mark.parametrize("line", [
    # host memory, not a GPU
    "the job got out of memory on the login node",
    # a prediction, advice, a fix, a denial, a log level's line
    "You may run out of memory on the GPU with batch 64.",
    "If you get out of memory on your GPU, lower the resolution.",
    "Fixed: ran out of memory on the GPU when caching latents (#812)",
    "We never ran out of memory on the H100.",
    "[WARNING] may run out of memory on this GPU",
])
def test_a_gpu_oom_only_mentioned_is_no_cuda_oom(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls != "cuda_oom", (line, v.summary)


# --- the kernel's OOM killer told in words ----------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "Short LTX 2.3 Workflow that yesterday worked now provokes oom killer",
    "the trainer was killed by the OOM killer after epoch 3",
    "At step 4000 the Linux OOM killer kicked in and took the whole run down.",
    "Every run triggers the oom-killer when the dataloader starts",
])
def test_the_oom_killer_told_in_words_is_killed_oom(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls == "killed_oom", (line, v.summary)
    assert "as the report tells it" in v.summary


@pytest.mark.parametrize("line", [
    # a possibility, advice, a fix, a denial, an explanation's log-level line, help text
    "Too many workers can trigger the OOM killer.",
    "To avoid the OOM killer, lower num_workers.",
    "Fixed a leak that provoked the OOM killer on long runs (#91)",
    "The run was not killed by the OOM killer; dmesg is clean.",
    "[INFO] host memory guard on: the OOM killer may kill workers above 90%",
    "  --oom-guard   stop before the OOM killer kicks in",
    # a list of possible causes (Ray's SYSTEM_ERROR detail) and a general case
    "Worker unexpectedly exits with a connection error code 2. End of file. Some common causes include: (1) the "
    "process was killed by the OOM killer due to high memory usage, (2) ray stop --force was called",
    "When the OOM killer fires, the process exits with SIGKILL and no traceback.",
])
def test_the_oom_killer_only_mentioned_is_no_oom_kill(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls != "killed_oom", (line, v.summary)


def test_a_raised_exception_after_a_told_oom_kill_decides():
    lines = ["Last week the OOM killer kicked in once on this node.",
             "Traceback (most recent call last):",
             "  File \"train.py\", line 10, in <module>",
             "RuntimeError: CUDA error: an illegal memory access was encountered"]
    v = classify(1, lines, steps_seen=300)
    assert v.cls == "cuda_fault", v.summary
