"""Round 31: the run's control socket replaced by another process's listener. A console's command
must never reach a listener that is not the run's runner: it is refused before a byte is sent, and
the run's own runner, once it has bound the socket again, gets the request. Real runners, a real
impostor process, real signals."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from moeconsole.runner.process import launch, proctree
from moeconsole.runner.rundir import rundir
from moeconsole.runner.supervisor import control
from moeconsole.runner.core.errors import InputError
from tests.runner.conftest import NO_SAVES
from tests.waiting import until

SLEEPER = ["{python}", "-c", "import time\nprint(\"{'loss': '1.0', 'global_step/max_steps': '1/9'}\", flush=True)\n"
           "time.sleep(600)\n"]

# another process binds a listener at the run's socket path, records every line it is sent and
# answers each as a runner that did what it was asked would
IMPOSTOR = r"""
import os, socket, sys
path, heard = sys.argv[1], sys.argv[2]
os.chdir(os.path.dirname(path))   # a short name: a deep runs directory passes sockaddr_un's limit
os.unlink("control.sock")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("control.sock")
s.listen(8)
open(heard + ".ready", "w").close()
while True:
    c, _ = s.accept()
    open(heard + ".accepted", "a").write("1")
    line = c.makefile("rb").readline()
    with open(heard, "ab") as f:
        f.write(line)
    c.sendall(b'{"ok": true, "message": "killed"}\n')
    c.close()
"""


@pytest.fixture
def stopped_runner(harness, tmp_path):
    """A run whose runner is stopped (it cannot bind its socket again) and whose socket another
    process now holds; yields (run, state, impostor, heard)."""
    run = harness.start(harness.recipe(command=SLEEPER, kill={"grace_s": 2}, **NO_SAVES))
    st = run.wait(lambda s: s.get("status") == "running" and s.get("pids"), what="the training running")
    runner = st["runner"]["pid"]
    os.kill(runner, signal.SIGSTOP)
    heard = tmp_path / "heard"
    imp = subprocess.Popen([sys.executable, "-c", IMPOSTOR, str(run.path / "control.sock"), str(heard)])
    try:
        until(lambda: (tmp_path / "heard.ready").exists() or imp.poll() is not None, what="the impostor listening")
        assert imp.poll() is None, "the impostor could not listen"
        yield run, st, imp, heard
    finally:
        imp.kill()
        imp.wait()
        if proctree.same_process(runner, st["runner"]["start_time"]):
            os.kill(runner, signal.SIGCONT)
        for p in st["pids"]:
            if proctree.same_process(p["pid"], p["start_time"]):
                os.kill(p["pid"], signal.SIGKILL)


def test_a_kill_is_never_sent_to_another_process_listening_at_the_runs_socket(stopped_runner):
    run, st, imp, heard = stopped_runner
    with pytest.raises(InputError) as refused:
        launch.request(rundir.RunDir(run.path), control.KillRequest(grace_s=2), timeout=2)
    assert not heard.exists() or heard.read_bytes() == b"", heard.read_bytes()   # nothing reached it
    said = str(refused.value)
    assert f"pid {imp.pid}" in said and f"runner (pid {st['runner']['pid']})" in said, said
    assert "nothing was sent" in said, said
    # the training was not ended by anything
    assert all(proctree.same_process(p["pid"], p["start_time"]) for p in st["pids"])


def test_the_kill_command_waits_for_the_runner_to_take_its_socket_back_and_lands(harness, stopped_runner):
    run, st, imp, heard = stopped_runner
    killer = subprocess.Popen([sys.executable, "-m", "moeconsole.console.cli", "kill", run.id, "--grace", "2",
                               "--runs-dir", str(harness.runs_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, cwd=os.getcwd())
    try:
        # the runner continued: it sees the socket replaced, binds it again, and the kill reaches it
        until(lambda: (heard.parent / "heard.accepted").exists(), what="the kill connecting to the impostor")
        os.kill(st["runner"]["pid"], signal.SIGCONT)
        out, err = killer.communicate(timeout=60)
    finally:
        if killer.poll() is None:
            killer.kill()
            killer.wait()
    assert killer.returncode == 0, (out, err)
    assert not heard.exists() or heard.read_bytes() == b"", heard.read_bytes()
    until(lambda: not any(proctree.same_process(p["pid"], p["start_time"]) for p in st["pids"]), 60,
          what="every process of the training ended")
    assert run.wait_status("killed")["status"] == "killed"


def test_the_runs_own_runner_still_answers_a_command(harness):
    run = harness.start(harness.recipe(command=SLEEPER, kill={"grace_s": 2}, **NO_SAVES))
    st = run.wait(lambda s: s.get("status") == "running" and s.get("pids"), what="the training running")
    answer = launch.request(rundir.RunDir(run.path), control.KillRequest(grace_s=2), timeout=10)
    assert answer.ok, answer
    until(lambda: not any(proctree.same_process(p["pid"], p["start_time"]) for p in st["pids"]), 60,
          what="every process of the training ended")
