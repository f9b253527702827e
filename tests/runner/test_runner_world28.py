"""The supervised run in a hostile world, round 28. Each test drives the real CLI, the real
detached runner and real processes (`cp -a` of a live run directory), and asserts on what the user
sees: `runs show`, `runs ls`, `--json --once`, what `kill` and `supervise` say and do, and the
original run's own records."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from moeconsole.runner.rundir import rundir
from tests.runner.test_runner_world12 import ONE_ATTEMPT, _steady
from tests.waiting import until


def _json_run(harness, run_id: str) -> dict:
    out = harness.cli("--json", "--once", run_id, "--no-gpu")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])["run"]


def test_a_copy_of_a_live_run_directory_is_said_a_copy_and_neither_kill_nor_supervise_touch_the_original(harness):
    """A live run's directory copied (`cp -a runs runs.bak` before an upgrade, an rsync backup) and
    the copy read with `--runs-dir`: it said "RUNNING? (runner alive, state.json not written: see
    runner.log)", and its `kill` SIGKILLed the original's runner ("the runner does not take the
    kill") and SIGTERMed its training: the original run was left RUNNING with no runner, its
    training gone. Its state.json names the original's runner and PIDs, and the training carries
    the run's id as its marker. A copy now knows it is one (the runner records its directory's
    identity); it says so in every view, and `kill` and `supervise` on it refuse, signalling
    nothing. The copied index named the original's directories: `runs ls` of the copy listed the
    original's runs as they went on."""
    run = harness.start(harness.recipe(command=_steady(400), heartbeat={"timeout_s": 60, "stale_state_s": 2},
                                       kill={"grace_s": 3}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 2, 90, what="step 2")
    runner = st["runner"]["pid"]
    backup = harness.tmp / "runs.bak"
    subprocess.run(["cp", "-a", str(harness.runs_dir), str(backup)], check=True)
    copy = type(harness)(harness.tmp, backup)
    try:
        word = f"RUNNING? (a copy: the run is live in {harness.runs_dir})"
        # (the copy's state.json stops at the copy: stale once older than stale_state_s)
        doc = until(lambda: (lambda d: d if d["stale"] else None)(_json_run(copy, run.id)), 30,
                    what="the copy's state to be old")
        assert doc["status_word"] == word and doc["runner_alive"] is False, doc
        assert doc["next_command"] == f"moeconsole runs show {rundir.command_ref(harness.runs_dir, run.id)[1]}", doc
        assert word in copy.cli("runs", "show", run.id).stdout
        row = next(r for r in json.loads(copy.cli("runs", "ls", "--json").stdout)["runs"] if r["id"] == run.id)
        assert row["copy_of"] == str(run.path) and row["stale"], row

        for args, what in ((("kill", run.id), "a kill"), (("supervise", run.id), "a runner")):
            out = copy.cli(*args)
            assert out.returncode == 2, (out.stdout, out.stderr)
            assert f"is a copy of {run.path}, whose run is still live there" in out.stderr, out.stderr
            assert f"so {what} here would act on them: nothing was done" in out.stderr, out.stderr
        assert not rundir.runner_locked(rundir.RunDir(backup / run.id))

        # the original trains on under its own runner, never signalled
        now = run.state()
        assert now["runner"]["pid"] == runner and now["status"] == "running", now
        assert not run.events("kill"), run.events("kill")
        step = now.get("step") or 0
        run.wait(lambda s: (s.get("step") or 0) > step, 60, what="the original to train on")
        assert rundir.RunDir(run.path).read_state()["runner"].get("copy_of") is None
    finally:
        harness.cli("kill", run.id)
    assert run.wait_status("killed", "failed", "succeeded", timeout=90)["status"] == "killed"
    # once the original is over, the copy is a directory of its own (a fork may be supervised)
    copied = rundir.RunDir(backup / run.id)
    until(lambda: rundir.live_original(copied.read_state()) is None, 30, what="the original's runner to exit")
    # the copied index's rows name the original's directories, still there: `runs ls` of the copy
    # listed the original as it went on (`killed`); it lists the copy's own directory
    row = next(r for r in json.loads(copy.cli("runs", "ls", "--json").stdout)["runs"] if r["id"] == run.id)
    assert row["path"] == str(backup / run.id) and row["status"] == "running", row
    assert copied.read_state()["pids"] == [], copied.read_state()["pids"]


def test_the_runs_own_directory_by_another_path_or_moved_is_no_copy(tmp_path):
    """Refusals: only a directory whose recorded original is still there, as itself, is a copy.
    The run directory reached through a link, a directory moved (its old path gone, or another
    directory there now) and a runner of an older version (no ``run_dir``) read as before."""
    orig = tmp_path / "runs" / "20261204-000000-t-abcd"
    orig.mkdir(parents=True)
    record = rundir.runner_record(orig)
    assert record["run_dir"] == str(orig) and record["run_dir_id"] == list(rundir.dir_identity(orig) or ())
    assert rundir.copied_from(orig, record) is None
    os.symlink(tmp_path / "runs", tmp_path / "link")
    assert rundir.copied_from(tmp_path / "link" / orig.name, record) is None
    copy = tmp_path / "bak" / orig.name
    shutil.copytree(orig, copy)
    assert rundir.copied_from(copy, record) == str(orig)
    assert rundir.copied_from(copy, {k: v for k, v in record.items() if not k.startswith("run_dir")}) is None
    moved = tmp_path / "moved"
    orig.rename(moved)
    assert rundir.copied_from(moved, record) is None          # its old path is gone
    orig.mkdir()                                               # another directory at the old path
    assert rundir.copied_from(moved, record) is None
    assert rundir.copied_from(Path(copy), record) is None


def test_the_run_screen_of_a_copy_says_a_copy_and_u_starts_no_runner(tmp_path):
    """The run screen of a copy said "RUNNER GONE: nothing supervises this run; press u to start a
    new runner (it adopts the training)": a runner of the copy would have adopted the original's
    training. It says the directory is a copy of the live one, and u is refused with why."""
    import asyncio
    from tests.console.conftest import write_run
    from tests.console.test_console_alerts import app_for, attached
    from tests.waiting import until_ui
    from moeconsole.runner.rundir import jsonio
    base, backup = tmp_path / "runs", tmp_path / "runs.bak"
    base.mkdir()
    run = write_run(base, runner_pid=os.getpid(), log_lines=5)
    state = run.read_state()
    st = os.stat(run.path)   # what the runner records of its directory (``rundir.runner_record``)
    state["runner"].update(run_dir=str(run.path), run_dir_id=[st.st_dev, st.st_ino])
    jsonio.atomic_write_json(run.state, state)
    subprocess.run(["cp", "-a", str(base), str(backup)], check=True)
    copy = rundir.RunDir(backup / run.run_id)

    async def go():
        app = app_for(backup, copy, interval=0.2)
        async with app.run_test(size=(160, 36)) as pilot:
            screen = await attached(pilot)
            banner = screen.query_one("#runner-gone")
            await until_ui(pilot, lambda: banner.display)
            text = str(banner.render())
            assert text.startswith(f"A COPY: this directory is a copy of {run.path}, whose run is live there"), text
            assert "RUNNER GONE" not in text and "press u" not in text, text
            await pilot.press("u")
            await until_ui(pilot, lambda: any("could not start a runner" in n.message for n in app._notifications))
            said = next(n.message for n in app._notifications if "could not start a runner" in n.message)
            assert "is a copy of" in said and "nothing was done" in said, said
    asyncio.run(go())
    assert not rundir.runner_locked(copy) and not (copy.path / "control.sock").exists()


def test_a_kill_without_runner_leaves_the_training_a_copy_of_the_run_started_for_itself(tmp_path):
    """Once the original run is over, its copy is a directory of its own and may be supervised
    there (a fork): its training carries the same run id. A kill of the original that found no
    runner (`killrun.end_run`) ended every process carrying the id, the fork's training too, and
    so did the proof scan after a runner's kill. The marker also names the directory the process
    was started for: one started for another directory still there is not this run's. Refusal:
    one started for this directory by a path now gone (the directory renamed) is still its."""
    import sys
    from moeconsole.runner.process import killrun, proctree
    orig = tmp_path / "runs" / "20261204-000000-t-abcd"
    orig.mkdir(parents=True)
    fork = tmp_path / "runs.bak" / orig.name
    shutil.copytree(orig, fork)
    rundir.RunDir(orig).write_state({"run_id": orig.name, "status": "running", "attempt": 1, "pids": []})

    def training(run_dir: Path) -> subprocess.Popen:
        env = {**os.environ, "MOECONSOLE_RUN_ID": orig.name, "MOECONSOLE_RUN_DIR": str(run_dir)}
        return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=env)

    forked = training(fork)
    try:
        until(lambda: forked.pid in proctree.marked_processes(orig.name), 30, what="the fork's marker to show")
        done = killrun.end_run(rundir.RunDir(orig), rundir.RunDir(orig).read_state(), grace_s=1.0, why="test")
        assert forked.pid not in done.pids and forked.poll() is None, done
        assert forked.pid in proctree.marked_processes(orig.name, fork)
        assert forked.pid not in proctree.marked_processes(orig.name, orig)
        # the original renamed: what was started for its old path is its own
        ours = training(orig)
        try:
            moved = orig.with_name(orig.name + "-renamed")
            orig.rename(moved)
            until(lambda: ours.pid in proctree.marked_processes(orig.name, moved), 30, what="its marker to show")
        finally:
            ours.kill()
            ours.wait(timeout=30)
    finally:
        forked.kill()
        forked.wait(timeout=30)


def test_a_live_run_whose_runner_ran_on_another_machine_is_not_told_to_start_here(tmp_path, harness):
    """A runs directory on a shared filesystem read from the login node after the GPU node's
    runner died with it, or rsynced to a laptop: "RUNNING? (runner gone)" and `moeconsole
    supervise RUN` next, in `--json` too, which a watchdog script types: it started the training
    on this machine. Nothing here can tell whether that runner lives: the word names its host and
    there is no next command here. Refusal: a reboot of this machine (same host name, another boot)
    is a runner known gone, and `supervise` is still the next step."""
    import time
    import uuid
    from tests.console.conftest import write_run
    from moeconsole.runner.rundir import jsonio
    base = harness.runs_dir
    base.mkdir(parents=True, exist_ok=True)
    cases = {"gpu-07": "RUNNING? (runner on gpu-07, not seen from here)",
             rundir.hostname(): "RUNNING? (runner gone)"}
    for n, (host, word) in enumerate(cases.items()):
        run = write_run(base, f"20261204-00000{n}-demo-000{n}", runner_pid=os.getpid(), log_lines=5)
        state = run.read_state()
        state["runner"].update(host=host, boot_id=str(uuid.uuid4()), pidns=4026531999,
                               run_dir=f"/home/u/runs/{run.run_id}", run_dir_id=[2049, 131073])
        state.update(updated_at=time.time() - 3600, stale_after_s=30.0)   # rsynced an hour after its last write
        jsonio.atomic_write_json(run.state, state)
        doc = _json_run(harness, run.run_id)
        assert doc["status_word"] == word and doc["stale"] and not doc["runner_alive"], doc
        shown = harness.cli("runs", "show", run.run_id).stdout
        row = next(r for r in json.loads(harness.cli("runs", "ls", "--json").stdout)["runs"] if r["id"] == run.run_id)
        assert word in shown and row["stale"], (shown, row)
        if host == "gpu-07":
            assert doc["next_command"] is None and "supervise" not in shown and row["runner_elsewhere"] == host, doc
        else:
            assert doc["next_command"] == f"moeconsole supervise {run.run_id}" and "supervise" in shown, doc
            assert row["runner_elsewhere"] is None, row


def test_the_run_screen_of_a_run_whose_runner_ran_elsewhere_names_that_machine(tmp_path):
    """Its banner said "RUNNER GONE: nothing supervises this run; press u to start a new runner
    (it adopts the training)" with `run: moeconsole supervise RUN`: it names the host the runner
    ran on and says the new runner is started there if it is gone."""
    import asyncio
    import time
    import uuid
    from tests.console.conftest import write_run
    from tests.console.test_console_alerts import app_for, attached
    from tests.waiting import until_ui
    from moeconsole.runner.rundir import jsonio
    base = tmp_path / "runs"
    base.mkdir()
    run = write_run(base, runner_pid=os.getpid(), log_lines=5)
    state = run.read_state()
    state["runner"].update(host="gpu-07", boot_id=str(uuid.uuid4()), pidns=4026531999)
    state.update(updated_at=time.time() - 3600, stale_after_s=30.0)
    jsonio.atomic_write_json(run.state, state)

    async def go():
        app = app_for(base, run, interval=0.2)
        async with app.run_test(size=(160, 36)) as pilot:
            screen = await attached(pilot)
            banner = screen.query_one("#runner-gone")
            await until_ui(pilot, lambda: banner.display)
            text = str(banner.render())
            assert text.startswith("RUNNER ELSEWHERE: the run's runner ran on gpu-07"), text
            assert f"on gpu-07, `moeconsole supervise {rundir.command_ref(base, run.run_id)[1]}`" in text, text
            # what `kill` and `supervise` here say too (launch.elsewhere_refusal): the takeover is a restart here
            assert f"`moeconsole restart {rundir.command_ref(base, run.run_id)[1]}` starts the next attempt here" \
                in text.replace("\n", " "), text
    asyncio.run(go())


def _elsewhere_run(base: Path, run_id: str, *, written_ago: float):
    """A live run whose runner ran on gpu-07 (another boot and PID namespace), its state.json written
    ``written_ago`` seconds ago; its recipe a plain long sleep."""
    import sys
    import time
    import uuid
    from tests.console.conftest import write_run
    from moeconsole.runner.rundir import jsonio
    base.mkdir(parents=True, exist_ok=True)
    run = write_run(base, run_id, runner_pid=os.getpid(), log_lines=5, checkpoints=(), restart_at=None,
                    recipe={"name": "demo", "command": [sys.executable, "-c", "import time; time.sleep(300)"],
                            "kill": {"grace_s": 2.0}, "cooldown": {"floor_s": 0.0, "ceiling_s": 1.0}})
    state = run.read_state()
    state["runner"].update(host="gpu-07", boot_id=str(uuid.uuid4()), pidns=4026531999, start_time=time.time() - 7200)
    state.update(updated_at=time.time() - written_ago, stale_after_s=30.0)
    jsonio.atomic_write_json(run.state, state)
    return run


def test_no_kill_or_runner_here_acts_on_a_run_whose_runner_runs_on_another_machine(harness):
    """Round 28 left it: `kill` of a live run whose runner runs on another machine (a run directory on a
    shared filesystem, read from the login node) started a runner HERE, which found none of the training's
    processes, took the attempt for ended unwatched and went on to the next attempt on this machine, while
    the training and its runner ran on: two runners on one state.json. `kill`, `supervise` and `restart` now
    refuse in one line naming the machine, start nothing and leave the run's records as they were."""
    run = _elsewhere_run(harness.runs_dir, "20261204-080000-demo-0e01", written_ago=2.0)
    before = run.state.read_text()
    for cmd in ("kill", "supervise", "restart"):
        out = harness.cli(cmd, run.run_id)
        assert out.returncode != 0 and "Traceback" not in out.stderr, (cmd, out.stderr)
        assert "its runner runs on gpu-07, another machine" in out.stderr and "nothing was done" in out.stderr, \
            (cmd, out.stderr)
        assert run.state.read_text() == before and not run.runner_log.exists(), cmd


def test_once_the_other_machines_runner_went_silent_a_restart_here_takes_the_run_over(harness):
    """The GPU node died with its runner: state.json stopped changing an hour ago. `kill` and `supervise`
    still refuse (its processes may run there; nothing here can prove them gone) and name the way on; a
    `restart` typed here is the user's choice to move the run: attempt 3 starts on this machine under a
    runner here, and a kill then ends it."""
    run = _elsewhere_run(harness.runs_dir, "20261204-080000-demo-0e02", written_ago=3600.0)
    for cmd in ("kill", "supervise"):
        out = harness.cli(cmd, run.run_id)
        assert out.returncode != 0 and "Traceback" not in out.stderr, (cmd, out.stderr)
        assert "its runner ran on gpu-07, another machine, and state.json stopped changing" in out.stderr, out.stderr
        typed = rundir.command_ref(run.path.parent, run.run_id)[1]
        assert f"if gpu-07 is gone for good, `moeconsole restart {typed}` starts the next attempt here" in out.stderr, \
            out.stderr
        assert not run.runner_log.exists(), cmd
    out = harness.cli("restart", run.run_id)
    assert out.returncode == 0, out.stderr
    try:
        here = until(lambda: (s := run.read_state()).get("attempt") == 3 and s.get("status") == "running"
                     and (s.get("runner") or {}).get("host") == rundir.hostname() and s, timeout=120,
                     what="attempt 3 running under a runner on this machine")
        assert (here.get("runner") or {}).get("pid") != os.getpid()
    finally:
        killed = harness.cli("kill", run.run_id)
    assert killed.returncode == 0 and run.read_state().get("status") == "killed", (killed.stdout, killed.stderr)
