"""The runner under faults a user meets: its own death, races, damaged files, hostile clients."""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time

import psutil
import pytest

from moeconsole.runner.process.proctree import marked_processes
from tests.conftest import fill_up
from tests.runner.conftest import REPO
from tests.waiting import gone, until


def _demo(steps: int, delay: float = 0.05, save: int = 10) -> list[str]:
    return ["{python}", "-m", "moeconsole.runner.demo.train", "--output_dir", "{run_dir}/output", "--max_steps", str(steps),
            "--save_steps", str(save), "--step_delay", str(delay)]


def _runners(run) -> list[int]:
    """Live runner processes supervising this run (by command line: they are our children's kin)."""
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        try:
            cmd = p.info["cmdline"] or []
            if p.info["status"] != psutil.STATUS_ZOMBIE and "moeconsole.runner.supervisor" in cmd and str(run.path) in cmd:
                out.append(p.pid)
        except psutil.Error:
            continue
    return out


def _leader(state: dict) -> int:
    return next(p for p in state["pids"] if p["role"] == "leader")["pid"]


def _wait_gone(pid: int, timeout: float = 60) -> None:
    until(lambda: gone(pid), timeout, what=f"pid {pid} to end")


def _kill_runner(run, state: dict) -> int:
    pid = state["runner"]["pid"]
    os.kill(pid, signal.SIGKILL)
    _wait_gone(pid)
    return pid


def test_two_supervise_calls_race_and_exactly_one_runner_wins(harness):
    run = harness.start(harness.recipe(command=_demo(80)))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="3 steps")
    _kill_runner(run, st)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "moeconsole.console.cli", "supervise", run.id, "--runs-dir", str(harness.runs_dir)]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
             for _ in range(2)]
    try:
        results = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], results
    loser_err = next(err for p, (_, err) in zip(procs, results) if p.returncode == 2)
    assert "already" in loser_err and "Traceback" not in loser_err
    assert len(_runners(run)) == 1
    st = run.wait_status("succeeded", timeout=120)
    assert len(run.events("adopt")) == 1
    steps = [m["step"] for m in run.metrics()]
    assert steps == list(range(1, 81)), "no step lost or written twice"
    saved = [e["path"] for e in run.events("checkpoint")]
    assert len(saved) == len(set(saved)), "each checkpoint verified once"


def test_attempt_that_finished_cleanly_while_no_runner_watched_is_succeeded(harness):
    run = harness.start(harness.recipe(command=_demo(40)))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="3 steps")
    leader = _leader(st)
    _kill_runner(run, st)
    _wait_gone(leader, timeout=120)  # training goes on to 40/40 and exits 0, unwatched
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0, out.stderr
    st = run.wait_status("succeeded", "failed", "paused", "cooldown", "running", timeout=60)
    st = run.wait_status("succeeded", timeout=60)
    assert st["attempt"] == 1, "a finished attempt is not launched again"
    assert (run.path / "exits" / "attempt-1.json").exists()
    assert json.loads((run.path / "exits" / "attempt-1.json").read_text())["returncode"] == 0
    assert [m["step"] for m in run.metrics()] == list(range(1, 41))


def test_adopted_attempt_that_finishes_cleanly_is_succeeded_not_unknown(harness):
    run = harness.start(harness.recipe(command=_demo(60)))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="3 steps")
    _kill_runner(run, st)
    harness.cli("supervise", run.id, check=True)
    st = run.wait_status("succeeded", "failed", "paused", timeout=120)
    assert st["status"] == "succeeded" and st["attempt"] == 1 and st["exit_code"] == 0
    assert not run.events("crash")


def test_runner_and_training_both_killed_then_supervise_restarts_per_policy(harness):
    run = harness.start(harness.recipe(command=_demo(400)))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="3 steps")
    leader = _leader(st)
    _kill_runner(run, st)
    os.kill(leader, signal.SIGKILL)
    _wait_gone(leader)
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    st = run.wait(lambda s: (s.get("attempt") or 0) >= 2 and s.get("status") == "running", what="attempt 2")
    crash = run.crash(1)
    assert crash["returncode"] == -9, "the waiter recorded the SIGKILL"
    harness.cli("kill", run.id, check=True)
    run.wait_status("killed", timeout=60)
    assert not marked_processes(run.id)


def test_truncated_state_json_after_both_died_is_supervised_truthfully(harness):
    run = harness.start(harness.recipe(command=_demo(30)))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="3 steps")
    leader = _leader(st)
    _kill_runner(run, st)
    _wait_gone(leader, timeout=120)
    raw = (run.path / "state.json").read_bytes()
    (run.path / "state.json").write_bytes(raw[: len(raw) // 3])
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    st = run.wait_status("succeeded", timeout=60)
    assert st["attempt"] == 1, "the finished attempt was recognised from the run directory"
    assert [m["step"] for m in run.metrics()] == list(range(1, 31))


def test_run_directory_is_private_and_symlinks_are_not_followed(harness, tmp_path):
    run = harness.start(harness.recipe())
    run.wait_status("succeeded", timeout=90)
    assert stat.S_IMODE(os.stat(run.path).st_mode) == 0o700
    for name in ("recipe.yaml", "state.json", "train.log", "events.jsonl", "metrics.jsonl", "runner.log",
                 "crashes", "exits/attempt-1.json"):
        mode = stat.S_IMODE(os.stat(run.path / name).st_mode)
        assert mode & 0o077 == 0, f"{name} is {oct(mode)}"
    # A planted symlink is refused, never written through.
    from moeconsole.runner.rundir import jsonio
    outside = tmp_path / "outside.jsonl"
    outside.write_text("")
    (run.path / "events.jsonl").unlink()
    (run.path / "events.jsonl").symlink_to(outside)
    with pytest.raises(OSError):
        jsonio.append_jsonl(run.path / "events.jsonl", {"type": "x"})
    assert outside.read_text() == ""


def test_a_record_after_a_partial_line_starts_on_a_line_of_its_own(tmp_path):
    from moeconsole.runner.rundir import jsonio
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(b'{"v":1,"step":1}\n{"v":1,"st')  # a writer died mid-append
    jsonio.append_jsonl(path, {"v": 1, "step": 2})
    assert [r["step"] for r in jsonio.read_jsonl(path)] == [1, 2]


@pytest.fixture
def small_disk(runs_dir):
    """The runs directory on a 2 MiB tmpfs (needs root to mount; skipped otherwise)."""
    from tests.conftest import tmpfs
    with tmpfs(runs_dir, "size=2m,mode=0700", end_runs=True):
        yield runs_dir


def test_a_full_disk_keeps_training_alive_and_loses_no_record(harness, small_disk, tmp_path):
    # A trainer that, like a careful one, survives its own log writes failing.
    script = tmp_path / "steady.py"
    script.write_text(
        "import os, time\n"
        "for i in range(1, 121):\n"
        "    try:\n"
        "        os.write(1, f'step: {i}  loss: {1.0 / i:.4f}\\n'.encode())\n"
        "    except OSError:\n"
        "        pass\n"
        "    time.sleep(0.05)\n")
    run = harness.start(harness.recipe(command=["{python}", str(script)], checkpoints={"dir": None},
                                       resume={"arg": None}))
    st = run.wait(lambda s: (s.get("step") or 0) >= 5, what="5 steps")
    runner_pid, leader = st["runner"]["pid"], _leader(st)
    filler = small_disk / "filler"
    fill_up(filler)
    try:
        st = run.wait(lambda s: bool(s.get("storage")), timeout=30, what="the storage error in state.json")
        assert "space" in st["storage"]["error"].lower()
        assert psutil.pid_exists(runner_pid) and psutil.Process(runner_pid).status() != psutil.STATUS_ZOMBIE
        # --json shows the outage state.json holds (the room the runner frees as it retries can let
        # a write through for a moment on a busy machine: asked again until the two are read together)
        def shown() -> dict | None:
            snap = json.loads(harness.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)
            return snap["run"]["storage"] if snap["run"].get("storage") else None
        storage = until(shown, timeout=60, what="the storage error in --json")
        assert storage["error"] == st["storage"]["error"]
    finally:
        filler.unlink()
    st = run.wait_status("succeeded", timeout=60)
    assert st["storage"] is None
    logged = [int(line.split()[1]) for line in (run.path / "train.log").read_text().splitlines()
              if line.startswith("step: ")]
    steps = [m["step"] for m in run.metrics()]
    assert steps == sorted(set(steps)), "no record duplicated or out of order"
    assert steps == logged, "every step the log holds has its record"
    assert len(run.events("success")) == 1 and run.events("status")[-1]["status"] == "succeeded"
    assert leader not in marked_processes(run.id)


def _raw_client(run):
    import socket as socketlib
    from moeconsole.runner.supervisor import control
    s = socketlib.socket(socketlib.AF_UNIX, socketlib.SOCK_STREAM)
    with control._ShortPath(str(run.path / "control.sock")) as short:
        s.connect(short)
    return s


def test_hostile_control_clients_neither_kill_nor_stall_the_runner(harness):
    from moeconsole.runner.supervisor import control
    run = harness.start(harness.recipe(command=_demo(2000)))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="3 steps")
    runner_pid = st["runner"]["pid"]
    # 400 KB of nested brackets: refused with an answer, the runner lives on.
    s = _raw_client(run)
    s.settimeout(20)
    try:
        try:
            s.sendall(b"[" * 400_000 + b"\n")
        except OSError:
            pass  # the runner may close on us once it has seen enough
        answer = s.recv(4096)
    finally:
        s.close()
    assert answer == b"" or json.loads(answer)["ok"] is False
    assert control.send(run.path / "control.sock", {"cmd": "status"})["ok"] is True
    deep: list = [1]
    for _ in range(20):
        deep = [deep]
    assert control.send(run.path / "control.sock", {"cmd": "status", "x": deep})["ok"] is False
    # A client dribbling one byte every 1.5 s: log ingestion and state writes go on meanwhile.
    slow = _raw_client(run)
    try:
        before = run.state()
        t0 = time.time()
        closed = False
        for ch in b'{"cmd": "status"}':
            try:
                slow.sendall(bytes([ch]))
            except OSError:
                closed = True
                break
            time.sleep(1.5)  # the hostile client's pace, not a wait for the runner
            if time.time() - t0 > 6:
                break
        after = run.state()
        assert after["step"] > before["step"] and after["updated_at"] > before["updated_at"]
        assert closed or slow.recv(4096) is not None
    finally:
        slow.close()
    assert psutil.Process(runner_pid).status() != psutil.STATUS_ZOMBIE
    harness.cli("kill", run.id, check=True)
    run.wait_status("killed")


def test_nesting_check_ignores_brackets_inside_strings():
    from moeconsole.runner.supervisor.control import parse_request, too_deep
    assert not too_deep(b'{"cmd": "status", "by": "[[[[[[[[[[[[[[[[[[[[[[[[[[["}')
    assert too_deep(b"[" * 17 + b"]" * 17)
    req, err = parse_request(b'{"cmd": "kill", "grace_s": 3}')
    assert err is None and req is not None and req.cmd == "kill"
    assert parse_request(b'{"v": 9, "cmd": "status"}')[1].startswith("control version 9")
    assert parse_request(b"[" * 400_000)[1].startswith("request larger")


def test_heartbeat_allows_a_slow_start_but_not_a_silent_one(harness, tmp_path):
    slow = tmp_path / "slow_load.py"
    slow.write_text("import time\ntime.sleep(3)\nfor i in range(1, 6):\n    print(f'step: {i}  loss: 1.0', flush=True)\n")
    run = harness.start(harness.recipe(command=["{python}", str(slow)], heartbeat={"timeout_s": 1, "startup_s": 60},
                                       checkpoints={"dir": None}, resume={"arg": None}))
    st = run.wait_status("succeeded", "failed", "paused", timeout=60)
    assert st["status"] == "succeeded" and st["attempt"] == 1, "a model that loads slowly is not a hang"
    silent = tmp_path / "silent.py"
    silent.write_text("import time\ntime.sleep(600)\n")
    run = harness.start(harness.recipe(command=["{python}", str(silent)], heartbeat={"timeout_s": 600, "startup_s": 1},
                                       restart={"max_restarts": 0}, checkpoints={"dir": None}, resume={"arg": None}))
    run.wait_status("failed", "paused", timeout=60)
    assert run.crash(1)["class"] == "hang"
    assert "before the first step" in [a for a in run.events("alert") if a["rule"] == "hang"][0]["message"]


def test_heartbeat_limit_is_the_startup_allowance_until_the_first_step():
    from moeconsole.runner.supervisor.supervisor import STARTUP_DEFAULT_S, heartbeat_limit
    from moeconsole.runner.recipes.model import Heartbeat
    assert heartbeat_limit(Heartbeat(timeout_s=5, startup_s=300), steps_seen=0) == 300
    assert heartbeat_limit(Heartbeat(timeout_s=5, startup_s=300), steps_seen=1) == 5
    assert heartbeat_limit(Heartbeat(timeout_s=5), steps_seen=0) == STARTUP_DEFAULT_S
    assert heartbeat_limit(Heartbeat(timeout_s=5000, startup_s=None), steps_seen=0) == 5000


def test_a_backlog_left_by_an_unwatched_attempt_is_read_while_control_answers(harness, tmp_path):
    """The new runner reads the dead attempt's log a slice per loop turn: `status` is answered
    before the attempt is judged, and every step is written once."""
    from moeconsole.runner.supervisor import control
    n = 300_000
    log = tmp_path / "backlog.txt"
    with open(log, "w") as f:
        for i in range(1, n + 1):
            f.write(f"{{'loss': '{1 + 1 / i:.4f}', 'grad_norm': '0.5', 'learning_rate': '0.0001', "
                    f"'global_step/max_steps': '{i}/{n}'}}\n")
    go = tmp_path / "go"   # the command prints its backlog once the runner is gone (no race with `run`'s own wait)
    code = (f"import os, sys, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.05)\n"
            f"sys.stdout.buffer.write(open({str(log)!r}, 'rb').read())")
    # (it saves no checkpoint: without a checkpoint directory a clean exit is a success)
    run = harness.start(harness.recipe(command=["{python}", "-c", code], checkpoints={"dir": None},
                                       resume={"arg": None}))
    st = run.wait(lambda s: s.get("status") == "running" and any(p.get("role") == "leader" for p in s.get("pids", [])),
                  what="the command running")
    leader = _leader(st)
    _kill_runner(run, st)
    go.write_text("")
    _wait_gone(leader, timeout=120)  # it printed every step and exited 0, unwatched
    assert harness.cli("supervise", run.id, timeout=120).returncode == 0
    answer = control.send(run.path / "control.sock", {"cmd": "status"}, timeout=60)
    assert answer.get("ok"), answer
    judged = [e for e in run.events() if e["type"] in ("attempt_end", "success")]
    assert not judged, "status was answered while the backlog was still being read"
    st = run.wait_status("succeeded", timeout=300)
    assert st["step"] == n and st["attempt"] == 1
    steps = [json.loads(line)["step"] for line in (run.path / "metrics.jsonl").read_bytes().splitlines()]
    assert steps == list(range(1, n + 1))
