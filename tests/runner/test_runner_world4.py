"""The supervised run in a hostile world, round 4: a machine that is not a clean test box. Each
through the real CLI, the real detached runner and a real training process; asserted on what the
user sees (state.json, events.jsonl, metrics.jsonl, `runs show`)."""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys

import pytest
import yaml

from tests.runner.conftest import NO_SAVES, REPO, Run, base_recipe, ticker
from tests.waiting import gone, until


def test_a_run_that_ends_while_the_disk_refuses_writes_keeps_its_runner_until_its_records_are_written(
        harness, tmp_path, monkeypatch):
    """The disk under the run directory fails every write (EIO: the test-only
    ``MOECONSOLE_TEST_WRITE_FAULT_FILE``) when the training ends. The records of its last steps
    and of its end wait in the runner's memory. The runner used to exit at once: the records were
    lost, state.json said `running` for good (`runs show`: "RUNNING? (runner gone)") while the
    index said SUCCEEDED at an older step. Now it stays until the disk takes them."""
    fault = tmp_path / "write_fault"
    monkeypatch.setenv("MOECONSOLE_TEST_WRITE_FAULT_FILE", str(fault))
    run = harness.start(harness.recipe(command=ticker(40, 0.1), **NO_SAVES))
    runner = run.wait(lambda s: (s.get("step") or 0) >= 5, what="step 5")["runner"]["pid"]
    fault.write_text("EIO")
    until(lambda: (run.path / "train.log").read_text().count("global_step") >= 40, 120, what="the training's 40 steps")
    # the run is over for the runner (its training ended): it exits, or says it waits for the disk
    until(lambda: gone(runner) or "records that wait for the disk" in (run.path / "runner.log").read_text(), 120,
          what="the runner to end the run")
    fault.unlink()
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded" and st["step"] == 40 and st["storage"] is None, st
    assert [m["step"] for m in run.metrics()] == list(range(1, 41))
    assert [e["step"] for e in run.events("success")] == [40]
    # said once the disk took the records: a turn after state.json tells the end
    said = until(lambda: [e for e in run.events("alert") if e.get("rule") == "storage"], 120, what="the storage alert")
    assert len(said) == 1 and "none lost" in said[0]["message"], said
    until(lambda: gone(runner), 120, what="the runner to exit once every record is written")
    shown = harness.cli("runs", "show", run.id, check=True).stdout
    assert "SUCCEEDED" in shown.splitlines()[0] and "RUNNING" not in shown, shown
    assert json.loads((run.path / "state.json").read_text())["status"] == "succeeded"


def _cli_under(harness, preexec, *args: str) -> subprocess.CompletedProcess:
    """The real CLI from a shell whose limits ``preexec`` sets (``ulimit`` before the command)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    return subprocess.run([sys.executable, "-m", "moeconsole.console.cli", *args, "--runs-dir", str(harness.runs_dir)],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO, preexec_fn=preexec)


def test_a_soft_file_size_limit_of_the_shell_does_not_stop_the_run_at_that_size(harness):
    """`run` from a shell with `ulimit -f 256` (a site's limits.conf, a leftover): the training died
    of EFBIG the moment train.log reached 256 KiB (`failed`, "exited with code 1", no line saying
    why: its traceback could not be written either), and metrics.jsonl stopped there too, the
    runner's later records lost. The runner lifts the soft limit to the hard one (unlimited here)
    for itself and all it starts: every step is recorded, the run succeeds."""
    steps = 6000   # about 60 bytes a line in train.log, 100 and more a record in metrics.jsonl: both over 256 KiB
    limit = 256 * 1024

    def ulimit_f() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    recipe = harness.tmp / "fsize.yaml"
    recipe.write_text(yaml.safe_dump(base_recipe(command=ticker(steps, 0.0), restart={"max_restarts": 0}, **NO_SAVES)))
    proc = _cli_under(harness, ulimit_f, "run", str(recipe), "--detach")
    assert proc.returncode in (0, 1) and proc.stdout.strip(), proc.stderr
    run = Run(harness.runs_dir / proc.stdout.strip().splitlines()[0])
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "paused", timeout=180)
    assert st["status"] == "succeeded" and st["step"] == steps, (st.get("pause_reason"), st.get("last_crash"))
    assert (run.path / "train.log").stat().st_size > limit
    assert [m["step"] for m in run.metrics()] == list(range(1, steps + 1))


def test_a_run_name_that_does_not_print_is_refused_and_one_made_before_shows_on_one_line(harness):
    """`run --name` with a newline made `runs ls` show a second line that read as another run
    ("y  110  0.009 ..."), ESC sequences drove the terminal of whoever listed the runs, a bidi
    override showed the name reversed. Such a name is one line, exit 2, nothing made; a run that
    has one already (made before the rule, its state.json edited) is listed on one line, escaped."""
    recipe = harness.recipe(command=ticker(3, 0.0), **NO_SAVES)
    for name in ("x\ny", "\x1b[2Jz", "a\u202eb", "tab\there"):
        proc = harness.cli("run", str(recipe), "--detach", "--name", name)
        assert proc.returncode == 2 and "does not print" in proc.stderr, (name, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) <= 2 and "Traceback" not in proc.stderr, proc.stderr  # + lint's
        assert not [p for p in harness.runs_dir.glob("*") if p.is_dir()], name
    run = harness.start(recipe, "--name", "ünï 名 ok")   # printable unicode and spaces are a name
    st = run.wait_status("succeeded", "failed", timeout=120)
    assert st["status"] == "succeeded" and st["name"] == "ünï 名 ok", st
    state = json.loads((run.path / "state.json").read_text())
    (run.path / "state.json").write_text(json.dumps({**state, "name": "x\ny\x1b[2J"}))
    harness.cli("runs", "rebuild", check=True)
    listed = harness.cli("runs", "ls", check=True).stdout.splitlines()
    assert len(listed) == 2 and "x\\ny\\x1b[2J" in listed[1] and "\x1b" not in "".join(listed), listed
    shown = harness.cli("runs", "show", run.id, check=True).stdout.splitlines()
    assert shown[0].startswith("x\\ny\\x1b[2J  SUCCEEDED"), shown[:2]


# Attempt 1 prints a step, then crashes (exit 1) once the test says so (the file named by its
# second argument exists); attempt 2 trains 3 steps and succeeds.
CRASHES_ON_ATTEMPT_1 = ["{python}", "-c", (
    "import os, sys, time\n"
    "first = sys.argv[1] == '1'\n"
    "for i in range(1, 4):\n"
    "    print(\"{'loss': '1.0', 'global_step/max_steps': '%d/3'}\" % i, flush=True)\n"
    "    if first:\n"
    "        break\n"
    "while first and not os.path.exists(sys.argv[2]):\n"
    "    time.sleep(0.05)\n"
    "sys.exit(1 if first else 0)\n"), "{attempt}"]


def test_a_restart_waits_for_the_working_directory_to_be_back_instead_of_failing_the_run(harness, tmp_path):
    """The command's working directory is deleted (or its filesystem unmounted) while the run
    lives, and the training crashes. The restart used to go into it: "cannot start
    '.../python': No such file or directory" (the interpreter is there), the run FAILED with its
    restarts unused. It waits, saying why in a critical alert and in the cooldown's wait, and
    launches once the directory is there again."""
    workdir = tmp_path / "work dir"
    workdir.mkdir()
    crash_now = tmp_path / "crash-now"
    run = harness.start(harness.recipe(command=CRASHES_ON_ATTEMPT_1 + [str(crash_now)], workdir=str(workdir),
                                       restart={"max_restarts": 2}, **NO_SAVES))
    run.wait(lambda s: (s.get("step") or 0) >= 1, what="step 1")
    workdir.rmdir()
    crash_now.touch()
    st = run.wait(lambda s: s.get("status") in ("failed", "succeeded", "paused") or any(
        "working directory" in w for w in (s.get("cooldown") or {}).get("waiting_on") or []), 120,
        what="the restart waiting for the working directory")
    assert st["status"] == "cooldown" and st["attempt"] == 1, (st.get("status"), st.get("pause_reason"))
    alert = [a for a in run.events("alert") if a.get("rule") == "storage"]
    assert len(alert) == 1 and alert[0]["level"] == "critical" and str(workdir) in alert[0]["message"], alert
    shown = harness.cli("runs", "show", run.id, check=True).stdout
    assert f"waiting on: the working directory {workdir} of the command is gone" in shown, shown
    workdir.mkdir()
    st = run.wait_status("succeeded", "failed", "killed", "paused", timeout=120)
    assert st["status"] == "succeeded" and st["attempt"] == 2 and st["step"] == 3, st
    assert not [e for e in run.events("attempt_start") if e.get("error")]


def test_a_stopped_training_is_not_killed_as_hung_and_runs_on_once_continued(harness):
    """`kill -STOP` of the training (to free the machine for a moment, a debugger attached, a
    job control stop): its silence outlasted the heartbeat and the runner killed it as a `hang`
    crash and restarted it, losing the steps since the last save. A stopped training is not hung:
    one `stopped` warning names its PIDs and how to continue it, the hang clock waits; once
    continued it trains on in the same attempt."""
    run = harness.start(harness.recipe(command=ticker(100000, 0.1), heartbeat={"timeout_s": 3, "startup_s": 120},
                                       restart={"max_restarts": 2}, **NO_SAVES))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="step 3")
    leader = next(p["pid"] for p in st["pids"] if p["role"] == "leader")
    os.kill(leader, signal.SIGSTOP)
    try:
        said = until(lambda: [a for a in run.events("alert") if a.get("rule") in ("stopped", "hang")], 120,
                     what="the runner to judge the silence")
        assert [a["rule"] for a in said] == ["stopped"], said
        assert said[0]["values"]["pids"] == [leader] and f"kill -CONT {leader}" in said[0]["message"], said
        assert run.state()["status"] == "running"
    finally:
        os.kill(leader, signal.SIGCONT)
    step = run.state()["step"]
    st = run.wait(lambda s: (s.get("step") or 0) >= step + 5 or s.get("status") != "running", 120, what="5 more steps")
    assert st["status"] == "running" and st["attempt"] == 1, st
    assert not [a for a in run.events("alert") if a.get("rule") == "hang"]
    assert harness.cli("kill", run.id).returncode == 0
    assert run.wait_status("killed", timeout=120)["attempt"] == 1


def test_kill_on_a_disk_that_refuses_writes_says_killed_once_the_runner_has_ended_the_run(harness, tmp_path, monkeypatch):
    """The disk under the run directory refuses writes (EIO here; a full disk, no inodes left)
    and the user kills the run: the runner ends the training at once, but state.json cannot be
    replaced, so `kill` waited on the file and said "still running after 120s", exit 1, of a run
    that had ended. It asks the runner too: `killed`, exit 0, and one line that the state waits for
    the disk; once the disk takes writes again, everything is on disk."""
    fault = tmp_path / "write_fault"
    monkeypatch.setenv("MOECONSOLE_TEST_WRITE_FAULT_FILE", str(fault))
    run = harness.start(harness.recipe(command=ticker(100000, 0.1), **NO_SAVES))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="step 3")
    leader = next(p["pid"] for p in st["pids"] if p["role"] == "leader")
    fault.write_text("EIO")
    until(lambda: "Input/output error" in (run.path / "runner.log").read_text(), 60, what="writes failing")
    proc = harness.cli("kill", run.id, "--timeout", "60")
    assert proc.returncode == 0 and proc.stdout.strip() == f"{run.id}: killed", (proc.stdout, proc.stderr)
    assert "state.json cannot be written now (Input/output error" in proc.stderr, proc.stderr
    assert gone(leader)
    assert run.state()["status"] == "running"   # the file still says what it said before the disk failed
    fault.unlink()
    st = run.wait_status("killed", timeout=120)
    assert st["storage"] is None and [e["status"] for e in run.events("status")][-1] == "killed", st


@pytest.fixture
def few_inodes(runs_dir):
    """The runs directory on a tmpfs of 96 inodes (needs root to mount; skipped otherwise)."""
    from tests.conftest import tmpfs
    with tmpfs(runs_dir, "size=32m,nr_inodes=96,mode=0700", end_runs=True):
        yield runs_dir


def test_a_filesystem_out_of_inodes_is_refused_by_run_in_one_line_never_half_started(harness, few_inodes):
    """Free inodes (files) run out on the runs directory's filesystem: with a dozen left, `run` made
    the run directory and its files, then the runner died creating runner.lock; `run` quoted its
    traceback ("fd = os.open(run.lock, ... | ^^^^^ | OSError: [Errno 28]") and the run stayed STARTING
    for good; with a few more, the runner could not bind its socket, or ran with its state
    refused. Every count of free inodes a run cannot live with is one line, exit 2, nothing made;
    with enough, the run starts and succeeds."""
    recipe = harness.recipe(command=ticker(3, 0.0), **NO_SAVES)
    fill = few_inodes / "filler"
    fill.mkdir()
    n = 0
    while os.statvfs(few_inodes).f_favail > 0:   # every inode taken, then given back one at a time
        (fill / str(n)).touch()
        n += 1
    for free in range(0, 16):
        assert os.statvfs(few_inodes).f_favail == free
        proc = harness.cli("run", str(recipe), "--detach")
        lines = [line for line in proc.stderr.splitlines() if not line.startswith("lint warning")]
        assert proc.returncode == 2 and len(lines) == 1, (free, proc.stderr)
        assert "^^^" not in lines[0] and "Errno" not in lines[0] and "cannot create a run directory" in lines[0], lines
        assert sorted(p.name for p in few_inodes.iterdir()) == ["filler"], (free, proc.stderr)
        n -= 1
        (fill / str(n)).unlink()
    for name in list(fill.iterdir()):
        name.unlink()
    run = harness.start(recipe)
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded" and st["step"] == 3, st


GRACEFUL = ["{python}", "-c", (
    "import signal, sys, time\n"
    "def bye(*_):\n"
    "    print('graceful: saved on SIGTERM', flush=True)\n"
    "    sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, bye)\n"
    "for i in range(1, 100000):\n"
    "    print(\"{'loss': '1.0', 'global_step/max_steps': '%d/100000'}\" % i, flush=True)\n"
    "    time.sleep(0.1)\n")]


def test_kill_of_a_stopped_training_continues_it_so_its_sigterm_handler_runs(harness):
    """The training is stopped (`kill -STOP`, job control) when the user kills the run: the SIGTERM
    stayed pending in the stopped process, its handler (a graceful save) never ran, and after the
    whole grace SIGKILL ended it. SIGCONT follows the SIGTERM, as systemd's stop does: the handler
    runs and the kill is over without the SIGKILL."""
    run = harness.start(harness.recipe(command=GRACEFUL, kill={"grace_s": 60}, **NO_SAVES))
    st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="step 3")
    leader = next(p["pid"] for p in st["pids"] if p["role"] == "leader")
    os.kill(leader, signal.SIGSTOP)
    until(lambda: open(f"/proc/{leader}/stat").read().rsplit(")", 1)[1].split()[0] == "T", 30, what="stopped")
    proc = harness.cli("kill", run.id, "--timeout", "120")
    assert proc.returncode == 0 and proc.stdout.strip() == f"{run.id}: killed", (proc.stdout, proc.stderr)
    done = run.events("kill_done")
    assert len(done) == 1 and done[0]["escalated"] is False and not run.events("kill_escalate"), run.events()
    assert "graceful: saved on SIGTERM" in (run.path / "train.log").read_text()
