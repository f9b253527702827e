"""Review R44, findings 2 and 4: which earlier crashes an attempt has passed (``policy.crashes_passed``,
``policy.saved_past``). It passes a crash only when it ran through that step itself, counted from
the same base (``launcher.count_start``: the checkpoint's step, or 0 for a trainer that counts from
1 again); its success, or a save of its own verified at or past the crash step, passes even a crash
at the last step or the final save, where no later step is ever logged (pure)."""
from __future__ import annotations

from moeconsole.runner.core.policy import AttemptRecord, crashes_passed, saved_past

NOW = 1_700_000_000.0


def rec(attempt, resumed, last, cls, resumed_from=None):
    return AttemptRecord(attempt=attempt, started_at=NOW, ended_at=NOW + 1, resumed_step=resumed,
                         last_step=last, crash_class=cls, resumed_from=resumed_from)


NCCL_THEN_OOM = [rec(1, None, 45, "nccl_error"), rec(2, 20, 39, "cuda_oom", "/o/checkpoint-20")]


def attempts(got):
    return [r.attempt for r in got]


def test_an_attempt_resumed_beyond_the_crash_step_never_reran_it():
    # the reviewer's input: attempt 3 resumed from checkpoint-40 logs 41; attempt 2's OOM was at 39
    assert attempts(crashes_passed(NCCL_THEN_OOM, 3, 41, start=40, resumed_from="/o/checkpoint-40")) == []
    # the same attempt 3 resumed from checkpoint-20 reran step 39: passed
    assert attempts(crashes_passed(NCCL_THEN_OOM, 3, 41, start=20, resumed_from="/o/checkpoint-20")) == [2]
    # and, past step 45, attempt 1's NCCL error as well
    assert attempts(crashes_passed(NCCL_THEN_OOM, 3, 46, start=20, resumed_from="/o/checkpoint-20")) == [1, 2]
    # a fresh start counts from 0
    assert attempts(crashes_passed(NCCL_THEN_OOM, 3, 40)) == [2]


def test_steps_counted_from_different_bases_say_nothing_about_each_other():
    # attempt 1 counted global steps to 30; attempt 2 counts from 1 again after checkpoint-20 (swift
    # --resume_only_model --ignore_data_skip): its step 31 is global step 51, but nothing says so
    hist = [rec(1, None, 30, "cuda_oom")]
    assert attempts(crashes_passed(hist, 2, 31, start=0, resumed_from="/o/checkpoint-20")) == []
    # two count-from-1 attempts from the same checkpoint compare
    local = [rec(1, 0, 30, "cuda_oom", "/o/checkpoint-20")]
    assert attempts(crashes_passed(local, 2, 31, start=0, resumed_from="/o/checkpoint-20")) == [1]
    assert attempts(crashes_passed(local, 2, 31, start=0, resumed_from="/o/checkpoint-10")) == []
    assert attempts(crashes_passed(local, 2, 31, start=20, resumed_from="/o/checkpoint-20")) == []
    # a crash before any step is passed by any step logged
    assert attempts(crashes_passed([rec(1, 0, None, "port_in_use", "/o/checkpoint-20")], 2, 1)) == [1]


def test_a_success_passes_a_crash_at_the_last_step():
    # disk_full in the final save at step 12 of 12: no step past 12 is ever logged
    hist = [rec(1, None, 12, "disk_full"), rec(2, 8, 12, None, "/o/checkpoint-8")]
    assert attempts(crashes_passed(hist[:1], 2, 12, start=8, resumed_from="/o/checkpoint-8")) == []
    assert attempts(crashes_passed(hist[:1], 2, 12, finished=True)) == [1]
    # a user's kill is no crash to pass
    assert attempts(crashes_passed([rec(1, None, 3, "user_kill")], 2, 12, finished=True)) == []


def test_a_verified_save_at_or_past_the_crash_step_passes_it():
    hist = [rec(1, None, 12, "disk_full")]
    assert attempts(saved_past(hist, 2, 12, start=8, resumed_from="/o/checkpoint-8", own_step=12)) == [1]
    assert attempts(saved_past(hist, 2, 8, start=4, resumed_from="/o/checkpoint-4", own_step=8)) == []      # before the crash
    # the checkpoint an attempt resumed from is no save of its own
    assert attempts(saved_past(hist, 2, 12, start=12, resumed_from="/o/checkpoint-12", named=True)) == []
    # a save from another count base
    assert attempts(saved_past(hist, 2, 12, start=0, resumed_from="/o/checkpoint-8", own_step=12)) == []


def test_a_save_is_the_attempts_own_only_when_its_log_named_it_or_it_logged_that_far():
    """Round 18: an earlier attempt's save that came whole (and was verified) while a later attempt
    runs, before that attempt reached its step, passes nothing; its own save line or its own steps do."""
    hist = [rec(1, None, 8, "segfault")]
    assert attempts(saved_past(hist, 2, 8, start=4, resumed_from="/o/checkpoint-4", own_step=5)) == []
    assert attempts(saved_past(hist, 2, 8, start=4, resumed_from="/o/checkpoint-4")) == []
    assert attempts(saved_past(hist, 2, 8, start=4, resumed_from="/o/checkpoint-4", named=True)) == [1]
    assert attempts(saved_past(hist, 2, 8, start=4, resumed_from="/o/checkpoint-4", own_step=8)) == [1]
