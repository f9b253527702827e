"""A wall-clock step (NTP, a resumed VM) under a live run is not a hang.

The runner is run under libfaketime (Debian's ``faketime`` package) with a time-stamp file the
test rewrites: the runner process's wall clock (``time.time()``) really steps by +2 h and then
-2 h while its monotonic clock runs on (``FAKETIME_DONT_FAKE_MONOTONIC``). Every duration the
runner measures (heartbeat silence, grace, cooldown, backoff) must be on the monotonic clock, so
neither step is taken for a hang, and a real silence after the steps still is.

libfaketime 0.9.10 breaks ``time.sleep`` (``clock_nanosleep`` returns EINVAL) when monotonic time
is not faked, so only the runner runs under it: the first runner starts the training normally,
is stopped with SIGTERM (training runs on), and a runner started here under faketime adopts the
attempt (the adoption path sleeps nowhere). The training's own environment drops the preload.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from moeconsole.runner.process import proctree
from tests.runner.conftest import REPO
from tests.waiting import until

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1")

pytestmark = pytest.mark.skipif(not LIBFAKETIME.exists(), reason="libfaketime not installed (apt-get install faketime)")

TRAIN = textwrap.dedent("""
    import json, os, sys, time
    quiet = sys.argv[1]
    step = 0
    while not os.path.exists(quiet):
        step += 1
        print(json.dumps({"step": step, "loss": 1.0 / step}), flush=True)
        time.sleep(1.0)  # far slower than the runner's 0.1 s tick: most ticks find no new output
    while True:          # silent from now on: a real hang
        time.sleep(1)
""")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"


def test_wall_clock_steps_are_not_a_hang(harness, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    quiet = tmp_path / "quiet"
    run = harness.start(harness.recipe(
        command=["{python}", str(script), str(quiet)], checkpoints={"dir": None}, resume={"arg": None},
        heartbeat={"timeout_s": 3, "startup_s": 120}, restart={"max_restarts": 0},
        env={"OMP_NUM_THREADS": "1", "LD_PRELOAD": "", "FAKETIME_TIMESTAMP_FILE": ""}))
    st = run.wait(lambda s: (s.get("step") or 0) >= 2, what="2 steps")
    first = st["runner"]["pid"]
    os.kill(first, signal.SIGTERM)  # the runner leaves; training runs on
    until(lambda: not _alive(first), what="the first runner to exit")

    offset = tmp_path / "faketime"
    offset.write_text("+0\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "LD_PRELOAD": str(LIBFAKETIME),
           "FAKETIME_TIMESTAMP_FILE": str(offset), "FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    with open(run.path / "runner.log", "ab") as log:
        runner = subprocess.Popen([sys.executable, "-m", "moeconsole.runner.supervisor", str(run.path)], env=env, cwd=REPO,
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    try:
        st = run.wait(lambda s: (s.get("runner") or {}).get("pid") == runner.pid and s.get("status") == "running",
                      what="the faketime runner to adopt the attempt")
        # steady state first: the log written during the switch is read, new steps come in
        adopted_at = st.get("step") or 0
        run.wait(lambda s: (s.get("step") or 0) >= adopted_at + 3, what="3 steps read by the faketime runner")

        def no_hang_across(step: str, wall_seen) -> None:
            offset.write_text(step + "\n")
            # the runner's own records show its wall clock stepped
            run.wait(lambda s: wall_seen(s.get("updated_at") or 0), what=f"the runner's clock at {step}")
            base = run.state()["step"]
            # 3 s heartbeat: 8 steps of 1 s after the step span it twice
            run.wait(lambda s: (s.get("step") or 0) >= base + 8 or s.get("status") != "running",
                     what="8 more steps")
            st = run.state()
            assert st["status"] == "running", (step, st.get("pause_reason"), (run.path / "runner.log").read_text()[-2000:])
            assert not [a for a in run.events("alert") if a.get("rule") == "hang"], step

        no_hang_across("+7200", lambda t: t > time.time() + 3600)
        no_hang_across("-7200", lambda t: 0 < t < time.time() - 3600)

        # ... and a real silence after both steps is still a hang
        quiet.write_text("")
        st = run.wait_status("failed", timeout=60)
        hangs = [a for a in run.events("alert") if a.get("rule") == "hang"]
        assert len(hangs) == 1 and hangs[0]["values"]["quiet_s"] < 60, hangs
        assert run.crash(1)["class"] == "hang"
        assert runner.wait(timeout=60) == 0
    finally:
        if runner.poll() is None:
            runner.send_signal(signal.SIGTERM)
            runner.wait(timeout=30)
        st = run.state()
        for p in st.get("pids") or []:  # the run's own processes only: PID and start time
            if proctree.same_process(p["pid"], p["start_time"]):
                os.kill(p["pid"], signal.SIGKILL)
