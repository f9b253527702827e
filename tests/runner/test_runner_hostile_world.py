"""The supervised run in a world that is not a clean test box: the log rotated under the runner,
a launcher that leaves its training running in the background. Each through the real CLI, the
real detached runner and a real training process; asserted on what the user sees (the run's
status, its steps, its events)."""
from __future__ import annotations

import os

import pytest

from tests.runner.conftest import NO_SAVES, ticker
from tests.waiting import sigkill, until

# A command that saves nothing, judged without a checkpoint directory.


def test_logrotate_rename_and_create_is_no_hang_and_loses_no_step(harness):
    """logrotate (rename, then a new empty train.log) under a live training: the training's stdout
    keeps writing the renamed file. The runner used to switch to the new empty file, hear nothing,
    call the healthy training hung, kill it and restart it; it reads the file the training writes,
    so the run ends in its one attempt with every step."""
    run = harness.start(harness.recipe(command=ticker(60, 0.15), heartbeat={"timeout_s": 4}, **NO_SAVES))
    run.wait(lambda s: (s.get("step") or 0) >= 5, what="step 5")
    log = run.path / "train.log"
    os.rename(log, run.path / "train.log.1")
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    assert st["attempt"] == 1 and not run.events("crash"), run.events("crash")
    assert not [e for e in run.events("alert") if e.get("rule") == "hang"]
    assert sorted({m["step"] for m in run.metrics()}) == list(range(1, 61))


# A launcher that starts the training in the background (double fork, a session of its own) and
# returns 0 a moment later, as `nohup train.sh &` in a wrapper does; the training prints 40 steps.
BACKGROUNDED = ["{python}", "-c", (
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        for i in range(1, 41):\n"
    "            print(\"{'loss': '1.0', 'global_step/max_steps': '%d/40'}\" % i, flush=True)\n"
    "            time.sleep(0.2)\n"
    "        os._exit(0)\n"
    "    os._exit(0)\n"
    "time.sleep(1.5)\n"
    "sys.exit(0)\n")]


def test_a_leader_that_exits_0_while_its_training_goes_on_is_no_success_yet(harness):
    """The leader exits 0 while the training it started in the background trains on. The runner
    used to end that training at once ("cleanup") and call the run succeeded at step 3 of 40; it
    says the tree outlives its leader and lets it train, the run succeeding once it ended, with
    every step."""
    run = harness.start(harness.recipe(command=BACKGROUNDED, kill={"grace_s": 3}, **NO_SAVES))
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    assert sorted({m["step"] for m in run.metrics()}) == list(range(1, 41))
    assert not [e for e in run.events("kill") if e.get("reason") == "cleanup"], run.events("kill")
    alert = [e for e in run.events("alert") if e.get("rule") == "tree_outlives_leader"]
    assert len(alert) == 1 and alert[0]["level"] == "warning", run.events("alert")


def test_a_kill_while_the_tree_outlives_its_leader_ends_it(harness):
    """While the backgrounded training trains on after its leader's exit, `kill` ends it (it
    must never answer "nothing was running" and leave it training)."""
    run = harness.start(harness.recipe(command=BACKGROUNDED, kill={"grace_s": 3}, **NO_SAVES))
    until(lambda: [e for e in run.events("alert") if e.get("rule") == "tree_outlives_leader"], 60,
          what="the tree outliving its leader")
    pids = run.wait(lambda s: s.get("pids"), 30, what="the processes that train on, in state.json")["pids"]
    pids = [p["pid"] for p in pids]
    out = harness.cli("kill", run.id, "--grace", "2")
    assert out.returncode == 0, (out.stdout, out.stderr)
    st = run.wait_status("killed", "succeeded", "failed", timeout=60)
    assert st["status"] == "killed", st
    assert max(m["step"] for m in run.metrics()) < 40
    import psutil
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


# A leader that leaves a silent process behind (a stuck data-loader worker) and exits 0.
STRAY = ["{python}", "-c", (
    "import os, sys, time\n"
    "print(\"{'loss': '1.0', 'global_step/max_steps': '1/1'}\", flush=True)\n"
    "if os.fork() == 0:\n"
    "    time.sleep(600)\n"
    "    os._exit(0)\n"
    "time.sleep(1)\n"
    "sys.exit(0)\n")]


def test_a_silent_process_left_by_a_clean_exit_is_cleaned_up_and_the_run_succeeds(harness):
    run = harness.start(harness.recipe(command=STRAY, kill={"grace_s": 2}, **NO_SAVES))
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    assert [e for e in run.events("kill") if e.get("reason") == "cleanup"], run.events("kill")
    assert not [e for e in run.events("alert") if e.get("rule") == "tree_outlives_leader"]


def test_a_run_directory_deleted_under_a_live_run_is_made_again_and_the_kill_lands(harness):
    """`rm -rf` of a live run's directory (a cleanup job, the wrong run): the runner used to go on
    blind, `kill RUN` answered "no run matches" (exit 2) and the training ran on out of reach. The
    runner makes the directory again (0700, the recipe, a new runner lock, its state), says so in
    a critical alert, and the kill lands through it; the steps since are recorded."""
    import shutil
    import stat

    run = harness.start(harness.recipe(command=ticker(2000, 0.1), **NO_SAVES))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="step 3")
    leader = next(p for p in st["pids"] if p["role"] == "leader")
    trash = harness.tmp / "trash"
    os.rename(run.path, trash)  # gone at once (an rm -rf races the runner's own writes), then deleted
    # The runner follows a renamed directory and may write a file into it between rmtree's listing
    # and its rmdir (ENOTEMPTY, as a real `rm -rf` would say): delete until it is gone.
    def deleted() -> bool:
        shutil.rmtree(trash, ignore_errors=True)
        return not trash.exists()

    until(deleted, 30, what="the moved run directory deleted")
    again = run.wait(lambda s: s.get("status") == "running" and (s.get("step") or 0) > st["step"] + 3, 60,
                     what="the run directory made again, the steps going on")
    assert again["runner"]["pid"] == st["runner"]["pid"]
    assert stat.S_IMODE(os.stat(run.path).st_mode) == 0o700
    assert (run.path / "recipe.yaml").is_file()
    until(lambda: [e for e in run.events("alert") if "deleted" in e.get("message", "")], 30,
          what="the alert saying the directory was deleted")
    assert "made again" in (run.path / "runner.log").read_text()  # the runner's own log goes on there
    out = harness.cli("kill", run.id, "--grace", "2")
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert run.state()["status"] == "killed"
    import psutil
    until(lambda: not psutil.pid_exists(leader["pid"]) or psutil.Process(leader["pid"]).status() == psutil.STATUS_ZOMBIE,
          30, what="the training to be gone")
    steps = [m["step"] for m in run.metrics()]
    assert steps and steps == list(range(steps[0], steps[-1] + 1)), steps  # none lost since the deletion


def test_a_run_directory_renamed_under_a_live_run_is_not_made_again(harness):
    """A rename is no deletion: the runner never makes the old name again (two directories would
    claim the run); it says so in its log, and the training goes on."""
    run = harness.start(harness.recipe(command=ticker(2000, 0.1), **NO_SAVES))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="step 3")
    moved = harness.runs_dir / (run.id + "-moved")
    os.rename(run.path, moved)
    until(lambda: "was renamed under the live run" in (moved / "runner.log").read_text(), 60,
          what="the runner saying its directory was renamed")
    assert not run.path.exists()
    leader = next(p for p in st["pids"] if p["role"] == "leader")
    os.rename(moved, run.path)  # renamed back: the run's files are written again, the kill lands
    out = harness.cli("kill", run.id, "--grace", "2")
    assert out.returncode == 0, (out.stdout, out.stderr)
    import psutil
    until(lambda: not psutil.pid_exists(leader["pid"]) or psutil.Process(leader["pid"]).status() == psutil.STATUS_ZOMBIE,
          30, what="the training to be gone")


# The backgrounded training dies of a CUDA OOM at step 5 after its launcher returned 0.
BACKGROUNDED_OOM = ["{python}", "-c", (
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        for i in range(1, 6):\n"
    "            print(\"{'loss': '1.0', 'global_step/max_steps': '%d/40'}\" % i, flush=True)\n"
    "            time.sleep(0.3)\n"
    "        print('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB', flush=True)\n"
    "        os._exit(1)\n"
    "    os._exit(0)\n"
    "time.sleep(0.5)\n"
    "sys.exit(0)\n")]


def test_a_backgrounded_training_that_crashes_after_its_launcher_returned_is_a_crash(harness):
    """The training the launcher left running dies (exit 1, a CUDA OOM in its log): that is the
    attempt's end, classified as a crash, never a success on the launcher's exit 0."""
    run = harness.start(harness.recipe(command=BACKGROUNDED_OOM, kill={"grace_s": 3},
                                       restart={"max_restarts": 0}, **NO_SAVES))
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "paused", timeout=120)
    assert st["status"] == "failed", st
    report = run.crash(1)
    assert report["exit_code"] == 1 and report["class"] == "cuda_oom", report


def test_a_new_runner_adopts_a_tree_that_trains_on_after_its_leader(harness):
    """The runner dies (SIGKILL) while the training its launcher left running trains on; the new
    runner (`supervise`) used to find the leader gone, judge the run succeeded at once and leave
    the training running unwatched. It adopts what lives of the tree: every step is recorded and
    the run succeeds once the training ended."""
    cmd = [BACKGROUNDED[0], BACKGROUNDED[1], BACKGROUNDED[2].replace("range(1, 41)", "range(1, 81)")
           .replace("/40", "/80")]
    run = harness.start(harness.recipe(command=cmd, kill={"grace_s": 3}, **NO_SAVES))
    until(lambda: [e for e in run.events("alert") if e.get("rule") == "tree_outlives_leader"], 60,
          what="the tree outliving its leader")
    st = run.wait(lambda s: s.get("pids"), 30, what="the processes that train on, in state.json")
    runner = st["runner"]["pid"]
    sigkill(runner, 30, what="the runner to die")
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0, (out.stdout, out.stderr)
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    assert sorted({m["step"] for m in run.metrics()}) == list(range(1, 81))
    assert not [e for e in run.events("kill") if e.get("reason") == "cleanup"], run.events("kill")


STUBBORN = ["{python}", "-c", (
    "import signal, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "for i in range(1, 100000):\n"
    "    print(\"{'loss': '1.0', 'global_step/max_steps': '%d/100000'}\" % i, flush=True)\n"
    "    time.sleep(0.2)\n")]


def test_a_kill_under_way_when_the_runner_dies_is_carried_on_by_the_next_runner(harness):
    """The user's kill is under way (SIGTERM sent, the training ignores it, the grace runs) when
    the runner dies. The next runner (`supervise`) used to adopt the training as RUNNING and the
    kill was lost: it trained on for good. The new runner carries the kill on: SIGTERM again, a
    grace from now, SIGKILL, and the run ends killed."""
    import signal

    import psutil
    from moeconsole.runner.supervisor import control
    run = harness.start(harness.recipe(command=STUBBORN, kill={"grace_s": 8}, **NO_SAVES))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="step 3")
    leader = next(p for p in st["pids"] if p["role"] == "leader")
    assert control.send(run.path / "control.sock", {"cmd": "kill"}, timeout=10)["ok"]
    st = run.wait_status("stopping")
    os.kill(st["runner"]["pid"], signal.SIGKILL)
    until(lambda: not psutil.pid_exists(st["runner"]["pid"])
          or psutil.Process(st["runner"]["pid"]).status() == psutil.STATUS_ZOMBIE, 30, what="the runner to die")
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0, (out.stdout, out.stderr)
    st = run.wait_status("killed", "failed", "succeeded", "cooldown", timeout=90)
    assert st["status"] == "killed", st
    kills = run.events("kill")
    assert [(k["reason"], k["requested_by"]) for k in kills] == [("user", "client")] * 2, kills
    assert not psutil.pid_exists(leader["pid"]) or psutil.Process(leader["pid"]).status() == psutil.STATUS_ZOMBIE


# The backgrounded training writes 15 steps (3 s, past its launcher's exit), then hangs (silent, alive).
BACKGROUNDED_HANG = [BACKGROUNDED[0], BACKGROUNDED[1], BACKGROUNDED[2].replace(
    "range(1, 41)", "range(1, 16)").replace("        os._exit(0)\n    os._exit(0)", "        time.sleep(600)\n    os._exit(0)")]


def test_a_backgrounded_training_that_hangs_is_a_hang_not_a_success(harness):
    """After its launcher returned 0, the training trains on, then falls silent: the heartbeat
    calls that a hang as in any attempt (a crash), never a success on the launcher's 0."""
    assert "time.sleep(600)" in BACKGROUNDED_HANG[2]
    run = harness.start(harness.recipe(command=BACKGROUNDED_HANG, kill={"grace_s": 2}, heartbeat={"timeout_s": 4},
                                       restart={"max_restarts": 0}, **NO_SAVES))
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "paused", timeout=120)
    assert st["status"] == "failed", st
    assert run.crash(1)["class"] == "hang"
    assert [e for e in run.events("alert") if e.get("rule") == "tree_outlives_leader"]


def test_a_training_that_closed_its_output_is_said_to_be_unheard_when_called_hung(harness):
    """A training that closes its stdout and stderr (it logs elsewhere, or daemonizes) falls
    silent to the runner: the heartbeat still ends it, and the hang alert now says why the
    silence is no proof of a hang (nothing of the training holds train.log any more); a really
    silent training that keeps its output is called hung without that remark."""
    closes = ["{python}", "-c", "import os, time\nprint({'loss': 1.0, 'step': 1}, flush=True)\n"
                                "os.close(1); os.close(2)\ntime.sleep(600)\n"]
    keeps = ["{python}", "-c", "import time\nprint({'loss': 1.0, 'step': 1}, flush=True)\ntime.sleep(600)\n"]
    found = {}
    for name, cmd in (("closes", closes), ("keeps", keeps)):
        run = harness.start(harness.recipe(command=cmd, heartbeat={"timeout_s": 3}, kill={"grace_s": 2},
                                           restart={"max_restarts": 0}, **NO_SAVES))
        run.wait_status("failed", "succeeded", "killed", timeout=90)
        found[name] = [e["message"] for e in run.events("alert") if e.get("rule") == "hang"]
    assert len(found["closes"]) == 1 and "closed or redirected its stdout and stderr" in found["closes"][0]
    assert len(found["keeps"]) == 1 and "closed" not in found["keeps"][0]


# A launcher that backgrounds its training (double fork, a session of its own) and exits 0 at once;
# the training dies (exit 3) SLEEP seconds later: often before the runner reaped the launcher, or
# even while the launcher's interpreter is still exiting, and before the runner ever saw it alive.
def _quick_death(sleep: float) -> list[str]:
    return ["{python}", "-c", (
        "import os, sys, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        time.sleep({sleep})\n"
        "        os._exit(3)\n"
        "    os._exit(0)\n"
        "sys.exit(0)\n")]


def test_a_backgrounded_training_that_dies_just_after_its_launcher_exit_0_is_a_crash(harness):
    """The training the launcher left running dies (exit 3) milliseconds after the launcher's exit
    0 (or while it is exiting), before the runner reaped the launcher and before it ever saw the
    training alive. The runner used to ignore an orphan it reaped while the attempt was still live,
    and one it had never seen, and judge the run by the launcher's 0 (`succeeded`). Several runs
    and delays, so the race is hit however busy the machine: the end seen by the waiter before or
    after the command's, and the training outliving the waiter and then dying under the runner."""
    for sleep in (0.005, 0.0, 0.05, 0.3, 1.0):
        run = harness.start(harness.recipe(command=_quick_death(sleep), kill={"grace_s": 3},
                                           restart={"max_restarts": 0}, **NO_SAVES))
        st = run.wait_status("succeeded", "failed", "killed", "unsaved", "paused", timeout=120)
        assert st["status"] == "failed", (sleep, st)
        assert run.crash(1)["exit_code"] == 3, (sleep, run.crash(1))


# A launcher whose backgrounded middle process (its own session) waits until the launcher and
# then the waiter have ended (its parent is then neither: the waiter has looked at the tree for the
# last time and named only it as outliving), and only then forks the training, which dies (exit 3):
# at once, in the middle process's session (``"same"``), or after 2 s in a session of its own
# (``"own"``: the runner sees it alive before it dies).
def _forked_after_the_waiter(session: str) -> list[str]:
    training = "        os._exit(3)\n" if session == "same" else \
        "        os.setsid()\n        time.sleep(2)\n        os._exit(3)\n"
    return ["{python}", "-c", (
        "import os, sys, time\n"
        "launcher, waiter = os.getpid(), os.getppid()\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    deadline = time.monotonic() + 120\n"
        "    while os.getppid() in (launcher, waiter) and time.monotonic() < deadline:\n"
        "        time.sleep(0.01)\n"
        "    if os.fork() == 0:\n"
        f"{training}"
        "    os._exit(0)\n"
        "sys.exit(0)\n")]


@pytest.mark.parametrize("session", ["same", "own"])
def test_a_training_forked_after_the_waiter_ended_and_dead_under_the_runner_is_the_attempts_end(harness, session):
    """The waiter lists what outlives the command once its tree stands still; a middle process it
    listed may fork the training only after the waiter ended. That training's orphan end reaches
    the runner with its ancestry gone (its parent ended too): it used to be nobody's, and the run
    `succeeded` on the launcher's 0. Its session (made by the listed middle process), or a walk of
    the runner's tree that saw it alive, makes it the attempt's: `failed`, exit 3. (The training in
    a session of its own is alive when the middle process ends; a walk of the tree that straddled
    the fork lost it: tests/runner/test_proctree_walk.py makes that race happen.)"""
    run = harness.start(harness.recipe(command=_forked_after_the_waiter(session), kill={"grace_s": 10},
                                       restart={"max_restarts": 0}, **NO_SAVES))
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "paused", timeout=180)
    assert st["status"] == "failed", st
    assert run.crash(1)["exit_code"] == 3, run.crash(1)


# A launcher that starts a helper in the background which fails at once, then trains 4 s itself
# and ends well.
HELPER_FAILS_EARLY = ["{python}", "-c", (
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    if os.fork() == 0:\n"
    "        os._exit(4)\n"
    "    os._exit(0)\n"
    "for i in range(1, 5):\n"
    "    print(\"{'loss': '1.0', 'global_step/max_steps': '%d/4'}\" % i, flush=True)\n"
    "    time.sleep(1.0)\n"
    "sys.exit(0)\n")]


def test_a_background_helper_that_failed_long_before_a_good_end_leaves_the_run_succeeded(harness):
    """The other side of the rule above: a detached helper that failed seconds before the training
    ended well is no crash of the run."""
    run = harness.start(harness.recipe(command=HELPER_FAILS_EARLY, kill={"grace_s": 3},
                                       restart={"max_restarts": 0}, **NO_SAVES))
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "paused", timeout=120)
    assert st["status"] == "succeeded", st
    assert sorted({m["step"] for m in run.metrics()}) == [1, 2, 3, 4]


def _renamed_alert(run) -> list[dict]:
    return [e for e in run.events("alert") if e.get("rule") == "storage" and e.get("level") == "critical"
            and "renamed" in e.get("message", "")]


def test_a_run_directory_renamed_under_a_live_run_is_followed_there_and_the_kill_by_its_new_name_lands(harness):
    """`mv` of a live run's directory (to give it a name): the runner used to go on writing the old
    paths, so the renamed directory showed a run frozen at the step of the rename, with its records
    only in memory. The runner follows it there: one critical alert in the renamed directory names
    where it is and what still names the old path, the steps go on being recorded there with none
    lost, and `kill NEW-NAME` lands, even once the training's own output path made the old name a
    directory again (the control socket is never bound there); the old name is never made a run again."""
    run = harness.start(harness.recipe(command=ticker(2000, 0.1), **NO_SAVES))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="step 3")
    moved_path = harness.runs_dir / (run.id + "-moved")
    os.rename(run.path, moved_path)
    moved = type(run)(moved_path)
    until(lambda: _renamed_alert(moved), 60, what="the critical alert in the renamed directory")
    alert = _renamed_alert(moved)
    assert len(alert) == 1 and str(moved_path) in alert[0]["message"], alert
    os.makedirs(run.path / "output")  # the training's own output path names the old one: a save makes it again
    again = moved.wait(lambda s: (s.get("step") or 0) > st["step"] + 5, 60, what="steps recorded in the renamed directory")
    assert again["status"] == "running" and again["runner"]["pid"] == st["runner"]["pid"]
    out = harness.cli("kill", moved_path.name, "--grace", "2")
    assert out.returncode == 0, (out.stdout, out.stderr)
    assert moved.wait_status("killed", "failed", "succeeded", timeout=60)["status"] == "killed"
    steps = [m["step"] for m in moved.metrics()]
    assert steps == list(range(1, steps[-1] + 1)), steps  # none lost across the rename
    assert sorted(os.listdir(run.path)) == ["output"], "the old name is never made a run again"


def _ends_there_with_every_step(moved, steps: int) -> None:
    """The run renamed to ``moved`` succeeded there, with steps 1..``steps`` and the renamed alert."""
    st = moved.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    assert sorted({m["step"] for m in moved.metrics()}) == list(range(1, steps + 1))
    assert _renamed_alert(moved)


def test_a_run_that_ends_while_its_directory_is_renamed_ends_there_with_every_step(harness):
    """The training ends while its run directory is renamed away: the run's end (`succeeded`) and
    every step are in the renamed directory, never lost with a runner that exits."""
    run = harness.start(harness.recipe(command=ticker(40, 0.1), **NO_SAVES))
    run.wait(lambda s: (s.get("step") or 0) >= 3, what="step 3")
    moved_path = harness.runs_dir / (run.id + "-moved")
    os.rename(run.path, moved_path)
    _ends_there_with_every_step(type(run)(moved_path), 40)


def test_a_run_that_ends_the_moment_its_directory_is_renamed_ends_there_with_every_step(harness):
    """The training ends right after its run directory is renamed, before the runner's next look at
    the directory: its last records cannot be written under the old name, and the runner, which now
    stays until every waiting record is written, waited for them there for ever (status `running` in
    the renamed directory; seen under load). It follows the directory while it finishes too."""
    moved_path = harness.runs_dir / "renamed-at-the-end"
    command = ["{python}", "-c", (
        "import os, time\n"
        "for i in range(1, 7):\n"
        "    if i == 4:\n"
        f"        while not os.path.isdir({str(moved_path)!r}): time.sleep(0.01)\n"
        "    print(\"{'loss': '1.0', 'global_step/max_steps': '%d/6'}\" % i, flush=True)\n"
        "    time.sleep(0.2 if i < 3 else 0)\n")]
    run = harness.start(harness.recipe(command=command, **NO_SAVES))
    run.wait(lambda s: (s.get("step") or 0) >= 3, what="step 3")
    os.rename(run.path, moved_path)
    _ends_there_with_every_step(type(run)(moved_path), 6)


def test_eio_on_the_runners_own_writes_loses_nothing_written_and_the_runner_goes_on(harness, tmp_path, monkeypatch):
    """The disk under the run directory fails writes with EIO for a while (every state.json
    replace at its fsync, every events/metrics append after half its bytes: the test-only
    ``MOECONSOLE_TEST_WRITE_FAULT_FILE``). Nothing written before is lost or damaged (state.json
    whole, every line of events and metrics whole), the runner supervises on and says so once in
    its log and, once writes succeed again, once in a `storage` alert (it used to say nothing where
    the user looks); every step is on disk exactly once and the run succeeds."""
    import json
    fault = tmp_path / "write_fault"
    monkeypatch.setenv("MOECONSOLE_TEST_WRITE_FAULT_FILE", str(fault))
    run = harness.start(harness.recipe(command=ticker(60, 0.1), **NO_SAVES))
    run.wait(lambda s: (s.get("step") or 0) >= 5, what="step 5")
    fault.write_text("EIO")
    until(lambda: "Input/output error" in (run.path / "runner.log").read_text(), 60, what="the runner saying writes fail")
    until(lambda: (run.path / "train.log").read_text().count("global_step") >= 30, 60, what="the training going on")
    json.loads((run.path / "state.json").read_text())  # whole: the old one stayed
    for name in ("events.jsonl", "metrics.jsonl"):
        for line in (run.path / name).read_text().splitlines():
            json.loads(line)  # no fragment of a failed append
    fault.unlink()
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded" and st["storage"] is None, st
    assert [m["step"] for m in run.metrics()] == list(range(1, 61))
    log = (run.path / "runner.log").read_text()
    assert log.count("Input/output error") == 1, log
    said = [e for e in run.events("alert") if e.get("rule") == "storage"]
    assert len(said) == 1 and said[0]["level"] == "warning" and "Input/output error" in said[0]["message"], said
    assert "none lost" in said[0]["message"] and said[0]["values"]["records"] > 0, said


rundir_terminal = ("succeeded", "failed", "killed", "unsaved", "paused")

# Attempt 1 crashes (exit 1) at step 30; attempt 2 trains to step 40.
# Attempt 1 prints steps, then crashes only once the test says so (the file named by its second
# argument exists): under load the runner can see step 3 late, and a crash before the rename would
# have been restarted in the old place before the test renamed it.
CRASHES_ON_ATTEMPT_1 = ["{python}", "-c", (
    "import os, sys, time\n"
    "first = sys.argv[1] == '1'\n"
    "for i in range(1, 31 if first else 41):\n"
    "    print(\"{'loss': '1.0', 'global_step/max_steps': '%d/40'}\" % i, flush=True)\n"
    "    time.sleep(0.1)\n"
    "while first and not os.path.exists(sys.argv[2]):\n"
    "    time.sleep(0.05)\n"
    "sys.exit(1 if first else 0)\n"), "{attempt}"]


def test_a_crash_while_the_run_directory_is_renamed_waits_to_relaunch_until_it_is_renamed_back(harness):
    """The training crashes while its run directory is renamed away: the runner used to fail the
    run ("the run directory is gone: nothing can be launched"). The restart waits, saying why, and
    launches once the directory is renamed back; the run then succeeds there."""
    crash_now = harness.runs_dir.parent / "crash-now"
    run = harness.start(harness.recipe(command=CRASHES_ON_ATTEMPT_1 + [str(crash_now)], restart={"max_restarts": 2},
                                       **NO_SAVES))
    run.wait(lambda s: (s.get("step") or 0) >= 3, what="step 3")
    moved_path = harness.runs_dir / (run.id + "-moved")
    os.rename(run.path, moved_path)
    crash_now.touch()
    moved = type(run)(moved_path)
    st = moved.wait(lambda s: s.get("status") in rundir_terminal or (s.get("status") == "cooldown" and any(
        "renamed" in w for w in (s.get("cooldown") or {}).get("waiting_on") or [])), 120, what="the restart waiting")
    assert st["status"] == "cooldown" and st["attempt"] == 1, st
    assert not (run.path / "state.json").exists()
    os.rename(moved_path, run.path)
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded" and st["attempt"] == 2, st
