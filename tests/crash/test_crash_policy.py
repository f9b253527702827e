"""Restart policy rules on plain attempt histories, boundaries included."""
from __future__ import annotations

import pytest

from moeconsole.runner.core.crash import CrashVerdict, classify
from moeconsole.runner.core.errors import InputError
from moeconsole.runner.core.policy import (AttemptRecord, Clock, Decision, RestartSettings, backoff_delay,
                                           consecutive_crashes, decide)

HOUR = 3600.0
NOW = 1_000_000.0
DEFAULTS = RestartSettings()


def verdict(cls: str, *, retryable: bool = True, recovery: str = "restart") -> CrashVerdict:
    return CrashVerdict(cls=cls, evidence=(), retryable=retryable, recovery=recovery, summary=f"{cls} summary")


def attempts(spec: list[tuple[float, float, int | None, int | None, str | None]]) -> list[AttemptRecord]:
    """(started_ago_s, ran_s, resumed_step, last_step, class) -> records, oldest first."""
    return [AttemptRecord(attempt=i + 1, started_at=NOW - ago, ended_at=NOW - ago + ran,
                          resumed_step=resumed, last_step=last, crash_class=cls)
            for i, (ago, ran, resumed, last, cls) in enumerate(spec)]


def progressing_crashes(n: int, spacing_s: float = 2 * HOUR, ran_s: float = 600.0,
                        cls: str = "segfault") -> list[AttemptRecord]:
    """n crashed attempts, each advancing 100 steps, the last one ending now."""
    spec = []
    for i in range(n):
        ago = (n - 1 - i) * spacing_s + ran_s
        spec.append((ago, ran_s, i * 100 or None, i * 100 + 100, cls))
    return attempts(spec)


# --- settings ---------------------------------------------------------------------------

def test_settings_defaults_from_none_and_empty():
    assert RestartSettings.from_recipe(None) == DEFAULTS
    assert RestartSettings.from_recipe({}) == DEFAULTS
    assert DEFAULTS.max_restarts == 10 and DEFAULTS.backoff_initial_s == 30.0
    assert DEFAULTS.backoff_max_s == 600.0 and DEFAULTS.reset_after_s == 3600.0


def test_settings_from_recipe_values():
    s = RestartSettings.from_recipe({"max_restarts": 4, "backoff_initial_s": 5, "crash_window_s": 60.5})
    assert s.max_restarts == 4 and s.backoff_initial_s == 5.0 and isinstance(s.backoff_initial_s, float)
    assert s.crash_window_s == 60.5 and s.backoff_max_s == 600.0


@pytest.mark.parametrize("section, message", [
    ({"max_restart": 3}, "restart.max_restart: unknown key (did you mean max_restarts?)"),
    ({"max_restarts": "many"}, "restart.max_restarts: expected a whole number, got str 'many'"),
    ({"max_restarts": 2.5}, "restart.max_restarts: must be a whole number >= 0 and <= 1000000, got 2.5"),
    ({"max_restarts": True}, "restart.max_restarts: expected a whole number, got True"),
    ({"max_restarts": None}, "restart.max_restarts: expected a whole number, got None"),
    ({"backoff_initial_s": "30s"}, "restart.backoff_initial_s: expected a number"),
    ({"backoff_max_s": -1}, "restart.backoff_max_s: must be a finite number of seconds >= 0"),
    ({"backoff_max_s": 1e308}, "restart.backoff_max_s: must be a finite number of seconds >= 0 and <= 2592000"),
    ({"backoff_factor": 0.5}, "restart.backoff_factor: must be a finite number (factor) >= 1"),
    ({"reset_after_s": float("nan")}, "restart.reset_after_s: must be a finite number of seconds"),
    ({"max_crashes_per_window": 0}, "restart.max_crashes_per_window: must be a whole number >= 1"),
    ({"max_restarts": 10 ** 400}, "restart.max_restarts: must be a whole number >= 0 and <= 1000000, got a number"),
    ({"backoff_initial_s": 700}, "restart.backoff_initial_s: must not exceed backoff_max_s"),
    (["max_restarts", 3], "restart: expected a mapping, got list"),
])
def test_settings_bad_input_is_one_clear_input_error(section, message):
    with pytest.raises(InputError) as err:
        RestartSettings.from_recipe(section)
    assert str(err.value).startswith(message)
    assert "\n" not in str(err.value)


def test_settings_ignore_keys_owned_elsewhere():
    s = RestartSettings.from_recipe({"max_restarts": 2, "floor_s": 10}, ignore=("floor_s",))
    assert s.max_restarts == 2


# --- backoff ----------------------------------------------------------------------------

@pytest.mark.parametrize("n, delay", [(0, 0.0), (1, 30.0), (2, 60.0), (3, 120.0), (4, 240.0),
                                      (5, 480.0), (6, 600.0), (7, 600.0), (10_000, 600.0)])
def test_backoff_delay_doubles_and_caps(n, delay):
    assert backoff_delay(n, DEFAULTS) == delay


def test_backoff_delay_with_recipe_settings():
    s = RestartSettings(backoff_initial_s=1.0, backoff_max_s=10.0, backoff_factor=3.0)
    assert [backoff_delay(n, s) for n in (1, 2, 3, 4)] == [1.0, 3.0, 9.0, 10.0]


def test_consecutive_crashes_reset_after_a_stable_hour():
    # three short crashed attempts in a row
    short = attempts([(1000, 60, 0, 10, "segfault"), (800, 60, 10, 20, "segfault"), (600, 60, 20, 30, "segfault")])
    assert consecutive_crashes(verdict("segfault"), short, DEFAULTS) == 3
    assert decide(verdict("segfault"), short, DEFAULTS, NOW).delay_s == 120.0
    # the last attempt ran exactly an hour: the count starts again
    stable = short[:-1] + attempts([(HOUR + 10, HOUR, 20, 900, "segfault")])[-1:]
    assert consecutive_crashes(verdict("segfault"), stable, DEFAULTS) == 1
    assert decide(verdict("segfault"), stable, DEFAULTS, NOW).delay_s == 30.0
    # one second short of an hour: still in a row
    almost = short[:-1] + attempts([(HOUR + 10, HOUR - 1, 20, 900, "segfault")])[-1:]
    assert consecutive_crashes(verdict("segfault"), almost, DEFAULTS) == 3


def test_stable_attempt_earlier_in_history_bounds_the_count():
    hist = attempts([(9 * HOUR, 2 * HOUR, 0, 5000, "cuda_oom"),      # stable: counts as the first
                     (6 * HOUR, 60, 5000, 5010, "segfault"),
                     (3 * HOUR, 60, 5010, 5020, "segfault")])
    assert consecutive_crashes(verdict("segfault"), hist, DEFAULTS) == 3
    assert decide(verdict("segfault"), hist, DEFAULTS, NOW).delay_s == 120.0


# --- decisions ----------------------------------------------------------------------------

def test_user_kill_stops():
    d = decide(classify(-15, [], user_kill=True), progressing_crashes(1), DEFAULTS, NOW)
    assert d == Decision("stop", 0.0, "stopped by the user; no restart", None)


def test_divergence_pauses_with_critical_alert():
    v = classify(-15, [], divergence=True)
    d = decide(v, progressing_crashes(1, cls="divergence"), DEFAULTS, NOW)
    assert d.action == "pause" and d.alert == "critical" and "divergence" in d.reason


@pytest.mark.parametrize("cls, recovery", [("recompute_mismatch", "fail"), ("bus_error", "fail"),
                                           ("cuda_fault", "fail"), ("environment_error", "fail"),
                                           ("hub_access", "fail")])
def test_fatal_classes_fail(cls, recovery):
    d = decide(verdict(cls, retryable=False, recovery=recovery), progressing_crashes(1, cls=cls), DEFAULTS, NOW)
    assert d.action == "fail" and d.alert == "critical" and d.delay_s == 0.0


def test_first_crash_restarts_after_initial_backoff():
    d = decide(verdict("segfault"), progressing_crashes(1), DEFAULTS, NOW)
    assert d.action == "restart" and d.delay_s == 30.0 and d.alert is None
    assert d.reason.startswith("restart 1/10 after at least 30 s (backoff")


def test_a_restart_says_the_wait_it_really_gets_when_the_class_floor_is_longer():
    """nccl_error triples the cooldown floor: the reason names that wait, not the 2 s backoff."""
    s = RestartSettings(backoff_initial_s=2, backoff_max_s=30)
    d = decide(verdict("nccl_error"), progressing_crashes(1, cls="nccl_error"), s, NOW, floor_s=6.0)
    assert d.action == "restart" and d.delay_s == 2.0
    assert d.reason.startswith("restart 1/10 after at least 6 s (cooldown floor 6 s for nccl_error)"), d.reason


def test_restart_cap_boundary():
    s = RestartSettings(max_restarts=3)
    # 3 crashes so far: 2 restarts used, the 3rd is allowed
    d = decide(verdict("segfault"), progressing_crashes(3), s, NOW)
    assert d.action == "restart" and "restart 3/3" in d.reason
    # 4th crash: 3 restarts used, cap reached
    d = decide(verdict("segfault"), progressing_crashes(4), s, NOW)
    assert d.action == "fail" and d.alert == "critical" and "cap reached (3/3" in d.reason


def test_restart_cap_with_defaults_and_user_restarts_not_counted():
    hist = progressing_crashes(10)
    assert decide(verdict("segfault"), hist, DEFAULTS, NOW).action == "restart"
    assert decide(verdict("segfault"), progressing_crashes(11), DEFAULTS, NOW).action == "fail"
    # an attempt the user ended (then restarted) does not use a restart
    with_user = hist[:5] + [AttemptRecord(99, NOW - 100, NOW - 90, 400, 450, "user_kill")] + hist[5:]
    assert decide(verdict("segfault"), with_user, DEFAULTS, NOW).action == "restart"


def test_zero_restarts_allowed_fails_at_first_crash():
    d = decide(verdict("segfault"), progressing_crashes(1), RestartSettings(max_restarts=0), NOW)
    assert d.action == "fail"


def test_crash_rate_exactly_at_limit_restarts_one_more_pauses():
    three = progressing_crashes(3, spacing_s=600)     # all within the hour
    d = decide(verdict("segfault"), three, DEFAULTS, NOW)
    assert d.action == "restart"
    four = progressing_crashes(4, spacing_s=600)
    d = decide(verdict("segfault"), four, DEFAULTS, NOW)
    assert d.action == "pause" and d.alert == "critical"
    assert d.reason == "4 crashes within 3600 s (limit 3); paused"


def test_crash_rate_window_edge():
    # oldest of four crashes ended exactly one window ago: it counts
    spec = [(HOUR + 60, 60, None, 100, "segfault"), (1800, 60, 100, 200, "segfault"),
            (1200, 60, 200, 300, "segfault"), (60, 60, 300, 400, "segfault")]
    assert decide(verdict("segfault"), attempts(spec), DEFAULTS, NOW).action == "pause"
    # one second older: outside the window
    spec[0] = (HOUR + 61, 60, None, 100, "segfault")
    assert decide(verdict("segfault"), attempts(spec), DEFAULTS, NOW).action == "restart"


def test_no_progress_three_attempts_in_a_row_fails():
    stuck = attempts([(3000, 60, 500, 500, "cuda_oom"), (2000, 60, 500, None, "cuda_oom"),
                      (100, 60, 500, 500, "cuda_oom")])
    d = decide(verdict("cuda_oom"), stuck, DEFAULTS, NOW)
    assert d.action == "fail" and d.alert == "critical" and "no step progress in 3 attempts" in d.reason
    # two stuck attempts: not yet
    assert decide(verdict("cuda_oom"), stuck[1:], DEFAULTS, NOW).action == "restart"
    # one of three made progress (passed its resume step): keep going
    moved = [stuck[0], AttemptRecord(2, NOW - 2000, NOW - 1940, 500, 501, "cuda_oom"), stuck[2]]
    assert decide(verdict("cuda_oom"), moved, DEFAULTS, NOW).action == "restart"


def test_no_progress_from_a_fresh_start():
    never = attempts([(3000, 20, None, None, "gpu_busy_at_init"), (2000, 20, None, None, "gpu_busy_at_init"),
                      (100, 20, None, None, "gpu_busy_at_init")])
    assert decide(verdict("gpu_busy_at_init", recovery="restart_after_gpu_clear"), never, DEFAULTS,
                  NOW).action == "fail"


def test_no_progress_wins_over_crash_rate():
    stuck = attempts([(400, 60, 0, None, "segfault")] * 4)
    d = decide(verdict("segfault"), stuck, DEFAULTS, NOW)
    assert d.action == "fail" and "no step progress" in d.reason


def test_repeated_cuda_oom_warns():
    once = progressing_crashes(2, cls="segfault")
    once[-1] = AttemptRecord(**{**once[-1].__dict__, "crash_class": "cuda_oom"})
    assert decide(verdict("cuda_oom"), once, DEFAULTS, NOW).alert is None
    twice = progressing_crashes(2, cls="cuda_oom")
    d = decide(verdict("cuda_oom"), twice, DEFAULTS, NOW)
    assert d.action == "restart" and d.alert == "warning" and "out of memory again" in d.reason


def test_killed_oom_restarts_with_warning():
    d = decide(classify(-9, []), progressing_crashes(1, cls="killed_oom"), DEFAULTS, NOW)
    assert d.action == "restart" and d.alert == "warning" and "OOM killer" in d.reason


def test_megatron_rerun_request_restarts_with_warning():
    v = classify(16, ["Unexpected result tensor(nan, device='cuda:0') on rank 0 at iteration #52 "
                      "invocation #1 (message='found NaN in local grad norm')"])
    d = decide(v, progressing_crashes(1, cls="divergence"), DEFAULTS, NOW)
    assert d.action == "restart" and d.alert == "warning"


def test_last_record_class_comes_from_the_verdict():
    # the runner may not have written the class into the last record yet
    hist = progressing_crashes(2, cls="cuda_oom")
    hist[-1] = AttemptRecord(**{**hist[-1].__dict__, "crash_class": None})
    assert decide(verdict("cuda_oom"), hist, DEFAULTS, NOW).alert == "warning"


def test_decision_to_dict():
    d = decide(verdict("segfault"), progressing_crashes(1), DEFAULTS, NOW)
    assert d.to_dict() == {"action": "restart", "delay_s": 30.0, "reason": d.reason, "alert": None}


def test_disk_full_restarts_with_a_warning_that_the_launch_waits_for_room():
    d = decide(verdict("disk_full", recovery="wait_disk"), progressing_crashes(1, cls="disk_full"), DEFAULTS, NOW)
    assert d.action == "restart" and d.alert == "warning", d
    assert d.reason.endswith("a write ran out of room: the launch also waits for room where the run saves"), d.reason
    # it is a crash like any other for the cap: the 11th disk_full in a row fails the run
    d = decide(verdict("disk_full", recovery="wait_disk"), progressing_crashes(11, cls="disk_full"), DEFAULTS, NOW)
    assert d.action in ("fail", "pause"), d


# --- a wall clock that steps (NTP, a resumed VM) -----------------------------------------------
# The runner gives each attempt's record its monotonic duration and end (``ran_s``, ``ended_mono``,
# ``boot_id``) and decides with ``Clock(wall, mono, boot_id)``; wall times are only shown.

BOOT = "5d2a7f3e-boot"
MONO_NOW = 50_000.0


def stepped(records: list[AttemptRecord], ran_s: list[float], ended_mono_ago: list[float],
            boot: str = BOOT) -> list[AttemptRecord]:
    """``records`` (whose wall times a clock step has moved) with what the monotonic clock saw."""
    from dataclasses import replace
    return [replace(r, ran_s=ran, ended_mono=MONO_NOW - ago, boot_id=boot)
            for r, ran, ago in zip(records, ran_s, ended_mono_ago)]


def test_a_wall_clock_step_during_an_attempt_does_not_reset_the_backoff():
    """Three crashes of a minute each in a row; the wall clock jumped 2 h forward while the last
    one ran, so its wall times say it ran 2 h 1 min: counted "stable", the backoff fell back to
    30 s. It ran 60 s: the third crash in a row waits 120 s."""
    hist = attempts([(1000, 60, 0, 10, "segfault"), (800, 60, 10, 20, "segfault"),
                     (600 + 2 * HOUR, 60 + 2 * HOUR, 20, 30, "segfault")])
    hist = stepped(hist, [60, 60, 60], [880, 680, 0])
    now = Clock(NOW, MONO_NOW, BOOT)
    assert consecutive_crashes(verdict("segfault"), hist, DEFAULTS) == 3
    d = decide(verdict("segfault"), hist, DEFAULTS, now)
    assert d.action == "restart" and d.delay_s == 120.0, d
    assert "backoff after crash 3 in a row" in d.reason


def test_a_wall_clock_step_between_crashes_does_not_empty_the_crash_window():
    """Four crashes within ten minutes on the monotonic clock; the wall clock stepped 3 h forward
    between them, so by wall time three of them lie outside the hour: the crash loop was let go
    on. It is paused at the limit."""
    hist = progressing_crashes(4, spacing_s=HOUR + 1)             # wall: an hour and more apart
    hist = stepped(hist, [60] * 4, [540, 360, 180, 0])             # monotonic: 3 minutes apart
    d = decide(verdict("segfault"), hist, DEFAULTS, Clock(NOW, MONO_NOW, BOOT))
    assert d.action == "pause" and d.reason == "4 crashes within 3600 s (limit 3); paused", d
    # ... and a step backwards does not keep crashes of long ago in the window
    old = stepped(progressing_crashes(4, spacing_s=600), [60] * 4, [3 * HOUR, 2 * HOUR, HOUR + 1, 0])
    assert decide(verdict("segfault"), old, DEFAULTS, Clock(NOW, MONO_NOW, BOOT)).action == "restart"


def test_records_of_another_boot_or_an_older_runner_are_judged_by_wall_time():
    """A monotonic reading of another boot (or none) says nothing about now: wall time decides."""
    hist = stepped(progressing_crashes(4, spacing_s=HOUR + 1), [60] * 4, [540, 360, 180, 0], boot="another-boot")
    assert decide(verdict("segfault"), hist, DEFAULTS, Clock(NOW, MONO_NOW, BOOT)).action == "restart"
    assert decide(verdict("segfault"), progressing_crashes(4, spacing_s=600), DEFAULTS,
                  Clock(NOW, MONO_NOW, BOOT)).action == "pause"
