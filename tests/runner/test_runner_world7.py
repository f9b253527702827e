"""The supervised run in a hostile world, round 7: a machine that is not a clean test box. Each
through the real CLI, the real detached runner and real processes (a training that leaves its
session, a runner SIGKILLed for real); asserted on what the user sees (`kill`, state.json, the
processes left)."""
from __future__ import annotations

import json
import os
import signal
import textwrap
from pathlib import Path

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


def _json_with_gpu(harness, run, tmp_path, pid: int) -> dict:
    """`--json --once RUN` with the fake NVML listing ``pid`` on GPU 0 (40 GB)."""
    import subprocess
    import sys

    from tests.fakes.nvml import FakeProc, build_fake_nvml, fake_env, write_scenario
    from tests.runner.conftest import REPO
    scenario = write_scenario(tmp_path / "gpus", gpus=2, processes=[FakeProc(gpu=0, pid=pid, used_mib=40000)])
    env = fake_env(build_fake_nvml(), scenario)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "--json", "--once", run.id,
                          "--runs-dir", str(harness.runs_dir)], capture_output=True, text=True, timeout=120,
                         env=env, cwd=REPO)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.splitlines()[-1])


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
        # the run's own view, the worker on GPU 0 (the fake NVML lists it while it lives): the run's,
        # not a stranger's process blocking the GPU (`foreign_gpu`, offered for killing)
        seen = _json_with_gpu(harness, run, tmp_path, worker)
        assert seen["gpu"]["gpus"][0]["mem_used_mib"] >= 40000, seen["gpu"]
        labels = [b["labels"] for b in seen["blockers"] if b.get("pid") == worker]
        assert labels == [["run_tree"]], labels
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


def _shown(harness, run) -> dict:
    out = harness.cli("--json", "--once", run.id, "--no-gpu", check=True)
    return json.loads(out.stdout.splitlines()[-1])["run"]


def test_a_stopped_runner_is_called_stopped_not_a_writer_to_look_up_and_loses_nothing_once_continued(
        harness, tmp_path):
    """The runner SIGSTOPped (Ctrl-Z of a `supervise` in a shell, a debugger, a batch system's
    suspend) while the training goes on printing (its stdout is train.log, a file: it never
    blocks on the runner). Past `stale_after_s`, `--json`, `runs show` and `runs ls` said
    "RUNNING? (runner alive, state.json not written: see runner.log)", and runner.log said nothing:
    a stopped runner writes nothing. Now they say it is stopped and give `kill -CONT PID` as the
    next command. Once continued, every step is recorded and no hang is called (the silence was
    the runner's, not the training's)."""
    go = tmp_path / "go"
    run = harness.start(harness.recipe(command=["{python}", "-c", textwrap.dedent(f"""
        import os, time
        for i in range(1, 201):
            print('{{"step": %d, "loss": %r}}' % (i, 1.0 / i), flush=True)
            time.sleep(0.02)
            while i == 100 and not os.path.exists({str(go)!r}):
                time.sleep(0.05)
    """)], heartbeat={"timeout_s": 3, "stale_state_s": 2}, kill={"grace_s": 3}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 5, 90, what="step 5")
    runner = st["runner"]["pid"]
    os.kill(runner, signal.SIGSTOP)
    try:
        go.write_text("")   # the training prints its second half while the runner is stopped
        until(lambda: (run.path / "train.log").read_bytes().count(b"\n") >= 200, 90, what="the training's last step in train.log")
        shown = until(lambda: (lambda r: r if r.get("stale") else None)(_shown(harness, run)), 90,
                      what="--json to call the state stale")
        assert shown["status_word"] == f"RUNNING? (runner stopped: kill -CONT {runner})", shown["status_word"]
        assert shown["next_command"] == f"kill -CONT {runner}", shown
        assert f"runner stopped: kill -CONT {runner}" in harness.cli("runs", "show", run.id, check=True).stdout
        assert f"runner stopped: kill -CONT {runner}" in harness.cli("runs", "ls", check=True).stdout
        assert f"RUNNING? (runner stopped: kill -CONT {runner})" in harness.cli(
            "runs", "receipt", run.id, check=True).stdout
        # the run screen's two status lines, from the snapshot the screen reads: both say stopped
        from moeconsole.console import format as fmt
        line1, line2 = (fmt.plain(x) for x in fmt.status_lines(shown))
        assert f"RUNNING? (runner stopped: kill -CONT {runner})" in line1, line1
        assert f"runner stopped: kill -CONT {runner}" in line2 and "runner is gone" not in line2, line2
    finally:
        os.kill(runner, signal.SIGCONT)
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "cooldown", "paused", timeout=120)
    assert st["status"] == "succeeded", st
    assert [m["step"] for m in run.metrics()] == list(range(1, 201))
    assert not run.events("crash") and not [a for a in run.events("alert") if a.get("rule") == "hang"], run.events()


# A parent that never reaps (a container whose PID 1 is the user's program, not an init): a
# subreaper, so the detached runner is re-parented to it, that runs `moeconsole run --detach`,
# reaps that one command, prints the run's id and then only sleeps. argv: the CLI's argv.
NEVER_REAPS = textwrap.dedent("""
    import os, subprocess, sys, time
    from moeconsole.runner.process.waiter import set_child_subreaper
    assert set_child_subreaper()
    done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    print(done.returncode, done.stdout.strip().splitlines()[0] if done.stdout.strip() else "", flush=True)
    time.sleep(600)
""")


def test_a_dead_runner_left_a_zombie_by_a_parent_that_never_reaps_is_called_gone(harness, tmp_path):
    """A runner died (the OOM killer) in a container whose PID 1 never reaps: it stays a zombie
    for good. `--json`, `runs show` and `runs ls` took the zombie for a live runner and said
    RUNNING, with no next command, for a run nothing supervised (no restarts, no hang handling).
    Now a runner is alive only when it is not a zombie and is still the process that started at
    its recorded start time: "RUNNING? (runner gone)", `moeconsole supervise RUN`; `kill` lands."""
    import subprocess
    import sys

    from tests.runner.conftest import REPO, ticker
    recipe = harness.recipe(command=ticker(100000, 0.2), kill={"grace_s": 3}, **ONE_ATTEMPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    parent = subprocess.Popen([sys.executable, "-c", NEVER_REAPS, sys.executable, "-m", "moeconsole.console.cli",
                               "run", str(recipe), "--detach", "--runs-dir", str(harness.runs_dir)],
                              stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        code, run_id = parent.stdout.readline().split()
        assert code == "0", code
        from tests.runner.conftest import Run
        run = Run(harness.runs_dir / run_id)
        st = run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3")
        runner = st["runner"]["pid"]
        os.kill(runner, signal.SIGKILL)
        until(lambda: open(f"/proc/{runner}/stat").read().rsplit(")", 1)[1].split()[0] == "Z", 30,
              what="the runner to be a zombie its parent never reaps")
        shown = _shown(harness, run)
        assert shown["status_word"] == "RUNNING? (runner gone)", shown["status_word"]
        assert shown["next_command"] == f"moeconsole supervise {run.id}", shown
        assert "RUNNING? (runner gone)" in harness.cli("runs", "ls", check=True).stdout
        out = harness.cli("kill", run.id)
        assert out.returncode == 0 and "killed" in out.stdout, (out.stdout, out.stderr)
    finally:
        parent.kill()
        parent.wait()


# Steps 1..3, then argv[1] MiB without a newline, a newline, then steps 4..7; then waits for the
# file argv[2].
LONG_LINE = textwrap.dedent("""
    import os, sys, time
    for i in range(1, 4):
        print('{"step": %d, "loss": 0.5}' % i, flush=True)
    chunk = b"x" * (1 << 20)
    for _ in range(int(sys.argv[1])):
        sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.write(b"\\n")
    sys.stdout.buffer.flush()
    for i in range(4, 8):
        print('{"step": %d, "loss": 0.25}' % i, flush=True)
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.05)
""")


def _peak_rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


@pytest.mark.parametrize("mib", [10, 200])
def test_a_line_of_hundreds_of_megabytes_without_a_newline_keeps_the_runner_small_and_the_later_steps(
        harness, tmp_path, mib):
    """A training that prints 10 MB (and 200 MB) without a newline (a tensor dumped by mistake, a
    progress bar that never ends its line), then normal lines. Held: the runner reads the long
    line in bounded slices (its peak RSS stays far below the line's size), records the steps
    after it, and train.log keeps every byte."""
    script, end = tmp_path / "long.py", tmp_path / "end"
    script.write_text(LONG_LINE)
    run = harness.start(harness.recipe(command=["{python}", str(script), str(mib), str(end)], **ONE_ATTEMPT))
    st = run.wait(lambda s: s.get("step") == 7, 180, what="step 7, after the long line")
    peak = _peak_rss_mib(st["runner"]["pid"])
    assert peak < 150, f"the runner's peak RSS {peak:.0f} MiB for a {mib} MiB line"
    end.write_text("")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    assert [m["step"] for m in run.metrics()] == list(range(1, 8))
    with open(run.path / "train.log", "rb") as f:   # every byte of the long line, and its end
        head = f.read(1 << 16)
        third = b'{"step": 3, "loss": 0.5}\n'
        f.seek(head.index(third) + len(third))
        assert all(f.read(1 << 20) == b"x" * (1 << 20) for _ in range(mib))
        assert f.read(len(b'\n{"step": 4')) == b'\n{"step": 4'


# An interactive shell in a terminal (an SSH session without tmux) that starts an attached
# `moeconsole run`; the terminal is then closed (the connection drops): SIGHUP to the shell and
# to the console in its foreground.
def test_a_run_started_attached_in_a_terminal_that_closes_goes_on_to_its_end(harness, tmp_path):
    """Held: the console is gone with the terminal, the runner (its own session) and the
    training go on; the run ends succeeded with every step."""
    import pty
    import select
    import time

    from tests.runner.conftest import REPO, Run, ticker
    recipe = harness.recipe(command=ticker(60, 0.1), **ONE_ATTEMPT)
    cli = (f"PYTHONPATH={REPO} exec {os.environ.get('PYTHON', __import__('sys').executable)} -m moeconsole.console.cli "
           f"run {recipe} --runs-dir {harness.runs_dir}")
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm"
        os.chdir(REPO)
        os.execv("/bin/bash", ["bash", "--norc", "-i", "-c", cli])
    try:
        def started() -> list:
            try:
                select.select([fd], [], [], 0.1)
                os.read(fd, 1 << 16)   # the console draws: keep its terminal drained
            except OSError:
                pass
            return [p for p in harness.runs_dir.iterdir() if p.is_dir()] if harness.runs_dir.exists() else []
        run = Run(until(started, 90, what="the run directory")[0])
        run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3 on screen")
    finally:
        os.close(fd)   # the terminal closes: SIGHUP
        until(lambda: os.waitpid(pid, os.WNOHANG)[0] == pid, 60, what="the shell and the console to end")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    assert [m["step"] for m in run.metrics()] == list(range(1, 61))


def test_under_proc_hidepid_another_users_gpu_process_is_named_hidden_and_not_offered_for_killing(tmp_path):
    """/proc mounted `hidepid=2` (a hardened login node): another user's processes have no /proc
    entry, the driver still lists them on the GPUs. The zombie view called such a process "not
    visible here: another PID namespace?" and offered it for killing (`killable: true`), a kill
    that could only be refused (no start time to prove which process the PID is). Now it says
    the process is another user's, hidden by hidepid, and does not offer it. Run as `nobody` in a
    private mount namespace with its own /proc (`unshare -m`); the user's own run and `kill` work
    there (they read only the user's own processes)."""
    import pwd
    import shlex
    import shutil
    import subprocess
    import sys
    import tempfile

    from tests.fakes.nvml import SCENARIO_ENV, FakeProc, build_fake_nvml, write_scenario
    from tests.rundir.test_other_users_runs import OTHER_PYTHON
    if OTHER_PYTHON is None or shutil.which("unshare") is None:
        pytest.skip("needs root, unshare, runuser and a python3 another user may run")
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                            "mount -t proc -o hidepid=2 proc /proc"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount a private /proc with hidepid here: {probe.stderr.strip()}")
    nobody = pwd.getpwnam("nobody").pw_uid
    root = Path(tempfile.mkdtemp(prefix="mchidepid-"))   # not under pytest's 0700 directory
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])   # root's, "on GPU 0"
    try:
        os.chmod(root, 0o755)
        libdir = build_fake_nvml(root / "nvml")
        scenario = write_scenario(root / "scenario", gpus=2,
                                  processes=[FakeProc(gpu=0, pid=holder.pid, used_mib=40000, persist=True)])
        base = root / "runs"
        base.mkdir(mode=0o700)
        os.chown(base, nobody, -1)
        subprocess.run(["chmod", "-R", "a+rX", str(root / "nvml"), str(scenario)], check=True)
        assert OTHER_PYTHON[3:5] == ["--", "env"], OTHER_PYTHON
        cli = shlex.join([*OTHER_PYTHON[:5], f"LD_LIBRARY_PATH={libdir}", f"{SCENARIO_ENV}={scenario}",
                          *OTHER_PYTHON[5:], "-m", "moeconsole.console.cli", "gpus", "--json", "--runs-dir", str(base)])
        out = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                              f"mount -t proc -o hidepid=2 proc /proc && {cli}"],
                             capture_output=True, text=True, timeout=120, cwd="/")
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        found = [p for p in doc["blockers"] if p["pid"] == holder.pid]
        assert found and not found[0]["visible"], doc["blockers"]
        assert found[0]["killable"] is False, found[0]
        assert "another user's, hidden here by /proc's hidepid" in found[0]["not_killable_why"], found[0]
    finally:
        holder.kill()
        holder.wait()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("xdg", [False, True])
def test_a_read_only_home_or_xdg_data_dir_gets_one_line_from_run_and_every_reader_answers(tmp_path, xdg):
    """Held: HOME (or XDG_DATA_HOME) on a filesystem mounted read-only (a home served read-only
    by NFS, a locked-down account): `runs ls`, `runs show`, `--json --once` read the runs there
    (the index is not written: read from the run directories); `run` and `demo` say in one line
    that nothing can be made there, exit 2, no traceback. A real read-only bind mount in a
    private mount namespace."""
    import shlex
    import subprocess
    import sys

    from tests.console.conftest import write_run
    from tests.runner.conftest import REPO
    from tests.runner.test_runner_readonly_fs import _can_mount
    if not _can_mount():
        pytest.skip("no private mount namespace here (unshare -m needs CAP_SYS_ADMIN)")
    home = tmp_path / "home"
    data = (tmp_path / "xdg") if xdg else (home / ".local" / "share")
    base = data / "moeconsole" / "runs"
    base.mkdir(parents=True)
    for d in (base.parent, base):
        d.chmod(0o700)
    home.mkdir(exist_ok=True)
    run = write_run(base, "20240101-000000-done-0001", status="succeeded", runner_pid=None, ended=True)
    top = data if xdg else home
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MOECONSOLE_"))}
    env.update(PYTHONPATH=str(REPO), HOME=str(home), **({"XDG_DATA_HOME": str(data)} if xdg else {}))
    t = shlex.quote(str(top))

    def cli(*args: str) -> subprocess.CompletedProcess:
        line = shlex.join([sys.executable, "-m", "moeconsole.console.cli", *args])
        return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                               f"mount --bind {t} {t} && mount -o remount,ro,bind {t} {t} && exec {line}"],
                              capture_output=True, text=True, timeout=120, cwd=REPO, env=env)
    for args in (("runs", "ls"), ("runs", "show", run.run_id), ("--json", "--once", run.run_id, "--no-gpu")):
        out = cli(*args)
        assert out.returncode == 0 and run.run_id in out.stdout, (args, out.stdout, out.stderr)
        assert "Traceback" not in out.stderr, (args, out.stderr)
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: x\ncommand: [\"true\"]\n")
    for args in (("run", str(recipe), "--detach"), ("demo", "--detach")):
        out = cli(*args)
        assert out.returncode == 2, (args, out.stdout, out.stderr)
        last = out.stderr.strip().splitlines()[-1]   # the reason, then where runs can live instead (paths.ELSEWHERE)
        assert "Read-only file system" in last and "MOECONSOLE_RUNS_DIR" in last, (args, out.stderr)
        assert "Traceback" not in out.stderr, (args, out.stderr)
    assert sorted(p.name for p in base.iterdir()) == [run.run_id]
