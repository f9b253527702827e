"""Batch 46's rules (docs/crash-classes.md, "Public crash texts"), each on a variant the batch's texts did not show:
NCCL's failure names a line only mentions (a hedge or an explanation, a list of NCCL's result names, an explainer's
labelled item) are no NCCL error while torch's own lines still are; an NCCL timeout told in English inside Chinese
prose keeps the Chinese limits (a setting's noun after it, a setting verb before it); a fault's English words glued
to Chinese or Japanese characters are still the fault; macOS's strsignal words with their Darwin number
("Segmentation fault: 11") name the signal; a program's lines under an example's heading (a tool's sample input, a
guide's walk-through) decide nothing; the shell's 128+N status named in a guide's title or explained is no signal.
Each rule also gets the lines its words must not decide on: advice, a changelog, help text, a start-up line, a
setting."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify, nccl_timeout_told

# --- NCCL's failure names only mentioned -----------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    # an explanation of what such failures usually look like
    "Multi-node jobs on RoCE usually fail this way; it typically shows up as an NCCL error in the first all-reduce.",
    # a list of NCCL's result names, without "etc."
    "The launcher retries on ncclRemoteError or ncclSystemError and gives up on ncclInvalidUsage-style bugs.",
    # a possibility
    "A flaky cable may surface as DistBackendError long after the link went down.",
    # a changelog's fix
    "- Fixed NCCL error on shutdown when the store was already closed (#812)",
    # an explainer's labelled item
    "Case 2: the peer died first (ncclRemoteError)",
    # an option's help text naming the condition
    "  --retry-on-nccl   if an NCCL error is raised, restart the attempt from the last checkpoint",
    # a start-up line naming it as a possibility
    "[INFO] elastic agent: a DistBackendError may end the attempt; restarts left: 3",
])
def test_nccl_names_a_line_only_mentions_are_no_nccl_error(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls != "nccl_error", (line, v.summary)


@pytest.mark.parametrize("lines", [
    # torch's exception line, behind an explainer's sentence on the line above
    ["These errors typically manifest as an NCCL error. Mine:",
     "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:317, "
     "unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5"],
    # NCCL's result name where the exception stands: a line's start
    ["ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely."],
    # after an exception's name and colon
    ["RuntimeError: NCCL error: unhandled cuda error, NCCL version 2.18.1"],
])
def test_nccl_lines_torch_prints_are_still_nccl_errors(lines):
    v = classify(1, lines, steps_seen=300)
    assert v.cls == "nccl_error", (lines, v.summary)


# --- an NCCL timeout told in English inside Chinese prose ------------------------------------------------------


@pytest.mark.parametrize("line", [
    "可以在配置文件里设置 NCCL timeout 参数，默认是 600 秒。",            # a setting verb before, its noun after
    "为了避免 NCCL timeout，请调大 actor_rollout_ref.nccl_timeout。",    # to avoid it
    "新版本增加了 NCCL timeout 选项。",                                   # a changelog's new option
])
def test_an_nccl_timeout_setting_in_chinese_prose_is_no_timeout(line):
    assert not nccl_timeout_told(line), line
    assert classify(1, [line], steps_seen=300).cls != "nccl_error", line


def test_an_nccl_timeout_told_in_chinese_prose_is_still_an_nccl_error():
    line = "训练到第 300 步时报了 NCCL timeout，所有 rank 都退出了。"
    assert nccl_timeout_told(line)
    assert classify(1, [line], steps_seen=300).cls == "nccl_error"


# --- a fault's English words glued to CJK characters -----------------------------------------------------------


@pytest.mark.parametrize("line", [
    "开启 cuda graph 后训练第二步就出现illegal memory access，关掉就正常",
    "学習の途中でuncorrectable ECC errorが出て止まりました",
])
def test_fault_words_glued_to_cjk_text_are_the_fault(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls == "cuda_fault", (line, v.summary)


def test_fault_words_inside_a_latin_word_are_none():
    # a name that merely ends in the words ("nonillegal memory access" is no runtime's text, nor is an identifier)
    v = classify(1, ["flag check_for_nonillegal memory access patterns enabled"], steps_seen=300)
    assert v.cls != "cuda_fault", v.summary


# --- macOS's strsignal words ------------------------------------------------------------------------------------


@pytest.mark.parametrize("line,cls", [
    ("Bus error: 10", "bus_error"),
    ("python train.py crashed with Segmentation fault: 11 at step 40", "segfault"),
])
def test_macos_strsignal_words_name_their_signal(line, cls):
    v = classify(1, [line], steps_seen=300)
    assert v.cls == cls, (line, v.summary)


@pytest.mark.parametrize("line", [
    "Bus error: 7",     # Linux's SIGBUS number after the words: no Darwin strsignal line
    "If you see `Segmentation fault: 11`, rebuild the wheel for arm64.",
    "- Fixed Segmentation fault: 11 on Apple silicon when loading the tokenizer",
    "Segmentation fault: 11 means the process touched memory it does not own.",
])
def test_macos_strsignal_words_mentioned_or_misnumbered_decide_nothing(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls not in ("segfault", "bus_error"), (line, v.summary)


# --- a program's lines under an example's heading ---------------------------------------------------------------


@pytest.mark.parametrize("lines", [
    ["Example output:", "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."],
    ["**sample input:**", "", "[  12.5] NVRM: Xid (PCI:0000:9b:00): 48, pid=1234, name=python3, An uncorrectable "
     "double bit error (DBE) has been detected on GPU in the framebuffer"],
    ["Say your job dies. You open the pod and see something like this:", "Reason:  OOMKilled", "Exit Code:  137"],
])
def test_a_programs_lines_under_an_example_heading_decide_nothing(lines):
    v = classify(1, lines, steps_seen=300)
    assert v.cls == "unknown", (lines, v.summary)


@pytest.mark.parametrize("lines,cls", [
    # a person's own heading: their lines are their run's
    (["Here is the log:", "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."],
     "cuda_fault"),
    (["I see this:", "Reason:  OOMKilled", "Exit Code:  137"], "killed_oom"),
    # the example ends at the blank line after it: the run's own line below still decides
    (["Example output:", "NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=x, Graphics SM Warp Exception",
      "Then my own run died the same way on the second node.",
      "RuntimeError: CUDA error: an illegal memory access was encountered"], "cuda_fault"),
    # ... and an example is short: a real crash far below a stray heading still decides
    (["input:", *[f"tokens {i}: 128 256 512" for i in range(12)],
      "RuntimeError: CUDA error: an illegal memory access was encountered"], "cuda_fault"),
])
def test_a_persons_own_lines_and_lines_after_the_example_still_decide(lines, cls):
    v = classify(1, lines, steps_seen=300)
    assert v.cls == cls, (lines, v.summary)


# --- the shell's 128+N status named, not reported ---------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "What is Exit Code 139 and how do I stop it?",
    "Exit code 137 indicates that the container received SIGKILL.",
    "| Exit Code 137 | OOMKilled | raise resources.limits.memory |",
    "The usual causes of exit code 137 on GPU nodes are host RAM limits and the kubelet's eviction.",
    "If the job ends with exit code 137, raise the pod's memory limit.",
])
def test_a_status_named_in_a_guide_or_explained_is_no_signal(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls not in ("killed_oom", "segfault"), (line, v.summary)


@pytest.mark.parametrize("line,cls", [
    ("train.py exited with code 137 after epoch 3", "killed_oom"),
    ("Exit Code:   139", "segfault"),
    ('The response will be "Exit Code: 137."', "killed_oom"),
])
def test_a_status_a_report_gives_is_still_its_signal(line, cls):
    v = classify(1, [line], steps_seen=300)
    assert v.cls == cls, (line, v.summary)


# --- an Xid told of another time, a catalogue's row keyed by an Xid ----------------------------------------------

_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
        "79.10 GiB of which 6.00 MiB is free.")


@pytest.mark.parametrize("told", [
    "we hit Xid 31 on gpu 0 last week",
    "Node 7 already saw Xid 79 three days ago, before the driver update.",
    "FYI we had xid 48 on this host back in March; it was reseated since.",
])
def test_an_xid_told_of_another_time_leaves_the_runs_own_oom(told):
    v = classify(1, [told, _OOM], steps_seen=300)
    assert v.cls == "cuda_oom", (told, v.summary)


def test_an_xid_told_of_this_run_still_decides():
    v = classify(1, ["we hit Xid 79 on node 3 today, right at step 1200"], steps_seen=300)
    assert v.cls == "cuda_fault", v.summary
    # told with a past time but nothing raised after it: the report's own crash
    v = classify(1, ["Yesterday we saw Xid 79 on GPU 2 and the job died."], steps_seen=300)
    assert v.cls == "cuda_fault" and "reset" in v.summary, v.summary


@pytest.mark.parametrize("lines", [
    ["| Xid | meaning | action |", "|---|---|---|", "| Xid 79 | GPU has fallen off the bus | reset |"],
    ["| **XID 48** | double-bit ECC error, the GPU fell off the bus after it | drain and reset |"],
    ["| xid-95 | uncontained ECC error | reset the GPU |"],
])
def test_a_catalogues_row_keyed_by_an_xid_is_no_fault(lines):
    v = classify(1, lines, steps_seen=300)
    assert v.cls != "cuda_fault", (lines, v.summary)


def test_an_incident_row_and_the_drivers_line_still_decide():
    v = classify(1, ["| node3 | 2026-01-02 | we hit Xid 79 on GPU 5 |"], steps_seen=300)
    assert v.cls == "cuda_fault", v.summary
    v = classify(1, ["NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."], steps_seen=300)
    assert v.cls == "cuda_fault", v.summary
