"""The supervised run in a hostile world, round 9: what still called a process of the run another's.
Through the real CLI, the real detached runner and real processes; the GPUs through the fake NVML
library (``tests/fakes``), the one part that cannot run here."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil

from tests.fakes.nvml import FakeProc, build_fake_nvml, fake_env, write_scenario
from tests.runner.conftest import NO_SAVES, REPO
from tests.waiting import gone, sigkill, until

ONE_ATTEMPT = {"restart": {"max_restarts": 0}, **NO_SAVES}


def start_handing_off(harness, tmp_path):
    """A run of HANDS_OFF at step 3 with its launcher tracked: (run, its state, the waiter's PID,
    the launcher's, the file that lets the launcher hand its worker off, the worker's PID file, the
    recipe)."""
    script, go, pidfile = tmp_path / "hands_off.py", tmp_path / "go", tmp_path / "worker.pid"
    script.write_text(HANDS_OFF)
    recipe = harness.recipe(command=["{python}", str(script), str(go), str(pidfile)], kill={"grace_s": 3},
                            **ONE_ATTEMPT)
    run = harness.start(recipe)
    st = run.wait(lambda s: (s.get("step") or 0) >= 3 and any(p["role"] == "leader" for p in s.get("pids") or []),
                  90, what="step 3 and the launcher tracked")
    waiter = next(p["pid"] for p in st["pids"] if p["role"] == "waiter")
    launcher = next(p["pid"] for p in st["pids"] if p["role"] == "leader")
    return run, st, waiter, launcher, go, pidfile, recipe


# A launcher (the recipe's command: it carries the run's marker and leads the session the waiter
# gives it) that prints a step every 0.2 s. Once the file argv[1] exists, a child of it starts a
# worker with an empty environment (no run marker: `env -i`, a site launcher that scrubs it) and
# ends at once, as a double fork does: the worker is re-parented (to init once the runner and its
# waiter are gone), nobody's child of the run, still in the launcher's session and group. It writes
# its PID to argv[2] and sleeps for good.
HANDS_OFF = textwrap.dedent("""
    import os, sys, time
    started = False
    for i in range(1, 100000):
        print('{"step": %d, "loss": 0.5}' % i, flush=True)
        if not started and os.path.exists(sys.argv[1]):
            started = True
            middle = os.fork()
            if middle == 0:
                if os.fork() == 0:
                    os.execve(sys.executable, [sys.executable, "-c",
                              "import os, sys, time\\nopen(sys.argv[1], 'w').write(str(os.getpid()))\\n"
                              "while True: time.sleep(1)", sys.argv[2]], {})
                os._exit(0)
            os.waitpid(middle, 0)
        time.sleep(0.2)
""")

# The runner's pre-flight of its next attempt as the cooldown asks it (``ConditionsCheck.look``:
# the run's id, this process allowed, the run's survivors named), once without survivors (a
# process outside the tracked tree) and once with them ({pid: start time}, as ``ProcTree.survivors``).
PREFLIGHT = textwrap.dedent("""
    import json, sys
    from moeconsole.runner.recipes import recipe
    from moeconsole.runner.supervisor.conditions import ConditionsCheck
    from moeconsole.runner.telemetry.gpu import get_backend
    from moeconsole.runner.telemetry.preflight import preflight
    import os
    run_id, path = sys.argv[1], sys.argv[2]
    survivors = {int(pid): start for pid, start in json.loads(sys.argv[3]).items()}   # ProcTree.survivors
    backend = get_backend()
    res = preflight(backend, devices=[0], tolerance_mib=1e9, port=None, run_id=run_id, exclude_pids={os.getpid()})
    # the recipe as it would name the GPU its attempts use (the run itself ran without one)
    check = ConditionsCheck(run_id, recipe.load(path, ["gpus.devices=[0]"]), gpu_backend=backend, diag=print)
    assert check.devices == [0], check.devices
    look = check.look(unwritable=None, survivors=survivors, tree_blocking=[], port=None)
    print(json.dumps({"problems": res.problems, "labels": {b.pid: list(b.labels) for b in res.blockers},
                      "waiting": list(look.waiting), "blockers": [b.pid for b in look.blockers]}))
""")


def _gpu_env(tmp_path, pid: int) -> dict[str, str]:
    """The fake NVML listing ``pid`` on GPU 0 (40 GB), the repo importable, no run marker."""
    scenario = write_scenario(tmp_path / "gpus", gpus=2, processes=[FakeProc(gpu=0, pid=pid, used_mib=40000)])
    env = fake_env(build_fake_nvml(), scenario)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    for k in ("MOECONSOLE_RUN_ID", "MOECONSOLE_RUN_DIR", "MOECONSOLE_ATTEMPT", "MOECONSOLE_RUNS_DIR"):
        env.pop(k, None)
    return env


def _parent(pid: int) -> int:
    try:
        return psutil.Process(pid).ppid()
    except psutil.Error:
        return 0


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args], capture_output=True, text=True,
                         timeout=120, env=env, cwd=REPO)
    assert out.returncode == 0, (out.stdout, out.stderr)
    return out


def test_a_worker_re_parented_out_of_the_tree_without_the_marker_is_the_runs_in_gpus_and_the_preflight(
        harness, tmp_path):
    """The runner and its waiter were SIGKILLed (the OOM killer, a login node's clean-up); the
    training's launcher lives on and hands a worker off (a double fork, an empty environment): its
    parent ended, it is init's child, no marker names it, no runner recorded it. `kill` ends it
    with the run (it is in the session the launcher leads: ``proctree.group_members``), but the
    GPU survey, the run's own `--json` and the pre-flight called it a stranger's process holding
    the GPU (`foreign_gpu`, offered for killing; "foreign GPU process" in a pre-flight). The same
    session and group rule names it the run's in all of them."""
    run, st, waiter, launcher, go, pidfile, recipe = start_handing_off(harness, tmp_path)
    sigkill(st["runner"]["pid"], 30, what="the runner to die")
    sigkill(waiter, 30, what="the waiter to die")
    go.write_text("")
    worker = int(until(lambda: pidfile.exists() and pidfile.read_text().strip(), 60, what="the worker's PID"))
    try:
        until(lambda: _parent(_parent(worker)) != launcher, 30, what="the worker re-parented out of the launcher's tree")
        env = _gpu_env(tmp_path, worker)
        # the bare survey: the run's, not a stranger's process blocking GPU 0
        bare = json.loads(_cli(env, "gpus", "--json").stdout)
        rows = [b for b in bare["blockers"] if b.get("pid") == worker]
        assert [r["labels"] for r in rows] == [["run_tree"]], rows
        assert rows[0]["blocker"] is False and rows[0]["killable"] is False, rows
        assert rows[0]["session"] == launcher, rows   # the session it is known by
        assert rows[0]["owner_run"] == run.id and rows[0]["run_id"] is None, rows   # whose, not a marker
        text = _cli(env, "gpus").stdout
        line = next(x for x in text.splitlines() if f" {worker} " in x)
        assert "run_tree" in line and not line.startswith("!") and f"(run {run.id})" in line, text
        # offered to `gpus --kill`: refused with the run's name and the command that stops it
        refused = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "gpus", "--kill", str(worker), "--yes"],
                                 capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
        assert refused.returncode == 1, (refused.stdout, refused.stderr)
        assert (f"refused: PID {worker} belongs to the live run {run.id}: stop it with `moeconsole kill {run.id}`"
                in refused.stdout), refused.stdout
        assert "None" not in refused.stdout and not gone(worker), refused.stdout
        # the run's own view (the console's zombie list)
        seen = json.loads(_cli(env, "--json", "--once", run.id, "--runs-dir", str(harness.runs_dir)).stdout.splitlines()[-1])
        assert [b["labels"] for b in seen["blockers"] if b.get("pid") == worker] == [["run_tree"]], seen["blockers"]
        # the pre-flight of the run: a leftover of this run, not a stranger's; with the run's
        # survivors named (the cooldown's look), not a blocker at all
        out = subprocess.run([sys.executable, "-c", PREFLIGHT, run.id, str(recipe), json.dumps({launcher: psutil.Process(launcher).create_time()})],
                             capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
        assert out.returncode == 0, out.stderr
        pre = json.loads(out.stdout.splitlines()[-1])
        assert "orphan" in pre["labels"][str(worker)], pre
        assert not any("foreign GPU process" in p for p in pre["problems"]), pre
        assert any(p.startswith("leftover of this run") and f"PID {worker} " in p for p in pre["problems"]), pre
        assert pre["blockers"] == [], pre
        assert not any(f"PID {worker} " in w for w in pre["waiting"]), pre
        assert any(w.startswith("survivors of this run") for w in pre["waiting"]), pre
        # and `kill` ends it with the run, as before
        done = harness.cli("kill", run.id)
        assert done.returncode == 0, (done.stdout, done.stderr)
        until(lambda: gone(launcher) and gone(worker), 60, what="the launcher and the worker to end")
    finally:
        for pid in (worker, launcher):
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_survivor_whose_pid_a_stranger_was_given_is_a_stranger_to_the_cooldowns_look(harness, tmp_path):
    """The cooldown names the run's survivors ({pid: start}) to its pre-flight as the run's tree.
    One ends between that list and the scan, and its PID goes to a stranger's job that takes the
    GPU: the look took the PIDs alone, so the stranger (and what is in its session or group) was
    the run's, no blocker, and ``on_busy: kill`` never ended it. Its start tells it is not the
    survivor: a foreign GPU process the look waits for (and kills under ``on_busy: kill``)."""
    recipe = harness.recipe(command=["{python}", "-c", "pass"], **ONE_ATTEMPT)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        env = _gpu_env(tmp_path, stranger.pid)
        # the survivor the cooldown listed had this PID and started an hour before the stranger
        survivor = {stranger.pid: psutil.Process(stranger.pid).create_time() - 3600}
        out = subprocess.run([sys.executable, "-c", PREFLIGHT, "20261130-000000-gone-0000", str(recipe),
                              json.dumps(survivor)], capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
        assert out.returncode == 0, out.stderr
        look = json.loads(out.stdout.splitlines()[-1])
        assert look["blockers"] == [stranger.pid], look
        assert any(f"PID {stranger.pid} " in w and "foreign_gpu" in w for w in look["waiting"]), look
    finally:
        stranger.kill()
        stranger.wait(60)


def _fill_inodes(where) -> int:
    """Empty files made under ``where`` until its filesystem refuses one more (no inode left, bytes
    to spare): how many."""
    where.mkdir()
    n = 0
    while True:
        try:
            os.close(os.open(where / f"f{n}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except OSError:
            return n
        n += 1


def test_a_filesystem_out_of_inodes_waits_for_files_not_bytes(harness, tmp_path):
    """The output's filesystem has bytes to spare and no inode left (a scratch filesystem shared
    with a job that makes millions of small files, a tmpfs' nr_inodes): the demo's save at step 12
    really fails with ENOSPC. The run must not restart into the same failure: it waits, past the
    cooldown's ceiling, naming the files it lacks, and resumes once the user removes some."""
    from tests.conftest import tmpfs
    mnt = tmp_path / "out"
    mnt.mkdir()
    with tmpfs(mnt, "size=64m,nr_inodes=4000,mode=0700", end_runs=True):
        cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", str(mnt),
               "--max_steps", "16", "--save_steps", "4", "--step_delay", "0.25"]
        run = harness.start(harness.recipe(command=cmd, checkpoints={"dir": str(mnt)}, restart={"max_restarts": 3},
                                           cooldown={"ceiling_s": 0.5, "disk_free_min_mib": 0}))
        until(lambda: (mnt / "checkpoint-8" / "trainer_state.json").exists(), 120, what="the save at step 8")
        filler = mnt / "filler"
        made = _fill_inodes(filler)
        assert made > 0 and os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize > (32 << 20)
        st = run.wait(lambda s: s.get("status") in ("cooldown", "failed", "succeeded") and s.get("attempt") == 1
                      and run.events("crash"), 120, what="the save at step 12 to fail")
        report = run.crash(1)
        assert report["class"] == "disk_full", report
        st = run.wait(lambda s: s.get("status") != "cooldown" or any(
            "room on" in w for w in (s.get("cooldown") or {}).get("waiting_on") or []), 60, "a wait for room")
        line = next((w for w in (st.get("cooldown") or {}).get("waiting_on") or [] if "room on" in w), None)
        assert line is not None, (st.get("status"), st.get("attempt"), run.events("attempt_start"))
        assert line.startswith(f"room on {mnt}: 0 files free, need "), line
        ceiling_at = st["cooldown"]["ceiling_at"]
        until(lambda: time.time() > ceiling_at + 2 and run.state().get("cooldown", {}).get("waiting_on"), 30,
              what="the ceiling long passed, still waiting")
        assert not [e for e in run.events("attempt_start") if e.get("attempt") == 2]
        for f in list(filler.iterdir())[:200]:   # the user frees some files
            f.unlink()
        st = run.wait_status("succeeded", "failed", "paused", timeout=180)
        assert st["status"] == "succeeded", st
        starts = run.events("attempt_start")
        assert len(starts) == 2 and os.path.basename(starts[1]["resumed_from"]) == "checkpoint-8", starts


def test_out_of_inodes_before_any_save_a_file_freed_does_not_end_the_wait(harness, tmp_path):
    """The first save fails with ENOSPC on a filesystem out of inodes: no verified save tells what
    a save makes, and the wait needed one free file, so the first file the user (or the other job)
    freed restarted the run into the same ENOSPC. The wait needs the files a run makes at least."""
    from tests.conftest import tmpfs
    mnt = tmp_path / "out"
    mnt.mkdir()
    with tmpfs(mnt, "size=64m,nr_inodes=4000,mode=0700", end_runs=True):
        cmd = ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", str(mnt),
               "--max_steps", "12", "--save_steps", "8", "--step_delay", "0.25"]
        run = harness.start(harness.recipe(command=cmd, checkpoints={"dir": str(mnt)}, restart={"max_restarts": 3},
                                           cooldown={"ceiling_s": 0.5, "disk_free_min_mib": 0}))
        run.wait(lambda s: (s.get("step") or 0) >= 1, 120, what="step 1")
        filler = mnt / "filler"
        assert _fill_inodes(filler) > 0
        run.wait(lambda s: s.get("status") in ("cooldown", "failed", "succeeded") and run.events("crash"), 120,
                 what="the save at step 8 to fail")
        assert run.crash(1)["class"] == "disk_full"
        next(filler.iterdir()).unlink()   # one file freed
        st = run.wait(lambda s: s.get("status") != "cooldown" or any(
            w.startswith(f"room on {mnt}: 1 files free, need ") for w in (s.get("cooldown") or {}).get("waiting_on") or []),
            60, what="the wait to see the file freed")
        line = next((w for w in (st.get("cooldown") or {}).get("waiting_on") or [] if "room on" in w), None)
        assert line is not None and "at least the files a run makes" in line, (st.get("status"), line)
        assert not [e for e in run.events("attempt_start") if e.get("attempt") == 2]
        for f in list(filler.iterdir())[:200]:   # the user frees enough
            f.unlink()
        st = run.wait_status("succeeded", "failed", "paused", timeout=180)
        assert st["status"] == "succeeded", st
        assert len(run.events("attempt_start")) == 2
