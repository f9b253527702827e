"""Supervision never ends or stalls on one input (issue 32, "lost runs"): one metric line with
a step out of range, a FIFO planted as train.log, control.sock deleted, the runner stopped,
file descriptors running out, stdout closed, a full disk. Real CLI, real detached runner, real
signals and processes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import psutil
import pytest

from tests.runner.conftest import NO_SAVES, REPO
from tests.waiting import until


def _trainer(lines: list[str], then_sleep: float = 600) -> list[str]:
    """A training that prints ``lines`` (one a second apart is not needed: all at once), then
    one more good step after the bad ones, then sleeps."""
    code = ("import sys, time\n"
            f"for line in {lines!r}:\n"
            "    print(line, flush=True)\n"
            f"time.sleep({then_sleep})\n")
    return ["{python}", "-c", code]


def _alive(pid: int, created: float) -> bool:
    try:
        p = psutil.Process(pid)
        return abs(p.create_time() - created) < 0.05 and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _leader(st: dict) -> dict | None:
    return next((p for p in st.get("pids") or [] if p.get("role") == "leader"), None)


def _running(run) -> dict:
    return run.wait(lambda s: s.get("status") == "running" and _leader(s) is not None, what="a running leader")


def _no_traceback(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr


# ---- 1: one metric line with a step out of range ---------------------------------------------

BAD_STEPS = {
    "int64 + 1": '{"loss": 1.0, "step": 9223372036854775808}',
    "swift 20 digits": "{'loss': '1.0', 'global_step/max_steps': '99999999999999999999/100'}",
    "1e308": '{"loss": 1.0, "step": 1e308}',
    "negative": '{"loss": 1.0, "step": -7}',
}


@pytest.mark.parametrize("label", list(BAD_STEPS))
def test_one_metric_line_out_of_range_never_ends_supervision(harness, label):
    """The line is skipped and counted; the runner lives on, keeps the records around it, and
    the kill ends the run (it used to die with OverflowError, every new runner with it)."""
    good = [f'{{"loss": {1 + s / 10}, "step": {s}}}' for s in (1, 2)]
    after = ['{"loss": 0.5, "step": 3}']
    run = harness.start(harness.recipe(command=_trainer(good + [BAD_STEPS[label]] + after), **NO_SAVES))
    st = _running(run)
    until(lambda: [m["step"] for m in run.metrics()] == [1, 2, 3], 60, what="steps 1, 2 and 3 written")
    runner = run.state()["runner"]
    assert _alive(runner["pid"], runner["start_time"]), (run.path / "runner.log").read_text()[-2000:]
    st = run.state()
    until(lambda: run.state().get("step") == 3, 60, what="state.json at step 3")
    for args in (("parse", str(run.path / "train.log")), ("parse", str(run.path / "train.log"), "--json")):
        out = harness.cli(*args)
        assert out.returncode == 0, out.stderr
        _no_traceback(out)
    parsed = [json.loads(line)["step"] for line in harness.cli("parse", str(run.path / "train.log"),
                                                                "--json").stdout.splitlines()]
    assert parsed == [1, 2, 3]
    summary = harness.cli("parse", str(run.path / "train.log")).stdout
    assert "1 with a step out of range" in summary, summary
    leader = _leader(st)
    out = harness.cli("kill", run.id, "--grace", "2")
    assert out.returncode == 0, out.stderr
    assert run.state()["status"] == "killed"
    assert not _alive(leader["pid"], leader["start_time"])


# ---- 4, 5: a kill always lands, even when the runner cannot take it ----------------------------

SLEEPER = ["{python}", "-c", "import time\nprint(\"{'loss': '1.0', 'global_step/max_steps': '1/100'}\", "
                             "flush=True)\ntime.sleep(600)\n"]


def test_control_sock_deleted_the_runner_binds_it_again(harness):
    """control.sock deleted while the runner lives: the runner notices and binds it again, so
    status and kill reach it as before (they used to say "no runner is listening" for good)."""
    from moeconsole.runner.supervisor import control
    run = harness.start(harness.recipe(command=SLEEPER, **NO_SAVES))
    st = _running(run)
    (run.path / "control.sock").unlink()
    answer = until(lambda: _status(run, control), 30, what="the runner to answer on a new control.sock")
    assert answer["ok"] is True
    out = harness.cli("kill", run.id, "--grace", "2")
    assert out.returncode == 0, out.stderr
    assert "from its records" not in out.stderr      # the runner itself took the kill
    assert run.state()["status"] == "killed" and run.state()["runner"]["pid"] == st["runner"]["pid"]
    assert not _alive(_leader(st)["pid"], _leader(st)["start_time"])


def _status(run, control) -> dict | None:
    try:
        return control.send(run.path / "control.sock", {"cmd": "status"}, timeout=5)
    except control.ControlError:
        return None


def test_control_sock_replaced_by_a_file_the_kill_still_lands(harness):
    """A regular file planted where control.sock was: the runner notices the path changed and
    binds its socket there again; the kill lands, no traceback (it used to fail with "no runner
    is listening" and leave the training running)."""
    run = harness.start(harness.recipe(command=SLEEPER, **NO_SAVES))
    st = _running(run)
    sock = run.path / "control.sock"
    sock.unlink()
    sock.write_text("not a socket\n")
    out = harness.cli("kill", run.id, "--grace", "2")
    assert out.returncode == 0, out.stderr
    _no_traceback(out)
    assert run.state()["status"] == "killed"
    assert not _alive(_leader(st)["pid"], _leader(st)["start_time"])


def test_a_stopped_runner_never_takes_a_kill_late(harness):
    """Runner SIGSTOPped: the kill does not wait for it. The CLI ends the stopped runner (its
    PID and start time checked) and the training from the run's records, and says so; after
    SIGCONT nothing is carried out late, because the runner is gone (it used to report "did not
    answer" with exit 2, then kill the training once continued)."""
    run = harness.start(harness.recipe(command=SLEEPER, **NO_SAVES))
    st = _running(run)
    runner = st["runner"]
    os.kill(runner["pid"], signal.SIGSTOP)
    try:
        out = harness.cli("kill", run.id, "--grace", "2")
    finally:
        try:
            os.kill(runner["pid"], signal.SIGCONT)
        except ProcessLookupError:
            pass
    assert out.returncode == 0, out.stderr
    _no_traceback(out)
    assert "killed" in out.stdout
    assert not _alive(_leader(st)["pid"], _leader(st)["start_time"])
    assert not _alive(runner["pid"], runner["start_time"])
    assert run.state()["status"] == "killed"
    again = harness.cli("kill", run.id)
    assert again.returncode == 0 and "already killed" in again.stdout, again.stdout + again.stderr


# ---- 8: file descriptors --------------------------------------------------------------------

def _start_with_nofile(harness, recipe, nofile: int):
    """``run --detach`` with RLIMIT_NOFILE ``nofile`` (the runner inherits it)."""
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    proc = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "run", str(recipe), "--detach",
                           "--runs-dir", str(harness.runs_dir)], capture_output=True, text=True, env=env,
                          cwd=REPO, timeout=120, preexec_fn=limit)
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr
    from tests.runner.conftest import Run
    return Run(harness.runs_dir / proc.stdout.strip().splitlines()[0])


@pytest.mark.parametrize("nofile, clients", [(64, 120), (1024, 1100)])
def test_many_idle_control_connections_never_end_the_runner(harness, nofile, clients):
    """Silent connections far beyond the runner's open-file limit: it holds a capped number
    (the oldest idle closed), keeps descriptors for its own files, logs no traceback, answers
    status and takes the kill (it used to die with EMFILE, or log tracebacks)."""
    import resource
    import socket
    from moeconsole.runner.supervisor import control
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < clients + 64:
        pytest.skip(f"this test needs {clients + 64} descriptors; the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, clients + 64), hard))
    run = _start_with_nofile(harness, harness.recipe(command=SLEEPER, **NO_SAVES), nofile)
    socks: list[socket.socket] = []
    try:
        st = _running(run)
        path = str(run.path / "control.sock")
        for _ in range(clients):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            try:
                s.connect(path)
            except OSError:
                s.close()
                continue
            socks.append(s)
        # the crowd stays: every round, each dropped connection comes back
        for _ in range(3):
            answer = control.send(path, {"cmd": "status"}, timeout=30)
            assert answer["ok"] is True
        runner = st["runner"]
        assert _alive(runner["pid"], runner["start_time"]), (run.path / "runner.log").read_text()[-3000:]
        out = harness.cli("kill", run.id, "--grace", "2")
        assert out.returncode == 0, out.stderr
        assert "from its records" not in out.stderr   # the runner itself took it
        assert run.state()["status"] == "killed"
        log = (run.path / "runner.log").read_text()
        assert "Traceback" not in log and "Too many open files" not in log, log[-3000:]
    finally:
        for s in socks:
            s.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# ---- 3: train.log replaced by a FIFO ----------------------------------------------------------

TICKER = ["{python}", "-c", "import time\nfor s in range(1, 100000):\n"
                            "    print({'loss': 1.0, 'step': s}, flush=True)\n    time.sleep(0.1)\n"]


def test_train_log_replaced_by_a_fifo_never_blocks_the_runner(harness):
    """A FIFO planted where train.log was: the runner never opens it blocking (it used to hang
    in open(2) until a writer came: status unanswered, kill failed, the training left alive). It
    says so (a storage alert), status and --json answer, the kill lands through the runner."""
    from moeconsole.runner.supervisor import control
    run = harness.start(harness.recipe(command=TICKER, **NO_SAVES))
    st = _running(run)
    until(lambda: len(run.metrics()) >= 2, 60, what="two steps read")
    log = run.path / "train.log"
    log.unlink()
    os.mkfifo(log)
    alert = until(lambda: [e for e in run.events("alert") if "FIFO" in e.get("message", "")], 60,
                  what="an alert naming the FIFO")
    assert alert[0]["rule"] == "storage"
    answer = control.send(run.path / "control.sock", {"cmd": "status"}, timeout=10)
    assert answer["ok"] is True
    shown = harness.cli("--json", run.id, "--once", "--no-gpu", timeout=60)
    assert shown.returncode == 0, shown.stderr
    out = harness.cli("kill", run.id, "--grace", "2")
    assert out.returncode == 0, out.stderr
    assert "from its records" not in out.stderr
    assert run.state()["status"] == "killed"
    assert not _alive(_leader(st)["pid"], _leader(st)["start_time"])


# ---- 16: standard output closed, a full disk at the run's creation ----------------------------

def _cli_stdout_closed(harness, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args], stderr=subprocess.PIPE, text=True,
                          env=env, cwd=REPO, timeout=60, preexec_fn=lambda: os.close(1))


@pytest.mark.parametrize("args", [("runs", "ls"), ("--json", "RUN", "--once", "--no-gpu"), ("runs", "show", "RUN"),
                                  ("parse", "LOG")])
def test_a_command_with_stdout_closed_says_so_in_one_line(harness, args):
    """``moeconsole runs ls >&-``: one line on stderr and exit 2, never a traceback (it used to
    fail with ``'NoneType' object has no attribute 'write'``)."""
    run = harness.start(harness.recipe(command=["true"], **NO_SAVES))
    run.wait_status("succeeded")
    words = [str(run.path / "train.log") if a == "LOG" else run.id if a == "RUN" else a for a in args]
    if words[0] != "parse":
        words += ["--runs-dir", str(harness.runs_dir)]
    proc = _cli_stdout_closed(harness, *words)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "standard output is closed" in lines[0]


@pytest.fixture
def full_disk(runs_dir):
    """The runs directory on a 1 MiB tmpfs, filled (needs root to mount; skipped otherwise)."""
    from tests.conftest import fill_up, tmpfs
    with tmpfs(runs_dir, "size=1m,mode=0700", end_runs=True):
        fill_up(runs_dir / "filler")
        yield runs_dir


def test_a_full_disk_at_the_runs_creation_leaves_nothing_behind(harness, full_disk):
    """ENOSPC while ``run`` writes the new run directory (a real full tmpfs): one line, exit 2,
    and no half-made run directory (it used to end with an OSError traceback and leave one)."""
    proc = harness.cli("run", str(harness.recipe()), "--detach")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode in (1, 2) and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "No space left on device" in lines[0]
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler"]
    listed = harness.cli("runs", "ls")
    assert listed.returncode == 0 and "Traceback" not in listed.stderr


def test_parse_of_a_trainer_state_with_steps_out_of_range(harness, tmp_path):
    """trainer_state.json's log_history with a step of 10**30 and -3: skipped and counted, the
    other entries read (``parse`` used to end with OverflowError)."""
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"log_history": [{"loss": 1.0, "step": 1}, {"loss": 1.0, "step": 10 ** 30},
                                                {"loss": 1.0, "step": -3}, {"loss": 0.5, "step": 3}],
                                "global_step": 3}))
    out = harness.cli("parse", str(path), "--json")
    assert out.returncode == 0, out.stderr
    assert [json.loads(line)["step"] for line in out.stdout.splitlines()] == [1, 3]
    summary = harness.cli("parse", str(path))
    assert summary.returncode == 0 and "2 with a step out of range" in summary.stdout, summary.stdout + summary.stderr


# a training that logs a step every 0.2 s for as long as it may
STEADY = ("import time\nfor i in range(1, 100000):\n"
          "    print('{\"step\": %d, \"loss\": 0.5}' % i, flush=True)\n    time.sleep(0.2)\n")


def test_a_runs_directory_turned_read_only_says_so_from_the_runner_and_names_the_crash(harness, runs_dir):
    """The runs directory's filesystem hits an error mid-run and the kernel takes it read-only
    (ext4 ``errors=remount-ro``, a real one on a loop device): the training's next line to train.log
    is refused (EROFS) and it dies with nothing said; the runner can write neither its crash report
    nor state.json. Before: `runs ls` said "RUNNING? (runner alive, state.json not written: see
    runner.log)" with runner.log empty, `runs show` "crashes 0", and the crash read `unknown` "exited
    with code 120". Now every view asks the live runner once state.json is late and says what it
    says: cooling down, waiting on the run directory, the crash counted and named for what it was."""
    from tests.conftest import ext4_that_errs
    from tests.runner.test_runner_world13 import _cli, _shown
    with ext4_that_errs(runs_dir) as trigger:
        run = harness.start(harness.recipe(command=["{python}", "-c", STEADY], heartbeat={"timeout_s": 600}))
        run.wait(lambda s: (s.get("step") or 0) >= 3, 120, what="step 3")
        trigger.write_text("moeconsole test: the disk errs\n")

        def cooling() -> dict | None:
            shown = _shown(run.id, runs_dir)
            return shown if shown.get("status") == "cooldown" and shown.get("storage") else None
        shown = until(cooling, 120, what="--json to say the run cools down for want of its directory")
        assert "Read-only file system" in shown["status_word"] and "run directory not writable" in shown["status_word"], shown
        listed = _cli("runs", "ls", runs_dir=runs_dir).stdout.decode()
        assert "run directory not writable" in listed and "RUNNING?" not in listed, listed
        told = _cli("runs", "show", run.id, runs_dir=runs_dir).stdout.decode()
        assert "crashes 1" in told and "train.log could not be written (Read-only file system)" in told, told
