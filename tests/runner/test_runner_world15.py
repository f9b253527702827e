"""The supervised run in a hostile world, round 15. Each test drives the real CLI, the real
detached runner and real processes (a real cleaner's `rmdir`, a real tmpfs out of inodes, real
signals), and asserts on what the user sees: state.json, events.jsonl, `runs show`, `--json --once`."""
from __future__ import annotations

import json
import os
import signal
import textwrap
from pathlib import Path

import psutil

from tests.runner.test_runner_world12 import ONE_ATTEMPT
from tests.runner.test_runner_world13 import _cli, _shown
from tests.waiting import until

ENDED = ("succeeded", "failed", "killed", "unsaved", "cooldown", "paused")
OOM_LINE = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
            "capacity of 79.10 GiB of which 1.00 GiB is free.")


def _gated(go: Path, *last: str, rc: int = 3) -> list[str]:
    """Three steps, then wait for ``go`` to exist, run ``last`` (Python lines), exit ``rc``."""
    body = "\n".join(last)
    return ["{python}", "-c", textwrap.dedent(f"""
        import os, sys, time
        for i in range(1, 4):
            print('{{"step": %d, "loss": 0.5}}' % i, flush=True)
        while not os.path.exists({str(go)!r}):
            time.sleep(0.05)
    """) + body + f"\nsys.exit({rc})\n"]


def _gone(st: dict) -> bool:
    """Every process state.json names has ended (a zombie counts as ended)."""
    for p in st.get("pids") or []:
        try:
            if psutil.Process(int(p["pid"])).status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            continue
    return True


def _runner_killed_then_training_ends(run, runs_dir: Path, go: Path) -> None:
    """SIGKILL the runner, let the training end unsupervised, start a new runner (`supervise`)."""
    st = run.state()
    os.kill(st["runner"]["pid"], signal.SIGKILL)
    until(lambda: _shown(run.id, runs_dir).get("stale"), 60, what="--json to call the run stale")
    go.write_text("")
    until(lambda: _gone(st), 60, what="the training to end")


def test_exits_removed_by_a_cleaner_as_the_training_dies_keeps_its_exit_record(harness, tmp_path):
    """A runs directory under /tmp whose cleaner removes old files and directories (systemd-tmpfiles'
    age rule): `exits/` holds no record until an attempt ends, and goes in the second the training
    dies (here: the training's own last act), with no runner alive to make it again. The waiter's record was lost ("cannot
    write ... No such file or directory" in train.log), and the new runner judged the attempt
    "ended with an unknown exit status" where it exited 3. The waiter makes `exits/` again and
    writes it: `runs show` and state.json say "exited with code 3"."""
    go = tmp_path / "go"
    run = harness.start(harness.recipe(command=_gated(go, "import shutil", "shutil.rmtree(os.path.join(os.environ['MOECONSOLE_RUN_DIR'], 'exits'))"),
                                       heartbeat={"timeout_s": 60, "stale_state_s": 2}, **ONE_ATTEMPT))
    run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3")
    _runner_killed_then_training_ends(run, harness.runs_dir, go)
    assert json.loads((run.path / "exits" / "attempt-1.json").read_text())["returncode"] == 3
    out = _cli("supervise", run.id, runs_dir=harness.runs_dir)
    assert out.returncode == 0, out.stderr
    st = run.wait_status(*ENDED, timeout=120)
    assert st["status"] == "failed" and st["last_crash"]["summary"] == "exited with code 3", st
    assert "attempt 1: unknown (exit 3) exited with code 3" in _cli("runs", "show", run.id,
                                                                   runs_dir=harness.runs_dir).stdout.decode()
    assert "cannot write" not in (run.path / "train.log").read_text()


def test_a_crash_on_a_filesystem_out_of_inodes_reaches_events_and_every_view(harness, runs_dir, tmp_path):
    """The runs directory's filesystem has bytes but no inode left (round 14's open item) when the
    training crashes with a CUDA OOM. The crash report is a whole file replaced through a temp file,
    which needs an inode; the journal held every record behind it, so events.jsonl never got the
    crash, the restart, the alert or the run's end: `runs show` said "crashes (0) none" and "alerts
    open 0" for as long as no inode was free (state.json had them). The report waits aside; the
    records are written; `runs show` lists both crashes from their events; the restart happens;
    the cache that cannot be saved (series.json) is said once, not every second."""
    from tests.conftest import take_every_inode, tmpfs
    go = tmp_path / "go"
    with tmpfs(runs_dir, "size=64m,nr_inodes=400,mode=0700", end_runs=True):
        run = harness.start(harness.recipe(command=_gated(go, "print('Traceback (most recent call last):')",
                                                          f"print({OOM_LINE!r}, flush=True)", rc=1),
                                           restart={"max_restarts": 1}))
        run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3")
        filler = runs_dir / "filler"
        filler.mkdir()
        assert take_every_inode(filler) > 0
        go.write_text("")
        st = run.wait_status("failed", "succeeded", "killed", "unsaved", "paused", timeout=180)
        assert st["status"] == "failed" and st["last_crash"]["class"] == "cuda_oom", st
        assert os.statvfs(runs_dir).f_favail == 0
        crashes = run.events("crash")
        assert [(c["attempt"], c["class"]) for c in crashes] == [(1, "cuda_oom"), (2, "cuda_oom")], run.events()
        assert crashes[0]["decision"] == "restart" and run.events("status")[-1]["status"] == "failed"
        shown = _cli("runs", "show", run.id, runs_dir=runs_dir).stdout.decode()
        assert "crashes (2)" in shown and "attempt 1: cuda_oom (exit 1)" in shown, shown
        assert "alerts    open 1 (1 CRIT)" in shown and "crashes 2" in shown, shown
        assert _shown(run.id, runs_dir)["last_crash"]["class"] == "cuda_oom"
        listed = _cli("runs", "ls", runs_dir=runs_dir)   # the index cannot be written: read from the run
        assert listed.returncode == 0 and "FAILED" in listed.stdout.decode() and "cuda_oom" in listed.stdout.decode(), listed
        until(lambda: (run.path / "runner.log").read_text().count("series.json not written") == 1 and
              "attempt-2.json waits for a free inode" in (run.path / "runner.log").read_text(), 30,
              what="the runner to say both")
        marks = run.state().get("updated_at")
        until(lambda: run.state().get("updated_at") != marks, 30, what="two more state writes")
        assert (run.path / "runner.log").read_text().count("series.json not written") == 1
        for f in filler.iterdir():   # the cleaner's files go: the reports follow, the runner ends
            f.unlink()
        until(lambda: (run.path / "crashes" / "attempt-2.json").exists(), 60, what="the reports written")
        assert json.loads((run.path / "crashes" / "attempt-1.json").read_text())["class"] == "cuda_oom"
        until(lambda: not _shown(run.id, runs_dir)["runner_alive"], 60, what="the runner to end")


def test_an_attempt_ending_on_a_filesystem_out_of_inodes_unsupervised_keeps_its_exit_record(harness, runs_dir,
                                                                                              tmp_path):
    """The runner killed, the runs filesystem out of inodes when the training exits 3: the waiter's
    exit record needs a temp file, so it was lost ("No space left on device" in train.log), and once
    the inodes were back a new runner judged the attempt "ended with an unknown exit status". The
    waiter writes it into a spare the runner made at the attempt's start."""
    from tests.conftest import take_every_inode, tmpfs
    go = tmp_path / "go"
    with tmpfs(runs_dir, "size=64m,nr_inodes=400,mode=0700", end_runs=True):
        run = harness.start(harness.recipe(command=_gated(go), heartbeat={"timeout_s": 60, "stale_state_s": 2},
                                           **ONE_ATTEMPT))
        run.wait(lambda s: (s.get("step") or 0) >= 3, 90, what="step 3")
        filler = runs_dir / "filler"
        filler.mkdir()
        st = run.state()
        os.kill(st["runner"]["pid"], signal.SIGKILL)
        until(lambda: _shown(run.id, runs_dir).get("stale"), 60, what="--json to call the run stale")
        assert take_every_inode(filler) > 0
        go.write_text("")
        until(lambda: _gone(st), 60, what="the training to end")
        assert json.loads((run.path / "exits" / "attempt-1.json").read_text())["returncode"] == 3
        for f in filler.iterdir():
            f.unlink()
        out = _cli("supervise", run.id, runs_dir=runs_dir)
        assert out.returncode == 0, out.stderr
        st = run.wait_status(*ENDED, timeout=120)
        assert st["status"] == "failed" and st["last_crash"]["summary"] == "exited with code 3", st
        assert sorted(os.listdir(run.path / "exits")) == ["attempt-1.json"]


def test_a_runs_directory_moved_whole_lists_its_runs_live_and_ended(harness, tmp_path):
    """`mv runs runs.old` while a runner lives (or `mv ~/runs /data/runs` to a bigger disk later):
    the index moves with it, every row keeping the old absolute path. `runs ls --runs-dir runs.old`
    said "no runs under ..." and dropped every row as deleted, the run unlisted for good (the run
    directory's own guard followed it, so `runs show` and `--json` still found it). The rows take
    the directory under the base they are read from: listed RUNNING, the kill reaches it, and once
    ended and moved again it is listed KILLED."""
    from tests.runner.conftest import Run
    from tests.runner.test_runner_world12 import _steady
    run = harness.start(harness.recipe(command=_steady(400), kill={"grace_s": 3}, **ONE_ATTEMPT))
    run.wait(lambda s: (s.get("step") or 0) >= 2, 90, what="step 2")
    old = tmp_path / "runs.old"
    os.rename(harness.runs_dir, old)
    moved = Run(old / run.id)
    until(lambda: "renamed under the live run" in (moved.path / "runner.log").read_text(), 60,
          what="the runner to follow its directory")
    listed = _cli("runs", "ls", runs_dir=old)
    assert listed.returncode == 0 and run.id in listed.stdout.decode() and "RUNNING" in listed.stdout.decode(), listed
    assert not (harness.runs_dir / "index.sqlite").exists()   # the runner made no empty runs directory again
    out = _cli("kill", run.id, runs_dir=old)
    assert out.returncode == 0, out.stderr
    assert moved.wait_status(*ENDED, timeout=120)["status"] == "killed"
    until(lambda: not _shown(run.id, old)["runner_alive"], 60, what="the runner to end")
    again = tmp_path / "data-runs"
    os.rename(old, again)
    listed = _cli("runs", "ls", runs_dir=again).stdout.decode()
    assert run.id in listed and "KILLED" in listed, listed
    assert f"dir       {again / run.id}" in _cli("runs", "show", run.id, runs_dir=again).stdout.decode()


def test_terminal_escapes_nul_and_bad_utf8_in_the_training_log_never_reach_the_users_terminal(harness):
    """A training prints an OSC that sets the terminal's title, a clear-screen, a C1 CSI (U+009B,
    which a terminal reads as ESC [), NUL bytes and invalid UTF-8, in a plain line and in the
    exception that ends it. ESC, BEL and NUL were already dropped; U+009B reached `runs show` and
    `runs receipt` raw in the crash summary ("boom \u009b2J end"). None of
    those bytes reaches the user's terminal now."""
    cmd = ["{python}", "-c", textwrap.dedent(r"""
        import sys
        w = sys.stdout.buffer.write
        for i in range(1, 4):
            w(b'{"step": %d, "loss": 0.5}\n' % i)
        w(b'\x1b]0;PWNED-TITLE\x07\x1b[2J\x1b[H hello \x00 nul \xff\xfe bad utf8\n')
        w(b'Traceback (most recent call last):\n  File "x.py", line 1\n')
        w(b'RuntimeError: boom \x1b]0;EVIL\x07\x1b[31mred\x1b[0m \xc2\x9b2J \x00end\n')
        sys.stdout.flush()
        sys.exit(1)
    """)]
    run = harness.start(harness.recipe(command=cmd, **ONE_ATTEMPT))
    st = run.wait_status(*ENDED, timeout=120)
    assert st["status"] == "failed" and "boom" in st["last_crash"]["summary"], st
    for args in (("runs", "show", run.id), ("runs", "ls"), ("--json", "--once", run.id, "--no-gpu"),
                 ("runs", "receipt", run.id)):
        out = _cli(*args, runs_dir=harness.runs_dir)
        said = out.stdout + out.stderr
        assert out.returncode == 0 and b"boom" in said or args[:2] == ("runs", "ls"), (args, out)
        for raw in (b"\x1b", b"\x07", b"\x00", b"\xc2\x9b", b"\x9b"):
            assert raw not in said, (args, raw, said[:400])


def test_a_progress_bar_with_no_newline_for_many_megabytes_keeps_the_runner_small_and_the_steps(harness, tmp_path):
    """Held (round 15): a training whose progress bar redraws with `\\r` only, never a newline,
    for 24 MiB (an hour of tqdm at a fast rate), then logs a step. The runner reads it all in
    bounded memory (its RSS well under the output), and every step is recorded."""
    go = tmp_path / "go"
    mib = 24
    cmd = ["{python}", "-c", textwrap.dedent(f"""
        import os, sys, time
        print('{{"step": 1, "loss": 0.5}}', flush=True)
        n, i = 0, 0
        while n < {mib} << 20:
            s = '\\r%3d%%|' % (i % 100) + '#' * (i % 50) + ' ' * (50 - i % 50) + '| %d/1000000 [00:10<00:12, 45.0it/s]' % i
            sys.stdout.write(s)
            n, i = n + len(s), i + 1
        sys.stdout.flush()
        while not os.path.exists({str(go)!r}):
            time.sleep(0.05)
        print('', flush=True)
        print('{{"step": 2, "loss": 0.25}}', flush=True)
    """)]
    run = harness.start(harness.recipe(command=cmd, heartbeat={"timeout_s": 600}, **ONE_ATTEMPT))
    until(lambda: (run.path / "train.log").stat().st_size >= mib << 20, 300, what="the bar's output")
    st = run.wait(lambda s: (s.get("ingest") or {}).get("lag_bytes", 1) == 0 and
                  (s.get("ingest") or {}).get("size", 0) >= mib << 20, 600, what="the runner to read it all")
    rss = psutil.Process(st["runner"]["pid"]).memory_info().rss
    assert rss < (mib << 20) * 4, rss   # measured: 57 MiB after 200 MiB of bar
    assert _shown(run.id, harness.runs_dir)["status_word"] == "RUNNING"
    go.write_text("")
    st = run.wait_status(*ENDED, timeout=300)
    assert st["status"] == "succeeded" and [m["step"] for m in run.metrics()] == [1, 2], st


def test_a_fork_refused_at_the_users_process_limit_is_said_in_the_exit_record_not_a_traceback():
    """`ulimit -u` (RLIMIT_NPROC) reached when the waiter forks the training: a shared login node
    where the user's other sessions hold their processes and threads. The waiter died of a
    `BlockingIOError` traceback (its own, in train.log), wrote no exit record, and the runner judged
    the training "unknown: exited with code 1" and restarted it into the same wall. Now the record
    says it (exit 127, the error naming `ulimit -u` and its value), which the runner takes as a
    command that could not start: FAILED with that line, never restarted. Real: as `nobody` (root
    is never held by the limit), the waiter run by path under the system's interpreter as the
    runner runs it (`-S -E`, standard library only)."""
    import shutil
    import subprocess
    import sys
    import tempfile

    import pytest

    from tests.conftest import REPO
    python = os.path.realpath(sys.executable)
    if os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("prlimit"):
        pytest.skip("needs root, setpriv and prlimit to be another user under a process limit")
    where = Path(tempfile.mkdtemp(prefix="moeconsole-nproc-", dir="/tmp"))
    try:
        os.chmod(where, 0o777)
        waiter = where / "waiter.py"
        shutil.copy(Path(REPO) / "runner" / "process" / "waiter.py", waiter)
        os.chmod(waiter, 0o644)
        record = where / "attempt-1.json"
        as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "prlimit"]
        # an interpreter `nobody` may run (the waiter needs only the standard library)
        python = next((p for p in (python, "/usr/bin/python3", "/usr/local/bin/python3")
                       if os.path.exists(p) and subprocess.run([*as_nobody, p, "-S", "-E", "-c", "pass"],
                                                               capture_output=True).returncode == 0), "")
        if not python:
            pytest.skip("no Python interpreter here that nobody may run")
        out = subprocess.run([*as_nobody, "--nproc=1", python, "-S", "-E", str(waiter), str(record), "--",
                              "/bin/true"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 127 and "Traceback" not in out.stderr, out
        rec = json.loads(record.read_text())
        assert rec["returncode"] == 127 and rec["pid"] is None, rec
        assert "the process limit (ulimit -u) of 1" in rec["error"] and rec["error"] in out.stderr, rec
    finally:
        shutil.rmtree(where, ignore_errors=True)


def test_a_training_at_the_shells_virtual_memory_limit_fails_naming_it_and_is_not_restarted(harness):
    """`run` from a shell with `ulimit -v` (RLIMIT_AS: a login node's limits.conf `as`, a batch
    system's per-job memory) of 2 GiB; the training allocates 3 GiB of host memory. It was judged
    `unknown` ("exited with code 1: MemoryError"; a c10 allocator's words read as `killed_oom`,
    "host memory ran out", with RAM to spare) and restarted into the same wall until the cap. The
    judge knows the attempt's limit: `environment_error` naming `ulimit -v` and its value, FAILED
    after one attempt, `runs show` saying it. Round 18: a bare `MemoryError` names no size, so the
    limit is named only when a process here was seen near it (``crash.limit_neared``): the training
    holds 1.2 GiB of its 2 GiB as a real one does (its model, its data), seen by the runner's walks."""
    import resource

    cmd = ["{python}", "-c", textwrap.dedent("""
        import time
        held = bytearray(1200 << 20)
        for i in range(1, 4):
            print('{"step": %d, "loss": 0.5}' % i, flush=True)
            time.sleep(1)   # the training's own pace: the runner walks its tree every 0.5 s
        big = bytearray(3 << 30)
        print('{"step": 4, "loss": 0.4}', flush=True)
    """)]
    recipe = harness.recipe(command=cmd, restart={"max_restarts": 2})

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    run = started_under(harness, recipe, low)
    st = run.wait_status("failed", "succeeded", "killed", "unsaved", "paused", timeout=180)
    assert st["status"] == "failed" and st["attempt"] == 1, (st, run.events("crash"))
    assert st["last_crash"]["class"] == "environment_error", st["last_crash"]
    assert "address-space limit (ulimit -v or -d) of 2.0 GB" in st["last_crash"]["summary"], st["last_crash"]
    assert "ulimit -v" in _cli("runs", "show", run.id, runs_dir=harness.runs_dir).stdout.decode()


def started_under(harness, recipe: Path, limit) -> "object":
    """``run RECIPE --detach`` from a CLI process that ``limit()`` (a ``preexec_fn``) set a resource
    limit in first, as the user's shell would: the runner and the training inherit it."""
    import subprocess
    import sys

    from tests.runner.conftest import REPO, Run
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "run", str(recipe), "--detach",
                          "--runs-dir", str(harness.runs_dir)], capture_output=True, text=True, env=env,
                         cwd=REPO, timeout=120, preexec_fn=limit)
    assert out.stdout.strip(), out
    return Run(harness.runs_dir / out.stdout.strip().splitlines()[0])
