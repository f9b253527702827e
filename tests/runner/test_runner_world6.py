"""The supervised run in a hostile world, round 6: a runner killed at the wrong byte. Each through the
real CLI, the real detached runner (SIGKILLed for real, then `supervise` adopting the run) and a
real training process; asserted on what the user sees (metrics.jsonl, state.json, `--json`)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.runner.conftest import FILLER, NO_SAVES, Run, preallocate, ticker
from tests.waiting import gone, sigkill, until

ONE_ATTEMPT = {"restart": {"max_restarts": 0}, **NO_SAVES}

# Steps 1..5 as JSON lines, then step 6's line cut in two: its first half, then (once the FIFO
# argv[1] is opened for writing and closed) its rest and steps 7..10; then waits for the file argv[2].
HALF_LINE = textwrap.dedent("""
    import os, sys, time
    for i in range(1, 6):
        print('{"step": %d, "loss": %r}' % (i, 1.0 / (i + 1)), flush=True)
    sys.stdout.write('{"step": 6, "lo')
    sys.stdout.flush()
    with open(sys.argv[1]) as fifo:
        fifo.read()
    print('ss": 0.142857}', flush=True)
    for i in range(7, 11):
        print('{"step": %d, "loss": %r}' % (i, 1.0 / (i + 1)), flush=True)
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.05)
""")

# A loop under a tqdm bar (its redraws behind carriage returns, no newline until it closes):
# counts 1..10, then (once the file argv[1] exists) 11..20 and the bar's newline; then waits
# for the file argv[2] (none: ends at once).
BAR = textwrap.dedent("""
    import os, sys, time
    N = 20
    def draw(step):
        loss = 2.0 / (1 + step * 0.1)
        sys.stderr.write(f"\\rtrain: {100*step//N:3d}%|{'#'*(step*10//N):10s}| {step}/{N} "
                         f"[00:{step:02d}<00:10, 2.00it/s, loss={loss:.3f}]")
        sys.stderr.flush()
    def wait(path):
        while not os.path.exists(path):
            time.sleep(0.05)
    print("starting", flush=True)
    for step in range(1, 11):
        draw(step)
    wait(sys.argv[1])
    for step in range(11, N + 1):
        draw(step)
    sys.stderr.write("\\n")
    sys.stderr.flush()
    if len(sys.argv) > 2:
        wait(sys.argv[2])
""")


def _adopt(harness, run: Run, st: dict) -> None:
    """The runner SIGKILLed (the OOM killer, a reboot of the login node), then `supervise`."""
    sigkill(st["runner"]["pid"], 30, what="the runner to die")
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0, (out.stdout, out.stderr)


def _steps(run: Run) -> list[int]:
    return [m["step"] for m in run.metrics()]


def _shown_step(harness, run: Run) -> int:
    shown = json.loads(harness.cli("--json", "--once", run.id, "--no-gpu", check=True).stdout.splitlines()[-1])
    return shown["run"]["step"]


def test_a_runner_killed_while_the_training_has_printed_half_a_line_loses_not_that_line(harness, tmp_path):
    """The training printed half of step 6's line and waits; the runner has read it (state.json's
    log_offset named the end of the log, inside that line) and is SIGKILLed. The new runner read
    on from there: the line's second half (`ss": 0.142857}`) was a line of its own, step 6 was
    never recorded, metrics.jsonl and the charts went 5, 7. Now the offset stops at the start of
    the unfinished line: the new runner reads it whole."""
    script, fifo, end = tmp_path / "half.py", tmp_path / "rest", tmp_path / "end"
    script.write_text(HALF_LINE)
    os.mkfifo(fifo)
    run = harness.start(harness.recipe(command=["{python}", str(script), str(fifo), str(end)], **ONE_ATTEMPT))
    log = run.path / "train.log"
    run.wait(lambda s: s.get("step") == 5, 90, what="step 5")
    until(lambda: log.read_bytes().endswith(b'{"step": 6, "lo'), 60, what="half of step 6's line in train.log")
    size = log.stat().st_size
    st = run.wait(lambda s: (s.get("ingest") or {}).get("offset") == size, 60, what="the runner to read the half line")
    assert st["log_offset"] == log.read_bytes().rindex(b"\n") + 1, st["log_offset"]   # the unfinished line's start
    _adopt(harness, run, st)
    fd = os.open(fifo, os.O_WRONLY)   # the training writes the rest of its line and steps 7..10
    os.close(fd)
    run.wait(lambda s: s.get("step") == 10, 90, what="step 10 read by the new runner")
    end.write_text("")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    assert _steps(run) == list(range(1, 11))
    assert [m["loss"] for m in run.metrics()][5] == 0.142857
    assert _shown_step(harness, run) == 10
    until(lambda: gone(st["runner"]["pid"]), 60, what="the new runner to exit")


def test_a_runner_killed_while_a_tqdm_bar_is_open_loses_no_count_and_doubles_none(harness, tmp_path):
    """A tqdm bar redraws behind carriage returns and writes no newline until it closes. The runner
    has recorded counts 1..8 (9 waits for the next count to know its values, 10 is on screen) and
    is SIGKILLed; the new runner read on from the end of what was read: counts 9 and 10 were never
    recorded. Now the offset stops at the unfinished line's start: the new runner reads the bar
    again, and the counts already written are not written twice."""
    script, go = tmp_path / "bar.py", tmp_path / "go"
    script.write_text(BAR)
    run = harness.start(harness.recipe(command=["{python}", str(script), str(go)], **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 8, 90, what="count 8 while the bar is open")
    size = (run.path / "train.log").stat().st_size
    st = run.wait(lambda s: (s.get("ingest") or {}).get("offset") == size, 60, what="the runner to read the bar")
    _adopt(harness, run, st)
    go.write_text("")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    until(lambda: _steps(run)[-1:] == [20], 60, what="count 20 in metrics.jsonl")
    assert _steps(run) == list(range(1, 21))
    assert _shown_step(harness, run) == 20


def test_a_bars_last_count_held_to_the_attempts_end_on_a_full_disk_survives_a_runner_killed(
        harness, small_runs_disk, tmp_path):
    """A bar's last count is held until the attempt ends (no later count tells its values are
    final). The disk is full when the training ends: that record waits in memory, and state.json
    (written through the journal's reserve) named the log offset past the bar's line. The runner
    SIGKILLed then, `supervise` read from there: the bar's last counts were never recorded. Now the
    offset stops before any line whose record waits: the new runner reads the bar again."""
    script, go = tmp_path / "bar.py", tmp_path / "go"
    script.write_text(BAR)
    run = harness.start(harness.recipe(command=["{python}", str(script), str(go)], **ONE_ATTEMPT))
    log = run.path / "train.log"
    run.wait(lambda s: (s.get("step") or 0) >= 8, 90, what="count 8 while the bar is open")
    preallocate(log)
    ready = tmp_path / "filler-ready"
    filler = subprocess.Popen([sys.executable, "-c", FILLER, str(small_runs_disk / "filler"), str(ready)])
    try:
        until(lambda: ready.exists() and os.statvfs(small_runs_disk).f_bavail == 0, 60, what="the disk full")
        go.write_text("")
        until(lambda: b"loss=0.667]\n" in log.read_bytes(), 60, what="the bar closed")
        st = run.wait(lambda s: bool(s.get("storage")) and s.get("status") != "running", 60,
                      what="the storage error in state.json, the attempt over")
        bar_at = log.read_bytes().index(b"train:")
        assert st["log_offset"] <= bar_at, (st["log_offset"], bar_at)
        sigkill(st["runner"]["pid"], 30, what="the runner to die")
    finally:
        filler.kill()
        filler.wait()
    (small_runs_disk / "filler").unlink()
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0, (out.stdout, out.stderr)
    run.wait(lambda s: s.get("step") == 20 and not s.get("storage"), 120, what="count 20 recorded")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    assert _steps(run) == list(range(1, 21))
    until(lambda: gone(st["runner"]["pid"]), 60, what="the new runner to exit")


def test_a_runner_started_from_its_saved_offset_after_a_copytruncate_reads_the_new_text_from_its_start(
        harness, tmp_path):
    """logrotate's copytruncate while no runner reads (it was SIGKILLed; the training goes on) and
    the training writes past the saved offset again: the new runner read on from the saved offset,
    in the middle of the new text (steps 6.. lost, half a line read as a line). The state had no
    bytes for the reader to compare with what is before the offset now; now it carries a digest
    of them, and a file whose text there changed is read again from its start."""
    script = tmp_path / "phases.py"
    go, end = tmp_path / "go", tmp_path / "end"
    script.write_text(textwrap.dedent("""
        import os, sys, time
        def wait(path):
            while not os.path.exists(path):
                time.sleep(0.05)
        for i in range(1, 6):
            print('{"step": %d, "loss": %r}' % (i, 1.0 / (i + 1)), flush=True)
        wait(sys.argv[1])
        for i in range(6, 41):
            print('{"step": %d, "loss": %r}' % (i, 1.0 / (i + 1)), flush=True)
        wait(sys.argv[2])
    """))
    run = harness.start(harness.recipe(command=["{python}", str(script), str(go), str(end)], **ONE_ATTEMPT))
    log = run.path / "train.log"
    st = run.wait(lambda s: s.get("step") == 5 and s.get("log_offset") == log.stat().st_size, 90,
                  what="step 5 read and marked")
    sigkill(st["runner"]["pid"], 30, what="the runner to die")
    shutil.copyfile(log, tmp_path / "train.log.1")   # copytruncate: copy, then truncate in place
    os.truncate(log, 0)
    go.write_text("")
    until(lambda: b'"step": 40' in log.read_bytes(), 60, what="steps 6..40 in the truncated log")
    assert log.stat().st_size > st["log_offset"]
    out = harness.cli("supervise", run.id)
    assert out.returncode == 0, (out.stdout, out.stderr)
    run.wait(lambda s: s.get("step") == 40, 90, what="step 40 read by the new runner")
    end.write_text("")
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", timeout=120)
    assert st["status"] == "succeeded", st
    assert _steps(run) == list(range(1, 41))
    until(lambda: gone(st["runner"]["pid"]), 60, what="the new runner to exit")


@pytest.fixture
def read_only_bind():
    """Mounts made read-only in place (``mount --bind D D; mount -o remount,ro,bind D``: a
    filesystem an admin or a failing disk's driver remounted read-only), unmounted at the end."""
    mounted: list[str] = []

    def make(path) -> None:
        for args in (["mount", "--bind", str(path), str(path)], ["mount", "-o", "remount,ro,bind", str(path)]):
            done = subprocess.run(args, capture_output=True, text=True)
            if done.returncode != 0:
                pytest.skip(f"cannot remount read-only here: {done.stderr.strip()}")
            if args[1] == "--bind":
                mounted.append(str(path))

    def undo() -> None:
        while mounted:
            subprocess.run(["umount", mounted.pop()], capture_output=True)

    make.undo = undo   # type: ignore[attr-defined]
    yield make
    undo()


def test_a_run_directory_remounted_read_only_mid_run_is_not_called_a_gone_runner(harness, read_only_bind):
    """The run directory remounted read-only under a live run (a failing disk's driver, an admin):
    the runner lives, keeps the records in memory and still takes commands, but state.json stops.
    `runs show`, `runs ls` and `--json` said `RUNNING? (runner gone)`, and `runs show` and the run
    screen said to run `moeconsole supervise RUN`, which is refused while the runner lives. Round 4
    said the runner lives and state.json is not written; since round 27 every view asks the live
    runner and says what it says: running, its run directory not writable and why, no command; once
    the mount is writable again every step is written."""
    run = harness.start(harness.recipe(command=ticker(100000, 0.02), heartbeat={"stale_state_s": 3}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 5, 90, what="step 5")
    read_only_bind(run.path)
    until(lambda: b"Read-only file system" in (run.path / "runner.log").read_bytes(), 60,
          what="the runner to meet the read-only run directory")

    def shown() -> dict | None:
        doc = json.loads(harness.cli("--json", "--once", run.id, "--no-gpu", check=True).stdout.splitlines()[-1])
        return doc["run"] if "run directory not writable" in doc["run"]["status_word"] else None

    doc = until(shown, 60, what="--json to say what the runner says: its run directory not writable")
    assert doc["status_word"].startswith("RUNNING (run directory not writable: Read-only file system"), doc["status_word"]
    assert not doc["stale"] and doc.get("next_command") is None, doc
    show = harness.cli("runs", "show", run.id, check=True).stdout
    assert "RUNNING (run directory not writable: Read-only file system" in show and "supervise" not in show, show
    listed = harness.cli("runs", "ls", check=True).stdout
    assert "run directory not writable" in listed and "runner gone" not in listed, listed
    read_only_bind.undo()
    st = run.wait(lambda s: not s.get("storage") and (s.get("step") or 0) > doc["step"] + 5, 60,
                  what="state.json written again")
    steps = _steps(run)
    assert steps[:st["step"]] == list(range(1, st["step"] + 1))   # nothing lost while read-only
    assert any("Read-only file system" in (a.get("message") or "") for a in run.events("alert")), run.events("alert")
    out = harness.cli("kill", run.id)
    assert out.returncode == 0 and "killed" in out.stdout, (out.stdout, out.stderr)
    until(lambda: gone(st["runner"]["pid"]), 60, what="the runner to exit")
