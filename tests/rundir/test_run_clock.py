"""When a run started and how long it ran, as every view shows them (``rundir.start_shown``,
``run_elapsed``, ``run_age``): on the boot clock when the stamps were read on this boot, on the
wall-clock stamps otherwise."""
from __future__ import annotations

import time

from moeconsole.runner.rundir import rundir
from moeconsole.runner.telemetry import identity


def _here(started_ago: float, *, wall_off: float = 0.0) -> dict:
    """A start stamped on this boot ``started_ago`` seconds ago by a wall clock ``wall_off`` off."""
    up = identity.uptime()
    assert up is not None
    return {"started_at": time.time() - started_ago + wall_off, "started_boot_id": identity.boot_id(),
            "started_uptime_s": up - started_ago}


def test_a_start_stamped_by_a_fast_clock_on_this_boot_is_shown_when_it_happened():
    now = time.time()
    shown = rundir.start_shown(_here(600, wall_off=3 * 3600), now)
    assert shown is not None and abs(shown - (now - 600)) < 5, shown - now
    assert abs(rundir.run_age(_here(600, wall_off=3 * 3600), now) - 600) < 5


def test_a_start_stamped_on_another_boot_is_shown_as_stamped_even_in_the_future():
    """Another host's (or boot's) stamps cannot be read on this boot clock: its wall-clock stamp is
    all there is, even one ahead of this clock (the other host ran fast). Shown as "now", moving on
    every refresh, it had been."""
    now = time.time()
    state = {"started_at": now + 3600, "started_boot_id": "another-boot", "started_uptime_s": 50.0}
    assert rundir.start_shown(state, now) == now + 3600
    assert rundir.start_shown(state, now + 30) == now + 3600
    assert rundir.run_age(state, now) == 0.0           # the age is never below 0


def test_a_start_without_boot_stamps_is_shown_as_stamped():
    now = time.time()
    assert rundir.start_shown({"started_at": now - 100}, now) == now - 100
    assert rundir.start_shown({}, now) is None
