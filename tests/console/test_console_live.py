"""Every key of the run screen against the real runner and the real demo trainer
(recipes/tiny-moe-cpu.yaml started with `moeconsole run --detach`), driven with Pilot.

One demo run serves the tests that leave it running (read-only, detach/attach, verify,
zombie, restart); the kill test gets its own. Every process is ended by PID at teardown."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.waiting import until, until_ui
from moeconsole.console.app import MoeConsole
from moeconsole.console.screens.dialogs import ConfirmScreen
from moeconsole.console.screens.run import RunScreen
from moeconsole.console.source import _live_telemetry
from moeconsole.console.widgets.status import StatusLine
from moeconsole.runner.rundir import rundir
from tests.conftest import end_processes, run_processes

REPO = Path(__file__).resolve().parents[2]
RECIPE = REPO / "recipes" / "tiny-moe-cpu.yaml"
FAST = ["--set", "args.max_steps=100000", "--set", "kill.grace_s=3", "--set", "cooldown.floor_s=0.5",
        "--set", "args.save_steps=10"]


def start_demo(base: Path, *extra: str) -> rundir.RunDir:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "run", str(RECIPE), "--detach", *FAST, *extra,
                           "--runs-dir", str(base)], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return rundir.resolve(base, done.stdout.strip().splitlines()[-1])


def wait_state(run: rundir.RunDir, cond, timeout: float = 60.0) -> dict:
    def reached() -> dict | None:
        state = run.read_state()
        return state if cond(state) else None
    try:
        return until(reached, timeout, interval=0.1)
    except AssertionError:
        state = run.read_state()
        raise AssertionError(f"state not reached in {timeout}s: {state.get('status')} step {state.get('step')}") \
            from None


def reap(base: Path, run: rundir.RunDir | None) -> None:
    """End, by PID and start time, the runner, the training tree and anything tied to ``base``."""
    procs = run_processes(base)
    if run is not None:
        state = run.read_state()
        for p in [state.get("runner") or {}] + list(state.get("pids") or []):
            if p.get("pid") and p.get("start_time"):
                procs[int(p["pid"])] = float(p["start_time"])
    end_processes(procs)


@pytest.fixture(scope="module")
def demo():
    import shutil
    import tempfile
    base = Path(tempfile.mkdtemp(prefix="mclive-"))
    run = None
    try:
        run = start_demo(base)
        wait_state(run, lambda s: s.get("status") == "running" and (s.get("step") or 0) >= 3, timeout=90)
        yield base, run
    finally:
        reap(base, run)
        shutil.rmtree(base, ignore_errors=True)


def app_for(base, run, **kw) -> MoeConsole:
    kw.setdefault("interval", 0.25)
    return MoeConsole(base, run, telemetry=_live_telemetry(blocker_scan_s=0.5), **kw)


async def attached(pilot) -> RunScreen:
    await until_ui(pilot, lambda: isinstance(pilot.app.screen, RunScreen) and pilot.app.screen.snapshot is not None)
    return pilot.app.screen


def test_readonly_changes_nothing(demo):
    base, run = demo
    before = run.read_state()

    async def go():
        app = app_for(base, run, readonly=True)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await attached(pilot)
            assert "READ-ONLY" in screen.query_one(StatusLine).plain_lines[0]
            for key in ("k", "r", "z"):
                await pilot.press(key)
                await pilot.pause()
                assert not isinstance(app.screen, ConfirmScreen)
    asyncio.run(go())
    after = run.read_state()
    assert after["status"] == "running" and after["attempt"] == before["attempt"]
    assert not [e for e in _events(run) if e.get("type") in ("kill", "blocker_kill")]


def _events(run):
    from moeconsole.runner.rundir.jsonio import read_jsonl
    return read_jsonl(run.events)


def test_detach_and_attach_again_leave_the_run_going(demo):
    base, run = demo
    runner_pid = run.read_state()["runner"]["pid"]

    async def once() -> int:
        app = app_for(base, run)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await attached(pilot)
            step = screen.snapshot.run["step"]
            await pilot.press("q")
        return step

    first = asyncio.run(once())
    state = wait_state(run, lambda s: (s.get("step") or 0) > first + 2)
    assert state["status"] == "running" and state["runner"]["pid"] == runner_pid
    assert psutil.pid_exists(runner_pid)
    second = asyncio.run(once())
    assert second > first


def test_v_verifies_the_latest_checkpoint(demo):
    base, run = demo
    wait_state(run, lambda s: (s.get("step") or 0) >= 12)

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=(100, 30)) as pilot:
            await attached(pilot)
            await pilot.press("v")
            await until_ui(pilot, lambda: any(str(n.message).startswith("verify: ok") for n in app._notifications))
    asyncio.run(go())
    verified = [e for e in _events(run) if e.get("type") == "checkpoint" and e.get("requested_by") == "user"]
    assert verified and verified[-1]["ok"] is True


def test_z_ends_a_real_zombie_of_the_run(demo):
    base, run = demo
    env = {**os.environ, "MOECONSOLE_RUN_ID": run.run_id}  # a leftover of this run, outside its tree
    zombie = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"], env=env)
    try:
        async def go():
            app = app_for(base, run)
            async with app.run_test(size=(120, 36)) as pilot:
                screen = await attached(pilot)
                # the table is mounted at the first zombie
                await until_ui(pilot, lambda: screen.blocker_table is not None
                               and any(b["pid"] == zombie.pid for b in screen.blocker_table.blockers))
                table = screen.blocker_table
                table.focus()
                table.move_cursor(row=[b["pid"] for b in table.blockers].index(zombie.pid))
                await pilot.press("z")
                await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                assert str(zombie.pid) in app.screen.confirmation.title
                assert "orphan" in " ".join(app.screen.confirmation.lines)
                await pilot.press("y")
                await until_ui(pilot, lambda: zombie.poll() is not None, timeout=20)
        asyncio.run(go())
        assert zombie.returncode is not None
        kills = [e for e in _events(run) if e.get("type") == "blocker_kill"]
        assert kills and kills[-1]["pid"] == zombie.pid
        assert run.read_state()["status"] == "running"  # the run itself untouched
    finally:
        if zombie.poll() is None:
            zombie.kill()
        zombie.wait(timeout=10)


def test_r_waits_and_restarts(demo):
    base, run = demo
    before = run.read_state()
    old = [(p["pid"], p["start_time"]) for p in before["pids"]]

    async def go():
        app = app_for(base, run)
        async with app.run_test(size=(100, 30)) as pilot:
            screen = await attached(pilot)
            await pilot.press("r")
            await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            body = " ".join(app.screen.confirmation.lines)
            assert all(str(pid) in body for pid, _ in old) and "3s" in body
            await pilot.press("y")
            await until_ui(pilot, lambda: screen.snapshot is not None and screen.snapshot.run["status"] == "cooldown"
                        or (screen.snapshot.run["attempt"] or 0) > before["attempt"], timeout=30)
    asyncio.run(go())
    state = wait_state(run, lambda s: s.get("attempt", 0) > before["attempt"] and s.get("status") == "running",
                       timeout=60)
    assert state["attempt"] == before["attempt"] + 1
    for pid, start in old:  # the old tree is gone
        assert not (psutil.pid_exists(pid) and abs(psutil.Process(pid).create_time() - start) < 0.05)


def test_k_kills_cleanly(tmp_path_factory):
    import shutil
    import tempfile
    base = Path(tempfile.mkdtemp(prefix="mckill-"))
    run = None
    try:
        run = start_demo(base)
        state = wait_state(run, lambda s: s.get("status") == "running" and (s.get("step") or 0) >= 2, timeout=90)
        tree = [(p["pid"], p["start_time"]) for p in state["pids"]]

        async def go():
            app = app_for(base, run, bell=True)
            rings = []
            app.bell = lambda: rings.append(1)  # the terminal bell, counted
            async with app.run_test(size=(100, 30)) as pilot:
                screen = await attached(pilot)
                await pilot.press("k")
                await until_ui(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                assert all(str(pid) in " ".join(app.screen.confirmation.lines) for pid, _ in tree)
                await pilot.press("y")
                await until_ui(pilot, lambda: screen.snapshot is not None and screen.snapshot.run["status"] == "killed", timeout=30)
                assert "KILLED" in screen.query_one(StatusLine).plain_lines[0]
                await until_ui(pilot, lambda: "k" not in {k for k, b in screen.active_bindings.items()
                                                      if b.binding.show})  # no runner left to ask
                # the user's own kill is an event, not a crash alert: no alert, no toast, no bell
                from moeconsole.console.widgets.panes import AlertBar, EventPane
                await until_ui(pilot, lambda: any("STOPPED attempt 1: killed by the user" in line
                                               for line in screen.query_one(EventPane).plain_lines))
                assert not screen.active_alerts and not screen.query_one(AlertBar).display
                assert not [n for n in app._notifications if n.title == "crash" or "alert" in n.title]
                assert not rings
        asyncio.run(go())
        for pid, start in tree:
            assert not (psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
                        and abs(psutil.Process(pid).create_time() - start) < 0.05)
        kills = [e for e in _events(run) if e.get("type") == "kill"]
        assert kills and kills[-1]["requested_by"] == "console"
    finally:
        reap(base, run)
        shutil.rmtree(base, ignore_errors=True)


def _marked_by_another(pid: int, run_id: str) -> bool:
    try:
        marker = psutil.Process(pid).environ().get("MOECONSOLE_RUN_ID")
    except psutil.Error:
        return False
    return bool(marker) and marker != run_id


def test_torchruns_agent_and_workers_are_never_zombies_on_screen_or_in_json():
    """torchrun's agent holds the rendezvous port and every worker is in a session of its own:
    all of them are the run's own. The zombie list (and z) leave them out, and --json says the
    same with the same rule."""
    import json
    import shutil
    import socket
    import tempfile
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = Path(tempfile.mkdtemp(prefix="mctorch-"))
    run = None
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        env.pop("MOECONSOLE_RUNS_DIR", None)
        done = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "run", str(REPO / "recipes" / "torchrun-cpu.yaml"),
                               "--detach", "--set", f"preflight.port={port}", "--set", f"args.master_port={port}",
                               "--set", "args.max_steps=100000", "--set", "kill.grace_s=3",
                               "--runs-dir", str(base)], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        run = rundir.resolve(base, done.stdout.strip().splitlines()[-1])
        state = wait_state(run, lambda s: s.get("status") == "running" and len(s.get("pids") or []) >= 4
                           and (s.get("step") or 0) >= 2, timeout=120)
        own = {p["pid"] for p in state["pids"]} | {state["runner"]["pid"]}

        async def go():
            app = app_for(base, run)
            async with app.run_test(size=(80, 24)) as pilot:
                screen = await attached(pilot)
                polls = screen.polls
                await until_ui(pilot, lambda: screen.polls >= polls + 6)
                table = screen.blocker_table   # mounted only if a process of another run or user is listed
                listed = table.blockers if table is not None else []
                assert not own & {b["pid"] for b in listed}, listed
                assert table is None or not own & {b["pid"] for b in table.blockers}
                footer = {k for k, b in screen.active_bindings.items() if b.binding.show}
                assert "z" not in footer and "k" in footer
                return {b["pid"] for b in listed}
        # the machine is shared: other runs' processes come and go between the screen's look and
        # --json's; the two are compared on the processes alive through both
        before = set(psutil.pids())
        on_screen = asyncio.run(go())
        during = before & set(psutil.pids())
        out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "--json", "--once", run.run_id,
                              "--runs-dir", str(base)], cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=60)
        blockers = json.loads(out.stdout)["blockers"]
        agent = next((b for b in blockers if "port_holder" in b["labels"]), None)
        assert agent is not None and agent["pid"] in own, blockers  # listed by the scan ...
        assert agent["labels"][0] == "run_tree" and not agent["shown"] and not agent["killable"]  # ... not a zombie
        stable = during & set(psutil.pids())
        # ... and not on another run's marked processes: their labels follow that run's state (live, over),
        # which other tests change between the two looks (a leftover listed by one, not the other, under load)
        stable -= {pid for pid in stable if _marked_by_another(pid, run.run_id)}
        assert {b["pid"] for b in blockers if b["shown"]} & stable == on_screen & stable
    finally:
        reap(base, run)
        shutil.rmtree(base, ignore_errors=True)
