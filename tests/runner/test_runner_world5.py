"""The supervised run in a hostile world, round 5: full disks, hard limits, clocks that jump. Each
through the real CLI, the real detached runner and a real training process; asserted on what the
user sees (state.json, events.jsonl, metrics.jsonl, `runs show`, `--json`)."""
from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import yaml

from tests.runner.conftest import FILLER, NO_SAVES, REPO, Run, base_recipe, phased_steps, preallocate, ticker
from tests.waiting import gone, sigkill, until



def test_a_runner_killed_on_a_full_disk_restarts_before_the_records_that_waited_and_loses_none(
        harness, small_runs_disk, tmp_path):
    """The disk under the run fills up: the records of steps 6..100 cannot be appended and wait in
    the runner's memory. The runner gives up its reserve file to say so in state.json, and that
    state.json named the log offset past those records. The runner SIGKILLed then (OOM killer, a
    reboot of the login node) and `supervise` adopting the run read the log on from there: steps
    6..100 were never recorded, the charts and `runs show` jumped from 5 to the end. Now the offset
    in state.json never passes a record that is not written: the new runner reads them again."""
    script = tmp_path / "phases.py"
    script.write_text(phased_steps(1, 6, 100))   # 1..5, then (once `go` exists) 6..100, then waits for `end`
    go, end = tmp_path / "go", tmp_path / "end"
    run = harness.start(harness.recipe(command=["{python}", str(script), str(go), str(end)],
                                       restart={"max_restarts": 0}, **NO_SAVES))
    run.wait(lambda s: s.get("step") == 5, what="step 5")
    log = run.path / "train.log"
    before = log.stat().st_size   # steps 1..5: their records are written
    preallocate(log)
    ready = tmp_path / "filler-ready"
    filler = subprocess.Popen([sys.executable, "-c", FILLER, str(small_runs_disk / "filler"), str(ready)])
    try:
        until(lambda: ready.exists() and os.statvfs(small_runs_disk).f_bavail == 0, 60, what="the disk full")
        go.write_text("")
        until(lambda: b'"step": 100' in log.read_bytes(), 60, what="the training's steps 6..100 in train.log")
        st = run.wait(lambda s: bool(s.get("storage")), 60, what="the storage error in state.json")
        assert "space" in st["storage"]["error"].lower(), st["storage"]
        assert st["storage"]["pending_records"] > 0, st["storage"]
        assert st["log_offset"] <= before, (st["log_offset"], before)
        sigkill(st["runner"]["pid"], 30, what="the runner to die")
    finally:
        filler.kill()
        filler.wait()
    (small_runs_disk / "filler").unlink()
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0, (out.stdout, out.stderr)
    run.wait(lambda s: s.get("step") == 100 and not s.get("storage"), 120, what="every step read again")
    end.write_text("")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    assert [m["step"] for m in run.metrics()] == list(range(1, 101))
    shown = json.loads(harness.cli("--json", "--once", run.id, "--no-gpu", check=True).stdout.splitlines()[-1])
    assert shown["run"]["step"] == 100, shown["run"]
    until(lambda: gone(st["runner"]["pid"]), 60, what="the new runner to exit")


def test_a_hard_file_size_limit_fails_the_run_once_naming_ulimit_and_keeps_the_records_that_fit(harness):
    """`run` from a shell with a hard `ulimit -f 512` (a site's limits.conf; the runner cannot lift
    it): the training died of EFBIG at 512 KiB of log, its traceback unwritten: `unknown: exited
    with code 1`, restarted into the same wall until the cap. The runner's 1 MB batch of records
    could never be appended either: metrics.jsonl stayed empty, the crash reports and events
    waited behind it, and the runner never exited. Now the crash says `ulimit -f` in one line
    (environment_error, not restarted), metrics.jsonl holds every record that fits under the limit,
    an alert says the rest cannot be written, and the runner ends."""
    limit = 512 * 1024

    def hard_ulimit_f() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    recipe = harness.tmp / "fsize.yaml"
    recipe.write_text(yaml.safe_dump(base_recipe(command=ticker(20000, 0.0), **NO_SAVES)))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    proc = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "run", str(recipe), "--detach",
                           "--runs-dir", str(harness.runs_dir)], capture_output=True, text=True, timeout=120,
                          env=env, cwd=REPO, preexec_fn=hard_ulimit_f)
    assert proc.stdout.strip(), proc.stderr
    run = Run(harness.runs_dir / proc.stdout.strip().splitlines()[0])
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "paused", timeout=180)
    assert st["status"] == "failed" and st["attempt"] == 1 and st["restarts"] == 0, st
    crash = run.crash(1)
    assert crash["class"] == "environment_error" and "ulimit -f" in crash["summary"], crash
    assert crash["recovery"] == "fail" and "ulimit -Hf" in crash["hint"], crash
    until(lambda: gone(st["runner"]["pid"]), 120, what="the runner to end")
    steps = [m["step"] for m in run.metrics()]
    assert steps and steps == list(range(1, len(steps) + 1)), steps[-3:]
    assert limit - 1000 < (run.path / "metrics.jsonl").stat().st_size <= limit
    said = [a for a in run.events("alert") if a.get("rule") == "storage"]
    assert len(said) == 1 and "metrics.jsonl can grow no more" in said[0]["message"], said
    shown = harness.cli("runs", "show", run.id, check=True).stdout
    assert "environment_error" in shown and "ulimit -f" in shown, shown


LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

# One step every 0.2 s until ``end`` exists.
STEPS_UNTIL = textwrap.dedent("""
    import os, sys, time
    i = 0
    while not os.path.exists(sys.argv[1]):
        i += 1
        print('{"step": %d, "loss": %r}' % (i, 1.0 / (i + 1)), flush=True)
        time.sleep(0.2)
""")


@pytest.mark.skipif(not os.path.exists(LIBFAKETIME), reason="libfaketime not installed (apt-get install faketime)")
def test_a_run_started_under_a_clock_hours_fast_shows_its_real_elapsed_time_once_the_clock_is_right(harness, tmp_path):
    """`run` on a machine whose wall clock is 3 h fast (libfaketime: the CLI and its runner see
    +3 h; the training drops the preload); the clock is then corrected (the runner is replaced by
    one on the true clock, `supervise`). started_at is 3 h in the future: the screen, `--json`
    and `runs show` said "elapsed 0s" (a negative span), `runs ls` an AGE of 0s, for the next 3 h.
    Now the run's span is measured on the boot clock (/proc/uptime), which no step of the wall
    clock moves."""
    script, end = tmp_path / "steps.py", tmp_path / "end"
    script.write_text(STEPS_UNTIL)
    recipe = harness.recipe(command=["{python}", str(script), str(end)], restart={"max_restarts": 0},
                            env={"OMP_NUM_THREADS": "1", "LD_PRELOAD": "", "FAKETIME": ""}, **NO_SAVES)
    env = {**os.environ, "PYTHONPATH": str(REPO), "LD_PRELOAD": LIBFAKETIME, "FAKETIME": "+3h"}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    before = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "run", str(recipe), "--detach",
                           "--runs-dir", str(harness.runs_dir)], capture_output=True, text=True, timeout=120,
                          env=env, cwd=REPO)
    started = time.monotonic()
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr
    run = Run(harness.runs_dir / proc.stdout.strip().splitlines()[0])
    try:
        st = run.wait(lambda s: (s.get("step") or 0) >= 3, what="3 steps under the fast clock")
        assert st["started_at"] > time.time() + 3600, st["started_at"]   # the clock was really 3 h fast
        sigkill(st["runner"]["pid"], 30, what="the runner on the fast clock to end")
        out = harness.cli("supervise", run.id)   # the clock is right again
        assert out.returncode == 0, (out.stdout, out.stderr)
        until(lambda: time.monotonic() - started > 3, 30, what="3 s of the run")
        shown = json.loads(harness.cli("--json", "--once", run.id, "--no-gpu", check=True).stdout.splitlines()[-1])
        elapsed = shown["run"]["elapsed_s"]
        assert time.monotonic() - before >= elapsed >= 3, elapsed
        show = harness.cli("runs", "show", run.id, check=True).stdout
        assert "elapsed 0s" not in show and " elapsed " in show, show
        listed = harness.cli("runs", "ls", check=True).stdout.splitlines()
        at = listed[0].index(" AGE ") + 1
        age = next(line for line in listed if run.id in line)[at:].split()[0]
        assert age not in ("0s", "—"), listed
    finally:
        end.write_text("")
    st = run.wait_status("succeeded", "failed", "killed", timeout=120)
    ended = json.loads(harness.cli("--json", "--once", run.id, "--no-gpu", check=True).stdout.splitlines()[-1])
    assert time.monotonic() - before >= ended["run"]["elapsed_s"] >= 3, ended["run"]


def test_a_log_truncated_and_written_past_the_runners_offset_while_it_was_busy_loses_no_step(harness, tmp_path):
    """logrotate's copytruncate on train.log (copy, then truncate in place) while the runner is
    busy or stopped (here SIGSTOP: a loaded login node, a debugger), and the training writes more
    than the runner had read before the runner looks again. The runner only compared the size with
    its offset: the file was longer, so it read on from the old offset, in the middle of the new
    text: steps 21..41 were never recorded and the run said `succeeded` at 200. Now the bytes
    before the offset are compared too: the file is read again from its start."""
    script = tmp_path / "phases.py"
    script.write_text(phased_steps(1, 21, 200))
    go, end = tmp_path / "go", tmp_path / "end"
    run = harness.start(harness.recipe(command=["{python}", str(script), str(go), str(end)],
                                       restart={"max_restarts": 0}, **NO_SAVES))
    st = run.wait(lambda s: s.get("step") == 20, what="step 20")
    runner = st["runner"]["pid"]
    log = run.path / "train.log"
    os.kill(runner, signal.SIGSTOP)
    try:
        (tmp_path / "train.log.1").write_bytes(log.read_bytes())   # copytruncate: the copy, then the truncation
        os.truncate(log, 0)
        go.write_text("")
        until(lambda: b'"step": 200' in log.read_bytes(), 60, what="steps 21..200 in the truncated log")
    finally:
        os.kill(runner, signal.SIGCONT)
    run.wait(lambda s: s.get("step") == 200, 60, what="step 200 read")
    end.write_text("")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    assert [m["step"] for m in run.metrics()] == list(range(1, 201))
