"""Review R39 of batch 53's rule (a GPU's OOM told with the runtime's name, ``crash._OOM_TOLD_RUNTIME`` in
``crash.oom_told_on_gpu``; docs/crash-classes.md, the cuda_oom row and "Public crash texts"): each finding's input and
its variants, both ways.

1. A fixed or past OOM told before a real error line replaced it (the told rules' one guard did not read "used to",
   "stopped", "resolved" or a fix after the words: ``crash._told_over``).
2. Real reports were refused by a list of the words allowed after the OOM's words; a modifier's noun decides now.
3. The family's pre-filter and the regex disagreed on case ("cuda OOM", "CUDA-OOM", "mps oom").
4. A lowercase "i" was no first person.
5. The verb list was copied and narrow ("encounter", "ran into", "seeing", "experienced"): one family now.
6. A quoted or imagined user's words, a speaker's label, a pronoun that governs another subject told the OOM.
7. Hedges, predictions, habits, a question without its mark, a test's clause passed."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import classify, oom_told_on_gpu

_TRACE = ["Traceback (most recent call last):",
          '  File "train.py", line 10, in <module>',
          "RuntimeError: normal expects all elements of std >= 0.0"]


def _verdict(*lines: str, steps: int = 10):
    return classify(1, list(lines), steps_seen=steps)


def _told(line: str) -> None:
    assert oom_told_on_gpu(line), line
    v = _verdict(line)
    assert v.cls == "cuda_oom", (line, v.cls, v.summary)


def _not_told(line: str) -> None:
    assert not oom_told_on_gpu(line), line
    assert _verdict(line).cls != "cuda_oom", line


# 1. a past or fixed OOM is no report, and the real error line after it decides
@pytest.mark.parametrize("line", [
    "Before this I was getting a CUDA OOM error with 4096 envs, I fixed that by lowering num_envs to 2048.",
    "We used to get CUDA OOM at step 100, but not since 0.4.2",
    "I stopped getting CUDA OOM after enabling gradient checkpointing",
    "I was getting a CUDA OOM error but it's resolved now",
    "Previously I got a CUDA OOM; solved it with a smaller batch",
    "Before this PR we were getting CUDA OOM at step 10; this PR fixes it",
    "Without this patch I was getting a CUDA out of memory error, with it training is fine",
    "We used to get out of memory on the A100",
])
def test_a_past_or_fixed_oom_is_no_report(line):
    _not_told(line)
    v = _verdict(*_TRACE[:2], line, _TRACE[2])
    assert v.cls == "unknown" and "normal expects" in v.summary, v.summary


@pytest.mark.parametrize("line", [
    "I fixed the data loader, but I still get a CUDA OOM at step 40",
    "I got a CUDA OOM at step 40 and nothing solved it",
    "I got a CUDA OOM at step 40, I haven't fixed it yet",
    "Earlier today I got a CUDA OOM at step 40",
])
def test_a_fix_that_did_not_end_the_oom_leaves_the_report(line):
    _told(line)


# 2. what follows the words does not refuse them; a modifier's noun does
@pytest.mark.parametrize("line", [
    "I keep getting CUDA OOM issues", "I'm getting CUDA OOM problems at step 300",
    "I'm getting CUDA out-of-memory issues", "I'm getting CUDA OOM despite 80GB",
    "I got CUDA OOM then the process died", "I got CUDA OOM within 10 steps", "I got CUDA OOM around step 500",
    "I got CUDA OOM by step 20", "I got CUDA OOM upon loading", "I'm getting CUDA OOM errors only on rank 0",
    "I get CUDA OOM errors like below", "I get CUDA OOM errors or hangs", "I got a CUDA OOM crash at step 40",
    "I keep hitting CUDA OOMs", "I hit the CUDA OOM at step 40",
])
def test_reports_whatever_follows_the_words(line):
    _told(line)


@pytest.mark.parametrize("line", [
    "I wrote a CUDA OOM handler for the trainer", "I hit a CUDA OOM error handler bug in the trainer",
    "We got a CUDA OOM detection script working", "I ran the CUDA OOM tests, they passed",
])
def test_the_words_as_a_modifier_tell_none(line):
    _not_told(line)


# 3. the pre-filter reads what the rule reads
@pytest.mark.parametrize("line", [
    "I got cuda OOM at step 5", "I got CUDA oom at step 5", "We hit CUDA-OOM at step 5.",
    "I keep getting an MPS backend OOM at step 5", "I keep getting mps oom at step 5", "I hit an npu oom at step 5",
    "I got an xpu out of memory error at step 5", "I got a hip OOM at step 5",
])
def test_the_runtimes_name_in_any_case(line):
    _told(line)


# 4. a lowercase "i"
@pytest.mark.parametrize("line", [
    "i keep getting cuda oom at step 500", "i'm getting a CUDA OOM error at step 500",
])
def test_a_lowercase_i_is_the_first_person(line):
    _told(line)


def test_i_e_is_no_first_person():
    _not_told("a worker, i.e. the trainer, hits CUDA OOM and dies")


# 5. the verbs of meeting an OOM, one family with the host's
@pytest.mark.parametrize("line", [
    "I have tried various settings, but I consistently encounter CUDA OOM errors, even when the batch size is set to 1.",
    "We ran into a CUDA OOM at step 400", "I'm seeing CUDA OOM at step 40", "I'm facing CUDA OOM at step 40",
    "I experienced a CUDA OOM at step 40", "I tried batch 8 and got a CUDA OOM at step 40",
])
def test_the_family_of_verbs(line):
    _told(line)


# 6. someone else's words, or a pronoun that is not the OOM's subject
@pytest.mark.parametrize("line", [
    '**User**: "I\'m getting CUDA OOM with DeepSeek-V3 on 8x H100 GPUs"',
    '* **Prompt/Objective:** "How do we fit our 3-model ensemble training on a single 15GB T4 GPU? We keep getting '
    'CUDA OOM."',
    "I believe a worker hits CUDA OOM and the whole job dies",
    "User: I'm getting a CUDA OOM error at step 10",
    "Symptom: we hit CUDA OOM during eval",
    "He said \u201cI got a CUDA OOM at step 10\u201d",
])
def test_a_quoted_or_imagined_user_tells_none(line):
    _not_told(line)


def test_a_skill_docs_example_block_is_no_oom():
    block = ["### Example 2: Troubleshooting OOM", "",
             '**User**: "I\'m getting CUDA OOM with DeepSeek-V3 on 8x H100 GPUs"', "",
             "**Assistant using this skill**:", "",
             "1. **Diagnosis**: DeepSeek-V3 is a 671B MoE model requiring significant VRAM"]
    for steps in (0, 10):
        assert _verdict(*block, steps=steps).cls != "cuda_oom"


@pytest.mark.parametrize("line", [
    'I ran "python train.py --bs 8" and got a CUDA OOM at step 10',
    "Problem: I'm getting a CUDA OOM error at step 10",
    "my run got a cuda oom right after the first eval",
])
def test_the_reporters_own_words_still_tell(line):
    _told(line)


# 7. hedges, predictions, habits, questions without their mark, a test's clause
@pytest.mark.parametrize("line", [
    "Maybe I'm getting a CUDA OOM", "Probably I'm getting CUDA OOM.", "I guess I'm getting a CUDA OOM",
    "I doubt we hit CUDA OOM here", "I'm afraid we'll hit CUDA OOM", "I expect to hit CUDA OOM at batch 128.",
    "When I get a CUDA OOM, I lower the batch size.", "Why am I getting a CUDA OOM error",
    "I wrote a test that checks we get a CUDA OOM error when the model is too large",
    "I'd get CUDA OOM when I run with batch 64, so I use 32",
])
def test_hedges_predictions_and_habits_tell_none(line):
    _not_told(line)


@pytest.mark.parametrize("line", [
    "When I run with batch 64 I get a CUDA OOM at step 10",
    "When I run with batch 64, I get a CUDA OOM at step 10",
    "I'm not sure why, but I keep getting CUDA OOM at step 10",
])
def test_the_reporters_own_condition_still_tells(line):
    _told(line)


@pytest.mark.parametrize("line", [
    "I was getting a CUDA OOM error, fixed by reducing batch size. Now training works.",
    "I thought I was getting a CUDA OOM, but it was a NaN",
])
def test_a_fix_by_a_change_and_a_thought_tell_none(line):
    _not_told(line)


@pytest.mark.parametrize("line, cls", [
    # the one guard's new reading of what is over or unsure is shaped so the other told rules keep their reports
    ("No idea why the job crashed with an illegal memory access at step 40", "cuda_fault"),
    ("I'd like to report that the job crashed with an illegal memory access at step 40", "cuda_fault"),
    ("The config used to train crashed with an illegal memory access at step 40", "cuda_fault"),
    ("The previously trained checkpoint crashed with an illegal memory access at step 40", "cuda_fault"),
    ("That is why we hit Xid 79 on GPU 2 and the job died", "cuda_fault"),
    ("I'd like to report that I got a CUDA OOM at step 40", "cuda_oom"),
])
def test_the_guard_keeps_the_told_rules_reports(line, cls):
    assert _verdict(line).cls == cls, line


@pytest.mark.parametrize("line", [
    "We used to hit an illegal memory access at step 100, but not since 0.4.2",
    "Previously we got an illegal memory access in the varlen kernel; this PR fixes it",
])
def test_a_past_fault_told_in_words_is_no_report(line):
    assert _verdict(line).cls != "cuda_fault", line


@pytest.mark.parametrize("line", [
    "I think I'm getting a CUDA OOM because of the eval loop",
    "We've been running into CUDA OOM at step 5",
    "I used to train this fine, but now I get CUDA OOM at step 5",
    "I'd been getting CUDA OOM for days",
])
def test_a_reporters_diagnosis_and_history_still_tell(line):
    _told(line)
