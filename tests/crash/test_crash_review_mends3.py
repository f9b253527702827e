"""Mends of batch 41's rules after a review that classified texts it wrote: NVRTC's refusal of the GPU's
architecture deciding from a warning that went on, from advice whose exception name skipped the hedge check, and
losing to a peer's echo; the told-words hedges scoped to a sentence that ";" and abbreviations cut short, that
let changelogs and start-up banners through; and argparse's usage rule reading every compiler's "error:" line."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify, nccl_timeout_told, segfault_told

NVRTC = "nvrtc: error: invalid value for --gpu-architecture (-arch)"
WATCHDOG = ("[rank0]:[E1130 10:02:11.123 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            "600021 milliseconds before timing out.")
XID79 = "NVRM: Xid (PCI:0000:01:00): 79, pid=123, GPU has fallen off the bus."
ILLEGAL = "RuntimeError: CUDA error: an illegal memory access was encountered"

# --- 1. a line that went on after NVRTC refused (a warning, a fallback) does not outrank the attempt's end ----------

WENT_ON = [
    f"[W] {NVRTC}; falling back",
    f"[W jiterator] {NVRTC}, falling back to the CUDA kernel",
    f"UserWarning: {NVRTC}; falling back to eager",
    f"2026-05-06T17:10:46Z [464ms] [Warning] [omni.warp] {NVRTC}; using PTX fallback",
]


@pytest.mark.parametrize("line", WENT_ON)
@pytest.mark.parametrize(("code", "after", "cls"), [
    (-11, [], "segfault"),
    (-9, [], "killed_oom"),
    (1, [XID79], "cuda_fault"),
    (1, [ILLEGAL], "cuda_fault"),
    (1, [WATCHDOG], "nccl_error"),
])
def test_a_warning_of_nvrtc_that_went_on_leaves_the_attempts_own_end_the_cause(line, code, after, cls):
    v = classify(code, [line, *after], steps_seen=40)
    assert v.cls == cls, (line, after, v.cls, v.summary)


@pytest.mark.parametrize("line", WENT_ON[:2])
def test_a_warning_of_nvrtc_alone_still_names_the_environment(line):
    # nothing else ended the attempt: the refusal, as support, is still the best cause there is
    v = classify(1, [line], steps_seen=40)
    assert v.cls == "environment_error" and "NVRTC" in v.summary, (v.cls, v.summary)


@pytest.mark.parametrize("raised", [f"RuntimeError: {NVRTC}", f"  what():  {NVRTC}",
                                    f"cupy.cuda.compiler.CompileException: {NVRTC}"])
def test_nvrtc_raised_still_decides_before_the_signal_it_ends_with(raised):
    v = classify(-6, [raised], steps_seen=40)
    assert v.cls == "environment_error", (raised, v.cls, v.summary)


# --- 2. advice naming the exception is no refusal -------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    f"If you see RuntimeError: {NVRTC}, install the cu130 wheel.",
    f"Symptom: {NVRTC} when training on RTX 50xx. Fix: pip install torch --index-url .../cu128",
    f"Known issue: {NVRTC} on B300 with cu128, fixed in 2.9",
    f"You might get RuntimeError: {NVRTC} on a GB10.",
])
def test_advice_and_known_issues_naming_the_nvrtc_error_are_no_environment_error(line):
    v = classify(1, [line], steps_seen=30)
    assert v.cls != "environment_error", (line, v.cls, v.summary)


# --- 3. a peer's echo of the rank NVRTC ended ---------------------------------------------------------------------

def test_the_nvrtc_refusal_outranks_a_peers_nccl_echo_after_it():
    log = ["[rank1]:     tensor.erfinv_()", f"[rank1]: RuntimeError: {NVRTC}", "[rank1]: ",
           "[rank1]: nvrtc compilation failed: ", "[rank1]: #define NAN __int_as_float(0x7fffffff)",
           "[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
           "NCCLUtils.hpp:317, remote process exited or there was a network error, NCCL version 2.21.5"]
    v = classify(1, log, steps_seen=0)
    assert v.cls == "environment_error" and not v.retryable, (v.cls, v.summary)


def test_a_logged_environment_line_that_ended_no_rank_leaves_a_later_nccl_error_the_cause():
    # TensorFlow logs its cuInit failure and trains on, on the CPU: NCCL's failure after it is no echo of it
    log = ["E tensorflow/stream_executor/cuda/cuda_driver.cc:271] failed call to cuInit: "
           "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH: system has unsupported display driver / cuda driver combination",
           "[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
           "NCCLUtils.hpp:317, remote process exited or there was a network error, NCCL version 2.21.5"]
    v = classify(1, log, steps_seen=40)
    assert v.cls == "nccl_error", (v.cls, v.summary)


# --- 4., 5., 7. the sentence of a hedge: ";" and abbreviations end none; a fix's words count over the line --------

@pytest.mark.parametrize("line", [
    # ";" joins clauses of one sentence
    "This can happen when one rank is slow; the others then report an NCCL timeout.",
    "If the dataset is on NFS, loading is slow; rank 0 then hits an NCCL timeout at the first barrier.",
    "Possible causes: 1. a segfault in the dataloader; 2. an NCCL timeout.",
    # a changelog's heading names the fix for the entries after it
    "## v0.4.1 Fixes. NCCL timeout in eval barrier on 2 nodes (#124).",
    "Bug fixes: - Segfault in collate (#123). - NCCL timeout in eval barrier (#124).",
    "## v0.4.1 Fixes. SIGSEGV in ncclCommInitRank on 2 nodes (#130).",
    # abbreviations and an ellipsis end no sentence
    "Large batches may cause OOMs, slow steps, etc. and an NCCL timeout in the all-reduce.",
    "This can crash with a segfault... or an NCCL timeout in the reduce-scatter.",
    "Rank 3 may stall for approx. 10 minutes and then hit an NCCL timeout in the barrier.",
    "Both may differ in bf16 vs. fp32 and crash with a segfault in the kernel.",
    "This may be the same bug (cf. #12) and crash with a segfault in collate.",
    # a value after the words: a setting
    "The launcher uses an NCCL timeout of 30 min for every collective.",
])
def test_hedged_changelog_and_setting_lines_tell_no_failure(line):
    assert not nccl_timeout_told(line) and not segfault_told(line), line
    v = classify(1, [line], steps_seen=30)
    assert v.cls not in ("nccl_error", "segfault"), (line, v.cls, v.summary)


@pytest.mark.parametrize("line", [
    "The data loader may be slow on NFS. Rank 3 then hit an NCCL watchdog timeout.",
    "We could not reproduce it on one GPU. On eight GPUs it segfaulted at step 80.",
])
def test_a_hedge_of_an_earlier_sentence_still_says_nothing_of_a_later_one(line):
    v = classify(1, [line], steps_seen=30)
    assert v.cls in ("nccl_error", "segfault"), (line, v.cls, v.summary)


# --- 6. a program's own line (a log level's tag) tells no failure --------------------------------------------------

@pytest.mark.parametrize("line", [
    "[INFO] Setting up. Watchdog aborts the job on an NCCL timeout.",
    "INFO: Setting up. Watchdog aborts the job on an NCCL timeout.",
    "WARNING: Loaded 8 ranks. Rank 3 segfaulted in a previous run and is skipped.",
    "[W reducer.cpp:1360] Setting up. Watchdog aborts the job on an NCCL timeout.",
    "W0412 09:12:44.120000 501 launcher.py:874] Setting up. Watchdog aborts the job on an NCCL timeout.",
])
def test_a_line_with_a_log_level_tag_tells_no_failure(line):
    v = classify(1, [line], steps_seen=30)
    assert v.cls not in ("nccl_error", "segfault"), (line, v.cls, v.summary)


def test_an_error_level_line_still_tells_one():
    v = classify(1, ["[ERROR] Training stopped. Rank 3 died with an NCCL timeout in the all-reduce."], steps_seen=30)
    assert v.cls == "nccl_error", (v.cls, v.summary)


# --- 8. argparse's usage error only beside its usage line or its exit status -------------------------------------

@pytest.mark.parametrize("line", [
    NVRTC,
    "g++: error: unrecognized command-line option '-mno-avx'",
    "ninja: error: loading 'build.ninja': No such file or directory",
    "clang: error: unsupported option '-fopenmp'",
    "nvcc: error: failed to preprocess host compiler properties.",
    "Building the extension fails with g++: error: unrecognized command-line option '-mno-avx'",
])
def test_a_compilers_error_line_is_no_usage_error(line):
    v = classify(1, [line], steps_seen=0)
    assert v.cls != "config_error", (line, v.cls, v.summary)


def test_argparse_error_with_its_usage_line_is_a_configuration_error():
    v = classify(1, ["usage: train.py [-h] [--lr LR]", "train.py: error: argument --lr: invalid float value: 'x'"],
                 steps_seen=0)
    assert v.cls == "config_error" and "invalid float value" in v.summary, (v.cls, v.summary)


def test_argparse_error_alone_with_exit_status_2_is_a_configuration_error():
    v = classify(2, ["train.py: error: the following arguments are required: --model"], steps_seen=0)
    assert v.cls == "config_error", (v.cls, v.summary)


# --- 9. the hint names both directions of an NVRTC that does not know the GPU -------------------------------------

def test_the_nvrtc_hint_names_an_nvrtc_too_new_for_the_gpu_as_well():
    v = classify(1, [f"RuntimeError: {NVRTC}", "", "nvrtc compilation failed: "], steps_seen=0)
    assert v.cls == "environment_error", (v.cls, v.summary)
    assert "older than the GPU" in v.hint and "V100" in v.hint and "cu12" in v.hint, v.hint


# a setting told after the words (left over by the review's mends): the value the job runs with, no failure
@pytest.mark.parametrize("line", ["NCCL timeout was set to 3600 s.",
                                  "Our NCCL timeout is set at 2 hours for the eval barrier",
                                  "the NCCL timeout has been increased to 7200s on every node"])
def test_a_timeout_setting_told_after_its_words_tells_no_failure(line):
    assert not nccl_timeout_told(line), line


@pytest.mark.parametrize("line", ["An NCCL timeout was raised at step 812 on rank 3.",
                                  "We hit an NCCL timeout at step 812; the job was set to restart."])
def test_a_timeout_told_beside_a_setting_word_is_still_told(line):
    assert nccl_timeout_told(line), line
