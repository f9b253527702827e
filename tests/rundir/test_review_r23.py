"""Review R23's nits in reading a run's records: a moment's boot-clock stamp read through its type
(``rundir.moment_age``), and a runner's boot id compared whenever both sides have one
(``rundir.runner_here``)."""
from __future__ import annotations

import math
import time

import pytest

from moeconsole.runner.rundir import rundir
from moeconsole.runner.telemetry import identity


@pytest.mark.parametrize("t_up", [True, -math.inf, math.inf, math.nan, "12.5"])
def test_a_moments_boot_stamp_that_is_no_finite_number_falls_back_to_the_wall_clock(t_up):
    """``t_up: true`` was read as 1 (an age of the whole uptime less a second); ``-Infinity``
    gave an infinite age."""
    now = time.time()
    age = rundir.moment_age({"t": now - 60.0, "t_up": t_up, "t_boot": identity.boot_id()}, now)
    assert age == pytest.approx(60.0), age


@pytest.mark.parametrize("t", [True, math.inf, -math.inf, math.nan])
def test_a_moment_without_a_finite_wall_stamp_has_no_age(t):
    assert rundir.moment_age({"t": t}, time.time()) is None


def test_a_runner_recorded_on_another_boot_is_never_asked_by_pid_here():
    """A record with ``boot_id`` but no ``pidns`` fell back to the hostname and ignored the boot."""
    me = rundir.hostname()
    assert not rundir.runner_here({"pid": 1, "host": me, "boot_id": "another-boot", "pidns": None})
    assert not rundir.runner_here({"pid": 1, "host": me, "boot_id": "another-boot",
                                   "pidns": identity.pid_namespace()})
    if identity.boot_id():
        assert rundir.runner_here({"pid": 1, "host": me, "boot_id": identity.boot_id(), "pidns": None})
        assert rundir.runner_here({"pid": 1, "host": "renamed", "boot_id": identity.boot_id(),
                                   "pidns": identity.pid_namespace()})
    assert rundir.runner_here({"pid": 1, "host": me})   # an older runner: by the hostname
    assert not rundir.runner_here({"pid": 1, "host": me + "-elsewhere"})
