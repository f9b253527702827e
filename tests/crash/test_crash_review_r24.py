"""The review of crash batches 48/49 (R24): the rules that read a failure a person tells in words decide last and
only as a report of the reporter's own run. An OOM told on a GPU never outranks a program's own printed line, and a
caught-and-skipped OOM never decides; the "if I ..." exception is the reporter's own run (first person singular) and
stops at its clause; a hedge or fix counts only in the told fault's own clause (a contrast breaks it), and a
reporter's labelled cases are not an explainer's items; a reporter's diagnosis after a fault's words is no
explainer's; general statements (plural or generic subjects, "is common", a question or an FAQ heading, "n't") are
no reports; a cause after a received signal (scancel, docker stop, Ctrl-C) is the user's kill; a Chinese denial or
doubt hedges, and 当时/当晚 is no "when"; the told NCCL watchdog takes the timeout rule's guard."""
from __future__ import annotations

import re

import pytest

from moeconsole.runner.core.crash import classify


def cls(text: str) -> str:
    return classify(1, text.splitlines(), steps_seen=10).cls


KEY_ERROR = """Traceback (most recent call last):
  File "train.py", line 10, in <module>
    main()
KeyError: 'target'"""
VALUE_ERROR = """Traceback (most recent call last):
  File "train.py", line 3, in <module>
ValueError: bad shape"""
SEGFAULT = "Fatal Python error: Segmentation fault\nSegmentation fault (core dumped)"
WATCHDOG = ("[rank0]:[E1130 10:00:00.000 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            "600010 milliseconds before timing out.")


# --- 1. an OOM told in words decides last; a caught-and-skipped OOM never ------------------------------------------

@pytest.mark.parametrize(("text", "want"), [
    ("| WARNING: ran out of memory on GPU #0, skipping batch\n| epoch 003:   2300 / 5000 loss=4.21\n" + KEY_ERROR,
     "unknown"),
    ("Ran out of memory on GPU - dumping cache and performing inference on CPU for now\n" + SEGFAULT, "segfault"),
    ("2025-01-01 10:00:00 WARNING text_encoder ran out of memory on GPU; falling back to CPU encode\n" + VALUE_ERROR,
     "unknown"),
    ("We ran out of memory on the A100 last week so I halved the batch. Now it fails with:\n" + WATCHDOG,
     "nccl_error"),
    ("We ran out of memory on the A100 last week so I halved the batch. Now it fails with:\n" + SEGFAULT, "segfault"),
])
def test_a_program_line_outranks_an_oom_told_in_words(text, want):
    assert cls(text) == want


@pytest.mark.parametrize("line", [
    "| WARNING: ran out of memory on GPU #0, skipping batch",
    "Ran out of memory on GPU - dumping cache and performing inference on CPU for now",
    "2025-01-01 10:00:00 WARNING text_encoder ran out of memory on GPU; falling back to CPU encode",
    "ran out of memory on GPU 0, retrying with a smaller batch",
])
def test_a_caught_and_skipped_oom_never_decides(line):
    assert cls(line) != "cuda_oom"


@pytest.mark.parametrize("line", [
    "We ran out of memory on the A100 at step 1200.",
    "i always got out of memory on my rtx 5090, even with default settings",
    "We ran out of memory on the A100 last week so I halved the batch. Now it fails the same way.",
    # offloading to the CPU is no fall-back; a plural subject with the run's step is the reporter's
    "We ran out of memory on the A100 even with optimizer offload to CPU",
    "All 8 workers ran out of memory on GPU 0 at step 500",
])
def test_an_oom_told_alone_still_decides(line):
    assert cls(line) == "cuda_oom"


# --- 2. "if" is a hedge, but for the reporter's own run beyond its clause -------------------------------------------

@pytest.mark.parametrize(("text", "wrong"), [
    ("If we use a batch size of 512, we get a CUDA out of memory error, so we pick 64.", "cuda_oom"),
    ("Note: if we run the model in fp32 it hits CUDA out of memory on 24 GB cards.", "cuda_oom"),
    ("If we launch too many ranks per node, we hit an NCCL timeout during init.", "nccl_error"),
    ("If we increase the sequence length to 8k, training crashes with CUDA out of memory; gradient checkpointing "
     "solves this.", "cuda_oom"),
    ("if I run out of memory on the A100 the job just restarts", "cuda_oom"),
    ("if I increase the batch size I get OOM on the GPU", "cuda_oom"),
])
def test_a_conditional_in_a_guide_or_in_its_own_clause_is_no_report(text, wrong):
    assert cls(text) != wrong


@pytest.mark.parametrize(("text", "want"), [
    ("If I use batch size 64 I get CUDA out of memory, so I use 32; with 32 it crashes like this:\n" + SEGFAULT,
     "segfault"),
    ("If I use batch size 64 I get CUDA out of memory, so I use 32; with 32 it crashes like this:\n" + WATCHDOG,
     "nccl_error"),
    # the reporter's own run, told beyond the condition's clause
    ("In case its interesting: If I run with NCCL debug and blocking cuda it's a little clearer; the first error is "
     "a cuda illegal memory access.", "cuda_fault"),
    ("didn't matter if i used sd1.5 or sdxl, i always got out of memory on my RTX 4090", "cuda_oom"),
])
def test_a_conditional_never_outranks_a_program_line(text, want):
    assert cls(text) == want


# --- 3. a fault told in prose: a hedge or fix only in its own clause; a reporter's own cases ------------------------

@pytest.mark.parametrize("line", [
    "No idea why, the job crashed with an illegal memory access.",
    "Without CUDA_LAUNCH_BLOCKING the job crashed with an illegal memory access.",
    "We fixed the data loader, but the job still crashes with an illegal memory access.",
    "After the fix in #123 the job still crashes with an illegal memory access at step 10.",
    "We could not reproduce before, but now we get an illegal memory access at step 10.",
    "Case 1: TP=1 works fine. Case 2: TP=2 crashes at step 10 with an illegal memory access.",
    "Case 2: with TP=2 we hit Xid 79 on GPU 2 and the job died",
    "Case 2: with TP=2 the GPU fell off the bus and the job died",
    "WARNING: cudaErrorIllegalAddress at flash_fwd.cu:122",
])
def test_a_fault_told_of_the_reporters_run_is_a_cuda_fault(line):
    assert cls(line) == "cuda_fault"


@pytest.mark.parametrize("line", [
    "It may crash with an illegal memory access.",
    "We fixed an illegal memory access in the varlen kernel.",
    "Case 3: illegal memory access in a custom kernel",
    "WARNING: illegal memory access possible with this kernel",
    "We could not reproduce the illegal memory access at step 10.",
    # a possibility governs its sentence's later clauses
    "There could be, in some cases, an illegal memory access.",
])
def test_a_fault_only_mentioned_is_still_refused(line):
    assert cls(line) != "cuda_fault"


# --- 4. a reporter's diagnosis of their own crash is no explainer's ------------------------------------------------

@pytest.mark.parametrize(("line", "want"), [
    ("The illegal memory access happens when I enable fp8 at step 200.", "cuda_fault"),
    ("The illegal memory access comes from the flash-attn varlen kernel (trace below).", "cuda_fault"),
    ("CUDA out of memory happens when I set batch size 64, at step 1200.", "cuda_oom"),
    ("In our run the CUDA out of memory is caused by the eval loop not freeing the cache.", "cuda_oom"),
    ("torch.OutOfMemoryError is caused by the eval loop in our run", "cuda_oom"),
])
def test_a_reporters_diagnosis_still_decides(line, want):
    assert cls(line) == want


@pytest.mark.parametrize("line", [
    "An illegal memory access usually means an out-of-bounds index in a custom kernel.",
    "CUDA out of memory usually means the batch is too large",
    "torch.cuda.OutOfMemoryError means the model does not fit in VRAM",
    "An illegal memory access happens when a kernel indexes out of bounds.",
    "The CUDA out of memory error happens when the batch is too big.",
])
def test_an_explainers_definition_is_still_refused(line):
    assert cls(line) not in ("cuda_fault", "cuda_oom")


# --- 5. a general statement of an OOM on a GPU is no report; the told forms in any spelling ------------------------

@pytest.mark.parametrize("line", [
    "Running out of memory on the GPU is common with long contexts; use gradient checkpointing.",
    "Many people run out of memory on RTX 3090 cards at this resolution.",
    "Most users get OOM on GPUs with less than 24 GB, so use --lowvram.",
    "Users often hit OOM on the 4090 with 1024px images; use tiled VAE.",
    "### Got OOM on the GPU?",
    "Getting OOM on GPU 0 only? Set device_map=\"auto\".",
    "FAQ: Why do I get out of memory on the A100 with batch size 64?",
    "Frequent causes of runs getting OOM on the GPU: long sequences, no checkpointing.",
])
def test_a_general_statement_of_a_gpu_oom_is_no_cuda_oom(line):
    assert cls(line) != "cuda_oom"


@pytest.mark.parametrize("line", [
    "I got out-of-memory on my RTX 4090 at step 10",
    "I got Out Of Memory on my RTX 4090 at step 10",
    "The trainer hit OOM on GPU 3 at step 1200.",
    # a report that asks after it
    "I ran out of memory on my RTX 4090 at step 300, any idea why?",
])
def test_a_gpu_oom_told_in_any_spelling_is_a_cuda_oom(line):
    assert cls(line) == "cuda_oom"


# --- 6. the OOM killer: a general statement or a denial is no report ---------------------------------------------

@pytest.mark.parametrize("line", [
    "On Linux, processes that use too much memory are killed by the OOM killer.",
    "Pods that exceed their memory limit get killed by the OOM killer.",
    "The OOM killer kills the process with the highest oom_score.",
    "Workers that load the whole dataset are often killed by the OOM killer; use streaming.",
    "The job wasn't killed by the OOM killer, dmesg shows nothing.",
    "Was it killed by the OOM killer? dmesg says no.",
])
def test_a_general_or_denied_oom_kill_is_no_killed_oom(line):
    assert cls(line) != "killed_oom"


@pytest.mark.parametrize("line", [
    "the trainer was killed by the OOM killer after epoch 3",
    "At step 4000 the Linux OOM killer kicked in and took the whole run down.",
    "the OOM killer kicked in and killed python3",
])
def test_an_oom_kill_told_of_the_run_is_still_killed_oom(line):
    assert cls(line) == "killed_oom"


# --- 7. a received signal: the user's kill, a handler's doc, a Chinese denial or doubt ----------------------------

@pytest.mark.parametrize(("line", "wrong"), [
    ("The process received SIGKILL after I ran scancel.", "killed_oom"),
    ("The workers got SIGKILL when I pressed Ctrl-C twice.", "killed_oom"),
    ("The container received SIGKILL from docker stop after the 10 s grace period.", "killed_oom"),
    ("The handler is called when the process received SIGKILL.", "killed_oom"),
    ("on_signal: called after the trainer received SIGSEGV", "segfault"),
    ("进程并没有收到SIGKILL信号，而是自己退出了", "killed_oom"),
    ("进程没收到SIGKILL信号，dmesg里也没有OOM记录", "killed_oom"),
    ("不确定进程是否收到了SIGKILL信号", "killed_oom"),
])
def test_a_signal_received_from_the_user_or_denied_is_no_oom_kill(line, wrong):
    assert cls(line) != wrong


@pytest.mark.parametrize("line", [
    "当时进程收到了SIGKILL信号(信号9)，训练直接中断",
    "第二天再跑，当晚又收到了SIGKILL信号",
    "训练到第1200步时，当天进程收到了SIGKILL信号",
    "进程收到了SIGKILL信号(信号9)",
    "the process received SIGKILL and saved nothing",
])
def test_a_received_sigkill_told_of_the_run_is_still_killed_oom(line):
    assert cls(line) == "killed_oom"


# --- 8. the told NCCL watchdog takes the timeout rule's guard ----------------------------------------------------

@pytest.mark.parametrize("line", [
    "The NCCL watchdog catches a timeout and aborts the process, so the job exits instead of hanging forever.",
    "- Added: ProcessGroupNCCL watchdog reports the collective mismatch with sequence numbers (#12345)",
    "With TORCH_NCCL_DUMP_ON_TIMEOUT=1, the NCCL watchdog reports a desync and dumps the flight recorder.",
    "In this design, the NCCL watchdog killed the job only after 10 minutes.",
])
def test_an_explainer_or_changelog_of_the_watchdog_is_no_nccl_error(line):
    assert cls(line) != "nccl_error"


@pytest.mark.parametrize("line", [
    "We found the NCCL watchdog fired at step 3000 on rank 5.",
    "the NCCL watchdog aborted the ALLGATHER and the job died",
])
def test_a_watchdog_told_of_the_run_is_still_an_nccl_error(line):
    assert cls(line) == "nccl_error"


# --- 9. the fault rule's cost grows with the line, not its square -------------------------------------------------

@pytest.mark.parametrize("piece", ["may illegal memory access ", "no misaligned address ",
                                   "may illegal memory access. ",
                                   "Case 2: with TP=2 it may hit an illegal memory access; "])
def test_the_fault_rule_on_a_long_line_grows_with_the_line_not_its_square(monkeypatch, piece):
    """A fault's words repeated over a 16 KiB line, each a mention (the review timed one such line at 0.13 s, 200 of
    them at 24 s): the fault rule reads a bounded number of matches a line, each over a bounded window, so the
    characters its patterns are given to scan stay within a few times the line's length (on the code before, each of
    the 630 matches looked back over a 400-character window with a dozen patterns: over 100 times the line), counted,
    not timed."""
    from moeconsole.runner.core import crash
    from tests.test_patterns_never_hang import _Counting

    seen: list[int] = []
    for name, value in list(vars(crash).items()):
        if isinstance(value, re.Pattern):
            monkeypatch.setattr(crash, name, _Counting(value, seen))
    crash._first_end.cache_clear()
    line = (piece * (16384 // len(piece) + 1))[:16384]
    assert crash._fault_stated(line) is None
    assert sum(seen) <= 4 * len(line), (sum(seen), len(line))
