"""The supervised run in a hostile world, round 10: what still mislabelled a run's processes.
Through the real CLI, the real detached runner and real processes; the GPUs through the fake NVML
library (``tests/fakes``), the one part that cannot run here."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import psutil

from tests.runner.conftest import REPO
from tests.runner.test_runner_world9 import ONE_ATTEMPT, _cli, _gpu_env, _parent, start_handing_off
from tests.waiting import gone, sigkill, until


# a process record of the attempt that ended long ago (what state.json keeps of a runner SIGKILLed)
_DEAD = {"pid": 4_000_000, "start_time": 1.0, "role": "waiter"}


def _kept(state: dict, groups: dict[int, float | None], **tags) -> list[dict]:
    """State.json's ``groups`` as the runner of the state's attempt writes them, ``tags`` changed."""
    from moeconsole.runner.telemetry.identity import group_records
    return [{**rec, **tags} for rec in group_records(groups, state.get("attempt"))]


def test_a_worker_left_alone_in_a_session_its_makers_made_is_the_runs_to_gpus_and_kill(harness, tmp_path):
    """The runner and its waiter were SIGKILLed; the launcher hands a worker off (a double fork, an
    empty environment: no marker) and is SIGKILLed too. The worker is alone in the launcher's
    session: no process proven the run's is left to name it, and state.json kept PIDs only, so
    `moeconsole gpus` called it a stranger's GPU job (offered for killing) and `kill` left it
    running. state.json keeps the sessions and groups the run made (``groups``): it is the run's."""
    run, st, waiter, launcher, go, pidfile, recipe = start_handing_off(harness, tmp_path)
    # the session the launcher leads, kept with its maker's start (what is left to prove the worker)
    assert {"id": launcher, "made": next(p["start_time"] for p in st["pids"] if p["pid"] == launcher),
            "attempt": st["attempt"]} in [{k: g[k] for k in ("id", "made", "attempt")} for g in st.get("groups") or []], \
        st.get("groups")
    sigkill(st["runner"]["pid"], 30, what="the runner to die")
    sigkill(waiter, 30, what="the waiter to die")
    go.write_text("")
    worker = int(until(lambda: pidfile.exists() and pidfile.read_text().strip(), 60, what="the worker's PID"))
    try:
        until(lambda: _parent(_parent(worker)) != launcher, 30, what="the worker re-parented out of the launcher's tree")
        sigkill(launcher, 30, what="the launcher to die")
        assert os.getsid(worker) == launcher   # alone in the session its maker made
        env = _gpu_env(tmp_path, worker)
        bare = json.loads(_cli(env, "gpus", "--json", "--runs-dir", str(harness.runs_dir)).stdout)
        rows = [b for b in bare["blockers"] if b.get("pid") == worker]
        assert [r["labels"] for r in rows] == [["run_tree"]], rows
        assert rows[0]["owner_run"] == run.id and rows[0]["killable"] is False, rows
        seen = json.loads(_cli(env, "--json", "--once", run.id, "--runs-dir", str(harness.runs_dir)).stdout.splitlines()[-1])
        assert [b["labels"] for b in seen["blockers"] if b.get("pid") == worker] == [["run_tree"]], seen["blockers"]
        done = harness.cli("kill", run.id)
        assert done.returncode == 0, (done.stdout, done.stderr)
        until(lambda: gone(worker), 60, what="the worker to end with the run")
    finally:
        for pid in (worker, launcher):
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_kept_session_whose_number_a_stranger_has_now_is_not_the_runs(harness, tmp_path):
    """state.json keeps a session the run made; it ended and its number went to a stranger's GPU
    job, which leads a session of that number now. Neither the survey nor a kill without a runner
    takes the stranger for the run's (its start is not the maker's): a foreign GPU process."""
    from moeconsole.runner.process import killrun
    from moeconsole.runner.rundir import rundir
    run = harness.start(harness.recipe(command=["{python}", "-c", "pass"], **ONE_ATTEMPT))
    run.wait_status("succeeded", "failed", timeout=120)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        made = psutil.Process(stranger.pid).create_time() - 3600   # the run's maker of that number, long gone
        rd = rundir.RunDir(run.path)
        state = rd.read_state()
        assert state.get("attempt_boot_id")
        rd.write_state({**state, "status": "running", "pids": [_DEAD], "groups": _kept(state, {stranger.pid: made})})
        env = _gpu_env(tmp_path, stranger.pid)
        bare = json.loads(_cli(env, "gpus", "--json", "--runs-dir", str(harness.runs_dir)).stdout)
        assert [b["labels"] for b in bare["blockers"] if b.get("pid") == stranger.pid] == [["foreign_gpu"]], bare
        assert stranger.pid not in killrun.targets(rd, rd.read_state())
        # the start is what told them apart: kept with this process's own start, it is the maker
        rd.write_state({**state, "status": "running", "pids": [_DEAD],
                        "groups": _kept(state, {stranger.pid: psutil.Process(stranger.pid).create_time()})})
        assert stranger.pid in killrun.targets(rd, rd.read_state())
    finally:
        stranger.kill()
        stranger.wait(60)


# A user's daemon: this process leads a session of its own (``start_new_session``); once the file
# argv[1] exists it forks the daemon, which writes its PID to argv[2] and sleeps, and ends: the
# daemon is alone in a session whose maker is gone, the session's number free as a PID.
DAEMON = textwrap.dedent("""
    import os, sys, time
    go, pidfile = sys.argv[1], sys.argv[2]
    while not os.path.exists(go):
        time.sleep(0.02)
    if os.fork() == 0:
        with open(pidfile + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(pidfile + ".tmp", pidfile)
        time.sleep(600)
    os._exit(0)
""")


def _daemon_maker(tmp_path):
    script, go, pidfile = tmp_path / "daemon.py", tmp_path / "daemon.go", tmp_path / "daemon.pid"
    script.write_text(DAEMON)
    maker = subprocess.Popen([sys.executable, str(script), str(go), str(pidfile)], start_new_session=True)
    return maker, go, pidfile


def _let_daemon_go(maker, go, pidfile) -> int:
    go.write_text("")
    daemon = int(until(lambda: pidfile.exists() and pidfile.read_text().strip(), 60, what="the daemon's PID"))
    maker.wait(60)   # its maker ended: the daemon alone in the session maker.pid made
    assert os.getsid(daemon) == maker.pid and gone(maker.pid)
    return daemon


def test_a_kept_session_of_a_run_that_ended_is_not_the_runs_when_a_daemon_is_in_it_now(harness, tmp_path):
    """A run ended with its kept sessions in state.json (its runner SIGKILLed, `kill` found nothing
    alive); weeks later a user's daemon whose ``setsid`` parent exited is in a session of that
    number. A kill without a runner found nothing and wrote nothing: the number stayed kept, so
    `kill`, a runner taking the run over (adopt) and the survey took the daemon for the run's.
    `kill` that finds nothing forgets the groups with the PIDs; an ended run keeps none."""
    from moeconsole.runner.process import killrun
    from moeconsole.runner.process.engines.local import LocalEngine
    from moeconsole.runner.rundir import rundir
    from moeconsole.runner.telemetry.identity import kept_groups
    run = harness.start(harness.recipe(command=["{python}", "-c", "pass"], **ONE_ATTEMPT))
    run.wait_status("succeeded", "failed", timeout=120)
    maker, go, pidfile = _daemon_maker(tmp_path)
    daemon = None
    try:
        made = psutil.Process(maker.pid).create_time() - 3600   # the run's maker of that number, long gone
        rd = rundir.RunDir(run.path)
        state = rd.read_state()
        # the runner SIGKILLed: its attempt's PIDs and groups kept, nothing of them alive
        rd.write_state({**state, "status": "running", "pids": [_DEAD], "groups": _kept(state, {maker.pid: made})})
        assert not killrun.end_run(rd, rd.read_state(), grace_s=1.0, why="test").pids   # nothing alive
        daemon = _let_daemon_go(maker, go, pidfile)
        after = rd.read_state()
        assert daemon not in killrun.targets(rd, after), after.get("groups")
        assert LocalEngine(rd).adopt(after.get("attempt") or 0, after.get("pids") or [], kept_groups(after)) is None
        # the run ended (its status says so) with its groups still written: none of them is the run's
        for status in ("succeeded", "killed"):
            rd.write_state({**state, "status": status, "pids": [_DEAD], "groups": _kept(state, {maker.pid: made})})
            ended = rd.read_state()
            assert daemon not in killrun.targets(rd, ended), status
            assert LocalEngine(rd).adopt(ended.get("attempt") or 0, ended.get("pids") or [], kept_groups(ended)) is None
            env = _gpu_env(tmp_path, daemon)
            bare = json.loads(_cli(env, "gpus", "--json", "--runs-dir", str(harness.runs_dir)).stdout)
            assert [b["labels"] for b in bare["blockers"] if b.get("pid") == daemon] == [["foreign_gpu"]], bare
    finally:
        maker.kill()
        maker.wait(60)
        if daemon is not None and not gone(daemon):
            os.kill(daemon, signal.SIGKILL)


def test_groups_an_earlier_attempt_or_another_pid_namespace_kept_are_not_the_runs(harness, tmp_path):
    """A runner of an earlier version copies ``groups`` (a key it does not know) into every state it
    writes: attempt 1's sessions read as attempt 2's. A run directory shared by a container and its
    host has one boot id but two PID namespaces: a session number of one is another process in
    the other. Kept groups are the state's attempt's and this namespace's only."""
    from moeconsole.runner.process import killrun
    from moeconsole.runner.rundir import rundir
    run = harness.start(harness.recipe(command=["{python}", "-c", "pass"], **ONE_ATTEMPT))
    run.wait_status("succeeded", "failed", timeout=120)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        rd = rundir.RunDir(run.path)
        state = {**rd.read_state(), "status": "running", "attempt": 2, "pids": [_DEAD]}
        one = {stranger.pid: psutil.Process(stranger.pid).create_time()}   # its maker, alive and matching
        for groups in (_kept(state, one, attempt=1),                        # an earlier attempt's, carried
                       [{"id": stranger.pid, "made": one[stranger.pid]}],   # a file from before the tags
                       _kept(state, one, pidns=(_kept(state, one)[0]["pidns"] or 0) + 1)):   # another namespace's
            rd.write_state({**state, "groups": groups})
            assert stranger.pid not in killrun.targets(rd, rd.read_state()), groups
        rd.write_state({**state, "groups": _kept(state, one)})   # the attempt's own, seen here: the run's
        assert stranger.pid in killrun.targets(rd, rd.read_state())
    finally:
        stranger.kill()
        stranger.wait(60)
