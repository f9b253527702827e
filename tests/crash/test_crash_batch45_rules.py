"""Batch 45's rules (docs/crash-classes.md, "Public crash texts"), each on a variant the batch's texts did not show:
OOM words a line only mentions (a hedge, an explanation, advice, a log level's line, a setting, a numbered heading, a
Japanese or Chinese quote naming a kind of error) are no OOM while torch's own message still is wherever it stands
raised; an Xid a person tells by its number (alone, or in a list under a line that says the Xids happened) is read
as the driver's Xid line would be; the driver's bus-loss words repeated in an explainer are no fault; vLLM's
start-up refusal wrapped after its first clause is still vLLM's; an NCCL timeout told in Chinese is an NCCL error.
Each rule also gets the lines its words must not decide on: advice, a changelog, help text, a start-up line, a
setting."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import (classify, nccl_timeout_told, oom_case_retold, oom_stated, xid_told)

# --- OOM words only mentioned ----------------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    # advice with a condition, torch's spelling quoted
    "If you get 'CUDA out of memory', lower the batch size or enable gradient checkpointing.",
    # a way around it
    "To avoid CUDA out of memory errors, set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.",
    # a README's troubleshooting entry: the OOM names the entry, advice follows
    "- **CUDA out of memory**: reduce `per_device_train_batch_size` or use `--gradient_checkpointing`",
    "CUDA out of memory -> lower --max_length",
    # a start-up warning naming the OOM as a possibility
    "[WARNING] micro batch 16 on a 24 GiB GPU: the first step may hit CUDA out of memory",
    "WARNING: large images, OutOfMemoryError is likely; consider --offload",
    # an explanation of what the words usually stand for
    "A red bar at step 0 typically indicates CUDA out of memory: the batch does not fit the GPU.",
    # a setting's value
    'oom_marker: "CUDA out of memory"',
    # an explainer's numbered heading
    "3. CUDA_ERROR_OUT_OF_MEMORY",
    # a Japanese quote naming a kind of error, and the error as a general statement's topic
    "よくあるのが「torch.OutOfMemoryError: CUDA out of memory」というエラーです。",
    "「CUDA out of memory」エラーは学習で最もよく見る問題です。",
    # a guide's heading: countermeasures for the error
    "CUDA out of memory 対策まとめ",
])
def test_oom_words_a_line_only_mentions_are_no_oom(line):
    assert not oom_stated(line) and not oom_case_retold(line), line
    v = classify(1, [line], steps_seen=300)
    assert v.cls != "cuda_oom", (line, v.summary)


@pytest.mark.parametrize("lines", [
    # torch's own message after its exception's name, after advice on the line before
    ["If you get 'CUDA out of memory', lower the batch size. Here is mine:",
     "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of "
     "23.55 GiB of which 1.02 GiB is free."],
    # the runtime's wording after its exception's name, behind a hedge in the same line
    ["When it fails it says: RuntimeError: CUDA error: out of memory"],
    # at a line's start
    ["CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity)"],
    # after an error's words
    ["Error running job: CUDA error: out of memory"],
    # a Japanese report: the error occurred
    ["学習を始めると「CUDA out of memory」エラーが発生しました。"],
    # retold in another case as a report
    ["training crashes with cuda out of memory at step 300"],
])
def test_an_oom_raised_or_reported_is_still_an_oom(lines):
    v = classify(1, lines, steps_seen=300)
    assert v.cls == "cuda_oom", (lines, v.summary)


def test_a_fix_before_the_error_words_is_no_oom():
    line = "- Fixed: CUDA error: out of memory when resuming from a sharded checkpoint (#412)"
    assert not oom_stated(line)
    assert classify(1, [line], steps_seen=300).cls != "cuda_oom"


# --- an Xid told by its number ---------------------------------------------------------------------------------


@pytest.mark.parametrize("line, xid, where", [
    ("we hit Xid 79 on node 3 around 02:00 and the job died", 79, "node 3"),
    ("Xid 48 on GPU 2 then the job died", 48, "GPU 2"),
    ("Last night we saw an XID error 95 in dmesg; NCCL timed out right after.", 95, "a GPU"),
])
def test_a_reset_xid_a_person_states_happened_needs_a_reset(line, xid, where):
    assert xid_told(line) == (xid, where)
    v = classify(1, [line], steps_seen=1200)
    assert v.cls == "cuda_fault" and not v.retryable and v.recovery == "fail", (line, v.summary)
    assert f"Xid {xid}" in v.summary and "reset" in v.summary and "reset" in v.hint


def test_another_xid_a_person_states_happened_is_a_fault_restarted_with_the_blocking_switch():
    v = classify(1, ["we got Xid 13 on GPU 5 at step 4000, the rank died"], steps_seen=4000)
    assert v.cls == "cuda_fault" and v.retryable and v.recovery == "restart_launch_blocking", v.summary
    assert "Xid 13 on GPU 5" in v.summary


def test_xids_listed_under_a_line_that_says_they_happened_are_each_told():
    lines = ["Our kernel log shows these Xid errors on the failing node:",
             "  * Xid 79: GPU has fallen off the bus",
             "  * Xid 154: recovery action changed"]
    v = classify(1, lines, steps_seen=1200)
    assert v.cls == "cuda_fault" and v.recovery == "fail" and "Xid 79" in v.summary, v.summary


@pytest.mark.parametrize("lines", [
    # an explanation
    ["Xid 79 means the GPU fell off the bus and needs a reset."],
    ["Xid 48 is a double-bit ECC error in the framebuffer."],
    # a list of Xids to watch
    ["Alert on Xid 48, 79 and 95 and drain the node."],
    # advice
    ["If you see Xid 79 on a node, drain it before the next job."],
    # a changelog
    ["- Fixed: agent crash when we hit Xid 79 on node start (#88)"],
    # a monitor's start-up line and an option's help
    ["[INFO] xid-watch: started, reports Xid 79 on any GPU to the controller"],
    ["  --drain-on-xid   drain when we see Xid 79 on a GPU (default: on)"],
    # an explainer's list: its heading says nothing happened
    ["### Why the specific Xids matter", "- **Xid 13** — user application fault", "- **Xid 43** — GPU stopped"],
    # a list to watch under a line that is no report
    ["Xids to watch for:", "- Xid 48", "- Xid 79"],
    # the driver's bus-loss words in an explanation and in a pull request's description
    ["When DCGM sees fewer GPUs, it typically indicates a GPU has fallen off the bus."],
    ["Addresses the GPU has fallen off the bus scenario by draining the node."],
])
def test_xids_and_bus_loss_words_a_line_only_mentions_are_no_fault(lines):
    v = classify(1, lines, steps_seen=1200)
    assert v.cls != "cuda_fault", (lines, v.summary)


def test_the_drivers_own_bus_loss_line_still_needs_a_reset():
    v = classify(1, ["NVRM: GPU 0000:81:00.0: GPU has fallen off the bus."], steps_seen=1200)
    assert v.cls == "cuda_fault" and v.recovery == "fail"


# --- a runtime's error name as a numbered heading --------------------------------------------------------------


def test_a_fault_name_as_a_numbered_heading_is_no_fault_but_the_name_alone_is():
    assert classify(1, ["4) CUDA_ERROR_ILLEGAL_INSTRUCTION"], steps_seen=10).cls != "cuda_fault"
    assert classify(1, ["CUDA_ERROR_ILLEGAL_INSTRUCTION"], steps_seen=10).cls == "cuda_fault"


# --- vLLM's start-up refusal wrapped ---------------------------------------------------------------------------


def test_vllms_start_up_refusal_wrapped_after_its_first_clause_is_vllms_oom():
    lines = ["(EngineCore_DP0 pid=311) ValueError: Free memory on device cuda:0 (3.1/79.2 GiB) on startup is "
             "less than desired",
             "GPU memory utilization (0.9, 71.3 GiB). Decrease GPU memory utilization or reduce GPU memory used "
             "by other processes."]
    v = classify(1, lines, steps_seen=0)
    assert v.cls == "cuda_oom" and "vLLM could not reserve its GPU memory" in v.summary, v.summary


# --- an NCCL timeout told in Chinese ---------------------------------------------------------------------------


@pytest.mark.parametrize("line", [
    "训练到第3000步时NCCL集合通信超时,所有进程退出",
    "日志里是 NCCL 超时,随后 torchrun 报 exitcode 1",
])
def test_an_nccl_timeout_told_in_chinese_is_an_nccl_error(line):
    assert nccl_timeout_told(line)
    assert classify(1, [line], steps_seen=3000).cls == "nccl_error"


@pytest.mark.parametrize("line", [
    "如果出现NCCL超时,可以设置 NCCL_TIMEOUT=3600",     # advice: if an NCCL timeout appears, set ...
    "建议增加NCCL超时时间到两小时",                     # raise the NCCL timeout's duration
    "为了避免NCCL通信超时,先关闭 P2P",                   # to avoid an NCCL communication timeout
    "[INFO] 已将NCCL超时设为7200秒",                     # a log line of a setting
])
def test_chinese_advice_and_settings_naming_an_nccl_timeout_are_no_nccl_error(line):
    assert not nccl_timeout_told(line)
    assert classify(1, [line], steps_seen=3000).cls != "nccl_error"
