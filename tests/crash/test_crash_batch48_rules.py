"""Batch 48's rules (docs/crash-classes.md, "Public crash texts"), each on variants the batch's texts did not show:
torch's NCCL watchdog told acting on a collective ("the NCCL watchdog reports a collective mismatch", "aborts an
ALLGATHER", "killed the job") is an NCCL failure told in words; a signal told as received ("the trainer received
SIGKILL", "进程收到了SIGKILL信号") is the told ending of the wrapper rule. Each rule also gets the lines it must not
decide on: an explainer's present tense, advice, a changelog, a log level's line, a denial, a Chinese "if" or "when",
the user's own kill."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify

# --- torch's NCCL watchdog told acting on a collective ----------------------------------------------------------


@pytest.mark.parametrize("lines", [
    # a proxy's copy of Megatron-LM #4910's first description
    ["Eventually NCCL watchdog aborts an ALLGATHER inside validate_uneven_dtensor()."],
    # past tense: the act decides alone
    ["After 40 minutes at step 1200 the NCCL watchdog killed the job on all 64 ranks."],
    ["Our Qwen3-MoE run died at iteration 880: ProcessGroupNCCL's watchdog caught it and tore the job down."],
    # a collective in backquotes, torch's name for it
    ["With TP=8 the NCCL watchdog aborts `_ALLGATHER_BASE` on rank 3 every time the eval starts."],
    # English words inside Chinese prose
    ["保存checkpoint的时候卡住,最后NCCL watchdog reported a timeout,训练退出了"],
])
def test_the_nccl_watchdog_told_acting_is_an_nccl_error(lines):
    v = classify(1, lines, steps_seen=300)
    assert v.cls == "nccl_error", (lines, v.summary)
    assert "watchdog" in v.summary or "timed out" in v.summary, v.summary


@pytest.mark.parametrize("lines", [
    # an explainer's present tense with no collective, mismatch, timeout or error it acted on
    ["The NCCL watchdog aborts the job when a collective takes longer than the process group's timeout."],
    # advice and possibility
    ["If the NCCL watchdog reports a timeout, raise TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC."],
    ["The NCCL watchdog may abort the ALLGATHER on a slow node."],
    # a denial: it never acted
    ["The job hung for two hours but the NCCL watchdog never fired."],
    # a changelog's fix
    ["- Fixed: NCCL watchdog aborted at interpreter exit (#1204)"],
    # a start-up line of a log level
    ["[INFO] NCCL watchdog reported no error during warmup"],
    # a Chinese possibility
    ["如果NCCL watchdog reported a timeout,可以调大超时时间"],
])
def test_the_nccl_watchdog_only_mentioned_decides_nothing(lines):
    v = classify(1, lines, steps_seen=300)
    assert v.cls == "unknown", (lines, v.summary)


def test_an_exception_raised_after_the_told_watchdog_is_the_cause():
    lines = ["the NCCL watchdog reported a timeout on the first try, so I raised it to 7200 s",
             "Traceback (most recent call last):",
             '  File "train.py", line 10, in <module>',
             "ValueError: num_generations must divide the batch"]
    v = classify(1, lines, steps_seen=0)
    assert v.cls != "nccl_error", v.summary


# --- a signal told as received ------------------------------------------------------------------------------------


@pytest.mark.parametrize("lines, cls", [
    (["进程收到了SIGKILL信号(信号9),训练在加载模型时就退出了"], "killed_oom"),
    (["收到 SIGKILL 信号后,所有 rank 都退出了"], "killed_oom"),
    (["After 3 hours the trainer received SIGKILL and the node showed 0 B free."], "killed_oom"),
    (["rank 5 got a SIGSEGV during the backward of step 40"], "segfault"),
    (["the dataloader worker received `SIGBUS` while reading /dev/shm"], "bus_error"),
])
def test_a_signal_told_as_received_is_how_the_run_ended(lines, cls):
    v = classify(1, lines, steps_seen=300)
    assert v.cls == cls, (lines, v.summary)


@pytest.mark.parametrize("lines", [
    # the user's own kill in the same sentence
    ["I stopped it with kill -9, so the server received SIGKILL and restarted on the same port."],
    # an explainer's "when"
    ["When the OOM killer fires, the process received SIGKILL before it could write a traceback."],
    ["当进程收到SIGKILL信号时,操作系统会强制终止它"],
    # a Chinese possibility
    ["进程可能收到了SIGKILL信号"],
    # advice
    ["If the trainer received SIGKILL, check dmesg for the OOM killer."],
    # not one of the four signals that name a class: a stop
    ["the trainer received SIGTERM from the scheduler"],
])
def test_a_received_signal_only_mentioned_decides_nothing(lines):
    v = classify(1, lines, steps_seen=300)
    assert v.cls == "unknown", (lines, v.summary)


def test_torchruns_own_received_line_still_reads_as_before():
    v = classify(1, ["traceback : Signal 9 (SIGKILL) received by PID 4123"], steps_seen=300)
    assert v.cls == "killed_oom", v.summary
