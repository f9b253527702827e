"""Batch 47's rules (docs/crash-classes.md, "Public crash texts"), each on a variant the batch's texts did not show:
cudarc's DriverError with the driver's out-of-memory name (Candle, a Rust panic's unwrap) is a CUDA OOM; torch 2.8+'s
watchdog rethrow located at Watchdog::run in ProcessGroupNCCL.cpp is NCCL's, as ncclCommWatchdog's was; a segmentation
fault named with when in the run it came ("while training", "during evaluation") is told; a wrapper that names the
signal where the exit code would stand ("exited with code SIGKILL") tells how its child ended; "'ll" is "will", a
hedge. Each rule also gets the lines its words must not decide on: advice, a changelog, a table, help text, a
start-up line, a setting, another program's location line, an interrupt."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify

# --- cudarc's DriverError(CUDA_ERROR_OUT_OF_MEMORY, "out of memory") --------------------------------------------


@pytest.mark.parametrize("lines", [
    # a Rust binary that unwrapped Candle's error: the panic message wraps the driver error twice
    ["thread 'main' panicked at src/train.rs:214:41:",
     "called `Result::unwrap()` on an `Err` value: Cuda(Cuda(DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\")))"],
    # candle's Display of the error, returned from main
    ["Error: DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\")"],
    # a wrapper that keeps cuGetErrorString's lookup as an Option
    ["[train] step 812 failed: DriverError(CUDA_ERROR_OUT_OF_MEMORY, Some(\"out of memory\"))"],
])
def test_cudarc_driver_error_out_of_memory_is_a_cuda_oom(lines):
    v = classify(1, lines, steps_seen=300)
    assert v.cls == "cuda_oom", (lines, v.summary)


@pytest.mark.parametrize("lines", [
    # advice on the error, not a run that met it
    ["If you see DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\"), lower the batch size."],
    # a changelog's fix
    ["- Fixed DriverError(CUDA_ERROR_OUT_OF_MEMORY, \"out of memory\") when caching latents (#2250)"],
])
def test_cudarc_driver_error_out_of_memory_only_mentioned_is_no_cuda_oom(lines):
    v = classify(1, lines, steps_seen=300)
    assert v.cls != "cuda_oom", (lines, v.summary)


def test_another_driver_error_is_read_by_its_own_name():
    v = classify(1, ["Error: DriverError(CUDA_ERROR_ILLEGAL_ADDRESS, \"an illegal memory access was encountered\")"],
                 steps_seen=300)
    assert v.cls == "cuda_fault", v.summary


# --- the watchdog's rethrow located at Watchdog::run (torch 2.8+) -----------------------------------------------


def test_watchdog_rethrow_frames_at_watchdog_run_are_an_nccl_error():
    lines = [
        "Exception raised from run at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1946 (most recent call first):",
        "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3b6d41df86 in "
        "/usr/local/lib/python3.12/dist-packages/torch/lib/libc10.so)",
        "frame #1: <unknown function> + 0xe34731 (0x7f70d2429731 in /usr/local/lib/python3.12/dist-packages/torch/lib/"
        "libtorch_cuda.so)",
        "frame #2: <unknown function> + 0xdc253 (0x7f71292eb28c in /lib/x86_64-linux-gnu/libstdc++.so.6)",
    ]
    v = classify(-6, lines, steps_seen=300)
    assert v.cls == "nccl_error", v.summary


def test_another_programs_run_location_is_no_nccl_error():
    lines = ["Exception raised from run at /src/dataloader/worker_pool.cpp:88 (most recent call first):",
             "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f3b6d41df86 in libc10.so)"]
    v = classify(1, lines, steps_seen=300)
    assert v.cls != "nccl_error", v.summary


def test_a_cuda_fault_the_watchdog_rethrew_at_run_stays_the_fault():
    lines = [
        "[rank1]:[E1105 18:09:16.257152106 ProcessGroupNCCL.cpp:1899] [PG ID 0 PG GUID 0(default_pg) Rank 1] Process "
        "group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered",
        "Exception raised from run at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:2063 (most recent call "
        "first):",
    ]
    v = classify(-6, lines, steps_seen=300)
    assert v.cls == "cuda_fault", v.summary


# --- a segmentation fault with when in the run it came ----------------------------------------------------------


@pytest.mark.parametrize("line", [
    "Both ranks show a segmentation fault during evaluation at epoch 3",
    "seg fault while loading the dataset on rank 3 (num_workers=8)",
    "[Bug] SIGSEGV when resuming from the step-4000 checkpoint",
    # a title's capitals: routed to the signal rules in any case
    "Core dumped (Segmentation Fault) while training the policy",
    "SEGMENTATION FAULT during eval on rank 0",
    "Seg Fault while loading shards",
])
def test_a_segfault_told_with_when_it_came_is_a_segfault(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls == "segfault", (line, v.summary)


@pytest.mark.parametrize("line", [
    "To avoid a segfault while training on MPS, set num_workers=0.",                  # advice
    "- Fix segmentation fault during teardown of the rollout engine (#123)",         # a changelog's fix
    "This may cause a segfault when loading checkpoints written by 0.3.",            # a possibility
    "[INFO] a SIGSEGV during shutdown of the profiler is harmless and ignored",     # a start-up line
])
def test_a_segfault_with_when_only_mentioned_is_none(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls != "segfault", (line, v.summary)


# --- a wrapper naming the signal where the exit code would stand ------------------------------------------------


@pytest.mark.parametrize(("line", "cls"), [
    ("[1] python train.py --config lora.yaml exited with code SIGKILL", "killed_oom"),   # concurrently's line
    ("trainer process exited with signal SIGBUS after 1200 steps", "bus_error"),
    ("sft worker exited with signal SIGKILL while saving checkpoint-1200", "killed_oom"),
])
def test_a_named_signal_where_the_code_stands_tells_how_the_child_ended(line, cls):
    v = classify(1, [line], steps_seen=300)
    assert v.cls == cls, (line, v.summary)


@pytest.mark.parametrize("line", [
    "[WORKER] node dist/cron/worker.js exited with code SIGINT",            # the user's Ctrl-C: no crash
    "If the trainer exits with SIGKILL, the node ran out of host memory.",  # a hedge
    "exits with SIGKILL means the kernel's OOM killer chose it",            # an explanation
    "| exited with SIGKILL | OOM killer | lower the batch |",               # a table's row
    'restart_on: "exited with code SIGKILL"',                               # a setting
    "- Fixed a worker that exits with SIGKILL on shutdown (#77)",           # a changelog's fix
])
def test_a_named_signal_only_mentioned_is_no_signal(line):
    v = classify(1, [line], steps_seen=300)
    assert v.cls == "unknown", (line, v.summary)


# --- "'ll", a contracted "will", is a hedge ---------------------------------------------------------------------


@pytest.mark.parametrize(("line", "cls"), [
    ("Sooner or later you'll see CUDA out of memory; this lesson is the field guide.", "cuda_oom"),
    # (the second person only: "it’ll" tells what keeps happening as often, "It’ll run for an hour and then it hits
    # an NCCL timeout"; since the review of batch 47)
    ("On 24 GB you’ll fail with CUDA out of memory unless you enable gradient checkpointing.", "cuda_oom"),
    ("With a 600 s timeout you'll hit an NCCL timeout at the first full-state checkpoint.", "nccl_error"),
])
def test_a_failure_told_after_ll_is_a_possibility(line, cls):
    v = classify(1, [line], steps_seen=300)
    assert v.cls != cls, (line, v.summary)


def test_torchs_own_message_after_ll_still_decides():
    lines = ["I'll paste the end of the log:",
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
             "79.11 GiB of which 1.02 GiB is free."]
    v = classify(1, lines, steps_seen=300)
    assert v.cls == "cuda_oom", v.summary
