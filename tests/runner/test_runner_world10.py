"""The supervised run in a hostile world, round 10: what still mislabelled a run's processes.
Through the real CLI, the real detached runner and real processes; the GPUs through the fake NVML
library (``tests/fakes``), the one part that cannot run here."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import psutil

from tests.runner.conftest import REPO
from tests.runner.test_runner_world9 import HANDS_OFF, ONE_ATTEMPT, _cli, _gpu_env, _parent
from tests.waiting import gone, sigkill, until


def test_a_worker_left_alone_in_a_session_its_makers_made_is_the_runs_to_gpus_and_kill(harness, tmp_path):
    """The runner and its waiter were SIGKILLed; the launcher hands a worker off (a double fork, an
    empty environment: no marker) and is SIGKILLed too. The worker is alone in the launcher's
    session: no process proven the run's is left to name it, and state.json kept PIDs only, so
    `moeconsole gpus` called it a stranger's GPU job (offered for killing) and `kill` left it
    running. state.json keeps the sessions and groups the run made (``groups``): it is the run's."""
    script, go, pidfile = tmp_path / "hands_off.py", tmp_path / "go", tmp_path / "worker.pid"
    script.write_text(HANDS_OFF)
    recipe = harness.recipe(command=["{python}", str(script), str(go), str(pidfile)], kill={"grace_s": 3},
                            **ONE_ATTEMPT)
    run = harness.start(recipe)
    st = run.wait(lambda s: (s.get("step") or 0) >= 3 and any(p["role"] == "leader" for p in s.get("pids") or []),
                  90, what="step 3 and the launcher tracked")
    waiter = next(p["pid"] for p in st["pids"] if p["role"] == "waiter")
    launcher = next(p["pid"] for p in st["pids"] if p["role"] == "leader")
    # the session the launcher leads, kept with its maker's start (what is left to prove the worker)
    assert {"id": launcher, "made": next(p["start_time"] for p in st["pids"] if p["pid"] == launcher)} in \
        (st.get("groups") or []), st.get("groups")
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
        rd.write_state({**state, "status": "running", "groups": [{"id": stranger.pid, "made": made}]})
        env = _gpu_env(tmp_path, stranger.pid)
        bare = json.loads(_cli(env, "gpus", "--json", "--runs-dir", str(harness.runs_dir)).stdout)
        assert [b["labels"] for b in bare["blockers"] if b.get("pid") == stranger.pid] == [["foreign_gpu"]], bare
        assert stranger.pid not in killrun.targets(rd, rd.read_state())
        # the start is what told them apart: kept with this process's own start, it is the maker
        rd.write_state({**state, "status": "running",
                        "groups": [{"id": stranger.pid, "made": psutil.Process(stranger.pid).create_time()}]})
        assert stranger.pid in killrun.targets(rd, rd.read_state())
    finally:
        stranger.kill()
        stranger.wait(60)
