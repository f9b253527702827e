"""Review R27 (hostile round 14): the run directory's empty subdirectories (crashes/, exits/)
removed by a /tmp cleaner's age rule mid-run. Real CLI, detached runner and training, a real
SIGKILL; asserts on what the user sees: state.json, the crash on disk, `runs show`."""
from __future__ import annotations

import os
import signal
import stat

import pytest

from tests.runner.test_runner_world12 import ONE_ATTEMPT, _steady
from tests.waiting import until


@pytest.mark.parametrize("kill_at_once", [False, True], ids=["killed_after_the_runner_looked", "killed_at_once"])
def test_crashes_and_exits_removed_by_a_cleaner_are_made_again_and_the_crash_reaches_the_disk(harness, kill_at_once):
    """systemd-tmpfiles' age rule (or `find -empty -delete`) removes old EMPTY directories too:
    crashes/ and exits/, made at creation and empty until an attempt ends (but for the exit
    record's spare, an old empty file the age rule takes first). Then the training is
    SIGKILLed. Before: nothing made them again; "cannot write to the run directory ... crashes";
    the crash report and the final status never reached the disk, the runner waited on them until
    killed, and `runs` showed FAILED with no crash. Now the runner makes them again (0700): the
    crash is on disk and the run ends, its runner gone."""
    run = harness.start(harness.recipe(command=_steady(200), heartbeat={"timeout_s": 60}, **ONE_ATTEMPT))
    st = run.wait(lambda s: (s.get("step") or 0) >= 2, 90, what="step 2")
    for sub in ("crashes", "exits"):   # exits/ holds the exit record's spare (round 15): old, taken too
        for name in os.listdir(run.path / sub):
            os.unlink(run.path / sub / name)
        os.rmdir(run.path / sub)
    if not kill_at_once:
        until(lambda: (run.path / "crashes").is_dir() and (run.path / "exits").is_dir(), 60,
              what="the runner to make them again")
        assert "crashes/ was deleted under the live run" in (run.path / "runner.log").read_text()
    leader = next(int(p["pid"]) for p in st["pids"] if p.get("role") == "leader")
    os.kill(leader, signal.SIGKILL)
    st = run.wait_status("succeeded", "failed", "killed", "unsaved", "cooldown", "paused", timeout=180)
    assert st["status"] == "failed", st
    until(lambda: (run.path / "crashes" / "attempt-1.json").is_file(), 60, what="the crash report on disk")
    for sub in ("crashes", "exits"):
        assert stat.S_IMODE(os.stat(run.path / sub).st_mode) == 0o700
    assert run.events("crash"), run.events()
    runner = st["runner"]["pid"]
    until(lambda: not os.path.exists(f"/proc/{runner}") or open(f"/proc/{runner}/stat").read().split()[2] == "Z",
          90, what="the runner to end, nothing left waiting for the disk")
    assert "records unwritten" not in (run.path / "runner.log").read_text()


@pytest.mark.parametrize("soft,hard", [(6, 6), (12, 15)])
def test_run_under_a_hard_open_file_limit_below_the_floor_fails_the_run_in_one_line_naming_the_hard_limit(
        harness, soft, hard):
    """Review R27: soft 12 / hard 15 was told "raise it (ulimit -n 1024 ...)", which a non-root
    user cannot past the hard 15; at `ulimit -n 6` the CLI's own launch of the runner raised EMFILE
    with a traceback and left the run STARTING with no runner. Both: one line naming the hard
    limit, a non-zero exit, the run FAILED (launch_failed) with that reason."""
    import json
    import resource
    import subprocess
    import sys

    from tests.runner.conftest import REPO
    recipe = harness.recipe(command=_steady(4), **ONE_ATTEMPT)

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("MOECONSOLE_RUNS_DIR", None)
    out = subprocess.run([sys.executable, "-m", "moeconsole.console.cli", "run", str(recipe), "--detach",
                          "--runs-dir", str(harness.runs_dir)], capture_output=True, text=True, env=env,
                         cwd=REPO, timeout=120, preexec_fn=low)
    said = f"the hard open-file limit (ulimit -Hn) is {hard}, below the 16 the runner needs"
    assert out.returncode != 0 and said in out.stderr and "Traceback" not in out.stderr, out
    assert "ulimit -n 1024" not in out.stderr, out.stderr
    run_path = next(p for p in harness.runs_dir.iterdir() if p.is_dir())
    st = json.loads((run_path / "state.json").read_text())
    assert st["status"] == "failed" and said in st["last_crash"]["summary"], st
