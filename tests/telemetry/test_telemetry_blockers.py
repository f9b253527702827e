"""Zombies and blockers with real processes: found, labelled, and cleared."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import psutil
import pytest

from moeconsole.runner.rundir import rundir
from moeconsole.runner.telemetry.preflight import port_free
from moeconsole.runner.telemetry.procs import find_blockers
from tests.fakes.nvml import FakeProc, write_scenario
from tests.telemetry.telemetry_helpers import LISTEN, alive, base_env, by_pid, gpus_json, run_cli, run_flow
from tests.waiting import until

def test_zombie_found_killed_and_gpu_memory_released(nvml_env, scenario, spawn):
    """An inference server left from earlier holds 40 GiB on GPUs 0 and 1: it is listed with
    owner and memory, killed by PID after the start-time check, and the wait ends once the
    driver no longer lists it and memory is back under the tolerance."""
    server = spawn.popen()
    write_scenario(scenario, 8, [FakeProc(0, server.pid, 20480), FakeProc(1, server.pid, 20480)])
    out = run_flow(nvml_env, "clear", str(server.pid), "--tolerance", "1024")
    found = out["found"]
    assert found["labels"] == ["foreign_gpu"] and found["gpus"] == [0, 1]
    assert found["gpu_mem_mib"] == pytest.approx(40960)
    assert found["start_time"] == pytest.approx(psutil.Process(server.pid).create_time(), abs=0.05)
    assert out["kill"]["ok"] is True and out["kill"]["action"] == "terminated"
    assert out["released"] is True and out["seconds"] >= 0
    assert out["mem_before"][0] == pytest.approx(20480.5) and out["mem_after"][0] == pytest.approx(0.5)
    assert out["procs_after"][0] == [] and out["procs_after"][1] == []
    assert server.wait(timeout=10) is not None


def test_orphan_of_earlier_attempt_is_labelled_by_its_run_marker(nvml_env, scenario, spawn, tmp_path):
    run = rundir.create(tmp_path / "runs", "moe")
    run.write_state({"status": rundir.FAILED})
    env = base_env(MOECONSOLE_RUN_ID=run.run_id, MOECONSOLE_RUN_DIR=str(run.path))
    rank = spawn.orphan(env=env)
    assert rank.ppid() != psutil.Process().pid  # its parent is gone
    write_scenario(scenario, 8, [FakeProc(4, rank.pid, 70000)])
    # A bare survey: the marked run is over, so its GPU process is an orphan.
    info = by_pid(gpus_json(nvml_env, "--port", "0")["blockers"], rank.pid)
    assert info["labels"] == ["foreign_gpu", "orphan"] and info["run_id"] == run.run_id
    assert info["gpu_mem_mib"] == pytest.approx(70000)
    # Pre-flight of that run (in-process, no GPU needed): a leftover of this very run.
    mine = {p.pid: p for p in find_blockers(None, run_id=run.run_id, run_tree=set())}
    assert mine[rank.pid].labels == ("orphan",) and mine[rank.pid].blocker


def test_processes_of_a_live_run_are_its_own_not_strangers(nvml_env, scenario, spawn, tmp_path):
    run = rundir.create(tmp_path / "runs", "live")
    run.write_state({"status": rundir.RUNNING})
    rank = spawn.popen(env=base_env(MOECONSOLE_RUN_ID=run.run_id, MOECONSOLE_RUN_DIR=str(run.path)))
    write_scenario(scenario, 2, [FakeProc(0, rank.pid, 1000)])
    info = by_pid(gpus_json(nvml_env, "--port", "0")["blockers"], rank.pid)
    assert info["labels"] == ["run_tree"] and info["blocker"] is False
    # With the supervisor's view (the rank is in its current tree) it stays run_tree.
    mine = {p.pid: p for p in find_blockers(None, run_id=run.run_id, run_tree={rank.pid})}
    assert rank.pid not in mine  # not on a GPU here (no snapshot), nothing to show


def test_tracked_pid_orphan_only_while_start_time_matches(spawn):
    leftover = spawn.popen()
    started = psutil.Process(leftover.pid).create_time()
    hit = {p.pid: p for p in find_blockers(None, tracked={leftover.pid: started}, run_tree=set())}
    assert hit[leftover.pid].labels == ("orphan",)
    miss = {p.pid for p in find_blockers(None, tracked={leftover.pid: started - 3600}, run_tree=set())}
    assert leftover.pid not in miss  # same PID, other start time: somebody else's process


def test_defunct_child_is_listed_but_not_blocking(spawn):
    child = spawn.popen("pass")
    until(lambda: psutil.Process(child.pid).status() == psutil.STATUS_ZOMBIE, timeout=60, what="<defunct>")
    info = {p.pid: p for p in find_blockers(None, run_id="no-such-run")}[child.pid]
    assert info.labels == ("defunct",) and info.status == psutil.STATUS_ZOMBIE
    assert info.blocker is False
    child.wait()
    assert child.pid not in {p.pid for p in find_blockers(None, run_id="no-such-run")}


def test_port_holder_found_and_port_free_after_kill(nvml_env, scenario, spawn):
    holder = spawn.popen(LISTEN, ready=True)
    port = int(holder.ready_line)
    write_scenario(scenario, 1)
    out = gpus_json(nvml_env, "--port", str(port))
    info = by_pid(out["blockers"], holder.pid)
    assert info["labels"] == ["port_holder"] and info["blocker"] is True
    assert out["port"] == {"port": port, "free": False}
    table = run_cli(["gpus", "--port", str(port)], nvml_env).stdout
    assert f"Port {port}: in use by PID {holder.pid}" in table
    assert port_free(port) is False
    holder.terminate()
    holder.wait(timeout=10)
    assert port_free(port) is True
    assert gpus_json(nvml_env, "--port", str(port))["port"]["free"] is True


def test_port_free_ignores_time_wait_like_a_tcpstore_server():
    """A closed connection leaves TIME_WAIT on the server side; SO_REUSEADDR binds anyway."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    cli = socket.create_connection(("127.0.0.1", port))
    conn, _ = srv.accept()
    conn.close()  # the server closes first: its side goes to TIME_WAIT
    cli.close()
    srv.close()
    assert port_free(port) is True


def _gpus_kill(env: dict[str, str], pids: list[int], yes: bool, stdin: str = "") -> subprocess.CompletedProcess:
    """``moeconsole.console.commands.gpus.run`` with the --kill flags the CLI is asked to add, errors
    reported the way ``moeconsole.console.cli.main`` does."""
    code = ("import argparse, sys\n"
            "from moeconsole.console.commands import gpus\n"
            f"ns = argparse.Namespace(json=False, port=None, runs_dir=None, kill={pids!r}, yes={yes!r},"
            " grace=3.0, allow_other_users=False)\n"
            "from moeconsole.runner.core.errors import InputError\n"
            "try:\n    sys.exit(gpus.run(ns))\n"
            "except InputError as exc:\n    sys.stderr.write(f'moeconsole: {exc}\\n'); sys.exit(2)\n")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                          input=stdin)


def test_cli_kill_refuses_a_live_runs_rank_and_unlisted_pids(nvml_env, scenario, spawn, tmp_path):
    run = rundir.create(tmp_path / "runs", "live")
    run.write_state({"status": rundir.RUNNING})
    rank = spawn.popen(env=base_env(MOECONSOLE_RUN_ID=run.run_id, MOECONSOLE_RUN_DIR=str(run.path)))
    bystander = spawn.popen()
    write_scenario(scenario, 1, [FakeProc(0, rank.pid, 1000)])
    done = _gpus_kill(nvml_env, [rank.pid, bystander.pid], yes=True)
    assert done.returncode == 1
    out = done.stdout.strip().splitlines()
    assert out[-2] == (f"refused: PID {rank.pid} belongs to the live run {run.run_id}: "
                       f"stop it with `moeconsole kill {run.run_id}`")
    assert out[-1] == f"refused: PID {bystander.pid} is not a GPU process, leftover or port holder listed here"
    assert alive(rank.pid) and alive(bystander.pid)


def test_cli_kill_without_yes_and_without_terminal_is_refused(nvml_env, scenario, spawn):
    server = spawn.popen()
    write_scenario(scenario, 1, [FakeProc(0, server.pid, 1000)])
    done = _gpus_kill(nvml_env, [server.pid], yes=False, stdin="y\n")
    assert done.returncode == 2
    assert done.stderr.strip().endswith("--kill needs a confirmation: run it in a terminal or add --yes")
    assert alive(server.pid)


def test_cli_kill_confirms_names_pid_and_clears(nvml_env, scenario, spawn):
    """``gpus --kill PID`` (the flags the CLI is asked to add): a confirmation that names the
    PID and the escalation timer, then the checked kill and the wait for the memory."""
    server = spawn.popen()
    write_scenario(scenario, 2, [FakeProc(1, server.pid, 9000)])
    done = _gpus_kill(nvml_env, [server.pid], yes=True)
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last.startswith(f"terminated: PID {server.pid} exited after SIGTERM")
    assert "GPU memory released after" in last
    assert not alive(server.pid)


def test_proc_scan_reads_the_same_facts_as_psutil(spawn):
    """The /proc reader behind every blocker scan gives each process the parent, owner, state
    and start time psutil gives it (start times are compared with ones recorded via psutil)."""
    from moeconsole.runner.telemetry.procs import _proc_rows, _psutil_rows
    live = spawn.popen()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    until(lambda: psutil.Process(dead.pid).status() == psutil.STATUS_ZOMBIE, timeout=30, what="<defunct>")
    try:
        ours = {r.pid: r for r in _proc_rows() or []}
        theirs = {r.pid: r for r in _psutil_rows()}
        for pid in (live.pid, dead.pid):  # a live process may run or sleep between two reads
            assert (ours[pid].ppid, ours[pid].uid) == (theirs[pid].ppid, theirs[pid].uid)
            assert ours[pid].create_time == pytest.approx(theirs[pid].create_time, abs=0.011)
        assert ours[dead.pid].status == theirs[dead.pid].status == psutil.STATUS_ZOMBIE
        assert ours[live.pid].status in (psutil.STATUS_RUNNING, psutil.STATUS_SLEEPING)
        assert set(ours) & set(theirs) >= {live.pid, dead.pid}
    finally:
        dead.wait(timeout=10)


def _marked(spawn, run, attempt: int, *cmd: str):
    """A process carrying the run's marks for ``attempt``, returned once it has exec'd: until
    then /proc shows the parent's environment, and no reader could tell it is the run's."""
    proc = spawn.popen(*cmd, env=base_env(MOECONSOLE_RUN_ID=run.run_id, MOECONSOLE_RUN_DIR=str(run.path),
                                          MOECONSOLE_ATTEMPT=str(attempt)))

    def execd() -> bool:
        try:
            return psutil.Process(proc.pid).environ().get("MOECONSOLE_ATTEMPT") == str(attempt)
        except psutil.Error:
            return False
    until(execd, timeout=60, what=f"the attempt-{attempt} process to start with its marks")
    return proc


def _shown_by_console(state: dict) -> dict[int, dict]:
    """What the console's zombie list gets: the telemetry call it makes, judged by the one rule."""
    from moeconsole.runner.rundir.snapshot import LiveTelemetry
    _, procs = LiveTelemetry()(state)
    return {p["pid"]: p for p in procs if p.get("pid") is not None}


def test_the_runs_own_attempt_is_never_an_orphan_and_a_leftover_is(spawn, tmp_path):
    """A new attempt's waiter and command appear before state.json names them, and a batch
    job's srun is no tracked PID: marked with the attempt that runs now (or a newer one) they
    are the run's own. A process of an attempt that is over is a leftover to end."""
    run = rundir.create(tmp_path / "runs", "live")
    state = {"status": rundir.RUNNING, "run_id": run.run_id, "attempt": 2, "pids": [], "port": None}
    run.write_state(state)
    current = _marked(spawn, run, 2)
    newer = _marked(spawn, run, 3)
    leftover = _marked(spawn, run, 1)
    seen = _shown_by_console(state)
    for own in (current, newer):
        assert own.pid not in seen or (not seen[own.pid]["shown"] and not seen[own.pid]["killable"]), seen.get(own.pid)
    assert seen[leftover.pid]["labels"] == ["orphan"]
    assert seen[leftover.pid]["shown"] and seen[leftover.pid]["killable"] and seen[leftover.pid]["attempt"] == 1
    # In a cooldown after attempt 2 nothing of attempt 2 should live: a survivor is a leftover,
    # while a process of attempt 3 (launching now) is not.
    cooling = {**state, "status": rundir.COOLDOWN}
    run.write_state(cooling)
    seen = _shown_by_console(cooling)
    assert seen[current.pid]["shown"] and "orphan" in seen[current.pid]["labels"]
    assert newer.pid not in seen or not seen[newer.pid]["shown"]


def test_the_runner_itself_is_never_a_zombie_of_its_run(spawn, tmp_path):
    """A runner that exited under a console that has not reaped it yet is <defunct>: listed by
    the scan, but it is the run's own, so the zombie list leaves it out."""
    dead = spawn.popen("pass")
    until(lambda: psutil.Process(dead.pid).status() == psutil.STATUS_ZOMBIE, timeout=60, what="<defunct>")
    run = rundir.create(tmp_path / "runs", "over")
    state = {"status": rundir.SUCCEEDED, "run_id": run.run_id, "attempt": 1, "pids": [],
             "runner": {"pid": dead.pid, "start_time": psutil.Process(dead.pid).create_time(),
                        "host": rundir.hostname()}}
    seen = _shown_by_console(state)
    assert dead.pid not in seen or not seen[dead.pid]["shown"]
    # Any other defunct child is listed, but never offered for ending: only its parent can reap it.
    state["runner"] = {"pid": 1, "start_time": 0.0, "host": rundir.hostname()}
    other = _shown_by_console(state)[dead.pid]
    assert other["labels"] == ["defunct"] and other["shown"] and not other["killable"]
    assert "reap" in other["not_killable_why"]


def test_port_check_sees_what_psutil_sees_without_scanning_processes():
    """``port_users`` asks the socket tables first (one read of /proc/net) and scans every
    process's descriptors only when a socket has the port: the tables agree with psutil on a
    listening TCP socket, a bound UDP socket (IPv4 and IPv6 where the host has it) and a free port."""
    from moeconsole.runner.telemetry.procs import _port_bound, port_users, read_socket_table
    socks = []
    try:
        for family, kind in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET, socket.SOCK_DGRAM),
                             (socket.AF_INET6, socket.SOCK_STREAM)):
            try:
                s = socket.socket(family, kind)
                s.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", 0))
            except OSError:
                continue   # no IPv6 on this host
            if kind == socket.SOCK_STREAM:
                s.listen()
            socks.append(s)
        for s in socks:
            port = s.getsockname()[1]
            seen = {c.laddr.port for c in psutil.net_connections(kind="inet") if c.laddr}
            assert port in seen and _port_bound(port) is True
            assert psutil.Process().pid in port_users(port)[0]
        ports = [s.getsockname()[1] for s in socks]
        free = next(p for p in range(40000, 40100) if p not in ports and port_free(p))
        assert _port_bound(free) is (free in {c.laddr.port for c in psutil.net_connections(kind="inet") if c.laddr})
        assert port_users(free) == (set(), 0)
        # a table of several pages (the kernel gives one page of lines per read): every line is read,
        # the same bytes as a plain read, and the socket listed last is found
        for _ in range(80):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            s.listen()
            socks.append(s)
        table = read_socket_table("/proc/net/tcp")
        assert len(table) > 2 * os.sysconf("SC_PAGE_SIZE")
        local = {int(line.split()[1].rpartition(b":")[2], 16) for line in table.splitlines()[1:]}
        assert {s.getsockname()[1] for s in socks[-80:]} <= local   # (other processes' sockets come and go)
        for s in socks[-80:]:
            assert _port_bound(s.getsockname()[1]) is True
    finally:
        for s in socks:
            s.close()


def test_a_copy_of_the_run_is_not_told_its_twins_live_training_is_a_leftover(spawn, tmp_path):
    """Two directories hold a run of one id (a `cp -a` of a run directory, supervised again there;
    two runs directories whose runs were named in the same second): the copy's runner, at its attempt
    2, saw the original's live attempt-1 training as its own leftover of attempt 1 (the id alone
    proved it), to be listed, offered for ending and ended by a pre-flight with ``on_busy: kill``.
    A process started for another directory still there is not the run's (the kill's rule)."""
    import shutil
    original = rundir.create(tmp_path / "runs", "twin")
    original.write_state({"status": rundir.RUNNING, "run_id": original.run_id, "attempt": 1, "pids": []})
    (tmp_path / "copies").mkdir()
    copy = rundir.RunDir(shutil.copytree(original.path, tmp_path / "copies" / original.path.name))
    state = {"status": rundir.RUNNING, "run_id": copy.run_id, "attempt": 2, "pids": [], "port": None}
    copy.write_state(state)
    assert copy.run_id == original.run_id
    theirs = _marked(spawn, original, 1)      # the original's training, live
    mine = _marked(spawn, copy, 1)            # the copy's own attempt 1, left over
    from moeconsole.runner.rundir.snapshot import LiveTelemetry
    _, procs = LiveTelemetry(copy.path)(state)
    seen = {p["pid"]: p for p in procs if p.get("pid") is not None}
    assert theirs.pid not in seen or not seen[theirs.pid]["shown"], seen.get(theirs.pid)
    assert seen[mine.pid]["labels"] == ["orphan"] and seen[mine.pid]["killable"], seen.get(mine.pid)
    # the runner's pre-flight: the copy's leftover blocks its launch, the original's training does not
    from moeconsole.runner.telemetry.preflight import preflight
    found = preflight(None, devices=None, tolerance_mib=1024, port=None, run_id=copy.run_id,
                      exclude_pids={os.getpid()}, run_dir=copy.path)
    assert [p.pid for p in found.blockers if p.pid in (theirs.pid, mine.pid)] == [mine.pid], found.blockers
