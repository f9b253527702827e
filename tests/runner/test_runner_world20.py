"""The supervised run in a hostile world, round 20. Each drives the real CLI, the real detached runner
and a real process, and asserts on what the user sees: state.json, events.jsonl, `runs show`."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import textwrap
import time

from tests.runner.test_runner_world12 import ONE_ATTEMPT
from tests.runner.test_runner_world13 import _cli
from tests.runner.test_runner_world15 import started_under
from tests.runner.test_runner_world16 import RELAY_CLIENT, RELAY_DAEMON
from tests.runner.test_runner_world18 import named_client
from tests.waiting import until

# the relayed work as a file on the far side (a ray cluster's working_dir, a container's /workspace): the
# traceback it prints names that file, which no process here ran
REMOTE_WORK = """
import time
for i in range(1, 4):
    print('{"step": %d, "loss": 0.5}' % i, flush=True)
    time.sleep(1)   # the work's own pace: the runner walks its tree every 0.5 s
big = bytearray(3 << 30)
"""
RELAY_FILE_DAEMON = RELAY_DAEMON.replace('[sys.executable, "-c", sys.argv[3]]', '[sys.executable, sys.argv[3]]')


def test_a_sizeless_refusal_relayed_by_a_client_no_list_names_is_not_the_runners_limit(harness, tmp_path):
    """`run` from a shell with `ulimit -v` 16 GiB; the command is `ray job submit -- python train.py`
    (here a relay named `ray`): the work runs in the cluster's worker under that place's 2 GiB and its
    `bytearray(3 GiB)` is refused there, a bare `MemoryError`. Before: `environment_error`, "an
    allocation failed at the address-space limit (ulimit -v or -d) of 16.0 GB", FAILED: `ray` is not
    among the clients the runner knows by name (`docker`, `ssh`, `srun`, ...), so the refusal was
    read as a local one. The traceback names `.../cluster/train.py`, a program no process of the
    attempt here ran (the runner read each one's command line): now `unknown`, restarted, its summary
    naming the limit and that program."""
    cluster = tmp_path / "cluster"
    cluster.mkdir()
    (cluster / "train.py").write_text(REMOTE_WORK)
    sock = tmp_path / "relay.sock"
    daemon = subprocess.Popen([sys.executable, "-c", RELAY_FILE_DAEMON, str(sock), str(2 << 30),
                               str(cluster / "train.py")])
    try:
        until(sock.exists, 60, what="the relay daemon's socket")
        client = named_client(tmp_path, "ray", RELAY_CLIENT)
        recipe = harness.recipe(command=[str(client), str(sock)], **ONE_ATTEMPT)

        def limited() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (16 << 30, resource.RLIM_INFINITY))
        run = started_under(harness, recipe, limited)
        st = run.wait_status("failed", "succeeded", "killed", "unsaved", "paused", timeout=180)
        assert "MemoryError" in (run.path / "train.log").read_text()
        crash = st["last_crash"]
        assert crash["class"] != "environment_error" and run.events("crash")[0]["recovery"] == "restart", crash
        assert "not for want of RAM" not in crash["summary"] and "16.0 GB" in crash["summary"], crash
        assert "cluster/train.py" in crash["summary"] and "elsewhere" in crash["summary"], crash
        shown = _cli("runs", "show", run.id, runs_dir=harness.runs_dir).stdout.decode()
        assert "not for want of RAM" not in shown, shown
    finally:
        daemon.kill()
        daemon.wait()


def test_a_refusal_of_a_training_that_lifted_its_own_limit_does_not_name_the_limit(harness, tmp_path):
    """`run` from a shell with `ulimit -Sv 2 GiB` (the hard limit unlimited); the command is the
    site's wrapper `bash -c 'ulimit -v unlimited; exec python train.py'`, and the training's own
    allocation is refused with no limit on it (1 PiB: more than the machine's address space), a bare
    `MemoryError`. Before: `environment_error` "at the address-space limit ... of 2.0 GB", FAILED with
    the advice to raise a limit the training did not run under. The runner read the training's own
    `/proc/PID/limits` while it lived: no limit; the verdict no longer names it."""
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import time
        for i in range(1, 4):
            print('{"step": %d, "loss": 0.5}' % i, flush=True)
            time.sleep(1)
        big = bytearray(1 << 50)
    """))
    cmd = ["bash", "-c", f'ulimit -v unlimited && exec "$0" {tmp_path / "train.py"}', "{python}"]
    recipe = harness.recipe(command=cmd, **ONE_ATTEMPT)

    def soft() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, resource.RLIM_INFINITY))
    run = started_under(harness, recipe, soft)
    st = run.wait_status("failed", "succeeded", "killed", "unsaved", "paused", timeout=180)
    assert "MemoryError" in (run.path / "train.log").read_text()
    crash = st["last_crash"]
    assert crash["class"] != "environment_error", crash
    assert "ulimit" not in crash["summary"] and "address-space limit" not in crash["summary"], crash
    shown = _cli("runs", "show", run.id, runs_dir=harness.runs_dir).stdout.decode()
    assert "address-space limit" not in shown, shown


def test_a_command_word_that_is_not_utf8_is_refused_in_one_line_before_a_run_is_made(tmp_path):
    """`run -- python train.py café` typed in a latin-1 terminal (the byte 0xe9), any locale. Before: the
    run was made (recipe.yaml holding the lone surrogate), `run` said it started, and its runner died
    at the launch (a UnicodeEncodeError writing the attempt's line into train.log): `runs ls` showed
    "COOLDOWN? (runner gone)" for good. Now: one line naming the word and the byte, exit 2, nothing made;
    the same word in UTF-8 runs, and a latin-1 byte in the environment or the log still passes through."""
    from tests.runner.conftest import REPO
    runs = tmp_path / "runs"
    (tmp_path / "t.py").write_text("import os, sys\n"
                                   "sys.stdout.buffer.write(os.environb.get(b'H20X', b'-') + b'\\n')\n"
                                   "print('{\"step\": 1, \"loss\": 0.5}')\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "POSIX", "PYTHONPATH": str(REPO)}
    env_b = {k.encode(): v.encode() for k, v in env.items()}
    env_b[b"H20X"] = b"\xe9t\xe9"

    def run(word: bytes) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable.encode(), b"-m", b"moeconsole.console.cli", b"run", b"--detach",
                               b"--runs-dir", str(runs).encode(), b"--", sys.executable.encode(),
                               str(tmp_path / "t.py").encode(), word],
                              capture_output=True, env=env_b, cwd=tmp_path, timeout=120)
    out = run(b"caf\xe9")
    err = out.stderr.decode("utf-8", "replace")
    assert out.returncode == 2 and "Traceback" not in err, err
    assert "not UTF-8" in err and "0xe9" in err and "command's word 2" in err, err
    assert not runs.exists() or not [p for p in runs.iterdir() if p.is_dir()], list(runs.iterdir())
    ok = run("café".encode())
    assert ok.returncode == 0, ok.stderr
    run_dir = runs / ok.stdout.decode().split()[0]
    until(lambda: json.loads((run_dir / "state.json").read_text()).get("status") == "succeeded", 120,
          what="the UTF-8 run's end")
    assert b"\xe9t\xe9\n" in (run_dir / "train.log").read_bytes()


CRASH_ONCE = textwrap.dedent("""
    import os, sys, time
    for i in range(1, 4):
        print('{"step": %d, "loss": 0.5}' % i, flush=True)
    if os.environ["MOECONSOLE_ATTEMPT"] == "1":
        while not os.path.exists(sys.argv[1]):
            time.sleep(0.2)
        sys.exit(1)
""")


def test_a_working_directory_gone_at_the_restart_is_never_said_launched_anyway(harness, tmp_path):
    """Attempt 1 crashes after its working directory was deleted (a scratch dir cleaned, a mount gone);
    the next attempt waits for it (a critical alert says so). Before: at every cooldown ceiling the run
    said "cooldown ceiling reached: launched anyway, still waiting on the working directory ... is gone",
    a warning each ceiling, of an attempt that never launched (attempt still 1). Now the directory is a wait
    the ceiling does not end: no such alert; made again, attempt 2 launches and the run succeeds."""
    import shutil

    wd, go = tmp_path / "wd", tmp_path / "go"
    wd.mkdir()
    recipe = harness.recipe(command=["{python}", "-c", CRASH_ONCE, str(go)], workdir=str(wd),
                            restart={"max_restarts": 2}, cooldown={"floor_s": 0.5, "ceiling_s": 2.0})
    run = harness.start(recipe)
    try:
        until(lambda: any(m.get("step") == 3 for m in run.metrics()), 120, what="attempt 1 at step 3")
        shutil.rmtree(wd)
        go.write_text("x")
        until(lambda: any("working directory" in (e.get("message") or "") for e in run.events("alert")), 120,
              what="the alert that the working directory is gone")
        until(lambda: run.state().get("status") == "cooldown" and run.events("cooldown"), 60, what="the cooldown")
        # past four ceilings of 2 s (a negative needs a span: the span is the recipe's, measured, not a guess)
        began = time.monotonic()
        until(lambda: time.monotonic() - began > 8 or _ceiling_alerts(run), 60, what="four ceilings")
        assert not _ceiling_alerts(run), _ceiling_alerts(run)
        assert run.state().get("attempt") == 1 and run.state().get("status") == "cooldown", run.state()
        wd.mkdir()
        st = run.wait_status("succeeded", "unsaved", "failed", "killed", timeout=120)
        assert st["status"] in ("succeeded", "unsaved") and st["attempt"] == 2 and st["exit_code"] == 0, st
    finally:
        harness.cli("kill", run.id)


def _ceiling_alerts(run) -> list[str]:
    return [e["message"] for e in run.events("alert") if "launched anyway" in (e.get("message") or "")]


CLOSES_ITS_OUTPUT = textwrap.dedent("""
    import os, sys, time
    for i in range(1, 4):
        print('{"step": %d, "loss": 0.5}' % i, flush=True)
    os.close(1)
    os.close(2)
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.2)
""")


def test_a_training_that_closes_its_own_output_is_not_called_ended(harness, tmp_path):
    """Held (round 20): a training that closes its stdout and stderr at step 3 and goes on is still
    RUNNING (no end read from its output's end: the runner tails the file, not a pipe), and ends
    when it exits."""
    go = tmp_path / "go"
    run = harness.start(harness.recipe(command=["{python}", "-c", CLOSES_ITS_OUTPUT, str(go)], **ONE_ATTEMPT))
    try:
        until(lambda: any(m.get("step") == 3 for m in run.metrics()), 120, what="step 3")
        began = time.monotonic()
        until(lambda: time.monotonic() - began > 3 or run.state().get("status") != "running", 30,
              what="three seconds past its closed output")
        assert run.state().get("status") == "running" and not run.events("attempt_end"), run.state()
        go.write_text("x")
        st = run.wait_status("succeeded", "unsaved", "failed", "killed", timeout=120)
        assert st["status"] in ("succeeded", "unsaved") and st["exit_code"] == 0, st
    finally:
        harness.cli("kill", run.id)


STEPS_PAST_A_GATE = textwrap.dedent("""
    import os, sys, time
    for i in range(1, 9):
        print('{"step": %d, "loss": 0.5}' % i, flush=True)
        if i == 4:
            while not os.path.exists(sys.argv[1]):
                time.sleep(0.2)
""")


def test_a_log_deleted_by_a_cleaner_mid_run_loses_no_step(harness, tmp_path):
    """Held (round 20): `train.log` deleted at step 4 (a cleaner, `find -delete`) and not made again:
    steps 5-8 are still recorded (the runner reads the file it follows, not the name), the run ends
    with exit 0 at step 8."""
    go = tmp_path / "go"
    run = harness.start(harness.recipe(command=["{python}", "-c", STEPS_PAST_A_GATE, str(go)], **ONE_ATTEMPT))
    try:
        until(lambda: any(m.get("step") == 4 for m in run.metrics()), 120, what="step 4")
        (run.path / "train.log").unlink()
        go.write_text("x")
        st = run.wait_status("succeeded", "unsaved", "failed", "killed", timeout=120)
        assert st["exit_code"] == 0 and st["step"] == 8, st
        assert [m.get("step") for m in run.metrics()][-4:] == [5, 6, 7, 8], run.metrics()
    finally:
        harness.cli("kill", run.id)


NO_INOTIFY_PROBE = textwrap.dedent("""
    import sys, time
    from moeconsole.console.runwatch import RunWatch
    from moeconsole.runner.rundir import dirwatch
    assert dirwatch.watch(sys.argv[1]) is None, "an inotify instance was had"
    w = RunWatch(sys.argv[1], 0.5)
    began = time.monotonic()
    for _ in range(3):
        w.wait_next(lambda: False)
    w.close()
    print("polled", round(time.monotonic() - began, 1))
""")


def test_no_inotify_instance_left_the_run_screen_polls_instead(tmp_path):
    """Held (round 20): `inotify_init1` refused (EMFILE: `max_inotify_instances` reached, here 0 in a
    user namespace of the test's own, so no other process of the machine is touched): the run screen's
    watch is None and each wait ends at its poll interval, never stalls."""
    import shutil

    import pytest

    from tests.runner.conftest import REPO
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to make a user namespace with no inotify instance")
    probe = subprocess.run(["unshare", "-Ur", "sh", "-c", "echo 0 > /proc/sys/user/max_inotify_instances"],
                           capture_output=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"no user namespace whose inotify limit can be set here: {probe.stderr.decode()[:200]}")
    (tmp_path / "run").mkdir()
    out = subprocess.run(["unshare", "-Ur", "sh", "-c",
                          'echo 0 > /proc/sys/user/max_inotify_instances && exec "$0" -c "$1" "$2"',
                          sys.executable, NO_INOTIFY_PROBE, str(tmp_path / "run")],
                         capture_output=True, timeout=120, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0 and b"polled" in out.stdout, out


def test_a_process_read_inside_its_exec_is_read_again_not_taken_for_an_unknown_program(tmp_path, monkeypatch):
    """CI, loaded: a walk read the relay client inside its ``execve`` (its ``exe`` already the interpreter,
    its arguments not yet set: ``/proc/PID/cmdline`` reads empty, fs/proc/base.c ``get_mm_cmdline``) and
    took it for an interpreter that retitled itself, an unknown program under the limit; every refusal its
    traceback named was then the runner's own limit's (the test above read `environment_error`). The empty
    read is imitated at the boundary (the window is microseconds); the process, its limit and the walks are
    real. Now nothing is recorded of that read and the next walk reads the program."""
    from moeconsole.runner.core.programs import UNKNOWN
    from moeconsole.runner.process import proctree
    script = tmp_path / "work.py"
    script.write_text("import time; time.sleep(600)\n")
    child = subprocess.Popen([sys.executable, str(script)], preexec_fn=lambda: resource.setrlimit(
        resource.RLIMIT_AS, (16 << 30, resource.RLIM_INFINITY)))
    real, first = proctree.command_line, {child.pid}

    def in_exec(pid: int) -> list[str] | None:
        if pid in first:
            first.discard(pid)
            return []
        return real(pid)
    monkeypatch.setattr(proctree, "command_line", in_exec)
    try:
        until(lambda: real(child.pid) == [sys.executable, str(script)], 60, what="the child's exec")
        tree = proctree.ProcessTree("exec-window")
        tree.set_leader(child.pid)
        tree.refresh()
        assert UNKNOWN not in (tree.programs_run() or {}), tree.programs_run()
        tree.refresh()
        assert tree.programs_run() == {str(script): True}, tree.programs_run()
    finally:
        child.kill()
        child.wait()
