"""Review R74: a `kill` while the attempt's leader has ended and a silent process of its tree lives (a stuck
data-loader worker holding its GPU): the lifecycle watches the tree for the kill grace, and the kill found
nothing "busy": "nothing was running", the run KILLED, the process left alive. Real runner, real processes."""
from __future__ import annotations

import os

import psutil

from tests.runner.conftest import NO_SAVES, harness  # noqa: F401  (the real CLI and runner: the fixture)
from tests.waiting import until

# The leader logs its one step, leaves a silent child behind and exits 0.
STRAY = ["{python}", "-c", (
    "import os, sys, time\n"
    "print(\"{'loss': '1.0', 'global_step/max_steps': '1/1'}\", flush=True)\n"
    "if os.fork() == 0:\n"
    "    open(os.environ['STRAY_PID'] + '.tmp', 'w').write(str(os.getpid()))\n"
    "    os.rename(os.environ['STRAY_PID'] + '.tmp', os.environ['STRAY_PID'])\n"
    "    time.sleep(400)\n"
    "    os._exit(0)\n"
    "sys.exit(0)\n")]


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_kill_after_the_leaders_clean_exit_ends_what_is_left_of_the_attempt(harness, tmp_path):
    stray = tmp_path / "stray.pid"
    run = harness.start(harness.recipe(command=STRAY, kill={"grace_s": 300},
                                       env={"OMP_NUM_THREADS": "1", "STRAY_PID": str(stray)}, **NO_SAVES))
    until(stray.exists, 120, what="the stray's pid")
    pid = int(stray.read_text())
    try:
        # the leader has exited 0: its tree (the stray) is watched for the kill grace
        run.wait(lambda s: s.get("step") == 1 and not [p for p in s.get("pids") or [] if p.get("role") == "leader"],
                 timeout=120, what="the leader's exit")
        out = harness.cli("kill", run.id)
        assert out.returncode == 0, (out.stdout, out.stderr)
        assert "nothing was running" not in out.stdout + out.stderr, (out.stdout, out.stderr)
        until(lambda: not _alive(pid), 60, what="the attempt's stray process ended by the kill")
        st = run.wait_status("killed", "succeeded", "failed", timeout=120)
        assert st["status"] in ("succeeded", "killed"), st   # a training that finished keeps its end
    finally:
        if _alive(pid):
            os.kill(pid, 9)
