"""Batch 52's rules (docs/crash-classes.md, "Public crash texts"), each on variants the batch's texts did not show,
and the lines they must not decide on.

Item 1: a runtime's line wrapped in Chinese, Japanese or Korean prose. The log line decides; the prose never does.
Before batch 52 Korean was no CJK text to the classifier (Hangul was not in ``crash._CJK_CHAR``): torch's DataLoader
line glued to Korean prose (``... Bus error가 발생하고 멈췄습니다``) ended nowhere and decided nothing, and Korean advice
around a runtime's bare words (``CUDA out of memory가 발생하면 ... 줄이세요``, if it occurs, reduce ...) decided as a
report; the Chinese limits were read only for a failure told in Chinese words, so Chinese advice around the bare
English words (``如果出现 CUDA out of memory，可以尝试...``) decided too. Now one function owns the CJK prose's limits
(``crash._cjk_mentioned``), read for the OOM's, a fault's and the DataLoader line's words; a runtime's message raised
in the prose (after an exception's name, or torch's full message) decides as it would alone."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify


def _cls(*lines: str, steps: int = 10) -> str:
    return classify(1, list(lines), steps_seen=steps).cls


# --- item 1: the log line decides --------------------------------------------------------------------------------

_TORCH_OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
              "79.15 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 77.9 GiB memory in use.")


@pytest.mark.parametrize("line, cls", [
    # torch's DataLoader line with Korean prose glued to it, no period (the signal's name ends at the Hangul)
    ("학습 도중 DataLoader worker (pid 12345) is killed by signal: Bus error가 발생하고 멈췄습니다", "bus_error"),
    ("RuntimeError: DataLoader worker (pid 4040) is killed by signal: Segmentation fault라는 에러가 납니다", "segfault"),
    ("DataLoader worker (pid 77) is killed by signal: Killed 이렇게 죽습니다", "killed_oom"),
    # torch's raised messages inside Korean, Chinese and Japanese sentences
    ("학습 300스텝에서 " + _TORCH_OOM + " 가 발생합니다", "cuda_oom"),
    ("训练到第300步报错：" + _TORCH_OOM, "cuda_oom"),
    ("学習中に以下のエラーが出ました。RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_fault"),
    ("학습 중 다음 오류가 발생했습니다. RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_fault"),
    # the runtime's bare words a reporter tells in Korean (it happened, at an epoch, on a named GPU)
    ("2번째 에폭에서 CUDA out of memory가 발생했습니다. RTX 4090에서 돌리고 있습니다", "cuda_oom"),
    ("학습 중 illegal memory access가 발생했습니다", "cuda_fault"),
    # a Korean report that asks for help after the words is still a report (the question is another clause)
    ("CUDA out of memory가 발생하는데 어떻게 해결하나요?", "cuda_oom"),
])
def test_a_runtimes_line_in_cjk_prose_decides(line, cls):
    assert _cls(line) == cls


def test_a_cjk_heading_or_advice_on_another_line_says_nothing_of_the_log_line():
    assert _cls("如果不设置的话，会报下面的错", _TORCH_OOM) == "cuda_oom"
    assert _cls("DataLoader worker가 죽으면 shm을 늘리세요", "RuntimeError: DataLoader worker (pid 9) is killed by "
                "signal: Bus error.") == "bus_error"


# --- item 1: the prose never decides -----------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    # Korean conditions and advice after the words (the verb follows its object in Korean)
    "CUDA out of memory 에러가 나는 경우 batch size를 줄이세요",
    "CUDA out of memory가 발생하면 gradient checkpointing을 켜 보세요",
    "illegal memory access가 발생하면 드라이버를 업데이트하세요",
    "DataLoader worker (pid XXX) is killed by signal: Bus error가 발생하면 /dev/shm 크기를 늘리세요",
    "DataLoader worker is killed by signal: Bus error 에러가 나는 경우 shm-size를 늘려야 합니다",
    # a Korean condition or a frequency before the words in their sentence
    "만약 CUDA out of memory가 뜨면 배치를 줄이세요",
    "보통 CUDA out of memory는 배치 크기 때문에 생깁니다",
    # a Korean guide's cause or way, or a question about the words themselves
    "CUDA out of memory 원인과 해결 방법",
    "왜 CUDA out of memory가 발생하나요?",
    # Chinese conditions and advice around the bare English words
    "如果出现 CUDA out of memory，可以尝试减小batch size",
    "出现CUDA out of memory的情况下，建议减小batch size",
    "如果遇到 illegal memory access，可以设置 CUDA_LAUNCH_BLOCKING=1",
    # a Japanese quote naming a kind of error
    "「CUDA out of memory」というエラーが出る場合は、batch sizeを減らしてください",
    "「illegal memory access」というエラーが出る場合は、ドライバを更新してください",
])
def test_cjk_advice_around_a_runtimes_words_decides_nothing(line):
    assert _cls(line) == "unknown"


def test_a_cjk_report_before_the_words_is_not_a_condition():
    """The run's own when (학습할 때, 训练到...时) before the words is the report's, and a past tense after them is no
    condition (발생했을 때 is read as the run's)."""
    assert _cls("학습할 때 CUDA out of memory가 발생했습니다") == "cuda_oom"
    assert _cls("训练到第3000步时出现 CUDA out of memory，不知道是什么原因") == "cuda_oom"


# --- sbatch's own refusal ----------------------------------------------------------------------------------------

_SBATCH = "sbatch: error: Batch job submission failed: "


@pytest.mark.parametrize("why", [
    "Requested time limit is invalid (missing or exceeds some limit)",
    "Invalid partition name specified",
    "Invalid account or account/partition combination specified",
    "Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)",
    "Requested node configuration is not available",
])
def test_sbatchs_refusal_in_a_log_is_submit_refused(why):
    v = classify(1, ["+ sbatch run.sbatch", _SBATCH + why], steps_seen=0)
    assert (v.cls, v.recovery, v.retryable) == ("submit_refused", "fail", False)
    assert why[:40] in v.summary
    # behind a markdown quote or in a code span, as a paste shows it
    assert _cls("> " + _SBATCH + why, steps=0) == "submit_refused"


@pytest.mark.parametrize("why", [
    "Unable to contact slurm controller (connect failure)",
    "Socket timed out on send/recv operation",
    "Zero Bytes were transmitted or received",
])
def test_sbatch_that_reached_no_controller_is_slurm_unavailable(why):
    from moeconsole.runner.core.sbatch_words import controller_unreachable
    v = classify(1, [_SBATCH + why], steps_seen=0)
    assert v.cls == "slurm_unavailable" and v.retryable
    assert controller_unreachable(why)


@pytest.mark.parametrize("line", [
    # sbatch's words quoted inside a sentence, not sbatch's own line
    "If you see sbatch: error: Batch job submission failed: Invalid partition name specified, fix the partition",
    "The docs list `Batch job submission failed: Requested time limit is invalid` as a common error",
    # srun's and salloc's own lines are not sbatch's
    "srun: error: Unable to allocate resources: Requested time limit is invalid (missing or exceeds some limit)",
])
def test_sbatchs_words_elsewhere_decide_nothing(line):
    assert _cls(line, steps=0) == "unknown"


def test_the_runner_and_the_classifier_split_sbatchs_reasons_the_same_way():
    """One owner (core.sbatch_words): the Slurm client's SubmitError.transient and the classifier read the same words."""
    from moeconsole.runner.core.sbatch_words import controller_unreachable
    from moeconsole.runner.process.slurm import client
    assert client.sbatch_words.controller_unreachable is controller_unreachable
    assert not controller_unreachable("Invalid partition name specified")


# --- cudaErrorAssert's words retold ------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    "Device-side assert crash during GRPO training on single A6000 (Qwen2)",
    "[BUG] device-side assert in the MoE router after 2k steps",
    "训练到一半报了 device-side assert",
])
def test_a_device_side_assert_retold_is_a_cuda_fault(line):
    v = classify(1, [line], steps_seen=100)
    assert v.cls == "cuda_fault" and "device-side assert triggered" in v.summary


@pytest.mark.parametrize("line", [
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
    "Device-side assertions were explicitly omitted for this error check; the error probably arose while initializing",
    "device-side asserts are disabled in release builds",
    "To avoid a device-side assert, check your labels",
    "If you hit a device-side assert, set CUDA_LAUNCH_BLOCKING=1",
    "WARNING: a device-side assert is possible when labels exceed the vocab",
])
def test_device_side_assert_words_that_tell_no_fault_decide_nothing(line):
    assert _cls(line, steps=100) == "unknown"


# --- a Chinese FAQ entry's symptom label -------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    '症状:训练过程中突然崩溃,错误日志包含"CUDA error: an illegal memory access was encountered"。',
    "症状：RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 24.00 GiB total capacity)",
    "- **症状**：训练崩溃，日志显示 torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "症狀：RuntimeError: CUDA error: device-side assert triggered",
])
def test_a_faq_entrys_symptom_names_its_error(line):
    assert _cls(line) == "unknown"


@pytest.mark.parametrize("line, cls", [
    # a report's heading words are no FAQ's label (tests/crash/public 1040, 1050 open with "Symptom")
    ("问题现象：训练到第300步报错 RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_fault"),
    ("Symptom: RuntimeError: CUDA error: an illegal memory access was encountered", "cuda_fault"),
    # the label on another line says nothing of the runtime's own line under it
    ("症状:", "unknown"),
])
def test_other_labels_and_lines_still_decide(line, cls):
    assert _cls(line) == cls
    assert _cls("症状：训练崩溃", "RuntimeError: CUDA error: an illegal memory access was encountered") == "cuda_fault"
