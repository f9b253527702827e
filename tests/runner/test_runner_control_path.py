"""What a runner finds at its control socket's path when it starts: a stale socket left by a
runner that was SIGKILLed (it binds again there and adopts the training), or a directory someone
made there (it cannot listen: one line saying what is in the way, never a traceback; `kill`
still ends the training without a runner). Real runners, real signals, a real training."""
from __future__ import annotations

import os
import signal
import stat

from moeconsole.runner.process import proctree
from tests.runner.conftest import NO_SAVES
from tests.waiting import until

SLEEPER = ["{python}", "-c", "import time\nprint(\"{'loss': '1.0', 'global_step/max_steps': '1/9'}\", flush=True)\n"
           "time.sleep(600)\n"]


def _sigkill_runner(run) -> dict:
    st = run.wait(lambda s: s.get("status") == "running" and s.get("pids"), what="the training running")
    pid = st["runner"]["pid"]
    os.kill(pid, signal.SIGKILL)
    until(lambda: not proctree.same_process(pid, st["runner"]["start_time"]), what="the runner gone")
    return st


def _training_ends(st: dict) -> None:
    until(lambda: not any(proctree.same_process(p["pid"], p["start_time"]) for p in st["pids"]), 60,
          what="every process of the training ended")


def test_a_stale_socket_of_a_sigkilled_runner_is_bound_again_by_the_next(harness):
    run = harness.start(harness.recipe(command=SLEEPER, kill={"grace_s": 2}, **NO_SAVES))
    st = _sigkill_runner(run)
    assert stat.S_ISSOCK(os.lstat(run.path / "control.sock").st_mode)   # left behind
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0, out.stderr
    run.wait(lambda s: s.get("runner", {}).get("pid") != st["runner"]["pid"] and s.get("status") == "running",
             what="the new runner supervising")
    killed = harness.cli("kill", run.id, "--grace", "2")
    assert killed.returncode == 0 and "no runner" not in killed.stdout + killed.stderr, (killed.stdout, killed.stderr)
    _training_ends(st)


def test_a_directory_at_the_socket_path_is_one_line_and_the_kill_still_lands(harness):
    run = harness.start(harness.recipe(command=SLEEPER, kill={"grace_s": 2}, **NO_SAVES))
    st = _sigkill_runner(run)
    sock = run.path / "control.sock"
    os.unlink(sock)
    sock.mkdir()
    (sock / "kept").write_text("someone's file")
    out = harness.cli("supervise", run.id)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and "File \"" not in out.stderr, out.stderr
    assert f"cannot listen on {sock}: Is a directory" in out.stderr, out.stderr
    assert (sock / "kept").read_text() == "someone's file"   # nothing of the user's removed
    killed = harness.cli("kill", run.id, "--grace", "2")
    assert killed.returncode == 0, (killed.stdout, killed.stderr)
    _training_ends(st)
