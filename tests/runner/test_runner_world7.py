"""The supervised run in a hostile world, round 7: a machine that is not a clean test box. Each
through the real CLI, the real detached runner and real processes (a training that leaves its
session, a runner SIGKILLed for real); asserted on what the user sees (`kill`, state.json, the
processes left)."""
from __future__ import annotations

import os
import signal
import textwrap

import pytest

from tests.runner.conftest import NO_SAVES
from tests.waiting import gone, sigkill, until

ONE_ATTEMPT = {"restart": {"max_restarts": 0}, **NO_SAVES}

# A launcher that stays alive while its training leaves the run's session: a child calls setsid()
# and forks the training, which replaces itself with an interpreter started with an empty
# environment (no run marker: `env -i`, a site launcher that scrubs the environment). The
# training prints a step every 0.2 s; once the file argv[1] exists it starts a worker (a data
# loader, a process holding a GPU) that writes its PID to argv[2] and sleeps for good.
ESCAPES = textwrap.dedent("""
    import os, sys, time
    TRAIN = '''
    import os, sys, time
    started = False
    for i in range(1, 100000):
        print('{"step": %d, "loss": 0.5}' % i, flush=True)
        if not started and os.path.exists(sys.argv[1]):
            started = True
            if os.fork() == 0:
                os.execv(sys.executable, [sys.executable, "-c",
                         "import os, sys, time\\\\nopen(sys.argv[1], 'w').write(str(os.getpid()))\\\\n"
                         "while True: time.sleep(1)", sys.argv[2]])
        time.sleep(0.2)
    '''
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execve(sys.executable, [sys.executable, "-c", TRAIN, sys.argv[1], sys.argv[2]], {})
        os._exit(0)
    while True:
        time.sleep(1)
""")


def _worker(pidfile) -> int:
    return int(until(lambda: pidfile.exists() and pidfile.read_text().strip(), 60, what="the worker's PID"))


@pytest.mark.parametrize("how", ["runner", "no runner"])
def test_a_worker_started_by_a_training_outside_the_runs_session_while_no_runner_watched_is_killed(
        harness, tmp_path, how):
    """The training left the run's session (setsid, a double fork) and dropped its environment
    (no run marker); the runner and its waiter were SIGKILLed (the OOM killer, a login node's
    reboot of the user's processes); the training then started a worker. `kill` (a new runner
    adopting the training, or, with the recipe damaged, the direct kill from state.json's PIDs)
    ended the recorded processes only: the worker lived on, holding what it held (a GPU), with
    nothing of the run left to find it by. Its parent, a process proven the run's by its PID and
    start time, is its proof: it is ended with the run."""
    script, go, pidfile = tmp_path / "escapes.py", tmp_path / "go", tmp_path / "worker.pid"
    script.write_text(ESCAPES)
    run = harness.start(harness.recipe(command=["{python}", str(script), str(go), str(pidfile)],
                                       kill={"grace_s": 3}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3 and len(s.get("pids") or []) >= 3, 90,
                  what="step 3 and the training that left the session tracked")
    waiter = next(p["pid"] for p in st["pids"] if p["role"] == "waiter")
    trainer = max(p["pid"] for p in st["pids"] if p["role"] == "child")
    sigkill(st["runner"]["pid"], 30, what="the runner to die")
    sigkill(waiter, 30, what="the waiter to die")
    go.write_text("")
    worker = _worker(pidfile)
    try:
        if how == "no runner":
            (run.path / "recipe.yaml").write_text("command: [unclosed\n")
        out = harness.cli("kill", run.id)
        assert out.returncode == 0, (out.stdout, out.stderr)
        assert "killed" in out.stdout, out.stdout
        until(lambda: gone(trainer), 60, what="the training to end")
        until(lambda: gone(worker), 60, what="the worker the training started while no runner watched to end")
        assert run.state().get("status") == "killed", run.state()
    finally:
        for pid in (worker, trainer):
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
