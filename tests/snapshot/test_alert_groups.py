"""One cause, one alert: the runner's alert events grouped by cause, with a count and the first
and last step, and the acknowledgement state every console shares (pure, plain data)."""
from __future__ import annotations

from moeconsole.runner.rundir.alertgroups import AlertBook, acknowledge, active, cause_of, read_acks, short_message, with_acks

T = 1_700_000_000.0


def ev(i, type_, **kw):
    return {"v": 1, "t": T + i, "type": type_, **kw}


# What the real runner writes for one NaN at step 10 of the demo (events.jsonl of a --fault nan@10 run).
ONE_NAN = [
    ev(0, "alert", attempt=1, level="critical", rule="non_finite", step=10, message="loss is nan at step 10",
       values={"loss": "nan"}),
    ev(0.1, "alert", attempt=1, level="critical", rule="non_finite", step=10, message="grad_norm is nan at step 10",
       values={"grad_norm": "nan"}),
    ev(0.2, "alert", attempt=1, level="critical", rule="checkpoint_in_excursion", step=10,
       message="checkpoint /runs/x/output/checkpoint-10 saved while loss/grad norm is non-finite"),
    ev(0.3, "crash", attempt=1, **{"class": "divergence"}, summary="non-finite loss or grad norm seen by the monitors",
       recovery="pause", decision="pause"),
    ev(0.4, "alert", attempt=1, level="critical", rule="restart_policy", step=10,
       message="paused: divergence: non-finite loss", values={"crash_class": "divergence"}),
]


def test_one_nan_is_one_alert_with_its_count_and_step():
    groups = AlertBook().feed_all(ONE_NAN).groups()
    assert len(groups) == 1
    g = groups[0]
    # the crash and the restart policy's decision on it are one event
    assert (g.key, g.level, g.count, g.first_step, g.last_step) == ("divergence", "critical", 4, 10, 10)
    assert g.title == "loss is nan at step 10" and g.headline() == "loss is nan at step 10 (x4, step 10)"
    assert set(g.rules) == {"non_finite", "checkpoint_in_excursion", "crash", "restart_policy"}


def test_a_growing_leak_is_one_alert_with_first_and_last_step():
    leak = [ev(i, "alert", attempt=1, level="warning", rule="mem_growth", step=100 + 20 * i,
               message=f"memory {60 + i} GiB is {i + 1} GiB above its flat level") for i in range(19)]
    leak.append(ev(30, "alert", attempt=1, level="critical", rule="mem_headroom", step=480,
                   message="memory headroom 0.4 GiB below 0.5 GiB"))
    (g,) = AlertBook().feed_all(leak).groups()
    assert (g.key, g.count, g.first_step, g.last_step, g.level) == ("memory", 20, 100, 480, "critical")
    assert g.title.startswith("memory headroom 0.4 GiB"), "the critical one names the group"


def test_a_user_kill_is_no_alert_and_crashes_group_by_class():
    events = [ev(0, "crash", attempt=1, **{"class": "user_kill"}, summary="killed by the user"),
              ev(1, "crash", attempt=2, **{"class": "cuda_oom"}, summary="CUDA out of memory"),
              ev(2, "alert", attempt=2, level="warning", rule="restart_policy", message="restart 2/10",
                 values={"crash_class": "cuda_oom"}),
              ev(3, "crash", attempt=3, **{"class": "cuda_oom"}, summary="CUDA out of memory")]
    assert cause_of(events[0]) is None
    (g,) = AlertBook().feed_all(events).groups()
    assert (g.key, g.count, g.attempts) == ("crash:cuda_oom", 2, (2, 3)), "two crashes; a decision is no third"


def test_bad_saves_are_one_cause_and_headlines_keep_the_name_not_the_path():
    events = [ev(i, "alert", attempt=1, level="critical", rule="checkpoint_bad", step=s,
                 message=f"checkpoint checkpoint-{s} is empty_stub: adapter_model.safetensors holds no tensors")
              for i, s in enumerate((8, 12))]
    (g,) = AlertBook().feed_all(events).groups()
    assert g.headline() == "checkpoint checkpoint-12 is empty_stub (x2, steps 8-12)", "the newest, and the range"
    assert short_message("checkpoint /very/long/run/dir/output/checkpoint-40 saved while x") == \
        "checkpoint checkpoint-40 saved while x"
    assert short_message("model meta-llama/Llama-3.1-8B is gated") == "model meta-llama/Llama-3.1-8B is gated", \
        "a namespace/name repo id is no path: it stays whole"
    assert short_message("save to output/v0-20250101/checkpoint-8 failed") == "save to checkpoint-8 failed"
    # a colon inside brackets is not the detail's: Slurm's crash summaries stay whole
    assert short_message("the job reached its time limit (Slurm: TIMEOUT)", 48) == \
        "the job reached its time limit (Slurm: TIMEOUT)"
    assert short_message("loss is nan (step 3): see the log") == "loss is nan (step 3)"


def test_an_acknowledgement_covers_what_was_seen_and_a_newer_alert_opens_it_again(tmp_path):
    book = AlertBook().feed_all(ONE_NAN)
    acks = acknowledge(tmp_path, book.groups())
    assert read_acks(tmp_path) == acks == {"divergence": T + 0.4}
    assert active(book.groups(read_acks(tmp_path))) == []
    book.feed(ev(50, "alert", attempt=2, level="critical", rule="non_finite", step=30, message="loss is nan"))
    (g,) = active(book.groups(read_acks(tmp_path)))
    assert g.count == 5 and g.last_step == 30 and not g.acknowledged
    # another console's acknowledgement merges with ours, never drops it
    acknowledge(tmp_path, [g])
    assert read_acks(tmp_path) == {"divergence": T + 50}
    assert with_acks(book.groups(), {"divergence": T + 50})[0].acknowledged


def _bad(i, path, step):
    return [ev(i, "checkpoint", attempt=1, path=path, step=step, verdict="empty_stub", ok=False),
            ev(i + 0.1, "alert", attempt=1, level="critical", rule="checkpoint_bad", step=step,
               message=f"checkpoint {path.rsplit('/', 1)[-1]} is empty_stub: no tensors",
               values={"path": path, "verdict": "empty_stub"})]


def _ok(i, path, step):
    return [ev(i, "checkpoint", attempt=1, path=path, step=step, verdict="ok", ok=True)]


def test_a_bad_save_verified_ok_later_resolves_and_a_bad_verdict_after_that_opens_it_again():
    a, b = "/runs/x/output/checkpoint-4", "/runs/x/output/checkpoint-8"
    book = AlertBook().feed_all(_bad(0, a, 4) + _bad(1, b, 8) + _ok(2, a, 4))
    (g,) = book.groups()
    assert g.active and g.standing() == "open", "checkpoint-8 is still bad"
    book.feed_all(_ok(3, b, 8))
    (g,) = book.groups()
    assert (g.active, g.standing()) == (False, "resolved: checkpoint-8 verified ok on a later check")
    assert g.to_dict()["resolved_why"] == "checkpoint-8 verified ok on a later check"
    book.feed_all(_bad(4, b, 8))     # its files changed again and are bad now
    (g,) = book.groups()
    assert g.active and g.resolved_why is None


def test_a_run_that_finished_unsaved_stays_an_alert_when_a_bad_save_is_later_ok():
    a = "/runs/x/output/checkpoint-4"
    unsaved = ev(1, "alert", attempt=1, level="critical", rule="unsaved", step=4,
                 message="training finished but the newest checkpoint checkpoint-4 is empty_stub")
    (g,) = AlertBook().feed_all(_bad(0, a, 4) + [unsaved] + _ok(2, a, 4)).groups()
    assert g.active and g.standing() == "open"
