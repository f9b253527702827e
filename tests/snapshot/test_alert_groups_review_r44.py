"""Review R44, finding 1: a ``past_crash`` resolves only the passed crash's own cause group, and
never a group holding a fact about a checkpoint (a save inside the excursion, a bad save): passing
a step is no verdict on a checkpoint. Before, every group with a crash class whose attempts were all
passed was resolved, so attempt 2's warning about checkpoint-35 left every view when attempt 3
passed attempt 2's OOM (pure: the events the runner writes)."""
from __future__ import annotations

from moeconsole.runner.rundir.alertgroups import AlertBook

T = 1_700_000_000.0


def ev(i, type_, **kw):
    return {"v": 1, "t": T + i, "type": type_, **kw}


def passed(i, now, crashed, step, cls):
    return ev(i, "past_crash", attempt=now, step=step + 1, crashed_attempt=crashed, crash_step=step, crash_class=cls)


NAN_THEN_OOM = [
    ev(1, "alert", attempt=1, level="critical", rule="non_finite", step=20, message="loss is nan at step 20"),
    ev(2, "crash", attempt=1, step=20, summary="loss is nan", **{"class": "divergence"}),
    passed(3, 2, 1, 20, "divergence"),
    ev(4, "alert", attempt=2, level="warning", rule="checkpoint_in_excursion", step=35,
       message="checkpoint /r/output/checkpoint-35 saved during a grad-norm excursion"),
    ev(5, "crash", attempt=2, step=39, summary="CUDA out of memory", **{"class": "cuda_oom"}),
    passed(6, 3, 2, 39, "cuda_oom"),
]


def standing(events):
    return {g.key: (g.resolved, g.resolved_why) for g in AlertBook().feed_all(events).groups()}


def test_passing_an_oom_resolves_the_oom_and_not_the_divergence_group_with_a_checkpoint_warning():
    got = standing(NAN_THEN_OOM)
    assert got["crash:cuda_oom"] == (True, "attempt 3 trained past step 39, where attempt 2 crashed")
    assert got["divergence"] == (False, None)   # checkpoint-35's warning is still news


def test_the_divergence_crash_alone_is_still_resolved_when_passed():
    assert standing(NAN_THEN_OOM[:3])["divergence"] == (True, "attempt 2 trained past step 20, where attempt 1 crashed")


def test_a_same_cause_group_holding_a_save_in_the_excursion_stays_open():
    events = [
        ev(1, "alert", attempt=1, level="critical", rule="non_finite", step=10, message="loss is nan at step 10"),
        ev(2, "alert", attempt=1, level="critical", rule="checkpoint_in_excursion", step=10,
           message="checkpoint /r/output/checkpoint-10 saved while loss/grad norm is non-finite"),
        ev(3, "crash", attempt=1, step=10, summary="loss is nan", **{"class": "divergence"}),
        passed(4, 2, 1, 10, "divergence"),
    ]
    assert standing(events)["divergence"] == (False, None)


def test_a_pass_of_another_class_never_resolves_a_crash_group():
    events = [ev(1, "crash", attempt=1, step=5, summary="segfault", **{"class": "segfault"}),
              passed(2, 2, 1, 5, "cuda_oom")]   # a misattributed class: the segfault's group is not it
    assert standing(events)["crash:segfault"] == (False, None)
    assert standing(events[:1] + [passed(2, 2, 1, 5, "segfault")])["crash:segfault"][0] is True
