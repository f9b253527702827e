"""The restart policy measures an attempt on the monotonic clock, not the wall clock: a real run
whose first attempt crashes records, in state.json's history, how long each attempt ran and when
it ended on this boot's monotonic clock (``ran_s``, ``ended_mono``, ``boot_id``), which the policy
reads instead of wall times that a clock step (NTP, a resumed VM) moves (the rule itself:
``tests/crash/test_crash_policy.py``). A new runner of the same boot carries the start on."""
from __future__ import annotations

import time

from moeconsole.runner.telemetry.identity import boot_id
from tests.runner.conftest import NO_SAVES   # saves nothing, judged without

# Crashes (exit 3) at its first attempt, after one step; trains 5 steps at the second.
CRASH_ONCE = ["{python}", "-c", (
    "import os, sys, time\n"
    "mark = os.path.join(sys.argv[1], 'crashed-once')\n"
    "first = not os.path.exists(mark)\n"
    "open(mark, 'a').close()\n"
    "for i in range(1, 6):\n"
    "    print(\"{'loss': '1.0', 'global_step/max_steps': '%d/5'}\" % i, flush=True)\n"
    "    time.sleep(0.1)\n"
    "    if first:\n"
    "        sys.exit(3)\n"), "{run_dir}"]


def test_each_attempt_is_measured_on_the_monotonic_clock_of_this_boot(harness):
    before = time.monotonic()
    run = harness.start(harness.recipe(command=CRASH_ONCE, **NO_SAVES))
    st = run.wait_status("succeeded", "failed", "paused", timeout=120)
    after = time.monotonic()
    assert st["status"] == "succeeded" and st["attempt"] == 2, st
    history = st["history"]
    assert [h["crash_class"] for h in history] == ["unknown", None], history
    for h in history:
        assert h["boot_id"] == boot_id(), h
        assert before <= h["ended_mono"] <= after, (before, h, after)
        assert 0 < h["ran_s"] <= after - before, h
    assert history[0]["ended_mono"] < history[1]["ended_mono"] - history[1]["ran_s"] + 1e-6
