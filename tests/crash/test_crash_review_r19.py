"""What the review of batch 47 (R19) found in the crash rules, each text of the report and variants both ways: an Xid
counted at none that swallowed a list of GPU numbers, "'ll" hedging the reporter's own plans, a launcher's status line
that ignored every denial, a segfault "while/when/during" in changelogs, headings and guides, the signal's name where
the code stands in explanations and in concurrently's kill of the other commands, two patterns that backtracked over
a long run, and a CUDA error's own location outranked by the watchdog's."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify, wrapper_negative_status, xid_told


def _cls(lines: str | list[str]) -> str:
    return classify(1, [lines] if isinstance(lines, str) else lines, steps_seen=100).cls


# --- 1. a list of GPU numbers after the place is no count of none ---------------------------------------------------


@pytest.mark.parametrize("line", [
    "We saw Xid 79 errors on GPUs: 0, 3 and 5, then the job died",
    "Last night we got Xid 48 errors on GPUs: 0, 1",
    "We hit Xid 79 errors on GPU: 0.",
    "Got Xid 94 errors on GPU | 0 |",
    # variants: a list without spaces, "and" after the zero, a rank's number
    "We saw Xid 79 events on GPUs: 0,2",
    "we hit Xid 48 errors on GPUs: 0 and 1",
    "We saw Xid 13 errors on rank: 0",
])
def test_an_xid_on_a_gpu_numbered_after_its_colon_is_a_fault(line):
    assert _cls(line) == "cuda_fault", line


@pytest.mark.parametrize("line", [
    # the count of none the rule was made for still refuses
    "We saw Xid 79 events on node-3: 0",
    "Xid 79 errors on GPU 2 since boot: none",
    "We saw Xid 79 events on node-3 (count: 0)",
    "Xid 79 errors across all GPUs: 0",
    "Xid 48 errors on each GPU: 0.",
])
def test_an_xid_counted_at_none_where_it_was_counted_stays_none(line):
    assert xid_told(line) is None, line
    assert _cls(line) == "unknown", line


# --- 2. "'ll" is a hedge only as the second person's prediction -----------------------------------------------------


@pytest.mark.parametrize(("line", "cls"), [
    ("I'll paste the full log below, the run died with CUDA out of memory at step 1200", "cuda_oom"),
    ("I'll share more later but the job died with SIGSEGV in ncclCommInitRank", "segfault"),
    ("Update: I'll close this once confirmed, but the job segfaulted at step 120", "segfault"),
    ("Traceback below, I'll keep digging: the job got Xid 79 on node-3 and GPU has fallen off the bus", "cuda_fault"),
    ("It'll run for about an hour and then it hits an NCCL timeout", "nccl_error"),
    # variants: the typographic apostrophe, "we'll"
    ("I’ll attach the full log; the job died with CUDA out of memory after 300 steps", "cuda_oom"),
    ("We'll try a smaller batch, but the run died with CUDA out of memory at step 40", "cuda_oom"),
])
def test_a_failure_after_someones_own_plan_is_reported(line, cls):
    assert _cls(line) == cls, line


@pytest.mark.parametrize("line", [
    "Sooner or later you'll see CUDA out of memory",        # batch 47's text 1054, a course
    "Sooner or later you’ll see CUDA out of memory",
    "With this setting you'll hit an NCCL timeout at the first checkpoint",
])
def test_the_second_persons_prediction_stays_a_hedge(line):
    assert _cls(line) == "unknown", line


# --- 3. a denial of the ending itself before a program's status line ----------------------------------------------


@pytest.mark.parametrize("line", [
    "Never exited with code 137.",
    "We never saw: worker exited with code 137",
    "No longer happens after the upgrade: trainer exited with code 137",
    "After raising the memory limit we no longer get subprocess.CalledProcessError: Command '['python', 'train.py']' "
    "returned non-zero exit status 137.",
    "Not reproducible on 2.4: Command '...' returned non-zero exit status 139.",
    # variants: a contracted denial, the wrapper's negative code
    "We didn't get: worker exited with code 137",
    "Never again: worker exited with code -9",
])
def test_a_denied_status_line_is_no_ending(line):
    assert _cls(line) == "unknown", line


@pytest.mark.parametrize(("line", "cls"), [
    ("No restarts left: worker exited with code 137", "killed_oom"),
    ("[launcher] No restarts left: worker exited with code 137", "killed_oom"),
    ("srun: error: node1: task 0: Exited with exit code 137", "killed_oom"),
    ("Exit Code:    137", "killed_oom"),
    ("subprocess.CalledProcessError: Command '['python', 'train.py']' returned non-zero exit status 137.",
     "killed_oom"),
    ("[rank0]: subprocess.CalledProcessError: Command '['bash', 'run.sh']' returned non-zero exit status 139.",
     "segfault"),
    # a log level's tag before a program's own status line does not make it a mention (docs/crash-classes.md)
    ("INFO: worker exited with code -9", "killed_oom"),
])
def test_a_programs_own_status_line_still_decides(line, cls):
    assert _cls(line) == cls, line


# --- 4. a segfault with when it came, named as a kind of crash -----------------------------------------------------


@pytest.mark.parametrize("line", [
    "- segmentation fault when having circular reference (now raise StackOverflowError)",
    "- Segfault during shutdown (`free(): invalid pointer` heap corruption).",
    "# Suppress segfault during shutdown (known OmniGibson/Isaac Sim issue)",
    "## Segfault when using libcxx",
    "How to debug a segmentation fault when training with DeepSpeed",
    "What causes a segmentation fault when loading a model?",
    "Common causes of SIGSEGV during backward: ...",
    "Debugging a Segmentation Fault During Training: A Guide",
    # variants: a numbered item, a deeper heading
    "2. SIGSEGV during teardown of the profiler (fixed in 0.4)",
    "### Seg fault while loading shards",
])
def test_a_segfault_named_as_a_kind_is_none(line):
    assert _cls(line) == "unknown", line


@pytest.mark.parametrize("line", [
    "Core dumped (Segmentation Fault) while training Gr00t",      # batch 47's text 1044, a title
    "Both ranks show a segmentation fault during evaluation at epoch 3",
    "[Bug] SIGSEGV when resuming from the step-4000 checkpoint",
])
def test_a_segfault_told_with_when_it_came_still_decides(line):
    assert _cls(line) == "segfault", line


# --- 5. the signal's name where the code stands, with a cause of the kill ------------------------------------------


@pytest.mark.parametrize("line", [
    "When the OOM killer fires, the process exits with SIGKILL and no traceback.",
    "kill -9 makes the process exit with SIGKILL",
    "Ctrl-C twice and the trainer exits with SIGKILL",
    "scancel --signal=KILL 4411 and the worker exited with SIGKILL",
])
def test_a_named_signal_with_its_cause_is_no_oom_kill(line):
    assert wrapper_negative_status(line) is None, line
    assert _cls(line) == "unknown", line


@pytest.mark.parametrize("last", ["[1] python train.py exited with code SIGKILL", "[1] python train.py exited with code 137"])
def test_concurrently_killing_the_other_commands_is_no_oom_kill(last):
    lines = ["[0] npm run watch exited with code 1", "--> Sending SIGKILL to other processes..", last]
    assert _cls(lines) == "unknown", lines


@pytest.mark.parametrize(("lines", "cls"), [
    (["[1] python train.py --config lora.yaml exited with code SIGKILL"], "killed_oom"),   # batch 47's line
    (["sft worker exited with signal SIGKILL while saving checkpoint-1200"], "killed_oom"),
    # the command that ended first, before concurrently's kill, still tells why
    (["[1] python train.py exited with code SIGKILL", "--> Sending SIGTERM to other processes..",
      "[0] npm run watch exited with code SIGTERM"], "killed_oom"),
])
def test_a_named_signal_a_program_printed_still_decides(lines, cls):
    assert _cls(lines) == cls, lines


# --- 6. the two patterns that backtracked: a long run classifies at once (the guard is tests/test_patterns_never_hang)


def test_the_long_runs_the_review_timed_still_classify():
    assert _cls("We saw Xid 79 events on node" + "-" * 16_000) == "cuda_fault"
    assert _cls("x" + " " * 16_384 + "Exit Code:  137") == "killed_oom"


# --- minor: a CUDA error's own location outranks the watchdog's ----------------------------------------------------


def test_a_cuda_errors_location_before_the_watchdogs_is_no_nccl_error():
    lines = [
        "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
        "incorrect.",
        "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
        "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:44 (most recent "
        "call first):",
        "Exception raised from run at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2063 (most recent call "
        "first):",
    ]
    assert _cls(lines) != "nccl_error"


def test_the_watchdogs_location_alone_is_still_nccls():
    lines = ["Exception raised from run at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2063 (most recent "
             "call first):"]
    assert _cls(lines) == "nccl_error"
