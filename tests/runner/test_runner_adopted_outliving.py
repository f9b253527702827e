"""An attempt a new runner adopted while its launcher still ran (the old runner killed -9), whose
launcher then exits 0 and leaves its training running in the background: the training is the
attempt's, watched, ended by `kill`, and its own end is how the attempt is judged."""
from __future__ import annotations

import json
import os
import subprocess

import psutil
import pytest

from tests.runner.conftest import NO_SAVES
from tests.waiting import gone, reached, sigkill, until

# The launcher backgrounds the training (double fork, a session of its own) and returns 0 once the
# test has seen the new runner adopt the attempt (the file ``adopted`` in the run directory, which
# the launcher sets as MOECONSOLE_RUN_DIR: a fixed 4 s lost that race on a loaded machine, the
# runner not adopting within the test's wait or the run ending before the test saw it); the training
# then logs 30 steps, then dies of a CUDA OOM (exit 1).
WAIT_ADOPTED = "while not os.path.exists(os.path.join(os.environ['MOECONSOLE_RUN_DIR'], 'adopted')): time.sleep(0.05)\n"
LAUNCHER = ["{python}", "-c", (
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        " + WAIT_ADOPTED +
    "        for i in range(1, 31):\n"
    "            print(\"{'loss': '1.0', 'global_step/max_steps': '%d/100'}\" % i, flush=True)\n"
    "            time.sleep(0.3)\n"
    "        print('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB', flush=True)\n"
    "        os._exit(1)\n"
    "    os._exit(0)\n"
    + WAIT_ADOPTED +
    "sys.exit(0)\n")]


def _kill_runner_while_the_launcher_runs(harness, run) -> None:
    st = run.wait(lambda s: s.get("status") == "running" and any(p["role"] == "leader" for p in s.get("pids", [])),
                  120, what="a running leader")
    runner = st["runner"]["pid"]
    sigkill(runner, 30, what="the runner to die")
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0, (out.stdout, out.stderr)
    until(lambda: run.events("adopt"), 120, what="the new runner to adopt the live attempt")
    (run.path / "adopted").write_text("")   # the launcher exits 0 now, leaving its training to the new runner


def test_a_training_outliving_its_launcher_under_an_adopted_attempt_is_judged_by_its_own_end(harness):
    """The runner is killed -9 while the launcher runs; a new runner adopts the attempt. The
    launcher exits 0 and its training trains on, watched (every step recorded), then dies of a
    CUDA OOM. Its parent is not the new runner (the waiter, its subreaper, was orphaned with the
    old one), so its exit status is nobody's to read: the run was called succeeded on the
    launcher's 0. Its log is the witness now: a cuda_oom crash, saying why it was judged so."""
    run = harness.start(harness.recipe(command=LAUNCHER, kill={"grace_s": 3}, restart={"max_restarts": 0},
                                       **NO_SAVES))
    _kill_runner_while_the_launcher_runs(harness, run)
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "paused", timeout=120)
    assert st["status"] == "failed", (st, run.events("crash"))
    report = run.crash(1)
    assert report["class"] == "cuda_oom" and report["returncode"] is None, report
    assert any("outlived its launcher" in line and "adopted" in line for line in report["evidence"]), report
    assert max(m["step"] for m in run.metrics()) == 30



def test_a_training_outliving_its_launcher_under_an_adopted_attempt_is_ended_by_kill(harness):
    """The same adopted attempt, its training going on after the launcher's exit 0: `kill` ends
    it (the runner tracks it from the waiter's exit record though it is not its parent)."""
    long = [LAUNCHER[0], LAUNCHER[1], LAUNCHER[2].replace("range(1, 31)", "range(1, 1001)")]
    run = harness.start(harness.recipe(command=long, kill={"grace_s": 3}, **NO_SAVES))
    _kill_runner_while_the_launcher_runs(harness, run)
    until(lambda: [e for e in run.events("alert") if e.get("rule") == "tree_outlives_leader"], 180,
          what="the training outliving its launcher under the new runner")
    pids = [p["pid"] for p in run.wait(lambda s: s.get("pids"), 30, what="its processes in state.json")["pids"]]
    out = harness.cli("kill", run.id, "--grace", "2")
    assert out.returncode == 0, (out.stdout, out.stderr)
    st = run.wait_status("killed", "succeeded", "failed", timeout=180)
    assert st["status"] == "killed", st
    assert max(m["step"] for m in run.metrics()) < 1000
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


# The same launcher; its training logs a step every 0.3 s until the test creates GO, then hands on:
# it starts the rest of the training (steps to 40, without the run's marker, in its session) and
# exits 0 at once. The rest has no parent left: it is re-parented away from the tree.
def _hands_on(go, pid_file) -> list[str]:
    rest = ("import sys, time\n"
            "for i in range(int(sys.argv[1]), 41):\n"
            "    print(\"{'loss': '1.0', 'global_step/max_steps': '%d/40'}\" % i, flush=True)\n"
            "    time.sleep(0.2)\n")
    return ["{python}", "-c", (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        i = 1\n"
        f"        while not os.path.exists({str(go)!r}) and i < 30:\n"
        "            print(\"{'loss': '1.0', 'global_step/max_steps': '%d/40'}\" % i, flush=True)\n"
        "            i += 1\n"
        "            time.sleep(0.3)\n"
        "        rest = os.fork()\n"
        "        if rest == 0:\n"
        "            env = {k: v for k, v in os.environ.items() if k != 'MOECONSOLE_RUN_ID'}\n"
        f"            os.execve(sys.executable, [sys.executable, '-c', {rest!r}, str(i)], env)\n"
        f"        open({str(pid_file)!r}, 'w').write(str(rest))\n"
        "        os._exit(0)\n"
        "    os._exit(0)\n"
        + WAIT_ADOPTED +
        "sys.exit(0)\n")]


def test_an_adopted_training_that_hands_on_to_a_process_it_starts_is_watched_to_its_end(harness, tmp_path):
    """Under an adopted attempt (the runner killed -9, a new one took over), the training left by
    its launcher starts the rest of the training, without the run's marker, and exits. The new
    runner is not that process's ancestor: its walk of the tree from the training found nothing
    once the training had ended, and the run was judged ended while the rest trained on,
    unwatched. It is in the session of the attempt's training: watched, every step recorded, the
    run succeeding once it ended."""
    go, pid_file = tmp_path / "go", tmp_path / "rest.pid"
    run = harness.start(harness.recipe(command=_hands_on(go, pid_file), kill={"grace_s": 3}, **NO_SAVES))
    _kill_runner_while_the_launcher_runs(harness, run)
    until(lambda: [e for e in run.events("alert") if e.get("rule") == "tree_outlives_leader"], 180,
          what="the training outliving its launcher under the new runner")
    rest = None
    try:
        go.write_text("")
        rest = int(until(lambda: pid_file.exists() and pid_file.read_text(), 60, what="the rest of the training"))
        st = run.wait_status("succeeded", "failed", "killed", "unsaved", "paused", timeout=120)
        assert max(m["step"] for m in run.metrics()) == 40, (st, run.metrics()[-3:])
        assert st["status"] == "succeeded", st
        assert gone(rest)
    finally:
        if rest is not None and not gone(rest):
            sigkill(rest)


NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"


def _reusable_pids() -> bool:
    return os.geteuid() == 0 and os.access(NS_LAST_PID, os.W_OK)


def _spawn_with_pid(pid: int, argv: list[str]) -> subprocess.Popen | None:
    """A process of ``argv`` given the PID ``pid`` (free now): the kernel's next PID set to it
    (``ns_last_pid``, root), tried again when another process took it first."""
    for _ in range(200):
        with open(NS_LAST_PID, "w") as f:
            f.write(str(pid - 1))
        proc = subprocess.Popen(argv)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    return None


# The launcher backgrounds the training (double fork, a session of its own), which logs a step and
# waits for END; the launcher waits for LAUNCHER_END and exits 0.
def _waits_for(launcher_end, end) -> list[str]:
    return ["{python}", "-c", (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        print(\"{'loss': '1.0', 'global_step/max_steps': '1/1'}\", flush=True)\n"
        f"        while not os.path.exists({str(end)!r}):\n"
        "            time.sleep(0.05)\n"
        "        os._exit(0)\n"
        "    os._exit(0)\n"
        f"while not os.path.exists({str(launcher_end)!r}):\n"
        "    time.sleep(0.05)\n"
        "sys.exit(0)\n")]


@pytest.mark.skipif(not _reusable_pids(), reason="needs root and a writable /proc/sys/kernel/ns_last_pid")
def _reaped(pid: int) -> bool:
    """Reap ``pid`` if it is this process's child and ended; True once no process has that PID."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass   # another's child (the waiter's), or reaped already
    return not os.path.exists(f"/proc/{pid}")


def test_a_pid_the_waiter_named_as_outliving_and_reused_since_is_a_strangers(harness, tmp_path):
    """The waiter names the training that outlives its command (`outliving`) in its exit record;
    a runner that reads it later (the runner died, `supervise` starts another) took whatever
    process has that PID then for the training. The training ended meanwhile and its PID went to
    another process of the user: the new runner tracked it as the attempt's, and its cleanup kill
    ended that stranger. The record names each PID with its start: the stranger lives on."""
    from moeconsole.runner.process.waiter import set_child_subreaper
    launcher_end, end = tmp_path / "launcher-end", tmp_path / "end"
    assert set_child_subreaper()  # orphans come back to this test, which reaps them: their PIDs free again
    stranger, run = None, None
    try:
        run = harness.start(harness.recipe(command=_waits_for(launcher_end, end), kill={"grace_s": 2},
                                           restart={"max_restarts": 0}, **NO_SAVES))
        st = run.wait(lambda s: s.get("status") == "running" and len(s.get("pids", [])) >= 2, 60,
                      what="the launcher and its training")
        sigkill(st["runner"]["pid"], 30, what="the runner to die")
        launcher_end.write_text("")
        record = run.path / "exits" / "attempt-1.json"
        until(lambda: record.exists() and json.loads(record.read_text()).get("outliving"), 60,
              what="the waiter's record naming the training")
        training = json.loads(record.read_text())["outliving"][0]
        end.write_text("")
        # ended, and reaped: its PID is free. The waiter writes its record before it exits, so the
        # training may still be the waiter's child (the waiter reaps it) or already this test's
        until(lambda: _reaped(training), 60, what="the training's PID to be free")
        stranger = _spawn_with_pid(training, ["sleep", "600"])
        if stranger is None:
            pytest.skip("another process took the PID every time")
        out = harness.cli("supervise", run.id)
        assert out.returncode == 0, (out.stdout, out.stderr)
        st = run.wait_status("succeeded", "failed", "killed", "unsaved", "paused", timeout=120)
        assert st["status"] == "succeeded", st
        assert stranger.poll() is None, "the stranger that took the training's PID was signalled"
        assert not [k for k in run.events("kill") if training in (k.get("pids") or [])], run.events("kill")
    finally:
        import ctypes
        ctypes.CDLL(None).prctl(36, 0, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER off
        if stranger is not None:
            stranger.kill()
            stranger.wait()
        from moeconsole.runner.process.proctree import reap_children
        from moeconsole.runner.rundir.rundir import RunDir, runner_locked
        if run is not None:
            reached(lambda: not runner_locked(RunDir(run.path)), 60)
        reap_children()  # the runners and the waiter that came back to this test, ended
