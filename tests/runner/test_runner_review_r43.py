"""Review R43 (of round 16), finding 3: the GPU memory sample after the hang check (NVML, synchronous; seconds
a call on a GPU whose driver is faulting) was credited as the runner's absence on every turn that ran it, so a
training hung under a 600 s heartbeat was called hung after 2315 s (1.5 s samples) to 6002 s (1.89 s). The
runner's loop turns as ``Supervisor.tick`` makes them, on an injected monotonic clock, the sample timed through
``IngestPipe.own_work`` as the supervisor runs it; a freeze of the runner (SIGSTOP, a cgroup freeze) is still
not taken for the training's silence, wherever it lands outside the sample."""
from __future__ import annotations

import json

import pytest

from moeconsole.runner.core import lifecycle as lc
from moeconsole.runner.supervisor.supervisor import MEMORY_SAMPLE_S
from tests.runner.test_seam_units import _log, _pipe, made  # noqa: F401  (made: a fixture)

FREEZE_S = 12.7


class Clock:
    """The injected monotonic clock: the loop's work moves it on."""

    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _turns(pipe, heartbeat, clock: Clock, until: float, nvml_s: float, *, freeze_at: str | None = None,
           freeze_after: float | None = None) -> lc.Hang | None:
    """Loop turns until ``until`` or a hang: ``watched``, the wait (0.1 s), the look, 5 ms of work, the hang check,
    the memory sample every ``MEMORY_SAMPLE_S`` (``nvml_s`` long, through ``own_work``), 5 ms more. ``freeze_at``:
    the runner frozen FREEZE_S there, once, on the first turn after ``freeze_after``."""
    last_sample = -1e18
    frozen = False

    def freeze(here: str) -> None:
        nonlocal frozen
        if not frozen and freeze_at == here and freeze_after is not None and clock.t >= freeze_after:
            frozen = True
            clock.t += FREEZE_S

    while clock.t < until:
        pipe.watched(clock.t)
        clock.t += 0.1
        freeze("in_the_wait")
        pipe.look(clock.t)
        clock.t += 0.005
        hang = pipe.hang(clock.t, heartbeat)
        if hang is not None:
            return hang
        if clock.t - last_sample >= MEMORY_SAMPLE_S:
            last_sample = clock.t

            def sample() -> bool:
                clock.t += nvml_s
                return False
            pipe.own_work(clock, sample)
        freeze("after_the_sample")
        clock.t += 0.005
    return None


def _started(made, timeout_s: float):
    run, recipe = made(heartbeat={"timeout_s": timeout_s, "startup_s": 1800})
    pipe = _pipe(run, recipe)
    pipe.launched(1)
    _log(run, json.dumps({"step": 1, "loss": 1.0}))
    pipe.read()
    return pipe, recipe, Clock(pipe.last_output)


@pytest.mark.parametrize("heartbeat,nvml_s", [(600, 1.5), (600, 1.85), (600, 1.89), (60, 1.2), (60, 0.01)])
def test_a_slow_memory_sample_now_and_then_never_delays_a_hang(made, heartbeat, nvml_s):
    """A training silent after its first step, the runner's GPU sample slow on the turns that run it: hung a
    heartbeat of silence later (plus a turn and a sample), as before round 16, not up to 10x later."""
    pipe, recipe, clock = _started(made, heartbeat)
    t0 = clock.t
    hang = _turns(pipe, recipe.heartbeat, clock, t0 + 20 * heartbeat, nvml_s)
    assert isinstance(hang, lc.Hang), f"no hang in {20 * heartbeat}s"
    assert heartbeat < hang.quiet_s and clock.t - t0 < heartbeat + nvml_s + 1, (hang.quiet_s, clock.t - t0)


@pytest.mark.parametrize("landing", ["in_the_wait", "after_the_sample"])
@pytest.mark.parametrize("nvml_s", [0.01, 1.5])
def test_a_runner_frozen_outside_the_sample_is_still_not_the_trainings_silence(made, landing, nvml_s):
    """The round 16 freeze (FREEZE_S, the training silent 3 s into a 15 s heartbeat), with samples fast or
    slow: no hang at the thaw; a hang a heartbeat of watched silence later."""
    pipe, recipe, clock = _started(made, 15)
    t0 = clock.t
    hang = _turns(pipe, recipe.heartbeat, clock, t0 + 3 + FREEZE_S + 5, nvml_s, freeze_at=landing,
                  freeze_after=t0 + 3)
    assert hang is None, f"frozen {landing}: called hung at quiet {hang.quiet_s:.1f}s"
    hang = _turns(pipe, recipe.heartbeat, clock, t0 + 3 + FREEZE_S + 60, nvml_s)
    assert isinstance(hang, lc.Hang), "a heartbeat of watched silence is still a hang"
    assert clock.t - t0 == pytest.approx(FREEZE_S + 15, abs=nvml_s + 1.0), clock.t - t0
