"""The runner in a hostile world: commands that exit at once, a run directory that refuses
writes, damaged run files, a planted symlink, a crowd on the control socket. Each through the
real CLI, the real detached runner and real processes; what a user sees is asserted (exit code,
one line on stderr, the run's files, the processes left)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading

import psutil
import pytest

from moeconsole.runner.supervisor import control
from moeconsole.runner.process.proctree import marked_processes
from tests.ops.ops_helpers import wait_for
from tests.runner.conftest import NO_SAVES, REPO
from tests.waiting import gone, sigkill

# A command that saves nothing, judged without a checkpoint directory: its clean exit is a success
# (with one, it would be a run without a verified save, UNSAVED).

SLEEPER = ["{python}", "-c", "import time\nprint(\"{'loss': '1.0', 'global_step/max_steps': '1/100'}\", "
                             "flush=True)\ntime.sleep(600)\n"]


def _one_line_exit_2(proc: subprocess.CompletedProcess) -> str:
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and len(lines) == 1, proc.stderr
    return lines[0]


def _wait(pred, timeout: float = 60, what: str = "condition"):
    return wait_for(pred, timeout, what)


def _gone(pid: int, created: float) -> bool:
    try:
        p = psutil.Process(pid)
        return abs(p.create_time() - created) > 0.05 or p.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _kill_runner(state: dict) -> None:
    pid = state["runner"]["pid"]
    os.kill(pid, signal.SIGKILL)
    _wait(lambda: not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE,
          what="the runner to die")


def _running_with_leader(run) -> dict:
    return run.wait(lambda s: s.get("status") == "running" and any(p["role"] == "leader" for p in s.get("pids", [])),
                    what="a running leader")


# ---- commands that end within milliseconds ---------------------------------------------------

@pytest.mark.parametrize("command, status", [(["echo", "hi"], "succeeded"), (["sh", "-c", "exit 3"], "failed"),
                                             (["true"], "succeeded")])
def test_a_command_that_exits_at_once_ends_the_run(harness, command, status):
    """The runner learns of every exit from its own waitpid: a command that is over before the
    launch returns is still seen, judged and restarted or finished (it used to stay
    ``running`` forever, and ``kill`` could not end it)."""
    # no checkpoint directory: a clean exit is a success, not a run without a verified save
    run = harness.start(harness.recipe(command=command, restart={"max_restarts": 2, "backoff_initial_s": 0.05,
                                                                 "backoff_max_s": 0.1},
                                       **NO_SAVES))
    st = run.wait_status(status, timeout=60)
    ends = run.events("attempt_end")
    assert len(ends) == st["attempt"] >= 1 and all(e["returncode"] is not None for e in ends)
    assert harness.cli("kill", run.id).returncode == 0  # "already <status>", never stuck


# ---- a run directory that refuses writes ---------------------------------------------------

def _no_dac_override() -> list[str] | None:
    """Root ignores file modes; without CAP_DAC_OVERRIDE it obeys them like any user."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return None
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]


def test_a_crash_while_the_run_directory_is_read_only_waits_and_relaunches(harness, tmp_path):
    prefix = _no_dac_override()
    if prefix is None:
        pytest.skip("needs root and setpriv to run the runner without CAP_DAC_OVERRIDE")
    recipe = harness.recipe(command=["{python}", "-c", "import time; print('up', flush=True); time.sleep(2); "
                                                       "raise SystemExit(1)"],
                            restart={"max_restarts": 5, "backoff_initial_s": 0.05, "backoff_max_s": 0.1,
                                     "no_progress_attempts": 10}, cooldown={"ceiling_s": 3})
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([*prefix, sys.executable, "-m", "moeconsole.console.cli", "run", str(recipe), "--detach",
                          "--runs-dir", str(harness.runs_dir)], capture_output=True, text=True, env=env,
                         cwd=REPO, timeout=120)
    assert out.returncode == 0, out.stderr
    from tests.runner.conftest import Run
    run = Run(harness.runs_dir / out.stdout.strip().splitlines()[0])
    _running_with_leader(run)
    subprocess.run(["chmod", "-R", "a-w", str(run.path)], check=True)
    try:
        # The attempt crashes; the next one cannot open its log. The runner lives, cools down
        # waiting for the directory, and says so (read over the control socket: the disk refuses
        # state.json too).
        def waiting():
            st = control.send(run.path / "control.sock", {"cmd": "status"})["state"]
            cd = st.get("cooldown") or {}
            return st if any("not writable" in w for w in cd.get("waiting_on", [])) and st.get("storage") else None
        st = _wait(waiting, 60, "the runner to wait for its directory")
        assert st["status"] == "cooldown" and st["attempt"] >= 1
        assert psutil.pid_exists(st["runner"]["pid"])
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(run.path)], check=True)
    st = run.wait(lambda s: (s.get("attempt") or 0) > st["attempt"] and s.get("status") == "running", 60,
                  "the next attempt after the directory is writable again")
    assert st["storage"] is None
    alerts = [e for e in run.events("alert") if e["rule"] == "storage"]
    assert alerts and "not writable" in alerts[0]["message"]
    harness.cli("kill", run.id, check=True)


# ---- damaged run files -----------------------------------------------------------------------

def test_kill_ends_the_training_when_no_runner_can_start(harness):
    """recipe.yaml damaged and the runner dead: no runner can take the run over, yet the kill
    gets through, from state.json's PIDs and start times and the run's marker alone."""
    run = harness.start(harness.recipe(command=SLEEPER))
    st = _running_with_leader(run)
    tree = {p["pid"]: p["start_time"] for p in st["pids"]}
    _kill_runner(st)
    (run.path / "recipe.yaml").write_text("command: [unterminated\n")
    sup = harness.cli("supervise", run.id)
    assert "recipe" in _one_line_exit_2(sup)
    out = harness.cli("kill", run.id, "--grace", "2")
    assert out.returncode == 0, out.stderr
    assert "no runner can take this run over" in out.stderr and "killed" in out.stdout
    assert all(_gone(pid, created) for pid, created in tree.items())
    assert not marked_processes(run.id)
    assert run.state()["status"] == "killed"
    assert [e["type"] for e in run.events()][-3:] == ["kill", "kill_done", "status"]


def test_a_symlink_planted_as_runner_log_is_refused_never_the_kill(harness, tmp_path):
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("do not print me\n")
    run = harness.start(harness.recipe(command=SLEEPER))
    st = _running_with_leader(run)
    leader = next(p for p in st["pids"] if p["role"] == "leader")
    _kill_runner(st)
    (run.path / "runner.log").unlink()
    (run.path / "runner.log").symlink_to(secret)
    sup = harness.cli("supervise", run.id)
    assert sup.returncode == 0, sup.stderr
    assert "runner.log" in sup.stderr and "do not print me" not in sup.stdout + sup.stderr
    run.wait(lambda s: s.get("runner", {}).get("pid") != st["runner"]["pid"] and s.get("status") == "running",
             what="the new runner")
    out = harness.cli("kill", run.id, "--grace", "2")
    assert out.returncode == 0, out.stderr
    assert _gone(leader["pid"], leader["start_time"])
    assert secret.read_text() == "do not print me\n" and (run.path / "runner.log").is_symlink()


@pytest.mark.parametrize("damage", [b'{"status": 5, "pids": "nope"}', b'{"status": "running", "runner": "x"}',
                                    b'{"status": "running", "attempt": -4, "step": "a"}', b"[" * 100_000,
                                    b'{"v": 1, "status": "running", "runner": {"pid": 0}}'])
def test_a_wrongly_typed_state_json_is_one_damaged_run_never_a_crash(harness, damage):
    good = harness.start(harness.recipe(command=["sleep", "0.3"], **NO_SAVES))
    good.wait_status("succeeded")
    bad = harness.start(harness.recipe(name="bad", command=["sleep", "0.3"], **NO_SAVES))
    bad.wait_status("succeeded")
    from moeconsole.runner.rundir.rundir import RunDir, runner_locked
    _wait(lambda: not runner_locked(RunDir(bad.path)), what="its runner to exit")  # nobody rewrites the file
    (harness.runs_dir / "index.sqlite").unlink()  # the index is rebuilt from the directories
    (bad.path / "events.jsonl").write_text("")    # nothing to rebuild the state from
    (bad.path / "state.json").write_bytes(damage)

    ls = harness.cli("runs", "ls", "--json")
    assert ls.returncode == 0, ls.stderr
    rows = {r["id"]: r for r in json.loads(ls.stdout)["runs"]}
    assert rows[good.id]["status"] == "succeeded"
    assert rows[bad.id]["status"] == "damaged" and "state.json" in rows[bad.id]["problem"]
    plain = harness.cli("runs", "ls")
    assert plain.returncode == 0 and "DAMAGED" in plain.stdout and good.id in plain.stdout

    show = harness.cli("runs", "show", bad.id)
    assert show.returncode == 0 and "damaged" in show.stdout, show.stderr
    snap = harness.cli("--json", bad.id, "--once", "--no-gpu")
    assert snap.returncode == 0, snap.stderr
    run_info = json.loads(snap.stdout)["run"]
    assert run_info["status_word"] == "DAMAGED" and "state.json" in run_info["damaged"]

    sup = harness.cli("supervise", bad.id)
    assert "does not say where the run stands" in _one_line_exit_2(sup)
    assert not bad.events("attempt_start"), "a run nobody can place is never started again"
    kill = harness.cli("kill", bad.id)
    assert kill.returncode == 0 and "nothing to kill" in kill.stdout, kill.stderr

    prom = bad.path.parent / "m.prom"
    out = harness.cli("prometheus", "serve", bad.id, "--textfile", str(prom))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert f'run_id="{bad.id}"' in prom.read_text()


# ---- the control socket under a crowd ------------------------------------------------------

def test_a_kill_gets_through_200_status_pollers(harness):
    run = harness.start(harness.recipe(command=SLEEPER, kill={"grace_s": 2}))
    _running_with_leader(run)
    sock = run.path / "control.sock"
    stop = threading.Event()
    barrier = threading.Barrier(200)
    answered, refused = [], []

    def poll():
        barrier.wait()
        while not stop.is_set():
            try:
                ans = control.send(sock, {"cmd": "status"}, timeout=60)
                if "state" not in ans:  # a refusal: the runner is exiting, or the request expired under load
                    refused.append(str(ans.get("message")))
                    return
                st = ans["state"]
                answered.append(1)
                if st.get("status") not in ("running", "stopping"):
                    return
            except control.ControlError as exc:
                refused.append(str(exc))
                return

    threads = [threading.Thread(target=poll, daemon=True) for _ in range(200)]
    for th in threads:
        th.start()
    try:
        _wait(lambda: len(answered) >= 200, 120, "the crowd at full strength")
        out = harness.cli("kill", run.id, "--grace", "2")
    finally:
        stop.set()
        for th in threads:
            th.join(timeout=120)
    assert out.returncode == 0, out.stderr
    assert run.state()["status"] == "killed"
    assert not [r for r in refused if "queue" in r or "Resource temporarily" in r], refused[:3]


# ---- records -----------------------------------------------------------------------------

def test_the_runner_keeps_every_real_record_beside_inferred_ones_as_parse_does(harness, tmp_path):
    """A metric line whose step cannot be read (invalid UTF-8), then lines with no step at all
    between the real ones: the runner's metrics.jsonl holds every real loss, and the same
    records as ``parse --json`` of its train.log."""
    from tests.ingest.test_ingest_live import _stepless_between
    log = tmp_path / "lines.bin"
    log.write_bytes(_stepless_between())
    run = harness.start(harness.recipe(command=["{python}", "-c", f"import sys; sys.stdout.buffer.write(open("
                                                                  f"{str(log)!r}, 'rb').read())"], **NO_SAVES))
    run.wait_status("succeeded")
    written = run.metrics()
    assert sorted(r["loss"] for r in written if r["loss"] < 5) == [round(1 + s / 1000, 4) for s in range(1, 41)]
    parsed = [json.loads(line) for line in harness.cli("parse", str(run.path / "train.log"), "--json",
                                                       check=True).stdout.splitlines()]
    assert [(r["step"], r["loss"]) for r in written] == [(r["step"], r["loss"]) for r in parsed]


def test_a_damaged_crash_report_is_shown_as_damaged_not_as_garbage(harness):
    run = harness.start(harness.recipe(command=["sh", "-c", "sleep 0.2; exit 3"], restart={"max_restarts": 0}))
    run.wait_status("failed")
    report = run.path / "crashes" / "attempt-1.json"
    assert json.loads(report.read_text())["class"]
    report.write_text('{"class": 5, "evidence": 3, "attempt": "y", "summary": 7}')
    show = harness.cli("runs", "show", run.id)
    assert show.returncode == 0 and "attempt 1: damaged" in show.stdout and "$.class" in show.stdout, show.stdout
    snap = json.loads(harness.cli("--json", run.id, "--once", "--no-gpu", check=True).stdout)
    assert snap["crashes"][0]["class"] == "damaged" and snap["crashes"][0]["attempt"] == 1


# A training that dropped the run's environment in what it starts, whose SIGTERM handler starts a
# process in its session (a save, a last upload) and exits at once: that process is born during the
# kill, after the kill's look at the tree, and its parent is gone before the next look.
def _forks_on_sigterm(pid_file) -> list[str]:
    return ["{python}", "-c", (
        "import os, signal, sys, time\n"
        "def on_term(*_):\n"
        "    child = os.fork()\n"
        "    if child == 0:\n"
        "        env = {k: v for k, v in os.environ.items() if k != 'MOECONSOLE_RUN_ID'}\n"
        "        os.execve(sys.executable, [sys.executable, '-c', 'import time; time.sleep(600)'], env)\n"
        f"    open({str(pid_file)!r}, 'w').write(str(child))\n"
        "    os._exit(0)\n"
        "signal.signal(signal.SIGTERM, on_term)\n"
        "print(\"{'loss': '1.0', 'global_step/max_steps': '1/100'}\", flush=True)\n"
        "time.sleep(600)\n")]


def test_kill_without_a_runner_ends_what_the_training_starts_as_it_ends(harness, tmp_path):
    """No runner can take the run over; the kill's SIGTERM makes the training start a process
    (without the run's marker, in the training's session) and exit. That process is born after the
    kill looked at the tree and its parent is gone at the next look: the kill said `killed` and it
    lived on, nobody's. Its session is the one the training made: the kill ends it too."""
    pid_file = tmp_path / "born-in-the-kill.pid"
    run = harness.start(harness.recipe(command=_forks_on_sigterm(pid_file), **NO_SAVES))
    st = _running_with_leader(run)
    _kill_runner(st)
    (run.path / "recipe.yaml").write_text("command: [unterminated\n")
    born = None
    try:
        out = harness.cli("kill", run.id, "--grace", "5")
        born = int(pid_file.read_text())
        assert out.returncode == 0 and "killed" in out.stdout, (out.stdout, out.stderr)
        assert str(born) in out.stdout, out.stdout
        assert _wait(lambda: gone(born), 30, "the process the training started as it ended")
        assert run.state()["status"] == "killed"
    finally:
        if born is not None and not gone(born):
            sigkill(born)
