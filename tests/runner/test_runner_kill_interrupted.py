"""Ctrl-C (a real SIGINT) to `moeconsole kill RUN` while it waits out the grace of a training that
ignores SIGTERM: the runner was asked and carries the kill out, SIGKILL included; the command says
so in one line and exits 130. It had exited 130 in silence: a kill that seemed cancelled."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.runner.conftest import REPO
from tests.waiting import until

STUBBORN = ("import signal, sys, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('step 1 loss 2.0', flush=True)\n"
            "while True: time.sleep(0.2)\n")


def test_ctrl_c_to_kill_while_it_waits_says_the_kill_goes_on(harness):
    run = harness.start(harness.recipe(command=["{python}", "-c", STUBBORN], kill={"grace_s": 4},
                                       checkpoints={"dir": "{run_dir}/output"}, resume={"arg": None}))
    run.wait_status("running", timeout=60)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    said = harness.tmp / "kill.stderr"
    with open(said, "w") as stderr:
        kill = subprocess.Popen([sys.executable, "-m", "moeconsole.console.cli", "kill", run.id, "--runs-dir",
                                 str(harness.runs_dir)], stdout=subprocess.PIPE, stderr=stderr, text=True,
                                env=env, cwd=REPO)
    try:
        # the runner answered (its words on stderr): the command now waits out the grace
        until(lambda: "SIGTERM sent" in said.read_text(), timeout=60, what="the runner's answer")
        kill.send_signal(signal.SIGINT)   # what the terminal sends on Ctrl-C
        out, _ = kill.communicate(timeout=60)
    finally:
        if kill.poll() is None:
            kill.kill()
            kill.wait()
    err = said.read_text()
    assert kill.returncode == 130, (out, err)
    assert "Traceback" not in err, err
    assert f"interrupted; the kill of {run.id} goes on in its runner" in err, err
    assert run.wait_status("killed", timeout=60)["status"] == "killed"   # SIGKILL after the grace, as asked
